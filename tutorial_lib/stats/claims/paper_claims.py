"""The paper's T5 and Gemma-style claims measured on a sweep's rows (`t5_claims`, `gemma_claims`), each
the difference of two groups of curves or of a group and the verifier."""

from __future__ import annotations

from typing import List, Optional

import numpy as np
import pandas as pd

from .. import intervals
from ...maths import rules
from ..curve_bootstrap import REJECTION, CurveBootstrap
from ..paired import ItemScores, item_scores, same_law_floor
from .selection import RATE_FLOOR, TaskClaims, reached_difference, reached_text
from .verdicts import BY_CONSTRUCTION, NOT_RUN, own_configurations

__all__ = ["t5_claims", "gemma_claims", "TOKEN_CURVES", "DEFERRAL_CURVES", "SEQUENTIAL"]

#: The curves of the token-specific rules and of the deferral rules (`rules.RULE_TABLE`'s panels; live views,
#: so a registered rule joins its group).
TOKEN_CURVES = rules.curve_labels("token-specific rules")
DEFERRAL_CURVES = rules.curve_labels("deferral rules")
SEQUENTIAL = ("SeqCascade [Chow]", "TokenCascade [Chow]")
_BASELINES = ("Drafter", "Verifier")


def _cheapest_speculative(boot: CurveBootstrap) -> List[float]:
    points = boot.point_costs()
    speculative = points[points["label"].str.startswith("SpecCascade") & np.isfinite(points["cost"])]
    return [float(speculative["cost"].min())] if len(speculative) else []


def _check(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(
            f"n_resamples={n_resamples!r}: pass a whole number of resamples >= 100 (2000 for tables)."
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: pass a level strictly between 0 and 1, e.g. 0.95.")


def _runs(
    rows, tasks, cost, n_resamples, seed, confidence, budgets=None, second_seed=None
) -> List[TaskClaims]:
    kept, dropped = own_configurations(rows)
    floors = same_law_floor(
        rows, tasks, second_seed=second_seed, n_resamples=n_resamples, confidence=confidence, seed=seed
    )
    return [
        TaskClaims(scores, cost, n_resamples, seed, confidence, dropped, budgets, floors)
        for scores in item_scores(kept, tasks)
    ]


def t5_claims(
    rows: pd.DataFrame,
    tasks=None,
    *,
    cost: str = "wall_time_s",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """The T5 claims (the docstring of `claims`) per (task, T, gamma) on a latency axis `cost` (a row column,
    relative to the verifier: `wall_time_s`, or the cost model's `modelled_latency_s`). `tasks`: the
    sweep's `configs.Task` objects, so that BLEU is corpus BLEU."""
    _check(n_resamples, confidence)
    out = []
    unit = "latency reduction (share of the verifier's latency)"
    for run in _runs(rows, tasks, cost, n_resamples, seed, confidence, budgets=_cheapest_speculative):
        boot = run.boot
        others = [c[0] for c in boot.curves if c[0] not in TOKEN_CURVES + _BASELINES]
        speculative = [c[0] for c in boot.curves if c[0].startswith("SpecCascade")]
        low_budget = boot.budgets[1] if len(boot.budgets) > 1 else None
        for gamma in sorted(
            {int(g) for g in run.scores.configs.loc[run.scores.configs["method"] == "speculative", "gamma"]}
        ):
            out += [
                run.compare(
                    "SpecCascade [Token] gives the best quality-latency trade-off",
                    gamma,
                    "latency reduction at the verifier's quality: best Token rule - best other method",
                    TOKEN_CURVES,
                    others,
                    unit=unit,
                    floor=None,
                ),
                run.compare(
                    "OPT is second with T5",
                    gamma,
                    "latency reduction at the verifier's quality: OPT - best method other than Token and OPT",
                    ["SpecCascade [OPT]"],
                    [m for m in others if m != "SpecCascade [OPT]"],
                    unit=unit,
                    floor=None,
                ),
                run.compare(
                    "Sequential cascades are not the best at the verifier's latency",
                    gamma,
                    "best quality within the verifier's latency: best speculative cascade - best sequential",
                    speculative,
                    SEQUENTIAL,
                    name="best_quality",
                    unit=run.scores.metric,
                ),
            ]
            if low_budget is not None:
                # named by its budget: the cheapest speculative cascade point can cost more than the verifier
                out.append(
                    run.compare(
                        "Sequential cascades are best within the cheapest speculative cascade's latency",
                        gamma,
                        f"best quality within {low_budget:.3g}x the verifier's latency (the cheapest "
                        "speculative cascade point): best sequential - best speculative cascade",
                        SEQUENTIAL,
                        speculative,
                        name="best_quality",
                        budget=low_budget,
                        unit=run.scores.metric,
                    )
                )
    return pd.DataFrame(out)


def _spec_rate(scores: ItemScores, gamma) -> float:
    spec = scores.index("SpecDecode", gamma) or scores.index("SpecDecode")
    if not spec:
        return np.nan
    rejected, accepted = (
        scores.columns["n_rejected"][spec[0]].sum(),
        scores.columns["n_accepted"][spec[0]].sum(),
    )
    return float(rejected / (rejected + accepted)) if rejected + accepted else np.nan


def _rate_comparison(run: TaskClaims, claim: str, gamma, mine, theirs) -> dict:
    """Best rejection rate at the verifier's quality of `mine` against `theirs`, relative to
    SpecDecode's rate (`claims`' docstring)."""
    rate = _spec_rate(run.scores, gamma)
    unit = "rejection-rate reduction relative to SpecDecode's rate"
    if np.isnan(rate):
        return run.row(
            claim,
            gamma,
            "",
            np.nan,
            np.nan,
            np.nan,
            "",
            unit=unit,
            floor=RATE_FLOOR,
            unmeasured=NOT_RUN,
            reason="SpecDecode did not run here, so no rate reduction relative to its rate is defined",
        )
    if not rate > 0:
        return run.row(
            claim,
            gamma,
            "",
            np.nan,
            np.nan,
            np.nan,
            "",
            unit=unit,
            floor=RATE_FLOOR,
            reason="SpecDecode rejected no drafted token here, so a reduction relative to its rate is 0/0",
        )
    row = run.compare(
        claim,
        gamma,
        f"rejection rate at the verifier's quality: best of {', '.join(theirs)} - best "
        f"of {', '.join(mine)}, over SpecDecode's rate {rate:.3g}",
        mine,
        theirs,
        scale=rate,
        unit=unit,
        floor=RATE_FLOOR,
    )
    # the reduction statistic is 1 - rate on this axis: report the rates themselves
    for side in ("mine", "theirs"):
        best = row.pop(f"{side}_best", np.nan)
        row[f"{side}_rate"] = np.inf if np.isneginf(best) else 1.0 - best if np.isfinite(best) else np.nan
    row["spec_rate"] = rate
    if row["verdict"] not in (BY_CONSTRUCTION, NOT_RUN):
        rates = [
            f"{row[f'{side}_label']}: "
            + ("never reaches" if np.isinf(row[f"{side}_rate"]) else f"rate {row[f'{side}_rate']:.3g}")
            for side in ("mine", "theirs")
        ]
        row["detail"] = f"{rates[0]}; {rates[1]}; SpecDecode's rate {rate:.3g}"
    return row


def _opt_advantage(run: TaskClaims, gamma) -> Optional[dict]:
    return _rate_comparison(
        run,
        "OPT's rejection-rate advantage over Chow and Diff",
        gamma,
        ["SpecCascade [OPT]"],
        ["SpecCascade [Chow]", "SpecCascade [Diff]"],
    )


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
    """The Gemma-style claims (`claims`' docstring) per (task, T) on the rejection-rate axis (`cost`).
    With `t5_rows` (and `t5_tasks`) the claim "OPT helps less with Gemma than with T5" is measured
    against the T5 run at the same temperature, on the same axis (`t5_cost`, the rejection rate);
    without them it is left out. `second_seed`: the verifier's and SpecDecode's rows with a second seed
    set, for the same-law noise floor (`paired.same_law_floor`)."""
    _check(n_resamples, confidence)
    if t5_cost != REJECTION or cost != REJECTION:
        raise ValueError(
            f"cost={cost!r}, t5_cost={t5_cost!r}: the Gemma-style claims compare rejection rates on "
            f"both runs; pass {REJECTION!r} (one unit on both sides)."
        )
    t5 = _runs(t5_rows, t5_tasks, REJECTION, n_resamples, seed + 1, confidence) if t5_rows is not None else []
    out = []
    for run in _runs(rows, tasks, cost, n_resamples, seed, confidence, second_seed=second_seed):
        gamma = 1
        out.append(
            _rate_comparison(
                run,
                "[Token] matches the large model's quality at a lower rejection rate",
                gamma,
                TOKEN_CURVES,
                DEFERRAL_CURVES + ("SpecDecode [Lossy]",),
            )
        )
        out.append(_beats_verifier(run, gamma))
        gemma_opt = _opt_advantage(run, gamma)
        for other in [r for r in t5 if r.scores.temperature == run.scores.temperature]:
            t5_gamma = min((c[1] for c in other.boot.curves if c[0] == "SpecCascade [OPT]"), default=None)
            if t5_gamma is None:
                continue
            t5_opt = _opt_advantage(other, t5_gamma)
            claim = "OPT helps less with Gemma than with T5"
            measurement = (
                "OPT's rejection-rate advantage over the best of Chow/Diff (relative to SpecDecode's "
                f"rate): T5 ({other.scores.task}, gamma {t5_gamma}) - Gemma-style"
            )
            sides = (("T5", t5_opt), ("Gemma-style", gemma_opt))
            unmeasured = [
                side["verdict"] for _, side in sides if side["verdict"] in (BY_CONSTRUCTION, NOT_RUN)
            ]
            if unmeasured:
                out.append(
                    run.row(
                        claim,
                        gamma,
                        measurement,
                        np.nan,
                        np.nan,
                        np.nan,
                        "",
                        unit=gemma_opt["unit"],
                        reason="; ".join(
                            f"{where}: {side['reason']}"
                            for where, side in sides
                            if side["verdict"] in unmeasured
                        ),
                        unmeasured=BY_CONSTRUCTION if BY_CONSTRUCTION in unmeasured else NOT_RUN,
                        floor=None,
                    )
                )
                continue
            # independent runs: the difference's bounds from each side's simultaneous bounds
            out.append(
                run.row(
                    claim,
                    gamma,
                    measurement,
                    reached_difference(t5_opt["estimate"], gemma_opt["estimate"]),
                    reached_difference(t5_opt["low"], gemma_opt["high"]),
                    reached_difference(t5_opt["high"], gemma_opt["low"]),
                    f"T5: {reached_text(t5_opt['estimate'])} [{t5_opt['low']:.3g}, {t5_opt['high']:.3g}]; "
                    f"Gemma-style: {reached_text(gemma_opt['estimate'])} [{gemma_opt['low']:.3g}, "
                    f"{gemma_opt['high']:.3g}]",
                    unit=gemma_opt["unit"],
                    floor=None,
                )
            )
    return pd.DataFrame([r for r in out if r is not None])


def _beats_verifier(run: TaskClaims, gamma) -> dict:
    """The best Token configuration's quality minus the verifier's, simultaneous over the Token
    configurations (every own configuration is a candidate, whatever its rejection rate)."""
    claim = "[Token] beats the large model's quality"
    measurement = "best Token-rule configuration's quality - verifier quality"
    scores = run.scores
    candidates = [j for label in TOKEN_CURVES for j in scores.index(label, gamma)]
    verifier = scores.index("Verifier")
    if not candidates:
        unmeasured, why = run.why_none(TOKEN_CURVES)
        return run.row(
            claim,
            gamma,
            measurement,
            np.nan,
            np.nan,
            np.nan,
            "",
            unit=scores.metric,
            reason=why,
            unmeasured=unmeasured,
        )
    point, distribution = scores.resampled(run.n_resamples, run.seed)
    differences = point[candidates] - point[verifier[0]]
    best, low, high = intervals.best_of(
        differences, distribution[candidates] - distribution[verifier[0]], run.confidence
    )
    j = candidates[int(np.argmax(differences))]
    chosen = scores.configs.iloc[j]
    detail = (
        f"{chosen['label']} (alpha {chosen['alpha']:.4g}): {point[j]:.3g}; "
        f"verifier: {point[verifier[0]]:.3g}; best of {len(candidates)} own configurations"
    )
    return run.row(claim, gamma, measurement, best, low, high, detail, unit=scores.metric)
