r"""Rows per minute of the batched Gemma-style sweep: the path before the shared-prefix change, and now.

"Before" is `tutorial_lib/batch.py` as it was at commit `BASELINE_COMMIT` (read from git and loaded
beside the package): each chunk of items prefilled whole (few-shot prefix included, once per chunk
and reused by every configuration), finished rows fed masked padding until the chunk's longest
answer ends, batch size 16. "Now" is the package's `batch`: the few-shot prefix a task's items share
runs once per model and every chunk starts from a copy of its cache, finished rows leave the batch,
and the batch size comes from the step timing below.

1. **Step timing.** One decode step of both models (one token per row, after a prompt of the
   task) at each batch size, interleaved over rounds; medians. Tokens per second per batch size
   choose "now"'s batch size (the largest throughput; ties go to the smaller batch).
2. **Sweep.** Both paths run the same items, configurations, seeds and `max_new_tokens`, in the
   loop `evaluation.run_sweep` runs (per chunk: prefill once, then every configuration), alternating
   which path goes first in each round. Reported per round and path: prefill seconds, decode seconds
   per configuration, rows per minute; the ratio now / before per round, and its median and range.
   Because a real sweep reuses a chunk's prefill for all its configurations, the ratio also is
   projected for the profile's configuration count `C` from the measured parts,
   $(P_{\rm before} + C D_{\rm before}) / (P_{\rm now} + C D_{\rm now})$ (rows per minute).
   At T = 0 both paths should emit the same tokens: the share of identical rows is printed.

    python benchmarks/sweep_throughput.py                      # Qwen pair, fp32, arithmetic, 16 items, 2 rounds
    python benchmarks/sweep_throughput.py --tasks code,arithmetic --items 32 --rounds 3
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from tutorial_lib import batch as batch_now
from tutorial_lib import evaluation as ev
from tutorial_lib import reruns

REPO = Path(__file__).resolve().parent.parent
BASELINE_COMMIT = "d90a5d9"
CONFIGS = {"Verifier": None, "SpecDecode": None, "SpecCascade [Token-V2]": 0.1, "SpecCascade [OPT]": 0.0}


def baseline_batch(commit: str = BASELINE_COMMIT):
    """`tutorial_lib/batch.py` at `commit`, loaded as `tutorial_lib._batch_<commit>`."""
    source = subprocess.check_output(["git", "-C", str(REPO), "show", f"{commit}:tutorial_lib/batch.py"], text=True)
    name = f"tutorial_lib._batch_{commit}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "tutorial_lib"
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    exec(compile(source, f"batch.py@{commit}", "exec"), module.__dict__)
    return module


def configs(temperature: float):
    out = []
    for label, alpha in CONFIGS.items():
        grid = {label: [alpha]} if alpha is not None else None
        out += ev.sweep_configs([label], gammas=[1], temperatures=[temperature], n_alpha=2, alphas=grid, bonus="none")
    return out


def step_timing(pair, prompt, batch_sizes, rounds):
    """Median seconds of one decode step of both models per batch size, after `prompt` (its cache
    repeated b times: a step costs the same whatever the rows hold)."""
    import copy
    prefill = batch_now.prefill_batch(*pair, [prompt])
    chunk = prefill.chunks[0]
    times = {b: [] for b in batch_sizes}
    for _ in range(rounds):
        for b in random.sample(list(batch_sizes), len(batch_sizes)):
            last = torch.full((b, 1), prompt[-1])
            mask = torch.ones(b, chunk.mask.shape[1] + 1, dtype=chunk.mask.dtype)
            elapsed = 0.0
            for which, lm in (("drafter", pair.drafter), ("verifier", pair.verifier)):
                cache = copy.deepcopy(chunk.caches[which])
                cache.batch_repeat_interleave(b)
                tic = time.perf_counter()
                batch_now._forward(lm, cache, last, mask)
                elapsed += time.perf_counter() - tic
            times[b].append(elapsed)
    return {b: statistics.median(t) for b, t in times.items()}


def run_path(module, pair, tasks, config_list, batch_size, seed=0):
    """`evaluation.run_sweep`'s batch loop with `module` as the batch runner; timings and tokens."""
    prefill_s, decode_s, rows, tokens = 0.0, 0.0, 0, {}
    for task in tasks:
        for start in range(0, len(task.examples), batch_size):
            chunk = task.examples[start:start + batch_size]
            prompts = [ev.prompt_ids(pair.verifier, task, e) for e in chunk]
            tic = time.perf_counter()
            prefill = module.prefill_batch(*pair, prompts)
            prefill_s += time.perf_counter() - tic
            for config in config_list:
                options = config.engine_options()
                options.pop("gamma"), options.pop("bonus", None)
                tic = time.perf_counter()
                out = module.generate_batch(*pair, prompts, prefill=prefill, seeds=[seed + start + j for j in range(len(chunk))],
                                            max_new_tokens=task.max_new_tokens, **options)
                decode_s += time.perf_counter() - tic
                rows += len(out)
                for e, g in zip(chunk, out):
                    tokens[(task.name, config.key, e.id)] = g.tokens
    return dict(prefill_s=prefill_s, decode_s=decode_s, rows=rows, rows_per_min=60 * rows / (prefill_s + decode_s),
                tokens=tokens)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="arithmetic")
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch-sizes", default="8,16,32,64")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--profile-configs", type=int, default=None,
                        help="configurations per chunk in the full profile (default: the offline profile's)")
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "sweep_throughput_cpu"))
    args = parser.parse_args()
    torch.manual_seed(0)
    random.seed(0)
    settings = reruns.gemma_profile("offline", n_items=args.items, tasks=args.tasks.split(","))
    pair = reruns.load_gemma_pair(settings)
    tasks = reruns.gemma_tasks(settings)
    config_list = configs(args.temperature)
    n_profile = args.profile_configs or len(reruns.gemma_configs(reruns.gemma_profile("offline")))
    before = baseline_batch()

    sizes = [int(b) for b in args.batch_sizes.split(",")]
    steps = step_timing(pair, ev.prompt_ids(pair.verifier, tasks[0], tasks[0].examples[0]), sizes, 3 * args.rounds)
    per_token = {b: steps[b] / b for b in sizes}
    chosen = min(sizes, key=lambda b: (round(per_token[b], 4), b))
    print("decode step, both models:", ", ".join(f"b={b}: {steps[b]:.2f} s ({b / steps[b]:.1f} rows/s)" for b in sizes))
    print(f"batch size now: {chosen}")

    results = []
    for r in range(args.rounds):
        order = [("before", before, 16), ("now", batch_now, chosen)]
        if r % 2:
            order.reverse()
        for name, module, size in order:
            out = run_path(module, pair, tasks, config_list, size)
            results.append(dict(round=r, path=name, batch_size=size, **{k: v for k, v in out.items() if k != "tokens"}))
            results[-1]["_tokens"] = out["tokens"]
            print(f"round {r} {name:>6}: prefill {out['prefill_s']:.0f} s, decode {out['decode_s']:.0f} s "
                  f"({out['decode_s'] / len(config_list):.0f} s per configuration), {out['rows_per_min']:.1f} rows/min")

    ratios, projected = [], []
    for r in range(args.rounds):
        b, n = (next(x for x in results if x["round"] == r and x["path"] == p) for p in ("before", "now"))
        ratios.append(n["rows_per_min"] / b["rows_per_min"])
        per_config = {x["path"]: (x["prefill_s"], x["decode_s"] / len(config_list)) for x in (b, n)}
        cost = {p: per_config[p][0] + n_profile * per_config[p][1] for p in per_config}
        projected.append(cost["before"] / cost["now"])
    same = [results[0]["_tokens"][k] == x["_tokens"].get(k) for x in results[1:2] for k in results[0]["_tokens"]]
    summary = dict(
        tasks=args.tasks, items=args.items, rounds=args.rounds, temperature=args.temperature,
        configurations=[c.key for c in config_list], profile_configurations=n_profile,
        step_seconds={str(b): steps[b] for b in sizes}, batch_size_now=chosen, baseline_commit=BASELINE_COMMIT,
        runs=[{k: v for k, v in x.items() if k != "_tokens"} for x in results],
        ratio=dict(median=statistics.median(ratios), low=min(ratios), high=max(ratios), per_round=ratios),
        projected_ratio=dict(median=statistics.median(projected), low=min(projected), high=max(projected)),
        identical_rows=f"{sum(same)}/{len(same)}", torch_threads=torch.get_num_threads())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    lines = [f"# Sweep throughput: now / before (commit {BASELINE_COMMIT})", "",
             f"Qwen2.5-Coder 0.5B -> 1.5B, fp32, {torch.get_num_threads()} threads; task(s) {args.tasks}, "
             f"{args.items} items each, T = {args.temperature:g}, {len(config_list)} configurations, {args.rounds} rounds "
             "(alternating which path runs first).", "",
             "| batch size | decode step (both models) | rows per second |", "|---|---|---|"]
    lines += [f"| {b} | {steps[b]:.2f} s | {b / steps[b]:.1f} |" for b in sizes]
    lines += ["", "| round | path | batch | prefill s | decode s | rows/min |", "|---|---|---|---|---|---|"]
    lines += [f"| {x['round']} | {x['path']} | {x['batch_size']} | {x['prefill_s']:.0f} | {x['decode_s']:.0f} | "
              f"{x['rows_per_min']:.1f} |" for x in results]
    lines += ["", f"Rows per minute, now / before: median {summary['ratio']['median']:.2f}x "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}).",
              f"Projected for a sweep of {n_profile} configurations per chunk (prefill once, decode per configuration): "
              f"median {summary['projected_ratio']['median']:.2f}x (range {min(projected):.2f}-{max(projected):.2f}).",
              f"Identical rows between the paths (round 0 before vs now): {summary['identical_rows']}."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-3:]))


if __name__ == "__main__":
    main()
