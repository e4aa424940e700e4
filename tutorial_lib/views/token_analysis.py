"""Views of notebook 08: every rule's loss-rejection curve against the oracle envelope, and one answer
drawn token by token, coloured by a rule's deferral or by its rejection probability.

The numbers come from `tutorial_lib.stats.token_curves` (`summarise`, a `TokenAnalysis`) and
`maths.token_analysis` (`nearest_alpha`, `position_means`); this module only draws: the figures from
`panels.Panel`s (`curves_panels`, `gap_panels`), as `*_figure` (matplotlib) or `*_view` (plotly).
`token_html` is the widget's callback, a plain function that returns HTML.
"""

from __future__ import annotations

import html
from typing import Dict, List, Optional, Sequence

import ipywidgets
import numpy as np

from ..maths import rules
from ..maths import token_analysis as ta
from .static import static_bundle
from .widgets import COLORS, LABEL_STYLE, LiveBox
from .panels import Panel, Trace, to_matplotlib, to_plotly

__all__ = [
    "curve_label",
    "curves_panels",
    "curves_figure",
    "curves_view",
    "gap_panels",
    "gap_figure",
    "gap_view",
    "token_html",
    "colour_key",
    "token_view",
]

_LOSSY_LABELS = {"lossy": "Lossy (β = 1)", "lossy*": "Lossy* (β normalised)"}


def curve_label(curve: str) -> str:
    """A token analysis's curve as a legend names it: its rule's label (`rules.RULE_TABLE`), lossy with its
    beta; a name that is no rule (a learned curve) as it is."""
    if curve in _LOSSY_LABELS:
        return _LOSSY_LABELS[curve]
    return rules.RULE_TABLE[curve].label if curve in rules.RULE_TABLE else curve


_STYLE = {
    curve: (COLORS[i % len(COLORS)], "-" if i < 10 else "--")
    for i, curve in enumerate(
        ("chow", "diff", "opt", "bild", "token_v1", "token_v2", "token_v3", "lossy", "lossy*")
    )
}
_STAT_LABELS = {
    "expected_01": "expected 0-1 loss  1 - π(y)",
    "greedy_01": "greedy 0-1 loss",
    "log_loss": "log loss  -log π(y)",
}


def curves_panels(
    summaries: Dict[str, dict],
    loss: str = "expected_01",
    curves: Optional[Sequence[str]] = None,
    band_curves: Sequence[str] = ("chow", "opt", "token_v2"),
) -> List[Panel]:
    """One panel per summary (a task, or all items; up to four, in rows of two): each curve's mean loss
    against its mean rejection rate, with the 95% interval of the loss as a band for `band_curves`; the
    oracle envelope (black) with its band; the two models alone."""
    names = list(summaries)[:4]
    cols = min(len(names), 2)
    rows = -(-len(names) // cols)
    column, rejection = ta.STATS.index(loss), ta.STATS.index("rejection")
    panels = []
    for k, name in enumerate(names):
        s = summaries[name]
        points = s["points"]
        traces = []
        for curve in curves or list(s[loss]["curves"]):
            at = [i for i, (c, _) in enumerate(points) if c == curve]
            order = np.argsort(s["mean"][at, rejection], kind="stable")
            color, dash = _STYLE.get(curve, ("grey", "-"))
            band = (
                dict(low=s["low"][at, column][order], high=s["high"][at, column][order], fill_opacity=0.12)
                if curve in band_curves
                else {}
            )
            traces.append(
                Trace(
                    curve_label(curve),
                    s["mean"][at, rejection][order],
                    s["mean"][at, column][order],
                    color=color,
                    dash=dash == "--",
                    width=1.2,
                    **band,
                )
            )
        env = s[loss]["envelope"]
        traces.append(
            Trace(
                "oracle envelope",
                s["rejection_axis"],
                env["mean"],
                color="black",
                width=1.8,
                low=env["low"],
                high=env["high"],
                fill_opacity=0.1,
            )
        )
        for end, marker in (("drafter", "ring"), ("verifier", "open square")):
            i = points.index((end, 0.0))
            traces.append(
                Trace(
                    f"{end} alone",
                    [s["mean"][i, rejection]],
                    [s["mean"][i, column]],
                    kind="points",
                    color="black",
                    marker=marker,
                    marker_size=5,
                )
            )
        panels.append(
            Panel(
                traces,
                "mean rejection probability" if k // cols == rows - 1 else "",
                _STAT_LABELS.get(loss, loss) if k % cols == 0 else "",
                title=f"{name}: {s['items']} answers, {s['positions']} tokens",
            )
        )
    return panels


def _bands_title(band_curves: Sequence[str]) -> str:
    return f"bands: 95% intervals\n(envelope, {', '.join(curve_label(c) for c in band_curves)})"


def curves_figure(
    summaries: Dict[str, dict],
    loss: str = "expected_01",
    curves: Optional[Sequence[str]] = None,
    band_curves: Sequence[str] = ("chow", "opt", "token_v2"),
):
    """The figure of `curves_panels` (matplotlib), its legend beside the panels (the figure is saved at
    `tl.savefig`'s size)."""
    panels = curves_panels(summaries, loss, curves, band_curves)
    return to_matplotlib(panels, cols=2, grid=True, legend_title=_bands_title(band_curves))


def curves_view(
    summaries: Dict[str, dict],
    loss: str = "expected_01",
    curves: Optional[Sequence[str]] = None,
    band_curves: Sequence[str] = ("chow", "opt", "token_v2"),
):
    """The interactive figure of `curves_panels` (plotly): click a legend entry to hide a rule."""
    panels = curves_panels(summaries, loss, curves, band_curves)
    return to_plotly(
        panels, _bands_title(band_curves).replace("\n", " "), cols=2, height=380 * -(-len(panels) // 2) + 60
    )


def gap_panels(summaries: Dict[str, dict], loss: str = "expected_01") -> List[Panel]:
    """One panel: each curve's area above the oracle envelope, one bar per summary, with its 95% interval
    where every bound is finite (smaller is better)."""
    names = list(summaries)
    curves = list(summaries[names[0]][loss]["curves"])
    traces = []
    for k, name in enumerate(names):
        areas = summaries[name][loss]["curves"]
        mean, low, high = (
            [float(areas[c]["area"][key][0]) for c in curves] for key in ("mean", "low", "high")
        )
        bounds = dict(low=low, high=high) if np.isfinite(low).all() and np.isfinite(high).all() else {}
        traces.append(
            Trace(
                name,
                [curve_label(c) for c in curves],
                mean,
                kind="bar",
                color=COLORS[k % len(COLORS)],
                **bounds,
            )
        )
    return [Panel(traces, "", "area above the oracle envelope", xrotation=30)]


def gap_figure(summaries: Dict[str, dict], loss: str = "expected_01"):
    """Each curve's area above the oracle envelope, per panel, with its 95% interval (smaller is better)."""
    return to_matplotlib(gap_panels(summaries, loss), legend="each", grid=True, size=(8, 4))


def gap_view(summaries: Dict[str, dict], loss: str = "expected_01"):
    """The interactive figure of `gap_figure` (plotly)."""
    return to_plotly(gap_panels(summaries, loss), height=420)


nearest_alpha = ta.nearest_alpha


def _shade(value: float, rgb) -> str:
    value = 0.0 if not np.isfinite(value) else min(max(value, 0.0), 1.0)
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{0.08 + 0.85 * value:.3f})"


def token_html(result, item_id: str, curve: str, alpha: float, color_by: str = "deferral") -> str:
    """The reference answer of `item_id`, one span per token, shaded by the rule's deferral weight
    (orange: how much of the target comes from the verifier) or its rejection probability (blue),
    with a summary line and each token's numbers in its tooltip."""
    if item_id not in result.showcase:
        raise ValueError(
            f"item {item_id!r} has no per-token statistics; pick one of {', '.join(result.showcase)}."
        )
    if color_by not in ("deferral", "rejection"):
        raise ValueError(f"color_by={color_by!r}: use 'deferral' or 'rejection'.")
    ta.curve_rule(curve)
    alpha = nearest_alpha(result.grid, curve, alpha)
    j = result.grid.points.index((curve, alpha))
    shown = result.showcase[item_id]
    stats = shown["stats"][:, j]  # (n, stats)
    col = {name: ta.STATS.index(name) for name in ta.STATS}
    values = stats[:, col[color_by]]
    if color_by == "deferral" and np.isnan(values).all():
        note = " (Lossy is not a mixture: no deferral weight; shaded by rejection instead)"
        values, color_by = stats[:, col["rejection"]], "rejection"
    else:
        note = ""
    rgb = (230, 120, 20) if color_by == "deferral" else (30, 100, 220)
    spans = []
    for token, row, value in zip(shown["tokens"], stats, values):
        tip = (
            f"rejection {row[col['rejection']]:.3f} | deferral {row[col['deferral']]:.3f} | "
            f"pi(y) {1 - row[col['expected_01']]:.3f} | greedy miss {row[col['greedy_01']]:.0f}"
        )
        text = html.escape(token).replace("\n", "↵<br>") or "∅"
        spans.append(
            f'<span title="{html.escape(tip)}" style="background:{_shade(value, rgb)};'
            f'border-radius:3px;padding:1px 0;white-space:pre-wrap">{text}</span>'
        )
    mean = ta.position_means(stats)
    head = (
        f"<b>{html.escape(curve_label(curve))}</b>, alpha = {alpha:.3g}: {len(stats)} tokens, "
        f"mean rejection {mean[col['rejection']]:.3f}, mean deferral "
        f"{'-' if np.isnan(mean[col['deferral']]) else format(mean[col['deferral']], '.3f')}, "
        f"mean pi(y) {1 - mean[col['expected_01']]:.3f}; shaded by {color_by}{note}"
    )
    return (
        f'<div style="font-family:monospace;font-size:13px;line-height:1.7">{head}<br>'
        f"{colour_key(color_by)}{''.join(spans)}</div>"
    )


def colour_key(color_by: str = "deferral") -> str:
    """The colour key of `token_html`: five swatches from 0 to 1 of the shading's quantity."""
    if color_by not in ("deferral", "rejection"):
        raise ValueError(f"color_by={color_by!r}: use 'deferral' or 'rejection'.")
    rgb = (230, 120, 20) if color_by == "deferral" else (30, 100, 220)
    what = (
        "deferral weight: share of the target taken from the verifier"
        if color_by == "deferral"
        else "rejection probability of a draft at that position"
    )
    # <b>/<div>, not <span>: one <span> per token is the answer itself
    swatches = "".join(
        f'<b style="background:{_shade(v, rgb)};padding:0 6px;margin-right:1px;font-weight:normal">{v:g}</b>'
        for v in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    return f'<div style="font-size:12px">colour key ({what}): {swatches}; hover a token for its numbers</div>'


def token_view(result, item_id: Optional[str] = None):
    """A rule dropdown, an alpha slider (snapping to the grid) and a shading toggle over `token_html`;
    a `LiveBox`, so a saved notebook keeps the shaded answer at its last setting."""
    item_id = item_id or next(iter(result.showcase))
    curves = [c for c in result.grid.curves if len(result.grid.alphas[c]) > 1]
    rule = ipywidgets.Dropdown(
        options=[(curve_label(c), c) for c in curves],
        value="opt" if "opt" in curves else curves[0],
        description="rule",
        style=LABEL_STYLE,
    )
    alpha = ipywidgets.FloatSlider(description="alpha", step=0.05, style=LABEL_STYLE, continuous_update=False)
    color = ipywidgets.ToggleButtons(
        options=["deferral", "rejection"], description="shade by", style=LABEL_STYLE
    )
    item = ipywidgets.Dropdown(
        options=list(result.showcase), value=item_id, description="answer", style=LABEL_STYLE
    )
    out = ipywidgets.HTML()

    def follow(change=None):
        values = result.grid.alphas[rule.value]
        alpha.min, alpha.max = min(values), max(values)
        alpha.step = (max(values) - min(values)) / max(len(values) - 1, 1)

    box = None

    def redraw(change=None):
        try:
            out.value = token_html(result, item.value, rule.value, alpha.value, color.value)
        except ValueError as error:
            out.value = f"<pre>{html.escape(str(error))}</pre>"
        if box is not None:
            box.refresh()

    alpha.max, alpha.min = 1.0, -1.0
    follow()
    alpha.value = 0.0 if alpha.min <= 0.0 <= alpha.max else alpha.min
    rule.observe(follow, names="value")
    for widget in (rule, alpha, color, item):
        widget.observe(redraw, names="value")
    redraw()
    # displayed, the box leaves the answer as shaded at the current setting under itself (static copy)
    box = LiveBox(
        [ipywidgets.HBox([item, rule]), ipywidgets.HBox([alpha, color]), out],
        lambda: static_bundle(html_body=out.value),
    )
    return box
