"""The findings notebooks 06 and 07 state, on tables with known answers, and the figures they draw."""
import math

import numpy as np
import pandas as pd
import pytest

from tutorial_lib import analysis as an
from tutorial_lib import evaluation as ev
from tutorial_lib import rerun_figures

NR = an.NOT_REACHED


def _t5_table(x="latency"):
    """Verifier quality 20 at T = 0; four methods with known reductions and bests."""
    rows = [  # method, reduction at the verifier's quality, best within its cost, best at any cost
        ("SpecDecode", 0.10, 20.0, 20.0),
        ("SpecCascade [Token-V2]", 0.30, 22.0, 23.0),
        ("SpecCascade [OPT]", 0.20, 21.0, 21.0),
        ("Drafter", NR, 12.0, 12.0),
        ("BiLD", -0.05, NR, 20.5),   # reaches it only by being slower
    ]
    return pd.DataFrame([{
        "task": "mt", "temperature": 0.0, "gamma": 5, "method": m, "verifier_quality": 20.0,
        f"{x}_reduction_at_verifier_quality": r, f"best_quality_at_{x}<=verifier": b,
        "best_minus_verifier": np.nan if b == NR else b - 20.0, "best_quality_any": any_}
        for m, r, b, any_ in rows])


def test_t5_findings_read_the_tables():
    table, calls = _t5_table(), _t5_table("latency_calls")
    calls.loc[calls["method"] == "SpecCascade [OPT]", "best_minus_verifier"] = 5.0   # best in calls: OPT
    findings = an.t5_findings(table, calls, gamma=5)
    f = findings["mt T=0"]
    assert f["verifier_quality"] == 20.0
    assert f["beat_verifier_within_its_latency"] == ["SpecCascade [Token-V2]", "SpecCascade [OPT]"]
    assert f["fastest_to_verifier_quality"] == ["SpecCascade [Token-V2]", "SpecCascade [OPT]", "SpecDecode"]
    assert f["never_reached_verifier_quality"] == ["Drafter"]
    assert f["beat_verifier_within_its_cost_in_calls"] == ["SpecCascade [OPT]", "SpecCascade [Token-V2]"]
    assert f["above_verifier_quality_at_any_cost"] == {"SpecCascade [Token-V2]": 23.0, "SpecCascade [OPT]": 21.0,
                                                       "BiLD": 20.5}
    assert an.t5_findings(table, calls, gamma=3) == {}   # nothing ran at that gamma
    text = an.describe_t5_findings(findings, table, gamma=5, cost_ratio=0.1)
    assert "fastest to the verifier's quality: SpecCascade [Token-V2] (+30%), SpecCascade [OPT] (+20%)" in text
    assert "never reached it: Drafter" in text and "(c = 0.1)" in text
    assert an.fastest_to_verifier_quality(table, temperature=0.0, gamma=5) == "SpecCascade [Token-V2]"
    assert an.fastest_to_verifier_quality(table, temperature=1.0, gamma=5) is None


def test_best_quality_any_is_the_best_point_of_each_curve():
    summary = pd.DataFrame([dict(task="mt", temperature=0.0, gamma=5, label="A", quality=q) for q in (1.0, 3.0, 2.0)])
    table = pd.DataFrame([dict(task="mt", temperature=0.0, gamma=5, method="A"),
                          dict(task="mt", temperature=0.0, gamma=5, method="B")])
    out = an.add_best_quality_any(table, summary)
    assert out.loc[0, "best_quality_any"] == 3.0 and np.isnan(out.loc[1, "best_quality_any"])
    assert "best_quality_any" not in table   # the input is left as it was


def _gemma_table(token_best, prefix_best, reductions):
    rows = []
    for method in an.TOKEN_RULES + an.PREFIX_RULES + ["SpecDecode", "SpecDecode [Lossy]"]:
        best = token_best if method in an.TOKEN_RULES else prefix_best if method in an.PREFIX_RULES else 0.5
        rows.append({"task": "facts", "temperature": 1.0, "gamma": 1, "method": method, "verifier_quality": 0.6,
                     "rejection_rate_reduction_at_verifier_quality": reductions.get(method, NR),
                     "best_quality_at_rejection_rate<=verifier": best})
    return pd.DataFrame(rows)


def test_gemma_findings_token_rules_and_opt():
    table = _gemma_table(0.7, 0.65, {"SpecCascade [Token-V2]": 0.4, "SpecCascade [OPT]": 0.3,
                                     "SpecCascade [Chow]": 0.1, "SpecDecode": 0.0})
    f = an.gemma_findings(table)["facts T=1"]
    assert f["token_best_quality"] is True and f["best_token"] == 0.7 and f["best_prefix"] == 0.65
    assert f["lowest_rejection_at_verifier_quality"] == "SpecCascade [Token-V2]"
    assert f["opt_beats_chow_and_diff"] is True   # Diff never reached it: no comparison against it
    assert f["reductions"]["SpecCascade [Diff]"] is None
    worse = an.gemma_findings(_gemma_table(0.6, 0.65, {"SpecCascade [Chow]": 0.5, "SpecCascade [OPT]": 0.3}))
    assert worse["facts T=1"]["token_best_quality"] is False
    assert worse["facts T=1"]["opt_beats_chow_and_diff"] is False
    only_token = _gemma_table(0.7, NR, {})
    assert an.gemma_findings(only_token)["facts T=1"]["token_best_quality"] is None   # nothing to compare with
    text = an.describe_gemma_findings(an.gemma_findings(table))
    assert "Token rules reach the best quality in 1 of 1 (task, T) cases" in text


def _summary():
    rows = []
    for label, method, rule, points in [
            ("Drafter", "drafter", "-", [(0.0, 0.4, 0.0, 0.3)]), ("Verifier", "verifier", "-", [(0.0, 1.0, 1.0, 1.0)]),
            ("SpecDecode", "speculative", "spec", [(0.0, 0.8, 0.5, 0.9)]),
            ("SpecCascade [Chow]", "speculative", "chow", [(0.2, 0.6, 0.2, 0.7), (0.6, 0.7, 0.3, 0.8)])]:
        for alpha, latency, rejection, quality in points:
            rows.append(dict(task="t", label=label, method=method, rule=rule, alpha=alpha, beta="1.0", gamma=1,
                             temperature=1.0, n=4, quality=quality, quality_ci=0.1, latency=latency,
                             latency_calls=latency, rejection_rate=rejection, deferral_rate=0.0,
                             tokens_per_call=1.0))
    return pd.DataFrame(rows)


def test_interval_points_leave_out_the_added_ends():
    summary = an.with_rule_ends(_summary())
    points = an.interval_points(summary)
    assert len(points) == len(_summary()) and "quality_ci" not in points
    assert points.set_index("label").loc["Verifier", "quality"] == "1.000 ± 0.100"


def test_latency_view_averages_over_tasks():
    summary = pd.concat([_summary(), _summary().assign(task="u", latency=lambda d: d["latency"] * 3)])
    view = an.latency_view(summary).set_index(["label", "alpha"])
    assert view.loc[("SpecDecode", 0.0), "latency"] == pytest.approx(1.6)
    assert view.loc[("Verifier", 0.0), "quality"] == pytest.approx(1.0)


def test_qualities_are_keyed_by_task_and_temperature():
    assert an.qualities(_summary(), "verifier") == {"t T=1": 1.0}


def test_figures_put_the_legend_in_its_own_panel():
    import matplotlib.pyplot as plt
    summary = an.with_rule_ends(_summary())
    fig = rerun_figures.t5_figure(summary, task="t", temperature=1.0, gamma=1, quality_label="BLEU")
    axes = fig.get_axes()
    assert len(axes) == 4 and not axes[-1].axison
    assert all(ax.get_legend() is None for ax in axes[:3])
    legend = [t.get_text() for t in axes[-1].get_legend().get_texts()]
    assert {"Drafter", "Verifier", "SpecDecode", "SpecCascade [Chow]", "verifier quality"} <= set(legend)
    assert [ax.get_xlabel() for ax in axes[:3]] == ["latency (verifier = 1)", "cost in calls (verifier = 1)",
                                                    "rejection rate"]
    tasks = [ev.Task("t", "qa_em", [{"id": "a", "prompt": "x", "references": ["y"]}])]
    fig = rerun_figures.gemma_figure(summary, tasks=tasks, temperature=1.0, labels=ev.GEMMA_CURVES)
    axes = fig.get_axes()
    assert len(axes) == 2 and axes[0].get_title() == "t" and axes[0].get_ylabel() == "qa_em"
    assert axes[-1].get_legend() is not None
    view = an.latency_view(_summary())
    fig = rerun_figures.latency_figure(view)
    assert len(fig.get_axes()[0].collections) == view.groupby(["label", "gamma"]).ngroups
    wins = pd.DataFrame({"Drafter": [1.0, 2.0], "Verifier": [2.0, 1.0]}, index=["a", "b"])
    fig = rerun_figures.where_each_wins_figure(wins)
    assert len(fig.get_axes()[0].patches) == 4
    plt.close("all")
    with pytest.raises(ValueError, match="nothing to plot"):
        rerun_figures.plot_curves(summary, task="nope")
    assert math.isclose(summary.loc[summary["label"] == "Verifier", "quality"].iloc[0], 1.0)


def test_each_curve_end_carries_its_own_alpha_and_calls():
    rows = []
    for label, method, rule, alpha, tokens, verifier_calls, drafter_calls, time_s in [
            ("Drafter", "drafter", None, 0.0, 8, 0, 8, 0.8), ("Verifier", "verifier", None, 0.0, 10, 10, 0, 5.0),
            ("SpecDecode", "speculative", "spec", 0.0, 10, 10, 10, 4.0),
            ("SpecCascade [Diff]", "speculative", "diff", 0.2, 9, 9, 9, 3.0),
            ("SpecCascade [Token-V3]", "speculative", "token_v3", 0.5, 9, 9, 9, 3.0)]:
        for i in range(3):
            rows.append(dict(task="t", example_id=f"x{i}", config=f"{label}|{alpha}", label=label, method=method,
                             rule=rule, alpha=alpha, beta="1.0", gamma=1, temperature=1.0, seed=i, quality=0.5,
                             n_tokens=tokens, n_verifier_calls=verifier_calls, n_drafter_calls=drafter_calls,
                             n_drafted=drafter_calls, n_accepted=drafter_calls, n_rejected=0, deferral_rate=0.0,
                             wall_time_s=time_s, drafter_time_s=0.0, verifier_time_s=0.0))
    summary = an.with_rule_ends(an.summarize(pd.DataFrame(rows)))
    ends = summary[summary["end"] != ""].set_index(["label", "end"])
    spec = summary[summary["label"] == "SpecDecode"].iloc[0]
    diff_drafter, diff_spec = ends.loc[("SpecCascade [Diff]", "drafter")], ends.loc[("SpecCascade [Diff]", "spec")]
    assert (diff_drafter["alpha"], diff_spec["alpha"]) == (1.0, -1.0)        # Diff's live range [-1, 1]
    assert ends.loc[("SpecCascade [Token-V3]", "drafter"), "alpha"] == 1.0
    assert ("SpecCascade [Token-V3]", "spec") not in ends.index              # its alpha = 0 is not SpecDecode
    # the drafter end runs speculatively: one drafter and one verifier call per emitted token (3 items x 8 tokens)
    assert (diff_drafter["n_verifier_calls"], diff_drafter["n_drafter_calls"]) == (24, 24)
    assert diff_drafter["time_s"] == pytest.approx(spec["time_s"] / 30 * 24)  # SpecDecode's cost per token
    assert diff_drafter["latency"] == pytest.approx(spec["latency"] * 24 / 30)
    assert diff_drafter["rejection_rate"] == 0.0 and diff_drafter["tokens_per_call"] == 1.0
    assert diff_spec["n_verifier_calls"] == spec["n_verifier_calls"] and diff_spec["latency"] == spec["latency"]
