"""What the block-cost model predicts on a calibration, for notebook 09's views: the speed-up against gamma
on this machine and in the textbook, at another acceptance and drafter cost (`what_if`, the sliders) or
on the measured machine (`block_costs`)."""

from __future__ import annotations

from typing import Dict, List, Optional

from ...maths import latency
from ..calibration import Calibration

__all__ = ["gamma_range", "scaled_calibration", "what_if", "block_costs"]


def gamma_range(calibration: Calibration, max_gamma: Optional[int]) -> List[int]:
    """gamma = 0 (the verifier alone) up to `max_gamma` (default: the largest the calibration measured)."""
    return list(range(0, (calibration.max_k - 1 if max_gamma is None else max_gamma) + 1))


# ---- what if: another acceptance, another drafter (notebook 09's sliders) --------------------


def scaled_calibration(calibration: Calibration, cost_ratio: float) -> Calibration:
    """The same verifier costs with a drafter step of `cost_ratio` x t_p(1) (overheads folded in)."""
    ks = range(1, calibration.max_k + 1)
    t_p = [calibration.t_p(k) for k in ks]
    return Calibration.synthetic(cost_ratio * t_p[0], t_p, note=f"c = {cost_ratio}")


def what_if(
    acceptance: float,
    cost_ratio: float,
    calibration: Calibration,
    *,
    max_gamma: Optional[int] = None,
    grid: int = 41,
) -> Dict:
    """Numbers of the slider view: speed-up against gamma here and in the textbook at (a, c); the
    break-even acceptance against c for gamma* (here and textbook); the best gamma and its speed-up."""
    a = float(acceptance)
    latency.expected_tokens_per_call(a, 1)  # checks a
    latency.textbook_speedup(a, 1, cost_ratio)  # checks c
    here = scaled_calibration(calibration, float(cost_ratio))
    flat = here.textbook()
    gammas = gamma_range(calibration, max_gamma)
    best_here, best_flat = here.best_gamma(a, gammas[-1]), flat.best_gamma(a, gammas[-1])
    cs = [i * 1.0 / (grid - 1) for i in range(grid)]

    def threshold(cal: Calibration) -> List[Optional[float]]:
        # the least acceptance at which some gamma >= 1 beats the verifier alone
        out = []
        for c in cs:
            scaled = scaled_calibration(cal, c)
            found = [latency.break_even_acceptance(g, scaled.t_q(), scaled.t_p) for g in gammas[1:]]
            found = [f for f in found if f is not None]
            out.append(min(found) if found else None)
        return out

    return dict(
        acceptance=a,
        cost_ratio=float(cost_ratio),
        gammas=gammas,
        speedup_here=[here.speedup(g, a) for g in gammas],
        speedup_textbook=[flat.speedup(g, a) for g in gammas],
        best_gamma_here=best_here,
        best_speedup_here=here.speedup(best_here, a),
        best_gamma_textbook=best_flat,
        best_speedup_textbook=flat.speedup(best_flat, a),
        cost_ratios=cs,
        break_even_here=threshold(calibration),
        break_even_textbook=threshold(calibration.textbook()),
    )


def block_costs(calibration: Calibration, acceptance: float, max_gamma: Optional[int] = None) -> Dict:
    """Numbers of the measured machine's figure: the verifier's cost of scoring k tokens relative to one
    (`relative_cost`, k = 1..max_k) and the drafter's step (`cost_ratio`, c); the predicted speed-up
    against gamma at `acceptance` here and in the textbook (blocks as cheap as one step), and the best
    gamma."""
    ks = list(range(1, calibration.max_k + 1))
    t1 = calibration.t_p(1)
    flat = calibration.textbook()
    gammas = gamma_range(calibration, max_gamma)
    return dict(
        ks=ks,
        relative_cost=[calibration.t_p(k) / t1 for k in ks],
        cost_ratio=calibration.cost_ratio,
        gammas=gammas,
        speedup_here=[calibration.speedup(g, acceptance) for g in gammas],
        speedup_textbook=[flat.speedup(g, acceptance) for g in gammas],
        best_gamma=calibration.best_gamma(acceptance, max_gamma),
    )
