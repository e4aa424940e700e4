r"""The paper's claims about its T5 and Gemma experiments, checked on a sweep's rows.

Each claim becomes one measured difference $\hat\Delta$ per (task, temperature[, gamma]), positive
when the claim holds, computed from the curves of `curve_bootstrap` (the paper's table: reduction
of cost at the verifier's quality, best quality within a cost).

**What a rule is credited with.** A claim about a rule uses that rule's **own measured
configurations** only (`own_configurations`): never the drafter's, SpecDecode's or the verifier's
runs attached as the ends of its curve, not its alphas at the ends of its range (where its output
law *is* SpecDecode's or the drafter's), and not a configuration whose texts equal SpecDecode's on
every item (at $T = 0$ lossy SpecDecode is SpecDecode: exact, so nothing of its own to measure).
Where a rule keeps no configuration of its own, the claim reads **by construction**, with the
reason, and no number.

**Intervals that include the selection.** A claim about "the best Token rule" or "the best other
method" takes a maximum over several curves, which is biased upward even when nothing differs. Its
interval comes from bounds that hold for every curve at once (`intervals.simultaneous_bounds` on
the same resamples of the items, the whole computation redone per resample), so the selection is
inside the interval: for a best-of group, $[\max L, \max U]$; for a difference of two groups,
$[\max L_A - \max U_B,\ \max U_A - \max L_B]$.

**The noise floor, in the claim's own unit** (`paired.same_law_floor`): two runs with one output law on
the same items, with its percentile interval. A claim in the quality unit gets the quality floor (the
verifier with a second seed set minus the verifier, or else SpecDecode minus the verifier; at $T = 0$ the
latter is 0 by construction and is not given as a floor); a claim in the rejection-rate unit gets
SpecDecode's rate with a second seed set relative to its rate; a claim on a latency axis gets none (no two
runs of one law were priced). `noise_floor_from` says which, or why there is none; `against_floor` says
whether the estimate lies **within the floor** ($|\hat\Delta| \le \max(|l_f|, |h_f|)$: what two runs of
one law differ by) or beyond it.

**Units.** On the rejection-rate axis (Gemma-style) each rule's number is the rejection rate at which
its curve first reaches the verifier's quality, and differences are reported as a reduction
relative to SpecDecode's own rejection rate, $(\,r_B - r_A) / r_{\rm spec}$ (positive: A rejects less),
with the rates themselves in the row. A claim that compares the two reruns (OPT with Gemma against
OPT with T5) measures both on that same axis (the T5 rows count their rejections too).

Verdicts: **holds** when $l > 0$; **does not hold** when $h \le 0$; **by construction** where the
difference is fixed (or undefined) by the design, whatever the items, with the reason (a rule with
no configuration of its own, no compared curve reaching the verifier's quality so both sides are
"not reached", SpecDecode at $\gamma = 1$ without the bonus token on a latency axis); **not run**
where a compared method was not run at that temperature (the sweep's design: named in the reason);
otherwise **not resolved at this sample size**, with the number of items that would resolve
it if the effect stayed at its estimate: the interval's half-width shrinks as $1/\sqrt n$, so with
$\widehat{se} = (h - l) / (2 z_{0.975})$,
$$n_{\rm needed} = \Big\lceil n\,\Big(\frac{(z_{0.975} + z_{0.8})\,\widehat{se}}{|\hat\Delta|}\Big)^2
  \Big\rceil,$$
the size at which a two-sided 5% test detects $\hat\Delta$ with 80% power (empty where $\hat\Delta$
is 0 or infinite or the interval unbounded).

The claims (the paper's section 6 and appendix, as `DIGEST.md` summarises them):

- T5: *SpecCascade [Token] gives the best quality-latency trade-off* (best Token rule's latency
  reduction at the verifier's quality minus the best of every other method); *OPT is second*
  (OPT's minus the best of the methods other than the Token rules); *sequential cascades are best
  only at very low latency*, as two measurements named by their budget: within the verifier's
  latency the best speculative cascade beats the best sequential one, and within the latency of the
  cheapest speculative cascade point (a budget above the verifier's when speculation does not pay:
  the measurement gives it as a multiple of the verifier's latency) the best sequential cascade beats
  the best speculative one. In both the verifier alone is open to either side (what a user on that budget
  can always run), so a side with no configuration within the budget is worth the verifier's quality,
  never minus infinity, and neither side is worth less than the verifier.
- Gemma-style (`gemma_style`): *[Token] comes within the margin of the verifier at a lower rate than the
  other rules* (the paper's "matches the large model's quality at a lower rejection rate", measured with
  the headline statistic (b), finite by construction of the capped rate); *[Token] beats the verifier
  sampled at the same temperature* and, at $T > 0$, *the greedy verifier* (the best Token configuration's
  quality minus the verifier's); *OPT helps less with Gemma than with T5* (OPT's capped-rate advantage over
  the best of Chow and Diff, T5 minus Gemma-style; independent resamples of the two runs).
- The headline claim per task (`headline`, `headline_curves`): quality at a matched rejection rate and the
  rate needed to come within a margin of the verifier, on each rule's curve with both its ends.

Its parts: `verdicts` (the verdicts, the noise floor's test, the items needed, a rule's own configurations,
two claims tables side by side), `selection` (the selection-aware statistics of one task and temperature and
the row each claim becomes), `paper_claims` (the T5 claims), `gemma_style` (the Gemma-style claims),
`headline` (the headline claim per task) and `headline_reading` (its per-task verdicts and the committed
runs it is read on).
"""

from .headline import headline_pairs, headline_table
from .headline_reading import headline_cell, headline_rows, headline_summary
from .headline_curves import HeadlineBootstrap, design_identities
from .gemma_style import gemma_claims
from .paper_claims import DEFERRAL_CURVES, SEQUENTIAL, TOKEN_CURVES, t5_claims
from .verdicts import (
    BEYOND_FLOOR,
    BY_CONSTRUCTION,
    DOES_NOT_HOLD,
    HOLDS,
    NOT_RESOLVED,
    NOT_RUN,
    VERDICTS,
    WITHIN_FLOOR,
    against_floor,
    compare_claims,
    n_needed,
    own_configurations,
    verdict,
)

__all__ = [
    "HOLDS",
    "DOES_NOT_HOLD",
    "NOT_RESOLVED",
    "BY_CONSTRUCTION",
    "NOT_RUN",
    "VERDICTS",
    "WITHIN_FLOOR",
    "BEYOND_FLOOR",
    "against_floor",
    "verdict",
    "n_needed",
    "own_configurations",
    "t5_claims",
    "gemma_claims",
    "compare_claims",
    "TOKEN_CURVES",
    "DEFERRAL_CURVES",
    "SEQUENTIAL",
    "headline_table",
    "headline_pairs",
    "headline_summary",
    "headline_cell",
    "headline_rows",
    "design_identities",
    "HeadlineBootstrap",
]
