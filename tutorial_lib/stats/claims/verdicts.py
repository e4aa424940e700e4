r"""The verdicts a claim can get, where an estimate lies against the noise floor, the items that would
resolve it, which configurations are a rule's own measurement, and two claims tables side by side (the
index page, `tutorial_lib.stats.claims`, says what each means)."""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ...maths.rules import LIVE_ALPHA_RANGES, has_spec_end

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
    "compare_claims",
]

HOLDS, DOES_NOT_HOLD, NOT_RESOLVED = "holds", "does not hold", "not resolved at this sample size"
BY_CONSTRUCTION, NOT_RUN = "by construction", "not run"
VERDICTS = (HOLDS, DOES_NOT_HOLD, NOT_RESOLVED, BY_CONSTRUCTION, NOT_RUN)
WITHIN_FLOOR, BEYOND_FLOOR = "within the noise floor", "beyond the noise floor"


def verdict(low: float, high: float) -> str:
    """The verdict on a claim measured as a difference that is positive when it holds."""
    if low > 0:
        return HOLDS
    if high <= 0:
        return DOES_NOT_HOLD
    return NOT_RESOLVED


def against_floor(estimate: float, floor_low: float, floor_high: float) -> str:
    """Whether `estimate` lies within the noise floor's interval of two same-law runs (`claims`' docstring):
    `WITHIN_FLOOR`, `BEYOND_FLOOR`, or "" where either is missing."""
    if not all(map(np.isfinite, (estimate, floor_low, floor_high))):
        return ""
    return WITHIN_FLOOR if abs(estimate) <= max(abs(floor_low), abs(floor_high)) else BEYOND_FLOOR


def n_needed(
    estimate: float, low: float, high: float, n: int, *, confidence: float = 0.95, power: float = 0.8
) -> float:
    """Items at which the interval would resolve `estimate` (`claims`' docstring); NaN where none follows."""
    if not all(map(math.isfinite, (estimate, low, high))) or estimate == 0:
        return float("nan")
    z_alpha = scipy_stats.norm.ppf(0.5 + confidence / 2)
    se = (high - low) / (2 * z_alpha)
    return float(math.ceil(n * ((z_alpha + scipy_stats.norm.ppf(power)) * se / abs(estimate)) ** 2))


# ---- the rule's own configurations ------------------------------------------------------------------


def _end_of_range(rule: str, alpha: float) -> str:
    """ "spec" or "drafter" where `alpha` is the end of `rule`'s range at which its law is that
    method's, else ""."""
    if rule not in LIVE_ALPHA_RANGES:
        return ""
    low, high = LIVE_ALPHA_RANGES[rule]
    if has_spec_end(rule) and alpha <= low + 1e-9:
        return "spec"
    if alpha >= high - 1e-9:
        return "drafter"
    return ""


def own_configurations(rows: pd.DataFrame) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """`(kept rows, dropped)`: the rows without the configurations that are not a rule's own
    measurement (`claims`' docstring), and one row per dropped configuration with the `reason`."""
    speculative = (rows["method"] == "speculative") & ~rows["rule"].isin(["spec"]) & rows["rule"].notna()
    dropped = []
    spec_texts = {
        (t, temp, g): part.set_index("example_id")["text"]
        for (t, temp, g), part in rows[rows["rule"] == "spec"].groupby(["task", "temperature", "gamma"])
    }
    for (task, temperature, gamma, config), part in rows[speculative].groupby(
        ["task", "temperature", "gamma", "config"], sort=False
    ):
        rule, alpha = part["rule"].iloc[0], float(part["alpha"].iloc[0])
        end = _end_of_range(rule, alpha)
        reason = {
            "spec": "the end of its range where its law is SpecDecode's",
            "drafter": "the end of its range where its law is the drafter's",
        }.get(end, "")
        reference = spec_texts.get((task, temperature, gamma))
        if not reason and reference is not None and "text" in part:
            mine = part.set_index("example_id")["text"]
            common = mine.index.intersection(reference.index)
            if len(common) == len(mine) and (mine.loc[common] == reference.loc[common]).all():
                reason = "its texts equal SpecDecode's on every item"
        if reason:
            dropped.append(
                {
                    "task": task,
                    "temperature": temperature,
                    "gamma": gamma,
                    "config": config,
                    "label": part["label"].iloc[0],
                    "alpha": alpha,
                    "reason": reason,
                }
            )
    dropped = pd.DataFrame(
        dropped, columns=["task", "temperature", "gamma", "config", "label", "alpha", "reason"]
    )
    # a configuration is dropped on the task where it is not the rule's own, not on every task
    dropped_on = pd.MultiIndex.from_frame(dropped[["task", "config"]])
    kept = ~pd.MultiIndex.from_frame(rows[["task", "config"]]).isin(dropped_on)
    return rows[kept], dropped


def compare_claims(
    before: pd.DataFrame, after: pd.DataFrame, renamed_tasks: Optional[dict] = None
) -> pd.DataFrame:
    """Every claim of two claims tables side by side (e.g. a rerun on more items against the run it
    replaces): estimate, interval, n, verdict and n needed before and after, one row per (claim, task,
    temperature, gamma). `renamed_tasks` maps a task of `before` to the one that replaced it in `after`
    (`{"code": "humaneval"}`); a claim present in only one table keeps its row, the other side empty, and
    `changed` says whether the verdict moved."""
    keys = ["claim", "task", "temperature", "gamma"]
    fields = ["estimate", "low", "high", "n", "verdict", "n_needed"]
    missing = [c for table in (before, after) for c in keys + fields if c not in table]
    if missing:
        raise ValueError(f"claims tables need the columns of claims.csv; missing {sorted(set(missing))}")
    old = before.assign(task=before["task"].replace(renamed_tasks or {}))
    both = old[keys + fields].merge(
        after[keys + fields], on=keys, how="outer", suffixes=("_before", "_after")
    )
    both["changed"] = both["verdict_before"].ne(both["verdict_after"])
    order = {claim: i for i, claim in enumerate(pd.unique(pd.concat([after["claim"], before["claim"]])))}
    both = both.sort_values(keys, key=lambda s: s.map(order) if s.name == "claim" else s)
    return both.reset_index(drop=True)
