"""The learned deferral rule: features from one more pass, split by item, never trained on a held-out
answer, its curves equal to the exact statistics of its own target, and exact in the engine."""

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
from tutorial_lib.stats import learned_deferral as ld
from tutorial_lib.stats import token_curves as tc

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A toy-world analysis of 24 answers in two tasks, cached in a folder, and the features of all of
    them."""
    root = tmp_path_factory.mktemp("results")
    pair = tl.models.toy_pair()
    world = pair.drafter.world
    items = [tc.Item(f"toy-{i}", "ab"[i % 2], [0], r) for i, r in enumerate(world.sample(24, seed=3))]
    analysis = tc.analyse(pair, items, grid=ta.default_grid(5), cache=root, progress=False)
    first = dp.feature_pass(
        pair, analysis, [i.id for i in items[:10]], items=items, cache=root, progress=False
    )
    features = dp.feature_pass(pair, analysis, [i.id for i in items], items=items, cache=root, progress=False)
    return dict(pair=pair, items=items, analysis=analysis, first=first, features=features, root=root)


def test_feature_pass_lines_up_with_the_analysis_and_resumes(toy):
    analysis, features, first = toy["analysis"], toy["features"], toy["first"]
    assert features.alignment_error < 1e-5
    assert sorted(features.positions) == list(range(len(analysis.oracle)))  # every position, once
    # the second call reused the first ten answers and added the rest to the same folder
    assert features.path == first.path and len(dp.FeatureSet.load(features.path).item_ids) == 24
    again = dp.feature_pass(
        toy["pair"], analysis, first.item_ids, items=toy["items"], cache=toy["root"], progress=False
    )
    np.testing.assert_array_equal(again.features, first.features)
    assert dp.load_features(analysis, toy["root"]).path == features.path
    # the D_TV column equals the analysis' own
    np.testing.assert_allclose(
        features.features[:, list(tl.maths.deferral_features.FEATURES).index("tv")],
        analysis.oracle[features.positions, 0],
        atol=1e-6,
    )


def test_split_is_by_item_and_training_never_sees_a_held_out_answer(toy):
    analysis, features = toy["analysis"], toy["features"]
    train, test = ld.split_items(features, held_out=0.5, seed=1)
    assert not set(train) & set(test) and set(train) | set(test) == set(features.item_ids)
    assert {analysis.tasks[analysis.item_ids.index(i)] for i in test} == {"a", "b"}
    rule = ld.train_rule(analysis, features, train, held_out_ids=test)
    assert rule.train_items == sorted(train)
    # scrambling every held-out label leaves the fitted rule unchanged: no held-out answer reached the fit
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
    again = ld.train_rule(scrambled, features, train, held_out_ids=test)
    np.testing.assert_array_equal(rule.gain(features.features), again.gain(features.features))
    # ... while scrambling the training labels changes it (the check can fail)
    scrambled.oracle[~held_rows, 1:] = np.random.default_rng(1).random(((~held_rows).sum(), 6))
    third = ld.train_rule(scrambled, features, train, held_out_ids=test)
    assert not np.allclose(rule.gain(features.features), third.gain(features.features))
    with pytest.raises(ValueError, match="share"):
        ld.train_rule(analysis, features, train, held_out_ids=train[:1])
    with pytest.raises(ValueError, match="used to train"):
        ld.learned_curves(analysis, features, rule, train[:2])


def test_learned_curves_are_the_exact_statistics_of_the_rule_target(toy):
    analysis, features, pair = toy["analysis"], toy["features"], toy["pair"]
    train, test = ld.split_items(features, held_out=0.5, seed=2)
    rule = ld.train_rule(analysis, features, train, held_out_ids=test)
    alphas = ld.learned_alphas(rule, analysis, features, n_alpha=7)
    held = ld.learned_curves(analysis, features, rule, test, alphas=alphas)
    rule.register("learned_test")
    try:
        for k, item_id in enumerate(test[:3]):
            item = next(i for i in toy["items"] if i.id == item_id)
            reference = list(item.reference)
            for alpha_index in (0, 3, len(alphas) - 1):
                alpha = alphas[alpha_index]
                direct = torch.zeros(len(ta.STATS), dtype=torch.float64)
                for t, y in enumerate(reference):
                    q, p = tl.models.next_token_distributions(pair, [0] + reference[:t])
                    direct += ta.direct_statistics("learned_test", alpha, q.double(), p.double(), y)
                column = held.grid.slice("learned").start + alpha_index
                np.testing.assert_allclose(held.sums[k, column], direct.numpy(), atol=1e-6)
            # the constant mixture at alpha: a straight line between the two models
            mixture = held.sums[k, held.grid.slice("mixture")]
            drafter, verifier = (
                held.sums[k, held.grid.slice("drafter")][0],
                held.sums[k, held.grid.slice("verifier")][0],
            )
            np.testing.assert_allclose(mixture[0], verifier, atol=1e-9)
            np.testing.assert_allclose(mixture[-1, 2:], drafter[2:], atol=1e-9)
    finally:
        rules.unregister_rule("learned_test")


def test_paired_differences_of_a_curve_with_itself_are_zero(toy):
    analysis = toy["analysis"]
    result = ld.mixture_curves(analysis)
    rows = ld.paired_differences(result, ["mixture", "opt"], reference="mixture", n_resamples=50)
    assert rows[0]["area"] == (0.0, 0.0, 0.0)
    assert np.isfinite(rows[1]["area"][0])
    with pytest.raises(ValueError, match="nonsense"):
        ld.paired_differences(result, ["nonsense"], reference="mixture")


def test_learned_rule_is_exact_in_distribution_in_the_engine(toy):
    analysis, features, pair = toy["analysis"], toy["features"], toy["pair"]
    train, test = ld.split_items(features, held_out=0.5, seed=0)
    rule = ld.train_rule(analysis, features, train, held_out_ids=test)
    rule.register("learned_engine")
    try:
        decisions = set()
        for prompt in ([0], [0, 1], [0, 2], [0, 3]):
            q, p = (x.double() for x in tl.models.next_token_distributions(pair, prompt))
            for alpha in (-50.0, 50.0):  # far ends: defer everywhere, keep everywhere (|g_hat| < 50 D_TV)
                defers = bool(targets.deferral_decision("learned_engine", q, p, alpha))
                if defers in decisions or float(laws.tv_distance(p, q)) < 0.1:
                    continue  # one run per decision, on laws far enough apart to tell q from p
                decisions.add(defers)
                target = targets.target_distribution("learned_engine", q, p, alpha)
                tokens, drafted, kept = engines.engine_first_tokens(
                    pair, prompt, alpha, 800, seed=11, rule="learned_engine"
                )
                assert engines.chi_square_test(tokens, target)[1] > 1e-4
                expected = 1 - float(accept_reject.rejection_probability(target, q))
                assert abs(kept / drafted - expected) < 4.5 * np.sqrt(
                    max(expected * (1 - expected), 1e-6) / drafted
                )
                # the test can see a wrong law: the other model's
                assert engines.chi_square_test(tokens, q if defers else p)[1] < 1e-3
        assert decisions == {True, False}
    finally:
        rules.unregister_rule("learned_engine")
