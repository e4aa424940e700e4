"""The static figure: `to_matplotlib` draws a list of `Panel`s with matplotlib (a `*_figure`, for
`tl.savefig`), the twin of `to_plotly`: both draw every field, so both show the same numbers.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from .figure_data import (
    FIGURE_SIZE,
    Heatmap,
    Panel,
    Trace,
    as_floats,
    dash_style,
    error_bar_lengths,
    grid_shape,
    is_categorical,
    trace_colors,
    wrap,
)

# DescribedFigure stays out of `__all__`: matplotlib writes a `set` method into every subclass of `Figure`,
# whose docstring the book's API pages cannot typeset.
__all__ = ["to_matplotlib"]


class DescribedFigure(Figure):
    """The figure `to_matplotlib` draws: a matplotlib `Figure` whose text form in a notebook says what it
    shows (`views.static.figure_description`: title, axes, line names) instead of `<Figure size 800x450
    with 2 Axes>`; the course book makes that text the image's alt text. (A method of the class, not a
    printer registered with IPython: activating the inline backend drops every printer registered for
    `Figure`.)"""

    def _repr_pretty_(self, printer, cycle) -> None:
        from ..static import figure_description  # at use: this package loads nothing else of the views

        printer.text(figure_description(self))


_MPL_DASH = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}
_MPL_MARKER = {
    "dot": "o",
    "ring": "o",
    "dash": "_",
    "square": "s",
    "open square": "s",
    "triangle": "^",
    "diamond": "D",
}


def _draw_heatmap(ax, h: Heatmap) -> None:
    values = [list(line) for line in h.z]
    annotations = [[f"{v:.2f}" if v >= 0.005 else "" for v in line] for line in values]
    import seaborn as sns  # only the rules-at-once heatmap uses it

    sns.heatmap(
        values,
        ax=ax,
        cmap="Blues",
        vmin=h.zmin,
        vmax=h.zmax,
        annot=annotations,
        fmt="",
        annot_kws={"size": 6},
        xticklabels=list(h.xlabels),
        yticklabels=list(h.ylabels),
        cbar_kws={"label": h.colorbar},
    )
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
        yerr = [error_bar_lengths(t.y, t.low), error_bar_lengths(t.high, t.y)] if t.low is not None else None
        h = ax.bar(
            xs, as_floats(t.y), width=width, color=color, label=label, yerr=yerr, capsize=2 if yerr else 0
        )
        ax.set_xticks(range(len(t.x)))
        rotation = panel.xrotation if panel.xrotation is not None else (60 if not small else 45)
        ax.set_xticklabels(
            list(t.x), rotation=rotation, ha="right" if rotation else "center", fontsize=7 if not small else 6
        )
        return h
    style = dict(
        linestyle=_MPL_DASH[dash_style(t)], linewidth=t.width, color=color, alpha=t.opacity, label=label
    )
    if t.kind == "hline":
        if t.low is not None:
            ax.axhspan(
                float(t.low[0]),
                float(t.high[0]),
                color=t.fill_color or color,
                alpha=t.fill_opacity,
                linewidth=0,
            )
        return ax.axhline(float(t.y[0]), **style)
    if t.kind == "vline":
        return ax.axvline(float(t.x[0]), **style)
    # Token labels sit at 0..V-1, where the bars are centred.
    xs = list(range(len(t.x))) if is_categorical(t.x) else as_floats(t.x)
    marker = _MPL_MARKER.get(t.marker, "o")
    if t.error is not None or (t.kind == "points" and (t.low is not None or t.xlow is not None)):
        yerr = (
            as_floats(t.error)
            if t.error is not None
            else (
                [error_bar_lengths(t.y, t.low), error_bar_lengths(t.high, t.y)] if t.low is not None else None
            )
        )
        xerr = (
            [error_bar_lengths(t.x, t.xlow), error_bar_lengths(t.xhigh, t.x)] if t.xlow is not None else None
        )
        h = ax.errorbar(
            xs,
            as_floats(t.y),
            yerr=yerr,
            xerr=xerr,
            fmt=marker,
            markersize=t.marker_size or 3,
            color=color,
            capsize=2,
            label=label,
            alpha=t.opacity,
        )
    else:
        style.update(
            linestyle="none" if t.kind == "points" else style["linestyle"],
            marker=marker if t.kind in ("curve", "points") else None,
            markersize=t.marker_size or ((16 if t.marker == "dash" else 7) if t.kind == "points" else 3),
        )
        if t.marker == "dash":
            style["markeredgewidth"] = 2
        elif t.marker in ("ring", "open square"):
            style.update(
                markerfacecolor="white" if t.marker == "open square" else "none", markeredgewidth=1.5
            )
        if t.low is not None:  # the band under its line
            ax.fill_between(
                xs,
                as_floats(t.low),
                as_floats(t.high),
                color=t.fill_color or color,
                alpha=t.fill_opacity,
                linewidth=0,
            )
        (h,) = ax.plot(xs, as_floats(t.y), **style)
    for x, y, text in zip(xs, as_floats(t.y), t.labels or []):
        ax.annotate(
            text,
            (x, y),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7 if t.opacity == 1 else 6,
            color=color if t.opacity == 1 else "grey",
        )
    return h


def _legend(ax, handles: Dict[str, object], **options) -> None:
    ax.legend(list(handles.values()), list(handles.keys()), **options)


def to_matplotlib(
    panels: Sequence[Panel],
    title: str = "",
    legend: str = "right",
    *,
    cols: Optional[int] = None,
    shared_y: bool = False,
    shared_x: bool = False,
    size: Optional[Sequence[float]] = None,
    grid: bool = False,
    legend_title: str = "",
    ax=None,
):
    """The static figure for `tl.savefig`: one set of axes per panel (`cols` per row), `size` inches
    (default `FIGURE_SIZE`). `legend="right"` draws one shared legend beside the last panel of the
    first row (it survives `tight_layout`, which a figure-level legend would not), titled
    `legend_title`; `"each"` one per panel; `"first"` the series several panels share, in the first
    panel; `"spare"` one shared legend in the first empty cell of the grid, else under the panels;
    `"none"` no legend. `shared_x`: the x axis is shared by each column and labelled only at its foot.
    `grid`: faint grid lines. `ax`: the axes to draw one panel into (no new figure)."""
    colors = trace_colors(panels)
    n_rows, n_cols = grid_shape(len(panels), cols)
    if ax is not None:
        if len(panels) != 1:
            raise ValueError("to_matplotlib(..., ax=...) draws exactly one panel.")
        fig, axes = ax.figure, np.array([[ax]], dtype=object)
    else:
        fig, axes = plt.subplots(
            n_rows,
            n_cols,
            figsize=size or FIGURE_SIZE,
            squeeze=False,
            sharey=shared_y,
            sharex=shared_x,
            FigureClass=DescribedFigure,
        )
    small = n_rows > 1 or n_cols > 2  # a grid: smaller type
    handles: Dict[str, object] = {}
    spare = list(axes.flat)[len(panels) :]
    for k, cell in enumerate(spare, start=len(panels)):
        cell.axis("off")
        if shared_x and k >= n_cols:  # the panel above an empty cell shows its x ticks and label
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
                ax.annotate(
                    label,
                    (float(x), 0.02),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    textcoords="offset points",
                    xytext=(-2, 0),
                    ha="right",
                    va="bottom",
                    fontsize=7,
                    color="dimgrey",
                )
        for y, label in panel.hlines:
            ax.axhline(float(y), color="grey", linestyle="--", linewidth=1)
            if label:
                ax.annotate(
                    label,
                    (0.99, float(y)),
                    xycoords=("axes fraction", "data"),
                    textcoords="offset points",
                    xytext=(0, 3),
                    ha="right",
                    fontsize=7,
                    color="dimgrey",
                )
        if panel.note:
            ax.text(
                0.5,
                0.04,
                panel.note,
                transform=ax.transAxes,
                ha="center",
                va="bottom",
                fontsize=7,
                color="dimgrey",
            )
        if panel.xlog:
            ax.set_xscale("log")
            ticks = sorted(
                {x for t in panel.traces if t.kind not in ("hline", "vline") for x in as_floats(t.x)}
            )
            if (
                len(ticks) <= 8
            ):  # ticks at the plotted values, written plainly (0.5, 1, 2), not as powers of ten
                ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
                ax.xaxis.set_minor_locator(NullLocator())
        if panel.yticks is not None:
            ax.set_yticks([float(v) for v, _ in panel.yticks], [s for _, s in panel.yticks], fontsize=7)
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        if grid:
            ax.grid(alpha=0.3)
        if not (shared_x and k + n_cols < len(panels)):  # with a shared x axis, only at the foot of a column
            ax.set_xlabel(panel.xlabel, fontsize=7 if small else 9)
        if not (shared_y and ax not in axes[:, 0]):
            ax.set_ylabel(panel.ylabel, fontsize=7 if small else 9)
        ax.set_title(panel.title, fontsize=7 if small else 9, pad=2 if small else None)
        if panel.heatmap is None:
            ax.tick_params(labelsize=6 if small else 8)
        if legend == "each" and own:
            _legend(
                ax,
                own,
                fontsize=6 if len(panels) > 2 else 7,
                loc="upper left" if panel.ylim else "best",
                framealpha=0.8,
            )
    if legend == "right" and handles:
        _legend(
            axes[0, -1],
            handles,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            fontsize=7,
            frameon=False,
            title=legend_title or None,
            title_fontsize=6.5,
        )
    elif legend == "first" and handles:  # the series several panels share; a panel's own is in its title
        counts = {name: sum(name in {t.name for t in p.traces} for p in panels) for name in handles}
        shared = {name: h for name, h in handles.items() if counts[name] > 1 or len(panels) == 1}
        _legend(axes.flat[0], shared, fontsize=6, loc="best")
    elif legend == "spare" and handles:
        if spare:
            _legend(spare[0], handles, loc="center", fontsize=7, frameon=False, title=legend_title or None)
        else:
            fig.legend(
                list(handles.values()),
                list(handles.keys()),
                loc="lower center",
                ncol=3,
                fontsize=7,
                frameon=False,
                title=legend_title or None,
            )
            fig.tight_layout(rect=(0, 0.1 + 0.02 * max(0, 3 - n_rows), 1, 0.96 if title else 1))
    if title:
        fig.suptitle(wrap(title), fontsize=9 if small else 10)
    return fig
