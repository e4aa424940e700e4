"""Numbers in prose come from the results: every README region re-rendered from the committed result
files must equal the README's text, and a changed result must make the check fail."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tutorial_lib.stats import report
from tutorial_lib.stats import analysis, learned_deferral
from tutorial_lib.decoding import speed_tables as speed_text
from tutorial_lib.lessons import notebook
from tutorial_lib.sweeps import evaluation

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILES = ("claims.csv", "signed_error.csv", "latency_by_task.csv", "flip_points.csv", "facts.json",
                "answer_lengths.csv", "paired_differences.csv", "summary.csv", "quality_by_context.csv", "table.csv",
                "table_accelerator.csv")


def test_the_readme_quotes_the_committed_results():
    text = (ROOT / "README.md").read_text()
    rendered = report.render(ROOT)
    assert report.rewrite(text, rendered) == text, (
        "README.md's result regions differ from the committed results: run python -m tutorial_lib.stats.report --write")
    # every region is filled (an empty region would match an empty rendering)
    assert all(body.strip() for body in rendered.values())


def _copy_results(tmp_path: Path) -> Path:
    for run in (report.T5_RUN, report.GEMMA_EARLIER_RUN):
        target = tmp_path / "data" / "results" / run
        target.mkdir(parents=True)
        for name in RESULT_FILES:
            source = ROOT / "data" / "results" / run / name
            if source.exists():
                shutil.copy(source, target / name)
    # the Gemma-style run whole: its progress region counts its rows and sessions
    shutil.copytree(ROOT / "data" / "results" / report.GEMMA_RUN, tmp_path / "data" / "results" / report.GEMMA_RUN)
    shutil.copytree(ROOT / "data" / "benchmarks", tmp_path / "data" / "benchmarks")  # the benchmark regions
    shutil.copy(ROOT / "data" / "results" / "rules-in-engines.metrics.json", tmp_path / "data" / "results")  # notebook 10's
    return tmp_path


def test_a_changed_result_no_longer_matches_the_readme(tmp_path):
    root = _copy_results(tmp_path)
    text = (ROOT / "README.md").read_text()
    assert report.rewrite(text, report.render(root)) == text
    claims_path = root / "data" / "results" / report.GEMMA_RUN / "claims.csv"
    claims = pd.read_csv(claims_path)
    finite = claims["estimate"].abs() < float("inf")
    claims.loc[finite.idxmax(), "estimate"] += 0.0123
    claims.to_csv(claims_path, index=False)
    changed = report.render(root)
    assert report.rewrite(text, changed) != text
    # both tables quote it: the claims and the claims set beside the earlier run's
    assert changed["gemma-claims"] != report.render(ROOT)["gemma-claims"]
    assert changed["gemma-claims-compared"] != report.render(ROOT)["gemma-claims-compared"]


def test_a_changed_earlier_verdict_changes_the_comparison(tmp_path):
    root = _copy_results(tmp_path)
    path = root / "data" / "results" / report.GEMMA_EARLIER_RUN / "claims.csv"
    earlier = pd.read_csv(path)
    before = report.render(root)["gemma-claims-compared"]
    earlier["verdict"] = "holds"
    earlier.to_csv(path, index=False)
    after = report.render(root)["gemma-claims-compared"]
    assert after != before and "| yes |" in after


def test_regions_and_renderers_must_match():
    with pytest.raises(ValueError, match="have no renderer"):
        report.rewrite("<!-- results:nowhere -->\nx\n<!-- /results:nowhere -->\n", {})
    with pytest.raises(ValueError, match="are not in the README"):
        report.rewrite("no regions here", {"t5-claims": "text"})


def testnotebook_times_table_takes_each_notebooks_newest_run(tmp_path):
    path = tmp_path / "notebook_times.jsonl"
    path.write_text('{"notebook": "00_quickstart", "seconds": 30, "load": "1.0 1.0 1.0", "finished": "2026-12-01 10:00", "beside": ""}\n'
                    '{"notebook": "00_quickstart", "seconds": 12, "load": "0.5 0.6 0.7", "finished": "2026-12-02 10:00", "beside": "make test"}\n')
    table = notebook.notebook_times_table(path)
    assert "| 00_quickstart | nothing | 12 |  | 0.5 0.6 0.7 | 2026-12-02 10:00 |" in table and "| 30 |" not in table
    assert "Beside: make test." in table and "Slowest cells" not in table     # no cell times: no verdict
    assert "No timed run" in notebook.notebook_times_table(tmp_path / "missing.jsonl")
    with path.open("a") as f:
        f.write('{"notebook": "09_speed", "seconds": 200, "slowest_cell_s": 151.0, "load": "1 1 1", "finished": "x"}\n'
                '{"notebook": "00_quickstart", "seconds": 12, "slowest_cell_s": 3.5, "load": "1 1 1", "finished": "y"}\n')
    table = notebook.notebook_times_table(path)
    assert "| 09_speed | SmolLM2-135M | 200 | 151.0 |" in table and "| 3.5 |" in table
    assert "a quarter of the runner's 600-s cell limit: 09_speed above it." in table


def _engine_result(auto_over_best: float, first_block_s: float) -> dict:
    from tutorial_lib.decoding.calibration import Calibration
    calibration = Calibration.synthetic(0.1, [0.3, 0.5, 0.6, 0.7])
    ratio = lambda m: {"median": m, "q25": m - 0.02, "q75": m + 0.02, "min": m - 0.05, "max": m + 0.05, "n": 6}  # noqa: E731
    row = dict(dtype="float32", median_seconds=10.0, speedup=1.0, speedup_q25=0.9, speedup_q75=1.1, n_runs=6,
               same_tokens=6, acceptance=float("nan"), tokens_per_call=1.0, expected_speedup=float("nan"),
               textbook_speedup=float("nan"), measured_over_expected=float("nan"), time_vs_hf_greedy=1.0)
    return {"pair": ["q", "p"], "device": "cpu", "torch": "2", "elapsed_s": 100.0,
            "args": {"prompts": 3, "rounds": 2, "max_new_tokens": 48, "beside_heavy_job": True},
            "table": [dict(row, method="ours verifier-only"), dict(row, method="ours gamma=auto")],
            "calibration": {"float32": calibration.to_dict()},
            "checks": {"float32": {"best_fixed": "ours spec gamma=5", "auto_time_over_best_fixed": ratio(auto_over_best),
                                   "hf_default_time_over_auto": ratio(1.1), "min_measured_over_expected": 0.95,
                                   "auto_gammas": {"5": 10, "0": 2},
                                   "first_auto_block": {"seconds": first_block_s, "calibration_s": 5.0},
                                   "auto_learned_costs": [{"gamma": 5, "calibration_s": 0.9, "measured_mean_s": 1.0,
                                                           "blocks_timed": 10, "estimate_s": 0.98}]}}}


def test_engine_speed_text_judges_each_aim_from_the_numbers_and_names_a_missing_run():
    good = speed_text.engine_speed_text(_engine_result(1.02, 12.0))
    assert "median 1.020 [q25 1.000, q75 1.040], n = 6: PASS (aim <= 1.05)" in good
    assert "12.0 s (its quick calibration 5.0 s): PASS (aim <= 30 s)" in good
    assert "beside it: a heavy job" in good and "gamma = 0: 2, gamma = 5: 10" in good
    assert "gamma = 5: 900 ms -> 1000 ms x 10 -> 980 ms" in good
    bad = speed_text.engine_speed_text(_engine_result(1.08, 31.0), heading=False)
    assert "n = 6: FAIL (aim <= 1.05)" in bad and "FAIL (aim <= 30 s)" in bad and not bad.startswith("#")

    import json
    path = ROOT / "data" / "benchmarks" / "engine_speed_cpu.json"
    region = speed_text.engine_speed_region({"Quiet": (path, "python benchmarks/engine_speed.py"),
                                             "Busy": (path.with_name("absent.json"), "python make_it.py --busy")})
    assert region.startswith("**Quiet** (`data/benchmarks/engine_speed_cpu.json`):")
    assert speed_text.engine_speed_text(json.loads(path.read_text()), heading=False) in region
    assert "*Busy: no committed run (absent.json; `python make_it.py --busy`).*" in region


def test_batch_speed_table_says_where_speculation_pays(tmp_path):
    import json
    runs = [{"batch_size": b, "gamma": g, "tokens_per_s": tps, "predicted_tokens_per_s": pred, "peak_rss_mib": 100}
            for b, g, tps, pred in [(1, 0, 10, 10), (1, 3, 14, 13), (1, 0, 11, 10), (1, 3, 10.5, 13),
                                    (8, 0, 50, 60), (8, 3, 40, 55), (8, 0, 52, 60), (8, 3, 41, 55)]]
    path = tmp_path / "batch_speed_x_cpu.json"
    path.write_text(json.dumps({"drafter": "q", "verifier": "p", "dtype": "float32", "device": "cpu", "torch_threads": 2,
                                "max_new_tokens": 8, "repeats": 2, "runs": runs}))
    table = speed_text.batch_speed_table(path)
    assert "| 1 | 3 | 12.2 [10.5, 14.0] | 13.0 | 0.94 | 100 |" in table
    assert "gamma = 3: measured at B = 1 (every round: none); predicted at B = 1." in table
    assert "No committed run" in speed_text.batch_speed_table(tmp_path / "missing.json")


def test_rerun_progress_counts_saved_rows_and_session_time(tmp_path):
    import json
    folder = tmp_path / "gemma-x"
    assert "Not started" in evaluation.rerun_progress_text(folder, "python go.py")
    folder.mkdir()
    rows = [{"task": task, "config": f"c{i}", "example_id": f"e{j}", "quality": 1.0}
            for task, n in (("code", 2), ("facts", 1)) for i in range(2) for j in range(n)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert evaluation.rerun_progress_text(folder, "python go.py").startswith("**In progress**: 6 rows saved; the session")
    session = {"seconds": 1800.0, "cpu_seconds": 3600.0, "configurations": 2, "items": {"code": 4, "facts": 1}}
    (folder / "sessions.jsonl").write_text(json.dumps(session) + "\n" + json.dumps(session) + "\n")
    text = evaluation.rerun_progress_text(folder, "python go.py")
    assert text.startswith("**In progress**: 6 of 10 rows saved (60%; code 4 of 8, facts 2 of 2) in 2 sessions")
    assert "1.00 h wall time in all (2.00 h of CPU time" in text and "`python go.py`" in text
    (folder / "rows.process-1.jsonl").write_text("".join(
        json.dumps({"task": "code", "config": f"c{i}", "example_id": f"e{j}", "quality": 0.0}) + "\n"
        for i in range(2) for j in (2, 3)))
    assert evaluation.rerun_progress_text(folder, "python go.py").startswith("**Finished**: 10 of 10 rows")


def test_batch_speed_table_reads_runs_without_a_peak_memory(tmp_path):
    result = json.loads((ROOT / "data" / "benchmarks" / "batch_speed_qwen_cpu.json").read_text())
    for run in result["runs"]:
        run.pop("peak_rss_mib", None)
    path = tmp_path / "batch_speed_qwen_cpu.json"
    path.write_text(json.dumps(result))
    rows = [line for line in speed_text.batch_speed_table(path).splitlines() if line.startswith("| 1 |")]
    assert rows and all(line.endswith("| not recorded |") for line in rows)


def test_rerun_progress_says_each_sessions_share_of_the_machine_and_the_aim(tmp_path):
    folder = tmp_path / "gemma-x"
    folder.mkdir()
    rows = [{"task": "code", "config": f"c{i}", "example_id": f"e{j}", "quality": 1.0} for i in range(2) for j in range(2)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sessions = [{"seconds": 3600.0, "cpu_seconds": 3600.0, "threads": 2, "rows_before": 0, "rows_after": 1,
                 "configurations": 2, "items": {"code": 2}},
                {"seconds": 7200.0, "cpu_seconds": 14400.0, "threads": 2, "rows_before": 1, "rows_after": 4,
                 "configurations": 2, "items": {"code": 2}}]
    (folder / "sessions.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions))
    text = evaluation.rerun_progress_text(folder, "python go.py", aim_hours=2.5)
    assert text.startswith("**Finished**: 4 of 4 rows")
    assert "Per session: 1 rows in 1.00 h (CPU over wall 1.00 with 2 threads); 3 rows in 2.00 h (CPU over wall 2.00" in text
    assert text.rstrip().endswith("over the aim of 2.5 h by 0.50 h.")
    assert evaluation.rerun_progress_text(folder, "python go.py", aim_hours=3).rstrip().endswith("within the aim of 3 h.")
    assert "Per session" not in evaluation.rerun_progress_text(folder, "python go.py")


def test_flip_sentences_read_as_sentences_for_every_verdict():
    flips = pd.DataFrame([
        {"claim": "A", "task": "t", "temperature": 0.0, "gamma": 5, "verifier_cost": "as measured here",
         "verdict_below": verdict, "verdict_above": verdict, "c_below": float("nan"), "c_above": float("nan")}
        for verdict in ("holds", "does not hold", "not resolved at this sample size", "not measurable here")])
    flips["claim"] = ["A", "B", "C", "D"]
    text = report._flips(flips, {"c": 0.7, "paper_c": 0.078, "paper_c_source": "estimate", "grid_resamples": 400})
    assert "it holds at every c" in text and "it does not hold at every c" in text
    assert "it is not resolved at this sample size at every c" in text and "it is not measurable here at every c" in text
    changed = flips.iloc[[0]].assign(verdict_above="does not hold", c_below=0.05, c_above=0.09)
    assert "it turns from holds to does not hold between c = 0.05 and 0.09" in report._flips(changed, {
        "c": 0.7, "paper_c": 0.078, "paper_c_source": "estimate", "grid_resamples": 400})


def test_t5_findings_follow_the_committed_tables(tmp_path):
    folder = tmp_path / "t5"
    shutil.copytree(report.ROOT / "data" / "results" / report.T5_RUN, folder,
                    ignore=shutil.ignore_patterns("rows.jsonl"))
    text = analysis.t5_findings_text(folder)
    table = pd.read_csv(folder / "table.csv")
    verifier = pd.read_csv(folder / "summary.csv").query("temperature == 0 and label == 'Verifier'").iloc[0]
    assert f"corpus BLEU of the verifier {verifier['quality']:.1f}" in text
    # a method priced faster at the verifier's quality is named with its interval; none faster, none named
    faster = pd.to_numeric(table["reduction_at_verifier_quality"], errors="coerce") > 0
    for method in table.loc[faster & (table["temperature"] == 0), "method"]:
        assert f"{method} reaches the verifier's quality at" in text
    table.loc[faster, "reduction_at_verifier_quality"] = "not reached"
    table.to_csv(folder / "table.csv", index=False)
    assert "No method reaches the verifier's quality at a lower modelled latency." in analysis.t5_findings_text(folder)


def test_rules_in_engines_paragraphs_follow_notebook_10s_saved_comparison(tmp_path):
    path = ROOT / "data" / "results" / "rules-in-engines.metrics.json"
    comparison = json.loads(path.read_text())
    text = learned_deferral.rules_in_engines_text(path)
    assert f"all {comparison['answers']} offline answers" in text
    assert f"SpecDecode rejects {comparison['spec_rejection']:.4f} of drafts" in text
    for rule, row in comparison["mixture_minus_rule"].items():
        mean = float(row["area"][0])
        assert f"{learned_deferral.RULE_NAMES[rule]} {mean:+.5f}" in text
    # a rule whose interval moves above 0 is said to beat the constant weight; the learned rule's verdicts follow
    changed = json.loads(json.dumps(comparison))
    changed["mixture_minus_rule"]["chow"]["area"] = [0.001, 0.0005, 0.002]
    changed["learned"]["versus"]["token_v2"]["area"] = [-0.001, -0.002, -0.0005]
    other = tmp_path / "rules-in-engines.metrics.json"
    other.write_text(json.dumps(changed))
    redrawn = learned_deferral.rules_in_engines_text(other)
    assert "Chow +0.00100 [+0.00050, +0.00200]" in redrawn
    unresolved = [r for r, row in changed["mixture_minus_rule"].items() if float(row["area"][1]) <= 0 <= float(row["area"][2])]
    assert ("does not resolve" in redrawn or "do not resolve" in redrawn) == bool(unresolved)
    assert "**it beats Token-V2**" in redrawn


# ---- result files are checked against their stamp before they are shown ---------------------------

def _stamped_t5_copy(tmp_path: Path, monkeypatch) -> Path:
    """The committed T5 run's result files and stamp in tmp_path, with the stamp of their inputs taken as
    matching (the rows are not copied) and the computation barred: a read-back is all that may happen."""
    committed = ROOT / "data" / "results" / report.T5_RUN
    folder = tmp_path / report.T5_RUN
    folder.mkdir()
    for name in (*report.T5_RESULT_FILES, report.RESULTS_STAMP):
        shutil.copy(committed / name, folder / name)
    kept = json.loads((committed / report.RESULTS_STAMP).read_text())["t5_results"]
    monkeypatch.setattr(report, "results_stamp", lambda *args, **kwargs: kept)
    from tutorial_lib.stats import claims

    def barred(*args, **kwargs):
        raise AssertionError("the result files were computed again")
    monkeypatch.setattr(claims, "t5_claims", barred)
    return folder


def _write_t5(folder, **options):
    from types import SimpleNamespace
    return report.write_t5_results(pd.DataFrame({"wall_time_s": [0.0]}), [], folder,
                                   SimpleNamespace(to_dict=dict), **options)


def test_the_committed_t5_stamp_records_the_hashes_of_its_result_files():
    folder = ROOT / "data" / "results" / report.T5_RUN
    stamp = json.loads((folder / report.RESULTS_STAMP).read_text())
    assert set(stamp["files"]) == set(report.T5_RESULT_FILES) and stamp["t5_results"]
    report.check_result_files(folder, report.T5_RESULT_FILES)


def test_a_flipped_verdict_in_claims_csv_is_refused_on_read_back(tmp_path, monkeypatch):
    folder = _stamped_t5_copy(tmp_path, monkeypatch)
    committed = pd.read_csv(ROOT / "data" / "results" / report.T5_RUN / "claims.csv")
    pd.testing.assert_frame_equal(_write_t5(folder)["claims"], committed)   # untouched: read back
    text = (folder / "claims.csv").read_text()
    assert ",does not hold," in text
    (folder / "claims.csv").write_text(text.replace(",does not hold,", ",holds,", 1))
    with pytest.raises(report.ResultFilesChanged) as refused:
        _write_t5(folder)
    message = str(refused.value)
    assert "claims.csv: recorded sha256" in message and "recompute=True" in message
    assert "git checkout" in message
    for name in report.T5_RESULT_FILES[1:]:
        assert f"{name}:" not in message   # only the changed file is named
    assert ",holds," in (folder / "claims.csv").read_text()   # refused, not recomputed over


def test_missing_result_files_or_hashes_are_refused_not_recomputed(tmp_path, monkeypatch):
    folder = _stamped_t5_copy(tmp_path, monkeypatch)
    (folder / "flip_points.csv").unlink()
    with pytest.raises(report.ResultFilesChanged, match=r"flip_points.csv: missing"):
        _write_t5(folder)
    stamp = json.loads((folder / report.RESULTS_STAMP).read_text())
    (folder / report.RESULTS_STAMP).write_text(json.dumps({"t5_results": stamp["t5_results"]}))
    with pytest.raises(report.ResultFilesChanged, match="records no hashes"):
        _write_t5(folder)


def test_written_t5_results_are_stamped_with_hashes_and_recomputed_only_when_asked(tmp_path, monkeypatch):
    from tutorial_lib.stats import claims, hardware, pricing
    calls = []

    def table(name):
        def computed(*args, **kwargs):
            calls.append(name)
            return pd.DataFrame({"claim": ["A"], "verdict": ["holds"]})
        return computed
    monkeypatch.setattr(claims, "t5_claims", table("claims"))
    monkeypatch.setattr(pricing, "signed_error", table("signed_error"))
    monkeypatch.setattr(hardware, "machine_c", lambda calibration: 0.5)
    monkeypatch.setattr(hardware, "verdict_grid", table("grid"))
    monkeypatch.setattr(hardware, "flip_points", table("flips"))
    monkeypatch.setattr(report, "write_t5_facts",
                        lambda rows, folder, *args, **kwargs: (folder / "facts.json").write_text("{}"))
    monkeypatch.setattr(report, "results_stamp", lambda *args, **kwargs: "inputs")
    _write_t5(tmp_path)
    assert calls == ["claims", "signed_error", "grid", "flips"]
    stamp = json.loads((tmp_path / report.RESULTS_STAMP).read_text())
    assert stamp["t5_results"] == "inputs" and set(stamp["files"]) == set(report.T5_RESULT_FILES)
    assert _write_t5(tmp_path)["claims"]["verdict"].tolist() == ["holds"] and len(calls) == 4   # read back
    (tmp_path / "facts.json").write_text('{"c": 0.01}')
    with pytest.raises(report.ResultFilesChanged, match=r"facts.json: recorded sha256"):
        _write_t5(tmp_path)
    _write_t5(tmp_path, recompute=True)
    assert len(calls) == 8 and (tmp_path / "facts.json").read_text() == "{}"
    report.check_result_files(tmp_path, report.T5_RESULT_FILES)
