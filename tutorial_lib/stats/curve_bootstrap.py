r"""The paper's table with bootstrap intervals over items.

Per (task, temperature, gamma) and method (one curve: the method's configurations over its alpha
grid), the two numbers of the paper's table, computed from the measured curve by the rule of
`analysis` (points sorted by cost and joined by straight lines):

- (i) the cost reduction at the verifier's quality, $1 - x^*/x_p$, where $x^*$ is the smallest cost
  at which the interpolated curve first reaches the verifier's quality $Q_p$ and $x_p = 1$ the
  verifier's own cost;
- (ii) the best quality of the interpolated curve within the verifier's cost ($x \le 1$).

The cost axis $x$ is a parameter: a per-row column (`wall_time_s`, or the cost model's
`modelled_latency_s`) summed over the items and divided by the verifier's sum on the same items,
or `"rejection_rate"` ($\sum$ rejected / $\sum$ judged drafts; 0 for the drafter, 1 for the verifier:
the Gemma plots). Quality is the mean per-item quality, or corpus BLEU (`paired.item_scores`).

**Intervals.** Every number is recomputed on $B$ resamples of the items (`intervals.resample_items`,
the same resample for every configuration and the verifier, so $Q_p$ moves with the curves), and the
95% percentile interval is read off the resampled values (`intervals.percentile_interval`). A curve that does
not reach $Q_p$ in a resample counts as reduction $-\infty$ there (and best quality $-\infty$ when every point
costs more than the verifier), so a bound of $-\infty$ says "not reached in more than 2.5% of the resamples";
`reached_share` is the share of resamples in which it was reached. The point estimate alone decides "reached":
`NOT_REACHED` where the full-sample curve does not reach $Q_p$, whatever the interval.

**Curve ends** (`ends=True`): at `gamma = 1` (at any gamma on the rejection-rate axis), as
`analysis.with_rule_ends`, each speculative rule's
curve gets the drafter's quality at its drafter end (rejection rate 0; on a time axis SpecDecode's
cost per emitted token times the drafter's tokens, on the full sample) and SpecDecode's point at its
SpecDecode end (not Token-V3's), unless the rule measured that alpha itself.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np
import pandas as pd

from . import intervals
from .analysis import NOT_REACHED, best_quality_within, crossing_latency
from .intervals import resample_items
from .paired import ItemScores, item_scores
from ..maths.rules import LIVE_ALPHA_RANGES, has_spec_end

__all__ = ["REJECTION", "CurveBootstrap", "curve_bootstrap", "curve_table"]

REJECTION = "rejection_rate"


class CurveBootstrap:
    """The curves of one (task, temperature) on a cost axis, their statistics at all items (`point`)
    and on each resample (`distribution`): per curve `(label, gamma)` its reduction of cost at the
    verifier's quality and its best quality within the verifier's cost; entry 0 is the verifier's
    quality. `value(name, curve)` returns `(point, resampled values)`."""

    def __init__(
        self, scores: ItemScores, cost: str, *, ends: bool = True, budgets: Sequence[float] = (1.0,)
    ):
        self.scores, self.cost, self.budgets = scores, cost, [float(b) for b in budgets]
        configs = scores.configs
        self.verifier = scores.index("Verifier")
        if not self.verifier:
            raise ValueError(
                f"task {scores.task!r} at T={scores.temperature} has no verifier rows; include 'Verifier'."
            )
        if cost != REJECTION and cost not in scores.columns:
            raise ValueError(
                f"cost {cost!r} is not a row column here; choose {REJECTION!r} or one of "
                f"{', '.join(scores.columns)}."
            )
        # points: (label, gamma, alpha, end, quality row, cost kind, cost row)
        self.points = [
            (r.label, int(r.gamma), float(r.alpha), "", j, "own", j)
            for j, r in enumerate(configs.itertuples())
            if r.label != "Verifier"
        ]
        if ends:
            self.points += self._ends()
        self.curves = list(dict.fromkeys((p[0], p[1]) for p in self.points))

    def _ends(self) -> list:
        configs, out = self.scores.configs, []
        drafter = self.scores.index("Drafter")
        for gamma in sorted(set(configs["gamma"])):
            # on the rejection-rate axis both ends hold at any block size; on a time axis the drafter end's
            # cost is SpecDecode's per token only where one drafted token is judged per call
            if gamma != 1 and self.cost != REJECTION:
                continue
            spec = self.scores.index("SpecDecode", gamma)
            speculative = configs[
                (configs["gamma"] == gamma)
                & (configs["method"] == "speculative")
                & (configs["rule"] != "spec")
            ]
            for label, part in speculative.groupby("label", sort=False):
                rule = part["rule"].iloc[0]
                measured = set(part["alpha"].round(9))
                low, high = LIVE_ALPHA_RANGES[rule]
                if drafter and spec and round(high, 9) not in measured:
                    out.append((label, gamma, float(high), "drafter", drafter[0], "drafter_end", spec[0]))
                if spec and has_spec_end(rule) and round(low, 9) not in measured:
                    out.append((label, gamma, float(low), "spec", spec[0], "own", spec[0]))
        return out

    def _costs(self, idx: np.ndarray) -> np.ndarray:
        configs, columns = self.scores.configs, self.scores.columns
        if self.cost == REJECTION:
            rejected, accepted = columns["n_rejected"][:, idx].sum(1), columns["n_accepted"][:, idx].sum(1)
            judged = rejected + accepted
            own = np.where(judged > 0, rejected / np.where(judged > 0, judged, 1), np.nan)
            own[configs["method"].to_numpy() == "drafter"] = 0.0
            own[configs["method"].to_numpy() == "verifier"] = 1.0
            return np.array([0.0 if kind == "drafter_end" else own[k] for *_, kind, k in self.points])
        column = columns[self.cost]
        reference = column[self.verifier[0], idx].sum()
        totals = column[:, idx].sum(1) / reference
        tokens = columns.get("n_tokens")
        out = []
        for label, gamma, alpha, end, j, kind, k in self.points:
            if (
                kind == "drafter_end"
            ):  # SpecDecode's cost per emitted token (full sample) x the drafter's tokens
                per_token = column[k].sum() / tokens[k].sum() if tokens is not None else np.nan
                out.append(tokens[j, idx].sum() * per_token / reference if tokens is not None else np.nan)
            else:
                out.append(totals[k])
        return np.asarray(out)

    def statistic(self, idx) -> np.ndarray:
        idx = np.asarray(idx)
        every = sorted({p[4] for p in self.points} | set(self.verifier))
        quality = dict(zip(every, self.scores.score(every, idx)))
        target = float(quality[self.verifier[0]])
        xs_all, ys_all = self._costs(idx), np.array([quality[p[4]] for p in self.points])
        out = [target]
        for curve in self.curves:
            mask = np.array([(p[0], p[1]) == curve for p in self.points])
            xs, ys = xs_all[mask], ys_all[mask]
            keep = np.isfinite(xs)
            crossing = crossing_latency(xs[keep], ys[keep], target)
            out.append(-np.inf if crossing is None else 1.0 - crossing)
            for budget in self.budgets:
                best = best_quality_within(xs[keep], ys[keep], budget)
                out.append(-np.inf if best is None else best)
        return np.asarray(out, float)

    def point_costs(self) -> pd.DataFrame:
        """Every point of every curve with its cost and quality at all items."""
        every = np.arange(self.scores.n)
        quality = self.scores.score([p[4] for p in self.points], every)
        return pd.DataFrame(
            [
                {"label": p[0], "gamma": p[1], "alpha": p[2], "end": p[3], "cost": x, "quality": q}
                for p, x, q in zip(self.points, self._costs(every), quality)
            ]
        )

    def run(self, n_resamples: int = 2000, seed: int = 0) -> "CurveBootstrap":
        self.point, self.distribution = resample_items(
            self.statistic, self.scores.n, n_resamples=n_resamples, seed=seed
        )
        return self

    def value(self, name: str, curve: Optional[tuple] = None, budget: float = 1.0) -> tuple:
        """`(point, resampled)` of "verifier_quality", or of `curve`'s "reduction" (of cost at the
        verifier's quality) or "best_quality" (within cost `budget`, one of `budgets`)."""
        if name == "verifier_quality":
            i = 0
        elif name == "reduction":
            i = 1 + (1 + len(self.budgets)) * self.curves.index(curve)
        elif name == "best_quality":
            i = 2 + (1 + len(self.budgets)) * self.curves.index(curve) + self.budgets.index(float(budget))
        else:
            raise ValueError(
                f"unknown statistic {name!r}; choose verifier_quality, reduction or best_quality."
            )
        return self.point[i], self.distribution[i]


def curve_bootstrap(
    rows: pd.DataFrame,
    tasks=None,
    *,
    cost: str = "wall_time_s",
    ends: bool = True,
    n_resamples: int = 2000,
    seed: int = 0,
) -> List[CurveBootstrap]:
    """One `CurveBootstrap` per (task, temperature) of `rows`, run (see the module docstring)."""
    return [
        CurveBootstrap(scores, cost, ends=ends).run(n_resamples, seed) for scores in item_scores(rows, tasks)
    ]


_interval = intervals.percentile_interval


def curve_table(
    rows: pd.DataFrame,
    tasks=None,
    *,
    cost: str = "wall_time_s",
    ends: bool = True,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    bootstraps: Optional[Sequence[CurveBootstrap]] = None,
) -> pd.DataFrame:
    """The paper's table with intervals: per (task, T, gamma, method) the cost reduction at the
    verifier's quality and the best quality within its cost, each with its bootstrap interval
    (`*_low`, `*_high`; `-inf`: not reached in that tail), `reached_share`, and the verifier's quality
    with its interval. `cost`: a row column (default `wall_time_s`, as `analysis.summarize`; the cost
    model's `modelled_latency_s`) or "rejection_rate"."""
    if n_resamples < 2000:
        raise ValueError(f"n_resamples={n_resamples}: use at least 2000 resamples for a 95% interval.")
    bootstraps = bootstraps or curve_bootstrap(
        rows, tasks, cost=cost, ends=ends, n_resamples=n_resamples, seed=seed
    )
    out = []
    for boot in bootstraps:
        target, target_dist = boot.value("verifier_quality")
        target_low, target_high = _interval(target_dist, confidence)
        for curve in boot.curves:
            reduction, reduction_dist = boot.value("reduction", curve)
            best, best_dist = boot.value("best_quality", curve)
            gap_dist = best_dist - target_dist
            out.append(
                {
                    "task": boot.scores.task,
                    "temperature": boot.scores.temperature,
                    "gamma": curve[1],
                    "method": curve[0],
                    "cost": cost,
                    "n": boot.scores.n,
                    "metric": boot.scores.metric,
                    "verifier_quality": target,
                    "verifier_quality_low": target_low,
                    "verifier_quality_high": target_high,
                    "reduction_at_verifier_quality": NOT_REACHED if np.isinf(reduction) else float(reduction),
                    **dict(zip(("reduction_low", "reduction_high"), _interval(reduction_dist, confidence))),
                    "reached_share": float(np.mean(np.isfinite(reduction_dist)))
                    if reduction_dist.size
                    else np.nan,
                    "best_quality_within_verifier_cost": NOT_REACHED if np.isinf(best) else float(best),
                    **dict(zip(("best_quality_low", "best_quality_high"), _interval(best_dist, confidence))),
                    "best_minus_verifier": np.nan if np.isinf(best) else float(best - target),
                    **dict(
                        zip(
                            ("best_minus_verifier_low", "best_minus_verifier_high"),
                            _interval(gap_dist, confidence),
                        )
                    ),
                }
            )
    return pd.DataFrame(out)
