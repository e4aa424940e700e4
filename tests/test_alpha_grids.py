"""Live alpha grids: OPT's range by temperature, OPT = Diff at T = 0, and alphas placed along a rejection
curve."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.maths import alpha_grids as ag
from tutorial_lib.sweeps.configs import CURVES, GEMMA_CURVES, opt_grid, sweep_configs
from tutorial_lib import models
from tutorial_lib.maths import targets
from tutorial_lib.maths import rules
from tutorial_lib.maths import laws
from tutorial_lib.decoding.engine import generate

ANALYSIS = Path(__file__).resolve().parents[1] / "data" / "results" / "token-analysis-4368c63a9810"


def test_opt_grid_lies_in_its_live_range_at_t1_and_t0():
    for temperature in (0.0, 1.0):
        grid = opt_grid(7, temperature)
        assert grid.min() == -1.0 and grid.max() == 1.0 and len(np.unique(grid)) == 7
    assert targets.alpha_grid("opt", 5).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    configs = sweep_configs(["SpecCascade [OPT]"], temperatures=(0.0, 1.0), n_alpha=7)
    alphas = [c.alpha for c in configs]
    assert min(alphas) == -1.0 and max(alphas) == 1.0
    assert sum(-1.0 < a < 1.0 for a in alphas) == 2 * 5  # five interior alphas per temperature


def test_opt_grid_elsewhere_asks_for_a_derived_range():
    with pytest.raises(ValueError, match="opt_live_range"):
        sweep_configs(["SpecCascade [OPT]"], temperatures=(0.7,))
    configs = sweep_configs(
        ["SpecCascade [OPT]"], temperatures=(0.7,), alphas={"SpecCascade [OPT]": [-3.0, 2.5]}
    )
    assert [c.alpha for c in configs] == [-3.0, 2.5]


def test_every_rule_grid_spans_its_live_range_with_interior_points():
    for label in GEMMA_CURVES:
        rule = CURVES[label].get("rule")
        if rule not in rules.LIVE_ALPHA_RANGES:
            continue
        low, high = rules.LIVE_ALPHA_RANGES[rule]
        grid = [c.alpha for c in sweep_configs([label], temperatures=(1.0,), n_alpha=5)]
        assert grid[0] == low and grid[-1] == (0.99 if rule == "lossy" else high)
        assert sum(low < a < high for a in grid) >= 3


def test_opt_switch_points_lie_in_minus_one_one_at_t1_and_decide():
    generator = torch.Generator().manual_seed(0)
    q_logits, p_logits = (
        3 * torch.randn(400, 12, generator=generator),
        3 * torch.randn(400, 12, generator=generator),
    )
    points = ag.opt_switch_points(q_logits, p_logits, 1.0)
    assert len(points) == 400 and np.all(np.abs(points) <= 1 + 1e-12)
    # the decision switches exactly there: defer just below, keep just above
    q, p = laws.probabilities(q_logits, 1.0), laws.probabilities(p_logits, 1.0)
    for i in range(0, 400, 37):
        s = float(points[i])
        assert bool(targets.deferral_decision("opt", q[i], p[i], s - 1e-6))
        assert not bool(targets.deferral_decision("opt", q[i], p[i], s + 1e-6))


def test_opt_live_range_grows_beyond_one_at_high_temperature():
    q_logits = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    p_logits = torch.tensor([[0.0, 0.0, 0.0, 6.0]])
    low1, high1 = ag.opt_live_range(q_logits, p_logits, 1.0)
    low5, high5 = ag.opt_live_range(q_logits, p_logits, 5.0)
    assert -1 <= low1 <= 1 and low5 == high5 and high5 > 1  # flatter scaled laws: a smaller TV term
    with pytest.raises(ValueError, match="opt_live_range"):
        ag.live_range("opt", 5.0)


@pytest.mark.usefixtures("one_thread")
def test_opt_emits_diff_tokens_at_t0_on_the_engine():
    verifier = models.tiny_random_llama(0)
    drafter = models.perturbed(verifier, 0.5, seed=1)
    deferrals = set()
    for alpha in (-0.6, 0.0, 0.3):
        for prompt in ([3, 5, 7, 2, 1], [4, 4, 9, 1]):
            runs = [
                generate(
                    drafter,
                    verifier,
                    prompt,
                    method="speculative",
                    rule=rule,
                    alpha=alpha,
                    gamma=3,
                    temperature=0.0,
                    max_new_tokens=16,
                    eos_token_id=(),
                )
                for rule in ("opt", "diff")
            ]
            assert runs[0].tokens == runs[1].tokens
            assert (runs[0].n_rejected, runs[0].n_verifier_calls) == (
                runs[1].n_rejected,
                runs[1].n_verifier_calls,
            )
            deferrals.add(runs[1].n_rejected)
    assert len(deferrals) > 1  # the alphas changed what Diff did, so the equality is not vacuous


def test_alphas_at_levels_inverts_a_known_curve():
    alphas = np.linspace(-1, 1, 21)
    rejection = 0.4 * (1 - alphas) / 2  # linear: 0.4 at -1, 0 at 1
    placed = ag.alphas_at_levels(alphas, rejection, [0.3, 0.2, 0.1])
    assert np.allclose(placed, [-0.5, 0.0, 0.5])
    flat_then_falling = np.where(alphas < 0, 0.4, 0.4 * (1 - alphas))
    assert np.allclose(ag.alphas_at_levels(alphas, flat_then_falling, [0.2]), [0.5])
    with pytest.raises(ValueError, match="outside"):
        ag.alphas_at_levels(alphas, rejection, [0.5])


def test_placed_alphas_spread_rejection_on_the_committed_token_analysis():
    result = tl.stats.token_curves.TokenAnalysis.load(ANALYSIS)
    summary = tl.stats.token_curves.summarise(result, n_resamples=20)
    for curve in ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "lossy"):
        alphas, rejection = ag.token_rejection_curve(result, curve)
        block = summary["mean"][result.grid.slice(curve), 0]  # summarise's mean rejection per grid alpha
        assert np.allclose(rejection, block)
        placed = ag.alphas_at_rejection_quantiles(result, curve, 3)
        low, high = rules.LIVE_ALPHA_RANGES[curve]
        assert len(placed) == 3 and np.all((placed > low) & (placed < high))
        levels = np.interp(placed, alphas, rejection)
        top, bottom = rejection[0], rejection[-1]
        assert np.allclose(levels, top - np.array([1, 2, 3]) / 4 * (top - bottom), atol=2e-3)
    chosen = ag.placed_alphas(result, 3)
    assert set(chosen) <= set(CURVES) and len(chosen) == 7
    assert all(len(v) >= 3 for v in chosen.values()) and chosen["SpecCascade [Token-V3]"][0] == 0.0
    with_ends = ag.placed_alphas(result, 5, curves=("diff", "lossy"), ends=True)
    assert with_ends["SpecCascade [Diff]"][0] == -1.0 and with_ends["SpecCascade [Diff]"][-1] == 1.0
    assert len(with_ends["SpecCascade [Diff]"]) == 7 and with_ends["SpecDecode [Lossy]"][-1] == 0.999


def test_alphas_from_a_pilot_summary():
    summary = pd.DataFrame(
        {
            "label": "SpecCascade [Chow]",
            "alpha": [0.0, 0.25, 0.5, 0.75, 1.0],
            "rejection_rate": [0.4, 0.3, 0.2, 0.1, 0.0],
            "temperature": 1.0,
        }
    )
    assert np.allclose(
        ag.alphas_at_rejection_quantiles(summary, "SpecCascade [Chow]", 3, temperature=1.0), [0.25, 0.5, 0.75]
    )
    with pytest.raises(ValueError, match="does not fall"):
        ag.alphas_at_rejection_quantiles(summary.assign(rejection_rate=0.1), "SpecCascade [Chow]", 2)


def test_the_offline_all_profile_alphas_are_placed_from_the_committed_token_analysis():
    from pathlib import Path
    from tutorial_lib.sweeps import reruns
    from tutorial_lib.stats import token_curves

    result = token_curves.TokenAnalysis.load(
        Path(__file__).resolve().parents[1] / "data" / "results" / "token-analysis-4368c63a9810"
    )
    assert len(result.item_ids) == 162
    placed = ag.placed_alphas(result, 3)
    assert placed.keys() == reruns.GEMMA_OFFLINE_ALPHAS.keys()
    for label, alphas in placed.items():
        assert alphas == pytest.approx(reruns.GEMMA_OFFLINE_ALPHAS[label], abs=1e-4), label
    assert reruns.gemma_profile("offline-all")["alphas"] == reruns.GEMMA_OFFLINE_ALPHAS


def test_placed_alphas_per_temperature_and_curves_left_out_where_they_repeat_another():
    # T = 0 alphas come from a T = 0 analysis; Lossy is SpecDecode at T = 0, so not run there
    alphas = {
        "SpecCascade [Chow]": {0.0: [0.0, 0.2, 1.0], 1.0: [0.0, 0.5, 1.0]},
        "SpecDecode [Lossy]": {0.0: []},
        "SpecCascade [Diff]": [-1.0, 0.3],
    }
    configs = sweep_configs(
        ["SpecCascade [Chow]", "SpecDecode [Lossy]", "SpecCascade [Diff]"],
        temperatures=(0.0, 1.0),
        n_alpha=3,
        alphas=alphas,
    )
    by = {}
    for c in configs:
        by.setdefault((c.label, c.temperature), []).append(c.alpha)
    assert by[("SpecCascade [Chow]", 0.0)] == [0.0, 0.2, 1.0] and by[("SpecCascade [Chow]", 1.0)] == [
        0.0,
        0.5,
        1.0,
    ]
    assert ("SpecDecode [Lossy]", 0.0) not in by  # left out at T = 0
    assert len(by[("SpecDecode [Lossy]", 1.0)]) == 3  # its default grid at T = 1
    assert by[("SpecCascade [Diff]", 0.0)] == by[("SpecCascade [Diff]", 1.0)] == [-1.0, 0.3]
    with pytest.raises(ValueError, match="temperature"):
        sweep_configs(["SpecCascade [Chow]"], alphas={"SpecCascade [Chow]": {-1.0: [0.1]}})


def test_plateau_alphas_take_one_alpha_per_step_of_a_staircase(monkeypatch):
    # a T = 0 curve: SpecDecode's plateau, three steps, the drafter's end; interpolation would put
    # several alphas on the step from 0.1 to 0.0 (one behaviour)
    alphas = np.linspace(-1, 1, 21)
    rejection = np.select(
        [alphas < -0.5, alphas < 0.0, alphas < 0.5, alphas < 1.0], [0.4, 0.3, 0.2, 0.1], 0.0
    )
    assert [run[3] for run in ag.plateaus(alphas, rejection)] == [0.4, 0.3, 0.2, 0.1, 0.0]
    monkeypatch.setattr(ag, "token_rejection_curve", lambda result, curve, task=None: (alphas, rejection))
    placed = ag.plateau_alphas(None, "diff", 5)
    assert placed[0] == -1.0 and placed[-1] == 1.0
    interior = placed[1:-1]
    assert len(interior) == 3  # three interior steps, one alpha each
    levels = [rejection[np.argmin(abs(alphas - a))] for a in interior]
    assert sorted(levels, reverse=True) == [0.3, 0.2, 0.1]
    assert len(ag.plateau_alphas(None, "diff", 2)) == 4  # k = 2 of the 3 steps, plus the ends
    # Lossy at T = 0: SpecDecode for every alpha below 1, the drafter at 1: nothing to place
    lossy = np.where(alphas < 1.0, 0.4, 0.0)
    monkeypatch.setattr(ag, "token_rejection_curve", lambda result, curve, task=None: (alphas, lossy))
    assert ag.plateau_alphas(None, "lossy", 5) == []
