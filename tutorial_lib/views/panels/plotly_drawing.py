"""The interactive figure: `to_plotly` draws a list of `Panel`s as one plotly figure (a `*_view`), one
subplot per panel and one legend entry per trace name.
"""

from __future__ import annotations

from typing import Optional, Sequence

import plotly.graph_objects as go
from matplotlib.colors import to_hex, to_rgba
from plotly.subplots import make_subplots

from .figure_data import (
    TITLE_WIDTH,
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

__all__ = ["to_plotly"]

_PLOTLY_MARKER = {
    "dot": "circle",
    "ring": "circle-open",
    "dash": "line-ew-open",
    "square": "square",
    "open square": "square-open",
    "triangle": "triangle-up",
    "diamond": "diamond",
}


def _html(text: str) -> str:
    """A title's line breaks as plotly writes them; the lines after the first in small type."""
    head, *rest = text.split("\n")
    return head + "".join(f"<br><sup>{line}</sup>" for line in rest)


def _rgba(color: str, opacity: float) -> str:
    r, g, b, _ = to_rgba(color)
    return f"rgba({round(255 * r)},{round(255 * g)},{round(255 * b)},{opacity:.3f})"


def _plotly_trace(fig, t: Trace, color: str, common: dict, row: int, col: int) -> None:
    if t.kind == "bar":
        error = (
            dict(
                type="data",
                symmetric=False,
                array=error_bar_lengths(t.high, t.y),
                arrayminus=error_bar_lengths(t.y, t.low),
            )
            if t.low is not None
            else None
        )
        fig.add_trace(
            go.Bar(x=list(t.x), y=as_floats(t.y), marker_color=color, error_y=error, **common),
            row=row,
            col=col,
        )
        return
    line = dict(color=color, width=t.width, dash=dash_style(t))
    if t.kind in ("hline", "vline"):
        if t.kind == "hline":
            if t.low is not None:
                fig.add_hrect(
                    y0=float(t.low[0]),
                    y1=float(t.high[0]),
                    fillcolor=_rgba(t.fill_color or color, 1.0),
                    opacity=t.fill_opacity,
                    line_width=0,
                    layer="below",
                    row=row,
                    col=col,
                    exclude_empty_subplots=False,
                )
            fig.add_hline(y=float(t.y[0]), line=line, row=row, col=col, exclude_empty_subplots=False)
        else:
            fig.add_vline(x=float(t.x[0]), line=line, row=row, col=col, exclude_empty_subplots=False)
        if t.legend and common["showlegend"]:  # a legend entry for the line: shapes have none
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, **common), row=row, col=col)
        return
    xs = list(t.x) if is_categorical(t.x) else as_floats(t.x)
    if t.low is not None and t.kind in ("line", "curve"):  # the band first, under its line
        fig.add_trace(
            go.Scatter(
                x=xs + xs[::-1],
                y=as_floats(t.high) + as_floats(t.low)[::-1],
                fill="toself",
                fillcolor=_rgba(t.fill_color or color, t.fill_opacity),
                line=dict(width=0),
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                legendgroup=t.name,
            ),
            row=row,
            col=col,
        )
    mode = {"line": "lines", "curve": "lines+markers", "points": "markers+text" if t.labels else "markers"}[
        t.kind
    ]
    marker = dict(
        size=1.5 * t.marker_size if t.marker_size else (9 if t.kind == "points" else 5),
        color=color,
        symbol=_PLOTLY_MARKER.get(t.marker, "circle"),
    )
    if t.marker == "dash":
        marker.update(size=22, line_width=2, line_color=color)
    elif t.marker in ("ring", "open square"):
        marker.update(line_width=2, line_color=color, size=marker["size"] + 1)
    error_y = error_x = None
    if t.error is not None:
        error_y = dict(array=as_floats(t.error))
    elif t.low is not None and t.kind == "points":
        error_y = dict(
            type="data",
            symmetric=False,
            array=error_bar_lengths(t.high, t.y),
            arrayminus=error_bar_lengths(t.y, t.low),
        )
    if t.xlow is not None:
        error_x = dict(
            type="data",
            symmetric=False,
            array=error_bar_lengths(t.xhigh, t.x),
            arrayminus=error_bar_lengths(t.x, t.xlow),
        )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=as_floats(t.y),
            mode=mode,
            text=list(t.labels) if t.labels else None,
            textposition="top center",
            marker=marker,
            error_y=error_y,
            error_x=error_x,
            opacity=t.opacity,
            hovertext=list(t.hover) if t.hover else None,
            hoverinfo="text" if t.hover else None,
            line=line,
            **common,
        ),
        row=row,
        col=col,
    )


def to_plotly(
    panels: Sequence[Panel],
    title: str = "",
    *,
    cols: Optional[int] = None,
    height: int = 480,
    shared_y: bool = False,
    shared_x: bool = False,
) -> go.Figure:
    """The interactive figure: one subplot per panel (`cols` per row), one legend entry per trace name."""
    colors = trace_colors(panels)
    n_rows, n_cols = grid_shape(len(panels), cols)
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        subplot_titles=[_html(p.title) for p in panels],
        shared_yaxes=shared_y,
        shared_xaxes=shared_x,
        horizontal_spacing=(0.15 if any(p.yticks for p in panels) else 0.06) if n_cols > 2 else None,
        vertical_spacing=0.12 if n_rows > 1 else None,
    )
    shown = set()
    for k, panel in enumerate(panels):
        row, col = k // n_cols + 1, k % n_cols + 1
        if panel.heatmap is not None:
            h = panel.heatmap
            text = [[f"{v:.2f}" if v >= 0.005 else "" for v in line] for line in h.z]
            fig.add_trace(
                go.Heatmap(
                    z=[list(line) for line in h.z],
                    x=list(h.xlabels),
                    y=list(h.ylabels),
                    colorscale="Blues",
                    zmin=h.zmin,
                    zmax=h.zmax,
                    text=text,
                    texttemplate="%{text}",
                    colorbar_title=h.colorbar,
                ),
                row=row,
                col=col,
            )
            fig.update_yaxes(autorange="reversed", row=row, col=col)
        for t in panel.traces:
            color = to_hex(t.color) if t.color else colors[t.name]
            common = dict(name=t.name, legendgroup=t.name, showlegend=t.legend and t.name not in shown)
            if t.legend:
                shown.add(t.name)
            _plotly_trace(fig, t, color, common, row, col)
        for x, label in panel.vlines:  # an unlabelled line has no annotation (plotly would write "new text")
            text = dict(annotation_text=label, annotation_font_size=10) if label else {}
            fig.add_vline(x=float(x), line_dash="dot", line_color="grey", row=row, col=col, **text)
        for y, label in panel.hlines:
            text = (
                dict(annotation_text=label, annotation_position="bottom left", annotation_font_size=10)
                if label
                else {}
            )
            fig.add_hline(y=float(y), line_dash="dash", line_color="grey", row=row, col=col, **text)
        if panel.note:
            fig.add_annotation(
                text=panel.note,
                x=0.5,
                y=0.04,
                xref="x domain",
                yref="y domain",
                showarrow=False,
                font=dict(size=10, color="dimgrey"),
                row=row,
                col=col,
            )
        fig.update_xaxes(
            title_text=panel.xlabel or None, type="log" if panel.xlog else None, row=row, col=col
        )
        if panel.xrotation is not None:
            fig.update_xaxes(tickangle=-panel.xrotation, row=row, col=col)
        fig.update_yaxes(
            title_text=panel.ylabel or None, range=list(panel.ylim) if panel.ylim else None, row=row, col=col
        )
        if panel.yticks is not None:
            fig.update_yaxes(
                tickvals=[float(v) for v, _ in panel.yticks],
                ticktext=[s for _, s in panel.yticks],
                row=row,
                col=col,
            )
    fig.update_annotations(font_size=12)
    # A long title is broken at a separator: plotly never wraps one, and cut it at the figure's right edge.
    head, *rest = title.split("\n") if title else [""]
    lines = wrap(head, TITLE_WIDTH).split("\n") if head else []
    text = "<br>".join(lines) + "".join(f"<br><sup>{line}</sup>" for line in rest)
    extra = 20 * max(len(lines) + len(rest) - 1, 0)
    fig.update_layout(
        title=dict(text=text, font=dict(size=15)),
        template="plotly_white",
        barmode="group",
        height=height + extra,
        margin=dict(t=90 + extra),
        legend=dict(font=dict(size=11)),
    )
    return fig
