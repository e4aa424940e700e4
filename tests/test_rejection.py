"""The maths behind notebooks 01 and 02: the example pairs, the read-outs of one pair, rejection rate
against alpha, Lemma 3 by simulation (`tutorial_lib.toy.examples`, `rejection`, `latency`)."""

import math

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.toy import examples
from tutorial_lib.maths import latency
from tutorial_lib.lessons import rejection

EXAMPLES = list(examples.toy_examples())
MIXTURE_RULES = ("drafter", "verifier", "spec") + tl.PREFIX_RULES


def slider_ends(rule):
    span = rejection.alpha_span(rule)
    return [0.0] if span is None else list(span)


def test_examples_are_what_their_names_say():
    ex = examples.toy_examples()
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
    first = examples.toy_examples()
    first.pop("agree")
    assert "agree" in examples.toy_examples()


@pytest.mark.parametrize("rule", MIXTURE_RULES)
@pytest.mark.parametrize("temperature", [0.0, 0.5, 1.0])
def test_readouts_match_targets_and_lemma3(rule, temperature):
    for name, example in examples.toy_examples().items():
        for alpha in slider_ends(rule) + [rejection.alpha_at(rule, 0.3)]:
            out = rejection.target_readouts(name, rule, alpha, temperature, gamma=4)
            q, p = rejection.scaled(example.q, temperature), rejection.scaled(example.p, temperature)
            pi = tl.target_distribution(rule, q, p, alpha, q_unscaled=example.q, p_unscaled=example.p)
            assert torch.allclose(out["pi"], pi)
            assert out["rejection_probability"] == pytest.approx(
                float(tl.rejection_probability(pi, q)), abs=1e-12
            )
            assert out["tv_distance"] == pytest.approx(float(tl.tv_distance(p, q)), abs=1e-12)
            # Lemma 3: a mixture's rejection probability is delta * D_TV.
            assert out["rejection_probability"] == pytest.approx(out["lemma3_rejection"], abs=1e-9)
            if rule in tl.PREFIX_RULES:
                # Decisions come from the temperature-1 distributions.
                decision = tl.deferral_decision(rule, q, p, alpha, q_unscaled=example.q, p_unscaled=example.p)
                assert out["defers"] == bool(decision)


def test_token_rule_readouts():
    example = examples.toy_examples()["verifier blind spot"]
    out = rejection.target_readouts(example, "token_v3", 0.5)
    mask = tl.acceptance_set("token_v3", example.q, example.p, 0.5)
    assert out["acceptance_set"] == [example.labels[i] for i in mask.nonzero().flatten().tolist()]
    assert out["deferral_weight"] == pytest.approx(1 - float(example.q[mask].sum()))
    assert out["defers"] is None and out["lemma3_rejection"] is None


def test_lossy_readouts():
    beta_one = rejection.target_readouts("both unsure", "lossy", 0.5, beta=1.0)
    normalised = rejection.target_readouts("both unsure", "lossy", 0.5, beta="normalize")
    assert beta_one["target_mass"] > 1.0 and normalised["target_mass"] == pytest.approx(1.0)
    assert normalised["beta"] >= 0.5 and beta_one["deferral_weight"] is None
    # Acceptance min(1, pi/q) does not depend on beta (Lemma 2): only the residual does.
    assert beta_one["rejection_probability"] == pytest.approx(normalised["rejection_probability"])


def test_expected_tokens_per_call():
    assert latency.expected_tokens_per_call(1.0, 5) == 6.0
    assert latency.expected_tokens_per_call(0.0, 5) == 1.0
    assert latency.expected_tokens_per_call(0.5, 2) == pytest.approx(1.75)


def test_rejection_curves_match_the_toy_world(world):
    result = rejection.rejection_curves(None, 1.0, n_alpha=5)
    assert set(result["curves"]) == {label for label, _, _ in rejection.CURVE_VARIANTS}
    for label, alpha_index in (("Chow", 2), ("OPT", 1), ("Token-V3", 3), ("Lossy (β=1)", 2)):
        curve = result["curves"][label]
        exact = world.evaluate(
            curve["rule"], curve["alpha"][alpha_index], beta=curve["beta"], prefixes="truth"
        )
        assert curve["rejection"][alpha_index] == pytest.approx(exact.rejection_rate, abs=1e-9)
    assert result["spec"] == pytest.approx(world.evaluate("spec", prefixes="truth").rejection_rate, abs=1e-9)
    # The common ends: SpecDecode at the low end, the drafter (no rejection) at the high end.
    for label in ("Lossy (β=1)", "BiLD*", "Chow", "Diff", "OPT", "Token-V1", "Token-V2"):
        assert result["curves"][label]["rejection"][0] == pytest.approx(result["spec"], abs=1e-9), label
    for label in ("BiLD*", "Chow", "Diff", "Token-V1", "Token-V2", "Token-V3"):
        assert result["curves"][label]["rejection"][-1] == pytest.approx(0.0, abs=1e-12), label
    # beta changes the residual, never the acceptance: the two lossy curves coincide.
    assert result["curves"]["Lossy (β=1)"]["rejection"] == pytest.approx(
        result["curves"]["Lossy* (β normalises)"]["rejection"], abs=1e-9
    )


def test_opt_only_moves_inside_minus_one_one_at_temperature_one():
    # |max p - max q| <= D_TV(p, q), so at T = 1 alpha beyond +-1 changes no decision (at exactly +-1
    # contexts where the bound is tight sit on the threshold, and rounding decides).
    curve = rejection.rejection_curves(None, 1.0, n_alpha=11)["curves"]["OPT"]  # alpha = -5, -4, ..., 5
    spec = rejection.rejection_curves(None, 1.0, n_alpha=2)["spec"]
    assert all(r == pytest.approx(spec) for a, r in zip(curve["alpha"], curve["rejection"]) if a < -1)
    assert all(r == 0.0 for a, r in zip(curve["alpha"], curve["rejection"]) if a > 1)
    assert 0.0 < curve["rejection"][5] < spec  # alpha = 0 sits in between


def test_rejection_curves_of_one_pair_are_steps():
    example = examples.toy_examples()["verifier blind spot"]
    result = rejection.rejection_curves(example, 1.0, n_alpha=21)
    tv = float(tl.tv_distance(example.p, example.q))
    for label in ("BiLD*", "Chow", "Diff", "OPT"):
        rates = result["curves"][label]["rejection"]
        assert all(r == pytest.approx(0.0, abs=1e-12) or r == pytest.approx(tv) for r in rates), label


def test_lemma3_simulation_within_four_standard_errors():
    rows = rejection.lemma3_check(rs=(0.0, 0.3, 1.0), n=3000, seed=0)
    assert len(rows) == 3 * len(EXAMPLES)
    assert all(abs(row["z"]) < 4 for row in rows)
    for row in rows:
        assert row["predicted"] == pytest.approx(row["r"] * row["tv_distance"])
        if row["r"] == 0.0:
            assert row["empirical"] == 0.0  # pi = q: nothing is ever rejected
    disjoint = [row for row in rows if row["example"] == "disjoint" and row["r"] == 1.0]
    assert disjoint[0]["empirical"] == 1.0
    assert rejection.lemma3_check(rs=(0.3,), n=500, seed=4) == rejection.lemma3_check(
        rs=(0.3,), n=500, seed=4
    )


def test_simulation_detects_a_wrong_prediction():
    example = examples.toy_examples()["verifier blind spot"]
    tv = float(tl.tv_distance(example.p, example.q))
    pi = 0.5 * example.q + 0.5 * example.p
    count = rejection.simulate_rejections(pi, example.q, 4000, torch.Generator().manual_seed(0))
    assert abs(rejection.binomial_z(count, 4000, 0.5 * tv)[2]) < 4
    assert abs(rejection.binomial_z(count, 4000, 0.5 * tv + 0.05)[2]) > 4


def test_binomial_z_at_certain_outcomes():
    assert rejection.binomial_z(0, 100, 0.0) == (0.0, 0.0, 0.0)
    assert rejection.binomial_z(1, 100, 0.0)[2] == math.inf


def test_rule_rejection_check():
    rows = rejection.rule_rejection_check(lenience=0.5, n=3000, seed=1)
    assert {row["rule"] for row in rows} == {
        "Lossy (β=1)",
        "Lossy* (β normalises)",
        "Token-V1",
        "Token-V2",
        "Token-V3",
    }
    assert all(abs(row["z"]) < 4 for row in rows)


def test_rejection_at_matches_the_curves_and_refuses_nothing_in_range():
    curves = rejection.rejection_curves(None, 1.0, n_alpha=5)
    for label, curve in curves["curves"].items():
        for alpha, rate in zip(curve["alpha"], curve["rejection"]):
            at = rejection.rejection_at(None, alpha)
            assert at[label] == pytest.approx(rate, abs=1e-12), (label, alpha)
    outside = rejection.rejection_at(None, -0.5)
    assert outside["Chow"] is None and outside["Diff"] is not None and outside["OPT"] is not None
    with pytest.raises(ValueError, match="NaN"):
        rejection.rejection_at(None, math.nan)


def test_rejection_curves_are_computed_once_and_copied():
    first = rejection.rejection_curves(None, 1.0, n_alpha=3)
    first["curves"]["Chow"]["rejection"][0] = 99.0
    assert rejection.rejection_curves(None, 1.0, n_alpha=3)["curves"]["Chow"]["rejection"][0] != 99.0
