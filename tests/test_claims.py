"""The paper's table with intervals and the claims' verdicts, on constructed rows with known answers."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tutorial_lib import claims, rows_file
from tutorial_lib.stats.analysis import NOT_REACHED
from tutorial_lib.stats.curve_bootstrap import CurveBootstrap, curve_table
from tutorial_lib.stats.paired import item_scores

N = 40
RNG = np.random.default_rng(0)
VERIFIER = (RNG.random(N) < 0.7).astype(float)
DRAFTER = VERIFIER * (RNG.random(N) < 0.5)          # at most the verifier's, item by item


def _config(label, method, rule, alpha, quality, *, rejected=0, accepted=10, time=1.0, gamma=1, temperature=1.0):
    return [{"task": "t", "example_id": f"x{i}", "config": f"{label}|{alpha}|g{gamma}|T{temperature}", "label": label,
             "method": method, "rule": rule, "alpha": alpha, "beta": "1.0", "gamma": gamma, "temperature": temperature,
             "seed": i, "quality": float(q), "text": "", "n_tokens": 10, "n_verifier_calls": 10, "n_drafter_calls": 10,
             "n_accepted": accepted, "n_rejected": rejected, "wall_time_s": time} for i, q in enumerate(quality)]


def _gemma_rows(token_first: bool) -> pd.DataFrame:
    """Token-V2 reaches the verifier's quality at rejection 0.1, Chow only at its SpecDecode end (0.3)
    (or the other way round)."""
    good, bad = ("token_v2", "chow") if token_first else ("chow", "token_v2")
    labels = {"token_v2": "SpecCascade [Token-V2]", "chow": "SpecCascade [Chow]"}
    rows = (_config("Verifier", "verifier", None, 0.0, VERIFIER) + _config("Drafter", "drafter", None, 0.0, DRAFTER)
            + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7)
            + _config(labels[good], "speculative", good, 0.5, VERIFIER, rejected=1, accepted=9)
            + _config(labels[bad], "speculative", bad, 0.5, DRAFTER, rejected=1, accepted=9)
            + _config(labels[bad], "speculative", bad, 0.2, DRAFTER, rejected=2, accepted=8))
    return pd.DataFrame(rows)


def test_verdicts_and_the_sample_size_that_would_resolve():
    assert claims.verdict(0.01, 0.2) == claims.HOLDS
    assert claims.verdict(-0.3, 0.0) == claims.DOES_NOT_HOLD
    assert claims.verdict(-0.1, 0.2) == claims.NOT_RESOLVED
    # half-width 0.15 at n = 100 -> se = 0.15 / 1.96; 80% power for an effect of 0.1
    expected = np.ceil(100 * ((1.959964 + 0.841621) * (0.15 / 1.959964) / 0.1) ** 2)
    assert claims.n_needed(0.1, -0.05, 0.25, 100) == pytest.approx(expected)
    assert np.isnan(claims.n_needed(0.0, -0.1, 0.1, 100)) and np.isnan(claims.n_needed(0.1, -np.inf, 0.3, 100))


def test_curve_table_reads_the_rejection_axis_with_ends_and_intervals():
    table = curve_table(_gemma_rows(True), cost="rejection_rate").set_index("method")
    token, chow = table.loc["SpecCascade [Token-V2]"], table.loc["SpecCascade [Chow]"]
    # the drafter end (rejection 0, drafter quality) joined to (0.1, verifier quality): reached at 0.1
    assert token["reduction_at_verifier_quality"] == pytest.approx(0.9)
    assert token["reduction_low"] == pytest.approx(0.9) and token["reached_share"] == 1.0
    assert chow["reduction_at_verifier_quality"] == pytest.approx(0.7)   # only its SpecDecode end reaches
    assert token["best_quality_within_verifier_cost"] == pytest.approx(VERIFIER.mean())
    assert token["verifier_quality_low"] <= VERIFIER.mean() <= token["verifier_quality_high"]
    points = CurveBootstrap(item_scores(_gemma_rows(True))[0], "rejection_rate").point_costs()
    ends = points[points["end"] != ""].set_index(["label", "end"])
    assert ends.loc[("SpecCascade [Chow]", "drafter"), "alpha"] == 1.0
    assert ends.loc[("SpecCascade [Chow]", "spec"), "alpha"] == 0.0
    assert ends.loc[("SpecCascade [Token-V2]", "spec"), "alpha"] == -1.0
    assert ends.loc[("SpecCascade [Chow]", "spec"), "cost"] == pytest.approx(0.3)


def test_not_reached_only_where_the_point_estimate_does_not_reach():
    rows = pd.DataFrame(_config("Verifier", "verifier", None, 0.0, VERIFIER)
                        + _config("Drafter", "drafter", None, 0.0, DRAFTER, time=0.2)
                        + _config("SeqCascade [Chow]", "seq_cascade", None, 0.5, DRAFTER, time=0.6))
    table = curve_table(rows, cost="wall_time_s").set_index("method")
    assert table.loc["SeqCascade [Chow]", "reduction_at_verifier_quality"] == NOT_REACHED
    assert table.loc["SeqCascade [Chow]", "best_quality_within_verifier_cost"] == pytest.approx(DRAFTER.mean())
    with pytest.raises(ValueError, match="not a row column"):
        curve_table(rows, cost="modelled_latency_s")


@pytest.mark.parametrize("token_first,expected", [(True, claims.HOLDS), (False, claims.DOES_NOT_HOLD)])
def test_gemma_claim_token_lower_rejection(token_first, expected):
    table = claims.gemma_claims(_gemma_rows(token_first), n_resamples=500)
    row = table[table["claim"].str.startswith("[Token] matches")].iloc[0]
    assert row["verdict"] == expected
    assert row["estimate"] == pytest.approx(0.2 if token_first else -0.2)
    assert row["low"] <= row["estimate"] <= row["high"]


def _t5_rows() -> pd.DataFrame:
    drafter_like = DRAFTER
    return pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, gamma=5)
        + _config("Drafter", "drafter", None, 0.0, drafter_like, time=0.1, gamma=5)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, time=0.8, gamma=5)
        + _config("SpecCascade [Token-V1]", "speculative", "token_v1", 0.5, VERIFIER, time=0.5, gamma=5)
        + _config("SpecCascade [OPT]", "speculative", "opt", 0.5, VERIFIER, time=0.6, gamma=5)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, drafter_like, time=0.3, gamma=5)
        + _config("SeqCascade [Chow]", "seq_cascade", None, 0.5, drafter_like, time=0.2, gamma=5))


def test_t5_claims_on_a_constructed_run():
    table = claims.t5_claims(_t5_rows(), n_resamples=500).set_index("claim")
    token = table.loc["SpecCascade [Token] gives the best quality-latency trade-off"]
    assert token["verdict"] == claims.HOLDS and token["estimate"] == pytest.approx(0.5 - 0.4)
    opt = table.loc["OPT is second with T5"]
    assert opt["verdict"] == claims.HOLDS and opt["estimate"] == pytest.approx(0.4 - 0.2)
    assert table.loc["Sequential cascades are not the best at the verifier's latency", "estimate"] == pytest.approx(
        VERIFIER.mean() - DRAFTER.mean())
    assert set(table["verdict"]) <= {claims.HOLDS, claims.DOES_NOT_HOLD, claims.NOT_RESOLVED}


def test_cross_run_claim_needs_both_runs():
    gemma = claims.gemma_claims(_gemma_rows(True), n_resamples=300)
    assert "OPT helps less with Gemma than with T5" not in set(gemma["claim"])
    rows = pd.concat([_gemma_rows(True), pd.DataFrame(
        _config("SpecCascade [OPT]", "speculative", "opt", 0.5, DRAFTER, rejected=1, accepted=9)
        + _config("SpecCascade [Diff]", "speculative", "diff", 0.5, VERIFIER, rejected=1, accepted=9))])
    t5 = _t5_rows().assign(temperature=1.0)
    both = claims.gemma_claims(rows, t5_rows=t5, n_resamples=300).set_index("claim")
    row = both.loc["OPT helps less with Gemma than with T5"]
    # T5: OPT 0.4 vs Chow never -> +inf advantage; Gemma: OPT reaches only at its spec end (0.7) vs Diff 0.9
    assert row["estimate"] == np.inf and row["verdict"] == claims.HOLDS


COMMITTED = Path(__file__).resolve().parents[1] / "data" / "results"


def test_claims_run_on_a_committed_gemma_style_sweep():
    folders = sorted(COMMITTED.glob("gemma-offline-*/rows.jsonl"))
    folders = [f for f in folders if "latency" not in f.parent.name]
    if not folders:
        pytest.fail("no committed gemma-offline rows in data/results/")
    rows = pd.DataFrame(rows_file.read_rows(folders[0]))
    table = claims.gemma_claims(rows, n_resamples=300)
    assert len(table) and set(table["verdict"]) <= {claims.HOLDS, claims.DOES_NOT_HOLD, claims.NOT_RESOLVED}
    assert (table["low"] <= table["high"]).all()
