"""The maths behind notebooks 03-05: Lemmas 1 and 4 on the toy world (`deferral_risks`), Lemma 2 from its
definition (`lossy`), Figure 1 and the cost-quality trade-off (`tradeoff`, `latency`)."""

import math

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.lessons import deferral_risks as dr
from tutorial_lib.toy import examples
from tutorial_lib.maths import latency, lemmas
from tutorial_lib.lessons import lossy, tradeoff


@pytest.mark.parametrize(
    "lemma,optimal", [(1, lemmas.optimal_deferral), (4, lemmas.optimal_speculative_deferral)]
)
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_switch_points_separate_defer_from_keep(world, lemma, optimal, loss):
    """Just below a switch point the rule defers, just above it keeps q: for the optimal rule and each
    plug-in."""
    low, high = dr.LEMMA_ALPHA_RANGES[lemma][loss]
    checked = 0
    for row in range(0, len(world.contexts().contexts), 7):
        c = dr.context_risks(world, row, loss, lemma)
        rules = [(c["optimal_switch"], lambda a: bool(optimal(c["P"], c["q"], c["p"], a, loss)))]
        for name, switch in c["plugin_switch"].items():
            rule = {"Chow plug-in": "chow", "Diff plug-in": "diff", "OPT plug-in": "opt"}[name]
            rules.append(
                (switch, lambda a, rule=rule: bool(lemmas.plugin_deferral(rule, c["q"], c["p"], a, loss)))
            )
        for switch, defers in rules:
            if switch is None or not low + 1e-6 <= switch <= high - 1e-6:
                continue
            assert defers(switch - 1e-6) and not defers(switch + 1e-6), (row, switch)
            checked += 1
    assert checked > 10


def test_blind_spot_worked_example(world):
    """In a blind spot the drafter is better: the optimal rules never defer, the plug-ins are fooled."""
    row = examples.default_context(world)
    assert bool(world.contexts().blind[row])
    for lemma in (1, 4):
        c = dr.context_risks(world, row, "zero_one", lemma)
        assert c["loss_q"] < c["loss_p"] and c["optimal_switch"] < 0
        assert all(switch > 0 for switch in c["plugin_switch"].values())


@pytest.mark.parametrize("lemma", [1, 4])
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_no_rule_beats_the_optimal_one(world, lemma, loss):
    totals = dr.total_risks(world, lemma, loss, dr.lemma_alpha_grid(lemma, loss, 9))
    optimal = totals["risk"][f"optimal (Lemma {lemma})"]
    for name, risks in totals["risk"].items():
        assert all(r >= o - 1e-12 for r, o in zip(risks, optimal)), name
    assert all(0 <= d <= 1 for rates in totals["deferral_rate"].values() for d in rates)
    agreement = dr.plugin_agreement(world, lemma, loss, dr.lemma_alpha_grid(lemma, loss, 5))
    assert all(0 < share <= 1 for share in agreement.values())


def test_brute_force_check_counts_and_can_fail(world, monkeypatch):
    n = len(world.contexts().contexts)
    good = dr.brute_force_check(world, 1, {"zero_one": [0.0, 0.5], "log": [1.0]}, grid=11)
    assert good["points_checked"] == 3 * n and good["mismatches"] == 0
    right = lemmas.optimal_speculative_deferral
    monkeypatch.setattr(lemmas, "optimal_speculative_deferral", lambda *a, **k: ~right(*a, **k))
    assert dr.brute_force_check(world, 4, {"zero_one": [0.5]}, grid=11)["mismatches"] == n


def test_miscalibration_moves_the_plugins_not_the_zero_one_optimum(world):
    sweep = dr.miscalibration_sweep(world, [0.5, 1.0, 3.0], "zero_one", n_alpha=9)
    assert all(row["optimal_shift"] == 0 for rows in sweep.values() for row in rows.values())
    chow = {s: row["Chow plug-in"] for s, row in sweep["verifier"].items()}
    assert max(chow.values()) - min(chow.values()) < 1e-12  # Chow never looks at the verifier
    diff = {s: row["Diff plug-in"] for s, row in sweep["verifier"].items()}
    assert max(diff.values()) - min(diff.values()) > 1e-3  # Diff does
    # Under log loss sharpening changes the model itself, so the optimal risk moves too.
    log_sweep = dr.miscalibration_sweep(world, [3.0], "log", n_alpha=5)
    assert log_sweep["drafter"][3.0]["optimal_shift"] > 0


def test_figure1_curves_end_at_the_two_models(world):
    curves = tradeoff.figure1_curves(world, n_alpha=5, temperature=1.0, gamma=5)
    chow = curves["Chow (TokenCascade)"]
    assert chow["calls_per_token"][0] == pytest.approx(1.0) and chow["loss"][0] == pytest.approx(
        curves["verifier"]
    )
    assert chow["calls_per_token"][-1] == 0 and chow["loss"][-1] == pytest.approx(curves["drafter"])
    spec = curves["SpecDecode (gamma = 5)"]
    assert spec["loss"][0] == pytest.approx(curves["verifier"], abs=1e-12)  # speculative decoding is lossless
    assert 1 / 6 <= spec["calls_per_token"][0] < 1


def test_tran_thien_by_hand():
    q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    p = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    # min(1, p / ((1 - 0.5) q)) = (0.4 / 0.6, 1, 1)
    torch.testing.assert_close(
        lossy.tran_thien_acceptance(q, p, 0.5), torch.tensor([2 / 3, 1.0, 1.0], dtype=torch.float64)
    )
    # norm(max(0, p - q)) = (0, 0.2, 0.2) / 0.4; with beta = 2: max(0, p/2 - q) = (0, 0, 0.05)
    torch.testing.assert_close(
        lossy.tran_thien_residual(q, p, 1.0), torch.tensor([0.0, 0.5, 0.5], dtype=torch.float64)
    )
    torch.testing.assert_close(
        lossy.tran_thien_residual(q, p, 2.0), torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    )
    assert (lossy.tran_thien_residual(q, p, math.inf) == 0).all()  # nothing to resample from
    assert float(tl.lossy_beta(q, p, 0.5)) == pytest.approx(4 / 3)  # the notebook's exercise 2


def test_lemma2_check_agrees_and_would_notice_a_difference(world, monkeypatch):
    out = lossy.lemma2_check(world, [0.0, 0.5, 0.99], betas=(1.0, 2.0, "normalize"), temperatures=(1.0, 0.0))
    assert out["acceptance_max_abs_diff"] < 1e-9 and out["residual_max_abs_diff"] < 1e-9
    assert out["tokens_compared"] > 0 and out["positions_compared"] > 0
    assert (
        out["residual_undefined"]["beta = 1"] == 0
        and out["residual_undefined"]["Lossy* (normalising beta)"] == 0
    )
    # A residual that ignored beta would be caught.
    monkeypatch.setattr(
        lossy, "tran_thien_residual", lambda q, p, beta: tl.maths.accept_reject.residual_distribution(p, q)
    )
    assert lossy.lemma2_check(world, [0.5], betas=("normalize",))["residual_max_abs_diff"] > 1e-3


def test_beta_changes_neither_acceptance_nor_tv_only_where_mass_goes(world):
    sweep = lossy.beta_sweep(world, [0.0, 0.3, 0.9])
    one, star = sweep["beta = 1"], sweep["Lossy* (normalising beta)"]
    for key in ("acceptance_rate", "tv_to_p"):
        assert all(abs(a - b) < 1e-9 for a, b in zip(one[key], star[key])), key
    assert one["tv_to_p"][0] < 1e-12  # alpha = 0 is SpecDecode
    assert all(abs(m - 1) < 1e-9 for m in star["target_mass"]) and one["target_mass"][-1] > 1
    assert one["kl_to_p"][-1] > star["kl_to_p"][-1]


def test_expected_latency():
    assert latency.expected_latency(1.0, 1, 0.0) == 1.0  # every draft rejected, free drafts
    assert latency.expected_latency(3.0, 5, 0.1) == pytest.approx(1.5 / 3)
    assert latency.expected_latency([2.0, 6.0], 5, 0.0) == pytest.approx([0.5, 1 / 6])
    for bad in (
        dict(tokens_per_call=2.0, gamma=0, cost_ratio=0.1),
        dict(tokens_per_call=2.0, gamma=1.5, cost_ratio=0.1),
        dict(tokens_per_call=2.0, gamma=5, cost_ratio=-0.1),
        dict(tokens_per_call=7.0, gamma=5, cost_ratio=0.1),
    ):
        with pytest.raises(ValueError):
            latency.expected_latency(**bad)


def test_tradeoff_curves_are_sane(world):
    result = tradeoff.tradeoff_curves(world, gamma=5, temperature=1.0, n_alpha=5, cost_ratio=0.1)
    assert result["verifier"]["latency"] == 1.0
    for label, c in result["curves"].items():
        assert all(0 <= r <= 1 for r in c["rejection"]), label
        assert all(1 <= n <= 6 + 1e-9 for n in c["tokens_per_call"]), label
    spec = result["curves"]["SpecDecode"]
    assert spec["loss"][0] == pytest.approx(result["verifier"]["loss"], abs=1e-12) and spec["latency"][0] < 1
    summary = tradeoff.tradeoff_summary(result)
    assert min(s["best_loss"] for s in summary.values()) < result["verifier"]["loss"]
    assert summary["SpecDecode"]["latency_at_verifier_quality"] == pytest.approx(spec["latency"][0])


def test_tradeoff_summary_by_hand():
    result = {
        "verifier": {"loss": 0.5, "latency": 1.0},
        "drafter": {"loss": 0.9, "latency": 0.1},
        "curves": {
            "A": {"loss": [0.6, 0.5, 0.4], "latency": [0.3, 0.8, 1.2]},
            "B": {"loss": [0.7], "latency": [1.5]},
        },
    }
    summary = tradeoff.tradeoff_summary(result)
    assert summary["A"] == {
        "best_loss": 0.4,
        "latency_at_verifier_quality": 0.8,
        "best_loss_within_verifier_latency": 0.5,
    }
    assert summary["B"] == {
        "best_loss": 0.7,
        "latency_at_verifier_quality": None,
        "best_loss_within_verifier_latency": None,
    }
