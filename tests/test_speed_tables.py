"""The engine benchmark's aims are judged from the numbers of its JSON, and the roofline's floors."""

import dataclasses
import math

import pytest

from tutorial_lib.decoding import speed_tables
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.models import kernel_paths

AUTO, GREEDY, PLAIN, ASSISTED = "ours auto", "HF greedy", "HF greedy fp32", "HF assisted"


def _result(
    auto_s, *, block=(0.1, 0.1, 0.1, 0.105, 0.11, 0.11), first_block_s=12.0, with_plain=True, t_q=0.02
):
    calibration = Calibration.synthetic(t_q, list(block))
    calibration = dataclasses.replace(
        calibration, read_bandwidth=1e9, weight_bytes={"drafter": 2e7, "verifier": 8e7}
    )  # bound 80 ms: t_p(1) = 100 ms is 1.25x
    seconds = {GREEDY: 10.0, PLAIN: 20.0, ASSISTED: 4.0, AUTO: auto_s}
    runs = [
        {"dtype": "float32", "method": m, "round": r, "prompt": p, "seconds": s * (1 + 0.01 * r)}
        for m, s in seconds.items()
        if with_plain or m != PLAIN
        for r in range(3)
        for p in ("a", "b")
    ]
    methods = {
        "auto": AUTO,
        "hf_greedy": GREEDY,
        "hf_greedy_fp32": PLAIN if with_plain else None,
        "hf_assisted": ASSISTED,
    }
    checks = {"methods": methods, "first_auto_block": {"seconds": first_block_s}}
    return {
        "runs": runs,
        "checks": {"float32": checks},
        "calibration": {"float32": calibration.to_dict()},
        "table": [],
    }


def _verdicts(result):
    return speed_tables.engine_speed_aims(result).set_index("aim")["verdict"].to_dict()


def test_each_aim_is_judged_from_the_numbers():
    aims = list(speed_tables.AIMS)
    good = _verdicts(_result(2.5))  # 10/2.5 = 4x greedy, 8x fp32, 1.6x assisted, c = 0.2
    assert all(good[a] == "PASS" for a in aims), good
    slow_result = _result(7.0, block=(0.13, 0.2, 0.2, 0.2, 0.2, 0.2), first_block_s=31.0, t_q=0.05)
    slow = _verdicts(slow_result)
    assert all(slow[a] == "FAIL" for a in aims), slow
    slow_result["checks"]["float32"].update(
        kernel_paths={"drafter": "int8-dynamic", "verifier": "fp32-packed"}, peak_flops=1e11
    )
    limits = speed_tables.aim_limits(slow_result)  # the physics or kernel behind each miss, in numbers
    assert any(s.startswith("block of k") and "W / B = 80 ms" in s for s in limits), limits
    assert any(s.startswith("drafter's step") and "0.25 of the verifier's bytes" in s for s in limits)
    table = speed_tables.engine_speed_aims(_result(2.5)).set_index("aim")
    row = table.loc["HF greedy (same path) time / auto time"]
    assert row["median"] == pytest.approx(4.0) and row["n"] == 6 and row["aim is"] == ">= 2"
    assert table.loc["verifier's call / its bandwidth bound", "median"] == pytest.approx(0.1 / 0.08)


def test_an_aim_without_numbers_reads_not_run():
    verdicts = _verdicts(_result(2.5, with_plain=False))
    assert verdicts["HF greedy (fp32 as loaded) time / auto time"] == "not run"
    result = _result(2.5)
    result["calibration"]["float32"]["read_bandwidth"] = 0.0
    assert _verdicts(result)["verifier's call / its bandwidth bound"] == "not run"


def test_pairwise_ratio_refuses_methods_that_never_ran_together():
    import pandas as pd

    runs = pd.DataFrame(_result(2.5)["runs"])
    assert speed_tables.pairwise_ratio(runs, GREEDY, AUTO)["median"] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="no \\(round, prompt\\)"):
        speed_tables.pairwise_ratio(runs, GREEDY, "nothing")


def test_the_roofline_has_its_ridge_where_reading_and_arithmetic_meet():
    line = kernel_paths.roofline_seconds(4e9, 1e9, 20e9, 100e9, [1, 2, 8, 16, 32])
    assert line["memory_s"] == [0.2] * 5
    assert line["ridge_k"] == pytest.approx(10.0)  # 100e9 * 4 / (2 * 20e9)
    assert line["compute_s"][0] == pytest.approx(0.02) and line["roofline_s"][-1] == pytest.approx(0.64)
    assert all(r == max(m, c) for r, m, c in zip(line["roofline_s"], line["memory_s"], line["compute_s"]))
    assert kernel_paths.measure_peak_flops(size=256, repeats=1) > 1e8
    assert math.isfinite(kernel_paths.measure_read_bandwidth(megabytes=64, repeats=1))


def test_the_committed_runs_are_one_per_processor_class():
    from tutorial_lib.paths import DATA_DIR

    table = speed_tables.processor_classes(DATA_DIR / "benchmarks", "avx512")
    assert {"avx2", "avx512", "amx"} <= set(table["class"])
    by_file = table.set_index("file")
    assert by_file.loc["engine_speed_cpu_avx512.json", "yours"] == "<- yours"
    assert (table.loc[table["class"] == "amx", "yours"] == "").all()
    assert by_file.loc["engine_speed_cpu_amx.json", "bf16 units"]
    assert not by_file.loc["engine_speed_cpu_avx512.json", "bf16 units"]
    # the AMD EPYC's only run was beside a heavy job; a quiet run of a class comes before its busy one
    assert "engine_speed_cpu_avx2_busy.json" in by_file.index
    amx = table.loc[table["class"] == "amx", "file"].tolist()
    assert amx == ["engine_speed_cpu_amx.json", "engine_speed_cpu_amx_busy.json"]
    mine = speed_tables.processor_classes(DATA_DIR / "benchmarks", "arm").set_index("class")
    assert mine.loc["arm", "yours"].startswith("<- yours (no committed run)")
