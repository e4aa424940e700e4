"""The shared widget helper of the views: one figure description drawn to plotly or matplotlib, and the wiring.

- `Trace` / `Panel`: a figure as data; `to_plotly` draws the interactive figure, `to_matplotlib` its
  static twin for `tl.savefig`, so both always show the same numbers.
- `live_view(callback, controls)`: controls above a figure that `callback(**values)` redraws; the
  callbacks are plain functions (tests call them directly). `interactive` is the same for a callback
  that returns only a figure. Every control gets a label wide enough to read (`LABEL_STYLE`), and a
  slider a track beside it (`SLIDER_WIDTH`).
- `link_alpha_slider`: an alpha slider that follows the chosen rule's span (`rejection.ALPHA_SPANS`).
- `number`: how the views write a float in a title (3 significant digits).
- `LiveBox`: the box every live view returns; displayed, it also leaves a static copy of its figure
  (`static`), so a saved or reopened notebook shows the figure and a hint, not a broken widget.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import ipywidgets
import matplotlib.pyplot as plt
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.ticker import NullLocator
from plotly.subplots import make_subplots

from .figures import FIGURE_SIZE, savefig
from .static import WIDGET_TEXT, plotly_to_png, static_bundle
from ..lessons.rejection import alpha_at, alpha_span

__all__ = [
    "COLORS", "RULE_LABELS", "LABEL_STYLE", "SLIDER_WIDTH", "TITLE_WIDTH", "number", "wrap", "Trace", "Heatmap", "Panel",
    "to_plotly", "to_matplotlib", "save", "readable", "LiveBox", "live_view", "interactive", "link_alpha_slider",
]

COLORS = sns.color_palette("colorblind", 10).as_hex()

RULE_LABELS = {
    "drafter": "drafter q", "verifier": "verifier p", "spec": "SpecDecode", "lossy": "Lossy",
    "bild": "BiLD*", "chow": "Chow", "diff": "Diff", "opt": "OPT",
    "token_v1": "Token-V1", "token_v2": "Token-V2", "token_v3": "Token-V3",
    "mixture": "Mixture (constant weight)", "learned": "Learned",
}

#: Label style of every control: as wide as its text (ipywidgets cuts labels at about 80 px otherwise).
LABEL_STYLE = {"description_width": "initial"}
#: Width of a slider with such a label: the label would otherwise take the track's room (300 px in all).
SLIDER_WIDTH = "min(100%, 640px)"


def number(x: float) -> str:
    """A float as a figure title writes it: 3 significant digits (0.841, not 0.840896)."""
    return f"{float(x):.3g}"


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


# --------------------------------------------------------------------------------------------
# One figure description, two renderers
# --------------------------------------------------------------------------------------------

@dataclass
class Trace:
    """One series: `kind` is "line", "curve" (line with markers), "points" (markers only) or "bar"."""
    name: str
    x: Sequence
    y: Sequence
    kind: str = "line"
    dash: bool = False
    color: Optional[str] = None
    width: float = 1.6
    labels: Optional[Sequence[str]] = None  # text beside each point ("points" only)
    error: Optional[Sequence[float]] = None  # symmetric error bar on each y ("points" only)
    marker: str = "dot"                      # "dot", "ring" (open circle), or "dash" (a short level line)
    hover: Optional[Sequence[str]] = None    # text shown on hover (interactive figure only)


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
    """One set of axes: traces, axis labels, and labelled vertical / horizontal reference lines."""
    traces: List[Trace]
    xlabel: str
    ylabel: str
    title: str = ""
    vlines: List[Tuple[float, str]] = field(default_factory=list)
    hlines: List[Tuple[float, str]] = field(default_factory=list)
    xlog: bool = False
    ylim: Optional[Tuple[float, float]] = None
    heatmap: Optional[Heatmap] = None        # drawn instead of traces


def _colors(panels: Sequence[Panel]) -> Dict[str, str]:
    """One colour per trace name across all panels, so a shared legend is right for every panel."""
    names = list(dict.fromkeys(t.name for panel in panels for t in panel.traces if t.color is None))
    # The colour-blind palette has 10 colours and would repeat them beyond that.
    palette = sns.color_palette("colorblind" if len(names) <= 10 else "husl", max(len(names), 1)).as_hex()
    return dict(zip(names, palette))


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


def to_plotly(panels: Sequence[Panel], title: str = "", *, cols: Optional[int] = None, height: int = 480,
              shared_y: bool = False) -> go.Figure:
    """The interactive figure: one subplot per panel (`cols` per row), one legend entry per trace name."""
    colors = _colors(panels)
    n_rows, n_cols = _grid(len(panels), cols)
    fig = make_subplots(rows=n_rows, cols=n_cols, subplot_titles=[_html(p.title) for p in panels],
                        shared_yaxes=shared_y, horizontal_spacing=0.06 if n_cols > 2 else None,
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
            color = t.color or colors[t.name]
            common = dict(name=t.name, legendgroup=t.name, showlegend=t.name not in shown)
            shown.add(t.name)
            if t.kind == "bar":
                fig.add_trace(go.Bar(x=list(t.x), y=_floats(t.y), marker_color=color, **common), row=row, col=col)
                continue
            mode = {"line": "lines", "curve": "lines+markers", "points": "markers+text" if t.labels else "markers"}[t.kind]
            marker = dict(size=9 if t.kind == "points" else 5, color=color)
            if t.marker == "dash":
                marker.update(symbol="line-ew-open", size=22, line_width=2, line_color=color)
            elif t.marker == "ring":
                marker.update(symbol="circle-open", size=10, line_width=2, line_color=color)
            fig.add_trace(go.Scatter(
                x=list(t.x) if _categorical(t.x) else _floats(t.x), y=_floats(t.y), mode=mode,
                text=list(t.labels) if t.labels else None, textposition="top center", marker=marker,
                error_y=dict(array=_floats(t.error)) if t.error is not None else None,
                hovertext=list(t.hover) if t.hover else None, hoverinfo="text" if t.hover else None,
                line=dict(color=color, width=t.width, dash="dash" if t.dash else "solid"), **common), row=row, col=col)
        for x, label in panel.vlines:
            fig.add_vline(x=float(x), line_dash="dot", line_color="grey", annotation_text=label,
                          annotation_font_size=10, row=row, col=col)
        for y, label in panel.hlines:
            fig.add_hline(y=float(y), line_dash="dash", line_color="grey", annotation_text=label,
                          annotation_position="bottom left", annotation_font_size=10, row=row, col=col)
        fig.update_xaxes(title_text=panel.xlabel or None, type="log" if panel.xlog else None, row=row, col=col)
        fig.update_yaxes(title_text=panel.ylabel or None, range=list(panel.ylim) if panel.ylim else None, row=row, col=col)
    fig.update_annotations(font_size=12)
    # A long title is broken at a separator: plotly never wraps one, and cut it at the figure's right edge.
    head, *rest = title.split("\n") if title else [""]
    lines = wrap(head, TITLE_WIDTH).split("\n") if head else []
    text = "<br>".join(lines) + "".join(f"<br><sup>{line}</sup>" for line in rest)
    extra = 20 * max(len(lines) + len(rest) - 1, 0)
    fig.update_layout(title=dict(text=text, font=dict(size=15)), template="plotly_white", barmode="group",
                      height=height + extra, margin=dict(t=90 + extra), legend=dict(font=dict(size=11)))
    return fig


def _draw_heatmap(ax, h: Heatmap) -> None:
    values = [list(line) for line in h.z]
    annotations = [[f"{v:.2f}" if v >= 0.005 else "" for v in line] for line in values]
    sns.heatmap(values, ax=ax, cmap="Blues", vmin=h.zmin, vmax=h.zmax, annot=annotations, fmt="",
                annot_kws={"size": 6}, xticklabels=list(h.xlabels), yticklabels=list(h.ylabels),
                cbar_kws={"label": h.colorbar})
    if h.divider is not None:
        ax.axhline(h.divider, color="black", linewidth=1)
    ax.tick_params(axis="y", labelsize=7)
    ax.tick_params(axis="x", labelsize=8, rotation=45)


def to_matplotlib(panels: Sequence[Panel], title: str = "", legend: str = "right", *, cols: Optional[int] = None,
                  shared_y: bool = False):
    """The static figure for `tl.savefig`: one set of axes per panel (`cols` per row). `legend="right"`
    draws one shared legend beside the last panel of the first row (it survives `tight_layout`, which a
    figure-level legend would not); `"each"` one per panel; `"first"` the series several panels share, in
    the first panel."""
    colors = _colors(panels)
    n_rows, n_cols = _grid(len(panels), cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=FIGURE_SIZE, squeeze=False, sharey=shared_y)
    small = n_rows > 1 or n_cols > 2          # a grid: smaller type
    handles: Dict[str, object] = {}
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        own: Dict[str, object] = {}  # this panel's legend entries, one per name
        if panel.heatmap is not None:
            _draw_heatmap(ax, panel.heatmap)
        bars = [t for t in panel.traces if t.kind == "bar"]
        for t in panel.traces:
            color = t.color or colors[t.name]
            if t.kind == "bar":
                k, width = bars.index(t), 0.8 / len(bars)
                xs = [j + (k - (len(bars) - 1) / 2) * width for j in range(len(t.x))]
                h = ax.bar(xs, _floats(t.y), width=width, color=color, label=t.name)
                ax.set_xticks(range(len(t.x)))
                ax.set_xticklabels(list(t.x), rotation=60 if not small else 45, ha="right", fontsize=7 if not small else 6)
            elif t.error is not None:
                xs = list(range(len(t.x))) if _categorical(t.x) else _floats(t.x)
                h = ax.errorbar(xs, _floats(t.y), yerr=_floats(t.error), fmt="o", markersize=3, color=color,
                                capsize=2, label=t.name)
            else:
                style = dict(linestyle="none" if t.kind == "points" else ("--" if t.dash else "-"),
                             marker=("_" if t.marker == "dash" else "o") if t.kind in ("curve", "points") else None,
                             markersize=(16 if t.marker == "dash" else 7) if t.kind == "points" else 3)
                if t.marker == "dash":
                    style["markeredgewidth"] = 2
                elif t.marker == "ring":
                    style.update(markerfacecolor="none", markeredgewidth=1.5)
                # Token labels sit at 0..V-1, where the bars are centred.
                xs = list(range(len(t.x))) if _categorical(t.x) else _floats(t.x)
                (h,) = ax.plot(xs, _floats(t.y), color=color, linewidth=t.width, label=t.name, **style)
                for x, y, text in zip(xs, _floats(t.y), t.labels or []):
                    ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
            handles.setdefault(t.name, h)
            own.setdefault(t.name, h)
        # vertical lines labelled along their foot, horizontal ones at their right end: the two never
        # meet where a vertical line sits at the left edge (gamma = 0), and points near the top stay clear
        for x, label in panel.vlines:
            ax.axvline(float(x), color="grey", linestyle=":", linewidth=1)
            ax.annotate(label, (float(x), 0.02), xycoords=("data", "axes fraction"), rotation=90,
                        textcoords="offset points", xytext=(-2, 0), ha="right", va="bottom", fontsize=7,
                        color="dimgrey")
        for y, label in panel.hlines:
            ax.axhline(float(y), color="grey", linestyle="--", linewidth=1)
            ax.annotate(label, (0.99, float(y)), xycoords=("axes fraction", "data"), textcoords="offset points",
                        xytext=(0, 3), ha="right", fontsize=7, color="dimgrey")
        if panel.xlog:
            # Ticks at the plotted values, written plainly (0.5, 1, 2), not as powers of ten.
            ax.set_xscale("log")
            ticks = sorted({x for t in panel.traces for x in _floats(t.x)})
            ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
            ax.xaxis.set_minor_locator(NullLocator())
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        ax.set_xlabel(panel.xlabel, fontsize=7 if small else 9)
        if not (shared_y and ax not in axes[:, 0]):
            ax.set_ylabel(panel.ylabel, fontsize=7 if small else 9)
        ax.set_title(panel.title, fontsize=7 if small else 9, pad=2 if small else None)
        if panel.heatmap is None:
            ax.tick_params(labelsize=6 if small else 8)
        if legend == "each":
            ax.legend(list(own.values()), list(own.keys()), fontsize=6 if len(panels) > 2 else 7,
                      loc="upper left" if panel.ylim else "best")
    if legend == "right" and handles:
        axes[0, -1].legend(list(handles.values()), list(handles.keys()), loc="upper left",
                           bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    elif legend == "first" and handles:     # the series several panels share; a panel's own is in its title
        counts = {name: sum(name in {t.name for t in p.traces} for p in panels) for name in handles}
        shared = {name: h for name, h in handles.items() if counts[name] > 1 or len(panels) == 1}
        axes.flat[0].legend(list(shared.values()), list(shared.keys()), fontsize=6, loc="best")
    if title:
        fig.suptitle(wrap(title), fontsize=9 if small else 10)
    return fig


def save(fig, name: str):
    """`tl.savefig` and close: the notebook shows the interactive twin, the PNG goes to the figures folder."""
    path = savefig(fig, name)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# Wiring: controls above a figure
# --------------------------------------------------------------------------------------------

def readable(name: str) -> str:
    """A control's label from its argument's name: `drafter_sharpness` -> "drafter sharpness"."""
    return name.replace("_", " ")


class LiveBox(ipywidgets.VBox):
    """A VBox of controls and a view that, when displayed, leaves a static copy under itself.

    `static()` returns the copy's display bundle (`static.static_bundle`) for the current setting;
    `refresh()` (called by the view on every redraw) updates each copy displayed so far, so a notebook
    saved at any moment holds the figure at the setting it was left at. Where widgets cannot be drawn
    the box's own output reads `static.WIDGET_TEXT`, not `VBox(children=...)`.
    """

    #: Seconds a control must rest before the copies are redrawn: drawing the PNG takes 0.4-6 s on a busy
    #: CPU and holds the kernel meanwhile, which a slider being moved step by step must not wait for.
    REFRESH_DELAY_S = 3.0

    def __init__(self, children, static: Callable[[], dict], **kwargs):
        super().__init__(children, **kwargs)
        self._static = static
        self._copies = []
        self._timer = None

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle:
            bundle["text/plain"] = WIDGET_TEXT
        return bundle

    def static_copy(self) -> dict:
        """The display bundle of the static copy at the current setting."""
        return self._static()

    def _ipython_display_(self):
        from IPython.display import display
        display(self._repr_mimebundle_(), raw=True)
        self._copies.append(display(self.static_copy(), raw=True, display_id=True))

    def refresh(self, *, wait: bool = True) -> None:
        """Redraw the static copies for the current setting, `REFRESH_DELAY_S` after the last call
        (`wait=False`: now)."""
        if not self._copies:
            return
        if self._timer is not None:
            self._timer.cancel()
        if not wait:
            self._update_copies()
            return
        self._timer = threading.Timer(self.REFRESH_DELAY_S, self._update_copies)
        self._timer.daemon = True
        self._timer.start()

    def _update_copies(self) -> None:
        bundle = self.static_copy()
        for copy in self._copies:
            copy.update(bundle, raw=True)


def live_view(callback: Callable, controls: Dict[str, ipywidgets.ValueWidget], *,
              describe: Optional[Callable[[object], str]] = None, **fixed):
    """Controls above a figure that `callback(**values, **fixed)` redraws whenever a control changes.

    `callback` returns `(plotly Figure, numbers)`; `describe(numbers)` (optional) adds text under the
    figure. The result goes straight into the `Output` widget's state instead of being captured from
    the kernel's output stream as `ipywidgets.interactive` does: executed headlessly (papermill,
    nbclient 0.11) a cell with `interactive` and a plotly figure hung about one run in five, this never
    did. Bad input shows its `ValueError` under the controls. Every control gets `LABEL_STYLE` (a slider
    also `SLIDER_WIDTH`), and an unlabelled one its argument's name (`readable`). Returns a `LiveBox`:
    displayed, it leaves a static PNG of the current figure with a hint under itself (`static`).
    """
    out = ipywidgets.Output()
    shown = {"fig": None, "text": "", "error": ""}
    box = None

    def static():
        if shown["fig"] is None:
            return static_bundle(html_body="", text=shown["error"])
        return static_bundle(png=plotly_to_png(shown["fig"]), text=shown["text"])

    def redraw(change=None):
        try:
            fig, numbers = callback(**{name: widget.value for name, widget in controls.items()}, **fixed)
        except ValueError as error:
            out.outputs = ({"output_type": "stream", "name": "stderr", "text": f"{error}\n"},)
            shown.update(fig=None, text="", error=str(error))
        else:
            bundle = {"text/plain": f"<{type(fig).__name__}: {fig.layout.title.text}>", **fig._repr_mimebundle_()}
            outputs = [{"output_type": "display_data", "data": bundle, "metadata": {}}]
            text = describe(numbers) if describe is not None else ""
            if describe is not None:
                outputs.append({"output_type": "stream", "name": "stdout", "text": text + "\n"})
            out.outputs = tuple(outputs)
            shown.update(fig=fig, text=text, error="")
        if box is not None:
            box.refresh()

    for name, widget in controls.items():
        if not widget.description:
            widget.description = readable(name)
        widget.style.description_width = LABEL_STYLE["description_width"]
        if widget.has_trait("readout") and widget.layout.width is None:  # a slider
            widget.layout.width = SLIDER_WIDTH
        widget.observe(redraw, names="value")
    redraw()
    box = LiveBox(list(controls.values()) + [out], static)
    return box


def interactive(view: Callable, **controls):
    """`ipywidgets.interactive(view, **controls)`-style wiring for a `view` that returns one figure.

    It runs on `live_view` (plain `interactive` stalls now and then under papermill/nbclient,
    jupyter/nbclient#312). Pass fixed arguments with `ipywidgets.fixed`; an unlabelled control is
    labelled with its argument's name, underscores as spaces. A `ValueError` from `view` shows as text
    under the controls. Returns the box to display.
    """
    fixed = {name: w.value for name, w in controls.items() if isinstance(w, ipywidgets.fixed)}
    live = {name: w for name, w in controls.items() if not isinstance(w, ipywidgets.fixed)}
    return live_view(lambda **kwargs: (view(**kwargs), None), live, **fixed)


def link_alpha_slider(rule_widget, alpha_widget) -> Callable:
    """Keep an ipywidgets alpha slider on the chosen rule's span, at the same lenience.

    Register it *before* `live_view` observes the same widgets, so the slider has moved into the new
    range when the callback runs. Returns the observer.
    """
    def follow(change=None):
        rule = rule_widget.value
        span = alpha_span(rule)
        if span is None:  # spec, drafter and verifier ignore alpha
            alpha_widget.disabled = True
            return
        old_span = alpha_span(change["old"]) if change is not None else None
        if old_span is None:  # first call, or coming from a rule without alpha: keep the value if it fits
            alpha = min(max(alpha_widget.value, span[0]), span[1])
        else:
            lenience = (alpha_widget.value - old_span[0]) / (old_span[1] - old_span[0])
            alpha = alpha_at(rule, min(max(lenience, 0.0), 1.0))
        # Cross-validation of min <= value <= max waits until all three are set.
        with alpha_widget.hold_trait_notifications():
            alpha_widget.min, alpha_widget.max, alpha_widget.value = span[0], span[1], alpha
        alpha_widget.disabled = False

    rule_widget.observe(follow, names="value")
    follow()
    return follow
