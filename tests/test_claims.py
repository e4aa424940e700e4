"""The paper's table with intervals and the claims' verdicts, on constructed rows with known answers."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tutorial_lib.stats import claims
from tutorial_lib.stats.claims import gemma_style
from tutorial_lib.stats.claims.headline_curves import MARGIN

from tutorial_lib.sweeps import rows_file
from tutorial_lib.stats.analysis import NOT_REACHED
from tutorial_lib.stats.curve_bootstrap import CurveBootstrap, curve_table
from tutorial_lib.stats.paired import item_scores
from sweep_rows import config_rows

N = 40
RNG = np.random.default_rng(0)
VERIFIER = (RNG.random(N) < 0.7).astype(float)
DRAFTER = VERIFIER * (RNG.random(N) < 0.5)  # at most the verifier's, item by item


def _config(
    label,
    method,
    rule,
    alpha,
    quality,
    *,
    rejected=0,
    accepted=10,
    time=1.0,
    gamma=1,
    temperature=1.0,
    texts=None,
):
    """One configuration's rows; each has its own texts unless `texts` says otherwise (as SpecDecode's)."""
    return config_rows(
        label,
        method,
        rule,
        alpha,
        quality,
        rejected=rejected,
        accepted=accepted,
        time=time,
        gamma=gamma,
        temperature=temperature,
        texts=texts,
    )


def _gemma_rows(token_first: bool, *, both_reach: bool = False) -> pd.DataFrame:
    """Token-V2 reaches the verifier's quality at rejection 0.1, Chow's own runs never (only its
    SpecDecode end would, at 0.3) (or the other way round); `both_reach`: the other rule's own run at
    alpha 0.05 reaches too, at rejection 0.25."""
    good, bad = ("token_v2", "chow") if token_first else ("chow", "token_v2")
    labels = {"token_v2": "SpecCascade [Token-V2]", "chow": "SpecCascade [Chow]"}
    rows = (
        _config("Verifier", "verifier", None, 0.0, VERIFIER)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7)
        + _config(labels[good], "speculative", good, 0.5, VERIFIER, rejected=1, accepted=9)
        + _config(labels[bad], "speculative", bad, 0.5, DRAFTER, rejected=1, accepted=9)
        + _config(labels[bad], "speculative", bad, 0.2, DRAFTER, rejected=2, accepted=8)
    )
    if both_reach:
        rows += _config(labels[bad], "speculative", bad, 0.05, VERIFIER, rejected=1, accepted=3)
    return pd.DataFrame(rows)


def test_verdicts_and_the_sample_size_that_would_resolve():
    assert claims.verdict(0.01, 0.2) == claims.HOLDS
    assert claims.verdict(-0.3, 0.0) == claims.DOES_NOT_HOLD
    assert claims.verdict(-0.1, 0.2) == claims.NOT_RESOLVED
    # half-width 0.15 at n = 100 -> se = 0.15 / 1.96; 80% power for an effect of 0.1
    expected = np.ceil(100 * ((1.959964 + 0.841621) * (0.15 / 1.959964) / 0.1) ** 2)
    assert claims.n_needed(0.1, -0.05, 0.25, 100) == pytest.approx(expected)
    assert np.isnan(claims.n_needed(0.0, -0.1, 0.1, 100)) and np.isnan(
        claims.n_needed(0.1, -np.inf, 0.3, 100)
    )


def test_curve_table_reads_the_rejection_axis_with_ends_and_intervals():
    table = curve_table(_gemma_rows(True), cost="rejection_rate").set_index("method")
    token, chow = table.loc["SpecCascade [Token-V2]"], table.loc["SpecCascade [Chow]"]
    # the drafter end (rejection 0, drafter quality) joined to (0.1, verifier quality): reached at 0.1
    assert token["reduction_at_verifier_quality"] == pytest.approx(0.9)
    assert token["reduction_low"] == pytest.approx(0.9) and token["reached_share"] == 1.0
    assert chow["reduction_at_verifier_quality"] == pytest.approx(0.7)  # only its SpecDecode end reaches
    assert token["best_quality_within_verifier_cost"] == pytest.approx(VERIFIER.mean())
    assert token["verifier_quality_low"] <= VERIFIER.mean() <= token["verifier_quality_high"]
    points = CurveBootstrap(item_scores(_gemma_rows(True))[0], "rejection_rate").point_costs()
    ends = points[points["end"] != ""].set_index(["label", "end"])
    assert ends.loc[("SpecCascade [Chow]", "drafter"), "alpha"] == 1.0
    assert ends.loc[("SpecCascade [Chow]", "spec"), "alpha"] == 0.0
    assert ends.loc[("SpecCascade [Token-V2]", "spec"), "alpha"] == -1.0
    assert ends.loc[("SpecCascade [Chow]", "spec"), "cost"] == pytest.approx(0.3)


def test_not_reached_only_where_the_point_estimate_does_not_reach():
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER, time=0.2)
        + _config("SeqCascade [Chow]", "seq_cascade", None, 0.5, DRAFTER, time=0.6)
    )
    table = curve_table(rows, cost="wall_time_s").set_index("method")
    assert table.loc["SeqCascade [Chow]", "reduction_at_verifier_quality"] == NOT_REACHED
    assert table.loc["SeqCascade [Chow]", "best_quality_within_verifier_cost"] == pytest.approx(
        DRAFTER.mean()
    )
    with pytest.raises(ValueError, match="not a row column"):
        curve_table(rows, cost="modelled_latency_s")


def _within_margin_share() -> float:
    """Where along a line from the drafter's quality to the verifier's a curve comes within the margin."""
    q_v, q_d = VERIFIER.mean(), DRAFTER.mean()
    return (q_v - MARGIN - q_d) / (q_v - q_d)


@pytest.mark.parametrize("token_first,expected", [(True, claims.HOLDS), (False, claims.DOES_NOT_HOLD)])
def test_gemma_claim_token_lower_rejection(token_first, expected):
    table = claims.gemma_claims(_gemma_rows(token_first, both_reach=True), n_resamples=500)
    row = table[table["claim"] == gemma_style.MATCHES].iloc[0]
    assert row["verdict"] == expected
    # each curve starts at its drafter end (0, Q_d): the better rule's line reaches Q_v at rejection 0.1, the
    # other's runs from (0.2, Q_d) to (0.25, Q_v); rates over SpecDecode's 0.3
    share = _within_margin_share()
    good, bad = 0.1 * share, 0.2 + 0.05 * share
    assert row["mine_best"] == pytest.approx((good if token_first else bad) / 0.3)
    assert row["estimate"] == pytest.approx((bad - good) / 0.3 * (1 if token_first else -1))
    assert np.isfinite([row["low"], row["high"]]).all() and row["low"] <= row["estimate"] <= row["high"]


def test_a_rule_is_not_credited_with_runs_that_are_not_its_own():
    """Only SpecDecode beats the verifier: a Token rule's SpecDecode end (alpha = -1) and an interior
    run with SpecDecode's texts are SpecDecode's runs, not the rule's; its own runs are worse."""
    better = np.minimum(1.0, VERIFIER + (RNG.random(N) < 0.5))
    spec_texts = [f"spec {i}" for i in range(N)]
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER)
        + _config("SpecDecode", "speculative", "spec", 0.0, better, rejected=3, accepted=7, texts=spec_texts)
        + _config(
            "SpecCascade [Token-V1]",
            "speculative",
            "token_v1",
            -1.0,
            better,
            rejected=3,
            accepted=7,
            texts=spec_texts,
        )
        + _config(
            "SpecCascade [Token-V2]",
            "speculative",
            "token_v2",
            0.1,
            better,
            rejected=3,
            accepted=7,
            texts=spec_texts,
        )
        + _config("SpecCascade [Token-V1]", "speculative", "token_v1", 0.5, DRAFTER, rejected=1, accepted=9)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, DRAFTER, rejected=1, accepted=9)
    )
    kept, dropped = claims.own_configurations(rows)
    assert set(dropped["alpha"]) == {-1.0, 0.1} and "SpecCascade [Token-V2]" not in set(kept["label"])
    table = claims.gemma_claims(rows, n_resamples=500).set_index("claim")
    beats = table.loc[gemma_style.BEATS_SAMPLED]
    assert beats["estimate"] == pytest.approx(DRAFTER.mean() - VERIFIER.mean())
    assert beats["verdict"] == claims.DOES_NOT_HOLD and "alpha 0.5" in beats["detail"]
    # the noise floor beside it is SpecDecode minus the verifier
    assert beats["noise_floor"] == pytest.approx(better.mean() - VERIFIER.mean())
    assert beats["noise_floor_low"] <= beats["noise_floor"] <= beats["noise_floor_high"]
    # the rate statistic reads curves with both ends: measured, finite, never by construction
    matches = table.loc[gemma_style.MATCHES]
    assert matches["verdict"] != claims.BY_CONSTRUCTION
    assert np.isfinite(matches[["low", "high"]].astype(float)).all()


def test_lossy_equal_to_specdecode_is_not_measurable():
    spec_texts = [f"spec {i}" for i in range(N)]
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, temperature=0.0)
        + _config(
            "SpecDecode",
            "speculative",
            "spec",
            0.0,
            VERIFIER,
            rejected=3,
            accepted=7,
            texts=spec_texts,
            temperature=0.0,
        )
        + _config(
            "SpecDecode [Lossy]",
            "speculative",
            "lossy",
            0.5,
            VERIFIER,
            rejected=3,
            accepted=7,
            texts=spec_texts,
            temperature=0.0,
        )
        + _config(
            "SpecCascade [Token-V1]",
            "speculative",
            "token_v1",
            0.5,
            VERIFIER,
            rejected=1,
            accepted=9,
            temperature=0.0,
        )
    )
    _, dropped = claims.own_configurations(rows)
    assert list(dropped["label"]) == ["SpecDecode [Lossy]"]
    assert dropped["reason"].iloc[0] == "its texts equal SpecDecode's on every item"


def test_the_selection_aware_interval_covers_zero_when_every_configuration_has_one_law():
    """Seven configurations and the verifier drawn from one law: the best configuration's quality
    minus the verifier's, with the interval `_beats_verifier` uses, covers the true 0 in about 95%
    of repetitions (at least 95% within binomial noise; not the trivial 100%)."""
    from scipy import stats
    from tutorial_lib.stats import intervals

    rng = np.random.default_rng(7)
    n_items, n_configs, repetitions = 60, 7, 200
    covered = 0
    for repetition in range(repetitions):
        quality = (rng.random((n_configs + 1, n_items)) < 0.55).astype(float)  # row 0: the verifier
        point, distribution = intervals.resample_items(
            lambda idx: quality[:, idx].mean(1), n_items, n_resamples=300, seed=repetition
        )
        best, low, high = intervals.best_of(point[1:] - point[0], distribution[1:] - distribution[0])
        covered += low <= 0 <= high
    below = stats.binomtest(covered, repetitions, 0.95, alternative="less").pvalue
    assert below > 0.01, f"covered 0 in {covered} of {repetitions}: below 95%"
    assert covered < repetitions, "the interval is trivially wide"


def _t5_rows() -> pd.DataFrame:
    drafter_like = DRAFTER
    return pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, gamma=5)
        + _config("Drafter", "drafter", None, 0.0, drafter_like, time=0.1, gamma=5)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, time=0.8, gamma=5)
        + _config("SpecCascade [Token-V1]", "speculative", "token_v1", 0.5, VERIFIER, time=0.5, gamma=5)
        + _config("SpecCascade [OPT]", "speculative", "opt", 0.5, VERIFIER, time=0.6, gamma=5)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, drafter_like, time=0.3, gamma=5)
        + _config("SeqCascade [Chow]", "seq_cascade", None, 0.5, drafter_like, time=0.2, gamma=5)
    )


def test_t5_claims_on_a_constructed_run():
    table = claims.t5_claims(_t5_rows(), n_resamples=500).set_index("claim")
    token = table.loc["SpecCascade [Token] gives the best quality-latency trade-off"]
    assert token["verdict"] == claims.HOLDS and token["estimate"] == pytest.approx(0.5 - 0.4)
    opt = table.loc["OPT is second with T5"]
    assert opt["verdict"] == claims.HOLDS and opt["estimate"] == pytest.approx(0.4 - 0.2)
    # within the verifier's latency the Token cascade reaches the verifier's quality and the sequential one
    # does not, but the verifier alone is open to both sides: neither side beats it, so the difference is 0
    at_verifier = table.loc["Sequential cascades are not the best at the verifier's latency"]
    assert at_verifier["estimate"] == pytest.approx(0.0)
    assert (
        "the verifier" in at_verifier["detail"]
        and np.isfinite([at_verifier["low"], at_verifier["high"]]).all()
    )
    assert set(table["verdict"]) <= set(claims.VERDICTS)


def test_cross_run_claim_uses_one_unit_on_both_runs():
    gemma = claims.gemma_claims(_gemma_rows(True), n_resamples=300)
    assert gemma_style.OPT_LESS not in set(gemma["claim"])
    # Gemma-style: OPT within the margin at rejection 0.2 x share, Diff at 0.1 x share (their lines from the
    # drafter end), SpecDecode's rate 0.3 -> OPT's advantage (0.1 - 0.2) x share / 0.3
    rows = pd.concat(
        [
            _gemma_rows(True),
            pd.DataFrame(
                _config("SpecCascade [OPT]", "speculative", "opt", 0.5, VERIFIER, rejected=2, accepted=8)
                + _config("SpecCascade [Diff]", "speculative", "diff", 0.5, VERIFIER, rejected=1, accepted=9)
            ),
        ]
    )
    # T5 (gamma 5): OPT at 0.1 x share, Chow at 0.4 x share, SpecDecode 0.5 -> (0.4 - 0.1) x share / 0.5
    t5 = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, gamma=5)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER, gamma=5)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=5, accepted=5, gamma=5)
        + _config("SpecCascade [OPT]", "speculative", "opt", 0.5, VERIFIER, rejected=1, accepted=9, gamma=5)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, VERIFIER, rejected=4, accepted=6, gamma=5)
    )
    both = claims.gemma_claims(rows, t5_rows=t5, n_resamples=300).set_index("claim")
    row = both.loc[gemma_style.OPT_LESS]
    share = _within_margin_share()
    assert row["estimate"] == pytest.approx(share * (0.3 / 0.5 + 0.1 / 0.3))
    assert row["verdict"] == claims.HOLDS and row["unit"] == "share of SpecDecode's rejection rate"
    with pytest.raises(ValueError, match="one unit on both sides"):
        claims.gemma_claims(rows, t5_rows=t5, t5_cost="wall_time_s", n_resamples=300)
    # OPT and Diff only at the drafter's quality on the Gemma side: both come within the margin on the way
    # to their SpecDecode end, at the same rate, so OPT's advantage there is a measured 0, not infinite
    unreached = pd.concat(
        [
            _gemma_rows(False),
            pd.DataFrame(
                _config("SpecCascade [OPT]", "speculative", "opt", 0.5, DRAFTER, rejected=1, accepted=9)
                + _config("SpecCascade [Diff]", "speculative", "diff", 0.5, DRAFTER, rejected=1, accepted=9)
            ),
        ]
    )
    unreached = unreached[~(unreached["label"] == "SpecCascade [Chow]")]
    row = (
        claims.gemma_claims(unreached, t5_rows=t5, n_resamples=300)
        .set_index("claim")
        .loc[gemma_style.OPT_LESS]
    )
    assert "Gemma-style: +0.000" in row["detail"]
    assert np.isfinite(row[["estimate", "low", "high"]].astype(float)).all()


def test_opt_helps_less_at_t0_is_by_construction_only_where_opt_emits_diffs_texts_on_both_runs():
    def run(opt_texts, gamma):
        same = [f"diff {i}" for i in range(N)]
        return pd.DataFrame(
            _config("Verifier", "verifier", None, 0.0, VERIFIER, gamma=gamma, temperature=0.0)
            + _config("Drafter", "drafter", None, 0.0, DRAFTER, gamma=gamma, temperature=0.0)
            + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7,
                      gamma=gamma, temperature=0.0)
            + _config("SpecCascade [Diff]", "speculative", "diff", 0.5, VERIFIER, rejected=1, accepted=9,
                      gamma=gamma, temperature=0.0, texts=same)
            + _config("SpecCascade [OPT]", "speculative", "opt", 0.5, VERIFIER, rejected=1, accepted=9,
                      gamma=gamma, temperature=0.0, texts=same if opt_texts == "same" else None)
        )  # fmt: skip

    row = claims.gemma_claims(run("same", 1), t5_rows=run("same", 5), n_resamples=300).set_index("claim")
    assert row.loc[gemma_style.OPT_LESS, "verdict"] == claims.BY_CONSTRUCTION
    assert "OPT emits Diff's tokens" in row.loc[gemma_style.OPT_LESS, "reason"]
    # one run where OPT's texts differ from Diff's: a measured verdict, with a finite estimate
    row = claims.gemma_claims(run("own", 1), t5_rows=run("same", 5), n_resamples=300).set_index("claim")
    assert row.loc[gemma_style.OPT_LESS, "verdict"] != claims.BY_CONSTRUCTION
    assert np.isfinite(row.loc[gemma_style.OPT_LESS, ["estimate", "low", "high"]].astype(float)).all()


COMMITTED = Path(__file__).resolve().parents[1] / "data" / "results"


def test_claims_run_on_a_committed_gemma_style_sweep():
    folders = sorted(COMMITTED.glob("gemma-offline-*/rows.jsonl"))
    folders = [f for f in folders if "latency" not in f.parent.name]
    if not folders:
        pytest.fail("no committed gemma-offline rows in data/results/")
    rows = pd.DataFrame(rows_file.read_rows(folders[0]))
    table = claims.gemma_claims(rows, n_resamples=300)
    assert len(table) and set(table["verdict"]) <= set(claims.VERDICTS)
    unmeasured = table["verdict"].isin([claims.BY_CONSTRUCTION, claims.NOT_RUN])
    assert (table.loc[~unmeasured, "low"] <= table.loc[~unmeasured, "high"]).all()
    assert table.loc[unmeasured, "reason"].str.len().gt(0).all()


def test_compare_claims_pairs_renamed_tasks_and_keeps_rows_present_on_one_side():
    def table(rows):
        return pd.DataFrame(
            rows,
            columns=[
                "claim",
                "task",
                "temperature",
                "gamma",
                "estimate",
                "low",
                "high",
                "n",
                "verdict",
                "n_needed",
            ],
        )

    before = table(
        [
            ["A", "code", 1.0, 1, 0.04, -0.13, 0.21, 53, claims.NOT_RESOLVED, 2193.0],
            ["A", "facts", 1.0, 1, 0.1, 0.02, 0.2, 49, claims.HOLDS, np.nan],
            ["B", "code", 0.0, 1, np.nan, np.nan, np.nan, 53, claims.NOT_RUN, np.nan],
        ]
    )
    after = table(
        [
            ["A", "humaneval", 1.0, 1, 0.05, 0.01, 0.09, 164, claims.HOLDS, np.nan],
            ["A", "facts", 1.0, 1, 0.1, 0.02, 0.2, 49, claims.HOLDS, np.nan],
            ["A", "arithmetic-300", 1.0, 1, -0.01, -0.05, 0.03, 300, claims.NOT_RESOLVED, 9000.0],
        ]
    )
    both = claims.compare_claims(before, after, {"code": "humaneval"})
    assert list(both["claim"]) == ["A", "A", "A", "B"]
    humaneval = both[(both["task"] == "humaneval") & (both["claim"] == "A")].iloc[0]
    assert (
        humaneval["n_before"],
        humaneval["n_after"],
        humaneval["verdict_before"],
        humaneval["verdict_after"],
    ) == (53, 164, claims.NOT_RESOLVED, claims.HOLDS) and humaneval["changed"]
    assert not both[both["task"] == "facts"]["changed"].iloc[0]
    only_after = both[both["task"] == "arithmetic-300"].iloc[0]
    assert pd.isna(only_after["verdict_before"]) and only_after["changed"]
    only_before = both[both["claim"] == "B"].iloc[0]
    assert only_before["task"] == "humaneval" and pd.isna(only_before["verdict_after"])
    with pytest.raises(ValueError, match="missing"):
        claims.compare_claims(before.drop(columns="n_needed"), after)


# ---- one test per label rule: by construction, not run, within the noise floor ----------------------


def test_a_rule_that_never_comes_within_the_margin_is_a_measured_miss_not_by_construction():
    """Every compared rule runs, but none of their own configurations reaches the verifier's quality: each
    curve still comes within the margin on the way to its SpecDecode end, so the rate statistic is finite
    and measured."""
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7)
        + _config("SpecCascade [Token-V2]", "speculative", "token_v2", 0.5, DRAFTER, rejected=1, accepted=9)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, DRAFTER, rejected=1, accepted=9)
    )
    row = claims.gemma_claims(rows, n_resamples=300).set_index("claim").loc[gemma_style.MATCHES]
    assert row["verdict"] in (claims.HOLDS, claims.DOES_NOT_HOLD, claims.NOT_RESOLVED)
    assert row["estimate"] == pytest.approx(0.0) and np.isfinite([row["low"], row["high"]]).all()


def test_beats_names_the_verifier_it_beats_and_adds_the_greedy_one_at_t1():
    greedy = np.minimum(1.0, VERIFIER + (RNG.random(N) < 0.5))
    rows = pd.concat(
        [
            _gemma_rows(True),
            pd.DataFrame(_config("Verifier", "verifier", None, 0.0, greedy, temperature=0.0)),
        ]
    )
    table = claims.gemma_claims(rows, n_resamples=300)
    at_1 = table[table["temperature"] == 1.0].set_index("claim")
    assert "sampled at T = 1" in at_1.loc[gemma_style.BEATS_SAMPLED, "measurement"]
    greedy_row = at_1.loc[gemma_style.BEATS_GREEDY]
    assert greedy_row["estimate"] == pytest.approx(VERIFIER.mean() - greedy.mean())
    assert "not drawn" in greedy_row["noise_floor_from"]
    assert gemma_style.BEATS_GREEDY not in set(table.loc[table["temperature"] == 0.0, "claim"])


def test_no_committed_claim_cell_is_infinite():
    for path in sorted(COMMITTED.glob("*/claims.csv")):
        table = pd.read_csv(path)
        cells = table[["estimate", "low", "high"]].to_numpy(float)
        assert not np.isinf(cells).any(), f"{path.parent.name}: an infinite claim cell"


def test_specdecode_at_gamma_1_without_the_bonus_token_is_slower_by_construction():
    from tutorial_lib.stats import hardware

    rows = []
    for label, method, rule, gamma, bonus, time in (
        ("Verifier", "verifier", None, 1, "", 1.0),
        ("SpecDecode", "speculative", "spec", 1, "|bonus=none", 1.3),
        ("SpecDecode", "speculative", "spec", 5, "|bonus=verifier", 0.7),
    ):
        for row in _config(label, method, rule, 0.0, VERIFIER, time=time, gamma=gamma, temperature=0.0):
            rows.append({**row, "config": row["config"] + bonus})
    table = hardware.latency_claims(pd.DataFrame(rows), column="wall_time_s", n_resamples=300)
    pooled = table[table["task"] == "all tasks (pooled)"].set_index("gamma")
    assert pooled.loc[1, "verdict"] == claims.BY_CONSTRUCTION and "bonus token" in pooled.loc[1, "reason"]
    assert pooled.loc[1, "estimate"] == pytest.approx(1 - 1.3)  # the measured estimate stays beside it
    assert pooled.loc[5, "verdict"] == claims.HOLDS and pooled.loc[5, "reason"] == ""


def test_a_claim_whose_comparison_group_was_not_run_says_not_run():
    """At T = 0 a profile runs the Token rules but not Chow, Diff, OPT or Lossy: a design choice, not a
    property of the claim."""
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, temperature=0.0)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7, temperature=0.0)
        + _config(
            "SpecCascade [Token-V2]",
            "speculative",
            "token_v2",
            0.5,
            VERIFIER,
            rejected=1,
            accepted=9,
            temperature=0.0,
        )
    )
    table = claims.gemma_claims(rows, n_resamples=300).set_index("claim")
    row = table.loc[gemma_style.MATCHES]
    assert row["verdict"] == claims.NOT_RUN and "no rule of the other group ran" in row["reason"]
    assert np.isnan(row["estimate"])
    # the Token side itself ran: the claim that needs only it is measured
    assert table.loc[gemma_style.BEATS_SAMPLED, "verdict"] in (
        claims.HOLDS,
        claims.DOES_NOT_HOLD,
        claims.NOT_RESOLVED,
    )


def _second_seed(quality, rejected, *, temperature=1.0):
    """The verifier and SpecDecode again with other seeds (item i: seed 1000 + i) and their own texts."""
    rows = _config("Verifier", "verifier", None, 0.0, quality, temperature=temperature) + _config(
        "SpecDecode",
        "speculative",
        "spec",
        0.0,
        quality,
        rejected=rejected,
        accepted=10 - rejected,
        temperature=temperature,
    )
    return pd.DataFrame(
        [{**r, "seed": 1000 + int(r["example_id"][1:]), "text": r["text"] + " again"} for r in rows]
    )


def test_a_claim_within_the_same_law_floor_says_so():
    """The best Token configuration beats the verifier by 1 item in 40, and a second seed set of the
    verifier differs from the first by 3 items: the estimate lies within the floor."""
    token = VERIFIER.copy()
    token[np.flatnonzero(VERIFIER == 0)[0]] = 1.0
    again = VERIFIER.copy()
    again[np.flatnonzero(VERIFIER == 0)[:3]] = 1.0
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER)
        + _config("Drafter", "drafter", None, 0.0, DRAFTER)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, rejected=3, accepted=7)
        + _config("SpecCascade [Token-V2]", "speculative", "token_v2", 0.5, token, rejected=1, accepted=9)
        + _config("SpecCascade [Chow]", "speculative", "chow", 0.5, DRAFTER, rejected=1, accepted=9)
    )
    table = claims.gemma_claims(rows, n_resamples=500, second_seed=_second_seed(again, 3)).set_index("claim")
    beats = table.loc[gemma_style.BEATS_SAMPLED]
    assert beats["estimate"] == pytest.approx(1 / N)
    assert beats["noise_floor"] == pytest.approx(3 / N) and "second seed" in beats["noise_floor_from"]
    assert beats["against_floor"] == claims.WITHIN_FLOOR
    # the rate claim's floor is its own statistic again with the second seed set's references
    matches = table.loc[gemma_style.MATCHES]
    assert np.isfinite(matches["noise_floor"]) and "second seed set" in matches["noise_floor_from"]
    # without a second seed: SpecDecode minus the verifier in the quality unit, and no floor for the rate
    alone = claims.gemma_claims(rows, n_resamples=500).set_index("claim")
    assert alone.loc[gemma_style.BEATS_SAMPLED, "noise_floor"] == pytest.approx(0.0)
    assert np.isnan(alone.loc[gemma_style.MATCHES, "noise_floor"])
    assert claims.against_floor(0.2, -0.05, 0.1) == claims.BEYOND_FLOOR
    assert claims.against_floor(0.2, np.nan, 0.1) == ""


def test_the_floor_at_t0_is_by_construction_when_specdecode_emits_the_verifiers_texts():
    from tutorial_lib.stats import paired

    texts = [f"same {i}" for i in range(N)]
    rows = pd.DataFrame(
        _config("Verifier", "verifier", None, 0.0, VERIFIER, temperature=0.0, texts=texts)
        + _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, temperature=0.0, texts=texts)
    )
    floor = paired.same_law_floor(rows, n_resamples=300).iloc[0]
    assert np.isnan(floor["quality_floor"]) and floor["quality_floor_from"].startswith("by construction")


def test_a_configuration_equal_to_specdecode_on_one_task_is_dropped_on_that_task_only():
    """Token-V2 at alpha 0.1 emits SpecDecode's texts on task "a" (so it is not the rule's own there) and
    its own texts on task "b": it is dropped from "a" and kept on "b", whose verdicts read it."""
    spec_texts = [f"spec {i}" for i in range(N)]
    rows = []
    for task, texts in (("a", spec_texts), ("b", None)):
        rows += [
            {**row, "task": task}
            for row in _config("SpecDecode", "speculative", "spec", 0.0, VERIFIER, texts=spec_texts)
            + _config(
                "SpecCascade [Token-V2]", "speculative", "token_v2", 0.1, VERIFIER, rejected=1, texts=texts
            )
        ]
    kept, dropped = claims.own_configurations(pd.DataFrame(rows))
    assert list(dropped["task"]) == ["a"] and list(dropped["label"]) == ["SpecCascade [Token-V2]"]
    token = kept[kept["label"] == "SpecCascade [Token-V2]"]
    assert set(token["task"]) == {"b"} and len(token) == N


# ---- what the clock timed: per task, then pooled, beside the quality rows ---------------------------


def _timed_rows(label, method, rule, alpha, *, task, gamma, wall, modelled=None, quality=None, texts=None):
    """One configuration's rows of `task` at T = 0 (10 items), each with its wall and modelled time."""
    quality = np.ones(10) if quality is None else quality
    rows = config_rows(
        label,
        method,
        rule,
        alpha,
        quality,
        time=wall,
        gamma=gamma,
        temperature=0.0,
        texts=texts,
        rejected=2 if texts else 0,
        accepted=8 if texts else 10,
    )
    modelled = wall if modelled is None else modelled
    return [{**r, "task": task, "modelled_latency_s": modelled} for r in rows]


def _timed_and_swept():
    """Latency rows (SpecDecode at gamma 5, slower on facts and faster on humaneval; Token-V2 at gamma 1)
    and quality rows at gamma 1 only, whose Token-V2 texts differ from the timed ones on 3 facts items and
    whose drafter's on 5 humaneval items."""
    timed, swept = [], []
    for task, slow in (("facts", True), ("humaneval", False)):
        timed += _timed_rows("Verifier", "verifier", None, 0.0, task=task, gamma=5, wall=1.0)
        timed += _timed_rows(
            "SpecDecode",
            "speculative",
            "spec",
            0.0,
            task=task,
            gamma=5,
            wall=2.0 if slow else 0.5,
            modelled=1.8 if slow else 0.4,
        )
        differ = 3 if slow else 0
        timed += _timed_rows(
            "SpecCascade [Token-V2]",
            "speculative",
            "token_v2",
            0.5,
            task=task,
            gamma=1,
            wall=0.9,
            quality=np.r_[np.zeros(differ), np.ones(10 - differ)],
            texts=[f"timed {i}" if i < differ else f"same {i}" for i in range(10)],
        )
        drafter_texts = [f"int8 {i}" if (not slow and i < 5) else f"drafter {i}" for i in range(10)]
        timed += _timed_rows(
            "Drafter", "drafter", None, 0.0, task=task, gamma=5, wall=0.3, texts=drafter_texts
        )
        swept += _timed_rows("Verifier", "verifier", None, 0.0, task=task, gamma=1, wall=1.0)
        swept += _timed_rows("SpecDecode", "speculative", "spec", 0.0, task=task, gamma=1, wall=1.0)
        swept += [
            {**r, "n_rejected": 1, "n_accepted": 9}
            for r in _timed_rows(
                "SpecCascade [Token-V2]",
                "speculative",
                "token_v2",
                0.5,
                task=task,
                gamma=1,
                wall=1.0,
                texts=[f"same {i}" for i in range(10)],
            )
        ]
        swept += _timed_rows(
            "Drafter",
            "drafter",
            None,
            0.0,
            task=task,
            gamma=1,
            wall=1.0,
            texts=[f"drafter {i}" for i in range(10)],
        )
    return pd.DataFrame(timed), pd.DataFrame(swept)


def test_timed_verdicts_come_per_task_then_pooled_with_the_clock_beside_the_model():
    from tutorial_lib.stats import hardware
    from tutorial_lib.stats.analysis import POOLED

    timed, swept = _timed_and_swept()
    table = hardware.timed_verdicts(timed, swept, paths=("int8-dynamic", "bf16"), n_resamples=200)
    assert list(dict.fromkeys(table["task"])) == ["facts", "humaneval", POOLED]
    assert (table["task"] == POOLED).to_numpy().argmax() == 4 and (table["task"] == POOLED).sum() == 2
    spec = table[table["label"] == "SpecDecode"].set_index("task")
    # facts reverses what the pooled verdict says, on the model and on the clock, each beside the other
    assert spec.loc["facts", "modelled"] == pytest.approx(1.8) and spec.loc[
        "facts", "clock"
    ] == pytest.approx(2.0)
    assert spec.loc["facts", ["modelled_verdict", "clock_verdict"]].tolist() == [claims.DOES_NOT_HOLD] * 2
    assert spec.loc["humaneval", ["modelled_verdict", "clock_verdict"]].tolist() == [claims.HOLDS] * 2
    assert spec.loc[POOLED, "modelled"] == pytest.approx(2.2 / 2) and spec.loc[
        POOLED, "clock"
    ] == pytest.approx(1.25)
    assert spec.loc[POOLED, "modelled_low"] <= 1.1 <= spec.loc[POOLED, "modelled_high"]
    assert spec.loc["facts", "claim"] == (
        "SpecDecode (gamma 5, T = 0, int8-dynamic drafter, bf16 verifier) is faster than the verifier at "
        "batch size 1 on facts"
    )
    # no quality configuration at gamma 5: said so, no numbers made up
    assert not spec["same_configuration"].any() and spec["n_differ"].isna().all()
    assert "no configuration at gamma 5" in spec.loc["facts", "agreement"]
    token = table[table["label"] == "SpecCascade [Token-V2]"].set_index("task")
    assert "alpha 0.5" in token.loc["facts", "claim"] and token["same_configuration"].all()
    assert token["n_differ"].tolist() == [3, 0, 3] and token["n_compared"].tolist() == [10, 10, 20]
    assert (
        token.loc[POOLED, "quality_timed_differing"] == 0
        and token.loc[POOLED, "quality_swept_differing"] == 1
    )
    assert (
        token.loc[POOLED, "quality_timed"] == pytest.approx(17 / 20)
        and token.loc[POOLED, "quality_swept"] == 1
    )
    assert token.loc[POOLED, ["rejection_timed", "rejection_swept"]].tolist() == pytest.approx([0.2, 0.1])
    assert table.set_index(["task", "label"])["drafter_n_differ"].xs("SpecDecode", level=1).tolist() == [
        0,
        5,
        5,
    ]
    assert (table["verifier_n_differ"] == 0).all()
    # compared with the quality rows' gamma 1 only when asked, and named as such
    other = hardware.timed_verdicts(timed, swept, other_gamma=True, n_resamples=200)
    spec = other[other["label"] == "SpecDecode"].set_index("task")
    assert spec["n_compared"].tolist() == [10, 10, 20] and not spec["same_configuration"].any()
    assert (
        spec.loc["facts", "agreement"].endswith("compared with gamma 1")
        and "gamma 5, T = 0)" in spec.loc["facts", "claim"]
    )


def test_timed_verdicts_on_the_committed_headline_run_recompute_the_issues_figures():
    """The headline run's latency rows (int8 drafter) against its quality rows (bf16), at T = 0."""
    from tutorial_lib.stats import hardware, pricing, report
    from tutorial_lib.stats.analysis import POOLED

    results = Path(__file__).resolve().parents[1] / "data" / "results"
    quality = pd.DataFrame(rows_file.read_folder_rows(results / report.GEMMA_RUN))
    timed = pricing.price_rows(
        pd.DataFrame(rows_file.read_folder_rows(results / report.GEMMA_LATENCY_RUN)),
        pricing.load_sweep_calibration(results / report.GEMMA_RUN),
    )
    table = hardware.timed_verdicts(timed, quality, paths=("int8-dynamic", "bf16"), other_gamma=True)
    assert list(dict.fromkeys(table["task"])) == ["facts", "humaneval", "arithmetic-300", POOLED]
    # the modelled ratios are those of latency_by_task.csv
    committed = pd.read_csv(results / report.GEMMA_RUN / "latency_by_task.csv").set_index(
        ["task", "label", "gamma"]
    )
    for _, row in table.iterrows():
        kept = committed.loc[(row["task"], row["label"], row["gamma"])]
        assert [row["modelled"], row["modelled_low"], row["modelled_high"]] == pytest.approx(
            [kept["latency"], kept["latency_low"], kept["latency_high"]]
        )
    at = table.set_index(["task", "label", "gamma"])
    facts = at.loc[("facts", "SpecDecode", 5)]
    assert [facts["modelled"], facts["modelled_low"], facts["modelled_high"]] == pytest.approx(
        [1.92, 1.74, 2.09], abs=0.005
    )
    assert (
        facts["clock"] == pytest.approx(2.14, abs=0.005) and facts["modelled_verdict"] == claims.DOES_NOT_HOLD
    )
    pooled = at.loc[(POOLED, "SpecDecode", 5)]
    assert pooled["modelled"] == pytest.approx(0.565, abs=5e-4) and pooled["clock"] == pytest.approx(
        0.605, abs=5e-4
    )
    token = at.loc[(POOLED, "SpecCascade [Token-V2]", 5)]
    assert (token["n_differ"], token["n_compared"], token["drafter_n_differ"]) == (36, 48, 41)
    assert [token["quality_timed"], token["quality_swept"]] == pytest.approx([0.5625, 0.6875])
    assert [token["rejection_timed"], token["rejection_swept"]] == pytest.approx([0.035, 0.020], abs=5e-4)
    assert (
        not token["same_configuration"]
        and at.loc[(POOLED, "SpecCascade [Token-V2]", 1), "same_configuration"]
    )
