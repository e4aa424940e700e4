"""One sandboxed child: started under the launcher and bwrap (or, by opt-in, plain) with its payload on
stdin, its report, stdout and stderr read through capped pipes, waited for or killed with whatever it
left in its cgroups, and the limit that ended it named (`limit_failure`)."""

from __future__ import annotations

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
from pathlib import Path

from ..isolation import (
    SANDBOX_OVERHEAD_BYTES,
    exec_filter,
    bwrap_command,
    child_environment,
    interpreter_files,
    kill_cgroups,
    launcher_command,
    sandbox_cgroups,
    sandbox_rlimits,
    seccomp_filter,
)

__all__ = ["TAIL_CHARS", "REPORT_LIMIT"]

TAIL_CHARS = 2000  # how much of stdout/stderr a result keeps
REPORT_LIMIT = 4 * 1024 * 1024  # bytes of report the parent reads
# No user site, no site, no bytecode, no script folder on the path; not -I, whose -E would ignore the
# environment we make (`child_environment`: PYTHONHASHSEED=0, so every run hashes strings alike).
_INTERPRETER_FLAGS = ("-s", "-S", "-B", "-P", "-c")
# The child's program: the plain-data encoder and decoder, then the program that uses them.
_CHILD_SOURCE = "\n".join(
    (Path(__file__).parents[1] / name).read_text(encoding="utf-8")
    for name in ("plain_data.py", "sandbox_child.py")
)


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
                del self.data[: -self.keep]
            elif len(self.data) < self.keep:
                self.data += chunk[: self.keep - len(self.data)]
            if self.limit is not None and self.total > self.limit and not self.over_limit:
                self.over_limit = True
                if self.on_limit is not None:
                    self.on_limit()

    def join(self, timeout: float) -> None:
        self.thread.join(timeout=timeout)


def _tail_text(reader: _CappedReader) -> str:
    return bytes(reader.data).decode("utf-8", errors="replace")[-TAIL_CHARS:]


def run_child(mode: str, payload: dict, home: str, *, timeout_s: float, max_output_bytes: int) -> dict:
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
            inner = [
                *bwrap_command(shutil.which("bwrap"), pass_fds[1] if len(pass_fds) > 1 else None),
                *_INTERPRETER_FLAGS,
                _CHILD_SOURCE,
            ]
            rlimits = sandbox_rlimits(
                memory_mb=payload["memory_mb"],
                cpu_s=payload["cpu_s"],
                max_output_bytes=payload["max_output_bytes"],
            )
            command = launcher_command(inner, cgroups=groups.folders, rlimits=rlimits)
            cwd, child_home = "/", "/tmp"
            payload = {**payload, "threads": threads_bounded}
        else:
            command, cwd, child_home = [executable, *_INTERPRETER_FLAGS, _CHILD_SOURCE], home, home
        refuse_exec = exec_filter()
        payload = {
            **payload,
            "report_fd": report_write,
            "exec_filter": refuse_exec.hex() if refuse_exec else "",
        }
        payload_bytes = json.dumps(payload).encode("utf-8")
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=stdout_write,
                stderr=stderr_write,
                cwd=cwd,
                env=child_environment(child_home),
                pass_fds=tuple(pass_fds),
                start_new_session=True,
            )
            for fd in (report_write, stdout_write, stderr_write):
                os.close(fd)
                to_close.remove(fd)

            def over_limit():
                _kill_group(process)

            report = _CappedReader(report_read, keep=REPORT_LIMIT + 1, keep_tail=False)
            stdout = _CappedReader(
                stdout_read, keep=TAIL_CHARS * 4, keep_tail=True, limit=max_output_bytes, on_limit=over_limit
            )
            stderr = _CappedReader(
                stderr_read, keep=TAIL_CHARS * 4, keep_tail=True, limit=max_output_bytes, on_limit=over_limit
            )
            threading.Thread(target=_feed, args=(process.stdin, payload_bytes), daemon=True).start()
            timed_out = not _exited_within(process, max(0.0, timeout_s - (time.monotonic() - started)))
            if timed_out:
                _kill_group(process)
            process.wait()
            if groups is not None:  # whatever bwrap left behind ends with it, pid 1 of the namespace included
                kill_cgroups(groups.folders)
            for reader in (report, stdout, stderr):
                reader.join(timeout=2.0)  # EOF once every process holding the pipe is gone
            return dict(
                returncode=process.returncode,
                timed_out=timed_out,
                out_of_memory=groups is not None and groups.out_of_memory(),
                output_over_limit=stdout.over_limit or stderr.over_limit,
                report=bytes(report.data),
                report_over_limit=report.total > REPORT_LIMIT,
                stdout_tail=_tail_text(stdout),
                stderr_tail=_tail_text(stderr),
            )
        finally:
            if process is not None and process.poll() is None:
                _kill_group(process)
                process.wait()
            for fd in to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)


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


def limit_failure(outcome: dict, *, timeout_s, cpu_s, memory_mb, max_output_bytes) -> str | None:
    """Which limit ended the child, read from `run_child`'s outcome; None when none did."""
    returncode, timed_out, stderr_tail = outcome["returncode"], outcome["timed_out"], outcome["stderr_tail"]
    output_over_limit, out_of_memory = outcome["output_over_limit"], outcome["out_of_memory"]
    if output_over_limit:  # checked first: the parent killed the child for it
        return f"output limit: wrote more than {max_output_bytes} bytes"
    if out_of_memory:
        return (
            f"memory limit: the sandbox used more than {memory_mb} MiB plus "
            f"{SANDBOX_OVERHEAD_BYTES // 2**20} MiB for its tmpfs and bwrap (shared memory included)"
        )
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
