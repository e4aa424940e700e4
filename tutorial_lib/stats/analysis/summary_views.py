"""What a table or a figure reads off a summary (`curves.summarize`): the ranges of the speculative
methods, one method's qualities, every point with its interval, the points of one figure and their
quality intervals."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
import pandas as pd

__all__ = [
    "speculative_ranges",
    "qualities",
    "interval_points",
    "GAMMA_FREE",
    "select",
    "quality_bounds",
    "reference_quality",
]


# ---- per-method views (notebook 06) ---------------------------------------------------------------


def speculative_ranges(summary: pd.DataFrame, *, gamma: int) -> pd.DataFrame:
    """Spec-Bench-style numbers beside quality for the speculative methods at `gamma`: the lowest and
    highest quality, tokens per verifier call and speed-up over the verifier of each curve."""
    speculative = summary[summary["method"].isin(["speculative", "bild"]) & (summary["gamma"] == gamma)]
    return speculative.groupby(["task", "temperature", "label"]).agg(
        quality_min=("quality", "min"),
        quality_max=("quality", "max"),
        tokens_per_call_min=("tokens_per_call", "min"),
        tokens_per_call_max=("tokens_per_call", "max"),
        speedup_min=("speedup", "min"),
        speedup_max=("speedup", "max"),
    )


def qualities(summary: pd.DataFrame, method: str) -> Dict[str, float]:
    """One method's quality per (task, T), keyed "task T=t" (`method` "verifier" or "drafter")."""
    points = summary[summary["method"] == method].set_index(["task", "temperature"])["quality"]
    return {f"{task} T={temperature:g}": quality for (task, temperature), quality in points.items()}


# ---- views of a summary ---------------------------------------------------------------------------


def interval_points(summary: pd.DataFrame) -> pd.DataFrame:
    """Every measured point (curve ends added by `with_rule_ends` left out) with its quality as
    "mean ± 95% half-width", rounded to three decimals."""
    points = summary.loc[
        summary["end"] == "",
        [
            "task",
            "temperature",
            "label",
            "alpha",
            "n",
            "quality",
            "quality_ci",
            "rejection_rate",
            "deferral_rate",
        ],
    ].copy()
    points["quality"] = [f"{q:.3f} ± {c:.3f}" for q, c in zip(points["quality"], points["quality_ci"])]
    return points.drop(columns="quality_ci").round(3)


# ---- what a figure of one task and temperature shows (`views.reruns.family_figure`) ----------------

#: Methods run once, at the first gamma of a sweep: they belong to every gamma's curves.
GAMMA_FREE = ["drafter", "verifier", "token_cascade", "seq_cascade"]


def select(
    summary: pd.DataFrame,
    task: Optional[str] = None,
    temperature: Optional[float] = None,
    gamma: Optional[int] = None,
) -> pd.DataFrame:
    """The points of one task, temperature and gamma (None: all); the methods run once (`GAMMA_FREE`)
    belong to every gamma. Raises ValueError when nothing is left."""
    part = summary
    if task is not None:
        part = part[part["task"] == task]
    if temperature is not None:
        part = part[part["temperature"] == temperature]
    if gamma is not None:  # plain decoding and the sequential cascades were run once, at the first gamma
        part = part[(part["gamma"] == gamma) | part["method"].isin(GAMMA_FREE)]
    if part.empty:
        raise ValueError("nothing to plot for that task / temperature / gamma.")
    return part


def quality_bounds(
    points: pd.DataFrame, bounds: Optional[Tuple[float, float]] = None
) -> Tuple[np.ndarray, np.ndarray]:
    """`(low, high)`: the quality interval of each point, the percentile interval itself (`quality_low`,
    `quality_high`, as `summarize` gives it; a missing bound is the point); a summary without them
    (built by hand) has its `quality_ci` as a half-width. Kept inside the metric's range `bounds` (a
    share cannot go below 0 or above 1)."""
    quality = points["quality"].to_numpy(float)
    if {"quality_low", "quality_high"} <= set(points.columns):
        low, high = points["quality_low"].to_numpy(float), points["quality_high"].to_numpy(float)
        low, high = np.where(np.isnan(low), quality, low), np.where(np.isnan(high), quality, high)
    else:
        half = points["quality_ci"].fillna(0.0).to_numpy(float)
        low, high = quality - half, quality + half
    if bounds is not None:
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    return low, high


def reference_quality(
    points: pd.DataFrame, bounds: Optional[Tuple[float, float]] = None
) -> Tuple[float, float, float]:
    """`(quality, low, high)` of a reference method's points (the verifier's, of one task and
    temperature; several gammas are averaged), its interval as `quality_bounds` gives it."""
    low, high = quality_bounds(points, bounds)
    return float(points["quality"].mean()), float(np.mean(low)), float(np.mean(high))
