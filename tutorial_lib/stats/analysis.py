r"""Analysis of a sweep's rows: curves, the paper's table (point estimates), answer lengths.

A **curve** is one method's configurations over its $\alpha$ grid. Each point has

$$\bar{Q}(c) = \frac{1}{n}\sum_x Q(c, x),\qquad
  L(c) = \frac{\sum_x \mathrm{time}(c, x)}{\sum_x \mathrm{time}(\text{verifier}, x)},\qquad
  r(c) = \frac{\sum_x \#\mathrm{rejected}(c, x)}{\sum_x \#\mathrm{judged}(c, x)},$$

the mean quality with its 95% percentile interval over items (`quality_low`, `quality_high`:
`intervals.mean_interval`; `quality_ci` is half its width, for tables only), the latency relative to the verifier
alone (the T5 plots) and the rejection rate (the Gemma plots; the drafter alone has $r = 0$, the
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
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from . import intervals
if TYPE_CHECKING:   # annotations only: a view of the rows loads no sweep harness
    from ..sweeps.evaluation import Task

__all__ = ["NOT_REACHED", "summarize", "quality_by_group", "with_rule_ends", "crossing_latency",
           "best_quality_within", "paper_table", "speculative_ranges", "qualities",
           "COST_COLUMNS", "interval_points", "latency_view", "POOLED", "answer_lengths", "saved_t5_run",
           "GAMMA_FREE", "select", "quality_bounds", "reference_quality", "same_calls", "distinct_runs", "same_texts_as"]

NOT_REACHED = "not reached"

_GROUP = ["task", "label", "method", "rule", "alpha", "beta", "gamma", "temperature"]


def summarize(rows: pd.DataFrame, *, latency: str = "wall_time_s", cost_ratio: Optional[float] = None,
              tasks=None) -> pd.DataFrame:
    r"""One point per (task, configuration): mean quality with its 95% interval, relative latency,
    rejection rate, tokens per verifier call and the counters, from a sweep's rows.

    `latency` is the row column to price a configuration with (`wall_time_s`, or `model_time_s`:
    the models' forward passes only, without the engine's own bookkeeping). Latency is relative to
    the verifier alone at the same temperature on the same task.

    With `cost_ratio` $c$, `latency_calls` prices a run by its calls instead of a clock,
    $(\#\text{verifier calls} + c\,\#\text{drafter calls})$ relative to the verifier alone: what the
    same runs would cost where a drafter step costs $c$ verifier calls (notebook 05's cost model).

    With `tasks` (the sweep's `evaluation.Task`s), a task scored by BLEU gets **corpus BLEU** per
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
    out = grouped.agg(n=("quality", "size"), quality=("quality", "mean"), quality_sd=("quality", "std"),
                      time_s=(latency, "sum"), n_tokens=("n_tokens", "sum"),
                      n_verifier_calls=("n_verifier_calls", "sum"), n_drafter_calls=("n_drafter_calls", "sum"),
                      n_accepted=("n_accepted", "sum"), n_rejected=("n_rejected", "sum"),
                      deferral_rate=("deferral_rate", "mean")).reset_index()
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
            raise ValueError(f"cost_ratio={cost_ratio}: a drafter step costs a non-negative share of a verifier call.")
        calls = out["n_verifier_calls"] + cost_ratio * out["n_drafter_calls"]
        reference_calls = (out[out["method"] == "verifier"].assign(c=calls).groupby(["task", "temperature"])["c"]
                           .mean())
        out["latency_calls"] = calls / np.array([reference_calls.get(k, np.nan) for k in keys])
    return out


def _with_corpus_quality(out: pd.DataFrame, rows: pd.DataFrame, tasks) -> pd.DataFrame:
    from .paired import corpus_quality
    corpus = corpus_quality(rows, tasks)
    if corpus.empty:
        return out
    keys = rows.drop_duplicates(["task", "config"]).set_index(["task", "config"])[[c for c in _GROUP if c != "task"]]
    corpus = corpus.drop(columns="temperature").join(keys, on=["task", "config"])
    merged = out.merge(corpus[_GROUP + ["quality", "low", "high"]], on=_GROUP, how="left", suffixes=("", "_corpus"))
    found = merged["quality_corpus"].notna()
    merged.loc[found, "quality"] = merged.loc[found, "quality_corpus"]
    merged.loc[found, "quality_low"] = merged.loc[found, "low"]
    merged.loc[found, "quality_high"] = merged.loc[found, "high"]
    merged.loc[found, "quality_ci"] = (merged.loc[found, "high"] - merged.loc[found, "low"]) / 2
    merged.loc[found, "quality_sd"] = np.nan
    merged.loc[found, "quality_metric"] = "corpus"
    return merged.drop(columns=["quality_corpus", "low", "high"])


def quality_by_group(rows: pd.DataFrame, task: Task, *, group: str = "context",
                     labels: Sequence[str] = ("Drafter", "Verifier"), temperature: Optional[float] = None) -> pd.DataFrame:
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


#: Rules whose target at one end of alpha's range is p itself (SpecDecode); every rule's other end is q.
_SPEC_END = {"lossy", "chow", "diff", "opt", "bild", "token_v1", "token_v2"}
#: Columns of a summary that grow with the calls a configuration makes (scaled per emitted token at a drafter end).
COST_COLUMNS = ("time_s", "latency", "latency_calls", "n_verifier_calls", "n_drafter_calls", "n_drafted",
                "modelled_latency", "modelled_latency_s", "modelled_latency_accelerator_s")


def _end_alpha(rule: str, end: str) -> float:
    from ..maths.targets import LIVE_ALPHA_RANGES
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

    - `alpha`: the end of `targets.LIVE_ALPHA_RANGES[rule]` it stands for (drafter end: the high
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
        drafter = summary[(summary["method"] == "drafter") & (summary["task"] == key[0])
                          & (summary["temperature"] == key[1])]
        spec = part[part["label"] == "SpecDecode"]
        for label in part.loc[(part["method"] == "speculative") & (part["rule"] != "spec"), "label"].unique():
            rule = part.loc[part["label"] == label, "rule"].iloc[0]
            measured = set(part.loc[part["label"] == label, "alpha"].round(9))
            for end, rows in (("drafter", drafter), ("spec", spec if rule in _SPEC_END else spec.iloc[0:0])):
                alpha = _end_alpha(rule, end)
                if not len(rows) or round(alpha, 9) in measured:
                    continue
                row = rows.iloc[0].copy()
                row["label"], row["rule"], row["gamma"], row["end"], row["alpha"] = label, rule, key[2], end, alpha
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
    for column, value in (("n_verifier_calls", tokens), ("n_drafter_calls", tokens), ("n_drafted", tokens),
                          ("n_accepted", tokens), ("n_rejected", 0.0), ("rejection_rate", 0.0),
                          ("deferral_rate", 0.0), ("tokens_per_call", 1.0)):
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
            raise ValueError(f"task {task!r} at T={temperature} has no verifier-only rows; include 'Verifier'.")
        target = float(verifier["quality"].mean())
        for (label, gamma), curve in part.groupby(["label", "gamma"], sort=False):
            if label == "Verifier":
                continue
            xs, ys = _curve(curve, x)
            crossing = crossing_latency(xs, ys, target)
            best = best_quality_within(xs, ys, reference)
            rows.append({"task": task, "temperature": temperature, "gamma": gamma, "method": label,
                         "verifier_quality": target,
                         f"{x}_reduction_at_verifier_quality": (NOT_REACHED if crossing is None
                                                                 else 1.0 - crossing / reference),
                         f"best_quality_at_{x}<=verifier": NOT_REACHED if best is None else best,
                         "best_minus_verifier": np.nan if best is None else best - target})
    return pd.DataFrame(rows)


# ---- per-method views (notebook 06) ---------------------------------------------------------------

def speculative_ranges(summary: pd.DataFrame, *, gamma: int) -> pd.DataFrame:
    """Spec-Bench-style numbers beside quality for the speculative methods at `gamma`: the lowest and
    highest quality, tokens per verifier call and speed-up over the verifier of each curve."""
    speculative = summary[summary["method"].isin(["speculative", "bild"]) & (summary["gamma"] == gamma)]
    return speculative.groupby(["task", "temperature", "label"]).agg(
        quality_min=("quality", "min"), quality_max=("quality", "max"),
        tokens_per_call_min=("tokens_per_call", "min"), tokens_per_call_max=("tokens_per_call", "max"),
        speedup_min=("speedup", "min"), speedup_max=("speedup", "max"))


def qualities(summary: pd.DataFrame, method: str) -> Dict[str, float]:
    """One method's quality per (task, T), keyed "task T=t" (`method` "verifier" or "drafter")."""
    points = summary[summary["method"] == method].set_index(["task", "temperature"])["quality"]
    return {f"{task} T={temperature:g}": quality for (task, temperature), quality in points.items()}


# ---- views of a summary ---------------------------------------------------------------------------

def interval_points(summary: pd.DataFrame) -> pd.DataFrame:
    """Every measured point (curve ends added by `with_rule_ends` left out) with its quality as
    "mean ± 95% half-width", rounded to three decimals."""
    points = summary.loc[summary["end"] == "", ["task", "temperature", "label", "alpha", "n", "quality", "quality_ci",
                                                  "rejection_rate", "deferral_rate"]].copy()
    points["quality"] = [f"{q:.3f} ± {c:.3f}" for q, c in zip(points["quality"], points["quality_ci"])]
    return points.drop(columns="quality_ci").round(3)


POOLED = "all tasks (pooled)"


def latency_view(rows: pd.DataFrame, *, latency: str = "wall_time_s", tasks=None, reference_method: str = "verifier",
                 n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    r"""Batch-size-1 latency runs per task **and pooled**, never a mean of ratios.

    Per (task, temperature, method, gamma, alpha): the configuration's total `latency` over the items
    it shares with the `reference_method` (the verifier alone at that temperature) divided by the
    verifier's total on the same items, $\sum_x L(c, x) / \sum_x L(p, x)$, with the percentile
    interval over items (`intervals.ratio_of_means`); tokens per verifier call and the rejection rate
    as totals over totals; the task's quality in its own metric (`quality_metric`). The row with task
    `POOLED` is the same total-over-total over every item of every task (items resampled together);
    its quality is left empty: the tasks' metrics differ and are not averaged."""
    from . import intervals
    if rows.empty:
        raise ValueError("no latency rows; run the latency configurations first.")
    if latency not in rows:
        raise ValueError(f"the rows have no column {latency!r}; price them first (pricing.price_rows) or pass "
                         "latency='wall_time_s'.")
    metrics_by_task = {t.name: t.metric_name for t in (tasks or [])}
    out = []
    for temperature, block in rows.groupby("temperature", sort=False):
        reference = block[block["method"] == reference_method]
        if reference.empty:
            raise ValueError(f"no {reference_method!r} rows at T = {temperature:g}; relative latency needs them.")
        base = reference.drop_duplicates(["task", "example_id"]).set_index(["task", "example_id"])[latency]
        keys = ["label", "method", "gamma", "alpha"]
        for key, group in block.groupby(keys, sort=False, dropna=False):
            mine = group.drop_duplicates(["task", "example_id"]).set_index(["task", "example_id"])
            items = mine.index.intersection(base.index)
            parts = [(task, items[items.get_level_values(0) == task]) for task in dict.fromkeys(mine.index.get_level_values(0))]
            for task, chosen in parts + [(POOLED, items)]:
                if not len(chosen):
                    continue
                x, y = mine.loc[chosen, latency].to_numpy(float), base.loc[chosen].to_numpy(float)
                ratio, low, high = intervals.ratio_of_means(x, y, n_resamples=n_resamples, confidence=confidence,
                                                            seed=seed)
                part = mine.loc[chosen]
                judged = part["n_accepted"].sum() + part["n_rejected"].sum()
                method = key[1]
                rate = 0.0 if method == "drafter" else 1.0 if method == "verifier" else (
                    part["n_rejected"].sum() / judged if judged else np.nan)
                pooled = task == POOLED
                out.append({"task": task, "temperature": temperature, **dict(zip(keys, key)), "n_items": len(chosen),
                            "total_s": float(x.sum()), "verifier_total_s": float(y.sum()),
                            "latency": ratio, "latency_low": low, "latency_high": high,
                            "tokens_per_call": part["n_tokens"].sum() / max(part["n_verifier_calls"].sum(), 1),
                            "rejection_rate": rate,
                            "quality": np.nan if pooled else float(part["quality"].mean()),
                            "quality_metric": "" if pooled else metrics_by_task.get(task, "mean quality")})
    return pd.DataFrame(out)


def answer_lengths(rows: pd.DataFrame, tasks: Sequence[Task], *, cost: Optional[str] = None) -> pd.DataFrame:
    """Per configuration (task, temperature, method, alpha): the mean answer length in tokens, the
    verifier calls per answer, and the **cut rate**, the share of answers that reached the task's
    `max_new_tokens` (rows do not record why decoding stopped, so an answer whose end-of-sequence
    token fell exactly on the limit counts as cut). A lenient rule can lengthen answers, which a
    cost per token hides: compare calls per answer. With `cost` (a priced row column such as
    `pricing.LATENCY_COLUMN`) its mean per answer is added as `cost_per_answer`."""
    limits = {task.name: task.max_new_tokens for task in tasks}
    missing = sorted(set(rows["task"]) - set(limits))
    if missing:
        raise ValueError(f"rows of tasks {missing} but no Task given for them; pass the sweep's tasks.")
    if cost is not None and cost not in rows:
        raise ValueError(f"the rows have no column {cost!r}; price them first (pricing.price_rows) or pass cost=None.")
    rows = rows.assign(cut=rows["n_tokens"] >= rows["task"].map(limits), rule=rows["rule"].fillna("-"))
    spec = dict(n=("n_tokens", "size"), answer_tokens=("n_tokens", "mean"),
                verifier_calls_per_answer=("n_verifier_calls", "mean"), cut_rate=("cut", "mean"))
    if cost is not None:
        spec["cost_per_answer"] = (cost, "mean")
    out = rows.groupby(["task", "temperature", "gamma", "label", "alpha"], sort=False).agg(**spec).reset_index()
    out.insert(2, "max_new_tokens", out["task"].map(limits))
    return out


def saved_t5_run(profile: str = "offline", *, results_dir=None) -> Tuple[pd.DataFrame, list, str]:
    """The saved rows of a T5 profile's sweep (`reruns.t5_profile(profile)`), its tasks and the cost
    column to read latency from: the cost model's `modelled_latency_s` where the sweep's folder holds
    a calibration and the rows count their calls, else `wall_time_s`. Loads no model; raises
    FileNotFoundError (no such sweep saved) or `evaluation.MissingRowsError` (not every row saved)."""
    from ..sweeps import evaluation as ev
    from ..sweeps import reruns
    from . import pricing
    settings = reruns.t5_profile(profile)
    name = f"t5-{settings['profile']}"
    pair = reruns.saved_pair(name, settings, results_dir=results_dir)
    tasks = reruns.t5_tasks(settings)
    rows = ev.run_sweep(pair, tasks, reruns.t5_configs(settings), name=name, root=results_dir,
                        extra_config=reruns.run_config(settings))
    try:
        priced = pricing.price_rows(rows, pricing.load_sweep_calibration(rows))
    except (FileNotFoundError, ValueError):
        return rows, tasks, "wall_time_s"
    return priced, tasks, pricing.LATENCY_COLUMN


# ---- what a figure of one task and temperature shows (`views.reruns.family_figure`) ----------------

#: Methods run once, at the first gamma of a sweep: they belong to every gamma's curves.
GAMMA_FREE = ["drafter", "verifier", "token_cascade", "seq_cascade"]


def select(summary: pd.DataFrame, task: Optional[str] = None, temperature: Optional[float] = None,
           gamma: Optional[int] = None) -> pd.DataFrame:
    """The points of one task, temperature and gamma (None: all); the methods run once (`GAMMA_FREE`)
    belong to every gamma. Raises ValueError when nothing is left."""
    part = summary
    if task is not None:
        part = part[part["task"] == task]
    if temperature is not None:
        part = part[part["temperature"] == temperature]
    if gamma is not None:  # plain decoding and the sequential cascades were run once, at the first gamma
        part = part[(part["gamma"] == gamma) | part["method"].isin(GAMMA_FREE)]
    if part.empty:
        raise ValueError("nothing to plot for that task / temperature / gamma.")
    return part


def quality_bounds(points: pd.DataFrame, bounds: Optional[Tuple[float, float]] = None) -> Tuple[np.ndarray, np.ndarray]:
    """`(low, high)`: the quality interval of each point, the percentile interval itself (`quality_low`,
    `quality_high`, as `summarize` gives it; a missing bound is the point); a summary without them
    (built by hand) has its `quality_ci` as a half-width. Kept inside the metric's range `bounds` (a
    share cannot go below 0 or above 1)."""
    quality = points["quality"].to_numpy(float)
    if {"quality_low", "quality_high"} <= set(points.columns):
        low, high = points["quality_low"].to_numpy(float), points["quality_high"].to_numpy(float)
        low, high = np.where(np.isnan(low), quality, low), np.where(np.isnan(high), quality, high)
    else:
        half = points["quality_ci"].fillna(0.0).to_numpy(float)
        low, high = quality - half, quality + half
    if bounds is not None:
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    return low, high


def reference_quality(points: pd.DataFrame, bounds: Optional[Tuple[float, float]] = None) -> Tuple[float, float, float]:
    """`(quality, low, high)` of a reference method's points (the verifier's, of one task and
    temperature; several gammas are averaged), its interval as `quality_bounds` gives it."""
    low, high = quality_bounds(points, bounds)
    return float(points["quality"].mean()), float(np.mean(low)), float(np.mean(high))


# ---- what the T5 run's facts count ---------------------------------------------------------------

def same_calls(rows: pd.DataFrame, temperature: float) -> Dict[str, int]:
    """Configurations at `temperature` that make exactly the same calls on every item (so the cost
    model gives them the same latency): the number of such groups, of configurations in them, and
    the size of the largest group."""
    from .pricing import CALL_COLUMNS
    part = rows[rows["temperature"] == temperature].sort_values("example_id")
    keys = {}
    for config, group in part.groupby("config", sort=False):
        signature = json.dumps([group[c].tolist() for c in CALL_COLUMNS if c in group] +
                               [group["example_id"].tolist()], default=str)
        keys.setdefault(signature, []).append(config)
    groups = [v for v in keys.values() if len(v) > 1]
    return {"groups": len(groups), "configurations": int(sum(len(v) for v in groups)),
            "largest": int(max((len(v) for v in groups), default=0))}


def distinct_runs(rows: pd.DataFrame, temperature: float) -> Dict[str, int]:
    """Per speculative rule (label): how many of its configurations at `temperature` are distinct
    runs of its own, i.e. whose texts differ from SpecDecode's, from the drafter's and from each
    other's on at least one item (at `T = 0` several alphas can emit the same texts, and lossy
    SpecDecode is SpecDecode)."""
    part = rows[rows["temperature"] == temperature].sort_values("example_id")
    texts = {config: tuple(group["text"]) for config, group in part.groupby("config", sort=False)}
    labels = part.drop_duplicates("config").set_index("config")["label"]
    methods = part.drop_duplicates("config").set_index("config")["method"]
    anchors = {texts[c] for c in texts if labels[c] in ("SpecDecode", "Drafter", "Verifier")}
    out = {}
    for label in dict.fromkeys(labels[methods == "speculative"]):
        if label == "SpecDecode":
            continue
        own = {texts[c] for c in labels.index[labels == label]} - anchors
        out[label] = len(own)
    return out


def same_texts_as(rows: pd.DataFrame, label: str, other: str, temperature: float) -> Dict[str, int]:
    """How many of `label`'s alphas at `temperature` emit exactly `other`'s texts at the same alpha on
    every item (at `T = 0`, OPT and Token-V1 emit Diff's tokens), of how many alphas they share."""
    part = rows[rows["temperature"] == temperature].sort_values("example_id")
    texts = lambda which: {alpha: tuple(group["text"]) for alpha, group in part[part["label"] == which].groupby("alpha")}
    mine, theirs = texts(label), texts(other)
    shared = sorted(set(mine) & set(theirs))
    return {"same": int(sum(mine[a] == theirs[a] for a in shared)), "shared_alphas": len(shared)}
