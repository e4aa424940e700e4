r"""Where speculation stops paying as the batch grows: tokens per second against batch size, measured and
predicted.

For each batch size $B$ (`--batch-sizes`, default 1, 2, 4, 8, 16) the first $B$ prompts are decoded by
`batch.generate_batch`: the verifier alone, and speculative decoding (`rule="spec"`, $T = 0$, bonus
token) at each $\gamma$ of `--gammas`, every run interleaved in a shuffled order per round
(`speed_runs.measure_batch_speed`), with the peak resident memory of each. Beside each measured rate,
the block-cost model's prediction (`latency.batch_tokens_per_second`) from the calls timed on $B$ rows
(`speed_runs.calibrate_batch`: $t_q(B)$, $t_q^{(2)}(B)$, $t_p(k, B)$) at the run's own acceptance.
The model prices the forward passes only; the rest (laws over the vocabulary, sampling, verification,
cache realignment) is the gap between the two.

The pair is loaded on `--kernel-paths` (default: the drafter int8-dynamic, the verifier on the path
`models.kernel_paths` measures cheapest here).

    python benchmarks/batch_speed.py                          # Qwen2.5-Coder 0.5B -> 1.5B, fp32, CPU
    python benchmarks/batch_speed.py --profile default        # SmolLM2-135M and a perturbed copy (c ~ 1)
    python benchmarks/batch_speed.py --profile smoke --batch-sizes 1,2 --out /tmp/batch_speed
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from tutorial_lib.decoding import speed_runs

REPO = Path(__file__).resolve().parent.parent
#: Sixteen requests of different lengths (so rows are padded and keep different numbers of drafts).
REQUESTS = [
    "Write a Python function that reverses the words of a sentence.",
    "Implement binary search over a sorted list in Python.",
    "What is 17 times 23? Show your working.",
    "Explain what a cache is to a new programmer.",
    "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring.",
    "A train travels 180 km in 2 hours. What is its average speed?",
    "Write a SQL query that counts the orders of each customer.",
    "Write a Python class for a stack with push, pop and peek.",
    "Explain the difference between a list and a tuple in Python.",
    "Write a function that checks whether a string is a palindrome, ignoring case and spaces.",
    "How many minutes are there in a week?",
    "Write a Python generator that yields prime numbers.",
    "Explain recursion with a short example.",
    "Write a function that merges two sorted lists into one sorted list.",
    "What does the `with` statement do in Python?",
    "Write a Python function that counts the vowels in a string.",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="qwen", help="a speed profile of notebook 09 (models, dtype)")
    parser.add_argument("--batch-sizes", default="1,2,4,8,16")
    parser.add_argument("--gammas", default="1,3,5")
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the whole grid, each shuffled")
    parser.add_argument("--calibration-repeats", type=int, default=3)
    parser.add_argument(
        "--kernel-paths",
        default="int8-dynamic,auto",
        help="drafter,verifier kernel paths (models.kernel_paths; 'none': the models as loaded)",
    )
    parser.add_argument(
        "--beside", default="nothing else", help="what else the machine ran meanwhile (recorded)"
    )
    parser.add_argument("--out", default=None, help="default: data/benchmarks/batch_speed_<profile>_cpu")
    args = parser.parse_args()
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    gammas = [int(g) for g in args.gammas.split(",")]
    paths = None if args.kernel_paths == "none" else tuple(args.kernel_paths.split(","))
    settings = speed_runs.speed_profile(
        args.profile, kernel_paths=paths if paths is None or len(paths) == 2 else paths * 2, gammas=gammas
    )
    pair = speed_runs.load_speed_pair(settings)
    from tutorial_lib.models import kernel_paths

    on_paths = {
        role: kernel_paths.path_of(lm.model)
        for role, lm in zip(("drafter", "verifier"), pair)
        if not getattr(lm, "is_toy", False)
    }
    verifier = pair.verifier
    if verifier.tokenizer is None:  # tiny random models: prompts of token ids
        prompts = [[(7 * i + j) % verifier.vocab_size for j in range(4 + i % 5)] for i in range(max(sizes))]
    else:
        prompts = [verifier.chat_prompt(text) for text in (REQUESTS * 4)[: max(sizes)]]
    # untimed: the first touch of the weights
    speed_runs.measure_batch_speed(pair, prompts, [1], gammas[:1], max_new_tokens=4, progress=False)
    costs = speed_runs.calibrate_batch(
        pair,
        sizes,
        ks=sorted({1, *[g + 1 for g in gammas]}),
        repeats=args.calibration_repeats,
        context_tokens=int(sum(map(len, prompts)) / len(prompts)) + args.max_new_tokens // 2,
    )
    speed = speed_runs.measure_batch_speed(
        pair, prompts, sizes, gammas, max_new_tokens=args.max_new_tokens, repeats=args.repeats
    )
    table = speed_runs.predict_batch_speed(speed, costs)
    summary = dict(
        profile=args.profile,
        drafter=settings["drafter"],
        verifier=settings["verifier"],
        dtype=settings["dtype"],
        device=settings["device"],
        torch_threads=torch.get_num_threads(),
        max_new_tokens=args.max_new_tokens,
        repeats=args.repeats,
        batch_sizes=sizes,
        gammas=gammas,
        beside=args.beside,
        kernel_paths=on_paths,
        costs=costs.drop(columns="samples").to_dict("records"),
        cost_samples=costs.to_dict("records"),
        runs=table.to_dict("records"),
    )
    out = Path(args.out or REPO / "data" / "benchmarks" / f"batch_speed_{args.profile}_cpu")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    mean = (
        table.groupby(["batch_size", "gamma"])
        .agg(
            tokens_per_s=("tokens_per_s", "median"),
            predicted=("predicted_tokens_per_s", "median"),
            acceptance=("acceptance", "median"),
            peak_rss_mib=("peak_rss_mib", "max"),
        )
        .reset_index()
    )
    lines = [
        f"# Tokens per second against batch size ({settings['drafter']} -> {settings['verifier']}, "
        f"{settings['dtype']}, {settings['device']}, {torch.get_num_threads()} threads, "
        f"kernel paths {on_paths})",
        "",
        f"{args.max_new_tokens} new tokens per row, T = 0, SpecDecode with a bonus token; "
        "gamma 0 is the verifier alone. "
        f"Median of {args.repeats} shuffled round(s); predicted: the block-cost model from calls timed on "
        "B rows, at the run's acceptance (forward passes only).",
        "",
        "| B | gamma | tokens/s | predicted | measured/predicted | acceptance | peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.batch_size} | {r.gamma} | {r.tokens_per_s:.2f} | {r.predicted:.2f} "
        f"| {r.tokens_per_s / r.predicted:.2f} "
        f"| {r.acceptance:.3f} | {r.peak_rss_mib:.0f} |"
        for r in mean.itertuples()
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
