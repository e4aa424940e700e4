"""The engine's outputs, pinned token for token: a refactoring of the engine must not change them.

The expected values were recorded by running the engine as it stood before the verification step
was shared between `generate` and `generate_batch`. Each case is `(pair, prompt, seed,
options)`; the record is the tokens and the `(n_accepted, n_rejected, n_verifier_calls,
n_drafter_calls)` counters. Temperatures other than 0 and 1 exercise the split between sampled
(temperature-scaled) and decided (temperature-1) laws.
"""

import pytest

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.decoding.engine import generate

pytestmark = pytest.mark.usefixtures("one_thread")

TOY_PROMPT = [0, 5, 7]
LLAMA_PROMPT = [3, 5, 7, 2, 1]
BATCH_PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1, 2, 3], [7])

CASES = {
    "toy spec g3": ("toy", TOY_PROMPT, 0, dict(method="speculative", rule="spec", gamma=3, temperature=1.0)),
    "toy opt g3": (
        "toy",
        TOY_PROMPT,
        1,
        dict(method="speculative", rule="opt", alpha=0.2, gamma=3, temperature=0.8),
    ),
    "toy token_v2 g3": (
        "toy",
        TOY_PROMPT,
        2,
        dict(method="speculative", rule="token_v2", alpha=0.1, gamma=3, temperature=1.0),
    ),
    "toy lossy g3": (
        "toy",
        TOY_PROMPT,
        3,
        dict(method="speculative", rule="lossy", alpha=0.3, gamma=3, temperature=1.0),
    ),
    "toy lossy* g3": (
        "toy",
        TOY_PROMPT,
        4,
        dict(method="speculative", rule="lossy", alpha=0.3, beta="normalize", gamma=3, temperature=0.7),
    ),
    "toy chow bonus=target": (
        "toy",
        TOY_PROMPT,
        5,
        dict(method="speculative", rule="chow", alpha=0.5, gamma=3, bonus="target", temperature=1.0),
    ),
    "toy token_cascade": ("toy", TOY_PROMPT, 6, dict(method="token_cascade", alpha=0.5, temperature=1.0)),
    "toy bild": (
        "toy",
        TOY_PROMPT,
        7,
        dict(method="bild", bild_threshold=1.0, gamma=4, bild_fallback=0.2, temperature=1.0),
    ),
    "llama spec g3": (
        "llama",
        LLAMA_PROMPT,
        0,
        dict(method="speculative", rule="spec", gamma=3, temperature=1.0),
    ),
    "llama opt g3": (
        "llama",
        LLAMA_PROMPT,
        1,
        dict(method="speculative", rule="opt", alpha=0.5, gamma=3, temperature=0.8),
    ),
    "llama token_v2 g3": (
        "llama",
        LLAMA_PROMPT,
        2,
        dict(method="speculative", rule="token_v2", alpha=0.05, gamma=3, temperature=1.0),
    ),
    "llama lossy g3": (
        "llama",
        LLAMA_PROMPT,
        3,
        dict(method="speculative", rule="lossy", alpha=0.3, gamma=3, temperature=1.0),
    ),
    "llama spec g3 T0": (
        "llama",
        LLAMA_PROMPT,
        0,
        dict(method="speculative", rule="spec", gamma=3, temperature=0.0),
    ),
    "llama token_v3 bonus=none": (
        "llama",
        LLAMA_PROMPT,
        4,
        dict(method="speculative", rule="token_v3", alpha=0.3, gamma=2, bonus="none", temperature=0.9),
    ),
    "llama token_cascade": (
        "llama",
        LLAMA_PROMPT,
        5,
        dict(method="token_cascade", alpha=0.4, temperature=1.0),
    ),
    "llama bild": (
        "llama",
        LLAMA_PROMPT,
        6,
        dict(method="bild", bild_threshold=1.0, gamma=4, bild_fallback=0.3, temperature=1.0),
    ),
    "llama oracle": (
        "llama",
        LLAMA_PROMPT,
        7,
        dict(method="oracle", rule="diff", alpha=0.1, temperature=1.0),
    ),
    "llama seq_cascade": ("llama", LLAMA_PROMPT, 8, dict(method="seq_cascade", alpha=0.5, temperature=1.0)),
    "t5 token_v2 g3": (
        "t5",
        LLAMA_PROMPT,
        9,
        dict(method="speculative", rule="token_v2", alpha=0.05, gamma=3, temperature=1.0),
    ),
}

BATCH_CASES = {
    "batch spec": dict(rule="spec", temperature=1.0),
    "batch opt": dict(rule="opt", alpha=0.5, temperature=0.8),
    "batch token_v2": dict(rule="token_v2", alpha=0.05, temperature=1.0),
    "batch lossy": dict(rule="lossy", alpha=0.3, temperature=1.0),
}


def pairs():
    llama = models.tiny_random_llama(0)
    t5 = models.tiny_random_t5(0)
    return {
        "toy": models.toy_pair(tl.ToyWorld()),
        "llama": models.ModelPair(models.perturbed(llama, 0.3, seed=1), llama),
        "t5": models.ModelPair(models.perturbed(t5, 0.3, seed=1), t5),
    }


def run_case(all_pairs, key):
    name, prompt, seed, options = CASES[key]
    g = generate(*all_pairs[name], prompt, seed=seed, max_new_tokens=20, eos_token_id=(), **options)
    return g.tokens, (g.n_accepted, g.n_rejected, g.n_verifier_calls, g.n_drafter_calls)


def run_batch_case(all_pairs, key):
    out = generate_batch(
        *all_pairs["llama"],
        BATCH_PROMPTS,
        method="speculative",
        seeds=[10, 11, 12, 13],
        max_new_tokens=12,
        eos_token_id=(),
        **BATCH_CASES[key],
    )
    return [g.tokens for g in out], [(g.n_accepted, g.n_rejected) for g in out]


EXPECTED = {
    "toy spec g3": ([9, 11, 8, 15, 15, 3, 3, 14, 1, 7, 15, 7, 6, 10, 3, 7, 4, 13, 5, 14], (6, 14, 14, 41)),
    "toy opt g3": ([14, 1, 9, 8, 13, 6, 6, 15, 13, 1, 6, 5, 1, 7, 13, 3, 9, 6, 13, 8], (13, 5, 7, 20)),
    "toy token_v2 g3": (
        [1, 14, 4, 11, 1, 8, 1, 10, 1, 2, 10, 7, 15, 9, 9, 10, 14, 14, 2, 5],
        (9, 10, 11, 30),
    ),
    "toy lossy g3": ([1, 14, 4, 13, 1, 1, 1, 5, 14, 11, 12, 9, 3, 10, 14, 13, 6, 2, 1, 4], (9, 9, 11, 33)),
    "toy lossy* g3": ([13, 11, 2, 10, 7, 14, 10, 15, 13, 15, 7, 5, 14, 15, 1, 1, 3, 6, 5, 6], (12, 6, 9, 24)),
    "toy chow bonus=target": (
        [14, 3, 9, 6, 10, 7, 15, 7, 9, 9, 10, 1, 15, 2, 4, 13, 1, 6, 4, 13],
        (11, 8, 9, 27),
    ),
    "toy token_cascade": ([6, 3, 7, 12, 1, 9, 4, 13, 12, 8, 3, 8, 14, 3, 7, 7, 11, 1, 6, 2], (0, 0, 20, 20)),
    "toy bild": ([13, 15, 2, 8, 4, 13, 4, 12, 12, 3, 15, 4, 13, 1, 7, 1, 7, 12, 8, 1], (1, 5, 19, 25)),
    "llama spec g3": ([9, 9, 4, 3, 12, 3, 7, 4, 5, 14, 4, 10, 4, 5, 14, 4, 12, 3, 7, 3], (13, 4, 7, 20)),
    "llama opt g3": (
        [15, 15, 15, 15, 15, 15, 15, 15, 11, 7, 11, 7, 11, 7, 11, 4, 3, 7, 11, 7],
        (15, 0, 5, 15),
    ),
    "llama token_v2 g3": ([3, 7, 11, 7, 7, 12, 3, 7, 7, 12, 3, 7, 11, 7, 12, 3, 7, 12, 3, 7], (14, 3, 7, 19)),
    "llama lossy g3": ([14, 4, 7, 11, 7, 7, 14, 4, 3, 7, 7, 12, 3, 7, 4, 7, 12, 3, 12, 3], (14, 2, 7, 20)),
    "llama spec g3 T0": ([3, 7, 7, 12, 3, 7, 12, 3, 7, 7, 12, 3, 7, 12, 3, 7, 12, 3, 7, 12], (14, 3, 7, 20)),
    "llama token_v3 bonus=none": (
        [3, 7, 7, 12, 3, 7, 12, 3, 7, 7, 12, 3, 7, 12, 3, 7, 12, 3, 7, 7],
        (17, 3, 11, 22),
    ),
    "llama token_cascade": (
        [3, 7, 14, 4, 14, 4, 10, 8, 12, 3, 14, 4, 3, 7, 11, 7, 4, 3, 7, 4],
        (0, 0, 14, 20),
    ),
    "llama bild": ([3, 7, 7, 7, 7, 12, 3, 7, 12, 3, 12, 3, 7, 7, 12, 3, 7, 12, 3, 7], (12, 6, 9, 28)),
    "llama oracle": ([11, 7, 12, 3, 7, 4, 3, 7, 4, 12, 3, 7, 12, 3, 7, 11, 7, 7, 4, 7], (0, 0, 20, 20)),
    "llama seq_cascade": (
        [15, 15, 10, 10, 4, 5, 15, 15, 15, 3, 7, 7, 4, 0, 3, 7, 12, 3, 7, 7],
        (0, 0, 20, 20),
    ),
    "t5 token_v2 g3": (
        [7, 12, 12, 12, 12, 12, 9, 9, 14, 14, 14, 14, 14, 14, 4, 9, 9, 9, 9, 9],
        (9, 10, 11, 31),
    ),
    "batch spec": (
        [
            [7, 3, 7, 12, 3, 7, 12, 3, 7, 12, 15, 3],
            [3, 7, 7, 11, 14, 4, 5, 14, 4, 9, 3, 14],
            [7, 11, 7, 12, 3, 7, 11, 7, 12, 3, 12, 3],
            [14, 11, 7, 11, 7, 7, 7, 7, 7, 12, 3, 7],
        ],
        [(9, 3), (9, 3), (11, 1), (9, 3)],
    ),
    "batch opt": (
        [
            [7, 11, 7, 12, 3, 7, 11, 7, 12, 3, 7, 4],
            [3, 7, 7, 11, 14, 4, 5, 14, 4, 3, 7, 11],
            [7, 11, 7, 12, 3, 7, 11, 7, 12, 3, 7, 12],
            [14, 11, 7, 11, 7, 7, 15, 15, 15, 15, 15, 15],
        ],
        [(12, 0), (10, 2), (12, 0), (10, 2)],
    ),
    "batch token_v2": (
        [
            [7, 12, 3, 7, 12, 3, 7, 7, 7, 12, 3, 7],
            [3, 7, 7, 11, 7, 4, 5, 14, 4, 9, 3, 14],
            [7, 11, 7, 12, 3, 7, 12, 3, 7, 12, 3, 7],
            [12, 3, 7, 12, 3, 7, 12, 3, 7, 7, 4, 4],
        ],
        [(10, 2), (9, 3), (10, 2), (9, 3)],
    ),
    "batch lossy": (
        [
            [7, 11, 7, 7, 12, 3, 7, 7, 7, 12, 15, 12],
            [3, 7, 7, 11, 14, 4, 5, 14, 4, 9, 3, 14],
            [7, 11, 7, 12, 3, 7, 11, 7, 12, 3, 7, 12],
            [7, 14, 15, 14, 4, 11, 14, 15, 15, 15, 15, 15],
        ],
        [(9, 3), (9, 3), (12, 0), (12, 0)],
    ),
}


@pytest.fixture(scope="module")
def all_pairs():
    return pairs()


@pytest.mark.parametrize("key", list(CASES))
def test_generate_outputs_are_pinned(all_pairs, key):
    assert run_case(all_pairs, key) == EXPECTED[key]


@pytest.mark.parametrize("key", list(BATCH_CASES))
def test_generate_batch_outputs_are_pinned(all_pairs, key):
    assert run_batch_case(all_pairs, key) == EXPECTED[key]
