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
from __future__ import annotations

import ast
import builtins
import json
import math
import operator
import re
import sys
from dataclasses import dataclass, field

import numpy as np

from .plain_data import MAX_DEPTH, MAX_NODES, NotPlainData, decode_value, encode_value  # noqa: F401 (re-exported)

HOLE_PREFIX = "__judge_hole_"
MAX_SEQUENCE = 10**6  # longest sequence the parent builds with * or +
MAX_EXPONENT = 10_000
MAX_RESULT_BITS = 1 << 20  # largest integer (in bits) the judge builds with ** or <<
SOLUTION, EXPECTED = "solution", "expected"  # which sandboxed run evaluates a hole
_STDLIB_MODULES = frozenset(sys.stdlib_module_names)

# Pure functions of builtin data the parent may apply to decoded values (the test's own logic).
SAFE_FUNCTIONS = {
    name: getattr(builtins, name)
    for name in ("abs", "all", "any", "bool", "dict", "divmod", "float", "frozenset", "int", "isinstance", "len",
                 "list", "max", "min", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "type",
                 "complex", "repr", "enumerate", "zip", "range")
}
SAFE_MATH = {name: getattr(math, name) for name in (
    "isclose", "sqrt", "fabs", "floor", "ceil", "isnan", "isinf", "pi", "e", "inf", "nan", "trunc", "log", "exp")}


@dataclass(frozen=True)
class TestPlan:
    """One test, split: `holes` (source text) for the child, `skeleton` for the parent."""

    source: str
    holes: tuple[str, ...]
    skeleton: ast.Expression | None  # None when the test cannot be judged outside
    unjudged_reason: str = ""  # why not, when skeleton is None
    sides: tuple[str, ...] = ()  # SOLUTION or EXPECTED for each hole (same order as `holes`)
    modules: tuple[str, ...] = ()  # standard-library modules the holes read (imported for them)
    reads: tuple[tuple[str, ...], ...] = ()  # the names each hole reads (all a hole's run receives)
    solution_names: tuple[str, ...] = ()  # the names of this test that are the solution's
    judge_names: tuple[str, ...] = ()  # names the test reads that are not the solution's
    judge_attributes: tuple[tuple[str, str], ...] = ()  # (module, attribute) pairs the test reads
    refused: bool = False  # a failure whatever the options (a test that never calls the solution)

    def __post_init__(self):
        if not self.sides and self.holes:  # a plan built by hand: every hole is the solution's
            object.__setattr__(self, "sides", (SOLUTION,) * len(self.holes))
        if not self.reads and self.holes:
            object.__setattr__(self, "reads", tuple(tuple(sorted(_read_names(ast.parse(hole, mode="eval"))))
                                                    for hole in self.holes))
            object.__setattr__(self, "solution_names", tuple(sorted({n for r in self.reads for n in r})))


@dataclass(frozen=True)
class Names:
    """Who provides which name a test reads: `constants` the parent knows (a literal-only setup),
    `setup` names a setup binds otherwise (a plain `import math` binds the real module and is not
    counted), `entry` the solution's entry points. Every other name is a builtin, a standard-library
    module, or, when none of these, the solution's. What the solution's source binds never changes
    this: a solution that rebinds a name the test reads fails (`rebinding_names`)."""

    constants: dict = field(default_factory=dict)
    setup: frozenset = frozenset()
    entry: frozenset = frozenset()


# --------------------------------------------------------------------------------------------------
# Splitting a test
# --------------------------------------------------------------------------------------------------

_RECURSE = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Tuple, ast.List, ast.Set, ast.Dict,
            ast.Subscript, ast.Slice, ast.IfExp, ast.keyword)
_CHILD_LOGIC = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.NamedExpr,
                ast.Await, ast.Yield, ast.YieldFrom)


def setup_constants(setup: str) -> dict:
    """Names the setup binds to literals, when the setup is nothing but such assignments; else {}.
    The parent uses them as the test's constants; any other setup runs only in the child."""
    try:
        tree = ast.parse(setup)
    except SyntaxError:
        return {}
    constants = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            return {}
        try:
            constants[statement.targets[0].id] = ast.literal_eval(statement.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return {}
    return constants


def bound_names(source: str) -> frozenset:
    """Every name `source` binds anywhere (definitions, assignments, loop and `with` targets, imports,
    `global` declarations), found without running it; {} for source that does not parse (it fails in
    the sandbox anyway). An `import sys`-style import of a standard-library module under its own name
    binds the real module and is left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if not (isinstance(node, ast.Import) and alias.asname is None and top in _STDLIB_MODULES):
                    names.add(alias.asname or top)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.MatchAs) and node.name:
            names.add(node.name)
    return frozenset(names)


def rebinding_names(source: str, plans: list["TestPlan"]) -> list[list[str]]:
    """For each plan, the names its test reads (not the solution's) that `source` visibly rebinds
    (`visible_rebindings`). What it rebinds at run time is reported by the child (`sandbox_child._Watch`);
    either fails the test with this list."""
    rebound = visible_rebindings(source)
    return [sorted(rebound & ({*plan.judge_names} | {f"{module}.{attribute}"
                                                     for module, attribute in plan.judge_attributes}))
            for plan in plans]


def visible_rebindings(source: str) -> frozenset:
    """What `source` rebinds at module level or through `global`: names (an assignment, definition or
    import under that name; a plain `import sys` binds the real module and is not counted) and
    `module.attribute`s (`sys.getsizeof = ...`, `setattr(sys, "getsizeof", ...)`). Found without running
    it, parsed once for all of a problem's tests; {} for source that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    declared_global = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                and isinstance(node.value, ast.Name):
            found.add(f"{node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) \
                and isinstance(node.args[1], ast.Constant):
            found.add(f"{node.args[0].id}.{node.args[1].value}")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in declared_global:
            found.add(node.id)
    for node in tree.body:
        for inner in _module_level_nodes(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
                found.add(inner.id)
            elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(inner.name)
            elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                for alias in inner.names:
                    top = alias.name.split(".")[0]
                    real = isinstance(inner, ast.Import) and alias.asname in (None, top) and "." not in alias.name \
                        and top in _STDLIB_MODULES
                    if not real:
                        found.add(alias.asname or top)
    return frozenset(found)


def _module_level_nodes(node: ast.AST):
    """`node` and what it holds, without entering function or class bodies (their names are local)."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _module_level_nodes(child)


def _is_safe_callee(node: ast.AST, names: Names) -> bool:
    if isinstance(node, ast.Name):
        return (node.id in SAFE_FUNCTIONS and node.id not in names.constants and node.id not in names.setup
                and node.id not in names.entry)
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math"
            and node.attr in SAFE_MATH and "math" not in names.entry and "math" not in names.setup)


def _read_names(node: ast.AST) -> set:
    return {inner.id for inner in ast.walk(node) if isinstance(inner, ast.Name)}


class _Splitter(ast.NodeTransformer):
    def __init__(self, names: Names):
        self.names = names
        self.holes: list[str] = []
        self.sides: list[str] = []
        self.reads: list[tuple[str, ...]] = []
        self.modules: set = set()
        self.child_logic = ""

    def is_solutions(self, name: str) -> bool:
        """An entry point, or a name no builtin, standard-library module or setup provides."""
        names = self.names
        return name in names.entry or not (name in names.setup or name in names.constants
                                           or hasattr(builtins, name) or name in _STDLIB_MODULES)

    def _side(self, read: set) -> str:
        return SOLUTION if any(self.is_solutions(name) for name in read) else EXPECTED

    def _hole(self, node: ast.AST) -> ast.Name:
        for inner in ast.walk(node):
            if isinstance(inner, _CHILD_LOGIC) and not self.child_logic:
                self.child_logic = f"`{ast.unparse(node)}` holds a {type(inner).__name__}, which would run in the child"
        read = _read_names(node)
        side = self._side(read)
        if side == SOLUTION and isinstance(node, ast.Call) and not self.child_logic:
            callee_read = _read_names(node.func)
            if callee_read and self._side(callee_read) == EXPECTED:
                # An expected-side function given the solution's value: it would run in the solution's interpreter.
                self.child_logic = (f"`{ast.unparse(node)}` applies `{ast.unparse(node.func)}` (not the solution's) to "
                                    "the solution's value, which would run it in the solution's interpreter")
        self.modules.update(name for name in read if name in _STDLIB_MODULES and not hasattr(builtins, name)
                            and not self.is_solutions(name) and name not in self.names.setup
                            and name not in self.names.constants)
        self.holes.append(ast.unparse(node))
        self.sides.append(side)
        self.reads.append(tuple(sorted(read)))
        return ast.copy_location(ast.Name(id=f"{HOLE_PREFIX}{len(self.holes) - 1}", ctx=ast.Load()), node)

    def visit(self, node):
        if isinstance(node, (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            return node
        names = self.names
        if isinstance(node, ast.Name):
            if node.id in names.constants:  # the setup runs after the solution: its literal wins
                return node
            if node.id in SAFE_FUNCTIONS and node.id not in names.entry and node.id not in names.setup:
                return node
            return self._hole(node)
        if isinstance(node, ast.Attribute):
            return node if _is_safe_callee(node, names) else self._hole(node)
        if isinstance(node, ast.Call):
            if not _is_safe_callee(node.func, names) or any(isinstance(a, ast.Starred) for a in node.args) \
                    or any(k.arg is None for k in node.keywords):
                return self._hole(node)
            node.args = [self.visit(argument) for argument in node.args]
            node.keywords = [self.visit(keyword) for keyword in node.keywords]
            return node
        if isinstance(node, _RECURSE):
            return self.generic_visit(node)
        return self._hole(node)


def _judge_side_names(test: ast.AST, splitter: _Splitter) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The names and module attributes the test reads that are not the solution's."""
    names, attributes = set(), set()
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and not splitter.is_solutions(node.id):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in _STDLIB_MODULES and not splitter.is_solutions(node.value.id) \
                and node.value.id not in splitter.names.setup and node.value.id not in splitter.names.constants:
            attributes.add((node.value.id, node.attr))
    return tuple(sorted(names)), tuple(sorted(attributes))


def plan_test(test: str, known: dict | Names | None = None) -> TestPlan:
    """Split one test (`assert <expression>`) into holes and a skeleton; see the module docstring.
    `known`: the setup's literal constants (a dict), or a `Names` from `plan_tests`."""
    names = known if isinstance(known, Names) else Names(constants={} if known is None else dict(known))
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError) as error:
        return TestPlan(test, (), None, f"syntax error: {getattr(error, 'msg', error)}")
    except (MemoryError, RecursionError):
        return TestPlan(test, (), None, "too deeply nested to parse")
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return TestPlan(test, (), None, "not a single `assert` statement")
    splitter = _Splitter(names)
    judge_names, judge_attributes = _judge_side_names(tree.body[0].test, splitter)
    expression = splitter.visit(tree.body[0].test)
    if splitter.child_logic:
        return TestPlan(test, (), None, splitter.child_logic)
    solution_names = tuple(sorted({name for read, side in zip(splitter.reads, splitter.sides) if side == SOLUTION
                                   for name in read if splitter.is_solutions(name)}))
    entry_called = not names.entry or set(solution_names) & names.entry
    if not solution_names or not entry_called:
        wanted = " or ".join(f"`{name}`" for name in sorted(names.entry)) or "a function of the solution"
        return TestPlan(test, (), None, f"the test never calls {wanted}, so it says nothing of the solution",
                        refused=True)
    skeleton = ast.fix_missing_locations(ast.Expression(body=expression))
    return TestPlan(test, tuple(splitter.holes), skeleton, sides=tuple(splitter.sides),
                    modules=tuple(sorted(splitter.modules)), reads=tuple(splitter.reads),
                    solution_names=solution_names, judge_names=judge_names, judge_attributes=judge_attributes)


def plan_tests(tests: list[str], setup: str = "", code: str = "",
               entry_point: str | None = None) -> tuple[list[TestPlan], dict]:
    """`plan_test` for each test, with the setup's literal constants known to the parent, the names a
    non-literal setup binds, and the solution's `entry_point` (a name the test must call; it may shadow
    a builtin, as MBPP's `max` problems do). `code` is not read: which side evaluates a hole never
    depends on what the solution binds (see `rebinding_names`)."""
    del code
    constants = setup_constants(setup)
    setup_names = frozenset() if constants or not setup.strip() else bound_names(setup)
    if entry_point is not None and not (isinstance(entry_point, str) and entry_point.isidentifier()):
        raise ValueError(f"entry_point must be the name of the solution's function, got {entry_point!r}")
    names = Names(constants=constants, setup=setup_names, entry=frozenset({entry_point} if entry_point else ()))
    return [plan_test(test, names) for test in tests], constants


# --------------------------------------------------------------------------------------------------
# The parent's evaluator for skeletons
# --------------------------------------------------------------------------------------------------

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b, ast.Is: operator.is_, ast.IsNot: operator.is_not}


def _binary(kind, left, right):
    # The skeleton is the test's (trusted) text, but the operands may be the solution's values: keep
    # the parent's work bounded whatever they are.
    sequences = (str, bytes, list, tuple)
    if kind is ast.Mult and (isinstance(left, sequences) or isinstance(right, sequences)):
        sequence, count = (left, right) if isinstance(left, sequences) else (right, left)
        if isinstance(count, int) and len(sequence) * count > MAX_SEQUENCE:
            raise ValueError("sequence repetition too large for the judge")
    trivial_base = isinstance(left, int) and abs(left) <= 1
    if kind is ast.Pow and isinstance(right, int) and not trivial_base:
        if abs(right) > MAX_EXPONENT:
            raise ValueError("exponent too large for the judge")
        if isinstance(left, int) and left.bit_length() * right > MAX_RESULT_BITS:
            raise ValueError("power too large for the judge")
    if kind is ast.LShift and isinstance(left, int) and isinstance(right, int) \
            and left.bit_length() + right > MAX_RESULT_BITS:
        raise ValueError("shift too large for the judge")
    return _BINARY[kind](left, right)


def evaluate_skeleton(node: ast.AST, values: dict):
    """Evaluate a skeleton expression over constants, `values` (hole name -> decoded value, setup
    constants) and `SAFE_FUNCTIONS` / `SAFE_MATH`. Raises ValueError on anything else."""
    if isinstance(node, ast.Expression):
        return evaluate_skeleton(node.body, values)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in values:
            return values[node.id]
        if node.id in SAFE_FUNCTIONS:
            return SAFE_FUNCTIONS[node.id]
        raise ValueError(f"name {node.id!r} is unknown to the judge")
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math" \
            and node.attr in SAFE_MATH:
        return SAFE_MATH[node.attr]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [evaluate_skeleton(element, values) for element in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("dict unpacking is not supported by the judge")
        return {evaluate_skeleton(k, values): evaluate_skeleton(v, values) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](evaluate_skeleton(node.operand, values))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(type(node.op), evaluate_skeleton(node.left, values), evaluate_skeleton(node.right, values))
    if isinstance(node, ast.BoolOp):
        result = None
        for operand in node.values:
            result = evaluate_skeleton(operand, values)
            if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = evaluate_skeleton(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = evaluate_skeleton(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        branch = node.body if evaluate_skeleton(node.test, values) else node.orelse
        return evaluate_skeleton(branch, values)
    if isinstance(node, ast.Subscript):
        return evaluate_skeleton(node.value, values)[evaluate_skeleton(node.slice, values)]
    if isinstance(node, ast.Slice):
        parts = [None if part is None else evaluate_skeleton(part, values)
                 for part in (node.lower, node.upper, node.step)]
        return slice(*parts)
    if isinstance(node, ast.Call):
        function = evaluate_skeleton(node.func, values)
        if function is range and any(isinstance(a, int) and abs(a) > MAX_SEQUENCE for a in
                                     (evaluate_skeleton(argument, values) for argument in node.args)):
            raise ValueError("range too large for the judge")
        arguments = [evaluate_skeleton(argument, values) for argument in node.args]
        keywords = {keyword.arg: evaluate_skeleton(keyword.value, values) for keyword in node.keywords}
        return function(*arguments, **keywords)
    raise ValueError(f"the judge cannot evaluate {type(node).__name__}")


def judge_test(plan: TestPlan, encoded_values: list, known: dict) -> tuple[bool, str]:
    """(passed, reason) of one test, given the child's tagged values for its holes."""
    if plan.skeleton is None:
        raise ValueError("judge_test needs a test that can be judged outside")
    if not isinstance(encoded_values, list) or len(encoded_values) != len(plan.holes):
        return False, f"the report holds {len(encoded_values) if isinstance(encoded_values, list) else 'no'} " \
                      f"values for {len(plan.holes)} holes"
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
    brackets = np.frombuffer(without_strings.translate(None, bytes(set(range(256)) - set(_OPENERS + _CLOSERS))),
                             dtype=np.uint8)
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
