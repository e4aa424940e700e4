r"""Seconds of one `config_batch.generate_configs` chunk: the package at commit `--baseline`, and now.

The headline run (`gemma_rerun.py --profile headline`) decodes 49 configurations of 6 items in one
batch. Per chunk its forward passes took about 40% of the wall time (the rows' `drafter_time_s` and
`verifier_time_s` against `wall_time_s`); most of the rest was drawing tokens: every row draws each
token with `torch.multinomial` from its own generator, which makes $V$ exponential variates from one
sequential stream (about 5 ms on one core for Qwen's 152k vocabulary, single-threaded whatever
`torch.set_num_threads` says), and the laws were computed once per configuration, not once per
history. "Now" draws the rows in `torch.get_num_threads()` threads (`accept_reject.sample_each`),
computes each history's laws once per model and temperature, and skips the logits checks on trusted
laws at $T > 0$.

Each side runs in its own process (`--baseline`'s `tutorial_lib` from `git archive`, now's from this
checkout): it loads the pair, warms up on one configuration, then times `generate_configs` on the
first `--items` items of `--task` under every configuration of `--profile`, `--max-new-tokens` each.
Sides alternate which goes first, `--rounds` times; reported are the seconds per side and round, the
ratio baseline / now per round (median and range), and whether both sides emitted the same tokens and
traces (they must: each row draws from its own stream in the same order, and a history's softmax is
the same row of numbers whichever batch computes it).

    python benchmarks/config_batch_draws.py                      # headline, HumanEval, 2 items, 2 rounds
    python benchmarks/config_batch_draws.py --profile smoke --task code --items 2 --max-new-tokens 8
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE_COMMIT = "b21d3cd"


def worker(args) -> dict:
    """One side: load the pair, warm up, time one chunk; what it emitted as digests."""
    import torch

    import tutorial_lib
    from tutorial_lib.decoding.config_batch import generate_configs
    from tutorial_lib.sweeps import evaluation as ev
    from tutorial_lib.sweeps import reruns

    torch.set_num_threads(args.threads)
    settings = reruns.gemma_profile(args.profile)
    pair = reruns.load_gemma_pair(settings)
    task = next(t for t in reruns.gemma_tasks(settings) if t.name == args.task)
    options = []
    for config in reruns.gemma_configs(settings):
        o = config.engine_options()
        options.append({k: o[k] for k in ("method", "rule", "alpha", "beta", "temperature") if k in o})
    prompts = [ev.prompt_ids(pair.verifier, task, e) for e in task.examples[: args.items]]
    seeds = list(range(args.items))
    generate_configs(*pair, prompts[:1], options[:2], seeds=seeds[:1], max_new_tokens=2)  # warm-up
    tic = time.perf_counter()
    out = generate_configs(*pair, prompts, options, seeds=seeds, max_new_tokens=args.max_new_tokens)
    seconds = time.perf_counter() - tic
    tokens, trace = hashlib.sha256(), hashlib.sha256()
    for generations in out.generations:
        for g in generations:
            tokens.update(repr(g.tokens).encode())
            trace.update(repr([(s.token, s.q, s.p, s.pi, s.deferral) for s in g.trace]).encode())
    return dict(
        package=str(Path(tutorial_lib.__file__).parent.parent),
        seconds=seconds,
        rows=sum(len(g) for g in out.generations),
        tokens_emitted=sum(len(g.tokens) for gs in out.generations for g in gs),
        forward_s={
            w: sum(getattr(g, f"{w}_time_s") for gs in out.generations for g in gs)
            for w in ("drafter", "verifier")
        },
        tokens_sha=tokens.hexdigest(),
        trace_sha=trace.hexdigest(),
    )


def baseline_tree(commit: str, into: Path) -> Path:
    """`tutorial_lib` and the task sets it reads as they were at `commit`, unpacked under `into`."""
    archive = subprocess.check_output(
        ["git", "-C", str(REPO), "archive", commit, "tutorial_lib", "data/tasks"]
    )
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_side(path: Path, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path))
    command = [sys.executable, __file__, "--worker"] + [
        f"--{k.replace('_', '-')}={v}"
        for k, v in vars(args).items()
        if k not in ("worker", "out", "rounds", "baseline")
    ]
    result = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=str(REPO))
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="headline")
    parser.add_argument("--task", default="humaneval")
    parser.add_argument("--items", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", default=BASELINE_COMMIT)
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "config_batch_draws_cpu.json"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args)), flush=True)
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"baseline": baseline_tree(args.baseline, Path(tmp)), "now": REPO}
        for r in range(args.rounds):
            for side in ("baseline", "now") if r % 2 == 0 else ("now", "baseline"):
                out = dict(run_side(sides[side], args), side=side, round=r)
                if not out["package"].startswith(str(sides[side])):
                    raise RuntimeError(f"the {side} side imported tutorial_lib from {out['package']}")
                results.append(out)
                print(f"round {r} {side:>8}: {out['rows']} rows, {out['seconds']:.1f} s", flush=True)
    by = {(x["round"], x["side"]): x for x in results}
    ratios = [by[r, "baseline"]["seconds"] / by[r, "now"]["seconds"] for r in range(args.rounds)]
    same = {key: len({x[key] for x in results}) == 1 for key in ("tokens_sha", "trace_sha")}
    summary = dict(
        arguments={k: v for k, v in vars(args).items() if k != "worker"},
        cpu=_cpu(),
        load=os.getloadavg(),
        rounds=results,
        ratio_baseline_over_now=ratios,
        ratio_median=statistics.median(ratios),
        ratio_range=[min(ratios), max(ratios)],
        same_tokens=same["tokens_sha"],
        same_traces=same["trace_sha"],
    )
    print(
        f"baseline / now: median {summary['ratio_median']:.2f} (range {min(ratios):.2f}-{max(ratios):.2f}, "
        f"{args.rounds} rounds); same tokens: {same['tokens_sha']}, same traces: {same['trace_sha']}"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(f"written to {args.out}")


def _cpu() -> str:
    try:
        return next(
            line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")
        )
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
