"""DIVERSED's dynamic ensemble as a rule: a per-position weight r in [0, 1] whose target is (1 - r) q + r p.

The weight rule's target and deferral weight, its place beside the prefix rules, exactness in the engine
(chi-square of the first token at T = 1), and the learned weight (`stats.dynamic_weight`): trained by item
on the toy world's exact data, never on a held-out answer, its curves the exact statistics of its own
target."""

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.lessons import engines
from tutorial_lib.maths import targets
from tutorial_lib.maths import rules
from tutorial_lib.maths import laws
from tutorial_lib.maths import accept_reject
from tutorial_lib.maths import token_analysis as ta
from tutorial_lib.stats import deferral_passes as dp
from tutorial_lib.stats import dynamic_weight as dw
from tutorial_lib.stats import learned_deferral as ld
from tutorial_lib.stats import token_curves as tc

pytestmark = pytest.mark.usefixtures("one_thread")


def confidence_weight(q, p, alpha, qu, pu):
    """A weight that is neither 0 nor 1: the verifier's confidence beyond the drafter's, shifted by alpha."""
    return (pu.max(-1).values - qu.max(-1).values + 0.5 - alpha).clamp(0.0, 1.0)


@pytest.fixture
def weight_rule():
    name = rules.register_rule(
        "confidence_weight", confidence_weight, family="weight", alpha_range=(0.0, 1.0)
    )
    yield name
    rules.unregister_rule(name)


def test_a_weight_rule_targets_its_mixture_and_is_no_prefix_rule(weight_rule):
    g = torch.Generator().manual_seed(0)
    q, p = (torch.softmax(3 * torch.randn(5, 9, generator=g, dtype=torch.float64), -1) for _ in range(2))
    r = confidence_weight(q, p, 0.3, q, p)
    assert ((r > 0) & (r < 1)).any()
    np.testing.assert_allclose(targets.deferral_weight(weight_rule, q, p, 0.3), r)
    np.testing.assert_allclose(
        targets.target_distribution(weight_rule, q, p, 0.3), (1 - r[:, None]) * q + r[:, None] * p
    )
    # Lemma 3 for a mixture: rejection r D_TV(p, q)
    np.testing.assert_allclose(
        accept_reject.rejection_probability(targets.target_distribution(weight_rule, q, p, 0.3), q),
        r * laws.tv_distance(p, q),
        atol=1e-12,
    )
    assert weight_rule in rules.RULES and weight_rule in rules.WEIGHT_RULES
    assert weight_rule not in rules.PREFIX_RULES
    with pytest.raises(ValueError, match="prefix rule"):
        tl.generate("toy-drafter", "toy-verifier", [0], method="oracle", rule=weight_rule, alpha=0.3)
    with pytest.raises(ValueError, match="outside"):
        targets.target_distribution(weight_rule, q, p, 1.5)


def test_a_weight_rule_of_the_wrong_shape_is_refused():
    name = rules.register_rule("scalar_weight", lambda q, p, a, qu, pu: torch.tensor(0.5), family="weight")
    try:
        with pytest.raises(ValueError, match="one value per position"):
            targets.target_distribution(name, torch.full((2, 4), 0.25), torch.full((2, 4), 0.25), 0.0)
    finally:
        rules.unregister_rule(name)
    assert name not in rules.RULES and name not in rules.WEIGHT_RULES


def test_a_weight_rule_is_exact_in_distribution_in_the_engine(weight_rule):
    pair = tl.models.toy_pair()
    checked = 0
    for prompt in ([0], [0, 1], [0, 2]):
        q, p = (x.double() for x in tl.models.next_token_distributions(pair, prompt))
        target = targets.target_distribution(weight_rule, q, p, 0.3)
        r = float(targets.deferral_weight(weight_rule, q, p, 0.3))
        if not 0.05 < r < 0.95 or float(laws.tv_distance(p, q)) < 0.1:
            continue
        tokens, drafted, kept = engines.engine_first_tokens(pair, prompt, 0.3, 800, seed=5, rule=weight_rule)
        assert engines.chi_square_test(tokens, target)[1] > 1e-4
        expected = 1 - float(accept_reject.rejection_probability(target, q))
        assert abs(kept / drafted - expected) < 4.5 * np.sqrt(max(expected * (1 - expected), 1e-6) / drafted)
        for wrong in (q, p):  # the test sees a model's law as wrong where it is far enough
            if float(laws.tv_distance(wrong, target)) > 0.15:
                assert engines.chi_square_test(tokens, wrong)[1] < 1e-3
                checked += 1
    assert checked >= 1


# ---- the learned weight on the toy world's exact data -----------------------------------------------


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    pair = tl.models.toy_pair()
    items = [
        tc.Item(f"toy-{i}", "ab"[i % 2], [0], r) for i, r in enumerate(pair.drafter.world.sample(24, seed=3))
    ]
    analysis = tc.analyse(pair, items, grid=ta.default_grid(5), cache=root, progress=False)
    features = dp.feature_pass(pair, analysis, [i.id for i in items], items=items, cache=root, progress=False)
    train, test = ld.split_items(features, held_out=0.5, seed=2)
    dynamic = dw.train_dynamic_weight(analysis, features, train, held_out_ids=test, n_lambdas=5, steps=150)
    return dict(
        pair=pair, items=items, analysis=analysis, features=features, train=train, test=test, dynamic=dynamic
    )


def test_the_weight_is_trained_by_item_and_leans_on_the_drafter_as_lambda_grows(toy):
    analysis, features, dynamic, train, test = (
        toy[k] for k in ("analysis", "features", "dynamic", "train", "test")
    )
    assert dynamic.train_items == sorted(train)
    w = dynamic.weights(features.features)
    assert w.shape == (len(features.features), len(dynamic.lambdas)) and ((w >= 0) & (w <= 1)).all()
    assert list(dynamic.lambdas) == sorted(dynamic.lambdas)
    assert w.mean(0)[0] > w.mean(0)[-1] + 0.2  # a larger rejection penalty: less weight on p
    np.testing.assert_allclose(dynamic.weight_at(features.features, dynamic.lambdas[1]), w[:, 1])
    # scrambling every held-out label leaves the fitted weight unchanged
    scrambled = tc.TokenAnalysis(
        analysis.grid,
        analysis.item_ids,
        analysis.tasks,
        analysis.counts,
        analysis.sums,
        analysis.oracle.copy(),
        analysis.position_item,
        path=analysis.path,
    )
    held_rows = np.isin(scrambled.position_item, [analysis.item_ids.index(i) for i in test])
    scrambled.oracle[held_rows, 1:] = np.random.default_rng(0).random((held_rows.sum(), 6))
    again = dw.train_dynamic_weight(scrambled, features, train, held_out_ids=test, n_lambdas=5, steps=150)
    assert again.lambdas == dynamic.lambdas
    np.testing.assert_array_equal(again.weights(features.features), w)
    with pytest.raises(ValueError, match="share"):
        dw.train_dynamic_weight(analysis, features, train, held_out_ids=train[:1])


def test_dynamic_curves_are_the_exact_statistics_of_the_weight_target(toy):
    analysis, features, dynamic, test, pair = (
        toy[k] for k in ("analysis", "features", "dynamic", "test", "pair")
    )
    rule = ld.train_rule(analysis, features, toy["train"], held_out_ids=test)
    held = dw.dynamic_curves(analysis, features, rule, dynamic, test)
    assert {"learned", "mixture", "diversed", "token_v2"} <= set(held.grid.alphas)
    name = dynamic.register("diversed_test")
    try:
        for k, item_id in enumerate(test[:2]):
            reference = list(next(i for i in toy["items"] if i.id == item_id).reference)
            for point in (1, 3):  # grid points (0 and the last are the ends w = 1, w = 0)
                lam = dynamic.lambdas[point - 1]
                direct = torch.zeros(len(ta.STATS), dtype=torch.float64)
                for t, y in enumerate(reference):
                    q, p = tl.models.next_token_distributions(pair, [0] + reference[:t])
                    direct += ta.direct_statistics(name, lam, q.double(), p.double(), y)
                column = held.grid.slice("diversed").start + point
                # rejection, deferral and expected 0-1 loss: linear in the weight, so exact for any r
                np.testing.assert_allclose(held.sums[k, column, :3], direct.numpy()[:3], atol=1e-6)
            curve = held.sums[k, held.grid.slice("diversed")]
            np.testing.assert_allclose(curve[0], held.sums[k, held.grid.slice("verifier")][0], atol=1e-9)
            np.testing.assert_allclose(
                curve[-1, 2:], held.sums[k, held.grid.slice("drafter")][0, 2:], atol=1e-9
            )
    finally:
        rules.unregister_rule(name)
    rows = ld.paired_differences(
        held, ["token_v2", "learned", "mixture"], reference="diversed", n_resamples=50
    )
    assert [r["rule"] for r in rows] == ["token_v2", "learned", "mixture"]
    assert all(np.isfinite(r["area"][0]) for r in rows)
    with pytest.raises(ValueError, match="used to train"):
        dw.dynamic_curves(analysis, features, rule, dynamic, toy["train"][:2])
