"""Running model-written Python in a real sandbox, and judging its tests outside it.

`run_python(code, tests)` answers: do the values `code` computes for the problem's tests satisfy
them? It is what the MBPP-style metric (`tutorial_lib.metrics.code_pass`, `METRICS["mbpp"]`) calls
once per generated solution, inside sweeps of thousands of generations, so it never raises for
anything the code does and no solution can stop the sweep: each misbehaviour becomes
`SandboxResult(passed=False, reason=...)`.

The standard harness of the code benchmarks (Chen et al. 2021, `human_eval/execution.py`; Austin et
al. 2021, MBPP) runs program and tests in one interpreter and warns that it is no security boundary.
Tried as a hostile tester would, that design lets a solution change its own verdict and reach out of
its folder; this module keeps the two apart:

1. **The sandbox** is bubblewrap (`bwrap`, Debian package `bubblewrap`): new user, PID, network,
   IPC, UTS and cgroup namespaces (`--unshare-all`), `--die-with-parent`, `--new-session` (no
   terminal to inject into), all capabilities dropped, uid/gid 65534 inside. Its file system is a
   read-only root with read-only binds of only what the base interpreter needs (`bwrap_command`: the
   executable, its standard library with `site-packages` masked, `libpython`, `/usr/lib*`, `/lib*`,
   `/etc/ld.so.cache`), `/dev/null`, `/dev/zero`, `/dev/urandom`, a new `/proc`, and an empty size-
   capped tmpfs as `/tmp`, which is also its working folder and HOME. The project, the home folder,
   the results and the task files are not there. The interpreter is `sys.base_prefix`'s, run with
   `-I -S -B`: no site-packages, no environment variables, no bytecode writes.
   A seccomp filter refuses new processes (fork, vfork, clone without CLONE_THREAD; clone3 gets
   ENOSYS so the C library falls back to clone), ptrace, process_vm_*, unshare, setns, mount,
   bpf, perf_event_open, userfaultfd, keyctl and io_uring: as root, RLIMIT_NPROC is not enforced, so
   the filter is what stops a fork bomb. It is written for x86_64 and aarch64; elsewhere there is none,
   and only RLIMIT_NPROC (for a user other than root) and the wall clock bound process creation.
2. **Limits**, set by the child program's first lines before it reads the solution
   (`sandbox_child.py`): RLIMIT_AS (memory_mb), RLIMIT_CPU (cpu_s), RLIMIT_FSIZE (max_output_bytes;
   stdout and stderr are files the parent opened, so endless printing stops with SIGXFSZ), no core
   files, RLIMIT_NPROC 1. The wall-clock limit (timeout_s) is enforced from outside: the parent
   kills bwrap's whole process group, and the PID namespace dies with it.
3. **Judged outside** (`tutorial_lib.judge`): the child evaluates only the calls of each test and
   sends their values back as tagged plain data over a pipe; the parent decodes them into builtin
   objects and applies the test's own comparison with its own interpreter. See `judge` for the
   threat model and for tests of other forms (`trust_unjudged_tests`).
4. **The sweep survives**: in its own PID namespace the child sees no process outside it (its parent
   is pid 1, bwrap's init, which ignores signals from inside), so it cannot signal, kill or stall the
   sweep; stdout and stderr are anonymous temporary files and the sandbox folder is a tmpfs, so no
   folder is left behind on any path, even when the sweep itself is killed.

**Without bwrap** (or where it cannot create namespaces) generated code does not run: `run_python`
raises `SandboxUnavailableError` saying how to install it. Set the environment variable
`TUTORIAL_LIB_UNSANDBOXED=1` (or pass `allow_unsandboxed=True`) to run it anyway in a plain child
process with the same limits and the same outside judge; a warning then says what is not contained.
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .judge import judge_test, plan_tests

UNSANDBOXED_ENV = "TUTORIAL_LIB_UNSANDBOXED"
INSTALL_HINT = ("install bubblewrap: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` "
                "(Fedora), `sudo pacman -S bubblewrap` (Arch); `make install` does it when run as root")
UNCONTAINED = ("the code can read every file your user can, write and delete them, use the network, "
               "signal and start processes; only the resource limits and the outside judge remain")
TAIL_CHARS = 2000  # how much of stdout/stderr a result keeps
REPORT_LIMIT = 4 * 1024 * 1024  # bytes of report the parent reads
TMPFS_BYTES = 64 * 1024 * 1024
SANDBOX_UID = 65534
_CHILD_SOURCE = (Path(__file__).with_name("sandbox_child.py")).read_text(encoding="utf-8")


class SandboxUnavailableError(RuntimeError):
    """bwrap is missing or cannot run here, and running unsandboxed was not asked for."""


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one program. `passed` only when the judge accepted every test."""

    passed: bool
    reason: str  # "passed", or why not: "timeout ...", "test 2 failed: ...", "no report ..."
    stdout_tail: str = ""
    stderr_tail: str = ""
    tests_passed: int = 0
    tests_total: int = 0
    returncode: int | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    sandboxed: bool = True  # False when it ran unsandboxed by explicit opt-in
    tests_unjudged: int = 0  # tests counted on the child's word (trust_unjudged_tests=True)


# --------------------------------------------------------------------------------------------------
# What the sandbox contains
# --------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def interpreter_files() -> tuple[str, tuple[str, ...], str]:
    """(executable, paths to bind read-only, stdlib folder) of the base interpreter."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    executable = Path(sys.base_exec_prefix) / "bin" / f"python{version}"
    executable = str(executable if executable.is_file() else Path(os.path.realpath(sys.executable)))
    stdlib = os.path.dirname(os.path.realpath(os.__file__))
    binds = [executable, stdlib]
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and os.path.isdir(libdir):
        binds += sorted(str(path) for path in Path(libdir).glob("libpython*.so*"))
    return executable, tuple(binds), stdlib


def _system_library_arguments() -> list[str]:
    arguments = []
    for path in ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32"):
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    return arguments + ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]


def bwrap_command(bwrap: str, seccomp_fd: int | None) -> list[str]:
    """The bwrap command line up to (not including) the interpreter's own arguments."""
    executable, binds, stdlib = interpreter_files()
    command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
               "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
               *_system_library_arguments()]
    for path in binds:
        command += ["--ro-bind", path, path]
    site_packages = os.path.join(stdlib, "site-packages")
    if os.path.isdir(site_packages):  # the base interpreter's packages: not needed, not shown
        command += ["--tmpfs", site_packages, "--remount-ro", site_packages]
    for device in ("/dev/null", "/dev/zero", "/dev/urandom"):
        command += ["--dev-bind", device, device]
    command += ["--proc", "/proc", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp",
                "--remount-ro", "/"]
    if seccomp_fd is not None:
        command += ["--seccomp", str(seccomp_fd)]
    return command + ["--", executable]


# Syscalls the filter refuses with EPERM, per architecture (clone and clone3 are handled apart).
_SECCOMP_TABLES = {
    "x86_64": dict(arch=0xC000003E, clone=56, clone3=435, x32_bit=0x40000000, deny=(
        57, 58, 101, 310, 311, 272, 308, 165, 166, 321, 298, 323, 250, 248, 249, 425, 426, 427, 155)),
    "aarch64": dict(arch=0xC00000B7, clone=220, clone3=435, x32_bit=None, deny=(
        117, 270, 271, 97, 268, 40, 39, 280, 241, 282, 219, 217, 218, 425, 426, 427, 41)),
}


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program (bwrap's `--seccomp` format), or None on an unknown architecture."""
    table = _SECCOMP_TABLES.get(machine or platform.machine())
    if table is None:
        return None
    LD, JEQ, JSET, JGE, RET = 0x20, 0x15, 0x45, 0x35, 0x06
    ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050001, 0x00050026
    CLONE_THREAD = 0x00010000

    def op(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)

    program = [op(LD, 0, 0, 4), op(JEQ, 1, 0, table["arch"]), op(RET, 0, 0, KILL), op(LD, 0, 0, 0)]
    if table["x32_bit"]:
        program += [op(JGE, 0, 1, table["x32_bit"]), op(RET, 0, 0, KILL)]
    checks = [*table["deny"], table["clone3"], table["clone"]]
    # After the checks: [ALLOW, EPERM, ENOSYS, LD arg0, JSET CLONE_THREAD, ALLOW, EPERM]
    for index, number in enumerate(checks):
        remaining = len(checks) - index - 1  # instructions between this one and the ALLOW return
        target = remaining + {table["clone3"]: 2, table["clone"]: 3}.get(number, 1)
        program.append(op(JEQ, target, 0, number))
    program += [op(RET, 0, 0, ALLOW), op(RET, 0, 0, EPERM), op(RET, 0, 0, ENOSYS),
                op(LD, 0, 0, 16), op(JSET, 0, 1, CLONE_THREAD), op(RET, 0, 0, ALLOW), op(RET, 0, 0, EPERM)]
    return b"".join(program)


def _child_environment(home: str) -> dict[str, str]:
    # Nothing of the parent's environment: no tokens, no proxies.
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bwrap runs the interpreter here, else why not (checked once per process)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "`bwrap` is not installed"
    with tempfile.TemporaryFile() as seccomp_file:
        program = seccomp_filter()
        fds = ()
        if program is not None:
            seccomp_file.write(program)
            seccomp_file.flush()
            seccomp_file.seek(0)
            fds = (seccomp_file.fileno(),)
        command = [*bwrap_command(bwrap, fds[0] if fds else None), "-I", "-S", "-c", "print('ok')"]
        try:
            probe = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                                   pass_fds=fds, env=_child_environment("/tmp"))
        except (OSError, subprocess.SubprocessError) as error:
            return f"`bwrap` failed to start: {error}"
    if probe.returncode != 0 or probe.stdout.strip() != b"ok":
        return f"`bwrap` cannot run the interpreter here: {probe.stderr.decode(errors='replace').strip()[:300]}"
    return None


def sandbox_available() -> bool:
    """Whether `run_python` runs code under bwrap on this machine."""
    return bwrap_problem() is None


_warned_unsandboxed = False


def _mode(allow_unsandboxed: bool | None) -> str:
    global _warned_unsandboxed
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    opted_in = allow_unsandboxed if allow_unsandboxed is not None else os.environ.get(UNSANDBOXED_ENV) == "1"
    if not opted_in:
        raise SandboxUnavailableError(
            f"generated code runs only inside bubblewrap, and {problem}. To fix it, {INSTALL_HINT}. To run it "
            f"without a sandbox anyway, set {UNSANDBOXED_ENV}=1 (or pass allow_unsandboxed=True): then {UNCONTAINED}.")
    if not _warned_unsandboxed:
        warnings.warn(f"running generated code WITHOUT a sandbox ({problem}; {UNSANDBOXED_ENV}=1): {UNCONTAINED}.",
                      RuntimeWarning, stacklevel=3)
        _warned_unsandboxed = True
    return "unsandboxed"


# --------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------

def _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes):
    if not isinstance(code, str):
        raise ValueError(f"code must be a str of Python source, got {type(code).__name__}")
    if isinstance(tests, str) or not all(isinstance(test, str) for test in tests):
        raise ValueError("tests must be a list of str (one assert statement each), not a single str")
    if not isinstance(setup, str):
        raise ValueError(f"setup must be a str of Python source, got {type(setup).__name__}")
    for name, value in (("timeout_s", timeout_s), ("memory_mb", memory_mb), ("cpu_s", cpu_s),
                        ("max_output_bytes", max_output_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb={memory_mb} is too small for the Python interpreter itself; use at least 64")


def _drain(read_fd: int, sink: list) -> None:
    total = 0
    while True:
        try:
            chunk = os.read(read_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        total += len(chunk)
        if total <= REPORT_LIMIT:
            sink.append(chunk)
        else:
            sink.append(b"\0")  # marks an oversized report; keep reading so the child never blocks


def _tail(handle) -> tuple[str, int]:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - TAIL_CHARS * 4))
    return handle.read().decode("utf-8", errors="replace")[-TAIL_CHARS:], size


def run_python(
    code: str,
    tests: list[str],
    *,
    setup: str = "",
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    cpu_s: float = 5.0,
    max_output_bytes: int = 64_000,
    trust_unjudged_tests: bool = False,
    allow_unsandboxed: bool | None = None,
) -> SandboxResult:
    """Run `code` and `setup` in the sandbox, evaluate the calls of `tests` there, judge them here.

    Limits: `timeout_s` wall clock for the whole child (start included), `cpu_s` of CPU time,
    `memory_mb` of address space, `max_output_bytes` for stdout, for stderr and for any file the code
    writes. `trust_unjudged_tests`: count tests the parent cannot judge (see `tutorial_lib.judge`) on
    the child's word instead of failing them. `allow_unsandboxed`: None follows `$TUTORIAL_LIB_UNSANDBOXED`.

    Raises ValueError for bad arguments and SandboxUnavailableError when bwrap cannot run and
    running unsandboxed was not asked for; never raises for anything the code does.
    """
    _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes)
    tests = list(tests)
    mode = _mode(allow_unsandboxed)
    plans, known = plan_tests(tests, setup)
    started = time.monotonic()
    try:
        # Anonymous files: nothing to clean up even if this process is killed. A folder only unsandboxed
        # (under bwrap the folder is a tmpfs that vanishes with the sandbox).
        home_folder = (tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_") if mode == "unsandboxed"
                       else contextlib.nullcontext("/tmp"))
        with tempfile.TemporaryFile() as stdout_file, tempfile.TemporaryFile() as stderr_file, \
                tempfile.TemporaryFile() as seccomp_file, home_folder as home:
            returncode, timed_out, report_bytes = _execute(
                mode, code, setup, plans, trust_unjudged_tests, stdout_file, stderr_file, seccomp_file, home,
                timeout_s=timeout_s, memory_mb=memory_mb, cpu_s=cpu_s, max_output_bytes=max_output_bytes)
            stdout_tail, stdout_size = _tail(stdout_file)
            stderr_tail, stderr_size = _tail(stderr_file)
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        return SandboxResult(passed=False, reason=f"sandbox error: {type(error).__name__}: {error}",
                             tests_total=len(tests), duration_s=time.monotonic() - started, sandboxed=mode == "bwrap")
    common = dict(stdout_tail=stdout_tail, stderr_tail=stderr_tail, tests_total=len(tests), returncode=returncode,
                  duration_s=time.monotonic() - started, timed_out=timed_out, sandboxed=mode == "bwrap")
    failure = _limit_failure(returncode, timed_out, max(stdout_size, stderr_size), stderr_tail,
                             timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb, max_output_bytes=max_output_bytes)
    if failure:
        return SandboxResult(passed=False, reason=failure, **common)
    return _judge(report_bytes, plans, known, trust_unjudged_tests, common)


def _execute(mode, code, setup, plans, trust_unjudged_tests, stdout_file, stderr_file, seccomp_file, home, *,
             timeout_s, memory_mb, cpu_s, max_output_bytes):
    """Start the child, feed it, wait for it or kill it; (returncode, timed_out, report bytes)."""
    started = time.monotonic()
    executable = interpreter_files()[0]
    read_fd, write_fd = os.pipe()
    pass_fds = [write_fd]
    if mode == "bwrap":
        program = seccomp_filter()
        if program is not None:
            seccomp_file.write(program)
            seccomp_file.flush()
            seccomp_file.seek(0)
            pass_fds.append(seccomp_file.fileno())
        command = [*bwrap_command(shutil.which("bwrap"), pass_fds[1] if len(pass_fds) > 1 else None), "-I", "-S", "-B",
                   "-c", _CHILD_SOURCE]
        cwd, child_home = "/", "/tmp"
    else:
        command, cwd, child_home = [executable, "-I", "-S", "-B", "-c", _CHILD_SOURCE], home, home
    tests_payload = [{"holes": list(plan.holes)} if plan.skeleton is not None
                     else ({"statement": plan.source} if trust_unjudged_tests else {"skip": True}) for plan in plans]
    payload = json.dumps({"code": code, "setup": setup, "tests": tests_payload, "report_fd": write_fd,
                          "memory_mb": int(memory_mb), "cpu_s": float(cpu_s),
                          "max_output_bytes": int(max_output_bytes)}).encode("utf-8")
    chunks: list[bytes] = []
    process = None
    try:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=stdout_file, stderr=stderr_file, cwd=cwd,
                                   env=_child_environment(child_home), pass_fds=tuple(pass_fds), start_new_session=True)
        os.close(write_fd)
        write_fd = None
        reader = threading.Thread(target=_drain, args=(read_fd, chunks), daemon=True)
        reader.start()
        writer = threading.Thread(target=_feed, args=(process.stdin, payload), daemon=True)
        writer.start()
        timed_out = False
        try:
            process.wait(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        reader.join(timeout=2.0)  # EOF once every process holding the pipe is gone
        return process.returncode, timed_out, b"".join(chunks)
    finally:
        if process is not None and process.poll() is None:
            _kill_group(process)
            process.wait()
        for fd in (read_fd, write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _feed(stream, payload: bytes) -> None:
    try:
        stream.write(payload)
        stream.close()
    except (OSError, ValueError):  # the child died before reading; its exit status says why
        pass


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            process.kill()
        except ProcessLookupError:
            pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _limit_failure(returncode, timed_out, output_size, stderr_tail, *, timeout_s, cpu_s, memory_mb,
                   max_output_bytes) -> str | None:
    if timed_out:
        return f"timeout: still running after {timeout_s:g} s of wall-clock time"
    # bwrap exits with the child's status, or 128 + the signal that killed it; a plain child gives -signal.
    signal_number = -returncode if returncode < 0 else (returncode - 128 if returncode > 128 else 0)
    if signal_number == signal.SIGXCPU:
        return f"cpu limit: used more than {cpu_s:g} s of CPU time"
    if signal_number == signal.SIGXFSZ or output_size > max_output_bytes:
        return f"output limit: wrote more than {max_output_bytes} bytes"
    if signal_number == signal.SIGKILL:
        return f"killed (SIGKILL; out of memory or the hard CPU limit, memory_mb={memory_mb})"
    if signal_number:
        return f"crashed: killed by {_signal_name(signal_number)}"
    if returncode != 0:
        if stderr_tail.startswith("bwrap:"):
            return f"sandbox error: {stderr_tail.strip()[:300]}"
        return f"crashed: the child exited with status {returncode}"
    return None


def _judge(report_bytes: bytes, plans, known, trust_unjudged_tests: bool, common: dict) -> SandboxResult:
    """The verdict, reached here from the values in the child's report (see `tutorial_lib.judge`)."""
    def fail(reason, tests_passed=0, tests_unjudged=0):
        return SandboxResult(passed=False, reason=reason, tests_passed=tests_passed, tests_unjudged=tests_unjudged,
                             **common)

    lines = report_bytes.split(b"\n")
    if b"\0" in report_bytes or len(lines) != 2 or lines[1] != b"":
        return fail("no valid report: the child wrote none, several, or one too large (exited early?)")
    try:
        report = json.loads(lines[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return fail("no valid report: not JSON")
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        return fail("no valid report: not a report object")
    if report.get("error") is not None:
        return fail(str(report["error"])[:1000])
    entries = report["tests"]
    if len(entries) != len(plans):
        return fail(f"no valid report: {len(entries)} test entries for {len(plans)} tests")
    passed = unjudged = 0
    first_failure = None
    for index, (plan, entry) in enumerate(zip(plans, entries), start=1):
        if not isinstance(entry, dict):
            ok, why = False, "malformed entry"
        elif plan.skeleton is None:
            if trust_unjudged_tests and entry.get("ok") is True:
                ok, why = True, "passed on the child's word"
                unjudged += 1
            elif trust_unjudged_tests:
                ok, why = False, str(entry.get("error", "failed"))[:300]
            else:
                ok, why = False, (f"cannot be judged outside the sandbox ({plan.unjudged_reason}); pass "
                                  "trust_unjudged_tests=True to count the child's word for it")
        elif "error" in entry:
            ok, why = False, str(entry["error"])[:300]
        else:
            ok, why = judge_test(plan, entry.get("values"), known)
        passed += ok
        if not ok and first_failure is None:
            first_failure = f"test {index} {why if why.startswith(('failed', 'raised')) else 'failed: ' + why}: " \
                            f"{plan.source.strip()[:300]}"
    if first_failure:
        return fail(first_failure, passed, unjudged)
    return SandboxResult(passed=True, reason="passed", tests_passed=passed, tests_unjudged=unjudged, **common)
