"""The batched engine and a verifier spread over devices, on the device TUTORIAL_LIB_TEST_DEVICE names.

By default everything runs on the CPU in float32 (a few seconds); `benchmarks/accelerator_check.sh`
sets TUTORIAL_LIB_TEST_DEVICE=cuda. There, each batched row must still equal its single run
(`batch.generate_batch`, `config_batch.generate_configs`), and a verifier split between two devices
by a `device_map` (GPU 0 and GPU 1, or GPU 0 and the CPU with one GPU) must decode the tokens it
decodes on one device: the engine feeds it where it reads its input ids, and its caches stay where
its layers are, also when the batched engines drop or regroup cache rows (`batch_select_indices` on
layers that sit on different devices).
"""

import os

import pytest
import torch
import transformers

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.decoding.config_batch import generate_configs
from tutorial_lib.decoding.engine import generate
from tutorial_lib.models import adapter, language_model

from test_batch import PROMPTS, RULES, assert_same_run

DEVICE = os.environ.get("TUTORIAL_LIB_TEST_DEVICE", "cpu")
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def pair():
    verifier = models.tiny_random_llama(0)
    drafter = models.perturbed(verifier, 0.3, seed=1)
    for lm in (drafter, verifier):
        lm.model.to(DEVICE)
    return models.ModelPair(drafter, verifier)


@pytest.mark.parametrize("rule", ["spec", "chow", "token_v2", "lossy"])
def test_batched_rows_equal_single_runs_on_device(pair, rule):
    options = dict(rule=rule, alpha=RULES[rule], temperature=0.0, max_new_tokens=12, eos_token_id=())
    assert pair.verifier.device.type == torch.device(DEVICE).type
    for i, (prompt, row) in enumerate(zip(PROMPTS, generate_batch(*pair, PROMPTS, **options))):
        assert_same_run(
            row, generate(*pair, prompt, method="speculative", gamma=1, bonus="none", seed=i, **options)
        )


def test_every_configuration_in_one_batch_on_device(pair):
    configurations = [
        dict(method="verifier"),
        dict(method="speculative", rule="chow", alpha=RULES["chow"]),
        dict(method="speculative", rule="token_v2", alpha=RULES["token_v2"]),
    ]
    shared = generate_configs(*pair, PROMPTS, configurations, max_new_tokens=12, eos_token_id=())
    for configuration, rows in zip(configurations, shared.generations):
        alone = generate_batch(*pair, PROMPTS, max_new_tokens=12, eos_token_id=(), **configuration)
        for got, want in zip(rows, alone):
            assert_same_run(got, want)


def _spread(path):
    """The tiny LLaMA at `path` with its embeddings and first layer on one device, the rest on another."""
    first, second = (
        (0, 1 if torch.cuda.device_count() > 1 else "cpu") if DEVICE.startswith("cuda") else ("cpu", "cpu")
    )
    device_map = {
        "model.embed_tokens": first,
        "model.layers.0": first,
        "model.layers.1": second,
        "model.norm": second,
        "model.rotary_emb": second,
        "lm_head": second,
    }
    return adapter.pretrained(
        transformers.LlamaForCausalLM, path, dtype=torch.float32, device="cpu", device_map=device_map
    ), first


def test_a_verifier_spread_over_two_devices_decodes_as_on_one(pair, tmp_path):
    pair.verifier.model.save_pretrained(tmp_path)
    spread, first = _spread(tmp_path)
    verifier = language_model.LanguageModel(
        spread, None, name="spread", eos_token_id=None, vocabulary=pair.verifier.vocabulary
    )
    assert verifier.device == torch.device(first if first == "cpu" else f"cuda:{first}")
    placed = models.ModelPair(pair.drafter, verifier)
    options = dict(
        rule="token_v2", alpha=RULES["token_v2"], temperature=0.0, max_new_tokens=12, eos_token_id=()
    )
    for i, prompt in enumerate(PROMPTS[:3]):
        for gamma in (1, 3):
            want = tl.generate(*pair, prompt, method="speculative", gamma=gamma, seed=i, **options)
            assert (
                tl.generate(*placed, prompt, method="speculative", gamma=gamma, seed=i, **options).tokens
                == want.tokens
            )
    # the batched engines too: their caches keep each layer where it runs, also when rows leave the batch
    # (a row stops at its end-of-sequence token) or regroup (configurations whose tokens part)
    stop = generate_batch(*pair, PROMPTS, **options)[0].tokens[2]
    stopping = {**options, "eos_token_id": stop}
    for got, want in zip(
        generate_batch(*placed, PROMPTS, **stopping), generate_batch(*pair, PROMPTS, **stopping)
    ):
        assert got.tokens == want.tokens
    assert (
        len({len(g.tokens) for g in generate_batch(*pair, PROMPTS, **stopping)}) > 1
    )  # rows did leave early
    configurations = [
        dict(method="verifier"),
        dict(method="speculative", rule="chow", alpha=RULES["chow"]),
        dict(method="speculative", rule="token_v2", alpha=RULES["token_v2"]),
    ]
    got, want = (
        generate_configs(*p, PROMPTS, configurations, max_new_tokens=12, eos_token_id=()).generations
        for p in (placed, pair)
    )
    assert [[g.tokens for g in rows] for rows in got] == [[g.tokens for g in rows] for rows in want]
