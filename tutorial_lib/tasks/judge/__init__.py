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
2. **Every name a test reads is bound on purpose** (`plans.Names`): the entry point is the *solution's*,
   and the solution must define it: a missing one fails with "the solution does not define `max`", never
   falls back to a builtin. Without an entry point, a name nothing else provides is the solution's too;
   beside one, such a name (`sqrt` that only the reference solution imported) refuses the test, since the
   solution would compute the expected side. Names the setup binds (star imports of the standard library
   included) and names the prompt code binds (HumanEval's helpers such as `poly`) are the *benchmark's*:
   the expected run evaluates them. Builtins and standard-library modules are on both sides; the
   parent's own (`SAFE_FUNCTIONS`) are the judge's. A solution that rebinds a builtin, a module's
   attribute or a prompt helper the test reads fails that test (`visible_rebindings` statically, the
   child's report at run time); its own copy of a setup name is inert and allowed.
3. **The test is split by the parent** (`plans.plan_test`): the *skeleton* is what the parent evaluates
   itself (constants, operators, `SAFE_FUNCTIONS`); every other part is a *hole*. A solution's hole is as
   small as it can be: one of its names, or a call of its function or of a method of its object (`f(x)`,
   `obj.method(x)`). Everything around it is the expected side's, evaluated on the plain value it
   returned: a method the test calls on that value (`f(x).startswith("a")`), a builtin or
   standard-library function applied to it (`re.fullmatch(p, f(x))`, `(lambda v: v == 3)(f(1))`), a
   helper of the prompt (`poly(xs, find_zero(xs))`). So no comparison of the test ever runs on the
   solution's object. Only where that value is not plain data (`Solution().solve(3)`) does the solution's
   run apply the test's method to its own object, and never a dunder (`f(x).__eq__(3)`). An expected hole
   is as large as it can be, and any part of a solution's call that reads the setup's or the prompt's
   names is an expected hole of its own, so `find_zero(CASES[0][0])` hands the solution the value of
   `CASES[0][0]` alone. Holes are evaluated in rounds, the expected side first (`sandbox.runner`).
4. **Only plain data crosses**, in both directions (`tutorial_lib.tasks.plain_data`): None, bool, int,
   float, complex, str, bytes, list, tuple, set, frozenset, dict, OrderedDict, range, a dict's views and
   an iterator's items (a generator crosses as an iterator, so `list(f(x))` is judged and `f(x) == [...]`
   is False, as in Python); a subclass as the builtin value it holds. A value of the expected side that is
   not plain data (a `re.Match`) reaches the parent as an `Opaque`: its type and truth, enough for `is not
   None` and `assert`. A solution's value that is not plain data cannot be handed over, and the test that
   needs it fails saying so. One exception: an object the setup binds by name and a solution's call takes
   (`order(xs, negate)`, `max_height(root)`) reaches the solution run as the setup's module-level lines
   that define or change it and nothing else (`plans.definitions_slice`), and the test is refused when
   those lines bind a name on which the expected side depends. Otherwise source text never crosses: the
   solution run receives the prompt code, its own code, the source of its own holes and the values handed
   to them; never the rest of the setup, the expected values, the skeleton or another hole's source.
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
