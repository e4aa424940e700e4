"""Views of notebook 08: every rule's loss-rejection curve against the oracle envelope, and one answer
drawn token by token, coloured by a rule's deferral or by its rejection probability.

The numbers come from `tutorial_lib.token_curves` (`summarise`, a `TokenAnalysis`); this module only
draws. `token_html` is the widget's callback, a plain function that returns HTML.
"""
from __future__ import annotations

import html
from typing import Dict, Optional, Sequence

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np

from ..maths import token_analysis as ta
from .static import static_bundle
from .widgets import COLORS, LABEL_STYLE, RULE_LABELS, LiveBox

__all__ = ["LABELS", "curves_figure", "gap_figure", "token_html", "colour_key", "token_view", "nearest_alpha"]

LABELS = dict(RULE_LABELS, **{"lossy": "Lossy (β = 1)", "lossy*": "Lossy* (β normalised)"})
_STYLE = {curve: (COLORS[i % len(COLORS)], "-" if i < 10 else "--")
          for i, curve in enumerate(("chow", "diff", "opt", "bild", "token_v1", "token_v2", "token_v3", "lossy",
                                     "lossy*"))}
_STAT_LABELS = {"expected_01": "expected 0-1 loss  1 - π(y)", "greedy_01": "greedy 0-1 loss",
                "log_loss": "log loss  -log π(y)"}


def curves_figure(summaries: Dict[str, dict], loss: str = "expected_01", curves: Optional[Sequence[str]] = None,
                  band_curves: Sequence[str] = ("chow", "opt", "token_v2")):
    """One panel per summary (a task, or all items; up to four): each curve's mean loss against its mean
    rejection rate, 95% bands on the loss for `band_curves` and the oracle envelope (black), and the
    two models alone. The legend has its own column (the figure is saved at `tl.savefig`'s size)."""
    names = list(summaries)[:4]
    fig = plt.figure(figsize=(8, 4.5))
    rows = 1 if len(names) <= 2 else 2
    cols = min(len(names), 2)
    gs = fig.add_gridspec(rows, cols + 1, width_ratios=[1] * cols + [0.62])
    column, rejection = ta.STATS.index(loss), ta.STATS.index("rejection")
    axes = []
    for k, name in enumerate(names):
        ax = fig.add_subplot(gs[k // cols, k % cols])
        axes.append(ax)
        s = summaries[name]
        points = s["points"]
        for curve in curves or list(s[loss]["curves"]):
            at = [i for i, (c, _) in enumerate(points) if c == curve]
            r, m = s["mean"][at, rejection], s["mean"][at, column]
            order = np.argsort(r, kind="stable")
            color, dash = _STYLE.get(curve, ("grey", "-"))
            ax.plot(r[order], m[order], dash, color=color, lw=1.2, label=LABELS.get(curve, curve))
            if curve in band_curves:
                ax.fill_between(r[order], s["low"][at, column][order], s["high"][at, column][order],
                                color=color, alpha=0.12, lw=0)
        env = s[loss]["envelope"]
        ax.plot(s["rejection_axis"], env["mean"], color="black", lw=1.8, label="oracle envelope")
        ax.fill_between(s["rejection_axis"], env["low"], env["high"], color="black", alpha=0.1, lw=0)
        for end, marker in (("drafter", "o"), ("verifier", "s")):
            i = points.index((end, 0.0))
            ax.plot(s["mean"][i, rejection], s["mean"][i, column], marker, color="black", ms=5, mfc="white",
                    label=f"{end} alone")
        ax.set_title(f"{name}: {s['items']} answers, {s['positions']} tokens", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if k // cols == rows - 1:
            ax.set_xlabel("mean rejection probability", fontsize=7)
        if k % cols == 0:
            ax.set_ylabel(_STAT_LABELS.get(loss, loss), fontsize=7)
    legend = fig.add_subplot(gs[:, cols])
    legend.axis("off")
    handles, labels = axes[0].get_legend_handles_labels()
    legend.legend(handles, labels, loc="center left", fontsize=7, frameon=False,
                  title=f"bands: 95% intervals\n(envelope, {', '.join(LABELS.get(c, c) for c in band_curves)})",
                  title_fontsize=6.5)
    fig.tight_layout()
    return fig


def gap_figure(summaries: Dict[str, dict], loss: str = "expected_01"):
    """Each curve's area above the oracle envelope, per panel, with its 95% interval (smaller is better)."""
    names = list(summaries)
    curves = list(summaries[names[0]][loss]["curves"])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        areas = summaries[name][loss]["curves"]
        mean = np.array([float(areas[c]["area"]["mean"][0]) for c in curves])
        low = np.array([float(areas[c]["area"]["low"][0]) for c in curves])
        high = np.array([float(areas[c]["area"]["high"][0]) for c in curves])
        x = np.arange(len(curves)) + (k - (len(names) - 1) / 2) * width
        ax.bar(x, mean, width, color=COLORS[k % len(COLORS)], label=name,
               yerr=np.vstack([mean - low, high - mean]) if np.isfinite(low).all() else None, capsize=2)
    ax.set_xticks(np.arange(len(curves)), [LABELS.get(c, c) for c in curves], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("area above the oracle envelope")
    ax.legend(fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def nearest_alpha(grid: ta.Grid, curve: str, alpha: float) -> float:
    """The grid's alpha of `curve` closest to `alpha` (the stored statistics live on the grid)."""
    values = np.asarray(grid.alphas[curve])
    return float(values[np.argmin(np.abs(values - float(alpha)))])


def _shade(value: float, rgb) -> str:
    value = 0.0 if not np.isfinite(value) else min(max(value, 0.0), 1.0)
    return f"rgba({rgb[0]},{rgb[1]},{rgb[2]},{0.08 + 0.85 * value:.3f})"


def token_html(result, item_id: str, curve: str, alpha: float, color_by: str = "deferral") -> str:
    """The reference answer of `item_id`, one span per token, shaded by the rule's deferral weight
    (orange: how much of the target comes from the verifier) or its rejection probability (blue),
    with a summary line and each token's numbers in its tooltip."""
    if item_id not in result.showcase:
        raise ValueError(f"item {item_id!r} has no per-token statistics; pick one of {', '.join(result.showcase)}.")
    if color_by not in ("deferral", "rejection"):
        raise ValueError(f"color_by={color_by!r}: use 'deferral' or 'rejection'.")
    ta.curve_rule(curve)
    alpha = nearest_alpha(result.grid, curve, alpha)
    j = result.grid.points.index((curve, alpha))
    shown = result.showcase[item_id]
    stats = shown["stats"][:, j]                                              # (n, stats)
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
        tip = (f"rejection {row[col['rejection']]:.3f} | deferral {row[col['deferral']]:.3f} | "
               f"pi(y) {1 - row[col['expected_01']]:.3f} | greedy miss {row[col['greedy_01']]:.0f}")
        text = html.escape(token).replace("\n", "↵<br>") or "∅"
        spans.append(f'<span title="{html.escape(tip)}" style="background:{_shade(value, rgb)};'
                     f'border-radius:3px;padding:1px 0;white-space:pre-wrap">{text}</span>')
    mean = np.array([np.nan if np.isnan(c).all() else np.nanmean(c) for c in stats.T])
    head = (f"<b>{html.escape(LABELS.get(curve, curve))}</b>, alpha = {alpha:.3g}: {len(stats)} tokens, "
            f"mean rejection {mean[col['rejection']]:.3f}, mean deferral "
            f"{'-' if np.isnan(mean[col['deferral']]) else format(mean[col['deferral']], '.3f')}, "
            f"mean pi(y) {1 - mean[col['expected_01']]:.3f}; shaded by {color_by}{note}")
    return (f'<div style="font-family:monospace;font-size:13px;line-height:1.7">{head}<br>'
            f'{colour_key(color_by)}{"".join(spans)}</div>')


def colour_key(color_by: str = "deferral") -> str:
    """The colour key of `token_html`: five swatches from 0 to 1 of the shading's quantity."""
    if color_by not in ("deferral", "rejection"):
        raise ValueError(f"color_by={color_by!r}: use 'deferral' or 'rejection'.")
    rgb = (230, 120, 20) if color_by == "deferral" else (30, 100, 220)
    what = ("deferral weight: share of the target taken from the verifier" if color_by == "deferral"
            else "rejection probability of a draft at that position")
    # <b>/<div>, not <span>: one <span> per token is the answer itself
    swatches = "".join(f'<b style="background:{_shade(v, rgb)};padding:0 6px;margin-right:1px;font-weight:normal">'
                       f'{v:g}</b>' for v in (0.0, 0.25, 0.5, 0.75, 1.0))
    return f'<div style="font-size:12px">colour key ({what}): {swatches}; hover a token for its numbers</div>'



def token_view(result, item_id: Optional[str] = None):
    """A rule dropdown, an alpha slider (snapping to the grid) and a shading toggle over `token_html`;
    a `LiveBox`, so a saved notebook keeps the shaded answer at its last setting."""
    item_id = item_id or next(iter(result.showcase))
    curves = [c for c in result.grid.curves if len(result.grid.alphas[c]) > 1]
    rule = ipywidgets.Dropdown(options=[(LABELS.get(c, c), c) for c in curves], value="opt" if "opt" in curves
                               else curves[0], description="rule", style=LABEL_STYLE)
    alpha = ipywidgets.FloatSlider(description="alpha", step=0.05, style=LABEL_STYLE, continuous_update=False)
    color = ipywidgets.ToggleButtons(options=["deferral", "rejection"], description="shade by", style=LABEL_STYLE)
    item = ipywidgets.Dropdown(options=list(result.showcase), value=item_id, description="answer", style=LABEL_STYLE)
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
    box = LiveBox([ipywidgets.HBox([item, rule]), ipywidgets.HBox([alpha, color]), out],
                  lambda: static_bundle(html_body=out.value))
    return box
