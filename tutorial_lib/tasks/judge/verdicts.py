"""From the child's report to a verdict: `parse_report` reads the report, bounded before it is
parsed, and `judge_test` decodes one test's values and evaluates its skeleton over them."""

from __future__ import annotations

import json
import re

import numpy as np

from ..plain_data import MAX_DEPTH, MAX_NODES, NotPlainData, decode_value
from .plans import HOLE_PREFIX, TestPlan
from .skeletons import evaluate_skeleton

__all__ = [
    "judge_test",
    "parse_report",
    "MalformedReport",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_DEPTH",
    "MAX_INTEGER_DIGITS",
]


def judge_test(plan: TestPlan, encoded_values: list, known: dict) -> tuple[bool, str]:
    """(passed, reason) of one test, given the child's tagged values for its holes."""
    if plan.skeleton is None:
        raise ValueError("judge_test needs a test that can be judged outside")
    if not isinstance(encoded_values, list) or len(encoded_values) != len(plan.holes):
        return (
            False,
            f"the report holds {len(encoded_values) if isinstance(encoded_values, list) else 'no'} "
            f"values for {len(plan.holes)} holes",
        )
    values = dict(known)
    budget = [MAX_NODES]
    try:
        for index, encoded in enumerate(encoded_values):
            values[f"{HOLE_PREFIX}{index}"] = decode_value(encoded, _budget=budget)
    except NotPlainData as error:
        return False, f"`{plan.holes[index]}` returned {error}"
    try:
        verdict = evaluate_skeleton(plan.skeleton, values)
        passed = bool(verdict)  # decoded values and the judge's own results are builtin objects
    except MemoryError:  # the judge's memory budget (`judge_worker`), not the test's logic
        raise
    except Exception as error:  # noqa: BLE001 - a TypeError of the test's logic is a failed test
        return False, f"raised {type(error).__name__}: {str(error)[:200]}"
    return passed, "passed" if passed else "failed"


# --------------------------------------------------------------------------------------------------
# Reading the child's report: bounded, and never recursive beyond MAX_REPORT_DEPTH
# --------------------------------------------------------------------------------------------------

MAX_REPORT_BYTES = 4 * 1024 * 1024
MAX_REPORT_DEPTH = MAX_DEPTH + 8  # a value nested MAX_DEPTH deep plus the report's own wrapping
MAX_INTEGER_DIGITS = 4300  # Python's own limit for int <-> str conversion
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
    MAX_INTEGER_DIGITS digits. So a report nested 100,000 deep, or an integer of a million digits,
    is a malformed report in linear time, never a RecursionError or minutes of conversion."""
    if not isinstance(data, (bytes, bytearray)):
        raise MalformedReport(f"not bytes but {type(data).__name__}")
    if len(data) > MAX_REPORT_BYTES:
        raise MalformedReport(f"{len(data)} bytes, over the limit of {MAX_REPORT_BYTES}")
    without_strings = _JSON_STRING.sub(b'""', bytes(data))
    if _LONG_NUMBER.search(without_strings):
        raise MalformedReport(f"a number of more than {MAX_INTEGER_DIGITS} digits")
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
