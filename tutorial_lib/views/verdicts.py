"""Static figures of the reruns' verdicts (notebooks 06 and 07): batch-size-1 latency per task and
pooled, and each latency claim against the drafter's relative cost c. Every number comes from
`tutorial_lib.analysis.latency_view` and `tutorial_lib.hardware`; this module only draws."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

__all__ = ["latency_figure", "verdict_figure"]

_VERDICT_COLORS = {"holds": "#1b9e77", "does not hold": "#d95f02", "not resolved at this sample size": "#7570b3",
                   "not measurable here": "#999999"}


def latency_figure(view: pd.DataFrame):
    """One panel per task: each method's quality (the task's own metric) against its latency relative
    to the verifier, with the latency's percentile interval as a horizontal bar; a last panel gives
    the pooled latency over every task (total over total), with no quality: the metrics differ."""
    import matplotlib.pyplot as plt
    from ..stats.analysis import POOLED
    tasks = [t for t in dict.fromkeys(view["task"]) if t != POOLED]
    fig, axes = plt.subplots(1, len(tasks) + 1, figsize=(3.2 * (len(tasks) + 1), 3.2), squeeze=False)
    keys = list(dict.fromkeys(zip(view["label"], view["gamma"])))
    colors = plt.get_cmap("tab10")
    for ax, task in zip(axes[0], tasks):
        part = view[view["task"] == task]
        for j, (label, gamma) in enumerate(keys):
            point = part[(part["label"] == label) & (part["gamma"] == gamma)]
            if point.empty:
                continue
            x = point["latency"].to_numpy(float)
            ax.errorbar(x, point["quality"], xerr=np.vstack([x - point["latency_low"], point["latency_high"] - x]),
                        fmt="o", color=colors(j % 10), capsize=2, markersize=4, label=f"{label}, gamma={gamma}")
        ax.axvline(1.0, color="grey", linestyle=":")
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("latency / verifier's (batch size 1)", fontsize=8)
        metric = part["quality_metric"].iloc[0] if len(part) else ""
        ax.set_ylabel(f"quality ({metric})", fontsize=8)
    ax = axes[0][-1]
    pooled = view[view["task"] == POOLED]
    for j, (label, gamma) in enumerate(keys):
        point = pooled[(pooled["label"] == label) & (pooled["gamma"] == gamma)]
        if point.empty:
            continue
        x = point["latency"].to_numpy(float)
        ax.errorbar(x, [j] * len(x), xerr=np.vstack([x - point["latency_low"], point["latency_high"] - x]), fmt="o",
                    color=colors(j % 10), capsize=2, markersize=4)
    ax.set_yticks(range(len(keys)), [f"{label}, g={gamma}" for label, gamma in keys], fontsize=7)
    ax.axvline(1.0, color="grey", linestyle=":")
    ax.set_title("pooled over tasks (total / total)", fontsize=9)
    ax.set_xlabel("latency / verifier's", fontsize=8)
    axes[0][0].legend(fontsize=6)
    fig.suptitle("Wall-clock latency at batch size 1, relative to the verifier: per task and pooled", fontsize=10)
    fig.tight_layout()
    return fig


def verdict_figure(grid: pd.DataFrame, *, machine_c: float, paper_c: Optional[float] = None,
                   paper_label: str = "paper's T5 pair (estimate)", panels: Sequence[str] = ("claim", "task", "temperature"),
                   title: str = ""):
    """One panel per claim (`panels` columns): its estimate against c (log axis) for both verifier
    costs, each with its interval as a band and its verdict as the marker colour; vertical lines at
    this machine's c and the paper's (an estimate)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    on_grid = grid[grid["point"] == ""]
    keys = list(dict.fromkeys(zip(*[on_grid[c] for c in panels])))
    n_cols = min(3, len(keys))
    n_rows = -(-len(keys) // n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(4.0 * n_cols, 3.0 * n_rows), squeeze=False)
    styles = {"as measured here": "-", "one step per block": "--"}
    for ax, key in zip(axes.flat, keys):
        part = on_grid[np.logical_and.reduce([on_grid[c] == v for c, v in zip(panels, key)])]
        for verifier, line in styles.items():
            curve = part[part["verifier_cost"] == verifier].sort_values("c")
            if curve.empty:
                continue
            finite = lambda v: np.clip(v.to_numpy(float), -1e6, 1e6)   # "not reached" bounds drawn at the edge
            ax.plot(curve["c"], finite(curve["estimate"]), line, color="black", linewidth=1)
            ax.fill_between(curve["c"], finite(curve["low"]), finite(curve["high"]), color="grey", alpha=0.15)
            ax.scatter(curve["c"], finite(curve["estimate"]), c=[_VERDICT_COLORS.get(v, "black")
                                                                for v in curve["verdict"]], s=14, zorder=3)
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.axvline(machine_c, color="tab:blue", linestyle=":", linewidth=1.2)
        if paper_c is not None:
            ax.axvline(paper_c, color="tab:red", linestyle="-.", linewidth=1.2)
        finite_values = part[["estimate", "low", "high"]].to_numpy(float)
        finite_values = finite_values[np.isfinite(finite_values)]
        if len(finite_values):
            pad = 0.1 * (finite_values.max() - finite_values.min() + 1e-9)
            ax.set_ylim(finite_values.min() - pad, finite_values.max() + pad)
        ax.set_xscale("log")
        ax.set_title(" / ".join(str(k) for k in key), fontsize=7)
        ax.set_xlabel("c = drafter step / verifier step", fontsize=8)
        ax.set_ylabel(str(part["unit"].iloc[0]) if "unit" in part and len(part) else "estimate", fontsize=7)
    spare = list(axes.flat)[len(keys):]
    for ax in spare:
        ax.axis("off")
    handles = [Line2D([], [], color="black", linestyle=s, label=f"verifier block: {v}") for v, s in styles.items()]
    handles += [Line2D([], [], color=c, marker="o", linestyle="", label=v) for v, c in _VERDICT_COLORS.items()]
    handles += [Line2D([], [], color="tab:blue", linestyle=":", label=f"this machine (c = {machine_c:.2f})")]
    if paper_c is not None:
        handles += [Line2D([], [], color="tab:red", linestyle="-.", label=f"{paper_label} (c = {paper_c:.3f})")]
    if title:
        fig.suptitle(title, fontsize=10)
    if spare:   # an empty panel holds the legend
        spare[0].legend(handles=handles, loc="center", fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.96 if title else 1))
    else:
        fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.1 + 0.02 * max(0, 3 - n_rows), 1, 0.96 if title else 1))
    return fig
