"""A shared prompt prefix run once and reused: every row sees exactly what it would see alone."""

import pytest
import torch

from tutorial_lib import models
from tutorial_lib.stats import token_curves as tc
from tutorial_lib.decoding.batch import generate_batch, prefill_batch
from tutorial_lib.decoding.engine import generate
from tutorial_lib.decoding.shared_prefix import SharedPrefix, common_prefix_length

pytestmark = pytest.mark.usefixtures("one_thread")

PREFIX = [5, 9, 2, 14, 3, 3, 8, 1, 11, 6]
ROWS = [PREFIX + [4, 7], PREFIX + [12, 3, 8, 15, 6, 1], PREFIX + [9], PREFIX + [2, 2, 2, 13, 7, 7, 1, 4, 9]]


@pytest.fixture(scope="module")
def pair():
    verifier = models.tiny_random_llama(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


def alone(lm, row, count):
    return lm.start(row).feed(row, keep=count)


def test_common_prefix_length_leaves_each_row_its_last_tokens():
    assert common_prefix_length(ROWS) == len(PREFIX)
    assert common_prefix_length([PREFIX, PREFIX]) == len(PREFIX) - 1
    assert common_prefix_length([PREFIX, PREFIX], keep_last=0) == len(PREFIX)
    assert common_prefix_length([[1, 2], [3, 4]]) == 0
    assert common_prefix_length([]) == 0


@pytest.mark.parametrize("batch_size", [1, 2, None])
def test_last_logits_equal_each_row_run_alone(pair, batch_size):
    counts = [2, 4, 1, 9]
    for lm in pair:
        prefix = SharedPrefix(lm, PREFIX)
        got = prefix.last_logits(ROWS, counts, batch_size=batch_size)
        for row, count, logits in zip(ROWS, counts, got):
            assert logits.shape == (count, lm.vocab_size)
            torch.testing.assert_close(logits, alone(lm, row, count), atol=1e-5, rtol=1e-5)
        assert prefix.tokens_fed >= len(PREFIX) + sum(len(r) - len(PREFIX) for r in ROWS)


def test_the_shared_cache_is_never_modified(pair):
    prefix = SharedPrefix(pair.verifier, PREFIX)
    first = prefix.last_logits(ROWS, [1] * len(ROWS))
    again = prefix.last_logits(ROWS[::-1], [1] * len(ROWS))[::-1]
    for a, b in zip(first, again):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_bad_rows_and_models_raise(pair):
    prefix = SharedPrefix(pair.verifier, PREFIX)
    with pytest.raises(ValueError, match="does not start with the shared prefix"):
        prefix.batch([[1, 2, 3] + PREFIX])
    with pytest.raises(ValueError, match="nothing to feed"):
        prefix.batch([PREFIX])
    with pytest.raises(ValueError, match="counts"):
        prefix.last_logits(ROWS, [1])
    with pytest.raises(ValueError, match=r"counts\[2\]=2"):
        prefix.last_logits(ROWS, [1, 1, 2, 1])
    with pytest.raises(ValueError, match="decoder-only transformers"):
        SharedPrefix(models.toy_pair().verifier, PREFIX)


def test_batched_decoding_over_a_shared_prefix_equals_single_runs(pair):
    # prompts sharing a long prefix (the few-shot case), one of them the prefix plus one token
    prompts = ROWS + [PREFIX + [3]]
    prefill = prefill_batch(*pair, prompts, batch_size=3)
    for rule, alpha in (("spec", 0.0), ("opt", 0.0), ("token_v2", 0.05)):
        batched = generate_batch(
            *pair,
            prompts,
            rule=rule,
            alpha=alpha,
            prefill=prefill,
            max_new_tokens=6,
            temperature=0.0,
            eos_token_id=(),
        )
        for i, prompt in enumerate(prompts):
            single = generate(
                *pair,
                prompt,
                method="speculative",
                rule=rule,
                alpha=alpha,
                gamma=1,
                bonus="none",
                seed=i,
                max_new_tokens=6,
                temperature=0.0,
                eos_token_id=(),
            )
            assert batched[i].tokens == single.tokens, (rule, i)


def test_greedy_references_batched_equal_one_at_a_time(pair):
    items = [tc.Item(f"i{i}", "t", row, None) for i, row in enumerate(ROWS)]
    stops = set()
    got = {
        it.id: it.reference
        for it in tc.greedy_references(
            pair, items, max_new_tokens=5, chat=False, cache=False, batch_size=3, progress=False
        )
    }
    for item in items:
        session = pair.verifier.start(item.prompt)
        logits, answer = session.feed(item.prompt, keep=1)[-1], []
        while len(answer) < 5:
            answer.append(int(logits.argmax()))
            if answer[-1] in stops:
                break
            logits = session.feed([answer[-1]], keep=1)[-1]
        assert got[item.id] == answer
