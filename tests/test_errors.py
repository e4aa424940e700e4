"""Bad input raises a ValueError that says what to change."""

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.maths import lemmas

q = torch.tensor([0.6, 0.3, 0.1])
p = torch.tensor([0.2, 0.5, 0.3])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: tl.target_distribution("nope", q, p, 0.1), "rule='nope' is unknown; choose one of"),
        (lambda: tl.target_distribution("chow", q, p, 1.5), r"outside the range \[0.0, 1.0\] of rule 'chow'"),
        (lambda: tl.target_distribution("chow", q, p, -0.1), "outside the range"),
        (lambda: tl.target_distribution("diff", q, p, -1.01), "outside the range"),
        (lambda: tl.target_distribution("token_v3", q, p, -0.2), "outside the range"),
        (lambda: tl.target_distribution("token_v1", q, p, 1.2), "outside the range"),
        (lambda: tl.target_distribution("bild", q, p, 2.0), "outside the range"),
        (lambda: tl.target_distribution("lossy", q, p, 1.0), r"outside \[0, 1\) for rule 'lossy'"),
        (
            lambda: tl.target_distribution("opt", q, p, float("inf")),
            "alpha=inf is infinite",
        ),  # not "outside [-inf, inf]"
        (lambda: tl.target_distribution("opt", q, p, float("nan")), "alpha is NaN"),
        (lambda: tl.target_distribution("lossy", q, p, 0.5, beta=0.4), r"needs beta >= 1 - alpha"),
        (lambda: tl.target_distribution("lossy", q, p, 0.5, beta="auto"), "'normalize'"),
        (
            lambda: tl.target_distribution("spec", q, torch.tensor([0.5, 0.5]), 0.0),
            "vocabulary of 3 tokens but p has 2: the drafter and verifier must share one vocabulary",
        ),
        (
            lambda: tl.target_distribution("spec", q.expand(2, 3), p, 0.0),
            "pass one distribution per position",
        ),
        (
            lambda: tl.target_distribution("spec", torch.tensor([0.6, 0.6, 0.1]), p, 0.0),
            "does not sum to one",
        ),
        (
            lambda: tl.target_distribution("spec", torch.tensor([2.0, -1.0, 0.0]), p, 0.0),
            "pass probabilities, not logits",
        ),
        (lambda: tl.target_distribution("spec", torch.tensor([float("nan"), 0.5, 0.5]), p, 0.0), "NaN"),
        (
            lambda: tl.target_distribution("chow", q, p, 0.5, q_unscaled=torch.tensor([0.5, 0.5])),
            "shapes of q and p",
        ),
        (lambda: tl.probabilities(torch.zeros(3), -1.0), "use T = 0 for greedy decoding or a finite T > 0"),
        (lambda: tl.probabilities(torch.tensor([float("nan"), 0.0]), 1.0), "NaN"),
        (lambda: tl.probabilities(torch.full((3,), -float("inf")), 1.0), "at least one token"),
        (lambda: tl.deferral_decision("token_v1", q, p, 0.1), "use one of bild, chow, diff, opt"),
        (lambda: tl.acceptance_set("chow", q, p, 0.1), "use one of token_v1"),
        (lambda: tl.acceptance_probability(p, q, torch.tensor([0, 1])), "one drafted token per position"),
        (lambda: tl.acceptance_probability(p, q, torch.tensor(5)), r"ids in \[0, 3\)"),
        (lambda: tl.residual_distribution(torch.zeros(3), q), "zero total mass"),
        (lambda: tl.rejection_probability(torch.tensor([0.1, -0.1, 1.0]), q), "non-negative"),
        (lambda: tl.tv_distance(torch.empty(0), torch.empty(0)), "empty vocabulary"),
        (lambda: tl.tv_distance(torch.tensor(1.0), torch.tensor(1.0)), "vocabulary dimension"),
        (lambda: lemmas.expected_loss(p, q, "hinge"), "loss='hinge' is unknown"),
        (lambda: lemmas.plugin_deferral("bild", q, p, 0.1), "use 'chow', 'diff' or 'opt'"),
        (lambda: lemmas.brute_force_deferral(lemmas.deferral_risk, p, q, p, 0.1, grid=1), "at least r = 0"),
        (lambda: tl.ToyWorld(n_words=63), "at most|2 to 62 words"),
        (lambda: tl.ToyWorld(max_len=0), "at least one token"),
        (lambda: tl.ToyWorld(drafter_sharpness=0), "must be > 0"),
        (lambda: tl.ToyWorld(verifier_noise=-1), "must be >= 0"),
        (lambda: tl.ToyWorld(n_words=4, n_blind_spots=4), r"n_blind_spots=4 must lie in \[0, n_words\)"),
        (lambda: tl.ToyWorld(n_words=4).evaluate("spec", gamma=0), "gamma >= 1"),
        (lambda: tl.ToyWorld(n_words=4).simulate("spec", gamma=0), "gamma >= 1"),
        (
            lambda: tl.ToyWorld(n_words=4).evaluate("spec", gamma=2, prefixes="truth"),
            "use gamma=None with prefixes='truth'",
        ),
        (lambda: tl.ToyWorld(n_words=4).evaluate("spec", prefixes="model"), "use 'generated'"),
        (lambda: tl.alpha_grid("chow", 1), "at least its two ends"),
        (lambda: tl.ToyWorld(n_words=4).model_losses("inside"), "use 'all', 'blind' or 'elsewhere'"),
        (lambda: tl.ToyWorld(n_words=4).drafter(torch.zeros(1, 0, dtype=torch.long)), "input_ids is empty"),
        (lambda: tl.ToyWorld(n_words=4).drafter(torch.tensor([[0, 9]])), r"token ids must lie in \[0, 6\)"),
        (lambda: tl.savefig(None, "a/b"), "plain file name"),
    ],
)
def test_bad_input_says_what_to_change(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_rules_without_alpha_ignore_it():
    torch.testing.assert_close(tl.target_distribution("spec", q, p, 123.0), p)
