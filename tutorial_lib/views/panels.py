"""A figure as data, drawn to plotly or matplotlib: the one drawing idiom of `views`.

- `Trace`: one series (a line, a curve with markers, points, bars, or a labelled reference line), with
  optionally its interval: `low` / `high` on y (a shaded band under a line or a curve, asymmetric error
  bars on points and bars; the band is the interval itself) and `xlow` / `xhigh` on x (error bars).
- `Panel`: one set of axes: traces, labels, unlabelled reference lines, a note, tick labels.
- `to_plotly(panels, title)`: the interactive figure (a `*_view`); `to_matplotlib(panels, title)` its
  static twin (a `*_figure`, for `tl.savefig`). Both draw every field, so both show the same numbers.

This module imports nothing of the package (`figures` and `widgets` build on it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
from matplotlib.colors import to_hex, to_rgba
from matplotlib.ticker import NullLocator
from plotly.subplots import make_subplots

__all__ = ["FIGURE_SIZE", "TITLE_WIDTH", "COLORBLIND", "palette", "wrap", "Trace", "Heatmap", "Panel", "to_plotly",
           "to_matplotlib"]

#: Inches of a static figure (`tl.savefig` saves every figure at this size unless told otherwise).
FIGURE_SIZE = (8.0, 4.5)
#: Characters per line of an interactive figure's title (a notebook's output area is about 900 px wide).
TITLE_WIDTH = 85


def wrap(title: str, width: int = 110) -> str:
    """Break a long title at separators (": ", "; ", ", ", else a space) so each line fits `width`."""
    if len(title) <= width:
        return title
    cut = max(title.rfind(sep, 0, width) for sep in (": ", "; ", ", "))
    if cut < 0:
        cut = title.rfind(" ", 0, width) - 1
    if cut < 0:
        return title
    return title[:cut + 1] + "\n" + wrap(title[cut + 2:], width)


@dataclass
class Trace:
    """One series. `kind`: "line", "curve" (line with markers), "points" (markers only), "bar", or a
    reference line across the axes, "hline" (at `y[0]`) or "vline" (at `x[0]`), with a legend entry.

    `low` / `high`: the interval of each y (not a half-width): a shaded band (`fill_opacity`,
    `fill_color`) under a line or a curve and around an "hline", asymmetric error bars on points and
    bars; `xlow` / `xhigh` the interval of each x (error bars, points only). `error` is a symmetric
    half-width on each y (points only)."""
    name: str
    x: Sequence
    y: Sequence
    kind: str = "line"
    dash: Union[bool, str] = False           # False / True, or "solid", "dash", "dot", "dashdot"
    color: Optional[str] = None
    width: float = 1.6
    labels: Optional[Sequence[str]] = None  # text beside each point ("points" only)
    error: Optional[Sequence[float]] = None  # symmetric error bar on each y ("points" only)
    marker: str = "dot"                      # "dot", "ring", "dash" (a short level line), "square", "open square",
    #                                          "triangle", "diamond"
    hover: Optional[Sequence[str]] = None    # text shown on hover (interactive figure only)
    low: Optional[Sequence[float]] = None    # lower bound of each y's interval
    high: Optional[Sequence[float]] = None   # upper bound of each y's interval
    xlow: Optional[Sequence[float]] = None   # lower bound of each x's interval ("points" only)
    xhigh: Optional[Sequence[float]] = None  # upper bound of each x's interval ("points" only)
    fill_opacity: float = 0.13               # of the band
    fill_color: Optional[str] = None         # of the band (default: the trace's colour)
    opacity: float = 1.0                     # of the line and markers (a faint anchor: 0.5)
    marker_size: Optional[float] = None      # points (matplotlib's units; plotly's are 1.5 times larger)
    legend: bool = True                      # False: no legend entry


@dataclass
class Heatmap:
    """A matrix of probabilities, rows `ylabels` by columns `xlabels`, each cell annotated with its value."""
    z: Sequence[Sequence[float]]
    xlabels: Sequence[str]
    ylabels: Sequence[str]
    zmin: float = 0.0
    zmax: float = 1.0
    colorbar: str = "probability"
    divider: Optional[int] = None            # a line drawn under this many rows


@dataclass
class Panel:
    """One set of axes: traces, axis labels, and labelled vertical / horizontal reference lines (grey).

    `note`: a line of text at the foot of the panel; `yticks`: `(value, label)` pairs that replace the
    y axis's ticks (a panel of named rows); `xrotation`: the angle of bar labels."""
    traces: List[Trace]
    xlabel: str
    ylabel: str
    title: str = ""
    vlines: List[Tuple[float, str]] = field(default_factory=list)
    hlines: List[Tuple[float, str]] = field(default_factory=list)
    xlog: bool = False
    ylim: Optional[Tuple[float, float]] = None
    heatmap: Optional[Heatmap] = None        # drawn instead of traces
    note: str = ""
    yticks: Optional[Sequence[Tuple[float, str]]] = None
    xrotation: Optional[float] = None


_MPL_DASH = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}
_MPL_MARKER = {"dot": "o", "ring": "o", "dash": "_", "square": "s", "open square": "s", "triangle": "^",
               "diamond": "D"}
_PLOTLY_MARKER = {"dot": "circle", "ring": "circle-open", "dash": "line-ew-open", "square": "square",
                  "open square": "square-open", "triangle": "triangle-up", "diamond": "diamond"}


#: seaborn's "colorblind" palette, spelled out so that drawing a lesson's figure does not import seaborn
#: (and scipy and pandas with it).
COLORBLIND = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
              "#56b4e9")


def palette(n: int) -> List[str]:
    """`n` distinct colours: the colour-blind palette, or beyond its 10 colours (which would repeat) husl's."""
    if n <= len(COLORBLIND):
        return list(COLORBLIND[:max(n, 1)])
    import seaborn as sns   # only for more traces than the colour-blind palette holds
    return sns.color_palette("husl", n).as_hex()


def _dash(trace: Trace) -> str:
    if isinstance(trace.dash, str):
        return trace.dash
    return "dash" if trace.dash else "solid"


def _colors(panels: Sequence[Panel]) -> Dict[str, str]:
    """One colour per trace name across all panels, so a shared legend is right for every panel."""
    names = list(dict.fromkeys(t.name for panel in panels for t in panel.traces if t.color is None))
    return dict(zip(names, palette(len(names))))


def _floats(values) -> list:
    return [float(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]


def _categorical(values) -> bool:
    return any(isinstance(v, str) for v in values)


def _grid(n: int, cols: Optional[int]) -> Tuple[int, int]:
    cols = n if cols is None else min(cols, n)
    return -(-n // cols), cols


def _html(text: str) -> str:
    """A title's line breaks as plotly writes them; the lines after the first in small type."""
    head, *rest = text.split("\n")
    return head + "".join(f"<br><sup>{line}</sup>" for line in rest)


def _rgba(color: str, opacity: float) -> str:
    r, g, b, _ = to_rgba(color)
    return f"rgba({round(255 * r)},{round(255 * g)},{round(255 * b)},{opacity:.3f})"


def _below(values, bounds) -> Optional[list]:
    """Error-bar lengths below (`values - low`) or above (`high - values`) each value."""
    if bounds is None:
        return None
    return [abs(v - b) for v, b in zip(_floats(values), _floats(bounds))]


# --------------------------------------------------------------------------------------------
# plotly
# --------------------------------------------------------------------------------------------

def _plotly_trace(fig, t: Trace, color: str, common: dict, row: int, col: int) -> None:
    if t.kind == "bar":
        error = (dict(type="data", symmetric=False, array=_below(t.high, t.y), arrayminus=_below(t.y, t.low))
                 if t.low is not None else None)
        fig.add_trace(go.Bar(x=list(t.x), y=_floats(t.y), marker_color=color, error_y=error, **common),
                      row=row, col=col)
        return
    line = dict(color=color, width=t.width, dash=_dash(t))
    if t.kind in ("hline", "vline"):
        if t.kind == "hline":
            if t.low is not None:
                fig.add_hrect(y0=float(t.low[0]), y1=float(t.high[0]), fillcolor=_rgba(t.fill_color or color, 1.0),
                              opacity=t.fill_opacity, line_width=0, layer="below", row=row, col=col,
                              exclude_empty_subplots=False)
            fig.add_hline(y=float(t.y[0]), line=line, row=row, col=col, exclude_empty_subplots=False)
        else:
            fig.add_vline(x=float(t.x[0]), line=line, row=row, col=col, exclude_empty_subplots=False)
        if t.legend and common["showlegend"]:   # a legend entry for the line: shapes have none
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, **common), row=row, col=col)
        return
    xs = list(t.x) if _categorical(t.x) else _floats(t.x)
    if t.low is not None and t.kind in ("line", "curve"):    # the band first, under its line
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=_floats(t.high) + _floats(t.low)[::-1], fill="toself",
                                 fillcolor=_rgba(t.fill_color or color, t.fill_opacity), line=dict(width=0),
                                 mode="lines", hoverinfo="skip", showlegend=False, legendgroup=t.name),
                      row=row, col=col)
    mode = {"line": "lines", "curve": "lines+markers", "points": "markers+text" if t.labels else "markers"}[t.kind]
    marker = dict(size=1.5 * t.marker_size if t.marker_size else (9 if t.kind == "points" else 5), color=color,
                  symbol=_PLOTLY_MARKER.get(t.marker, "circle"))
    if t.marker == "dash":
        marker.update(size=22, line_width=2, line_color=color)
    elif t.marker in ("ring", "open square"):
        marker.update(line_width=2, line_color=color, size=marker["size"] + 1)
    error_y = error_x = None
    if t.error is not None:
        error_y = dict(array=_floats(t.error))
    elif t.low is not None and t.kind == "points":
        error_y = dict(type="data", symmetric=False, array=_below(t.high, t.y), arrayminus=_below(t.y, t.low))
    if t.xlow is not None:
        error_x = dict(type="data", symmetric=False, array=_below(t.xhigh, t.x), arrayminus=_below(t.x, t.xlow))
    fig.add_trace(go.Scatter(
        x=xs, y=_floats(t.y), mode=mode, text=list(t.labels) if t.labels else None, textposition="top center",
        marker=marker, error_y=error_y, error_x=error_x, opacity=t.opacity,
        hovertext=list(t.hover) if t.hover else None, hoverinfo="text" if t.hover else None, line=line, **common),
        row=row, col=col)


def to_plotly(panels: Sequence[Panel], title: str = "", *, cols: Optional[int] = None, height: int = 480,
              shared_y: bool = False, shared_x: bool = False) -> go.Figure:
    """The interactive figure: one subplot per panel (`cols` per row), one legend entry per trace name."""
    colors = _colors(panels)
    n_rows, n_cols = _grid(len(panels), cols)
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=[_html(p.title) for p in panels],
                        shared_yaxes=shared_y, shared_xaxes=shared_x,
                        horizontal_spacing=(0.15 if any(p.yticks for p in panels) else 0.06) if n_cols > 2 else None,
                        vertical_spacing=0.12 if n_rows > 1 else None)
    shown = set()
    for k, panel in enumerate(panels):
        row, col = k // n_cols + 1, k % n_cols + 1
        if panel.heatmap is not None:
            h = panel.heatmap
            text = [[f"{v:.2f}" if v >= 0.005 else "" for v in line] for line in h.z]
            fig.add_trace(go.Heatmap(z=[list(line) for line in h.z], x=list(h.xlabels), y=list(h.ylabels),
                                     colorscale="Blues", zmin=h.zmin, zmax=h.zmax, text=text, texttemplate="%{text}",
                                     colorbar_title=h.colorbar), row=row, col=col)
            fig.update_yaxes(autorange="reversed", row=row, col=col)
        for t in panel.traces:
            color = to_hex(t.color) if t.color else colors[t.name]
            common = dict(name=t.name, legendgroup=t.name, showlegend=t.legend and t.name not in shown)
            if t.legend:
                shown.add(t.name)
            _plotly_trace(fig, t, color, common, row, col)
        for x, label in panel.vlines:   # an unlabelled line has no annotation (plotly would write "new text")
            text = dict(annotation_text=label, annotation_font_size=10) if label else {}
            fig.add_vline(x=float(x), line_dash="dot", line_color="grey", row=row, col=col, **text)
        for y, label in panel.hlines:
            text = dict(annotation_text=label, annotation_position="bottom left", annotation_font_size=10) if label else {}
            fig.add_hline(y=float(y), line_dash="dash", line_color="grey", row=row, col=col, **text)
        if panel.note:
            fig.add_annotation(text=panel.note, x=0.5, y=0.04, xref="x domain", yref="y domain", showarrow=False,
                               font=dict(size=10, color="dimgrey"), row=row, col=col)
        fig.update_xaxes(title_text=panel.xlabel or None, type="log" if panel.xlog else None, row=row, col=col)
        if panel.xrotation is not None:
            fig.update_xaxes(tickangle=-panel.xrotation, row=row, col=col)
        fig.update_yaxes(title_text=panel.ylabel or None, range=list(panel.ylim) if panel.ylim else None, row=row, col=col)
        if panel.yticks is not None:
            fig.update_yaxes(tickvals=[float(v) for v, _ in panel.yticks], ticktext=[s for _, s in panel.yticks],
                             row=row, col=col)
    fig.update_annotations(font_size=12)
    # A long title is broken at a separator: plotly never wraps one, and cut it at the figure's right edge.
    head, *rest = title.split("\n") if title else [""]
    lines = wrap(head, TITLE_WIDTH).split("\n") if head else []
    text = "<br>".join(lines) + "".join(f"<br><sup>{line}</sup>" for line in rest)
    extra = 20 * max(len(lines) + len(rest) - 1, 0)
    fig.update_layout(title=dict(text=text, font=dict(size=15)), template="plotly_white", barmode="group",
                      height=height + extra, margin=dict(t=90 + extra), legend=dict(font=dict(size=11)))
    return fig


# --------------------------------------------------------------------------------------------
# matplotlib
# --------------------------------------------------------------------------------------------

def _draw_heatmap(ax, h: Heatmap) -> None:
    values = [list(line) for line in h.z]
    annotations = [[f"{v:.2f}" if v >= 0.005 else "" for v in line] for line in values]
    import seaborn as sns   # only the rules-at-once heatmap uses it
    sns.heatmap(values, ax=ax, cmap="Blues", vmin=h.zmin, vmax=h.zmax, annot=annotations, fmt="",
                annot_kws={"size": 6}, xticklabels=list(h.xlabels), yticklabels=list(h.ylabels),
                cbar_kws={"label": h.colorbar})
    if h.divider is not None:
        ax.axhline(h.divider, color="black", linewidth=1)
    ax.tick_params(axis="y", labelsize=7)
    ax.tick_params(axis="x", labelsize=8, rotation=45)


def _matplotlib_trace(ax, t: Trace, color: str, bars: List[Trace], panel: Panel, small: bool):
    """Draw one trace; returns its legend handle."""
    label = t.name if t.legend else None
    if t.kind == "bar":
        k, width = bars.index(t), 0.8 / len(bars)
        xs = [j + (k - (len(bars) - 1) / 2) * width for j in range(len(t.x))]
        yerr = [_below(t.y, t.low), _below(t.high, t.y)] if t.low is not None else None
        h = ax.bar(xs, _floats(t.y), width=width, color=color, label=label, yerr=yerr, capsize=2 if yerr else 0)
        ax.set_xticks(range(len(t.x)))
        rotation = panel.xrotation if panel.xrotation is not None else (60 if not small else 45)
        ax.set_xticklabels(list(t.x), rotation=rotation, ha="right" if rotation else "center",
                           fontsize=7 if not small else 6)
        return h
    style = dict(linestyle=_MPL_DASH[_dash(t)], linewidth=t.width, color=color, alpha=t.opacity, label=label)
    if t.kind == "hline":
        if t.low is not None:
            ax.axhspan(float(t.low[0]), float(t.high[0]), color=t.fill_color or color, alpha=t.fill_opacity,
                       linewidth=0)
        return ax.axhline(float(t.y[0]), **style)
    if t.kind == "vline":
        return ax.axvline(float(t.x[0]), **style)
    # Token labels sit at 0..V-1, where the bars are centred.
    xs = list(range(len(t.x))) if _categorical(t.x) else _floats(t.x)
    marker = _MPL_MARKER.get(t.marker, "o")
    if t.error is not None or (t.kind == "points" and (t.low is not None or t.xlow is not None)):
        yerr = _floats(t.error) if t.error is not None else (
            [_below(t.y, t.low), _below(t.high, t.y)] if t.low is not None else None)
        xerr = [_below(t.x, t.xlow), _below(t.xhigh, t.x)] if t.xlow is not None else None
        h = ax.errorbar(xs, _floats(t.y), yerr=yerr, xerr=xerr, fmt=marker, markersize=t.marker_size or 3,
                        color=color, capsize=2, label=label, alpha=t.opacity)
    else:
        style.update(linestyle="none" if t.kind == "points" else style["linestyle"],
                     marker=marker if t.kind in ("curve", "points") else None,
                     markersize=t.marker_size or ((16 if t.marker == "dash" else 7) if t.kind == "points" else 3))
        if t.marker == "dash":
            style["markeredgewidth"] = 2
        elif t.marker in ("ring", "open square"):
            style.update(markerfacecolor="white" if t.marker == "open square" else "none", markeredgewidth=1.5)
        if t.low is not None:   # the band under its line
            ax.fill_between(xs, _floats(t.low), _floats(t.high), color=t.fill_color or color, alpha=t.fill_opacity,
                            linewidth=0)
        (h,) = ax.plot(xs, _floats(t.y), **style)
    for x, y, text in zip(xs, _floats(t.y), t.labels or []):
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7 if t.opacity == 1 else 6,
                    color=color if t.opacity == 1 else "grey")
    return h


def _legend(ax, handles: Dict[str, object], **options) -> None:
    ax.legend(list(handles.values()), list(handles.keys()), **options)


def to_matplotlib(panels: Sequence[Panel], title: str = "", legend: str = "right", *, cols: Optional[int] = None,
                  shared_y: bool = False, shared_x: bool = False, size: Optional[Sequence[float]] = None,
                  grid: bool = False, legend_title: str = "", ax=None):
    """The static figure for `tl.savefig`: one set of axes per panel (`cols` per row), `size` inches
    (default `FIGURE_SIZE`). `legend="right"` draws one shared legend beside the last panel of the
    first row (it survives `tight_layout`, which a figure-level legend would not), titled
    `legend_title`; `"each"` one per panel; `"first"` the series several panels share, in the first
    panel; `"spare"` one shared legend in the first empty cell of the grid, else under the panels;
    `"none"` no legend. `shared_x`: the x axis is shared by each column and labelled only at its foot.
    `grid`: faint grid lines. `ax`: the axes to draw one panel into (no new figure)."""
    colors = _colors(panels)
    n_rows, n_cols = _grid(len(panels), cols)
    if ax is not None:
        if len(panels) != 1:
            raise ValueError("to_matplotlib(..., ax=...) draws exactly one panel.")
        fig, axes = ax.figure, np.array([[ax]], dtype=object)
    else:
        fig, axes = plt.subplots(n_rows, n_cols, figsize=size or FIGURE_SIZE, squeeze=False, sharey=shared_y,
                                 sharex=shared_x)
    small = n_rows > 1 or n_cols > 2          # a grid: smaller type
    handles: Dict[str, object] = {}
    spare = list(axes.flat)[len(panels):]
    for k, cell in enumerate(spare, start=len(panels)):
        cell.axis("off")
        if shared_x and k >= n_cols:   # the panel above an empty cell shows its x ticks and label
            axes.flat[k - n_cols].xaxis.set_tick_params(labelbottom=True)
    for k, (ax, panel) in enumerate(zip(axes.flat, panels)):
        own: Dict[str, object] = {}  # this panel's legend entries, one per name
        if panel.heatmap is not None:
            _draw_heatmap(ax, panel.heatmap)
        bars = [t for t in panel.traces if t.kind == "bar"]
        for t in panel.traces:
            h = _matplotlib_trace(ax, t, t.color or colors[t.name], bars, panel, small)
            if t.legend:
                handles.setdefault(t.name, h)
                own.setdefault(t.name, h)
        # vertical lines labelled along their foot, horizontal ones at their right end: the two never
        # meet where a vertical line sits at the left edge (gamma = 0), and points near the top stay clear
        for x, label in panel.vlines:
            ax.axvline(float(x), color="grey", linestyle=":", linewidth=1)
            if label:
                ax.annotate(label, (float(x), 0.02), xycoords=("data", "axes fraction"), rotation=90,
                            textcoords="offset points", xytext=(-2, 0), ha="right", va="bottom", fontsize=7,
                            color="dimgrey")
        for y, label in panel.hlines:
            ax.axhline(float(y), color="grey", linestyle="--", linewidth=1)
            if label:
                ax.annotate(label, (0.99, float(y)), xycoords=("axes fraction", "data"), textcoords="offset points",
                            xytext=(0, 3), ha="right", fontsize=7, color="dimgrey")
        if panel.note:
            ax.text(0.5, 0.04, panel.note, transform=ax.transAxes, ha="center", va="bottom", fontsize=7,
                    color="dimgrey")
        if panel.xlog:
            ax.set_xscale("log")
            ticks = sorted({x for t in panel.traces if t.kind not in ("hline", "vline") for x in _floats(t.x)})
            if len(ticks) <= 8:   # ticks at the plotted values, written plainly (0.5, 1, 2), not as powers of ten
                ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
                ax.xaxis.set_minor_locator(NullLocator())
        if panel.yticks is not None:
            ax.set_yticks([float(v) for v, _ in panel.yticks], [s for _, s in panel.yticks], fontsize=7)
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        if grid:
            ax.grid(alpha=0.3)
        if not (shared_x and k + n_cols < len(panels)):   # with a shared x axis, only at the foot of a column
            ax.set_xlabel(panel.xlabel, fontsize=7 if small else 9)
        if not (shared_y and ax not in axes[:, 0]):
            ax.set_ylabel(panel.ylabel, fontsize=7 if small else 9)
        ax.set_title(panel.title, fontsize=7 if small else 9, pad=2 if small else None)
        if panel.heatmap is None:
            ax.tick_params(labelsize=6 if small else 8)
        if legend == "each" and own:
            _legend(ax, own, fontsize=6 if len(panels) > 2 else 7, loc="upper left" if panel.ylim else "best",
                    framealpha=0.8)
    if legend == "right" and handles:
        _legend(axes[0, -1], handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False,
                title=legend_title or None, title_fontsize=6.5)
    elif legend == "first" and handles:     # the series several panels share; a panel's own is in its title
        counts = {name: sum(name in {t.name for t in p.traces} for p in panels) for name in handles}
        shared = {name: h for name, h in handles.items() if counts[name] > 1 or len(panels) == 1}
        _legend(axes.flat[0], shared, fontsize=6, loc="best")
    elif legend == "spare" and handles:
        if spare:
            _legend(spare[0], handles, loc="center", fontsize=7, frameon=False, title=legend_title or None)
        else:
            fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=3, fontsize=7,
                       frameon=False, title=legend_title or None)
            fig.tight_layout(rect=(0, 0.1 + 0.02 * max(0, 3 - n_rows), 1, 0.96 if title else 1))
    if title:
        fig.suptitle(wrap(title), fontsize=9 if small else 10)
    return fig
