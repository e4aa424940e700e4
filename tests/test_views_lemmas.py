"""The views of the lemma notebooks (03-05: `views.lemmas`' `deferral_risks`, `lossy` and `tradeoff`): every
slider range draws, the figures move with alpha, bad input says what to change, and the widget helper wires
them."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import plotly.graph_objects as go
import pytest

import tutorial_lib as tl
from tutorial_lib.lessons import deferral_risks as dr
from tutorial_lib.toy import examples
from tutorial_lib.maths import lemmas
from tutorial_lib.lessons import lossy, tradeoff
from tutorial_lib.views.lemmas import deferral_risks as risk_views
from tutorial_lib.views.lemmas import lossy as lossy_views
from tutorial_lib.views.lemmas import tradeoff as tradeoff_views
from tutorial_lib.views import widgets as vw

CONTEXT_VIEWS = [(1, risk_views.lemma1_view), (4, risk_views.lemma4_view)]


def rows_to_try(world):
    """Both ends of the context dropdown and the worked example (a blind spot)."""
    return sorted({0, examples.default_context(world), len(world.contexts().contexts) - 1})


def alpha_marker(fig):
    """x of the dotted line that marks the current alpha (the first vertical line drawn)."""
    return fig.layout.shapes[0].x0


@pytest.mark.parametrize("lemma,view", CONTEXT_VIEWS)
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_context_views_cover_the_slider_range_and_move_with_alpha(world, lemma, view, loss):
    low, high = dr.LEMMA_ALPHA_RANGES[lemma][loss]
    for row in rows_to_try(world):
        ends = [view(row, alpha, loss, world=world) for alpha in (low, high)]
        assert all(isinstance(fig, go.Figure) and len(fig.data) >= 4 for fig in ends)
        assert alpha_marker(ends[0]) == pytest.approx(low) and alpha_marker(ends[1]) == pytest.approx(high)
        assert ends[0].layout.title.text != ends[1].layout.title.text


@pytest.mark.parametrize("lemma", [1, 4])
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_total_risk_view_over_the_sharpness_range(world, lemma, loss):
    for drafter_sharpness, verifier_sharpness in ((1.0, 1.0), (0.25, 1.0), (4.0, 4.0)):
        fig = risk_views.total_risk_view(
            lemma, loss, drafter_sharpness, verifier_sharpness, world=world, n_alpha=5
        )
        assert isinstance(fig, go.Figure)
    # Miscalibrated worlds also draw the plug-ins of the models as built, for comparison.
    assert len(risk_views.total_risk_view(lemma, loss, 2.0, 1.0, world=world, n_alpha=5).data) > len(
        risk_views.total_risk_view(lemma, loss, 1.0, 1.0, world=world, n_alpha=5).data
    )


def test_figure1_view_over_its_range(world):
    for temperature in (0.0, 2.0):
        for gamma in (1, 8):
            for prefixes in ("generated", "truth"):
                assert isinstance(
                    tradeoff_views.figure1_view(temperature, gamma, prefixes, world=world, n_alpha=3),
                    go.Figure,
                )
    spec_x = [
        tradeoff_views.figure1_view(1.0, gamma, world=world, n_alpha=3).data[2].x[0] for gamma in (1, 8)
    ]
    assert spec_x[1] < spec_x[0]  # longer blocks, fewer calls


def test_lemma2_and_beta_views_over_their_range(world):
    for row in rows_to_try(world):
        for alpha in (0.0, 0.99):
            for temperature in (0.0, 2.0):
                for beta in (1.0, 2.0, "normalize"):
                    assert isinstance(
                        lossy_views.lemma2_view(row, alpha, beta, temperature, world=world), go.Figure
                    )
                assert isinstance(lossy_views.beta_view(alpha, row, temperature, world=world), go.Figure)
    row = examples.default_context(world)
    assert (
        lossy_views.lemma2_view(row, 0.0, world=world).layout.title.text
        != lossy_views.lemma2_view(row, 0.9, world=world).layout.title.text
    )
    assert (
        lossy_views.beta_view(0.0, row, world=world).layout.title.text
        != lossy_views.beta_view(0.9, row, world=world).layout.title.text
    )


def test_tradeoff_view_for_every_method_over_its_range(world):
    for method in tradeoff.TRADEOFF_METHODS:
        for gamma in (1, 8):
            for temperature in (0.0, 2.0):
                fig = tradeoff_views.tradeoff_view(
                    gamma, 0.1, temperature, world=world, n_alpha=3, methods=[method]
                )
                assert isinstance(fig, go.Figure)
    cheap, dear = (
        tradeoff_views.tradeoff_view(5, c, world=world, n_alpha=3, methods=["OPT"]) for c in (0.0, 1.0)
    )
    assert max(cheap.data[1].x) < min(dear.data[1].x)  # the latency axis moves with c


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda w: risk_views.lemma1_view(0, 1.5, "zero_one", world=w), "outside"),
        (lambda w: risk_views.lemma4_view(0, -0.1, "log", world=w), "outside"),
        (lambda w: risk_views.lemma1_view(0, 0.1, "hinge", world=w), "unknown"),
        (lambda w: risk_views.lemma1_view(10**6, 0.1, world=w), "context_index"),
        (lambda w: risk_views.lemma1_view(0.5, 0.1, world=w), "context_index"),
        (lambda w: risk_views.total_risk_view(2, world=w), "pass 1 or 4"),
        (lambda w: risk_views.total_risk_view(1, "zero_one", 0.0, world=w), "must be > 0"),
        (lambda w: lossy_views.lemma2_view(0, 1.0, world=w), "alpha"),
        (lambda w: lossy_views.lemma2_view(0, 0.5, "tuned", world=w), "normalize"),
        (lambda w: lossy_views.lemma2_view(0, 0.5, 0.1, world=w), "beta"),
        (lambda w: tradeoff_views.figure1_view(-1.0, 5, world=w), "temperature"),
        (lambda w: tradeoff_views.tradeoff_view(0, 0.1, world=w), "gamma"),
        (lambda w: tradeoff_views.tradeoff_view(5, -0.5, world=w), "cost_ratio"),
        (lambda w: tradeoff_views.tradeoff_view(5, 0.1, world=w, methods=["Medusa"]), "choose one or more"),
        (lambda w: examples.reshaped_world(w, drafter_temperature=2.0), "unknown ToyWorld setting"),
    ],
)
def test_bad_input_says_what_to_change(world, call, match):
    with pytest.raises(ValueError, match=match):
        call(world)


def test_static_figures_are_labelled(world, tmp_path):
    row = examples.default_context(world)
    figures = {
        "context": risk_views.lemma1_figure(row, 0.1, world=world),
        "context4": risk_views.lemma4_figure(row, 0.3, world=world),
        "total": risk_views.total_risk_figure(4, world=world, n_alpha=5),
        "misc": risk_views.miscalibration_figure(dr.miscalibration_sweep(world, [0.5, 2.0], n_alpha=5)),
        "figure1": tradeoff_views.figure1_figure(tradeoff.figure1_curves(world, n_alpha=3)),
        "lemma2": lossy_views.lemma2_figure(row, 0.5, world=world),
        "beta": lossy_views.beta_figure(lossy.beta_sweep(world, [0.0, 0.5])),
        "tradeoff": tradeoff_views.tradeoff_figure(
            tradeoff.tradeoff_curves(world, n_alpha=3, cost_ratio=0.1), 5, 0.1
        ),
    }
    for name, fig in figures.items():
        assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes), name
        assert tl.savefig(fig, f"test_{name}", directory=tmp_path).stat().st_size > 10_000
        plt.close(fig)


def test_interactive_draws_redraws_and_reports_errors(world):
    slider = widgets.FloatSlider(value=0.1, min=0.0, max=1.0)
    box = vw.interactive(
        risk_views.lemma1_view,
        context_index=widgets.fixed(0),
        alpha=slider,
        loss=widgets.fixed("zero_one"),
        world=widgets.fixed(world),
    )
    out = box.children[-1]
    first = out.outputs[0]["data"]["text/plain"]
    assert "alpha = 0.10" in first
    slider.value = 0.7
    assert "alpha = 0.70" in out.outputs[0]["data"]["text/plain"]
    broken = vw.interactive(
        tradeoff_views.tradeoff_view,
        gamma=widgets.fixed(5),
        cost_ratio=widgets.fixed(0.1),
        world=widgets.fixed(world),
        methods=widgets.fixed(()),
    )
    error = broken.children[-1].outputs[0]
    assert (
        error["output_type"] == "stream" and "methods=[]: choose one or more of SpecDecode" in error["text"]
    )


@pytest.mark.parametrize("lemma,cost", [(1, "deferral"), (4, "rejection")])
def test_context_risk_controls_wire_the_menu_and_the_lemmas_alpha_range(world, lemma, cost):
    box = risk_views.context_risk_controls(lemma, examples.default_context(world), 0.1, "log", world=world)
    menu, slider = box.children[0], box.children[1]
    assert (slider.min, slider.max) == dr.LEMMA_ALPHA_RANGES[lemma]["log"] and cost in slider.description
    assert [row for _, row in menu.options] == [row for _, row in examples.context_options(world)]
    out = box.children[-1]
    slider.value = 0.7
    assert "alpha = 0.70" in out.outputs[0]["data"]["text/plain"]
    with pytest.raises(ValueError, match="outside"):
        risk_views.context_risk_controls(lemma, 0, 9.0, "zero_one", world=world)
