"""A figure as data, drawn to plotly or matplotlib: the one drawing idiom of `views`.

- `Trace`: one series (a line, a curve with markers, points, bars, or a labelled reference line), with
  optionally its interval: `low` / `high` on y (a shaded band under a line or a curve, asymmetric error
  bars on points and bars; the band is the interval itself) and `xlow` / `xhigh` on x (error bars).
- `Panel`: one set of axes: traces, labels, unlabelled reference lines, a note, tick labels.
- `to_plotly(panels, title)`: the interactive figure (a `*_view`); `to_matplotlib(panels, title)` its
  static twin (a `*_figure`, for `tl.savefig`). Both draw every field, so both show the same numbers.

Its parts: `figure_data` (the data classes, the palette, `wrap`), `plotly_drawing` (`to_plotly`) and
`matplotlib_drawing` (`to_matplotlib`); every name is re-exported here. It imports nothing else of the
package (`figures` and `widgets` build on it).
"""

from .figure_data import COLORBLIND, FIGURE_SIZE, TITLE_WIDTH, Heatmap, Panel, Trace, palette, wrap
from .matplotlib_drawing import to_matplotlib
from .plotly_drawing import to_plotly

__all__ = [
    "FIGURE_SIZE",
    "TITLE_WIDTH",
    "COLORBLIND",
    "palette",
    "wrap",
    "Trace",
    "Heatmap",
    "Panel",
    "to_plotly",
    "to_matplotlib",
]
