"""Figures of the reruns' verdicts (notebooks 06 and 07): batch-size-1 latency per task and pooled, and
each latency claim against the drafter's relative cost c. Every number comes from
`tutorial_lib.stats.analysis.latency_view` and `tutorial_lib.stats.hardware`; this module only draws, from a
list of `panels.Panel`s (`*_panels`): `*_figure` with matplotlib (for `tl.savefig`), `*_view` with plotly."""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np
import pandas as pd

from ..stats.analysis import POOLED
from .panels import Panel, Trace, to_matplotlib, to_plotly, wrap

__all__ = [
    "latency_panels",
    "latency_figure",
    "latency_view",
    "verdict_panels",
    "verdict_figure",
    "verdict_view",
]

_VERDICT_COLORS = {
    "holds": "#1b9e77",
    "does not hold": "#d95f02",
    "not resolved at this sample size": "#7570b3",
    "by construction": "#999999",
    "not run": "#dddddd",
}
_LATENCY_TITLE = "Wall-clock latency at batch size 1, relative to the verifier: per task and pooled"
_STYLES = {"as measured here": "solid", "one step per block": "dash"}


def _latency_trace(point: pd.DataFrame, name: str, y) -> Trace:
    return Trace(
        name,
        point["latency"],
        y,
        kind="points",
        xlow=point["latency_low"],
        xhigh=point["latency_high"],
        marker_size=4,
    )


def latency_panels(view: pd.DataFrame) -> List[Panel]:
    """One panel per task: each method's quality (the task's own metric) against its latency relative
    to the verifier, with the latency's percentile interval as a horizontal bar; a last panel gives
    the pooled latency over every task (total over total), one row per method, with no quality: the
    metrics differ."""
    tasks = [t for t in dict.fromkeys(view["task"]) if t != POOLED]
    keys = list(dict.fromkeys(zip(view["label"], view["gamma"])))
    panels = []
    for task in tasks:
        part = view[view["task"] == task]
        traces = []
        for label, gamma in keys:
            point = part[(part["label"] == label) & (part["gamma"] == gamma)]
            if not point.empty:
                traces.append(_latency_trace(point, f"{label}, gamma={gamma}", point["quality"]))
        metric = part["quality_metric"].iloc[0] if len(part) else ""
        panels.append(
            Panel(
                traces,
                "latency / verifier's (batch size 1)",
                f"quality ({metric})",
                title=task,
                vlines=[(1.0, "")],
            )
        )
    pooled = view[view["task"] == POOLED]
    traces = []
    for j, (label, gamma) in enumerate(keys):
        point = pooled[(pooled["label"] == label) & (pooled["gamma"] == gamma)]
        if not point.empty:
            traces.append(_latency_trace(point, f"{label}, gamma={gamma}", [j] * len(point)))
    panels.append(
        Panel(
            traces,
            "latency / verifier's",
            "",
            title="pooled over tasks (total / total)",
            vlines=[(1.0, "")],
            yticks=[(j, f"{label}, g={gamma}") for j, (label, gamma) in enumerate(keys)],
        )
    )
    return panels


def latency_figure(view: pd.DataFrame):
    """The figure of `latency_panels` (matplotlib), in one row; the legend is in the first panel."""
    panels = latency_panels(view)
    return to_matplotlib(panels, _LATENCY_TITLE, legend="first", size=(3.2 * len(panels), 3.2))


def latency_view(view: pd.DataFrame):
    """The interactive figure of `latency_panels` (plotly)."""
    return to_plotly(latency_panels(view), _LATENCY_TITLE, height=420)


def verdict_panels(
    grid: pd.DataFrame,
    *,
    machine_c: float,
    paper_c: Optional[float] = None,
    paper_label: str = "paper's T5 pair (estimate)",
    panels: Sequence[str] = ("claim", "task", "temperature"),
) -> List[Panel]:
    """One panel per claim (`panels` columns): its estimate against c (log axis) for both verifier
    costs, each with its interval as a band and its verdict as the marker colour; vertical lines at
    this machine's c and the paper's (an estimate)."""
    on_grid = grid[grid["point"].fillna("") == ""]  # a grid read back from its CSV has NaN for ""
    keys = list(dict.fromkeys(zip(*[on_grid[c] for c in panels])))
    finite = lambda v: np.clip(np.asarray(v, float), -1e6, 1e6)  # "not reached" bounds drawn at the edge
    out = []
    for key in keys:
        part = on_grid[np.logical_and.reduce([on_grid[c] == v for c, v in zip(panels, key)])]
        traces, points = [], []
        for verifier, dash in _STYLES.items():
            curve = part[part["verifier_cost"] == verifier].sort_values("c")
            if curve.empty:
                continue
            traces.append(
                Trace(
                    f"verifier block: {verifier}",
                    curve["c"],
                    finite(curve["estimate"]),
                    dash=dash,
                    color="black",
                    width=1,
                    low=finite(curve["low"]),
                    high=finite(curve["high"]),
                    fill_color="grey",
                    fill_opacity=0.15,
                )
            )
            points.append(curve)
        traces.append(Trace("zero", [], [0.0], kind="hline", color="grey", width=0.8, legend=False))
        traces.append(
            Trace(
                f"this machine (c = {machine_c:.2f})",
                [machine_c],
                [],
                kind="vline",
                dash="dot",
                color="tab:blue",
                width=1.2,
            )
        )
        if paper_c is not None:
            traces.append(
                Trace(
                    f"{paper_label} (c = {paper_c:.3f})",
                    [paper_c],
                    [],
                    kind="vline",
                    dash="dashdot",
                    color="tab:red",
                    width=1.2,
                )
            )
        points = pd.concat(points) if points else part.iloc[:0]
        for verdict, color in _VERDICT_COLORS.items():  # the verdicts as marker colours, above every line
            mine = points[points["verdict"] == verdict]
            if len(mine):
                traces.append(
                    Trace(
                        verdict,
                        mine["c"],
                        finite(mine["estimate"]),
                        kind="points",
                        color=color,
                        marker_size=3.7,
                    )
                )
        others = points[~points["verdict"].isin(list(_VERDICT_COLORS))]
        if len(others):
            traces.append(
                Trace(
                    "other verdict",
                    others["c"],
                    finite(others["estimate"]),
                    kind="points",
                    color="black",
                    marker_size=3.7,
                )
            )
        values = part[["estimate", "low", "high"]].to_numpy(float)
        values = values[np.isfinite(values)]
        ylim = None
        if len(values):
            pad = 0.1 * (values.max() - values.min() + 1e-9)
            ylim = (float(values.min() - pad), float(values.max() + pad))
        unit = str(part["unit"].iloc[0]) if "unit" in part and len(part) else "estimate"
        out.append(
            Panel(
                traces,
                "c = drafter step / verifier step",
                unit,
                title=wrap(" / ".join(str(k) for k in key), 70),
                xlog=True,
                ylim=ylim,
            )
        )
    return out


def verdict_figure(
    grid: pd.DataFrame,
    *,
    machine_c: float,
    paper_c: Optional[float] = None,
    paper_label: str = "paper's T5 pair (estimate)",
    panels: Sequence[str] = ("claim", "task", "temperature"),
    title: str = "",
):
    """The figure of `verdict_panels` (matplotlib), three panels a row; the legend in an empty cell (else
    under the panels)."""
    drawn = verdict_panels(grid, machine_c=machine_c, paper_c=paper_c, paper_label=paper_label, panels=panels)
    n_cols = min(3, len(drawn))
    n_rows = -(-len(drawn) // n_cols)
    return to_matplotlib(drawn, title, legend="spare", cols=n_cols, size=(4.0 * n_cols, 3.0 * n_rows))


def verdict_view(
    grid: pd.DataFrame,
    *,
    machine_c: float,
    paper_c: Optional[float] = None,
    paper_label: str = "paper's T5 pair (estimate)",
    panels: Sequence[str] = ("claim", "task", "temperature"),
    title: str = "",
):
    """The interactive figure of `verdict_panels` (plotly), two panels a row."""
    drawn = verdict_panels(grid, machine_c=machine_c, paper_c=paper_c, paper_label=paper_label, panels=panels)
    n_rows = -(-len(drawn) // 2)
    return to_plotly(drawn, title, cols=2, height=340 * n_rows + 80)
