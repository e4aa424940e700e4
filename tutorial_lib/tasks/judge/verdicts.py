"""From the sandboxed runs' values to a verdict: `parse_report` reads a run's report, bounded before it is
parsed; `judge_report` decodes each test's values and evaluates its skeleton over them, in the budgeted
judge worker (`tutorial_lib.tasks.judge_worker`)."""

from __future__ import annotations

import json
import re

import numpy as np

from ..plain_data import MAX_DEPTH, MAX_NODES, NotPlainData, decode_value
from .plans import EXPECTED, HOLE_PREFIX, TestPlan
from .skeletons import evaluate_skeleton

__all__ = [
    "judge_test",
    "judge_report",
    "parse_report",
    "MalformedReport",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_DEPTH",
    "MAX_INTEGER_DIGITS",
]


def judge_test(plan: TestPlan, encoded_values: dict) -> tuple[bool, str]:
    """(passed, reason) of one test, given the tagged values of the holes its skeleton reads."""
    if plan.skeleton is None:
        raise ValueError("judge_test needs a test that can be judged outside")
    if not isinstance(encoded_values, dict) or set(encoded_values) != set(plan.top):
        return False, "the runs gave values for other holes than the test's"
    values, budget = {}, [MAX_NODES]
    for index in plan.top:
        try:
            expected = plan.holes[index].side == EXPECTED  # a Match object of the expected side is no claim
            values[f"{HOLE_PREFIX}{index}"] = decode_value(
                encoded_values[index], _budget=budget, opaque=expected
            )
        except NotPlainData as error:
            return False, f"`{plan.holes[index].source}` returned {error}"
    try:
        passed = bool(evaluate_skeleton(plan.skeleton, values))  # builtin objects the judge built
    except MemoryError:  # the judge's memory budget (`judge_worker`), not the test's logic
        raise
    except Exception as error:  # noqa: BLE001 - a TypeError of the test's logic is a failed test
        return False, f"raised {type(error).__name__}: {str(error)[:200]}"
    return passed, "passed" if passed else "failed"


def judge_report(plans, outcomes, rebinds, trust_unjudged_tests: bool) -> tuple[bool, str, int, int]:
    """(passed, reason, tests passed, tests counted on the child's word). For each test, `outcomes` holds
    `("values", {hole: tagged value})`, `("error", why)`, `("statement", True or why)` (a test run in the
    child, counted only with `trust_unjudged_tests`) or None (not run); `rebinds` the names of the test
    the solution rebound."""
    passed = unjudged = 0
    first_failure = None
    for index, (plan, outcome, rebound) in enumerate(zip(plans, outcomes, rebinds), start=1):
        kind, detail = outcome if isinstance(outcome, tuple) else (None, None)
        if plan.refused:
            ok, why = False, plan.unjudged_reason
        elif rebound:
            names = ", ".join(f"`{name}`" for name in rebound)
            ok, why = False, f"the solution rebinds {names}, which the test reads; they are the judge's"
        elif kind == "error":
            ok, why = False, str(detail)[:300]
        elif plan.skeleton is None:
            if not trust_unjudged_tests:
                ok, why = (
                    False,
                    (
                        f"cannot be judged outside the sandbox ({plan.unjudged_reason}); pass "
                        "trust_unjudged_tests=True to count the child's word for it"
                    ),
                )
            else:
                ok = kind == "statement" and detail is True
                why = "passed on the child's word" if ok else str(detail or "failed")[:300]
                unjudged += ok
        else:
            ok, why = judge_test(plan, detail)
        passed += ok
        if not ok and first_failure is None:
            why = why if why.startswith(("failed", "raised")) else "failed: " + why
            first_failure = f"test {index} {why}: {plan.source.strip()[:300]}"
    return (False, first_failure, passed, unjudged) if first_failure else (True, "passed", passed, unjudged)


# --------------------------------------------------------------------------------------------------
# Reading the child's report: bounded, and never recursive beyond MAX_REPORT_DEPTH
# --------------------------------------------------------------------------------------------------

MAX_REPORT_BYTES = 4 * 1024 * 1024
MAX_REPORT_DEPTH = 3 * MAX_DEPTH + 8  # a tagged level is up to 3 JSON levels (a dict's), plus the report
MAX_INTEGER_DIGITS = 4300  # Python's own limit for int <-> str conversion (values' integers travel in hex)
MAX_REPORT_BRACKETS = 4 * MAX_NODES  # a tagged value is at most a few lists
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: linear and fast
_LONG_NUMBER = re.compile(rb"\d{%d,}" % (MAX_INTEGER_DIGITS + 1))
_OPENERS = b"[{"
_CLOSERS = b"]}"


class MalformedReport(ValueError):
    """The child's report is not one bounded JSON document; the message says what is wrong."""


def parse_report(data: bytes):
    """The JSON document in `data`, or MalformedReport. Before `json.loads` (which recurses once per
    level of nesting) the bytes are checked with regular expressions and numpy, never recursion:
    at most MAX_REPORT_BYTES, nesting at most MAX_REPORT_DEPTH, no number of more than
    MAX_INTEGER_DIGITS digits, at most MAX_REPORT_BRACKETS lists. So a report nested 100,000 deep, or
    an integer of a million digits, is a malformed report in linear time, never a RecursionError or
    minutes of conversion, and what it parses into is a few tens of MiB at most."""
    if not isinstance(data, (bytes, bytearray)):
        raise MalformedReport(f"not bytes but {type(data).__name__}")
    if len(data) > MAX_REPORT_BYTES:
        raise MalformedReport(f"{len(data)} bytes, over the limit of {MAX_REPORT_BYTES}")
    without_strings = _JSON_STRING.sub(b'""', bytes(data))
    if _LONG_NUMBER.search(without_strings):
        raise MalformedReport(f"a number of more than {MAX_INTEGER_DIGITS} digits")
    if without_strings.count(b"[") + without_strings.count(b"{") > MAX_REPORT_BRACKETS:
        raise MalformedReport(f"more than {MAX_REPORT_BRACKETS} lists")
    brackets = np.frombuffer(
        without_strings.translate(None, bytes(set(range(256)) - set(_OPENERS + _CLOSERS))), dtype=np.uint8
    )
    if brackets.size:
        # int32 steps: the judge's memory budget (`judge_worker`) holds even for a report of 4 MiB of brackets
        steps = np.where((brackets == _OPENERS[0]) | (brackets == _OPENERS[1]), np.int32(1), np.int32(-1))
        depth = int(np.cumsum(steps, dtype=np.int32).max())
        if depth > MAX_REPORT_DEPTH:
            raise MalformedReport(f"nested {depth} deep, over the limit of {MAX_REPORT_DEPTH}")
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as error:
        raise MalformedReport(f"not JSON ({type(error).__name__}: {str(error)[:120]})") from None
