"""The code sandbox contains misbehaving solutions: each fails with a reason, the parent carries on."""
import os
import select
import socket
import time

import pytest

from tutorial_lib.sandbox import SandboxResult, network_namespace_prefix, run_python

FAST = dict(timeout_s=3.0, cpu_s=1.0, memory_mb=256)


def run(code, tests=(), **options):
    result = run_python(code, list(tests), **{**FAST, **options})
    assert isinstance(result, SandboxResult)
    return result


def test_correct_solution_passes_and_wrong_one_fails():
    code = "def double(x):\n    return 2 * x\n"
    tests = ["assert double(2) == 4", "assert double(-1) == -2", "assert double(0) == 0"]
    passed = run(code, tests)
    assert passed.passed and passed.reason == "passed" and passed.tests_passed == 3
    wrong = run("def double(x):\n    return x + 2\n", tests)
    assert not wrong.passed and wrong.reason.startswith("test 2 failed") and wrong.tests_passed == 1


def test_setup_runs_before_the_tests():
    result = run("def scale(xs, k):\n    return [k * x for x in xs]\n", ["assert scale(DATA, 2) == [2, 4]"], setup="DATA = [1, 2]")
    assert result.passed


def test_infinite_loop_fails_on_a_limit():
    started = time.monotonic()
    result = run("while True:\n    pass\n", timeout_s=2.0, cpu_s=1.0)
    assert not result.passed
    assert result.reason.startswith(("cpu limit", "timeout"))
    assert time.monotonic() - started < 5


def test_sleeping_forever_hits_the_wall_clock_timeout():
    result = run("import time\ntime.sleep(60)\n", timeout_s=1.0)
    assert not result.passed and result.timed_out and result.reason.startswith("timeout")


@pytest.mark.parametrize("code", [
    "x = bytearray(10**10)\n",
    "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))\n",
])
def test_memory_blow_up_fails(code):
    result = run(code)
    assert not result.passed
    assert result.reason.startswith(("memory limit", "killed")), result.reason


def test_writing_outside_the_sandbox_is_refused(tmp_path):
    target = tmp_path / "escaped.txt"
    result = run(f"open({str(target)!r}, 'w').write('x')\n")
    assert not result.passed and result.reason.startswith("forbidden"), result.reason
    assert not target.exists()
    # caught by the code: still a failure, still no file
    result = run(f"try:\n    open({str(target)!r}, 'w').write('x')\nexcept OSError:\n    pass\n")
    assert not result.passed and result.reason.startswith("forbidden")
    assert not target.exists()


def test_deleting_outside_the_sandbox_is_refused(tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("precious")
    for code in (f"import os\nos.remove({str(keep)!r})\n", f"import shutil\nshutil.rmtree({str(tmp_path)!r})\n",
                 f"import os\nos.rename({str(keep)!r}, 'stolen.txt')\n"):
        result = run(code)
        assert not result.passed and result.reason.startswith("forbidden"), (code, result.reason)
    assert keep.read_text() == "precious"


def test_writing_inside_the_sandbox_folder_is_allowed():
    code = ("import os, tempfile\nopen('notes.txt', 'w').write('ok')\nfd, path = tempfile.mkstemp()\nos.close(fd)\n"
            "os.remove(path)\ndef read():\n    return open('notes.txt').read()\n")
    assert run(code, ["assert read() == 'ok'"]).passed


@pytest.mark.parametrize("isolate_network", [None, False])
def test_network_connection_is_refused(isolate_network):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'hi')\n"
        result = run(code, isolate_network=isolate_network)
        assert not result.passed and result.reason.startswith("forbidden"), result.reason
        readable, _, _ = select.select([listener], [], [], 0.2)
        assert readable == []  # nobody connected
    finally:
        listener.close()


def test_network_namespace_is_used_when_available():
    result = run("x = 1\n")
    assert result.passed
    assert result.network_namespace == bool(network_namespace_prefix())


def test_huge_output_fails():
    result = run("while True:\n    print('x' * 1000)\n", max_output_bytes=10_000)
    assert not result.passed and result.reason.startswith("output limit"), result.reason
    assert len(result.stdout_tail) <= 2000


@pytest.mark.parametrize("code", [
    "import os\nos.system('echo escaped')\n",
    "import subprocess\nsubprocess.run(['echo', 'escaped'])\n",
    "import os\nos.execv('/bin/echo', ['echo', 'escaped'])\n",
    "import os\nos.fork()\n",
    "import os\nos.kill(os.getppid(), 9)\n",
])
def test_starting_processes_is_refused(code):
    result = run(code)
    assert not result.passed and result.reason.startswith("forbidden"), result.reason
    assert "escaped" not in result.stdout_tail


@pytest.mark.parametrize("code, reason", [
    ("raise ValueError('boom')\n", "code raised ValueError"),
    ("def f(:\n", "code has a syntax error"),
    ("import sys\nsys.exit(0)\n", "code called exit"),
    ("import faulthandler\nfaulthandler._sigsegv()\n", "crashed"),
    ("x = input()\n", "code raised EOFError"),
])
def test_crashes_fail_with_a_reason(code, reason):
    result = run(code)
    assert not result.passed and result.reason.startswith(reason), result.reason


def test_output_is_captured():
    result = run("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n")
    assert result.passed and result.stdout_tail == "to stdout\n" and result.stderr_tail == "to stderr\n"


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="list of str"):
        run_python("x = 1", "assert x == 1")
    with pytest.raises(ValueError, match="timeout_s"):
        run_python("x = 1", [], timeout_s=0)


def test_no_temporary_folders_are_left_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    run("open('a.txt', 'w').write('x')\nimport os\nos.mkdir('sub')\nos.chmod('sub', 0)\n")
    run("while True:\n    pass\n", timeout_s=1.0)
    assert os.listdir(tmp_path) == []
