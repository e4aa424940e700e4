"""Splitting a test: which parts of an assert are the solution's calls (the holes, evaluated in a
sandboxed run), which the expected side's, and the skeleton the parent evaluates over their values;
the names a test reads, and those a solution visibly rebinds."""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass, field

from .skeletons import SAFE_FUNCTIONS, SAFE_MATH

__all__ = [
    "TestPlan",
    "Names",
    "plan_test",
    "plan_tests",
    "setup_constants",
    "bound_names",
    "rebinding_names",
    "visible_rebindings",
    "HOLE_PREFIX",
    "SOLUTION",
    "EXPECTED",
]

HOLE_PREFIX = "__judge_hole_"
SOLUTION, EXPECTED = "solution", "expected"  # which sandboxed run evaluates a hole
_STDLIB_MODULES = frozenset(sys.stdlib_module_names)


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
            object.__setattr__(
                self,
                "reads",
                tuple(tuple(sorted(_read_names(ast.parse(hole, mode="eval")))) for hole in self.holes),
            )
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

_RECURSE = (
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.BinOp,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.Subscript,
    ast.Slice,
    ast.IfExp,
    ast.keyword,
)
_CHILD_LOGIC = (
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
)


def setup_constants(setup: str) -> dict:
    """Names the setup binds to literals, when the setup is nothing but such assignments; else {}.
    The parent uses them as the test's constants; any other setup runs only in the child."""
    try:
        tree = ast.parse(setup)
    except SyntaxError:
        return {}
    constants = {}
    for statement in tree.body:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
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
    return [
        sorted(
            rebound
            & ({*plan.judge_names} | {f"{module}.{attribute}" for module, attribute in plan.judge_attributes})
        )
        for plan in plans
    ]


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
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and isinstance(node.value, ast.Name)
        ):
            found.add(f"{node.value.id}.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant)
        ):
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
                    real = (
                        isinstance(inner, ast.Import)
                        and alias.asname in (None, top)
                        and "." not in alias.name
                        and top in _STDLIB_MODULES
                    )
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
        return (
            node.id in SAFE_FUNCTIONS
            and node.id not in names.constants
            and node.id not in names.setup
            and node.id not in names.entry
        )
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "math"
        and node.attr in SAFE_MATH
        and "math" not in names.entry
        and "math" not in names.setup
    )


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
        return name in names.entry or not (
            name in names.setup
            or name in names.constants
            or hasattr(builtins, name)
            or name in _STDLIB_MODULES
        )

    def _side(self, read: set) -> str:
        return SOLUTION if any(self.is_solutions(name) for name in read) else EXPECTED

    def _hole(self, node: ast.AST) -> ast.Name:
        for inner in ast.walk(node):
            if isinstance(inner, _CHILD_LOGIC) and not self.child_logic:
                self.child_logic = (
                    f"`{ast.unparse(node)}` holds a {type(inner).__name__}, which would run in the child"
                )
        read = _read_names(node)
        side = self._side(read)
        if side == SOLUTION and isinstance(node, ast.Call) and not self.child_logic:
            callee_read = _read_names(node.func)
            if callee_read and self._side(callee_read) == EXPECTED:
                # An expected-side function given the solution's value: it would run in the
                # solution's interpreter.
                self.child_logic = (
                    f"`{ast.unparse(node)}` applies `{ast.unparse(node.func)}` (not the solution's) to "
                    "the solution's value, which would run it in the solution's interpreter"
                )
        self.modules.update(
            name
            for name in read
            if name in _STDLIB_MODULES
            and not hasattr(builtins, name)
            and not self.is_solutions(name)
            and name not in self.names.setup
            and name not in self.names.constants
        )
        self.holes.append(ast.unparse(node))
        self.sides.append(side)
        self.reads.append(tuple(sorted(read)))
        return ast.copy_location(ast.Name(id=f"{HOLE_PREFIX}{len(self.holes) - 1}", ctx=ast.Load()), node)

    def visit(self, node):
        if isinstance(
            node, (ast.Constant, ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
        ):
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
            if (
                not _is_safe_callee(node.func, names)
                or any(isinstance(a, ast.Starred) for a in node.args)
                or any(k.arg is None for k in node.keywords)
            ):
                return self._hole(node)
            node.args = [self.visit(argument) for argument in node.args]
            node.keywords = [self.visit(keyword) for keyword in node.keywords]
            return node
        if isinstance(node, _RECURSE):
            return self.generic_visit(node)
        return self._hole(node)


def _judge_side_names(
    test: ast.AST, splitter: _Splitter
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The names and module attributes the test reads that are not the solution's."""
    names, attributes = set(), set()
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and not splitter.is_solutions(node.id):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in _STDLIB_MODULES
            and not splitter.is_solutions(node.value.id)
            and node.value.id not in splitter.names.setup
            and node.value.id not in splitter.names.constants
        ):
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
    solution_names = tuple(
        sorted(
            {
                name
                for read, side in zip(splitter.reads, splitter.sides)
                if side == SOLUTION
                for name in read
                if splitter.is_solutions(name)
            }
        )
    )
    entry_called = not names.entry or set(solution_names) & names.entry
    if not solution_names or not entry_called:
        wanted = " or ".join(f"`{name}`" for name in sorted(names.entry)) or "a function of the solution"
        return TestPlan(
            test, (), None, f"the test never calls {wanted}, so it says nothing of the solution", refused=True
        )
    skeleton = ast.fix_missing_locations(ast.Expression(body=expression))
    return TestPlan(
        test,
        tuple(splitter.holes),
        skeleton,
        sides=tuple(splitter.sides),
        modules=tuple(sorted(splitter.modules)),
        reads=tuple(splitter.reads),
        solution_names=solution_names,
        judge_names=judge_names,
        judge_attributes=judge_attributes,
    )


def plan_tests(
    tests: list[str], setup: str = "", code: str = "", entry_point: str | None = None
) -> tuple[list[TestPlan], dict]:
    """`plan_test` for each test, with the setup's literal constants known to the parent, the names a
    non-literal setup binds, and the solution's `entry_point` (a name the test must call; it may shadow
    a builtin, as MBPP's `max` problems do). `code` is not read: which side evaluates a hole never
    depends on what the solution binds (see `rebinding_names`)."""
    del code
    constants = setup_constants(setup)
    setup_names = frozenset() if constants or not setup.strip() else bound_names(setup)
    if entry_point is not None and not (isinstance(entry_point, str) and entry_point.isidentifier()):
        raise ValueError(f"entry_point must be the name of the solution's function, got {entry_point!r}")
    names = Names(
        constants=constants, setup=setup_names, entry=frozenset({entry_point} if entry_point else ())
    )
    return [plan_test(test, names) for test in tests], constants
