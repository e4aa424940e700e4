r"""What contains generated code: who it runs as, the bubblewrap command, the seccomp filter, the
environment it sees, and the limits on the whole sandbox. `sandbox` runs code inside it and judges the
tests outside.

The layers, from the outside in:

1. **The launcher** (`LAUNCHER_SOURCE`, run by the base interpreter before bwrap exists): joins the
   sandbox's cgroups (`sandbox_cgroups`: `pids.max` and a memory limit for every process of the
   sandbox, bwrap's own two included), sets the resource limits that every process of the sandbox
   inherits (address space, CPU time, file size, no core files), and, when it runs as root, drops to an
   unprivileged host user (`SANDBOX_UID`, with no supplementary groups and no capabilities) before it
   becomes bwrap. So the sandbox's user is not the host's root: the files of `/proc/sys`, the host's
   processes and every root-owned file stay out of its reach even through a kernel interface that
   bwrap leaves open.
2. **bwrap**, run by that user: new user, PID, network, IPC, UTS and cgroup namespaces, no `/proc` at
   all (so no `/proc/1/mem`, no `/proc/sys`), read-only binds of only the interpreter and system
   libraries, a size-capped tmpfs as `/tmp`.
3. **seccomp**: no new process, no ptrace or cross-process memory access, no System V IPC or POSIX
   message queues (memory that no process limit would count), no mount, namespace, bpf, keyring or
   io_uring calls; every new thread too where no `pids` cgroup can bound them (`process_limit`).

Where the launcher cannot drop to an unprivileged user (the kernel refuses unprivileged user
namespaces), `bwrap_problem` says what to set up and generated code does not run.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["interpreter_files", "bwrap_command", "seccomp_filter", "child_environment", "bwrap_problem",
           "sandbox_available", "process_limit", "sandbox_cgroups", "launcher_command", "sandbox_identity",
           "kill_cgroups", "MAX_TASKS", "TMPFS_BYTES", "SANDBOX_UID", "SANDBOX_OVERHEAD_BYTES",
           "LAUNCHER_EXIT"]

TMPFS_BYTES = 64 * 1024 * 1024
SANDBOX_UID = 65534  # "nobody": the host user generated code runs as when the sweep runs as root
# Memory the whole sandbox may use beyond the child's address space: its tmpfs and bwrap's two processes.
SANDBOX_OVERHEAD_BYTES = TMPFS_BYTES + 32 * 1024 * 1024
LAUNCHER_EXIT = 125  # the launcher's status when it could not set a limit or drop privileges
UID_ENV = "TUTORIAL_LIB_SANDBOX_UID"  # another unprivileged uid for the sandbox, when run as root
INTERPRETER_CACHE = Path("/var/cache/tutorial_lib")

# --------------------------------------------------------------------------------------------------
# Who the sandbox runs as
# --------------------------------------------------------------------------------------------------


def sandbox_identity() -> tuple[int, int] | None:
    """(uid, gid) the launcher drops to: `SANDBOX_UID` (or `$TUTORIAL_LIB_SANDBOX_UID`) when this
    process is root, None when it already runs as an unprivileged user (then it stays that user)."""
    if os.geteuid() != 0:
        return None
    text = os.environ.get(UID_ENV, str(SANDBOX_UID))
    if not text.isdigit() or int(text) == 0:
        raise ValueError(f"{UID_ENV}={text!r}: give the number of an unprivileged user (not 0), "
                         f"e.g. {SANDBOX_UID}")
    return int(text), int(text)


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


def _others_can_reach(path: str) -> bool:
    """Whether a user who owns nothing here can read `path` (every folder above it searchable)."""
    current = Path(os.path.realpath(path))
    mode = current.stat().st_mode
    if not mode & (stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)):
        return False
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in current.parents)


# The parts of the standard library generated code never needs; left out of a copy (see `_bind_sources`).
_STDLIB_SKIP = ("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "__phello__")


def _interpreter_copy(binds: tuple[str, ...], stdlib: str) -> dict[str, str]:
    """{original path: copy} in a root-owned cache the sandbox user can read, made once. Needed where the
    interpreter lives under a folder only root may enter (pyenv under /root): bwrap, run by the sandbox
    user, could not bind it. Inside the sandbox the copy is mounted at the original paths, so the
    interpreter sees the same layout."""
    executable = binds[0]
    info = os.stat(executable)
    key = hashlib.sha256(json.dumps([executable, info.st_size, int(info.st_mtime), sys.version, list(binds)])
                         .encode()).hexdigest()[:16]
    INTERPRETER_CACHE.mkdir(mode=0o755, parents=True, exist_ok=True)
    for folder in (INTERPRETER_CACHE, *INTERPRETER_CACHE.parents):
        mode = folder.stat().st_mode if folder.exists() else 0
        if folder.exists() and (folder.stat().st_uid != 0
                                or mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX):
            raise PermissionError(f"{folder} is not a root-owned folder others cannot write; the interpreter "
                                  "copy for the sandbox must not be replaceable by another user")
    target = INTERPRETER_CACHE / f"interpreter-{key}"
    mapping = {path: str(target / "files" / str(index)) for index, path in enumerate(binds)}
    if (target / "complete").is_file():
        if target.stat().st_uid != 0:
            raise PermissionError(f"{target} is not owned by root; remove it and run again")
        return mapping
    staging = Path(tempfile.mkdtemp(prefix="staging-", dir=INTERPRETER_CACHE))
    try:
        for index, path in enumerate(binds):
            destination = staging / "files" / str(index)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if os.path.isdir(path):
                skip = shutil.ignore_patterns(*_STDLIB_SKIP) if path == stdlib else None
                shutil.copytree(path, destination, symlinks=True, ignore=skip)
            else:
                shutil.copy2(path, destination)
        for root, folders, files in os.walk(staging):
            os.chmod(root, 0o755)
            for name in files:
                file_path = os.path.join(root, name)
                if not os.path.islink(file_path):
                    os.chmod(file_path, 0o755 if os.access(file_path, os.X_OK) else 0o644)
        (staging / "complete").write_text("")
        try:
            os.rename(staging, target)
        except OSError:  # another process made it first
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return mapping


@lru_cache(maxsize=1)
def _bind_sources() -> tuple[tuple[str, str], ...]:
    """(source on the host, path inside) for each interpreter bind."""
    executable, binds, stdlib = interpreter_files()
    if sandbox_identity() is None or all(_others_can_reach(path) for path in binds):
        return tuple((path, path) for path in binds)
    mapping = _interpreter_copy(binds, stdlib)
    return tuple((mapping[path], path) for path in binds)


def _system_library_arguments() -> list[str]:
    arguments = []
    for path in ("/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32"):
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    return arguments + ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]


def bwrap_command(bwrap: str, seccomp_fd: int | None) -> list[str]:
    """The bwrap command line up to (not including) the interpreter's own arguments. No `/proc` is
    mounted: the interpreter does not need it, and it is the way into pid 1's memory and the kernel's
    settings."""
    executable, _, stdlib = interpreter_files()
    command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
               "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox",
               *_system_library_arguments()]
    for source, inside in _bind_sources():
        command += ["--ro-bind", source, inside]
    site_packages = os.path.join(stdlib, "site-packages")
    source_of = dict((inside, source) for source, inside in _bind_sources())
    if os.path.isdir(os.path.join(source_of.get(stdlib, stdlib), "site-packages")):  # not needed, not shown
        command += ["--tmpfs", site_packages, "--remount-ro", site_packages]
    for device in ("/dev/null", "/dev/zero", "/dev/urandom"):
        command += ["--dev-bind", device, device]
    command += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp", "--remount-ro", "/"]
    if seccomp_fd is not None:
        command += ["--seccomp", str(seccomp_fd)]
    return command + ["--", executable]


# Syscalls the filter refuses with EPERM, per architecture (clone and clone3 are handled apart).
_SECCOMP_TABLES = {
    "x86_64": dict(arch=0xC000003E, clone=56, clone3=435, x32_bit=0x40000000, deny=(
        57, 58, 101, 310, 311, 272, 308, 165, 166, 321, 298, 323, 250, 248, 249, 425, 426, 427, 155,
        # System V shared memory, semaphores and messages, POSIX message queues, pidfd_getfd
        29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 240, 438)),
    "aarch64": dict(arch=0xC00000B7, clone=220, clone3=435, x32_bit=None, deny=(
        117, 270, 271, 97, 268, 40, 39, 280, 241, 282, 219, 217, 218, 425, 426, 427, 41,
        194, 195, 196, 197, 190, 191, 192, 193, 186, 187, 188, 189, 180, 438)),
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
                op(LD, 0, 0, 16), op(JSET, 0, 1, CLONE_THREAD),
                op(RET, 0, 0, ALLOW if allow_threads else EPERM),
                op(RET, 0, 0, EPERM)]
    return b"".join(program)


def child_environment(home: str) -> dict[str, str]:
    # Nothing of the parent's environment: no tokens, no proxies.
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# --------------------------------------------------------------------------------------------------
# The launcher: limits on every process of the sandbox, then an unprivileged user, then bwrap
# --------------------------------------------------------------------------------------------------

LAUNCHER_SOURCE = r"""
import json, os, resource, sys
def fail(message):
    os.write(2, ("tutorial_lib launcher: " + message + "\n").encode())
    os._exit(125)
config = json.loads(sys.argv[1])
try:
    for folder in config["cgroups"]:
        with open(os.path.join(folder, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    for name, (soft, hard) in config["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if config["identity"] is not None:
        uid, gid = config["identity"]
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
            fail("could not drop to uid %d" % uid)
except OSError as error:
    fail("%s: %s" % (type(error).__name__, error))
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as error:
    fail("could not start %s: %s" % (sys.argv[2], error))
"""


def sandbox_rlimits(*, memory_mb: float, cpu_s: float, max_output_bytes: int) -> dict[str, tuple[int, int]]:
    """The resource limits every process of the sandbox starts with (bwrap's own included)."""
    cpu_seconds = max(1, int(cpu_s + 0.999))
    return {"RLIMIT_AS": (int(memory_mb * 1024 * 1024),) * 2,
            "RLIMIT_CPU": (cpu_seconds, cpu_seconds + 1),  # SIGXCPU at the soft limit, SIGKILL at the hard
            "RLIMIT_FSIZE": (int(max_output_bytes) + 1,) * 2,
            "RLIMIT_CORE": (0, 0), "RLIMIT_NOFILE": (256, 256)}


def launcher_command(command: list[str], *, cgroups: list[str], rlimits: dict) -> list[str]:
    """`command` (bwrap's) preceded by the launcher that joins `cgroups`, sets `rlimits` and drops to
    `sandbox_identity()`; the launcher runs on the base interpreter with nothing of the environment."""
    config = {"cgroups": list(cgroups), "rlimits": rlimits, "identity": sandbox_identity()}
    return [interpreter_files()[0], "-I", "-S", "-B", "-c", LAUNCHER_SOURCE, json.dumps(config), *command]


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when the launcher and bwrap run the interpreter here as an unprivileged user, else why not
    and what to set up (checked once per process)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "`bwrap` is not installed"
    try:
        identity = sandbox_identity()
        _bind_sources()
    except (OSError, ValueError) as error:
        return f"the sandbox's interpreter cannot be prepared: {error}"
    with tempfile.TemporaryFile() as seccomp_file:
        program = seccomp_filter()
        fds = ()
        if program is not None:
            seccomp_file.write(program)
            seccomp_file.flush()
            seccomp_file.seek(0)
            fds = (seccomp_file.fileno(),)
        probe_code = "import os; print(os.getuid(), flush=True)"
        inner = [*bwrap_command(bwrap, fds[0] if fds else None), "-I", "-S", "-c", probe_code]
        rlimits = sandbox_rlimits(memory_mb=512, cpu_s=10, max_output_bytes=4096)
        command = launcher_command(inner, cgroups=[], rlimits=rlimits)
        try:
            probe = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                                   pass_fds=fds, env=child_environment("/tmp"), cwd="/")
        except (OSError, subprocess.SubprocessError) as error:
            return f"`bwrap` failed to start: {error}"
    if probe.returncode != 0 or probe.stdout.strip() != str(SANDBOX_UID).encode():
        error = probe.stderr.decode(errors="replace").strip()[:300]
        if identity is not None:
            return (f"`bwrap` cannot run the interpreter as the unprivileged uid {identity[0]} here "
                    f"({error}). "
                    "Generated code never runs as root: allow unprivileged user namespaces "
                    "(`sysctl -w user.max_user_namespaces=10000`, and on Debian/Ubuntu "
                    "`sysctl -w kernel.unprivileged_userns_clone=1` or an AppArmor profile for bwrap), set "
                    f"{UID_ENV} to another unprivileged uid, or run as a non-root user")
        return f"`bwrap` cannot run the interpreter here: {error}"
    return None


def sandbox_available() -> bool:
    """Whether `run_python` runs code under bwrap on this machine."""
    return bwrap_problem() is None


# --------------------------------------------------------------------------------------------------
# Limits on the whole sandbox: cgroups
# --------------------------------------------------------------------------------------------------

MAX_TASKS = 64  # processes + threads in one sandbox (the launcher that becomes bwrap, and its init, included)
_CGROUP_PREFIX = "tutorial_lib_sandbox_"
_LIMIT_FILES = {"pids": ("pids.max", "pids.max"), "memory": ("memory.limit_in_bytes", "memory.max")}


def _cgroup_candidates(controller: str) -> list[tuple[str, bool]]:
    """(folder, is cgroup v2) where this process might create a sandbox's group for `controller`."""
    candidates = [(f"/sys/fs/cgroup/{controller}", False)]
    try:  # cgroup v2: a group below our own, where the controller is delegated to us
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                for mount in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    candidates.append((mount + line[3:].rstrip("/"), True))
    except OSError:
        pass
    return candidates


@lru_cache(maxsize=None)
def _cgroup_root(controller: str) -> tuple[str, bool] | None:
    """A cgroup folder of `controller` this process may create sandboxes' groups in, else None.
    Measured where this was written (root in a container, cgroup v1): /sys/fs/cgroup/pids and
    /sys/fs/cgroup/memory work. Without a pids group the seccomp filter refuses every new thread
    (`process_limit`); without a memory group the child's address-space limit and the seccomp filter's
    refusal of System V shared memory bound the sandbox's memory."""
    for root, v2 in _cgroup_candidates(controller):
        limit_file = _LIMIT_FILES[controller][v2]
        probe = os.path.join(root, f"{_CGROUP_PREFIX}{os.getpid()}_probe")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            with open(os.path.join(probe, limit_file), "w") as handle:
                handle.write(str(MAX_TASKS if controller == "pids" else 256 * 1024 * 1024))
            # A process must be able to join it too (cgroup v2 may refuse that to a user who made the folder).
            joined = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs"', probe],
                                    capture_output=True, timeout=30).returncode == 0
            if joined:
                return root, v2
        except (OSError, subprocess.SubprocessError):
            continue
        finally:
            _remove_group(probe)
    return None


def _pids_cgroup_root() -> str | None:
    found = _cgroup_root("pids")
    return None if found is None else found[0]


def _memory_cgroup_root() -> tuple[str, bool] | None:
    return _cgroup_root("memory")


def process_limit() -> str:
    """How the sandbox bounds processes and threads here: "cgroup" (pids.max = MAX_TASKS for the whole
    sandbox) or "seccomp" (no new thread or process at all)."""
    return "cgroup" if _pids_cgroup_root() is not None else "seccomp"


def _remove_group(folder: str) -> None:
    for _ in range(200):  # a killed sandbox's tasks leave the group within milliseconds
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def kill_cgroups(folders: list[str]) -> None:
    """SIGKILL every task of `folders` until they are empty (a task cannot fork out of a sandbox, so
    this ends)."""
    for folder in folders:
        kill_file = os.path.join(folder, "cgroup.kill")
        if os.path.exists(kill_file):
            with contextlib.suppress(OSError), open(kill_file, "w") as handle:
                handle.write("1")
        for _ in range(500):
            try:
                pids = [int(pid) for pid in Path(folder, "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)


@dataclass
class SandboxGroups:
    """The cgroup folders one sandbox runs in, and what its memory group saw."""

    folders: list
    pids_folder: str | None = None
    memory_folder: str | None = None
    memory_v2: bool = False

    def out_of_memory(self) -> bool:
        """Whether the memory group's limit killed a task of this sandbox."""
        if self.memory_folder is None:
            return False
        name = "memory.events" if self.memory_v2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in Path(self.memory_folder, name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False


_cgroup_counter = iter(range(1 << 62))


@contextlib.contextmanager
def sandbox_cgroups(memory_bytes: int):
    """Fresh cgroups for one sandbox: `pids.max` = MAX_TASKS and a memory limit of `memory_bytes` for
    all its processes together (System V and tmpfs pages included), where this process may make them.
    Every task left in them is killed and the groups removed after; empty groups of dead sweeps are
    removed on the way in."""
    groups = SandboxGroups([])
    try:
        for controller in ("pids", "memory"):
            found = None if controller == "pids" and _pids_cgroup_root() is None else _cgroup_root(controller)
            if found is None:
                continue
            root, v2 = found
            _remove_stale_groups(root)
            folder = os.path.join(root, f"{_CGROUP_PREFIX}{os.getpid()}_{next(_cgroup_counter)}")
            os.mkdir(folder)
            groups.folders.append(folder)
            value = MAX_TASKS if controller == "pids" else int(memory_bytes)
            with open(os.path.join(folder, _LIMIT_FILES[controller][v2]), "w") as handle:
                handle.write(str(value))
            if controller == "pids":
                groups.pids_folder = folder
            if controller == "memory":
                groups.memory_folder, groups.memory_v2 = folder, v2
                swap_file = os.path.join(folder, "memory.swap.max" if v2 else "memory.memsw.limit_in_bytes")
                if os.path.exists(swap_file):
                    with contextlib.suppress(OSError), open(swap_file, "w") as handle:
                        handle.write("0" if v2 else str(int(memory_bytes)))
        yield groups
    finally:
        kill_cgroups(groups.folders)
        for folder in groups.folders:
            _remove_group(folder)


def _remove_stale_groups(root: str) -> None:
    with contextlib.suppress(OSError):
        for entry in os.listdir(root):
            owner = entry[len(_CGROUP_PREFIX):].split("_")[0] if entry.startswith(_CGROUP_PREFIX) else ""
            if owner.isdigit() and not _pid_alive(int(owner)):
                kill_cgroups([os.path.join(root, entry)])
                _remove_group(os.path.join(root, entry))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
