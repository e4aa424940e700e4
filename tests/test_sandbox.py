"""The code sandbox: misbehaving solutions fail with a reason, the parent carries on, the judge is outside.

Hostile solutions (cheating and harming) are in tests/test_sandbox_hostile.py."""

import os
import shutil
import socket
import textwrap
import sys
import time
from pathlib import Path

import pytest

import tutorial_lib.tasks.sandbox as sandbox
from tutorial_lib.tasks.judge import Names, plan_test
from tutorial_lib.tasks.isolation import bwrap_problem, sandbox_available
from tutorial_lib.tasks.plain_data import decode_value
from tutorial_lib.tasks.sandbox import SandboxResult, SandboxUnavailableError, run_python

FAST = dict(timeout_s=3.0, cpu_s=1.0, memory_mb=256)
needs_bwrap = pytest.mark.skipif(
    not sandbox_available(),
    reason=f"bubblewrap cannot run here ({bwrap_problem()}); {sandbox.INSTALL_HINT} (CI installs it)",
)


def run(code, tests=None, **options):
    """`code` run with `tests`; without tests, with one that calls a function appended to the code (a test
    that calls nothing of the solution fails by design)."""
    if tests is None:
        code, tests = code + "\n\ndef ran():\n    return True\n", ["assert ran()"]
    result = run_python(code, list(tests), **{**FAST, **options})
    assert isinstance(result, SandboxResult)
    return result


# --------------------------------------------------------------------------------------------------
# The judge (no child process)
# --------------------------------------------------------------------------------------------------


def sources(plan):
    return tuple((hole.side, hole.source) for hole in plan.holes)


def test_plan_splits_calls_from_the_tests_logic():
    plan = plan_test("assert second_largest([4, 1, 7]) == 4")
    assert sources(plan) == (("solution", "second_largest([4, 1, 7])"),) and plan.skeleton is not None
    plan = plan_test("assert fizzbuzz(15)[-1] == 'FizzBuzz'")
    assert sources(plan) == (("solution", "fizzbuzz(15)"),)
    plan = plan_test("assert math.isclose(area(2), 12.56, rel_tol=0.01)")
    assert sources(plan) == (("solution", "area(2)"),)
    # the setup's names are the expected side's: only the value of `x` is handed to the solution's call
    plan = plan_test("assert set(f(x)) == set(EXPECTED)", Names(setup=frozenset({"x", "EXPECTED"})))
    assert sources(plan) == (
        ("expected", "x"),
        ("solution", "f(__judge_hole_0)"),
        ("expected", "EXPECTED"),
    )


@pytest.mark.parametrize(
    "test",
    [
        "assert all(f(i) == i for i in range(3))",
        "print(f(1))",
        "assert (lambda: f(1))() == 1",
        "x = f(1); assert x == 1",
    ],
)
def test_tests_whose_logic_would_run_in_the_child_are_not_judged_outside(test):
    assert plan_test(test).skeleton is None and plan_test(test).unjudged_reason


@pytest.mark.parametrize(
    "encoded, expected",
    [
        (["N"], None),
        (["b", True], True),
        (["i", "c"], 12),
        (["i", "-10"], -16),
        (["f", "0.5"], 0.5),
        (["f", "nan"], None),
        (["s", "a"], "a"),
        (["t", [["i", "1"]]], (1,)),
        (["l", []], []),
        (["S", [["s", "a"]]], {"a"}),
        (["d", [[["t", [["i", "1"]]], ["y", "6162"]]]], {(1,): b"ab"}),
        (["c", ["1.0", "-2.0"]], 1 - 2j),
    ],
)
def test_decoding_plain_data(encoded, expected):
    value = decode_value(encoded)
    if expected is None and encoded[0] == "f":
        assert value != value  # nan
    else:
        assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "encoded",
    [
        ["x", "Liar"],
        {"i": 1},
        ["i", "1.5"],
        ["S", [["l", []]]],
        ["q", 1],
        42,
        ["l", [["x", "generator"]]],
        ["d", [["s", "a"]]],
    ],
)
def test_anything_else_is_not_plain_data(encoded):
    with pytest.raises(ValueError):
        decode_value(encoded)


def test_without_bwrap_code_does_not_run_unless_asked(monkeypatch, tmp_path):
    bwrap_problem.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv(sandbox.UNSANDBOXED_ENV, raising=False)
    canary = tmp_path / "ran.txt"
    try:
        with pytest.raises(
            SandboxUnavailableError, match="apt-get install bubblewrap.*TUTORIAL_LIB_UNSANDBOXED=1"
        ):
            run_python(f"open({str(canary)!r}, 'w').write('x')", ["assert True"])
        assert not canary.exists()
        monkeypatch.setattr(sandbox.runner, "_warned_unsandboxed", False)
        monkeypatch.setenv(sandbox.UNSANDBOXED_ENV, "1")
        with pytest.warns(RuntimeWarning, match="WITHOUT a sandbox.*read every file"):
            result = run_python("def double(x):\n    return 2 * x\n", ["assert double(2) == 4"])
        assert result.passed and not result.sandboxed
        wrong = run_python("def double(x):\n    return 5\n", ["assert double(2) == 4"])
        assert not wrong.passed  # the judge is the same outside the sandbox
    finally:
        monkeypatch.undo()
        bwrap_problem.cache_clear()


# --------------------------------------------------------------------------------------------------
# Ordinary behaviour under bwrap
# --------------------------------------------------------------------------------------------------


@needs_bwrap
def test_correct_solution_passes_and_wrong_one_fails():
    code = "def double(x):\n    return 2 * x\n"
    tests = ["assert double(2) == 4", "assert double(-1) == -2", "assert double(0) == 0"]
    passed = run(code, tests)
    assert passed.passed and passed.reason == "passed" and passed.tests_passed == 3 and passed.sandboxed
    wrong = run("def double(x):\n    return x + 2\n", tests)
    assert not wrong.passed and wrong.reason.startswith("test 2 failed") and wrong.tests_passed == 1


@needs_bwrap
@pytest.mark.parametrize(
    "code, tests",
    [
        ("def f():\n    return (1, 2)\n", ["assert f() == (1, 2)", "assert f() != [1, 2]"]),
        (
            "from collections import Counter\ndef f(s):\n    return Counter(s)\n",
            ["assert f('aab') == {'a': 2, 'b': 1}"],
        ),
        (
            "def f():\n    return {1, 2}\n",
            ["assert f() == {2, 1}", "assert sorted(f()) == [1, 2]", "assert 1 in f()"],
        ),
        (
            "def f():\n    return 0.1 + 0.2\n",
            ["assert math.isclose(f(), 0.3)", "assert abs(f() - 0.3) < 1e-9"],
        ),
        (
            "def f(n):\n    return [str(i) for i in range(1, n + 1)]\n",
            ["assert f(15)[-1] == '15'", "assert len(f(3)) == 3"],
        ),
        ("def f():\n    return None\n", ["assert f() is None", "assert not f()"]),
        ("def f(x):\n    return x > 1\n", ["assert f(2)", "assert f(0) == False"]),
    ],
)
def test_values_of_builtin_types_are_judged_like_python(code, tests):
    result = run(code, tests)
    assert result.passed, result.reason


@needs_bwrap
def test_setup_runs_before_the_tests():
    result = run(
        "def scale(xs, k):\n    return [k * x for x in xs]\n",
        ["assert scale(DATA, 2) == [2, 4]"],
        setup="DATA = [1, 2]",
    )
    assert result.passed, result.reason
    result = run(
        "def scale(xs, k):\n    return [k * x for x in xs]\n",
        ["assert scale(data(), 2) == [2, 4]"],
        setup="def data():\n    return [1, 2]\n",
    )
    assert result.passed, result.reason


@needs_bwrap
def test_unjudged_tests_fail_unless_trusted():
    code = "def square(x):\n    return x * x\n"
    tests = ["assert all(square(i) == i * i for i in range(5))"]
    refused = run(code, tests)
    assert not refused.passed and "cannot be judged outside" in refused.reason
    trusted = run(code, tests, trust_unjudged_tests=True)
    assert trusted.passed and trusted.tests_unjudged == 1
    assert not run("def square(x):\n    return x\n", tests, trust_unjudged_tests=True).passed


@needs_bwrap
def test_sleeping_forever_hits_the_wall_clock_timeout():
    started = time.monotonic()
    result = run("import time\ntime.sleep(60)\n", timeout_s=1.0)
    assert not result.passed and result.timed_out and result.reason.startswith("timeout")
    assert time.monotonic() - started < 4


@needs_bwrap
def test_infinite_loop_fails_on_a_limit():
    result = run("while True:\n    pass\n", timeout_s=3.0, cpu_s=1.0)
    assert not result.passed and result.reason.startswith(("cpu limit", "timeout")), result.reason


@needs_bwrap
@pytest.mark.parametrize(
    "code", ["x = bytearray(10**10)\n", "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))\n"]
)
def test_memory_blow_up_fails(code):
    result = run(code)
    assert not result.passed and result.reason.startswith(("code memory limit", "killed")), result.reason


@needs_bwrap
def test_writing_inside_the_sandbox_folder_is_allowed():
    code = (
        "import os, tempfile\nopen('notes.txt', 'w').write('ok')\n"
        "fd, path = tempfile.mkstemp()\nos.close(fd)\n"
        "os.remove(path)\ndef read():\n    return open('notes.txt').read()\n"
    )
    assert run(code, ["assert read() == 'ok'"]).passed


@needs_bwrap
def test_the_project_home_and_tasks_are_not_visible(tmp_path):
    project = Path(__file__).resolve().parents[1]
    home_file = Path.home() / ".tutorial_lib_sandbox_canary"
    home_file.write_text("secret")
    try:
        paths = [
            str(project),
            str(project / "data" / "tasks" / "code.jsonl"),
            str(home_file),
            str(tmp_path),
            str(Path(sys.prefix) / "lib"),
        ]  # the venv, with its site-packages
        code = f"import os\ndef seen():\n    return [p for p in {paths!r} if os.path.exists(p)]\n"
        result = run(code, ["assert seen() == []"])
        assert result.passed, result.reason
    finally:
        home_file.unlink()


@needs_bwrap
def test_huge_output_fails():
    result = run("while True:\n    print('x' * 1000)\n", max_output_bytes=10_000)
    assert not result.passed and result.reason.startswith("output limit"), result.reason
    assert len(result.stdout_tail) <= 2000


@needs_bwrap
@pytest.mark.parametrize(
    "code, reason",
    [
        ("raise ValueError('boom')\n", "code raised ValueError"),
        ("def f(:\n", "code has a syntax error"),
        ("import sys\nsys.exit(0)\n", "code called exit"),
        ("import faulthandler\nfaulthandler._sigsegv()\n", "crashed"),
        ("x = input()\n", "code raised EOFError"),
    ],
)
def test_crashes_fail_with_a_reason(code, reason):
    result = run(code)
    assert not result.passed and result.reason.startswith(reason), result.reason


@needs_bwrap
def test_output_is_captured():
    result = run("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n")
    assert result.passed and result.stdout_tail == "to stdout\n" and result.stderr_tail == "to stderr\n"


@needs_bwrap
def test_network_connection_fails():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    try:
        port = listener.getsockname()[1]
        code = (
            "import socket\ndef talk():\n"
            f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "    return 'connected'\n"
        )
        result = run(code, ["assert talk() == 'connected'"])
        assert not result.passed and "OSError" in result.reason or "Refused" in result.reason, result.reason
        with pytest.raises(socket.timeout):
            listener.accept()  # nobody connected
    finally:
        listener.close()


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="list of str"):
        run_python("x = 1", "assert x == 1")
    with pytest.raises(ValueError, match="timeout_s"):
        run_python("x = 1", ["assert True"], timeout_s=0)
    with pytest.raises(ValueError, match="timeout_s"):
        run_python("x = 1", ["assert True"], timeout_s=float("nan"))
    with pytest.raises(ValueError, match=r"tests=\[\]: with no test nothing is judged"):  # was a pass
        run_python("x = 1", [])


@needs_bwrap
def test_no_temporary_folders_are_left_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    run("open('a.txt', 'w').write('x')\nimport os\nos.mkdir('sub')\nos.chmod('sub', 0)\n")
    run("while True:\n    pass\n", timeout_s=1.0)
    assert os.listdir(tmp_path) == []


@needs_bwrap
def test_what_the_code_sees_inside():
    code = textwrap.dedent("""
        import os, socket
        def fork():
            try:
                os.fork()
            except OSError as error:
                return error.errno
        def write_root():
            try:
                open('/escape.txt', 'w')
            except OSError as error:
                return error.errno
        def interfaces():
            try:
                return sorted(name for _, name in socket.if_nameindex())
            except OSError as error:  # listing them needs a socket of a family the filter refuses
                return error.errno
        def seen():
            return [os.getuid(), os.getppid(), os.path.exists('/dev/shm'), os.path.exists('/proc'),
                    sorted(os.listdir('/tmp')), os.getcwd()]
        """)
    tests = [
        "assert fork() == 1",
        "assert write_root() == 30",
        "assert interfaces() == 97",
        "assert seen() == [65534, 1, False, False, [], '/tmp']",
    ]
    result = run(code, tests)
    assert result.passed, result.reason
