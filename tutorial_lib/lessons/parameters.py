"""A notebook's parameters checked before anything runs: `check_parameters(globals(), kinds)`.

Each notebook calls it right after its `parameters` cell, so a value papermill (`-p`, `-y`) or a student
sets is read as the kind the notebook expects, or refused with a message that names the parameter, the
value and how to pass it; no cell runs on a value of the wrong kind or size.
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import re
from typing import Any, Mapping, MutableMapping

import numpy as np

__all__ = [
    "check_parameters",
    "NotebookParameterError",
    "PARAMETER_KINDS",
    "MAX_TEXT_CHARS",
    "MAX_LIST_ITEMS",
]

#: The kinds `check_parameters` knows: a base kind, optionally a minimum (`int>=1`, `float>0`), a
#: maximum (`int>=1<=20000`) and `|None` where None is allowed (`list[float]|None`).
PARAMETER_KINDS = ("int", "float", "str", "bool", "list[int]", "list[float]", "list[str]", "pair[str]", "any")
_NUMBER = r"-?\d+(?:\.\d+)?"
_SPEC = re.compile(
    r"(?P<base>int|float|str|bool|list\[int\]|list\[float\]|list\[str\]|pair\[str\]|any)"
    rf"(?:(?P<op>>=|>)(?P<bound>{_NUMBER}))?(?:<=(?P<upper>{_NUMBER}))?(?P<optional>\|None)?"
)
#: The most characters a parameter's text may hold (a `str` value, or the text papermill's `-p` passes):
#: checked before it is read, so a huge value costs nothing.
MAX_TEXT_CHARS = 4096
#: The most items a list parameter may hold (gammas, temperatures, alphas: a few are a sweep already).
MAX_LIST_ITEMS = 256
#: Characters no parameter's text may hold (NUL and the other C0 controls, DEL): a path or a name with
#: one fails far from here, or means something else to the program that reads it.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class NotebookParameterError(ValueError):
    """A notebook parameter of the wrong kind; the message shows the value and how to pass it."""


def _yaml_text(value) -> str:
    """How `value` is written in papermill's `-y` YAML (JSON is YAML)."""
    return json.dumps(value)


def _parse_text(text: str):
    """A string given with papermill's `-p` (which passes every value as text) read as a literal."""
    stripped = text.strip()
    if stripped in ("None", "null", "~"):
        return None
    if stripped in ("true", "True"):
        return True
    if stripped in ("false", "False"):
        return False
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _whole(value):
    if isinstance(value, bool):
        raise TypeError
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        return int(value)
    raise TypeError


def _real(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise TypeError
    return float(value)


def _convert(base: str, value):
    if base == "any":
        return value
    if base == "int":
        return _whole(value)
    if base == "float":
        return _real(value)
    if base == "str":
        if not isinstance(value, str):
            raise TypeError
        return value
    if base == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise TypeError
    if base == "pair[str]":
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise TypeError
    item = {"list[int]": _whole, "list[float]": _real, "list[str]": lambda v: _convert("str", v)}[base]
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError
    return [item(v) for v in value]


def _check_size(name: str, value, base: str) -> None:
    """Refuse, before any parsing, text longer than `MAX_TEXT_CHARS` or holding a control character,
    and lists longer than `MAX_LIST_ITEMS` (a parameter's size must not cost what its reading would)."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            raise NotebookParameterError(
                f"parameter {name} is {len(value):,} characters of text; a "
                f"parameter holds at most {MAX_TEXT_CHARS:,} (a list at most "
                f"{MAX_LIST_ITEMS} items): pass a shorter value."
            )
        control = _CONTROL.search(value) if base != "any" else None
        if control:
            raise NotebookParameterError(
                f"parameter {name}={value[:60]!r} holds the control character "
                f"{control.group()!r} at position {control.start()}; remove it (a "
                "name or a path is printable text)."
            )
    elif base.startswith("list[") or base == "any":
        if isinstance(value, (list, tuple, np.ndarray)) and len(value) > MAX_LIST_ITEMS:
            raise NotebookParameterError(
                f"parameter {name} holds {len(value):,} items; a list parameter "
                f"holds at most {MAX_LIST_ITEMS}: pass fewer (a sweep's cost grows "
                "with each)."
            )


def check_parameters(namespace: MutableMapping[str, Any], kinds: Mapping[str, str]) -> dict:
    """Check a notebook's parameters where they are set, in the cell after its `parameters` cell.

    `kinds` maps each parameter to its kind (`PARAMETER_KINDS`, with an optional minimum, maximum and
    `|None`, e.g. `"int>=1"`, `"int>=1<=20000|None"`, `"list[float]|None"`; a list's bounds hold for
    each item). Numpy numbers and whole floats pass where an int is meant. Before anything is read,
    text longer than `MAX_TEXT_CHARS`, text with a control character (NUL, newline, ...; a kind `any`
    may hold them) and lists longer than `MAX_LIST_ITEMS` are refused. A string where another kind is
    meant (papermill's `-p` passes every value as text) is read as a Python literal and accepted when
    that has the right kind, and the text `None` of an optional parameter is None; otherwise, or for a
    value of the wrong kind, `NotebookParameterError` names the parameter and the value and shows the
    `-y` form that passes it with its type. The cleaned values
    are written back to `namespace` and returned."""
    if not isinstance(kinds, Mapping) or not kinds:
        raise TypeError("kinds: pass a dict from each parameter's name to its kind, e.g. {'seed': 'int>=0'}.")
    cleaned = {}
    for name, spec in kinds.items():
        match = _SPEC.fullmatch(spec) if isinstance(spec, str) else None
        if match is None:
            raise ValueError(
                f"kinds[{name!r}]={spec!r} is not a kind; use one of {', '.join(PARAMETER_KINDS)}, "
                "optionally with a minimum ('int>=1') and '|None'."
            )
        if name not in namespace:
            raise NotebookParameterError(
                f"parameter {name!r} is not set; the parameters cell must define it."
            )
        value = namespace[name]
        base, optional = match["base"], bool(match["optional"])
        _check_size(name, value, base)
        if optional and isinstance(value, str) and value.strip() == "None":
            value = None  # papermill's -p passes None as the text "None", never a folder's name here
        text_given = isinstance(value, str) and base != "str"
        candidate = _parse_text(value) if text_given else value
        example = {
            "int": 3,
            "float": 0.5,
            "str": "text",
            "bool": True,
            "list[int]": [1, 3, 5],
            "list[float]": [0.0, 1.0],
            "list[str]": ["a", "b"],
            "pair[str]": ["drafter", "verifier"],
            "any": None,
        }[base]
        wanted = (
            base
            + {">=": f" >= {match['bound']}", ">": f" > {match['bound']}", None: ""}[match["op"]]
            + (f"{' and' if match['op'] else ''} <= {match['upper']}" if match["upper"] else "")
            + (" or None" if optional else "")
        )
        how = f"pass it with its type through papermill's -y, e.g. -y '{name}: {_yaml_text(example)}'"
        given = f"{value!r} (text, as papermill's -p passes every value)" if text_given else repr(value)
        problem = f"parameter {name}={given} is not {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}; {how}."
        if candidate is None and optional:
            cleaned[name] = None
            continue
        try:
            converted = _convert(base, candidate)
        except (TypeError, ValueError):
            raise NotebookParameterError(problem) from None
        values = converted if isinstance(converted, list) else [converted]
        if isinstance(converted, list):
            _check_size(name, converted, base)  # (a list given as text is counted once read)
        if match["op"]:
            bound = float(match["bound"])
            if any(v < bound if match["op"] == ">=" else v <= bound for v in values):
                raise NotebookParameterError(problem)
        if match["upper"] and any(v > float(match["upper"]) for v in values):
            raise NotebookParameterError(problem)
        cleaned[name] = converted
    namespace.update(cleaned)
    return cleaned
