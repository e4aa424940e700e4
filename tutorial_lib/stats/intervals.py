r"""Every interval of the package's tables, computed one way.

The reruns compare configurations on the same items with the same seeds, so the unit that varies
between repetitions of an experiment is the **item**. Every interval here comes from one recipe:

1. **Resample the items** (`resample_items`): draw $B$ samples of the $n$ item indices with
   replacement (`scipy.stats.bootstrap`'s own resampling, seeded) and recompute the whole statistic
   on each, every configuration on the *same* resample, so that differences are paired and any
   selection inside the statistic (the best of several points) is redone per resample.
2. **Read the percentile interval** (`percentile_interval`) off the $B$ resampled values: the
   empirical $(1-c)/2$ and $(1+c)/2$ quantiles by numpy's `inverted_cdf` convention, i.e. two of the
   resampled values themselves. An observed value is safe where a statistic is infinite in some
   resamples ("not reached"), where interpolating between $-\infty$ and a number would not be.
3. **One rule for tiny and constant samples**: with fewer than `MIN_ITEMS` (2) items there is no
   interval (both ends NaN); a constant sample needs no rule, since every resample reproduces it and
   the interval is the point itself.

**Selection-aware intervals** (`simultaneous_bounds`, `best_of`). A statistic that is the best of
several configurations (the best Token rule's quality) is biased upward even when every
configuration has the same law, and the percentile interval of its resampled values is biased
upward a second time (in every resample one configuration leads by chance). So a claim that
selects gets bounds that hold for every configuration at once: with $\hat\theta_c$ each
configuration's statistic and $\theta^*_c$ its value on a resample, the widths
$w_\uparrow = $ the $(1+c)/2$ quantile of $\max_c(\theta^*_c - \hat\theta_c)$ and
$w_\downarrow = $ the same of $\max_c(\hat\theta_c - \theta^*_c)$ give
$L_c = \hat\theta_c - w_\uparrow$, $U_c = \hat\theta_c + w_\downarrow$, which cover every $\theta_c$
together with probability about $c$ (a max-type simultaneous bootstrap band, Davison & Hinkley 1997,
section 4.2.4). Then $\max_c \theta_c \in [\max_c L_c, \max_c U_c]$, and a difference of two such
maxima gets $[\max L_A - \max U_B,\ \max U_A - \max L_B]$: the selection is inside the interval.
When every configuration has the same law the interval covers 0 in at least $c$ of repetitions
(about 97% at $c = 0.95$ with several configurations: tests/test_claims.py). A resample in which a
configuration's statistic is infinite ("not reached") says nothing about its spread and is left out
of the widths; a configuration infinite in more than $(1-c)/2$ of the resamples gets the infinite
bound on that side.

Figure bands are the percentile interval itself (`low`, `high`), never a point plus or minus half
of its width.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence, Tuple

import numpy as np
from scipy import stats as scipy_stats

__all__ = [
    "MIN_ITEMS",
    "CONFIDENCE",
    "N_RESAMPLES",
    "resample_items",
    "percentile_interval",
    "simultaneous_bounds",
    "best_of",
    "mean_interval",
    "paired_mean_difference",
    "ratio_of_means",
]

#: fewer items than this give no interval (NaN ends)
MIN_ITEMS = 2
CONFIDENCE = 0.95
N_RESAMPLES = 2000


def _check(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: pass a level strictly between 0 and 1, e.g. 0.95.")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples!r}: pass a whole number of resamples, e.g. 2000.")


def _tail(confidence: float) -> float:
    """The probability in each tail, rounded so that 0.95 gives exactly 0.025 (1 - 0.95 is not exact in
    floating point, and `inverted_cdf` would then step to the next resampled value)."""
    return round((1 - confidence) / 2, 12)


def resample_items(
    statistic: Callable[[np.ndarray], Sequence[float]],
    n: int,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> Tuple[np.ndarray, np.ndarray]:
    """`(point, distribution)`: the vector `statistic(idx)` at all `n` items (`idx = arange(n)`) and on
    each of `n_resamples` resamples of the item indices, shape `(k, B)` (`(k, 0)` below `MIN_ITEMS`)."""
    _check(CONFIDENCE, n_resamples)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n={n!r}: pass the number of items (a whole number >= 0).")
    point = np.atleast_1d(np.asarray(statistic(np.arange(n)), float))
    if n < MIN_ITEMS:
        return point, np.full((len(point), 0), np.nan)
    with warnings.catch_warnings():
        # infinite values ("not reached") and constant samples make scipy warn about its own interval,
        # which is not used: only the resampled values are
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", getattr(scipy_stats, "DegenerateDataWarning", RuntimeWarning))
        result = scipy_stats.bootstrap(
            (np.arange(n),),
            lambda idx: np.asarray(statistic(idx), float),
            vectorized=False,
            n_resamples=n_resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    return point, np.atleast_2d(result.bootstrap_distribution)


def percentile_interval(distribution, confidence: float = CONFIDENCE) -> Tuple:
    """The percentile interval `(low, high)` of resampled values along the last axis (module
    docstring: `inverted_cdf` quantiles); NaN where there are no resampled values."""
    _check(confidence, N_RESAMPLES)
    values = np.asarray(distribution, float)
    if values.shape[-1] == 0:
        nan = np.full(values.shape[:-1], np.nan)
        return (float(nan), float(nan)) if nan.ndim == 0 else (nan, nan)
    tail = _tail(confidence)
    low, high = np.quantile(values, [tail, 1 - tail], axis=-1, method="inverted_cdf")
    if np.ndim(low) == 0:
        return float(low), float(high)
    return low, high


def simultaneous_bounds(
    points, distribution, confidence: float = CONFIDENCE
) -> Tuple[np.ndarray, np.ndarray]:
    """Bounds `(L, U)` (shape `(k,)`) that cover each of `k` configurations' statistics together (module
    docstring), from their values at all items `points` (k,) and on the same resamples `distribution`
    (k, B). NaN bounds where there are no resamples."""
    _check(confidence, N_RESAMPLES)
    points = np.atleast_1d(np.asarray(points, float))
    values = np.atleast_2d(np.asarray(distribution, float))
    if values.shape[0] != points.shape[0]:
        raise ValueError(
            f"distribution has {values.shape[0]} rows for {points.shape[0]} points; pass one row of "
            "resampled values per configuration."
        )
    if values.shape[1] == 0:
        return np.full(points.shape, np.nan), np.full(points.shape, np.nan)
    tail = _tail(confidence)
    with np.errstate(invalid="ignore"):
        deviation = values - points[:, None]
    finite = np.isfinite(deviation)
    if finite.any():
        up = np.where(finite, deviation, -np.inf).max(0)
        down = np.where(finite, -deviation, -np.inf).max(0)
        informative = finite.any(0)
        w_up = float(np.quantile(up[informative], 1 - tail, method="inverted_cdf"))
        w_down = float(np.quantile(down[informative], 1 - tail, method="inverted_cdf"))
    else:
        w_up = w_down = 0.0
    low, high = points - w_up, points + w_down
    # where a configuration is "not reached" (minus infinity) in more than a tail of the resamples, or
    # reached in less than a tail of them, its bound on that side is the infinite one
    share_low = np.mean(np.isneginf(values), axis=1)
    share_high = np.mean(np.isposinf(values), axis=1)
    low = np.where(share_low > tail, -np.inf, low)
    high = np.where(share_high > tail, np.inf, high)
    low = np.where(np.isneginf(points), -np.inf, low)
    unreached = np.isneginf(points)
    if unreached.any():  # not reached at all items: the upper bound is the resamples' own percentile
        high[unreached] = np.quantile(values[unreached], 1 - tail, axis=1, method="inverted_cdf")
    return low, high


def best_of(points, distribution, confidence: float = CONFIDENCE) -> Tuple[float, float, float]:
    """`(max of points, low, high)`: the best of several configurations with its selection-aware
    interval `[max L, max U]` (`simultaneous_bounds`)."""
    points = np.atleast_1d(np.asarray(points, float))
    low, high = simultaneous_bounds(points, distribution, confidence)
    return float(points.max()), float(np.max(low)), float(np.max(high))


def _interval_of(samples: tuple, statistic, confidence: float, n_resamples: int, seed: int, *, paired: bool):
    """Point and percentile interval of a vectorised `statistic(*samples, axis)`, resampling items."""
    _check(confidence, n_resamples)
    samples = tuple(np.asarray(s, float) for s in samples)
    point = float(statistic(*samples, axis=-1))
    if len(samples[0]) < MIN_ITEMS:
        return point, np.nan, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", getattr(scipy_stats, "DegenerateDataWarning", RuntimeWarning))
        result = scipy_stats.bootstrap(
            samples,
            statistic,
            paired=paired,
            vectorized=True,
            n_resamples=n_resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    low, high = percentile_interval(result.bootstrap_distribution, confidence)
    return point, low, high


def mean_interval(
    values, *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES, seed: int = 0
) -> Tuple[float, float, float]:
    """`(mean, low, high)` of per-item values, items resampled."""
    return _interval_of(
        (values,), lambda x, axis=-1: np.mean(x, axis=axis), confidence, n_resamples, seed, paired=False
    )


def paired_mean_difference(
    a, b, *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES, seed: int = 0
) -> Tuple[float, float, float]:
    """`(mean(a) - mean(b), low, high)` over the same items, resampled together."""
    if len(a) != len(b):
        raise ValueError(
            f"a has {len(a)} items and b has {len(b)}; a paired difference needs the same items."
        )
    return _interval_of(
        (a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), confidence, n_resamples, seed, paired=True
    )


def ratio_of_means(
    x, y, *, confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES, seed: int = 0
) -> Tuple[float, float, float]:
    """`(sum(x) / sum(y), low, high)`: total over total on the same items, resampled together (a pooled
    ratio, never a mean of per-item ratios)."""
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} items and y has {len(y)}; a ratio of totals needs the same items.")
    return _interval_of(
        (x, y),
        lambda u, v, axis=-1: np.sum(u, axis=axis) / np.sum(v, axis=axis),
        confidence,
        n_resamples,
        seed,
        paired=True,
    )
