"""The drafter's kernel path is chosen by what a generation pays (a prompt's prefill and one-row steps), every
drafter path a candidate, bf16 too without bf16 units; `load_pair(..., dtype="auto")` and
`benchmarks/engine_speed.py` choose the same paths; the processor class is read from cpuinfo."""

import importlib.util
from pathlib import Path

import pytest

from tutorial_lib import models
from tutorial_lib.decoding import speed_runs
from tutorial_lib.models import drafter_paths as dp
from tutorial_lib.models import kernel_paths as kp
from tutorial_lib.models import processor_class as pc

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[1]


def _probe(seconds):
    return kp.PathProbe(seconds=seconds, sample_bytes={path: 1 for path in seconds}, role="drafter")


def test_a_generation_prices_the_prefill_beside_the_steps():
    seconds = {
        "fp32-packed": {1: 0.010, 56: 0.060},
        "bf16": {1: 0.006, 56: 0.900},  # cheap steps, a prefill converting every weight: 0.9 + 56 * 0.006
        "int8-dynamic": {1: 0.008, 56: 0.050},
    }
    chosen = dp.choose_drafter_path(_probe(seconds))
    assert chosen.chosen == "int8-dynamic" and chosen.gamma == 0
    assert dp.generation_cost(seconds["bf16"]) == pytest.approx(0.9 + 56 * 0.006)
    assert "bf16 steps beside a int8-dynamic prefill would cost" in chosen.note
    # with few steps the prefill decides; with many, the step
    assert dp.choose_drafter_path(_probe(seconds), steps=1).chosen == "int8-dynamic"
    assert dp.choose_drafter_path(_probe(seconds), steps=1000).chosen == "bf16"
    # a prefill measured at fewer rows is scaled by rows
    assert dp.generation_cost({1: 0.01, 8: 0.02}, prefill_rows=16, steps=0) == pytest.approx(0.04)
    with pytest.raises(ValueError, match="one-row calls"):
        dp.generation_cost({8: 0.02})


def _fake_probe(model, *, candidates=kp.VERIFIER_PATHS, ks=(1, 2, 4, 6, 8), **_):
    """Timings that make the choice visible: bf16 cheapest everywhere, fp32-gemv next, then the rest."""
    order = {"bf16": 1.0, "fp32-gemv": 2.0, "int8-dynamic": 3.0, "fp32-packed": 4.0, "fp32": 5.0}
    seconds = {path: {k: order[path] * (1 + 0.01 * k) for k in sorted({1, *ks})} for path in candidates}
    return kp.PathProbe(seconds=seconds, sample_bytes={path: 1 for path in candidates})


def _benchmark_module():
    spec = importlib.util.spec_from_file_location(
        "engine_speed_script", REPO / "benchmarks" / "engine_speed.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dtype_auto_and_the_benchmark_choose_the_same_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(kp, "probe_paths", _fake_probe)
    monkeypatch.setattr(kp, "cpu_has_bf16_units", lambda cpuinfo=None: False)
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path / "user"))
    drafter, verifier = models.load_pair("tiny-random-llama:1", "tiny-random-llama:0", dtype="auto")
    # the drafter keeps bf16 where it measures cheaper; the verifier does not without bf16 units
    assert (drafter.kernel_path, verifier.kernel_path) == ("bf16", "fp32-gemv")
    assert drafter.kernel_probe.role == "drafter" and set(drafter.kernel_probe.seconds) == set(
        kp.available_paths(kp.DRAFTER_PATHS)
    )
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path / "benchmark"))  # probed afresh
    bench = _benchmark_module()
    settings = bench.pair_settings(bench.parse_args([]), "float32")
    settings.update(drafter="tiny-random-llama:1", verifier="tiny-random-llama:0")
    bench_drafter, bench_verifier = speed_runs.load_speed_pair(settings)
    assert (bench_drafter.kernel_path, bench_verifier.kernel_path) == ("bf16", "fp32-gemv")


def test_the_drafter_probe_runs_on_a_model(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    pair = models.load_pair("tiny-random-llama:1", "tiny-random-llama:0", kernel_paths=("auto", None))
    probe = pair.drafter.kernel_probe
    assert pair.drafter.kernel_path == probe.chosen in kp.DRAFTER_PATHS
    assert all(set(costs) == {1, dp.DRAFTER_PREFILL_ROWS} for costs in probe.seconds.values())
    assert kp.stored_probe("tiny-random-llama:1 as drafter", 0).chosen == probe.chosen
    assert "prefill of 56 rows" in probe.describe()
    with pytest.raises(ValueError, match="'verifier' or the 'drafter'"):
        kp.put_on_path(pair.verifier, "auto", role="teacher")


@pytest.mark.parametrize(
    "flags, name, bf16",
    [
        ("fpu sse avx avx2 fma", "avx2", False),
        ("avx2 avx512f avx512bw avx512_vnni", "avx512", False),
        ("avx2 avx512f avx512_bf16 amx_bf16 amx_tile", "amx", True),
        ("sse sse2", "other", False),
    ],
)
def test_the_processor_class_is_read_from_cpuinfo(flags, name, bf16):
    info = f"model name\t: Some CPU\nflags\t\t: {flags}\n"
    machine = pc.processor_class(info)
    assert (machine["class"], machine["bf16_units"], machine["model"]) == (name, bf16, "Some CPU")
    assert pc.processor_class("Features\t: fp asimd bf16\n")["class"] == "arm"


@pytest.mark.parametrize(
    "settings, cap",
    [
        ({}, None),
        ({"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}, "avx2"),
        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}, "avx512"),
        ({"ATEN_CPU_CAPABILITY": "default"}, "default"),
    ],
)
def test_a_kernel_cap_is_recorded_beside_the_class(monkeypatch, settings, cap):
    for name in pc.ISA_CAP_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    info = "model name\t: Some CPU\nflags\t\t: avx2 avx512f\n"
    assert pc.isa_cap() == cap
    assert pc.processor_class(info) == {**pc.processor_class(info), "class": "avx512", "isa_capped_to": cap}
