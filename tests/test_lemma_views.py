"""Widget callbacks and figures of the lemma notebooks (03-05): every slider range draws, the figures
move with alpha, bad input says what to change, and the numbers behind the figures are the lemmas'."""
import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import plotly.graph_objects as go
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import lemma_views as lv
from tutorial_lib import lemmas

CONTEXT_VIEWS = [(1, lv.lemma1_view), (4, lv.lemma4_view)]


def rows_to_try(world):
    """Both ends of the context dropdown and the worked example (a blind spot)."""
    return sorted({0, lv.default_context(world), len(world.contexts().contexts) - 1})


def alpha_marker(fig):
    """x of the dotted line that marks the current alpha (the first vertical line drawn)."""
    return fig.layout.shapes[0].x0


# ---- Lemmas 1 and 4, one context ------------------------------------------------------------

@pytest.mark.parametrize("lemma,view", CONTEXT_VIEWS)
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_context_views_cover_the_slider_range_and_move_with_alpha(world, lemma, view, loss):
    low, high = lv.LEMMA_ALPHA_RANGES[lemma][loss]
    for row in rows_to_try(world):
        ends = [view(row, alpha, loss, world=world) for alpha in (low, high)]
        assert all(isinstance(fig, go.Figure) and len(fig.data) >= 4 for fig in ends)
        assert alpha_marker(ends[0]) == pytest.approx(low) and alpha_marker(ends[1]) == pytest.approx(high)
        assert ends[0].layout.title.text != ends[1].layout.title.text


@pytest.mark.parametrize("lemma,optimal", [(1, lemmas.optimal_deferral), (4, lemmas.optimal_speculative_deferral)])
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_switch_points_separate_defer_from_keep(world, lemma, optimal, loss):
    """Just below a switch point the rule defers, just above it keeps q: for the optimal rule and each plug-in."""
    low, high = lv.LEMMA_ALPHA_RANGES[lemma][loss]
    checked = 0
    for row in range(0, len(world.contexts().contexts), 7):
        c = lv.context_risks(world, row, loss, lemma)
        rules = [(c["optimal_switch"], lambda a: bool(optimal(c["P"], c["q"], c["p"], a, loss)))]
        for name, switch in c["plugin_switch"].items():
            rule = {"Chow plug-in": "chow", "Diff plug-in": "diff", "OPT plug-in": "opt"}[name]
            rules.append((switch, lambda a, rule=rule: bool(lemmas.plugin_deferral(rule, c["q"], c["p"], a, loss))))
        for switch, defers in rules:
            if switch is None or not low + 1e-6 <= switch <= high - 1e-6:
                continue
            assert defers(switch - 1e-6) and not defers(switch + 1e-6), (row, switch)
            checked += 1
    assert checked > 10


def test_blind_spot_worked_example(world):
    """In a blind spot the drafter is better: the optimal rules never defer, the plug-ins are fooled."""
    row = lv.default_context(world)
    assert bool(world.contexts().blind[row])
    for lemma in (1, 4):
        c = lv.context_risks(world, row, "zero_one", lemma)
        assert c["loss_q"] < c["loss_p"] and c["optimal_switch"] < 0
        assert all(switch > 0 for switch in c["plugin_switch"].values())


# ---- Lemmas 1 and 4, summed over contexts ----------------------------------------------------

@pytest.mark.parametrize("lemma", [1, 4])
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_total_risk_view_over_the_sharpness_range(world, lemma, loss):
    for drafter_sharpness, verifier_sharpness in ((1.0, 1.0), (0.25, 1.0), (4.0, 4.0)):
        fig = lv.total_risk_view(lemma, loss, drafter_sharpness, verifier_sharpness, world=world, n_alpha=5)
        assert isinstance(fig, go.Figure)
    # Miscalibrated worlds also draw the plug-ins of the models as built, for comparison.
    assert len(lv.total_risk_view(lemma, loss, 2.0, 1.0, world=world, n_alpha=5).data) > \
        len(lv.total_risk_view(lemma, loss, 1.0, 1.0, world=world, n_alpha=5).data)


@pytest.mark.parametrize("lemma", [1, 4])
@pytest.mark.parametrize("loss", lemmas.LOSSES)
def test_no_rule_beats_the_optimal_one(world, lemma, loss):
    totals = lv.total_risks(world, lemma, loss, lv.lemma_alpha_grid(lemma, loss, 9))
    optimal = totals["risk"][f"optimal (Lemma {lemma})"]
    for name, risks in totals["risk"].items():
        assert all(r >= o - 1e-12 for r, o in zip(risks, optimal)), name
    assert all(0 <= d <= 1 for rates in totals["deferral_rate"].values() for d in rates)
    agreement = lv.plugin_agreement(world, lemma, loss, lv.lemma_alpha_grid(lemma, loss, 5))
    assert all(0 < share <= 1 for share in agreement.values())


def test_brute_force_check_counts_and_can_fail(world, monkeypatch):
    n = len(world.contexts().contexts)
    good = lv.brute_force_check(world, 1, {"zero_one": [0.0, 0.5], "log": [1.0]}, grid=11)
    assert good["points_checked"] == 3 * n and good["mismatches"] == 0
    right = lemmas.optimal_speculative_deferral
    monkeypatch.setattr(lemmas, "optimal_speculative_deferral", lambda *a, **k: ~right(*a, **k))
    assert lv.brute_force_check(world, 4, {"zero_one": [0.5]}, grid=11)["mismatches"] == n


def test_miscalibration_moves_the_plugins_not_the_zero_one_optimum(world):
    sweep = lv.miscalibration_sweep(world, [0.5, 1.0, 3.0], "zero_one", n_alpha=9)
    assert all(row["optimal_shift"] == 0 for rows in sweep.values() for row in rows.values())
    chow = {s: row["Chow plug-in"] for s, row in sweep["verifier"].items()}
    assert max(chow.values()) - min(chow.values()) < 1e-12            # Chow never looks at the verifier
    diff = {s: row["Diff plug-in"] for s, row in sweep["verifier"].items()}
    assert max(diff.values()) - min(diff.values()) > 1e-3             # Diff does
    # Under log loss sharpening changes the model itself, so the optimal risk moves too.
    log_sweep = lv.miscalibration_sweep(world, [3.0], "log", n_alpha=5)
    assert log_sweep["drafter"][3.0]["optimal_shift"] > 0


# ---- Figure 1 ---------------------------------------------------------------------------------

def test_figure1_view_over_its_range(world):
    for temperature in (0.0, 2.0):
        for gamma in (1, 8):
            for prefixes in ("generated", "truth"):
                assert isinstance(lv.figure1_view(temperature, gamma, prefixes, world=world, n_alpha=3), go.Figure)
    spec_x = [lv.figure1_view(1.0, gamma, world=world, n_alpha=3).data[2].x[0] for gamma in (1, 8)]
    assert spec_x[1] < spec_x[0]                                       # longer blocks, fewer calls


def test_figure1_curves_end_at_the_two_models(world):
    curves = lv.figure1_curves(world, n_alpha=5, temperature=1.0, gamma=5)
    chow = curves["Chow (TokenCascade)"]
    assert chow["calls_per_token"][0] == pytest.approx(1.0) and chow["loss"][0] == pytest.approx(curves["verifier"])
    assert chow["calls_per_token"][-1] == 0 and chow["loss"][-1] == pytest.approx(curves["drafter"])
    spec = curves["SpecDecode (gamma = 5)"]
    assert spec["loss"][0] == pytest.approx(curves["verifier"], abs=1e-12)   # speculative decoding is lossless
    assert 1 / 6 <= spec["calls_per_token"][0] < 1


# ---- Lemma 2 ----------------------------------------------------------------------------------

def test_tran_thien_by_hand():
    q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    p = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    # min(1, p / ((1 - 0.5) q)) = (0.4 / 0.6, 1, 1)
    torch.testing.assert_close(lv.tran_thien_acceptance(q, p, 0.5), torch.tensor([2 / 3, 1.0, 1.0], dtype=torch.float64))
    # norm(max(0, p - q)) = (0, 0.2, 0.2) / 0.4; with beta = 2: max(0, p/2 - q) = (0, 0, 0.05)
    torch.testing.assert_close(lv.tran_thien_residual(q, p, 1.0), torch.tensor([0.0, 0.5, 0.5], dtype=torch.float64))
    torch.testing.assert_close(lv.tran_thien_residual(q, p, 2.0), torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    assert (lv.tran_thien_residual(q, p, math.inf) == 0).all()         # nothing to resample from
    assert float(tl.lossy_beta(q, p, 0.5)) == pytest.approx(4 / 3)     # the notebook's exercise 2


def test_lemma2_check_agrees_and_would_notice_a_difference(world, monkeypatch):
    out = lv.lemma2_check(world, [0.0, 0.5, 0.99], betas=(1.0, 2.0, "normalize"), temperatures=(1.0, 0.0))
    assert out["acceptance_max_abs_diff"] < 1e-9 and out["residual_max_abs_diff"] < 1e-9
    assert out["tokens_compared"] > 0 and out["positions_compared"] > 0
    assert out["residual_undefined"]["beta = 1"] == 0 and out["residual_undefined"]["Lossy* (normalising beta)"] == 0
    # A residual that ignored beta would be caught.
    monkeypatch.setattr(lv, "tran_thien_residual", lambda q, p, beta: lv.targets.residual_distribution(p, q))
    assert lv.lemma2_check(world, [0.5], betas=("normalize",))["residual_max_abs_diff"] > 1e-3


def test_lemma2_and_beta_views_over_their_range(world):
    for row in rows_to_try(world):
        for alpha in (0.0, 0.99):
            for temperature in (0.0, 2.0):
                for beta in (1.0, 2.0, "normalize"):
                    assert isinstance(lv.lemma2_view(row, alpha, beta, temperature, world=world), go.Figure)
                assert isinstance(lv.beta_view(alpha, row, temperature, world=world), go.Figure)
    row = lv.default_context(world)
    assert lv.lemma2_view(row, 0.0, world=world).layout.title.text != lv.lemma2_view(row, 0.9, world=world).layout.title.text
    assert lv.beta_view(0.0, row, world=world).layout.title.text != lv.beta_view(0.9, row, world=world).layout.title.text


def test_beta_changes_neither_acceptance_nor_tv_only_where_mass_goes(world):
    sweep = lv.beta_sweep(world, [0.0, 0.3, 0.9])
    one, star = sweep["beta = 1"], sweep["Lossy* (normalising beta)"]
    for key in ("acceptance_rate", "tv_to_p"):
        assert all(abs(a - b) < 1e-9 for a, b in zip(one[key], star[key])), key
    assert one["tv_to_p"][0] < 1e-12                                   # alpha = 0 is SpecDecode
    assert all(abs(m - 1) < 1e-9 for m in star["target_mass"]) and one["target_mass"][-1] > 1
    assert one["kl_to_p"][-1] > star["kl_to_p"][-1]


# ---- Lemma 4 in practice: the trade-off --------------------------------------------------------

def test_expected_latency():
    assert lv.expected_latency(1.0, 1, 0.0) == 1.0                     # every draft rejected, free drafts
    assert lv.expected_latency(3.0, 5, 0.1) == pytest.approx(1.5 / 3)
    assert lv.expected_latency([2.0, 6.0], 5, 0.0) == pytest.approx([0.5, 1 / 6])
    for bad in (dict(tokens_per_call=2.0, gamma=0, cost_ratio=0.1), dict(tokens_per_call=2.0, gamma=1.5, cost_ratio=0.1),
                dict(tokens_per_call=2.0, gamma=5, cost_ratio=-0.1), dict(tokens_per_call=7.0, gamma=5, cost_ratio=0.1)):
        with pytest.raises(ValueError):
            lv.expected_latency(**bad)


def test_tradeoff_view_for_every_method_over_its_range(world):
    for method in lv.TRADEOFF_METHODS:
        for gamma in (1, 8):
            for temperature in (0.0, 2.0):
                fig = lv.tradeoff_view(gamma, 0.1, temperature, world=world, n_alpha=3, methods=[method])
                assert isinstance(fig, go.Figure)
    cheap, dear = (lv.tradeoff_view(5, c, world=world, n_alpha=3, methods=["OPT"]) for c in (0.0, 1.0))
    assert max(cheap.data[1].x) < min(dear.data[1].x)                  # the latency axis moves with c


def test_tradeoff_curves_are_sane(world):
    result = lv.tradeoff_curves(world, gamma=5, temperature=1.0, n_alpha=5, cost_ratio=0.1)
    assert result["verifier"]["latency"] == 1.0
    for label, c in result["curves"].items():
        assert all(0 <= r <= 1 for r in c["rejection"]), label
        assert all(1 <= n <= 6 + 1e-9 for n in c["tokens_per_call"]), label
    spec = result["curves"]["SpecDecode"]
    assert spec["loss"][0] == pytest.approx(result["verifier"]["loss"], abs=1e-12) and spec["latency"][0] < 1
    summary = lv.tradeoff_summary(result)
    assert min(s["best_loss"] for s in summary.values()) < result["verifier"]["loss"]
    assert summary["SpecDecode"]["latency_at_verifier_quality"] == pytest.approx(spec["latency"][0])


def test_tradeoff_summary_by_hand():
    result = {"verifier": {"loss": 0.5, "latency": 1.0}, "drafter": {"loss": 0.9, "latency": 0.1},
              "curves": {"A": {"loss": [0.6, 0.5, 0.4], "latency": [0.3, 0.8, 1.2]},
                         "B": {"loss": [0.7], "latency": [1.5]}}}
    summary = lv.tradeoff_summary(result)
    assert summary["A"] == {"best_loss": 0.4, "latency_at_verifier_quality": 0.8, "best_loss_within_verifier_latency": 0.5}
    assert summary["B"] == {"best_loss": 0.7, "latency_at_verifier_quality": None, "best_loss_within_verifier_latency": None}


# ---- Bad input, static figures, the widget helper -------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda w: lv.lemma1_view(0, 1.5, "zero_one", world=w), "outside"),
    (lambda w: lv.lemma4_view(0, -0.1, "log", world=w), "outside"),
    (lambda w: lv.lemma1_view(0, 0.1, "hinge", world=w), "unknown"),
    (lambda w: lv.lemma1_view(10 ** 6, 0.1, world=w), "context_index"),
    (lambda w: lv.lemma1_view(0.5, 0.1, world=w), "context_index"),
    (lambda w: lv.total_risk_view(2, world=w), "pass 1 or 4"),
    (lambda w: lv.total_risk_view(1, "zero_one", 0.0, world=w), "must be > 0"),
    (lambda w: lv.lemma2_view(0, 1.0, world=w), "alpha"),
    (lambda w: lv.lemma2_view(0, 0.5, "tuned", world=w), "normalize"),
    (lambda w: lv.lemma2_view(0, 0.5, 0.1, world=w), "beta"),
    (lambda w: lv.figure1_view(-1.0, 5, world=w), "temperature"),
    (lambda w: lv.tradeoff_view(0, 0.1, world=w), "gamma"),
    (lambda w: lv.tradeoff_view(5, -0.5, world=w), "cost_ratio"),
    (lambda w: lv.tradeoff_view(5, 0.1, world=w, methods=["Medusa"]), "choose one or more"),
    (lambda w: lv.reshaped_world(w, drafter_temperature=2.0), "unknown ToyWorld setting"),
])
def test_bad_input_says_what_to_change(world, call, match):
    with pytest.raises(ValueError, match=match):
        call(world)


def test_static_figures_are_labelled(world, tmp_path):
    row = lv.default_context(world)
    figures = {
        "context": lv.lemma1_figure(row, 0.1, world=world), "context4": lv.lemma4_figure(row, 0.3, world=world),
        "total": lv.total_risk_figure(4, world=world, n_alpha=5),
        "misc": lv.miscalibration_figure(lv.miscalibration_sweep(world, [0.5, 2.0], n_alpha=5)),
        "figure1": lv.figure1_figure(lv.figure1_curves(world, n_alpha=3)),
        "lemma2": lv.lemma2_figure(row, 0.5, world=world), "beta": lv.beta_figure(lv.beta_sweep(world, [0.0, 0.5])),
        "tradeoff": lv.tradeoff_figure(lv.tradeoff_curves(world, n_alpha=3, cost_ratio=0.1), 5, 0.1),
    }
    for name, fig in figures.items():
        assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes), name
        assert tl.savefig(fig, f"test_{name}", directory=tmp_path).stat().st_size > 10_000
        plt.close(fig)


def test_interactive_draws_redraws_and_reports_errors(world):
    slider = widgets.FloatSlider(value=0.1, min=0.0, max=1.0)
    box = lv.interactive(lv.lemma1_view, context_index=widgets.fixed(0), alpha=slider,
                         loss=widgets.fixed("zero_one"), world=widgets.fixed(world))
    out = box.children[-1]
    first = out.outputs[0]["data"]["text/plain"]
    assert "alpha = 0.10" in first
    slider.value = 0.7
    assert "alpha = 0.70" in out.outputs[0]["data"]["text/plain"]
    broken = lv.interactive(lv.tradeoff_view, gamma=widgets.fixed(5), cost_ratio=widgets.fixed(0.1),
                            world=widgets.fixed(world), methods=widgets.fixed(()))
    error = broken.children[-1].outputs[0]
    assert error["output_type"] == "stream" and "methods=[]: choose one or more of SpecDecode" in error["text"]
