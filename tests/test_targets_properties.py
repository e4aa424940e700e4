"""Properties over random q, p, alpha (hypothesis): targets and residuals are distributions, Lemma 3."""

import math
import os

import torch
from hypothesis import given, settings, strategies as st

import tutorial_lib as tl

MIXTURE_RULES = ("bild", "chow", "diff", "opt")
# HYPOTHESIS_EXAMPLES=20 multiplies the examples of every property (a thorough local run).
EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "1"))


@st.composite
def distribution_pairs(draw):
    V = draw(st.integers(2, 8))
    rows = []
    for _ in range(2):
        weights = draw(st.lists(st.floats(0.0, 1.0), min_size=V, max_size=V).filter(lambda w: sum(w) > 1e-3))
        # exact zeros stay: they are where residuals and acceptance tests break first
        w = torch.tensor(weights, dtype=torch.float64)
        rows.append(w / w.sum())
    return rows[0], rows[1]


def alpha_for(rule, u):
    low, high = tl.ALPHA_RANGES.get(rule, (0.0, 0.0))
    if rule == "lossy":
        high = 0.999
    if math.isinf(low):
        low, high = -5.0, 5.0
    return low + (high - low) * u


def assert_distribution(x):
    assert torch.isfinite(x).all()
    assert (x >= 0).all()
    torch.testing.assert_close(x.sum(-1), torch.ones_like(x.sum(-1)), atol=1e-9, rtol=0)


@settings(max_examples=150 * EXAMPLES, deadline=None)
@given(pair=distribution_pairs(), u=st.floats(0, 1), rule=st.sampled_from(tl.RULES))
def test_every_target_is_a_distribution(pair, u, rule):
    q, p = pair
    alpha = alpha_for(rule, u)
    beta = "normalize" if rule == "lossy" else 1.0
    pi = tl.target_distribution(rule, q, p, alpha, beta=beta)
    assert_distribution(pi)
    assert_distribution(tl.residual_distribution(pi, q))
    assert_distribution(tl.output_distribution(pi, q))
    torch.testing.assert_close(tl.output_distribution(pi, q), pi, atol=1e-9, rtol=0)


@settings(max_examples=150 * EXAMPLES, deadline=None)
@given(pair=distribution_pairs(), u=st.floats(0, 1))
def test_lossy_with_beta_one(pair, u):
    q, p = pair
    alpha = alpha_for("lossy", u)
    pi = tl.target_distribution("lossy", q, p, alpha)
    assert pi.sum() >= 1 - 1e-12  # sums to at least one
    assert_distribution(tl.residual_distribution(pi, q))
    assert_distribution(tl.output_distribution(pi, q))
    beta = tl.lossy_beta(q, p, alpha)
    assert beta >= 1 - alpha - 1e-9


@settings(max_examples=200 * EXAMPLES, deadline=None)
@given(pair=distribution_pairs(), u=st.floats(0, 1), rule=st.sampled_from(MIXTURE_RULES))
def test_lemma3_rejection_of_mixtures(pair, u, rule):
    q, p = pair
    alpha = alpha_for(rule, u)
    r = tl.deferral_decision(rule, q, p, alpha).double()
    pi = tl.target_distribution(rule, q, p, alpha)
    torch.testing.assert_close(tl.rejection_probability(pi, q), r * tl.tv_distance(p, q), atol=1e-12, rtol=0)


@settings(max_examples=100 * EXAMPLES, deadline=None)
@given(pair=distribution_pairs(), r=st.floats(0, 1))
def test_lemma3_for_any_mixing_weight(pair, r):
    q, p = pair
    pi = (1 - r) * q + r * p
    torch.testing.assert_close(tl.rejection_probability(pi, q), r * tl.tv_distance(p, q), atol=1e-12, rtol=0)


@settings(max_examples=100 * EXAMPLES, deadline=None)
@given(pair=distribution_pairs(), u=st.floats(0, 1), rule=st.sampled_from(tl.TOKEN_RULES))
def test_token_rules_reject_only_outside_the_acceptance_set(pair, u, rule):
    q, p = pair
    alpha = alpha_for(rule, u)
    A = tl.acceptance_set(rule, q, p, alpha)
    pi = tl.target_distribution(rule, q, p, alpha)
    assert (pi[A] >= q[A] - 1e-12).all()  # tokens in A are always accepted
    weight = tl.deferral_weight(rule, q, p, alpha)
    torch.testing.assert_close(weight, 1 - q[A].sum(), atol=1e-12, rtol=0)


@settings(max_examples=100 * EXAMPLES, deadline=None)
@given(logits=st.lists(st.floats(-30, 30), min_size=2, max_size=10), T=st.floats(0, 5))
def test_probabilities_are_distributions(logits, T):
    x = tl.probabilities(torch.tensor(logits, dtype=torch.float64), T)
    assert_distribution(x)
