r"""What contains generated code: the bubblewrap command (namespaces, read-only binds of the interpreter, a
size-capped tmpfs), the seccomp filter, the environment the child sees, and the process and thread limit
(a per-run cgroup with `pids.max`, or seccomp refusing threads where no cgroup is writable). `sandbox`
runs code inside it and judges the tests outside.
"""
from __future__ import annotations

import contextlib
import os
import platform
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from functools import lru_cache

__all__ = ["interpreter_files", "bwrap_command", "seccomp_filter", "child_environment", "bwrap_problem",
           "sandbox_available", "process_limit", "pids_cgroup", "MAX_TASKS", "TMPFS_BYTES", "SANDBOX_UID"]

TMPFS_BYTES = 64 * 1024 * 1024
SANDBOX_UID = 65534

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


def seccomp_filter(machine: str | None = None, *, allow_threads: bool = True) -> bytes | None:
    """A classic-BPF seccomp program (bwrap's `--seccomp` format), or None on an unknown architecture.
    `allow_threads=False` refuses clone with CLONE_THREAD too: the process limit where no pids cgroup
    can bound the number of threads (`process_limit`)."""
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
                op(LD, 0, 0, 16), op(JSET, 0, 1, CLONE_THREAD), op(RET, 0, 0, ALLOW if allow_threads else EPERM),
                op(RET, 0, 0, EPERM)]
    return b"".join(program)


def child_environment(home: str) -> dict[str, str]:
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
                                   pass_fds=fds, env=child_environment("/tmp"))
        except (OSError, subprocess.SubprocessError) as error:
            return f"`bwrap` failed to start: {error}"
    if probe.returncode != 0 or probe.stdout.strip() != b"ok":
        return f"`bwrap` cannot run the interpreter here: {probe.stderr.decode(errors='replace').strip()[:300]}"
    return None


def sandbox_available() -> bool:
    """Whether `run_python` runs code under bwrap on this machine."""
    return bwrap_problem() is None


# --------------------------------------------------------------------------------------------------
# The process and thread limit
# --------------------------------------------------------------------------------------------------

MAX_TASKS = 64  # processes + threads in one sandbox (the shell that becomes bwrap, and its init, included)
_CGROUP_PREFIX = "tutorial_lib_sandbox_"


@lru_cache(maxsize=1)
def _pids_cgroup_root() -> str | None:
    """A cgroup folder of the `pids` controller this process may create sandboxes' groups in, else None.
    Measured where this was written (root in a container, cgroup v1): /sys/fs/cgroup/pids works, and
    a thread bomb stops at MAX_TASKS. Where none is writable (an unprivileged user, cgroup v2 not
    delegated) the seccomp filter refuses every new thread instead (`process_limit`)."""
    candidates = ["/sys/fs/cgroup/pids"]
    try:  # cgroup v2: a group below our own, where the pids controller is delegated to us
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                candidates.append("/sys/fs/cgroup" + line[3:].rstrip("/"))
    except OSError:
        pass
    for root in candidates:
        probe = os.path.join(root, f"{_CGROUP_PREFIX}{os.getpid()}_probe")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            with open(os.path.join(probe, "pids.max"), "w") as handle:
                handle.write(str(MAX_TASKS))
            # A process must be able to join it too (cgroup v2 may refuse that to a user who made the folder).
            joined = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs"', probe], capture_output=True,
                                    timeout=30).returncode == 0
            if joined:
                return root
        except (OSError, subprocess.SubprocessError):
            continue
        finally:
            for _ in range(100):  # the probe's shell leaves the group as it exits
                try:
                    os.rmdir(probe)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
    return None


def process_limit() -> str:
    """How the sandbox bounds processes and threads here: "cgroup" (pids.max = MAX_TASKS) or "seccomp"
    (no new thread or process at all). The sandbox's user maps to root, for whom RLIMIT_NPROC is not
    enforced (measured: 5,000 threads with RLIMIT_NPROC = 64), so that limit is not relied on."""
    return "cgroup" if _pids_cgroup_root() is not None else "seccomp"


_cgroup_counter = iter(range(1 << 62))


@contextlib.contextmanager
def pids_cgroup():
    """A fresh cgroup with pids.max = MAX_TASKS for one sandbox (None where there is none); removed
    after, and empty ones left by dead sweeps removed on the way in."""
    root = _pids_cgroup_root()
    if root is None:
        yield None
        return
    with contextlib.suppress(OSError):
        for entry in os.listdir(root):
            owner = entry[len(_CGROUP_PREFIX):].split("_")[0] if entry.startswith(_CGROUP_PREFIX) else ""
            if owner.isdigit() and not _pid_alive(int(owner)):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(root, entry))
    folder = os.path.join(root, f"{_CGROUP_PREFIX}{os.getpid()}_{next(_cgroup_counter)}")
    os.mkdir(folder)
    try:
        with open(os.path.join(folder, "pids.max"), "w") as handle:
            handle.write(str(MAX_TASKS))
        yield folder
    finally:
        for _ in range(200):  # the killed sandbox's tasks leave the group within milliseconds
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
