"""Every configuration in one batch (`config_batch.generate_configs`): each row equals the row
`generate_batch` decodes for its configuration alone, and rows with one history share a forward pass."""

import pytest

from tutorial_lib import models
from tutorial_lib.decoding.batch import generate_batch, prefill_batch
from tutorial_lib.decoding.config_batch import generate_configs

from test_batch import PROMPTS, RULES, assert_same_run

pytestmark = pytest.mark.usefixtures("one_thread")

CONFIGURATIONS = [dict(method="drafter"), dict(method="verifier")] + [
    dict(method="speculative", rule=rule, alpha=alpha) for rule, alpha in sorted(RULES.items())
]


@pytest.fixture(scope="module")
def pair():
    verifier = models.tiny_random_llama(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


def alone(pair, configuration, **options):
    return generate_batch(*pair, PROMPTS, **{**configuration, **options})


def test_each_row_equals_its_configuration_alone_at_t0(pair):
    shared = generate_configs(*pair, PROMPTS, CONFIGURATIONS, max_new_tokens=14, eos_token_id=())
    assert len(shared.generations) == len(CONFIGURATIONS)
    for configuration, rows in zip(CONFIGURATIONS, shared.generations):
        for got, want in zip(rows, alone(pair, configuration, max_new_tokens=14, eos_token_id=())):
            assert_same_run(got, want)
            assert (
                got.drafter_calls_by_k,
                got.verifier_calls_by_k,
                got.drafter_prefills,
                got.verifier_prefills,
            ) == (
                want.drafter_calls_by_k,
                want.verifier_calls_by_k,
                want.drafter_prefills,
                want.verifier_prefills,
            )
    steps = len(PROMPTS) * 14
    # every configuration but the verifier's needs the drafter, every one but the drafter's the verifier
    assert shared.rows_needed == {
        "drafter": (len(CONFIGURATIONS) - 1) * steps,
        "verifier": (len(CONFIGURATIONS) - 1) * steps,
    }
    # the rules agree on many tokens, so far fewer rows were computed than needed
    assert all(sharing > 2 for sharing in shared.sharing.values()), shared.sharing


def test_rows_match_their_configuration_alone_at_t1_beside_t0(pair):
    configurations = [dict(c, temperature=t) for c in CONFIGURATIONS[:6] for t in (1.0, 0.0)]
    seeds = [7, 3, 11, 5, 2]
    shared = generate_configs(*pair, PROMPTS, configurations, max_new_tokens=12, eos_token_id=(), seeds=seeds)
    same = []
    for configuration, rows in zip(configurations, shared.generations):
        want = alone(pair, configuration, max_new_tokens=12, eos_token_id=(), seeds=seeds)
        same += [g.tokens == w.tokens for g, w in zip(rows, want)]
        assert all(g.temperature == configuration["temperature"] for g in rows)
    # Only float noise between differently composed batches may move a draw.
    assert sum(same) >= len(same) - 2, same


def test_identical_histories_share_every_forward_pass(pair):
    # At T = 0 SpecDecode emits the verifier's greedy tokens: two configurations, one slot per prompt.
    shared = generate_configs(
        *pair, PROMPTS, [dict(method="verifier"), dict(rule="spec")], max_new_tokens=10, eos_token_id=()
    )
    assert [g.tokens for g in shared.generations[0]] == [g.tokens for g in shared.generations[1]]
    steps = len(PROMPTS) * 10
    assert shared.rows_needed == {"drafter": steps, "verifier": 2 * steps}
    assert shared.rows_computed == {"drafter": steps, "verifier": steps}
    assert shared.sharing == {"drafter": 1.0, "verifier": 2.0}


def test_a_slot_of_one_models_rows_skips_the_other_model(pair):
    # The drafter's and the verifier's greedy answers part at their first disagreement into two slots,
    # each of one model's rows: each model then computes its own slot only, one row per prompt and step
    # (computing both slots with both models would make it two).
    shared = generate_configs(
        *pair, PROMPTS, [dict(method="drafter"), dict(method="verifier")], max_new_tokens=12, eos_token_id=()
    )
    steps = len(PROMPTS) * 12
    drafter_rows, verifier_rows = shared.generations
    assert sum(d.tokens != v.tokens for d, v in zip(drafter_rows, verifier_rows)) >= 3
    assert shared.rows_needed == shared.rows_computed == {"drafter": steps, "verifier": steps}
    for configuration, rows in zip([dict(method="drafter"), dict(method="verifier")], shared.generations):
        assert [g.tokens for g in rows] == [
            g.tokens for g in alone(pair, configuration, max_new_tokens=12, eos_token_id=())
        ]


def test_rows_stop_at_their_own_eos_and_chunks_agree(pair):
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(8)]
    options = dict(max_new_tokens=20, eos_token_id=[2, 5], seeds=range(8))
    configurations = [
        dict(rule="token_v2", alpha=0.05, temperature=1.0),
        dict(rule="chow", alpha=0.6),
        dict(method="drafter", temperature=1.0),
    ]
    prefill = prefill_batch(*pair, prompts, batch_size=3)
    shared = generate_configs(*pair, prompts, configurations, prefill=prefill, **options)
    for configuration, rows in zip(configurations, shared.generations):
        want = generate_batch(*pair, prompts, prefill=prefill, **configuration, **options)
        assert [g.tokens for g in rows] == [g.tokens for g in want]
        assert [g.stopped_at_eos for g in rows] == [g.stopped_at_eos for g in want]
    lengths = [len(g.tokens) for rows in shared.generations for g in rows]
    assert len(set(lengths)) > 2 and any(g.stopped_at_eos for rows in shared.generations for g in rows)


@pytest.mark.parametrize(
    "configurations,message",
    [
        ([], "non-empty list"),
        (dict(rule="chow"), "non-empty list"),
        ([dict(rule="chow", alpha=0.2, gamma=3)], "gamma is 1"),
        ([dict(method="bild")], "not batched"),
        ([dict(rule="chow", alpha=2.0)], "outside the range"),
    ],
)
def test_bad_configurations_say_what_to_change(pair, configurations, message):
    with pytest.raises(ValueError, match=message):
        generate_configs(*pair, PROMPTS, configurations)
