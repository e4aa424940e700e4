"""An alpha slider as plotly slider steps: each step is the widget callback's figure at its alpha."""

import json

import pytest

from tutorial_lib.views.lemmas import deferral_risks as risk_views
from tutorial_lib.views import slider_steps, targets


def test_each_step_shows_the_callbacks_figure_at_its_value():
    alphas = slider_steps.slider_values(0.0, 1.0, 5)
    assert alphas == [0.0, 0.25, 0.5, 0.75, 1.0]
    fig = slider_steps.steps_figure(risk_views.lemma1_view, "alpha", alphas, active=0.3, context_index=0)
    (slider,) = fig.layout.sliders
    assert slider.active == 1 and [step.label for step in slider.steps] == [
        "0.00",
        "0.25",
        "0.50",
        "0.75",
        "1.00",
    ]
    per_step = len(risk_views.lemma1_view(0, 0.0).data)
    assert len(fig.data) == per_step * len(alphas)
    assert [bool(t.visible) for t in fig.data] == [
        k == 1 for k in range(len(alphas)) for _ in range(per_step)
    ]
    for k, (alpha, step) in enumerate(zip(alphas, slider.steps)):
        direct = risk_views.lemma1_view(0, alpha)
        visible, layout = step.args
        shown = [trace for trace, on in zip(fig.data, visible["visible"]) if on]
        assert [list(t.y) for t in shown] == [list(t.y) for t in direct.data]
        assert (
            layout["title"]["text"] == direct.layout.title.text
            and f"alpha = {alpha:.2f}" in layout["title"]["text"]
        )
        assert json.dumps(layout["shapes"]) == json.dumps([s.to_plotly_json() for s in direct.layout.shapes])
    # the start step's layout is the figure's own
    assert fig.layout.title.text == risk_views.lemma1_view(0, 0.25).layout.title.text


def test_live_view_callbacks_returning_numbers_too():
    fig = slider_steps.steps_figure(
        targets.target_view,
        "alpha",
        [0.2, 0.8],
        example="verifier blind spot",
        rule="chow",
        label="alpha (Chow)",
    )
    assert fig.layout.sliders[0].currentvalue.prefix == "alpha (Chow) = "
    titles = [step.args[1]["title"]["text"] for step in fig.layout.sliders[0].steps]
    assert titles[0] != titles[1]


def test_bad_input_says_what_to_change():
    with pytest.raises(ValueError, match="at least two values"):
        slider_steps.steps_figure(risk_views.lemma1_view, "alpha", [0.5], context_index=0)
    with pytest.raises(ValueError, match="returns a plotly Figure"):
        slider_steps.steps_figure(lambda alpha: alpha, "alpha", [0.0, 1.0])
    with pytest.raises(ValueError, match="high > low"):
        slider_steps.slider_values(1.0, 0.0)
