"""The figures of notebooks 06 and 07: quality curves by family of methods, the latency scatter.

Drawing only: every number comes from `analysis` (a summary of a sweep's rows). matplotlib and
seaborn are imported when a figure is drawn, not with the package. Each function returns its
figure (or axes) so a notebook saves it with `tl.savefig` and shows it.

`family_figure` is the reruns' main figure: one task and temperature, one panel per family of
methods (`FAMILIES`), each curve with its 95% interval as a shaded band, the verifier's quality as a
dashed line inside its own band, and a short legend per panel.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd


__all__ = ["FAMILIES", "FAMILY_FIGURE_SIZE", "METRIC_WORDS", "metric_words", "family_figure", "where_each_wins_figure",
           "latency_figure"]

#: A task's metric name (`tasks.metrics.METRICS`) -> (the axis label in words, short enough for one panel's
#: height, and the metric's range: bands stay inside it).
METRIC_WORDS = {
    "bleu": ("BLEU (0-100)", (0.0, 100.0)),
    "rouge2": ("ROUGE-2 F1", (0.0, 1.0)),
    "gsm8k": ("share of answers right (GSM8K)", (0.0, 1.0)),
    "mbpp": ("share passing tests (MBPP)", (0.0, 1.0)),
    "humaneval": ("share passing tests (HumanEval)", (0.0, 1.0)),
    "squad_v2": ("answer F1 (SQuAD 2.0)", (0.0, 1.0)),
    "squad_v2_em": ("share exact (SQuAD 2.0)", (0.0, 1.0)),
    "qa_em": ("share matching exactly", (0.0, 1.0)),
    "qa_contains": ("share containing the answer", (0.0, 1.0)),
    "qa_f1": ("answer F1", (0.0, 1.0)),
}


def metric_words(metric: str):
    """`(label, range)` of a metric name (`METRIC_WORDS`); an unknown name is its own label, with no range."""
    return METRIC_WORDS.get(metric, (metric, None))

#: Methods run once, at the first gamma of a sweep: they are drawn on every gamma's panel.
_GAMMA_FREE = ["drafter", "verifier", "token_cascade", "seq_cascade"]

#: The panels of `family_figure`: the curves of each family of methods (the verifier is the reference line).
FAMILIES = {
    "baselines and sequential cascades": ["Drafter", "SpecDecode", "SeqCascade [Chow]", "TokenCascade [Chow]"],
    "deferral rules": ["SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]"],
    "token-specific rules": ["SpecCascade [Token-V1]", "SpecCascade [Token-V2]", "SpecCascade [Token-V3]"],
    "lossy and BiLD": ["SpecDecode [Lossy]", "Lossy*", "BiLD", "BiLD*"],
}
#: Inches: two rows of two panels (pass it to `tl.savefig(..., size=FAMILY_FIGURE_SIZE)`).
FAMILY_FIGURE_SIZE = (9.0, 6.5)
#: Points drawn faintly in every other panel, so each family is read against the same two anchors.
_ANCHORS = ["Drafter", "SpecDecode"]


def _select(summary: pd.DataFrame, task, temperature, gamma) -> pd.DataFrame:
    part = summary
    if task is not None:
        part = part[part["task"] == task]
    if temperature is not None:
        part = part[part["temperature"] == temperature]
    if gamma is not None:  # plain decoding and the sequential cascades were run once, at the first gamma
        part = part[(part["gamma"] == gamma) | part["method"].isin(_GAMMA_FREE)]
    if part.empty:
        raise ValueError("nothing to plot for that task / temperature / gamma.")
    return part


def _bounds(points: pd.DataFrame, bounds=None) -> tuple:
    """The quality interval of each point: the percentile interval itself (`quality_low`,
    `quality_high`, as `analysis.summarize` gives it); a summary without them (built by hand) is drawn
    with its `quality_ci` as a half-width, kept inside the metric's range `bounds` (a share cannot go
    below 0 or above 1)."""
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


def _band(ax, curve: pd.DataFrame, x: str, color, marker: str, label: str, bounds=None) -> None:
    """One curve sorted along x: line and markers, its 95% quality interval as a shaded band inside the
    metric's range `bounds` (a single point gets an error bar: a band needs two)."""
    curve = curve.sort_values([x, "alpha"])
    xs, ys = curve[x].to_numpy(float), curve["quality"].to_numpy(float)
    low, high = _bounds(curve, bounds)
    if len(curve) == 1:
        ax.errorbar(xs, ys, yerr=np.vstack([ys - low, high - ys]), color=color, marker=marker, markersize=5,
                    capsize=2, linewidth=0, elinewidth=0.8, label=label)
        return
    ax.fill_between(xs, low, high, color=color, alpha=0.13, linewidth=0)
    ax.plot(xs, ys, color=color, marker=marker, markersize=3.5, linewidth=1.4, label=label)


def family_figure(summary: pd.DataFrame, *, task: Optional[str] = None, temperature: Optional[float] = None,
                  gamma: Optional[int] = None, x: str = "latency", x_label: Optional[str] = None,
                  quality_label: str = "quality", title: str = "", families=None):
    """Quality against `x` (a summary column: `latency` relative to the verifier, `rejection_rate`...)
    for one task and temperature, one panel per family of methods (`families`, default `FAMILIES`;
    families with no curve in the summary are left out), in rows of two. `quality_label` is a metric's
    name (`METRIC_WORDS` gives its words and range) or any label. Each curve has its 95%
    interval (`quality_ci`) as a band kept inside the metric's range; the verifier's quality is a dashed line in a grey band (its own
    interval); on a latency axis a dotted line marks the verifier's cost (1). The drafter and
    SpecDecode are drawn faintly in every panel after the first, as anchors. Returns the figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    part = _select(summary, task, temperature, gamma)
    present = set(part["label"])
    panels = [(name, [l for l in labels if l in present]) for name, labels in (families or FAMILIES).items()]
    panels = [(name, labels) for name, labels in panels if labels]
    if not panels:
        raise ValueError(f"none of the families' curves is in the summary (it has {sorted(present)}).")
    quality_label, bounds = metric_words(quality_label)
    verifier = part[part["method"] == "verifier"]
    n_rows = (len(panels) + 1) // 2
    with sns.axes_style("whitegrid"), sns.plotting_context("paper", font_scale=0.9):
        fig, axes = plt.subplots(n_rows, 2 if len(panels) > 1 else 1, squeeze=False, sharex=True, sharey=True,
                                 figsize=(FAMILY_FIGURE_SIZE[0], FAMILY_FIGURE_SIZE[1] * n_rows / 2))
        palette = sns.color_palette("colorblind", 4)
        for i, (ax, (name, labels)) in enumerate(zip(axes.flat, panels)):
            if len(verifier):
                reference = float(verifier["quality"].mean())
                low, high = _bounds(verifier, bounds)
                ax.axhspan(float(np.mean(low)), float(np.mean(high)), color="grey", alpha=0.15, linewidth=0)
                ax.axhline(reference, color="black", linestyle="--", linewidth=1, label="verifier (95% band)")
            if x.startswith("latency"):
                ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
            for anchor in (_ANCHORS if i else []):
                if anchor in present and anchor not in labels:
                    point = part[part["label"] == anchor]
                    ax.scatter(point[x], point["quality"], color="grey", alpha=0.5, s=14, marker="s", zorder=1)
                    for _, row in point.iterrows():
                        ax.annotate(anchor, (row[x], row["quality"]), fontsize=6, color="grey",
                                    xytext=(3, 3), textcoords="offset points")
            for j, label in enumerate(labels):
                _band(ax, part[part["label"] == label], x, palette[j % len(palette)], "os^D"[j % 4], label, bounds)
            ax.set_title(name, fontsize=9)
            ax.legend(fontsize=6.5, loc="best", frameon=True, framealpha=0.8, handlelength=1.5)
            shown = part[part["label"].isin(labels) | (part["method"] == "verifier")]["quality"]
            if len(shown) and float(shown.max() - shown.min()) < 1e-12:
                # every curve on one line reads as an empty plot: say that it is the result
                items = f" on these {int(part['n'].max())} items" if "n" in part else ""
                ax.text(0.5, 0.04, f"every method here scores {float(shown.iloc[0]):.3g}{items}: no difference",
                        transform=ax.transAxes, ha="center", va="bottom", fontsize=7, color="dimgrey")
        for k, ax in enumerate(axes.flat[len(panels):], start=len(panels)):
            ax.axis("off")   # an odd panel count: the panel above the empty one shows the x ticks
            axes.flat[k - axes.shape[1]].xaxis.set_tick_params(labelbottom=True)
        for ax in axes[-1]:
            ax.set_xlabel(x_label or {"latency": "latency (verifier = 1)", "rejection_rate": "rejection rate"}.get(x, x))
        for ax in axes[:, 0]:
            ax.set_ylabel(quality_label)
        if title:
            fig.suptitle(title, fontsize=10)
    return fig


def where_each_wins_figure(wins: pd.DataFrame, *, quality_label: str = "sentence BLEU (mean, T = 0)"):
    """Bars of the drafter's and the verifier's quality per group of examples (`analysis.quality_by_group`)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    wins[["Drafter", "Verifier"]].plot.bar(ax=ax, rot=0)
    ax.set_ylabel(quality_label)
    ax.set_title("Where each model wins: per group of held-out sentences")
    return fig


def latency_figure(view: pd.DataFrame):
    """The batch-size-1 latency runs per task and pooled (`analysis.latency_view`): drawn, with titles, by
    `views.verdicts.latency_figure`."""
    from .verdicts import latency_figure as draw
    return draw(view)
