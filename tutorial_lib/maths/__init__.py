r"""The maths of the paper, with no models and no data: each module opens with the equations it implements.

- `rules`          - the paper's rules as one table: one record per rule (its id, labels, family, decision,
  alpha ranges), `check_rule`, `register_rule`; the names `RULES`, `TOKEN_RULES`, ... are live views of it.
- `targets`        - Table 1: the target distribution $\mathbb{T}(q, p)$ of each rule built from its record
  (Chow, Diff, OPT, Token-V1/2/3, Lossy, BiLD), the decisions and acceptance sets, `check_alpha`.
- `laws`           - next-token laws: `probabilities` (softmax at temperature $T$), `tv_distance`, and the
  input checks (`check_pair`, `trusted_inputs`).
- `accept_reject`  - Algorithm 4's accept/reject step: acceptance probability, residual, rejection probability
  (Lemma 3), the law of the emitted token.
- `verification`   - Algorithm 4's block verification (`verify_block`), used by every decoder, and
  `verify_draft` (one draft per position).
- `lemmas`         - the deferral risks of equations (3) and (8), brute-force minimisers, Lemmas 1 and 4 in
  closed form.
- `latency`        - tokens per verifier call $(1 - a^{\gamma+1}) / (1 - a)$, the latency and block-cost
  models.
- `token_analysis` - exact per-position statistics of every rule along a reference (teacher forcing, full
  vocabulary).
- `alpha_grids`    - each rule's live alpha range and alphas placed along a rejection curve.
- `deferral_features` - what a deferral rule sees at decoding time: $\max q$, $\max p$, entropies, $D_{TV}$,
  cross probabilities.
"""

import importlib

__all__ = [
    "rules",
    "targets",
    "laws",
    "accept_reject",
    "verification",
    "lemmas",
    "latency",
    "token_analysis",
    "alpha_grids",
    "deferral_features",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
