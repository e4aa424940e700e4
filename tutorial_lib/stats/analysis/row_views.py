"""What is read straight off a sweep's rows: batch-size-1 latency per task and pooled, answer lengths,
the saved T5 run, and what the T5 run's facts count (same calls, distinct runs, same texts)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # annotations only: a view of the rows loads no sweep harness
    from ...sweeps.configs import Task

__all__ = [
    "POOLED",
    "latency_view",
    "answer_lengths",
    "saved_t5_run",
    "same_calls",
    "distinct_runs",
    "same_texts_as",
]

POOLED = "all tasks (pooled)"


def latency_view(
    rows: pd.DataFrame,
    *,
    latency: str = "wall_time_s",
    tasks=None,
    reference_method: str = "verifier",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    r"""Batch-size-1 latency runs per task **and pooled**, never a mean of ratios.

    Per (task, temperature, method, gamma, alpha): the configuration's total `latency` over the items
    it shares with the `reference_method` (the verifier alone at that temperature) divided by the
    verifier's total on the same items, $\sum_x L(c, x) / \sum_x L(p, x)$, with the percentile
    interval over items (`intervals.ratio_of_means`); tokens per verifier call and the rejection rate
    as totals over totals; the task's quality in its own metric (`quality_metric`). The row with task
    `POOLED` is the same total-over-total over every item of every task (items resampled together);
    its quality is left empty: the tasks' metrics differ and are not averaged."""
    from .. import intervals

    if rows.empty:
        raise ValueError("no latency rows; run the latency configurations first.")
    if latency not in rows:
        raise ValueError(
            f"the rows have no column {latency!r}; price them first (pricing.price_rows) or pass "
            "latency='wall_time_s'."
        )
    metrics_by_task = {t.name: t.metric_name for t in (tasks or [])}
    out = []
    for temperature, block in rows.groupby("temperature", sort=False):
        reference = block[block["method"] == reference_method]
        if reference.empty:
            raise ValueError(
                f"no {reference_method!r} rows at T = {temperature:g}; relative latency needs them."
            )
        base = reference.drop_duplicates(["task", "example_id"]).set_index(["task", "example_id"])[latency]
        keys = ["label", "method", "gamma", "alpha"]
        for key, group in block.groupby(keys, sort=False, dropna=False):
            mine = group.drop_duplicates(["task", "example_id"]).set_index(["task", "example_id"])
            items = mine.index.intersection(base.index)
            parts = [
                (task, items[items.get_level_values(0) == task])
                for task in dict.fromkeys(mine.index.get_level_values(0))
            ]
            for task, chosen in parts + [(POOLED, items)]:
                if not len(chosen):
                    continue
                x, y = mine.loc[chosen, latency].to_numpy(float), base.loc[chosen].to_numpy(float)
                ratio, low, high = intervals.ratio_of_means(
                    x, y, n_resamples=n_resamples, confidence=confidence, seed=seed
                )
                part = mine.loc[chosen]
                judged = part["n_accepted"].sum() + part["n_rejected"].sum()
                method = key[1]
                rate = (
                    0.0
                    if method == "drafter"
                    else 1.0
                    if method == "verifier"
                    else (part["n_rejected"].sum() / judged if judged else np.nan)
                )
                pooled = task == POOLED
                out.append(
                    {
                        "task": task,
                        "temperature": temperature,
                        **dict(zip(keys, key)),
                        "n_items": len(chosen),
                        "total_s": float(x.sum()),
                        "verifier_total_s": float(y.sum()),
                        "latency": ratio,
                        "latency_low": low,
                        "latency_high": high,
                        "tokens_per_call": part["n_tokens"].sum() / max(part["n_verifier_calls"].sum(), 1),
                        "rejection_rate": rate,
                        "quality": np.nan if pooled else float(part["quality"].mean()),
                        "quality_metric": "" if pooled else metrics_by_task.get(task, "mean quality"),
                    }
                )
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
        raise ValueError(
            f"the rows have no column {cost!r}; price them first (pricing.price_rows) or pass cost=None."
        )
    rows = rows.assign(cut=rows["n_tokens"] >= rows["task"].map(limits), rule=rows["rule"].fillna("-"))
    spec = dict(
        n=("n_tokens", "size"),
        answer_tokens=("n_tokens", "mean"),
        verifier_calls_per_answer=("n_verifier_calls", "mean"),
        cut_rate=("cut", "mean"),
    )
    if cost is not None:
        spec["cost_per_answer"] = (cost, "mean")
    out = (
        rows.groupby(["task", "temperature", "gamma", "label", "alpha"], sort=False).agg(**spec).reset_index()
    )
    out.insert(2, "max_new_tokens", out["task"].map(limits))
    return out


def saved_t5_run(profile: str = "offline", *, results_dir=None) -> Tuple[pd.DataFrame, list, str]:
    """The saved rows of a T5 profile's sweep (`reruns.t5_profile(profile)`), its tasks and the cost
    column to read latency from: the cost model's `modelled_latency_s` where the sweep's folder holds
    a calibration and the rows count their calls, else `wall_time_s`. Loads no model; raises
    FileNotFoundError (no such sweep saved) or `evaluation.MissingRowsError` (not every row saved)."""
    from ...sweeps import evaluation as ev
    from ...sweeps import reruns
    from .. import pricing

    settings = reruns.t5_profile(profile)
    name = f"t5-{settings['profile']}"
    pair = reruns.saved_pair(name, settings, results_dir=results_dir)
    tasks = reruns.t5_tasks(settings)
    rows = ev.run_sweep(
        pair,
        tasks,
        reruns.t5_configs(settings),
        name=name,
        root=results_dir,
        extra_config=reruns.run_config(settings),
    )
    try:
        priced = pricing.price_rows(rows, pricing.load_sweep_calibration(rows))
    except (FileNotFoundError, ValueError):
        return rows, tasks, "wall_time_s"
    return priced, tasks, pricing.LATENCY_COLUMN


# ---- what the T5 run's facts count ---------------------------------------------------------------


def same_calls(rows: pd.DataFrame, temperature: float) -> Dict[str, int]:
    """Configurations at `temperature` that make exactly the same calls on every item (so the cost
    model gives them the same latency): the number of such groups, of configurations in them, and
    the size of the largest group."""
    from ..pricing import CALL_COLUMNS

    part = rows[rows["temperature"] == temperature].sort_values("example_id")
    keys = {}
    for config, group in part.groupby("config", sort=False):
        signature = json.dumps(
            [group[c].tolist() for c in CALL_COLUMNS if c in group] + [group["example_id"].tolist()],
            default=str,
        )
        keys.setdefault(signature, []).append(config)
    groups = [v for v in keys.values() if len(v) > 1]
    return {
        "groups": len(groups),
        "configurations": int(sum(len(v) for v in groups)),
        "largest": int(max((len(v) for v in groups), default=0)),
    }


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
    texts = lambda which: {
        alpha: tuple(group["text"]) for alpha, group in part[part["label"] == which].groupby("alpha")
    }
    mine, theirs = texts(label), texts(other)
    shared = sorted(set(mine) & set(theirs))
    return {"same": int(sum(mine[a] == theirs[a] for a in shared)), "shared_alphas": len(shared)}
