"""The shared widget helper of the views: the wiring, and the figure description every view draws with.

- `Trace` / `Panel` (defined in `panels`, re-exported here): a figure as data; `to_plotly` draws the
  interactive figure, `to_matplotlib` its static twin for `tl.savefig`, so both always show the same numbers.
- `live_view(callback, controls)`: controls above a figure that `callback(**values)` redraws; the
  callbacks are plain functions (tests call them directly). `interactive` is the same for a callback
  that returns only a figure. Every control gets a label wide enough to read (`LABEL_STYLE`), and a
  slider a track beside it (`SLIDER_WIDTH`).
- `link_alpha_slider`: an alpha slider that follows the chosen rule's span (`rejection.alpha_span`).
- `number`: how the views write a float in a title (3 significant digits).
- `LiveBox`: the box every live view returns; displayed, it also leaves a static copy of its figure
  (`static`), so a saved or reopened notebook shows the figure and a hint, not a broken widget.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, Optional

import ipywidgets
import matplotlib.pyplot as plt

from ..maths import rules
from .figures import savefig
from .panels import COLORBLIND
from .static import WIDGET_TEXT, figure_description, plotly_to_png, static_bundle

__all__ = [
    "COLORS",
    "LABEL_STYLE",
    "SLIDER_WIDTH",
    "number",
    "save",
    "readable",
    "LiveBox",
    "rule_choices",
    "live_view",
    "interactive",
    "link_alpha_slider",
]

COLORS = list(COLORBLIND)

#: Label style of every control: as wide as its text (ipywidgets cuts labels at about 80 px otherwise).
LABEL_STYLE = {"description_width": "initial"}
#: Width of a slider with such a label: the label would otherwise take the track's room (300 px in all).
SLIDER_WIDTH = "min(100%, 640px)"


def rule_choices(*families: str) -> list:
    """`(label, rule id)` of every rule of `families` (every rule if none) in `rules.RULE_TABLE`'s order: the
    options of a rule drop-down (`ipywidgets.Dropdown(options=rule_choices())`), registered rules included."""
    return [(rules.rule(name).label, name) for name in rules.rule_names(*families)]


def number(x: float) -> str:
    """A float as a figure title writes it: 3 significant digits (0.841, not 0.840896)."""
    return f"{float(x):.3g}"


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


def live_view(
    callback: Callable,
    controls: Dict[str, ipywidgets.ValueWidget],
    *,
    describe: Optional[Callable[[object], str]] = None,
    **fixed,
):
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
        return static_bundle(
            png=plotly_to_png(shown["fig"]), text=shown["text"], alt=figure_description(shown["fig"])
        )

    def redraw(change=None):
        try:
            fig, numbers = callback(**{name: widget.value for name, widget in controls.items()}, **fixed)
        except ValueError as error:
            out.outputs = ({"output_type": "stream", "name": "stderr", "text": f"{error}\n"},)
            shown.update(fig=None, text="", error=str(error))
        else:
            bundle = {
                "text/plain": f"<{type(fig).__name__}: {fig.layout.title.text}>",
                **fig._repr_mimebundle_(),
            }
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
    from ..lessons.rejection import alpha_at, alpha_span  # torch, only for a view that has this slider

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
