"""gamma="auto": the policy's decisions on fake calibrations, and exactness through the engine."""

import statistics

import pytest

from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.gamma_policy import AutoGamma, simulated_answer

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread costs more than it gives

# Scoring k tokens costs k one-token steps: a compute-bound verifier (a CPU, at worst).
EXPENSIVE = Calibration.synthetic(0.03, lambda k: 0.1 * k, max_k=9, note="blocks cost k steps")
# Scoring k tokens costs one step, and drafting is free: the ideal accelerator.
FREE = Calibration.synthetic(0.0, lambda k: 0.1, max_k=9, note="blocks cost one step")


def test_expensive_blocks_mean_no_speculation():
    policy = AutoGamma(EXPENSIVE, prior_acceptance=0.9)
    assert policy.next_gamma() == 0
    policy.observe(100, 100)  # even after a run of perfect drafts
    assert policy.next_gamma() == 0
    assert policy.gammas == [0, 0]


def test_free_blocks_mean_the_longest_block():
    policy = AutoGamma(FREE, prior_acceptance=0.7)
    assert policy.next_gamma() == 8 == policy.max_gamma
    assert policy.next_gamma(remaining=3) == 3  # never more drafts than tokens left to emit


def test_the_estimate_moves_from_the_prior_to_the_counts():
    # t_p(k) = 0.1 + 0.02 (k - 1), t_q = 0.01: worth speculating only when drafts are kept often enough
    middling = Calibration.synthetic(0.01, lambda k: 0.1 + 0.02 * (k - 1), max_k=9)
    policy = AutoGamma(middling, prior_acceptance=0.8, prior_strength=4, optimism=None)
    assert policy.acceptance == pytest.approx(0.8)
    first = policy.next_gamma()
    assert first >= 2
    policy.observe(0, 40)  # the drafter is never right
    assert policy.acceptance == pytest.approx(3.2 / 44)
    assert policy.next_gamma() == 0
    assert policy.decisions[1] == (0, pytest.approx(3.2 / 44))
    assert middling.best_gamma(policy.acceptance) == 0


# The Qwen pair as calibrated on this CPU (t_q 158 ms, t_p(1) 399 ms, a block of k >= 2 about twice one step):
# speculation pays at the pair's true acceptance (about 0.95) but not at a pessimistic prior of 0.7.
QWEN_CPU = Calibration.synthetic(0.158, lambda k: 0.399 * (1.0 if k == 1 else 2.0), max_k=9)


def test_a_pessimistic_prior_does_not_stop_the_policy_from_learning():
    at_the_mean = AutoGamma(QWEN_CPU, prior_acceptance=0.7, optimism=None, explore=False)
    assert at_the_mean.next_gamma() == 0  # stuck: a plain step judges no draft, the estimate never moves
    assert (
        AutoGamma(QWEN_CPU, prior_acceptance=0.7, optimism=None).next_gamma() >= 1
    )  # exploring drafts first
    policy = AutoGamma(QWEN_CPU, prior_acceptance=0.7)
    assert policy.decision_acceptance > policy.acceptance == pytest.approx(0.7)
    assert policy.next_gamma() >= 1  # optimism drafts first and so learns the acceptance
    for _ in range(20):  # the drafts are kept 95% of the time: keep speculating
        policy.observe(19, 20)
    assert policy.next_gamma() >= 3
    assert policy.decision_acceptance == pytest.approx(
        policy.acceptance, abs=0.02
    )  # the quantile closes on the mean
    doubtful = AutoGamma(QWEN_CPU, prior_acceptance=0.7)
    doubtful.observe(10, 40)  # kept a quarter of the time: not worth a block
    assert doubtful.next_gamma() == 0


def test_the_shape_probe_runs_once_two_sizes_away():
    policy = AutoGamma(QWEN_CPU, prior_acceptance=0.9, max_gamma=5)
    for _ in range(3):
        gamma = policy.next_gamma()
        policy.observe(gamma, gamma, gamma=gamma, seconds=0.5)
    sizes = set(policy.gammas)
    assert max(sizes) - min(sizes) <= 1  # the calibration's choice so far: neighbouring sizes
    probe = policy.next_gamma()
    assert probe == max(sizes) + 2 or probe == max(1, min(sizes) - 2)
    policy.observe(probe, probe, gamma=probe, seconds=0.5)
    assert policy.shape_probed and policy.cost_line() is not None
    assert policy.fresh().shape_probed is False  # once per answer


def test_a_wrong_calibration_is_corrected_as_it_decodes():
    """A calibration that says the drafter costs twice a verifier step and blocks grow 30% a row, on a machine
    whose drafter costs 0.3 of a step and whose blocks are flat: the policy starts on plain steps, then its
    probes time blocks, and it ends up drafting long blocks, close to the best fixed block size."""
    disturbed = Calibration.synthetic(0.2, lambda k: 0.1 * (1 + 0.3 * (k - 1)), max_k=6)
    right = Calibration.synthetic(0.03, lambda k: 0.1, max_k=6)
    answers = {
        name: [simulated_answer(AutoGamma(c), 0.03, lambda k: 0.1, 0.9, seed=s) for s in range(10)]
        for name, c in (("disturbed", disturbed), ("right", right))
    }
    fixed = [
        simulated_answer(AutoGamma(disturbed, learn_costs=False), 0.03, lambda k: 0.1, 0.9, seed=s)
        for s in range(10)
    ]
    plain = [g == 0 for gammas, _ in fixed for g in gammas]
    assert sum(plain) > 0.8 * len(plain)  # trusting the calibration: plain steps but for the probes
    seconds = {name: sum(t for _, t in runs) for name, runs in answers.items()}
    assert seconds["disturbed"] < 1.15 * seconds["right"] < 0.8 * sum(t for _, t in fixed)
    # after the probes (plain steps to the first probe, its block, the shape probe): long blocks
    assert all(statistics.median(gammas[10:]) >= 4 for gammas, _ in answers["disturbed"])


def test_optimism_must_be_a_quantile():
    with pytest.raises(ValueError, match="optimism"):
        AutoGamma(FREE, optimism=1.0)


def test_without_zero_the_smallest_block_is_one():
    policy = AutoGamma(EXPENSIVE, allow_zero=False)
    assert policy.next_gamma() == 1


def test_fresh_keeps_the_settings_and_drops_the_counts():
    policy = AutoGamma(FREE, prior_acceptance=0.6, max_gamma=4)
    policy.observe(3, 5)
    policy.next_gamma()
    again = policy.fresh()
    assert (again.accepted, again.judged, again.decisions) == (0, 0, [])
    assert (again.max_gamma, again.prior_acceptance) == (4, 0.6)


@pytest.mark.parametrize(
    "options,error,match",
    [
        (dict(calibration={"t_q": 0.1}), TypeError, "Calibration"),
        (dict(calibration=FREE, max_gamma=0), ValueError, "max_gamma"),
        (dict(calibration=FREE, prior_acceptance=1.5), ValueError, "probability"),
        (dict(calibration=FREE, prior_strength=0), ValueError, "prior_strength"),
    ],
)
def test_bad_settings_are_refused(options, error, match):
    with pytest.raises(error, match=match):
        AutoGamma(**options)


def test_observe_refuses_impossible_counts():
    with pytest.raises(ValueError, match="among the judged"):
        AutoGamma(FREE).observe(3, 2)


# ---- through the engine: exact whatever the policy picks -------------------------------------
# TUTORIAL_LIB_TEST_DEVICE / TUTORIAL_LIB_TEST_DTYPE run the `_on_device` tests on a GPU
# (benchmarks/accelerator_check.sh); by default they run on the CPU in float32.

import os  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib import models  # noqa: E402
from tutorial_lib.decoding.gamma_policy import calibration_for  # noqa: E402

from test_engine_distribution import chi_square_p_value  # noqa: E402

DEVICE = os.environ.get("TUTORIAL_LIB_TEST_DEVICE", "cpu")
DTYPE = os.environ.get("TUTORIAL_LIB_TEST_DTYPE", "float32")
PROMPTS = ([3, 5, 7, 2, 1], [4, 4, 9, 1], [12, 3, 8, 15, 6, 1])
# Speculation pays only while drafts are kept often: decisions follow the acceptance seen so far.
FLIPPING = Calibration.synthetic(0.01, lambda k: 0.1 + 0.03 * (k - 1), max_k=6)


@dataclass
class CyclePolicy(AutoGamma):
    """Block sizes from a fixed cycle, 0 included: every order of plain steps and blocks the engine must
    handle."""

    cycle: tuple = (2, 0, 3, 1, 0, 0, 4)

    def next_gamma(self, remaining=None):
        gamma = self.cycle[len(self.decisions) % len(self.cycle)]
        gamma = gamma if remaining is None or gamma == 0 else min(gamma, remaining)
        self.decisions.append((gamma, self.acceptance))
        return gamma


@pytest.fixture(scope="module", params=["llama", "t5"])
def device_pair(request):
    build = "tiny-random-llama:0" if request.param == "llama" else "tiny-random-t5:0"
    verifier = models.load_model(build, dtype=DTYPE, device=DEVICE)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


def first_divergence(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def assert_lossless(tokens, reference, verifier, prompt):
    """fp32: the verifier's own tokens. bf16 scores a block with other roundings than one-token steps,
    so a first difference is allowed only where the verifier's two best tokens nearly tie."""
    if DTYPE == "float32":
        assert tokens == reference
        return
    i = first_divergence(tokens, reference)
    if i is None:
        return
    session = verifier.start(prompt)
    logits = session.feed(verifier.decoder_prefix(prompt), keep=1)
    if i:
        logits = session.feed(reference[:i], keep=1)
    top2 = torch.topk(logits[-1].float(), 2).values
    assert float(top2[0] - top2[1]) < 0.25, f"diverged at {i} without a near-tie"


@pytest.mark.parametrize(
    "policy",
    [
        1,
        4,
        CyclePolicy(FLIPPING),
        AutoGamma(FLIPPING, prior_strength=1),
        AutoGamma(FREE),
        AutoGamma(EXPENSIVE),
    ],
    ids=["gamma=1", "gamma=4", "cycle", "flipping", "free", "expensive"],
)
def test_lossless_at_t0_on_device(device_pair, policy):
    drafter, verifier = device_pair
    used = set()
    for prompt in PROMPTS:
        reference = tl.generate(
            drafter, verifier, prompt, method="verifier", max_new_tokens=20, eos_token_id=()
        ).tokens
        g = tl.generate(
            drafter, verifier, prompt, method="speculative", gamma=policy, max_new_tokens=20, eos_token_id=()
        )
        assert_lossless(g.tokens, reference, verifier, prompt)
        if isinstance(policy, int):
            assert g.gamma == policy and g.gammas == []
            continue
        assert (
            g.gamma == "auto" and len(g.gammas) >= 1 and policy.decisions == []
        )  # the engine ran a fresh copy
        used |= set(g.gammas)
    if isinstance(policy, CyclePolicy):
        assert {0, 1, 2, 3} <= used


def test_expensive_blocks_never_start_the_drafter():
    pair = models.ModelPair(
        models.perturbed(models.tiny_random_llama(0), 0.3, seed=1), models.tiny_random_llama(0)
    )
    g = tl.generate(
        *pair,
        PROMPTS[0],
        method="speculative",
        gamma=AutoGamma(EXPENSIVE, explore=False),
        max_new_tokens=12,
        eos_token_id=(),
    )
    assert g.gammas == [0] * 12 and g.n_drafter_calls == 0 and g.n_verifier_calls == 12
    probing = tl.generate(
        *pair,
        PROMPTS[0],
        method="speculative",
        gamma=AutoGamma(EXPENSIVE),
        max_new_tokens=12,
        eos_token_id=(),
    )
    assert (
        probing.gammas[:8] == [0] * 8 and probing.gammas[8] >= 1
    )  # by default it measures a block after 8 steps
    free = tl.generate(
        *pair, PROMPTS[0], method="speculative", gamma=AutoGamma(FREE), max_new_tokens=12, eos_token_id=()
    )
    assert free.gammas[0] == 8 and 0 not in free.gammas and free.n_verifier_calls < 12


def test_other_rules_never_take_a_plain_step():
    pair = models.toy_pair()
    g = tl.generate(
        *pair,
        [0],
        method="speculative",
        rule="opt",
        alpha=0.5,
        gamma=AutoGamma(EXPENSIVE),
        temperature=1.0,
        max_new_tokens=10,
        eos_token_id=(),
    )
    assert g.gammas and min(g.gammas) == 1


def test_gamma_auto_calibrates_the_pair_once():
    pair = models.ModelPair(
        models.perturbed(models.tiny_random_llama(2), 0.3, seed=1), models.tiny_random_llama(2)
    )
    g = tl.generate(*pair, PROMPTS[1], method="speculative", gamma="auto", max_new_tokens=8, eos_token_id=())
    assert g.gamma == "auto" and len(g.gammas) >= 1
    assert calibration_for(*pair) is calibration_for(*pair)


@pytest.mark.parametrize(
    "options,match",
    [
        (dict(method="speculative", gamma="fast"), "'auto'"),
        (dict(method="verifier", gamma="auto"), "method='speculative'"),
        (dict(method="bild", gamma=AutoGamma(FREE)), "method='speculative'"),
        (dict(method="speculative", gamma="auto", bonus="none"), "bonus='verifier'"),
    ],
)
def test_auto_refuses_what_it_cannot_price(options, match):
    with pytest.raises(ValueError, match=match):
        tl.generate(*models.toy_pair(), [0], max_new_tokens=4, **options)


# ---- in distribution at T = 1: each token follows p, whatever block sizes were picked ---------


def two_token_law(pair, prompt):
    """p(x_1) p(x_2 | x_1): the law of the first two tokens of any lossless method at T = 1."""
    _, p0 = models.next_token_distributions(pair, prompt)
    V = p0.shape[0]
    joint = torch.zeros(V, V, dtype=torch.float64)
    for x1 in range(V):
        _, p1 = models.next_token_distributions(pair, list(prompt) + [x1])
        joint[x1] = p0.double()[x1] * p1.double()
    return joint


def sample_two_tokens(pair, prompt, policy, n_runs):
    V = pair.verifier.vocab_size
    counts, used = np.zeros((V, V)), set()
    for seed in range(n_runs):
        g = tl.generate(
            *pair,
            prompt,
            method="speculative",
            gamma=policy,
            temperature=1.0,
            max_new_tokens=2,
            seed=seed,
            eos_token_id=(),
        )
        counts[g.tokens[0], g.tokens[1]] += 1
        used.add(tuple(g.gammas))  # (empty for a fixed gamma)
    return counts, used


@pytest.mark.parametrize(
    "policy",
    [
        CyclePolicy(FLIPPING, cycle=(0, 2)),
        CyclePolicy(FLIPPING, cycle=(1, 0)),
        AutoGamma(FLIPPING, prior_strength=1, prior_acceptance=0.6),
    ],
    ids=["plain-then-block", "block-then-plain", "flipping"],
)
def test_auto_follows_the_verifier_on_the_toy_pair(policy):
    pair, prompt, n_runs = models.toy_pair(), [0], 4000
    joint = two_token_law(pair, prompt)
    counts, used = sample_two_tokens(pair, prompt, policy, n_runs)
    assert chi_square_p_value(counts, joint.numpy() * n_runs) > 1e-3
    if not isinstance(policy, CyclePolicy):
        assert len({g[:2] for g in used}) > 1, used  # the decisions did depend on what was accepted


@pytest.mark.parametrize("policy", [3, CyclePolicy(FLIPPING, cycle=(1, 0, 2))], ids=["gamma=3", "cycle"])
def test_follows_the_verifier_on_device(policy):
    verifier = models.load_model("tiny-random-llama:0", dtype=DTYPE, device=DEVICE)
    pair = models.ModelPair(models.perturbed(verifier, 0.5, seed=1), verifier)
    prompt, n_runs = [3, 5, 7], 1000
    joint = two_token_law(pair, prompt)
    counts, _ = sample_two_tokens(pair, prompt, policy, n_runs)
    assert chi_square_p_value(counts, joint.numpy() * n_runs) > 1e-3
