"""Algorithm 4's accept/reject step: its output law (chi-square) and Lemma 2 (lossy speculative sampling)."""

import pytest
import torch
from scipy import stats

import tutorial_lib as tl

q = torch.tensor([0.30, 0.25, 0.20, 0.12, 0.08, 0.05], dtype=torch.float64)
p = torch.tensor([0.05, 0.15, 0.35, 0.10, 0.05, 0.30], dtype=torch.float64)

CASES = [
    ("spec", 0.0, 1.0),
    ("drafter", 0.0, 1.0),
    ("verifier", 0.0, 1.0),
    ("lossy", 0.3, 1.0),
    ("lossy", 0.6, "normalize"),
    ("bild", 0.2, 1.0),
    ("chow", 0.75, 1.0),
    ("diff", -0.1, 1.0),
    ("opt", -0.2, 1.0),
    ("token_v1", 0.15, 1.0),
    ("token_v2", 0.2, 1.0),
    ("token_v3", 0.5, 1.0),
]


def expected_law(pi, q):
    """min(q, pi) + (sum max(0, q - pi)) * norm(max(0, pi - q)), written out."""
    excess = (pi - q).clamp_min(0)
    return torch.minimum(q, pi) + (q - pi).clamp_min(0).sum() * excess / excess.sum()


@pytest.mark.parametrize("rule,alpha,beta", CASES)
def test_output_law_chi_square(rule, alpha, beta):
    pi = tl.target_distribution(rule, q, p, alpha, beta=beta)
    law = expected_law(pi, q) if (pi - q).clamp_min(0).sum() > 0 else q
    if rule != "lossy" or beta == "normalize":
        torch.testing.assert_close(law, pi, atol=1e-12, rtol=0)  # the law is pi itself
    n = 20_000
    g = torch.Generator().manual_seed(1234)
    draft = tl.maths.accept_reject.sample(q.expand(n, -1), g)
    tokens, accepted = tl.maths.verification.verify_draft(pi.expand(n, -1), q.expand(n, -1), draft, g)
    observed = torch.bincount(tokens, minlength=len(q)).double()
    assert observed[law == 0].sum() == 0
    keep = law > 0
    result = stats.chisquare(observed[keep].numpy(), (law[keep] * n).numpy())
    assert result.pvalue > 1e-3, (rule, observed / n, law)
    rejected = 1 - accepted.double().mean()
    se = (tl.rejection_probability(pi, q) * (1 - tl.rejection_probability(pi, q)) / n).sqrt()
    assert abs(rejected - tl.rejection_probability(pi, q)) < 4 * se + 1e-12


def lossy_speculative_sampling(q, p, alpha, beta):
    """Tran-Thien's lossy speculative sampling, from its own definition (not from the target)."""
    accept = torch.minimum(torch.ones_like(q), p / ((1 - alpha) * q))
    residual = (p / beta - q).clamp_min(0)
    return accept, residual / residual.sum()


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7])
@pytest.mark.parametrize("beta", [1.0, "normalize"])
def test_lemma2_lossy_target_is_lossy_speculative_sampling(alpha, beta):
    for _ in range(50):
        qq = torch.distributions.Dirichlet(torch.ones(8, dtype=torch.float64)).sample()
        pp = torch.distributions.Dirichlet(torch.ones(8, dtype=torch.float64)).sample()
        b = tl.lossy_beta(qq, pp, alpha).item() if beta == "normalize" else beta
        if b == float("inf") or ((pp / b - qq).clamp_min(0).sum() == 0):
            continue  # the residual is never used there: nothing to compare
        pi = tl.target_distribution("lossy", qq, pp, alpha, beta=beta)
        tokens = torch.arange(8)
        ours = tl.acceptance_probability(pi.expand(8, -1), qq.expand(8, -1), tokens)
        theirs, their_residual = lossy_speculative_sampling(qq, pp, alpha, b)
        torch.testing.assert_close(ours, theirs, atol=1e-9, rtol=0)
        torch.testing.assert_close(tl.residual_distribution(pi, qq), their_residual, atol=1e-9, rtol=0)


# ---- the block verification that generate and generate_batch share --------------------------------


def _block(n_rows, seed=0):
    """Three positions with their own q and pi (rows repeat them), drafts x_j ~ q_j."""
    g = torch.Generator().manual_seed(seed)
    qs = torch.stack([q, p.flip(0), (q + p) / 2])  # (3, V)
    pis = torch.stack(
        [
            tl.target_distribution(r, qq, p, a)
            for (r, a), qq in zip([("chow", 0.75), ("spec", 0.0), ("token_v2", 0.2)], qs)
        ]
    )  # (3, V)
    drafts = tl.maths.accept_reject.sample(qs.expand(n_rows, -1, -1), g)  # (n_rows, 3)
    return pis.expand(n_rows, -1, -1), qs.expand(n_rows, -1, -1), drafts, g


def test_verify_block_accepts_each_draft_with_its_probability_and_draws_the_residual_and_bonus():
    from tutorial_lib.maths.verification import verify_block

    n = 20_000
    pi, qs, drafts, g = _block(n)
    verdict = verify_block(pi, qs, drafts, g, bonus=p.expand(n, -1))
    reached = torch.ones(n, dtype=torch.bool)
    for j in range(3):
        rho = float(tl.rejection_probability(pi[0, j], qs[0, j]))
        rejected_here = reached & verdict.rejected & (verdict.n_accepted == j)
        m = int(reached.sum())
        assert abs(int(rejected_here.sum()) / m - rho) < 4 * (rho * (1 - rho) / m) ** 0.5 + 1e-12, j
        if rho > 0:  # the token after a rejection follows the residual
            law = tl.residual_distribution(pi[0, j], qs[0, j])
            observed = torch.bincount(verdict.extra[rejected_here], minlength=len(q)).double()
            assert observed[law == 0].sum() == 0
            keep = law > 0
            if keep.sum() > 1:
                assert (
                    stats.chisquare(observed[keep].numpy(), (law[keep] * observed.sum()).numpy()).pvalue
                    > 1e-3
                )
        reached &= verdict.n_accepted > j
    full = verdict.n_accepted == 3
    assert not verdict.rejected[full].any()
    observed = torch.bincount(verdict.extra[full], minlength=len(q)).double()
    assert stats.chisquare(observed.numpy(), (p * observed.sum()).numpy()).pvalue > 1e-3  # bonus ~ p


def test_verify_block_rows_with_their_own_generators_equal_their_single_runs():
    from tutorial_lib.maths.verification import verify_block

    pi, qs, drafts, _ = _block(6, seed=3)
    together = verify_block(
        pi, qs, drafts, [torch.Generator().manual_seed(i) for i in range(6)], bonus=p.expand(6, -1)
    )
    for i in range(6):
        alone = verify_block(
            pi[i : i + 1],
            qs[i : i + 1],
            drafts[i : i + 1],
            torch.Generator().manual_seed(i),
            bonus=p.expand(1, -1),
        )
        assert together.tokens(drafts, i) == alone.tokens(drafts[i : i + 1], 0)


def test_verify_block_stops_a_row_at_a_stop_token():
    from tutorial_lib.maths.verification import verify_block

    pi = q.expand(2, 3, -1)  # pi = q: every draft is accepted
    drafts = torch.tensor([[2, 1, 4], [2, 3, 4]])
    verdict = verify_block(
        pi, pi, drafts, torch.Generator().manual_seed(0), bonus=p.expand(2, -1), stop_tokens={1}
    )
    assert verdict.tokens(drafts, 0) == [2, 1]  # stopped at token 1: no more coins, no bonus
    assert verdict.tokens(drafts, 1)[:3] == [2, 3, 4] and len(verdict.tokens(drafts, 1)) == 4
    with pytest.raises(ValueError, match=r"\(B, n, V\)"):
        verify_block(q, q, torch.tensor([1]))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_sample_each_draws_every_row_from_its_own_stream_in_any_number_of_threads(threads):
    from tutorial_lib.maths.accept_reject import sample, sample_each

    laws = torch.softmax(torch.randn(7, 5000, generator=torch.Generator().manual_seed(1)), -1)
    laws[3] = 0.0
    laws[3, 42] = 1.0  # a one-hot row (T = 0) still draws from its stream
    in_order = []
    generators = [torch.Generator().manual_seed(10 + i) for i in range(7)]
    for i in range(7):
        in_order.append([int(sample(laws[i], generators[i])) for _ in range(3)])
    generators = [torch.Generator().manual_seed(10 + i) for i in range(7)]
    each = [sample_each(laws, generators, threads=threads) for _ in range(3)]
    assert [list(draws) for draws in zip(*each)] == in_order
    assert in_order[3] == [42, 42, 42]


def test_sample_each_refuses_a_generator_count_that_is_not_one_per_row():
    from tutorial_lib.maths.accept_reject import sample_each

    with pytest.raises(ValueError, match="one generator per row"):
        sample_each(torch.full((3, 4), 0.25), [torch.Generator()] * 2)
