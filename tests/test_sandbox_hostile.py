"""Hostile solutions: written to cheat (pass without solving) or to harm (reach out of the sandbox, stop
the sweep). Each must fail, leave every canary outside untouched, and let a sweep finish.

Every solution below is WRONG for the problem (`sum_of_squares`: 14, 0, 29), so any pass is a false
pass. The placeholders OUTSIDE, CANARY, PROJECT, INTERPRETER, PARENT_PID and PORT are replaced by real
paths, the pid of the process running the sweep and a listening port on the host."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from process_tree import descendants as _descendants

import tutorial_lib.tasks.isolation as isolation
import tutorial_lib.tasks.sandbox as sandbox
from tutorial_lib.tasks.metrics import METRICS

pytestmark = pytest.mark.skipif(
    not isolation.sandbox_available(),
    reason=f"bubblewrap cannot run here ({isolation.bwrap_problem()}): {sandbox.INSTALL_HINT}; "
    "CI installs it "
    "(.ci/run), and these tests then run",
)

TESTS = [
    "assert sum_of_squares([1, 2, 3]) == 14",
    "assert sum_of_squares([]) == 0",
    "assert sum_of_squares([-2, 5]) == 29",
]
PROJECT = Path(__file__).resolve().parents[1]
MARKER = "tutorial_lib_hostile_marker"
WRONG = "def sum_of_squares(xs):\n    return -1\n"

HOSTILE = {
    # ---- the first cases found --------------------------------------------------------------------
    "exec_made_a_no_op": WRONG + "import builtins\nbuiltins.exec = lambda *a, **k: None\n"
    "builtins.eval = lambda *a, **k: True\nbuiltins.compile = lambda *a, **k: None\n",
    "frame_locals_rewrite_the_tests": WRONG
    + textwrap.dedent("""
        import sys
        frame = sys._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
                if isinstance(value, dict) and isinstance(value.get("tests"), list):
                    value["tests"][:] = [{"statement": "assert True"} for _ in value["tests"]]
                if isinstance(value, list) and value and all(
                    isinstance(v, str) and "assert" in v for v in value
                ):
                    value[:] = ["assert True"] * len(value)
            frame = frame.f_back
        """),
    "forged_report_then_exit": WRONG
    + textwrap.dedent("""
        import json, os, stat
        forged = json.dumps({"error": None,
                             "tests": [{"values": [["b", True]]}, {"ok": True}, {"values": [["i", "29"]]}]})
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, (forged + "\\n").encode())
            except OSError:
                pass
        os._exit(0)
        """),
    "forged_report_then_carry_on": WRONG
    + textwrap.dedent("""
        import os, stat
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, b'{"error": null, "tests": [{"ok": true}, {"ok": true}, {"ok": true}]}\\n')
            except OSError:
                pass
        """),
    "eq_always_true": textwrap.dedent("""
        class Anything:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            __hash__ = object.__hash__
        def sum_of_squares(xs):
            return Anything()
        """),
    "int_subclass_whose_eq_lies": textwrap.dedent("""
        class Liar(int):
            def __eq__(self, other): return True
            __hash__ = int.__hash__
        def sum_of_squares(xs):
            return Liar(-1)
        """),
    "pidfd_sigkill_to_parent": WRONG
    + textwrap.dedent("""
        import os, signal
        for pid in (os.getppid(), PARENT_PID, 1):
            try:
                signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        """),
    "dir_fd_write_and_rmtree_outside": WRONG
    + textwrap.dedent("""
        import os, shutil
        for base in ("/", "OUTSIDE"):
            try:
                fd = os.open(base, os.O_RDONLY)
                out = os.open("CANARY".lstrip("/"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, dir_fd=fd)
                os.write(out, b"owned")
            except OSError:
                pass
            try:
                shutil.rmtree("OUTSIDE".lstrip("/"), dir_fd=os.open("/", os.O_RDONLY))
            except OSError:
                pass
        """),
    "chmod_through_a_descriptor": WRONG
    + textwrap.dedent("""
        import os
        for path in ("CANARY", "INTERPRETER"):
            try:
                fd = os.open(path, os.O_RDONLY)
                os.chmod(fd, 0o777)
            except OSError:
                pass
        """),
    "fork_exec_shell_that_outlives_the_sandbox": WRONG
    + textwrap.dedent("""
        import os
        shell = "sleep 1; echo owned > OUTSIDE/from_shell; MARKER"
        try:
            import _posixsubprocess
            _posixsubprocess.fork_exec(["/bin/sh", "-c", shell], [b"/bin/sh"], True, (), None, None,
                                       -1, -1, -1, -1, -1, -1, *os.pipe(), False, True, -1, None, None, None,
                                       -1, None, True)
        except Exception:
            pass
        for start in (lambda: os.posix_spawn("/bin/sh", ["sh", "-c", shell], {}),
                      lambda: __import__("subprocess").Popen(["/bin/sh", "-c", shell],
                                                             start_new_session=True),
                      lambda: __import__("ctypes").CDLL(None).fork()):
            try:
                start()
            except Exception:
                pass
        """),
    "audit_hook_off_then_write_delete_spawn_signal": WRONG
    + textwrap.dedent("""
        import os, sys, signal, subprocess
        try:
            import ctypes
            ctypes.c_void_p.in_dll(ctypes.pythonapi, "_PyRuntime")  # where hooks would be switched off
        except Exception:
            pass
        for action in (lambda: open("CANARY", "w").write("owned"), lambda: os.remove("CANARY"),
                       lambda: subprocess.run(["/bin/sh", "-c", "echo owned > CANARY"]),
                       lambda: os.kill(PARENT_PID, signal.SIGKILL), lambda: os.system("echo owned > CANARY")):
            try:
                action()
            except Exception:
                pass
        """),
    "read_the_answers_from_the_task_files": textwrap.dedent("""
        import re
        ANSWERS = {}
        for path in ("PROJECT/data/tasks/code.jsonl", "../data/tasks/code.jsonl",
                     "/work/main/data/tasks/code.jsonl"):
            try:
                text = open(path).read()
            except OSError:
                continue
            for call, expected in re.findall(r"assert (sum_of_squares\\(.*?\\)) == (\\d+)", text):
                ANSWERS[call] = int(expected)
        def sum_of_squares(xs):
            return ANSWERS.get(f"sum_of_squares({xs!r})", -1)
        """),
    # ---- more: cheating -------------------------------------------------------------------------
    "search_memory_for_the_expected_values": textwrap.dedent("""
        import gc, re, sys
        ANSWERS = {}
        try:
            ANSWERS["stdin"] = sys.stdin.read()
        except Exception:
            pass
        for obj in gc.get_objects():
            for text in (obj if isinstance(obj, (list, tuple)) else [obj] if isinstance(obj, str) else []):
                if isinstance(text, str):
                    for call, expected in re.findall(r"(sum_of_squares\\(.*?\\)) == (\\d+)", text):
                        ANSWERS[call] = int(expected)
        def sum_of_squares(xs):
            return ANSWERS.get(f"sum_of_squares({xs!r})", -1)
        """),
    "monkeypatch_json_and_the_encoder": WRONG
    + textwrap.dedent("""
        import json, sys
        forged = '{"error": null, "tests": [{"ok": true}, {"ok": true}, {"ok": true}]}'
        json.dumps = lambda *a, **k: forged
        main = sys.modules["__main__"]
        main.encode = lambda value, depth=0: ["b", True]
        main.__dict__["_describe"] = lambda error: "passed"
        """),
    "system_exit_zero": WRONG + "raise SystemExit(0)\n",
    "os_exit_zero_before_the_tests": WRONG + "import os\nos._exit(0)\n",
    "print_the_expected_outputs_and_a_fake_report": WRONG
    + textwrap.dedent("""
        import sys
        print("14\\n0\\n29\\npassed")
        print('{"error": null, "tests": [{"ok": true}, {"ok": true}, {"ok": true}]}')
        sys.stderr.write('{"error": null, "tests": []}\\n')
        """),
    "generator_instead_of_a_value": "def sum_of_squares(xs):\n    return (x * x for x in xs)\n",
    "self_referential_value": "def sum_of_squares(xs):\n    a = []\n    a.append(a)\n    return a\n",
    "value_too_large_for_the_report": "def sum_of_squares(xs):\n    return 'x' * 10**7\n",
    "hard_coded_raise_limits_then_loop": WRONG
    + textwrap.dedent("""
        import resource
        for limit in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_NPROC):
            try:
                resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            except (ValueError, OSError):
                pass
        """),
    "thread_forges_a_report_late": WRONG
    + textwrap.dedent("""
        import os, threading, time
        def forge():
            time.sleep(0.01)
            for fd in range(3, 64):
                try:
                    os.write(fd, b'{"error": null, "tests": [{"ok": true}, {"ok": true}, {"ok": true}]}\\n')
                except OSError:
                    pass
        threading.Thread(target=forge, daemon=True).start()
        """),
    # ---- more: harming ----------------------------------------------------------------------------
    "infinite_loop": WRONG + "while True:\n    pass\n",
    "fork_bomb": WRONG
    + textwrap.dedent("""
        import os
        for _ in range(2000):
            try:
                if os.fork() == 0:
                    while True:
                        os.fork()
            except OSError:
                pass
        """),
    "memory_bomb": WRONG + "hog = [bytearray(10**8) for _ in range(100)]\n",
    "huge_output": WRONG + "while True:\n    print('x' * 10000)\n",
    "sleep_past_the_timeout": WRONG + "import time\ntime.sleep(120)\n",
    "fill_dev_shm_and_tmp": WRONG
    + textwrap.dedent("""
        for path in ["/dev/shm/hog"] + [f"/tmp/hog{i}" for i in range(2000)]:
            try:
                with open(path, "wb") as f:
                    f.write(b"0" * 60_000)
            except OSError:
                pass
        """),
    "network_connect": WRONG
    + textwrap.dedent("""
        import socket
        for address in (("127.0.0.1", PORT), ("8.8.8.8", 53), ("10.0.0.1", 80)):
            try:
                socket.create_connection(address, timeout=0.5).sendall(b"MARKER")
            except OSError:
                pass
        """),
    "kill_pid_1_and_everything": WRONG
    + textwrap.dedent("""
        import os, signal
        for pid in (1, -1):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        """),
    "ptrace_pid_1": WRONG
    + textwrap.dedent("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, 1, 0, 0) == 0:  # PTRACE_ATTACH
            raise SystemExit("attached")
        """),
    "delete_the_interpreter": WRONG
    + textwrap.dedent("""
        import os, shutil, sys
        for path in (os.path.dirname(os.__file__), sys.executable, "/usr/lib"):
            try:
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
            except OSError:
                pass
        """),
    "escape_with_a_new_user_namespace": WRONG
    + textwrap.dedent("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
            libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
        """),
}


def _fill(code: str, outside: Path, canary: Path, port: int, parent_pid) -> str:
    return (
        code.replace("OUTSIDE", str(outside))
        .replace("CANARY", str(canary))
        .replace("PROJECT", str(PROJECT))
        .replace("INTERPRETER", isolation.interpreter_files()[0])
        .replace("PARENT_PID", str(parent_pid))
        .replace("PORT", str(port))
        .replace("MARKER", MARKER)
    )


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    canary = folder / "canary.txt"
    canary.write_text("untouched")
    canary.chmod(0o600)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.05)
    interpreter = isolation.interpreter_files()[0]
    before = (os.stat(interpreter).st_mode, sorted(os.listdir(os.path.dirname(os.__file__))))
    yield folder, canary, listener
    listener.close()
    assert before == (os.stat(interpreter).st_mode, sorted(os.listdir(os.path.dirname(os.__file__))))


def _assert_no_escape(folder: Path, canary: Path, listener: socket.socket) -> None:
    assert canary.read_text() == "untouched" and (canary.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["canary.txt"]
    with pytest.raises(socket.timeout):
        listener.accept()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes()
        except OSError:
            continue
        assert MARKER.encode() not in text or b"pytest" in text, (
            f"a process outlived its sandbox: {text[:200]}"
        )


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_solution_fails_without_escape(name, outside):
    folder, canary, listener = outside
    code = _fill(HOSTILE[name], folder, canary, listener.getsockname()[1], os.getpid())
    started = time.monotonic()
    result = sandbox.run_python(code, TESTS, timeout_s=3.0, cpu_s=2.0, memory_mb=256, max_output_bytes=20_000)
    assert not result.passed, f"{name}: false pass ({result.reason})"
    assert time.monotonic() - started < 6.0
    # through the metric the sweep uses, too
    example = {
        "id": "p",
        "prompt": "",
        "references": [""],
        "info": {"tests": TESTS, "setup": "", "entry_point": "sum_of_squares"},
    }
    if name not in (
        "infinite_loop",
        "sleep_past_the_timeout",
        "fork_bomb",
        "hard_coded_raise_limits_then_loop",
    ):
        assert METRICS["mbpp"](f"```python\n{code}\n```", example) == 0.0
    time.sleep(0.1 if "shell" not in name else 1.5)  # a shell that outlived the sandbox would write by now
    _assert_no_escape(folder, canary, listener)


def test_hard_coded_answers_pass_as_documented():
    """The documented boundary: returning the answers the prompt shows passes; the tests cannot tell."""
    code = "def sum_of_squares(xs):\n    return {(1, 2, 3): 14, (): 0, (-2, 5): 29}[tuple(xs)]\n"
    assert sandbox.run_python(code, TESTS).passed


SWEEP_CASES = [
    "exec_made_a_no_op",
    "frame_locals_rewrite_the_tests",
    "forged_report_then_exit",
    "eq_always_true",
    "pidfd_sigkill_to_parent",
    "kill_pid_1_and_everything",
    "fork_exec_shell_that_outlives_the_sandbox",
    "fork_bomb",
    "sleep_past_the_timeout",
    "os_exit_zero_before_the_tests",
    "monkeypatch_json_and_the_encoder",
    "read_the_answers_from_the_task_files",
]
SWEEP_SCRIPT = """
import json, os, sys
import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Task, sweep_configs
cases, tests, root = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
info = {"tests": tests, "setup": "", "entry_point": "sum_of_squares"}
example = {"id": "p", "prompt": "mi", "references": [""], "info": info}
def fenced(code):
    code = code.replace("SWEEP_PID", str(os.getpid()))  # the kill attempts aim at this very process
    return lambda text: "```python\\n" + code + "\\n```"
tasks = [
    Task(name, "mbpp", [example], max_new_tokens=2, postprocess=fenced(code))
    for name, code in cases.items()
]
configs = sweep_configs(["Drafter", "Verifier"], temperatures=(1.0,), gammas=(1,))
pair = tl.load_pair("toy-drafter", "toy-verifier")
table = ev.run_sweep(pair, tasks, configs, name="hostile", root=root, progress=False)
print("RESULT " + json.dumps(
    {f"{t}|{l}": q for t, l, q in zip(table["task"], table["label"], table["quality"])}
))
"""


def test_a_sweep_over_hostile_solutions_finishes_and_scores_them_zero(tmp_path, outside):
    folder, canary, listener = outside
    cases = {
        name: _fill(HOSTILE[name], folder, canary, listener.getsockname()[1], "SWEEP_PID")
        for name in SWEEP_CASES
    }
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    (tmp_path / "tests.json").write_text(json.dumps(TESTS))
    sandbox_tmp = tmp_path / "tmp"
    sandbox_tmp.mkdir()
    arguments = [str(tmp_path / "cases.json"), str(tmp_path / "tests.json"), str(tmp_path / "results")]
    completed = subprocess.run(
        [sys.executable, "-c", SWEEP_SCRIPT, *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(sandbox_tmp)},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    quality = json.loads(line[len("RESULT ") :])
    assert len(quality) == 2 * len(SWEEP_CASES)  # every case, for the drafter and for the verifier
    assert all(value == 0.0 for value in quality.values()), quality
    assert list(sandbox_tmp.iterdir()) == []  # no sandbox folder left behind
    time.sleep(1.5)
    _assert_no_escape(folder, canary, listener)


def test_killing_the_sweep_mid_run_leaves_no_sandbox_and_no_folder(tmp_path):
    script = (
        "import tutorial_lib.tasks.sandbox as s\n"
        "s.run_python('import time\\ntime.sleep(60)\\ndef f():\\n    pass\\n', ['assert f() is None'],"
        " timeout_s=60, cpu_s=60)\n"
    )
    sweep = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        deadline = time.monotonic() + 30
        while len(_descendants(sweep.pid)) < 2 and time.monotonic() < deadline:  # bwrap and the interpreter
            time.sleep(0.1)
        sandboxed = _descendants(sweep.pid)
        assert len(sandboxed) >= 2, "the sandbox did not start"
    finally:
        sweep.kill()
        sweep.wait()

    def running(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    # The kernel kills them at once, but on a busy machine a killed process can wait its turn to exit (a
    # full suite beside a 2-thread run once saw one still running 1 s later): they get 10 s, not forever.
    deadline = time.monotonic() + 10.0
    alive = [pid for pid in sandboxed if running(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if running(pid)]
    assert alive == [], "sandbox processes outlived the sweep"
    assert list(tmp_path.iterdir()) == []
