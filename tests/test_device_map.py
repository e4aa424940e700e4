"""A verifier bigger than one device: `device_map` / `max_memory` (and per-model dtype) pass through to
transformers' `from_pretrained`, and the engine feeds a placed model where it reads its input ids.

Against fakes (what `from_pretrained` is asked for) and real tiny checkpoints placed with
`device_map="auto"` / `"cpu"` on this CPU: the same tokens as the model loaded without a map.
"""

import types

import pytest
import torch
import transformers

import tutorial_lib as tl
from tutorial_lib.models import adapter, language_model


def test_placement_and_dtype_pass_through_to_from_pretrained_per_model(monkeypatch):
    calls = []

    def from_pretrained(name, **options):
        calls.append((name, options))
        dtype = options["dtype"]
        return adapter.tiny_random_llama(len(calls)).model.to(torch.float32 if dtype == "auto" else dtype)

    monkeypatch.setattr(
        transformers.AutoConfig,
        "from_pretrained",
        lambda name: types.SimpleNamespace(is_encoder_decoder=False),
    )
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda name: None)
    memory = {"cpu": "2GiB"}
    drafter, verifier = tl.load_pair(
        "org/small",
        "org/big",
        dtype=("bfloat16", "float32"),
        device="cpu",
        device_map=(None, "auto"),
        max_memory=(None, memory),
        shared_vocabulary=True,
    )
    assert calls == [
        ("org/small", {"dtype": torch.bfloat16}),
        ("org/big", {"dtype": torch.float32, "device_map": "auto", "max_memory": memory}),
    ]
    assert (drafter.dtype, verifier.dtype) == (torch.bfloat16, torch.float32)
    calls.clear()
    tl.load_pair("org/small", "org/big", device_map="auto", shared_vocabulary=True)  # one map for both
    assert [options.get("device_map") for _, options in calls] == ["auto", "auto"]
    assert all(options["dtype"] == "auto" for _, options in calls)  # the checkpoint's own dtype by default


def test_placement_that_cannot_apply_says_what_to_change():
    with pytest.raises(ValueError, match="built here, not loaded by from_pretrained"):
        tl.load_model("tiny-random-llama:0", device_map="auto")
    with pytest.raises(ValueError, match="built here"):
        tl.load_pair("toy-drafter", "toy-verifier", device_map=(None, "auto"))
    with pytest.raises(ValueError, match="pass device_map='auto' too"):
        tl.load_model("org/big", max_memory={"cpu": "1GiB"})
    with pytest.raises(ValueError, match=r"or a pair \(drafter's, verifier's\)"):
        tl.load_pair("org/small", "org/big", device_map=("auto",))
    with pytest.raises(ValueError, match="loaded already"):
        tl.load_model(adapter.tiny_random_llama(0).model, device_map="auto")


def test_the_input_device_is_the_input_embeddings_device():
    class Stub(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(
                2, 4, device="meta"
            )  # registered first: the first weights are elsewhere
            self.embed = torch.nn.Embedding(4, 2)

        def get_input_embeddings(self):
            return self.embed

        def get_output_embeddings(self):
            return self.head

        def forward(self, input_ids):
            return self.head(self.embed(input_ids))

    lm = language_model.LanguageModel(Stub(), None, name="stub")
    assert next(lm.model.parameters()).device.type == "meta" and lm.device == torch.device("cpu")


def _tokens(pair, prompt, **options):
    return tl.generate(
        *pair,
        prompt,
        method="speculative",
        rule="token_v2",
        alpha=0.2,
        gamma=3,
        max_new_tokens=10,
        temperature=1.0,
        seed=3,
        eos_token_id=(),
        **options,
    ).tokens


@pytest.mark.parametrize("device_map", ["auto", "cpu"])
def test_a_placed_decoder_decodes_as_the_plain_one(tmp_path, device_map, one_thread):
    drafter, verifier = adapter.tiny_random_llama(0), adapter.tiny_random_llama(1)
    verifier.model.save_pretrained(tmp_path)
    placed = adapter.pretrained(
        transformers.LlamaForCausalLM, tmp_path, dtype=torch.float32, device="cpu", device_map=device_map
    )
    lm = language_model.LanguageModel(
        placed, None, name="placed", eos_token_id=None, vocabulary=verifier.vocabulary
    )
    assert lm.device == torch.device("cpu")
    prompt = [2, 5, 7, 3]
    assert _tokens(tl.models.ModelPair(drafter, lm), prompt) == _tokens(
        tl.models.ModelPair(drafter, verifier), prompt
    )


def test_the_trained_t5_loads_placed_and_decodes_as_before(monkeypatch, one_thread):
    from tutorial_lib.models import synthetic_t5

    synthetic_t5.train_t5_pair(budget="tiny", progress=False)
    original = transformers.T5ForConditionalGeneration.from_pretrained.__func__
    seen = []

    def recording(cls, path, **options):
        seen.append(options)
        return original(cls, path, **options)

    monkeypatch.setattr(transformers.T5ForConditionalGeneration, "from_pretrained", classmethod(recording))
    plain = tl.load_pair("synthetic-t5-drafter:tiny", "synthetic-t5-verifier:tiny")
    memory = {"cpu": "1GiB"}
    placed = tl.load_pair(
        "synthetic-t5-drafter:tiny",
        "synthetic-t5-verifier:tiny",
        device_map=(None, "auto"),
        max_memory=(None, memory),
    )
    assert seen[-1]["device_map"] == "auto" and set(seen[-1]["max_memory"]) == {"cpu"}
    assert memory == {"cpu": "1GiB"}  # the caller's dict is left as it was
    assert "device_map" not in seen[-2]
    prompt = plain.verifier.encode("the cat sees the dog")
    assert _tokens(placed, prompt) == _tokens(plain, prompt)
