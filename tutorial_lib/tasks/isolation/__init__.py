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

from .cgroups import (  # noqa: F401 (re-exported)
    MAX_TASKS,
    SandboxGroups,
    kill_cgroups,
    process_limit,
    sandbox_cgroups,
)
from .container import (  # noqa: F401 (re-exported)
    INTERPRETER_CACHE,
    LAUNCHER_EXIT,
    LAUNCHER_SOURCE,
    SANDBOX_OVERHEAD_BYTES,
    SANDBOX_UID,
    TMPFS_BYTES,
    UID_ENV,
    bwrap_command,
    bwrap_problem,
    child_environment,
    interpreter_files,
    launcher_command,
    sandbox_available,
    sandbox_identity,
    sandbox_rlimits,
)
from .seccomp import exec_filter, seccomp_filter

__all__ = [
    "interpreter_files",
    "bwrap_command",
    "seccomp_filter",
    "exec_filter",
    "child_environment",
    "bwrap_problem",
    "sandbox_available",
    "process_limit",
    "sandbox_cgroups",
    "launcher_command",
    "sandbox_identity",
    "kill_cgroups",
    "MAX_TASKS",
    "TMPFS_BYTES",
    "SANDBOX_UID",
    "SANDBOX_OVERHEAD_BYTES",
    "LAUNCHER_EXIT",
]
