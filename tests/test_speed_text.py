"""The speed benchmarks' tables (`decoding.speed_text`): each aim judged from the numbers, a missing run
named, and where speculation pays as the batch grows."""
import json
from pathlib import Path

from tutorial_lib.decoding import speed_text

ROOT = Path(__file__).resolve().parents[1]


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


def test_batch_speed_table_reads_runs_without_a_peak_memory(tmp_path):
    result = json.loads((ROOT / "data" / "benchmarks" / "batch_speed_qwen_cpu.json").read_text())
    for run in result["runs"]:
        run.pop("peak_rss_mib", None)
    path = tmp_path / "batch_speed_qwen_cpu.json"
    path.write_text(json.dumps(result))
    rows = [line for line in speed_text.batch_speed_table(path).splitlines() if line.startswith("| 1 |")]
    assert rows and all(line.endswith("| not recorded |") for line in rows)
