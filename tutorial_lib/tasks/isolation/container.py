"""The container of generated code: who it runs as (`sandbox_identity`), what it sees (the base
interpreter's files, bound read-only or copied where only root could read them), the bwrap command, the
environment, the launcher that sets the limits and drops privileges before it becomes bwrap, and whether
all of it runs here (`bwrap_problem`)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from functools import lru_cache
from pathlib import Path

from .seccomp import seccomp_filter

__all__ = [
    "interpreter_files",
    "bwrap_command",
    "child_environment",
    "bwrap_problem",
    "sandbox_available",
    "launcher_command",
    "sandbox_identity",
    "TMPFS_BYTES",
    "SANDBOX_UID",
    "SANDBOX_OVERHEAD_BYTES",
    "LAUNCHER_EXIT",
]

TMPFS_BYTES = 64 * 1024 * 1024
SANDBOX_UID = 65534  # "nobody": the host user generated code runs as when the sweep runs as root
# Memory the whole sandbox may use beyond the child's address space: its tmpfs and bwrap's two processes.
SANDBOX_OVERHEAD_BYTES = TMPFS_BYTES + 32 * 1024 * 1024
LAUNCHER_EXIT = 125  # the launcher's status when it could not set a limit or drop privileges
UID_ENV = "TUTORIAL_LIB_SANDBOX_UID"  # another unprivileged uid for the sandbox, when run as root
INTERPRETER_CACHE = Path("/var/cache/tutorial_lib")
HASH_SEED = "0"

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
        raise ValueError(
            f"{UID_ENV}={text!r}: give the number of an unprivileged user (not 0), e.g. {SANDBOX_UID}"
        )
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
    key = hashlib.sha256(
        json.dumps([executable, info.st_size, int(info.st_mtime), sys.version, list(binds)]).encode()
    ).hexdigest()[:16]
    INTERPRETER_CACHE.mkdir(parents=True, exist_ok=True)
    if INTERPRETER_CACHE.stat().st_uid == 0:
        os.chmod(INTERPRETER_CACHE, 0o755)  # whatever the umask: the sandbox's user must enter it
    for folder in (INTERPRETER_CACHE, *INTERPRETER_CACHE.parents):
        mode = folder.stat().st_mode if folder.exists() else 0
        if folder.exists() and (
            folder.stat().st_uid != 0 or mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX
        ):
            raise PermissionError(
                f"{folder} is not a root-owned folder others cannot write; the interpreter "
                "copy for the sandbox must not be replaceable by another user"
            )
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
    for copy in mapping.values():
        if not _others_can_reach(copy):
            mode = stat.filemode(os.stat(copy).st_mode)
            raise PermissionError(
                f"the interpreter copy {copy} ({mode}) or a folder above it cannot be read by the sandbox's "
                f"user; a umask such as 077 makes it so: remove {INTERPRETER_CACHE} and run again"
            )
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
    command = [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        *_system_library_arguments(),
    ]
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


def child_environment(home: str) -> dict[str, str]:
    """Nothing of the parent's environment (no tokens, no proxies); one hash seed, the judge's as well
    (`HASH_SEED`), so a set's order is the same on both sides of a comparison."""
    return {
        "PYTHONHASHSEED": HASH_SEED,
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


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
    return {
        "RLIMIT_AS": (int(memory_mb * 1024 * 1024),) * 2,
        "RLIMIT_CPU": (cpu_seconds, cpu_seconds + 1),  # SIGXCPU at the soft limit, SIGKILL at the hard
        "RLIMIT_FSIZE": (int(max_output_bytes) + 1,) * 2,
        "RLIMIT_CORE": (0, 0),
        "RLIMIT_NOFILE": (256, 256),
    }


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
            probe = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                pass_fds=fds,
                env=child_environment("/tmp"),
                cwd="/",
            )
        except (OSError, subprocess.SubprocessError) as error:
            return f"`bwrap` failed to start: {error}"
    if probe.returncode != 0 or probe.stdout.strip() != str(SANDBOX_UID).encode():
        error = probe.stderr.decode(errors="replace").strip()[:300]
        if identity is not None:
            return (
                f"`bwrap` cannot run the interpreter as the unprivileged uid {identity[0]} here "
                f"({error}). "
                "Generated code never runs as root: allow unprivileged user namespaces "
                "(`sysctl -w user.max_user_namespaces=10000`, and on Debian/Ubuntu "
                "`sysctl -w kernel.unprivileged_userns_clone=1` or an AppArmor profile for bwrap), set "
                f"{UID_ENV} to another unprivileged uid, or run as a non-root user"
            )
        return f"`bwrap` cannot run the interpreter here: {error}"
    return None


def sandbox_available() -> bool:
    """Whether `run_python` runs code under bwrap on this machine."""
    return bwrap_problem() is None
