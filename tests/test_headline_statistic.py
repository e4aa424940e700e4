"""The headline statistic (`claims.headline`): finite statistics with known answers on constructed rows, and
the committed headline run's per-task table."""

import numpy as np
import pandas as pd
import pytest

from tutorial_lib.stats import claims, intervals, report
from tutorial_lib.stats.claims import headline, headline_reading
from tutorial_lib.stats.paired import item_scores
from sweep_rows import config_rows

N = 40
VERIFIER = (np.arange(N) < 28).astype(float)  # 0.7
DRAFTER = (np.arange(N) < 14).astype(float)  # 0.35
TOKEN = (np.arange(N) < 20).astype(float)  # 0.5
TOKEN_V2, TOKEN_V1, TOKEN_V3 = "SpecCascade [Token-V2]", "SpecCascade [Token-V1]", "SpecCascade [Token-V3]"
CHOW, DIFF, OPT = "SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]"
NUMBERS = ["estimate", "low", "high", "token_value", "token_low", "token_high", "other_value"]


def _rows(*configs, temperature=1.0, spec_quality=VERIFIER, spec_texts=None):
    """Verifier, drafter and SpecDecode (rejection rate 0.3) and `configs`: (label, rule, alpha, quality,
    rejected of 10[, texts])."""
    rows = (
        config_rows("Verifier", "verifier", None, 0.0, VERIFIER, temperature=temperature)
        + config_rows(
            "Drafter", "drafter", None, 0.0, DRAFTER, rejected=0, accepted=0, temperature=temperature
        )
        + config_rows(
            "SpecDecode",
            "speculative",
            "spec",
            0.0,
            spec_quality,
            rejected=3,
            accepted=7,
            temperature=temperature,
            texts=spec_texts,
        )
    )
    for label, rule, alpha, quality, rejected, *texts in configs:
        rows += config_rows(
            label,
            "speculative",
            rule,
            alpha,
            quality,
            rejected=rejected,
            accepted=10 - rejected,
            temperature=temperature,
            texts=texts[0] if texts else None,
        )
    return pd.DataFrame(rows)


def _row(table, statistic, fraction=None, temperature=1.0):
    part = table[(table["statistic"] == statistic) & (table["temperature"] == temperature)]
    if fraction is not None:
        part = part[np.isclose(part["fraction"], fraction)]
    assert len(part) == 1
    return part.iloc[0]


def test_each_curve_has_its_drafter_and_spec_end_and_known_values():
    rows = _rows(
        (TOKEN_V2, "token_v2", 0.5, TOKEN, 1),
        (TOKEN_V3, "token_v3", 0.5, TOKEN, 1),
        (CHOW, "chow", 0.5, DRAFTER, 1),
    )
    (scores,) = item_scores(rows)
    boot = headline.HeadlineBootstrap(scores)
    assert boot.ends[TOKEN_V2] == ["drafter", "spec"] and boot.ends[CHOW] == ["drafter", "spec"]
    assert boot.ends[TOKEN_V3] == ["drafter"]  # no SpecDecode end: its alpha 0 is not SpecDecode's law
    table = headline.headline_table(rows, n_resamples=200)
    # Token-V2: (0, 0.35), (0.1, 0.5), (0.3, 0.7), joined by lines; SpecDecode's rate 0.3
    expected = {0.25: 0.35 + 0.75 * 0.15, 0.5: 0.5 + 0.25 * 0.2, 0.75: 0.5 + 0.625 * 0.2}
    for fraction, quality in expected.items():
        row = _row(table, headline.VS_VERIFIER, fraction)
        assert row["token_curve"] == TOKEN_V2
        assert row["estimate"] == pytest.approx(quality - 0.7)
        # constant rates and a deterministic curve: the interval is the quality's alone
        assert row["low"] <= row["estimate"] <= row["high"]
    # within 0.02 of 0.7 at 0.1 + 0.9 x 0.2 = 0.28, i.e. 0.28 / 0.3 of SpecDecode's rate
    rate = _row(table, headline.RATE_VS_SPEC)
    assert rate["token_value"] == pytest.approx(0.28 / 0.3) and rate["estimate"] == pytest.approx(
        1 - 0.28 / 0.3
    )
    # Chow's own point has the drafter's quality: only its line to its SpecDecode end gets within the margin
    other = _row(table, headline.RATE_VS_OTHERS)
    assert other["other_curve"] == CHOW and other["estimate"] > 0


def test_no_estimate_or_bound_is_infinite_when_no_rule_reaches_the_verifier():
    low = (np.arange(N) < 16).astype(float)  # 0.4: SpecDecode's own run falls short of the verifier too
    rows = _rows(
        (TOKEN_V2, "token_v2", 0.5, DRAFTER, 1),
        (TOKEN_V3, "token_v3", 0.5, low, 2),
        (CHOW, "chow", 0.5, DRAFTER, 1),
        spec_quality=low,
    )
    table = headline.headline_table(rows, n_resamples=200)
    measured = table[table["statistic"] != headline.IDENTITY]
    assert len(measured) == 8
    assert np.isfinite(measured[NUMBERS].to_numpy(float)).all()
    for statistic in (headline.RATE_VS_SPEC, headline.RATE_VS_OTHERS):
        row = _row(table, statistic)
        assert row["token_value"] == 1.0 and headline.NEVER_WITHIN in row["detail"]
    # a measured miss gets a measured verdict, never "by construction"
    assert _row(table, headline.RATE_VS_SPEC)["verdict"] == claims.DOES_NOT_HOLD
    assert _row(table, headline.VS_VERIFIER, 0.5)["verdict"] == claims.DOES_NOT_HOLD
    assert not (measured["verdict"] == claims.BY_CONSTRUCTION).any()


def test_the_best_of_a_group_is_chosen_again_in_every_resample():
    first = (np.arange(N) < 21).astype(float)  # 0.525, on items 0..20
    second = (np.arange(N) >= 20).astype(float)  # 0.5, on items 20..39: the two swap ranks across resamples
    rows = _rows(
        (TOKEN_V1, "token_v1", 0.5, first, 1),
        (TOKEN_V2, "token_v2", 0.5, second, 1),
        (CHOW, "chow", 0.5, DRAFTER, 1),
    )
    table = headline.headline_table(rows, n_resamples=300, seed=3)
    row = _row(table, headline.VS_VERIFIER, 0.25)
    assert row["token_curve"] == TOKEN_V1 and 0.2 < row["token_chosen_share"] < 0.9
    # the interval is the percentile interval of max(V1, V2) - verifier on the same resamples (the table
    # orders the items by id)
    (scores,) = item_scores(rows.sort_values("example_id", kind="stable").drop(columns="seed"))
    boot = headline.HeadlineBootstrap(scores)
    point, values = intervals.resample_items(boot.statistic, scores.n, n_resamples=300, seed=3)
    both = np.stack([values[boot.index(label)] for label in (TOKEN_V1, TOKEN_V2)])
    assert (both[0] > both[1]).any() and (both[1] > both[0]).any()
    low, high = intervals.percentile_interval(both.max(0) - values[0])
    assert (row["low"], row["high"]) == pytest.approx((low, high))
    # not the interval of the full-sample winner alone
    alone = intervals.percentile_interval(both[0] - values[0])
    assert (row["low"], row["high"]) != pytest.approx(alone)


def _greedy_rows(opt_texts):
    diff_texts = [f"diff {i}" for i in range(N)]
    spec_texts = [f"verifier {i}" for i in range(N)]
    rows = _rows(
        (DIFF, "diff", 0.08, DRAFTER, 1, diff_texts),
        (OPT, "opt", 0.08, DRAFTER, 1, opt_texts(diff_texts)),
        (TOKEN_V2, "token_v2", 0.5, TOKEN, 1),
        temperature=0.0,
        spec_texts=spec_texts,
    )
    verifier = rows["label"] == "Verifier"
    rows.loc[verifier, "text"] = spec_texts
    return rows


def test_a_design_identity_is_by_construction_only_when_the_texts_are_equal():
    same = headline.headline_table(_greedy_rows(list), n_resamples=200)
    identities = same[same["statistic"] == headline.IDENTITY].set_index("token_curve")
    assert (
        identities.loc[OPT, "verdict"] == claims.BY_CONSTRUCTION
        and "0 differ" in identities.loc[OPT, "detail"]
    )
    assert identities.loc["SpecDecode", "verdict"] == claims.BY_CONSTRUCTION
    assert OPT not in _row(same, headline.VS_OTHERS, 0.5, 0.0)["other_group"]  # a copy leaves its group

    def one_differs(texts):
        return ["another text"] + texts[1:]

    differ = headline.headline_table(_greedy_rows(one_differs), n_resamples=200)
    row = differ[(differ["statistic"] == headline.IDENTITY) & (differ["token_curve"] == OPT)].iloc[0]
    assert row["verdict"] != claims.BY_CONSTRUCTION and "does not hold on the rows" in row["detail"]
    assert OPT in _row(differ, headline.VS_OTHERS, 0.5, 0.0)["other_group"]
    # at T = 0 the greedy verifier is the verifier: (d) repeats (a); no floor is measured
    row = _row(same, headline.VS_VERIFIER, 0.5, 0.0)
    assert row["vs_greedy_estimate"] == pytest.approx(row["estimate"])
    assert np.isnan(row["noise_floor"]) and row["noise_floor_from"].startswith("by construction")


def test_a_claim_within_its_own_noise_floor():
    rows = _rows((TOKEN_V2, "token_v2", 0.5, TOKEN, 1), (CHOW, "chow", 0.5, DRAFTER, 1))
    references = rows[rows["label"].isin(["Verifier", "SpecDecode"])]
    # the same draws again: a floor of exactly 0, so any nonzero estimate is beyond it
    table = headline.headline_table(rows, second_seed=references.copy(), n_resamples=200)
    row = _row(table, headline.VS_VERIFIER, 0.5)
    assert (row["noise_floor"], row["noise_floor_low"], row["noise_floor_high"]) == (0.0, 0.0, 0.0)
    assert row["against_floor"] == claims.BEYOND_FLOOR
    # a second seed set whose verifier scores 0.55 instead of 0.7: the floor's interval spans the estimate
    again = references.copy()
    verifier = again["label"] == "Verifier"
    again.loc[verifier, "quality"] = ((np.arange(N) % 2 == 0) | (np.arange(N) < 4)).astype(float)
    table = headline.headline_table(rows, second_seed=again, n_resamples=200)
    row = _row(table, headline.VS_VERIFIER, 0.5)
    assert abs(row["estimate"]) <= max(abs(row["noise_floor_low"]), abs(row["noise_floor_high"]))
    assert row["against_floor"] == claims.WITHIN_FLOOR and row["verdict"] != claims.BY_CONSTRUCTION


def test_the_summary_verdicts():
    def cells(*verdicts):
        return [
            {
                "task": "t",
                "statistic": statistic,
                "temperature": 1.0,
                "fraction": 0.5,
                "estimate": 0.1,
                "low": 0.0,
                "high": 0.2,
                "verdict": v,
            }
            for statistic in (
                headline.VS_OTHERS,
                headline.VS_VERIFIER,
                headline.RATE_VS_OTHERS,
                headline.RATE_VS_SPEC,
            )
            for v in verdicts
        ]

    for verdicts, expected in (
        ((claims.HOLDS, claims.HOLDS), claims.HOLDS),
        ((claims.HOLDS, claims.NOT_RESOLVED), headline_reading.PARTLY),
        ((claims.NOT_RESOLVED, claims.DOES_NOT_HOLD), claims.DOES_NOT_HOLD),
    ):
        summary = headline_reading.headline_summary(pd.DataFrame(cells(*verdicts)))
        assert (summary["verdict"] == expected).all()


def test_the_committed_headline_run_per_task_is_finite_and_reproduces_humaneval():
    rows, second = headline_reading.headline_rows()
    table = headline.headline_table(rows, second_seed=second, n_resamples=200)
    measured = table[table["statistic"] != headline.IDENTITY]
    assert len(measured) == 3 * 2 * 8
    assert np.isfinite(measured[NUMBERS].to_numpy(float)).all()
    identities = table[table["statistic"] == headline.IDENTITY]
    assert len(identities) == 3 * 4 and (identities["verdict"] == claims.BY_CONSTRUCTION).all()
    humaneval = measured[measured["task"] == "humaneval"]
    row = _row(humaneval, headline.VS_VERIFIER, 0.5)
    assert row["token_curve"] == TOKEN_V2 and row["estimate"] == pytest.approx(0.116, abs=0.002)
    assert row["low"] > 0 and row["verdict"] == claims.HOLDS
    assert _row(humaneval, headline.VS_OTHERS, 0.5)["estimate"] == pytest.approx(0.116, abs=0.002)
    quoted = headline_reading.headline_cell(table, "humaneval", 1.0, headline.VS_VERIFIER, 0.5)
    assert quoted.startswith("+0.11") and quoted.split("], ")[1].startswith(claims.HOLDS)
    with pytest.raises(ValueError, match="cells of the headline table match"):
        headline_reading.headline_cell(table, "humaneval", 1.0, headline.VS_VERIFIER)  # three fractions
    assert headline_reading.HEADLINE_RUN == report.GEMMA_RUN  # the run notebook 07 redraws
    summary = headline_reading.headline_summary(table)
    assert len(summary) == 3 * len(headline_reading.SUMMARY_CLAIMS)
    assert set(summary["verdict"]) <= {claims.HOLDS, headline_reading.PARTLY, claims.DOES_NOT_HOLD}
