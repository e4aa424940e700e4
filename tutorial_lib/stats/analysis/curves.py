r"""A sweep's curves and the paper's table read off them (point estimates).

`summarize` turns rows into one point per (task, configuration): $\bar{Q}(c)$ with its interval, $L(c)$ and
$r(c)$ (the index page, `tutorial_lib.stats.analysis`, defines them); `with_rule_ends` extends each rule's
curve to the ends of its live alpha range; `crossing_latency` and `best_quality_within` are the table's
one interpolation rule, and `paper_table` applies it per method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import intervals
from ...maths.rules import LIVE_ALPHA_RANGES, has_spec_end

if TYPE_CHECKING:  # annotations only: a view of the rows loads no sweep harness
    from ...sweeps.configs import Task

__all__ = [
    "NOT_REACHED",
    "summarize",
    "quality_by_group",
    "with_rule_ends",
    "crossing_latency",
    "best_quality_within",
    "paper_table",
    "COST_COLUMNS",
]

NOT_REACHED = "not reached"

_GROUP = ["task", "label", "method", "rule", "alpha", "beta", "gamma", "temperature"]


def summarize(
    rows: pd.DataFrame, *, latency: str = "wall_time_s", cost_ratio: Optional[float] = None, tasks=None
) -> pd.DataFrame:
    r"""One point per (task, configuration): mean quality with its 95% interval, relative latency,
    rejection rate, tokens per verifier call and the counters, from a sweep's rows.

    `latency` is the row column to price a configuration with (`wall_time_s`, or `model_time_s`:
    the models' forward passes only, without the engine's own bookkeeping). Latency is relative to
    the verifier alone at the same temperature on the same task.

    With `cost_ratio` $c$, `latency_calls` prices a run by its calls instead of a clock,
    $(\#\text{verifier calls} + c\,\#\text{drafter calls})$ relative to the verifier alone: what the
    same runs would cost where a drafter step costs $c$ verifier calls (notebook 05's cost model).

    With `tasks` (the sweep's `configs.Task`s), a task scored by BLEU gets **corpus BLEU** per
    configuration (`paired.corpus_quality`: sacrebleu on the rows' texts and the tasks' references),
    not the mean of the rows' sentence BLEU, with `quality_ci` half the width of its 95% percentile
    bootstrap interval over items; `quality_metric` says which ("corpus" or "mean").
    """
    if rows.empty:
        raise ValueError("no rows to summarize; run a sweep first.")
    rows = rows.copy()
    rows["model_time_s"] = rows["drafter_time_s"] + rows["verifier_time_s"]
    rows["rule"] = rows["rule"].fillna("-")
    grouped = rows.groupby(_GROUP, dropna=False, sort=False)
    out = grouped.agg(
        n=("quality", "size"),
        quality=("quality", "mean"),
        quality_sd=("quality", "std"),
        time_s=(latency, "sum"),
        n_tokens=("n_tokens", "sum"),
        n_verifier_calls=("n_verifier_calls", "sum"),
        n_drafter_calls=("n_drafter_calls", "sum"),
        n_accepted=("n_accepted", "sum"),
        n_rejected=("n_rejected", "sum"),
        deferral_rate=("deferral_rate", "mean"),
    ).reset_index()
    # groups in the order of `out` (the same groupby, sort=False)
    bounds = np.array([intervals.mean_interval(part["quality"].to_numpy(float))[1:] for _, part in grouped])
    out["quality_low"], out["quality_high"] = bounds[:, 0], bounds[:, 1]
    out["quality_ci"] = (out["quality_high"] - out["quality_low"]) / 2
    out["quality_metric"] = "mean"
    if tasks is not None:
        out = _with_corpus_quality(out, rows, tasks)
    judged = out["n_accepted"] + out["n_rejected"]
    out["rejection_rate"] = np.where(judged > 0, out["n_rejected"] / judged.where(judged > 0, 1), np.nan)
    out.loc[out["method"] == "drafter", "rejection_rate"] = 0.0
    out.loc[out["method"] == "verifier", "rejection_rate"] = 1.0
    out["tokens_per_call"] = out["n_tokens"] / out["n_verifier_calls"].where(out["n_verifier_calls"] > 0)
    verifier = out[out["method"] == "verifier"].set_index(["task", "temperature"])
    reference_time = verifier["time_s"].groupby(level=[0, 1]).mean()
    reference_quality = verifier["quality"].groupby(level=[0, 1]).mean()
    keys = list(zip(out["task"], out["temperature"]))
    out["verifier_quality"] = [reference_quality.get(k, np.nan) for k in keys]
    out["latency"] = out["time_s"] / np.array([reference_time.get(k, np.nan) for k in keys])
    out["speedup"] = 1.0 / out["latency"]
    if cost_ratio is not None:
        if not cost_ratio >= 0:
            raise ValueError(
                f"cost_ratio={cost_ratio}: a drafter step costs a non-negative share of a verifier call."
            )
        calls = out["n_verifier_calls"] + cost_ratio * out["n_drafter_calls"]
        reference_calls = (
            out[out["method"] == "verifier"].assign(c=calls).groupby(["task", "temperature"])["c"].mean()
        )
        out["latency_calls"] = calls / np.array([reference_calls.get(k, np.nan) for k in keys])
    return out


def _with_corpus_quality(out: pd.DataFrame, rows: pd.DataFrame, tasks) -> pd.DataFrame:
    from ..paired import corpus_quality

    corpus = corpus_quality(rows, tasks)
    if corpus.empty:
        return out
    keys = rows.drop_duplicates(["task", "config"]).set_index(["task", "config"])[
        [c for c in _GROUP if c != "task"]
    ]
    corpus = corpus.drop(columns="temperature").join(keys, on=["task", "config"])
    merged = out.merge(
        corpus[_GROUP + ["quality", "low", "high"]], on=_GROUP, how="left", suffixes=("", "_corpus")
    )
    found = merged["quality_corpus"].notna()
    merged.loc[found, "quality"] = merged.loc[found, "quality_corpus"]
    merged.loc[found, "quality_low"] = merged.loc[found, "low"]
    merged.loc[found, "quality_high"] = merged.loc[found, "high"]
    merged.loc[found, "quality_ci"] = (merged.loc[found, "high"] - merged.loc[found, "low"]) / 2
    merged.loc[found, "quality_sd"] = np.nan
    merged.loc[found, "quality_metric"] = "corpus"
    return merged.drop(columns=["quality_corpus", "low", "high"])


def quality_by_group(
    rows: pd.DataFrame,
    task: Task,
    *,
    group: str = "context",
    labels: Sequence[str] = ("Drafter", "Verifier"),
    temperature: Optional[float] = None,
) -> pd.DataFrame:
    """Mean quality per group of examples (`example.info[group]`) for the given curves' rows: where
    each model wins. Curves with several alphas contribute their best alpha per group. `temperature`
    defaults to the lowest one in the rows."""
    rows = rows[rows["task"] == task.name]
    if rows.empty:
        raise ValueError(f"no rows of task {task.name!r}.")
    temperature = rows["temperature"].min() if temperature is None else temperature
    groups = {e.id: e.info.get(group, "-") for e in task.examples}
    part = rows[(rows["temperature"] == temperature) & rows["label"].isin(labels)].copy()
    part["group"] = part["example_id"].map(groups)
    means = part.groupby(["group", "label", "alpha"])["quality"].mean().groupby(["group", "label"]).max()
    table = means.unstack("label").reindex(columns=[label for label in labels if label in set(part["label"])])
    table["n"] = part.groupby("group")["example_id"].nunique()
    return table


#: Columns of a summary that grow with the calls a configuration makes (scaled per emitted token at a drafter
#: end).
COST_COLUMNS = (
    "time_s",
    "latency",
    "latency_calls",
    "n_verifier_calls",
    "n_drafter_calls",
    "n_drafted",
    "modelled_latency",
    "modelled_latency_s",
    "modelled_latency_accelerator_s",
)


def _end_alpha(rule: str, end: str) -> float:
    low, high = LIVE_ALPHA_RANGES[rule]
    return float(high if end == "drafter" else low)


def with_rule_ends(summary: pd.DataFrame, *, cost_columns: Sequence[str] = COST_COLUMNS) -> pd.DataFrame:
    r"""Each speculative rule's curve extended to the ends of its live alpha range, from measured points.

    At the drafter end of every rule the target is $q$ and at the other end (all rules but
    Token-V3, whose $\alpha = 0$ keeps $p$'s argmax) it is $p$. With one token per step
    (`gamma = 1`, no bonus token: the batched runs) those runs emit, in distribution, what the
    drafter alone and SpecDecode emit, so their measured quality is added to each rule's curve
    (`end` = "drafter" / "spec"; interior points have `end` = ""). Only `gamma = 1` groups get ends
    (a block with a bonus token from $p$ still takes every (gamma+1)-th token from the verifier at
    its drafter end), and none is added where the rule measured that alpha itself.

    An end stands for *the rule at that alpha*, so it carries:

    - `alpha`: the end of `rules.LIVE_ALPHA_RANGES[rule]` it stands for (drafter end: the high
      end, e.g. Diff's +1 or lossy's limit 1; SpecDecode end: the low end, e.g. Diff's -1, Chow's 0);
    - its own calls and cost: the SpecDecode end copies the SpecDecode row, whose counted calls are
      the rule's there (the same draft-then-verify step at every token). The drafter end is *not*
      the drafter alone (zero verifier calls, the drafter's latency): run speculatively at
      `gamma = 1` without a bonus token, every emitted token costs one drafter call and one
      verifier call, exactly as in SpecDecode. So its calls and every cost column present
      (`cost_columns`: time, latency, calls, modelled latencies) are SpecDecode's per emitted token
      times the drafter's emitted tokens (`n_tokens`; NaN where the summary has no token counts or
      no SpecDecode point), with `tokens_per_call` 1, rejection rate 0 and no rejected draft.
    """
    summary = summary.copy()
    summary["end"] = ""
    extra = []
    for key, part in summary.groupby(["task", "temperature", "gamma"], sort=False):
        if key[2] != 1:
            continue
        drafter = summary[
            (summary["method"] == "drafter")
            & (summary["task"] == key[0])
            & (summary["temperature"] == key[1])
        ]
        spec = part[part["label"] == "SpecDecode"]
        for label in part.loc[(part["method"] == "speculative") & (part["rule"] != "spec"), "label"].unique():
            rule = part.loc[part["label"] == label, "rule"].iloc[0]
            measured = set(part.loc[part["label"] == label, "alpha"].round(9))
            for end, rows in (("drafter", drafter), ("spec", spec if has_spec_end(rule) else spec.iloc[0:0])):
                alpha = _end_alpha(rule, end)
                if not len(rows) or round(alpha, 9) in measured:
                    continue
                row = rows.iloc[0].copy()
                row["label"], row["rule"], row["gamma"], row["end"], row["alpha"] = (
                    label,
                    rule,
                    key[2],
                    end,
                    alpha,
                )
                row["method"] = "speculative"
                if end == "drafter":
                    row = _priced_as_speculative(row, spec, cost_columns)
                extra.append(row)
    return pd.concat([summary, pd.DataFrame(extra)], ignore_index=True) if extra else summary


def _priced_as_speculative(row: pd.Series, spec: pd.DataFrame, cost_columns: Sequence[str]) -> pd.Series:
    """A drafter-end row with SpecDecode's cost per emitted token (one drafter and one verifier call each)."""
    tokens = row.get("n_tokens", np.nan)
    spec_tokens = spec["n_tokens"].iloc[0] if len(spec) and "n_tokens" in spec else np.nan
    per_token = tokens / spec_tokens if spec_tokens and spec_tokens > 0 else np.nan
    for column in cost_columns:
        if column in row.index:
            row[column] = spec[column].iloc[0] * per_token if len(spec) and column in spec else np.nan
    for column, value in (
        ("n_verifier_calls", tokens),
        ("n_drafter_calls", tokens),
        ("n_drafted", tokens),
        ("n_accepted", tokens),
        ("n_rejected", 0.0),
        ("rejection_rate", 0.0),
        ("deferral_rate", 0.0),
        ("tokens_per_call", 1.0),
    ):
        if column in row.index:
            row[column] = value
    if "speedup" in row.index and "latency" in row.index:
        row["speedup"] = 1.0 / row["latency"] if row["latency"] > 0 else np.nan
    return row


def _curve(points: pd.DataFrame, x: str) -> Tuple[np.ndarray, np.ndarray]:
    points = points.sort_values([x, "quality"])
    return points[x].to_numpy(float), points["quality"].to_numpy(float)


def crossing_latency(latency: Sequence[float], quality: Sequence[float], target: float) -> Optional[float]:
    """The smallest latency at which the curve (sorted by latency, linearly interpolated) reaches `target`."""
    order = np.argsort(np.asarray(latency, float), kind="stable")
    xs, ys = np.asarray(latency, float)[order], np.asarray(quality, float)[order]
    if len(xs) == 0:
        return None
    if ys[0] >= target:
        return float(xs[0])
    for (x0, y0), (x1, y1) in zip(zip(xs[:-1], ys[:-1]), zip(xs[1:], ys[1:])):
        if y0 < target <= y1:
            return float(x0 + (target - y0) / (y1 - y0) * (x1 - x0))
    return None


def best_quality_within(latency: Sequence[float], quality: Sequence[float], budget: float) -> Optional[float]:
    """The best quality of the interpolated curve at latencies up to `budget` (None if all are slower)."""
    order = np.argsort(np.asarray(latency, float), kind="stable")
    xs, ys = np.asarray(latency, float)[order], np.asarray(quality, float)[order]
    inside = ys[xs <= budget]
    if len(inside) == 0:
        return None
    best = float(inside.max())
    for (x0, y0), (x1, y1) in zip(zip(xs[:-1], ys[:-1]), zip(xs[1:], ys[1:])):
        if x0 <= budget < x1:  # the segment that crosses the budget contributes its value there
            best = max(best, float(y0 + (budget - x0) / (x1 - x0) * (y1 - y0)))
    return best


def paper_table(summary: pd.DataFrame, *, x: str = "latency", reference: float = 1.0) -> pd.DataFrame:
    """The paper's table per (task, T, gamma, method): (i) the reduction of `x` at which the method
    first matches the verifier's quality, (ii) the best quality it reaches with `x <= reference`.

    Rows are the methods' curves; `x` is `latency` (T5) or `rejection_rate` (Gemma).
    """
    rows = []
    for (task, temperature), part in summary.groupby(["task", "temperature"], sort=False):
        verifier = part[part["method"] == "verifier"]
        if verifier.empty:
            raise ValueError(
                f"task {task!r} at T={temperature} has no verifier-only rows; include 'Verifier'."
            )
        target = float(verifier["quality"].mean())
        for (label, gamma), curve in part.groupby(["label", "gamma"], sort=False):
            if label == "Verifier":
                continue
            xs, ys = _curve(curve, x)
            crossing = crossing_latency(xs, ys, target)
            best = best_quality_within(xs, ys, reference)
            rows.append(
                {
                    "task": task,
                    "temperature": temperature,
                    "gamma": gamma,
                    "method": label,
                    "verifier_quality": target,
                    f"{x}_reduction_at_verifier_quality": (
                        NOT_REACHED if crossing is None else 1.0 - crossing / reference
                    ),
                    f"best_quality_at_{x}<=verifier": NOT_REACHED if best is None else best,
                    "best_minus_verifier": np.nan if best is None else best - target,
                }
            )
    return pd.DataFrame(rows)
