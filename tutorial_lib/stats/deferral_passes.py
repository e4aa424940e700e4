r"""The decoding-time features of notebook 08's positions, for a learned deferral rule to train on.

Notebook 08's committed results (`token_curves.analyse`, `data/results/token-analysis-*`) keep, per
position, what deferring costs and gains (`TokenAnalysis.oracle`: $D_{TV}$ and each model's loss on
the reference token) but not what a rule could see while decoding. `feature_pass` runs both models
once more along the references of some of its items (teacher forcing, the task's shared few-shot
prefix run once per model), computes `deferral_features.FEATURES` at every position, and checks
that the positions line up with the committed analysis by recomputing its oracle columns
$D_{TV}$, $1 - q(y)$ and $1 - p(y)$ (the largest difference is recorded in `alignment_error`).
Results are cached under `data/results/deferral-features-<key>/`, keyed by the analysis, the items
and the models, so a notebook reloads them in a second.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Union

import numpy as np
import torch

from ..maths import deferral_features as df
from ..maths import laws
from ..decoding.shared_prefix import common_prefix_length
from . import token_curves as tc

__all__ = ["FeatureSet", "pick_items", "feature_pass", "load_features"]

_VERSION = 1


@dataclass
class FeatureSet:
    """Per-position features of some items of a `TokenAnalysis`, in the analysis' position order.

    `positions`: for each row, its index into the analysis' per-position arrays (`oracle`,
    `position_item`), so any label the analysis holds can be joined to it.
    """

    item_ids: List[str]
    tasks: List[str]
    features: np.ndarray  # (N, len(FEATURES))
    positions: np.ndarray  # (N,) rows of the analysis' per-position arrays
    analysis: str  # the analysis folder's name
    alignment_error: float  # largest |difference| from the analysis' oracle columns
    timing: dict = field(default_factory=dict)
    path: Optional[Path] = None

    def save(self, directory: Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(directory / "features.npz", features=self.features, positions=self.positions)
        meta = dict(
            item_ids=self.item_ids,
            tasks=self.tasks,
            analysis=self.analysis,
            features=list(df.FEATURES),
            alignment_error=self.alignment_error,
            timing=self.timing,
        )
        (directory / "meta.json").write_text(json.dumps(meta, indent=1))
        self.path = directory
        return directory

    @classmethod
    def load(cls, directory: Path) -> "FeatureSet":
        directory = Path(directory)
        meta = json.loads((directory / "meta.json").read_text())
        if tuple(meta["features"]) != df.FEATURES:
            raise ValueError(
                f"{directory} holds features {meta['features']}, not {list(df.FEATURES)}; "
                "delete the folder to recompute it with `feature_pass`."
            )
        arrays = np.load(directory / "features.npz")
        return cls(
            meta["item_ids"],
            meta["tasks"],
            arrays["features"],
            arrays["positions"],
            meta["analysis"],
            float(meta["alignment_error"]),
            meta["timing"],
            directory,
        )


def pick_items(analysis: tc.TokenAnalysis, per_task: Optional[int], seed: int = 0) -> List[str]:
    """`per_task` item ids of each task of `analysis`, drawn without replacement (seeded), in the
    analysis' order; all items when `per_task` is None."""
    if per_task is not None and int(per_task) < 2:
        raise ValueError(
            f"per_task={per_task}: take at least 2 items per task (one to train, one to hold out), "
            "or None for every item."
        )
    rng = np.random.default_rng(seed)
    tasks = np.asarray(analysis.tasks)
    chosen = set()
    for task in dict.fromkeys(analysis.tasks):
        members = np.flatnonzero(tasks == task)
        take = len(members) if per_task is None else min(int(per_task), len(members))
        chosen.update(rng.choice(members, size=take, replace=False).tolist())
    return [analysis.item_ids[i] for i in sorted(chosen)]


def load_features(analysis: tc.TokenAnalysis, results_dir: Union[None, str, Path] = None) -> FeatureSet:
    """The saved features of `analysis`' items (from `feature_pass`), without loading any model.

    Raises `FileNotFoundError` naming the folder searched and how to compute them when none is saved."""
    if analysis.path is None:
        raise ValueError(
            "analysis has no folder; pass a TokenAnalysis loaded or saved by token_curves.analyse."
        )
    root = Path(results_dir) if results_dir is not None else tc.RESULTS_DIR
    for meta in sorted(root.glob("deferral-features-*/meta.json")):
        if json.loads(meta.read_text())["analysis"] == analysis.path.name:
            return FeatureSet.load(meta.parent)
    raise FileNotFoundError(
        f"no deferral-features-* folder in {root} was made from {analysis.path.name}; compute them "
        "with deferral_passes.feature_pass(pair, analysis, item_ids, items=...) on the analysis' pair "
        "(notebook 08's profile: `make models-qwen` first)."
    )


def _key(pair, analysis_name: str) -> str:
    h = hashlib.sha256(
        json.dumps(
            [_VERSION, analysis_name, list(df.FEATURES), [f"{lm.name}|{lm.dtype}" for lm in pair]]
        ).encode()
    )
    return h.hexdigest()[:12]


def feature_pass(
    pair,
    analysis: tc.TokenAnalysis,
    item_ids: Sequence[str],
    *,
    items: Sequence[tc.Item],
    cache: Union[bool, str, Path] = True,
    progress: bool = True,
) -> FeatureSet:
    """Features of every position of `item_ids` (ids of `analysis`), from one teacher-forced pass per
    model along the same references (`items`: the `token_curves.Item` records the analysis was made from).

    The cache folder is keyed by the analysis and the models, and grows: items already in it are
    loaded, the others computed and saved after each item (an interrupted pass resumes where it
    stopped). Tasks take turns, so a pass stopped early still covers every task. Returns the items
    asked for. Raises `ValueError` if an id is not in the analysis, or if the recomputed oracle columns
    differ from the analysis' by more than 1e-3 (the references or the models are not the analysis' own).
    """
    from tqdm.auto import tqdm

    if analysis.path is None:
        raise ValueError(
            "analysis has no folder; pass a TokenAnalysis loaded or saved by token_curves.analyse."
        )
    index = {item_id: i for i, item_id in enumerate(analysis.item_ids)}
    unknown = [i for i in item_ids if i not in index]
    if unknown:
        raise ValueError(
            f"item_ids {unknown[:3]} are not items of {analysis.path.name}; pick from its item_ids."
        )
    by_id = {item.id: item for item in items}
    directory, done = None, None
    if cache:
        root = tc.RESULTS_DIR if cache is True else Path(cache)
        directory = root / f"deferral-features-{_key(pair, analysis.path.name)}"
        if (directory / "meta.json").exists():
            done = FeatureSet.load(directory)
    done = done or FeatureSet(
        [],
        [],
        np.zeros((0, len(df.FEATURES))),
        np.zeros(0, dtype=np.int64),
        analysis.path.name,
        0.0,
        {"drafter_forward_s": 0.0, "verifier_forward_s": 0.0},
    )
    todo = [i for i in item_ids if i not in set(done.item_ids)]
    missing = [i for i in todo if i not in by_id]
    if missing:
        raise ValueError(
            f"items lacks {missing[:3]}; pass the Items the analysis was made from "
            "(token_curves.offline_items)."
        )
    if todo:
        _extend(pair, analysis, done, todo, by_id, index, directory, progress, tqdm)
    return _subset(done, item_ids, analysis)


def _subset(features: FeatureSet, item_ids: Sequence[str], analysis: tc.TokenAnalysis) -> FeatureSet:
    wanted = sorted(set(item_ids), key=analysis.item_ids.index)
    keep = np.isin(analysis.position_item[features.positions], [analysis.item_ids.index(i) for i in wanted])
    order = np.argsort(features.positions[keep], kind="stable")
    return FeatureSet(
        wanted,
        [analysis.tasks[analysis.item_ids.index(i)] for i in wanted],
        features.features[keep][order],
        features.positions[keep][order],
        features.analysis,
        features.alignment_error,
        features.timing,
        features.path,
    )


def _round_robin(todo, analysis, index):
    by_task = {}
    for item_id in sorted(todo, key=index.get):
        by_task.setdefault(analysis.tasks[index[item_id]], []).append(item_id)
    queues = list(by_task.values())
    return [queue[k] for k in range(max(map(len, queues))) for queue in queues if k < len(queue)]


def _extend(pair, analysis, done: FeatureSet, todo, by_id, index, directory, progress, tqdm) -> None:
    """Compute the features of `todo`, adding each item to `done` (and its folder) as it finishes."""
    verifier = pair.verifier
    chat = bool(analysis.settings.get("chat", False))
    offsets = np.concatenate([[0], np.cumsum(analysis.counts)])
    encoded = {i: tc.encode_item(verifier, by_id[i], chat=chat) for i in todo}
    sessions = {}
    for item_id in tqdm(_round_robin(todo, analysis, index), desc="features", disable=not progress):
        task = analysis.tasks[index[item_id]]
        if task not in sessions:  # the task's shared few-shot prefix, once per model
            members = [i for i, t in zip(analysis.item_ids, analysis.tasks) if t == task and i in by_id]
            prompts = [
                encoded[i][0] if i in encoded else tc.encode_item(verifier, by_id[i], chat=chat)[0]
                for i in members
            ]
            prefix = encoded[item_id][0][: common_prefix_length(prompts)]
            runners = []
            for lm in pair:
                session = lm.start(prefix) if prefix else None
                if session is not None:
                    session.feed(prefix, keep=1)
                runners.append(session)
            sessions[task] = (prefix, runners)
        prefix, runners = sessions[task]
        prompt, reference = encoded[item_id]
        n = len(reference)
        at = np.arange(offsets[index[item_id]], offsets[index[item_id] + 1])
        if len(at) != n:
            raise ValueError(
                f"item {item_id!r}: {n} reference tokens here, {len(at)} in {analysis.path.name}; "
                "the references differ from the analysis' (other items, tokenizer or chat setting)."
            )
        logits = []
        for lm, session, timer_key in zip(pair, runners, ("drafter_forward_s", "verifier_forward_s")):
            start = time.perf_counter()
            if session is not None:
                out = session.feed(prompt[len(prefix) :] + reference[:-1], keep=n)
                session.crop(len(prefix))
            else:
                out = lm.start(prompt).feed(prompt + reference[:-1], keep=n)
            done.timing[timer_key] = done.timing.get(timer_key, 0.0) + time.perf_counter() - start
            logits.append(out.float())
        q, p = (laws.probabilities(x, 1.0) for x in logits)
        y = torch.tensor(reference).unsqueeze(-1)
        check = (
            torch.stack(
                [
                    (p - q).clamp_min(0).sum(-1),
                    1 - q.gather(-1, y).squeeze(-1),
                    1 - p.gather(-1, y).squeeze(-1),
                ],
                -1,
            )
            .double()
            .numpy()
        )
        error = float(np.abs(check - analysis.oracle[at][:, :3]).max())
        if error > 1e-3:
            raise ValueError(
                f"item {item_id!r}: the recomputed D_TV and losses differ from {analysis.path.name} by "
                f"{error:.3g}; load the pair and items the analysis was made with (notebook 08's profile)."
            )
        done.item_ids.append(item_id)
        done.tasks.append(task)
        done.features = np.concatenate([done.features, df.deferral_features(q, p).numpy()])
        done.positions = np.concatenate([done.positions, at.astype(np.int64)])
        done.alignment_error = max(done.alignment_error, error)
        done.timing["positions"] = int(len(done.positions))
        if directory is not None:
            done.save(directory)
