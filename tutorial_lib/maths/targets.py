r"""Target distributions, deferral rules and the accept/reject step of speculative cascades.

Every rule of Narasimhan et al. (ICLR 2025) is a *target function* $\pi = \mathbb{T}(q, p)$ of the
drafter's next-token distribution $q$ and the verifier's $p$ (Table 1 and the token-specific rules):

| rule       | decision | target $\pi(v)$ |
|------------|---|---|
| `spec`     | - | $p(v)$ |
| `lossy`    | - | $\max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$ |
| `bild`     | $\delta = 1(D(q, p) > \alpha)$ | $(1-\delta)\,q(v) + \delta\,p(v)$ |
| `chow`     | $\delta = 1(\max_v q(v) < 1 - \alpha)$ | same mixture |
| `diff`     | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha)$ | same mixture |
| `opt`      | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha D_{TV}(p,q))$ | same mixture |
| `token_v1` | $A = \{v: q(v) \ge \max_u p(u) - \alpha\}$ | $q(v)1(v\in A) + (1 - \sum_{u\in A} q(u))\,p(v)$ |
| `token_v2` | $A = \{v: p(v) \ge \max_u p(u) - \alpha\}$ | same form |
| `token_v3` | $A = \{v: p(v) \ge (1 - \alpha)\max_u p(u)\}$ | same form |
| `mixture`  | a constant weight $r = 1 - \alpha$ at every position | $(1-r)\,q(v) + r\,p(v)$ |

plus `drafter` ($\pi = q$) and `verifier` ($\pi = p$), the two ends of every curve.

`mixture` is equation (6) with a deferral weight that ignores the laws: the target of transformers'
`assistant_ensemble_weight=w` (assisted generation verifies against $w\,p + (1-w)\,q$, so $w = 1 - \alpha$).
By Lemma 3 it rejects a draft with probability $(1-\alpha) D_{TV}(p, q)$; every deferral rule of the
paper is measured against this straight line between the drafter and the verifier. Learned (or any
other) prefix decisions join the table at run time with `register_deferral_rule`, and so do per-position
weights $r_t \in [0, 1]$ (`weight=True`: DIVERSED's dynamic ensemble, whose static form is `mixture`).

Algorithm 4 (GenSpecSample) drafts $x \sim q$, accepts it with probability
$\min\{1, \pi(x)/q(x)\}$ and otherwise resamples from the residual
$\mathrm{norm}(\max\{0, \pi - q\})$. Lemma 3: for a mixture $\pi = (1-r)q + rp$ a draft is rejected
with probability $r\,D_{TV}(p, q)$, where $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$.

Temperature follows the authors' implementation: the distributions that are *sampled* (`q`, `p`,
and so the mixtures and the TV term of OPT) are temperature-scaled, while *decisions* (max-probability
tests, acceptance sets, BiLD's distance) use the temperature-1 probabilities `q_unscaled`,
`p_unscaled`.

All functions take tensors of shape `(..., V)` holding probabilities (anything `torch.as_tensor`
accepts) and work position-wise over the leading dimensions.

This module holds the rules, their decisions and their targets; the accept/reject step lives in
`accept_reject`, and the laws (`probabilities`, `tv_distance`) and the input checks in `laws`. Both are
re-exported here, so `targets.<name>` names every piece.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Union

import torch

from ..checks import check_choice, check_real
from .accept_reject import (
    acceptance_probability,
    output_distribution,
    rejection_probability,
    residual_distribution,
    sample,
)
from .laws import as_probabilities, check_pair, probabilities, target_and_draft, trusted_inputs, tv_distance

__all__ = [
    "RULES",
    "PREFIX_RULES",
    "TOKEN_RULES",
    "ALPHA_RANGES",
    "LIVE_ALPHA_RANGES",
    "probabilities",
    "tv_distance",
    "target_distribution",
    "deferral_decision",
    "acceptance_set",
    "deferral_weight",
    "lossy_beta",
    "acceptance_probability",
    "residual_distribution",
    "rejection_probability",
    "output_distribution",
    "check_alpha",
    "check_pair",
    "alpha_grid",
    "sample",
    "target_and_draft",
    "trusted_inputs",
    "check_rule",
    "register_deferral_rule",
    "unregister_deferral_rule",
    "WEIGHT_RULES",
]

#: Every rule `target_distribution` knows.
RULES = (
    "drafter",
    "verifier",
    "spec",
    "lossy",
    "bild",
    "chow",
    "diff",
    "opt",
    "token_v1",
    "token_v2",
    "token_v3",
    "mixture",
)


def check_rule(rule) -> str:
    """A rule of `RULES` (the target functions of the paper)."""
    return check_choice(rule, RULES, "rule")


#: Rules that make one defer/keep decision per prefix and target the mixture of equation (6)
#: (rules added by `register_deferral_rule` join it).
PREFIX_RULES = ("bild", "chow", "diff", "opt")
#: Rules that accept a set of drafter tokens and defer the rest of the mass to `p`.
TOKEN_RULES = ("token_v1", "token_v2", "token_v3")
#: Rules with a weight $r \in [0, 1]$ per position instead of a decision
#: (`register_deferral_rule(..., weight=True)`).
WEIGHT_RULES: tuple = ()

#: Closed ranges of `alpha` for each rule (`lossy` excludes 1). At one end the rule is SpecDecode
#: (target `p`), at the other the drafter alone. Rules absent here ignore `alpha`.
ALPHA_RANGES = {
    "lossy": (0.0, 1.0),
    "bild": (0.0, 1.0),
    "chow": (0.0, 1.0),
    "diff": (-1.0, 1.0),
    "opt": (-math.inf, math.inf),
    "token_v1": (-1.0, 1.0),
    "token_v2": (-1.0, 1.0),
    "token_v3": (0.0, 1.0),
    "mixture": (0.0, 1.0),
}
#: Where each rule's decisions change with `alpha` (SpecDecode end first): `ALPHA_RANGES`, except
#: OPT's $[-1, 1]$, its live range at $T = 1$ ($|\max p - \max q| \le D_{TV}(p, q)$) and at $T = 0$
#: (where it emits Diff's tokens); at other $T$ it depends on the laws (`alpha_grids.opt_live_range`).
LIVE_ALPHA_RANGES = {**ALPHA_RANGES, "opt": (-1.0, 1.0)}

Beta = Union[float, str]
Distance = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: decide(q, p, alpha, q_unscaled, p_unscaled) -> bool tensor of shape (...), True = defer to p.
Decide = Callable[..., torch.Tensor]
#: The prefix rules added at run time, by name (`register_deferral_rule`).
_REGISTERED: Dict[str, Decide] = {}
_BUILT_IN = RULES


def register_deferral_rule(
    name: str, decide: Decide, alpha_range=(-math.inf, math.inf), *, weight: bool = False
) -> str:
    r"""Add a prefix rule whose decision is `decide`: its target is $(1-\delta)\,q + \delta\,p$ with
    $\delta$ = `decide(q, p, alpha, q_unscaled, p_unscaled)` (a boolean tensor of shape `(...)`).
    `weight=True`: `decide` returns the weight $r \in [0, 1]$ on $p$ itself (a float tensor), and the target
    is $(1 - r)\,q + r\,p$ (a dynamic ensemble such as DIVERSED's); the rule joins `WEIGHT_RULES`, not
    `PREFIX_RULES` (the oracle cascade needs a decision).

    The rule then works wherever a rule name does (`target_distribution`, `deferral_weight`, the
    engine's `generate(..., method="speculative" or "oracle", rule=name)`), and Algorithm 4 is exact
    for it like for any mixture, provided `decide` looks only at the two laws (never at the draft).
    `alpha_range` bounds the `alpha` it accepts. Registering a name again replaces its decision;
    the paper's rules cannot be replaced. Returns `name`.
    """
    global RULES, PREFIX_RULES, WEIGHT_RULES
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name={name!r}: a deferral rule needs a name made of letters, digits and '_'.")
    if name in _BUILT_IN:
        raise ValueError(f"name={name!r} is one of the paper's rules; give the new rule another name.")
    if not callable(decide):
        raise TypeError(
            f"decide={decide!r} is not callable; pass a function "
            "decide(q, p, alpha, q_unscaled, p_unscaled) -> bool tensor."
        )
    low, high = (float(a) for a in alpha_range)
    if not low < high:
        raise ValueError(f"alpha_range={alpha_range!r} is empty; pass (low, high) with low < high.")
    _REGISTERED[name] = decide
    ALPHA_RANGES[name] = LIVE_ALPHA_RANGES[name] = (low, high)
    PREFIX_RULES, WEIGHT_RULES = (
        tuple(r for r in kind if r != name) for kind in (PREFIX_RULES, WEIGHT_RULES)
    )
    if weight:
        WEIGHT_RULES += (name,)
    else:
        PREFIX_RULES += (name,)
    if name not in RULES:
        RULES = RULES + (name,)
    return name


def unregister_deferral_rule(name: str) -> None:
    """Remove a rule added by `register_deferral_rule` (a name never registered is an error)."""
    global RULES, PREFIX_RULES, WEIGHT_RULES
    if name not in _REGISTERED:
        raise ValueError(
            f"name={name!r} was not registered; registered rules: {sorted(_REGISTERED) or 'none'}."
        )
    del _REGISTERED[name], ALPHA_RANGES[name], LIVE_ALPHA_RANGES[name]
    RULES, PREFIX_RULES, WEIGHT_RULES = (
        tuple(r for r in kind if r != name) for kind in (RULES, PREFIX_RULES, WEIGHT_RULES)
    )


def check_alpha(rule: str, alpha: float) -> float:
    """Raise `ValueError` unless `alpha` lies in `ALPHA_RANGES[rule]` (rules without a range ignore it)."""
    check_rule(rule)
    alpha = check_real(alpha, "alpha", finite=True)  # named as infinite, not as outside [-inf, inf]
    if rule not in ALPHA_RANGES:
        return alpha
    low, high = ALPHA_RANGES[rule]
    if rule == "lossy":
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


def _max_prob(x: torch.Tensor) -> torch.Tensor:
    return x.max(-1).values


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


def deferral_decision(
    rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None, distance: Optional[Distance] = None
) -> torch.Tensor:
    r"""The prefix-level decision $\delta(q, p) \in \{0, 1\}$ (True = defer to `p`), shape `(...)`.

    - `chow`: $\delta = 1(\max_v q(v) < 1 - \alpha)$ (needs no `p`: a sequential cascade can use it)
    - `diff`: $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha)$
    - `opt`:  $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha\, D_{TV}(p, q))$, the plug-in of Lemma 4
    - `bild`: $\delta = 1(D(q, p) > \alpha)$ with $D = D_{TV}$ unless `distance` is given

    The max-probability tests and BiLD's distance use the temperature-1 `q_unscaled`, `p_unscaled`
    (default `q`, `p`); OPT's TV term uses the temperature-scaled `q`, `p`.
    """
    check_rule(rule)
    if rule not in PREFIX_RULES:
        raise ValueError(
            f"rule {rule!r} makes no prefix-level decision; use one of "
            f"{', '.join(PREFIX_RULES)} (token rules have `acceptance_set`)."
        )
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    qu, pu = _unscaled(q, p, q_unscaled, p_unscaled)
    if rule == "chow":
        return _max_prob(qu) < 1.0 - alpha
    if rule == "diff":
        return _max_prob(qu) < _max_prob(pu) - alpha
    if rule == "opt":
        return _max_prob(qu) < _max_prob(pu) - alpha * (p - q).clamp_min(0).sum(-1)
    if rule in _REGISTERED:
        decision = torch.as_tensor(_REGISTERED[rule](q, p, alpha, qu, pu))
        if decision.shape != q.shape[:-1]:
            raise ValueError(
                f"the decision of rule {rule!r} has shape {tuple(decision.shape)}; its `decide` must "
                f"return one value per position, shape {tuple(q.shape[:-1])}."
            )
        return decision.to(torch.bool)
    d = (pu - qu).clamp_min(0).sum(-1) if distance is None else torch.as_tensor(distance(qu, pu))
    if torch.isnan(d).any():  # NaN > alpha is False: every position would silently keep the draft
        raise ValueError(
            "the distance gave NaN; BiLD's distance must be a number at every position (the default, "
            "D_TV, is; a custom `distance` must not divide by zero or take the log of 0)."
        )
    return d > alpha


def acceptance_set(rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None) -> torch.Tensor:
    r"""The token-specific acceptance set $A$ as a boolean mask of shape `(..., V)`.

    - `token_v1`: $A = \{v : q(v) \ge \max_u p(u) - \alpha\}$
    - `token_v2`: $A = \{v : p(v) \ge \max_u p(u) - \alpha\}$
    - `token_v3`: $A = \{v : p(v) \ge (1 - \alpha) \max_u p(u)\}$

    computed from the temperature-1 probabilities `q_unscaled`, `p_unscaled` (default `q`, `p`).
    """
    check_rule(rule)
    if rule not in TOKEN_RULES:
        raise ValueError(f"rule {rule!r} has no acceptance set; use one of {', '.join(TOKEN_RULES)}.")
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    qu, pu = _unscaled(q, p, q_unscaled, p_unscaled)
    top_p = _max_prob(pu).unsqueeze(-1)
    if rule == "token_v1":
        return qu >= top_p - alpha
    if rule == "token_v2":
        return pu >= top_p - alpha
    return pu >= (1.0 - alpha) * top_p


def deferral_weight(
    rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None, distance: Optional[Distance] = None
) -> torch.Tensor:
    r"""How much of the target's mass comes from the verifier, shape `(...)`.

    For the prefix rules this is $\delta$ (0 or 1), for the token rules $1 - \sum_{u \in A} q(u)$,
    for `mixture` the constant $1 - \alpha$, for `spec`/`verifier` 1 and for `drafter` 0. The lossy target
    is not a mixture: NaN.
    For the rules of `WEIGHT_RULES` it is their own weight, clipped to $[0, 1]$.
    Averaged over positions it is the *deferral rate*.
    """
    check_rule(rule)
    q, p = check_pair(q, p)
    ones = q.new_ones(q.shape[:-1])
    if rule in ("spec", "verifier"):
        return ones
    if rule == "drafter":
        return torch.zeros_like(ones)
    if rule == "lossy":
        return torch.full_like(ones, float("nan"))
    if rule == "mixture":
        return ones * (1.0 - check_alpha(rule, alpha))
    if rule in WEIGHT_RULES:
        qu, pu = _unscaled(q, p, q_unscaled, p_unscaled)
        r = torch.as_tensor(_REGISTERED[rule](q, p, check_alpha(rule, alpha), qu, pu))
        if r.shape != q.shape[:-1]:
            raise ValueError(
                f"the weight of rule {rule!r} has shape {tuple(r.shape)}; its function must "
                f"return one value per position, shape {tuple(q.shape[:-1])}."
            )
        return r.to(q.dtype).clamp(0.0, 1.0)
    kw = dict(q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    if rule in PREFIX_RULES:
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
    - `bild`, `chow`, `diff`, `opt` (and registered rules): $\pi = (1-\delta)\,q + \delta\,p$
      (equation 6), $\delta$ from `deferral_decision`.
    - `mixture`: $\pi = \alpha\,q + (1-\alpha)\,p$, a constant weight (transformers' ensemble,
      $w = 1 - \alpha$).
    - `token_v1..3`: $\pi(v) = q(v)1(v \in A) + (1 - \sum_{u\in A} q(u))\,p(v)$, $A$ from
      `acceptance_set`.

    `q`, `p` are the temperature-scaled distributions that are sampled and mixed; `q_unscaled`,
    `p_unscaled` (default `q`, `p`) are the temperature-1 ones used for decisions.
    """
    check_rule(rule)
    alpha = check_alpha(rule, alpha)
    q, p = check_pair(q, p)
    if rule == "drafter":
        return q.clone()
    if rule in ("verifier", "spec"):
        return p.clone()
    if rule == "lossy":
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
    if rule in PREFIX_RULES or rule == "mixture" or rule in WEIGHT_RULES:
        return (1.0 - w) * q + w * p
    in_set = acceptance_set(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    return q * in_set + w * p
