"""Limits on the whole sandbox: the pids and memory cgroups one run's processes share, where this
process may make them (`process_limit` says which bound applies here), and the killing of whatever a run
leaves in them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["process_limit", "sandbox_cgroups", "kill_cgroups", "MAX_TASKS", "SandboxGroups"]


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


_PROBING = threading.Lock()  # one probe at a time: threads of one process would share a probe's name


@lru_cache(maxsize=None)
def _cgroup_root(controller: str) -> tuple[str, bool] | None:
    with _PROBING:
        return _probe_cgroup_root(controller)


def _probe_cgroup_root(controller: str) -> tuple[str, bool] | None:
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
            if not os.path.isfile(os.path.join(probe, "cgroup.procs")):
                continue  # a plain folder (a tmpfs where no cgroup is mounted): not a group the kernel made
            with open(os.path.join(probe, limit_file), "w") as handle:
                handle.write(str(MAX_TASKS if controller == "pids" else 256 * 1024 * 1024))
            # A process must be able to join it too (cgroup v2 may refuse that to a user who made the folder).
            joined = (
                subprocess.run(
                    ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs"', probe], capture_output=True, timeout=30
                ).returncode
                == 0
            )
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
            owner = entry[len(_CGROUP_PREFIX) :].split("_")[0] if entry.startswith(_CGROUP_PREFIX) else ""
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
