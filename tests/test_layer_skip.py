"""`<model>:layers=N`: a drafter made of a decoder-only model's first N layers, by hand or by name."""

import pytest

import tutorial_lib as tl
from tutorial_lib.models import layer_skip


def test_layer_skip_drafter_pairs_with_its_model(one_thread):
    big = tl.models.tiny_random_llama(0, n_layers=2)
    small = layer_skip.layer_skip_drafter(big, 1)
    assert len(small.model.model.layers) == 1 and len(big.model.model.layers) == 2
    pair = tl.models.ModelPair(small, big)
    g = tl.generate(
        *pair,
        [1, 2, 3],
        method="speculative",
        rule="token_v2",
        alpha=0.1,
        gamma=3,
        max_new_tokens=8,
        temperature=1.0,
        eos_token_id=(),
    )
    assert len(g.tokens) == 8
    with pytest.raises(ValueError, match="keep between"):
        layer_skip.layer_skip_drafter(big, 2)
    with pytest.raises(ValueError, match="decoder-only"):
        layer_skip.layer_skip_drafter(tl.models.tiny_random_t5(0), 1)


def test_a_layers_suffix_loads_the_cut_model_by_name(one_thread):
    small = tl.models.load_model("tiny-random-llama:1:layers=1")
    whole = tl.models.load_model("tiny-random-llama:1")
    assert len(small.model.model.layers) == 1 and small.name == "tiny-random-llama:1:layers=1"
    assert small.model.model.embed_tokens.weight.equal(whole.model.model.embed_tokens.weight)
    tl.models.check_compatible(small, whole)


@pytest.mark.parametrize("name", ["tiny-random-llama:layers=x", ":layers=2"])
def test_a_malformed_layers_suffix_says_how_to_write_it(name):
    with pytest.raises(ValueError, match="<model>:layers=<N>"):
        tl.models.load_model(name)
