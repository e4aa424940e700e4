"""The widget callbacks of notebooks 01 and 02, across their whole slider ranges, and their numbers."""
import math

import matplotlib.pyplot as plt
import plotly.graph_objects as go
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import explore

EXAMPLES = list(explore.toy_examples())
MIXTURE_RULES = ("drafter", "verifier", "spec") + tl.PREFIX_RULES


def slider_ends(rule):
    span = explore.slider_range(rule)
    return [0.0] if span is None else list(span)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---- examples ---------------------------------------------------------------------------------

def test_examples_are_what_their_names_say():
    ex = explore.toy_examples()
    assert len(ex) == 6
    tv = {name: float(tl.tv_distance(e.p, e.q)) for name, e in ex.items()}
    assert tv["agree"] < 0.05 and ex["agree"].q.argmax() == ex["agree"].p.argmax()
    assert tv["disjoint"] == pytest.approx(1.0)
    sure = ex["confident drafter, unsure verifier"]
    assert sure.q.max() > 0.7 > 0.4 > sure.p.max()
    unsure = ex["unsure drafter, confident verifier"]
    assert unsure.p.max() > 0.8 and unsure.q.max() < 0.3
    blind = ex["verifier blind spot"]
    assert blind.p.argmax() != blind.truth.argmax()
    assert tl.tv_distance(blind.truth, blind.q) < tl.tv_distance(blind.truth, blind.p)


def test_examples_dict_is_fresh_each_call():
    first = explore.toy_examples()
    first.pop("agree")
    assert "agree" in explore.toy_examples()


def test_example_from_distributions_labels():
    q, p = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([0.2, 0.3, 0.5])
    assert explore.example_from_distributions("x", q, p).labels == ("#0", "#1", "#2")
    named = explore.example_from_distributions("x", q, p, labels=lambda i: "abc"[i])
    assert named.labels == ("a", "b", "c")
    fig, readouts = explore.target_view(named, "diff", 0.0)
    assert isinstance(fig, go.Figure) and readouts["example"] == "x"


# ---- notebook 01: target_view -----------------------------------------------------------------

@pytest.mark.parametrize("rule", tl.RULES)
def test_target_view_across_the_whole_slider_range(rule):
    betas = (1.0, "normalize") if rule == "lossy" else (1.0,)
    for name in EXAMPLES:
        for alpha in slider_ends(rule):
            for temperature in (0.0, 1.0):
                for beta in betas:
                    fig, out = explore.target_view(name, rule, alpha, temperature, gamma=5, beta=beta)
                    assert isinstance(fig, go.Figure) and len(fig.data) >= 3
                    assert 0.0 <= out["rejection_probability"] <= 1.0 + 1e-12
                    assert 1.0 <= out["expected_tokens_per_call"] <= 6.0 + 1e-12
                    assert out["decision"]
                    # The pi bars are the target itself, for the tokens shown.
                    assert max(fig.data[2].y) == pytest.approx(float(out["pi"].max()))


@pytest.mark.parametrize("gamma", [1, 3, 10])
def test_target_view_gamma(gamma):
    _, out = explore.target_view("verifier blind spot", "opt", 0.0, 1.0, gamma)
    a = out["acceptance_rate"]
    assert out["expected_tokens_per_call"] == pytest.approx(sum(a ** j for j in range(gamma + 1)))


def test_chow_target_changes_with_alpha_where_the_drafter_is_unsure():
    name = "unsure drafter, confident verifier"
    fig0, out0 = explore.target_view(name, "chow", 0.0)
    fig1, out1 = explore.target_view(name, "chow", 1.0)
    assert out0["defers"] and not out1["defers"]
    assert torch.allclose(out0["pi"], out0["p"]) and torch.allclose(out1["pi"], out1["q"])
    assert fig0.data[2].y != fig1.data[2].y
    assert out0["rejection_probability"] > 0.5 and out1["rejection_probability"] == 0.0


@pytest.mark.parametrize("rule", MIXTURE_RULES)
@pytest.mark.parametrize("temperature", [0.0, 0.5, 1.0])
def test_readouts_match_targets_and_lemma3(rule, temperature):
    for name, example in explore.toy_examples().items():
        for alpha in slider_ends(rule) + [explore.alpha_at(rule, 0.3)]:
            out = explore.target_readouts(name, rule, alpha, temperature, gamma=4)
            q, p = explore.scaled(example.q, temperature), explore.scaled(example.p, temperature)
            pi = tl.target_distribution(rule, q, p, alpha, q_unscaled=example.q, p_unscaled=example.p)
            assert torch.allclose(out["pi"], pi)
            assert out["rejection_probability"] == pytest.approx(float(tl.rejection_probability(pi, q)), abs=1e-12)
            assert out["tv_distance"] == pytest.approx(float(tl.tv_distance(p, q)), abs=1e-12)
            # Lemma 3: a mixture's rejection probability is delta * D_TV.
            assert out["rejection_probability"] == pytest.approx(out["lemma3_rejection"], abs=1e-9)
            if rule in tl.PREFIX_RULES:
                # Decisions come from the temperature-1 distributions.
                decision = tl.deferral_decision(rule, q, p, alpha, q_unscaled=example.q, p_unscaled=example.p)
                assert out["defers"] == bool(decision)


def test_token_rule_readouts():
    example = explore.toy_examples()["verifier blind spot"]
    out = explore.target_readouts(example, "token_v3", 0.5)
    mask = tl.acceptance_set("token_v3", example.q, example.p, 0.5)
    assert out["acceptance_set"] == [example.labels[i] for i in mask.nonzero().flatten().tolist()]
    assert out["deferral_weight"] == pytest.approx(1 - float(example.q[mask].sum()))
    assert out["defers"] is None and out["lemma3_rejection"] is None


def test_lossy_readouts():
    beta_one = explore.target_readouts("both unsure", "lossy", 0.5, beta=1.0)
    normalised = explore.target_readouts("both unsure", "lossy", 0.5, beta="normalize")
    assert beta_one["target_mass"] > 1.0 and normalised["target_mass"] == pytest.approx(1.0)
    assert normalised["beta"] >= 0.5 and beta_one["deferral_weight"] is None
    # Acceptance min(1, pi/q) does not depend on beta (Lemma 2): only the residual does.
    assert beta_one["rejection_probability"] == pytest.approx(normalised["rejection_probability"])


def test_temperature_zero_is_one_hot():
    _, out = explore.target_view("both unsure", "spec", 0.0, temperature=0.0, gamma=3)
    assert sorted(out["q"].tolist())[-1] == 1.0 and out["q"].sum() == 1.0
    assert out["tv_distance"] in (0.0, 1.0)


def test_expected_tokens_per_call():
    assert explore.expected_tokens_per_call(1.0, 5) == 6.0
    assert explore.expected_tokens_per_call(0.0, 5) == 1.0
    assert explore.expected_tokens_per_call(0.5, 2) == pytest.approx(1.75)


@pytest.mark.parametrize("lenience", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_every_rule_view(lenience, temperature):
    for name, example in explore.toy_examples().items():
        fig, numbers = explore.every_rule_view(name, lenience, temperature)
        assert isinstance(fig, go.Figure)
        assert list(numbers) == [label for label, _, _ in explore.VARIANTS]
        spec = numbers["SpecDecode"]["rejection"]
        q, p = explore.scaled(example.q, temperature), explore.scaled(example.p, temperature)
        assert spec == pytest.approx(float(tl.tv_distance(p, q)))
        if lenience == 0.0:  # the SpecDecode end
            for label in ("Lossy (β=1)", "BiLD*", "Chow", "Diff", "OPT", "Token-V1", "Token-V2"):
                assert numbers[label]["rejection"] == pytest.approx(spec, abs=1e-9), label
        if lenience == 1.0:  # the drafter end
            for label in ("BiLD*", "Chow", "Diff", "Token-V1", "Token-V2", "Token-V3"):
                assert numbers[label]["rejection"] == pytest.approx(0.0, abs=1e-12), label


def test_every_rule_view_moves_with_lenience():
    _, low = explore.every_rule_view("unsure drafter, confident verifier", 0.0)
    _, high = explore.every_rule_view("unsure drafter, confident verifier", 1.0)
    assert all(high[label]["rejection"] < low[label]["rejection"]
               for label in ("Chow", "Diff", "BiLD*", "Token-V1", "Token-V3"))


def test_static_twins_save(tmp_path):
    figures = [explore.plot_target_view("verifier blind spot", "token_v3", 0.4, 0.7, 3),
               explore.plot_target_view("agree", "lossy", 0.2, beta="normalize"),
               explore.plot_every_rule("disjoint", 0.5, 0.0), explore.plot_examples()]
    for k, fig in enumerate(figures):
        assert tl.savefig(fig, f"explore_{k}", tmp_path).stat().st_size > 5_000


# ---- the alpha slider follows the rule ----------------------------------------------------------

def test_link_alpha_slider_keeps_lenience():
    import ipywidgets as widgets
    rule = widgets.Dropdown(options=list(tl.RULES), value="chow")
    alpha = widgets.FloatSlider(min=-10, max=10, value=0.25)
    explore.link_alpha_slider(rule, alpha)
    assert (alpha.min, alpha.max, alpha.value) == (0.0, 1.0, 0.25)
    rule.value = "opt"
    assert (alpha.min, alpha.max) == (-5.0, 5.0) and alpha.value == pytest.approx(-2.5)
    rule.value = "token_v3"
    assert (alpha.min, alpha.max) == (0.0, 1.0) and alpha.value == pytest.approx(0.25)
    rule.value = "spec"
    assert alpha.disabled
    rule.value = "diff"
    assert not alpha.disabled and (alpha.min, alpha.max) == (-1.0, 1.0)
    explore.target_view("agree", rule.value, alpha.value)  # the slider always holds a valid alpha


def test_live_view_redraws_and_reports_bad_input():
    import ipywidgets as widgets
    rule = widgets.Dropdown(options=list(tl.RULES), value="chow")
    alpha = widgets.FloatSlider(min=0.0, max=1.0, value=0.0)
    gamma = widgets.IntSlider(min=0, max=10, value=5)  # 0 is out of range on purpose
    box = explore.live_view(explore.target_view, dict(example=widgets.Dropdown(options=EXAMPLES, value="agree"),
                                                      rule=rule, alpha=alpha, gamma=gamma),
                            describe=explore.format_readouts)
    out = box.children[-1]
    figure, text = out.outputs
    assert figure["output_type"] == "display_data" and "Chow" in figure["data"]["text/plain"]
    assert "max q = 0.700 < 1 - alpha = 1.000: defer to p" in text["text"]
    alpha.value = 1.0
    assert "max q = 0.700 >= 1 - alpha = 0.000: keep q" in out.outputs[1]["text"]
    gamma.value = 0
    assert out.outputs == ({"output_type": "stream", "name": "stderr",
                            "text": "gamma=0: the block size is a whole number of drafts, gamma >= 1.\n"},)


# ---- notebook 02: rejection curves and Lemma 3 -------------------------------------------------

def test_rejection_curves_match_the_toy_world(world):
    result = explore.rejection_curves(None, 1.0, n_alpha=5)
    assert set(result["curves"]) == {label for label, _, _ in explore.CURVE_VARIANTS}
    for label, alpha_index in (("Chow", 2), ("OPT", 1), ("Token-V3", 3), ("Lossy (β=1)", 2)):
        curve = result["curves"][label]
        exact = world.evaluate(curve["rule"], curve["alpha"][alpha_index], beta=curve["beta"], prefixes="truth")
        assert curve["rejection"][alpha_index] == pytest.approx(exact.rejection_rate, abs=1e-9)
    assert result["spec"] == pytest.approx(world.evaluate("spec", prefixes="truth").rejection_rate, abs=1e-9)
    # The common ends: SpecDecode at the low end, the drafter (no rejection) at the high end.
    for label in ("Lossy (β=1)", "BiLD*", "Chow", "Diff", "OPT", "Token-V1", "Token-V2"):
        assert result["curves"][label]["rejection"][0] == pytest.approx(result["spec"], abs=1e-9), label
    for label in ("BiLD*", "Chow", "Diff", "Token-V1", "Token-V2", "Token-V3"):
        assert result["curves"][label]["rejection"][-1] == pytest.approx(0.0, abs=1e-12), label
    # beta changes the residual, never the acceptance: the two lossy curves coincide.
    assert result["curves"]["Lossy (β=1)"]["rejection"] == pytest.approx(
        result["curves"]["Lossy* (β normalises)"]["rejection"], abs=1e-9)


def test_opt_only_moves_inside_minus_one_one_at_temperature_one():
    # |max p - max q| <= D_TV(p, q), so at T = 1 alpha beyond +-1 changes no decision (at exactly +-1
    # contexts where the bound is tight sit on the threshold, and rounding decides).
    curve = explore.rejection_curves(None, 1.0, n_alpha=11)["curves"]["OPT"]  # alpha = -5, -4, ..., 5
    spec = explore.rejection_curves(None, 1.0, n_alpha=2)["spec"]
    assert all(r == pytest.approx(spec) for a, r in zip(curve["alpha"], curve["rejection"]) if a < -1)
    assert all(r == 0.0 for a, r in zip(curve["alpha"], curve["rejection"]) if a > 1)
    assert 0.0 < curve["rejection"][5] < spec  # alpha = 0 sits in between


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_rejection_curves_view(temperature):
    for example in [None] + EXAMPLES:
        fig, result = explore.rejection_curves_view(example, temperature, n_alpha=3)
        assert isinstance(fig, go.Figure) and len(fig.data) == 2 * len(explore.CURVE_VARIANTS)
        assert all(0 <= r <= 1 + 1e-12 for c in result["curves"].values() for r in c["rejection"])
    assert explore.plot_rejection_curves(result).axes


def test_rejection_curves_of_one_pair_are_steps():
    example = explore.toy_examples()["verifier blind spot"]
    result = explore.rejection_curves(example, 1.0, n_alpha=21)
    tv = float(tl.tv_distance(example.p, example.q))
    for label in ("BiLD*", "Chow", "Diff", "OPT"):
        rates = result["curves"][label]["rejection"]
        assert all(r == pytest.approx(0.0, abs=1e-12) or r == pytest.approx(tv) for r in rates), label


def test_lemma3_simulation_within_four_standard_errors():
    rows = explore.lemma3_check(rs=(0.0, 0.3, 1.0), n=3000, seed=0)
    assert len(rows) == 3 * len(EXAMPLES)
    assert all(abs(row["z"]) < 4 for row in rows)
    for row in rows:
        assert row["predicted"] == pytest.approx(row["r"] * row["tv_distance"])
        if row["r"] == 0.0:
            assert row["empirical"] == 0.0  # pi = q: nothing is ever rejected
    disjoint = [row for row in rows if row["example"] == "disjoint" and row["r"] == 1.0]
    assert disjoint[0]["empirical"] == 1.0
    assert explore.lemma3_check(rs=(0.3,), n=500, seed=4) == explore.lemma3_check(rs=(0.3,), n=500, seed=4)
    assert isinstance(explore.lemma3_figure(rows), go.Figure) and explore.plot_lemma3(rows).axes


def test_simulation_detects_a_wrong_prediction():
    example = explore.toy_examples()["verifier blind spot"]
    tv = float(tl.tv_distance(example.p, example.q))
    pi = 0.5 * example.q + 0.5 * example.p
    count = explore.simulate_rejections(pi, example.q, 4000, torch.Generator().manual_seed(0))
    assert abs(explore.binomial_z(count, 4000, 0.5 * tv)[2]) < 4
    assert abs(explore.binomial_z(count, 4000, 0.5 * tv + 0.05)[2]) > 4


def test_binomial_z_at_certain_outcomes():
    assert explore.binomial_z(0, 100, 0.0) == (0.0, 0.0, 0.0)
    assert explore.binomial_z(1, 100, 0.0)[2] == math.inf


def test_rule_rejection_check():
    rows = explore.rule_rejection_check(lenience=0.5, n=3000, seed=1)
    assert {row["rule"] for row in rows} == {"Lossy (β=1)", "Lossy* (β normalises)", "Token-V1", "Token-V2", "Token-V3"}
    assert all(abs(row["z"]) < 4 for row in rows)


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda: explore.target_view("nope", "chow", 0.5), "unknown example 'nope'; choose one of"),
    (lambda: explore.target_view("agree", "nope", 0.5), "unknown rule 'nope'"),
    (lambda: explore.target_view("agree", "chow", 1.5), r"outside the range \[0.0, 1.0\]"),
    (lambda: explore.target_view("agree", "lossy", 1.0), r"outside \[0, 1\)"),
    (lambda: explore.target_view("agree", "chow", 0.5, gamma=0), "gamma >= 1"),
    (lambda: explore.target_view("agree", "chow", 0.5, gamma=2.5), "whole number"),
    (lambda: explore.target_view("agree", "chow", 0.5, temperature=-1), "use T = 0 for greedy"),
    (lambda: explore.target_view("agree", "chow", 0.5, temperature=math.inf), "finite T > 0"),
    (lambda: explore.target_view(explore.toy_world_inputs(), "chow", 0.5), "pick a single-context example"),
    (lambda: explore.every_rule_view("agree", 1.5), r"lenience=1.5 must lie in \[0, 1\]"),
    (lambda: explore.every_rule_view("agree", 0.5, -0.1), "use T = 0 for greedy"),
    (lambda: explore.rejection_curves("agree", 1.0, n_alpha=1), "n_alpha >= 2"),
    (lambda: explore.rejection_curves("nope"), "unknown example"),
    (lambda: explore.lemma3_check(rs=(1.5,), n=10), r"a mixture weight lies in \[0, 1\]"),
    (lambda: explore.simulate_rejections([0.5, 0.5], [0.5, 0.5], 0), "at least one draft"),
    (lambda: explore.expected_tokens_per_call(1.2, 3), r"pass a value in \[0, 1\]"),
    (lambda: explore.example_from_distributions("x", [0.5, 0.5], [0.5, 0.5], labels=["a"]), "one label per token"),
    (lambda: explore.example_from_distributions("x", [0.5, 0.6], [0.5, 0.5]), "does not sum to one"),
    (lambda: explore.example_from_distributions("x", [[0.5, 0.5]], [[0.5, 0.5]]), r"shape \(V,\)"),
])
def test_bad_input_says_what_to_change(call, match):
    with pytest.raises(ValueError, match=match):
        call()
