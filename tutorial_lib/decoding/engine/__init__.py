r"""One execution engine for every inference method of the paper, on real or toy model pairs.

Speculative execution (Algorithm 4, GenSpecSample) with a target $\pi = \mathbb{T}(q, p)$:

1. draft $x_t, \dots, x_{t+\gamma-1}$ autoregressively from the drafter, $x_{t+j} \sim q_{t+j}$;
2. score all of them with **one** call of the verifier, which gives $p_{t}, \dots, p_{t+\gamma}$;
3. accept $x_{t+j}$ with probability $\min\{1, \pi_{t+j}(x_{t+j}) / q_{t+j}(x_{t+j})\}$ and stop at the
   first rejection $j^*$;
4. replace $x_{t+j^*}$ by a sample of $\mathrm{norm}(\max\{0, \pi_{t+j^*} - q_{t+j^*}\})$, or, when
   all $\gamma$ drafts were accepted, sample a bonus token from $p_{t+\gamma}$;
5. crop both KV caches back to the accepted prefix and repeat.

Each emitted token then follows $\pi$ (Lemma 2 of Leviathan et al.; Algorithm 5 of the paper for the
deferral rules), and a call of the verifier yields between 1 and $\gamma + 1$ tokens. With
$\pi = p$ (`rule="spec"`) the output follows the verifier exactly: at $T = 0$ it is the verifier's
greedy output, token for token.

Beside it, the baselines the paper compares with: plain decoding with either model, the sequential
token cascade (Algorithm 2), the oracle cascade (Algorithm 3), the sequence-level cascade
(equation 1) and the original Big-Little Decoder (BiLD).

Steps 3 and 4 are `verification.verify_block`, the one implementation of Algorithm 4's
verification that `generate_batch` calls too; the options are checked by
`options.check_generate_options` for both.

Its parts: `entry_points` (`generate`, `generate_many`, `calibrate`) and `methods` (one run's state and
each method's loop). What it returns, `Generation` and its per-token `TraceStep`, lives beside it in
`decoding.generation`, which every engine (this one, the batched ones) returns alike.
"""

from .entry_points import calibrate, generate, generate_many
from ..options import BONUS_OPTIONS, METHODS, SEQ_AGGREGATES

__all__ = [
    "METHODS",
    "SEQ_AGGREGATES",
    "BONUS_OPTIONS",
    "generate",
    "generate_many",
    "calibrate",
]
