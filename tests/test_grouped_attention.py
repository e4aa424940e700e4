"""Grouped attention (`grouped_attention`): a block of k rows on a cache gives `sdpa`'s logits with the query
heads of each key/value group folded into the rows (k = 1..6, batch 2 with a padding mask, tiny random LLaMA
and Qwen2 with grouped heads), the engine's greedy tokens are unchanged, and a model without groups stays on
`sdpa`."""

import copy
import types

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from tutorial_lib import models
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.decoding.engine import generate
from tutorial_lib.models import grouped_attention as ga
from tutorial_lib.models import kernel_paths as kp

pytestmark = pytest.mark.usefixtures("one_thread")
VOCAB = 64
PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1, 2, 3], [7], [9, 9, 14])


def _tiny(kind, *, heads=12, kv_heads=2, seed=0, attention="sdpa"):
    classes = {"llama": (LlamaForCausalLM, LlamaConfig), "qwen2": (Qwen2ForCausalLM, Qwen2Config)}
    cls, config_cls = classes[kind]
    config = config_cls(
        vocab_size=VOCAB,
        hidden_size=48,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        attn_implementation=attention,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config).eval()
        with torch.no_grad():  # peaked laws, as the library's tiny models have
            model.lm_head.weight.normal_(0.0, 2.0 / 48**0.5)
    return model


def _spied(monkeypatch):
    """Shapes of the queries the grouped path hands to `scaled_dot_product_attention` (its own calls only)."""
    seen = []

    def spy(query, *args, **kwargs):
        seen.append(tuple(query.shape))
        return torch.nn.functional.scaled_dot_product_attention(query, *args, **kwargs)

    monkeypatch.setattr(ga, "F", types.SimpleNamespace(scaled_dot_product_attention=spy))
    return seen


def _block_logits(model, k, *, batch=2, pad=3, context=11, seed=0):
    """Logits of a block of k rows fed on top of a cache of `context` columns; row 1 of the batch starts with
    `pad` padding columns (left padding, mask 0)."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, VOCAB, (batch, context), generator=gen)
    mask = torch.ones(batch, context, dtype=torch.long)
    if batch > 1:
        mask[1, :pad] = 0
    block = torch.randint(2, VOCAB, (batch, k), generator=gen)
    cache = DynamicCache()
    with torch.inference_mode():
        model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
        full = torch.cat([mask, torch.ones(batch, k, dtype=torch.long)], 1)
        return model(input_ids=block, attention_mask=full, past_key_values=cache, use_cache=True).logits


@pytest.mark.parametrize("kind,heads,kv_heads", [("llama", 4, 2), ("qwen2", 12, 2), ("qwen2", 6, 1)])
def test_a_block_on_a_cache_gives_sdpas_logits(monkeypatch, kind, heads, kv_heads):
    plain = _tiny(kind, heads=heads, kv_heads=kv_heads)
    grouped = copy.deepcopy(plain)
    assert ga.use_grouped_attention(grouped) and ga.attention_of(grouped) == "grouped"
    assert ga.attention_of(plain) == "sdpa"
    seen = _spied(monkeypatch)
    for k in range(1, 7):
        seen.clear()
        expected, got = _block_logits(plain, k, seed=k), _block_logits(grouped, k, seed=k)
        assert torch.allclose(got, expected, atol=1e-5, rtol=0), (k, (got - expected).abs().max())
        # the prefill (11 rows) and, for k > 1, the block went through the fold: r*rows rows per key head
        folded = [(2, kv_heads, heads // kv_heads * 11, 48 // heads)]
        folded += [(2, kv_heads, heads // kv_heads * k, 48 // heads)] if k > 1 else []
        assert sorted(set(seen)) == sorted(set(folded)), (k, seen)


def test_the_mask_a_block_needs_is_built_without_padding():
    """With no padding and no mask given, k > 1 rows on a cache still need a causal mask over the cache (a
    custom attention name without a mask builder gets none, and sdpa would cut the cache to k columns)."""
    plain = _tiny("qwen2")
    grouped = copy.deepcopy(plain)
    ga.use_grouped_attention(grouped)
    for k in (2, 5):
        outputs = []
        for model in (plain, grouped):
            cache = DynamicCache()
            with torch.inference_mode():
                model(input_ids=torch.arange(2, 20)[None], past_key_values=cache, use_cache=True)
                block = torch.arange(30, 30 + k)[None]
                outputs.append(model(input_ids=block, past_key_values=cache, use_cache=True).logits)
        assert torch.allclose(outputs[1], outputs[0], atol=1e-5, rtol=0), k


def _pair(grouped):
    verifier = models.tiny_random_llama(0)
    drafter = models.perturbed(verifier, 0.3, seed=1)
    drafter.model, verifier.model = copy.deepcopy(drafter.model), copy.deepcopy(verifier.model)
    if grouped:
        assert ga.use_grouped_attention(drafter.model) and ga.use_grouped_attention(verifier.model)
    return drafter, verifier


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_the_engines_greedy_tokens_are_unchanged(gamma):
    plain, grouped = _pair(False), _pair(True)
    rejected = 0
    for prompt in PROMPTS:
        runs = [
            generate(*pair, prompt, method="speculative", gamma=gamma, max_new_tokens=20, eos_token_id=())
            for pair in (plain, grouped)
        ]
        assert runs[1].tokens == runs[0].tokens
        assert runs[1].n_rejected == runs[0].n_rejected
        rejected += runs[1].n_rejected
    assert rejected > 0  # drafts were rejected, so blocks were cropped and fed again


def test_the_batched_engines_greedy_tokens_are_unchanged():
    """Batched blocks: ragged prompts (padding masks) and ragged acceptance, k = gamma + 1 rows per call."""
    options = dict(method="speculative", gamma=4, max_new_tokens=16, eos_token_id=())
    plain = generate_batch(*_pair(False), PROMPTS, **options)
    grouped = generate_batch(*_pair(True), PROMPTS, **options)
    assert [g.tokens for g in grouped] == [g.tokens for g in plain]


def test_a_model_without_groups_or_on_eager_stays_as_it_was():
    ungrouped = _tiny("llama", heads=4, kv_heads=4)
    assert not ga.use_grouped_attention(ungrouped) and ga.attention_of(ungrouped) == "sdpa"
    eager = _tiny("qwen2", attention="eager")
    assert not ga.use_grouped_attention(eager) and ga.attention_of(eager) == "eager"


def test_put_on_path_puts_a_cpu_model_with_groups_on_it():
    lm = models.tiny_random_llama(0)
    lm.model = copy.deepcopy(lm.model)
    kp.put_on_path(lm, "fp32", verbose=False)
    assert ga.attention_of(lm.model) == "grouped"
    plain = models.LanguageModel(_tiny("llama", heads=4, kv_heads=4), None, name="ungrouped")
    kp.put_on_path(plain, "fp32", verbose=False)
    assert ga.attention_of(plain.model) == "sdpa"
