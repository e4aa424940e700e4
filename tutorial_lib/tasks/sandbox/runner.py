"""Running model-written code and judging it: `run_python` checks its arguments, chooses bwrap or,
by explicit opt-in, a plain child (`SandboxUnavailableError` otherwise), evaluates each test's holes in
sandboxed runs (the expected side's, which hold no model-written code, and the solution's), and hands
their values to the budgeted judge."""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import sys
import tempfile
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, fields

from ..isolation import bwrap_problem
from ..judge.plans import (
    EXPECTED,
    HOLE_PREFIX,
    SOLUTION,
    bound_names,
    definitions_slice,
    plan_tests,
    visible_rebindings,
)
from ..judge.verdicts import MalformedReport, parse_report
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

    def __post_init__(self):
        # Text from the sandbox may hold lone surrogates (`"\ud800"` in an exception message): keep it
        # printable and encodable, with the odd code points escaped.
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, str):
                safe = value.encode("utf-8", "backslashreplace").decode("utf-8")
                object.__setattr__(self, field.name, safe)


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


def _check_arguments(code, tests, setup, prompt_code, timeout_s, memory_mb, cpu_s, max_output_bytes):
    if not isinstance(code, str):
        raise ValueError(f"code must be a str of Python source, got {type(code).__name__}")
    if isinstance(tests, str) or not all(isinstance(test, str) for test in tests):
        raise ValueError("tests must be a list of str (one assert statement each), not a single str")
    if len(tests) == 0:
        raise ValueError(
            "tests=[]: with no test nothing is judged, and a pass would mean nothing; pass at least one "
            "assert statement, e.g. ['assert f(1) == 2']."
        )
    for name, value in (("setup", setup), ("prompt_code", prompt_code)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a str of Python source, got {type(value).__name__}")
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
    prompt_code: str = "",
    entry_point: str | None = None,
    timeout_s: float = 5.0,
    memory_mb: int = 512,
    cpu_s: float = 5.0,
    max_output_bytes: int = 64_000,
    trust_unjudged_tests: bool = False,
    allow_unsandboxed: bool | None = None,
) -> SandboxResult:
    """Run `code` in the sandbox, evaluate the parts of `tests` that are the solution's there and the
    expected side's in a run without it, and judge the values here (`tutorial_lib.tasks.judge`).

    `setup`: the tests' own code (MBPP's `test_setup_code`); it runs only on the expected side.
    `prompt_code`: code the problem's prompt gives the solution (HumanEval's imports and helpers); it runs
    before `code` and on the expected side, and the names it binds are the benchmark's. `entry_point`:
    the function the tests must call (MBPP's and HumanEval's problems name it); a test that never calls
    it fails, and a name it shares with a builtin (`max`) is the solution's, which must define it.
    Limits, for each sandboxed run: `timeout_s` wall clock (start included), `cpu_s` of CPU time,
    `memory_mb` of address space (and, where a memory cgroup exists, of the whole sandbox plus its
    tmpfs), `max_output_bytes` for stdout, for stderr and for any file the code writes.
    `trust_unjudged_tests`: count tests the parent cannot judge on the child's word instead of failing
    them (the setup then runs beside the solution). `allow_unsandboxed`: None follows
    `$TUTORIAL_LIB_UNSANDBOXED`.

    Raises ValueError for bad arguments and SandboxUnavailableError when bwrap cannot run and
    running unsandboxed was not asked for; never raises for anything the code does.
    """
    _check_arguments(code, tests, setup, prompt_code, timeout_s, memory_mb, cpu_s, max_output_bytes)
    tests = list(tests)
    plans = plan_tests(tests, setup, entry_point, prompt_code)
    mode = _mode(allow_unsandboxed)
    started = time.monotonic()
    limits = dict(memory_mb=int(memory_mb), cpu_s=float(cpu_s), max_output_bytes=int(max_output_bytes))
    run = dict(mode=mode, timeout_s=timeout_s, limits=limits, prompt_code=prompt_code)
    common = dict(tests_total=len(tests), sandboxed=mode == "bwrap")
    try:
        statements = [plan.source for plan in plans if _runs_in_child(plan, trust_unjudged_tests)]
        solution = dict(code=code, setup=setup if statements else "", statements=statements)
        values, report, outcome = _evaluate_holes(plans, setup, solution, run)
        if outcome is not None:
            common.update(
                stdout_tail=outcome["stdout_tail"],
                stderr_tail=outcome["stderr_tail"],
                returncode=outcome["returncode"],
                timed_out=outcome["timed_out"],
            )
        failure = report if isinstance(report, str) else None
        if failure:
            return SandboxResult(False, failure, duration_s=time.monotonic() - started, **common)
        outcomes, rebinds = _outcomes(plans, values, report or {}, code, trust_unjudged_tests)
        try:
            passed, reason, tests_passed, tests_unjudged = judge_in_worker(
                plans=plans, outcomes=outcomes, rebinds=rebinds, trust_unjudged_tests=trust_unjudged_tests
            )
        except JudgeOverBudget as error:
            reason = f"judge budget exceeded ({error}); the test fails"
            return SandboxResult(False, reason, duration_s=time.monotonic() - started, **common)
        return SandboxResult(
            passed,
            reason,
            tests_passed=tests_passed,
            tests_unjudged=tests_unjudged,
            duration_s=time.monotonic() - started,
            **common,
        )
    except Exception as error:  # noqa: BLE001 - a sweep must go on whatever broke here
        reason = f"sandbox error: {type(error).__name__}: {str(error)[:300]}"
        return SandboxResult(False, reason, duration_s=time.monotonic() - started, **common)


def _runs_in_child(plan, trust_unjudged_tests: bool) -> bool:
    return plan.skeleton is None and not plan.refused and trust_unjudged_tests


def _evaluate_holes(plans, setup, solution, run):
    """Every hole's tagged value, keyed (test, hole): in rounds, each round one sandboxed run of the side
    whose holes have all the values they need (the expected side first). Returns (values, the solution's
    report or the reason it failed, the solution run's outcome)."""
    holes = {
        (t, k): hole for t, plan in enumerate(plans) if plan.skeleton for k, hole in enumerate(plan.holes)
    }
    values: dict = {}
    report, outcome = None, None
    setup_names = bound_names(setup, module_level=True)
    # the expected hole, if any, applied to each solution's hole's value (`f(x).count(1)`)
    outer_of = {(t, hole.needs[0]): (t, k) for (t, k), hole in holes.items() if hole.on_solution_value}
    watch = {
        "names": sorted({name for plan in plans for name in plan.judge_names}),
        "attributes": sorted({pair for plan in plans for pair in plan.judge_attributes}),
    }
    solution_runs = 1 if solution["statements"] else 0
    while len(values) < len(holes) or solution_runs:
        ready = [
            key for key in holes if key not in values and all((key[0], n) in values for n in holes[key].needs)
        ]
        side = EXPECTED if any(holes[key].side == EXPECTED for key in ready) else SOLUTION
        handed = {}  # (test, hole) -> {needed hole: the setup name whose object the solution's call takes}
        for key in list(ready):  # a hole whose input failed fails the same way, without a run
            inputs = {n: values[(key[0], n)] for n in holes[key].needs}
            if holes[key].side == side == SOLUTION:
                handed[key] = {
                    n: holes[(key[0], n)].source
                    for n, value in inputs.items()
                    if value[0] == "x" and holes[(key[0], n)].source in setup_names
                }
            broken = _broken_input(holes[key], [v for n, v in inputs.items() if n not in handed.get(key, {})])
            if broken:
                values[key] = broken
                ready.remove(key)
        batch = [key for key in ready if holes[key].side == side]
        if not batch and not solution_runs:
            continue
        setup_slice = ""
        if any(handed.get(key) for key in batch):
            names = {name for key in batch for name in handed.get(key, {}).values()}
            setup_slice, binds = definitions_slice(setup, names)
            # what the expected side reads, but for the bare names handed over, and what those depend on
            read = {
                n
                for hole in holes.values()
                if hole.side == EXPECTED and hole.source not in names
                for n in hole.reads
            }
            read |= definitions_slice(setup, read)[1]
            if binds & read:
                why = (
                    f"handing the setup's {', '.join(sorted(names))} to the solution would need the setup's "
                    f"lines that bind {', '.join(sorted(binds & read))}, on which the expected side depends"
                )
                for key in [key for key in batch if handed.get(key)]:
                    values[key] = ["e", why]
                    batch.remove(key)
                setup_slice = ""
        payload = {
            "prompt_code": run["prompt_code"],
            "program": solution["code"] if side == SOLUTION else setup,
            "modules": sorted({name for key in batch for name in holes[key].reads if _is_module(name)}),
            "holes": [
                {
                    "source": holes[key].source,
                    "reads": list(holes[key].reads),
                    "solution_names": list(holes[key].solution_names),
                    "inputs": {
                        f"{HOLE_PREFIX}{n}": values[(key[0], n)]
                        for n in holes[key].needs
                        if n not in handed.get(key, {})
                    },
                    "by_name": {f"{HOLE_PREFIX}{n}": name for n, name in handed.get(key, {}).items()},
                    **_applied_to_value(key, outer_of.get(key), holes, values),
                }
                for key in batch
            ],
            **run["limits"],
        }
        if setup_slice:
            payload["setup_slice"] = setup_slice
        if side == SOLUTION:
            payload["watch"] = watch
            if solution_runs:
                payload.update(statements=solution["statements"], setup=solution["setup"])
                solution_runs = 0
            outcome, report = _run(payload, run)
            if isinstance(report, str):
                return values, report, outcome
        else:
            report_of_expected = _run_expected(payload, run)
            if isinstance(report_of_expected, str):
                report_of_expected = {"values": [["e", report_of_expected]] * len(batch)}
            report_values = report_of_expected["values"]
        for key, value in zip(batch, report["values"] if side == SOLUTION else report_values):
            if side == SOLUTION and _tagged(value) and value[0] == "a" and len(value) == 2:
                # not plain data: the solution's run applied the expected hole to its own object
                outer = outer_of.get(key)
                values[key] = ["e", "applied on the solution's side"]
                if outer is not None and outer not in values:
                    values[outer] = value[1] if _tagged(value[1]) else ["e", "no value"]
                continue
            values[key] = value if _tagged(value) else ["e", "no value"]
    return values, report, outcome


def _tagged(value) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], str)


def _applied_to_value(key, outer, holes, values) -> dict:
    """For the solution's hole `key` whose value the expected hole `outer` takes apart (`f(x).count(1)`):
    that hole's source on `__judge_value` and its other inputs, applied by the solution's run to its own
    object when the object is not plain data (and only then)."""
    if outer is None or holes[key].side != SOLUTION:
        return {}
    others = {f"{HOLE_PREFIX}{n}": values.get((outer[0], n)) for n in holes[outer].needs[1:]}
    if any(value is None or value[0] in "ex" for value in others.values()):
        return {}  # its other inputs are not known yet, or not plain
    # the whole placeholder only: `__judge_hole_1` must not touch `__judge_hole_10`
    source = re.sub(rf"\b{HOLE_PREFIX}{key[1]}\b", "__judge_value", holes[outer].source)
    if re.search(r"__judge_value\s*\.\s*__\w+__", source):
        return {}  # `f(x).__eq__(3)` is the test's comparison, never the object's to answer
    return {"then": source, "then_inputs": others, "then_reads": list(holes[outer].reads)}


def _broken_input(hole, inputs) -> list | None:
    for value in inputs:
        if value[0] == "e":
            return value
        if value[0] == "x":
            kind = str(value[1])[:80]
            return ["e", f"a {kind} object is not plain data, so it cannot be handed to the {hole.side} side"]
    return None


def _is_module(name: str) -> bool:
    return name in sys.stdlib_module_names and not hasattr(builtins, name)


def _run(payload, run) -> tuple[dict, dict | str]:
    """One sandboxed run: (its outcome, its report or why there is none)."""
    with (
        tempfile.TemporaryDirectory(prefix="tutorial_lib_sandbox_")
        if run["mode"] == "unsandboxed"
        else contextlib.nullcontext("/tmp")
    ) as home:
        outcome = run_child(
            run["mode"],
            payload,
            home,
            timeout_s=run["timeout_s"],
            max_output_bytes=run["limits"]["max_output_bytes"],
        )
    failure = limit_failure(outcome, timeout_s=run["timeout_s"], **run["limits"])
    if failure:
        return outcome, failure
    lines = outcome["report"].split(b"\n")
    if outcome["report_over_limit"] or len(lines) != 2 or lines[1] != b"":
        return outcome, "no valid report: the child wrote none, several, or one too large (exited early?)"
    try:
        report = parse_report(lines[0])
    except MalformedReport as error:
        return outcome, f"no valid report: {error}"
    if not isinstance(report, dict) or not isinstance(report.get("values"), list):
        return outcome, "no valid report: not a report object"
    if report.get("error") is not None:
        error = report["error"]
        return outcome, error[:1000] if isinstance(error, str) else "no valid report: its error is not text"
    if len(report["values"]) != len(payload["holes"]):
        return outcome, f"no valid report: {len(report['values'])} values for {len(payload['holes'])} holes"
    return outcome, report


_expected_cache: OrderedDict = OrderedDict()
_EXPECTED_CACHE_SIZE = 256


def _run_expected(payload, run) -> dict | str:
    """The expected side's run (no model-written code), cached: a sweep judges many solutions against the
    same tests. Its failure is the reason each of its holes fails."""
    key = json.dumps([run["mode"], payload], sort_keys=True)
    if key in _expected_cache:
        _expected_cache.move_to_end(key)
        return _expected_cache[key]
    outcome, report = _run(payload, run)
    if isinstance(report, str):
        return f"the expected side could not be computed ({report[:200]})"
    _expected_cache[key] = report
    if len(_expected_cache) > _EXPECTED_CACHE_SIZE:
        _expected_cache.popitem(last=False)
    return report


def _outcomes(plans, values, report, code, trust_unjudged_tests):
    """For each test, its outcome for the judge (`judge.verdicts.judge_report`) and the names of the test
    the solution rebinds (visibly in `code`, or at run time in its report)."""
    statements = iter(report.get("statements") or [])
    runtime = report.get("rebound")
    runtime = {name for name in runtime if isinstance(name, str)} if isinstance(runtime, list) else set()
    static = visible_rebindings(code)
    outcomes, rebinds = [], []
    for t, plan in enumerate(plans):
        watched = (
            set(plan.judge_names)
            | {f"builtins.{name}" for name in plan.judge_names}
            | {f"{module}.{attribute}" for module, attribute in plan.judge_attributes}
        )
        rebinds.append(sorted((static | runtime) & watched))
        if plan.skeleton is not None:
            top = {k: values.get((t, k), ["e", "no value"]) for k in plan.top}
            failed = next((value for value in top.values() if value[0] == "e"), None)
            outcomes.append(("error", f"{_text(failed[1])}") if failed else ("values", top))
        elif _runs_in_child(plan, trust_unjudged_tests):
            result = next(statements, "no result")
            outcomes.append(("statement", result if result is True else _text(result)))
        else:
            outcomes.append(None)
    return outcomes, rebinds


def _text(value) -> str:
    return value[:300] if isinstance(value, str) else "gave no reason"
