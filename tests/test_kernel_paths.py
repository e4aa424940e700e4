"""Kernel paths: the engine stays lossless on every path it can choose (at T = 0 token for token against
transformers' greedy on the same model, at T = 1 the first tokens follow Algorithm 4's law), the probe's
choice is kept and reused, a forced path is honoured, and without bf16 units the choice leaves bf16 out."""

import copy

import numpy as np
import pytest
import torch

from tutorial_lib import models

from tutorial_lib.maths import targets
from tutorial_lib.maths import accept_reject
from tutorial_lib.decoding.engine import generate
from tutorial_lib.models import kernel_paths as kp

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1])


def _pair(path):
    verifier = models.tiny_random_llama(0)
    drafter = models.perturbed(verifier, 0.3, seed=1)
    drafter.model, verifier.model = copy.deepcopy(drafter.model), copy.deepcopy(verifier.model)
    drafter.model = kp.apply_path(drafter.model, "fp32" if path == "int8-dynamic-drafter" else path)
    verifier.model = kp.apply_path(verifier.model, "fp32" if path == "int8-dynamic-drafter" else path)
    if path == "int8-dynamic-drafter":
        drafter.model = kp.apply_path(drafter.model, "int8-dynamic")
    return models.ModelPair(drafter, verifier)


def _hf_greedy(lm, prompt, n):
    ids = torch.tensor([prompt])
    out = lm.model.generate(
        ids, do_sample=False, max_new_tokens=n, min_new_tokens=n, eos_token_id=None, pad_token_id=0
    )
    return out[0, ids.shape[1] :].tolist()


@pytest.mark.parametrize("path", ["fp32", "fp32-gemv", "fp32-packed", "bf16", "int8-dynamic-drafter"])
@pytest.mark.parametrize("gamma", [1, 4])
def test_lossless_at_t0_on_every_path(path, gamma):
    drafter, verifier = _pair(path)
    rejected = 0
    for prompt in PROMPTS:
        g = generate(
            drafter,
            verifier,
            prompt,
            method="speculative",
            rule="spec",
            gamma=gamma,
            max_new_tokens=20,
            eos_token_id=(),
        )
        assert g.tokens == _hf_greedy(verifier, prompt, 20), path
        rejected += g.n_rejected
    assert rejected > 0


def test_the_gemv_path_computes_the_same_layer_in_another_order():
    layer = torch.nn.Linear(64, 48)
    x = torch.randn(1, 3, 64)
    expected = layer(x)
    patched = kp.apply_path(copy.deepcopy(layer), "fp32-gemv")
    assert kp.path_of(patched) == "fp32-gemv" and "forward" in patched.__dict__
    assert torch.allclose(patched(x), expected, atol=1e-5)
    many = torch.randn(1, kp.GEMV_MAX_ROWS + 1, 64)  # more rows: the library's own F.linear
    assert torch.equal(patched(many), torch.nn.functional.linear(many, patched.weight, patched.bias))
    back = kp.apply_path(patched, "fp32")
    assert "forward" not in back.__dict__ and torch.equal(back(x), expected)
    with pytest.raises(ValueError, match="load it again"):
        kp.apply_path(kp.apply_path(copy.deepcopy(layer), "bf16"), "fp32")


def test_the_packed_path_holds_each_weight_once_and_gives_it_back_bit_for_bit():
    model = models.tiny_random_llama(0).model
    plain = copy.deepcopy(model)
    before = kp.weight_bytes(model)
    ids = torch.tensor([[3, 5, 7, 2]])
    with torch.inference_mode():
        expected = plain(ids).logits
        packed = kp.apply_path(model, "fp32-packed")
        assert kp.path_of(packed) == "fp32-packed"
        assert torch.allclose(packed(ids).logits, expected, atol=1e-4)
    linears = [m for m in packed.modules() if isinstance(m, torch.nn.Linear)]
    head = packed.get_output_embeddings()
    assert all(m.weight.numel() == 0 for m in linears if m is not head)  # one copy: the packed one
    assert kp.weight_bytes(packed) == before
    back = kp.apply_path(packed, "fp32")
    for (name, a), b in zip(back.named_parameters(), plain.parameters()):
        assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="fp32-packed path computes float32"):
        kp.apply_path(copy.deepcopy(plain), "fp32-packed").model.layers[0].mlp.down_proj(
            torch.ones(1, 2, plain.config.intermediate_size, dtype=torch.float64)
        )


@pytest.mark.parametrize("path", ["fp32-gemv", "fp32-packed", "bf16", "int8-dynamic-drafter"])
def test_first_tokens_follow_algorithm_4_on_a_path(path):
    """At T = 1, the first token of a Chow block follows out_0 = min(q, pi) + rejected mass x residual,
    with q and p read from the models as they compute on the path."""
    from scipy import stats

    drafter, verifier = _pair(path)
    pair = models.ModelPair(drafter, verifier)
    prompt, alpha, runs = [3, 5, 7], 0.5, 3000
    q, p = (row.double() for row in models.next_token_distributions(pair, prompt))
    law = accept_reject.output_distribution(targets.target_distribution("chow", q, p, alpha), q)
    counts = np.zeros(q.shape[0])
    for seed in range(runs):
        g = generate(
            drafter,
            verifier,
            prompt,
            method="speculative",
            rule="chow",
            alpha=alpha,
            gamma=3,
            temperature=1.0,
            max_new_tokens=1,
            seed=seed,
            eos_token_id=(),
        )
        counts[g.tokens[0]] += 1
    expected = law.numpy() * runs
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    wanted = np.append(expected[~small], expected[small].sum())
    assert stats.chisquare(observed, wanted * observed.sum() / wanted.sum()).pvalue > 1e-3


def _probe(bf16_cheapest=True):
    seconds = {
        "fp32": {1: 1.0, 2: 1.6, 4: 2.0, 6: 2.2},
        "fp32-gemv": {1: 0.9, 2: 1.0, 4: 1.1, 6: 1.5},
        "bf16": {1: 0.5, 2: 0.5, 4: 0.6, 6: 0.6 if bf16_cheapest else 9.0},
    }
    return kp.PathProbe(seconds=seconds, sample_bytes={"fp32": 8, "fp32-gemv": 8, "bf16": 4})


def test_without_bf16_units_the_choice_falls_back():
    assert kp.choose_path(_probe(), gamma=3, allow_bf16=True).chosen == "bf16"
    no_units = _probe()
    no_units.bf16_units = False
    chosen = kp.choose_path(no_units, gamma=3)
    assert chosen.chosen == "fp32-gemv" and "no bf16 units" in chosen.note
    assert not kp.cpu_has_bf16_units("flags\t\t: fpu sse avx2 avx512f avx512_vnni\n")
    assert kp.cpu_has_bf16_units("flags\t\t: fpu avx512f avx512_bf16\n")
    assert kp.cpu_has_bf16_units("Features\t: fp asimd bf16\n")


def test_the_choice_is_stored_reused_and_a_forced_path_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    calls = []
    real = kp.probe_paths

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(kp, "probe_paths", counted)
    pair = models.load_pair(
        "tiny-random-llama:1", "tiny-random-llama:0", kernel_paths=(None, "auto"), gamma=3
    )
    drafter, verifier = pair
    assert (
        len(calls) == 1 and verifier.kernel_path in kp.VERIFIER_PATHS and not hasattr(drafter, "kernel_path")
    )
    stored = kp.stored_probe(verifier.name, 3)
    assert stored is not None and stored.chosen == verifier.kernel_path and stored.gamma == 3
    again = models.load_pair(
        "tiny-random-llama:1", "tiny-random-llama:0", kernel_paths=(None, "auto"), gamma=3
    )
    assert len(calls) == 1 and again.verifier.kernel_path == verifier.kernel_path  # reused, not probed again
    forced = models.load_pair(
        "tiny-random-llama:1", "tiny-random-llama:0", kernel_paths=("int8-dynamic", "fp32-gemv")
    )
    assert forced.drafter.kernel_path == "int8-dynamic" and forced.verifier.kernel_path == "fp32-gemv"
    assert kp.path_of(forced.verifier.model) == "fp32-gemv" and len(calls) == 1
    with pytest.raises(ValueError, match="choose one of"):
        models.load_pair("tiny-random-llama:1", "tiny-random-llama:0", kernel_paths="fp8")
    with pytest.raises(ValueError, match="toy model"):
        models.load_pair("toy-drafter", "toy-verifier", kernel_paths="auto")


def test_bandwidth_and_bounds_are_measured_in_bytes():
    bandwidth = kp.measure_read_bandwidth(megabytes=64, repeats=2)
    assert 1e8 < bandwidth < 1e13  # between 0.1 GB/s and 10 TB/s
    layer = torch.nn.Linear(100, 10)
    assert kp.weight_bytes(layer) == (100 * 10 + 10) * 4
    assert kp.weight_bytes(kp.apply_path(copy.deepcopy(layer), "bf16")) == (100 * 10 + 10) * 2
    assert kp.bound_seconds(layer, 4040.0) == pytest.approx(1.0)
