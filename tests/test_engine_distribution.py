"""Exact in distribution: the engine's first two tokens at T = 1 follow the law Algorithm 4 defines.

The exact law comes from the two models' own conditionals, computed here independently of the
engine's block logic. Position 1: a draft x ~ q_0 is kept with probability min(1, pi_0/q_0), else
the token comes from the residual, so x_1 follows out_0 = min(q_0, pi_0) + rejected mass * residual.
Position 2 depends on gamma:
- gamma = 1: an accepted x_1 ends the block, so x_2 is a bonus token from p_1; a rejected one
  starts a new block, where x_2 follows out_1;
- gamma >= 2: x_2 is the second draft of the same block (or the start of the next one after a
  rejection at position 1): it follows out_1 either way.
"""

import numpy as np
import pytest
import torch
from scipy import stats

import tutorial_lib as tl
from tutorial_lib import models
from tutorial_lib.maths import targets
from tutorial_lib.maths import accept_reject
from tutorial_lib.decoding.engine import generate

N_RUNS = 5000
RULES = {"spec": 0.0, "lossy": 0.4, "chow": 0.6, "opt": 0.5, "token_v3": 0.5}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy():
    return models.toy_pair(tl.ToyWorld())


def laws(pair, prefix, rule, alpha):
    q, p = models.next_token_distributions(pair, prefix)  # (V,), (V,) at T = 1
    q, p = q.double(), p.double()
    pi = targets.target_distribution(rule, q, p, alpha)
    return q, p, pi, accept_reject.output_distribution(pi, q)


def exact_two_token_law(pair, prompt, rule, alpha, gamma):
    q0, _, pi0, out0 = laws(pair, prompt, rule, alpha)
    accepted0 = torch.minimum(q0, pi0)  # x_1 as a kept draft
    V = q0.shape[0]
    joint = torch.zeros(V, V, dtype=torch.float64)  # (x_1, x_2)
    for x1 in range(V):
        _, p1, _, out1 = laws(pair, list(prompt) + [x1], rule, alpha)
        if gamma == 1:
            joint[x1] = accepted0[x1] * p1 + (out0[x1] - accepted0[x1]) * out1
        else:
            joint[x1] = out0[x1] * out1
    return joint


def chi_square_p_value(counts, expected):
    """Pearson's test, pooling the cells expected to hold fewer than 5 runs into one."""
    counts, expected = np.asarray(counts, float).ravel(), np.asarray(expected, float).ravel()
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    wanted = np.append(expected[~small], expected[small].sum())
    if wanted[-1] == 0:
        observed, wanted = observed[:-1], wanted[:-1]
    return stats.chisquare(observed, wanted * observed.sum() / wanted.sum()).pvalue


@pytest.mark.parametrize("gamma", [1, 3])
@pytest.mark.parametrize("rule", sorted(RULES))
def test_first_two_tokens_follow_algorithm_4(toy, rule, gamma):
    alpha, prompt = RULES[rule], [0]
    joint = exact_two_token_law(toy, prompt, rule, alpha, gamma)
    assert joint.sum().item() == pytest.approx(1.0, abs=1e-5)
    V = joint.shape[0]
    counts = np.zeros((V, V))
    for seed in range(N_RUNS):
        g = generate(
            *toy,
            prompt,
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=gamma,
            temperature=1.0,
            max_new_tokens=2,
            seed=seed,
            eos_token_id=(),
        )
        counts[g.tokens[0], g.tokens[1]] += 1
    p_value = chi_square_p_value(counts, joint.numpy() * N_RUNS)
    assert p_value > 1e-3, f"{rule}, gamma={gamma}: chi-square p = {p_value:.2g}"


def test_bonus_tokens_break_the_target_law_at_gamma_1(toy):
    """The test has power: with gamma = 1 the second token is *not* distributed as out_0 x out_1.

    Near the drafter end of Chow (pi close to q) almost every first draft is kept, so the second
    token is nearly always a bonus token from p rather than a draft from q.
    """
    rule, alpha = "chow", 0.9
    block_law = exact_two_token_law(toy, [0], rule, alpha, gamma=3)
    bonus_law = exact_two_token_law(toy, [0], rule, alpha, gamma=1)
    assert (block_law - bonus_law).abs().sum() > 0.05
    counts = np.zeros(tuple(block_law.shape))
    for seed in range(N_RUNS):
        g = generate(
            *toy,
            [0],
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=1,
            temperature=1.0,
            max_new_tokens=2,
            seed=seed,
            eos_token_id=(),
        )
        counts[g.tokens[0], g.tokens[1]] += 1
    assert chi_square_p_value(counts, block_law.numpy() * N_RUNS) < 1e-3


def test_tiny_transformer_pair_follows_algorithm_4():
    """The same check on a real transformer pair, whose KV caches are cropped after rejections."""
    verifier = models.tiny_random_llama(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.5, seed=1), verifier)
    prompt, rule, alpha, n_runs = [3, 5, 7], "opt", 0.5, 2000
    joint = exact_two_token_law(pair, prompt, rule, alpha, gamma=3)
    V = joint.shape[0]
    counts = np.zeros((V, V))
    rejected = 0
    for seed in range(n_runs):
        g = generate(
            *pair,
            prompt,
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=3,
            temperature=1.0,
            max_new_tokens=2,
            seed=seed,
            eos_token_id=(),
        )
        counts[g.tokens[0], g.tokens[1]] += 1
        rejected += g.n_rejected
    assert rejected > n_runs * 0.05
    assert chi_square_p_value(counts, joint.numpy() * n_runs) > 1e-3


@pytest.mark.parametrize(
    "rule,alpha,gamma", [("spec", 0.0, 3), ("opt", 0.3, 5), ("token_v2", 0.1, 2), ("lossy", 0.4, 1)]
)
def test_engine_on_the_toy_world_matches_the_exact_curves(rule, alpha, gamma):
    """Whole sequences: the engine's per-token metrics agree with ToyWorld.evaluate's dynamic programme."""
    from tutorial_lib.lessons import toycheck

    world = tl.ToyWorld()
    estimate = toycheck.engine_metrics(world, rule, alpha, gamma=gamma, n=800, seed=11)
    z = toycheck.z_scores(world.evaluate(rule, alpha, gamma=gamma), estimate)
    finite = {k: v for k, v in z.items() if not np.isnan(v)}
    assert len(finite) >= 3 and all(abs(v) < 4 for v in finite.values()), z
