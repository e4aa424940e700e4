"""Small helpers notebooks share: recording the numbers they show, and checking exercise answers."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Optional

__all__ = ["save_metrics", "load_metrics", "check_answer"]


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
