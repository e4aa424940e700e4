"""Lemmas 1 and 4: brute-force minimisers of the deferral risks equal the closed forms."""

import pytest
import torch

from tutorial_lib.maths import lemmas, targets

ALPHAS = torch.linspace(-0.5, 1.0, 16).tolist()


@pytest.mark.parametrize("loss", lemmas.LOSSES)
@pytest.mark.parametrize("T", [1.0, 0.5])
def test_lemma1_brute_force_equals_closed_form(world, loss, T):
    t = world.contexts(T)
    for alpha in ALPHAS:
        brute = lemmas.brute_force_deferral(lemmas.deferral_risk, t.P, t.q, t.p, alpha, loss)
        closed = lemmas.optimal_deferral(t.P, t.q, t.p, alpha, loss).double()
        assert torch.equal(brute, closed), alpha


@pytest.mark.parametrize("loss", lemmas.LOSSES)
@pytest.mark.parametrize("T", [1.0, 0.5])
def test_lemma4_brute_force_equals_closed_form(world, loss, T):
    t = world.contexts(T)
    for alpha in ALPHAS + [2.0, 5.0]:
        brute = lemmas.brute_force_deferral(lemmas.speculative_deferral_risk, t.P, t.q, t.p, alpha, loss)
        closed = lemmas.optimal_speculative_deferral(t.P, t.q, t.p, alpha, loss).double()
        assert torch.equal(brute, closed), alpha


def test_optimal_rule_has_the_lowest_total_risk(world):
    t = world.contexts()
    for alpha in (0.0, 0.1, 0.3):
        best = lemmas.optimal_speculative_deferral(t.P, t.q, t.p, alpha).double()
        opt_plugin = lemmas.plugin_deferral("opt", t.q, t.p, alpha).double()
        risk = lambda r: lemmas.total_risk(
            t.weight, lemmas.speculative_deferral_risk(r, t.P, t.q, t.p, alpha)
        )  # noqa: E731
        assert risk(best) <= risk(opt_plugin) + 1e-12
        assert risk(best) <= risk(torch.zeros_like(best)) + 1e-12
        assert risk(best) <= risk(torch.ones_like(best)) + 1e-12


def test_plugins_are_the_rules_of_targets(world):
    t = world.contexts()
    for rule in ("chow", "diff", "opt"):
        assert torch.equal(
            lemmas.plugin_deferral(rule, t.q, t.p, 0.2), targets.deferral_decision(rule, t.q, t.p, 0.2)
        )


def test_log_loss_plugins_use_entropies():
    q = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    p = torch.tensor([[0.9, 0.1]], dtype=torch.float64)
    h_q = torch.log(torch.tensor(2.0, dtype=torch.float64))
    assert bool(lemmas.plugin_deferral("chow", q, p, float(h_q) - 1e-6, loss="log"))
    assert not bool(lemmas.plugin_deferral("chow", q, p, float(h_q) + 1e-6, loss="log"))
    assert bool(lemmas.plugin_deferral("diff", q, p, 0.3, loss="log"))  # H(q)=0.69 > H(p)=0.33 + 0.3


def test_risk_is_linear_in_r(world):
    t = world.contexts()
    r0 = lemmas.deferral_risk(0.0, t.P, t.q, t.p, 0.1)
    r1 = lemmas.deferral_risk(1.0, t.P, t.q, t.p, 0.1)
    torch.testing.assert_close(lemmas.deferral_risk(0.3, t.P, t.q, t.p, 0.1), 0.7 * r0 + 0.3 * r1)
