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

**Counting differences that exclude 0** (`separated_counts`). A configuration compared with itself, or
one whose texts equal the reference's on every item, differs by 0 by construction: such pairs are
counted apart and left out. Of the $m$ pairs left, about $(1 - \text{confidence})\,m$ would exclude 0
by chance if no configuration differed from its reference (each 95% interval misses a true 0 about
5% of the time; the pairs share items and references, so the count varies more than a binomial's).

**The same-law noise floor** (`same_law_floor`). Two runs of one output law differ only by their
draws; their paired difference, in a claim's own unit, is what a difference between two methods must
clear. With a second seed set (item $i$ drawn with another seed), the floor is the verifier's
quality with the second seeds minus with the first (quality unit), and SpecDecode's rejection rate
with the second seeds relative to the first, $r_2 / r_1 - 1$ (the unit of the rejection-rate claims).
Without one, the quality floor is SpecDecode minus the verifier on the same items and seeds (one law:
SpecDecode is lossless), except where their texts are equal on every item (at $T = 0$): a floor of 0
by construction, not a measurement. At $T = 0$ nothing is drawn, so a second seed set would repeat
the run: the rejection-rate floor there is 0 by construction too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
import pandas as pd
from . import intervals
from ..tasks import metrics

__all__ = [
    "ItemScores",
    "item_scores",
    "paired_differences",
    "quality_of",
    "corpus_quality",
    "separated_counts",
    "same_law_floor",
    "FLOOR_COLUMNS",
]

_CONFIG_COLUMNS = ["config", "label", "method", "rule", "alpha", "beta", "gamma"]
#: Per-item row columns kept for costs and rejection rates (those present in the rows), besides any
#: column whose name has "latency" in it or ends in "_s" (the cost model's priced columns).
ITEM_COLUMNS = (
    "n_tokens",
    "n_verifier_calls",
    "n_drafter_calls",
    "n_accepted",
    "n_rejected",
    "wall_time_s",
    "drafter_time_s",
    "verifier_time_s",
    "modelled_latency",
    "modelled_latency_s",
    "modelled_latency_accelerator_s",
)


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
    dropped: List[str] = field(default_factory=list)  # configurations that miss some of the items
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
            self._resampled[key] = intervals.resample_items(
                lambda idx: self.score(every, idx), self.n, n_resamples=n_resamples, seed=seed
            )
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
    from ..sweeps.configs import Task

    return {t.name: t for t in (Task.from_dict(task) for task in tasks)}


def item_scores(rows: pd.DataFrame, tasks=None) -> List[ItemScores]:
    """Per (task, temperature) of `rows` (a sweep's rows, `rows.jsonl`): the items of the verifier
    (else of every configuration), and each configuration that ran all of them (the others are listed
    in `dropped`). `tasks` (`configs.Task`s) tell each task's metric and references: a task whose
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
            raise ValueError(
                f"task {task_name!r} T={temperature}: items ran with different seeds across "
                f"configurations ({list(seeds[seeds > 1].index[:3])}); paired comparisons need "
                "common random numbers (run_sweep's seed + i)."
            )
        verifier = part[part["method"] == "verifier"]
        items = list(dict.fromkeys((verifier if len(verifier) else part)["example_id"]))
        configs, kept, dropped = part.drop_duplicates("config")[_CONFIG_COLUMNS], [], []
        for key in configs["config"]:
            have = set(part.loc[part["config"] == key, "example_id"])
            (kept if set(items) <= have else dropped).append(key)
        if not len(verifier) and dropped:
            items = sorted(
                set.intersection(
                    *(set(part.loc[part["config"] == k, "example_id"]) for k in configs["config"])
                )
            )
            kept, dropped = list(configs["config"]), []
        configs = configs[configs["config"].isin(kept)].reset_index(drop=True)
        table = part.set_index(["config", "example_id"])
        table = table[~table.index.duplicated(keep="last")]
        grid = pd.MultiIndex.from_product([configs["config"], items])
        aligned = table.reindex(grid)
        shape = (len(configs), len(items))
        quality = aligned["quality"].to_numpy(float).reshape(shape)
        wanted = [c for c in aligned.columns if c in ITEM_COLUMNS or "latency" in c or c.endswith("_s")]
        columns = {
            c: pd.to_numeric(aligned[c], errors="coerce").to_numpy(float).reshape(shape) for c in wanted
        }
        bleu = None
        if task is not None and task.metric_name in metrics.CORPUS_METRICS:
            references = {e.id: e.references for e in task.examples}
            absent = [i for i in items if i not in references]
            if absent:
                raise ValueError(
                    f"task {task_name!r}: items {absent[:3]} are not in the task given; pass the "
                    "task the sweep ran."
                )
            texts = aligned["text"].tolist()
            hypotheses = [
                metrics.bleu_hypothesis(task.postprocess(t) if task.postprocess else t) for t in texts
            ]
            bleu = metrics.bleu_statistics(
                hypotheses, [references[i] for _ in range(shape[0]) for i in items]
            )
            bleu = bleu.reshape(*shape, -1)
        out.append(
            ItemScores(task_name, float(temperature), metric, items, configs, quality, bleu, columns, dropped)
        )
    return out


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
        return intervals.paired_mean_difference(
            scores.quality[j], scores.quality[k], confidence=confidence, n_resamples=n_resamples, seed=seed
        )
    point, distribution = scores.resampled(n_resamples, seed)
    low, high = intervals.percentile_interval(distribution[j] - distribution[k], confidence)
    return float(point[j] - point[k]), low, high


def paired_differences(
    rows: pd.DataFrame,
    tasks=None,
    *,
    against: Sequence[str] = ("Verifier", "SpecDecode"),
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """For every configuration, its quality minus each reference's in `against` (same task, temperature,
    items and seeds; SpecDecode at the same gamma where it ran at several), with a paired percentile
    bootstrap interval over items (see the module docstring). One row per (configuration, reference):
    `quality`, `versus`, `versus_config`, `versus_quality`, `difference`, `low`, `high`, `n`, `metric`, and
    `same_texts`: the two emitted the same text on every item (a difference of 0 by construction)."""
    if n_resamples < 2000:
        raise ValueError(f"n_resamples={n_resamples}: use at least 2000 resamples for a 95% interval.")
    out = []
    for scores in item_scores(rows, tasks):
        quality = quality_of(scores)
        part = rows[
            (rows["task"] == scores.task)
            & (rows["temperature"] == scores.temperature)
            & rows["example_id"].isin(scores.items)
        ]
        texts = (
            {key: group.set_index("example_id")["text"].sort_index() for key, group in part.groupby("config")}
            if "text" in part
            else {}
        )
        for reference in against:
            candidates = scores.index(reference)
            if not candidates:
                continue
            for j in range(len(scores.configs)):
                same_gamma = [
                    k for k in candidates if scores.configs.at[k, "gamma"] == scores.configs.at[j, "gamma"]
                ]
                k = (same_gamma or candidates)[0]
                difference, low, high = _difference(scores, j, k, n_resamples, confidence, seed)
                mine, theirs = (texts.get(scores.configs.at[i, "config"]) for i in (j, k))
                same = mine is not None and theirs is not None and mine.equals(theirs)
                out.append(
                    {
                        **quality.iloc[j].to_dict(),
                        "versus": reference,
                        "versus_config": scores.configs.at[k, "config"],
                        "versus_quality": float(quality.at[k, "quality"]),
                        "difference": difference,
                        "low": low,
                        "high": high,
                        "same_texts": same,
                    }
                )
    return pd.DataFrame(out)


def corpus_quality(
    rows: pd.DataFrame, tasks, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Per configuration of the rows of corpus-metric tasks (`metrics.CORPUS_METRICS`, i.e. BLEU), its
    corpus BLEU on the items it ran and a percentile bootstrap interval over them (`low`, `high`);
    keyed by task, temperature and `config`. Tasks with a mean metric are left out."""
    by_name = {
        name: task for name, task in _task_map(tasks).items() if task.metric_name in metrics.CORPUS_METRICS
    }
    out = []
    for (task_name, key), part in rows[rows["task"].isin(list(by_name))].groupby(
        ["task", "config"], sort=False
    ):
        task = by_name[task_name]
        references = {e.id: e.references for e in task.examples}
        absent = sorted(set(part["example_id"]) - set(references))
        if absent:
            raise ValueError(
                f"task {task_name!r}: items {absent[:3]} are not in the task given; pass the task the "
                "sweep ran."
            )
        hypotheses = [
            metrics.bleu_hypothesis(task.postprocess(t) if task.postprocess else t) for t in part["text"]
        ]
        stats = metrics.bleu_statistics(hypotheses, [references[i] for i in part["example_id"]])
        point, distribution = intervals.resample_items(
            lambda idx: [metrics.bleu_from_statistics(stats[idx])],
            len(stats),
            n_resamples=n_resamples,
            seed=seed,
        )
        low, high = intervals.percentile_interval(distribution[0], confidence)
        out.append(
            {
                "task": task_name,
                "temperature": part["temperature"].iloc[0],
                "config": key,
                "quality": float(point[0]),
                "low": float(low),
                "high": float(high),
                "n": len(stats),
            }
        )
    return pd.DataFrame(out, columns=["task", "temperature", "config", "quality", "low", "high", "n"])


def separated_counts(
    differences: pd.DataFrame, by: Sequence[str] = ("temperature",), confidence: float = 0.95
) -> pd.DataFrame:
    """Per group of `by` (and over all rows, `all`), how many paired differences exclude 0, counted over the
    pairs that can differ (module docstring): `pairs`, `self_comparisons`, `identical_texts`, `compared`,
    `exclude_0`, `above`, `below` and `expected_by_chance`, (1 - confidence) x compared."""
    missing = {"low", "high", "config", "versus_config", "same_texts", *by} - set(differences.columns)
    if missing:
        raise ValueError(f"differences lack {sorted(missing)}: pass `paired_differences(...)`'s table.")
    groups = [("all", differences)] + [
        (key if len(by) > 1 else key[0], part) for key, part in differences.groupby(list(by), sort=True)
    ]
    out = []
    for key, part in groups:
        itself = part["config"] == part["versus_config"]
        same = part["same_texts"].astype(bool) & ~itself
        kept = part[~itself & ~same]
        above, below = int((kept["low"] > 0).sum()), int((kept["high"] < 0).sum())
        out.append(
            {
                "group": key,
                "pairs": len(part),
                "self_comparisons": int(itself.sum()),
                "identical_texts": int(same.sum()),
                "compared": len(kept),
                "exclude_0": above + below,
                "above": above,
                "below": below,
                "expected_by_chance": (1 - confidence) * len(kept),
            }
        )
    return pd.DataFrame(out)


#: the columns `same_law_floor` gives per (task, temperature)
FLOOR_COLUMNS = (
    "quality_floor",
    "quality_floor_low",
    "quality_floor_high",
    "quality_floor_from",
    "rate_floor",
    "rate_floor_low",
    "rate_floor_high",
    "rate_floor_from",
)


def _texts_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    if "text" not in a or "text" not in b:
        return False
    left, right = a.set_index("example_id")["text"], b.set_index("example_id")["text"]
    common = left.index.intersection(right.index)
    return len(common) == len(left) and bool((left.loc[common] == right.loc[common]).all())


def _quality_difference(
    first: pd.DataFrame, second: pd.DataFrame, tasks, n_resamples: int, confidence: float, seed: int
) -> tuple:
    """Quality of `second` minus `first` on their common items (two configurations, possibly of two seed
    sets: the seeds are left out of the pairing check on purpose)."""
    both = pd.concat(
        [
            first.assign(config="first", label="first", method="first"),
            second.assign(config="second", label="second", method="second"),
        ],
        ignore_index=True,
    )
    common = set(first["example_id"]) & set(second["example_id"])
    both = both[both["example_id"].isin(common)].drop(columns=["seed"], errors="ignore")
    (scores,) = item_scores(both, tasks)
    return _difference(
        scores, scores.index("second")[0], scores.index("first")[0], n_resamples, confidence, seed
    )


def _rate_ratio(
    first: pd.DataFrame, second: pd.DataFrame, n_resamples: int, confidence: float, seed: int
) -> tuple:
    """$r_2 / r_1 - 1$ of two runs' rejection rates (rejected over drafted tokens) on their common items."""
    a = first.set_index("example_id")[["n_rejected", "n_accepted"]]
    b = second.set_index("example_id")[["n_rejected", "n_accepted"]]
    common = a.index.intersection(b.index)
    a, b = a.loc[common].to_numpy(float), b.loc[common].to_numpy(float)

    def ratio(idx):
        r1 = a[idx, 0].sum() / a[idx].sum()
        r2 = b[idx, 0].sum() / b[idx].sum()
        return [r2 / r1 - 1 if r1 > 0 else np.nan]

    point, distribution = intervals.resample_items(ratio, len(common), n_resamples=n_resamples, seed=seed)
    low, high = intervals.percentile_interval(distribution[0], confidence)
    return float(point[0]), low, high


def same_law_floor(
    rows: pd.DataFrame,
    tasks=None,
    *,
    second_seed: Optional[pd.DataFrame] = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per (task, temperature) of `rows`, the noise floor in the quality unit and in the rejection-rate
    unit (module docstring; `FLOOR_COLUMNS`), each with its percentile interval and `*_from`: what it was
    measured on, or why there is none. `second_seed`: rows of the verifier and SpecDecode with a second
    seed set on the same items (`reruns` profile `offline-large-seed2`); a task of theirs counts where both
    ran every item the first run's verifier ran."""
    out = []
    for (task, temperature), part in rows.groupby(["task", "temperature"], sort=False):
        verifier = part[part["label"] == "Verifier"]
        spec = part[part["label"] == "SpecDecode"]
        if len(spec):
            spec = spec[spec["gamma"] == spec["gamma"].min()]
        again = (
            second_seed[(second_seed["task"] == task) & (second_seed["temperature"] == temperature)]
            if second_seed is not None
            else part.iloc[:0]
        )
        again_verifier, again_spec = (again[again["label"] == label] for label in ("Verifier", "SpecDecode"))
        items = set(verifier["example_id"])
        complete = (
            bool(items)
            and items <= set(again_verifier["example_id"])
            and items <= set(again_spec["example_id"])
        )
        row = {"task": task, "temperature": temperature, **{c: np.nan for c in FLOOR_COLUMNS}}
        if complete:
            row.update(
                zip(
                    FLOOR_COLUMNS[:3],
                    _quality_difference(verifier, again_verifier, tasks, n_resamples, confidence, seed),
                )
            )
            row["quality_floor_from"] = "the verifier with a second seed set minus the verifier (same items)"
            row.update(zip(FLOOR_COLUMNS[4:7], _rate_ratio(spec, again_spec, n_resamples, confidence, seed)))
            row["rate_floor_from"] = (
                "SpecDecode's rejection rate with a second seed set over its rate, minus 1"
            )
        else:
            if not len(verifier) or not len(spec):
                row["quality_floor_from"] = "not run: the verifier or SpecDecode did not run here"
            elif _texts_equal(spec, verifier):
                row["quality_floor_from"] = (
                    "by construction: SpecDecode's texts are the verifier's on every item "
                    "(T = 0), so their difference is 0 without measuring anything"
                )
            else:
                row.update(
                    zip(
                        FLOOR_COLUMNS[:3],
                        _quality_difference(verifier, spec, tasks, n_resamples, confidence, seed),
                    )
                )
                row["quality_floor_from"] = (
                    "SpecDecode minus the verifier (one law, the same items and seeds)"
                )
            row["rate_floor_from"] = (
                "by construction: at T = 0 nothing is drawn, so a second seed set repeats SpecDecode's "
                "run and its rate (a floor of 0 without measuring anything)"
                if temperature == 0
                else (
                    "not run: a floor in rejection rate needs SpecDecode with a second seed set on "
                    "these items"
                )
            )
        out.append(row)
    return pd.DataFrame(out, columns=["task", "temperature", *FLOOR_COLUMNS])
