"""The views of notebooks 01 and 02 (`tutorial_lib.views.targets`, `views.widgets`): every callback across
its whole slider range, the figures move with the sliders, bad input says what to change."""

import math

import matplotlib.pyplot as plt
import plotly.graph_objects as go
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.toy import examples
from tutorial_lib.maths import latency
from tutorial_lib.lessons import rejection
from tutorial_lib.views import targets as vt
from tutorial_lib.views import widgets as vw

EXAMPLES = list(examples.toy_examples())
MIXTURE_RULES = ("drafter", "verifier", "spec") + tl.PREFIX_RULES


def slider_ends(rule):
    span = rejection.alpha_span(rule)
    return [0.0] if span is None else list(span)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_example_from_distributions_labels():
    q, p = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.2, 0.3, 0.5])
    assert examples.example_from_distributions("x", q, p).labels == ("#0", "#1", "#2")
    named = examples.example_from_distributions("x", q, p, labels=lambda i: "abc"[i])
    assert named.labels == ("a", "b", "c")
    fig, readouts = vt.target_view(named, "diff", 0.0)
    assert isinstance(fig, go.Figure) and readouts["example"] == "x"


@pytest.mark.parametrize("rule", tl.RULES)
def test_target_view_across_the_whole_slider_range(rule):
    betas = (1.0, "normalize") if rule == "lossy" else (1.0,)
    for name in EXAMPLES:
        for alpha in slider_ends(rule):
            for temperature in (0.0, 1.0):
                for beta in betas:
                    fig, out = vt.target_view(name, rule, alpha, temperature, gamma=5, beta=beta)
                    assert isinstance(fig, go.Figure) and len(fig.data) >= 3
                    assert 0.0 <= out["rejection_probability"] <= 1.0 + 1e-12
                    assert 1.0 <= out["expected_tokens_per_call"] <= 6.0 + 1e-12
                    assert out["decision"]
                    # The pi bars are the target itself, for the tokens shown.
                    assert max(fig.data[2].y) == pytest.approx(float(out["pi"].max()))


@pytest.mark.parametrize("gamma", [1, 3, 10])
def test_target_view_gamma(gamma):
    _, out = vt.target_view("verifier blind spot", "opt", 0.0, 1.0, gamma)
    a = out["acceptance_rate"]
    assert out["expected_tokens_per_call"] == pytest.approx(sum(a**j for j in range(gamma + 1)))


def test_chow_target_changes_with_alpha_where_the_drafter_is_unsure():
    name = "unsure drafter, confident verifier"
    fig0, out0 = vt.target_view(name, "chow", 0.0)
    fig1, out1 = vt.target_view(name, "chow", 1.0)
    assert out0["defers"] and not out1["defers"]
    assert torch.allclose(out0["pi"], out0["p"]) and torch.allclose(out1["pi"], out1["q"])
    assert fig0.data[2].y != fig1.data[2].y
    assert out0["rejection_probability"] > 0.5 and out1["rejection_probability"] == 0.0


def test_temperature_zero_is_one_hot():
    _, out = vt.target_view("both unsure", "spec", 0.0, temperature=0.0, gamma=3)
    assert sorted(out["q"].tolist())[-1] == 1.0 and out["q"].sum() == 1.0
    assert out["tv_distance"] in (0.0, 1.0)


@pytest.mark.parametrize("lenience", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_every_rule_view(lenience, temperature):
    for name, example in examples.toy_examples().items():
        fig, numbers = vt.every_rule_view(name, lenience, temperature)
        assert isinstance(fig, go.Figure)
        assert list(numbers) == [label for label, _, _ in rejection.VARIANTS]
        spec = numbers["SpecDecode"]["rejection"]
        q, p = rejection.scaled(example.q, temperature), rejection.scaled(example.p, temperature)
        assert spec == pytest.approx(float(tl.tv_distance(p, q)))
        if lenience == 0.0:  # the SpecDecode end
            for label in ("Lossy (β=1)", "BiLD*", "Chow", "Diff", "OPT", "Token-V1", "Token-V2"):
                assert numbers[label]["rejection"] == pytest.approx(spec, abs=1e-9), label
        if lenience == 1.0:  # the drafter end
            for label in ("BiLD*", "Chow", "Diff", "Token-V1", "Token-V2", "Token-V3"):
                assert numbers[label]["rejection"] == pytest.approx(0.0, abs=1e-12), label


def test_every_rule_view_moves_with_lenience():
    _, low = vt.every_rule_view("unsure drafter, confident verifier", 0.0)
    _, high = vt.every_rule_view("unsure drafter, confident verifier", 1.0)
    assert all(
        high[label]["rejection"] < low[label]["rejection"]
        for label in ("Chow", "Diff", "BiLD*", "Token-V1", "Token-V3")
    )


def test_static_twins_save(tmp_path):
    figures = [
        vt.target_figure("verifier blind spot", "token_v3", 0.4, 0.7, 3),
        vt.target_figure("agree", "lossy", 0.2, beta="normalize"),
        vt.every_rule_figure("disjoint", 0.5, 0.0),
        vt.examples_figure(),
    ]
    for k, fig in enumerate(figures):
        assert tl.savefig(fig, f"explore_{k}", tmp_path).stat().st_size > 5_000


def test_link_alpha_slider_keeps_lenience():
    import ipywidgets as widgets

    rule = widgets.Dropdown(options=list(tl.RULES), value="chow")
    alpha = widgets.FloatSlider(min=-10, max=10, value=0.25)
    vw.link_alpha_slider(rule, alpha)
    assert (alpha.min, alpha.max, alpha.value) == (0.0, 1.0, 0.25)
    rule.value = "opt"
    assert (alpha.min, alpha.max) == (-5.0, 5.0) and alpha.value == pytest.approx(-2.5)
    rule.value = "token_v3"
    assert (alpha.min, alpha.max) == (0.0, 1.0) and alpha.value == pytest.approx(0.25)
    rule.value = "spec"
    assert alpha.disabled
    rule.value = "diff"
    assert not alpha.disabled and (alpha.min, alpha.max) == (-1.0, 1.0)
    vt.target_view("agree", rule.value, alpha.value)  # the slider always holds a valid alpha


def test_live_view_redraws_and_reports_bad_input():
    import ipywidgets as widgets

    rule = widgets.Dropdown(options=list(tl.RULES), value="chow")
    alpha = widgets.FloatSlider(min=0.0, max=1.0, value=0.0)
    gamma = widgets.IntSlider(min=0, max=10, value=5)  # 0 is out of range on purpose
    box = vw.live_view(
        vt.target_view,
        dict(example=widgets.Dropdown(options=EXAMPLES, value="agree"), rule=rule, alpha=alpha, gamma=gamma),
        describe=vt.format_readouts,
    )
    out = box.children[-1]
    figure, text = out.outputs
    assert figure["output_type"] == "display_data" and "Chow" in figure["data"]["text/plain"]
    assert "max q = 0.700 < 1 - alpha = 1.000: defer to p" in text["text"]
    alpha.value = 1.0
    assert "max q = 0.700 >= 1 - alpha = 0.000: keep q" in out.outputs[1]["text"]
    gamma.value = 0
    assert out.outputs == (
        {
            "output_type": "stream",
            "name": "stderr",
            "text": (
                "gamma=0 is below 1 (the draft block holds at least one token); pass an integer gamma >= 1.\n"
            ),
        },
    )


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_rejection_curves_view(temperature):
    for example in [None] + EXAMPLES:
        fig, result = vt.rejection_curves_view(example, temperature, n_alpha=3)
        assert isinstance(fig, go.Figure) and len(fig.data) == 2 * len(rejection.CURVE_VARIANTS)
        assert all(0 <= r <= 1 + 1e-12 for c in result["curves"].values() for r in c["rejection"])
    assert vt.rejection_curves_figure(result).axes


def test_lemma3_figures():
    rows = rejection.lemma3_check(rs=(0.0, 0.3, 1.0), n=500, seed=0)
    assert isinstance(vt.lemma3_view(rows), go.Figure) and vt.lemma3_figure(rows).axes


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: vt.target_view("nope", "chow", 0.5), "unknown example 'nope'; choose one of"),
        (lambda: vt.target_view("agree", "nope", 0.5), "rule='nope' is unknown; choose one of"),
        (lambda: vt.target_view("agree", "chow", 1.5), r"outside the range \[0.0, 1.0\]"),
        (lambda: vt.target_view("agree", "lossy", 1.0), r"outside \[0, 1\)"),
        (lambda: vt.target_view("agree", "chow", 0.5, gamma=0), "gamma >= 1"),
        (lambda: vt.target_view("agree", "chow", 0.5, gamma=2.5), "whole number"),
        (lambda: vt.target_view("agree", "chow", 0.5, temperature=-1), "use T = 0 for greedy"),
        (lambda: vt.target_view("agree", "chow", 0.5, temperature=math.inf), "finite T > 0"),
        (lambda: vt.target_view(examples.toy_world_inputs(), "chow", 0.5), "pick a single-context example"),
        (lambda: vt.every_rule_view("agree", 1.5), r"lenience=1.5 must lie in \[0, 1\]"),
        (lambda: vt.every_rule_view("agree", 0.5, -0.1), "use T = 0 for greedy"),
        (lambda: rejection.rejection_curves("agree", 1.0, n_alpha=1), "n_alpha >= 2"),
        (lambda: rejection.rejection_curves("nope"), "unknown example"),
        (lambda: rejection.lemma3_check(rs=(1.5,), n=10), r"a mixture weight lies in \[0, 1\]"),
        (lambda: rejection.simulate_rejections([0.5, 0.5], [0.5, 0.5], 0), "at least one draft"),
        (lambda: latency.expected_tokens_per_call(1.2, 3), r"pass a value in \[0, 1\]"),
        (
            lambda: examples.example_from_distributions("x", [0.5, 0.5], [0.5, 0.5], labels=["a"]),
            "one label per token",
        ),
        (lambda: examples.example_from_distributions("x", [0.5, 0.6], [0.5, 0.5]), "does not sum to one"),
        (lambda: examples.example_from_distributions("x", [[0.5, 0.5]], [[0.5, 0.5]]), r"shape \(V,\)"),
    ],
)
def test_bad_input_says_what_to_change(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- polish: readable labels, rounded titles, the chosen alpha of notebook 02 ---------------------


def test_live_view_labels_are_readable_and_wide():
    import ipywidgets as widgets

    sharp = widgets.FloatLogSlider(value=2**-0.25, base=2, min=-2, max=2, step=0.25)
    box = vw.interactive(
        lambda lemma, drafter_sharpness: go.Figure(layout_title_text=vw.number(drafter_sharpness)),
        lemma=widgets.fixed(1),
        drafter_sharpness=sharp,
    )
    assert sharp.description == "drafter sharpness" and sharp.style.description_width == "initial"
    assert sharp.layout.width == vw.SLIDER_WIDTH  # the label does not squeeze the track away
    assert box.children[-1].outputs[0]["data"]["text/plain"] == "<Figure: 0.841>"


def test_titles_round_their_floats():
    fig, _ = vt.every_rule_view("agree", 0.35000000000000003, 0.840896)
    assert "lenience 0.35 " in fig.layout.title.text and "T=0.841" in fig.layout.title.text
    fig, _ = vt.rejection_curves_view(None, 0.35000000000000003, n_alpha=3)
    assert fig.layout.title.text.endswith("T=0.35")


def test_rejection_curves_view_marks_the_chosen_alpha_on_every_curve():
    plain, _ = vt.rejection_curves_view(None, 1.0, n_alpha=5)
    fig, result = vt.rejection_curves_view(None, 1.0, alpha=0.3, n_alpha=5)
    markers = [trace for trace in fig.data if trace.name == "chosen α"]
    assert len(markers) == len(rejection.CURVE_VARIANTS)  # 0.3 lies in every rule's span
    assert all(m.x == (0.3,) for m in markers)
    assert [m.y[0] for m in markers] == [result["at_alpha"][label] for label in result["curves"]]
    titles = [a.text for a in fig.layout.annotations]
    assert f"Chow: {result['at_alpha']['Chow']:.3f} at α=0.30" in titles
    text = vt.format_rejection_at(result)
    assert (
        text.startswith("rejection rate at alpha = 0.30") and f"Chow {result['at_alpha']['Chow']:.4f}" in text
    )
    _, moved = vt.rejection_curves_view(None, 1.0, alpha=0.6, n_alpha=5)
    assert vt.format_rejection_at(moved) != text
    below, _ = vt.rejection_curves_view(None, 1.0, alpha=-0.5, n_alpha=5)
    assert "Chow: α=-0.50 outside [0, 1]" in [a.text for a in below.layout.annotations]
    assert len([t for t in below.data if t.name == "chosen α"]) < len(markers)
    assert len(plain.data) == 2 * len(rejection.CURVE_VARIANTS)
    assert vt.rejection_curves_figure(result).axes
