"""Profiles of the T5 and Gemma reruns, the hub loaders (without a network) and the layer-skip drafter."""
import pytest

import tutorial_lib as tl
from tutorial_lib import evaluation as ev
from tutorial_lib import reruns


@pytest.mark.parametrize("profile", list(reruns.T5_PROFILES))
def test_t5_profiles_build_their_sweeps(profile):
    settings = reruns.t5_profile(profile)
    configs = ev.sweep_configs(settings["curves"], gammas=settings["gammas"], temperatures=settings["temperatures"],
                               n_alpha=settings["n_alpha"])
    assert {c.label for c in configs} == set(ev.CURVES)


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
    fake = {
        ("wmt14", "de-en"): datasets.Dataset.from_dict({"translation": [{"en": "Hello.", "de": "Hallo."}] * 3}),
        ("cnn_dailymail", "3.0.0"): datasets.Dataset.from_dict({"article": ["A long story."] * 3,
                                                                "highlights": ["Story."] * 3}),
        ("EdinburghNLP/xsum", None): datasets.Dataset.from_dict({"document": ["Text."] * 3, "summary": ["T."] * 3}),
    }
    monkeypatch.setattr(datasets, "load_dataset", lambda path, name=None, split=None: fake[(path, name)])
    wmt = reruns.t5_hub_task("wmt_en_de", 2)
    assert wmt.metric == "bleu" and wmt.examples[0].prompt == "translate English to German: Hello."
    assert wmt.examples[0].references == ["Hallo."] and len(wmt.examples) == 2
    cnn = reruns.t5_hub_task("cnn_dailymail", 3)
    assert cnn.metric == "rouge2" and cnn.examples[0].prompt.startswith("summarize: ")
    assert reruns.t5_hub_task("xsum", 1).examples[0].references == ["T."]
    with pytest.raises(ValueError, match="unknown"):
        reruns.t5_hub_task("squad", 1)


def test_hub_task_without_a_network_says_what_to_do(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no network")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(OSError, match="profile='offline'"):
        reruns.t5_hub_task("wmt_en_de", 2)


def test_layer_skip_drafter_pairs_with_its_model(one_thread):
    big = tl.models.tiny_random_llama(0, n_layers=2)
    small = reruns.layer_skip_drafter(big, 1)
    assert len(small.model.model.layers) == 1 and len(big.model.model.layers) == 2
    pair = tl.models.ModelPair(small, big)
    g = tl.generate(*pair, [1, 2, 3], method="speculative", rule="token_v2", alpha=0.1, gamma=3, max_new_tokens=8,
                    temperature=1.0, eos_token_id=())
    assert len(g.tokens) == 8
    with pytest.raises(ValueError, match="keep between"):
        reruns.layer_skip_drafter(big, 2)
    with pytest.raises(ValueError, match="decoder-only"):
        reruns.layer_skip_drafter(tl.models.tiny_random_t5(0), 1)
