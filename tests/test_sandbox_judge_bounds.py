"""Nothing a solution writes stops the judge, the expected side of a test never
runs with the solution, and the limits hold on the host (threads, disk, output).

Every solution below is WRONG for its tests, so any pass is a false pass; every run must return a
`SandboxResult` (a raise or a hang would stop a sweep) within a few seconds."""

import os
import textwrap
import time
from pathlib import Path

import pytest

import tutorial_lib.tasks.isolation as isolation
import tutorial_lib.tasks.sandbox as sandbox
from tutorial_lib.tasks.judge import plan_tests
from tutorial_lib.tasks.judge.verdicts import MAX_REPORT_DEPTH, MalformedReport, parse_report
from tutorial_lib.tasks.sandbox import SandboxResult, run_python
from tutorial_lib.sweeps.configs import Config, Task

pytestmark = pytest.mark.skipif(
    not isolation.sandbox_available(),
    reason=f"bubblewrap cannot run here ({isolation.bwrap_problem()}): {sandbox.INSTALL_HINT}; "
    "CI installs it",
)

LIMITS = dict(timeout_s=4.0, cpu_s=2.0, memory_mb=256, max_output_bytes=20_000)
TESTS = [
    "assert sum_of_squares([1, 2, 3]) == 14",
    "assert sum_of_squares([]) == 0",
    "assert sum_of_squares([-2, 5]) == 29",
]
WRONG = "def sum_of_squares(xs):\n    return -1\n"


def _write_report(text_expression: str) -> str:
    """A solution that writes `text_expression` (evaluated in the child) to every pipe it holds and exits,
    so it reaches the report pipe whichever descriptor that is."""
    return WRONG + textwrap.dedent(f"""
        import os, stat
        data = ({text_expression}).encode() + b"\\n"
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    while data:
                        data = data[os.write(fd, data[:65536]):]
                    data = ({text_expression}).encode() + b"\\n"
            except OSError:
                pass
        os._exit(0)
        """)


# name -> (code, tests, setup): each is a wrong solution and must fail, with a result, in a few seconds.
HOSTILE = {
    # ---- reports the parent must read without raising ----------------------------------------------
    "report_nested_100000_deep": (_write_report('"[" * 100000 + "]" * 100000'), TESTS, ""),
    "report_error_nested_5000_deep": (
        _write_report("'{\"error\": ' + '[' * 5000 + ']' * 5000 + ', \"tests\": []}'"),
        TESTS,
        "",
    ),
    "report_tests_nested_5000_deep": (
        _write_report(
            "'{\"error\": null, \"tests\": [{\"values\": [' + '[\"l\", [' * 5000 + ']]' * 5000 + ']}]}'"
        ),
        TESTS,
        "",
    ),
    "report_integer_of_100000_digits": (
        _write_report('\'{"error": null, "tests": [{"values": [["i", "\' + \'9\' * 100000 + \'"]]}]}\''),
        TESTS,
        "",
    ),
    "report_bare_number_of_100000_digits": (
        _write_report("'{\"error\": null, \"tests\": [' + '9' * 100000 + ']}'"),
        TESTS,
        "",
    ),
    "report_error_not_text": (_write_report('\'{"error": {"a": [1, 2]}, "tests": []}\''), TESTS, ""),
    "report_too_large": (
        _write_report("'{\"error\": \"' + 'x' * (8 * 1024 * 1024) + '\", \"tests\": []}'"),
        TESTS,
        "",
    ),
    "report_not_utf8": (
        _write_report("'\\udcff{}'").replace(".encode()", ".encode('utf-8', 'surrogateescape')"),
        TESTS,
        "",
    ),
    # ---- values whose judging would take the parent minutes or gigabytes ------------------------------
    "huge_power_in_the_judge": (
        "def sum_of_squares(xs):\n    return 10 ** 4000 - 1\n",
        ["assert sum_of_squares([1]) ** 9999 == 1"],
        "",
    ),
    "huge_shift_in_the_judge": (
        "def sum_of_squares(xs):\n    return 10 ** 4000\n",
        ["assert sum_of_squares([1]) << 9999 == 1"],
        "",
    ),
    "400_mb_string_in_the_judge": (
        "def sum_of_squares(xs):\n    return 'x' * 1_000_000\n",
        ["assert sum_of_squares([1]) * 400 == 'x'"],
        "",
    ),
    "huge_range_in_the_judge": (
        "def sum_of_squares(xs):\n    return 10 ** 18\n",
        ["assert len(range(sum_of_squares([1]))) == 1"],
        "",
    ),
    # ---- the expected side of a test, patched in the solution's interpreter --------------------------
    "mbpp_596_patched_getsizeof": (
        "import sys\nsys.getsizeof = lambda *args: -1\ndef tuple_size(t):\n    return -1\n",
        ['assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))'],
        "",
    ),
    "method_call_on_the_expected_side_forged": (
        _write_report('\'{"error": null, "tests": [{"values": [["s", "Z!"], ["s", "Z"]]}]}\'').replace(
            WRONG, "def shout(s):\n    return 'Z'\n"
        ),
        ['assert shout("abc") == "abc".upper() + "!"'],
        "",
    ),
    "setup_not_literal_patched_builtin": (
        "import builtins\nbuiltins.sum = lambda *a, **k: -1\ndef sum_of_squares(xs):\n    return -1\n",
        ["assert sum_of_squares(data) == expected"],
        "data = [3, 1, 2]\nexpected = sum(sorted(x * x for x in data))",
    ),
    "setup_helper_patched": (
        "import math\nmath.fsum = lambda values: -1\ndef sum_of_squares(xs):\n    return -1\n",
        ["assert sum_of_squares(data) == expected"],
        "import math\ndata = [3, 1, 2]\nexpected = math.fsum(x * x for x in data)",
    ),
    "entry_point_named_max": ("def max(xs):\n    return -1\n", ["assert max([1, 5, 3]) == 5"], ""),
    "entry_point_named_sorted_via_globals": (
        "globals()['sorted'] = lambda xs: -1\n",
        ["assert sorted([3, 1]) == [1, 3]"],
        "",
    ),
    "setup_check_applied_to_the_solution": (
        "import builtins\nbuiltins.abs = lambda x: 0\ndef area(r):\n    return -1\n",
        ["assert close(area(2), 12.566)"],
        "def close(a, b):\n    return abs(a - b) < 0.01\n",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_nothing_a_solution_writes_breaks_the_judge(name):
    code, tests, setup = HOSTILE[name]
    started = time.monotonic()
    result = run_python(code, tests, setup=setup, **LIMITS)
    elapsed = time.monotonic() - started
    assert isinstance(result, SandboxResult)
    assert not result.passed, f"{name}: false pass ({result.reason})"
    assert elapsed < 10.0, f"{name}: the judge took {elapsed:.1f} s"
    assert "sandbox error" not in result.reason, f"{name}: the judge broke: {result.reason}"


@pytest.mark.parametrize(
    "code, tests, setup",
    [
        (
            "import sys\ndef tuple_size(t):\n    return sys.getsizeof(t)\n",
            ['assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))'],
            "",
        ),
        ("def shout(s):\n    return s.upper() + '!'\n", ['assert shout("abc") == "abc".upper() + "!"'], ""),
        (
            "def sum_of_squares(xs):\n    return sum(x * x for x in xs)\n",
            ["assert sum_of_squares(data) == expected"],
            "data = [3, 1, 2]\nexpected = sum(sorted(x * x for x in data))",
        ),
        ("def max(xs):\n    return sorted(xs)[-1]\n", ["assert max([1, 5, 3]) == 5"], ""),
    ],
)
def test_the_same_forms_pass_for_a_correct_solution(code, tests, setup):
    entry_point = code.split("def ", 1)[1].split("(", 1)[0]  # MBPP and HumanEval name it; `max` needs it
    result = run_python(code, tests, setup=setup, entry_point=entry_point, **LIMITS)
    assert result.passed, result.reason


def test_the_expected_side_is_planned_outside_the_solutions_run():
    """Which run evaluates a hole depends on the test, the setup, the prompt code and the entry point:
    `plan_tests` is never given the solution's code."""
    tests = [
        "assert tuple_size((1, 2)) == sys.getsizeof((1, 2))",
        "assert max([1]) == 1",
        "assert check(f(1))",
    ]
    plans = plan_tests(tests, "def check(v):\n    return v\n")
    assert [(h.side, h.source) for h in plans[0].holes] == [
        ("solution", "tuple_size((1, 2))"),
        ("expected", "sys.getsizeof((1, 2))"),
    ]
    assert plans[1].refused and "never calls" in plans[1].unjudged_reason  # builtins.max: nothing to judge
    # the setup's `check` runs on the expected side, on the value the solution's `f(1)` returned
    assert [(h.side, h.source, h.needs) for h in plans[2].holes] == [
        ("solution", "f(1)", ()),
        ("expected", "check(__judge_hole_0)", (0,)),
    ]
    plan = plan_tests(["assert max([1]) == 1"], entry_point="max")[0]
    assert [(h.side, h.source, h.solution_names) for h in plan.holes] == [("solution", "max([1])", ("max",))]
    refused = plan_tests(["assert tuple_size((1, 2)) == 3"], entry_point="other")[0]
    assert refused.refused and "`other`" in refused.unjudged_reason


def test_parse_report_is_bounded_and_linear():
    started = time.monotonic()
    for data in (
        b"[" * 1_000_000 + b"]" * 1_000_000,
        b"[" + b"9" * 1_000_000 + b"]",
        b"\xff{}",
        b'{"a": ' + b"[" * (MAX_REPORT_DEPTH + 1) + b"]" * (MAX_REPORT_DEPTH + 1) + b"}",
    ):
        with pytest.raises(MalformedReport):
            parse_report(data)
    assert time.monotonic() - started < 2.0
    assert parse_report(b'{"s": "[[[[\\"]]", "n": [[1]]}') == {"s": '[[[["]]', "n": [[1]]}


THREAD_BOMB = textwrap.dedent("""
    import threading
    release = threading.Event()
    started = 0
    try:
        for _ in range(100_000):
            threading.Thread(target=release.wait, daemon=True).start()
            started += 1
    except BaseException:
        pass
    print("THREADS", started, flush=True)
    release.set()
    def sum_of_squares(xs):
        return -1
    """)


def _threads_started(result: SandboxResult) -> int:
    line = next(line for line in result.stdout_tail.splitlines() if line.startswith("THREADS"))
    return int(line.split()[1])


def test_a_thread_bomb_is_stopped_below_a_few_hundred_tasks():
    result = run_python(THREAD_BOMB, TESTS, **{**LIMITS, "memory_mb": 2048})
    assert not result.passed
    started = _threads_started(result)
    print(f"process limit here: {isolation.process_limit()}; thread bomb started {started} threads")
    assert started < isolation.MAX_TASKS <= 300


def test_without_a_pids_cgroup_seccomp_refuses_every_thread(monkeypatch):
    """The path CI takes where no pids cgroup is writable."""
    # where the sandbox finds its pids cgroup
    monkeypatch.setattr(isolation.cgroups, "_pids_cgroup_root", lambda: None)
    assert isolation.process_limit() == "seccomp"
    result = run_python(THREAD_BOMB, TESTS, **{**LIMITS, "memory_mb": 2048})
    assert not result.passed and _threads_started(result) == 0


FALLOCATE = textwrap.dedent("""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    FALLOC_FL_KEEP_SIZE = 1
    for fd in (1, 2):
        libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4 << 30)
    try:
        with open("/tmp/big", "wb") as handle:
            libc.fallocate(handle.fileno(), FALLOC_FL_KEEP_SIZE, 0, 4 << 30)
            print("TMPFS", os.fstat(handle.fileno()).st_blocks * 512, flush=True)
    except OSError:
        pass
    def sum_of_squares(xs):
        return -1
    """)


def test_the_hosts_disk_is_untouched_by_fallocate_and_floods(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    before = os.statvfs(tmp_path)
    free_before = before.f_bavail * before.f_frsize
    result = run_python(FALLOCATE, TESTS, **LIMITS)
    after = os.statvfs(tmp_path)
    assert not result.passed
    # 4 GiB were asked for, three times; other processes share this disk, so allow them some noise.
    assert free_before - after.f_bavail * after.f_frsize < 512 * 1024 * 1024
    assert list(tmp_path.iterdir()) == []
    flood = run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", TESTS, **LIMITS)
    assert flood.reason.startswith("output limit") and flood.duration_s < 3.0


def test_the_sandboxs_writable_space_is_a_capped_tmpfs():
    code = textwrap.dedent("""
        written = 0
        try:
            with open("/tmp/fill", "wb", buffering=0) as handle:
                while True:
                    written += handle.write(b"x" * 1_000_000)
        except OSError as error:
            print("WRITTEN", written, error.errno, flush=True)
        def f():
            return written
        """)
    result = run_python(code, ["assert f() == 0"], **{**LIMITS, "max_output_bytes": 1 << 30})
    written = int(
        next(line for line in result.stdout_tail.splitlines() if line.startswith("WRITTEN")).split()[1]
    )
    assert written <= isolation.TMPFS_BYTES and not result.passed


SWEEP_CASES = [
    "report_nested_100000_deep",
    "report_error_nested_5000_deep",
    "report_integer_of_100000_digits",
    "report_too_large",
    "huge_power_in_the_judge",
    "mbpp_596_patched_getsizeof",
]


def test_a_sweep_records_every_hostile_row_and_resumes_without_dying(tmp_path):
    """The row of a solution that broke the judge before is recorded as a failure, and a resumed sweep
    (which once died again on the same row) finds every row saved and computes none."""
    import tutorial_lib as tl
    from tutorial_lib.sweeps import evaluation as ev

    def task(name):
        code, tests, setup = HOSTILE[name]
        info = {"tests": tests, "setup": setup, "entry_point": "sum_of_squares"}
        return Task(
            name,
            "mbpp",
            [{"id": "p", "prompt": "mi", "references": [""], "info": info}],
            max_new_tokens=2,
            postprocess=lambda text, code=code: f"```python\n{code}\n```",
        )

    tasks = [task(name) for name in SWEEP_CASES]
    configs = [Config("Drafter", "drafter", gamma=1)]
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    table = ev.run_sweep(pair, tasks, configs, name="hostile-reports", root=tmp_path, progress=False)
    assert sorted(table["task"]) == sorted(SWEEP_CASES) and (table["quality"] == 0.0).all()
    rows_path = Path(table.attrs["path"]) / "rows.jsonl"
    saved = rows_path.read_bytes()
    again = ev.run_sweep(pair, tasks, configs, name="hostile-reports", root=tmp_path, progress=False)
    assert len(again) == len(SWEEP_CASES) and rows_path.read_bytes() == saved


def test_a_plain_folder_is_never_taken_for_a_cgroup_root(tmp_path, monkeypatch):
    """Where no cgroup is mounted, a probe's folder is a plain one: writing `pids.max` and `cgroup.procs`
    there succeeds but bounds nothing, and its `cgroup.procs` would later name pids to kill. Refused; and
    threads that probe at once all get the one answer."""
    import threading

    monkeypatch.setattr(isolation.cgroups, "_cgroup_candidates", lambda controller: [(str(tmp_path), True)])
    assert isolation.cgroups._probe_cgroup_root("pids") is None
    assert list(tmp_path.iterdir()) == []  # the probe's folder removed
    monkeypatch.undo()
    answers = []
    isolation.cgroups._cgroup_root.cache_clear()
    threads = [
        threading.Thread(target=lambda: answers.append(isolation.cgroups._cgroup_root("pids")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(answers)) == 1
