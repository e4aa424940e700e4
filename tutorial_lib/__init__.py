"""tutorial_lib: speculative cascades (Narasimhan et al., ICLR 2025) for teaching and analysis.

The package is a house of wings, each a subpackage whose `__init__` is the index of its modules.
A wing imports only from the wings before it in this list (tests/test_structure.py checks it):

| wing        | what lives there |
|-------------|------------------|
| `checks`    | the input checks every module shares (one module, the floor) |
| `maths`     | Table 1's targets and rules, Algorithm 4's verification, Lemmas, the latency model, exact token statistics, alpha grids |
| `toy`       | the toy world with exact ground truth, the lessons' examples, the synthetic translation task |
| `models`    | drafter / verifier pairs behind one interface: `transformers`, toy, offline GGUF and synthetic T5 backends |
| `decoding`  | the engine (`generate`, `gamma="auto"`), lockstep batches, config batches, calibration, speed runs, transformers' `custom_generate` |
| `tasks`     | task sets (offline and hub), prompts, metrics, the bubblewrap sandbox and its outside judge |
| `lessons`   | the maths of notebooks 01-05 (rejection rates, Lemma 2, deferral risks, trade-offs) and exercise checks |
| `sweeps`    | the harness: tasks x configurations, resumable rows, reruns' profiles, pricing from counted calls |
| `stats`     | curves, paired bootstraps, the paper's claims, token-level curves, one module for intervals |
| `views`     | everything that draws: plotly / matplotlib panels and ipywidgets |

`import tutorial_lib as tl` loads none of the wings: each name below loads its module on first use
(`tl.generate`, `tl.load_pair`, `tl.speculative_cascade`, `tl.targets`, `tl.views`, ...), so the import costs milliseconds and pulls in
neither matplotlib, pandas, scipy, transformers, plotly nor ipywidgets.

The flat module paths of earlier versions (`tutorial_lib.engine`, `tutorial_lib.claims`, ...) keep working:
they resolve to the module's new home (`tutorial_lib.decoding.engine`, ...) with a `DeprecationWarning`
that names it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

__version__ = "0.1.0"

#: The wings, in import order (a wing imports only from wings before it; `checks` is the floor).
WINGS = ("maths", "toy", "models", "decoding", "tasks", "lessons", "sweeps", "stats", "views")

#: Each module's flat name of earlier versions -> its path now (relative to the package).
MOVED = {
    "alpha_grids": "maths.alpha_grids",
    "analysis": "stats.analysis",
    "arithmetic_problems": "tasks.arithmetic_problems",
    "batch": "decoding.batch",
    "calibration": "decoding.calibration",
    "claims": "stats.claims",
    "config_batch": "decoding.config_batch",
    "curve_bootstrap": "stats.curve_bootstrap",
    "deferral_risks": "lessons.deferral_risks",
    "engine": "decoding.engine",
    "evaluation": "sweeps.evaluation",
    "examples": "toy.examples",
    "gamma_policy": "decoding.gamma_policy",
    "hub_tasks": "tasks.hub_tasks",
    "judge": "tasks.judge",
    "latency": "maths.latency",
    "lemmas": "maths.lemmas",
    "lossy": "lessons.lossy",
    "metrics": "tasks.metrics",
    "model_files": "models.files",
    "notebook": "lessons.notebook",
    "options": "decoding.options",
    "paired": "stats.paired",
    "plotting": "views.figures",
    "pricing": "stats.pricing",
    "rejection": "lessons.rejection",
    "rerun_figures": "views.reruns",
    "reruns": "sweeps.reruns",
    "rows_file": "sweeps.rows_file",
    "sandbox": "tasks.sandbox",
    "sandbox_child": "tasks.sandbox_child",
    "shared_prefix": "decoding.shared_prefix",
    "speed_runs": "decoding.speed_runs",
    "synthetic_mt": "toy.synthetic_mt",
    "targets": "maths.targets",
    "task_prompts": "tasks.task_prompts",
    "tasksets": "tasks.tasksets",
    "token_analysis": "maths.token_analysis",
    "token_curves": "stats.token_curves",
    "toy_model": "models.toy",
    "toycheck": "lessons.toycheck",
    "toyworld": "toy.toyworld",
    "tradeoff": "lessons.tradeoff",
    "verification": "maths.verification"
,
}

#: `tl.<module>`: every module by its short name.
MODULES = {**MOVED, "checks": "checks", "models": "models", "views": "views", "synthetic_t5": "models.synthetic_t5",
           "lockstep": "decoding.lockstep", "offline_models": "models.offline", "humaneval": "tasks.humaneval",
           "intervals": "stats.intervals", "hardware": "stats.hardware", "report": "stats.report",
           **{wing: wing for wing in WINGS}}

#: `tl.<name>`: the functions, classes and constants the notebooks and the README use, by their module.
NAMES = {
    "generate": "decoding.engine", "generate_many": "decoding.engine", "Generation": "decoding.engine",
    "calibrate": "decoding.engine",
    "generate_batch": "decoding.batch", "prefill_batch": "decoding.batch",
    "speculative_cascade": "decoding.hf_generate", "SpeculativeCascade": "decoding.hf_generate",
    "load_model": "models", "load_pair": "models",
    "savefig": "views.figures", "ToyWorld": "toy.toyworld",
    **{name: "maths.targets" for name in (
        "ALPHA_RANGES", "LIVE_ALPHA_RANGES", "PREFIX_RULES", "RULES", "TOKEN_RULES", "acceptance_probability",
        "acceptance_set", "alpha_grid", "deferral_decision", "deferral_weight", "lossy_beta", "output_distribution",
        "probabilities", "rejection_probability", "residual_distribution", "target_distribution", "tv_distance")},
}

__all__ = sorted({*MODULES, *NAMES})


def __getattr__(name: str):
    if name in MODULES:
        module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    elif name in NAMES:
        module = getattr(importlib.import_module(f"{__name__}.{NAMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}; see tutorial_lib.__all__")
    globals()[name] = module      # later lookups skip this function
    return module


def __dir__():
    return sorted({*globals(), *__all__})


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import tutorial_lib.engine` (a flat path of earlier versions) gives `tutorial_lib.decoding.engine`."""

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, short = fullname.partition(".")
        if prefix != __name__ or short not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        new = f"{__name__}.{MOVED[module.__name__.partition('.')[2]]}"
        warnings.warn(f"{module.__name__} moved to {new}; import that (or use tl.<name>).", DeprecationWarning,
                      stacklevel=2)
        # The import system returns what sys.modules holds once this returns: the module at its new home.
        sys.modules[module.__name__] = importlib.import_module(new)


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())
