"""Batched decoding at gamma = 1: every row equals its own `generate(..., gamma=1, bonus="none")` run.

Rows of different lengths are left-padded, so these tests also check the attention mask, the
position ids and the shared caches: a mistake in any of them changes some row's logits.
"""

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.maths import targets
from tutorial_lib.maths import accept_reject
from tutorial_lib.decoding.batch import generate_batch, prefill_batch
from tutorial_lib.decoding.engine import generate

from test_engine_distribution import chi_square_p_value

# Different lengths (one of a single token: nothing to prefill for it) so that padding matters.
PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1, 2, 3], [7], [9, 9, 14])
# alphas where both acceptances and rejections happen at T = 0 and deferral varies across positions
RULES = {
    "spec": 0.0,
    "chow": 0.6,
    "diff": 0.0,
    "opt": 0.0,
    "token_v1": 0.0,
    "token_v2": 0.05,
    "token_v3": 0.2,
    "lossy": 0.3,
    "bild": 0.2,
}

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pair():
    verifier = models.tiny_random_llama(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


def single(pair, prompt, seed, method="speculative", **options):
    return generate(*pair, prompt, method=method, gamma=1, bonus="none", seed=seed, **options)


def assert_same_run(batched, alone):
    assert batched.tokens == alone.tokens
    assert batched.prompt_tokens == alone.prompt_tokens and batched.text == alone.text
    for name in (
        "n_drafted",
        "n_accepted",
        "n_rejected",
        "n_verifier_calls",
        "n_drafter_calls",
        "stopped_at_eos",
    ):
        assert getattr(batched, name) == getattr(alone, name), name
    assert [(s.token, s.source, s.accepted) for s in batched.trace] == [
        (s.token, s.source, s.accepted) for s in alone.trace
    ]
    for a, b in zip(batched.trace, alone.trace):
        for law in ("q", "p", "pi", "deferral"):
            assert getattr(a, law) == pytest.approx(getattr(b, law), abs=1e-4, nan_ok=True), law
    # Each model was fed the same (position, token) pairs: the prefill plus one token per step.
    assert batched.feed_log == alone.feed_log


# ---- (a) exact at T = 0 -------------------------------------------------------------------------


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_row_equals_its_single_run_at_t0(pair, rule):
    options = dict(rule=rule, alpha=RULES[rule], temperature=0.0, max_new_tokens=16, eos_token_id=())
    batch = generate_batch(*pair, PROMPTS, **options)
    assert len(batch) == len(PROMPTS)
    for i, (prompt, g) in enumerate(zip(PROMPTS, batch)):
        assert_same_run(g, single(pair, prompt, seed=i, **options))
        assert (g.method, g.rule, g.alpha, g.gamma) == ("speculative", rule, RULES[rule], 1)
        assert len(g.tokens) == g.n_verifier_calls == g.n_drafter_calls == g.n_drafted == 16
    assert sum(g.n_rejected for g in batch) > 0 and sum(g.n_accepted for g in batch) > 0
    if rule != "lossy":
        rates = [s.deferral for g in batch for s in g.trace]
        assert rule == "spec" or 0 < np.mean(rates) < 1


def tiny_random_gpt2(seed):
    """LLaMA's rotary positions are relative, so left padding shifts them harmlessly; GPT-2's are
    absolute: only right position ids (counted from each row's first real token) keep rows exact."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=16, n_positions=128, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=1
    )
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        net = GPT2LMHeadModel(config)
        net.transformer.wpe.weight.normal_(0.0, 1.0)  # positions that matter
        net.lm_head.weight = torch.nn.Parameter(torch.randn(16, 32) * 2 / 32**0.5)  # peaked laws
    return models.LanguageModel(net.eval(), None, name=f"tiny-random-gpt2:{seed}")


@pytest.mark.parametrize("rule", ["spec", "token_v2"])
def test_rows_are_exact_with_absolute_positions(rule):
    verifier = tiny_random_gpt2(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    options = dict(rule=rule, alpha=RULES[rule], temperature=0.0, max_new_tokens=16, eos_token_id=())
    batch = generate_batch(*pair, PROMPTS, **options)
    for i, (prompt, g) in enumerate(zip(PROMPTS, batch)):
        assert_same_run(g, single(pair, prompt, seed=i, **options))
    assert sum(g.n_rejected for g in batch) > 0


@pytest.mark.parametrize("method", ["drafter", "verifier"])
def test_plain_methods_equal_their_single_runs(pair, method):
    options = dict(temperature=0.0, max_new_tokens=12, eos_token_id=())
    batch = generate_batch(*pair, PROMPTS, method=method, **options)
    for i, (prompt, g) in enumerate(zip(PROMPTS, batch)):
        alone = generate(*pair, prompt, method=method, seed=i, **options)
        assert_same_run(g, alone)
        assert (g.n_drafter_calls, g.n_verifier_calls) == ((12, 0) if method == "drafter" else (0, 12))
        assert g.rule is None and g.feed_log.keys() == {method}


def test_lossless_rule_gives_the_verifiers_greedy_output(pair):
    spec = generate_batch(*pair, PROMPTS, rule="spec", max_new_tokens=12, eos_token_id=())
    greedy = generate_batch(*pair, PROMPTS, method="verifier", max_new_tokens=12, eos_token_id=())
    assert [g.tokens for g in spec] == [g.tokens for g in greedy]


def test_chunks_give_the_same_rows(pair):
    options = dict(
        rule="token_v2",
        alpha=0.05,
        temperature=1.0,
        max_new_tokens=10,
        eos_token_id=(),
        seeds=[7, 3, 11, 5, 2],
    )
    whole = generate_batch(*pair, PROMPTS, **options)
    chunked = generate_batch(*pair, PROMPTS, batch_size=2, **options)
    assert [g.tokens for g in chunked] == [g.tokens for g in whole]


# ---- (b) T = 1: the same draws per row, and the right law ----------------------------------------


def test_rows_match_single_runs_at_t1(pair):
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(12)]
    options = dict(rule="chow", alpha=0.6, temperature=1.0, max_new_tokens=16, eos_token_id=())
    batch = generate_batch(*pair, prompts, seeds=range(100, 112), **options)
    same = [
        g.tokens == single(pair, prompt, 100 + i, **options).tokens
        for i, (prompt, g) in enumerate(zip(prompts, batch))
    ]
    # Only float noise between a batched and a single forward pass may move a draw.
    assert sum(same) >= len(same) - 1, same
    assert sum(g.n_rejected for g in batch) > 0


def output_law(pair, prompt, rule, alpha):
    q, p = models.next_token_distributions(pair, prompt)  # (V,) each, T = 1
    q, p = q.double(), p.double()
    pi = targets.target_distribution(rule, q, p, alpha)
    return q, pi, accept_reject.output_distribution(pi, q)


def two_token_law(pair, prompt, rule, alpha):
    """Without a bonus token both positions follow Algorithm 4's output law given their prefix."""
    _, _, out0 = output_law(pair, prompt, rule, alpha)
    return torch.stack(
        [out0[x] * output_law(pair, list(prompt) + [x], rule, alpha)[2] for x in range(out0.shape[0])]
    )  # (V, V): (x_1, x_2)


def drafter_law(pair, prompt):
    """The two-token law of the drafter alone: what a batch that accepted every draft would follow."""
    q0, _ = models.next_token_distributions(pair, prompt)
    return torch.stack(
        [
            q0[x].double() * models.next_token_distributions(pair, list(prompt) + [x])[0].double()
            for x in range(q0.shape[0])
        ]
    )  # (V, V)


@pytest.mark.parametrize("rule,alpha", [("spec", 0.0), ("token_v3", 0.2)])
def test_first_two_tokens_follow_the_output_law(pair, rule, alpha):
    n_rows = 2000
    prompts = [PROMPTS[2], PROMPTS[1]]  # different lengths, interleaved in one batch
    batch = generate_batch(
        *pair,
        prompts * n_rows,
        rule=rule,
        alpha=alpha,
        temperature=1.0,
        max_new_tokens=2,
        eos_token_id=(),
        seeds=range(2 * n_rows),
    )
    V = pair.verifier.vocab_size
    for k, prompt in enumerate(prompts):
        rows = batch[k::2]
        counts = np.zeros((V, V))
        for g in rows:
            counts[g.tokens[0], g.tokens[1]] += 1
        joint = two_token_law(pair, prompt, rule, alpha).numpy()
        assert chi_square_p_value(counts, joint * n_rows) > 1e-3
        # The test has power: the drafter's own law (total variation 0.2 to 0.5 from it) fails it.
        assert chi_square_p_value(counts, drafter_law(pair, prompt).numpy() * n_rows) < 1e-6
        q0, pi0, _ = output_law(pair, prompt, rule, alpha)
        # First position: accepted drafts ~ Binomial(n, 1 - rejection probability).
        accept = 1 - float(accept_reject.rejection_probability(pi0, q0))
        n_accepted = sum(g.trace[0].accepted for g in rows)
        z = (n_accepted - n_rows * accept) / np.sqrt(n_rows * accept * (1 - accept))
        assert 0 < accept < 1 and abs(z) < 4, (accept, n_accepted / n_rows)


# ---- (c) one prefill, many configurations -------------------------------------------------------


def snapshot(prefill):
    return [
        (
            chunk.mask.clone(),
            {
                w: [(layer.keys.clone(), layer.values.clone()) for layer in cache.layers]
                for w, cache in chunk.caches.items()
            },
        )
        for chunk in prefill.chunks
    ]


def assert_same_snapshot(a, b):
    for (mask_a, caches_a), (mask_b, caches_b) in zip(a, b, strict=True):
        assert torch.equal(mask_a, mask_b)
        for w in caches_a:
            for (ka, va), (kb, vb) in zip(caches_a[w], caches_b[w], strict=True):
                assert torch.equal(ka, kb) and torch.equal(va, vb)


@pytest.mark.parametrize("batch_size", [None, 2])
def test_one_prefill_serves_many_configurations(pair, batch_size):
    prefill = prefill_batch(*pair, PROMPTS, batch_size=batch_size)
    assert prefill.models == ("drafter", "verifier") and len(prefill.chunks) == (3 if batch_size else 1)
    before = snapshot(prefill)
    configurations = [
        dict(rule="opt", alpha=0.0, temperature=0.0),
        dict(rule="token_v3", alpha=0.2, temperature=1.0),
        dict(method="verifier", temperature=1.0),
    ]
    for options in configurations:
        options = dict(options, max_new_tokens=10, eos_token_id=(), seeds=[4, 0, 9, 2, 6])
        reused = generate_batch(*pair, PROMPTS, prefill=prefill, **options)
        fresh = generate_batch(*pair, PROMPTS, batch_size=batch_size, **options)
        assert [g.tokens for g in reused] == [g.tokens for g in fresh]
        assert [g.trace for g in reused] == [g.trace for g in fresh]
        assert_same_snapshot(snapshot(prefill), before)


def test_prefill_must_match_models_prompts_and_chunks(pair):
    prefill = prefill_batch(*pair, PROMPTS, batch_size=2)
    with pytest.raises(ValueError, match="other prompts"):
        generate_batch(*pair, PROMPTS[:4], prefill=prefill)
    with pytest.raises(ValueError, match="other models"):
        generate_batch(models.tiny_random_llama(3), pair.verifier, PROMPTS, prefill=prefill)
    with pytest.raises(ValueError, match="chunks of 2"):
        generate_batch(*pair, PROMPTS, prefill=prefill, batch_size=4)
    with pytest.raises(ValueError, match="prefill_batch"):
        generate_batch(*pair, PROMPTS, prefill="cached")


# ---- (d) stopping -------------------------------------------------------------------------------


def test_rows_stop_at_their_own_eos(pair):
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(8)]
    options = dict(rule="token_v2", alpha=0.05, temperature=1.0, max_new_tokens=20, eos_token_id=[2, 5])
    batch = generate_batch(*pair, prompts, seeds=range(8), **options)
    lengths = [len(g.tokens) for g in batch]
    assert len(set(lengths)) > 2 and any(g.stopped_at_eos for g in batch), lengths
    for i, (prompt, g) in enumerate(zip(prompts, batch)):
        if g.stopped_at_eos:
            assert g.tokens[-1] in (2, 5) and not set(g.tokens[:-1]) & {2, 5}
        else:
            assert len(g.tokens) == 20
        assert g.tokens == single(pair, prompt, i, **options).tokens
        assert g.n_verifier_calls == len(g.tokens)
    never = generate_batch(*pair, prompts, seeds=range(8), **dict(options, eos_token_id=()))
    assert all(len(g.tokens) == 20 and not g.stopped_at_eos for g in never)


def test_counters_and_time_shares(pair):
    batch = generate_batch(*pair, PROMPTS, rule="chow", alpha=0.6, max_new_tokens=8, eos_token_id=())
    for g in batch:
        assert g.n_accepted + g.n_rejected == g.n_drafted == 8
        assert g.rejection_rate == g.n_rejected / 8 and g.mean_accepted_per_call == 1.0
        assert 0 <= g.deferral_rate <= 1
        assert (
            0 < g.drafter_time_s
            and 0 < g.verifier_time_s
            and g.drafter_time_s + g.verifier_time_s <= g.wall_time_s
        )
    # the batch's time is split evenly
    assert len({g.wall_time_s for g in batch}) == 1


# ---- (e) bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompts,options,message",
    [
        ([], {}, "prompts is empty"),
        ("3 5 7", {}, "list of prompts"),
        ([[3, 5], []], {}, "prompt is empty"),
        (PROMPTS, dict(method="oracle", rule="chow"), "not batched.*tutorial_lib.generate"),
        (PROMPTS, dict(gamma="auto"), "fixed block size"),
        (PROMPTS, dict(rule="nope"), "rule='nope' is unknown"),
        (PROMPTS, dict(rule="chow", alpha=2.0), "outside the range"),
        (PROMPTS, dict(temperature=-1.0), "temperature"),
        (PROMPTS, dict(max_new_tokens=0), "at least one new token"),
        (PROMPTS, dict(seeds=[1, 2]), "2 seeds for 5 prompts"),
        (PROMPTS, dict(seeds=3), "one seed per prompt"),
        (PROMPTS, dict(batch_size=0), "batch_size=0"),
    ],
)
def test_bad_input_says_what_to_change(pair, prompts, options, message):
    with pytest.raises(ValueError, match=message):
        generate_batch(*pair, prompts, **options)


def test_encoder_decoder_prefills_and_toy_models_are_refused():
    """An encoder-decoder batches (`block_batch`, tests/test_batch_blocks.py), but has no decoder prefill."""
    t5 = models.tiny_random_t5(0)
    with pytest.raises(ValueError, match="encoder-decoder model.*tutorial_lib.generate"):
        prefill_batch(t5, t5, PROMPTS)
    toy = models.toy_pair(tl.ToyWorld())
    with pytest.raises(ValueError, match="toy model.*tutorial_lib.generate"):
        generate_batch(*toy, [[0], [0, 3]])


# ---- (f) the engine's bonus="none" --------------------------------------------------------------


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_engine_without_bonus_emits_one_token_per_verifier_call(pair, temperature):
    for seed, prompt in enumerate(PROMPTS):
        g = single(
            pair,
            prompt,
            seed,
            rule="token_v1",
            alpha=0.0,
            temperature=temperature,
            max_new_tokens=15,
            eos_token_id=(),
        )
        assert len(g.tokens) == g.n_verifier_calls == g.n_drafter_calls == g.n_drafted == 15
        assert {s.source for s in g.trace} <= {"draft", "residual"}
        # the verifier is fed one token per call after the prompt: never the draft it judges
        assert [pos for pos, _ in g.feed_log["verifier"]] == list(range(len(prompt) + 14))
    longer = generate(
        *pair, PROMPTS[0], method="speculative", gamma=4, bonus="none", max_new_tokens=20, eos_token_id=()
    )
    assert "bonus" not in {s.source for s in longer.trace} and len(longer.tokens) == 20
    assert (
        longer.tokens
        == generate(*pair, PROMPTS[0], method="verifier", max_new_tokens=20, eos_token_id=()).tokens
    )
    with pytest.raises(ValueError, match="'none'"):
        generate(*pair, PROMPTS[0], method="speculative", bonus="nothing")


# ---- a real model ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_pair():
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    try:
        return models.load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))
    except (OSError, ValueError) as error:  # the converted model is missing and cannot be made here
        pytest.skip(f"SmolLM2 is not available: {error}")


def test_smollm2_rows_equal_single_runs(smollm2_pair):
    _, verifier = smollm2_pair
    prompts = [
        verifier.chat_prompt(m)
        for m in ("Hi!", "Name three primary colours.", "Explain in two sentences why the sky is blue.")
    ]
    assert len({len(p) for p in prompts}) == 3
    options = dict(rule="token_v2", alpha=0.1, temperature=0.0, max_new_tokens=12, eos_token_id=())
    batch = generate_batch(*smollm2_pair, prompts, **options)
    for i, (prompt, g) in enumerate(zip(prompts, batch)):
        assert g.tokens == single(smollm2_pair, prompt, i, **options).tokens
