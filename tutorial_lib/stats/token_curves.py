r"""Teacher-forced passes of a model pair over reference answers, and the curves of every rule.

`analyse(pair, items)` runs each model once per item along its reference $y$ (the few-shot prefix a
task's items share runs once per model and its KV cache is cropped back after each item), turns the
logits into the exact per-position statistics of `token_analysis` in chunks of positions as they
arrive, and keeps per item only the sums over positions (plus the oracle's per-position losses and,
for a few showcase items, the per-position statistics). Results are cached on disk under
`data/results/token-analysis-<key>/`, keyed by the models, the items' token ids and the settings.
The teacher-forced passes run one answer at a time: batching them does not pay on a CPU (16 code answers
of the Qwen pair: the verifier took 48 s one at a time, 38 s in batches of 4, 78 s in batches of 8 and
142 s in batches of 16).

`summarise(result, task)` gives, for the items of one task (or all), the token-weighted mean of each
statistic at every (curve, alpha) point,
$\bar s = \sum_{i} \sum_t s_{i,t} / \sum_i n_i$, the oracle envelope, each curve's area above the
envelope $\int_0^{R_{\max}} (L_{\rm rule}(R) - L_{\rm env}(R))\,dR$ and its loss at matched rejection
rates, all with 95% percentile bootstrap intervals over items (`intervals`, items resampled
with replacement, every number recomputed from the resampled items).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import torch

from .. import paths
from . import intervals
from ..maths import token_analysis as ta
from ..decoding.shared_prefix import common_prefix_length

__all__ = [
    "Item",
    "TokenAnalysis",
    "offline_items",
    "reference_text",
    "encode_item",
    "analyse",
    "greedy_references",
    "summarise",
    "RESULTS_DIR",
]

RESULTS_DIR = paths.RESULTS_DIR
_VERSION = 2  # 2: greedy references decoded in batches
Tokens = Union[str, Sequence[int]]


@dataclass
class Item:
    """One prompt and its reference continuation (text, or token ids), in a task."""

    id: str
    task: str
    prompt: Tokens
    reference: Optional[Tokens]


def reference_text(task_name: str, example: dict) -> str:
    """The gold answer of an offline task's example, written as the task's few-shot answers are."""
    if task_name == "code":
        return "```python\n" + example["references"][0].strip("\n") + "\n```"
    if task_name == "arithmetic":
        return example["info"]["solution"]
    if not example.get("references"):
        raise ValueError(
            f"example {example.get('id')!r} has no reference answer; pass items with references."
        )
    return example["references"][0]


def offline_items(
    tasks: Sequence[str] = ("code", "arithmetic", "facts"),
    n: Optional[int] = None,
    shots: Optional[int] = None,
) -> List[Item]:
    """The offline task sets of `tasksets` as items whose reference is the gold answer."""
    from ..tasks import tasksets

    items = []
    for name in tasks:
        task = tasksets.offline_task(name, n, shots=shots)
        items += [Item(ex["id"], name, ex["prompt"], reference_text(name, ex)) for ex in task["examples"]]
    return items


def _end_token(lm) -> Optional[int]:
    eos = lm.eos_token_id
    return int(eos[0] if isinstance(eos, (list, tuple)) else eos) if eos is not None else None


def encode_item(lm, item: Item, *, chat: bool):
    """`(prompt_ids, reference_ids)`; a text reference gets the model's end token appended."""
    if item.reference is None:
        raise ValueError(f"item {item.id!r} has no reference; every item needs the continuation to score.")
    if isinstance(item.reference, str) and not item.reference.strip():
        raise ValueError(
            f"the reference of item {item.id!r} is blank: it tokenizes to no answer tokens; "
            "give a non-empty answer."
        )
    if isinstance(item.prompt, str) and chat:
        prompt = lm.chat_prompt(item.prompt)
    else:
        prompt = lm.encode(item.prompt)
    if isinstance(item.reference, str):
        if lm.tokenizer is None:
            raise ValueError(f"{lm.name} has no tokenizer; give item {item.id!r} its reference as token ids.")
        reference = lm.encode_plain(item.reference)
        if not reference:
            raise ValueError(
                f"the reference of item {item.id!r} tokenizes to nothing; give a non-empty answer."
            )
        end = _end_token(lm)
        reference = reference + ([end] if end is not None else [])
    else:
        reference = [int(t) for t in item.reference]
    if not reference:
        raise ValueError(f"the reference of item {item.id!r} is empty; give at least one token.")
    if min(reference) < 0 or max(reference) >= lm.vocab_size:
        raise ValueError(f"reference ids of item {item.id!r} must lie in [0, {lm.vocab_size}).")
    return prompt, reference


class _PrefixRunner:
    """Logits of one model along `prompt + reference`, reusing a shared prefix's KV cache."""

    def __init__(self, lm, prefix: List[int]):
        self.lm, self.prefix, self.time_s = lm, prefix, 0.0
        self.session = None
        if prefix and not lm.is_encoder_decoder:
            start = time.perf_counter()
            self.session = lm.start(prefix)
            self.session.feed(prefix, keep=1)
            self.time_s += time.perf_counter() - start

    def logits(self, prompt: List[int], reference: List[int]) -> torch.Tensor:  # (n, V)
        start = time.perf_counter()
        n = len(reference)
        if self.lm.is_encoder_decoder:
            session = self.lm.start(prompt)
            out = session.feed(self.lm.decoder_prefix(prompt) + reference[:-1], keep=n)
        elif self.session is not None:
            out = self.session.feed(prompt[len(self.prefix) :] + reference[:-1], keep=n)
            self.session.crop(len(self.prefix))
        else:
            out = self.lm.start(prompt).feed(prompt + reference[:-1], keep=n)
        self.time_s += time.perf_counter() - start
        return out.float()


@dataclass
class TokenAnalysis:
    """Per-item sums of `token_analysis.STATS` at every grid point, the oracle's per-position losses,
    per-position statistics of the showcase items, and how long it all took."""

    grid: ta.Grid
    item_ids: List[str]
    tasks: List[str]
    counts: np.ndarray  # (I,) positions per item
    sums: np.ndarray  # (I, points, stats)
    oracle: np.ndarray  # (N, 7) per position: R_verifier, (loss_q, loss_p) per loss
    position_item: np.ndarray  # (N,) item index of each position
    showcase: Dict[str, dict] = field(
        default_factory=dict
    )  # item id -> {"tokens", "stats" (n, points, stats)}
    settings: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    path: Optional[Path] = None

    def save(self, directory: Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        show = {
            f"show_{i}": np.asarray(v["stats"], dtype=np.float32)
            for i, v in enumerate(self.showcase.values())
        }
        np.savez_compressed(
            directory / "statistics.npz",
            counts=self.counts,
            sums=self.sums,
            oracle=self.oracle,
            position_item=self.position_item,
            **show,
        )
        meta = dict(
            grid=self.grid.as_json(),
            item_ids=self.item_ids,
            tasks=self.tasks,
            settings=self.settings,
            timing=self.timing,
            showcase={k: {"tokens": v["tokens"]} for k, v in self.showcase.items()},
        )
        (directory / "meta.json").write_text(json.dumps(meta, indent=1))
        self.path = directory
        return directory

    @classmethod
    def load(cls, directory: Path) -> "TokenAnalysis":
        directory = Path(directory)
        if directory.parent == RESULTS_DIR:  # a committed analysis: a wheel does not ship it
            what = f"a committed analysis (data/results/{directory.name})"
            paths.repository_only(directory / "meta.json", what)
        meta = json.loads((directory / "meta.json").read_text())
        arrays = np.load(directory / "statistics.npz")
        showcase = {
            k: {"tokens": v["tokens"], "stats": arrays[f"show_{i}"].astype(np.float64)}
            for i, (k, v) in enumerate(meta["showcase"].items())
        }
        return cls(
            ta.Grid({k: tuple(v) for k, v in meta["grid"].items()}),
            meta["item_ids"],
            meta["tasks"],
            arrays["counts"],
            arrays["sums"],
            arrays["oracle"],
            arrays["position_item"],
            showcase,
            meta["settings"],
            meta["timing"],
            directory,
        )


def _cache_key(pair, encoded, settings) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([_VERSION, settings], sort_keys=True).encode())
    for lm in pair:
        h.update(f"{lm.name}|{lm.dtype}|{lm.vocab_size}".encode())
    for item_id, prompt, reference in encoded:
        h.update(json.dumps([item_id, prompt, reference]).encode())
    return h.hexdigest()[:12]


def analyse(
    pair,
    items: Sequence[Item],
    *,
    temperature: float = 1.0,
    grid: Optional[ta.Grid] = None,
    n_alpha: int = 41,
    chat: Optional[bool] = None,
    chunk_size: Optional[int] = None,
    head: int = 256,
    showcase: Optional[Sequence[str]] = None,
    cache: Union[bool, str, Path] = True,
    label: str = "token-analysis",
    progress: bool = True,
) -> TokenAnalysis:
    """Teacher-forced statistics of every rule along each item's reference (see the module docstring).

    `chat`: send text prompts as one user message of the chat template (default: when the verifier
    has one). `showcase`: item ids whose per-position statistics are kept (default: each task's
    first item). `cache`: True for `data/results/`, a folder (read first, then the shipped `data/results/`;
    written to the folder only), or False. `chunk_size` (positions per
    chunk, across answers; default about four million logits) and `head` change neither number, only
    memory and speed.
    """
    from tqdm.auto import tqdm

    drafter, verifier = pair
    if drafter.vocab_size != verifier.vocab_size:
        raise ValueError(
            f"vocabularies differ ({drafter.vocab_size} vs {verifier.vocab_size} tokens); "
            "teacher forcing compares q(y) with p(y), so use a pair that shares a tokenizer."
        )
    items = list(items)
    if not items:
        raise ValueError("no items; pass at least one Item with a reference.")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size} must be >= 1 position (None: about 4M logits per chunk).")
    if chat is None:
        chat = getattr(verifier.tokenizer, "chat_template", None) is not None
    grid = grid or ta.default_grid(n_alpha, temperature)
    encoded = [(item.id, *encode_item(verifier, item, chat=chat)) for item in items]
    if len({e[0] for e in encoded}) != len(encoded):
        raise ValueError("item ids repeat; give every item its own id.")
    settings = dict(
        temperature=float(temperature),
        grid=grid.as_json(),
        chat=bool(chat),
        drafter=drafter.name,
        verifier=verifier.name,
        dtype=str(verifier.dtype),
    )
    directory = None
    if cache:
        root = RESULTS_DIR if cache is True else Path(cache)
        directory = root / f"{label}-{_cache_key(pair, encoded, settings)}"
        # a folder of the user's is read first, then the results shipped with the package (never written)
        for place in dict.fromkeys((directory, RESULTS_DIR / directory.name)):
            if (place / "meta.json").exists():
                return TokenAnalysis.load(place)
    tasks = [item.task for item in items]
    if showcase is None:
        showcase = [items[tasks.index(t)].id for t in dict.fromkeys(tasks)]
    n_points = len(grid.points)
    counts = np.array([len(e[2]) for e in encoded], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    per_position = np.zeros((int(offsets[-1]), n_points, len(ta.STATS)))  # statistics, not distributions
    oracle = np.zeros((int(offsets[-1]), 7))
    chunk = chunk_size or max(1, 4_000_000 // verifier.vocab_size)  # rows of (V,) logits per chunk
    pending = {"q": [], "p": [], "y": [], "at": []}
    timer = {"statistics_s": 0.0, "drafter_forward_s": 0.0, "verifier_forward_s": 0.0}

    def flush(final: bool):
        while pending["at"] and (final or sum(len(a) for a in pending["at"]) >= chunk):
            q, p, y, at = (torch.cat(pending[k]) for k in ("q", "p", "y", "at"))
            rows, rest = slice(0, chunk), slice(chunk, None)
            start = time.perf_counter()
            per_position[at[rows].numpy()] = ta.position_statistics(
                q[rows], p[rows], y[rows], grid, temperature=temperature, head=head
            ).numpy()
            oracle[at[rows].numpy()] = ta.oracle_losses(
                q[rows], p[rows], y[rows], temperature=temperature
            ).numpy()
            timer["statistics_s"] += time.perf_counter() - start
            for key, value in zip(("q", "p", "y", "at"), (q, p, y, at)):
                pending[key] = [value[rest]] if len(value) > chunk else []

    for task in dict.fromkeys(tasks):
        members = [i for i, t in enumerate(tasks) if t == task]
        prefix = encoded[members[0]][1][: common_prefix_length([encoded[i][1] for i in members])]
        runners = [_PrefixRunner(lm, prefix) for lm in pair]
        for i in tqdm(members, desc=f"{task}: teacher forcing", disable=not progress):
            _, prompt, reference = encoded[i]
            pending["q"].append(runners[0].logits(prompt, reference))  # (n, V)
            pending["p"].append(runners[1].logits(prompt, reference))
            pending["y"].append(torch.tensor(reference))
            pending["at"].append(torch.arange(offsets[i], offsets[i + 1]))
            flush(final=False)
        flush(final=True)
        timer["drafter_forward_s"] += runners[0].time_s
        timer["verifier_forward_s"] += runners[1].time_s
    # one item's positions summed in one order whatever the chunking, so any chunk size gives the same sums
    sums = np.stack([per_position[offsets[i] : offsets[i + 1]].sum(0) for i in range(len(items))])
    shown = {
        encoded[i][0]: {
            "tokens": [verifier.decode([t]) for t in encoded[i][2]],
            "stats": per_position[offsets[i] : offsets[i + 1]],
        }
        for i in range(len(items))
        if encoded[i][0] in showcase
    }
    timing = dict(
        timer,
        positions=int(counts.sum()),
        points=n_points,
        statistics_ms_per_point=1e3 * timer["statistics_s"] / n_points,
    )
    position_item = np.repeat(np.arange(len(items)), counts).astype(np.int32)
    result = TokenAnalysis(
        grid, [e[0] for e in encoded], tasks, counts, sums, oracle, position_item, shown, settings, timing
    )
    if directory is not None:
        result.save(directory)
    return result


def greedy_references(
    pair,
    items: Sequence[Item],
    *,
    max_new_tokens: Union[int, Dict[str, int]] = 64,
    chat: Optional[bool] = None,
    cache: Union[bool, str, Path] = True,
    batch_size: int = 16,
    progress: bool = True,
) -> List[Item]:
    """The items again, each with the verifier's own greedy answer as its reference (token ids, the end
    token included when it is reached), decoded by `batch.generate_batch` (the verifier alone,
    `T = 0`): a task's shared prefix runs once and its items go `batch_size` at a time in lockstep
    (one forward pass per step for the batch: a CPU reads the weights once for all rows). Batched and single
    passes differ by float rounding, so an answer can differ from one-at-a-time decoding where two tokens
    nearly tie. The answers are cached on disk like `analyse`'s results. `max_new_tokens`: one limit, or one
    per task name."""
    verifier = pair.verifier
    if chat is None:
        chat = getattr(verifier.tokenizer, "chat_template", None) is not None
    if verifier.is_encoder_decoder or verifier.is_toy:
        raise ValueError(
            "greedy_references supports decoder-only transformers verifiers; pass references yourself."
        )
    if int(batch_size) < 1:
        raise ValueError(f"batch_size={batch_size}: decode at least one item at a time.")
    items = list(items)
    limits = {
        item.task: int(max_new_tokens[item.task] if isinstance(max_new_tokens, dict) else max_new_tokens)
        for item in items
    }
    prompts = {
        item.id: (
            verifier.chat_prompt(item.prompt)
            if isinstance(item.prompt, str) and chat
            else verifier.encode(item.prompt)
        )
        for item in items
    }
    path = None
    if cache:
        h = hashlib.sha256(
            json.dumps(
                [_VERSION, verifier.name, str(verifier.dtype), limits, sorted(prompts.items())]
            ).encode()
        ).hexdigest()[:12]
        path = (RESULTS_DIR if cache is True else Path(cache)) / f"token-analysis-greedy-{h}.json"
        found = next((place for place in (path, RESULTS_DIR / path.name) if place.exists()), None)
        if found is not None:  # the user's folder first, then the answers shipped with the package
            answers = json.loads(found.read_text())
            return [Item(item.id, item.task, item.prompt, answers[item.id]) for item in items]
    from ..decoding.batch import generate_batch

    answers = {}
    for task in dict.fromkeys(item.task for item in items):
        members = [item for item in items if item.task == task]
        # greedy verifier decoding, batched in lockstep over the task's shared prefix (`batch`)
        outputs = generate_batch(
            pair.drafter,
            verifier,
            [prompts[item.id] for item in members],
            method="verifier",
            temperature=0.0,
            max_new_tokens=limits[task],
            batch_size=batch_size,
            progress=progress,
        )
        answers.update((item.id, out.tokens) for item, out in zip(members, outputs))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(answers))
    return [Item(item.id, item.task, item.prompt, answers[item.id]) for item in items]


# --------------------------------------------------------------------------------------------
# Means, the envelope, areas and matched-rejection losses, with bootstrap intervals over items
# --------------------------------------------------------------------------------------------

_ORACLE_COLUMNS = {"expected_01": (1, 2), "greedy_01": (3, 4), "log_loss": (5, 6)}


def _curve_on(rejection: np.ndarray, loss: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A curve's loss at rejection rates `at` (linear between its points sorted by rejection; NaN beyond)."""
    order = np.argsort(rejection, kind="stable")
    r, losses = rejection[order], loss[order]
    values = np.interp(at, r, losses)
    return np.where((at >= r[0] - 1e-12) & (at <= r[-1] + 1e-12), values, np.nan)


def _statistic_factory(result: TokenAnalysis, members: np.ndarray, losses, rates, n_grid: int):
    """A function of resampled item indices returning every number `summarise` reports, flattened."""
    grid = result.grid
    sums, counts = result.sums[members], result.counts[members]
    in_members = np.full(len(result.item_ids), -1)
    in_members[members] = np.arange(len(members))
    keep = in_members[result.position_item] >= 0
    oracle, owner = result.oracle[keep], in_members[result.position_item[keep]]
    orders = {
        loss: ta.envelope_order(oracle[:, 0], *(oracle[:, c] for c in _ORACLE_COLUMNS[loss]))
        for loss in losses
    }
    rejection_column = ta.STATS.index("rejection")
    curves = [c for c in grid.curves if len(grid.alphas[c]) > 1]
    r_max = float((sums[:, grid.slice("verifier"), rejection_column].sum() / counts.sum()))
    r_axis = np.linspace(0.0, max(r_max, 1e-12), n_grid)

    def statistic(idx):
        idx = np.asarray(idx, dtype=np.int64)
        means = sums[idx].sum(0) / counts[idx].sum()  # (points, stats)
        weights = np.bincount(idx, minlength=len(members))[owner].astype(np.float64)
        out = [means.ravel()]
        for loss in losses:
            qc, pc = _ORACLE_COLUMNS[loss]
            R, L = ta.oracle_envelope(oracle[:, 0], oracle[:, qc], oracle[:, pc], weights, order=orders[loss])
            envelope = np.interp(r_axis, R, L)
            out.append(envelope)
            out.append(np.interp(rates, R, L))
            column = ta.STATS.index(loss)
            for curve in curves:
                block = means[grid.slice(curve)]
                rej, val = block[:, rejection_column], block[:, column]
                top = rej.max()
                axis = np.linspace(0.0, top, n_grid)
                gap = _curve_on(rej, val, axis) - np.interp(axis, R, L)
                out.append([np.trapezoid(np.nan_to_num(gap), axis) if top > 0 else 0.0])
                out.append(_curve_on(rej, val, np.asarray(rates)))
        return np.concatenate([np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in out])

    return statistic, curves, r_axis


def summarise(
    result: TokenAnalysis,
    task: Optional[str] = None,
    *,
    losses: Sequence[str] = ("expected_01",),
    rates: Sequence[float] = (0.1, 0.2, 0.3),
    n_resamples: int = 1000,
    confidence: float = 0.95,
    n_grid: int = 201,
    seed: int = 0,
) -> dict:
    """Means with bootstrap intervals for the items of `task` (all items when None).

    Returns a dict: `points` (a list of `(curve, alpha)`), `mean`/`low`/`high` of shape
    `(points, stats)`; per loss in `losses`: `envelope` (mean/low/high on `rejection_axis`), the
    oracle's loss at `rates`, and per curve its `area` above the envelope and its loss at `rates`.
    A rate beyond a curve's reach (its verifier end) is NaN. Intervals: percentile bootstrap over
    items (`intervals.resample_items` and `intervals.percentile_interval`, `n_resamples`, seeded).
    """
    for loss in losses:
        if loss not in _ORACLE_COLUMNS:
            raise ValueError(f"unknown loss {loss!r}; choose from {', '.join(_ORACLE_COLUMNS)}.")
    tasks = np.asarray(result.tasks)
    members = np.flatnonzero(tasks == task) if task is not None else np.arange(len(tasks))
    if len(members) == 0:
        raise ValueError(f"no items of task {task!r}; tasks here: {', '.join(dict.fromkeys(result.tasks))}.")
    rates = np.asarray(rates, dtype=np.float64)
    statistic, curves, r_axis = _statistic_factory(result, members, tuple(losses), rates, n_grid)
    point, distribution = intervals.resample_items(
        statistic, len(members), n_resamples=n_resamples, seed=seed
    )
    low, high = intervals.percentile_interval(distribution, confidence)
    low, high = np.broadcast_to(low, point.shape), np.broadcast_to(high, point.shape)
    n_points, n_stats = len(result.grid.points), len(ta.STATS)
    cursor = [0]

    def take(n):
        s = slice(cursor[0], cursor[0] + n)
        cursor[0] += n
        return {"mean": point[s], "low": low[s], "high": high[s]}

    base = take(n_points * n_stats)
    out = {
        "task": task or "all",
        "items": int(len(members)),
        "positions": int(result.counts[members].sum()),
        "points": result.grid.points,
        "rates": rates.tolist(),
        "rejection_axis": r_axis,
        **{k: v.reshape(n_points, n_stats) for k, v in base.items()},
    }
    for loss in losses:
        entry = {"envelope": take(len(r_axis)), "oracle_at_rates": take(len(rates)), "curves": {}}
        for curve in curves:
            entry["curves"][curve] = {"area": take(1), "at_rates": take(len(rates))}
        out[loss] = entry
    return out


def table_rows(summary: dict, loss: str = "expected_01", digits: int = 4) -> List[dict]:
    """One row per curve (and the oracle): area above the envelope and loss at each matched rate,
    each as `mean [low, high]` text, from a `summarise` result."""

    def fmt(d, i=0):
        m, lo, hi = (float(np.atleast_1d(d[k])[i]) for k in ("mean", "low", "high"))
        if not np.isfinite(m):
            return "-"
        return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    entry = summary[loss]
    rows = [
        {
            "curve": "oracle envelope",
            "area": fmt({"mean": 0.0, "low": 0.0, "high": 0.0}),
            **{f"loss at R={r:g}": fmt(entry["oracle_at_rates"], i) for i, r in enumerate(summary["rates"])},
        }
    ]
    for curve, values in entry["curves"].items():
        rows.append(
            {
                "curve": curve,
                "area": fmt(values["area"]),
                **{f"loss at R={r:g}": fmt(values["at_rates"], i) for i, r in enumerate(summary["rates"])},
            }
        )
    return rows
