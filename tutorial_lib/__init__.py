"""tutorial_lib: speculative cascades (Narasimhan et al., ICLR 2025) for teaching and analysis.

The package is a house of wings, each a subpackage whose `__init__` is the index of its modules.
A wing imports only from the wings before it in this list (tests/test_structure.py checks it):

- `checks`   - the input checks every module shares (one module, the floor)
- `maths`    - Table 1's targets and rules, Algorithm 4's verification, Lemmas, the latency model, exact token
  statistics, alpha grids
- `toy`      - the toy world with exact ground truth, the lessons' examples, the synthetic translation task
- `models`   - drafter / verifier pairs behind one interface: `transformers`, toy, offline GGUF and synthetic
  T5 backends
- `decoding` - the engine (`generate`, `gamma="auto"`), lockstep batches, config batches, calibration, speed
  runs, transformers' `custom_generate`
- `tasks`    - task sets (offline and hub), prompts, metrics, the bubblewrap sandbox and its outside judge
- `lessons`  - the maths of notebooks 01-05 (rejection rates, Lemma 2, deferral risks, trade-offs) and
  exercise checks
- `sweeps`   - the harness: tasks x configurations, resumable rows, reruns' profiles, pricing from counted
  calls
- `stats`    - curves, paired bootstraps, the paper's claims, token-level curves, one module for intervals
- `views`    - everything that draws: plotly / matplotlib panels and ipywidgets

`import tutorial_lib as tl` loads none of the wings: each name below loads its module on first use
(`tl.generate`, `tl.load_pair`, `tl.speculative_cascade`, `tl.target_distribution`, `tl.views`, ...), so the
import costs milliseconds and pulls in neither matplotlib, pandas, scipy, transformers, plotly nor ipywidgets.

Every module is named by its wing: `tl.decoding.engine`, `tl.stats.claims`,
`from tutorial_lib.sweeps import evaluation` (tests/test_structure.py imports each such path the notebooks,
the README and the docstrings name).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: The wings, in import order (a wing imports only from wings before it; `checks` is the floor).
WINGS = ("maths", "toy", "models", "decoding", "tasks", "lessons", "sweeps", "stats", "views")

#: `tl.<module>`: the wings and the floor, each loaded on first use (`tl.stats.intervals`,
#: `tl.views.targets`).
MODULES = {name: name for name in ("checks", "paths", *WINGS)}

#: `tl.<name>`: the functions, classes and constants the notebooks and the README use, by their module.
NAMES = {
    "generate": "decoding.engine",
    "generate_many": "decoding.engine",
    "Generation": "decoding.generation",
    "calibrate": "decoding.engine",
    "generate_batch": "decoding.batch",
    "prefill_batch": "decoding.batch",
    "speculative_cascade": "decoding.hf_generate",
    "SpeculativeCascade": "decoding.hf_generate",
    "load_model": "models",
    "load_pair": "models",
    "savefig": "views.figures",
    "ToyWorld": "toy.toyworld",
    **{
        name: "maths.rules"
        for name in ("RULES", "PREFIX_RULES", "TOKEN_RULES", "ALPHA_RANGES", "LIVE_ALPHA_RANGES")
    },
    "register_rule": "maths.rules",
    **{
        name: "maths.targets"
        for name in (
            "acceptance_set",
            "alpha_grid",
            "deferral_decision",
            "deferral_weight",
            "lossy_beta",
            "target_distribution",
        )
    },
    **{name: "maths.laws" for name in ("probabilities", "tv_distance")},
    **{
        name: "maths.accept_reject"
        for name in (
            "acceptance_probability",
            "output_distribution",
            "rejection_probability",
            "residual_distribution",
        )
    },
}

__all__ = sorted({*MODULES, *NAMES})


def __getattr__(name: str):
    if name in MODULES:
        module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    elif name in NAMES:
        module = getattr(importlib.import_module(f"{__name__}.{NAMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; see tutorial_lib.__all__")
    globals()[name] = module  # later lookups skip this function
    return module


def __dir__():
    return sorted({*globals(), *__all__})
