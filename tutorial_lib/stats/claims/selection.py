"""The statistics of one (task, temperature) with intervals that include the selection: the best of a
group of curves under bounds simultaneous over every curve of the claim, its noise floor, and the row
each claim becomes (`TaskClaims`)."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import intervals
from ..curve_bootstrap import CurveBootstrap
from ..paired import FLOOR_COLUMNS, ItemScores
from .verdicts import BY_CONSTRUCTION, NOT_RESOLVED, NOT_RUN, against_floor, n_needed, verdict

__all__ = []


def _value(
    boot: CurveBootstrap, name: str, curve: tuple, budget: float, with_verifier: bool = False
) -> tuple:
    """`boot.value`; `with_verifier`: the better of the curve's value and the verifier's quality, on the items
    and in each resample (the verifier alone is open to either side within a budget of its own latency or
    more: `TaskClaims.compare`)."""
    point, resampled = boot.value(name, curve, budget)
    if not with_verifier:
        return point, resampled
    verifier, verifier_resampled = boot.value("verifier_quality")
    return max(point, verifier), np.maximum(resampled, verifier_resampled)


#: The units of a noise floor (`paired.same_law_floor`'s columns): a claim's `floor`.
QUALITY_FLOOR, RATE_FLOOR = "quality", "rate"


class _Group:
    """The best of some curves for one statistic: point, resampled values and simultaneous bounds."""

    def __init__(
        self,
        boot: CurveBootstrap,
        curves: Sequence[tuple],
        name: str,
        budget: float,
        bounds: dict,
        with_verifier,
    ):
        self.curves = list(curves)
        values = [_value(boot, name, c, budget, with_verifier) for c in self.curves]
        self.points = np.array([v[0] for v in values]) if values else np.zeros(0)
        # where the verifier alone is the better choice, the group's best is the verifier's, so say so
        own = [boot.value(name, c, budget)[0] for c in self.curves]
        self.verifier_chosen = bool(with_verifier and own and max(own) < self.points.max())
        self.low = np.array([bounds[(name, budget, c)][0] for c in self.curves])
        self.high = np.array([bounds[(name, budget, c)][1] for c in self.curves])

    @property
    def empty(self) -> bool:
        return not self.curves

    @property
    def best(self) -> float:
        return float(self.points.max())

    @property
    def label(self) -> str:
        if self.verifier_chosen:
            return "the verifier (no configuration of this side better within the budget)"
        return self.curves[int(np.argmax(self.points))][0]


def _bounds(
    boot: CurveBootstrap, curves: Sequence[tuple], name: str, budget: float, confidence: float, with_verifier
) -> dict:
    """Simultaneous bounds over every curve of the claim (one family per claim)."""
    if not curves:
        return {}
    values = [_value(boot, name, c, budget, with_verifier) for c in curves]
    points = np.array([v[0] for v in values])
    distribution = np.vstack([v[1] for v in values])
    low, high = intervals.simultaneous_bounds(points, distribution, confidence)
    return {(name, budget, c): (lo, hi) for c, lo, hi in zip(curves, low, high)}


def reached_difference(a: float, b: float) -> float:
    """a - b where -inf means "not reached": both not reached differ by 0."""
    if np.isinf(a) and a == b:
        return 0.0
    return float(a - b)


def _floor_of(floors: pd.DataFrame, task: str, temperature: float, kind: Optional[str]) -> dict:
    """The noise floor of one (task, T) in the unit `kind` (`QUALITY_FLOOR`, `RATE_FLOOR`, or None: a
    latency axis)."""
    empty = {"noise_floor": np.nan, "noise_floor_low": np.nan, "noise_floor_high": np.nan}
    if kind is None:
        return {
            **empty,
            "noise_floor_from": "none: no two runs of one law were measured in this claim's unit",
        }
    match = (
        floors[(floors["task"] == task) & (floors["temperature"] == temperature)] if len(floors) else floors
    )
    if not len(match):
        return {**empty, "noise_floor_from": "not run: no verifier or SpecDecode rows here"}
    row = match.iloc[0]
    return {
        "noise_floor": row[f"{kind}_floor"],
        "noise_floor_low": row[f"{kind}_floor_low"],
        "noise_floor_high": row[f"{kind}_floor_high"],
        "noise_floor_from": row[f"{kind}_floor_from"],
    }


def reached_text(value: float, unit: str = "") -> str:
    return "not reached" if np.isneginf(value) else f"{value:.3g}{unit}"


class TaskClaims:
    """The rows of one (task, temperature): bootstrap, noise floor, row builder."""

    def __init__(
        self,
        scores: ItemScores,
        cost: str,
        n_resamples: int,
        seed: int,
        confidence: float,
        dropped: pd.DataFrame,
        budgets=None,
        floors: Optional[pd.DataFrame] = None,
    ):
        self.scores, self.cost, self.confidence = scores, cost, confidence
        self.floors = (
            floors if floors is not None else pd.DataFrame(columns=["task", "temperature", *FLOOR_COLUMNS])
        )
        self.n_resamples, self.seed = n_resamples, seed
        self.boot = CurveBootstrap(scores, cost, ends=False)
        if budgets is not None:
            self.boot.budgets = [1.0] + [b for b in budgets(self.boot) if b != 1.0]
        self.boot.run(n_resamples, seed)
        self.dropped = dropped[
            (dropped["task"] == scores.task) & (dropped["temperature"] == scores.temperature)
        ]

    def curves(self, labels: Sequence[str], gamma) -> List[tuple]:
        configs = self.scores.configs
        plain = set(configs.loc[~configs["method"].isin(["speculative"]), "label"])  # one gamma: any fits
        return [c for c in self.boot.curves if c[0] in labels and (c[1] == gamma or c[0] in plain)]

    def why_none(self, labels: Sequence[str]) -> Tuple[str, str]:
        """`(verdict, reason)` for a group of curves with no configuration in the claim: `BY_CONSTRUCTION`
        where its configurations ran but none is the rules' own, `NOT_RUN` where none ran here."""
        gone = self.dropped[self.dropped["label"].isin(labels)]
        if len(gone):
            reasons = "; ".join(
                f"{label}: {', '.join(sorted(set(part['reason'])))}" for label, part in gone.groupby("label")
            )
            return BY_CONSTRUCTION, f"no configuration of its own ({reasons})"
        return NOT_RUN, f"not run at T = {self.scores.temperature:g} in this sweep (its design)"

    def row(
        self,
        claim: str,
        gamma,
        measurement: str,
        estimate: float,
        low: float,
        high: float,
        detail: str,
        *,
        unit: str,
        reason: str = "",
        unmeasured: str = BY_CONSTRUCTION,
        floor: Optional[str] = QUALITY_FLOOR,
        **extra,
    ) -> dict:
        """One claim's row. With a `reason` the claim is not measured: its verdict is `unmeasured`
        (`BY_CONSTRUCTION` or `NOT_RUN`). `floor`: the unit of its noise floor (None: none)."""
        n = self.scores.n
        if unmeasured not in (BY_CONSTRUCTION, NOT_RUN):
            raise ValueError(f"unmeasured={unmeasured!r}: pass {BY_CONSTRUCTION!r} or {NOT_RUN!r}.")
        if reason:
            decided, estimate, low, high = unmeasured, np.nan, np.nan, np.nan
        else:
            decided = NOT_RESOLVED if np.isnan(low) or np.isnan(high) else verdict(low, high)
        floor_of = _floor_of(self.floors, self.scores.task, self.scores.temperature, floor)
        return {
            "claim": claim,
            "task": self.scores.task,
            "temperature": self.scores.temperature,
            "gamma": gamma,
            "measurement": measurement,
            "estimate": estimate,
            "low": low,
            "high": high,
            "n": n,
            "verdict": decided,
            "n_needed": (
                n_needed(estimate, low, high, n, confidence=self.confidence)
                if decided == NOT_RESOLVED
                else float("nan")
            ),
            "detail": detail,
            "unit": unit,
            "reason": reason,
            "interval": "simultaneous over the compared curves (selection included)",
            **floor_of,
            "against_floor": against_floor(
                estimate, floor_of["noise_floor_low"], floor_of["noise_floor_high"]
            ),
            "metric": self.scores.metric,
            **extra,
        }

    def compare(
        self,
        claim,
        gamma,
        measurement,
        mine,
        theirs,
        *,
        name="reduction",
        budget=1.0,
        unit="",
        scale: float = 1.0,
        extra_detail: str = "",
        floor: Optional[str] = QUALITY_FLOOR,
        with_verifier: bool = False,
    ) -> dict:
        """best of `mine` - best of `theirs` for statistic `name`, divided by `scale`. `with_verifier`
        ("best_quality" within a `budget` >= 1, the verifier's own latency or more): the verifier alone is
        open to both sides (what a user on that budget can always run), so a side with no configuration within
        the budget is worth the verifier's quality, never minus infinity, and a side is never worth less."""
        a_curves, b_curves = self.curves(mine, gamma), self.curves(theirs, gamma)
        if with_verifier and (name != "best_quality" or not budget >= 1.0):
            raise ValueError(
                f"with_verifier with name={name!r}, budget={budget}: the verifier is open to a side only for "
                "best_quality within a budget of at least its own latency (1)."
            )
        missing = [
            (group, *self.why_none(group))
            for group, found in ((mine, a_curves), (theirs, b_curves))
            if not found
        ]
        if missing:
            # a group empty by construction stays empty whatever else is run: that decides the label
            unmeasured = BY_CONSTRUCTION if any(v == BY_CONSTRUCTION for _, v, _ in missing) else NOT_RUN
            return self.row(
                claim,
                gamma,
                measurement,
                np.nan,
                np.nan,
                np.nan,
                "",
                unit=unit,
                floor=floor,
                reason="; ".join(f"{', '.join(group)}: {why}" for group, _, why in missing),
                unmeasured=unmeasured,
            )
        bounds = _bounds(self.boot, a_curves + b_curves, name, budget, self.confidence, with_verifier)
        a, b = (_Group(self.boot, c, name, budget, bounds, with_verifier) for c in (a_curves, b_curves))
        if np.isneginf(a.best) and np.isneginf(b.best) and name == "reduction":
            return self.row(
                claim,
                gamma,
                measurement,
                np.nan,
                np.nan,
                np.nan,
                "",
                unit=unit,
                floor=floor,
                reason=f"none of the {len(a_curves) + len(b_curves)} compared curves reaches the "
                "verifier's quality on its own runs, so both sides are 'not reached' and the "
                "difference is 0 by construction (a curve needs alphas nearer its SpecDecode "
                "end to reach it)",
            )
        estimate = reached_difference(a.best, b.best) / scale
        low = reached_difference(float(a.low.max()), float(b.high.max())) / scale
        high = reached_difference(float(a.high.max()), float(b.low.max())) / scale
        detail = f"{a.label}: {reached_text(a.best)}; {b.label}: {reached_text(b.best)}{extra_detail}"
        return self.row(
            claim,
            gamma,
            measurement,
            estimate,
            low,
            high,
            detail,
            unit=unit,
            floor=floor,
            mine_best=a.best,
            theirs_best=b.best,
            mine_label=a.label,
            theirs_label=b.label,
        )
