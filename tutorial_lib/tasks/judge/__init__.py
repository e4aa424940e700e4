"""Judging a generated solution outside the process that runs it: the contract.

A test such as MBPP's `assert second_largest([4, 1, 7, 7, 3]) == 4` mixes calls into the solution with the
test's own logic. If both ran in the solution's interpreter, the solution could change the verdict
(replace `builtins.exec`, rewrite the tests, return an object whose `__eq__` always says True, find the
expected values in its caller's frames or through `gc`). The judge keeps them apart by these clauses;
`tests/test_judge_contract.py` holds a test for each.

1. **Three parties.** The *parent* (this package) plans and judges. The *expected run* is a sandboxed
   interpreter holding the test's setup and the problem's prompt code, and no line of model-written code.
   The *solution run* is a sandboxed interpreter holding the prompt code and the solution's code, and
   nothing of the setup. Everything the solution run sends is untrusted; its only power is to claim values.
2. **Every name a test reads is bound on purpose** (`plans.Names`): the entry point, and any name nothing
   else provides, is the *solution's*, and the solution must define it: a missing one fails with "the
   solution does not define `max`", never falls back to a builtin. Names the setup or the prompt code
   binds (HumanEval's helpers such as `poly`) are the *benchmark's*: the expected run evaluates them.
   Builtins and standard-library modules are on both sides; the parent's own (`SAFE_FUNCTIONS`) are the
   judge's. A solution that rebinds a name the test reads that is not its own fails that test
   (`visible_rebindings` statically, the child's report at run time).
3. **The test is split by the parent** (`plans.plan_test`): the *skeleton* is what the parent evaluates
   itself (constants, operators, `SAFE_FUNCTIONS`); each other part is a *hole* evaluated by the side its
   head belongs to (a call's callee, an attribute's or a subscript's object). Inside a hole, a part headed
   by the other side's names is a hole of its own, so `find_zero(CASES[0][0])` hands the solution the
   value of `CASES[0][0]` alone, and `poly(xs, find_zero(xs))` evaluates `poly` in the expected run on
   the value the solution returned. Holes are evaluated in rounds, the expected side first
   (`sandbox.runner`).
4. **Only plain data crosses**, in both directions (`tutorial_lib.tasks.plain_data`): None, bool, int,
   float, complex, str, bytes, list, tuple, set, frozenset, dict; a subclass as the builtin value it
   holds. A value of any other kind cannot be handed to the other side, and the test that needs it fails
   saying so, with one exception: an object the setup binds by name and a solution's call takes
   (`order(xs, negate)`) reaches the solution run as the setup's lines that define it and nothing else
   (`plans.definitions_slice`), and the test is refused when those lines bind a name the expected side
   reads. Otherwise source text never crosses: the solution run receives the prompt code, its own code,
   the source of its own holes and the values handed to them; never the rest of the setup, the expected
   values, the skeleton or another hole's source.
5. **The verdict is the parent's**: the budgeted judge worker (`judge_worker`) decodes the values into
   builtin objects and evaluates the skeleton over them with its own bounded interpreter
   (`skeletons.evaluate_skeleton`), so no code of the solution runs during the verdict.
6. **A test that cannot be split is not judged**: not a single `assert`, or a comprehension or lambda
   over the solution's names (`assert all(f(i) == i * i for i in range(9))`), whose logic would run with
   the solution's code. It fails, unless `trust_unjudged_tests=True` counts the child's word for it (the
   setup then runs beside the solution; `SandboxResult.tests_unjudged` says how many). A test that never
   calls the entry point says nothing of the solution and fails whatever the options.
7. **The report is a claim of values.** The report descriptor is the solution run's, so code running
   there can write a report of its choosing; the parent reads one bounded JSON line (`parse_report`) and
   takes from it only the values of the holes it sent. Since the solution run never holds the expected
   side, a forged report passes only with values that satisfy the tests, which a solution could as well
   return (hard-coding answers shown in the prompt is something no test can tell from solving).
"""

from .plans import (
    EXPECTED,
    HOLE_PREFIX,
    SOLUTION,
    Hole,
    Names,
    TestPlan,
    bound_names,
    plan_test,
    plan_tests,
    visible_rebindings,
)
from .skeletons import SAFE_FUNCTIONS, SAFE_MATH, evaluate_skeleton
from .verdicts import MalformedReport, judge_report, judge_test, parse_report

__all__ = [
    "EXPECTED",
    "HOLE_PREFIX",
    "SOLUTION",
    "Hole",
    "Names",
    "TestPlan",
    "bound_names",
    "plan_test",
    "plan_tests",
    "visible_rebindings",
    "SAFE_FUNCTIONS",
    "SAFE_MATH",
    "evaluate_skeleton",
    "MalformedReport",
    "judge_report",
    "judge_test",
    "parse_report",
]
