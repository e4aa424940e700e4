"""Splitting a test: which name of an assert is whose, which parts each side evaluates (the holes), and the
skeleton the parent evaluates over their values; the names a solution visibly rebinds."""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass

from .skeletons import SAFE_FUNCTIONS, SAFE_MATH

__all__ = [
    "Hole",
    "TestPlan",
    "Names",
    "plan_test",
    "plan_tests",
    "bound_names",
    "definitions_slice",
    "visible_rebindings",
    "HOLE_PREFIX",
    "SOLUTION",
    "EXPECTED",
]

HOLE_PREFIX = "__judge_hole_"
SOLUTION, EXPECTED = "solution", "expected"  # which sandboxed run evaluates a hole
_STDLIB_MODULES = frozenset(sys.stdlib_module_names)
_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)
_NEVER = (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)
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


@dataclass(frozen=True)
class Names:
    """Who binds each name a test reads. `entry`: the solution's entry points; `setup` and `prompt`: the
    names the test's setup and the problem's prompt code bind (the expected side's; the prompt's are also
    the solution's to call, and it may not rebind them). A name that none of these, a builtin nor a
    standard-library module provides is the solution's as well (a test that reads one beside a given
    entry point is refused). What the solution's source binds never changes this."""

    entry: frozenset = frozenset()
    setup: frozenset = frozenset()
    prompt: frozenset = frozenset()

    def side(self, name: str) -> str | None:
        """SOLUTION, EXPECTED, or None for a builtin or standard-library module (present on both sides)."""
        if name in self.entry:
            return SOLUTION
        if name in self.setup or name in self.prompt:
            return EXPECTED
        if name.startswith(HOLE_PREFIX) or hasattr(builtins, name) or name in _STDLIB_MODULES:
            return None
        return SOLUTION


@dataclass(frozen=True)
class Hole:
    """One part of a test evaluated in a sandboxed run: `source` reads `reads` (with `solution_names`, the
    names the solution must define) and the values of the holes `needs` (as `HOLE_PREFIX<i>`)."""

    side: str
    source: str
    reads: tuple[str, ...]
    solution_names: tuple[str, ...]
    needs: tuple[int, ...]
    # an expected hole applied to the value of the solution's hole `needs[0]` (`f(x).count(1)`): where
    # that value is not plain data, the solution's run applies it to its own object instead
    on_solution_value: bool = False


@dataclass(frozen=True)
class TestPlan:
    """One test, split: `holes` for the sandboxed runs, `skeleton` (over the holes `top`) for the parent."""

    source: str
    holes: tuple[Hole, ...] = ()
    skeleton: ast.Expression | None = None  # None when the test cannot be judged outside
    unjudged_reason: str = ""  # why not, when skeleton is None
    refused: bool = False  # a failure whatever the options (a test that never calls the solution)
    top: tuple[int, ...] = ()  # the holes the skeleton reads
    judge_names: tuple[str, ...] = ()  # names the test reads that are not the solution's
    judge_attributes: tuple[tuple[str, str], ...] = ()  # (module, attribute) pairs the test reads


# --------------------------------------------------------------------------------------------------
# Splitting a test
# --------------------------------------------------------------------------------------------------


def free_names(node: ast.AST) -> set:
    """The names `node` reads that it does not bind itself (a comprehension's or lambda's own variables)."""
    read, bound = set(), set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            (read if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
    return read - bound


def _is_safe_callee(node: ast.AST, names: Names) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SAFE_FUNCTIONS and names.side(node.id) is None
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "math"
        and node.attr in SAFE_MATH
        and names.side("math") is None
    )


class _Splitter:
    """The parent keeps what it can evaluate itself (constants, operators, `SAFE_FUNCTIONS`). Every other
    part is a hole. A solution's hole is as small as it can be: one of its names, or a call of one of its
    functions or of a method of one of its objects (`f(x)`, `obj.method(x)`); everything around it (a
    method called on its value, a builtin or standard-library function applied to it, a comparison inside
    a call) is the expected side's, evaluated on the plain value it returned. An expected hole is as
    large as it can be, and a part of a solution's call that reads the expected side's names is an
    expected hole of its own, so each side receives only the *values* of the other's."""

    def __init__(self, names: Names):
        self.names = names
        self.holes: list[Hole] = []
        self.unjudged = ""

    def sides(self, node: ast.AST) -> set:
        return {self.names.side(name) for name in free_names(node)} - {None}

    def home(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.names.side(node.id)
        if isinstance(node, ast.Call):
            return self.home(node.func)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self.home(node.value)
        if isinstance(node, _SCOPES):
            sides = self.sides(node)
            if SOLUTION in sides:
                self.unjudged = self.unjudged or (
                    f"`{ast.unparse(node)}` holds a {type(node).__name__} over the solution's names, whose "
                    "logic would run with the solution's code"
                )
            return EXPECTED if EXPECTED in sides else None
        return None

    def solutions_own(self, node: ast.AST) -> bool:
        """A name of the solution's, or a call of its function or of a method of its object."""
        solution = lambda n: isinstance(n, ast.Name) and self.names.side(n.id) == SOLUTION  # noqa: E731
        if isinstance(node, ast.Call):
            node = node.func
        return solution(node) or isinstance(node, ast.Attribute) and solution(node.value)

    def parent(self, node: ast.AST) -> ast.AST:
        """The skeleton: what the parent evaluates, with a hole for every other part."""
        if isinstance(node, _NEVER):
            self.unjudged = self.unjudged or f"`{ast.unparse(node)}` is a {type(node).__name__}"
        if isinstance(node, ast.Constant):
            return node
        if isinstance(node, (ast.Name, ast.Attribute)) and _is_safe_callee(node, self.names):
            return node
        if isinstance(node, ast.Call) and _is_safe_callee(node.func, self.names):
            if not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
                node.args = [self.parent(argument) for argument in node.args]
                node.keywords = [self.parent(keyword) for keyword in node.keywords]
                return node
        if isinstance(node, _RECURSE):
            parts = (ast.expr, ast.keyword)
            for field, value in ast.iter_fields(node):
                if isinstance(value, parts):
                    setattr(node, field, self.parent(value))
                elif isinstance(value, list):
                    setattr(node, field, [self.parent(v) if isinstance(v, parts) else v for v in value])
            return node
        return self.hole(node, SOLUTION if self.solutions_own(node) else EXPECTED)

    def inside(self, node: ast.AST, side: str) -> ast.AST:
        """`node` as `side` evaluates it: the other side's parts become holes."""
        if isinstance(node, _NEVER):
            self.unjudged = self.unjudged or f"`{ast.unparse(node)}` is a {type(node).__name__}"
        if side == SOLUTION and isinstance(node, ast.expr) and self.sides(node) == {EXPECTED}:
            return self.hole(node, EXPECTED)  # `f(CASES[0][0])`, `f(len(CASES))`: only the value crosses
        if side == EXPECTED and self.home(node) == SOLUTION:
            return self.hole(node, SOLUTION if self.solutions_own(node) else EXPECTED)
        if side == SOLUTION and self.home(node) == EXPECTED:
            return self.hole(node, EXPECTED)
        if isinstance(node, _SCOPES):
            return node
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self.inside(value, side))
            elif isinstance(value, list):
                setattr(node, field, [self.inside(v, side) if isinstance(v, ast.AST) else v for v in value])
            elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                self.inside(value, side)
        return node

    def on_solutions_value(self, node: ast.AST) -> ast.AST:
        """`node` (a method call, attribute or item of a solution's value) for the expected side: its
        head down to the solution's own part, which becomes a hole; its arguments as the expected side's."""
        if self.solutions_own(node):
            return self.hole(node, SOLUTION)
        if isinstance(node, ast.Call):
            node.func = self.on_solutions_value(node.func)
            node.args = [self.inside(argument, EXPECTED) for argument in node.args]
            node.keywords = [self.inside(keyword, EXPECTED) for keyword in node.keywords]
        elif isinstance(node, ast.Attribute):
            node.value = self.on_solutions_value(node.value)
        elif isinstance(node, ast.Subscript):
            node.value = self.on_solutions_value(node.value)
            node.slice = self.inside(node.slice, EXPECTED)
        return node

    def hole(self, node: ast.AST, side: str) -> ast.Name:
        before = len(self.holes)
        if side == EXPECTED and self.home(node) == SOLUTION:
            # `f(x).count(1)`, `g(x)[0]`: the solution's value alone is the solution's hole
            node, on_value = self.on_solutions_value(node), True
        else:
            node, on_value = self.inside(node, side), False
        needs = tuple(range(before, len(self.holes)))
        needs = tuple(i for i in needs if not any(i in self.holes[j].needs for j in needs))
        reads = tuple(sorted(name for name in free_names(node) if not name.startswith(HOLE_PREFIX)))
        mine = tuple(name for name in reads if self.names.side(name) == SOLUTION)
        hole = Hole(side, ast.unparse(node), reads, mine if side == SOLUTION else (), needs, on_value)
        self.holes.append(hole)
        return ast.Name(id=f"{HOLE_PREFIX}{len(self.holes) - 1}", ctx=ast.Load())


def _judge_side_names(test: ast.AST, names: Names) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The names and standard-library module attributes the test reads that the solution may not rebind:
    builtins, modules and the prompt code's (`visible_rebindings`, the child's runtime check)."""
    found, attributes = set(), set()
    for node in ast.walk(test):
        if isinstance(node, ast.Name) and names.side(node.id) != SOLUTION and node.id not in names.setup:
            found.add(node.id)  # the setup's names are the expected run's alone: a solution's copy is inert
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in _STDLIB_MODULES
            and names.side(node.value.id) is None
        ):
            attributes.add((node.value.id, node.attr))
    return tuple(sorted(found)), tuple(sorted(attributes))


def plan_test(test: str, names: Names | None = None) -> TestPlan:
    """Split one test (`assert <expression>`) into holes and a skeleton (see `tutorial_lib.tasks.judge`)."""
    names = names or Names()
    try:
        tree = ast.parse(test)
    except (SyntaxError, ValueError) as error:
        return TestPlan(test, unjudged_reason=f"syntax error: {getattr(error, 'msg', error)}")
    except (MemoryError, RecursionError):
        return TestPlan(test, unjudged_reason="too deeply nested to parse")
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return TestPlan(test, unjudged_reason="not a single `assert` statement")
    judge_names, judge_attributes = _judge_side_names(tree.body[0].test, names)
    splitter = _Splitter(names)
    expression = splitter.parent(tree.body[0].test)
    if splitter.unjudged:
        return TestPlan(test, unjudged_reason=splitter.unjudged)
    called = {name for hole in splitter.holes for name in hole.solution_names}
    if names.entry and called - names.entry:
        unknown = ", ".join(f"`{name}`" for name in sorted(called - names.entry))
        reason = (
            f"the test reads {unknown}, which neither its setup nor the prompt code binds; with the entry "
            f"point `{min(names.entry)}` given, only it is the solution's"
        )
        return TestPlan(test, unjudged_reason=reason, refused=True)
    if not called or (names.entry and not called & names.entry):
        wanted = " or ".join(f"`{name}`" for name in sorted(names.entry)) or "a function of the solution"
        reason = f"the test never calls {wanted}, so it says nothing of the solution"
        return TestPlan(test, unjudged_reason=reason, refused=True)
    skeleton = ast.fix_missing_locations(ast.Expression(body=expression))
    top = tuple(
        int(n.id[len(HOLE_PREFIX) :])
        for n in ast.walk(skeleton)
        if isinstance(n, ast.Name) and n.id.startswith(HOLE_PREFIX)
    )
    return TestPlan(
        test,
        tuple(splitter.holes),
        skeleton,
        top=tuple(sorted(set(top))),
        judge_names=judge_names,
        judge_attributes=judge_attributes,
    )


def plan_tests(
    tests: list[str], setup: str = "", entry_point: str | None = None, prompt_code: str = ""
) -> list[TestPlan]:
    """`plan_test` for each test: the names `setup` and `prompt_code` bind are the expected side's, the
    `entry_point` (a name the test must call; it may shadow a builtin, as MBPP's `max` problems do) and
    every name nothing else provides are the solution's."""
    if entry_point is not None and not (isinstance(entry_point, str) and entry_point.isidentifier()):
        raise ValueError(f"entry_point must be the name of the solution's function, got {entry_point!r}")
    names = Names(
        entry=frozenset({entry_point} if entry_point else ()),
        setup=bound_names(setup, module_level=True) - {entry_point},
        prompt=bound_names(prompt_code, module_level=True) - {entry_point},
    )
    return [plan_test(test, names) for test in tests]


# --------------------------------------------------------------------------------------------------
# What a source binds
# --------------------------------------------------------------------------------------------------


def _binds_real_module(node: ast.AST, alias: ast.alias) -> bool:
    """`import sys` or `import collections.abc`: the real standard-library module under its own name."""
    return (
        isinstance(node, ast.Import) and alias.asname is None and alias.name.split(".")[0] in _STDLIB_MODULES
    )


def _star_names(module: str | None) -> set:
    """The names `from module import *` binds, for a standard-library module (imported here to read
    them); none for another, which the sandbox could not import anyway."""
    if not module or module.split(".")[0] not in _STDLIB_MODULES or module in ("antigravity", "this"):
        return set()  # (those two act when imported)
    import importlib

    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return set()
    public = getattr(loaded, "__all__", None)
    return set(public) if public is not None else {n for n in vars(loaded) if not n.startswith("_")}


def bound_names(source: str, *, module_level: bool = False) -> frozenset:
    """The names `source` binds (definitions, assignments, loop and `with` targets, imports, `global`
    declarations), found without running it; with `module_level`, only those bound outside function and
    class bodies or declared `global`. An import of a standard-library module under its own name binds the
    real module and is left out. {} for source that does not parse (it fails in the sandbox anyway)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    declared = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
    nodes = ast.walk(tree) if not module_level else (n for top in tree.body for n in _module_level_nodes(top))
    names = set(declared)
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            names.update(_star_names(node.module))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if not _binds_real_module(node, alias)
            )
        elif isinstance(node, ast.MatchAs) and node.name:
            names.add(node.name)
    return frozenset(names)


def definitions_slice(setup: str, names: set) -> tuple[str, frozenset]:
    """(source, names it binds) of the setup's top-level statements that bind `names`, with those that bind
    the names they read in turn: what the solution's run needs to hand the solution a function or an
    object of the setup that is not plain data, and nothing else of the setup."""
    statements = ast.parse(setup).body
    wanted, chosen = set(names), set()

    def binds(node):
        """Names the statement binds or changes at module level (`root.left = Node(2)`, `xs.append(1)`
        change `root` and `xs`), never a function's or a class's own locals."""
        found = set()
        for inner in _module_level_nodes(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                found.add(inner.id)
            elif isinstance(inner, (ast.Attribute, ast.Subscript)) and isinstance(inner.ctx, ast.Store):
                found.add(_root_name(inner))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            found.add(_root_name(node.value.func))
        return found - {None}

    while True:
        new = {i for i, node in enumerate(statements) if i not in chosen and binds(node) & wanted}
        if not new:
            break
        chosen |= new
        wanted |= {name for i in new for name in free_names(statements[i])}
    source = "\n".join(ast.unparse(statements[i]) for i in sorted(chosen))
    return source, frozenset(name for i in chosen for name in binds(statements[i]))


def _root_name(node: ast.AST) -> str | None:
    """`root` of `root.left.right` or `xs[0]` or `xs.append`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def visible_rebindings(source: str) -> frozenset:
    """What `source` rebinds at module level or through `global`: names (`bound_names(module_level=True)`)
    and `module.attribute`s (`sys.getsizeof = ...`, `setattr(sys, "getsizeof", ...)`), found without
    running it. The child reports what it rebinds at run time as well."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    found = set(bound_names(source, module_level=True))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
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
    return frozenset(found)


def _module_level_nodes(node: ast.AST):
    """`node` and what it holds, without entering function or class bodies (their names are local)."""
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _module_level_nodes(child)
