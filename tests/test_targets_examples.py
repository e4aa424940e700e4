"""Every rule against examples computed by hand from the digest's formulas."""

import math

import pytest
import torch

import tutorial_lib as tl

q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
p = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
# max q = 0.6, max p = 0.5, D_TV(p, q) = 0 + 0.2 + 0.2 = 0.4


def close(a, b):
    torch.testing.assert_close(
        torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64), atol=1e-12, rtol=0
    )


def test_tv_distance_and_symmetry():
    close(tl.tv_distance(p, q), 0.4)
    close(tl.tv_distance(q, p), 0.4)


@pytest.mark.parametrize(
    "rule,alpha,defers",
    [
        ("chow", 0.3, True),  # 0.6 < 1 - 0.3
        ("chow", 0.5, False),  # 0.6 < 0.5 fails
        ("diff", -0.2, True),  # 0.6 < 0.5 + 0.2
        ("diff", 0.0, False),
        ("opt", -0.5, True),  # 0.6 < 0.5 + 0.5 * 0.4
        ("opt", 0.0, False),
        ("opt", -0.2, False),  # 0.6 < 0.5 + 0.08 fails
        ("bild", 0.3, True),  # 0.4 > 0.3
        ("bild", 0.5, False),
    ],
)
def test_prefix_rules(rule, alpha, defers):
    assert bool(tl.deferral_decision(rule, q, p, alpha)) is defers
    close(tl.target_distribution(rule, q, p, alpha), p if defers else q)
    close(tl.rejection_probability(tl.target_distribution(rule, q, p, alpha), q), 0.4 if defers else 0.0)


def test_bild_with_a_custom_distance():
    linf = lambda a, b: (a - b).abs().max(-1).values  # noqa: E731  (0.4 here too, so use 0.35)
    assert bool(tl.deferral_decision("bild", q, p, 0.35, distance=linf))
    assert not bool(tl.deferral_decision("bild", q, p, 0.41, distance=linf))


def test_token_v1():
    # A = {v : q(v) >= 0.5 - 0.2} = {0, 1}; q(A) = 0.9
    assert tl.acceptance_set("token_v1", q, p, 0.2).tolist() == [True, True, False]
    close(tl.target_distribution("token_v1", q, p, 0.2), [0.62, 0.35, 0.03])
    close(tl.deferral_weight("token_v1", q, p, 0.2), 0.1)


def test_token_v2():
    # A = {v : p(v) >= 0.5 - 0.25} = {1, 2}; q(A) = 0.4
    assert tl.acceptance_set("token_v2", q, p, 0.25).tolist() == [False, True, True]
    close(tl.target_distribution("token_v2", q, p, 0.25), [0.12, 0.6, 0.28])


def test_token_v3():
    # A = {v : p(v) >= 0.7 * 0.5} = {1}; q(A) = 0.3
    assert tl.acceptance_set("token_v3", q, p, 0.3).tolist() == [False, True, False]
    close(tl.target_distribution("token_v3", q, p, 0.3), [0.14, 0.65, 0.21])
    close(tl.rejection_probability(tl.target_distribution("token_v3", q, p, 0.3), q), 0.46)


@pytest.mark.parametrize(
    "rule,alpha", [("token_v1", -1.0), ("token_v2", -1.0), ("chow", 0.0), ("diff", -1.0), ("opt", -1e9)]
)
def test_spec_end_of_alpha(rule, alpha):
    close(tl.target_distribution(rule, q, p, alpha), p)


@pytest.mark.parametrize(
    "rule,alpha",
    [
        ("token_v1", 1.0),
        ("token_v2", 1.0),
        ("token_v3", 1.0),
        ("chow", 1.0),
        ("diff", 1.0),
        ("opt", 1e9),
        ("bild", 1.0),
    ],
)
def test_drafter_end_of_alpha(rule, alpha):
    close(tl.target_distribution(rule, q, p, alpha), q)


def test_spec_drafter_verifier():
    close(tl.target_distribution("spec", q, p), p)
    close(tl.target_distribution("verifier", q, p), p)
    close(tl.target_distribution("drafter", q, p), q)
    close(tl.rejection_probability(p, q), 0.4)


def test_lossy_beta_one():
    # min(q, p / 0.5) = [0.4, 0.3, 0.1]; max with p = [0.4, 0.5, 0.3] (sums to 1.2)
    pi = tl.target_distribution("lossy", q, p, 0.5)
    close(pi, [0.4, 0.5, 0.3])
    close(
        tl.acceptance_probability(pi.expand(3, 3), q.expand(3, 3), torch.tensor([0, 1, 2])), [2 / 3, 1.0, 1.0]
    )
    close(tl.rejection_probability(pi, q), 0.2)
    close(tl.residual_distribution(pi, q), [0.0, 0.5, 0.5])
    close(tl.output_distribution(pi, q), [0.4, 0.4, 0.2])


def test_lossy_normalising_beta():
    # sum_v max(m(v), s p(v)) = 0.4 + 0.8 s = 1 at s = 0.75, so beta = 4/3
    close(tl.lossy_beta(q, p, 0.5), 4 / 3)
    pi = tl.target_distribution("lossy", q, p, 0.5, beta="normalize")
    close(pi, [0.4, 0.375, 0.225])
    close(tl.output_distribution(pi, q), pi)


def test_lossy_at_alpha_zero_is_spec():
    close(tl.target_distribution("lossy", q, p, 0.0), p)
    close(tl.target_distribution("lossy", q, p, 0.0, beta="normalize"), p)


def test_lossy_beta_is_infinite_when_the_target_is_q():
    # p / (1 - alpha) >= q everywhere: the target is q whatever beta is
    q2 = torch.tensor([0.5, 0.5], dtype=torch.float64)
    p2 = torch.tensor([0.4, 0.6], dtype=torch.float64)
    assert math.isinf(tl.lossy_beta(q2, p2, 0.5).item())
    close(tl.target_distribution("lossy", q2, p2, 0.5, beta="normalize"), q2)


# ---- temperature -----------------------------------------------------------------------------

q_logits, p_logits = q.log(), p.log()


def test_probabilities_at_temperature_zero_is_one_hot_argmax():
    close(tl.probabilities(q_logits, 0.0), [1.0, 0.0, 0.0])
    close(tl.probabilities(torch.tensor([1.0, 3.0, 3.0]), 0.0), [0.0, 1.0, 0.0])  # first on ties
    close(tl.probabilities(q_logits, 1.0), q)
    close(tl.probabilities(q_logits, 2.0), q.sqrt() / q.sqrt().sum())
    assert not torch.isnan(tl.probabilities(torch.tensor([-math.inf, 0.0, -math.inf]), 0.0)).any()


def test_decisions_use_unscaled_probabilities_at_t0():
    qT, pT = tl.probabilities(q_logits, 0), tl.probabilities(p_logits, 0)  # one-hot at 0 and at 1
    kw = dict(q_unscaled=q, p_unscaled=p)
    # Chow at alpha 0.3: unscaled max q = 0.6 < 0.7 -> defer (the one-hot max of 1 would not)
    close(tl.target_distribution("chow", qT, pT, 0.3, **kw), pT)
    close(tl.target_distribution("chow", qT, pT, 0.3), qT)
    # OPT's TV term uses the scaled distributions: 0.6 < 0.5 + 0.15 * 1 -> defer
    close(tl.target_distribution("opt", qT, pT, -0.15, **kw), pT)
    # with the unscaled TV (0.4) it would not: 0.6 < 0.5 + 0.06 fails
    assert not bool(tl.deferral_decision("opt", q, p, -0.15))
    # Token-V1 at alpha 0.2: A = {0, 1} from unscaled q; the mixture uses the one-hot qT
    close(tl.target_distribution("token_v1", qT, pT, 0.2, **kw), qT)
    # Token-V3 at alpha 0: A = {argmax p}: drafter's argmax 0 is not in it -> verifier's argmax
    close(tl.target_distribution("token_v3", qT, pT, 0.0, **kw), pT)


def test_batched_shapes():
    Q = torch.stack([q, p, q]).unsqueeze(0)  # (1, 3, V)
    Pp = torch.stack([p, q, q]).unsqueeze(0)
    for rule in tl.RULES:
        alpha = 0.5 if rule in tl.ALPHA_RANGES else 0.0
        pi = tl.target_distribution(rule, Q, Pp, alpha)
        assert pi.shape == (1, 3, 3)
    assert tl.deferral_decision("diff", Q, Pp, 0.0).shape == (1, 3)
    assert tl.tv_distance(Q, Pp).shape == (1, 3)


def test_residual_never_nan_when_pi_equals_q():
    res = tl.residual_distribution(q, q)
    close(res, q)
    close(tl.rejection_probability(q, q), 0.0)
    close(tl.acceptance_probability(q, q, torch.tensor(2)), 1.0)


# At T = 0 the drafter's one-hot is on token 0 and the verifier's on token 1; decisions still read the
# unscaled q = [0.6, 0.3, 0.1] and p = [0.2, 0.5, 0.3], so each case below follows the T = 1 arithmetic
# of the decision and mixes the one-hot vectors.
@pytest.mark.parametrize(
    "rule,alpha,beta,expected",
    [
        ("spec", 0.0, 1.0, "p"),
        ("verifier", 0.0, 1.0, "p"),
        ("drafter", 0.0, 1.0, "q"),
        ("lossy", 0.5, 1.0, "p"),  # min(qT, 2 pT) = 0, so max(0, pT) = pT
        ("lossy", 0.5, "normalize", "p"),  # sum max(0, s pT) = s = 1 at beta = 1
        ("bild", 0.3, 1.0, "p"),
        ("bild", 0.5, 1.0, "q"),  # D_TV(p, q) = 0.4
        ("chow", 0.3, 1.0, "p"),
        ("chow", 0.5, 1.0, "q"),  # 0.6 < 1 - alpha ?
        ("diff", -0.2, 1.0, "p"),
        ("diff", 0.0, 1.0, "q"),  # 0.6 < 0.5 - alpha ?
        ("opt", -0.15, 1.0, "p"),
        ("opt", 0.0, 1.0, "q"),  # 0.6 < 0.5 - alpha * 1 (one-hot TV) ?
        ("token_v1", 0.2, 1.0, "q"),
        ("token_v1", -0.2, 1.0, "p"),  # A = {0, 1} / {}
        ("token_v2", 0.25, 1.0, "p"),
        ("token_v2", 1.0, 1.0, "q"),  # A = {1, 2} / all
        ("token_v3", 0.0, 1.0, "p"),
        ("token_v3", 0.7, 1.0, "q"),  # A = {1} / {v : p(v) >= 0.15} = all
    ],
)
def test_every_rule_at_temperature_zero(rule, alpha, beta, expected):
    qT, pT = tl.probabilities(q_logits, 0), tl.probabilities(p_logits, 0)
    pi = tl.target_distribution(rule, qT, pT, alpha, q_unscaled=q, p_unscaled=p, beta=beta)
    close(pi, pT if expected == "p" else qT)
    close(tl.rejection_probability(pi, qT), 1.0 if expected == "p" else 0.0)
