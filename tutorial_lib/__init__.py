"""tutorial_lib: speculative cascades (Narasimhan et al., ICLR 2025) for teaching and analysis.

Modules, one idea each:

- `targets`  - the target distributions and deferral rules of the paper, and Algorithm 4's
  accept/reject step (acceptance probability, residual, rejection probability).
- `toyworld` - a toy language with known ground truth `P`, a drafter `q` and a verifier `p`;
  exact expectations for any rule, and Monte Carlo checks.
- `lemmas`   - the deferral risks of equations (3) and (8), brute-force minimisers and the closed
  forms of Lemmas 1 and 4.
- `plotting` - `savefig` and the figures the notebooks draw.
- `notebook` - recording the numbers a notebook shows, and checking exercise answers.

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

__version__ = "0.1.0"

__all__ = [
    "lemmas", "notebook", "plotting", "targets", "toyworld", "savefig", "ToyWorld",
    "ALPHA_RANGES", "PREFIX_RULES", "RULES", "TOKEN_RULES", "acceptance_probability", "acceptance_set",
    "alpha_grid", "deferral_decision", "deferral_weight", "lossy_beta", "output_distribution",
    "probabilities", "rejection_probability", "residual_distribution", "target_distribution", "tv_distance",
]
