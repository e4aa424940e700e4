r"""The deferral risks of the paper and their minimisers: brute force against Lemmas 1 and 4.

For one prefix $x_{<t}$, a deferral rule $r \in \{0, 1\}$ (or a randomised $r \in [0, 1]$) and a
loss $\ell$, the *deferral risk* of a token-level cascade (equation 3) is

$$R(r) = \mathbb{E}_{x \sim P}\big[(1 - r)\,\ell(x, q_t) + r\,(\ell(x, p_t) + \alpha)\big],$$

and the *speculative deferral risk* (equation 8) charges the rejection probability of Lemma 3,
$r\,D_{TV}(p_t, q_t)$, instead of the flat cost:

$$R_{\mathrm{spec}}(r) = \mathbb{E}_{x \sim P}\big[(1 - r)\,\ell(x, q_t) +
  r\,(\ell(x, p_t) + \alpha\,D_{TV}(p_t, q_t))\big].$$

Both are linear in $r$, so the minimum sits at $r = 0$ or $r = 1$:

- Lemma 1: $r^* = 1 \iff \mathbb{E}_P[\ell(x, q_t)] > \mathbb{E}_P[\ell(x, p_t)] + \alpha$.
- Lemma 4: $r^* = 1 \iff \mathbb{E}_P[\ell(x, q_t)] > \mathbb{E}_P[\ell(x, p_t)] + \alpha\,D_{TV}(p_t, q_t)$.

The plug-in rules replace the unknown expectations by what the models say about themselves:
for 0-1 loss $\mathbb{E}_P[\ell(x, q_t)] \approx 1 - \max_v q_t(v)$ (Chow ignores $p$; Diff and OPT use
$1 - \max_v p_t(v)$ too); for log loss the entropies $H(q_t)$ and $H(p_t)$.

All functions work row-wise on tensors of shape `(C, V)` (one row per context) and return `(C,)`.
"""

from __future__ import annotations

from typing import Callable

import torch

from . import targets
from . import laws
from ..checks import LOSSES, check_loss

__all__ = [
    "LOSSES",
    "expected_loss",
    "deferral_risk",
    "speculative_deferral_risk",
    "optimal_deferral",
    "optimal_speculative_deferral",
    "brute_force_deferral",
    "plugin_deferral",
    "total_risk",
]


def expected_loss(P, model, loss: str = "zero_one") -> torch.Tensor:
    r"""$\mathbb{E}_{x \sim P}[\ell(x, m)]$ per row: $1 - P(\arg\max_v m(v))$ for 0-1 loss (the model
    predicts its argmax), $-\sum_v P(v) \log m(v)$ for log loss."""
    check_loss(loss)
    model, P = laws.check_pair(model, P, "model", "P")
    if loss == "zero_one":
        return 1.0 - P.gather(-1, model.argmax(-1, keepdim=True)).squeeze(-1)
    logs = torch.where(P > 0, model.log(), torch.zeros_like(model))
    return -(P * logs).sum(-1)


def deferral_risk(r, P, q, p, alpha: float, loss: str = "zero_one") -> torch.Tensor:
    r"""Equation (3): $(1 - r)\,\mathbb{E}_P[\ell(x, q)] + r\,(\mathbb{E}_P[\ell(x, p)] + \alpha)$ per row."""
    r = torch.as_tensor(r, dtype=torch.float64)
    return (1 - r) * expected_loss(P, q, loss) + r * (expected_loss(P, p, loss) + alpha)


def speculative_deferral_risk(r, P, q, p, alpha: float, loss: str = "zero_one") -> torch.Tensor:
    r"""Equation (8):
    $(1 - r)\,\mathbb{E}_P[\ell(x, q)] + r\,(\mathbb{E}_P[\ell(x, p)] + \alpha D_{TV}(p, q))$."""
    r = torch.as_tensor(r, dtype=torch.float64)
    return (1 - r) * expected_loss(P, q, loss) + r * (
        expected_loss(P, p, loss) + alpha * laws.tv_distance(p, q)
    )


def optimal_deferral(P, q, p, alpha: float, loss: str = "zero_one") -> torch.Tensor:
    r"""Lemma 1: $r^* = 1(\mathbb{E}_P[\ell(x, q)] > \mathbb{E}_P[\ell(x, p)] + \alpha)$ (bool per row)."""
    return expected_loss(P, q, loss) > expected_loss(P, p, loss) + alpha


def optimal_speculative_deferral(P, q, p, alpha: float, loss: str = "zero_one") -> torch.Tensor:
    r"""Lemma 4: $r^* = 1(\mathbb{E}_P[\ell(x, q)] > \mathbb{E}_P[\ell(x, p)] + \alpha D_{TV}(p, q))$."""
    return expected_loss(P, q, loss) > expected_loss(P, p, loss) + alpha * laws.tv_distance(p, q)


def brute_force_deferral(
    risk: Callable[..., torch.Tensor], P, q, p, alpha: float, loss: str = "zero_one", grid: int = 101
) -> torch.Tensor:
    r"""Minimise `risk(r, P, q, p, alpha, loss)` per row by trying every $r$ on a grid over $[0, 1]$.

    Randomised rules ($0 < r < 1$) are on the grid too, so this also shows that nothing beats the
    deterministic rules. Returns the minimising $r$ per row (the smallest one on ties).
    """
    if grid < 2:
        raise ValueError(f"grid={grid}: try at least r = 0 and r = 1.")
    rs = torch.linspace(0, 1, grid, dtype=torch.float64)
    values = torch.stack([risk(r, P, q, p, alpha, loss) for r in rs], dim=-1)  # (C, grid)
    best = values.min(-1, keepdim=True).values
    first = (values <= best + 1e-12).to(torch.int64).argmax(-1)  # smallest r among the minimisers
    return rs[first]


def plugin_deferral(rule: str, q, p, alpha: float, loss: str = "zero_one") -> torch.Tensor:
    r"""The plug-in estimate of a rule, as a bool per row.

    - 0-1 loss: `chow` $1(1 - \max q > \alpha)$, `diff` $1(1 - \max q > 1 - \max p + \alpha)$,
      `opt` $1(1 - \max q > 1 - \max p + \alpha D_{TV}(p, q))$ (the rules of `targets`).
    - log loss: the same with the entropies $H(q)$, $H(p)$ in place of $1 - \max$.
    """
    check_loss(loss)
    if rule not in ("chow", "diff", "opt"):
        raise ValueError(f"rule={rule!r} has no plug-in here; use 'chow', 'diff' or 'opt'.")
    q, p = laws.check_pair(q, p)
    if loss == "zero_one":
        return targets.deferral_decision(rule, q, p, alpha)
    h_q, h_p = _entropy(q), _entropy(p)
    if rule == "chow":
        return h_q > alpha
    if rule == "diff":
        return h_q > h_p + alpha
    return h_q > h_p + alpha * laws.tv_distance(p, q)


def total_risk(weight, risk_rows) -> float:
    """Expected risk over prefixes: $\\sum_c w_c R_c(r_c) / \\sum_c w_c$ for per-row risks `risk_rows`."""
    weight = torch.as_tensor(weight, dtype=torch.float64)
    return float((weight * risk_rows).sum() / weight.sum())


def _entropy(x: torch.Tensor) -> torch.Tensor:
    return -(x * torch.where(x > 0, x.log(), torch.zeros_like(x))).sum(-1)
