r"""Rows per minute of the batched Gemma-style sweep: the path of commit `BASELINE_COMMIT`, and now.

"Before" is `tutorial_lib/batch.py` as it was at commit `BASELINE_COMMIT` (read from git and loaded
beside the package), in the loop `evaluation.run_sweep` ran then: per chunk of 16 items one prefill
(few-shot prefix included), then `generate_batch` once per configuration, finished rows fed masked
padding until the chunk's longest answer ends. "Now" is `evaluation.run_sweep` itself: per chunk of
items one prefill after the task's shared few-shot prefix, then every configuration in one batch
(`config_batch.generate_configs`: rows whose histories are equal share their forward passes,
finished rows leave the batch).

Workload: the profile's configurations (`--profile`, default `offline-all`) on the first `--items`
items of the task(s), every row's seed as in a sweep. A baseline round over all of them would take
most of an hour, so in round $r$ "before" decodes the configurations $r, r + S, r + 2S, \dots$
(`--before-share` $S \ge R$, default the number of rounds $R$: then over the rounds every
configuration once), "now" decodes them all, and which path goes
first alternates. Per round the ratio of rows per minute, now / before, is reported, and the median
and range over rounds. "Before" would amortise its prefill over more configurations in a whole
sweep, so its rate is also projected to all $C$ configurations from the measured parts,
$C n / (P + C \bar D)$ ($P$ the chunk prefills, $\bar D$ the mean decode seconds of a configuration),
and the ratio against that projection is reported too. Rows of the two paths are compared: equal
texts at $T = 0$ (where both must emit the same tokens) and at $T = 1$ (float noise may move a draw).

    python benchmarks/sweep_throughput.py                  # Qwen pair, fp32, arithmetic, 16 items, 2 rounds
    python benchmarks/sweep_throughput.py --tasks code,arithmetic --items 32 --rounds 3
    python benchmarks/sweep_throughput.py --profile smoke --items 4 --out /tmp/throughput  # checks the script
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps import reruns

REPO = Path(__file__).resolve().parent.parent
BASELINE_COMMIT = "d90a5d9"
BASELINE_BATCH = 16


def baseline_batch(commit: str = BASELINE_COMMIT):
    """`tutorial_lib/batch.py` at `commit`, loaded as the package's module `_batch_<commit>`."""
    source = subprocess.check_output(
        ["git", "-C", str(REPO), "show", f"{commit}:tutorial_lib/batch.py"], text=True
    )
    name = f"tutorial_lib._batch_{commit}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "tutorial_lib"
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    exec(compile(source, f"batch.py@{commit}", "exec"), module.__dict__)
    return module


def run_before(module, pair, tasks, configs, seed=0):
    """The sweep loop of `BASELINE_COMMIT`: prefill a chunk once, then one `generate_batch` per
    configuration."""
    prefill_s, decode_s, texts = 0.0, [], {}
    for task in tasks:
        for start in range(0, len(task.examples), BASELINE_BATCH):
            chunk = task.examples[start : start + BASELINE_BATCH]
            prompts = [ev.prompt_ids(pair.verifier, task, e) for e in chunk]
            tic = time.perf_counter()
            prefill = module.prefill_batch(*pair, prompts)
            prefill_s += time.perf_counter() - tic
            for config in configs:
                options = config.engine_options()
                options.pop("gamma"), options.pop("bonus", None)
                tic = time.perf_counter()
                out = module.generate_batch(
                    *pair,
                    prompts,
                    prefill=prefill,
                    max_new_tokens=task.max_new_tokens,
                    seeds=[seed + start + j for j in range(len(chunk))],
                    **options,
                )
                decode_s.append(time.perf_counter() - tic)
                texts.update({(task.name, config.key, e.id): g.text for e, g in zip(chunk, out)})
    return dict(
        prefill_s=prefill_s,
        decode_s=sum(decode_s),
        decode_s_per_config=decode_s,
        rows=len(texts),
        seconds=prefill_s + sum(decode_s),
        texts=texts,
    )


def run_now(pair, tasks, configs, items_per_chunk, seed=0):
    """`evaluation.run_sweep` with the batch runner, into a temporary results folder."""
    with tempfile.TemporaryDirectory() as root:
        tic = time.perf_counter()
        table = ev.run_sweep(
            pair,
            tasks,
            configs,
            name="throughput",
            seed=seed,
            runner="batch",
            batch_size=items_per_chunk,
            root=root,
            progress=False,
        )
        seconds = time.perf_counter() - tic
    texts = {(r.task, r.config, r.example_id): r.text for r in table.itertuples()}
    return dict(rows=len(texts), seconds=seconds, texts=texts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--profile", default="offline-all", help="the Gemma-style profile whose models and configurations run"
    )
    parser.add_argument("--tasks", default="arithmetic")
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--before-share",
        type=int,
        default=None,
        help="before decodes every S-th configuration per round (default: the number of rounds)",
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=40,
        help="answer limit (40: the offline profile's arithmetic limit, which keeps the baseline affordable)",
    )
    parser.add_argument(
        "--items-per-chunk", type=int, default=None, help="now's items per batch (default: the profile's)"
    )
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "sweep_throughput_cpu"))
    args = parser.parse_args()
    torch.manual_seed(0)
    settings = reruns.gemma_profile(
        args.profile,
        n_items=args.items,
        tasks=args.tasks.split(","),
        max_new_tokens={t: args.max_new_tokens for t in args.tasks.split(",")},
    )
    pair = reruns.load_gemma_pair(settings)
    tasks = reruns.gemma_tasks(settings)
    configs = reruns.gemma_configs(settings)
    per_chunk = args.items_per_chunk or settings["batch_size"]
    before_module = baseline_batch()

    # untimed: the first touch of the weights and the allocator's first large buffers belong to no path
    warm_tasks = [tasks[0].head(1)]
    run_now(pair, warm_tasks, configs[:2], 1)
    run_before(before_module, pair, warm_tasks, configs[:1])

    stride = args.before_share or args.rounds
    if stride < args.rounds:
        raise ValueError(
            f"--before-share {stride} < --rounds {args.rounds}: rounds would repeat configurations; "
            "give a share of at least the number of rounds."
        )
    results = []
    for r in range(args.rounds):
        share = configs[r::stride]
        order = ["before", "now"] if r % 2 == 0 else ["now", "before"]
        for path in order:
            if path == "before":
                out = run_before(before_module, pair, tasks, share)
                out["configurations"] = len(share)
                out["projected_rows_per_min"] = (
                    60
                    * len(configs)
                    * out["rows"]
                    / len(share)
                    / (out["prefill_s"] + len(configs) * statistics.mean(out["decode_s_per_config"]))
                )
            else:
                out = run_now(pair, tasks, configs, per_chunk)
                out["configurations"] = len(configs)
            out.update(round=r, path=path, rows_per_min=60 * out["rows"] / out["seconds"])
            results.append(out)
            print(
                f"round {r} {path:>6}: {out['configurations']} configurations, {out['rows']} rows in "
                f"{out['seconds']:.0f} s: {out['rows_per_min']:.1f} rows/min",
                flush=True,
            )

    ratios, projected, same = [], [], {0.0: [], 1.0: []}
    temperature = {c.key: c.temperature for c in configs}
    for r in range(args.rounds):
        before, now = (
            next(x for x in results if x["round"] == r and x["path"] == p) for p in ("before", "now")
        )
        ratios.append(now["rows_per_min"] / before["rows_per_min"])
        projected.append(now["rows_per_min"] / before["projected_rows_per_min"])
        for key, text in before["texts"].items():
            same[temperature[key[1]]].append(text == now["texts"][key])

    def spread(values):
        return dict(median=statistics.median(values), low=min(values), high=max(values), per_round=values)

    summary = dict(
        profile=args.profile,
        drafter=settings["drafter"],
        verifier=settings["verifier"],
        dtype=settings["dtype"],
        tasks=args.tasks,
        items=args.items,
        max_new_tokens=args.max_new_tokens,
        rounds=args.rounds,
        before_share=stride,
        configurations=len(configs),
        baseline_commit=BASELINE_COMMIT,
        baseline_batch=BASELINE_BATCH,
        items_per_chunk_now=per_chunk,
        torch_threads=torch.get_num_threads(),
        runs=[{k: v for k, v in x.items() if k != "texts"} for x in results],
        ratio=spread(ratios),
        ratio_to_projected_baseline=spread(projected),
        identical_rows={f"T={t:g}": f"{sum(v)}/{len(v)}" for t, v in same.items() if v},
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    temperatures = " and ".join(f"{t:g}" for t in settings["temperatures"])
    lines = [
        f"# Sweep throughput: now / before (commit {BASELINE_COMMIT})",
        "",
        f"{settings['drafter']} -> {settings['verifier']}, {settings['dtype']}, {torch.get_num_threads()} "
        f"threads; task(s) {args.tasks}, first {args.items} items each, at most {args.max_new_tokens} new "
        f"tokens; the `{args.profile}` profile's {len(configs)} configurations (T = {temperatures}). "
        f"Before: batch {BASELINE_BATCH}, one configuration at a time, a rotating 1/{stride} of the "
        "configurations per round. Now: `run_sweep`, "
        f"{per_chunk} items per chunk, all configurations in one batch. {args.rounds} rounds, alternating "
        "which path runs first.",
        "",
        "| round | path | configurations | rows | seconds | rows/min "
        "| before projected to all configurations |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['round']} | {x['path']} | {x['configurations']} | {x['rows']} | {x['seconds']:.0f} | "
        f"{x['rows_per_min']:.1f} | {x['projected_rows_per_min']:.1f} |"
        if x["path"] == "before"
        else f"| {x['round']} | {x['path']} | {x['configurations']} | {x['rows']} | {x['seconds']:.0f} | "
        f"{x['rows_per_min']:.1f} | |"
        for x in results
    ]
    lines += [
        "",
        f"Rows per minute, now / before: median {summary['ratio']['median']:.2f}x "
        f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}); against before projected to all "
        f"{len(configs)} configurations: median {summary['ratio_to_projected_baseline']['median']:.2f}x "
        f"(rounds: {', '.join(f'{x:.2f}' for x in projected)}).",
        "Identical rows between the paths (texts): "
        + ", ".join(f"{k}: {v}" for k, v in summary["identical_rows"].items())
        + ".",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-3:]))


if __name__ == "__main__":
    main()
