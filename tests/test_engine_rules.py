"""The paper's rules behind engines' knobs (notebook 10): transformers' ensemble weight is the constant
mixture, relaxed acceptance is a capped Token-V3 / Token-V2 with a one-hot drafter, and rules added at
run time (`register_deferral_rule`) are exact in the engine."""

import numpy as np
import pytest
import torch

from tutorial_lib import models
from tutorial_lib.lessons import engines
from tutorial_lib.maths import targets
from tutorial_lib.maths import rules
from tutorial_lib.maths import laws
from tutorial_lib.maths import accept_reject
from tutorial_lib.maths.deferral_features import FEATURES, deferral_features

pytestmark = pytest.mark.usefixtures("one_thread")


def random_laws(rows, vocabulary, seed, scale=2.0):
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(rows, vocabulary, generator=generator, dtype=torch.float64) * scale, -1)


# ---------------------------------------------------------------------------------------------
# The constant mixture
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_mixture_is_the_constant_weight_target_and_lemma_3_holds(alpha):
    q, p = random_laws(64, 20, 1), random_laws(64, 20, 2)
    pi = targets.target_distribution("mixture", q, p, alpha)
    torch.testing.assert_close(pi, alpha * q + (1 - alpha) * p)
    torch.testing.assert_close(
        targets.deferral_weight("mixture", q, p, alpha), torch.full((64,), 1 - alpha, dtype=torch.float64)
    )
    torch.testing.assert_close(
        accept_reject.rejection_probability(pi, q), (1 - alpha) * laws.tv_distance(p, q)
    )


def test_mixture_refuses_an_alpha_outside_its_range():
    q, p = random_laws(1, 5, 1), random_laws(1, 5, 2)
    with pytest.raises(ValueError, match="alpha=1.5.*mixture"):
        targets.target_distribution("mixture", q, p, 1.5)
    with pytest.raises(ValueError, match="weight=1.0"):
        engines.ensemble_alpha(1.0)


# ---------------------------------------------------------------------------------------------
# Relaxed acceptance = capped Token-V3 / Token-V2 with a one-hot drafter
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "form,knob",
    [
        ("vllm", 0.0),
        ("vllm", 0.3),
        ("vllm", 0.8),
        ("vllm", 1.0),
        ("tensorrt", 0.0),
        ("tensorrt", 0.05),
        ("tensorrt", 0.4),
        ("tensorrt", 1.0),
    ],
)
@pytest.mark.parametrize("top_k", [1, 3, 10, 1000])
def test_relaxed_acceptance_is_algorithm_4_with_a_capped_token_rule(form, knob, top_k):
    p = random_laws(3000, 40, 7, scale=1.5)
    drafts = torch.randint(0, 40, (3000,), generator=torch.Generator().manual_seed(8))
    # half the drafts are the verifier's second choice, where the knob decides
    drafts[::2] = p.topk(2, -1).indices[::2, 1]
    engine = engines.relaxed_tokens(form, p, drafts, knob, top_k)
    paper = engines.algorithm4_greedy_tokens(form, p, drafts, knob, top_k)
    assert torch.equal(engine, paper)
    if 0.0 < knob < 1.0 and top_k > 1:  # both outcomes occur, so the comparison is not vacuous
        kept = (engine == drafts).float().mean().item()
        assert 0.0 < kept < 1.0


def test_uncapped_relaxed_target_is_the_package_token_rule():
    q, p = random_laws(200, 30, 3), random_laws(200, 30, 4)
    for rule, alpha in (("token_v3", 0.4), ("token_v2", 0.1)):
        torch.testing.assert_close(
            engines.capped_token_target(rule, q, p, alpha, top_k=30),
            targets.target_distribution(rule, q, p, alpha),
        )


def test_the_top_k_cap_matters():
    p = torch.tensor([[0.4, 0.35, 0.25]], dtype=torch.float64)
    draft = torch.tensor([2])
    # relax_ratio 0.5: token 2 passes the ratio test (0.25 >= 0.2) but not a top-2 cap
    assert engines.relaxed_tokens("vllm", p, draft, 0.5, top_k=3).item() == 2
    assert engines.relaxed_tokens("vllm", p, draft, 0.5, top_k=2).item() == 0
    with pytest.raises(ValueError, match="form='sglang'"):
        engines.relaxed_tokens("sglang", p, draft, 0.5, top_k=2)


# ---------------------------------------------------------------------------------------------
# transformers' assistant_ensemble_weight against the package's mixture, through generate itself
# ---------------------------------------------------------------------------------------------

N_SAMPLES = 300


@pytest.fixture(scope="module")
def tiny_pair():
    return models.ModelPair(models.tiny_random_llama(1), models.tiny_random_llama(2))


def test_transformers_ensemble_verification_is_the_constant_mixture(tiny_pair):
    prompt, weight = [1, 2, 3], 0.6
    q, p = (x.double() for x in models.next_token_distributions(tiny_pair, prompt))
    law = targets.target_distribution("mixture", q, p, engines.ensemble_alpha(weight))
    expected = 1 - weight * laws.tv_distance(p, q).item()
    assert 0.05 < weight * laws.tv_distance(p, q).item()  # a pair whose laws differ enough to tell
    hf_tokens, hf_drafted, hf_kept = engines.ensemble_first_tokens(tiny_pair, prompt, weight, N_SAMPLES)
    ours, our_drafted, our_kept = engines.engine_first_tokens(
        tiny_pair, prompt, engines.ensemble_alpha(weight), N_SAMPLES
    )
    assert hf_drafted == our_drafted == N_SAMPLES
    sd = (expected * (1 - expected) / N_SAMPLES) ** 0.5
    for kept in (hf_kept, our_kept):
        assert abs(kept / N_SAMPLES - expected) < 4 * sd
    for tokens in (hf_tokens, ours):
        assert engines.chi_square_test(tokens, law)[1] > 1e-3
        # the test can see a wrong law: neither run follows the verifier's own
        assert engines.chi_square_test(tokens, p)[1] < 1e-3


# ---------------------------------------------------------------------------------------------
# Rules added at run time
# ---------------------------------------------------------------------------------------------


def test_registered_rule_is_a_mixture_with_its_decision():
    q, p = random_laws(50, 12, 5), random_laws(50, 12, 6)
    name = rules.register_rule(
        "gap_rule", lambda q, p, alpha, qu, pu: pu.max(-1).values - qu.max(-1).values > alpha
    )
    try:
        delta = targets.deferral_decision("gap_rule", q, p, 0.1)
        torch.testing.assert_close(delta, targets.deferral_decision("diff", q, p, 0.1))
        torch.testing.assert_close(
            targets.target_distribution(name, q, p, 0.1), targets.target_distribution("diff", q, p, 0.1)
        )
        assert "gap_rule" in rules.RULES and "gap_rule" in rules.PREFIX_RULES
    finally:
        rules.unregister_rule("gap_rule")
    assert "gap_rule" not in rules.RULES
    with pytest.raises(ValueError, match="rule"):
        targets.target_distribution("gap_rule", q, p, 0.1)


def test_register_refuses_the_paper_rules_and_bad_decisions():
    with pytest.raises(ValueError, match="name='opt'"):
        rules.register_rule("opt", lambda *a: None)
    with pytest.raises(TypeError, match="decide=3"):
        rules.register_rule("three", 3)
    rules.register_rule("scalar_rule", lambda q, p, alpha, qu, pu: torch.tensor(True))
    try:
        with pytest.raises(ValueError, match="shape"):
            targets.deferral_decision("scalar_rule", random_laws(4, 6, 1), random_laws(4, 6, 2), 0.0)
    finally:
        rules.unregister_rule("scalar_rule")


def test_deferral_features_are_the_laws_read_outs():
    q = torch.tensor([[0.7, 0.2, 0.1, 0.0]], dtype=torch.float64)
    p = torch.tensor([[0.1, 0.6, 0.3, 0.0]], dtype=torch.float64)
    row = dict(zip(FEATURES, deferral_features(q, p)[0].tolist()))
    assert row["max_q"] == pytest.approx(0.7) and row["max_p"] == pytest.approx(0.6)
    assert row["entropy_q"] == pytest.approx(-(0.7 * np.log(0.7) + 0.2 * np.log(0.2) + 0.1 * np.log(0.1)))
    assert row["tv"] == pytest.approx(0.6)
    assert row["p_of_q_top"] == pytest.approx(0.1) and row["q_of_p_top"] == pytest.approx(0.2)


def test_chi_square_keeps_two_cells_with_few_draws():
    law = torch.full((50,), 1 / 50, dtype=torch.float64)
    statistic, p_value, cells = engines.chi_square_test(np.arange(10) % 50, law)
    assert cells == 2 and np.isfinite(p_value)
    assert (
        engines.chi_square_test(np.zeros(40, dtype=int), law)[1] < 1e-6
    )  # every draw on one token: not uniform
    assert engines.chi_square_test(np.zeros(10, dtype=int), torch.tensor([1.0, 0.0]))[1] == 1.0
    assert engines.chi_square_test(np.ones(10, dtype=int), torch.tensor([1.0, 0.0]))[1] == 0.0
