"""The toy world: ground truth, the drafter/verifier it derives, exact expectations against Monte Carlo."""

import math

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.toy.toyworld import BOS, EOS, ToyWorld

METRICS = ("zero_one_loss", "log_loss", "deferral_rate", "rejection_rate", "mean_length")


def test_shapes_and_vocabulary(world):
    assert world.vocab_size <= 64 and len(world.tokens) == world.vocab_size
    for table in (world.P, world.q, world.p):
        torch.testing.assert_close(table.sum(-1), torch.ones(table.shape[:-1], dtype=torch.float64))
        assert (table[..., BOS] == 0).all()  # nobody predicts <bos>
    assert world.P[BOS, BOS, EOS] == 0  # no empty sequences


def test_verifier_beats_drafter_on_average_under_both_losses(world):
    losses = world.model_losses()
    assert losses["verifier"]["zero_one"] < losses["drafter"]["zero_one"]
    assert losses["verifier"]["log"] < losses["drafter"]["log"]
    assert losses["truth"]["log"] <= losses["verifier"]["log"]


@pytest.mark.parametrize("seed", range(10))
def test_strengths_hold_by_construction_for_every_seed(seed):
    w = ToyWorld(seed=seed)
    everywhere, blind = w.model_losses(), w.model_losses("blind")
    for loss in ("zero_one", "log"):
        assert everywhere["verifier"][loss] < everywhere["drafter"][loss]
        assert blind["drafter"][loss] < blind["verifier"][loss]


def test_drafter_beats_verifier_in_the_blind_spots(world):
    assert world.blind_spot_tokens
    blind = world.model_losses("blind")
    assert blind["drafter"]["zero_one"] < blind["verifier"]["zero_one"]
    assert blind["drafter"]["log"] < blind["verifier"]["log"]
    table = world.contexts()
    assert table.blind.any() and (~table.blind).any()
    b = world.blind_spot_tokens[0]
    assert world.in_blind_spot([3, b]) and not world.in_blind_spot([b, 3] if 3 != b else [b, 4])


def test_miscalibration_is_a_parameter():
    calibrated = ToyWorld(seed=3)
    sharp = ToyWorld(seed=3, drafter_sharpness=3.0)
    # the same argmax, more confidence
    assert torch.equal(calibrated.q.argmax(-1), sharp.q.argmax(-1))
    assert (sharp.contexts().q.max(-1).values >= calibrated.contexts().q.max(-1).values - 1e-12).all()
    assert sharp.model_losses()["drafter"]["log"] > calibrated.model_losses()["drafter"]["log"]


def test_next_token_interface_matches_the_tables(world):
    ids = torch.tensor([[BOS, 5, 7, 2], [BOS, 3, 3, 9]])
    logits = world.verifier(ids)
    assert logits.shape == (2, 4, world.vocab_size)
    torch.testing.assert_close(
        tl.probabilities(logits[0, 0], 1.0).double(), world.p[BOS, BOS], atol=1e-6, rtol=0
    )
    torch.testing.assert_close(tl.probabilities(logits[0, 3], 1.0).double(), world.p[7, 2], atol=1e-6, rtol=0)
    torch.testing.assert_close(world.drafter.next_token_logits(ids), world.drafter(ids)[:, -1])
    assert torch.isfinite(logits).all()


def test_samples_follow_the_format(world):
    for seq in world.sample(200, seed=1):
        assert 1 <= len(seq) <= world.max_len
        assert BOS not in seq
        assert EOS not in seq[:-1]
        assert seq[-1] == EOS or len(seq) == world.max_len


def test_sampled_first_token_follows_p(world):
    n = 20000
    first = torch.tensor([s[0] for s in world.sample(n, seed=2)])
    freq = torch.bincount(first, minlength=world.vocab_size).double() / n
    se = (world.P[BOS, BOS] * (1 - world.P[BOS, BOS]) / n).sqrt()
    assert ((freq - world.P[BOS, BOS]).abs() <= 4 * se + 1e-9).all()


def assert_within_4_se(exact, estimate, keys=METRICS):
    for key in keys:
        e, s, se = getattr(exact, key), getattr(estimate, key), estimate.stderr[key]
        if math.isnan(e):
            assert math.isnan(s)
            continue
        assert abs(s - e) <= 4 * se + 1e-9, (key, e, s, se)


@pytest.mark.parametrize(
    "rule,alpha,beta",
    [
        ("spec", 0.0, 1.0),
        ("drafter", 0.0, 1.0),
        ("chow", 0.4, 1.0),
        ("diff", 0.05, 1.0),
        ("opt", 0.5, 1.0),
        ("bild", 0.3, 1.0),
        ("token_v1", 0.1, 1.0),
        ("token_v3", 0.5, 1.0),
        ("lossy", 0.5, 1.0),
        ("lossy", 0.5, "normalize"),
    ],
)
def test_exact_expectations_match_monte_carlo(world, rule, alpha, beta):
    exact = world.evaluate(rule, alpha, beta=beta)
    estimate = world.simulate(rule, alpha, beta=beta, n=20000, seed=11)
    assert_within_4_se(exact, estimate)


@pytest.mark.parametrize(
    "rule,alpha,gamma,T",
    [("spec", 0.0, 3, 1.0), ("opt", 0.5, 5, 1.0), ("token_v2", 0.2, 1, 1.0), ("chow", 0.3, 3, 0.5)],
)
def test_exact_block_accounting_matches_monte_carlo(world, rule, alpha, gamma, T):
    exact = world.evaluate(rule, alpha, gamma=gamma, temperature=T)
    estimate = world.simulate(rule, alpha, gamma=gamma, temperature=T, n=20000, seed=5)
    assert_within_4_se(exact, estimate, METRICS + ("tokens_per_verifier_call",))
    assert 1.0 <= exact.tokens_per_verifier_call <= gamma + 1


def test_temperature_zero(world):
    exact = world.evaluate("diff", 0.1, temperature=0.0)
    estimate = world.simulate("diff", 0.1, temperature=0.0, n=5000, seed=3)
    assert_within_4_se(exact, estimate, ("zero_one_loss", "deferral_rate", "rejection_rate", "mean_length"))
    assert math.isinf(exact.log_loss)  # a one-hot law misses true tokens


def test_ends_of_the_curve(world):
    spec, drafter = world.evaluate("spec"), world.evaluate("drafter")
    assert drafter.rejection_rate == 0 and drafter.deferral_rate == 0
    assert spec.deferral_rate == pytest.approx(1.0)
    torch.testing.assert_close(
        torch.tensor(world.evaluate("chow", 0.0).zero_one_loss), torch.tensor(spec.zero_one_loss)
    )
    torch.testing.assert_close(
        torch.tensor(world.evaluate("chow", 1.0).zero_one_loss), torch.tensor(drafter.zero_one_loss)
    )
    assert spec.zero_one_loss < drafter.zero_one_loss


def test_a_cascade_beats_the_verifier_somewhere_on_its_curve(world):
    """The blind spots make a deferral rule better than the verifier alone for some alpha."""
    spec = world.evaluate("spec").zero_one_loss
    best = min(world.evaluate("token_v3", a).zero_one_loss for a in torch.linspace(0, 1, 21).tolist())
    assert best < spec


@pytest.mark.parametrize("rule,alpha", [("opt", 0.3), ("token_v2", 0.1), ("lossy", 0.4)])
def test_teacher_forced_expectations_match_monte_carlo(world, rule, alpha):
    exact = world.evaluate(rule, alpha, prefixes="truth")
    estimate = world.simulate(rule, alpha, prefixes="truth", n=20000, seed=4)
    assert_within_4_se(exact, estimate)


def test_teacher_forced_expectation_by_hand(world):
    """Under prefixes from P, the drafter's loss is the P-occupancy average of 1 - sum_v P(v) q(v)."""
    t = world.contexts()
    by_hand = (t.weight * (1 - (t.P * t.q).sum(-1))).sum() / t.weight.sum()
    assert world.evaluate("drafter", prefixes="truth").zero_one_loss == pytest.approx(
        float(by_hand), abs=1e-12
    )
    assert world.evaluate("drafter", prefixes="truth").mean_length == pytest.approx(
        float(t.weight.sum()), abs=1e-12
    )
