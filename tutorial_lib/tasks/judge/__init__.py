"""Judging a generated solution outside the process that runs it.

A test such as MBPP's `assert second_largest([4, 1, 7, 7, 3]) == 4` mixes two things: calls into the
solution (`second_largest([4, 1, 7, 7, 3])`) and the test's own logic (`== 4`, `assert`). If both run
in the solution's interpreter, the solution can change the verdict: replace `builtins.exec`, rewrite
the tests through `sys._getframe`, return an object whose `__eq__` always says True, or write a
forged report and exit. So `plan_tests` splits every test with `ast`:

- the **holes**: the smallest subexpressions the parent cannot evaluate itself, that is calls into the
  solution and names it or the setup defines. Only their source text goes to the sandboxed child,
  which evaluates them in order and sends their values back as tagged plain data (`decode_value`:
  None, bool, int, float, complex, str, bytes, list, tuple, set, frozenset, dict). A value of any
  other type is "not plain data" and fails its test. An instance of a subclass of a builtin type is
  sent as the builtin value (so `collections.Counter` reads as a dict, and an `int` subclass whose
  `__eq__` lies reads as the plain int it holds: the lying method is never called);
- the **skeleton**: the rest of the assert, with each hole replaced by a placeholder name. The parent
  evaluates it (`evaluate_skeleton`) with a small interpreter of its own over constants, the decoded
  hole values and a few pure builtins (`sorted`, `set`, `len`, `abs`, `round`, `math.isclose`, ...).
  The expected value (`4`) never leaves the parent, and comparisons happen between builtin
  objects the parent built, so no code of the solution runs during the verdict.

Threat model, honestly: the child runs the solution, so everything it sends is untrusted; the parent
trusts only *values*. A solution that takes over the child can make the report claim any values it
likes (the channel is a pipe only the child holds, and a report must be one JSON document; a second
one, or garbage, fails the problem; a per-run nonce would not help, since the solution can read
the child's memory). Claiming values is the one power it has: a forged report passes exactly when
the claimed values satisfy the tests, which needs the expected answers, and a solution that knows
them can already return them (hard-coding answers shown in the prompt is something no test can tell
from solving). Printing, raising, exiting early, `SystemExit(0)`, lying `__eq__`, patching
`json` or the test list: none of it turns a failure into a pass.

Tests not of that form are the ones whose logic would have to run in the child: not a single
`assert` statement, or a hole that holds a comprehension or a lambda (`assert all(f(i) == i * i for i
in range(9))`: the iteration and the `==` run with the solution's code). The parent cannot verify
the child's word for those, so by default such a test fails with a reason saying so; with
`trust_unjudged_tests=True` (`tutorial_lib.tasks.sandbox.run_python`) the child runs it and the parent
counts the child's report (`SandboxResult.tests_unjudged` says how many were counted that way).

**The expected side never runs with the solution, whatever the solution binds.** Each hole is classed
by the names it reads (`TestPlan.sides`), from the test, the setup and the entry point alone: a hole
that reads the entry point (`plan_tests(..., entry_point=)`), or a name no builtin, standard-library
module or setup provides, is the *solution's* and is evaluated in the solution's sandbox, with only
the names it reads; one that reads only builtins, standard-library modules and the setup's names
(`sys.getsizeof((1, 2))`, `"abc".upper()`, a setup's `expected = f()`) is the *expected* side:
`tutorial_lib.tasks.sandbox` evaluates it in a second sandboxed run that holds the setup but not one
line of model-written code. The setup's values a solution's call receives are handed over as plain
data, so the setup's other names (`EXPECTED_1`) are nowhere in the solution's interpreter. The
judge's builtins (`max`, `set`, `math.isclose`, ...) are always its own, so a solution that defines
`set`, spells `'sorted'` into its globals or imports `sys as sys` changes nothing of the verdict; it
fails all the same, with a message naming what it rebound (`rebinding_names` statically, the child's
`_Watch` at run time). A test that never calls the entry point says nothing of the solution and fails
(`TestPlan.refused`), whatever the options. A test that applies an expected-side function to a
solution's value (`check(f(x))`, `re.match(p, f(x))`) would have to run that function in the
solution's interpreter, so it is unjudged (failed unless `trust_unjudged_tests=True`).
"""

from ..plain_data import (  # noqa: F401 (re-exported)
    MAX_DEPTH,
    MAX_NODES,
    NotPlainData,
    decode_value,
    encode_value,
)
from .plans import (  # noqa: F401 (re-exported)
    EXPECTED,
    HOLE_PREFIX,
    SOLUTION,
    Names,
    TestPlan,
    bound_names,
    plan_test,
    plan_tests,
    rebinding_names,
    setup_constants,
    visible_rebindings,
)
from .skeletons import (  # noqa: F401 (re-exported)
    MAX_EXPONENT,
    MAX_RESULT_BITS,
    MAX_SEQUENCE,
    SAFE_FUNCTIONS,
    SAFE_MATH,
    evaluate_skeleton,
)
from .verdicts import (  # noqa: F401 (re-exported)
    MAX_INTEGER_DIGITS,
    MAX_REPORT_BYTES,
    MAX_REPORT_DEPTH,
    MalformedReport,
    judge_test,
    parse_report,
)
