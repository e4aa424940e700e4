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

1. **The sandbox** (`tutorial_lib.tasks.isolation`): a launcher joins the run's cgroups, sets the limits
   every process of the sandbox inherits, and, when the sweep runs as root, drops to an unprivileged host
   user (uid 65534, no groups, no capabilities) before it becomes bubblewrap (`bwrap`). bwrap gives new
   user, PID, network, IPC, UTS and cgroup namespaces, `--die-with-parent`, `--new-session`, a read-only
   root with read-only binds of only what the base interpreter needs (`site-packages` masked),
   `/dev/null`, `/dev/zero`, `/dev/urandom`, no `/proc` at all, and an empty size-capped tmpfs as `/tmp`,
   its working folder and HOME. The interpreter runs with `-I -S -B`. A seccomp filter refuses new
   processes, ptrace and cross-process memory calls, System V IPC and message queues, namespaces,
   mount, bpf, perf, userfaultfd, keyrings and io_uring (x86_64 and aarch64). Where the kernel refuses
   an unprivileged user namespace, generated code does not run (`bwrap_problem` says what to set up).
2. **Limits on the whole sandbox**: address space (memory_mb), CPU time (cpu_s), file size
   (max_output_bytes), no core files, set by the launcher for bwrap's processes and the child alike;
   where cgroups are writable, `pids.max` = MAX_TASKS and a memory limit of memory_mb plus the tmpfs
   for all of them together (shared memory included), else the seccomp filter refuses every thread as
   well. stdout and stderr are pipes the parent reads with a cap (`max_output_bytes`; past it the parent
   kills the sandbox). The wall-clock limit (timeout_s) is enforced from outside, and every run ends by
   killing whatever is left in its cgroups, so nothing outlives it.
3. **Judged outside** (`tutorial_lib.tasks.judge`): the child evaluates only the solution's calls of
   each test and sends their values back as tagged plain data; the parent's budgeted judge worker
   (`judge_worker`: a second of CPU and 64 MiB per report) parses the report, decodes it into builtin
   objects and applies the test's own comparison with its own bounded interpreter. Which run evaluates
   a part of a test depends on the test, the setup and the entry point alone: the expected side runs in
   a second sandboxed run that holds the setup and no model-written code; the setup's values the
   solution's calls receive reach its run as plain data, so the setup's other names are not there; a
   solution that rebinds a name the test reads, or a test that never calls the entry point, fails and
   says so. See `judge` for the threat model and for tests of other forms (`trust_unjudged_tests`).
4. **The sweep survives**: in its own PID namespace the child sees no process outside it, so it cannot
   signal, kill or stall the sweep; its output goes through pipes and the sandbox folder is a tmpfs, so
   no file or folder is left behind on any path, even when the sweep itself is killed. Whatever the
   report holds, `run_python` returns a result: a malformed one, or one over the judge's budget, is a
   failed test with its reason.

**Without bwrap** (or where it cannot create namespaces) generated code does not run: `run_python`
raises `SandboxUnavailableError` saying how to install it. Set the environment variable
`TUTORIAL_LIB_UNSANDBOXED=1` (or pass `allow_unsandboxed=True`) to run it anyway in a plain child
process with the same limits and the same outside judge; a warning then says what is not contained.
"""
from __future__ import annotations

import builtins
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .isolation import (MAX_TASKS, SANDBOX_OVERHEAD_BYTES, SANDBOX_UID, TMPFS_BYTES,  # noqa: F401 (re-exported)
                        bwrap_command, bwrap_problem, child_environment, interpreter_files, kill_cgroups, launcher_command,
                        process_limit, sandbox_available, sandbox_cgroups, sandbox_rlimits, seccomp_filter)
from .judge import (EXPECTED, SOLUTION, MalformedReport, NotPlainData, encode_value, parse_report,
                    plan_tests, rebinding_names)
from .judge_worker import JudgeOverBudget, judge_in_worker

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
    memory_bytes = int(payload["memory_mb"] * 1024 * 1024) + SANDBOX_OVERHEAD_BYTES
    groups_context = sandbox_cgroups(memory_bytes) if mode == "bwrap" else contextlib.nullcontext(None)
    with tempfile.TemporaryFile() as seccomp_file, groups_context as groups:
        pass_fds = [report_write]
        if mode == "bwrap":
            threads_bounded = groups.pids_folder is not None  # else seccomp refuses every new thread
            program = seccomp_filter(allow_threads=threads_bounded)
            if program is not None:
                seccomp_file.write(program)
                seccomp_file.flush()
                seccomp_file.seek(0)
                pass_fds.append(seccomp_file.fileno())
            inner = [*bwrap_command(shutil.which("bwrap"), pass_fds[1] if len(pass_fds) > 1 else None),
                     "-I", "-S", "-B", "-c", _CHILD_SOURCE]
            rlimits = sandbox_rlimits(memory_mb=payload["memory_mb"], cpu_s=payload["cpu_s"],
                                      max_output_bytes=payload["max_output_bytes"])
            command = launcher_command(inner, cgroups=groups.folders, rlimits=rlimits)
            cwd, child_home = "/", "/tmp"
            payload = {**payload, "threads": threads_bounded}
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
            timed_out = not _exited_within(process, max(0.0, timeout_s - (time.monotonic() - started)))
            if timed_out:
                _kill_group(process)
            process.wait()
            if groups is not None:  # whatever bwrap left behind ends with it, pid 1 of the namespace included
                kill_cgroups(groups.folders)
            for reader in (report, stdout, stderr):
                reader.join(timeout=2.0)  # EOF once every process holding the pipe is gone
            return dict(returncode=process.returncode, timed_out=timed_out,
                        out_of_memory=groups is not None and groups.out_of_memory(),
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
    entry_point: str | None = None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    cpu_s: float = 5.0,
    max_output_bytes: int = 64_000,
    trust_unjudged_tests: bool = False,
    allow_unsandboxed: bool | None = None,
) -> SandboxResult:
    """Run `code` in the sandbox, evaluate the solution's calls of `tests` there, judge them here.

    `entry_point`: the function the tests must call (MBPP's and HumanEval's problems name it); a test
    that never calls it fails, and a name it shares with a builtin (`max`) is the solution's. Without
    it, the solution's names are those no builtin, standard-library module or `setup` provides.
    Limits: `timeout_s` wall clock for the whole child (start included), `cpu_s` of CPU time,
    `memory_mb` of address space (and, where a memory cgroup exists, of the whole sandbox plus its
    tmpfs), `max_output_bytes` for stdout, for stderr and for any file the code writes.
    `trust_unjudged_tests`: count tests the parent cannot judge (see `tutorial_lib.tasks.judge`) on the
    child's word instead of failing them. `allow_unsandboxed`: None follows `$TUTORIAL_LIB_UNSANDBOXED`.

    Raises ValueError for bad arguments and SandboxUnavailableError when bwrap cannot run and
    running unsandboxed was not asked for; never raises for anything the code does.
    """
    _check_arguments(code, tests, setup, timeout_s, memory_mb, cpu_s, max_output_bytes)
    tests = list(tests)
    plans, known = plan_tests(tests, setup, code, entry_point)
    mode = _mode(allow_unsandboxed)
    started = time.monotonic()
    limits = dict(memory_mb=int(memory_mb), cpu_s=float(cpu_s), max_output_bytes=int(max_output_bytes))
    try:
        expected, inject, setup_in_child = _expected_values(mode, setup, plans, known, timeout_s=timeout_s, **limits)
        trusted = [plan.skeleton is None and not plan.refused and trust_unjudged_tests for plan in plans]
        tests_payload = []
        for plan, trust in zip(plans, trusted):
            if plan.skeleton is not None:
                chosen = [index for index, side in enumerate(plan.sides) if side == SOLUTION]
                tests_payload.append({"holes": [plan.holes[i] for i in chosen], "reads": [plan.reads[i] for i in chosen],
                                      "solution_names": list(plan.solution_names)})
            else:
                tests_payload.append({"statement": plan.source} if trust else {"skip": True})
        watch = {"names": sorted({name for plan in plans for name in plan.judge_names}),
                 "attributes": sorted({pair for plan in plans for pair in plan.judge_attributes})}
        payload = {"code": code, "setup": setup, "run_setup": setup_in_child or any(trusted), "inject": inject,
                   "modules": sorted({module for plan in plans for module in plan.modules}), "watch": watch,
                   "tests": tests_payload, **limits}
        # A folder only unsandboxed (under bwrap the folder is a tmpfs that vanishes with the sandbox).
        home_folder = (tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_") if mode == "unsandboxed"
                       else contextlib.nullcontext("/tmp"))
        with home_folder as home:
            outcome = _run_child(mode, payload, home, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
        common = dict(stdout_tail=outcome["stdout_tail"], stderr_tail=outcome["stderr_tail"], tests_total=len(tests),
                      returncode=outcome["returncode"], duration_s=time.monotonic() - started,
                      timed_out=outcome["timed_out"], sandboxed=mode == "bwrap")
        failure = _limit_failure(outcome, timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb,
                                 max_output_bytes=max_output_bytes)
        if failure:
            return SandboxResult(passed=False, reason=failure, **common)
        statically_rebound = rebinding_names(code, plans)
        try:
            passed, reason, tests_passed, tests_unjudged = judge_in_worker(
                report_bytes=outcome["report"], report_over_limit=outcome["report_over_limit"], plans=plans,
                known=known, expected=expected, trust_unjudged_tests=trust_unjudged_tests,
                statically_rebound=statically_rebound)
        except JudgeOverBudget as error:
            return SandboxResult(passed=False, reason=f"judge budget exceeded ({error}); the test fails", **common)
        return SandboxResult(passed=passed, reason=reason, tests_passed=tests_passed, tests_unjudged=tests_unjudged,
                             **common)
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        return SandboxResult(passed=False, reason=f"sandbox error: {type(error).__name__}: {str(error)[:300]}",
                             tests_total=len(tests), duration_s=time.monotonic() - started, sandboxed=mode == "bwrap")


_expected_cache: dict = {}
_EXPECTED_CACHE_SIZE = 256


def _expected_values(mode, setup, plans, known, *, timeout_s, memory_mb, cpu_s, max_output_bytes):
    """What the setup alone computes, from a sandboxed run that holds no line of the solution:
    - for each plan, its expected holes' values (a list of tagged values), an error string, or None;
    - the values of the setup's names the solution's holes read, tagged, to hand to the solution's run
      (the setup's literal constants come from the parent);
    - whether the setup must run in the solution's sandbox after all (a name it hands over is not plain
      data, a function say: then it runs there in a namespace of its own).
    Successful runs are cached (a sweep judges many solutions against the same tests)."""
    wanted = [[hole for hole, side in zip(plan.holes, plan.sides) if side == EXPECTED] if plan.skeleton else []
              for plan in plans]
    reads = [[r for r, side in zip(plan.reads, plan.sides) if side == EXPECTED] if plan.skeleton else []
             for plan in plans]
    handed = sorted({name for plan in plans if plan.skeleton for read, side in zip(plan.reads, plan.sides)
                     if side == SOLUTION for name in read if name not in plan.solution_names
                     and (name in known or name not in plan.modules and not hasattr(builtins, name))})
    inject = {}
    for name in [name for name in handed if name in known]:
        with contextlib.suppress(NotPlainData):
            inject[name] = encode_value(known[name])
    from_setup = [name for name in handed if name not in known]
    if not any(wanted) and not from_setup:
        return [None] * len(plans), inject, any(name not in inject for name in handed)
    modules = sorted({module for plan in plans if plan.skeleton for module in plan.modules})
    key = (mode, setup, tuple(modules), tuple(map(tuple, wanted)), tuple(from_setup), memory_mb, cpu_s,
           max_output_bytes)
    if key in _expected_cache:
        values, handed_values, in_child = _expected_cache[key]
        return values, {**inject, **handed_values}, in_child
    entries = [{"holes": holes, "reads": plan_reads, "solution_names": []} for holes, plan_reads in zip(wanted, reads)]
    entries.append({"holes": from_setup, "reads": [[name] for name in from_setup], "solution_names": []})
    with (tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_") if mode == "unsandboxed"
          else contextlib.nullcontext("/tmp")) as home:
        outcome = _run_child(mode, {"code": "", "setup": setup, "run_setup": True, "modules": modules,
                                    "tests": entries, "memory_mb": memory_mb, "cpu_s": cpu_s,
                                    "max_output_bytes": max_output_bytes}, home,
                             timeout_s=timeout_s, max_output_bytes=max_output_bytes)
    failure = _limit_failure(outcome, timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb,
                             max_output_bytes=max_output_bytes)
    report = None
    if failure is None and not outcome["report_over_limit"]:
        with contextlib.suppress(MalformedReport):
            report = parse_report(outcome["report"].rstrip(b"\n"))
    if not (isinstance(report, dict) and isinstance(report.get("tests"), list)
            and len(report["tests"]) == len(plans) + 1):
        why = failure or (f"setup {report['error']}" if isinstance(report, dict) and report.get("error") else
                          "no valid report")
        return ([f"the expected side could not be computed ({str(why)[:200]})" if holes else None for holes in wanted],
                inject, True)
    values = []
    for holes, entry in zip(wanted, report["tests"]):
        if not holes:
            values.append(None)
        elif isinstance(entry, dict) and isinstance(entry.get("values"), list):
            values.append(entry["values"])
        else:
            error = entry.get("error") if isinstance(entry, dict) else None
            values.append(f"the expected side {error if isinstance(error, str) else 'gave no value'}"[:300])
    handed_entry = report["tests"][-1]
    handed_values = {}
    if isinstance(handed_entry, dict) and isinstance(handed_entry.get("values"), list):
        for name, value in zip(from_setup, handed_entry["values"]):
            if isinstance(value, list) and value and value[0] != "x":
                handed_values[name] = value
    in_child = any(name not in inject and name not in handed_values for name in handed)
    if len(_expected_cache) >= _EXPECTED_CACHE_SIZE:
        _expected_cache.pop(next(iter(_expected_cache)))
    _expected_cache[key] = (values, handed_values, in_child)
    return values, {**inject, **handed_values}, in_child


def _exited_within(process: subprocess.Popen, timeout: float) -> bool:
    """Whether `process` ends within `timeout` seconds, told the moment it ends (a pidfd), not at the next
    poll of `Popen.wait(timeout)`, whose back-off sleeps up to 50 ms: a sandboxed run lasts about that."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (before Linux 5.3): poll
        try:
            process.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


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


def _limit_failure(outcome: dict, *, timeout_s, cpu_s, memory_mb, max_output_bytes) -> str | None:
    """Which limit ended the child, read from `_run_child`'s outcome; None when none did."""
    returncode, timed_out, stderr_tail = outcome["returncode"], outcome["timed_out"], outcome["stderr_tail"]
    output_over_limit, out_of_memory = outcome["output_over_limit"], outcome["out_of_memory"]
    if output_over_limit:  # checked first: the parent killed the child for it
        return f"output limit: wrote more than {max_output_bytes} bytes"
    if out_of_memory:
        return (f"memory limit: the sandbox used more than {memory_mb} MiB plus "
                f"{SANDBOX_OVERHEAD_BYTES // 2**20} MiB for its tmpfs and bwrap (shared memory included)")
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
        if stderr_tail.startswith(("bwrap:", "tutorial_lib launcher:")):
            return f"sandbox error: {stderr_tail.strip()[:300]}"
        return f"crashed: the child exited with status {returncode}"
    return None
