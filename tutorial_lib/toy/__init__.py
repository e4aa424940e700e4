r"""Worlds whose truth is known exactly.

- `toyworld`     - a toy language with ground truth `P`, a drafter `q` and a verifier `p`; exact expectations
  of any rule and Monte Carlo checks.
- `examples`     - the lessons' example data: drafter / verifier pairs (01-02), toy worlds and contexts
  (03-05).
- `synthetic_mt` - a synthetic translation task whose valid translations are known (its T5 pair:
  `models.synthetic_t5`).
"""

import importlib

__all__ = ["toyworld", "examples", "synthetic_mt"]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
