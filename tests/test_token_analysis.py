"""Exact token-level analysis (tutorial_lib.maths.token_analysis / token_curves): agreement with `targets` on
the same rows, the curves' ends, the oracle envelope, the toy world's exact expectations, chunking,
and clear errors."""

import itertools

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.maths import token_analysis as ta
from tutorial_lib.stats import token_curves as tc
from tutorial_lib.stats import token_report as report
from tutorial_lib.models import ModelPair, tiny_random_llama


def _random_rows(V, C=10, seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    q_logits = torch.randn(C, V, generator=g) * scale
    p_logits = q_logits + torch.randn(C, V, generator=g) * scale
    q_logits[:, :4] += 3.0
    p_logits[:, :4] += 3.0
    y = torch.randint(0, V, (C,), generator=g)
    y[: C // 2] = p_logits[: C // 2].argmax(-1)
    return q_logits, p_logits, y


@pytest.mark.parametrize("V,head,temperature", [(40, 64, 1.0), (400, 6, 1.0), (400, 6, 0.7), (3000, 24, 1.3)])
def test_statistics_equal_targets_on_the_same_rows(V, head, temperature):
    """Every statistic equals the one computed from `targets.target_distribution` over the full
    vocabulary; a small `head` forces the certified fast path and the fallbacks to both run."""
    q_logits, p_logits, y = _random_rows(V)
    grid = ta.default_grid(9, temperature)
    got = ta.position_statistics(q_logits, p_logits, y, grid, temperature=temperature, head=head)
    q, p = tl.probabilities(q_logits.double(), temperature), tl.probabilities(p_logits.double(), temperature)
    qu, pu = tl.probabilities(q_logits.double()), tl.probabilities(p_logits.double())
    for j, (curve, alpha) in enumerate(grid.points):
        rule, beta = ta.curve_rule(curve)
        if rule == "lossy" and alpha >= 1:
            pi = q
        else:
            pi = tl.target_distribution(rule, q, p, alpha, q_unscaled=qu, p_unscaled=pu, beta=beta)
        np.testing.assert_allclose(
            got[:, j, 0],
            tl.rejection_probability(pi, q),
            rtol=0,
            atol=1e-10,
            err_msg=f"{curve} alpha={alpha}",
        )
        for i in range(len(y)):
            want = ta.direct_statistics(
                curve, alpha, q[i], p[i], int(y[i]), q_unscaled=qu[i], p_unscaled=pu[i]
            )
            # deferral, expected 0-1 and greedy losses; log loss relative
            # (targets' w = 1 - sum q can be 1e-16)
            np.testing.assert_allclose(
                got[i, j, 1:4],
                want[1:4],
                rtol=0,
                atol=1e-10,
                equal_nan=True,
                err_msg=f"{curve} alpha={alpha} row {i}",
            )
            np.testing.assert_allclose(
                got[i, j, 4], want[4], rtol=1e-5, err_msg=f"{curve} alpha={alpha} row {i}"
            )


def _ends(grid):
    """(curve, the alpha where it is the drafter, the alpha where it is the verifier or None)."""
    for curve in grid.curves:
        values = grid.alphas[curve]
        if len(values) == 1:
            continue
        low, high = values[0], values[-1]
        yield curve, high, (None if curve == "token_v3" else low)


def test_curve_ends_are_the_drafter_and_the_verifier():
    q_logits, p_logits, y = _random_rows(500, C=16, seed=3)
    grid = ta.default_grid(11)
    s = ta.position_statistics(q_logits, p_logits, y, grid, head=32)
    drafter, verifier = s[:, grid.points.index(("drafter", 0.0))], s[:, grid.points.index(("verifier", 0.0))]
    cols = [0, 2, 3, 4]  # rejection, expected 0-1, greedy 0-1, log loss
    for curve, drafter_end, verifier_end in _ends(grid):
        at = s[:, grid.points.index((curve, drafter_end))]
        torch.testing.assert_close(
            at[:, cols], drafter[:, cols], rtol=0, atol=1e-12, msg=f"{curve} drafter end"
        )
        if verifier_end is not None:
            at = s[:, grid.points.index((curve, verifier_end))]
            torch.testing.assert_close(
                at[:, cols], verifier[:, cols], rtol=0, atol=1e-12, msg=f"{curve} verifier end"
            )
    # Token-V3 at alpha = 0 still keeps the verifier's top token when drafted: not SpecDecode
    v3 = s[:, grid.points.index(("token_v3", 0.0))]
    assert (v3[:, 0] < verifier[:, 0] - 1e-6).any()


def test_envelope_is_exact_knapsack_and_never_above_a_deferral():
    """Brute force over every subset of deferred positions: no deferral beats the envelope."""
    rng = np.random.default_rng(0)
    cost, lq, lp = rng.uniform(0, 1, 9), rng.uniform(0, 1, 9), rng.uniform(0, 1, 9)
    R, L = ta.oracle_envelope(cost, lq, lp)
    for mask in itertools.product([0, 1], repeat=9):
        m = np.array(mask)
        r, loss = (m * cost).mean(), np.where(m, lp, lq).mean()
        assert np.interp(r, R, L) <= loss + 1e-12
    assert L[-1] == pytest.approx(np.minimum(lq, lp).mean())  # at alpha = 0: defer exactly where it helps


@pytest.fixture(scope="module")
def toy_analysis():
    pair = tl.models.toy_pair()
    world = pair.drafter.world
    references = world.sample(1000, seed=7)
    items = [tc.Item(f"toy-{i}", "even" if i % 2 == 0 else "odd", [0], r) for i, r in enumerate(references)]
    return world, tc.analyse(pair, items, n_alpha=5, cache=False, progress=False)


def test_toy_world_numbers_match_exact_expectations(toy_analysis):
    """References drawn from the toy world's P: the means are the exact teacher-forced expectations of
    `ToyWorld.evaluate(prefixes="truth")` within sampling error (5 standard errors, ratio estimator)."""
    world, result = toy_analysis
    table = report.toy_world_check(world, result)  # the function notebook 08 shows
    assert len(table) > 100
    too_far = table[(table["module"] - table["exact"]).abs() > 5 * table["se"] + 1e-9]
    assert too_far.empty, too_far


def test_envelope_below_every_deferral_rule_on_the_toy_world(toy_analysis):
    _, result = toy_analysis
    summary = tc.summarise(result, losses=("expected_01", "greedy_01", "log_loss"), n_resamples=50)
    rejection = ta.STATS.index("rejection")
    for loss in ("expected_01", "greedy_01", "log_loss"):
        R, L = ta.oracle_envelope(
            result.oracle[:, 0], *(result.oracle[:, c] for c in tc._ORACLE_COLUMNS[loss])
        )
        column = ta.STATS.index(loss)
        for j, (curve, _) in enumerate(result.grid.points):
            if curve in ("bild", "chow", "diff", "opt", "drafter", "verifier", "spec"):
                r, value = summary["mean"][j, rejection], summary["mean"][j, column]
                assert np.interp(r, R, L) <= value + 1e-12, (loss, curve, j)
        for curve, entry in summary[loss]["curves"].items():
            if curve in ("bild", "chow", "diff", "opt"):
                assert entry["area"]["mean"][0] >= -1e-12
    interval = summary["expected_01"]["curves"]["opt"]["area"]
    assert interval["low"][0] <= interval["mean"][0] <= interval["high"][0]


@pytest.fixture(scope="module")
def tiny_pair():
    return ModelPair(tiny_random_llama(1), tiny_random_llama(2))


def _tiny_items(n=5):
    g = torch.Generator().manual_seed(0)
    shared = [2, 3, 4, 5, 6, 7]
    return [
        tc.Item(
            f"i{k}",
            "t",
            shared + torch.randint(2, 16, (3,), generator=g).tolist(),
            torch.randint(2, 16, (4 + k,), generator=g).tolist(),
        )
        for k in range(n)
    ]


def test_results_identical_for_any_chunk_size(tiny_pair):
    items = _tiny_items()
    runs = [
        tc.analyse(tiny_pair, items, n_alpha=7, chunk_size=size, cache=False, progress=False)
        for size in (1, 3, 100)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.sums, runs[0].sums)
        np.testing.assert_array_equal(other.oracle, runs[0].oracle)


def test_shared_prefix_cache_gives_the_full_pass_logits(tiny_pair):
    items = _tiny_items(3)
    lm = tiny_pair.verifier
    prompts = [tc.encode_item(lm, item, chat=False) for item in items]
    runner = tc._PrefixRunner(lm, prompts[0][0][:6])
    for prompt, reference in prompts:
        reused = runner.logits(prompt, reference)
        full = lm.start(prompt).feed(prompt + reference[:-1], keep=len(reference))
        torch.testing.assert_close(reused, full, rtol=1e-5, atol=1e-5)


def test_cache_round_trip(tiny_pair, tmp_path):
    items = _tiny_items(2)
    first = tc.analyse(tiny_pair, items, n_alpha=5, cache=tmp_path, progress=False)
    again = tc.analyse(tiny_pair, items, n_alpha=5, cache=tmp_path, progress=False)
    assert again.path == first.path and again.path.parent == tmp_path
    np.testing.assert_array_equal(again.sums, first.sums)
    assert list(again.showcase) == list(first.showcase)


def test_greedy_references_give_the_verifier_zero_greedy_loss(tiny_pair, tmp_path):
    items = _tiny_items(3)
    greedy = tc.greedy_references(tiny_pair, items, max_new_tokens=6, cache=tmp_path, progress=False)
    assert all(1 <= len(item.reference) <= 6 for item in greedy)
    result = tc.analyse(tiny_pair, greedy, n_alpha=3, cache=False, progress=False)
    j = result.grid.points.index(("verifier", 0.0))
    assert result.sums[:, j, ta.STATS.index("greedy_01")].sum() == pytest.approx(0.0, abs=1e-12)


def test_bad_input_raises_clear_errors(tiny_pair):
    good = _tiny_items(1)[0]
    with pytest.raises(ValueError, match="no reference"):
        tc.analyse(tiny_pair, [tc.Item("x", "t", good.prompt, None)], cache=False)
    with pytest.raises(ValueError, match="empty"):
        tc.analyse(tiny_pair, [tc.Item("x", "t", good.prompt, [])], cache=False)
    with pytest.raises(ValueError, match="no tokenizer"):
        tc.analyse(tiny_pair, [tc.Item("x", "t", good.prompt, "some text")], cache=False)
    with pytest.raises(ValueError, match="vocabularies differ"):
        tc.analyse((tiny_random_llama(1), tiny_random_llama(2, vocab_size=24)), [good], cache=False)
    with pytest.raises(ValueError, match="no items"):
        tc.analyse(tiny_pair, [], cache=False)
    with pytest.raises(ValueError, match="repeat"):
        tc.analyse(tiny_pair, [good, good], cache=False)
    with pytest.raises(ValueError, match="unknown curve"):
        ta.curve_rule("nope")


def test_blank_text_reference_with_a_real_tokenizer():
    lm = tl.load_model("smollm2-135m")
    item = tc.Item("blank", "facts", "Question: What is 2 + 2?\nAnswer:", "  \n ")
    with pytest.raises(ValueError, match="tokenizes to no answer tokens"):
        tc.encode_item(lm, item, chat=True)
    prompt, reference = tc.encode_item(lm, tc.Item("four", "facts", item.prompt, "4"), chat=True)
    assert reference[-1] == tc._end_token(lm) and len(reference) >= 2


def test_offline_items_have_references_in_the_shot_format():
    items = tc.offline_items(n=2)
    assert [item.task for item in items] == ["code"] * 2 + ["arithmetic"] * 2 + ["facts"] * 2
    assert items[0].reference.startswith("```python\n") and items[0].reference.endswith("\n```")
    assert items[2].reference.rstrip(".").split()[-1].isdigit()


def test_token_html_callback(tiny_pair):
    from tutorial_lib.views import token_analysis as view

    items = _tiny_items(2)
    result = tc.analyse(tiny_pair, items, n_alpha=5, cache=False, progress=False, showcase=["i1"])
    html_low = view.token_html(result, "i1", "chow", 0.0)
    html_high = view.token_html(result, "i1", "chow", 1.0, color_by="rejection")
    assert html_low.count("<span") == len(items[1].reference) and html_low != html_high
    assert "Lossy is not a mixture" in view.token_html(result, "i1", "lossy", 0.5)
    with pytest.raises(ValueError, match="per-token statistics"):
        view.token_html(result, "i0", "chow", 0.0)
    assert view.token_view(result) is not None
