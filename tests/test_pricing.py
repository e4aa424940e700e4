"""Pricing rows from their counted calls: exact on synthetic calibrations, equal for equal calls,
intervals over items, the check against wall time, and a sweep's stored calibration."""

import json

import numpy as np
import pandas as pd
import pytest

from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Config, Example, Task
from tutorial_lib.sweeps.sweep_folders import ModelRecord
from tutorial_lib import models
from tutorial_lib.stats import pricing
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.engine import generate

pytestmark = pytest.mark.usefixtures("one_thread")

# t_q(k) = 0.01 + 0.004 (k - 1), t_p(k) = 0.1 + 0.03 (k - 1): straight lines, so a call's price is
# (calls x intercept) + (tokens fed x slope), which the sessions' feed logs count independently.
T_Q, DQ, T_P, DP, OVERHEAD, BLOCK = 0.01, 0.004, 0.1, 0.03, 0.002, 0.0005
# each rule's target computation per block: SpecDecode's at the gamma overhead_block was measured at
# (max_k - 1 = 3) is inside BLOCK; Chow's at gamma 1 and 4 cost more
# (Diff and OPT given one cost, so that rows with the same calls get the same price)
TARGETS = {
    "target_spec@g3": 0.0002,
    "target_spec@g1": 0.0001,
    "target_chow@g1": 0.0004,
    "target_chow@g4": 0.0009,
    "target_diff@g3": 0.0006,
    "target_opt@g3": 0.0006,
}
PREFILL = {"drafter": 0.05, "verifier": 0.7}
ENCODER = {"drafter": 0.02, "verifier": 0.3}


def linear_calibration(max_k=4):
    return Calibration.synthetic(
        T_Q,
        [T_P + DP * (k - 1) for k in range(1, max_k + 1)],
        overhead=OVERHEAD,
        others={
            "drafter_k2": T_Q + DQ,
            "overhead_block": BLOCK,
            **TARGETS,
            **{f"prefill_{m}": s for m, s in PREFILL.items()},
            **{f"encoder_{m}": s for m, s in ENCODER.items()},
        },
    )


def counted_row(**counts):
    row = {
        "config": "c",
        "example_id": "x",
        "drafter_calls_by_k": [],
        "verifier_calls_by_k": [],
        "drafter_prefills": 0,
        "verifier_prefills": 0,
        "drafter_encoder_passes": 0,
        "verifier_encoder_passes": 0,
    }
    return {**row, **counts}


def test_a_synthetic_calibration_is_reproduced_exactly():
    cal = linear_calibration(max_k=4)
    row = counted_row(
        drafter_calls_by_k=[7, 2],
        verifier_calls_by_k=[1, 0, 0, 3, 0, 1],
        drafter_prefills=1,
        verifier_prefills=1,
        verifier_encoder_passes=2,
    )
    expected = (
        1 * (0.05 + OVERHEAD)
        + 7 * (T_Q + OVERHEAD)
        + 2 * (T_Q + DQ + OVERHEAD)
        + 1 * (0.7 + OVERHEAD)
        + 2 * 0.3
        + 1 * (T_P + OVERHEAD)
        + 3 * (T_P + 3 * DP + OVERHEAD)
        + 1 * (T_P + 5 * DP + OVERHEAD)
    )  # k = 6 > max_k: the measured line goes on
    assert pricing.row_latency(row, cal) == pytest.approx(expected, rel=1e-12)
    # accelerator: every call one step of its model, the overhead unchanged
    expected_flat = (1 * T_Q + 9 * T_Q + 1 * T_P + 2 * T_P + 5 * T_P) + 16 * OVERHEAD  # 16 decoder calls
    table = pricing.price_rows([row], cal)
    assert table[pricing.ACCELERATOR_COLUMN].iloc[0] == pytest.approx(expected_flat, rel=1e-12)
    assert table[pricing.LATENCY_COLUMN].iloc[0] == pytest.approx(expected, rel=1e-12)
    # a speculative row also pays the engine's work per block: one per verifier call (6 here), at its own
    # rule's and gamma's cost
    spec = {**row, "method": "speculative", "rule": "spec", "gamma": 3}
    assert pricing.row_latency(spec, cal) == pytest.approx(expected + 6 * BLOCK, rel=1e-12)
    chow = {**spec, "rule": "chow", "gamma": 4}
    assert pricing.row_latency(chow, cal) == pytest.approx(
        expected + 6 * (BLOCK - 0.0002 + 0.0009), rel=1e-12
    )


def test_every_rule_is_priced_with_its_own_block_cost():
    cal = linear_calibration(max_k=4)
    row = counted_row(verifier_calls_by_k=[4], drafter_calls_by_k=[4], method="speculative", gamma=1)
    spec, chow = (pricing.row_latency({**row, "rule": rule}, cal) for rule in ("spec", "chow"))
    assert chow - spec == pytest.approx(4 * (0.0004 - 0.0001), rel=1e-9)
    with pytest.raises(ValueError, match="target_opt@g1.*priced as SpecDecode"):  # calibrated at gamma 3 only
        pricing.row_latency({**row, "rule": "opt"}, cal)
    # measured: each rule's own computation, stored by rule name (Lossy* apart from lossy)
    from tutorial_lib.decoding.calibration import rule_block_costs, rule_key

    measured = rule_block_costs(
        cal,
        [("opt", "1.0", 0.5, 1), ("lossy", "normalize", 0.9, 1), ("lossy", "1.0", 0.9, 1)],
        vocab_size=64,
        repeats=5,
        progress=False,
    )
    assert {
        "opt": [1, 3],
        "lossy*": [1],
        "lossy": [1],
        "spec": [1, 3],
        "chow": [1, 4],
        "diff": [3],
    } == measured.rule_blocks
    assert rule_key("lossy", "normalize") == "lossy*" and rule_key("chow") == "chow"
    assert pricing.row_latency({**row, "rule": "opt"}, measured) > 0


def test_counts_without_the_kinds_they_need_are_refused():
    cal = Calibration.synthetic(T_Q, [T_P, T_P + DP])
    with pytest.raises(ValueError, match="prefill_verifier"):
        pricing.row_latency(counted_row(verifier_prefills=1), cal)
    with pytest.raises(ValueError, match="encoder_drafter"):
        pricing.row_latency(counted_row(drafter_encoder_passes=1), cal)
    with pytest.raises(ValueError, match="others="):
        Calibration.synthetic(T_Q, [T_P], others={"teleport": 1.0})


def test_rows_written_before_the_counters_are_refused():
    old = [
        {"config": "c", "example_id": "x", "n_verifier_calls": 3, "n_drafter_calls": 10, "wall_time_s": 0.2}
    ]
    with pytest.raises(ValueError, match="Rerun the sweep"):
        pricing.price_rows(old, linear_calibration())
    mixed = pd.DataFrame([counted_row(), {**old[0], "example_id": "y"}])  # the old row's counts read NaN
    with pytest.raises(ValueError, match="c / y has no drafter_calls_by_k"):
        pricing.price_rows(mixed, linear_calibration())
    with pytest.raises(TypeError, match="Calibration"):
        pricing.price_rows([counted_row()], {"drafter_step": [0.1]})


@pytest.mark.parametrize("build", [models.tiny_random_t5, models.tiny_random_llama])
@pytest.mark.parametrize(
    "options",
    [
        dict(method="speculative", rule="spec", gamma=3),
        dict(method="speculative", rule="chow", alpha=0.4, gamma=4, bonus="target"),
        dict(method="token_cascade", alpha=0.6),
        dict(method="seq_cascade", alpha=0.5),
        dict(method="bild", gamma=3, bild_threshold=1.0),
        dict(method="verifier"),
    ],
)
def test_the_engine_counts_every_call_it_makes(build, options):
    verifier = build(0)
    drafter = models.perturbed(verifier, 0.3, seed=1)
    g = generate(
        drafter,
        verifier,
        [3, 4, 5, 6, 7],
        max_new_tokens=16,
        temperature=1.0,
        eos_token_id=(),
        seed=2,
        **options,
    )
    counts = g.call_counts()
    for model, n_calls in (("drafter", g.n_drafter_calls), ("verifier", g.n_verifier_calls)):
        by_k, prefills = counts[f"{model}_calls_by_k"], counts[f"{model}_prefills"]
        fed = len(g.feed_log.get(model, []))
        assert sum(by_k) + prefills == n_calls
        if verifier.is_encoder_decoder:
            # no prefill: every token fed is in a counted call, and the price follows from the feed log
            assert prefills == 0 and sum(k * c for k, c in enumerate(by_k, 1)) == fed
            assert counts[f"{model}_encoder_passes"] == int(n_calls > 0)
        else:
            assert prefills == int(n_calls > 0) and counts[f"{model}_encoder_passes"] == 0
            assert (
                sum(k * c for k, c in enumerate(by_k, 1)) <= fed - 5 * prefills
            )  # the prefill read the prompt
    if verifier.is_encoder_decoder:
        # straight-line costs: intercepts per call, slopes per token fed, computed without calls_by_k
        expected = 0.0
        for model, n_calls, base, slope in (
            ("drafter", g.n_drafter_calls, T_Q, DQ),
            ("verifier", g.n_verifier_calls, T_P, DP),
        ):
            fed = len(g.feed_log.get(model, []))
            expected += n_calls * (base - slope + OVERHEAD) + slope * fed + (n_calls > 0) * ENCODER[model]
        assert pricing.row_latency(counts, linear_calibration(max_k=3)) == pytest.approx(expected, rel=1e-9)


def test_a_batched_row_counts_the_calls_of_its_single_run():
    verifier = models.tiny_random_llama(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    prompts = [[3, 4, 5], [6, 7, 8, 9, 2], [5]]
    for method, rule in (("speculative", "chow"), ("verifier", None)):
        options = dict(method=method, temperature=0.0, max_new_tokens=9, eos_token_id=())
        batch = generate_batch(*pair, prompts, rule=rule, alpha=0.3 if rule else None, **options)
        for i, (prompt, g) in enumerate(zip(prompts, batch)):
            alone = generate(
                *pair,
                prompt,
                seed=i,
                gamma=1,
                bonus="none",
                rule=rule,
                alpha=0.3 if rule else None,
                **options,
            )
            assert g.tokens == alone.tokens
            assert g.call_counts() == alone.call_counts()


@pytest.fixture(scope="module")
def greedy_sweep(tmp_path_factory):
    """Diff and OPT at T = 0 emit the same tokens with the same calls (OPT's TV term is 0 on one-hot
    laws): two configurations with identical calls and, measured, different wall times."""
    verifier = models.tiny_random_llama(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    examples = [Example(f"item-{i}", [3 + i, 4, 5 + i % 3, 6], []) for i in range(8)]
    task = Task("tiny", lambda prediction, example: float(len(prediction)), examples, max_new_tokens=10)
    configs = [
        Config("Verifier", "verifier", temperature=0.0),
        Config("SpecCascade [Diff]", "speculative", "diff", 0.2, gamma=3),
        Config("SpecCascade [OPT]", "speculative", "opt", 0.2, gamma=3),
        Config("SpecDecode", "speculative", "spec", 0.0, gamma=3),
    ]
    root = tmp_path_factory.mktemp("results")
    rows = ev.run_sweep(pair, task, configs, name="pricing-test", root=root, progress=False, eos_token_id=())
    return pair, rows


def test_identical_calls_get_identical_latency(greedy_sweep):
    _, rows = greedy_sweep
    priced = pricing.price_rows(rows, linear_calibration())
    by = {label: group.sort_values("example_id") for label, group in priced.groupby("label")}
    diff, opt = by["SpecCascade [Diff]"], by["SpecCascade [OPT]"]
    assert list(diff["text"]) == list(opt["text"])
    for column in pricing.CALL_COLUMNS:
        assert list(diff[column]) == list(opt[column])
    for column in (pricing.LATENCY_COLUMN, pricing.ACCELERATOR_COLUMN):
        assert list(diff[column]) == list(opt[column])  # equal to the last bit, not approximately
    # what wall time cannot promise: the same calls measured twice are two different numbers
    assert list(diff["wall_time_s"]) != list(opt["wall_time_s"])
    intervals = pricing.latency_intervals(priced).set_index("config")
    keys = {label: group["config"].iloc[0] for label, group in by.items()}
    assert (
        intervals.loc[keys["SpecCascade [Diff]"], ["mean_s", "ci_low_s", "ci_high_s"]].tolist()
        == intervals.loc[keys["SpecCascade [OPT]"], ["mean_s", "ci_low_s", "ci_high_s"]].tolist()
    )


def test_intervals_relative_latency_and_model_error(greedy_sweep):
    _, rows = greedy_sweep
    priced = pricing.price_rows(rows, linear_calibration())
    intervals = pricing.latency_intervals(priced)
    assert len(intervals) == 4 and (intervals["n_items"] == 8).all()
    spread = intervals[intervals["ci_high_s"] > intervals["ci_low_s"]]
    assert len(spread) >= 1
    assert (
        (intervals["ci_low_s"] <= intervals["mean_s"]) & (intervals["mean_s"] <= intervals["ci_high_s"])
    ).all()
    relative = pricing.relative_latency(priced).set_index("label")
    assert relative.loc["Verifier", "relative_latency"] == 1.0
    assert relative.loc["Verifier", "ci_low"] == relative.loc["Verifier", "ci_high"] == 1.0
    spec = relative.loc["SpecDecode"]
    assert spec["ci_low"] <= spec["relative_latency"] <= spec["ci_high"]
    errors = pricing.model_error(priced)
    assert set(errors.columns) >= {"label", "median_abs_rel_error", "median_modelled_s", "median_wall_s"}
    assert (errors["median_abs_rel_error"] >= 0).all() and len(errors) == 4
    overall = pricing.overall_model_error(priced)
    w, m = priced["wall_time_s"], priced[pricing.LATENCY_COLUMN]
    assert overall == pytest.approx(float(((m - w).abs() / w).median()))
    with pytest.raises(ValueError, match="price the rows first"):
        pricing.model_error(rows)


def test_bootstrap_interval_is_the_intervals_modules():
    """scipy's resamples of the items, read by the package's one quantile convention (inverted_cdf)."""
    from scipy import stats

    rng = np.random.default_rng(1)
    values = rng.gamma(2.0, 0.1, size=40)
    table = pd.DataFrame({"task": "t", "config": "c", pricing.LATENCY_COLUMN: values})
    got = pricing.latency_intervals(table, n_resamples=2000, seed=3).iloc[0]
    ref = stats.bootstrap(
        (values,), np.mean, n_resamples=2000, method="percentile", random_state=np.random.default_rng(3)
    )
    low, high = np.quantile(ref.bootstrap_distribution, [0.025, 0.975], method="inverted_cdf")
    assert got["ci_low_s"] == pytest.approx(low) and got["ci_high_s"] == pytest.approx(high)
    assert abs(got["ci_low_s"] - ref.confidence_interval.low) < 0.01  # the same interval up to the convention


def test_a_sweep_is_calibrated_once_and_reused(greedy_sweep, tmp_path):
    pair, rows = greedy_sweep
    folder = tmp_path / "sweep"
    (folder).mkdir()
    (folder / "rows.jsonl").write_text(
        "".join(json.dumps({**r, "prompt_tokens": 6}) + "\n" for r in rows.to_dict("records"))
    )
    cal = pricing.calibrate_for_sweep(pair, folder, gammas=[3], repeats=5, progress=False, min_seconds=0)
    assert (folder / "calibration.json").exists()
    assert cal.max_k == 4 and cal.context_tokens == 6 and cal.repeats == 5
    assert all(len(v) == 5 for k, v in cal.samples.items() if not k.startswith("target_"))
    # each rule of the sweep got its own block cost, at the sweep's gamma
    assert {r for r in rows["rule"].dropna() if r != "spec"} <= set(cal.rule_blocks)
    assert all(3 in gammas for gammas in cal.rule_blocks.values())
    assert {"prefill_drafter", "prefill_verifier", "overhead"} <= set(cal.samples)
    again = pricing.calibrate_for_sweep(pair, folder, gammas=[3], progress=False)
    assert again == cal  # reused, not measured again
    assert pricing.load_sweep_calibration(folder) == cal
    # a block size the rows do not run (a latency run's): the calls are reused, the rules' blocks at
    # that gamma are added and stored
    wider = pricing.calibrate_for_sweep(pair, folder, gammas=[1, 3], progress=False)
    assert {k: v for k, v in wider.samples.items() if k in cal.samples} == cal.samples
    assert all(1 in gammas for gammas in wider.rule_blocks.values())
    assert pricing.load_sweep_calibration(folder) == wider
    cal = wider
    records = (ModelRecord(pair.drafter.name), ModelRecord(pair.verifier.name))
    assert (
        pricing.calibrate_for_sweep(records, folder, gammas=[3]) == cal
    )  # models not loaded: the stored one
    with pytest.raises(ValueError, match="recalibrate=True"):
        pricing.calibrate_for_sweep(pair, folder, gammas=[5], progress=False)
    with pytest.raises(ValueError, match="at least 5"):
        pricing.calibrate_for_sweep(pair, folder, gammas=[3], repeats=3)
    with pytest.raises(FileNotFoundError, match="not loaded"):
        pricing.calibrate_for_sweep(records, tmp_path / "empty", gammas=[3])
    priced = pricing.price_rows(rows, cal)
    assert (priced[pricing.LATENCY_COLUMN] > 0).all()


def test_an_encoder_decoder_sweep_calibrates_its_encoders(tmp_path):
    verifier = models.tiny_random_t5(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    cal = pricing.calibrate_for_sweep(pair, tmp_path, gammas=[2], repeats=5, context_tokens=8, progress=False)
    assert {"encoder_drafter", "encoder_verifier"} <= set(cal.samples) and cal.max_k == 3
    g = generate(
        *pair, [3, 4, 5], method="speculative", rule="spec", gamma=2, max_new_tokens=8, eos_token_id=()
    )
    assert pricing.row_latency(g.call_counts(), cal) > 0


def test_rows_of_the_batched_runner_are_priced(tmp_path):
    verifier = models.tiny_random_llama(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    examples = [Example(f"item-{i}", [3 + i, 4, 5 + i % 3], []) for i in range(5)]
    task = Task("tiny", lambda prediction, example: 0.0, examples, max_new_tokens=6)
    configs = [
        Config("Verifier", "verifier", gamma=1, temperature=1.0),
        Config("SpecCascade [Chow]", "speculative", "chow", 0.3, gamma=1, temperature=1.0, bonus="none"),
    ]
    rows = ev.run_sweep(
        pair,
        task,
        configs,
        name="pricing-batch",
        root=tmp_path,
        runner="batch",
        batch_size=2,
        progress=False,
        eos_token_id=(),
    )
    priced = pricing.price_rows(rows, linear_calibration())
    verifier_rows = priced[priced["method"] == "verifier"]
    # a prefill and then 5 one-token calls of the verifier alone, as `generate` would make them
    assert list(verifier_rows[pricing.LATENCY_COLUMN]) == pytest.approx(
        [0.7 + OVERHEAD + 5 * (T_P + OVERHEAD)] * 5
    )
    cascade = priced[priced["method"] == "speculative"]
    expected = 0.05 + 0.7 + 2 * OVERHEAD + 5 * (T_Q + T_P + 2 * OVERHEAD) + 6 * (BLOCK - 0.0002 + 0.0004)
    assert list(cascade[pricing.LATENCY_COLUMN]) == pytest.approx([expected] * 5)


def test_prefills_are_priced_at_the_rows_prompt_length():
    # on a straight line (0.025 s per token) the least-squares fit is that line, beyond the lengths too
    cal = Calibration(
        {
            "drafter_step": [0.01],
            "verifier_k1": [0.1],
            "prefill_verifier": [1.25],
            "prefill_verifier@100": [2.5],
            "prefill_verifier@20": [0.5],
        },
        context_tokens=50,
    )
    assert cal.prefill_time("prefill_verifier") == 1.25  # no length: at context_tokens
    for n, seconds in ((75, 1.875), (35, 0.875), (150, 3.75), (5, 0.125)):
        assert cal.prefill_time("prefill_verifier", n) == pytest.approx(seconds)
    row = counted_row(verifier_prefills=1, prompt_tokens=75)
    assert pricing.row_latency(row, cal) == pytest.approx(1.875)
    assert pricing.row_latency({**row, "prompt_tokens": float("nan")}, cal) == pytest.approx(1.25)
    flat = cal.accelerator()
    assert flat.prefill_time("prefill_verifier", 75) == pytest.approx(0.1)


def test_prefill_pricing_is_monotone_in_the_prompt_length():
    """Noise between two close lengths (here the longer one measured faster) never makes a longer
    prompt cheaper: the fit's slope is held at >= 0; the committed runs' calibrations too."""
    from pathlib import Path

    noisy = Calibration(
        {
            "drafter_step": [0.01],
            "verifier_k1": [0.1],
            "prefill_verifier": [2.0, 2.2],
            "prefill_verifier@52": [1.8, 1.9],
        },
        context_tokens=50,
    )
    lengths = np.arange(1, 400, 7)
    prices = [noisy.prefill_time("prefill_verifier", int(n)) for n in lengths]
    assert np.all(np.diff(prices) >= 0) and prices[0] == pytest.approx(np.mean([2.0, 2.2, 1.8, 1.9]))
    committed = sorted((Path(__file__).resolve().parents[1] / "data" / "results").glob("*/calibration.json"))
    assert committed, "no committed calibration"
    for path in committed:
        cal = Calibration.load(path)
        for kind in [k for k in cal.samples if k.startswith(("prefill_", "encoder_")) and "@" not in k]:
            prices = [cal.prefill_time(kind, int(n)) for n in lengths]
            assert np.all(np.diff(prices) >= -1e-15), (path.parent.name, kind)


def test_a_sweep_of_two_tasks_times_prefills_at_each_tasks_length(tmp_path):
    verifier = models.tiny_random_t5(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    rows = [
        {"task": task, "config": "c", "example_id": str(n), "prompt_tokens": n}
        for task, lengths in (("short", [4, 5, 6]), ("long", [20, 22]))
        for n in lengths
    ]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cal = pricing.calibrate_for_sweep(pair, tmp_path, gammas=[1], progress=False)
    assert cal.context_tokens == 13  # the median of the two tasks' medians, 5 and 21
    assert {"prefill_verifier@5", "prefill_verifier@21", "encoder_drafter@5", "encoder_verifier@21"} <= set(
        cal.samples
    )
    assert cal.prefill_time("encoder_verifier", 21) >= cal.prefill_time("encoder_verifier", 5)


def test_a_sweeps_calibration_lasts_a_share_of_its_rows_time(greedy_sweep, tmp_path, monkeypatch):
    """Fast calls get more rounds, spread over a tenth of the rows' summed wall time (at most a minute)."""
    pair, rows = greedy_sweep
    folder = tmp_path / "sweep"
    folder.mkdir()
    # rows that took 4 s in all: the calibration lasts at least 0.4 s
    (folder / "rows.jsonl").write_text(
        "".join(
            json.dumps({**r, "prompt_tokens": 6, "wall_time_s": 4.0 / len(rows)}) + "\n"
            for r in rows.to_dict("records")
        )
    )
    asked = []
    real = pricing.calibrate
    monkeypatch.setattr(
        pricing, "calibrate", lambda *a, **k: (asked.append(k["min_seconds"]), real(*a, **k))[1]
    )
    cal = pricing.calibrate_for_sweep(pair, folder, gammas=[3], progress=False)
    assert asked == [pytest.approx(0.4)]
    rounds = len(cal.samples["drafter_step"])
    assert rounds >= 5 and f"{rounds} rounds over at least 0.4 s" in cal.note
    monkeypatch.setattr(pricing, "SWEEP_CALIBRATION_SECONDS", 0.1)  # the cap
    pricing.calibrate_for_sweep(pair, folder, gammas=[3], progress=False, recalibrate=True)
    assert asked[-1] == pytest.approx(0.1)


def test_a_sweep_is_priced_in_one_call_or_says_why_not(greedy_sweep, tmp_path):
    pair, rows = greedy_sweep
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "rows.jsonl").write_text(
        "".join(json.dumps({**r, "prompt_tokens": 6}) + "\n" for r in rows.to_dict("records"))
    )
    copied = rows.copy()
    copied.attrs["path"] = str(folder)
    records = (ModelRecord(pair.drafter.name), ModelRecord(pair.verifier.name))
    unpriced = pricing.price_sweep(records, copied, [3])  # no calibration stored, no models to measure
    assert unpriced.calibration is None and unpriced.rows is copied and "not loaded" in unpriced.why_not
    with pytest.raises(FileNotFoundError, match="not loaded"):
        pricing.price_sweep(records, copied, [3], required=True)
    old = copied.drop(columns=["drafter_calls_by_k", "verifier_calls_by_k"])
    assert "counted their calls" in pricing.price_sweep(pair, old, [3]).why_not
    with pytest.raises(ValueError, match="counted their calls"):
        pricing.price_sweep(pair, old, [3], required=True)
    priced, calibration, why_not = pricing.price_sweep(pair, copied, [3])
    assert why_not is None and calibration == pricing.load_sweep_calibration(folder)
    assert priced[pricing.LATENCY_COLUMN].equals(
        pricing.price_rows(copied, calibration)[pricing.LATENCY_COLUMN]
    )
