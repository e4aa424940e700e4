"""The engine: lossless at T = 0, cache discipline, the methods' decisions, and clear errors."""

import math

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.maths import targets
from tutorial_lib.decoding.engine import generate, generate_many

PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1])


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module", params=["llama", "t5"])
def tiny_pair(request):
    build = models.tiny_random_llama if request.param == "llama" else models.tiny_random_t5
    verifier = build(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


@pytest.fixture(scope="module")
def toy():
    return models.toy_pair(tl.ToyWorld())


def hf_greedy(lm, prompt, n):
    ids = torch.tensor([prompt])
    out = lm.model.generate(
        ids, do_sample=False, max_new_tokens=n, min_new_tokens=n, eos_token_id=None, pad_token_id=0
    )
    return out[0, 1 if lm.is_encoder_decoder else ids.shape[1] :].tolist()


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_lossless_at_t0_matches_transformers_greedy(tiny_pair, gamma):
    drafter, verifier = tiny_pair
    rejected = accepted = 0
    for prompt in PROMPTS:
        g = generate(
            drafter,
            verifier,
            prompt,
            method="speculative",
            rule="spec",
            gamma=gamma,
            max_new_tokens=24,
            eos_token_id=(),
        )
        assert g.tokens == hf_greedy(verifier, prompt, 24)
        rejected, accepted = rejected + g.n_rejected, accepted + g.n_accepted
    assert rejected > 0 and accepted > 0  # both rollback and acceptance were exercised


def test_plain_methods_match_transformers_greedy(tiny_pair):
    drafter, verifier = tiny_pair
    for which, lm in (("drafter", drafter), ("verifier", verifier)):
        g = generate(drafter, verifier, PROMPTS[0], method=which, max_new_tokens=12, eos_token_id=())
        assert g.tokens == hf_greedy(lm, PROMPTS[0], 12)
        assert (g.n_verifier_calls, g.n_drafter_calls) == ((12, 0) if which == "verifier" else (0, 12))


@pytest.mark.parametrize(
    "method,options",
    [
        ("speculative", dict(rule="spec", gamma=4)),
        ("speculative", dict(rule="token_v3", alpha=0.5, gamma=3)),
        ("token_cascade", dict(alpha=0.4)),
        ("oracle", dict(rule="diff", alpha=0.1)),
        ("bild", dict(bild_threshold=1.0, gamma=4, bild_fallback=0.3)),
        ("seq_cascade", dict(alpha=0.5)),
    ],
)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_cache_discipline(tiny_pair, method, options, temperature):
    """After the prompt, no accepted token reaches a model twice; rejected drafts are cropped away."""
    drafter, verifier = tiny_pair
    g = generate(
        drafter,
        verifier,
        PROMPTS[2],
        method=method,
        temperature=temperature,
        max_new_tokens=20,
        eos_token_id=(),
        seed=3,
        **options,
    )
    sequence = verifier.decoder_prefix(PROMPTS[2]) + g.tokens
    for name, log in g.feed_log.items():
        feeds = accepted_feeds(log, sequence)
        assert all(n == 1 for n in feeds.values()), f"{name} was fed an accepted token twice"
        if method in ("speculative", "bild", "token_cascade", "oracle"):
            # everything else it was fed is a draft that was cropped away
            assert len(log) - sum(feeds.values()) <= g.n_drafted - g.n_accepted


def accepted_feeds(log, sequence):
    """How often each position of `sequence` was fed on top of exactly `sequence[:position]`."""
    cache, counts = [], {}
    for position, token in log:  # feeding at `position` means the cache was cropped there
        del cache[position:]
        if cache == sequence[:position] and position < len(sequence) and sequence[position] == token:
            counts[position] = counts.get(position, 0) + 1
        cache.append(token)
    return counts


def test_encoder_runs_once_per_model_and_prompt():
    verifier = models.tiny_random_t5(0)
    drafter = models.perturbed(verifier, 0.3, seed=1)
    calls = []
    hooks = [
        lm.model.get_encoder().register_forward_hook(lambda *a, name=lm.name: calls.append(name))
        for lm in (drafter, verifier)
    ]
    try:
        g = generate(
            drafter, verifier, PROMPTS[1], method="speculative", gamma=3, max_new_tokens=20, eos_token_id=()
        )
    finally:
        for hook in hooks:
            hook.remove()
    assert g.n_verifier_calls > 1
    assert sorted(calls) == sorted([drafter.name, verifier.name])


@pytest.mark.parametrize("rule", ["spec", "lossy", "chow", "opt", "diff", "bild"])
def test_drafter_paired_with_itself_accepts_every_draft(tiny_pair, rule):
    drafter, _ = tiny_pair
    alpha = {"opt": 2.0, "diff": 0.1, "bild": 0.2}.get(rule, 0.3)
    for seed in range(3):
        g = generate(
            drafter,
            drafter,
            PROMPTS[0],
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=4,
            temperature=1.0,
            max_new_tokens=20,
            seed=seed,
            eos_token_id=(),
        )
        assert g.n_rejected == 0 and g.rejection_rate == 0.0
        assert g.n_accepted == g.n_drafted
        assert all(s.accepted for s in g.trace if s.source == "draft")


@pytest.mark.parametrize("rule", ["token_v1", "token_v2", "token_v3"])
def test_token_rules_reject_outside_the_set_even_when_q_equals_p(toy, rule):
    """With p = q the token target is q(v)(2 - q(A)) on A and (1 - q(A)) q(v) off it: not q."""
    d, _ = toy
    g = generate(
        d,
        d,
        [0],
        method="speculative",
        rule=rule,
        alpha=0.3 if rule == "token_v3" else 0.0,
        gamma=4,
        temperature=1.0,
        max_new_tokens=60,
        seed=0,
        eos_token_id=(),
    )
    assert g.n_rejected > 0
    rejected = [s for s in g.trace if s.source == "residual"]
    assert all(s.pi > s.q for s in rejected)  # the replacement comes from where pi exceeds q: the set A


# Each rule's two ends of alpha: the drafter alone and SpecDecode.
ENDS = {
    "chow": (1.0, 0.0),
    "diff": (1.0, -1.0),
    "opt": (1e9, -1e9),
    "token_v1": (1.0, -1.0),
    "token_v2": (1.0, -1.0),
    "token_v3": (1.0, 0.0),
    "bild": (1.0, 0.0),
}


@pytest.mark.parametrize("rule", sorted(ENDS))
def test_alpha_ends_reproduce_drafter_and_spec(toy, tiny_pair, rule):
    drafter_end, spec_end = ENDS[rule]
    for pair, prompt in ((toy, [0]), (tiny_pair, PROMPTS[0])):
        d, v = pair
        run = dict(max_new_tokens=16, eos_token_id=(), gamma=3)
        spec = generate(d, v, prompt, method="speculative", rule="spec", **run)
        assert (
            generate(d, v, prompt, method="speculative", rule=rule, alpha=spec_end, **run).tokens
            == spec.tokens
        )
        plain = generate(d, v, prompt, method="drafter", **run)
        # With the bonus token drawn from the target too, every token follows pi = q.
        cascade = generate(
            d, v, prompt, method="speculative", rule=rule, alpha=drafter_end, bonus="target", **run
        )
        assert cascade.tokens == plain.tokens and cascade.n_rejected == 0
        # The paper's Algorithm 4 draws the bonus token from p: only those positions may differ.
        paper = generate(d, v, prompt, method="speculative", rule=rule, alpha=drafter_end, **run)
        assert paper.n_rejected == 0
        assert [s.source for s in paper.trace] == (["draft"] * 3 + ["bonus"]) * 4


def test_alpha_ends_at_t1_share_the_random_stream(toy):
    d, v = toy
    run = dict(max_new_tokens=12, eos_token_id=(), gamma=3, temperature=1.0, seed=7)
    spec = generate(d, v, [0], method="speculative", rule="spec", **run)
    for rule in ("chow", "diff", "opt"):
        assert (
            generate(d, v, [0], method="speculative", rule=rule, alpha=ENDS[rule][1], **run).tokens
            == spec.tokens
        )


def decisions_along(pair, prompt, generation, rule, alpha):
    """The rule's decision at every emitted position, recomputed from scratch."""
    decided, prefix = [], list(prompt)
    for step in generation.trace:
        q_u, p_u = models.next_token_distributions(pair, prefix, temperature=1.0)
        decided.append(bool(targets.deferral_decision(rule, q_u, p_u, alpha)))
        prefix.append(step.token)
    return decided


@pytest.mark.parametrize("rule,alpha", [("chow", 0.45), ("diff", 0.05), ("opt", 0.5), ("bild", 0.3)])
def test_oracle_follows_the_rule_at_every_position(toy, rule, alpha):
    for seed in range(4):
        g = generate(
            *toy, [0], method="oracle", rule=rule, alpha=alpha, temperature=1.0, seed=seed, max_new_tokens=12
        )
        decided = decisions_along(toy, [0], g, rule, alpha)
        assert [s.source == "verifier" for s in g.trace] == decided
        assert [s.deferral for s in g.trace] == [float(d) for d in decided]
        assert g.n_verifier_calls == g.n_drafter_calls == len(g.tokens)


def test_token_cascade_follows_chow_and_calls_p_only_to_defer(toy):
    deferred_total = 0
    for seed in range(4):
        g = generate(
            *toy, [0], method="token_cascade", alpha=0.45, temperature=1.0, seed=seed, max_new_tokens=12
        )
        decided = decisions_along(toy, [0], g, "chow", 0.45)
        assert [s.source == "verifier" for s in g.trace] == decided
        assert g.n_verifier_calls == sum(decided)
        deferred_total += sum(decided)
    assert deferred_total > 0


def test_eos_inside_a_block_ends_the_output(toy):
    ended = 0
    for seed in range(20):
        g = generate(
            *toy,
            [0],
            method="speculative",
            rule="opt",
            alpha=0.3,
            gamma=5,
            temperature=1.0,
            seed=seed,
            max_new_tokens=40,
        )
        assert tl.toy.toyworld.EOS not in g.tokens[:-1]
        if g.stopped_at_eos:
            ended += 1
            assert g.tokens[-1] == tl.toy.toyworld.EOS and g.text.split()[-1] == "<eos>"
    assert ended > 10


def test_counters_add_up(tiny_pair):
    for rule, alpha in (("spec", 0.0), ("opt", 0.3), ("token_v2", 0.2), ("lossy", 0.3)):
        g = generate(
            *tiny_pair,
            PROMPTS[2],
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=4,
            temperature=1.0,
            max_new_tokens=30,
            eos_token_id=(),
            seed=1,
        )
        sources = [s.source for s in g.trace]
        assert len(g.tokens) == 30
        assert sources.count("draft") == g.n_accepted and sources.count("residual") == g.n_rejected
        assert g.n_accepted + g.n_rejected <= g.n_drafted
        # every verifier call ends with a residual or a bonus token, except when the length runs out
        assert sources.count("residual") + sources.count("bonus") in (
            g.n_verifier_calls,
            g.n_verifier_calls - 1,
        )
        assert g.mean_accepted_per_call == pytest.approx(30 / g.n_verifier_calls)
        assert 0 < g.drafter_time_s + g.verifier_time_s <= g.wall_time_s
        if rule == "lossy":
            assert math.isnan(g.deferral_rate)
        else:
            assert 0.0 <= g.deferral_rate <= 1.0


def test_seq_cascade_ends_and_bild_ends(tiny_pair):
    d, v = tiny_pair
    run = dict(max_new_tokens=16, eos_token_id=())
    drafter = generate(d, v, PROMPTS[1], method="drafter", **run)
    verifier = generate(d, v, PROMPTS[1], method="verifier", **run)
    keep = generate(d, v, PROMPTS[1], method="seq_cascade", alpha=1.0, **run)
    defer = generate(d, v, PROMPTS[1], method="seq_cascade", alpha=0.0, **run)
    assert keep.tokens == drafter.tokens and keep.deferral_rate == 0.0 and keep.n_verifier_calls == 0
    assert defer.tokens == verifier.tokens and defer.deferral_rate == 1.0
    for aggregate in ("mean", "min"):
        g = generate(d, v, PROMPTS[1], method="seq_cascade", alpha=0.5, aggregate=aggregate, **run)
        assert g.tokens in (drafter.tokens, verifier.tokens)
    # BiLD rolling back every draft (threshold 0 on -log p) is the verifier's greedy output.
    assert (
        generate(d, v, PROMPTS[1], method="bild", bild_threshold=0.0, gamma=4, **run).tokens
        == verifier.tokens
    )
    # Never rolling back and never falling back: drafter blocks of gamma, then one verifier token.
    never = generate(d, v, PROMPTS[1], method="bild", bild_threshold=1e9, gamma=3, bild_fallback=0.0, **run)
    assert [s.source for s in never.trace] == (["draft"] * 3 + ["verifier"]) * 4


def test_generate_many_uses_one_seed_per_prompt(toy):
    runs = generate_many(
        *toy,
        [[0]] * 3,
        method="speculative",
        rule="opt",
        alpha=0.3,
        temperature=1.0,
        seed=5,
        max_new_tokens=8,
        progress=False,
    )
    assert [g.tokens for g in runs] == [
        generate(
            *toy,
            [0],
            method="speculative",
            rule="opt",
            alpha=0.3,
            temperature=1.0,
            seed=5 + i,
            max_new_tokens=8,
        ).tokens
        for i in range(3)
    ]


def test_toy_prompts_as_words(toy):
    world = toy.verifier.world
    g = generate(*toy, world.tokens[2], method="verifier", max_new_tokens=5, temperature=1.0)
    assert g.prompt_tokens == [0, 2] and g.text == world.decode(g.tokens)


def test_clear_errors(toy):
    d, v = toy
    small = models.tiny_random_llama(0)
    with pytest.raises(ValueError, match="vocabularies differ"):
        generate(models.tiny_random_llama(0, vocab_size=20), small, [1, 2], method="speculative")
    with pytest.raises(ValueError, match="gamma"):
        generate(d, v, [0], method="speculative", gamma=0)
    with pytest.raises(ValueError, match="alpha"):
        generate(d, v, [0], method="speculative", rule="chow", alpha=1.5)
    with pytest.raises(ValueError, match="alpha"):
        generate(d, v, [0], method="speculative", rule="lossy", alpha=1.0)
    with pytest.raises(ValueError, match="empty"):
        generate(d, v, [], method="speculative")
    with pytest.raises(ValueError, match="empty"):
        generate(d, v, "  ", method="speculative")
    with pytest.raises(ValueError, match="temperature"):
        generate(d, v, [0], method="speculative", temperature=-1.0)
    with pytest.raises(ValueError, match="method"):
        generate(d, v, [0], method="cascade")
    with pytest.raises(ValueError, match="oracle"):
        generate(d, v, [0], method="token_cascade", rule="diff")
    with pytest.raises(ValueError, match="prefix rule"):
        generate(d, v, [0], method="oracle", rule="token_v1")
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(d, v, [0], method="verifier", max_new_tokens=0)
    with pytest.raises(ValueError, match="token ids"):
        generate(small, small, [3, 99], method="verifier")
    with pytest.raises(ValueError, match="tokenizer"):
        generate(small, small, "some text", method="verifier")
    with pytest.raises(ValueError, match="decoder-only and an encoder-decoder"):
        generate(models.tiny_random_t5(0), small, [1, 2], method="speculative")


def test_load_pair_by_name():
    d, v = models.load_pair("toy-drafter", "toy-drafter")
    assert (
        d.world is v.world
        and generate(
            d, v, [0], method="speculative", rule="opt", alpha=0.3, temperature=1.0, max_new_tokens=10
        ).n_rejected
        == 0
    )
    d, v = models.load_pair("tiny-random-llama:1", "tiny-random-llama:2", dtype=("bfloat16", "float32"))
    assert (d.dtype, v.dtype) == (torch.bfloat16, torch.float32) and d.vocab_size == v.vocab_size == 16
    d, v = models.load_pair("tiny-random-t5", "tiny-random-t5:3")
    assert d.is_encoder_decoder and v.is_encoder_decoder and d.name != v.name
    with pytest.raises(ValueError, match="dtype"):
        models.load_pair("tiny-random-llama", "tiny-random-llama:1", dtype="int8")
