"""Calibration: what it measures on a loaded pair, how it is stored, and the nonsense it refuses."""

import math

import pytest

import tutorial_lib as tl
from tutorial_lib.maths import latency
from tutorial_lib import models
from tutorial_lib.decoding.calibration import CALL_KINDS, Calibration
from tutorial_lib.decoding.engine import calibrate

pytestmark = pytest.mark.usefixtures("one_thread")


from test_engine import tiny_pair  # noqa: E402,F401  (the engine tests' tiny llama / T5 pairs)


def test_calibrate_a_tiny_pair(tiny_pair, tmp_path):  # noqa: F811  (the fixture imported above)
    cal = calibrate(tiny_pair, max_k=4, repeats=3, context_tokens=12, overhead_tokens=3, progress=False)
    expected = {
        "drafter_step",
        "drafter_k2",
        "verifier_k1",
        "verifier_k2",
        "verifier_k3",
        "verifier_k4",
        "prefill_drafter",
        "prefill_verifier",
        "overhead",
        "overhead_block",
    }
    if tiny_pair.verifier.is_encoder_decoder:
        expected |= {"encoder_drafter", "encoder_verifier"}
    assert set(cal.samples) == expected
    assert all(len(v) == 3 and all(t >= 0 for t in v) for v in cal.samples.values())
    assert cal.max_k == 4 and cal.repeats == 3 and cal.context_tokens == 12
    assert cal.dtypes == {"drafter": "float32", "verifier": "float32"} and cal.device == "cpu"
    table = cal.table()
    assert list(table["kind"]).count("verifier") == 4 and sorted(table["k"].dropna()) == [1, 2, 3, 4]
    assert (table["median_s"] > 0).all() and (table["q25_s"] <= table["q75_s"]).all()
    # the bound: the bandwidth measured here, each model's bytes and path kept beside its calls
    assert cal.read_bandwidth > 1e8 and set(cal.weight_bytes) == {"drafter", "verifier"}
    assert cal.kernel_paths == {"drafter": "fp32", "verifier": "fp32"}
    bound = cal.weight_bytes["verifier"] / cal.read_bandwidth
    assert cal.bound_s("verifier") == pytest.approx(bound)
    assert cal.call_over_bound("verifier") == pytest.approx(cal.median("verifier_k1") / bound)
    verifier_rows = table[table["kind"] == "verifier"]
    assert (verifier_rows["vs_bound"] == verifier_rows["median_s"] / bound).all()
    # JSON round trip, and the numbers feed the block-cost model
    again = Calibration.load(cal.save(tmp_path / "calibration.json"))
    assert again == cal
    assert again.speedup(0, 0.7) == pytest.approx(1.0)
    assert 0 <= again.best_gamma(0.7) <= 3


def test_the_toy_pair_and_a_pair_given_as_two_models():
    drafter, verifier = models.toy_pair()
    cal = calibrate(
        drafter,
        verifier,
        max_k=2,
        repeats=1,
        context_tokens=4,
        overhead_tokens=0,
        progress=False,
        bandwidth=0,
    )
    assert "overhead" not in cal.samples and cal.overhead_s == 0.0
    assert cal.weight_bytes == {} and math.isnan(
        cal.call_over_bound("verifier")
    )  # a toy has no weights to read
    with pytest.raises(ValueError, match="choose 'drafter' or 'verifier'"):
        cal.bound_s("head")
    assert cal.price("encoder_verifier") == 0.0  # decoder-only: no encoder pass


def test_prices_and_the_textbook_twin():
    cal = Calibration.synthetic(0.01, [0.1, 0.15, 0.2, 0.25], overhead=0.002)
    assert cal.max_k == 4
    assert cal.t_q() == pytest.approx(0.012) and cal.t_q(with_overhead=False) == 0.01
    assert cal.t_p(3) == pytest.approx(0.202) and cal.price("verifier", 3) == pytest.approx(0.2)
    assert cal.t_p(6, with_overhead=False) == pytest.approx(
        0.35
    )  # beyond k = 4: the last slope, 0.05 a token
    assert cal.price("drafter_step") == 0.01 and cal.price("overhead") == 0.002
    assert cal.cost_ratio == pytest.approx(0.012 / 0.102)
    assert cal.time_per_token(2, 0.6) == pytest.approx(
        latency.block_time_per_token(2, 0.6, 0.012, lambda k: cal.t_p(k))
    )
    assert cal.t_q2() is None  # not measured: no catch-up term
    measured = Calibration({**cal.samples, "drafter_k2": [0.016]})
    assert measured.t_q2() == pytest.approx(0.018)
    assert measured.time_per_token(2, 0.6) == pytest.approx(
        (2 * 0.012 + 0.36 * 0.006 + 0.202) / latency.expected_tokens_per_call(0.6, 2)
    )
    assert measured.textbook().t_q2() == measured.t_q()
    flat = cal.textbook()
    assert all(flat.t_p(k) == cal.t_p(1) for k in range(1, 5))
    assert flat.speedup(3, 0.8) == pytest.approx(latency.textbook_speedup(0.8, 3, cal.cost_ratio))
    with pytest.raises(ValueError, match="kind="):
        cal.price("teleport")
    assert set(CALL_KINDS) >= {"drafter_step", "verifier", "encoder_drafter", "overhead"}


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda pair: calibrate(None), ValueError, "loaded drafter/verifier pair"),
        (lambda pair: calibrate("smollm2-135m", "smollm2-135m"), ValueError, "loaded drafter/verifier pair"),
        (lambda pair: calibrate(pair.drafter), ValueError, "loaded drafter/verifier pair"),
        (lambda pair: calibrate(pair, repeats=0), ValueError, "repeats=0"),
        (lambda pair: calibrate(pair, repeats=2.5), ValueError, "repeats=2.5"),
        (lambda pair: calibrate(pair, max_k=0), ValueError, "max_k=0"),
        (lambda pair: calibrate(pair, context_tokens=True), ValueError, "context_tokens=True"),
        (lambda pair: Calibration({"drafter_step": [0.1]}), ValueError, "verifier_k1"),
        (lambda pair: Calibration({"drafter_step": [0.1], "verifier_k1": []}), ValueError, "non-empty"),
        (lambda pair: Calibration.synthetic(0.1, [0.1]).t_p(0), ValueError, "k >= 1"),
    ],
)
def test_calibration_refuses_nonsense(call, error, match):
    with pytest.raises(error, match=match):
        call(models.toy_pair())


def test_a_pair_of_different_vocabularies_is_refused():
    with pytest.raises(ValueError, match="vocabularies differ"):
        calibrate(models.tiny_random_llama(0), models.tiny_random_llama(0, vocab_size=20), progress=False)


def test_calibration_is_exported():
    assert tl.calibrate is calibrate and tl.decoding.calibration.Calibration is Calibration


def test_interleaved_rounds_go_on_until_the_minimum_time_has_passed():
    import time
    from tutorial_lib.decoding.calibration import interleaved_rounds

    def sleeper():
        time.sleep(0.005)
        return 0.005

    started = time.perf_counter()
    samples = interleaved_rounds({"a": sleeper, "b": sleeper}, 5, progress=False, min_seconds=0.25)
    assert time.perf_counter() - started >= 0.25
    assert len(samples["a"]) == len(samples["b"]) > 5  # each round times every kind once
    assert [len(v) for v in interleaved_rounds({"a": sleeper}, 5, progress=False).values()] == [5]
    with pytest.raises(ValueError, match="min_seconds"):
        interleaved_rounds({"a": sleeper}, 5, progress=False, min_seconds=-1)
