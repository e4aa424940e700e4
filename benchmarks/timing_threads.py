r"""How many torch threads should a timing use on a busy machine? Notebook 09's timing workload at each thread
count.

After one untimed pass at each thread count, each round times notebook 09's measurement
(`speed_runs.measure_speed`: the verifier alone and speculative decoding at the profile's $\gamma$, greedy)
once per thread count of `--threads`, the order rotating from round to round (each count goes first equally
often), so a machine whose load changes slows every thread count alike. It reports the wall time of each, the
ratio of each thread count's time to the first one's (median and range over rounds) and the speed-up of each
$\gamma$ over the verifier measured at each thread count, and what `speed_runs.use_free_cores` would have
chosen when the run started. `--beside-heavy-job N` starts another process running matrix products on `N`
threads for the whole run (a stand-in for a user's busy laptop); `--beside TEXT` names a load that is already
running (the committed run: beside the offline-large rerun).

    # the committed file
    python benchmarks/timing_threads.py --beside "the offline-large Gemma-style rerun (...)"
    python benchmarks/timing_threads.py --beside-heavy-job 2 --output /tmp/timing_threads_heavy
    python benchmarks/timing_threads.py --profile smoke --rounds 2 --output /tmp/timing_threads
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from tutorial_lib.decoding import speed_runs

REPO = Path(__file__).resolve().parent.parent


def summarise(runs: list, threads: list) -> dict:
    """Per thread count: median and range of its wall time, and of its time over the first count's in the
    same round."""
    by = {(r["round"], r["threads"]): r for r in runs}
    rounds = sorted({r["round"] for r in runs})
    out = {}
    for t in threads:
        seconds = [by[(k, t)]["seconds"] for k in rounds]
        ratio = [by[(k, t)]["seconds"] / by[(k, threads[0])]["seconds"] for k in rounds]
        speedups = {
            m: round(statistics.median(by[(k, t)]["speedup"][m] for k in rounds), 4)
            for m in by[(rounds[0], t)]["speedup"]
        }
        out[str(t)] = {
            "seconds_median": statistics.median(seconds),
            "seconds_min": min(seconds),
            "seconds_max": max(seconds),
            f"vs_{threads[0]}_median": round(statistics.median(ratio), 4),
            f"vs_{threads[0]}_min": round(min(ratio), 4),
            f"vs_{threads[0]}_max": round(max(ratio), 4),
            "speedup_over_verifier_median": speedups,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", choices=sorted(speed_runs.SPEED_PROFILES))
    parser.add_argument(
        "--threads", default="1,2", help="thread counts to compare, the first is the reference"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n-prompts", type=int, default=1)
    parser.add_argument(
        "--beside-heavy-job",
        type=int,
        default=0,
        metavar="N",
        help="run beside another process doing matrix products on N threads",
    )
    parser.add_argument("--beside", default="", help="what else runs on the machine (said in the result)")
    parser.add_argument(
        "--output",
        default=str(REPO / "data" / "benchmarks" / "timing_threads_cpu"),
        help="path without suffix; .json is written",
    )
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    if args.rounds < 1 or not threads or min(threads) < 1:
        parser.error("--rounds >= 1 and --threads a comma-separated list of whole numbers >= 1, e.g. 1,2")
    settings = speed_runs.speed_profile(args.profile, n_prompts=args.n_prompts)
    pair = speed_runs.load_speed_pair(settings)
    prompts = speed_runs.speed_prompts(pair.verifier, settings["n_prompts"])
    methods = {"verifier": speed_runs.engine_method(pair, 0, eos_token_id=())}
    methods.update(
        {f"gamma={g}": speed_runs.engine_method(pair, g, eos_token_id=()) for g in settings["gammas"]}
    )
    job = speed_runs.start_heavy_job(args.beside_heavy_job) if args.beside_heavy_job else None
    try:
        chosen = speed_runs.use_free_cores(None)
        busy = speed_runs.busy_cores()
        for t in threads:  # untimed: first calls (allocations, kernels' first use) at each count
            torch.set_num_threads(t)
            speed_runs.measure_speed(
                methods, prompts, max_new_tokens=settings["max_new_tokens"], repeats=1, progress=False
            )
        runs = []
        for k in range(args.rounds):
            for t in threads[k % len(threads) :] + threads[: k % len(threads)]:
                torch.set_num_threads(t)
                tic = time.perf_counter()
                rows = speed_runs.measure_speed(
                    methods, prompts, max_new_tokens=settings["max_new_tokens"], repeats=1, progress=False
                )
                seconds = time.perf_counter() - tic
                summary = speed_runs.summarise_speed(rows).set_index("method")
                runs.append(
                    {
                        "round": k,
                        "threads": t,
                        "seconds": round(seconds, 3),
                        "speedup": {m: round(float(summary.loc[m, "speedup"]), 4) for m in summary.index},
                    }
                )
                print(json.dumps(runs[-1]), flush=True)
    finally:
        if job is not None:
            job.terminate()
            job.join(5)
    beside = args.beside or (
        f"another process doing matrix products on {args.beside_heavy_job} threads"
        if args.beside_heavy_job
        else "nothing else started by the benchmark"
    )
    result = {
        "profile": args.profile,
        "drafter": settings["drafter"],
        "verifier": settings["verifier"],
        "prompts": len(prompts),
        "max_new_tokens": settings["max_new_tokens"],
        "gammas": settings["gammas"],
        "rounds": args.rounds,
        "threads": threads,
        "cores": os.cpu_count(),
        "beside": beside,
        "use_free_cores_chose": chosen,
        "busy_cores_at_start": round(busy, 2),
        "summary": summarise(runs, threads),
        "runs": runs,
    }
    path = Path(args.output).with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    print(f"-> {path}")


if __name__ == "__main__":
    main()
