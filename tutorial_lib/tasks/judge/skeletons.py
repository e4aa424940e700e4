"""The parent's evaluator for skeletons: the test's own logic over constants, the decoded values of
its holes and a few pure builtins (`SAFE_FUNCTIONS`, `SAFE_MATH`), with the work bounded whatever the
values are."""

from __future__ import annotations

import ast
import builtins
import math
import operator

__all__ = [
    "evaluate_skeleton",
    "SAFE_FUNCTIONS",
    "SAFE_MATH",
    "MAX_SEQUENCE",
    "MAX_EXPONENT",
    "MAX_RESULT_BITS",
]

MAX_SEQUENCE = 10**6  # longest sequence the parent builds with * or +
MAX_EXPONENT = 10_000
MAX_RESULT_BITS = 1 << 20  # largest integer (in bits) the judge builds with ** or <<

# Pure functions of builtin data the parent may apply to decoded values (the test's own logic).
SAFE_FUNCTIONS = {
    name: getattr(builtins, name)
    for name in (
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "divmod",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "reversed",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "complex",
        "repr",
        "enumerate",
        "zip",
        "range",
    )
}
SAFE_MATH = {
    name: getattr(math, name)
    for name in (
        "isclose",
        "sqrt",
        "fabs",
        "floor",
        "ceil",
        "isnan",
        "isinf",
        "pi",
        "e",
        "inf",
        "nan",
        "trunc",
        "log",
        "exp",
    )
}


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _binary(kind, left, right):
    # The skeleton is the test's (trusted) text, but the operands may be the solution's values: keep
    # the parent's work bounded whatever they are.
    sequences = (str, bytes, list, tuple)
    if kind is ast.Mult and (isinstance(left, sequences) or isinstance(right, sequences)):
        sequence, count = (left, right) if isinstance(left, sequences) else (right, left)
        if isinstance(count, int) and len(sequence) * count > MAX_SEQUENCE:
            raise ValueError("sequence repetition too large for the judge")
    trivial_base = isinstance(left, int) and abs(left) <= 1
    # only an integer base grows without bound (0.5 ** 20000 is a float, cheap)
    if kind is ast.Pow and isinstance(left, int) and isinstance(right, int) and not trivial_base:
        if abs(right) > MAX_EXPONENT:
            raise ValueError("exponent too large for the judge")
        if isinstance(left, int) and left.bit_length() * right > MAX_RESULT_BITS:
            raise ValueError("power too large for the judge")
    if (
        kind is ast.LShift
        and isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right > MAX_RESULT_BITS
    ):
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
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "math"
        and node.attr in SAFE_MATH
    ):
        return SAFE_MATH[node.attr]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [evaluate_skeleton(element, values) for element in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("dict unpacking is not supported by the judge")
        return {
            evaluate_skeleton(k, values): evaluate_skeleton(v, values) for k, v in zip(node.keys, node.values)
        }
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](evaluate_skeleton(node.operand, values))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(
            type(node.op), evaluate_skeleton(node.left, values), evaluate_skeleton(node.right, values)
        )
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
        parts = [
            None if part is None else evaluate_skeleton(part, values)
            for part in (node.lower, node.upper, node.step)
        ]
        return slice(*parts)
    if isinstance(node, ast.Call):
        function = evaluate_skeleton(node.func, values)
        if function is range and any(
            isinstance(a, int) and abs(a) > MAX_SEQUENCE
            for a in (evaluate_skeleton(argument, values) for argument in node.args)
        ):
            raise ValueError("range too large for the judge")
        arguments = [evaluate_skeleton(argument, values) for argument in node.args]
        keywords = {keyword.arg: evaluate_skeleton(keyword.value, values) for keyword in node.keywords}
        return function(*arguments, **keywords)
    raise ValueError(f"the judge cannot evaluate {type(node).__name__}")
