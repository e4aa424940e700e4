"""A live view's slider as plotly slider steps: every setting drawn in advance, so it moves without a kernel.

An ipywidgets slider redraws its figure in the kernel, so on a static page (the course book, a notebook
opened without running it) it cannot move. `steps_figure` calls the same view callback the widget calls
(`deferral_risks.lemma1_view`, `targets.rejection_curves_view`, ...) once per slider value and stacks the
figures into one plotly figure: every step's traces are in it, and plotly's own slider shows one step's
traces and layout (title, reference lines, notes) at a time. Nothing is recomputed in the browser; the
page shows the very figures the widget would draw at those values.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import plotly.graph_objects as go

__all__ = ["slider_values", "steps_figure"]

#: Layout parts that change from one step to the next (the title reads the value, reference lines and
#: their notes move with it); everything else (axes, legend, size) comes from the first step.
STEP_LAYOUT = ("title", "shapes", "annotations")


def slider_values(low: float, high: float, n: int = 21) -> list:
    """`n` evenly spaced slider values from `low` to `high`, both ends included."""
    if n < 2 or not high > low:
        raise ValueError(f"slider_values needs n >= 2 and high > low; got n={n}, low={low}, high={high}")
    return [low + (high - low) * k / (n - 1) for k in range(n)]


def _figure_of(drawn) -> go.Figure:
    """A view returns a figure (`interactive` callbacks) or `(figure, numbers)` (`live_view` callbacks)."""
    figure = drawn[0] if isinstance(drawn, tuple) else drawn
    if not isinstance(figure, go.Figure):
        raise ValueError(
            f"steps_figure needs a view that returns a plotly Figure (or (Figure, numbers)); "
            f"it returned {type(figure).__name__}"
        )
    return figure


def steps_figure(
    view: Callable,
    name: str,
    values: Sequence[float],
    *,
    active: Optional[float] = None,
    label: Optional[str] = None,
    digits: int = 2,
    **fixed,
) -> go.Figure:
    """One plotly figure with a slider over `name`: step k shows `view(**{name: values[k]}, **fixed)`.

    `active` is the value the slider starts at (the nearest of `values`; default the first), `label`
    the slider's caption (default `name`), `digits` the decimals of each step's label. Every step's
    traces are in the figure, only the active step's visible; its title, shapes and annotations
    replace the layout's. Raises `ValueError` for fewer than two values or a view that returns no figure.
    """
    values = [float(v) for v in values]
    if len(values) < 2:
        raise ValueError(f"steps_figure needs at least two values of {name!r} for a slider; got {values}")
    figures = [_figure_of(view(**{name: value}, **fixed)) for value in values]
    start = 0 if active is None else min(range(len(values)), key=lambda k: abs(values[k] - float(active)))
    combined = go.Figure(layout=figures[start].layout)
    owner = []  # owner[i]: the step trace i belongs to
    for k, figure in enumerate(figures):
        for trace in figure.data:
            trace = trace.to_plotly_json()
            trace["visible"] = k == start
            combined.add_trace(trace)
            owner.append(k)
    steps = []
    for k, (value, figure) in enumerate(zip(values, figures)):
        layout = figure.layout.to_plotly_json()
        changes = {part: layout.get(part, [] if part != "title" else {}) for part in STEP_LAYOUT}
        steps.append(
            dict(
                method="update",
                label=f"{value:.{digits}f}",
                args=[{"visible": [step == k for step in owner]}, changes],
            )
        )
    combined.update_layout(
        sliders=[
            dict(
                active=start,
                steps=steps,
                currentvalue=dict(prefix=f"{label or name} = "),
                pad=dict(t=50),
                name=name,
            )
        ],
        # the slider sits under the plot: room for it below, and as much more height so the plot keeps its own
        margin=dict(b=max(combined.layout.margin.b or 0, 120)),
        height=(combined.layout.height or 450) + 80,
    )
    return combined
