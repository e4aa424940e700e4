"""The evaluation harness and its analysis: the paper's table on curves with known answers, resumable sweeps,
configurations."""

import json

import pandas as pd
import pytest

import tutorial_lib as tl
from tutorial_lib.stats import analysis as an
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import CURVES, T5_CURVES, Task, sweep_configs
from tutorial_lib.sweeps.sweep_folders import ModelRecord, model_identity


# ---- the table on synthetic curves ------------------------------------------------------------------


def _summary(curves, verifier_quality=20.0, task="t", temperature=0.0):
    """A summary table from {label: [(latency, quality, rejection_rate), ...]} plus the verifier point."""
    rows = [
        dict(
            task=task,
            label="Verifier",
            method="verifier",
            rule="-",
            alpha=0.0,
            beta="1.0",
            gamma=5,
            temperature=temperature,
            quality=verifier_quality,
            quality_ci=0.0,
            latency=1.0,
            rejection_rate=1.0,
        )
    ]
    for label, points in curves.items():
        for i, (latency, quality, rejection) in enumerate(points):
            rows.append(
                dict(
                    task=task,
                    label=label,
                    method="speculative",
                    rule="x",
                    alpha=float(i),
                    beta="1.0",
                    gamma=5,
                    temperature=temperature,
                    quality=quality,
                    quality_ci=0.0,
                    latency=latency,
                    rejection_rate=rejection,
                )
            )
    return pd.DataFrame(rows)


def test_table_matched_not_matched_and_crossing():
    summary = _summary(
        {
            # a straight line from (0.4, 10) to (1.2, 30): reaches 20 at latency 0.8; at latency 1 it is at 25
            "matched": [(0.4, 10.0, 0.1), (1.2, 30.0, 0.9)],
            # never reaches 20; best within latency 1 is the point at 0.9
            "not matched": [(0.3, 12.0, 0.1), (0.9, 15.0, 0.5), (1.5, 19.0, 0.9)],
            # goes above 20 and back below: the FIRST crossing counts (between 0.5 and 0.7, at 0.6)
            "crossing": [(0.5, 18.0, 0.1), (0.7, 22.0, 0.3), (0.9, 19.0, 0.5)],
            # already at the verifier's quality at its cheapest point
            "cheap": [(0.25, 21.0, 0.0), (0.5, 20.5, 0.2)],
            # every point slower than the verifier
            "slow": [(1.1, 25.0, 0.5), (1.3, 26.0, 0.6)],
        }
    )
    table = an.paper_table(summary).set_index("method")
    reduction = "latency_reduction_at_verifier_quality"
    best = "best_quality_at_latency<=verifier"
    assert table.loc["matched", reduction] == pytest.approx(0.2)
    assert table.loc["matched", best] == pytest.approx(25.0)
    assert table.loc["not matched", reduction] == an.NOT_REACHED
    assert table.loc["not matched", best] == pytest.approx(15.0 + (1.0 - 0.9) / 0.6 * 4.0)
    assert table.loc["crossing", reduction] == pytest.approx(0.4)
    assert table.loc["crossing", best] == pytest.approx(22.0)
    assert table.loc["cheap", reduction] == pytest.approx(0.75)
    assert table.loc["slow", reduction] == pytest.approx(-0.1)  # matches, but only by being slower
    assert table.loc["slow", best] == an.NOT_REACHED
    assert "Verifier" not in table.index


def test_table_on_rejection_rate():
    summary = _summary({"m": [(0.5, 10.0, 0.0), (0.6, 30.0, 0.4)]})
    table = an.paper_table(summary, x="rejection_rate").set_index("method")
    assert table.loc["m", "rejection_rate_reduction_at_verifier_quality"] == pytest.approx(0.8)
    assert table.loc["m", "best_quality_at_rejection_rate<=verifier"] == pytest.approx(30.0)


def test_crossing_helpers_handle_unsorted_points():
    assert an.crossing_latency([1.2, 0.4], [30.0, 10.0], 20.0) == pytest.approx(0.8)
    assert an.crossing_latency([], [], 1.0) is None
    assert an.best_quality_within([2.0, 3.0], [1.0, 2.0], 1.0) is None


def test_table_needs_the_verifier():
    summary = _summary({"m": [(0.5, 10.0, 0.0)]})
    with pytest.raises(ValueError, match="Verifier"):
        an.paper_table(summary[summary["method"] != "verifier"])


# ---- configurations ---------------------------------------------------------------------------------


def test_every_curve_of_the_paper_is_swept_over_its_range():
    configs = sweep_configs(T5_CURVES, gammas=(3, 5), temperatures=(0.0, 1.0), n_alpha=4)
    labels = {c.label for c in configs}
    assert labels == set(CURVES)
    for c in configs:
        if c.rule in tl.LIVE_ALPHA_RANGES:
            low, high = tl.LIVE_ALPHA_RANGES[c.rule]
            assert low <= c.alpha <= high
    opt = sorted(c.alpha for c in configs if c.rule == "opt" and c.gamma == 5 and c.temperature == 0)
    assert opt[0] == pytest.approx(-1) and opt[-1] == pytest.approx(1) and len(opt) == 4  # OPT's live range
    # plain decoding and the one-call-per-token cascades do not depend on gamma: run once per T
    assert sum(c.label == "Verifier" for c in configs) == 2
    assert sum(c.label == "SeqCascade [Chow]" for c in configs) == 2 * 4
    assert sum(c.label == "SpecCascade [Token-V2]" for c in configs) == 2 * 2 * 4
    assert len({c.key for c in configs}) == len(configs)
    lossy = [c for c in configs if c.label == "Lossy*"]
    assert lossy and all(c.beta == "normalize" for c in lossy)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_alpha=1), "two ends"),
        (dict(gammas=(0,)), "gamma"),
        (dict(temperatures=(-1.0,)), "T = 0"),
    ],
)
def test_bad_sweep_settings_say_what_to_change(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sweep_configs(**kwargs)
    with pytest.raises(ValueError, match="unknown curves"):
        sweep_configs(["Nope"])


# ---- a resumable sweep on the toy world -------------------------------------------------------------


def _exact_word_match(prediction, example):
    return float(prediction.split()[:1] == example["references"][0].split()[:1])


def _toy_task(n=4):
    examples = [
        {"id": f"ex{i}", "prompt": "ka lo" if i % 2 else "mi", "references": ["ka"]} for i in range(n)
    ]
    return Task("toy", _exact_word_match, examples, max_new_tokens=6)


def test_sweep_resumes_without_redoing_rows(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(
        ["Drafter", "Verifier", "SpecCascade [OPT]", "BiLD", "SeqCascade [Chow]"],
        n_alpha=2,
        temperatures=(1.0,),
        gammas=(3,),
    )
    task = _toy_task()
    total = len(configs) * len(task.examples)
    partial = ev.run_sweep(pair, task, configs, name="toy", root=tmp_path, max_rows=7, progress=False)
    assert len(partial) == 7
    sweep_dir = next(tmp_path.iterdir())
    lines_before = (sweep_dir / "rows.jsonl").read_text().splitlines()
    first_rows = [json.loads(line) for line in lines_before]
    full = ev.run_sweep(pair, task, configs, name="toy", root=tmp_path, progress=False)
    lines_after = (sweep_dir / "rows.jsonl").read_text().splitlines()
    assert len(full) == total
    assert len(lines_after) == total and lines_after[:7] == lines_before  # finished rows kept, not redone
    again = ev.run_sweep(pair, task, configs, name="toy", root=tmp_path, progress=False)
    assert len((sweep_dir / "rows.jsonl").read_text().splitlines()) == total  # nothing rerun
    # the same table as one uninterrupted sweep in a fresh folder (seeded rows: identical outputs)
    fresh = ev.run_sweep(pair, task, configs, name="toy", root=tmp_path / "fresh", progress=False)
    columns = ["config", "example_id", "text", "quality", "n_rejected", "n_accepted", "n_verifier_calls"]
    key = ["config", "example_id"]
    pd.testing.assert_frame_equal(
        again[columns].sort_values(key).reset_index(drop=True),
        fresh[columns].sort_values(key).reset_index(drop=True),
    )
    # wall times differ between runs; the table on the rejection-rate axis must not
    table = an.paper_table(an.summarize(again), x="rejection_rate")
    table_fresh = an.paper_table(an.summarize(fresh), x="rejection_rate")
    pd.testing.assert_frame_equal(table, table_fresh)
    config = json.loads((sweep_dir / "config.json").read_text())
    assert config["hash"] in sweep_dir.name and config["tasks"]["toy"] == task.fingerprint()
    assert first_rows[0]["config"] == configs[0].key


def test_a_cut_off_last_line_is_redone(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter"], n_alpha=2, temperatures=(1.0,))
    task = _toy_task(3)
    ev.run_sweep(pair, task, configs, name="cut", root=tmp_path, progress=False)
    rows_file = next(tmp_path.iterdir()) / "rows.jsonl"
    text = rows_file.read_text()
    rows_file.write_text(text[: len(text) - 20])  # an interruption in the middle of writing a row
    with pytest.warns(UserWarning, match="cut short"):
        table = ev.run_sweep(pair, task, configs, name="cut", root=tmp_path, progress=False)
    assert len(table) == 3 and sorted(table["example_id"]) == ["ex0", "ex1", "ex2"]
    assert (rows_file.parent / "rows.jsonl.corrupt").read_text() == text[
        len(text) - len(text.splitlines()[-1]) - 1 : -20
    ] + "\n"


def test_a_last_row_without_its_newline_is_kept_not_redone(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter"], n_alpha=2, temperatures=(1.0,))
    ev.run_sweep(pair, _toy_task(3), configs, name="nl", root=tmp_path, progress=False)
    rows_file = next(tmp_path.iterdir()) / "rows.jsonl"
    text = rows_file.read_text()
    rows_file.write_text(text.rstrip("\n"))  # the final newline lost
    table = ev.run_sweep(pair, _toy_task(4), configs, name="nl", root=tmp_path, progress=False)
    assert len(table) == 4
    assert rows_file.read_text().splitlines()[:3] == text.splitlines()  # kept, and only ex3 was added


def test_a_malformed_row_stops_the_sweep_with_the_line_to_repair(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter"], n_alpha=2, temperatures=(1.0,))
    ev.run_sweep(pair, _toy_task(3), configs, name="bad", root=tmp_path, progress=False)
    rows_file = next(tmp_path.iterdir()) / "rows.jsonl"
    lines = rows_file.read_text().splitlines()
    rows_file.write_text("\n".join([lines[0], "42", *lines[1:]]) + "\n")
    with pytest.raises(
        ValueError, match=r"rows.jsonl, line 2 is JSON but not an object.*delete or fix line 2"
    ):
        ev.run_sweep(pair, _toy_task(3), configs, name="bad", root=tmp_path, progress=False)
    assert tl.sweeps.rows_file.set_aside_bad_lines(rows_file) == 1
    assert len(ev.run_sweep(pair, _toy_task(3), configs, name="bad", root=tmp_path, progress=False)) == 3


def test_rows_are_keyed_by_task_too(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter"], n_alpha=2, temperatures=(1.0,))
    first, second = _toy_task(2), Task("other", _exact_word_match, _toy_task(2).examples, max_new_tokens=3)
    rows = ev.run_sweep(pair, [first, second], configs, name="two", root=tmp_path, progress=False)
    assert len(rows) == 4 and sorted(set(rows["task"])) == ["other", "toy"]  # same example ids, both kept


def test_saved_rows_reload_without_the_models(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter", "Verifier"], temperatures=(1.0,))
    rows = ev.run_sweep(pair, _toy_task(3), configs, name="saved", root=tmp_path, progress=False)
    records = tuple(ModelRecord(**model_identity(m), install="make toy") for m in pair)
    again = ev.run_sweep(records, _toy_task(3), configs, name="saved", root=tmp_path, progress=False)
    pd.testing.assert_frame_equal(rows, again)
    with pytest.raises(ev.MissingRowsError, match="3 of the 9 requested rows are not saved.*make toy"):
        ev.run_sweep(
            records,
            _toy_task(3),
            configs + sweep_configs(["SpecDecode"], temperatures=(1.0,)),
            name="saved",
            root=tmp_path,
            progress=False,
        )


def test_a_sweep_returns_only_the_configurations_asked_for(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    both = sweep_configs(["Drafter", "Verifier"], temperatures=(1.0,))
    ev.run_sweep(pair, _toy_task(2), both, name="sub", root=tmp_path, progress=False)
    only = ev.run_sweep(pair, _toy_task(2), both[:1], name="sub", root=tmp_path, progress=False)
    assert set(only["label"]) == {"Drafter"} and len(only) == 2


def test_a_different_configuration_gets_its_own_folder(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter"], n_alpha=2, temperatures=(1.0,))
    ev.run_sweep(pair, _toy_task(2), configs, name="run", root=tmp_path, progress=False)
    ev.run_sweep(pair, _toy_task(2), configs, name="run", root=tmp_path, seed=5, progress=False)
    assert len(list(tmp_path.iterdir())) == 2


def test_summary_points(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(
        ["Drafter", "Verifier", "SpecDecode", "SpecCascade [Chow]"],
        n_alpha=2,
        temperatures=(1.0,),
        gammas=(2,),
    )
    rows = ev.run_sweep(pair, _toy_task(6), configs, name="sum", root=tmp_path, progress=False)
    summary = an.summarize(rows).set_index("label")
    assert summary.loc["Verifier", "latency"] == pytest.approx(1.0)
    assert summary.loc["Verifier", "rejection_rate"] == 1.0
    assert summary.loc["Drafter", "rejection_rate"] == 0.0
    spec = summary.loc["SpecDecode"]
    assert 0.0 <= spec["rejection_rate"] <= 1.0
    assert spec["n_rejected"] == rows.loc[rows["label"] == "SpecDecode", "n_rejected"].sum()
    assert (summary["quality_ci"] >= 0).all() and (summary["n"] == 6).all()
    # the Chow rule at its drafter end (alpha = 1) never defers
    chow = rows[(rows["label"] == "SpecCascade [Chow]") & (rows["alpha"] == 1.0)]
    assert (chow["deferral_rate"] == 0).all()


def test_task_checks():
    with pytest.raises(ValueError, match="no examples"):
        Task("empty", "bleu", [])
    with pytest.raises(ValueError, match="unique"):
        Task("dup", "bleu", [{"id": "a", "prompt": "x", "references": []}] * 2)


def test_quality_by_group_shows_where_each_model_wins():
    task = Task(
        "t",
        "bleu",
        [
            {"id": f"e{i}", "prompt": "x", "references": ["y"], "info": {"context": g}}
            for i, g in enumerate("aabb")
        ],
    )
    rows = pd.DataFrame(
        [
            dict(task="t", example_id=f"e{i}", label=label, alpha=0.0, temperature=0.0, quality=q)
            for label, qualities in {"Drafter": [10, 20, 0, 0], "Verifier": [5, 5, 50, 30]}.items()
            for i, q in enumerate(qualities)
        ]
    )
    table = an.quality_by_group(rows, task)
    assert table.loc["a", "Drafter"] == 15 and table.loc["a", "Verifier"] == 5
    assert table.loc["b", "Verifier"] == 40 and list(table["n"]) == [2, 2]


def test_rule_ends_come_from_the_drafter_and_specdecode_points():
    rows = [
        dict(
            task="t",
            label=label,
            method=method,
            rule=rule,
            alpha=0.3,
            beta="1.0",
            gamma=1,
            temperature=1.0,
            quality=q,
            quality_ci=0.0,
            latency=1.0,
            rejection_rate=r,
        )
        for label, method, rule, q, r in [
            ("Drafter", "drafter", "-", 1.0, 0.0),
            ("Verifier", "verifier", "-", 3.0, 1.0),
            ("SpecDecode", "speculative", "spec", 3.0, 0.4),
            ("SpecCascade [Chow]", "speculative", "chow", 2.5, 0.2),
            ("SpecCascade [Token-V3]", "speculative", "token_v3", 3.2, 0.5),
        ]
    ]
    extended = an.with_rule_ends(pd.DataFrame(rows))
    chow = extended[extended["label"] == "SpecCascade [Chow]"].set_index("end")
    assert list(chow.index) == ["", "drafter", "spec"]
    assert chow.loc["drafter", "rejection_rate"] == 0.0 and chow.loc["spec", "quality"] == 3.0
    token_v3 = extended[extended["label"] == "SpecCascade [Token-V3]"]
    assert sorted(token_v3["end"]) == ["", "drafter"]  # its alpha = 0 end is not SpecDecode
    table = an.paper_table(extended, x="rejection_rate").set_index("method")
    # Chow: from (0, 1.0) to (0.2, 2.5) to (0.4, 3.0): reaches 3.0 only at r = 0.4
    assert table.loc["SpecCascade [Chow]", "rejection_rate_reduction_at_verifier_quality"] == pytest.approx(
        0.6
    )


def test_call_based_latency(tmp_path, one_thread):
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter", "Verifier", "SpecDecode"], temperatures=(1.0,), gammas=(3,))
    rows = ev.run_sweep(pair, _toy_task(4), configs, name="calls", root=tmp_path, progress=False)
    summary = an.summarize(rows, cost_ratio=0.5).set_index("label")
    assert summary.loc["Verifier", "latency_calls"] == pytest.approx(1.0)
    drafter = rows[rows["label"] == "Drafter"]
    verifier = rows[rows["label"] == "Verifier"]
    assert summary.loc["Drafter", "latency_calls"] == pytest.approx(
        0.5 * drafter["n_drafter_calls"].sum() / verifier["n_verifier_calls"].sum()
    )
    with pytest.raises(ValueError, match="cost_ratio"):
        an.summarize(rows, cost_ratio=-1)


def test_a_sweep_that_fails_at_its_first_row_leaves_no_folder(tmp_path):
    def failing(prediction, example):
        raise RuntimeError("metric failed")

    pair = tl.load_pair("toy-drafter", "toy-verifier")
    task = Task("toy", failing, [{"id": "a", "prompt": "mi", "references": ["x"]}], max_new_tokens=2)
    with pytest.raises(RuntimeError, match="metric failed"):
        ev.run_sweep(pair, task, sweep_configs(["Drafter"]), name="fails", root=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []
