"""Small helpers notebooks share: recording the numbers they show, and checking exercise answers."""
from __future__ import annotations

import ast
import json
import math
import numbers
import re
from pathlib import Path
from typing import Any, Mapping, MutableMapping, Optional

import numpy as np

__all__ = ["save_metrics", "load_metrics", "check_answer", "check_parameters", "NotebookParameterError",
           "PARAMETER_KINDS"]


def _plain(value: Any) -> Any:
    """JSON-friendly copy: tensors and numpy scalars become floats or lists, inf/NaN become strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def save_metrics(name: str, metrics: Mapping[str, Any], output_dir: str = ".") -> Path:
    """Write `<output_dir>/<name>.metrics.json` so tests and CI can assert what a notebook showed."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.metrics.json"
    path.write_text(json.dumps(_plain(dict(metrics)), indent=2, sort_keys=True))
    return path


def load_metrics(name: str, output_dir: str = ".") -> dict:
    return json.loads((Path(output_dir) / f"{name}.metrics.json").read_text())


def check_answer(answer: Optional[float], expected: float, *, tol: float = 1e-6, label: str = "answer") -> Optional[bool]:
    """Print whether an exercise `answer` is within `tol` of `expected`; `None` means not tried yet."""
    if answer is None:
        print(f"{label}: not answered yet - replace None with your value and run this cell again.")
        return None
    ok = abs(float(answer) - float(expected)) <= tol
    print(f"{label}: {'correct' if ok else 'not quite'} (you gave {float(answer):.6g}).")
    return ok


# ---- notebook parameters ----------------------------------------------------------------------------

#: The kinds `check_parameters` knows: a base kind, optionally a minimum (`int>=1`, `float>0`) and
#: `|None` where None is allowed (`list[float]|None`).
PARAMETER_KINDS = ("int", "float", "str", "bool", "list[int]", "list[float]", "list[str]", "pair[str]", "any")
_SPEC = re.compile(r"(?P<base>int|float|str|bool|list\[int\]|list\[float\]|list\[str\]|pair\[str\]|any)"
                   r"(?:(?P<op>>=|>)(?P<bound>-?\d+(?:\.\d+)?))?(?P<optional>\|None)?")


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


def check_parameters(namespace: MutableMapping[str, Any], kinds: Mapping[str, str]) -> dict:
    """Check a notebook's parameters where they are set, in the cell after its `parameters` cell.

    `kinds` maps each parameter to its kind (`PARAMETER_KINDS`, with an optional minimum and
    `|None`, e.g. `"int>=1"`, `"list[float]|None"`). Numpy numbers and whole floats pass where an int
    is meant. A string where another kind is meant (papermill's `-p` passes every value as text) is
    read as a Python literal and accepted when that has the right kind; otherwise, or for a value of
    the wrong kind, `NotebookParameterError` names the parameter and the value and shows the `-y`
    form that passes it with its type. The cleaned values are written back to `namespace` and
    returned."""
    if not isinstance(kinds, Mapping) or not kinds:
        raise TypeError("kinds: pass a dict from each parameter's name to its kind, e.g. {'seed': 'int>=0'}.")
    cleaned = {}
    for name, spec in kinds.items():
        match = _SPEC.fullmatch(spec) if isinstance(spec, str) else None
        if match is None:
            raise ValueError(f"kinds[{name!r}]={spec!r} is not a kind; use one of {', '.join(PARAMETER_KINDS)}, "
                             "optionally with a minimum ('int>=1') and '|None'.")
        if name not in namespace:
            raise NotebookParameterError(f"parameter {name!r} is not set; the parameters cell must define it.")
        value = namespace[name]
        base, optional = match["base"], bool(match["optional"])
        text_given = isinstance(value, str) and base != "str"
        candidate = _parse_text(value) if text_given else value
        example = {"int": 3, "float": 0.5, "str": "text", "bool": True, "list[int]": [1, 3, 5],
                   "list[float]": [0.0, 1.0], "list[str]": ["a", "b"], "pair[str]": ["drafter", "verifier"],
                   "any": None}[base]
        wanted = base + {">=": f" >= {match['bound']}", ">": f" > {match['bound']}", None: ""}[match["op"]] \
            + (" or None" if optional else "")
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
        if match["op"]:
            bound = float(match["bound"])
            values = converted if isinstance(converted, list) else [converted]
            if any(v < bound if match["op"] == ">=" else v <= bound for v in values):
                raise NotebookParameterError(problem)
        cleaned[name] = converted
    namespace.update(cleaned)
    return cleaned
