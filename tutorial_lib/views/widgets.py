"""The shared widget helper of the views: one figure description drawn to plotly or matplotlib, and the wiring.

- `Trace` / `Panel`: a figure as data; `to_plotly` draws the interactive figure, `to_matplotlib` its
  static twin for `tl.savefig`, so both always show the same numbers.
- `live_view(callback, controls)`: controls above a figure that `callback(**values)` redraws; the
  callbacks are plain functions (tests call them directly). `interactive` is the same for a callback
  that returns only a figure. Every control gets a label wide enough to read (`LABEL_STYLE`), and a
  slider a track beside it (`SLIDER_WIDTH`).
- `link_alpha_slider`: an alpha slider that follows the chosen rule's span (`rejection.ALPHA_SPANS`).
- `number`: how the views write a float in a title (3 significant digits).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import ipywidgets
import matplotlib.pyplot as plt
import plotly.graph_objects as go
import seaborn as sns
from matplotlib.ticker import NullLocator
from plotly.subplots import make_subplots

from .figures import FIGURE_SIZE, savefig
from ..lessons.rejection import alpha_at, alpha_span

__all__ = [
    "COLORS", "RULE_LABELS", "LABEL_STYLE", "SLIDER_WIDTH", "number", "wrap", "Trace", "Panel", "to_plotly",
    "to_matplotlib", "save", "readable", "live_view", "interactive", "link_alpha_slider",
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


def wrap(title: str, width: int = 110) -> str:
    """Break a long title at a separator so a static figure's title fits its width."""
    if len(title) <= width:
        return title
    cut = max(title.rfind(sep, 0, width) for sep in (": ", "; ", ", "))
    return title if cut < 0 else title[:cut + 1] + "\n" + title[cut + 2:]


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


def to_plotly(panels: Sequence[Panel], title: str = "") -> go.Figure:
    """The interactive figure: one subplot per panel, one legend entry per trace name."""
    colors = _colors(panels)
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.title for p in panels])
    shown = set()
    for col, panel in enumerate(panels, start=1):
        for t in panel.traces:
            color = t.color or colors[t.name]
            common = dict(name=t.name, legendgroup=t.name, showlegend=t.name not in shown)
            shown.add(t.name)
            if t.kind == "bar":
                fig.add_trace(go.Bar(x=list(t.x), y=_floats(t.y), marker_color=color, **common), row=1, col=col)
                continue
            mode = {"line": "lines", "curve": "lines+markers", "points": "markers+text" if t.labels else "markers"}[t.kind]
            fig.add_trace(go.Scatter(
                x=list(t.x) if _categorical(t.x) else _floats(t.x), y=_floats(t.y), mode=mode,
                text=list(t.labels) if t.labels else None,
                textposition="top center", marker=dict(size=9 if t.kind == "points" else 5, color=color),
                line=dict(color=color, width=t.width, dash="dash" if t.dash else "solid"), **common), row=1, col=col)
        for x, label in panel.vlines:
            fig.add_vline(x=float(x), line_dash="dot", line_color="grey", annotation_text=label,
                          annotation_font_size=10, row=1, col=col)
        for y, label in panel.hlines:
            fig.add_hline(y=float(y), line_dash="dash", line_color="grey", annotation_text=label,
                          annotation_position="bottom left", annotation_font_size=10, row=1, col=col)
        fig.update_xaxes(title_text=panel.xlabel, type="log" if panel.xlog else "linear", row=1, col=col)
        fig.update_yaxes(title_text=panel.ylabel, range=list(panel.ylim) if panel.ylim else None, row=1, col=col)
    fig.update_layout(title=title, template="plotly_white", barmode="group", height=480,
                      margin=dict(t=90), legend=dict(font=dict(size=11)))
    return fig


def to_matplotlib(panels: Sequence[Panel], title: str = "", legend: str = "right"):
    """The static figure for `tl.savefig`. `legend="right"` draws one shared legend beside the last
    panel (it survives `tight_layout`, which a figure-level legend would not); `"each"` one per panel."""
    colors = _colors(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=FIGURE_SIZE, squeeze=False)
    handles: Dict[str, object] = {}
    for ax, panel in zip(axes[0], panels):
        own: Dict[str, object] = {}  # this panel's legend entries, one per name
        bars = [t for t in panel.traces if t.kind == "bar"]
        for t in panel.traces:
            color = t.color or colors[t.name]
            if t.kind == "bar":
                k, width = bars.index(t), 0.8 / len(bars)
                xs = [j + (k - (len(bars) - 1) / 2) * width for j in range(len(t.x))]
                h = ax.bar(xs, _floats(t.y), width=width, color=color, label=t.name)
                ax.set_xticks(range(len(t.x)))
                ax.set_xticklabels(list(t.x), rotation=60, ha="right", fontsize=7)
            else:
                style = dict(linestyle="none" if t.kind == "points" else ("--" if t.dash else "-"),
                             marker="o" if t.kind in ("curve", "points") else None,
                             markersize=7 if t.kind == "points" else 3)
                # Token labels sit at 0..V-1, where the bars are centred.
                xs = list(range(len(t.x))) if _categorical(t.x) else _floats(t.x)
                (h,) = ax.plot(xs, _floats(t.y), color=color, linewidth=t.width, label=t.name, **style)
                for x, y, text in zip(xs, _floats(t.y), t.labels or []):
                    ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
            handles.setdefault(t.name, h)
            own.setdefault(t.name, h)
        for x, label in panel.vlines:
            ax.axvline(float(x), color="grey", linestyle=":", linewidth=1)
            ax.annotate(label, (float(x), 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=7, color="dimgrey")
        for y, label in panel.hlines:
            ax.axhline(float(y), color="grey", linestyle="--", linewidth=1)
            ax.annotate(label, (0.01, float(y)), xycoords=("axes fraction", "data"), textcoords="offset points",
                        xytext=(0, 3), fontsize=7, color="dimgrey")
        if panel.xlog:
            # Ticks at the plotted values, written plainly (0.5, 1, 2), not as powers of ten.
            ax.set_xscale("log")
            ticks = sorted({x for t in panel.traces for x in _floats(t.x)})
            ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
            ax.xaxis.set_minor_locator(NullLocator())
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        ax.set_xlabel(panel.xlabel, fontsize=9)
        ax.set_ylabel(panel.ylabel, fontsize=9)
        ax.set_title(panel.title, fontsize=9)
        ax.tick_params(labelsize=8)
        if legend == "each":
            ax.legend(list(own.values()), list(own.keys()), fontsize=6 if len(panels) > 2 else 7,
                      loc="upper left" if panel.ylim else "best")
    if legend == "right":
        axes[0, -1].legend(list(handles.values()), list(handles.keys()), loc="upper left",
                           bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
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


def live_view(callback: Callable, controls: Dict[str, ipywidgets.ValueWidget], *,
              describe: Optional[Callable[[object], str]] = None, **fixed):
    """Controls above a figure that `callback(**values, **fixed)` redraws whenever a control changes.

    `callback` returns `(plotly Figure, numbers)`; `describe(numbers)` (optional) adds text under the
    figure. The result goes straight into the `Output` widget's state instead of being captured from
    the kernel's output stream as `ipywidgets.interactive` does: executed headlessly (papermill,
    nbclient 0.11) a cell with `interactive` and a plotly figure hung about one run in five, this never
    did. Bad input shows its `ValueError` under the controls. Every control gets `LABEL_STYLE` (a slider
    also `SLIDER_WIDTH`), and an unlabelled one its argument's name (`readable`). Returns the `VBox`.
    """
    out = ipywidgets.Output()

    def redraw(change=None):
        try:
            fig, numbers = callback(**{name: widget.value for name, widget in controls.items()}, **fixed)
        except ValueError as error:
            out.outputs = ({"output_type": "stream", "name": "stderr", "text": f"{error}\n"},)
            return
        bundle = {"text/plain": f"<{type(fig).__name__}: {fig.layout.title.text}>", **fig._repr_mimebundle_()}
        outputs = [{"output_type": "display_data", "data": bundle, "metadata": {}}]
        if describe is not None:
            outputs.append({"output_type": "stream", "name": "stdout", "text": describe(numbers) + "\n"})
        out.outputs = tuple(outputs)

    for name, widget in controls.items():
        if not widget.description:
            widget.description = readable(name)
        widget.style.description_width = LABEL_STYLE["description_width"]
        if widget.has_trait("readout") and widget.layout.width is None:  # a slider
            widget.layout.width = SLIDER_WIDTH
        widget.observe(redraw, names="value")
    redraw()
    return ipywidgets.VBox(list(controls.values()) + [out])


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
