"""The engine inside transformers' `model.generate(..., custom_generate=...)` (`tl.speculative_cascade`).

At T = 0 its tokens are `tl.generate`'s for every rule and method (and, for SpecDecode, transformers' own
greedy output); at T = 1 its first token follows each rule's target (chi-square); batch rows equal their
single runs; a streamer gets exactly the emitted tokens; what it cannot honour is refused by name; and the
folder `hub/speculative-cascades` loads through `custom_generate="<folder>", trust_remote_code=True`.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.maths import targets
from tutorial_lib.maths import laws
from tutorial_lib.maths import accept_reject
from tutorial_lib.decoding.engine import generate

from test_engine_distribution import chi_square_p_value
from test_model_files import use_shared_model_cache

FOLDER = Path(__file__).resolve().parents[1] / "hub" / "speculative-cascades"
#: One alpha per rule, inside its live range, where the rule neither always defers nor never does.
ALPHAS = {
    "drafter": None,
    "verifier": None,
    "spec": None,
    "lossy": 0.3,
    "bild": 0.3,
    "chow": 0.5,
    "diff": 0.1,
    "opt": 0.5,
    "token_v1": 0.1,
    "token_v2": 0.1,
    "token_v3": 0.5,
    "mixture": 0.5,
}
PROMPTS = ([3, 5, 7, 2], [4, 4, 9], [12, 3, 8, 15, 6, 2, 3], [9, 9, 14])
EOS = 1

pytestmark = pytest.mark.usefixtures("one_thread")


def left_padded(prompts, pad=0):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def hf_tokens(pair, prompt, cascade, **options):
    """The new tokens of one prompt through `model.generate(..., custom_generate=cascade)`."""
    ids = torch.tensor([list(prompt)])
    out = pair.verifier.model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        assistant_model=pair.drafter.model,
        custom_generate=cascade,
        eos_token_id=EOS,
        pad_token_id=0,
        **options,
    )
    start = 1 if pair.verifier.is_encoder_decoder else ids.shape[1]  # after the decoder start token
    return out[0, start:].tolist()


# ---- T = 0: tl.generate's tokens, and transformers' greedy output for SpecDecode ------------------


@pytest.mark.parametrize("which", ["llama", "t5"])
@pytest.mark.parametrize("rule", sorted(ALPHAS))
def test_greedy_tokens_equal_tl_generate_for_every_rule(request, which, rule):
    pair = request.getfixturevalue(which)
    cascade = tl.speculative_cascade(rule=rule, alpha=ALPHAS[rule], gamma=3)
    for prompt in PROMPTS[:2]:
        mine = hf_tokens(pair, prompt, cascade, max_new_tokens=10, do_sample=False)
        reference = generate(
            *pair,
            prompt,
            method="speculative",
            rule=rule,
            alpha=ALPHAS[rule],
            gamma=3,
            max_new_tokens=10,
            eos_token_id=EOS,
        )
        assert mine == reference.tokens


@pytest.mark.parametrize(
    "method, options",
    [
        ("token_cascade", dict(alpha=0.5)),
        ("oracle", dict(rule="diff", alpha=0.1)),
        ("seq_cascade", dict(alpha=0.5)),
        ("bild", dict(bild_threshold=1.0)),
        ("drafter", {}),
        ("verifier", {}),
    ],
)
def test_greedy_tokens_equal_tl_generate_for_the_other_methods(llama, method, options):
    cascade = tl.speculative_cascade(method=method, gamma=3, **{"rule": None, **options})
    for prompt in PROMPTS[:2]:
        reference = generate(
            *llama, prompt, method=method, gamma=3, max_new_tokens=10, eos_token_id=EOS, **options
        )
        assert hf_tokens(llama, prompt, cascade, max_new_tokens=10, do_sample=False) == reference.tokens


# gamma="auto" measures the pair's call costs once (seconds): on the llama pair only
@pytest.mark.parametrize(
    "which, gamma", [("llama", 1), ("llama", 4), ("llama", "auto"), ("t5", 1), ("t5", 4)]
)
def test_spec_decode_gives_transformers_greedy_output(request, which, gamma):
    pair = request.getfixturevalue(which)
    ids = torch.tensor([PROMPTS[2]])
    options = dict(
        attention_mask=torch.ones_like(ids),
        max_new_tokens=12,
        do_sample=False,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    greedy = pair.verifier.model.generate(ids, **options)
    mine = pair.verifier.model.generate(
        ids,
        assistant_model=pair.drafter.model,
        custom_generate=tl.speculative_cascade(gamma=gamma),
        **options,
    )
    assert torch.equal(mine, greedy)


# ---- T = 1: the first token follows the rule's target --------------------------------------------


def first_token_law(pair, prompt, rule, alpha):
    q, p = (x.double() for x in models.next_token_distributions(pair, prompt))
    pi = targets.target_distribution(rule, q, p, 0.0 if alpha is None else alpha)
    return accept_reject.output_distribution(pi, q), p


@pytest.mark.parametrize("rule", sorted(ALPHAS))
def test_first_sampled_token_follows_the_rules_target(llama, rule):
    n, prompt = 600, PROMPTS[0]
    ids = torch.tensor([prompt] * n)
    out = llama.verifier.model.generate(
        ids,
        assistant_model=llama.drafter.model,
        do_sample=True,
        top_k=None,
        max_new_tokens=1,
        custom_generate=tl.speculative_cascade(rule, ALPHAS[rule]),
        seed=11,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    counts = np.bincount(out[:, len(prompt)].numpy(), minlength=models.TINY_VOCAB)
    law, p = first_token_law(llama, prompt, rule, ALPHAS[rule])
    assert chi_square_p_value(counts, law.numpy() * n) > 1e-3
    if float(laws.tv_distance(law, p)) > 0.1:  # the test sees a wrong law: the verifier's, here
        assert chi_square_p_value(counts, p.numpy() * n) < 1e-3


def test_temperature_is_honoured(llama):
    n, prompt, temperature = 600, PROMPTS[1], 0.5
    ids = torch.tensor([prompt] * n)
    out = llama.verifier.model.generate(
        ids,
        assistant_model=llama.drafter.model,
        do_sample=True,
        top_k=None,
        temperature=temperature,
        max_new_tokens=1,
        seed=5,
        custom_generate=tl.speculative_cascade("spec"),
        eos_token_id=EOS,
        pad_token_id=0,
    )
    counts = np.bincount(out[:, len(prompt)].numpy(), minlength=models.TINY_VOCAB)
    _, p = models.next_token_distributions(llama, prompt, temperature=temperature)
    assert chi_square_p_value(counts, p.double().numpy() * n) > 1e-3
    _, p_at_one = models.next_token_distributions(llama, prompt)
    assert chi_square_p_value(counts, p_at_one.double().numpy() * n) < 1e-3


# ---- batches, padding, streamer, output ----------------------------------------------------------


@pytest.mark.parametrize("which", ["llama", "t5"])
@pytest.mark.parametrize("do_sample", [False, True])
@pytest.mark.parametrize("gamma", [1, 3])
def test_batch_rows_equal_single_rows(request, which, do_sample, gamma):
    pair = request.getfixturevalue(which)
    cascade = tl.speculative_cascade("token_v2", 0.1, gamma=gamma)
    ids, mask = left_padded(PROMPTS)
    options = dict(max_new_tokens=10, do_sample=do_sample, top_k=None)
    batch = pair.verifier.model.generate(
        ids,
        attention_mask=mask,
        assistant_model=pair.drafter.model,
        custom_generate=cascade,
        seed=40,
        eos_token_id=EOS,
        pad_token_id=0,
        **options,
    )
    start = 1 if pair.verifier.is_encoder_decoder else ids.shape[1]
    for i, prompt in enumerate(PROMPTS):
        alone = hf_tokens(pair, prompt, cascade, seed=40 + i, **options)
        row = batch[i, start:].tolist()
        assert row[: len(alone)] == alone and set(row[len(alone) :]) <= {0}  # padded after its EOS
        if not pair.verifier.is_encoder_decoder:
            assert torch.equal(batch[i, : ids.shape[1]], ids[i])  # the prompt as given, padding included
    assert any(EOS in batch[i].tolist() for i in range(len(PROMPTS))) or batch.shape[1] == start + 10


class RecordingStreamer:
    """transformers' streamer interface: `put(tensor)` and `end()`."""

    def __init__(self):
        self.puts, self.ends = [], 0

    def put(self, value):
        self.puts.append(value.reshape(-1).tolist())

    def end(self):
        self.ends += 1


@pytest.mark.parametrize("method, rule", [("speculative", "token_v2"), ("seq_cascade", None)])
def test_streamer_gets_exactly_the_emitted_tokens(llama, method, rule):
    prompt, streamer = PROMPTS[2], RecordingStreamer()
    ids = torch.tensor([prompt])
    out = llama.verifier.model.generate(
        ids,
        assistant_model=llama.drafter.model,
        streamer=streamer,
        custom_generate=tl.speculative_cascade(rule, 0.1, gamma=3, method=method),
        max_new_tokens=12,
        do_sample=True,
        top_k=None,
        seed=3,
        return_dict_in_generate=True,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    assert streamer.puts[0] == prompt  # transformers puts the prompt before decoding
    assert sum(streamer.puts[1:], []) == out.sequences[0, len(prompt) :].tolist()
    assert streamer.ends == 1
    if method == "speculative":  # token by token, as they are emitted
        assert all(len(put) == 1 for put in streamer.puts[1:])


def test_encoder_decoder_returns_a_dict_with_sequences(t5):
    ids, mask = left_padded(PROMPTS[:2])
    out = t5.verifier.model.generate(
        ids,
        attention_mask=mask,
        assistant_model=t5.drafter.model,
        max_new_tokens=5,
        custom_generate=tl.speculative_cascade("chow", 0.5, gamma=2),
        return_dict_in_generate=True,
        do_sample=False,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    assert type(out).__name__ == "GenerateEncoderDecoderOutput"
    assert out.sequences.shape[0] == 2 and bool((out.sequences[:, 0] == 0).all())  # the decoder start token


# ---- what it cannot honour ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, named",
    [
        (dict(do_sample=True, top_p=0.9, top_k=None), "top_p"),
        (dict(do_sample=True), "top_k"),
        (dict(do_sample=True, top_k=None, repetition_penalty=1.3), "repetition_penalty"),
        (dict(num_beams=2), "num_beams"),
        (dict(output_scores=True, return_dict_in_generate=True), "output_scores"),
        (dict(max_time=5.0), "MaxTimeCriteria"),
        (dict(min_new_tokens=3), "min_new_tokens"),
    ],
)
def test_options_it_cannot_honour_are_refused_by_name(llama, options, named):
    ids = torch.tensor([PROMPTS[0]])
    with pytest.raises(ValueError, match=named):
        llama.verifier.model.generate(
            ids,
            assistant_model=llama.drafter.model,
            max_new_tokens=4,
            custom_generate=tl.speculative_cascade(gamma=2),
            pad_token_id=0,
            **options,
        )


def test_a_missing_drafter_a_streamed_batch_and_a_bad_rule_are_refused(llama):
    ids, mask = left_padded(PROMPTS[:2])
    with pytest.raises(ValueError, match="assistant_model"):
        llama.verifier.model.generate(ids[:1], custom_generate=tl.speculative_cascade(), max_new_tokens=3)
    with pytest.raises(ValueError, match="streamer"):
        llama.verifier.model.generate(
            ids,
            attention_mask=mask,
            assistant_model=llama.drafter.model,
            pad_token_id=0,
            streamer=RecordingStreamer(),
            custom_generate=tl.speculative_cascade(),
            max_new_tokens=3,
        )
    with pytest.raises(ValueError, match="rule"):
        tl.speculative_cascade(rule="token_v9")
    with pytest.raises(ValueError, match="alpha"):
        tl.speculative_cascade(rule="chow", alpha=3.0)
    with pytest.raises(ValueError, match="gamma='auto'"):
        tl.speculative_cascade(method="token_cascade", rule=None, gamma="auto")


# ---- the folder in the Hub's layout ---------------------------------------------------------------


def test_the_folder_loads_through_custom_generate_with_trust_remote_code(llama):
    assert (FOLDER / "custom_generate" / "generate.py").is_file()
    assert (FOLDER / "custom_generate" / "requirements.txt").is_file() and (FOLDER / "README.md").is_file()
    ids = torch.tensor([PROMPTS[2]])
    options = dict(
        attention_mask=torch.ones_like(ids),
        assistant_model=llama.drafter.model,
        max_new_tokens=10,
        do_sample=False,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    from_folder = llama.verifier.model.generate(
        ids,
        custom_generate=str(FOLDER),
        trust_remote_code=True,
        rule="token_v2",
        alpha=0.1,
        gamma=3,
        **options,
    )
    from_callable = llama.verifier.model.generate(
        ids, custom_generate=tl.speculative_cascade("token_v2", 0.1, gamma=3), **options
    )
    assert torch.equal(from_folder, from_callable)
    with pytest.raises(ValueError, match="trust_remote_code"):
        llama.verifier.model.generate(ids, custom_generate=str(FOLDER), **options)


# ---- a real pair: SmolLM2-135M in bf16 drafting for itself in fp32 ---------------------------------


@pytest.fixture(scope="module")
def smollm2():
    use_shared_model_cache()
    return models.load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))


def test_smollm2_spec_decode_equals_transformers_greedy_and_token_v2_equals_tl_generate(smollm2):
    verifier = smollm2.verifier
    prompt = verifier.chat_prompt("Explain in two sentences why the sky is blue.")
    ids = torch.tensor([prompt])
    options = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=16, pad_token_id=2)
    greedy = verifier.model.generate(ids, **options)
    mine = verifier.model.generate(
        ids,
        assistant_model=smollm2.drafter.model,
        **options,
        custom_generate=tl.speculative_cascade("spec", gamma=4),
    )
    assert torch.equal(mine, greedy)
    cascade = verifier.model.generate(
        ids,
        assistant_model=smollm2.drafter.model,
        **options,
        custom_generate=tl.speculative_cascade("token_v2", 0.2, gamma=4),
    )
    reference = generate(
        *smollm2, prompt, method="speculative", rule="token_v2", alpha=0.2, gamma=4, max_new_tokens=16
    )
    assert cascade[0, len(prompt) :].tolist() == reference.tokens
