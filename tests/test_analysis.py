"""The findings notebooks 06 and 07 state, on tables with known answers, and the figures they draw."""

import numpy as np
import pandas as pd
import pytest

from tutorial_lib.stats import analysis as an
from tutorial_lib.views import reruns as rerun_views

NR = an.NOT_REACHED


def _summary():
    rows = []
    for label, method, rule, points in [
        ("Drafter", "drafter", "-", [(0.0, 0.4, 0.0, 0.3)]),
        ("Verifier", "verifier", "-", [(0.0, 1.0, 1.0, 1.0)]),
        ("SpecDecode", "speculative", "spec", [(0.0, 0.8, 0.5, 0.9)]),
        ("SpecCascade [Chow]", "speculative", "chow", [(0.2, 0.6, 0.2, 0.7), (0.6, 0.7, 0.3, 0.8)]),
    ]:
        for alpha, latency, rejection, quality in points:
            rows.append(
                dict(
                    task="t",
                    label=label,
                    method=method,
                    rule=rule,
                    alpha=alpha,
                    beta="1.0",
                    gamma=1,
                    temperature=1.0,
                    n=4,
                    quality=quality,
                    quality_ci=0.1,
                    latency=latency,
                    latency_calls=latency,
                    rejection_rate=rejection,
                    deferral_rate=0.0,
                    tokens_per_call=1.0,
                )
            )
    return pd.DataFrame(rows)


def test_interval_points_leave_out_the_added_ends():
    summary = an.with_rule_ends(_summary())
    points = an.interval_points(summary)
    assert len(points) == len(_summary()) and "quality_ci" not in points
    assert points.set_index("label").loc["Verifier", "quality"] == "1.000 ± 0.100"


def _latency_rows():
    """Task t: 4 items, the verifier 1 s each, SpecDecode 0.5 s; task u: 2 items, 3 s and 6 s."""
    rows = []
    for task, n, verifier_s, spec_s, quality in (("t", 4, 1.0, 0.5, 1.0), ("u", 2, 3.0, 6.0, 0.0)):
        for i in range(n):
            for label, method, seconds in (
                ("Verifier", "verifier", verifier_s),
                ("SpecDecode", "speculative", spec_s),
            ):
                rows.append(
                    dict(
                        task=task,
                        example_id=f"{task}{i}",
                        label=label,
                        method=method,
                        gamma=1,
                        alpha=0.0,
                        temperature=0.0,
                        wall_time_s=seconds,
                        quality=quality,
                        n_tokens=10,
                        n_verifier_calls=5,
                        n_accepted=4,
                        n_rejected=1,
                    )
                )
    return pd.DataFrame(rows)


def test_latency_view_is_per_task_and_pooled_total_over_total():
    view = an.latency_view(_latency_rows(), n_resamples=200).set_index(["task", "label"])
    assert view.loc[("t", "SpecDecode"), "latency"] == pytest.approx(0.5)
    assert view.loc[("u", "SpecDecode"), "latency"] == pytest.approx(2.0)
    # pooled: (4 x 0.5 + 2 x 6) / (4 x 1 + 2 x 3) = 14 / 10, not the mean of the ratios (1.25)
    pooled = view.loc[(an.POOLED, "SpecDecode")]
    assert pooled["latency"] == pytest.approx(1.4) and pooled["n_items"] == 6
    assert pooled["latency_low"] <= 1.4 <= pooled["latency_high"]
    assert np.isnan(pooled["quality"]) and pooled["quality_metric"] == ""  # metrics are not averaged
    assert view.loc[("t", "SpecDecode"), "quality"] == 1.0
    with pytest.raises(ValueError, match="modelled_latency_s"):
        an.latency_view(_latency_rows(), latency="modelled_latency_s")


def test_qualities_are_keyed_by_task_and_temperature():
    assert an.qualities(_summary(), "verifier") == {"t T=1": 1.0}


def test_latency_and_where_each_wins_figures():
    import matplotlib.pyplot as plt

    view = an.latency_view(_latency_rows(), n_resamples=200)
    fig = rerun_views.latency_figure(view)
    assert len(fig.get_axes()) == 3  # two tasks and the pooled panel
    wins = pd.DataFrame({"Drafter": [1.0, 2.0], "Verifier": [2.0, 1.0]}, index=["a", "b"])
    fig = rerun_views.where_each_wins_figure(wins)
    assert len(fig.get_axes()[0].patches) == 4
    plt.close("all")


def test_each_curve_end_carries_its_own_alpha_and_calls():
    rows = []
    for label, method, rule, alpha, tokens, verifier_calls, drafter_calls, time_s in [
        ("Drafter", "drafter", None, 0.0, 8, 0, 8, 0.8),
        ("Verifier", "verifier", None, 0.0, 10, 10, 0, 5.0),
        ("SpecDecode", "speculative", "spec", 0.0, 10, 10, 10, 4.0),
        ("SpecCascade [Diff]", "speculative", "diff", 0.2, 9, 9, 9, 3.0),
        ("SpecCascade [Token-V3]", "speculative", "token_v3", 0.5, 9, 9, 9, 3.0),
    ]:
        for i in range(3):
            rows.append(
                dict(
                    task="t",
                    example_id=f"x{i}",
                    config=f"{label}|{alpha}",
                    label=label,
                    method=method,
                    rule=rule,
                    alpha=alpha,
                    beta="1.0",
                    gamma=1,
                    temperature=1.0,
                    seed=i,
                    quality=0.5,
                    n_tokens=tokens,
                    n_verifier_calls=verifier_calls,
                    n_drafter_calls=drafter_calls,
                    n_drafted=drafter_calls,
                    n_accepted=drafter_calls,
                    n_rejected=0,
                    deferral_rate=0.0,
                    wall_time_s=time_s,
                    drafter_time_s=0.0,
                    verifier_time_s=0.0,
                )
            )
    summary = an.with_rule_ends(an.summarize(pd.DataFrame(rows)))
    ends = summary[summary["end"] != ""].set_index(["label", "end"])
    spec = summary[summary["label"] == "SpecDecode"].iloc[0]
    diff_drafter, diff_spec = (
        ends.loc[("SpecCascade [Diff]", "drafter")],
        ends.loc[("SpecCascade [Diff]", "spec")],
    )
    assert (diff_drafter["alpha"], diff_spec["alpha"]) == (1.0, -1.0)  # Diff's live range [-1, 1]
    assert ends.loc[("SpecCascade [Token-V3]", "drafter"), "alpha"] == 1.0
    assert ("SpecCascade [Token-V3]", "spec") not in ends.index  # its alpha = 0 is not SpecDecode
    # the drafter end runs speculatively: one drafter and one verifier call per emitted
    # token (3 items x 8 tokens)
    assert (diff_drafter["n_verifier_calls"], diff_drafter["n_drafter_calls"]) == (24, 24)
    assert diff_drafter["time_s"] == pytest.approx(spec["time_s"] / 30 * 24)  # SpecDecode's cost per token
    assert diff_drafter["latency"] == pytest.approx(spec["latency"] * 24 / 30)
    assert diff_drafter["rejection_rate"] == 0.0 and diff_drafter["tokens_per_call"] == 1.0
    assert (
        diff_spec["n_verifier_calls"] == spec["n_verifier_calls"] and diff_spec["latency"] == spec["latency"]
    )


def test_the_verdict_figure_draws_claims_that_are_not_measurable_or_not_reached():
    """Estimates that are NaN (not measurable) or infinite (not reached) do not break the axes."""
    import matplotlib.pyplot as plt
    from tutorial_lib.views import verdicts

    grid = pd.DataFrame(
        [
            {
                "claim": claim,
                "task": "t",
                "temperature": 0.0,
                "verifier_cost": verifier,
                "c": c,
                "point": "",
                "estimate": value,
                "low": value,
                "high": value,
                "verdict": "does not hold",
                "unit": "u",
            }
            for claim, value in (("not measurable", np.nan), ("not reached", -np.inf), ("finite", -0.2))
            for verifier in ("as measured here", "one step per block")
            for c in (0.1, 0.5, 1.0)
        ]
    )
    fig = verdicts.verdict_figure(grid, machine_c=0.5, paper_c=0.078)
    assert len([ax for ax in fig.axes if ax.axison]) == 3
    plt.close("all")


def test_same_calls_and_distinct_runs_count_configurations_at_t0():
    import pandas as pd
    from tutorial_lib.stats import analysis

    rows = pd.DataFrame(
        [
            {
                "config": c,
                "label": label,
                "method": method,
                "alpha": alpha,
                "temperature": 0.0,
                "example_id": e,
                "text": text,
                "verifier_calls_by_k": {"1": calls},
                "drafter_calls_by_k": {},
                "verifier_prefills": 1,
                "drafter_prefills": 0,
                "verifier_encoder_passes": 0,
                "drafter_encoder_passes": 0,
            }
            for c, label, method, alpha, text, calls in [
                ("spec", "SpecDecode", "speculative", 0.0, "a", 3),
                ("diff-1", "SpecCascade [Diff]", "speculative", 0.1, "a", 3),
                ("diff-2", "SpecCascade [Diff]", "speculative", 0.5, "b", 2),
                ("opt-2", "SpecCascade [OPT]", "speculative", 0.5, "b", 2),
                ("drafter", "Drafter", "drafter", 0.0, "c", 0),
            ]
            for e in ("x", "y")
        ]
    )
    assert analysis.same_calls(rows, 0.0) == {"groups": 2, "configurations": 4, "largest": 2}
    assert analysis.distinct_runs(rows, 0.0)["SpecCascade [Diff]"] == 1  # diff-1 is SpecDecode's texts
    assert analysis.same_texts_as(rows, "SpecCascade [OPT]", "SpecCascade [Diff]", 0.0) == {
        "same": 1,
        "shared_alphas": 1,
    }
