"""Lossless on a real model: SmolLM2-135M verifying its own bf16 copy gives the verifier's greedy text."""

import pytest
import torch

from tutorial_lib import models
from tutorial_lib.decoding.engine import generate

from test_model_files import use_shared_model_cache

N_TOKENS = 24


@pytest.fixture(scope="module")
def smollm2_pair():
    use_shared_model_cache()
    # The drafter is the same network in bf16: cheaper on hardware with bf16 units, and different
    # enough (rounding) that some drafts are rejected.
    return models.load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))


@pytest.fixture(scope="module")
def prompt_and_reference(smollm2_pair):
    _, verifier = smollm2_pair
    prompt = verifier.chat_prompt("Explain in two sentences why the sky is blue.")
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        # An explicit mask: pad id 2 is also <|im_end|>, which the chat prompt contains.
        out = verifier.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=N_TOKENS,
            min_new_tokens=N_TOKENS,
            eos_token_id=None,
            pad_token_id=2,
        )
    return prompt, out[0, len(prompt) :].tolist()


def test_pair_shares_the_tokenizer(smollm2_pair):
    drafter, verifier = smollm2_pair
    assert drafter.dtype == torch.bfloat16 and verifier.dtype == torch.float32
    assert drafter.vocab_size == verifier.vocab_size == 49152
    assert verifier.decode(verifier.encode("speculative cascades")) == "speculative cascades"


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_speculative_decoding_is_lossless_on_smollm2(smollm2_pair, prompt_and_reference, gamma):
    prompt, reference = prompt_and_reference
    g = generate(
        *smollm2_pair,
        prompt,
        method="speculative",
        rule="spec",
        gamma=gamma,
        max_new_tokens=N_TOKENS,
        eos_token_id=(),
    )
    assert g.tokens == reference
    assert g.n_accepted > 0 and g.n_verifier_calls < N_TOKENS
    assert g.text == smollm2_pair.verifier.decode(reference)


def test_verifier_method_matches_transformers(smollm2_pair, prompt_and_reference):
    prompt, reference = prompt_and_reference
    assert (
        generate(*smollm2_pair, prompt, method="verifier", max_new_tokens=N_TOKENS, eos_token_id=()).tokens
        == reference
    )


def test_a_pair_with_different_tokenizers_is_refused(smollm2_pair):
    from transformers import AutoTokenizer

    drafter, verifier = smollm2_pair
    other = AutoTokenizer.from_pretrained(tl_model_dir())
    other.add_tokens(["<speculative-cascade>"])  # one more entry: the ids no longer mean the same
    renamed = models.LanguageModel(drafter.model, other, name="smollm2 with an extra token")
    with pytest.raises(ValueError, match="token ids of .* mean different things"):
        generate(renamed, verifier, "Hello", method="speculative")
    with pytest.raises(ValueError, match="token ids of .* mean different things"):
        models.ModelPair(renamed, verifier)


def tl_model_dir():
    from tutorial_lib.models.files import offline_model_dir

    return offline_model_dir("smollm2-135m", progress=False)
