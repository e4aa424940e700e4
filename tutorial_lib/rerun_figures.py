"""The figures of notebooks 06 and 07: quality curves, the T5 and Gemma-style panels, the latency scatter.

Drawing only: every number comes from `analysis` (a summary of a sweep's rows). matplotlib and
seaborn are imported when a figure is drawn, not with the package. Each function returns its
figure (or axes) so a notebook saves it with `tl.savefig` and shows it.
"""
from __future__ import annotations

from typing import Optional, Sequence

import pandas as pd

from .evaluation import CURVES

__all__ = ["plot_curves", "where_each_wins_figure", "t5_figure", "gemma_figure", "latency_figure"]

#: Methods run once, at the first gamma of a sweep: they are drawn on every gamma's panel.
_GAMMA_FREE = ["drafter", "verifier", "token_cascade", "seq_cascade"]


def plot_curves(summary: pd.DataFrame, *, x: str = "latency", task: Optional[str] = None,
                temperature: Optional[float] = None, gamma: Optional[int] = None, ax=None,
                quality_label: str = "quality", labels: Optional[Sequence[str]] = None):
    """Quality against `x` (`latency` relative to the verifier, or `rejection_rate`), one line per
    method over its alpha grid, 95% intervals as error bars, the verifier's quality dashed."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    from .plotting import FIGURE_SIZE
    part = summary
    if task is not None:
        part = part[part["task"] == task]
    if temperature is not None:
        part = part[part["temperature"] == temperature]
    if gamma is not None:  # plain decoding and the sequential cascades were run once, at the first gamma
        part = part[(part["gamma"] == gamma) | part["method"].isin(_GAMMA_FREE)]
    if part.empty:
        raise ValueError("nothing to plot for that task / temperature / gamma.")
    if ax is None:
        _, ax = plt.subplots(figsize=FIGURE_SIZE)
    order = [l for l in (labels or CURVES) if l in set(part["label"])]
    colors = dict(zip(order, sns.color_palette("tab20", len(order))))
    markers = "os^vD<>phX*P+x1"
    for i, label in enumerate(order):
        curve = part[part["label"] == label].sort_values(x)
        style = dict(color=colors[label], marker=markers[i % len(markers)], markersize=4, linewidth=1.2,
                     label=label, capsize=2, elinewidth=0.6)
        if label.startswith("SpecCascade [Token"):
            style["linewidth"] = 2.0
        ax.errorbar(curve[x], curve["quality"], yerr=curve["quality_ci"], **style)
    reference = part.loc[part["method"] == "verifier", "quality"].mean()
    ax.axhline(reference, color="black", linestyle="--", linewidth=1, label="verifier quality")
    if x.startswith("latency"):
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel({"latency": "latency (verifier = 1)", "rejection_rate": "rejection rate",
                   "latency_calls": "cost in calls (verifier = 1)"}.get(x, x), fontsize=8)
    ax.set_ylabel(quality_label)
    ax.legend(fontsize=6, ncol=2, loc="best")
    return ax


def _legend_panel(fig, axes, legend_ax, fontsize: float) -> None:
    """Move the curves' legend out of the plotting panels into `legend_ax` (an empty panel)."""
    handles, names = axes[-1].get_legend_handles_labels()
    for ax in axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    legend_ax.axis("off")
    legend_ax.legend(handles, names, loc="center", fontsize=fontsize)


def where_each_wins_figure(wins: pd.DataFrame, *, quality_label: str = "sentence BLEU (mean, T = 0)"):
    """Bars of the drafter's and the verifier's quality per group of examples (`analysis.quality_by_group`)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    wins[["Drafter", "Verifier"]].plot.bar(ax=ax, rot=0)
    ax.set_ylabel(quality_label)
    ax.set_title("Where each model wins: per group of held-out sentences")
    return fig


def t5_figure(summary: pd.DataFrame, *, task: str, temperature: float, gamma: int, quality_label: str):
    """Notebook 06's figure for one task and temperature: quality against measured latency, against
    cost in calls and against rejection rate (three panels), and a fourth panel for the legend."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, gridspec_kw={"width_ratios": [3, 3, 3, 2]})
    for ax, x in zip(axes, ["latency", "latency_calls", "rejection_rate"]):
        plot_curves(summary, x=x, task=task, temperature=temperature, gamma=gamma, ax=ax, quality_label=quality_label)
    _legend_panel(fig, axes[:3], axes[-1], fontsize=5)
    fig.suptitle(f"{task}, T = {temperature:g}, gamma = {gamma}")
    return fig


def gemma_figure(summary: pd.DataFrame, *, tasks: Sequence, temperature: float, labels: Sequence[str]):
    """Notebook 07's figure for one temperature: quality against rejection rate, one panel per task
    (`tasks`: `evaluation.Task`s, titled by name, the metric on the y axis), the legend in a last panel."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(tasks) + 1, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        plot_curves(summary, x="rejection_rate", task=task.name, temperature=temperature, ax=ax,
                    quality_label=task.metric_name, labels=labels)
        ax.set_title(task.name, fontsize=9)
    _legend_panel(fig, axes[0][:-1], axes[0][-1], fontsize=6)
    fig.suptitle(f"quality against rejection rate, gamma = 1, T = {temperature:g}")
    return fig


def latency_figure(view: pd.DataFrame):
    """The batch-size-1 latency runs (`analysis.latency_view`): quality against latency relative to
    the verifier, one marker per (method, gamma)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    for (label, gamma), part in view.groupby(["label", "gamma"]):
        ax.scatter(part["latency"], part["quality"], label=f"{label}, gamma={gamma}", s=40)
    ax.axvline(1.0, color="grey", linestyle=":")
    ax.set_xlabel("latency relative to the verifier (batch size 1, mean over tasks)")
    ax.set_ylabel("quality on these items (mean over tasks)")
    ax.legend(fontsize=7)
    return fig
