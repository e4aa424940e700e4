"""The package's one recipe for intervals: resampled items, one quantile convention, one rule for
tiny and constant samples, and bounds that hold for several configurations at once."""

import numpy as np
import pytest

from tutorial_lib.stats import intervals


def test_resampling_items_recomputes_the_whole_statistic_on_each_resample():
    values = np.arange(10.0)
    point, distribution = intervals.resample_items(
        lambda idx: [values[idx].mean(), values[idx].max()], 10, n_resamples=200, seed=1
    )
    assert point.tolist() == [4.5, 9.0] and distribution.shape == (2, 200)
    assert (distribution[1] <= 9).all() and (distribution[0] <= distribution[1]).all()


def test_one_rule_for_tiny_and_constant_samples():
    point, distribution = intervals.resample_items(lambda idx: [1.0], 1)
    assert distribution.shape == (1, 0)
    assert all(np.isnan(v) for v in intervals.percentile_interval(distribution[0]))
    assert intervals.mean_interval([3.0])[1:] == pytest.approx((np.nan, np.nan), nan_ok=True)
    assert intervals.mean_interval([2.0] * 12) == (2.0, 2.0, 2.0)
    assert intervals.paired_mean_difference([1.0, 2.0, 3.0], [0.0, 1.0, 2.0]) == (1.0, 1.0, 1.0)


def test_the_percentile_interval_is_two_resampled_values_and_safe_with_infinities():
    values = np.concatenate([[-np.inf] * 12, np.linspace(0, 1, 388)])  # 3% not reached
    low, high = intervals.percentile_interval(values)
    assert np.isneginf(low) and high in values
    low, high = intervals.percentile_interval(np.linspace(0, 1, 401))
    assert low in np.linspace(0, 1, 401) and high in np.linspace(0, 1, 401)


def test_ratio_of_means_is_total_over_total():
    x, y = np.array([1.0, 3.0, 8.0]), np.array([2.0, 2.0, 4.0])
    point, low, high = intervals.ratio_of_means(x, y, n_resamples=500)
    assert point == pytest.approx(12 / 8) and low <= point <= high
    with pytest.raises(ValueError, match="same items"):
        intervals.ratio_of_means(x, y[:2])


def test_simultaneous_bounds_cover_every_configuration_and_mark_unreached_ones():
    rng = np.random.default_rng(0)
    points = np.array([0.1, 0.2, -np.inf])
    distribution = np.vstack(
        [
            0.1 + rng.normal(0, 0.05, 400),
            0.2 + rng.normal(0, 0.05, 400),
            np.where(rng.random(400) < 0.1, 0.3, -np.inf),
        ]
    )
    low, high = intervals.simultaneous_bounds(points, distribution)
    assert (low[:2] < points[:2]).all() and (high[:2] > points[:2]).all()
    # wider than each configuration's own percentile interval: they hold together
    own_low, own_high = intervals.percentile_interval(distribution[:2])
    assert (low[:2] <= own_low).all() and (high[:2] >= own_high).all()
    assert np.isneginf(low[2]) and high[2] == pytest.approx(0.3)
    best, best_low, best_high = intervals.best_of(points, distribution)
    assert best == 0.2 and best_low == low.max() and best_high == high.max()
    with pytest.raises(ValueError, match="one row of resampled values per configuration"):
        intervals.simultaneous_bounds(points, distribution[:2])
    with pytest.raises(ValueError, match="confidence"):
        intervals.percentile_interval(distribution, confidence=95)
