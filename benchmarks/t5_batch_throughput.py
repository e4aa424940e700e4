r"""Rows per minute of the T5 sweep: today's path (one example at a time) against the batched one.

"Single" is `evaluation.run_sweep(..., runner="single")`, the path notebook 06 runs: `engine.generate`
once per (configuration, example), batch size 1. "Batch" is `run_sweep(..., runner="batch")`: per
chunk of `--batch-size` examples, one `batch.generate_batch` per configuration (speculative blocks
of $\gamma$ drafts per row, plain decoding, the token and sequence cascades, the original BiLD); every
curve of the T5 profiles batches (only the oracle and `bonus="target"` would stay one at a time).

Workload: the profile's configurations (`--profile`, default `offline`: the synthetic T5 pair, every
curve of the paper at $\gamma = 5$, $T \in \{0, 1\}$) on the first `--items` held-out sentences. Round
$r$ runs the configurations $r, r + S, r + 2S, \dots$ (`--share` $S$) through both paths, which path
goes first alternating, each into its own empty results folder; so over $S$ rounds every
configuration once. Per round: rows per minute of each path, their ratio (batch / single), the peak
resident memory of the process while each path ran (sampled every 20 ms, beside the memory at its
start), and whether the two paths wrote the same rows (texts and call counters) at $T = 0$ and
$T = 1$. The summary gives the median and range of the ratio over rounds.

    python benchmarks/t5_batch_throughput.py                          # offline pair, 32 items, 3 rounds
    python benchmarks/t5_batch_throughput.py --profile smoke --items 4 --rounds 1 --out /tmp/t5_batch
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps import reruns
from tutorial_lib.decoding.speed_runs import PeakMemory
from tutorial_lib.models import synthetic_t5

REPO = Path(__file__).resolve().parent.parent
COUNTERS = (
    "n_tokens",
    "n_verifier_calls",
    "n_drafter_calls",
    "n_drafted",
    "n_accepted",
    "n_rejected",
    "drafter_calls_by_k",
    "verifier_calls_by_k",
    "drafter_encoder_passes",
    "verifier_encoder_passes",
)


def run_path(pair, tasks, configs, runner: str, batch_size: int, seed: int = 0) -> dict:
    """One path over the configurations, into a fresh results folder: rows, seconds, memory, rows' results."""
    with tempfile.TemporaryDirectory() as root, PeakMemory() as memory:
        tic = time.perf_counter()
        table = ev.run_sweep(
            pair,
            tasks,
            configs,
            name="t5-throughput",
            seed=seed,
            runner=runner,
            batch_size=batch_size,
            root=root,
            progress=False,
        )
        seconds = time.perf_counter() - tic
    rows = {(r["task"], r["config"], r["example_id"]): r for r in table.to_dict("records")}
    return dict(
        path=runner,
        rows=len(rows),
        seconds=seconds,
        rows_per_min=60 * len(rows) / seconds,
        start_rss_mib=memory.start_mib,
        peak_rss_mib=memory.peak_mib,
        results=rows,
    )


def same_rows(a: dict, b: dict, temperature: float) -> dict:
    keys = [k for k, row in a["results"].items() if row["temperature"] == temperature]
    texts = sum(a["results"][k]["text"] == b["results"][k]["text"] for k in keys)
    counters = sum(all(str(a["results"][k][c]) == str(b["results"][k][c]) for c in COUNTERS) for k in keys)
    return dict(rows=len(keys), same_text=texts, same_counters=counters)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--share", type=int, default=8, help="round r runs configurations r, r + S, ...")
    parser.add_argument("--batch-size", type=int, default=32, help="the batched path's examples per batch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (notebook 06 uses 1)")
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "t5_batch_throughput_cpu"))
    args = parser.parse_args()
    if args.share < args.rounds:
        raise ValueError(
            f"--share {args.share} < --rounds {args.rounds}: rounds would repeat configurations."
        )
    torch.set_num_threads(args.threads)
    settings = reruns.t5_profile(args.profile, n_examples=args.items)
    budget = reruns.t5_training_budget(settings)
    if budget is not None:
        synthetic_t5.train_t5_pair(budget=budget, progress=False)  # cached: trains only where missing
    pair = reruns.load_t5_pair(settings)
    tasks = reruns.t5_tasks(settings)
    configs = reruns.t5_configs(settings)
    _, _, single_only = ev.batch_plan(configs, pair.verifier)

    # untimed: the first touch of the weights and the allocator's first buffers belong to neither path
    warm = [tasks[0].head(2)]
    run_path(pair, warm, configs[:3], "batch", args.batch_size)
    run_path(pair, warm, configs[:3], "single", args.batch_size)

    results = []
    for r in range(args.rounds):
        share = configs[r :: args.share]
        for runner in ("single", "batch") if r % 2 == 0 else ("batch", "single"):
            out = run_path(pair, tasks, share, runner, args.batch_size)
            out.update(round=r, configurations=len(share))
            results.append(out)
            print(
                f"round {r} {runner:>6}: {len(share)} configurations, "
                f"{out['rows']} rows in {out['seconds']:.0f} s: "
                f"{out['rows_per_min']:.0f} rows/min, peak RSS {out['peak_rss_mib']:.0f} MiB",
                flush=True,
            )

    ratios, agreement = [], {}
    for r in range(args.rounds):
        single, batch = (
            next(x for x in results if x["round"] == r and x["path"] == p) for p in ("single", "batch")
        )
        ratios.append(batch["rows_per_min"] / single["rows_per_min"])
        for temperature in settings["temperatures"]:
            got = same_rows(single, batch, temperature)
            total = agreement.setdefault(f"T={temperature:g}", dict(rows=0, same_text=0, same_counters=0))
            for key, value in got.items():
                total[key] += value

    def spread(values):
        return dict(median=statistics.median(values), low=min(values), high=max(values), per_round=values)

    summary = dict(
        profile=args.profile,
        drafter=settings["drafter"],
        verifier=settings["verifier"],
        items=args.items,
        gammas=settings["gammas"],
        temperatures=settings["temperatures"],
        configurations=len(configs),
        single_only_in_batch_path=[c.key for c in single_only],
        rounds=args.rounds,
        share=args.share,
        batch_size=args.batch_size,
        torch_threads=torch.get_num_threads(),
        runs=[{k: v for k, v in x.items() if k != "results"} for x in results],
        ratio=spread(ratios),
        identical_rows=agreement,
        peak_rss_mib={
            p: max(x["peak_rss_mib"] for x in results if x["path"] == p) for p in ("single", "batch")
        },
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    lines = [
        f"# T5 sweep throughput: batched / single ({args.profile} profile)",
        "",
        f"{settings['drafter']} -> {settings['verifier']}, {torch.get_num_threads()} thread(s); "
        f"first {args.items} "
        f"items; gamma {settings['gammas']}, T {settings['temperatures']}; {len(configs)} configurations, "
        f"1/{args.share} of them per round ({len(single_only)} stay one example at a time in the batched "
        f"path); batch size {args.batch_size}; {args.rounds} rounds, alternating which path runs "
        "first.",
        "",
        "| round | path | configurations | rows | seconds | rows/min | RSS at start (MiB) | peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['round']} | {x['path']} | {x['configurations']} | {x['rows']} | {x['seconds']:.0f} | "
        f"{x['rows_per_min']:.0f} | {x['start_rss_mib']:.0f} | {x['peak_rss_mib']:.0f} |"
        for x in results
    ]
    lines += [
        "",
        f"Rows per minute, batch / single: median {summary['ratio']['median']:.2f}x (range "
        f"{summary['ratio']['low']:.2f}-{summary['ratio']['high']:.2f}; rounds: "
        f"{', '.join(f'{x:.2f}' for x in ratios)}).",
        "Rows identical between the paths: "
        + "; ".join(
            f"{t}: texts {v['same_text']}/{v['rows']}, counters {v['same_counters']}/{v['rows']}"
            for t, v in agreement.items()
        )
        + ".",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-2:]))


if __name__ == "__main__":
    main()
