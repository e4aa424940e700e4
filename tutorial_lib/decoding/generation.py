"""What `generate` returns: a `Generation` (the tokens, the counters that price the run) and, per emitted
token, a `TraceStep` saying how it came about; `emit_verified_block` records one verified block of
Algorithm 4 that way, for the engine and the block batch alike."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

__all__ = ["Generation", "TraceStep", "emit_verified_block"]

_NAN = float("nan")


@dataclass
class TraceStep:
    r"""One emitted token and how it came about.

    `source` is `"draft"` (an accepted draft), `"residual"` (resampled after a rejection), `"bonus"`
    (after a fully accepted block), `"drafter"` / `"verifier"` (sampled from that model directly).
    `q`, `p`, `pi` are the (temperature-scaled) probabilities of the token under each law (NaN when
    that law was not computed); `deferral` is the weight the target put on `p` at this position
    (the decision $\delta$ for prefix rules, $1 - q(A)$ for token rules; NaN where undefined).
    """

    token: int
    source: str
    accepted: Optional[bool] = None
    q: float = _NAN
    p: float = _NAN
    pi: float = _NAN
    deferral: float = _NAN


def emit_verified_block(
    emit: Callable[[TraceStep], None],
    counts: Dict[str, int],
    drafts: Sequence[int],
    verdict,
    row: int,
    q,
    p,
    pi,
    weight,
    bonus_step: Optional[Callable[[int], TraceStep]] = None,
) -> None:
    """Record row `row` of a `maths.verification.BlockVerdict` on `drafts`: each accepted draft, then the
    residual's draw at a rejection or, after a full block, the bonus token (`bonus_step(token)` says how it
    came about; None: no bonus was drawn), with the counters `n_drafted`, `n_accepted`, `n_rejected`.
    `q`, `p`, `pi` (shape `(n, V)`) and `weight` (`(n,)`) are the block's laws and deferral weights."""
    n_accepted, extra = int(verdict.n_accepted[row]), int(verdict.extra[row])
    counts["n_drafted"] += len(drafts)
    counts["n_accepted"] += n_accepted
    for j, x in enumerate(drafts[:n_accepted]):
        emit(
            TraceStep(
                x,
                "draft",
                True,
                q=float(q[j, x]),
                p=float(p[j, x]),
                pi=float(pi[j, x]),
                deferral=float(weight[j]),
            )
        )
    if bool(verdict.rejected[row]):
        counts["n_rejected"] += 1
        j, y = n_accepted, extra
        emit(
            TraceStep(
                y,
                "residual",
                False,
                q=float(q[j, y]),
                p=float(p[j, y]),
                pi=float(pi[j, y]),
                deferral=float(weight[j]),
            )
        )
    elif extra >= 0 and bonus_step is not None:
        emit(bonus_step(extra))


@dataclass
class Generation:
    """The output of `generate`, with the counters that price it."""

    tokens: List[int]
    text: str
    prompt_tokens: List[int]
    method: str
    rule: Optional[str]
    alpha: float
    gamma: int  # "auto" for gamma="auto" (the chosen sizes are in `gammas`)
    temperature: float
    n_verifier_calls: int = 0
    n_drafter_calls: int = 0
    n_drafted: int = 0  # every drafted token, including those discarded after a rejection
    n_accepted: int = 0  # drafts the verifier accepted
    n_rejected: int = 0  # drafts the verifier rejected (at most one per call)
    wall_time_s: float = 0.0
    drafter_time_s: float = 0.0
    verifier_time_s: float = 0.0
    stopped_at_eos: bool = False
    #: `method="bild"`'s rollback threshold on -log p(draft) (its `alpha` is then NaN); None otherwise.
    bild_threshold: Optional[float] = None
    #: gamma="auto": the block size chosen before each block, in order (0: one plain verifier step).
    gammas: List[int] = field(default_factory=list)
    #: gamma="auto": what the policy knew at the end, per block size (`AutoGamma.cost_table`: the
    #: calibration's block seconds, the blocks it timed while decoding, their mean, its estimate) and its
    #: acceptance estimate.
    auto_costs: List[dict] = field(default_factory=list)
    auto_acceptance: Optional[float] = None
    #: What prices the run (`tutorial_lib.stats.pricing`): per model, `<model>_calls_by_k[k - 1]` decoder
    #: calls that fed k tokens (its prefill excepted), `<model>_prefills` passes over a decoder-only model's
    #: prompt, `<model>_encoder_passes` encoder passes of an encoder-decoder. None: not counted.
    drafter_calls_by_k: Optional[List[int]] = None
    verifier_calls_by_k: Optional[List[int]] = None
    drafter_prefills: int = 0
    verifier_prefills: int = 0
    drafter_encoder_passes: int = 0
    verifier_encoder_passes: int = 0
    trace: List[TraceStep] = field(default_factory=list, repr=False)
    #: Per model, every `(position, token)` its forward passes received, in order (cache discipline).
    feed_log: dict = field(default_factory=dict, repr=False)

    def call_counts(self) -> dict:
        """The counters that price the run (`tutorial_lib.stats.pricing`), as a row stores them."""
        return {
            f"{m}_{c}": getattr(self, f"{m}_{c}")
            for m in ("drafter", "verifier")
            for c in ("calls_by_k", "prefills", "encoder_passes")
        }

    @property
    def rejection_rate(self) -> float:
        """Rejected drafts / drafts judged (drafts after a rejection are discarded, never judged)."""
        judged = self.n_accepted + self.n_rejected
        return self.n_rejected / judged if judged else 0.0

    @property
    def deferral_rate(self) -> float:
        """Mean weight the target put on the verifier, over the positions where it is defined."""
        values = [s.deferral for s in self.trace if not math.isnan(s.deferral)]
        return sum(values) / len(values) if values else _NAN

    @property
    def mean_accepted_per_call(self) -> float:
        """Tokens emitted per verifier call (Spec-Bench's 'mean accepted tokens'); inf without calls."""
        return len(self.tokens) / self.n_verifier_calls if self.n_verifier_calls else math.inf

    def summary(self) -> dict:
        return {
            "method": self.method,
            "rule": self.rule,
            "alpha": self.alpha,
            "bild_threshold": self.bild_threshold,
            "gamma": self.gamma,
            "temperature": self.temperature,
            "n_tokens": len(self.tokens),
            "n_verifier_calls": self.n_verifier_calls,
            "n_drafter_calls": self.n_drafter_calls,
            "n_drafted": self.n_drafted,
            "n_accepted": self.n_accepted,
            "n_rejected": self.n_rejected,
            "rejection_rate": self.rejection_rate,
            "deferral_rate": self.deferral_rate,
            "mean_accepted_per_call": self.mean_accepted_per_call,
            "wall_time_s": self.wall_time_s,
            "drafter_time_s": self.drafter_time_s,
            "verifier_time_s": self.verifier_time_s,
        }
