"""The paper's T5 claims measured on a sweep's rows (`t5_claims`), each the difference of two groups of
curves, and what the Gemma-style claims (`gemma_style`) share with them: the rule groups and the per-task
statistics (`task_claims`)."""

from __future__ import annotations

from typing import List

import numpy as np
import pandas as pd

from ...maths import rules
from ..curve_bootstrap import CurveBootstrap
from ..paired import item_scores, same_law_floor
from .selection import TaskClaims
from .verdicts import own_configurations

__all__ = ["t5_claims", "task_claims", "check_resamples", "TOKEN_CURVES", "DEFERRAL_CURVES", "SEQUENTIAL"]

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


def check_resamples(n_resamples: int, confidence: float) -> None:
    """Refuse a resample count or confidence level no claim table can use."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(
            f"n_resamples={n_resamples!r}: pass a whole number of resamples >= 100 (2000 for tables)."
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: pass a level strictly between 0 and 1, e.g. 0.95.")


def task_claims(
    rows, tasks, cost, n_resamples, seed, confidence, budgets=None, second_seed=None
) -> List[TaskClaims]:
    """One `TaskClaims` per (task, temperature) of `rows`, on the rules' own configurations, with the
    same-law noise floor of the verifier and SpecDecode (`second_seed`)."""
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
    check_resamples(n_resamples, confidence)
    out = []
    unit = "latency reduction (share of the verifier's latency)"
    for run in task_claims(rows, tasks, cost, n_resamples, seed, confidence, budgets=_cheapest_speculative):
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
                    "best quality within the verifier's latency, the verifier alone open to both sides: best "
                    "speculative cascade or the verifier - best sequential cascade or the verifier",
                    speculative,
                    SEQUENTIAL,
                    name="best_quality",
                    unit=run.scores.metric,
                    with_verifier=True,
                ),
            ]
            if low_budget is not None:
                # named by its budget: the cheapest speculative cascade point can cost more than the verifier
                out.append(
                    run.compare(
                        "Sequential cascades are best within the cheapest speculative cascade's latency",
                        gamma,
                        f"best quality within {low_budget:.3g}x the verifier's latency (the cheapest "
                        "speculative cascade point), the verifier alone open to both sides: best sequential "
                        "cascade or the verifier - best speculative cascade or the verifier",
                        SEQUENTIAL,
                        speculative,
                        name="best_quality",
                        budget=low_budget,
                        unit=run.scores.metric,
                        with_verifier=low_budget >= 1.0,
                    )
                )
    return pd.DataFrame(out)
