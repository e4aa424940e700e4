r"""`gamma="auto"`: each block drafts the number of tokens the block-cost model says is fastest.

Before every block the engine asks `AutoGamma.next_gamma()`. With the machine's measured $t_q$ and
$t_p(k)$ (a `calibration.Calibration`) and the current estimate $\hat a$ of the per-position
acceptance, it returns

$$\gamma^* = \arg\min_{0 \le \gamma \le \gamma_{max}} \bigl(\gamma\, t_q + t_p(\gamma + 1)\bigr)
              \frac{1 - \hat a}{1 - \hat a^{\gamma + 1}}$$

(`Calibration.time_per_token`, with the drafter's catch-up call where it was measured), where $\gamma = 0$ is one plain step of the verifier: nothing pays, so do not
speculate. After the block the engine reports how many drafts were judged and kept (`observe`).
The estimate is the mean of a Beta posterior: a prior acceptance $a_0$ worth $n_0$ drafts, then the
counts,

$$\hat a = \frac{a_0 n_0 + \text{accepted}}{n_0 + \text{judged}},$$

so it starts at $a_0$ and follows the text once more than a few drafts were judged. Decisions are
made at an optimistic reading of that posterior, its `optimism` quantile (0.9 by default;
`optimism=None` decides at the mean): while few drafts were judged the quantile is high, so the
policy drafts and learns $a$; as the counts grow the quantile closes on the mean. Deciding at the
mean alone gets stuck: a prior below the true $a$ can make $\gamma = 0$ look best before any draft
was seen, and a plain step judges no draft, so the estimate never moves (seen on the Qwen pair: prior
0.7, true $a \approx 0.95$, 288 plain steps in a row, 16% slower than $\gamma = 5$).

**Exactness.** The block size is chosen from what was already emitted, never from the drafts the
block is about to judge, so each block still emits tokens with Algorithm 4's law given the prefix
(Leviathan et al.'s argument holds for any block size); a plain verifier step emits from $p$. For
`rule="spec"` every token follows $p$ ($\pi = p$), so the output is the verifier's law, and at
$T = 0$ its greedy text, whatever gammas were chosen. For the other rules a plain step would emit from
$p$ where the rule's target is $\pi$, so `allow_zero=False` (the engine sets it) keeps $\gamma \ge 1$.

A policy reaching 0 stops drafting, so it learns nothing more about $a$ in that call; with the
optimistic quantile it reaches 0 only once the drafts seen make speculation unlikely to pay (or when
no acceptance could make it pay, as on a machine where a block costs much more than one step).
"""
from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import scipy.stats

from ..maths import latency
from .calibration import Calibration, calibrate

__all__ = ["AutoGamma", "auto_policy", "calibration_for"]


@dataclass
class AutoGamma:
    """The gamma="auto" policy: a calibration, a prior on the acceptance, and the counts so far."""
    calibration: Calibration
    max_gamma: Optional[int] = None          # default: the largest gamma the calibration measured (max_k - 1)
    prior_acceptance: float = 0.7
    prior_strength: float = 4.0              # how many drafts the prior is worth
    allow_zero: bool = True
    #: decide at this quantile of the Beta posterior of the acceptance (None: at its mean)
    optimism: Optional[float] = 0.9
    accepted: int = 0
    judged: int = 0
    #: `(gamma, acceptance estimate)` of every decision, in order.
    decisions: List[Tuple[int, float]] = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.calibration, Calibration):
            raise TypeError(f"AutoGamma needs a tutorial_lib.calibration.Calibration, not {type(self.calibration).__name__}; "
                            "make one with tl.calibration.calibrate(pair) or Calibration.synthetic(...).")
        top = self.calibration.max_k - 1
        if self.max_gamma is None:
            self.max_gamma = top
        if isinstance(self.max_gamma, bool) or not isinstance(self.max_gamma, int) or self.max_gamma < 1:
            raise ValueError(f"max_gamma={self.max_gamma!r}: allow blocks of at least one draft (max_gamma >= 1).")
        latency.expected_tokens_per_call(self.prior_acceptance, 1)  # checks 0 <= a0 <= 1
        if not self.prior_strength > 0:
            raise ValueError(f"prior_strength={self.prior_strength}: the prior is worth a positive number of drafts.")
        if self.optimism is not None and not 0.0 < self.optimism < 1.0:
            raise ValueError(f"optimism={self.optimism!r}: pass a quantile strictly between 0 and 1, or None to "
                             "decide at the posterior mean.")

    @property
    def acceptance(self) -> float:
        """$\\hat a$: the posterior mean of the per-position acceptance."""
        return ((self.prior_acceptance * self.prior_strength + self.accepted) /
                (self.prior_strength + self.judged))

    @property
    def decision_acceptance(self) -> float:
        """The acceptance decisions use: the posterior's `optimism` quantile, or its mean."""
        if self.optimism is None:
            return self.acceptance
        kept = self.prior_acceptance * self.prior_strength + self.accepted
        lost = (1.0 - self.prior_acceptance) * self.prior_strength + (self.judged - self.accepted)
        if lost <= 0.0:
            return 1.0
        if kept <= 0.0:
            return 0.0
        return float(scipy.stats.beta.ppf(self.optimism, kept, lost))

    def next_gamma(self, remaining: Optional[int] = None) -> int:
        """The block size for the next block (0: one plain verifier step), at most `remaining` drafts."""
        a = self.decision_acceptance
        top = self.max_gamma if remaining is None else max(1, min(self.max_gamma, int(remaining)))
        calibration = self.calibration
        costs = [calibration.time_per_token(g, a) for g in range(0 if self.allow_zero else 1, top + 1)]
        gamma = costs.index(min(costs)) + (0 if self.allow_zero else 1)
        self.decisions.append((gamma, a))
        return gamma

    def observe(self, n_accepted: int, n_judged: int) -> None:
        """After a block: `n_judged` drafts were judged (kept or rejected), `n_accepted` of them kept."""
        if not 0 <= n_accepted <= n_judged:
            raise ValueError(f"observe({n_accepted}, {n_judged}): kept drafts are among the judged ones.")
        self.accepted += int(n_accepted)
        self.judged += int(n_judged)

    @property
    def gammas(self) -> List[int]:
        return [g for g, _ in self.decisions]

    def fresh(self, **changes) -> "AutoGamma":
        """A new policy with the same calibration and prior and no counts (one per `generate` call)."""
        return dataclasses.replace(self, accepted=0, judged=0, decisions=[], **changes)


# One calibration per loaded pair (and its devices and dtypes), measured the first time gamma="auto" meets it.
_CALIBRATIONS: dict = {}


def calibration_for(drafter, verifier, *, decode: Callable, **options) -> Calibration:
    """The pair's calibration: measured once (`calibration.calibrate(drafter, verifier, decode=decode,
    **options)`), then reused. `decode` is the engine's `generate`, passed in by the engine that asks.

    Kept for as long as both models live, per device and dtype: moving a model measures again.
    """
    key = (id(drafter), id(verifier), str(drafter.device), str(verifier.device), drafter.dtype, verifier.dtype)
    held = _CALIBRATIONS.get(key)
    if held is None or held[0]() is not drafter or held[1]() is not verifier:
        for stale in [k for k, (d, v, _) in _CALIBRATIONS.items() if d() is None or v() is None]:
            del _CALIBRATIONS[stale]
        held = (weakref.ref(drafter), weakref.ref(verifier), calibrate(drafter, verifier, progress=False, decode=decode, **options))
        _CALIBRATIONS[key] = held
    return held[2]


def auto_policy(gamma, drafter, verifier, *, method: str, rule: Optional[str], bonus: str,
                decode: Callable) -> AutoGamma:
    """What `generate(..., gamma=...)` runs with when gamma is `"auto"` or an `AutoGamma`: a fresh policy.

    `"auto"` uses the pair's calibration (`calibration_for`, measured on first use); an `AutoGamma`
    brings its own calibration and prior (`decode`: the engine's `generate`, which the calibration
    times). Only `method="speculative"` with the paper's bonus token
    (`bonus="verifier"`, the block the cost model prices) chooses gamma; rules other than `"spec"`
    never take a plain verifier step (gamma >= 1), which would emit from p instead of their target.
    """
    if not (isinstance(gamma, AutoGamma) or (isinstance(gamma, str) and gamma == "auto")):
        raise ValueError(f"gamma={gamma!r}: pass a whole number >= 1, 'auto', or a gamma_policy.AutoGamma.")
    if method != "speculative":
        raise ValueError(f"gamma='auto' chooses the block size of method='speculative', not method={method!r}; "
                         "pass a whole number gamma.")
    if bonus != "verifier":
        raise ValueError(f"gamma='auto' prices blocks that end with the verifier's bonus token; use bonus='verifier' "
                         f"(not {bonus!r}) or a fixed gamma.")
    allow_zero = rule in (None, "spec")
    if isinstance(gamma, AutoGamma):
        return gamma.fresh(allow_zero=gamma.allow_zero and allow_zero)
    return AutoGamma(calibration_for(drafter, verifier, decode=decode), allow_zero=allow_zero)
