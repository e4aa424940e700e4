"""Profiles of the T5 and Gemma reruns, the hub loaders (without a network) and the layer-skip drafter."""

from pathlib import Path

import pytest

import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import CURVES, sweep_configs
from tutorial_lib.sweeps.sweep_folders import Sweep
from tutorial_lib.sweeps import reruns


@pytest.mark.parametrize("profile", list(reruns.T5_PROFILES))
def test_t5_profiles_build_their_sweeps(profile):
    settings = reruns.t5_profile(profile)
    configs = sweep_configs(
        settings["curves"],
        gammas=settings["gammas"],
        temperatures=settings["temperatures"],
        n_alpha=settings["n_alpha"],
    )
    assert {c.label for c in configs} == set(CURVES)


def test_profile_overrides_and_errors():
    assert reruns.t5_profile("offline", n_examples=7, gammas=None)["n_examples"] == 7
    assert reruns.t5_profile("offline")["gammas"] == reruns.T5_PROFILES["offline"]["gammas"]
    with pytest.raises(ValueError, match="unknown"):
        reruns.t5_profile("nope")
    with pytest.raises(ValueError, match="not a setting"):
        reruns.gemma_profile("offline", colour="red")
    hub = reruns.gemma_profile("hub")
    assert hub["drafter"] == "google/gemma-2-2b-it" and len(hub["tasks"]) == 8


def test_t5_hub_tasks_use_the_prefixes_t5_was_trained_with(monkeypatch):
    import datasets

    # the real schemas (and the only calls datasets >= 4 accepts: namespace/name, XSum's Parquet branch)
    fake = {
        ("wmt/wmt14", "de-en", None): datasets.Dataset.from_dict(
            {"translation": [{"de": "Hallo.", "en": "Hello."}] * 3}
        ),
        ("abisee/cnn_dailymail", "3.0.0", None): datasets.Dataset.from_dict(
            {"article": ["A long story."] * 3, "highlights": ["Story."] * 3, "id": ["a", "b", "c"]}
        ),
        ("EdinburghNLP/xsum", None, "refs/convert/parquet"): datasets.Dataset.from_dict(
            {"document": ["Text."] * 3, "summary": ["T."] * 3, "id": ["1", "2", "3"]}
        ),
    }
    calls = []

    def load_dataset(path, name=None, *, split=None, revision=None):
        calls.append((path, name, split, revision))
        return fake[(path, name, revision)]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    wmt = reruns.t5_hub_task("wmt_en_de", 2)
    assert wmt.metric == "bleu" and wmt.examples[0].prompt == "translate English to German: Hello."
    assert wmt.examples[0].references == ["Hallo."] and len(wmt.examples) == 2
    cnn = reruns.t5_hub_task("cnn_dailymail", 3)
    assert cnn.metric == "rouge2" and cnn.examples[0].prompt.startswith("summarize: ")
    assert reruns.t5_hub_task("xsum", 1).examples[0].references == ["T."]
    assert all(split == "validation" for _, _, split, _ in calls)  # the paper's validation samples
    assert [(t.max_input_tokens) for t in (wmt, cnn)] == [80, 1024]  # inputs cut as the paper does
    with pytest.raises(ValueError, match="unknown"):
        reruns.t5_hub_task("squad", 1)


def test_hub_task_without_a_network_says_what_to_do(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(OSError, match="profile='offline'"):
        reruns.t5_hub_task("wmt_en_de", 2)


def test_t5_training_budget_follows_the_model_names():
    assert reruns.t5_training_budget(reruns.t5_profile("offline")) == "default"
    assert reruns.t5_training_budget(reruns.t5_profile("smoke")) == "tiny"
    assert reruns.t5_training_budget(reruns.t5_profile("hub")) is None
    with pytest.raises(ValueError, match="different budgets"):
        reruns.t5_training_budget(reruns.t5_profile("offline", drafter="synthetic-t5-drafter:tiny"))


def test_the_committed_runs_reload_without_their_models():
    # the Gemma-style pair is not needed to find (and check) the committed rows of its offline-all run
    settings = reruns.gemma_profile("offline-all")
    pair = reruns.saved_pair("gemma-offline-all", settings)
    assert [m.name for m in pair] == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
    assert "make models-qwen" in pair[0].install
    described = reruns.describe_pair(pair)
    assert list(described["name"]) == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
    assert described["parameters"].str.contains("not loaded").all()
    table = reruns.task_table(reruns.gemma_tasks(settings))
    assert list(table["task"]) == ["code", "arithmetic", "facts"] and "prompt tokens (mean)" not in table
    with pytest.raises(FileNotFoundError, match="no saved sweep"):
        reruns.saved_pair("gemma-offline-all", reruns.gemma_profile("offline-all", n_items=3))


def test_the_committed_offline_all_run_is_complete_and_priced():
    # every item of the three offline sets, every configuration, and its latency runs and
    # calibration, so notebook 07 redraws at its default without the models
    from tutorial_lib.stats import pricing

    settings = reruns.gemma_profile("offline-all")
    pair = reruns.saved_pair("gemma-offline-all", settings)
    tasks = reruns.gemma_tasks(settings)
    assert [len(t.examples) for t in tasks] == [53, 60, 49]
    configs = reruns.gemma_configs(settings)
    rows = ev.run_sweep(
        pair,
        tasks,
        configs,
        name="gemma-offline-all",
        runner="batch",
        extra_config=reruns.run_config(settings),
        progress=False,
    )
    assert len(rows) == len(configs) * 162 == 5022
    sizes = rows.groupby(["task", "config"]).size()
    items = {t.name: len(t.examples) for t in tasks}
    assert len(sizes) == 3 * len(configs) and all(n == items[task] for (task, _), n in sizes.items())
    calibration = pricing.calibrate_for_sweep(pair, rows, gammas=settings["latency_gammas"])
    priced = pricing.price_rows(rows, calibration)
    assert priced[pricing.LATENCY_COLUMN].gt(0).all()
    latency = ev.run_sweep(
        pair,
        [t.head(settings["latency_items"]) for t in tasks],
        reruns.latency_configs(settings),
        name="gemma-offline-all-latency",
        runner="single",
        extra_config=reruns.latency_run_config(settings),
        progress=False,
    )
    assert len(latency) == len(reruns.latency_configs(settings)) * 3 * settings["latency_items"]
    assert (
        pricing.model_error(pricing.price_rows(latency, calibration))["n_items"]
        .eq(settings["latency_items"])
        .all()
    )


@pytest.mark.parametrize(
    "profile, tasks_in_order, run, latency_run",
    [
        (
            "headline",
            [("facts", 49), ("humaneval", 164), ("arithmetic-300", 300)],
            "gemma-headline-e2cc8ff38748",
            "gemma-headline-latency-edfaf343a75b",
        ),
        (
            "offline-large",
            [("humaneval", 164), ("arithmetic-300", 300), ("facts", 49)],
            "gemma-offline-large-93f757b9c761",
            "gemma-offline-large-latency-3b9945ad41d4",
        ),
    ],
)
def test_the_committed_large_runs_are_complete_and_priced(profile, tasks_in_order, run, latency_run):
    # HumanEval's 164 problems, 300 arithmetic problems and the 49 facts under every configuration, the
    # calibration and the latency rows: notebook 07 redraws them without computing a row
    from tutorial_lib.stats import pricing

    settings = reruns.gemma_profile(profile)
    pair = reruns.saved_pair(f"gemma-{profile}", settings)
    tasks = reruns.gemma_tasks(settings)
    assert [(t.name, len(t.examples)) for t in tasks] == tasks_in_order
    configs = reruns.gemma_configs(settings)
    rows = ev.run_sweep(
        pair,
        tasks,
        configs,
        name=f"gemma-{profile}",
        runner="batch",
        extra_config=reruns.run_config(settings),
        progress=False,
    )
    assert len(rows) == len(configs) * 513 and Path(rows.attrs["path"]).name == run
    calibration = pricing.calibrate_for_sweep(pair, rows, gammas=settings["latency_gammas"])
    assert pricing.price_rows(rows, calibration)[pricing.LATENCY_COLUMN].gt(0).all()
    latency = ev.run_sweep(
        reruns.latency_pair(settings, pair),
        [t.head(settings["latency_items"]) for t in tasks],
        reruns.latency_configs(settings),
        name=f"gemma-{profile}-latency",
        runner="single",
        extra_config=reruns.latency_run_config(settings),
        progress=False,
    )
    assert settings["latency_items"] >= 16 and latency["wall_time_s"].gt(0).all()
    assert len(latency) == len(reruns.latency_configs(settings)) * 3 * settings["latency_items"]
    assert Path(latency.attrs["path"]).name == latency_run


def test_notebook_07_and_its_results_page_default_to_the_headline_run():
    import re
    from tutorial_lib.stats import report

    notebook = (Path(__file__).resolve().parents[1] / "notebooks" / "07_gemma_evaluation.py").read_text()
    assert re.search(r'^profile = "headline" ', notebook, re.M)
    assert reruns.gemma_profile()["profile"] == "headline"
    assert report.GEMMA_RUN == "gemma-headline-e2cc8ff38748"
    assert report.GEMMA_LATENCY_RUN == "gemma-headline-latency-edfaf343a75b"
    headline = reruns.gemma_profile("headline")
    assert len(reruns.gemma_configs(headline)) * 513 == 25137


def test_describe_pair_and_task_table_with_loaded_models():
    pair = tl.models.ModelPair(tl.models.tiny_random_t5(0), tl.models.tiny_random_t5(1))
    described = reruns.describe_pair(pair)
    assert (described["parameters"] > 0).all() and described["layers (enc+dec)"].str.contains(r"\+").all()
    settings = reruns.gemma_profile("smoke")
    tasks = reruns.gemma_tasks(settings)
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    smol = tl.load_model("smollm2-135m")
    table = reruns.task_table(tasks, smol)
    assert (table["prompt tokens (mean)"] > 10).all()


def test_the_committed_t5_run_reloads_complete_under_exact_alpha_keys():
    # the committed T5 rows were saved under 6-digit keys and under every digit of the float (1/3,
    # 2**(1/3), ...); read under today's keys (10 significant digits) each must be found exactly once
    settings = reruns.t5_profile("offline")
    pair = reruns.saved_pair("t5-offline", settings)
    tasks = reruns.t5_tasks(settings)
    configs = reruns.t5_configs(settings)
    rows = ev.run_sweep(
        pair, tasks, configs, name="t5-offline", extra_config=reruns.run_config(settings), progress=False
    )
    assert len(rows) == len(configs) * sum(len(t.examples) for t in tasks)
    assert set(rows["config"]) == {c.key for c in configs}
    assert not rows.duplicated(["task", "config", "example_id"]).any()


def test_the_latency_settings_stay_out_of_the_batched_sweeps_hash():
    # how the latency rows are measured decides no batched row: measuring them again on more items or on
    # another kernel path must find the batched rows where they are
    for name in ("offline-large", "headline"):  # latency_alphas is optional: headline sets it
        profile = reruns.gemma_profile(name)
        assert not set(reruns.LATENCY_KEYS) & set(reruns.run_config(profile)["profile"])
        assert {k for k in reruns.LATENCY_KEYS if k in profile} <= set(
            reruns.latency_run_config(profile)["profile"]
        )
    assert "latency_alphas" in reruns.latency_run_config(reruns.gemma_profile("headline"))["profile"]
    settings = reruns.gemma_profile("offline-large")
    other = reruns.gemma_profile("offline-large", latency_items=3)
    other["latency_paths"] = ["fp32", "fp32"]
    assert reruns.run_config(other) == reruns.run_config(settings)
    assert reruns.latency_run_config(other) != reruns.latency_run_config(settings)
    assert (
        Sweep("gemma-offline-large", reruns.run_config(settings)).hash
        != Sweep("gemma-offline-large", reruns.latency_run_config(settings)).hash
    )


def test_latency_rows_take_the_alpha_of_the_quality_rows_at_their_temperature():
    settings = reruns.gemma_profile("offline-large")
    alphas = {c.label: c.alpha for c in reruns.latency_configs(settings) if c.method == "speculative"}
    assert min(settings["temperatures"]) == 0.0
    assert alphas["SpecCascade [Token-V2]"] == settings["greedy_alphas"]["SpecCascade [Token-V2]"][0] == 0.515
    quality = {
        c.alpha
        for c in reruns.gemma_configs(settings)
        if c.label == "SpecCascade [Token-V2]" and c.temperature == 0.0
    }
    assert quality == {0.515}
    # a profile without T = 0 placements keeps its one list of alphas
    earlier = reruns.gemma_profile("offline-all")
    assert {c.alpha for c in reruns.latency_configs(earlier) if c.label == "SpecCascade [Token-V2]"} == {
        earlier["alphas"]["SpecCascade [Token-V2]"][0]
    }


def test_latency_pair_puts_loaded_models_on_the_latency_paths_and_finds_saved_ones():
    from tutorial_lib.models import kernel_paths

    settings = reruns.gemma_profile("smoke")
    pair = tl.models.load_pair("tiny-random-llama:1", "tiny-random-llama:0")
    assert reruns.latency_pair(settings, pair) is pair  # no latency_paths: the pair as loaded
    settings["latency_paths"] = ["int8-dynamic", "fp32-gemv"]
    moved = reruns.latency_pair(settings, pair)
    assert [kernel_paths.path_of(lm.model) for lm in moved] == ["int8-dynamic", "fp32-gemv"]
    # stand-ins of a saved run: those the saved latency rows were computed with (bf16 verifier, not fp32)
    large = reruns.gemma_profile("offline-large")
    saved = reruns.saved_pair("gemma-offline-large", large)
    records = reruns.latency_pair(large, saved)
    assert saved[1].dtype == "float32" and records[1].dtype == "bfloat16"


def test_latency_pair_loads_again_in_fp32_a_model_whose_bf16_weights_cannot_give_its_path():
    # the headline profile runs its sweep in bf16 and its latency rows with an int8 drafter, which is
    # quantised from fp32 weights: the drafter is loaded again, the pair as loaded is left to the sweep
    from tutorial_lib.models import kernel_paths

    names = {"drafter": "tiny-random-llama:1", "verifier": "tiny-random-llama:0"}
    settings = {**reruns.gemma_profile("headline"), **names}
    assert settings["dtype"] == "bfloat16" and settings["latency_paths"] == ["int8-dynamic", "bf16"]
    pair = tl.models.load_pair(names["drafter"], names["verifier"], dtype="bfloat16")
    assert not kernel_paths.reachable(pair.drafter.model, "int8-dynamic")
    moved = reruns.latency_pair(settings, pair)
    assert moved is not pair and moved.verifier is pair.verifier
    assert [kernel_paths.path_of(lm.model) for lm in moved] == ["int8-dynamic", "bf16"]
    assert kernel_paths.path_of(pair.drafter.model) == "bf16"  # the sweep's drafter as loaded
    assert str(moved.drafter.dtype) == "torch.float32"  # as the saved offline-large latency rows record it
    # a drafter made of the verifier's layers cannot be loaded again by itself: the error says what to change
    layered = {**settings, "drafter": "smollm2-135m:layers=16", "latency_paths": ["int8-dynamic", None]}
    with pytest.raises(ValueError, match="dtype='float32'"):
        reruns.latency_pair(layered, pair)
