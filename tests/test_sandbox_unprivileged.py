"""The attacks on the sandbox as root, the judge's rebinding false passes and its denial of service, as
regressions: each ran against the sandbox before it ran code as an unprivileged user, and each escaped,
outlived the judge, took memory outside its limit, passed falsely or cost the judge a minute.

Every solution below is wrong for its tests (any pass is a false pass) or harmful; every run must
return a `SandboxResult` within seconds and leave nothing running."""

import os
import resource
import textwrap
import threading
import time
from pathlib import Path

import pytest
from process_tree import descendants as _descendants

import tutorial_lib.tasks.isolation as isolation
import tutorial_lib.tasks.sandbox as sandbox
from tutorial_lib.tasks import judge_worker
from tutorial_lib.tasks.sandbox import run_python

pytestmark = pytest.mark.skipif(
    not isolation.sandbox_available(),
    reason=f"bubblewrap cannot run here ({isolation.bwrap_problem()}): {sandbox.INSTALL_HINT}; "
    "CI installs it",
)

LIMITS = dict(timeout_s=5.0, cpu_s=3.0, memory_mb=256, max_output_bytes=20_000)


def _host_uids(pid: int) -> list[int] | None:
    try:
        line = next(
            line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:")
        )
    except (OSError, StopIteration):
        return None
    return [int(value) for value in line.split()[1:]]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _sandbox_processes() -> list[int]:
    return [
        pid for pid in _descendants(os.getpid()) if b"bwrap" in _cmdline(pid) or b"launcher" in _cmdline(pid)
    ]


# --------------------------------------------------------------------------------------------------
# Who the code runs as, and what of the host it can reach
# --------------------------------------------------------------------------------------------------


def test_the_sandbox_runs_as_an_unprivileged_host_user():
    """Read from the host while the code runs: every process of the sandbox (bwrap's two included) has
    host uids other than 0 when the sweep runs as root, and the sweep's own uid otherwise."""
    seen = []

    def watch():
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline and len(seen) < 3:
            for pid in _descendants(os.getpid()):
                cmdline = _cmdline(pid)
                if (
                    b"tutorial_lib launcher" in cmdline
                ):  # root until it drops to the sandbox's user and execs bwrap
                    continue
                uids = _host_uids(pid)
                if uids and (cmdline.startswith(b"bwrap") or b"-s\x00-S\x00-B\x00-P\x00-c" in cmdline):
                    seen.append((pid, uids, cmdline[:40]))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = run_python(
        "import time\ntime.sleep(1.5)\ndef f():\n    return 1\n", ["assert f() == 1"], **LIMITS
    )
    watcher.join()
    assert result.passed, result.reason
    assert seen, "no sandbox process was seen"
    expected = isolation.SANDBOX_UID if os.geteuid() == 0 else os.geteuid()
    assert {uid for _, uids, _ in seen for uid in uids} == {expected}, seen


KERNEL_SETTINGS = textwrap.dedent("""
    import ctypes, errno, os
    def attempts():
        found = {}
        for path in ("/proc/sys/vm/stat_interval", "/proc/sys/kernel/core_pattern", "/proc/1/mem",
                     "/proc/self/mem", "/sys/fs/cgroup/pids/cgroup.procs"):
            try:
                handle = os.open(path, os.O_WRONLY)
                found[path] = "opened for writing"
                os.close(handle)
            except OSError as error:
                found[path] = errno.errorcode.get(error.errno, str(error.errno))
        libc = ctypes.CDLL(None, use_errno=True)
        mounted = libc.mount(b"proc", b"/tmp", b"proc", 0, None)
        found["mount proc"] = "mounted" if mounted == 0 else errno.errorcode.get(ctypes.get_errno(), "?")
        folders = ["/", "/usr", "/usr/lib", "/etc", os.path.dirname(os.__file__)]
        found["writable folders outside /tmp"] = [f for f in folders if os.access(f, os.W_OK)]
        return found
    """)


def test_no_kernel_setting_or_other_process_is_writable_from_inside():
    """No /proc at all (so no /proc/sys and no /proc/1/mem), no mount to make one, and no file writable
    outside the sandbox's own tmpfs. The host's setting is read before and after: unchanged."""
    setting = Path("/proc/sys/vm/stat_interval")
    before = setting.read_text()
    result = run_python(
        KERNEL_SETTINGS + "\ndef g():\n    print(attempts())\n    return 0\n", ["assert g() == 1"], **LIMITS
    )
    assert not result.passed
    report = eval(result.stdout_tail.strip().splitlines()[-1])  # the test's own output, printed by the child
    assert all(value != "opened for writing" for value in report.values()), report
    assert report["/proc/sys/vm/stat_interval"] == "ENOENT" and report["/proc/1/mem"] == "ENOENT"
    assert report["mount proc"] in ("EPERM", "EACCES") and report["writable folders outside /tmp"] == []
    assert setting.read_text() == before


def test_pid_1_of_the_namespace_cannot_be_hijacked_and_nothing_outlives_the_run():
    """The old attack wrote code into bwrap's pid 1 through /proc/1/mem; without /proc, and with ptrace and
    process_vm_writev refused, each way in fails, and no process of the sandbox is left after the run,
    including after a timeout."""
    code = textwrap.dedent("""
        import ctypes, errno, os
        libc = ctypes.CDLL(None, use_errno=True)
        def tries():
            out = []
            try:
                open("/proc/1/mem", "r+b")
                out.append("mem opened")
            except OSError as error:
                out.append(errno.errorcode[error.errno])
            out.append(libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH
            out.append(errno.errorcode.get(ctypes.get_errno(), "?"))
            return out
        """)
    result = run_python(
        code + "print(tries(), flush=True)\nwhile True:\n    pass\n",
        ["assert tries() == []"],
        **{**LIMITS, "timeout_s": 2.0, "cpu_s": 10.0},
    )
    assert result.timed_out and not result.passed
    assert "ENOENT" in result.stdout_tail and "EPERM" in result.stdout_tail, result.stdout_tail
    time.sleep(0.2)
    assert _sandbox_processes() == []
    leftover = [
        entry
        for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory")
        if os.path.isdir(root)
        for entry in os.listdir(root)
        if entry.startswith(f"tutorial_lib_sandbox_{os.getpid()}_")
    ]
    assert leftover == []


SYSV_SHM = textwrap.dedent("""
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    def take(total_mb):
        taken = 0
        for _ in range(total_mb // 64):
            segment = libc.shmget(0, 64 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
            if segment < 0:
                return ["shmget", errno.errorcode.get(ctypes.get_errno(), "?"), taken]
            address = libc.shmat(segment, None, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                return ["shmat", errno.errorcode.get(ctypes.get_errno(), "?"), taken]
            ctypes.memset(address, 1, 64 << 20)
            libc.shmdt(ctypes.c_void_p(address))  # detached: no longer in the address space
            taken += 64
        return ["took", taken]
    print(take(1024), flush=True)
    def f():
        return -1
    """)


def test_system_v_shared_memory_is_refused():
    result = run_python(SYSV_SHM, ["assert f() == 1"], **LIMITS)
    assert not result.passed
    assert "['shmget', 'EPERM', 0]" in result.stdout_tail, (result.reason, result.stdout_tail)


def test_the_memory_cgroup_bounds_the_whole_sandbox_shared_memory_included(monkeypatch):
    """With the seccomp filter's System V refusal taken out, the memory cgroup alone stops 1 GiB of
    detached shared memory (which no address-space limit counts) at memory_mb plus the tmpfs. Where no
    memory cgroup exists the refusal above is the bound, and this checks that the sandbox says so."""
    if isolation.cgroups._memory_cgroup_root() is None:
        assert isolation.process_limit() in ("cgroup", "seccomp")
        assert (
            29 in isolation.seccomp._TABLES["x86_64"]["deny"]
            and 194 in isolation.seccomp._TABLES["aarch64"]["deny"]
        )
        return
    sysv = {
        29,
        30,
        31,
        67,
        64,
        65,
        66,
        220,
        68,
        69,
        70,
        71,
        240,
        194,
        195,
        196,
        197,
        190,
        191,
        192,
        193,
        186,
        187,
        188,
        189,
        180,
    }
    weakened = {
        arch: {**table, "deny": tuple(n for n in table["deny"] if n not in sysv)}
        for arch, table in isolation.seccomp._TABLES.items()
    }
    monkeypatch.setattr(isolation.seccomp, "_TABLES", weakened)
    started = time.monotonic()
    result = run_python(SYSV_SHM, ["assert f() == 1"], **{**LIMITS, "memory_mb": 128})
    assert not result.passed and "['took', 1024]" not in result.stdout_tail
    assert result.reason.startswith("memory limit"), result.reason
    assert time.monotonic() - started < 5.0


def test_where_the_kernel_refuses_an_unprivileged_user_the_sandbox_refuses_to_run(monkeypatch):
    """No weaker fallback: the probe fails and the message says what to set up."""
    if os.geteuid() != 0:
        monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv(isolation.UID_ENV, "0")
    isolation.bwrap_problem.cache_clear()
    try:
        problem = isolation.bwrap_problem()
        assert problem is not None and isolation.UID_ENV in problem
        with pytest.raises(sandbox.SandboxUnavailableError, match="unprivileged"):
            run_python("def f():\n    return 1\n", ["assert f() == 1"], allow_unsandboxed=False)
    finally:
        monkeypatch.undo()
        isolation.bwrap_problem.cache_clear()
    assert isolation.bwrap_problem() is None


# --------------------------------------------------------------------------------------------------
# False passes by rebinding a name the test's expected side reads
# --------------------------------------------------------------------------------------------------

REBINDING = {
    "import_sys_as_sys_patches_getsizeof": (
        "import sys as sys\nsys.getsizeof = lambda *a: -1\ndef tuple_size(t):\n    return -1\n",
        ['assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))'],
        "",
        "tuple_size",
    ),
    "set_rebound_to_a_constant": (
        "set = lambda *a: 1\ndef pair(xs):\n    return [9, 9, 9]\n",
        ["assert set(pair([4, 5])) == set((4, 5))"],
        "",
        "pair",
    ),
    "math_replaced_by_an_object_whose_isclose_says_true": (
        "class _M:\n    isclose = staticmethod(lambda *a, **k: True)\n    pi = 0\nmath = _M()\n"
        "def area(r):\n    return -1.0\n",
        ["assert math.isclose(area(2), 12.566, rel_tol=0.001)"],
        "",
        "area",
    ),
    "sorted_spelled_as_a_string_and_eval_patched": (
        "import builtins\nbuiltins.eval = lambda *a, **k: [1, 2, 3]\nname = 'sorted'\n"
        "globals()[name] = lambda xs: [1, 2, 3]\ndef order(xs):\n    return xs\n",
        ["assert sorted(order([3, 1, 2])) == [1, 2, 3] and order([3, 1, 2]) == [1, 2, 3]"],
        "",
        "order",
    ),
    "max_built_at_run_time_with_exec": (
        "exec('def ma' + 'x(xs):\\n    return -1')\n",
        ["assert max([1, 5, 3]) == 5"],
        "",
        "max",
    ),
    "max_built_at_run_time_without_an_entry_point": (
        "exec('def ma' + 'x(xs):\\n    return -1')\n",
        ["assert max([1, 5, 3]) == 5"],
        "",
        None,
    ),
    "return_the_setups_expected_value": (
        "def order(xs):\n    return EXPECTED_1\n",
        ["assert order([3, 1, 2]) == EXPECTED_1"],
        "EXPECTED_1 = sorted([3, 1, 2])\n",
        "order",
    ),
    "find_the_setups_expected_value_in_memory": (
        "import gc, sys\ndef order(xs):\n    for frame in [sys._getframe(1), sys._getframe(1).f_back]:\n"
        "        if frame is not None and 'EXPECTED_1' in frame.f_globals:\n"
        "            return frame.f_globals['EXPECTED_1']\n"
        "    for item in gc.get_objects():\n"
        "        if isinstance(item, dict) and 'EXPECTED_1' in item:\n            return item['EXPECTED_1']\n"
        "    return None\n",
        ["assert order([3, 1, 2]) == EXPECTED_1"],
        "EXPECTED_1 = sorted([3, 1, 2])\n",
        "order",
    ),
}


@pytest.mark.parametrize("name", sorted(REBINDING))
def test_rebinding_a_name_the_test_reads_never_passes(name):
    code, tests, setup, entry_point = REBINDING[name]
    result = run_python(code, tests, setup=setup, entry_point=entry_point, **LIMITS)
    assert not result.passed, f"{name}: false pass ({result.reason})"
    if name.startswith(("import_sys", "set_", "math_", "sorted_")):
        assert "rebinds" in result.reason, result.reason
    if name == "max_built_at_run_time_without_an_entry_point":
        assert "never calls" in result.reason


@pytest.mark.parametrize(
    "code, tests, setup, entry_point",
    [
        (
            "import sys\ndef tuple_size(t):\n    return sys.getsizeof(t)\n",
            ['assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))'],
            "",
            "tuple_size",
        ),
        ("def pair(xs):\n    return [5, 4, 4]\n", ["assert set(pair([4, 5])) == set((4, 5))"], "", "pair"),
        (
            "import math\ndef area(r):\n    return math.pi * r * r\n",
            ["assert math.isclose(area(2), 12.566, rel_tol=0.001)"],
            "",
            "area",
        ),
        (
            "def order(xs):\n    return sorted(xs)\n",
            ["assert order(data) == EXPECTED_1"],
            "data = [3, 1, 2]\nEXPECTED_1 = sorted(data)\n",
            "order",
        ),
        (
            "def order(xs, key):\n    return sorted(xs, key=key)\n",
            ["assert order([3, 1, 2], negate) == [3, 2, 1]"],
            "def negate(x):\n    return -x\n",
            "order",
        ),
        ("def max(xs):\n    return sorted(xs)[-1]\n", ["assert max([1, 5, 3]) == 5"], "", "max"),
    ],
)
def test_the_same_forms_pass_for_correct_solutions(code, tests, setup, entry_point):
    """The setup's values reach the solution's call as plain data (a function of the setup, `negate`, by
    running the setup in a namespace of its own), and a helper of the solution's may share no name with
    the test."""
    result = run_python(code, tests, setup=setup, entry_point=entry_point, **LIMITS)
    assert result.passed, result.reason


# --------------------------------------------------------------------------------------------------
# The judge's own budget
# --------------------------------------------------------------------------------------------------

JUDGE_ATTACKS = {
    # 110,000 integers that all hash to 0: a set of them costs a minute of CPU to build
    "colliding_hashes_returned": (
        "def f():\n    return [k * (2 ** 61 - 1) for k in range(110_000)]\n",
        ["assert set(f()) == {1}"],
    ),
    "colliding_hashes_forged_into_the_report_as_a_set": (
        textwrap.dedent("""
        import json, os, stat
        items = ",".join('["i", "%x"]' % (k * (2 ** 61 - 1)) for k in range(110_000))
        report = ('{"error": null, "values": [["S", [' + items
                  + ']]], "statements": [], "rebound": []}\\n').encode()
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, report)
            except OSError:
                pass
        os._exit(0)
        """),
        ["assert f() == {1}"],
    ),
    # a `%` format whose width the solution chose
    "format_width_of_400_mb": ("def f(x):\n    return '%400000000d'\n", ["assert f(1) % 5 == 'x'"]),
}


@pytest.mark.parametrize("name", sorted(JUDGE_ATTACKS))
def test_no_report_costs_the_judge_more_than_its_budget(name):
    code, tests = JUDGE_ATTACKS[name]
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    result = run_python(code, tests, **{**LIMITS, "memory_mb": 512})
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert not result.passed and result.reason.startswith("judge budget exceeded"), result.reason
    assert elapsed < 8.0
    assert (after.ru_utime + after.ru_stime) - (
        before.ru_utime + before.ru_stime
    ) < 1.0  # the parent's own CPU
    assert (
        after.ru_maxrss - before.ru_maxrss
    ) * 1024 < judge_worker.JUDGE_MEMORY_BYTES  # the parent's growth
    # the worker is started again: the next solution is judged as usual
    assert run_python("def f(x):\n    return x\n", ["assert f(2) == 2"], **LIMITS).passed


def test_the_judge_budget_is_enforced_by_the_kernel_not_by_the_judges_good_will():
    worker = judge_worker.JudgeWorker()
    try:
        started = time.monotonic()
        with pytest.raises(judge_worker.JudgeOverBudget, match="CPU"):
            worker.judge(
                report_bytes=b"",
                report_over_limit=False,
                plans=_SlowPlans(),
                known={},
                expected=[],
                trust_unjudged_tests=False,
                statically_rebound=[],
            )
        assert time.monotonic() - started < 10.0
    finally:
        worker.close()


class _SlowPlans(list):
    """A plan list whose unpickling spins in C (a set of colliding integers), inside the worker's budget."""

    def __reduce__(self):
        return (set, ([k * (2**61 - 1) for k in range(150_000)],))


def test_a_large_honest_value_is_judged_within_the_budget():
    """The budget is for hostile reports: 100,000 plain integers (a report of about 1.4 MB) still pass (at
    150,000 the judge's 64 MiB no longer hold the parsed report, and the test fails saying so)."""
    result = run_python(
        "def f():\n    return list(range(100_000))\n",
        ["assert f() == list(range(100_000))"],
        entry_point="f",
        **{**LIMITS, "memory_mb": 512},
    )
    assert result.passed, result.reason
