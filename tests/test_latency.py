"""The block-cost model: hand-computed values, the textbook speed-up as its special case, the best gamma."""

import math

import pytest

from tutorial_lib.maths import latency


def test_tokens_per_call_by_hand():
    assert latency.expected_tokens_per_call(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
    assert latency.expected_tokens_per_call(1.0, 5) == 6.0
    assert latency.expected_tokens_per_call(0.0, 5) == 1.0
    assert latency.expected_tokens_per_call(0.9, 0) == 1.0  # gamma = 0: plain decoding


def test_block_time_by_hand():
    # t_q = 1, t_p(k) = 10 + 2k; gamma = 3, a = 0.5: block = 3 + 18 = 21 s for 1.875 tokens.
    t_p = {k: 10 + 2 * k for k in range(1, 9)}
    assert latency.block_time_per_token(3, 0.5, 1.0, t_p) == pytest.approx(21 / 1.875)
    assert latency.block_time_per_token(0, 0.5, 1.0, t_p) == 12.0  # gamma = 0 costs t_p(1) per token
    assert latency.predicted_speedup(3, 0.5, 1.0, t_p) == pytest.approx(12 / (21 / 1.875))
    # the three forms of t_p agree
    as_list = [t_p[k] for k in range(1, 9)]
    assert latency.block_time_per_token(3, 0.5, 1.0, as_list) == latency.block_time_per_token(
        3, 0.5, 1.0, t_p.get
    )


def test_the_drafters_catch_up_call():
    # after a fully accepted block (probability a^gamma) the drafter is fed two tokens: t_q2 instead of t_q
    t_p = {k: 10 + 2 * k for k in range(1, 9)}
    by_hand = (3 * 1.0 + 0.5**3 * (1.6 - 1.0) + 18) / 1.875
    assert latency.block_time_per_token(3, 0.5, 1.0, t_p, t_q2=1.6) == pytest.approx(by_hand)
    assert latency.block_time_per_token(3, 0.5, 1.0, t_p, t_q2=1.0) == latency.block_time_per_token(
        3, 0.5, 1.0, t_p
    )
    assert latency.block_time_per_token(0, 0.5, 1.0, t_p, t_q2=5.0) == 12.0  # no drafter at gamma = 0


@pytest.mark.parametrize("a", [0.0, 0.3, 0.6, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("gamma", [0, 1, 3, 5, 8])
@pytest.mark.parametrize("c", [0.0, 0.05, 0.4, 1.0])
def test_flat_verifier_cost_gives_the_textbook_speedup(a, gamma, c):
    t_p1 = 0.2
    flat = lambda k: t_p1  # noqa: E731  (an accelerator: scoring k tokens costs one step)
    textbook = (
        (gamma + 1) / (gamma * c + 1) if a == 1 else (1 - a ** (gamma + 1)) / ((1 - a) * (gamma * c + 1))
    )
    assert latency.predicted_speedup(gamma, a, c * t_p1, flat) == pytest.approx(textbook, rel=1e-12)
    assert latency.textbook_speedup(a, gamma, c) == pytest.approx(textbook, rel=1e-12)


def test_best_gamma():
    free = lambda k: 1.0  # noqa: E731
    # free drafts and free blocks: the longest block wins
    assert latency.best_gamma(0.9, 0.0, free, 12) == 12
    # a verifier whose cost grows as fast as the tokens it scores, with a drafter that costs anything: never
    steep = lambda k: float(k)  # noqa: E731
    assert latency.best_gamma(0.9, 0.05, steep, 12) == 0
    assert (
        latency.best_gamma(0.0, 0.0, free, 12) == 0
    )  # nothing accepted: a tie at best, so the smaller gamma
    # by hand: t_q = 0.1, t_p(k) = 1 + 0.1 (k - 1), a = 0.8
    t_p = lambda k: 1 + 0.1 * (k - 1)  # noqa: E731
    times = [(g * 0.1 + t_p(g + 1)) * 0.2 / (1 - 0.8 ** (g + 1)) for g in range(9)]
    assert latency.best_gamma(0.8, 0.1, t_p, 8) == times.index(min(times))


def test_break_even_acceptance():
    t_p = lambda k: 1 + 0.5 * (k - 1)  # noqa: E731
    a = latency.break_even_acceptance(2, 0.1, t_p)
    assert latency.block_time_per_token(2, a, 0.1, t_p) == pytest.approx(t_p(1))
    assert (
        latency.block_time_per_token(2, a + 0.01, 0.1, t_p)
        < t_p(1)
        < latency.block_time_per_token(2, a - 0.01, 0.1, t_p)
    )
    assert latency.break_even_acceptance(3, 0.5, lambda k: float(k)) is None  # even a = 1 does not pay
    assert latency.break_even_acceptance(3, 0.0, lambda k: 1.0) == 0.0  # free drafts and blocks


def test_expected_latency():
    assert latency.expected_latency(1.0, 1, 0.0) == 1.0
    assert latency.expected_latency(3.0, 5, 0.1) == pytest.approx(1.5 / 3)
    assert latency.expected_latency([2.0, 6.0], 5, 0.0) == pytest.approx([0.5, 1 / 6])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: latency.expected_tokens_per_call(1.2, 3), "probability"),
        (lambda: latency.expected_tokens_per_call(math.nan, 3), "probability"),
        (lambda: latency.block_time_per_token(-1, 0.5, 0.1, [1.0]), "gamma"),
        (lambda: latency.block_time_per_token(2.5, 0.5, 0.1, [1.0] * 4), "gamma"),
        (lambda: latency.block_time_per_token(2, 0.5, -0.1, [1.0] * 4), "t_q"),
        (lambda: latency.block_time_per_token(4, 0.5, 0.1, [1.0] * 3), r"t_p\(5\) is not given"),
        (lambda: latency.block_time_per_token(1, 0.5, 0.1, [1.0, math.inf]), r"t_p\(2\)"),
        (lambda: latency.break_even_acceptance(0, 0.1, [1.0]), "plain decoding"),
        (lambda: latency.textbook_speedup(0.5, 2, -1), "cost_ratio"),
    ],
)
def test_bad_input_says_what_to_change(call, match):
    with pytest.raises(ValueError, match=match):
        call()
