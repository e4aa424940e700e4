"""Running model-written Python in a real sandbox, and judging its tests outside it.

`run_python(code, tests)` answers: do the values `code` computes for the problem's tests satisfy
them? It is what the MBPP-style metric (`tutorial_lib.tasks.metrics.code_pass`, `METRICS["mbpp"]`) calls
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
   bpf, perf_event_open, userfaultfd, keyctl and io_uring. It is written for x86_64 and aarch64.
2. **Limits**, set by the child program's first lines before it reads the solution
   (`sandbox_child.py`): RLIMIT_AS (memory_mb), RLIMIT_CPU (cpu_s), RLIMIT_FSIZE (max_output_bytes,
   for files it writes), no core files. Threads: the sandbox's user maps to root, for whom
   RLIMIT_NPROC is not enforced (measured here: 5,000 threads under RLIMIT_NPROC = 64), so each
   sandbox runs in its own cgroup with `pids.max` = MAX_TASKS where a `pids` cgroup is writable
   (measured here: a thread bomb stops at 61 threads), and otherwise the seccomp filter refuses every
   thread as well (`process_limit()` says which). stdout and stderr are pipes the parent reads with a
   cap (`max_output_bytes`; past it the parent kills the sandbox), never files on the host's disk;
   the only writable place is `/tmp`, a tmpfs of TMPFS_BYTES. The wall-clock limit (timeout_s) is
   enforced from outside: the parent kills bwrap's whole process group, and the PID namespace dies
   with it.
3. **Judged outside** (`tutorial_lib.tasks.judge`): the child evaluates only the calls of each test and
   sends their values back as tagged plain data over a pipe; the parent checks the report's size,
   nesting and number lengths without recursion (`judge.parse_report`), decodes it into builtin
   objects and applies the test's own comparison with its own bounded interpreter. The expected side
   of a test (a hole that reads no name of the solution's) is evaluated in a second sandboxed run
   that holds the setup and no model-written code. See `judge` for the threat model and for tests of
   other forms (`trust_unjudged_tests`).
4. **The sweep survives**: in its own PID namespace the child sees no process outside it (its parent
   is pid 1, bwrap's init, which ignores signals from inside), so it cannot signal, kill or stall the
   sweep; its output goes through pipes and the sandbox folder is a tmpfs, so no file or folder is
   left behind on any path, even when the sweep itself is killed. Whatever the report holds,
   `run_python` returns a result: a malformed one is a failed test with its reason.

**Without bwrap** (or where it cannot create namespaces) generated code does not run: `run_python`
raises `SandboxUnavailableError` saying how to install it. Set the environment variable
`TUTORIAL_LIB_UNSANDBOXED=1` (or pass `allow_unsandboxed=True`) to run it anyway in a plain child
process with the same limits and the same outside judge; a warning then says what is not contained.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .isolation import (MAX_TASKS, SANDBOX_UID, TMPFS_BYTES, bwrap_command, bwrap_problem, child_environment,  # noqa: F401
                        interpreter_files, pids_cgroup, process_limit, sandbox_available, seccomp_filter)  # (re-exported)
from .judge import EXPECTED, SOLUTION, MalformedReport, judge_test, parse_report, plan_tests

UNSANDBOXED_ENV = "TUTORIAL_LIB_UNSANDBOXED"
INSTALL_HINT = ("install bubblewrap: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` "
                "(Fedora), `sudo pacman -S bubblewrap` (Arch); `make install` does it when run as root")
UNCONTAINED = ("the code can read every file your user can, write and delete them, use the network, "
               "signal and start processes; only the resource limits and the outside judge remain")
TAIL_CHARS = 2000  # how much of stdout/stderr a result keeps
REPORT_LIMIT = 4 * 1024 * 1024  # bytes of report the parent reads
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
    if len(tests) == 0:
        raise ValueError("tests=[]: with no test nothing is judged, and a pass would mean nothing; pass at least one "
                         "assert statement, e.g. ['assert f(1) == 2'].")
    if not isinstance(setup, str):
        raise ValueError(f"setup must be a str of Python source, got {type(setup).__name__}")
    for name, value in (("timeout_s", timeout_s), ("memory_mb", memory_mb), ("cpu_s", cpu_s),
                        ("max_output_bytes", max_output_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    if memory_mb < 64:
        raise ValueError(f"memory_mb={memory_mb} is too small for the Python interpreter itself; use at least 64")


class _CappedReader:
    """Reads one pipe to its end in a thread, keeping at most `keep` bytes (the head for a report,
    the tail for stdout/stderr) and counting the rest, so nothing the child writes reaches a file
    on the host or grows the parent's memory. Past `limit` bytes it calls `on_limit` once (the
    parent then kills the sandbox) and goes on discarding, so the child never blocks on a full pipe."""

    def __init__(self, fd: int, *, keep: int, keep_tail: bool, limit: int | None = None, on_limit=None):
        self.fd, self.keep, self.keep_tail, self.limit, self.on_limit = fd, keep, keep_tail, limit, on_limit
        self.data = bytearray()
        self.total = 0
        self.over_limit = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            if self.keep_tail:
                self.data += chunk
                del self.data[:-self.keep]
            elif len(self.data) < self.keep:
                self.data += chunk[:self.keep - len(self.data)]
            if self.limit is not None and self.total > self.limit and not self.over_limit:
                self.over_limit = True
                if self.on_limit is not None:
                    self.on_limit()

    def join(self, timeout: float) -> None:
        self.thread.join(timeout=timeout)


def _tail_text(reader: _CappedReader) -> str:
    return bytes(reader.data).decode("utf-8", errors="replace")[-TAIL_CHARS:]


def _run_child(mode: str, payload: dict, home: str, *, timeout_s: float, max_output_bytes: int) -> dict:
    """Start the child with `payload` on stdin, read its report and its output through capped pipes,
    wait for it or kill it. Returns returncode, timed_out, output_over_limit, report (bytes),
    report_over_limit, stdout_tail, stderr_tail."""
    started = time.monotonic()
    executable = interpreter_files()[0]
    report_read, report_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    to_close = [report_read, report_write, stdout_read, stdout_write, stderr_read, stderr_write]
    process = None
    with tempfile.TemporaryFile() as seccomp_file, \
            (pids_cgroup() if mode == "bwrap" else contextlib.nullcontext(None)) as cgroup:
        pass_fds = [report_write]
        if mode == "bwrap":
            program = seccomp_filter(allow_threads=cgroup is not None)
            if program is not None:
                seccomp_file.write(program)
                seccomp_file.flush()
                seccomp_file.seek(0)
                pass_fds.append(seccomp_file.fileno())
            command = [*bwrap_command(shutil.which("bwrap"), pass_fds[1] if len(pass_fds) > 1 else None),
                       "-I", "-S", "-B", "-c", _CHILD_SOURCE]
            if cgroup is not None:  # the shell joins the group, then becomes bwrap: nothing starts outside it
                command = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, *command]
            cwd, child_home = "/", "/tmp"
        else:
            command, cwd, child_home = [executable, "-I", "-S", "-B", "-c", _CHILD_SOURCE], home, home
        payload_bytes = json.dumps({**payload, "report_fd": report_write}).encode("utf-8")
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=stdout_write, stderr=stderr_write,
                                       cwd=cwd, env=child_environment(child_home), pass_fds=tuple(pass_fds),
                                       start_new_session=True)
            for fd in (report_write, stdout_write, stderr_write):
                os.close(fd)
                to_close.remove(fd)

            def over_limit():
                _kill_group(process)

            report = _CappedReader(report_read, keep=REPORT_LIMIT + 1, keep_tail=False)
            stdout = _CappedReader(stdout_read, keep=TAIL_CHARS * 4, keep_tail=True, limit=max_output_bytes,
                                   on_limit=over_limit)
            stderr = _CappedReader(stderr_read, keep=TAIL_CHARS * 4, keep_tail=True, limit=max_output_bytes,
                                   on_limit=over_limit)
            threading.Thread(target=_feed, args=(process.stdin, payload_bytes), daemon=True).start()
            timed_out = False
            try:
                process.wait(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(process)
                process.wait()
            for reader in (report, stdout, stderr):
                reader.join(timeout=2.0)  # EOF once every process holding the pipe is gone
            return dict(returncode=process.returncode, timed_out=timed_out,
                        output_over_limit=stdout.over_limit or stderr.over_limit,
                        report=bytes(report.data), report_over_limit=report.total > REPORT_LIMIT,
                        stdout_tail=_tail_text(stdout), stderr_tail=_tail_text(stderr))
        finally:
            if process is not None and process.poll() is None:
                _kill_group(process)
                process.wait()
            for fd in to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)


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
    writes. `trust_unjudged_tests`: count tests the parent cannot judge (see `tutorial_lib.tasks.judge`) on
    the child's word instead of failing them. `allow_unsandboxed`: None follows `$TUTORIAL_LIB_UNSANDBOXED`.

    Raises ValueError for bad arguments and SandboxUnavailableError when bwrap cannot run and
    running unsandboxed was not asked for; never raises for anything the code does.
    """
    _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes)
    tests = list(tests)
    mode = _mode(allow_unsandboxed)
    started = time.monotonic()
    limits = dict(memory_mb=int(memory_mb), cpu_s=float(cpu_s), max_output_bytes=int(max_output_bytes))
    try:
        plans, known = plan_tests(tests, setup, code)
        expected = _expected_values(mode, setup, plans, timeout_s=timeout_s, **limits)
        # A folder only unsandboxed (under bwrap the folder is a tmpfs that vanishes with the sandbox).
        home_folder = (tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_") if mode == "unsandboxed"
                       else contextlib.nullcontext("/tmp"))
        tests_payload = [{"holes": [hole for hole, side in zip(plan.holes, plan.sides) if side == SOLUTION]}
                         if plan.skeleton is not None
                         else ({"statement": plan.source} if trust_unjudged_tests else {"skip": True})
                         for plan in plans]
        with home_folder as home:
            outcome = _run_child(mode, {"code": code, "setup": setup, "tests": tests_payload, **limits}, home,
                                 timeout_s=timeout_s, max_output_bytes=max_output_bytes)
        common = dict(stdout_tail=outcome["stdout_tail"], stderr_tail=outcome["stderr_tail"], tests_total=len(tests),
                      returncode=outcome["returncode"], duration_s=time.monotonic() - started,
                      timed_out=outcome["timed_out"], sandboxed=mode == "bwrap")
        failure = _limit_failure(outcome["returncode"], outcome["timed_out"], outcome["output_over_limit"],
                                 outcome["stderr_tail"], timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb,
                                 max_output_bytes=max_output_bytes)
        if failure:
            return SandboxResult(passed=False, reason=failure, **common)
        return _judge(outcome["report"], outcome["report_over_limit"], plans, known, expected, trust_unjudged_tests,
                      common)
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        return SandboxResult(passed=False, reason=f"sandbox error: {type(error).__name__}: {str(error)[:300]}",
                             tests_total=len(tests), duration_s=time.monotonic() - started, sandboxed=mode == "bwrap")


_expected_cache: dict = {}
_EXPECTED_CACHE_SIZE = 256


def _expected_values(mode, setup, plans, *, timeout_s, memory_mb, cpu_s, max_output_bytes) -> list:
    """For each plan, its expected holes' outcome from a sandboxed run of the setup alone (no line
    of the solution): a list of tagged values, or an error string; None for a plan with none.
    Successful runs are cached (a sweep judges many solutions against the same tests)."""
    wanted = [[hole for hole, side in zip(plan.holes, plan.sides) if side == EXPECTED] if plan.skeleton else []
              for plan in plans]
    if not any(wanted):
        return [None] * len(plans)
    modules = sorted({module for plan in plans if plan.skeleton for module in plan.modules})
    imports = "".join(f"import {module}\n" for module in modules)  # the judge's text, never the solution's
    key = (mode, setup, imports, tuple(map(tuple, wanted)), memory_mb, cpu_s, max_output_bytes)
    if key in _expected_cache:
        return _expected_cache[key]
    with (tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_") if mode == "unsandboxed"
          else contextlib.nullcontext("/tmp")) as home:
        outcome = _run_child(mode, {"code": imports, "setup": setup, "tests": [{"holes": holes} for holes in wanted],
                                    "memory_mb": memory_mb, "cpu_s": cpu_s, "max_output_bytes": max_output_bytes},
                             home, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
    failure = _limit_failure(outcome["returncode"], outcome["timed_out"], outcome["output_over_limit"],
                             outcome["stderr_tail"], timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb,
                             max_output_bytes=max_output_bytes)
    report = None
    if failure is None and not outcome["report_over_limit"]:
        with contextlib.suppress(MalformedReport):
            report = parse_report(outcome["report"].rstrip(b"\n"))
    if not (isinstance(report, dict) and isinstance(report.get("tests"), list)
            and len(report["tests"]) == len(plans)):
        why = failure or (f"setup {report['error']}" if isinstance(report, dict) and report.get("error") else
                          "no valid report")
        return [f"the expected side could not be computed ({str(why)[:200]})" if holes else None for holes in wanted]
    values = []
    for holes, entry in zip(wanted, report["tests"]):
        if not holes:
            values.append(None)
        elif isinstance(entry, dict) and isinstance(entry.get("values"), list):
            values.append(entry["values"])
        else:
            error = entry.get("error") if isinstance(entry, dict) else None
            values.append(f"the expected side {error if isinstance(error, str) else 'gave no value'}"[:300])
    if len(_expected_cache) >= _EXPECTED_CACHE_SIZE:
        _expected_cache.pop(next(iter(_expected_cache)))
    _expected_cache[key] = values
    return values


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


def _limit_failure(returncode, timed_out, output_over_limit, stderr_tail, *, timeout_s, cpu_s, memory_mb,
                   max_output_bytes) -> str | None:
    if output_over_limit:  # checked first: the parent killed the child for it
        return f"output limit: wrote more than {max_output_bytes} bytes"
    if timed_out:
        return f"timeout: still running after {timeout_s:g} s of wall-clock time"
    # bwrap exits with the child's status, or 128 + the signal that killed it; a plain child gives -signal.
    signal_number = -returncode if returncode < 0 else (returncode - 128 if returncode > 128 else 0)
    if signal_number == signal.SIGXCPU:
        return f"cpu limit: used more than {cpu_s:g} s of CPU time"
    if signal_number == signal.SIGXFSZ:
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


def _judge(report_bytes: bytes, report_over_limit: bool, plans, known, expected, trust_unjudged_tests: bool,
           common: dict) -> SandboxResult:
    """The verdict, reached here from the values in the child's report (see `tutorial_lib.tasks.judge`).
    Everything in the report is bounded before it is parsed (`parse_report`) and every field is
    type-checked before use: whatever the child wrote, this returns a result."""
    def fail(reason, tests_passed=0, tests_unjudged=0):
        return SandboxResult(passed=False, reason=reason, tests_passed=tests_passed, tests_unjudged=tests_unjudged,
                             **common)

    lines = report_bytes.split(b"\n")
    if report_over_limit or len(lines) != 2 or lines[1] != b"":
        return fail("no valid report: the child wrote none, several, or one too large (exited early?)")
    try:
        report = parse_report(lines[0])
    except MalformedReport as error:
        return fail(f"no valid report: {error}")
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        return fail("no valid report: not a report object")
    if report.get("error") is not None:
        error = report["error"]
        return fail(error[:1000] if isinstance(error, str) else "no valid report: its error is not text")
    entries = report["tests"]
    if len(entries) != len(plans):
        return fail(f"no valid report: {len(entries)} test entries for {len(plans)} tests")
    passed = unjudged = 0
    first_failure = None
    for index, (plan, entry, expected_values) in enumerate(zip(plans, entries, expected), start=1):
        if not isinstance(entry, dict):
            ok, why = False, "malformed entry"
        elif plan.skeleton is None:
            if trust_unjudged_tests and entry.get("ok") is True:
                ok, why = True, "passed on the child's word"
                unjudged += 1
            elif trust_unjudged_tests:
                ok, why = False, _text(entry.get("error"), "failed")
            else:
                ok, why = False, (f"cannot be judged outside the sandbox ({plan.unjudged_reason}); pass "
                                  "trust_unjudged_tests=True to count the child's word for it")
        elif "error" in entry:
            ok, why = False, _text(entry["error"], "failed")
        elif isinstance(expected_values, str):
            ok, why = False, expected_values
        else:
            ok, why = judge_test(plan, _merge(plan, entry.get("values"), expected_values), known)
        passed += ok
        if not ok and first_failure is None:
            first_failure = f"test {index} {why if why.startswith(('failed', 'raised')) else 'failed: ' + why}: " \
                            f"{plan.source.strip()[:300]}"
    if first_failure:
        return fail(first_failure, passed, unjudged)
    return SandboxResult(passed=True, reason="passed", tests_passed=passed, tests_unjudged=unjudged, **common)


def _text(value, default: str) -> str:
    return value[:300] if isinstance(value, str) else default


def _merge(plan, solution_values, expected_values):
    """The tagged values of every hole in order: the solution's from its run, the expected side's from
    the setup-only run. None (a failed test) when the solution's report holds the wrong number."""
    solution_count = plan.sides.count(SOLUTION)
    if not isinstance(solution_values, list) or len(solution_values) != solution_count:
        return None
    solution_values, expected_values = iter(solution_values), iter(expected_values or [])
    return [next(solution_values) if side == SOLUTION else next(expected_values) for side in plan.sides]
