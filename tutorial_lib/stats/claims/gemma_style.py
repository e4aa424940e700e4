r"""The paper's Gemma-style claims on a run's rows (`gemma_claims`), each a statistic that is always finite.

Per (task, temperature), at $\gamma = 1$, on the rejection-rate axis:

- *[Token] comes within the margin of the verifier at a lower rate than the other rules* (the paper's
  "[Token] matches the large model's quality at a lower rejection rate"): the headline statistic (b)
  (`headline`): the rejection rate each group needs for its curve (both ends included) to come within the
  margin of the verifier's quality, over SpecDecode's rate and capped at 1 (SpecDecode's own end), the best
  other rule's minus the best Token rule's; each group's best chosen again in every paired resample; its
  noise floor the statistic recomputed with the second seed set's verifier and SpecDecode.
- *[Token] beats the verifier sampled at the same temperature*: the best Token configuration's quality minus
  the verifier's at that temperature, with bounds simultaneous over the Token configurations (the picking
  inside the interval; a Token rule that a design identity makes another rule's run, Token-V1 at $T = 0$,
  left out); and, at $T > 0$, *[Token] beats the greedy verifier*: the same against the $T = 0$
  verifier's quality on the same items and resamples (the greedy verifier is not drawn: no noise floor).
- *OPT helps less with Gemma than with T5*: OPT's advantage, statistic (b) with {OPT} against {Chow, Diff}
  (the lower capped rate of Chow and Diff minus OPT's), on the T5 run minus on this run, at the same
  temperature (independent resamples of the two runs; the T5 run at its own block size and a margin of the
  same share of its metric's scale, `headline_curves.margin_for`). At $T = 0$ OPT emits Diff's tokens by
  design: where that identity holds on both runs' texts the row reads **by construction**.

Rows of a group that did not run read **not run** with the reason; no estimate or bound is ever infinite.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .. import intervals
from ..curve_bootstrap import REJECTION
from .headline import RATE_VS_OTHERS, HeadlinePair, headline_pairs
from .headline_reading import SUMMARY_CLAIMS
from .paper_claims import TOKEN_CURVES, check_resamples, task_claims
from .selection import TaskClaims
from .verdicts import NOT_RUN

__all__ = ["gemma_claims", "MATCHES", "BEATS_SAMPLED", "BEATS_GREEDY", "OPT_LESS"]

MATCHES = next(claim for claim, statistic in SUMMARY_CLAIMS if statistic == RATE_VS_OTHERS)
BEATS_SAMPLED = "[Token] beats the verifier sampled at the same temperature"
BEATS_GREEDY = "[Token] beats the greedy verifier"
OPT_LESS = "OPT helps less with Gemma than with T5"
_OPT, _CHOW_DIFF = ["SpecCascade [OPT]"], ["SpecCascade [Chow]", "SpecCascade [Diff]"]
_RATE_UNIT = "share of SpecDecode's rejection rate"
_RESAMPLED = "percentile over paired resamples of the items, each group's best chosen again in every resample"


def _without_number(run: TaskClaims, claim: str, measurement: str, **reasons) -> dict:
    """A claim row with no estimate: `reason` says why, `unmeasured` which label (`TaskClaims.row`)."""
    return run.row(claim, 1, measurement, np.nan, np.nan, np.nan, "", **reasons)


def _matches(run: TaskClaims, pair: HeadlinePair) -> dict:
    """The headline table's statistic (b) row (`RATE_VS_OTHERS`) as a claim row, with its own floor."""
    cell = next(r for r in pair.rows() if r["statistic"] == RATE_VS_OTHERS)
    measurement = (
        f"rejection rate to come within {pair.main.margin:g} of the verifier's quality, over SpecDecode's "
        "(1 where not below it): best other rule - best Token rule"
    )
    if cell["verdict"] == NOT_RUN:
        reason = cell["detail"].removeprefix("not run: ")
        return _without_number(
            run,
            MATCHES,
            measurement,
            unit=_RATE_UNIT,
            reason=reason,
            unmeasured=NOT_RUN,
            floor=None,
        )
    row = run.row(
        MATCHES,
        1,
        measurement,
        cell["estimate"],
        cell["low"],
        cell["high"],
        cell["detail"],
        unit=_RATE_UNIT,
        floor=None,
        mine_best=cell["token_value"],
        theirs_best=cell["other_value"],
        mine_label=cell["token_curve"],
        theirs_label=cell["other_curve"],
    )
    row["interval"] = _RESAMPLED
    for key in ("noise_floor", "noise_floor_low", "noise_floor_high", "noise_floor_from", "against_floor"):
        row[key] = cell[key]
    return row


def _beats(run: TaskClaims, pair: HeadlinePair, greedy: bool) -> Optional[dict]:
    """The best Token configuration's quality minus the verifier's (sampled at the run's temperature, or
    the greedy one), simultaneous over the Token configurations."""
    scores, temperature = run.scores, run.scores.temperature
    claim = BEATS_GREEDY if greedy else BEATS_SAMPLED
    which = "greedy (T = 0) verifier" if greedy else f"verifier sampled at T = {temperature:g}"
    measurement = f"best Token-rule configuration's quality - the {which}'s quality"
    # a Token rule that is another rule's run by a design identity (Token-V1 is Diff at T = 0) is not a Token
    # configuration of its own
    token = [label for label in TOKEN_CURVES if not pair.identity_holds(label)]
    candidates = [j for label in token for j in scores.index(label, 1)]
    if not candidates:
        unmeasured, why = run.why_none(TOKEN_CURVES)
        return _without_number(
            run,
            claim,
            measurement,
            unit=scores.metric,
            reason=why,
            unmeasured=unmeasured,
        )
    point, distribution = scores.resampled(run.n_resamples, run.seed)
    if greedy:
        if pair.main.greedy is None:
            return _without_number(
                run,
                claim,
                measurement,
                unit=scores.metric,
                reason="the greedy verifier did not run on these items",
                unmeasured=NOT_RUN,
            )
        values = pair.main.greedy
        reference, reference_d = intervals.resample_items(
            lambda idx: np.array([values[idx].mean()]), scores.n, n_resamples=run.n_resamples, seed=run.seed
        )
        reference, reference_d = float(reference[0]), reference_d[0]
    else:
        verifier = scores.index("Verifier")[0]
        reference, reference_d = float(point[verifier]), distribution[verifier]
    differences = point[candidates] - reference
    best, low, high = intervals.best_of(differences, distribution[candidates] - reference_d, run.confidence)
    j = candidates[int(np.argmax(differences))]
    chosen = scores.configs.iloc[j]
    detail = (
        f"{chosen['label']} (alpha {chosen['alpha']:.4g}): {point[j]:.3g}; {which}: {reference:.3g}; "
        f"best of {len(candidates)} own configurations"
    )
    row = run.row(
        claim,
        1,
        measurement,
        best,
        low,
        high,
        detail,
        unit=scores.metric,
        floor=None if greedy else "quality",
    )
    if greedy:
        row["noise_floor_from"] = "none: the greedy verifier is not drawn, so a second seed set repeats it"
    return row


def _opt_less(run: TaskClaims, pair: HeadlinePair, t5: HeadlinePair) -> dict:
    """OPT's capped-rate advantage over Chow and Diff, T5 minus this run (module docstring)."""
    measurement = (
        "OPT's advantage (the lower of Chow's and Diff's rate to come within the margin of the verifier, "
        f"over SpecDecode's, minus OPT's): T5 ({t5.task}) - Gemma-style"
    )
    if run.scores.temperature == 0 and pair.identity_holds(_OPT[0]) and t5.identity_holds(_OPT[0]):
        return _without_number(
            run,
            OPT_LESS,
            measurement,
            unit=_RATE_UNIT,
            floor=None,
            reason="at T = 0 OPT emits Diff's tokens on both runs (texts equal on every item): "
            "OPT adds to Diff on neither",
        )
    sides = {"T5": t5.rate_gap(_OPT, _CHOW_DIFF), "Gemma-style": pair.rate_gap(_OPT, _CHOW_DIFF)}
    missing = [name for name, side in sides.items() if side is None]
    if missing:
        return _without_number(
            run,
            OPT_LESS,
            measurement,
            unit=_RATE_UNIT,
            floor=None,
            reason=f"OPT, or both Chow and Diff, did not run on the {' and '.join(missing)} run",
            unmeasured=NOT_RUN,
        )
    (t5_value, t5_d, *_), (mine, mine_d, *_) = sides["T5"], sides["Gemma-style"]
    n = min(t5_d.size, mine_d.size)
    low, high = intervals.percentile_interval(t5_d[:n] - mine_d[:n], run.confidence)
    texts = []
    for name, (value, resampled, opt, other, _, other_curve) in sides.items():
        a, b = intervals.percentile_interval(resampled, run.confidence)
        texts.append(f"{name}: {value:+.3f} [{a:+.3f}, {b:+.3f}] (OPT {opt:.3f}, {other_curve} {other:.3f})")
    row = run.row(
        OPT_LESS,
        1,
        measurement,
        t5_value - mine,
        float(low),
        float(high),
        "; ".join(texts),
        unit=_RATE_UNIT,
        floor=None,
    )
    row["interval"] = "percentile of the difference of the two runs' independent resamples"
    return row


def gemma_claims(
    rows: pd.DataFrame,
    tasks=None,
    *,
    cost: str = REJECTION,
    t5_rows: Optional[pd.DataFrame] = None,
    t5_tasks=None,
    t5_cost: str = REJECTION,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    second_seed: Optional[pd.DataFrame] = None,
) -> pd.DataFrame:
    """The Gemma-style claims (module docstring) per (task, T) on the rejection-rate axis (`cost`). With
    `t5_rows` (and `t5_tasks`) "OPT helps less with Gemma than with T5" is measured against the T5 run at
    the same temperature; without them it is left out. `second_seed`: the verifier's and SpecDecode's rows
    with a second seed set, for the noise floors."""
    check_resamples(n_resamples, confidence)
    if t5_cost != REJECTION or cost != REJECTION:
        raise ValueError(
            f"cost={cost!r}, t5_cost={t5_cost!r}: the Gemma-style claims compare rejection rates on "
            f"both runs; pass {REJECTION!r} (one unit on both sides)."
        )
    settings = {"n_resamples": n_resamples, "confidence": confidence}
    pairs = {
        (p.task, p.temperature): p
        for p in headline_pairs(rows, tasks, second_seed=second_seed, seed=seed, **settings)
    }
    t5_pairs = {}
    if t5_rows is not None:
        speculative = t5_rows[t5_rows["label"] == _OPT[0]]
        gamma = int(speculative["gamma"].min()) if len(speculative) else 1
        t5_pairs = {
            p.temperature: p
            for p in headline_pairs(t5_rows, t5_tasks, seed=seed + 1, gamma=gamma, **settings)
        }
    out = []
    for run in task_claims(rows, tasks, REJECTION, n_resamples, seed, confidence, second_seed=second_seed):
        pair = pairs[(run.scores.task, run.scores.temperature)]
        out.append(_matches(run, pair))
        out.append(_beats(run, pair, greedy=False))
        if run.scores.temperature > 0:
            out.append(_beats(run, pair, greedy=True))
        if run.scores.temperature in t5_pairs:
            out.append(_opt_less(run, pair, t5_pairs[run.scores.temperature]))
    return pd.DataFrame(out)
