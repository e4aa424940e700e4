r"""Analysis of a sweep's rows: curves, the paper's table (point estimates), answer lengths.

A **curve** is one method's configurations over its $\alpha$ grid. Each point has

$$\bar{Q}(c) = \frac{1}{n}\sum_x Q(c, x),\qquad
  L(c) = \frac{\sum_x \mathrm{time}(c, x)}{\sum_x \mathrm{time}(\text{verifier}, x)},\qquad
  r(c) = \frac{\sum_x \#\mathrm{rejected}(c, x)}{\sum_x \#\mathrm{judged}(c, x)},$$

the mean quality with its 95% percentile interval over items (`quality_low`, `quality_high`:
`intervals.mean_interval`; `quality_ci` is half its width, for tables only), the latency relative to the
verifier alone (the T5 plots) and the rejection rate (the Gemma plots; the drafter alone has $r = 0$, the
verifier alone $r = 1$: every token is its own).

**The paper's table**, per method, computed from the measured curve by one documented rule: sort the
curve's points by latency and join neighbours by straight lines (linear interpolation).

- (i) *latency reduction at the verifier's quality*: the smallest latency $L^*$ at which the
  interpolated curve first reaches the verifier's quality $Q_p$; reported as $1 - L^*/L_p$ (the
  verifier's latency $L_p = 1$). "not reached" when no point reaches $Q_p$.
- (ii) *best quality within the verifier's latency*: the largest quality of the interpolated curve
  over $L \le L_p$ (a segment that crosses $L_p$ contributes its value at $L_p$); "not reached"
  when every point is slower than the verifier.

The same table with bootstrap intervals is `curve_bootstrap.curve_table`; the paper's claims, each
with its interval and verdict, are `claims`. The figures are in `rerun_figures`.

Its parts: `curves` (`summarize`, `with_rule_ends` and the paper's table), `summary_views` (what a table or a
figure reads off a summary) and `row_views` (latency per task and pooled, answer lengths, the saved T5 run and
what its facts count, read straight off the rows).
"""

from .curves import (
    COST_COLUMNS,
    NOT_REACHED,
    best_quality_within,
    crossing_latency,
    paper_table,
    quality_by_group,
    summarize,
    with_rule_ends,
)
from .row_views import (
    POOLED,
    answer_lengths,
    distinct_runs,
    latency_view,
    same_calls,
    same_texts_as,
    saved_t5_run,
)
from .summary_views import (
    GAMMA_FREE,
    interval_points,
    qualities,
    quality_bounds,
    reference_quality,
    select,
    speculative_ranges,
)

__all__ = [
    "NOT_REACHED",
    "summarize",
    "quality_by_group",
    "with_rule_ends",
    "crossing_latency",
    "best_quality_within",
    "paper_table",
    "speculative_ranges",
    "qualities",
    "COST_COLUMNS",
    "interval_points",
    "latency_view",
    "POOLED",
    "answer_lengths",
    "saved_t5_run",
    "GAMMA_FREE",
    "select",
    "quality_bounds",
    "reference_quality",
    "same_calls",
    "distinct_runs",
    "same_texts_as",
]
