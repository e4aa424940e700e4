r"""The maths behind lessons 01-05, on the examples and toy worlds, and the notebooks' exercise checks.

- `rejection`      - each target's rejection rate (Lemma 3), read-outs of one pair, rejection against alpha,
  Lemma 3 by simulation with binomial z-scores (notebooks 01-02).
- `deferral_risks` - Lemmas 1 and 4 on a toy world: risk lines, switch points, summed risks, miscalibration
  (03, 05).
- `lossy`          - Lemma 2: lossy speculative sampling from its definition against Algorithm 4 (04).
- `tradeoff`       - exact cost-quality curves in the toy world: Figure 1 and the trade-off of notebook 05.
- `toycheck`       - the engine on the toy world, scored against the truth.
- `notebook`       - where a notebook run writes (the student's folders), recording the numbers it shows, and
  `check` / `solution` of the exercises.
- `parameters`     - a notebook's parameters checked, right after its `parameters` cell, before anything runs.
- `exercises`      - every notebook's exercises: what each needs, how its answer is computed, a hint about the
  idea.
- `engines`        - the paper's rules behind engines' knobs: transformers' ensemble weight, relaxed
  acceptance (10).
- `first_timing`   - notebook 01's closing clock: plain decoding against speculation, and why `gamma="auto"`
  chose.
"""

import importlib

__all__ = [
    "deferral_risks",
    "engines",
    "exercises",
    "first_timing",
    "lossy",
    "notebook",
    "parameters",
    "rejection",
    "toycheck",
    "tradeoff",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
