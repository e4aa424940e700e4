"""A figure as data: `Trace`, `Heatmap` and `Panel`, with the figure size, the title width, the
colour-blind palette (`palette`) and `wrap` for long titles.

It also holds what both renderers read from the data the same way (one colour per trace name, a grid's
shape, error-bar lengths), so that `to_plotly` and `to_matplotlib` agree. It imports no drawing library
(`palette` loads seaborn only for more colours than the colour-blind palette holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

__all__ = ["FIGURE_SIZE", "TITLE_WIDTH", "COLORBLIND", "palette", "wrap", "Trace", "Heatmap", "Panel"]

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
    return title[: cut + 1] + "\n" + wrap(title[cut + 2 :], width)


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
    dash: Union[bool, str] = False  # False / True, or "solid", "dash", "dot", "dashdot"
    color: Optional[str] = None
    width: float = 1.6
    labels: Optional[Sequence[str]] = None  # text beside each point ("points" only)
    error: Optional[Sequence[float]] = None  # symmetric error bar on each y ("points" only)
    # "dot", "ring", "dash" (a short level line), "square", "open square", "triangle", "diamond"
    marker: str = "dot"
    hover: Optional[Sequence[str]] = None  # text shown on hover (interactive figure only)
    low: Optional[Sequence[float]] = None  # lower bound of each y's interval
    high: Optional[Sequence[float]] = None  # upper bound of each y's interval
    xlow: Optional[Sequence[float]] = None  # lower bound of each x's interval ("points" only)
    xhigh: Optional[Sequence[float]] = None  # upper bound of each x's interval ("points" only)
    fill_opacity: float = 0.13  # of the band
    fill_color: Optional[str] = None  # of the band (default: the trace's colour)
    opacity: float = 1.0  # of the line and markers (a faint anchor: 0.5)
    marker_size: Optional[float] = None  # points (matplotlib's units; plotly's are 1.5 times larger)
    legend: bool = True  # False: no legend entry


@dataclass
class Heatmap:
    """A matrix of probabilities, rows `ylabels` by columns `xlabels`, each cell annotated with its value."""

    z: Sequence[Sequence[float]]
    xlabels: Sequence[str]
    ylabels: Sequence[str]
    zmin: float = 0.0
    zmax: float = 1.0
    colorbar: str = "probability"
    divider: Optional[int] = None  # a line drawn under this many rows


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
    heatmap: Optional[Heatmap] = None  # drawn instead of traces
    note: str = ""
    yticks: Optional[Sequence[Tuple[float, str]]] = None
    xrotation: Optional[float] = None


#: seaborn's "colorblind" palette, spelled out so that drawing a lesson's figure does not import seaborn
#: (and scipy and pandas with it).
COLORBLIND = (
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
)


def palette(n: int) -> List[str]:
    """`n` distinct colours: the colour-blind palette, or beyond its 10 colours (which would repeat)
    husl's."""
    if n <= len(COLORBLIND):
        return list(COLORBLIND[: max(n, 1)])
    import seaborn as sns  # only for more traces than the colour-blind palette holds

    return sns.color_palette("husl", n).as_hex()


# --------------------------------------------------------------------------------------------
# What both renderers read from the data
# --------------------------------------------------------------------------------------------


def dash_style(trace: Trace) -> str:
    """A trace's line style by name: its `dash` string, or "dash" / "solid" for True / False."""
    if isinstance(trace.dash, str):
        return trace.dash
    return "dash" if trace.dash else "solid"


def trace_colors(panels: Sequence[Panel]) -> Dict[str, str]:
    """One colour per trace name across all panels, so a shared legend is right for every panel."""
    names = list(dict.fromkeys(t.name for panel in panels for t in panel.traces if t.color is None))
    return dict(zip(names, palette(len(names))))


def as_floats(values) -> list:
    """`values` (a list, an array or a tensor) as a list of Python floats."""
    return [float(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]


def is_categorical(values) -> bool:
    """Whether `values` are labels (a string among them) rather than numbers."""
    return any(isinstance(v, str) for v in values)


def grid_shape(n: int, cols: Optional[int]) -> Tuple[int, int]:
    """`(rows, columns)` of a grid of `n` panels, `cols` per row (default: all in one row)."""
    cols = n if cols is None else min(cols, n)
    return -(-n // cols), cols


def error_bar_lengths(values, bounds) -> Optional[list]:
    """Error-bar lengths below (`values - low`) or above (`high - values`) each value."""
    if bounds is None:
        return None
    return [abs(v - b) for v, b in zip(as_floats(values), as_floats(bounds))]
