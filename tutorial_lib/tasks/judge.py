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

**The expected side never runs with the solution.** Each hole is classed by the names it reads
(`TestPlan.sides`): a hole that reads a name the solution binds (found statically in its source:
definitions, assignments, imports under another name, and any string constant spelling a name,
which covers `globals()["max"] = ...`), or a name nobody is known to bind, is the *solution's* and
is evaluated in the solution's sandbox. A hole that reads only builtins, standard-library modules
and names the setup binds (`sys.getsizeof((1, 2))`, `"abc".upper()`, a setup's `expected = f()`)
is the *expected* side: `tutorial_lib.tasks.sandbox` evaluates it in a second sandboxed run that holds
the setup but not one line of model-written code, so patching `sys.getsizeof` or the setup's
helpers in the solution's interpreter changes nothing. A builtin the judge would apply itself
(`max`, `sorted`, ...) but that the solution rebinds is a hole of the solution's, never the
judge's builtin. A test that applies an expected-side function to a solution's value
(`check(f(x))`, `re.match(p, f(x))`) would have to run that function in the solution's
interpreter, so it is unjudged (failed unless `trust_unjudged_tests=True`).
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

HOLE_PREFIX = "__judge_hole_"
MAX_DEPTH = 64  # nesting of a decoded value
MAX_NODES = 200_000  # items in all decoded values of one run
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
    modules: tuple[str, ...] = ()  # standard-library modules the expected holes read (imported for them)

    def __post_init__(self):
        if not self.sides and self.holes:  # a plan built by hand: every hole is the solution's
            object.__setattr__(self, "sides", (SOLUTION,) * len(self.holes))


@dataclass(frozen=True)
class Names:
    """Who binds which name: `constants` the parent knows (a literal-only setup), `setup` names a
    setup binds otherwise, `solution` names the solution's source binds (or spells as a string)."""

    constants: dict = field(default_factory=dict)
    setup: frozenset = frozenset()
    solution: frozenset = frozenset()


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


def bound_names(source: str, *, count_plain_stdlib_imports: bool = True) -> frozenset:
    """Every name `source` binds anywhere (definitions, assignments, loop and `with` targets, imports,
    `global` declarations), and every string constant that is a valid identifier (a name bound
    through `globals()[...]` or `setattr`). Found without running it; {} for source that does not
    parse (it fails in the sandbox anyway). `count_plain_stdlib_imports=False` leaves out `import sys`
    style imports of a standard-library module under its own name, which bind the real module."""
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
                plain = (isinstance(node, ast.Import) and alias.asname is None and top in _STDLIB_MODULES)
                if count_plain_stdlib_imports or not plain:
                    names.add(alias.asname or top)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.arg):
            continue
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
        elif isinstance(node, ast.MatchAs) and node.name:
            names.add(node.name)
    return frozenset(names)


def _is_safe_callee(node: ast.AST, names: Names) -> bool:
    if isinstance(node, ast.Name):
        return (node.id in SAFE_FUNCTIONS and node.id not in names.constants and node.id not in names.setup
                and node.id not in names.solution)
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math"
            and node.attr in SAFE_MATH and "math" not in names.solution and "math" not in names.setup)


def _read_names(node: ast.AST) -> set:
    return {inner.id for inner in ast.walk(node) if isinstance(inner, ast.Name)}


class _Splitter(ast.NodeTransformer):
    def __init__(self, names: Names):
        self.names = names
        self.holes: list[str] = []
        self.sides: list[str] = []
        self.modules: set = set()
        self.child_logic = ""

    def _side(self, read: set) -> str:
        """EXPECTED when every name read is a builtin, a standard-library module or the setup's, and
        none is the solution's; else SOLUTION (a name nobody is known to bind is the solution's)."""
        names = self.names
        for name in read:
            if name in names.solution:
                return SOLUTION
            if not (name in names.setup or name in names.constants or hasattr(builtins, name)
                    or name in _STDLIB_MODULES):
                return SOLUTION
        return EXPECTED

    def _hole(self, node: ast.AST) -> ast.Name:
        for inner in ast.walk(node):
            if isinstance(inner, _CHILD_LOGIC) and not self.child_logic:
                self.child_logic = f"`{ast.unparse(node)}` holds a {type(inner).__name__}, which would run in the child"
        read = _read_names(node)
        side = self._side(read)
        if side == SOLUTION and isinstance(node, ast.Call) and not self.child_logic:
            callee_read = _read_names(node.func)
            if callee_read and self._side(callee_read) == EXPECTED and not (callee_read & self.names.solution):
                # An expected-side function given the solution's value: it would run in the solution's interpreter.
                self.child_logic = (f"`{ast.unparse(node)}` applies `{ast.unparse(node.func)}` (not the solution's) to "
                                    "the solution's value, which would run it in the solution's interpreter")
        if side == EXPECTED:
            self.modules.update(name for name in read if name in _STDLIB_MODULES and not hasattr(builtins, name)
                                and name not in self.names.setup and name not in self.names.constants)
        self.holes.append(ast.unparse(node))
        self.sides.append(side)
        return ast.copy_location(ast.Name(id=f"{HOLE_PREFIX}{len(self.holes) - 1}", ctx=ast.Load()), node)

    def visit(self, node):
        if isinstance(node, (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)):
            return node
        names = self.names
        if isinstance(node, ast.Name):
            if node.id in names.constants:  # the setup runs after the solution: its literal wins
                return node
            if node.id in SAFE_FUNCTIONS and node.id not in names.solution and node.id not in names.setup:
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
    expression = splitter.visit(tree.body[0].test)
    if splitter.child_logic:
        return TestPlan(test, (), None, splitter.child_logic)
    skeleton = ast.fix_missing_locations(ast.Expression(body=expression))
    return TestPlan(test, tuple(splitter.holes), skeleton, sides=tuple(splitter.sides),
                    modules=tuple(sorted(splitter.modules)))


def plan_tests(tests: list[str], setup: str = "", code: str = "") -> tuple[list[TestPlan], dict]:
    """`plan_test` for each test, with the setup's literal constants known to the parent and the
    names `code` (the solution) and a non-literal setup bind told apart (see the module docstring)."""
    constants = setup_constants(setup)
    setup_names = frozenset() if constants or not setup.strip() else bound_names(setup)
    names = Names(constants=constants, setup=setup_names,
                  solution=bound_names(code, count_plain_stdlib_imports=False))
    return [plan_test(test, names) for test in tests], constants


# --------------------------------------------------------------------------------------------------
# Decoding the child's values: tagged JSON -> builtin objects, nothing else
# --------------------------------------------------------------------------------------------------

class NotPlainData(ValueError):
    """The child sent something that is not a tagged plain value."""


def decode_value(data, _depth: int = 0, _budget: list | None = None):
    """The builtin object a tagged value stands for: `["N"]`, `["b", bool]`, `["i", "digits"]`,
    `["f", "repr"]`, `["c", ["re", "im"]]`, `["s", str]`, `["y", "hex"]`, `["l" | "t" | "S" | "F", [...]]`,
    `["d", [[key, value], ...]]`. Raises NotPlainData for anything else (the child's tag for an object
    that is not plain data is `["x", "type name"]`)."""
    budget = [MAX_NODES] if _budget is None else _budget
    budget[0] -= 1
    if budget[0] < 0 or _depth > MAX_DEPTH:
        raise NotPlainData("value too large or too deeply nested")
    if not (isinstance(data, list) and data and isinstance(data[0], str)):
        raise NotPlainData(f"malformed value {str(data)[:80]}")
    tag, payload = data[0], (data[1] if len(data) == 2 else None)
    try:
        if tag == "N" and len(data) == 1:
            return None
        if tag == "b" and isinstance(payload, bool):
            return payload
        if tag == "i" and isinstance(payload, str) and payload.lstrip("-").isdigit():
            return int(payload)  # Python refuses over 4300 digits: ValueError, a failure
        if tag == "f" and isinstance(payload, str):
            return float(payload)
        if tag == "c" and isinstance(payload, list) and len(payload) == 2:
            return complex(float(payload[0]), float(payload[1]))
        if tag == "s" and isinstance(payload, str):
            return payload
        if tag == "y" and isinstance(payload, str):
            return bytes.fromhex(payload)
        if tag in ("l", "t", "S", "F") and isinstance(payload, list):
            items = [decode_value(item, _depth + 1, budget) for item in payload]
            return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "d" and isinstance(payload, list):
            pairs = []
            for pair in payload:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise NotPlainData("malformed dict item")
                pairs.append((decode_value(pair[0], _depth + 1, budget), decode_value(pair[1], _depth + 1, budget)))
            return dict(pairs)
        if tag == "x":
            raise NotPlainData(f"a {str(payload)[:80]} object is not plain data")
    except (TypeError, ValueError, OverflowError) as error:  # unhashable set member, bad float text, ...
        if isinstance(error, NotPlainData):
            raise
        raise NotPlainData(f"malformed value: {error}") from None
    raise NotPlainData(f"malformed value with tag {tag!r}")


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
        steps = np.where((brackets == _OPENERS[0]) | (brackets == _OPENERS[1]), 1, -1)
        depth = int(np.cumsum(steps).max())
        if depth > MAX_REPORT_DEPTH:
            raise MalformedReport(f"nested {depth} deep, over the limit of {MAX_REPORT_DEPTH}")
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as error:
        raise MalformedReport(f"not JSON ({type(error).__name__}: {str(error)[:120]})") from None
