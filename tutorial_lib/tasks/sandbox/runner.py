"""Running model-written code and judging it: `run_python` checks its arguments, chooses bwrap or,
by explicit opt-in, a plain child (`SandboxUnavailableError` otherwise), computes the expected side of
the tests in a run of its own that holds no model-written code, runs the solution's calls, and hands
the report to the budgeted judge."""

from __future__ import annotations

import builtins
import contextlib
import os
import tempfile
import time
import warnings
from dataclasses import dataclass

from ..isolation import bwrap_problem
from ..judge import (
    EXPECTED,
    SOLUTION,
    MalformedReport,
    NotPlainData,
    encode_value,
    parse_report,
    plan_tests,
    rebinding_names,
)
from ..judge_worker import JudgeOverBudget, judge_in_worker
from .child_process import limit_failure, run_child

__all__ = [
    "run_python",
    "SandboxResult",
    "SandboxUnavailableError",
    "UNSANDBOXED_ENV",
    "INSTALL_HINT",
    "UNCONTAINED",
]

UNSANDBOXED_ENV = "TUTORIAL_LIB_UNSANDBOXED"
INSTALL_HINT = (
    "install bubblewrap: `sudo apt-get install bubblewrap` (Debian/Ubuntu), `sudo dnf install bubblewrap` "
    "(Fedora), `sudo pacman -S bubblewrap` (Arch); `make install` does it when run as root"
)
UNCONTAINED = (
    "the code can read every file your user can, write and delete them, use the network, "
    "signal and start processes; only the resource limits and the outside judge remain"
)


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
            f"generated code runs only inside bubblewrap, and {problem}. To fix it, {INSTALL_HINT}. "
            f"To run it without a sandbox anyway, set {UNSANDBOXED_ENV}=1 (or pass allow_unsandboxed=True): "
            f"then {UNCONTAINED}."
        )
    if not _warned_unsandboxed:
        warnings.warn(
            f"running generated code WITHOUT a sandbox ({problem}; {UNSANDBOXED_ENV}=1): {UNCONTAINED}.",
            RuntimeWarning,
            stacklevel=3,
        )
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
        raise ValueError(
            "tests=[]: with no test nothing is judged, and a pass would mean nothing; pass at least one "
            "assert statement, e.g. ['assert f(1) == 2']."
        )
    if not isinstance(setup, str):
        raise ValueError(f"setup must be a str of Python source, got {type(setup).__name__}")
    for name, value in (
        ("timeout_s", timeout_s),
        ("memory_mb", memory_mb),
        ("cpu_s", cpu_s),
        ("max_output_bytes", max_output_bytes),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    if memory_mb < 64:
        raise ValueError(
            f"memory_mb={memory_mb} is too small for the Python interpreter itself; use at least 64"
        )


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
        expected, inject, setup_in_child = _expected_values(
            mode, setup, plans, known, timeout_s=timeout_s, **limits
        )
        trusted = [plan.skeleton is None and not plan.refused and trust_unjudged_tests for plan in plans]
        tests_payload = []
        for plan, trust in zip(plans, trusted):
            if plan.skeleton is not None:
                chosen = [index for index, side in enumerate(plan.sides) if side == SOLUTION]
                tests_payload.append(
                    {
                        "holes": [plan.holes[i] for i in chosen],
                        "reads": [plan.reads[i] for i in chosen],
                        "solution_names": list(plan.solution_names),
                    }
                )
            else:
                tests_payload.append({"statement": plan.source} if trust else {"skip": True})
        watch = {
            "names": sorted({name for plan in plans for name in plan.judge_names}),
            "attributes": sorted({pair for plan in plans for pair in plan.judge_attributes}),
        }
        payload = {
            "code": code,
            "setup": setup,
            "run_setup": setup_in_child or any(trusted),
            "inject": inject,
            "modules": sorted({module for plan in plans for module in plan.modules}),
            "watch": watch,
            "tests": tests_payload,
            **limits,
        }
        # A folder only unsandboxed (under bwrap the folder is a tmpfs that vanishes with the sandbox).
        home_folder = (
            tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_")
            if mode == "unsandboxed"
            else contextlib.nullcontext("/tmp")
        )
        with home_folder as home:
            outcome = run_child(mode, payload, home, timeout_s=timeout_s, max_output_bytes=max_output_bytes)
        common = dict(
            stdout_tail=outcome["stdout_tail"],
            stderr_tail=outcome["stderr_tail"],
            tests_total=len(tests),
            returncode=outcome["returncode"],
            duration_s=time.monotonic() - started,
            timed_out=outcome["timed_out"],
            sandboxed=mode == "bwrap",
        )
        failure = limit_failure(
            outcome, timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb, max_output_bytes=max_output_bytes
        )
        if failure:
            return SandboxResult(passed=False, reason=failure, **common)
        statically_rebound = rebinding_names(code, plans)
        try:
            passed, reason, tests_passed, tests_unjudged = judge_in_worker(
                report_bytes=outcome["report"],
                report_over_limit=outcome["report_over_limit"],
                plans=plans,
                known=known,
                expected=expected,
                trust_unjudged_tests=trust_unjudged_tests,
                statically_rebound=statically_rebound,
            )
        except JudgeOverBudget as error:
            return SandboxResult(
                passed=False, reason=f"judge budget exceeded ({error}); the test fails", **common
            )
        return SandboxResult(
            passed=passed, reason=reason, tests_passed=tests_passed, tests_unjudged=tests_unjudged, **common
        )
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        return SandboxResult(
            passed=False,
            reason=f"sandbox error: {type(error).__name__}: {str(error)[:300]}",
            tests_total=len(tests),
            duration_s=time.monotonic() - started,
            sandboxed=mode == "bwrap",
        )


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
    wanted = [
        [hole for hole, side in zip(plan.holes, plan.sides) if side == EXPECTED] if plan.skeleton else []
        for plan in plans
    ]
    reads = [
        [r for r, side in zip(plan.reads, plan.sides) if side == EXPECTED] if plan.skeleton else []
        for plan in plans
    ]
    handed = sorted(
        {
            name
            for plan in plans
            if plan.skeleton
            for read, side in zip(plan.reads, plan.sides)
            if side == SOLUTION
            for name in read
            if name not in plan.solution_names
            and (name in known or name not in plan.modules and not hasattr(builtins, name))
        }
    )
    inject = {}
    for name in [name for name in handed if name in known]:
        with contextlib.suppress(NotPlainData):
            inject[name] = encode_value(known[name])
    from_setup = [name for name in handed if name not in known]
    if not any(wanted) and not from_setup:
        return [None] * len(plans), inject, any(name not in inject for name in handed)
    modules = sorted({module for plan in plans if plan.skeleton for module in plan.modules})
    key = (
        mode,
        setup,
        tuple(modules),
        tuple(map(tuple, wanted)),
        tuple(from_setup),
        memory_mb,
        cpu_s,
        max_output_bytes,
    )
    if key in _expected_cache:
        values, handed_values, in_child = _expected_cache[key]
        return values, {**inject, **handed_values}, in_child
    entries = [
        {"holes": holes, "reads": plan_reads, "solution_names": []}
        for holes, plan_reads in zip(wanted, reads)
    ]
    entries.append({"holes": from_setup, "reads": [[name] for name in from_setup], "solution_names": []})
    with (
        tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_")
        if mode == "unsandboxed"
        else contextlib.nullcontext("/tmp")
    ) as home:
        outcome = run_child(
            mode,
            {
                "code": "",
                "setup": setup,
                "run_setup": True,
                "modules": modules,
                "tests": entries,
                "memory_mb": memory_mb,
                "cpu_s": cpu_s,
                "max_output_bytes": max_output_bytes,
            },
            home,
            timeout_s=timeout_s,
            max_output_bytes=max_output_bytes,
        )
    failure = limit_failure(
        outcome, timeout_s=timeout_s, cpu_s=cpu_s, memory_mb=memory_mb, max_output_bytes=max_output_bytes
    )
    report = None
    if failure is None and not outcome["report_over_limit"]:
        with contextlib.suppress(MalformedReport):
            report = parse_report(outcome["report"].rstrip(b"\n"))
    if not (
        isinstance(report, dict)
        and isinstance(report.get("tests"), list)
        and len(report["tests"]) == len(plans) + 1
    ):
        why = failure or (
            f"setup {report['error']}"
            if isinstance(report, dict) and report.get("error")
            else "no valid report"
        )
        return (
            [
                f"the expected side could not be computed ({str(why)[:200]})" if holes else None
                for holes in wanted
            ],
            inject,
            True,
        )
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
