"""tutorial_lib: speculative cascades (Narasimhan et al., ICLR 2025) for teaching and analysis.

Modules, one idea each:

- `targets`  - the target distributions and deferral rules of the paper, and Algorithm 4's
  accept/reject step (acceptance probability, residual, rejection probability).
- `toyworld` - a toy language with known ground truth `P`, a drafter `q` and a verifier `p`;
  exact expectations for any rule, and Monte Carlo checks.
- `lemmas`   - the deferral risks of equations (3) and (8), brute-force minimisers and the closed
  forms of Lemmas 1 and 4.
- `models`   - drafter/verifier pairs with one interface (next-token logits over a croppable KV
  cache): offline aliases, tiny random models, the toy world, hub ids, your own models.
- `model_files` - the offline GGUF models shipped in registry packages, converted once to safetensors.
- `engine`   - `generate`: speculative execution (Algorithms 1, 4, 5), sequential, oracle and
  sequence-level cascades, BiLD; lossless at T = 0, exact in distribution.
- `verification` - Algorithm 4's block verification (`verify_block`), shared by `generate` and
  `generate_batch`; `options` - their checked options; `checks` - the input checks every module shares.
- `toy_model` - the toy world's models as engine models (`ToyModel`, the `toy-*` aliases).
- `toycheck` - the engine on the toy world, scored against the truth (checks the exact curves).
- `plotting` - `savefig` and the figures the notebooks draw.
- `notebook` - recording the numbers a notebook shows, and checking exercise answers.
- `examples` - the lessons' example data: drafter/verifier pairs (01-02), toy worlds and contexts (03-05).
- `rejection` - each target's rejection rate (Lemma 3), the read-outs of one pair, rejection against
  alpha, Lemma 3 by simulation with binomial z-scores.
- `latency`  - tokens per verifier call (1 - a^(gamma+1)) / (1 - a), the latency model, the block-cost model.
- `calibration` - measured call costs of a loaded pair (drafter step, verifier scoring k tokens, prefill,
  encoder pass, per-call overhead), as a table and JSON; `gamma_policy` - `gamma="auto"` (`AutoGamma`);
  `speed_runs` - measured speed-ups beside the block-cost model's (notebook 09, `benchmarks/engine_speed.py`).
- `pricing`  - a sweep's rows priced from their counted calls with its stored calibration (as measured, and
  as on an accelerator), latency intervals over items, and the model's error against wall time.
- `deferral_risks` - Lemmas 1 and 4 on a toy world: risk lines, switch points, summed risks, miscalibration.
- `lossy`    - Lemma 2: lossy speculative sampling from its definition against Algorithm 4; beta = 1 vs Lossy*.
- `tradeoff` - exact cost-quality curves in the toy world: Figure 1 and the trade-off of notebook 05.
- `views`    - plotly / matplotlib figures and ipywidgets wiring of notebooks 01-05 (loaded on first
  use: `import tutorial_lib` imports neither plotly nor ipywidgets).
- `batch`    - `generate_batch`: many prompts in lockstep at gamma = 1, one prefill reused by a sweep.
- `metrics`  - BLEU, ROUGE-2, GSM8K answers, SQuAD 2.0 F1, open-QA match, pass@1 (standard packages).
- `sandbox`  - generated code run under bubblewrap with limits; `judge` - its tests judged outside it.
- `tasksets` - few-shot tasks: the offline sets in `data/tasks/`, `load_task`, reply post-processing;
  `hub_tasks` - the Gemma benchmarks from the hub; `task_prompts` - the few-shot prompt blocks both
  use; `arithmetic_problems` - the generated arithmetic word problems.
- `synthetic_mt` - a synthetic translation task with known truth and the T5 pair trained on it.
- `evaluation` - the harness: tasks, configurations, resumable sweeps; `rows_file` - their
  `rows.jsonl` (a cut or malformed line is kept aside or named, never silently dropped).
- `analysis` - a sweep's curves, the paper's table and answer lengths;
  `rerun_figures` - their figures.
- `reruns`   - the profiles (hub / offline / full / smoke) of the T5 and Gemma notebooks.
- `token_analysis` - exact per-position statistics of every rule along a reference (teacher forcing,
  full vocabulary) and the oracle envelope; `token_curves` - the passes of a pair over answers,
  cached results, curves, areas and matched-rejection losses with bootstrap intervals (notebook 08).
- `alpha_grids` - each rule's live alpha range (OPT's by temperature) and alphas placed along a rejection curve.
- `paired` - paired bootstrap differences to the verifier and SpecDecode (corpus BLEU from sacrebleu's
  statistics); `curve_bootstrap` - the paper's table with bootstrap intervals over items;
  `claims` - the paper's T5 and Gemma claims checked (holds / does not hold / not resolved).

Notebooks import it as `import tutorial_lib as tl`.
"""
from . import lemmas, notebook, plotting, targets, toyworld
from .plotting import savefig
from .targets import (
    ALPHA_RANGES, LIVE_ALPHA_RANGES, PREFIX_RULES, RULES, TOKEN_RULES, acceptance_probability, acceptance_set, alpha_grid,
    deferral_decision, deferral_weight, lossy_beta, output_distribution, probabilities,
    rejection_probability, residual_distribution, target_distribution, tv_distance,
)
from .toyworld import ToyWorld
from . import checks, options, verification
from . import engine, model_files, models, toy_model, toycheck
from .engine import Generation, generate, generate_many
from .models import load_model, load_pair
from . import deferral_risks, examples, latency, lossy, rejection, tradeoff
from . import calibration, gamma_policy, pricing, speed_runs
from . import batch, evaluation, metrics, reruns, sandbox, synthetic_mt, tasksets
from . import analysis, arithmetic_problems, hub_tasks, rerun_figures, rows_file, task_prompts
from . import token_analysis, token_curves
from . import alpha_grids, claims, curve_bootstrap, paired
from .batch import generate_batch, prefill_batch

__version__ = "0.1.0"

__all__ = [
    "checks", "options", "verification", "toy_model",
    "engine", "model_files", "models", "toycheck", "Generation", "generate", "generate_many", "load_model", "load_pair",
    "deferral_risks", "examples", "latency", "lossy", "rejection", "tradeoff", "views",
    "calibration", "gamma_policy", "pricing", "speed_runs",
    "batch", "evaluation", "metrics", "reruns", "sandbox", "synthetic_mt", "tasksets",
    "analysis", "arithmetic_problems", "hub_tasks", "rerun_figures", "rows_file", "task_prompts",
    "token_analysis", "token_curves", "alpha_grids", "claims", "curve_bootstrap", "paired",
    "generate_batch", "prefill_batch",
    "lemmas", "notebook", "plotting", "targets", "toyworld", "savefig", "ToyWorld",
    "ALPHA_RANGES", "LIVE_ALPHA_RANGES", "PREFIX_RULES", "RULES", "TOKEN_RULES", "acceptance_probability", "acceptance_set",
    "alpha_grid", "deferral_decision", "deferral_weight", "lossy_beta", "output_distribution",
    "probabilities", "rejection_probability", "residual_distribution", "target_distribution", "tv_distance",
]


def __getattr__(name):
    # `tl.views` imports plotly and ipywidgets, so it loads on first use rather than with the package.
    if name == "views":
        import importlib
        return importlib.import_module(".views", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
