r"""Target distributions, deferral rules and the accept/reject step of speculative cascades.

Every rule of Narasimhan et al. (ICLR 2025) is a *target function* $\pi = \mathbb{T}(q, p)$ of the
drafter's next-token distribution $q$ and the verifier's $p$ (Table 1 and the token-specific rules):

| rule        | decision                                                   | target $\pi(v)$                                      |
|-------------|------------------------------------------------------------|------------------------------------------------------|
| `spec`      | -                                                          | $p(v)$                                               |
| `lossy`     | -                                                          | $\max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$   |
| `bild`      | $\delta = 1(D(q, p) > \alpha)$                             | $(1-\delta)\,q(v) + \delta\,p(v)$                    |
| `chow`      | $\delta = 1(\max_v q(v) < 1 - \alpha)$                     | same mixture                                         |
| `diff`      | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha)$           | same mixture                                         |
| `opt`       | $\delta = 1(\max_v q(v) < \max_v p(v) - \alpha D_{TV}(p,q))$ | same mixture                                       |
| `token_v1`  | $A = \{v : q(v) \ge \max_u p(u) - \alpha\}$                | $q(v)1(v \in A) + (1 - \sum_{u \in A} q(u))\,p(v)$   |
| `token_v2`  | $A = \{v : p(v) \ge \max_u p(u) - \alpha\}$                | same form                                            |
| `token_v3`  | $A = \{v : p(v) \ge (1 - \alpha)\max_u p(u)\}$             | same form                                            |
| `mixture`   | a constant weight $r = 1 - \alpha$ at every position        | $(1-r)\,q(v) + r\,p(v)$                              |

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
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Callable, Dict, Optional, Union

import torch

from ..checks import check_choice, check_real, check_temperature

__all__ = [
    "RULES", "PREFIX_RULES", "TOKEN_RULES", "ALPHA_RANGES", "LIVE_ALPHA_RANGES",
    "probabilities", "tv_distance", "target_distribution", "deferral_decision", "acceptance_set",
    "deferral_weight", "lossy_beta", "acceptance_probability", "residual_distribution",
    "rejection_probability", "output_distribution", "check_alpha", "check_pair", "alpha_grid", "sample",
    "target_and_draft", "trusted_inputs", "check_rule", "register_deferral_rule", "unregister_deferral_rule",
    "WEIGHT_RULES",
]

#: Every rule `target_distribution` knows.
RULES = ("drafter", "verifier", "spec", "lossy", "bild", "chow", "diff", "opt",
         "token_v1", "token_v2", "token_v3", "mixture")
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


def register_deferral_rule(name: str, decide: Decide, alpha_range=(-math.inf, math.inf), *,
                           weight: bool = False) -> str:
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
        raise TypeError(f"decide={decide!r} is not callable; pass a function "
                        "decide(q, p, alpha, q_unscaled, p_unscaled) -> bool tensor.")
    low, high = (float(a) for a in alpha_range)
    if not low < high:
        raise ValueError(f"alpha_range={alpha_range!r} is empty; pass (low, high) with low < high.")
    _REGISTERED[name] = decide
    ALPHA_RANGES[name] = LIVE_ALPHA_RANGES[name] = (low, high)
    PREFIX_RULES, WEIGHT_RULES = (tuple(r for r in kind if r != name)
                                  for kind in (PREFIX_RULES, WEIGHT_RULES))
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
        raise ValueError(f"name={name!r} was not registered; registered rules: {sorted(_REGISTERED) or 'none'}.")
    del _REGISTERED[name], ALPHA_RANGES[name], LIVE_ALPHA_RANGES[name]
    RULES, PREFIX_RULES, WEIGHT_RULES = (tuple(r for r in kind if r != name)
                                         for kind in (RULES, PREFIX_RULES, WEIGHT_RULES))



# --------------------------------------------------------------------------------------------
# Input checks: every public function validates, and says what to change.
# --------------------------------------------------------------------------------------------

def _sum_tolerance(x: torch.Tensor) -> float:
    return 1e-2 if x.dtype in (torch.float16, torch.bfloat16) else 1e-4


class _Checks(threading.local):
    """Whether input checks run, per thread: a view redrawn on a timer thread while the main thread
    decodes must not leave the other's checks switched off when the two blocks interleave."""
    enabled = True


_CHECKS = _Checks()


@contextlib.contextmanager
def trusted_inputs():
    """Skip the input checks inside this block.

    The engine builds every law with `probabilities`, so they are valid by construction; the checks
    would cost more than the arithmetic on small vocabularies. Use it only for such inputs.
    """
    previous = _CHECKS.enabled
    _CHECKS.enabled = False
    try:
        yield
    finally:
        _CHECKS.enabled = previous


def _as_probabilities(x, name: str) -> torch.Tensor:
    x = torch.as_tensor(x)
    if not torch.is_floating_point(x):
        x = x.to(torch.get_default_dtype())
    if not _CHECKS.enabled:
        return x
    if x.ndim == 0:
        raise ValueError(f"{name} must have a vocabulary dimension (shape (..., V)), got a scalar.")
    if x.shape[-1] == 0:
        raise ValueError(f"{name} has an empty vocabulary; pass at least one token's probability.")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} contains NaN or infinite values; pass probabilities, "
                         "or convert logits with `probabilities(logits, temperature)`.")
    if (x < 0).any():
        raise ValueError(f"{name} has negative entries; pass probabilities, not logits "
                         "(convert with `probabilities(logits, temperature)`).")
    total = x.sum(-1)
    bad = (total - 1).abs() > _sum_tolerance(x)
    if bad.any():
        worst = total[bad].flatten()[0].item()
        raise ValueError(f"{name} does not sum to one over the vocabulary (a row sums to {worst:.6g}); "
                         "normalise it or build it with `probabilities(logits, temperature)`.")
    return x


def check_pair(q, p, q_name: str = "q", p_name: str = "p"):
    """`(q, p)` as tensors of probabilities over one vocabulary, of one shape and one dtype.

    Raises `ValueError` (naming `q_name` / `p_name`) for anything else; its value checks are skipped inside `trusted_inputs`.
    """
    q, p = _as_probabilities(q, q_name), _as_probabilities(p, p_name)
    if q.shape[-1] != p.shape[-1]:
        raise ValueError(f"{q_name} has a vocabulary of {q.shape[-1]} tokens but {p_name} has "
                         f"{p.shape[-1]}: the drafter and verifier must share one vocabulary "
                         "(the same tokenizer).")
    if q.shape != p.shape:
        raise ValueError(f"{q_name} has shape {tuple(q.shape)} but {p_name} has {tuple(p.shape)}; "
                         "pass one distribution per position for both models.")
    dtype = torch.promote_types(q.dtype, p.dtype)
    return q.to(dtype), p.to(dtype)


def check_alpha(rule: str, alpha: float) -> float:
    """Raise `ValueError` unless `alpha` lies in `ALPHA_RANGES[rule]` (rules without a range ignore it)."""
    check_rule(rule)
    alpha = check_real(alpha, "alpha", finite=True)  # named as infinite, not as outside [-inf, inf]
    if rule not in ALPHA_RANGES:
        return alpha
    low, high = ALPHA_RANGES[rule]
    if rule == "lossy":
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha={alpha} is outside [0, 1) for rule 'lossy'; the target divides "
                             "p by (1 - alpha), so pick 0 <= alpha < 1.")
    elif not (low <= alpha <= high) or math.isinf(alpha):
        raise ValueError(f"alpha={alpha} is outside the range [{low}, {high}] of rule {rule!r}; "
                         f"at {low} the rule is SpecDecode-like and at {high} drafter-only.")
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
# Basic quantities
# --------------------------------------------------------------------------------------------

def probabilities(logits, temperature: float = 1.0) -> torch.Tensor:
    r"""Temperature-scaled next-token probabilities $\mathrm{softmax}(\text{logits} / T)$.

    At $T = 0$ this is the one-hot vector of the argmax (the first one on ties), never a division
    by zero. Half-precision logits are upcast to float32 before the softmax.
    """
    logits = torch.as_tensor(logits)
    if not torch.is_floating_point(logits):
        logits = logits.to(torch.get_default_dtype())
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    temperature = check_temperature(temperature)
    if torch.isnan(logits).any() or (logits == math.inf).any():
        raise ValueError("logits contain NaN or +inf; check the model's forward pass.")
    if logits.shape[-1] == 0 or (logits == -math.inf).all(-1).any():
        raise ValueError("every logit of a row is -inf; at least one token must stay possible.")
    if temperature == 0.0:
        one_hot = torch.zeros_like(logits)
        return one_hot.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    # Shifting by the max first keeps a tiny temperature from overflowing to inf / inf.
    shifted = logits - logits.max(-1, keepdim=True).values
    if temperature < torch.finfo(shifted.dtype).tiny:  # T itself would round to 0 (0 / 0 = NaN): divide in float64
        return torch.softmax(shifted.double() / temperature, dim=-1).to(shifted.dtype)
    return torch.softmax(shifted / temperature, dim=-1)


def tv_distance(p, q) -> torch.Tensor:
    r"""Total variation distance $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$, shape `(...)`."""
    q, p = check_pair(q, p)
    return (p - q).clamp_min(0).sum(-1)


def _max_prob(x: torch.Tensor) -> torch.Tensor:
    return x.max(-1).values


# --------------------------------------------------------------------------------------------
# Deferral decisions and acceptance sets
# --------------------------------------------------------------------------------------------

def _unscaled(q, p, q_unscaled, p_unscaled):
    qu = q if q_unscaled is None else _as_probabilities(q_unscaled, "q_unscaled")
    pu = p if p_unscaled is None else _as_probabilities(p_unscaled, "p_unscaled")
    if qu.shape != q.shape or pu.shape != p.shape:
        raise ValueError("q_unscaled and p_unscaled must have the shapes of q and p "
                         f"(got {tuple(qu.shape)} and {tuple(pu.shape)} for {tuple(q.shape)}).")
    return qu.to(q.dtype), pu.to(p.dtype)


def deferral_decision(rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None,
                      distance: Optional[Distance] = None) -> torch.Tensor:
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
        raise ValueError(f"rule {rule!r} makes no prefix-level decision; use one of "
                         f"{', '.join(PREFIX_RULES)} (token rules have `acceptance_set`).")
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
            raise ValueError(f"the decision of rule {rule!r} has shape {tuple(decision.shape)}; its `decide` must "
                             f"return one value per position, shape {tuple(q.shape[:-1])}.")
        return decision.to(torch.bool)
    d = (pu - qu).clamp_min(0).sum(-1) if distance is None else torch.as_tensor(distance(qu, pu))
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


def deferral_weight(rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None,
                    distance: Optional[Distance] = None) -> torch.Tensor:
    r"""How much of the target's mass comes from the verifier, shape `(...)`.

    For the prefix rules this is $\delta$ (0 or 1), for the token rules $1 - \sum_{u \in A} q(u)$,
    for `mixture` the constant $1 - \alpha$, for `spec`/`verifier` 1 and for `drafter` 0. The lossy target is not a mixture: NaN.
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
            raise ValueError(f"the weight of rule {rule!r} has shape {tuple(r.shape)}; its function must "
                             f"return one value per position, shape {tuple(q.shape[:-1])}.")
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


def target_distribution(rule: str, q, p, alpha: float = 0.0, *, q_unscaled=None, p_unscaled=None,
                        beta: Beta = 1.0, distance: Optional[Distance] = None) -> torch.Tensor:
    r"""The target $\pi = \mathbb{T}(q, p)$ of `rule`, shape `(..., V)` (see the module's table).

    - `drafter`: $\pi = q$; `verifier` and `spec`: $\pi = p$ (Algorithm 1).
    - `lossy`: $\pi(v) = \max\{\min\{q(v), p(v)/(1-\alpha)\}, p(v)/\beta\}$ with $\beta \ge 1-\alpha$
      (Lemma 2). `beta=1` is the common heuristic (the target then sums to more than one and the
      output law is `output_distribution(pi, q)`); `beta="normalize"` is Lossy*, see `lossy_beta`.
    - `bild`, `chow`, `diff`, `opt` (and registered rules): $\pi = (1-\delta)\,q + \delta\,p$
      (equation 6), $\delta$ from `deferral_decision`.
    - `mixture`: $\pi = \alpha\,q + (1-\alpha)\,p$, a constant weight (transformers' ensemble, $w = 1 - \alpha$).
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
                raise ValueError(f"beta={beta!r} is not understood; pass a number >= 1 - alpha "
                                 "or 'normalize' for the normalising beta (Lossy*).")
            pi = _lossy_target(q, p, alpha, lossy_beta(q, p, alpha).unsqueeze(-1))
            return pi / pi.sum(-1, keepdim=True)  # removes the bisection's last rounding error
        beta_value = check_real(beta, "beta", finite=True)  # NaN named as NaN, not as below 1 - alpha
        if not beta_value >= 1.0 - alpha - 1e-12 or beta_value <= 0:
            raise ValueError(f"beta={beta_value} is below 1 - alpha = {1 - alpha:.6g}; the lossy target "
                             "needs beta >= 1 - alpha (beta = 1 is the usual choice).")
        return _lossy_target(q, p, alpha, beta_value)
    w = deferral_weight(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled,
                        distance=distance).unsqueeze(-1)
    if rule in PREFIX_RULES or rule == "mixture" or rule in WEIGHT_RULES:
        return (1.0 - w) * q + w * p
    in_set = acceptance_set(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    return q * in_set + w * p


# --------------------------------------------------------------------------------------------
# The accept/reject step of Algorithm 4
# --------------------------------------------------------------------------------------------

def target_and_draft(pi, q):
    """`pi` and `q` as tensors of one floating dtype, checked (unless inside `trusted_inputs`)."""
    pi = torch.as_tensor(pi)
    if not torch.is_floating_point(pi):
        pi = pi.to(torch.get_default_dtype())
    if not _CHECKS.enabled:
        q = torch.as_tensor(q)
        dtype = torch.promote_types(pi.dtype, q.dtype)
        return pi.to(dtype), q.to(dtype)
    if not torch.isfinite(pi).all() or (pi < 0).any():
        raise ValueError("pi must be finite and non-negative; build it with `target_distribution`.")
    if pi.shape[-1] == 0 or (pi.sum(-1) <= 0).any():
        raise ValueError("pi has zero total mass at some position; a target must put mass somewhere.")
    q = _as_probabilities(q, "q")
    if pi.shape != q.shape:
        raise ValueError(f"pi has shape {tuple(pi.shape)} but q has {tuple(q.shape)}; both need one "
                         "row per position over the same vocabulary.")
    dtype = torch.promote_types(pi.dtype, q.dtype)
    return pi.to(dtype), q.to(dtype)


def acceptance_probability(pi, q, tokens) -> torch.Tensor:
    r"""$\min\{1, \pi(x)/q(x)\}$ for the drafted `tokens` $x$ (shape `(...)`, integer ids).

    A token the drafter gives probability 0 cannot be drafted; it is given acceptance 1.
    """
    pi, q = target_and_draft(pi, q)
    tokens = torch.as_tensor(tokens, dtype=torch.long, device=q.device)
    if tokens.shape != q.shape[:-1]:
        raise ValueError(f"tokens has shape {tuple(tokens.shape)}; expected {tuple(q.shape[:-1])}, "
                         "one drafted token per position.")
    if ((tokens < 0) | (tokens >= q.shape[-1])).any():
        raise ValueError(f"tokens must be ids in [0, {q.shape[-1]}).")
    pi_x = pi.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q_x = q.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    ratio = torch.where(q_x > 0, pi_x / torch.where(q_x > 0, q_x, torch.ones_like(q_x)),
                        torch.ones_like(q_x))
    return ratio.clamp(max=1.0)


def residual_distribution(pi, q) -> torch.Tensor:
    r"""The distribution a rejected draft is replaced from: $\mathrm{norm}(\max\{0, \pi - q\})$.

    Where $\max\{0, \pi - q\}$ has no mass (for example $\pi = q$) no draft is ever rejected; the
    function then returns $\mathrm{norm}(\pi)$ so the result is always a valid distribution (no NaN).
    """
    pi, q = target_and_draft(pi, q)
    excess = (pi - q).clamp_min(0)
    mass = excess.sum(-1, keepdim=True)
    fallback = pi / pi.sum(-1, keepdim=True)
    safe_mass = torch.where(mass > 0, mass, torch.ones_like(mass))
    return torch.where(mass > 0, excess / safe_mass, fallback)


def rejection_probability(pi, q) -> torch.Tensor:
    r"""Chance that a draft $x \sim q$ is rejected: $\sum_x q(x)(1 - \min\{1, \pi(x)/q(x)\})
    = \sum_v \max\{0, q(v) - \pi(v)\}$. For a mixture this is $r\, D_{TV}(p, q)$ (Lemma 3)."""
    pi, q = target_and_draft(pi, q)
    return (q - pi).clamp_min(0).sum(-1)


def output_distribution(pi, q) -> torch.Tensor:
    r"""Law of the token Algorithm 4 emits at one position:
    $\min\{q, \pi\} + (\sum_v \max\{0, q(v) - \pi(v)\}) \cdot \mathrm{norm}(\max\{0, \pi - q\})$.

    It equals $\pi$ whenever $\pi$ sums to one (every rule except `lossy` with a fixed `beta`).
    """
    pi, q = target_and_draft(pi, q)
    return torch.minimum(q, pi) + rejection_probability(pi, q).unsqueeze(-1) * residual_distribution(pi, q)


def sample(probs, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """One token id per row of `probs` (shape `(..., V)` -> `(...)`)."""
    probs = torch.as_tensor(probs)
    flat = probs.reshape(-1, probs.shape[-1])           # (N, V)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
