r"""Paired comparisons over items: every configuration against the verifier and SpecDecode.

Every configuration of a sweep runs on the same items $x_1..x_n$ with the same seeds (item $i$ uses
seed `seed + i` in every configuration: common random numbers), so two configurations $c$, $c'$
are compared item by item. The difference of their quality

$$\Delta(c, c') = Q(c) - Q(c'),\qquad Q(c) = \frac1n \sum_i Q(c, x_i)\ \text{(exact match, pass@1, ROUGE-2)}
\quad\text{or}\quad Q(c) = \mathrm{BLEU}\Big(\sum_i s(c, x_i)\Big)\ \text{(corpus BLEU)},$$

gets a 95% percentile bootstrap interval over items: resample the $n$ items with replacement, the
*same* items for $c$ and $c'$, and recompute $\Delta$ ($B \ge 2000$ resamples; `intervals`, the
package's one recipe for intervals, with its quantile convention and its rule for tiny samples).
Corpus BLEU rescores each resample from sacrebleu's per-sentence sufficient
statistics $s(c, x_i)$ (n-gram matches and totals, lengths: `metrics.bleu_statistics`), summed and
turned into BLEU by sacrebleu itself (`metrics.bleu_from_statistics`), which is what sacrebleu's own
paired bootstrap does. Percentile rather than BCa intervals: identical configurations (SpecDecode and
the verifier at $T = 0$) have a constant difference, where BCa is undefined.

`item_scores` gathers, per (task, temperature), the items every compared configuration ran and each
configuration's per-item quality data; `curve_bootstrap` and `claims` build on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
import pandas as pd
from . import intervals
from ..tasks import metrics

__all__ = ["ItemScores", "item_scores", "paired_differences", "quality_of", "bootstrap_indices", "corpus_quality"]

_CONFIG_COLUMNS = ["config", "label", "method", "rule", "alpha", "beta", "gamma"]
#: Per-item row columns kept for costs and rejection rates (those present in the rows), besides any
#: column whose name has "latency" in it or ends in "_s" (the cost model's priced columns).
ITEM_COLUMNS = ("n_tokens", "n_verifier_calls", "n_drafter_calls", "n_accepted", "n_rejected", "wall_time_s",
                "drafter_time_s", "verifier_time_s", "modelled_latency", "modelled_latency_s",
                "modelled_latency_accelerator_s")


@dataclass
class ItemScores:
    """One (task, temperature): the `items` (example ids) every configuration in `configs` ran, and per
    configuration (row `j` of `configs`) its per-item `quality` (C, n), or corpus-BLEU statistics
    `bleu` (C, n, 10) for a corpus metric, and the per-item `columns` (C, n) of `ITEM_COLUMNS`."""
    task: str
    temperature: float
    metric: str
    items: List[str]
    configs: pd.DataFrame
    quality: np.ndarray
    bleu: Optional[np.ndarray] = None
    columns: Dict[str, np.ndarray] = field(default_factory=dict)
    dropped: List[str] = field(default_factory=list)   # configurations that miss some of the items
    _resampled: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.items)

    def index(self, label: str, gamma: Optional[int] = None) -> List[int]:
        """Rows of `configs` with this label (and gamma, where given)."""
        mask = self.configs["label"] == label
        if gamma is not None:
            mask &= self.configs["gamma"] == gamma
        return list(np.flatnonzero(mask.to_numpy()))

    def resampled(self, n_resamples: int = 2000, seed: int = 0) -> tuple:
        """`(point, distribution)` of every configuration's set-level quality, shapes (C,) and (C, B),
        all on the same resamples of the items (so any two rows give a paired difference)."""
        key = (n_resamples, seed)
        if key not in self._resampled:
            every = list(range(len(self.configs)))
            self._resampled[key] = bootstrap_indices(lambda idx: self.score(every, idx), self.n,
                                                     n_resamples=n_resamples, seed=seed)
        return self._resampled[key]

    def score(self, which: Sequence[int], idx: Optional[np.ndarray] = None) -> np.ndarray:
        """Set-level quality of configurations `which` on items `idx` (all items when None): the mean,
        or corpus BLEU of the summed statistics."""
        idx = np.arange(self.n) if idx is None else np.asarray(idx)
        which = list(which)
        if self.bleu is None:
            return self.quality[which][:, idx].mean(-1)
        sums = self.bleu[which][:, idx].sum(1)
        return np.array([metrics.bleu_from_statistics(s) for s in sums])


def _task_map(tasks) -> Dict[str, object]:
    if tasks is None:
        return {}
    tasks = [tasks] if not isinstance(tasks, (list, tuple)) else tasks
    from ..sweeps.evaluation import Task
    return {t.name: t for t in (Task.from_dict(task) for task in tasks)}


def item_scores(rows: pd.DataFrame, tasks=None) -> List[ItemScores]:
    """Per (task, temperature) of `rows` (a sweep's rows, `rows.jsonl`): the items of the verifier
    (else of every configuration), and each configuration that ran all of them (the others are listed
    in `dropped`). `tasks` (`evaluation.Task`s) tell each task's metric and references: a task whose
    metric is corpus BLEU is rescored from the rows' `text` with sacrebleu; without `tasks` every
    task is scored by the mean of the rows' `quality`."""
    if rows.empty:
        raise ValueError("no rows; run a sweep first.")
    missing = {"task", "temperature", "example_id", "quality", *_CONFIG_COLUMNS} - set(rows.columns)
    if missing:
        raise ValueError(f"the rows lack columns {sorted(missing)}; pass a sweep's rows (rows.jsonl).")
    by_name = _task_map(tasks)
    rows = rows.assign(rule=rows["rule"].fillna("-"))
    out = []
    for (task_name, temperature), part in rows.groupby(["task", "temperature"], sort=False):
        task = by_name.get(task_name)
        metric = task.metric_name if task is not None else "mean quality"
        seeds = part.groupby("example_id")["seed"].nunique() if "seed" in part else pd.Series(dtype=int)
        if (seeds > 1).any():
            raise ValueError(f"task {task_name!r} T={temperature}: items ran with different seeds across "
                             f"configurations ({list(seeds[seeds > 1].index[:3])}); paired comparisons need "
                             "common random numbers (run_sweep's seed + i).")
        verifier = part[part["method"] == "verifier"]
        items = list(dict.fromkeys((verifier if len(verifier) else part)["example_id"]))
        configs, kept, dropped = part.drop_duplicates("config")[_CONFIG_COLUMNS], [], []
        for key in configs["config"]:
            have = set(part.loc[part["config"] == key, "example_id"])
            (kept if set(items) <= have else dropped).append(key)
        if not len(verifier) and dropped:
            items = sorted(set.intersection(*(set(part.loc[part["config"] == k, "example_id"])
                                              for k in configs["config"])))
            kept, dropped = list(configs["config"]), []
        configs = configs[configs["config"].isin(kept)].reset_index(drop=True)
        table = part.set_index(["config", "example_id"])
        table = table[~table.index.duplicated(keep="last")]
        grid = pd.MultiIndex.from_product([configs["config"], items])
        aligned = table.reindex(grid)
        shape = (len(configs), len(items))
        quality = aligned["quality"].to_numpy(float).reshape(shape)
        wanted = [c for c in aligned.columns if c in ITEM_COLUMNS or "latency" in c or c.endswith("_s")]
        columns = {c: pd.to_numeric(aligned[c], errors="coerce").to_numpy(float).reshape(shape) for c in wanted}
        bleu = None
        if task is not None and task.metric_name in metrics.CORPUS_METRICS:
            references = {e.id: e.references for e in task.examples}
            absent = [i for i in items if i not in references]
            if absent:
                raise ValueError(f"task {task_name!r}: items {absent[:3]} are not in the task given; pass the "
                                 "task the sweep ran.")
            texts = aligned["text"].tolist()
            hypotheses = [metrics.bleu_hypothesis(task.postprocess(t) if task.postprocess else t) for t in texts]
            bleu = metrics.bleu_statistics(hypotheses, [references[i] for _ in range(shape[0]) for i in items])
            bleu = bleu.reshape(*shape, -1)
        out.append(ItemScores(task_name, float(temperature), metric, items, configs, quality, bleu, columns, dropped))
    return out


#: `(point, distribution)` of a vector statistic of item indices: `intervals.resample_items`
bootstrap_indices = intervals.resample_items


def quality_of(scores: ItemScores) -> pd.DataFrame:
    """Each configuration's set-level quality (mean, or corpus BLEU) on the common items."""
    out = scores.configs.copy()
    out.insert(0, "task", scores.task)
    out.insert(1, "temperature", scores.temperature)
    out["metric"], out["n"] = scores.metric, scores.n
    out["quality"] = scores.score(range(len(scores.configs)))
    return out


def _difference(scores: ItemScores, j: int, k: int, n_resamples: int, confidence: float, seed: int):
    if scores.bleu is None:
        return intervals.paired_mean_difference(scores.quality[j], scores.quality[k], confidence=confidence,
                                                n_resamples=n_resamples, seed=seed)
    point, distribution = scores.resampled(n_resamples, seed)
    low, high = intervals.percentile_interval(distribution[j] - distribution[k], confidence)
    return float(point[j] - point[k]), low, high


def paired_differences(rows: pd.DataFrame, tasks=None, *, against: Sequence[str] = ("Verifier", "SpecDecode"),
                       n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """For every configuration, its quality minus each reference's in `against` (same task, temperature,
    items and seeds; SpecDecode at the same gamma where it ran at several), with a paired percentile
    bootstrap interval over items (see the module docstring). One row per (configuration, reference):
    `quality`, `versus`, `versus_quality`, `difference`, `low`, `high`, `n`, `metric`."""
    if n_resamples < 2000:
        raise ValueError(f"n_resamples={n_resamples}: use at least 2000 resamples for a 95% interval.")
    out = []
    for scores in item_scores(rows, tasks):
        quality = quality_of(scores)
        for reference in against:
            candidates = scores.index(reference)
            if not candidates:
                continue
            for j in range(len(scores.configs)):
                same_gamma = [k for k in candidates if scores.configs.at[k, "gamma"] == scores.configs.at[j, "gamma"]]
                k = (same_gamma or candidates)[0]
                difference, low, high = _difference(scores, j, k, n_resamples, confidence, seed)
                out.append({**quality.iloc[j].to_dict(), "versus": reference,
                            "versus_quality": float(quality.at[k, "quality"]), "difference": difference,
                            "low": low, "high": high})
    return pd.DataFrame(out)


def corpus_quality(rows: pd.DataFrame, tasks, *, n_resamples: int = 2000, confidence: float = 0.95,
                   seed: int = 0) -> pd.DataFrame:
    """Per configuration of the rows of corpus-metric tasks (`metrics.CORPUS_METRICS`, i.e. BLEU), its
    corpus BLEU on the items it ran and a percentile bootstrap interval over them (`low`, `high`);
    keyed by task, temperature and `config`. Tasks with a mean metric are left out."""
    by_name = {name: task for name, task in _task_map(tasks).items() if task.metric_name in metrics.CORPUS_METRICS}
    out = []
    for (task_name, key), part in rows[rows["task"].isin(list(by_name))].groupby(["task", "config"], sort=False):
        task = by_name[task_name]
        references = {e.id: e.references for e in task.examples}
        absent = sorted(set(part["example_id"]) - set(references))
        if absent:
            raise ValueError(f"task {task_name!r}: items {absent[:3]} are not in the task given; pass the task the "
                             "sweep ran.")
        hypotheses = [metrics.bleu_hypothesis(task.postprocess(t) if task.postprocess else t) for t in part["text"]]
        stats = metrics.bleu_statistics(hypotheses, [references[i] for i in part["example_id"]])
        point, distribution = bootstrap_indices(lambda idx: [metrics.bleu_from_statistics(stats[idx])], len(stats),
                                                n_resamples=n_resamples, seed=seed)
        low, high = intervals.percentile_interval(distribution[0], confidence)
        out.append({"task": task_name, "temperature": part["temperature"].iloc[0], "config": key,
                    "quality": float(point[0]), "low": float(low), "high": float(high), "n": len(stats)})
    return pd.DataFrame(out, columns=["task", "temperature", "config", "quality", "low", "high", "n"])
