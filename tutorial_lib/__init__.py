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
- `toycheck` - the engine on the toy world, scored against the truth (checks the exact curves).
- `plotting` - `savefig` and the figures the notebooks draw.
- `notebook` - recording the numbers a notebook shows, and checking exercise answers.
- `explore`  - widget callbacks and figures of the exploration notebooks (target distributions of
  every rule for one pair, rejection rate against alpha, Lemma 3 by simulation).
- `lemma_views` - widget callbacks and figures of the lemma notebooks (Lemmas 1, 2 and 4).
- `batch`    - `generate_batch`: many prompts in lockstep at gamma = 1, one prefill reused by a sweep.
- `metrics`  - BLEU, ROUGE-2, GSM8K answers, SQuAD 2.0 F1, open-QA match, pass@1 (standard packages).
- `sandbox`  - generated code run in a subprocess with limits, no network, its own folder.
- `tasksets` - few-shot tasks: the Gemma benchmarks from the hub, the offline sets in `data/tasks/`.
- `synthetic_mt` - a synthetic translation task with known truth and the T5 pair trained on it.
- `evaluation` - the harness: resumable sweeps, curves, the paper's table, plots.
- `reruns`   - the profiles (hub / offline / full / smoke) of the T5 and Gemma notebooks.

Notebooks import it as `import tutorial_lib as tl`.
"""
from . import lemmas, notebook, plotting, targets, toyworld
from .plotting import savefig
from .targets import (
    ALPHA_RANGES, PREFIX_RULES, RULES, TOKEN_RULES, acceptance_probability, acceptance_set, alpha_grid,
    deferral_decision, deferral_weight, lossy_beta, output_distribution, probabilities,
    rejection_probability, residual_distribution, target_distribution, tv_distance,
)
from .toyworld import ToyWorld
from . import engine, model_files, models, toycheck
from .engine import Generation, generate, generate_many
from .models import load_model, load_pair
from . import explore
from . import lemma_views
from . import batch, evaluation, metrics, reruns, sandbox, synthetic_mt, tasksets
from .batch import generate_batch, prefill_batch

__version__ = "0.1.0"

__all__ = [
    "engine", "model_files", "models", "toycheck", "Generation", "generate", "generate_many", "load_model", "load_pair",
    "explore",
    "lemma_views", "batch", "evaluation", "metrics", "reruns", "sandbox", "synthetic_mt", "tasksets",
    "generate_batch", "prefill_batch",
    "lemmas", "notebook", "plotting", "targets", "toyworld", "savefig", "ToyWorld",
    "ALPHA_RANGES", "PREFIX_RULES", "RULES", "TOKEN_RULES", "acceptance_probability", "acceptance_set",
    "alpha_grid", "deferral_decision", "deferral_weight", "lossy_beta", "output_distribution",
    "probabilities", "rejection_probability", "residual_distribution", "target_distribution", "tv_distance",
]
