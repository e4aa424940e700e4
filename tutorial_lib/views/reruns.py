"""The figures of notebooks 06 and 07: quality curves by family of methods, where each model wins.

Drawing only: every number comes from `stats.analysis` (a summary of a sweep's rows: `select`,
`quality_bounds`, `reference_quality`). Each figure is a list of `panels.Panel`s (`*_panels`), drawn
`to_matplotlib` by `*_figure` (returns the figure, for `tl.savefig`) and `to_plotly` by `*_view`.

`family_figure` is the reruns' main figure: one task and temperature, one panel per family of
methods (`FAMILIES`), each curve with its 95% interval as a shaded band, the verifier's quality as a
dashed line inside its own band, and a short legend per panel.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import pandas as pd

from ..maths import rules
from ..stats import analysis
from .widgets import COLORS
from .panels import Panel, Trace, to_matplotlib, to_plotly

__all__ = [
    "FAMILIES",
    "FAMILY_FIGURE_SIZE",
    "METRIC_WORDS",
    "metric_words",
    "family_panels",
    "family_figure",
    "family_view",
    "where_each_wins_panels",
    "where_each_wins_figure",
    "where_each_wins_view",
    "latency_figure",
    "latency_view",
]

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


def _families() -> Dict[str, list]:
    baselines, lossy = rules.PANELS[0], rules.PANELS[3]
    other = {
        baselines: ["Drafter", "SpecDecode", "SeqCascade [Chow]", "TokenCascade [Chow]"],
        lossy: ["SpecDecode [Lossy]", "Lossy*", "BiLD", "BiLD*"],
    }
    return {panel: other.get(panel) or list(rules.curve_labels(panel)) for panel in rules.PANELS}


#: The panels of `family_figure`: the curves of each family of methods (the verifier is the reference line);
#: the deferral and token-specific panels are the rules' panels in `rules.RULE_TABLE` (a live view, so a
#: registered rule is drawn in its panel).
FAMILIES = rules.TableMapping(_families)
#: Inches: two rows of two panels (pass it to `tl.savefig(..., size=FAMILY_FIGURE_SIZE)`).
FAMILY_FIGURE_SIZE = (9.0, 6.5)
#: Points drawn faintly in every other panel, so each family is read against the same two anchors.
_ANCHORS = ["Drafter", "SpecDecode"]
_MARKERS = ["dot", "square", "triangle", "diamond"]
_X_WORDS = {"latency": "latency (verifier = 1)", "rejection_rate": "rejection rate"}
_VERIFIER = "verifier (95% band)"


def _curve(curve: pd.DataFrame, x: str, j: int, label: str, bounds) -> Trace:
    """One curve sorted along x, its 95% quality interval as a band inside the metric's range `bounds`
    (a single point gets error bars: a band needs two)."""
    curve = curve.sort_values([x, "alpha"])
    low, high = analysis.quality_bounds(curve, bounds)
    style = dict(color=COLORS[j % 4], marker=_MARKERS[j % 4], low=low, high=high)
    if len(curve) == 1:
        return Trace(label, curve[x], curve["quality"], kind="points", marker_size=5, **style)
    return Trace(label, curve[x], curve["quality"], kind="curve", width=1.4, marker_size=3.5, **style)


def family_panels(
    summary: pd.DataFrame,
    *,
    task: Optional[str] = None,
    temperature: Optional[float] = None,
    gamma: Optional[int] = None,
    x: str = "latency",
    x_label: Optional[str] = None,
    quality_label: str = "quality",
    families=None,
) -> List[Panel]:
    """The panels of `family_figure`, one per family of methods with a curve in the summary."""
    part = analysis.select(summary, task, temperature, gamma)
    present = set(part["label"])
    chosen = [
        (name, [label for label in labels if label in present])
        for name, labels in (families or FAMILIES).items()
    ]
    chosen = [(name, labels) for name, labels in chosen if labels]
    if not chosen:
        raise ValueError(f"none of the families' curves is in the summary (it has {sorted(present)}).")
    quality_label, bounds = metric_words(quality_label)
    verifier = part[part["method"] == "verifier"]
    panels = []
    for i, (name, labels) in enumerate(chosen):
        traces = []
        if len(verifier):
            reference, low, high = analysis.reference_quality(verifier, bounds)
            traces.append(
                Trace(
                    _VERIFIER,
                    [],
                    [reference],
                    kind="hline",
                    dash=True,
                    color="black",
                    width=1,
                    low=[low],
                    high=[high],
                    fill_color="grey",
                    fill_opacity=0.15,
                )
            )
        for anchor in _ANCHORS if i else []:  # faint, under the family's own curves
            if anchor in present and anchor not in labels:
                point = part[part["label"] == anchor]
                traces.append(
                    Trace(
                        anchor,
                        point[x],
                        point["quality"],
                        kind="points",
                        color="grey",
                        opacity=0.5,
                        marker="square",
                        marker_size=3.7,
                        labels=[anchor] * len(point),
                        legend=False,
                    )
                )
        traces += [
            _curve(part[part["label"] == label], x, j, label, bounds) for j, label in enumerate(labels)
        ]
        shown = part[part["label"].isin(labels) | (part["method"] == "verifier")]["quality"]
        note = ""
        if len(shown) and float(shown.max() - shown.min()) < 1e-12:
            # every curve on one line reads as an empty plot: say that it is the result
            items = f" on these {int(part['n'].max())} items" if "n" in part else ""
            note = f"every method here scores {float(shown.iloc[0]):.3g}{items}: no difference"
        panels.append(
            Panel(
                traces,
                x_label or _X_WORDS.get(x, x),
                quality_label,
                title=name,
                note=note,
                vlines=[(1.0, "")] if x.startswith("latency") else [],
            )
        )
    return panels


def family_figure(
    summary: pd.DataFrame,
    *,
    task: Optional[str] = None,
    temperature: Optional[float] = None,
    gamma: Optional[int] = None,
    x: str = "latency",
    x_label: Optional[str] = None,
    quality_label: str = "quality",
    title: str = "",
    families=None,
):
    """Quality against `x` (a summary column: `latency` relative to the verifier, `rejection_rate`...)
    for one task and temperature, one panel per family of methods (`families`, default `FAMILIES`;
    families with no curve in the summary are left out), in rows of two. `quality_label` is a metric's
    name (`METRIC_WORDS` gives its words and range) or any label. Each curve has its 95% interval
    (`quality_low`, `quality_high`: `analysis.quality_bounds`) as a band kept inside the metric's range;
    the verifier's quality is a dashed line in a grey band (its own interval); on a latency axis a dotted line
    marks the verifier's cost (1). The drafter and SpecDecode are drawn faintly in every panel after the
    first, as anchors. Returns the figure, at `FAMILY_FIGURE_SIZE` (half its height for one row)."""
    panels = family_panels(
        summary,
        task=task,
        temperature=temperature,
        gamma=gamma,
        x=x,
        x_label=x_label,
        quality_label=quality_label,
        families=families,
    )
    cols, rows = _shape(len(panels))
    return to_matplotlib(
        panels,
        title,
        legend="each",
        cols=cols,
        shared_x=True,
        shared_y=True,
        grid=True,
        size=(FAMILY_FIGURE_SIZE[0], FAMILY_FIGURE_SIZE[1] * rows / 2),
    )


def family_view(
    summary: pd.DataFrame,
    *,
    task: Optional[str] = None,
    temperature: Optional[float] = None,
    gamma: Optional[int] = None,
    x: str = "latency",
    x_label: Optional[str] = None,
    quality_label: str = "quality",
    title: str = "",
    families=None,
):
    """The interactive figure of `family_figure` (plotly): the same panels, hover for each point."""
    panels = family_panels(
        summary,
        task=task,
        temperature=temperature,
        gamma=gamma,
        x=x,
        x_label=x_label,
        quality_label=quality_label,
        families=families,
    )
    cols, rows = _shape(len(panels))
    return to_plotly(panels, title, cols=cols, shared_x=True, shared_y=True, height=330 * rows + 60)


def _shape(n: int) -> Tuple[int, int]:
    """(columns, rows) of `n` panels in rows of two."""
    return (2 if n > 1 else 1), (n + 1) // 2


def where_each_wins_panels(
    wins: pd.DataFrame, *, quality_label: str = "sentence BLEU (mean, T = 0)"
) -> List[Panel]:
    """One panel: bars of the drafter's and the verifier's quality per group (`analysis.quality_by_group`)."""
    groups = [str(g) for g in wins.index]
    return [
        Panel(
            [Trace(name, groups, wins[name], kind="bar") for name in ("Drafter", "Verifier")],
            "",
            quality_label,
            title="Where each model wins: per group of held-out sentences",
            xrotation=0,
        )
    ]


def where_each_wins_figure(wins: pd.DataFrame, *, quality_label: str = "sentence BLEU (mean, T = 0)"):
    """Bars of the drafter's and the verifier's quality per group of examples
    (`analysis.quality_by_group`)."""
    return to_matplotlib(where_each_wins_panels(wins, quality_label=quality_label), legend="each")


def where_each_wins_view(wins: pd.DataFrame, *, quality_label: str = "sentence BLEU (mean, T = 0)"):
    """The interactive figure of `where_each_wins_figure` (plotly)."""
    return to_plotly(where_each_wins_panels(wins, quality_label=quality_label), height=400)


def latency_figure(view: pd.DataFrame):
    """The batch-size-1 latency runs per task and pooled (`analysis.latency_view`): drawn, with titles, by
    `views.verdicts.latency_figure`."""
    from .verdicts import latency_figure as draw

    return draw(view)


def latency_view(view: pd.DataFrame):
    """The interactive figure of `latency_figure` (`views.verdicts.latency_view`)."""
    from .verdicts import latency_view as draw

    return draw(view)
