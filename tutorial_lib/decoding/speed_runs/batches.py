"""Batches: one call's cost per batch size (`calibrate_batch`), tokens per second of `batch.generate_batch`
with the peak resident memory of each run (`measure_batch_speed`, `PeakMemory`), and the block-cost
model's rate beside each (`predict_batch_speed`)."""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from typing import List, Sequence

import pandas as pd
import torch

from ...maths import latency
from ..calibration import interleaved_rounds

__all__ = ["PeakMemory", "calibrate_batch", "measure_batch_speed", "predict_batch_speed"]


def _rss_mib() -> float:
    """The process's resident set size now, in MiB (Linux `/proc`; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


class PeakMemory:
    """`with PeakMemory() as m:` the process's resident memory at the start (`m.start_mib`) and its largest
    value while the block ran (`m.peak_mib`, sampled every 20 ms), in MiB."""

    def __enter__(self):
        self.start_mib = self.peak_mib = _rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak_mib = max(self.peak_mib, _rss_mib())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_mib = max(self.peak_mib, _rss_mib())


def calibrate_batch(
    pair,
    batch_sizes: Sequence[int],
    *,
    ks: Sequence[int],
    repeats: int = 3,
    context_tokens: int = 64,
    seed: int = 0,
    progress: bool = True,
) -> pd.DataFrame:
    """Seconds of one call on $B$ rows feeding $k$ tokens each, after `context_tokens` cached tokens per row:
    the verifier at every `k` of `ks` (all rows' logits kept, as a block is scored), the drafter at k = 1
    and 2 (one row of logits kept). The median over `repeats` rounds after a warm-up round, each round in
    a shuffled order. Columns: model, batch_size, k, seconds (and every sample in `samples`)."""
    from transformers import DynamicCache
    from ..shared_prefix import forward_rows

    drafter, verifier = pair
    generator = torch.Generator().manual_seed(seed)
    context = torch.randint(0, verifier.vocab_size, (1, context_tokens), generator=generator)
    extra = torch.randint(0, verifier.vocab_size, (1, max([*ks, 2])), generator=generator)
    caches, measurements = {}, {}
    for which, lm, sizes in (("drafter", drafter, (1, 2)), ("verifier", verifier, tuple(ks))):
        for b in batch_sizes:
            cache = DynamicCache()
            forward_rows(lm, cache, context.repeat(b, 1), torch.ones(b, context_tokens, dtype=torch.long))
            caches[which, b] = cache
            for k in sizes:

                def call(lm=lm, cache=cache, b=b, k=k, keep=(1 if which == "drafter" else k)):
                    mask = torch.ones(b, context_tokens + k, dtype=torch.long)
                    tic = time.perf_counter()
                    forward_rows(lm, cache, extra[:, :k].repeat(b, 1), mask, keep=keep)
                    seconds = time.perf_counter() - tic
                    cache.crop(-k)  # back to the context: every call sees the same cache
                    return seconds

                measurements[which, b, k] = call
    samples = interleaved_rounds(
        measurements, repeats, seed=seed, progress=progress, desc="calibrating batches"
    )
    table = pd.DataFrame(
        [
            dict(model=w, batch_size=b, k=k, seconds=statistics.median(v), samples=v)
            for (w, b, k), v in samples.items()
        ]
    )
    return table.sort_values(["model", "batch_size", "k"]).reset_index(drop=True)


def measure_batch_speed(
    pair,
    prompts: Sequence[List[int]],
    batch_sizes: Sequence[int],
    gammas: Sequence[int],
    *,
    max_new_tokens: int = 32,
    repeats: int = 1,
    seed: int = 0,
    progress: bool = True,
) -> pd.DataFrame:
    """Tokens per second of `batch.generate_batch` on the first $B$ prompts, for every $B$ of `batch_sizes`:
    the verifier alone (`gamma` 0) and speculative decoding (`rule="spec"`, $T = 0$, Algorithm 4's bonus
    token) at every `gammas`. Every (B, gamma) once per round, in a shuffled order; the prompts' prefill is
    made once per batch size, before the clock starts. One row per run: seconds, tokens, tokens_per_s,
    acceptance (kept / judged drafts), the peak and starting resident memory (MiB)."""
    from tqdm.auto import tqdm
    from ..batch import generate_batch, prefill_batch

    if max(batch_sizes) > len(prompts):
        raise ValueError(
            f"{len(prompts)} prompts for batch sizes up to {max(batch_sizes)}; pass at least as many."
        )
    drafter, verifier = pair
    runs = [(b, g) for b in batch_sizes for g in [0, *gammas]]
    # one prefill per batch size, shared by every run of it (`generate_batch` copies its caches)
    prefills = {b: prefill_batch(drafter, verifier, list(prompts[:b])) for b in batch_sizes}
    rng, rows = random.Random(seed), []
    bar = tqdm(total=len(runs) * repeats, desc="batch speed", disable=not progress)
    for round_ in range(repeats):
        order = list(runs)
        rng.shuffle(order)
        for b, gamma in order:
            batch, prefill = list(prompts[:b]), prefills[b]
            options = (
                dict(method="verifier")
                if gamma == 0
                else dict(method="speculative", rule="spec", gamma=gamma, bonus="verifier")
            )
            with PeakMemory() as memory:
                tic = time.perf_counter()
                out = generate_batch(
                    drafter,
                    verifier,
                    batch,
                    prefill=prefill,
                    temperature=0.0,
                    max_new_tokens=max_new_tokens,
                    eos_token_id=(),
                    **options,
                )
                seconds = time.perf_counter() - tic
            kept, judged = sum(g.n_accepted for g in out), sum(g.n_accepted + g.n_rejected for g in out)
            tokens = sum(len(g.tokens) for g in out)
            rows.append(
                dict(
                    round=round_,
                    batch_size=b,
                    gamma=gamma,
                    seconds=seconds,
                    tokens=tokens,
                    tokens_per_s=tokens / seconds,
                    acceptance=kept / judged if judged else float("nan"),
                    verifier_calls=max(g.n_verifier_calls for g in out),
                    peak_rss_mib=memory.peak_mib,
                    start_rss_mib=memory.start_mib,
                )
            )
            bar.update(1)
    bar.close()
    return pd.DataFrame(rows)


def predict_batch_speed(speed: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """`speed` (`measure_batch_speed`) with the block-cost model's tokens per second beside each run,
    `latency.batch_tokens_per_second` at the run's acceptance with the `costs` (`calibrate_batch`) of its
    batch size, and measured / predicted."""

    def cost(model, b, k):
        hit = costs[(costs.model == model) & (costs.batch_size == b) & (costs.k == k)]
        if hit.empty:
            raise ValueError(f"no calibrated {model} call for batch size {b} and k = {k}; calibrate it.")
        return float(hit.seconds.iloc[0])

    predicted = []
    for run in speed.itertuples():
        b, gamma = int(run.batch_size), int(run.gamma)
        a = 0.0 if gamma == 0 else float(run.acceptance)
        predicted.append(
            latency.batch_tokens_per_second(
                gamma,
                a,
                cost("drafter", b, 1),
                lambda k, b=b: cost("verifier", b, k),
                b,
                t_q2=cost("drafter", b, 2),
            )
        )
    out = speed.copy()
    out["predicted_tokens_per_s"] = predicted
    out["measured_over_predicted"] = out.tokens_per_s / out.predicted_tokens_per_s
    return out
