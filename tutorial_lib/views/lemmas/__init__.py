"""Views of the lemma notebooks (03: Lemma 1, 04: Lemma 2, 05: Lemma 4): they draw, the maths is elsewhere.

- `deferral_risks` - notebooks 03 and 05: Lemma 1 and 4 risk lines in one context, risks summed over contexts,
  miscalibration (numbers: `lessons.deferral_risks`).
- `lossy`          - notebook 04: Lemma 2 token by token, `beta = 1` against Lossy* (numbers:
  `lessons.lossy`).
- `tradeoff`       - notebooks 03 and 05: the paper's Figure 1, the cost-quality trade-off (numbers:
  `lessons.tradeoff`).

Every `*_view` function is a widget callback returning a plotly figure; every `*_figure` function returns the
matplotlib twin for `tl.savefig`, both drawn from one list of `panels.Panel` records.
"""

import importlib

__all__ = ["deferral_risks", "lossy", "tradeoff"]


def __getattr__(name: str):
    if name in __all__:  # a module of this topic, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
