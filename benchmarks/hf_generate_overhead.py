r"""What the `model.generate(..., custom_generate=tl.speculative_cascade(...))` route costs
over `tl.generate`.

Both routes run the same decoding (the package's engine, one prompt at a time, greedy, the same rule,
$\alpha$ and $\gamma$), so their tokens must agree, and the difference is transformers' preparation around
the callable (the generation config, masks, logits processors and stopping criteria it builds, an empty
cache it never fills). After one untimed pass of each route, each round times both routes on every prompt,
interleaved: the prompts in a shuffled order, each prompt's two calls back to back in a shuffled order
(seeded), so a machine whose load drifts slows both alike. Reported: the ratio (generate() route over
tl.generate) of each round's total time, its median and quartiles over rounds.

    python benchmarks/hf_generate_overhead.py  # SmolLM2-135M, its first 16 layers drafting
    python benchmarks/hf_generate_overhead.py --pair qwen --rounds 5  # the Qwen2.5-Coder pair, when installed
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import tutorial_lib as tl
from tutorial_lib.stats import token_report

REPO = Path(__file__).resolve().parent.parent
PAIRS = {
    "smollm2": dict(drafter="smollm2-135m:layers=16", verifier="smollm2-135m"),
    "qwen": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b"),
}
MESSAGES = (
    "Explain in two sentences why the sky is blue.",
    "Write a Python function that reverses a string.",
    "Name three prime numbers and say why they are prime.",
)


def time_routes(pair, prompts, *, rule, alpha, gamma, max_new_tokens, rounds, seed):
    """Per round and route, the seconds of one call per prompt (order shuffled per round), and the tokens."""
    drafter, verifier = pair
    cascade = tl.speculative_cascade(rule, alpha, gamma=gamma)

    def library(prompt):
        return tl.generate(
            drafter,
            verifier,
            prompt,
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=gamma,
            max_new_tokens=max_new_tokens,
        ).tokens

    def transformers_route(prompt):
        ids = torch.tensor([prompt])
        out = verifier.model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            assistant_model=drafter.model,
            custom_generate=cascade,
            do_sample=False,
            max_new_tokens=max_new_tokens,
            pad_token_id=verifier.eos_token_id if isinstance(verifier.eos_token_id, int) else 0,
        )
        return out[0, len(prompt) :].tolist()

    routes = {"tl.generate": library, "model.generate(custom_generate=...)": transformers_route}
    for prompt in prompts:  # untimed: kernels, allocators, the wrappers' first build
        tokens = {name: route(prompt) for name, route in routes.items()}
        if len({tuple(t) for t in tokens.values()}) != 1:
            raise AssertionError(f"the routes disagree on a prompt: {tokens}")
    order_rng = random.Random(seed)
    runs = []
    for k in range(rounds):
        # the prompts in a shuffled order, each prompt's two routes back to back in a shuffled order
        jobs = []
        for i in order_rng.sample(range(len(prompts)), len(prompts)):
            jobs += [(name, i) for name in order_rng.sample(list(routes), len(routes))]
        seconds = dict.fromkeys(routes, 0.0)
        for name, i in jobs:
            tic = time.perf_counter()
            routes[name](prompts[i])
            seconds[name] += time.perf_counter() - tic
        runs.append({"round": k, "order": [f"{n}#{i}" for n, i in jobs], "seconds": seconds})
    return runs, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", default="smollm2", choices=sorted(PAIRS))
    parser.add_argument("--rule", default="token_v2")
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--beside", default="", help="what else runs on the machine (said in the result)")
    parser.add_argument(
        "--output",
        default=None,
        help="path without suffix (default data/benchmarks/hf_generate_overhead_<pair>); .json is written",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pair = token_report.load_profile_pair(PAIRS[args.pair])
    prompts = [pair.verifier.chat_prompt(m) for m in MESSAGES]
    runs, _ = time_routes(
        pair,
        prompts,
        rule=args.rule,
        alpha=args.alpha,
        gamma=args.gamma,
        max_new_tokens=args.max_new_tokens,
        rounds=args.rounds,
        seed=args.seed,
    )
    names = list(runs[0]["seconds"])
    ratios = [r["seconds"][names[1]] / r["seconds"][names[0]] for r in runs]
    q1, median, q3 = (float(x) for x in np.percentile(ratios, [25, 50, 75]))
    result = {
        "pair": PAIRS[args.pair],
        "rule": args.rule,
        "alpha": args.alpha,
        "gamma": args.gamma,
        "max_new_tokens": args.max_new_tokens,
        "prompts": len(prompts),
        "rounds": args.rounds,
        "threads": args.threads,
        "beside": args.beside,
        "machine": f"{platform.machine()} {platform.processor()}",
        "torch": torch.__version__,
        "ratio": {
            "median": median,
            "q1": q1,
            "q3": q3,
            "min": min(ratios),
            "max": max(ratios),
            "per_round": ratios,
        },
        "seconds_median": {n: statistics.median(r["seconds"][n] for r in runs) for n in names},
        "ratio_is": f"{names[1]} over {names[0]}, one round's total over the prompts",
        "runs": runs,
    }
    output = Path(args.output or REPO / "data" / "benchmarks" / f"hf_generate_overhead_{args.pair}")
    output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"{names[1]} / {names[0]}: median {median:.4f} [quartiles {q1:.4f}, {q3:.4f}] "
        f"over {args.rounds} rounds "
        f"({result['seconds_median'][names[0]]:.2f} s vs {result['seconds_median'][names[1]]:.2f} s "
        "per round); "
        f"wrote {output.with_suffix('.json')}"
    )


if __name__ == "__main__":
    main()
