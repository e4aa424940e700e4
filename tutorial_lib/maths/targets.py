r"""Target distributions of speculative cascades: $\pi = \mathbb{T}(q, p)$ for every rule of the table.

Every rule of Narasimhan et al. (ICLR 2025) is a *target function* $\pi = \mathbb{T}(q, p)$ of the
drafter's next-token distribution $q$ and the verifier's $p$ (Table 1 and the token-specific rules). The
rules, their decisions and their alpha ranges are one table (`rules`); this module builds each target from
its family:

| family     | target $\pi(v)$ |
|------------|---|
| `drafter`  | $q(v)$ |
| `verifier` | $p(v)$ (the verifier alone, and SpecDecode: Algorithm 1) |
| `lossy`    | $\max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$ (Lemma 2) |
| `prefix`   | $(1-\delta)\,q(v) + \delta\,p(v)$ with the decision $\delta \in \{0, 1\}$ (equation 6) |
| `token`    | $q(v)1(v\in A) + (1 - \sum_{u\in A} q(u))\,p(v)$ with the acceptance set $A$ |
| `weight`   | $(1-r)\,q(v) + r\,p(v)$ with a weight $r \in [0, 1]$ per position |

`mixture` is the weight rule $r = 1 - \alpha$ that ignores the laws: the target of transformers'
`assistant_ensemble_weight=w` (assisted generation verifies against $w\,p + (1-w)\,q$, so $w = 1 - \alpha$).
By Lemma 3 it rejects a draft with probability $(1-\alpha) D_{TV}(p, q)$; every deferral rule of the
paper is measured against this straight line between the drafter and the verifier. Learned (or any
other) decisions join the table at run time with `rules.register_rule`.

Algorithm 4 (GenSpecSample) drafts $x \sim q$, accepts it with probability $\min\{1, \pi(x)/q(x)\}$ and
otherwise resamples from the residual $\mathrm{norm}(\max\{0, \pi - q\})$ (`accept_reject`). Lemma 3: for a
mixture $\pi = (1-r)q + rp$ a draft is rejected with probability $r\,D_{TV}(p, q)$, where
$D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$.

Temperature follows the authors' implementation: the distributions that are *sampled* (`q`, `p`,
and so the mixtures and the TV term of OPT) are temperature-scaled, while *decisions* (max-probability
tests, acceptance sets, BiLD's distance) use the temperature-1 probabilities `q_unscaled`,
`p_unscaled`.

All functions take tensors of shape `(..., V)` holding probabilities (anything `torch.as_tensor`
accepts) and work position-wise over the leading dimensions. The laws (`probabilities`, `tv_distance`) and
the input checks live in `laws`.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Union

import torch

from ..checks import check_real
from .laws import as_probabilities, check_pair
from .rules import LIVE_ALPHA_RANGES, PREFIX_RULES, TOKEN_RULES, check_rule
from .rules import rule as rule_record

__all__ = [
    "target_distribution",
    "deferral_decision",
    "acceptance_set",
    "deferral_weight",
    "lossy_beta",
    "check_alpha",
    "alpha_grid",
]

Beta = Union[float, str]
Distance = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def check_alpha(rule: str, alpha: float) -> float:
    """Raise `ValueError` unless `alpha` lies in `rule`'s alpha range (`rules.ALPHA_RANGES`; rules without
    one ignore it)."""
    record = rule_record(rule)
    alpha = check_real(alpha, "alpha", finite=True)  # named as infinite, not as outside [-inf, inf]
    if record.alpha_range is None:
        return alpha
    low, high = record.alpha_range
    if record.family == "lossy":
        if not 0.0 <= alpha < 1.0:
            raise ValueError(
                f"alpha={alpha} is outside [0, 1) for rule 'lossy'; the target divides "
                "p by (1 - alpha), so pick 0 <= alpha < 1."
            )
    elif not (low <= alpha <= high) or math.isinf(alpha):
        raise ValueError(
            f"alpha={alpha} is outside the range [{low}, {high}] of rule {rule!r}; "
            f"at {low} the rule is SpecDecode-like and at {high} drafter-only."
        )
    return alpha


def alpha_grid(rule: str, n: int = 21) -> torch.Tensor:
    """`n` values of `alpha` spanning `rule`'s live range (`LIVE_ALPHA_RANGES`) from its SpecDecode
    end to its drafter end, evenly spaced.

    `lossy` stops at 0.99 (1 is excluded). `opt` accepts any alpha but its decisions change only in
    $[-1, 1]$ at $T = 1$ and $T = 0$, which this grid spans; at other temperatures derive the range
    from the laws (`alpha_grids.opt_live_range`).
    """
    check_rule(rule)
    if n < 2:
        raise ValueError(f"n={n}: a grid needs at least its two ends.")
    if rule not in LIVE_ALPHA_RANGES:
        return torch.zeros(n, dtype=torch.float64)
    low, high = LIVE_ALPHA_RANGES[rule]
    return torch.linspace(low, 0.99 if rule == "lossy" else high, n, dtype=torch.float64)


# --------------------------------------------------------------------------------------------
# Deferral decisions and acceptance sets
# --------------------------------------------------------------------------------------------


def _unscaled(q, p, q_unscaled, p_unscaled):
    qu = q if q_unscaled is None else as_probabilities(q_unscaled, "q_unscaled")
    pu = p if p_unscaled is None else as_probabilities(p_unscaled, "p_unscaled")
    if qu.shape != q.shape or pu.shape != p.shape:
        raise ValueError(
            "q_unscaled and p_unscaled must have the shapes of q and p "
            f"(got {tuple(qu.shape)} and {tuple(pu.shape)} for {tuple(q.shape)})."
        )
    return qu.to(q.dtype), pu.to(p.dtype)


def _decision(record, q, p, alpha, q_unscaled, p_unscaled, shape, what):
    """The record's decision on checked laws, checked to have `shape`."""
    qu, pu = _unscaled(q, p, q_unscaled, p_unscaled)
    decision = torch.as_tensor(record.decide(q, p, alpha, qu, pu))
    if decision.shape != shape:
        each = "one value per position" if what != "acceptance set" else "one value per position and token"
        raise ValueError(
            f"the {what} of rule {record.name!r} has shape {tuple(decision.shape)}; its `decide` must "
            f"return {each}, shape {tuple(shape)}."
        )
    return decision


def deferral_decision(
    rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None, distance: Optional[Distance] = None
) -> torch.Tensor:
    r"""The prefix-level decision $\delta(q, p) \in \{0, 1\}$ (True = defer to `p`) of a rule of the
    `prefix` family, shape `(...)`:

    - `chow`: $\delta = 1(\max_v q(v) < 1 - \alpha)$ (needs no `p`: a sequential cascade can use it)
    - `diff`: $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha)$
    - `opt`:  $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha\, D_{TV}(p, q))$, the plug-in of Lemma 4
    - `bild`: $\delta = 1(D(q, p) > \alpha)$ with $D = D_{TV}$ unless `distance` is given

    The max-probability tests and BiLD's distance use the temperature-1 `q_unscaled`, `p_unscaled`
    (default `q`, `p`); OPT's TV term uses the temperature-scaled `q`, `p`.
    """
    record = rule_record(rule)
    if record.family != "prefix":
        raise ValueError(
            f"rule {rule!r} makes no prefix-level decision; use one of "
            f"{', '.join(PREFIX_RULES)} (token rules have `acceptance_set`)."
        )
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    if distance is None or rule != "bild":
        return _decision(record, q, p, alpha, q_unscaled, p_unscaled, q.shape[:-1], "decision").to(torch.bool)
    qu, pu = _unscaled(q, p, q_unscaled, p_unscaled)
    d = torch.as_tensor(distance(qu, pu))
    if torch.isnan(d).any():  # NaN > alpha is False: every position would silently keep the draft
        raise ValueError(
            "the distance gave NaN; BiLD's distance must be a number at every position (the default, "
            "D_TV, is; a custom `distance` must not divide by zero or take the log of 0)."
        )
    return d > alpha


def acceptance_set(rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None) -> torch.Tensor:
    r"""The acceptance set $A$ of a rule of the `token` family, a boolean mask of shape `(..., V)`:

    - `token_v1`: $A = \{v : q(v) \ge \max_u p(u) - \alpha\}$
    - `token_v2`: $A = \{v : p(v) \ge \max_u p(u) - \alpha\}$
    - `token_v3`: $A = \{v : p(v) \ge (1 - \alpha) \max_u p(u)\}$

    computed from the temperature-1 probabilities `q_unscaled`, `p_unscaled` (default `q`, `p`).
    """
    record = rule_record(rule)
    if record.family != "token":
        raise ValueError(f"rule {rule!r} has no acceptance set; use one of {', '.join(TOKEN_RULES)}.")
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    return _decision(record, q, p, alpha, q_unscaled, p_unscaled, q.shape, "acceptance set").to(torch.bool)


def deferral_weight(
    rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None, distance: Optional[Distance] = None
) -> torch.Tensor:
    r"""How much of the target's mass comes from the verifier, shape `(...)`.

    For the prefix rules this is $\delta$ (0 or 1), for the token rules $1 - \sum_{u \in A} q(u)$,
    for the weight rules their weight clipped to $[0, 1]$ (`mixture`: the constant $1 - \alpha$), for
    `spec`/`verifier` 1 and for `drafter` 0. The lossy target is not a mixture: NaN.
    Averaged over positions it is the *deferral rate*.
    """
    record = rule_record(rule)
    q, p = check_pair(q, p)
    ones = q.new_ones(q.shape[:-1])
    if record.family == "verifier":
        return ones
    if record.family == "drafter":
        return torch.zeros_like(ones)
    if record.family == "lossy":
        return torch.full_like(ones, float("nan"))
    kw = dict(q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    if record.family == "weight":
        r = _decision(record, q, p, check_alpha(rule, alpha), q_unscaled, p_unscaled, q.shape[:-1], "weight")
        return r.to(q.dtype).clamp(0.0, 1.0)
    if record.family == "prefix":
        return deferral_decision(rule, q, p, alpha, distance=distance, **kw).to(q.dtype)
    in_set = acceptance_set(rule, q, p, alpha, **kw)
    return (1.0 - (q * in_set).sum(-1)).clamp_min(0)


# --------------------------------------------------------------------------------------------
# Target distributions
# --------------------------------------------------------------------------------------------


def _lossy_target(q: torch.Tensor, p: torch.Tensor, alpha: float, beta) -> torch.Tensor:
    return torch.maximum(torch.minimum(q, p / (1.0 - alpha)), p / beta)


def lossy_beta(q, p, alpha: float, *, iterations: int = 60) -> torch.Tensor:
    r"""Per position, the $\beta \ge 1 - \alpha$ at which the lossy target sums to one (Lossy*).

    With $m(v) = \min\{q(v), p(v)/(1-\alpha)\}$ the sum $g(s) = \sum_v \max\{m(v), s\,p(v)\}$ of the
    target at $s = 1/\beta$ rises continuously from $\sum_v m(v) \le 1$ at $s = 0$ to $1/(1-\alpha) \ge 1$
    at $s = 1/(1-\alpha)$, so bisection on $s$ finds the root. Where $\sum_v m(v) = 1$ already (the
    target is $q$ itself) $\beta = \infty$.

    This is *this package's* tuning of $\beta$ (the target is then exactly the output law); the
    paper's Lossy* tunes $\beta$ with Tran-Thien's KL-budget procedure, which we do not copy.
    """
    alpha = check_alpha("lossy", alpha)
    q, p = check_pair(q, p)
    q64, p64 = q.double(), p.double()
    m = torch.minimum(q64, p64 / (1.0 - alpha))
    lo = q64.new_zeros(q.shape[:-1])
    hi = torch.full_like(lo, 1.0 / (1.0 - alpha))
    for _ in range(iterations):
        mid = (lo + hi) / 2
        over = torch.maximum(m, mid.unsqueeze(-1) * p64).sum(-1) > 1.0
        hi = torch.where(over, mid, hi)
        lo = torch.where(over, lo, mid)
    s = hi
    s = torch.where(m.sum(-1) >= 1.0 - 1e-12, torch.zeros_like(s), s)
    return (1.0 / s).to(q.dtype)  # s = 0 -> beta = inf


def target_distribution(
    rule: str,
    q,
    p,
    alpha: float = 0.0,
    *,
    q_unscaled=None,
    p_unscaled=None,
    beta: Beta = 1.0,
    distance: Optional[Distance] = None,
) -> torch.Tensor:
    r"""The target $\pi = \mathbb{T}(q, p)$ of `rule`, shape `(..., V)` (see the module's table).

    - `drafter`: $\pi = q$; `verifier` and `spec`: $\pi = p$ (Algorithm 1).
    - `lossy`: $\pi(v) = \max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$ with $\beta \ge 1-\alpha$
      (Lemma 2). `beta=1` is the common heuristic (the target then sums to more than one and the
      output law is `output_distribution(pi, q)`); `beta="normalize"` is Lossy*, see `lossy_beta`.
    - prefix rules (`bild`, `chow`, `diff`, `opt`, registered ones): $\pi = (1-\delta)\,q + \delta\,p$
      (equation 6), $\delta$ from `deferral_decision`.
    - weight rules: $\pi = (1-r)\,q + r\,p$; `mixture`: $r = 1 - \alpha$, a constant weight (transformers'
      ensemble, $w = 1 - \alpha$).
    - token rules (`token_v1..3`, registered ones):
      $\pi(v) = q(v)1(v \in A) + (1 - \sum_{u\in A} q(u))\,p(v)$, $A$ from `acceptance_set`.

    `q`, `p` are the temperature-scaled distributions that are sampled and mixed; `q_unscaled`,
    `p_unscaled` (default `q`, `p`) are the temperature-1 ones used for decisions.
    """
    family = rule_record(rule).family
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    if family == "drafter":
        return q.clone()
    if family == "verifier":
        return p.clone()
    if family == "lossy":
        if isinstance(beta, str):
            if beta != "normalize":
                raise ValueError(
                    f"beta={beta!r} is not understood; pass a number >= 1 - alpha "
                    "or 'normalize' for the normalising beta (Lossy*)."
                )
            pi = _lossy_target(q, p, alpha, lossy_beta(q, p, alpha).unsqueeze(-1))
            return pi / pi.sum(-1, keepdim=True)  # removes the bisection's last rounding error
        beta_value = check_real(beta, "beta", finite=True)  # NaN named as NaN, not as below 1 - alpha
        if not beta_value >= 1.0 - alpha - 1e-12 or beta_value <= 0:
            raise ValueError(
                f"beta={beta_value} is below 1 - alpha = {1 - alpha:.6g}; the lossy target "
                "needs beta >= 1 - alpha (beta = 1 is the usual choice)."
            )
        return _lossy_target(q, p, alpha, beta_value)
    w = deferral_weight(
        rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, distance=distance
    ).unsqueeze(-1)
    if family != "token":
        return (1.0 - w) * q + w * p
    in_set = acceptance_set(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    return q * in_set + w * p
