"""The block-cost model with a batch size, its calibration and the measured rates."""

import math

import pytest

from tutorial_lib import models
from tutorial_lib.decoding import speed_runs
from tutorial_lib.maths import latency
from tutorial_lib.views import speed as speed_view

pytestmark = pytest.mark.usefixtures("one_thread")


def test_one_row_is_the_block_cost_model():
    t_p = {1: 0.1, 2: 0.12, 4: 0.15, 6: 0.2}
    for gamma in (1, 3, 5):
        assert latency.batch_tokens_per_second(gamma, 0.7, 0.03, t_p, 1, t_q2=0.04) == pytest.approx(
            1 / latency.block_time_per_token(gamma, 0.7, 0.03, t_p, t_q2=0.04)
        )
    assert latency.batch_tokens_per_second(0, 0.7, 0.03, t_p, 8) == pytest.approx(8 / 0.1)


def test_a_batch_pays_the_catch_up_step_when_any_row_kept_its_block():
    t_p = {1: 1.0, 4: 1.0}
    # gamma = 3, a = 0.5: one row's block is fully kept with probability 1/8, some of 4 rows' with 1 - (7/8)^4
    rate = latency.batch_tokens_per_second(3, 0.5, 0.1, t_p, 4, t_q2=0.3)
    expected = 4 * latency.expected_tokens_per_call(0.5, 3) / (3 * 0.1 + 0.2 * (1 - (7 / 8) ** 4) + 1.0)
    assert rate == pytest.approx(expected)
    with pytest.raises(ValueError, match="batch_size"):
        latency.batch_tokens_per_second(3, 0.5, 0.1, t_p, 0)
    with pytest.raises(ValueError, match="calibrate"):
        latency.batch_tokens_per_second(5, 0.5, 0.1, t_p, 2)


def test_measured_and_predicted_rates_on_a_tiny_pair():
    verifier = models.tiny_random_llama(0)
    pair = models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)
    prompts = [[3, 5, 7], [4, 4, 9, 1], [12, 3], [7, 1, 2, 3, 4]]
    costs = speed_runs.calibrate_batch(pair, [1, 4], ks=[1, 3], repeats=1, context_tokens=8, progress=False)
    assert set(zip(costs.model, costs.batch_size, costs.k)) == {
        ("drafter", 1, 1),
        ("drafter", 1, 2),
        ("drafter", 4, 1),
        ("drafter", 4, 2),
        ("verifier", 1, 1),
        ("verifier", 1, 3),
        ("verifier", 4, 1),
        ("verifier", 4, 3),
    }
    assert (costs.seconds > 0).all()
    speed = speed_runs.measure_batch_speed(pair, prompts, [1, 4], [2], max_new_tokens=6, progress=False)
    assert len(speed) == 4 and (speed.tokens == 6 * speed.batch_size).all()
    assert (
        speed[speed.gamma == 0].acceptance.isna().all()
        and speed[speed.gamma == 2].acceptance.between(0, 1).all()
    )
    assert (speed.peak_rss_mib >= speed.start_rss_mib).all()
    table = speed_runs.predict_batch_speed(speed, costs)
    assert table.predicted_tokens_per_s.map(math.isfinite).all() and (table.predicted_tokens_per_s > 0).all()
    panels = speed_view.batch_speed_panels(table)
    assert len(panels) == 2 and len(panels[1].traces) == 2  # gamma = 2: measured and predicted speed-up
    with pytest.raises(ValueError, match="predict_batch_speed"):
        speed_view.batch_speed_panels(speed)
    with pytest.raises(ValueError, match="prompts"):
        speed_runs.measure_batch_speed(pair, prompts, [8], [2], progress=False)


def test_where_speculation_pays_compares_each_gamma_with_the_verifier_alone_at_the_same_batch_size():
    import pandas as pd
    from tutorial_lib.decoding.speed_tables import where_speculation_pays

    runs = pd.DataFrame(
        [
            dict(batch_size=b, gamma=g, tokens_per_s=tps, predicted_tokens_per_s=pred)
            for b, g, tps, pred in [
                (1, 0, 10, 10),
                (1, 0, 12, 10),
                (1, 3, 13, 12),
                (1, 3, 14, 12),
                (8, 0, 50, 40),
                (8, 0, 52, 40),
                (8, 3, 51, 39),
                (8, 3, 49, 39),
            ]
        ]
    )
    pays = where_speculation_pays(runs).set_index("gamma")
    assert (
        pays.loc[3, "measured"] == [1]
        and pays.loc[3, "every_round"] == [1]
        and pays.loc[3, "predicted"] == [1]
    )
    runs.loc[runs.index[2], "tokens_per_s"] = 11.0  # one slow round: still faster by the median only
    assert where_speculation_pays(runs).set_index("gamma").loc[3, "every_round"] == []
    with pytest.raises(ValueError, match="gamma 0"):
        where_speculation_pays(runs[runs["gamma"] > 0])
