r"""How fast is the engine? Our speculative decoding against the verifier alone and transformers' own.

Runs Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct (the offline pair; run
`make models-qwen` once) on four chat prompts, greedy (T = 0), batch size 1, 64 new tokens. Every
method runs on every prompt in each round, in a shuffled order, after a warm-up; a method's time is
divided by the verifier-only time of the same prompt and round, and the table reports medians of
those ratios (these machines are shared and noisy: absolute seconds drift, ratios much less).

Besides speed it reports the mean tokens per verifier call, the acceptance rate $a$ (accepted /
judged drafts), the drafter/verifier cost ratio per token $c$, and the speed-up that the standard
model of speculative decoding (Leviathan et al.) expects from them,

$$\text{expected speed-up} = \frac{1 - a^{\gamma + 1}}{(1 - a)(\gamma c + 1)},$$

and checks that lossless speculative decoding reproduces the verifier's greedy tokens (fp32: must be
equal; bf16: scoring several tokens at once rounds differently from one-token steps, so the first
diverging position is reported instead).

    python benchmarks/engine_speed.py                 # the full run (about 25 minutes here)
    python benchmarks/engine_speed.py --quick         # SmolLM2 against its bf16 copy, a minute
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from pathlib import Path

import torch

import tutorial_lib as tl

PROMPTS = {
    "code: reverse words": "Write a Python function that reverses the order of the words in a sentence, "
                           "with a docstring and two doctest examples.",
    "code: binary search": "Implement binary search over a sorted list in Python and explain its running time.",
    "maths: train": "A train travels 180 km in 2 hours and then 120 km in 1.5 hours. What is its average "
                    "speed over the whole trip? Show your working.",
    "explain: caching": "Explain to a new programmer what a cache is and why it makes programs faster.",
}
REPO = Path(__file__).resolve().parent.parent


def assisted(drafter, verifier, prompt, *, max_new_tokens, constant=None):
    """transformers' assisted generation, timed; `constant` fixes the number of assistant tokens."""
    config = drafter.model.generation_config
    saved = (config.num_assistant_tokens, config.num_assistant_tokens_schedule,
             getattr(config, "assistant_confidence_threshold", None))
    if constant is not None:
        config.num_assistant_tokens, config.num_assistant_tokens_schedule = constant, "constant"
        config.assistant_confidence_threshold = 0.0
    ids = torch.tensor([prompt])
    try:
        start = time.perf_counter()
        with torch.inference_mode():
            out = verifier.model.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=drafter.model,
                                          do_sample=False, max_new_tokens=max_new_tokens,
                                          eos_token_id=verifier.eos_token_id, pad_token_id=verifier.eos_token_id
                                          if isinstance(verifier.eos_token_id, int) else verifier.eos_token_id[0])
        seconds = time.perf_counter() - start
    finally:
        config.num_assistant_tokens, config.num_assistant_tokens_schedule = saved[0], saved[1]
        if saved[2] is not None:
            config.assistant_confidence_threshold = saved[2]
    return {"tokens": out[0, len(prompt):].tolist(), "seconds": seconds}


def ours(drafter, verifier, prompt, *, max_new_tokens, method, rule=None, alpha=0.0, gamma=5):
    g = tl.generate(drafter, verifier, prompt, method=method, rule=rule, alpha=alpha, gamma=gamma,
                    temperature=0.0, max_new_tokens=max_new_tokens)
    return {"tokens": g.tokens, "seconds": g.wall_time_s, "n_verifier_calls": g.n_verifier_calls,
            "n_accepted": g.n_accepted, "n_rejected": g.n_rejected, "rejection_rate": g.rejection_rate,
            "tokens_per_call": g.mean_accepted_per_call}


def methods_for(dtype, alpha_opt, quick):
    plain = {"verifier-only": dict(kind="ours", method="verifier"), "drafter-only": dict(kind="ours", method="drafter")}
    spec = {f"ours spec gamma={g}": dict(kind="ours", method="speculative", rule="spec", gamma=g)
            for g in ((3, 5, 7) if dtype == "bfloat16" else (5,))}
    extra = {}
    if dtype == "bfloat16":
        extra[f"ours opt alpha={alpha_opt:g} gamma=5"] = dict(kind="ours", method="speculative", rule="opt",
                                                            alpha=alpha_opt, gamma=5)
        extra["HF assisted (default schedule)"] = dict(kind="assisted", constant=None)
    extra["HF assisted (constant 5)"] = dict(kind="assisted", constant=5)
    return {**plain, **spec, **extra}


def run_method(spec, drafter, verifier, prompt, max_new_tokens):
    spec = dict(spec)
    kind = spec.pop("kind")
    if kind == "assisted":
        return assisted(drafter, verifier, prompt, max_new_tokens=max_new_tokens, **spec)
    return ours(drafter, verifier, prompt, max_new_tokens=max_new_tokens, **spec)


def calibrate_opt(drafter, verifier, prompt, max_new_tokens, target_rate):
    """The alpha of OPT whose rejection rate on one prompt is closest to SpecDecode's (gamma = 5)."""
    best = None
    for alpha in (-0.4, -0.2, -0.1, 0.0, 0.1):
        rate = ours(drafter, verifier, prompt, max_new_tokens=max_new_tokens, method="speculative", rule="opt",
                    alpha=alpha)["rejection_rate"]
        if best is None or abs(rate - target_rate) < abs(best[1] - target_rate):
            best = (alpha, rate)
    return best[0]


def first_divergence(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def expected_speedup(a, gamma, c):
    if a >= 1.0:
        return (gamma + 1) / (gamma * c + 1)
    return (1 - a ** (gamma + 1)) / ((1 - a) * (gamma * c + 1))


def benchmark_dtype(dtype, names, prompts, *, repeats, max_new_tokens, quick, seed):
    pair = tl.load_pair(*names, dtype=dtype if not quick else ("bfloat16", "float32"))
    drafter, verifier = pair
    prompt_ids = {label: verifier.chat_prompt(text) for label, text in prompts.items()}
    first = next(iter(prompt_ids.values()))
    # warm-up: every code path once (allocations, kernels, lazy imports)
    for spec in methods_for(dtype, 0.0, quick).values():
        run_method(spec, drafter, verifier, first, 8)
    alpha_opt = 0.0
    if dtype == "bfloat16":
        spec_rate = ours(drafter, verifier, first, max_new_tokens=max_new_tokens, method="speculative",
                         rule="spec")["rejection_rate"]
        alpha_opt = calibrate_opt(drafter, verifier, first, max_new_tokens, spec_rate)
    methods = methods_for(dtype, alpha_opt, quick)
    rows, rng = [], random.Random(seed)
    total = repeats * len(prompt_ids) * len(methods)
    done, start = 0, time.perf_counter()
    for repeat in range(repeats):
        for label, ids in prompt_ids.items():
            order = list(methods)
            rng.shuffle(order)
            for name in order:
                result = run_method(methods[name], drafter, verifier, ids, max_new_tokens)
                rows.append({"dtype": dtype, "repeat": repeat, "prompt": label, "method": name,
                             **{k: v for k, v in result.items()}})
                done += 1
                print(f"[{dtype}] {done}/{total} {name:<34} {label:<22} {result['seconds']:6.2f} s "
                      f"({time.perf_counter() - start:5.0f} s elapsed)", flush=True)
    return rows, alpha_opt, methods


def summarise(rows, methods, dtype):
    by_key = {(r["repeat"], r["prompt"], r["method"]): r for r in rows}
    rounds = sorted({(r["repeat"], r["prompt"]) for r in rows})
    reference = {k: by_key[k + ("verifier-only",)] for k in rounds}
    drafter = {k: by_key[k + ("drafter-only",)] for k in rounds}
    # c: the drafter's time per token over the verifier's, from the plain runs of the same round
    c = statistics.median((drafter[k]["seconds"] / max(len(drafter[k]["tokens"]), 1)) /
                          (reference[k]["seconds"] / max(len(reference[k]["tokens"]), 1)) for k in rounds)
    table = []
    for name in methods:
        runs = [by_key[k + (name,)] for k in rounds]
        time_ratio = statistics.median(r["seconds"] / reference[k]["seconds"] for r, k in zip(runs, rounds))
        row = {"dtype": dtype, "method": name, "median_seconds": statistics.median(r["seconds"] for r in runs),
               "median_time_vs_verifier": time_ratio, "median_speedup": 1.0 / time_ratio}
        divergences = [first_divergence(r["tokens"], reference[k]["tokens"]) for r, k in zip(runs, rounds)]
        if "spec" in name or "assisted" in name:
            row["identical_to_verifier"] = sum(d is None for d in divergences)
            row["first_divergences"] = [d for d in divergences if d is not None]
        if name.startswith("ours") and "gamma=" in name:
            accepted = sum(r["n_accepted"] for r in runs)
            judged = accepted + sum(r["n_rejected"] for r in runs)
            a = accepted / judged if judged else 1.0
            gamma = int(name.split("gamma=")[1])
            row.update(acceptance=a, tokens_per_call=sum(len(r["tokens"]) for r in runs) /
                       sum(r["n_verifier_calls"] for r in runs),
                       seconds_per_verifier_call=statistics.median(r["seconds"] / r["n_verifier_calls"] for r in runs),
                       rejection_rate=1 - a, expected_speedup=expected_speedup(a, gamma, c))
            row["measured_over_expected"] = row["median_speedup"] / row["expected_speedup"]
        table.append(row)
    return table, c


def markdown(table, c_by_dtype):
    lines = ["| dtype | method | median s | speed-up vs verifier | tokens / call | acceptance | expected | "
             "measured / expected | same tokens as verifier |", "|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        f = lambda key, fmt: (fmt.format(row[key]) if key in row else "")  # noqa: E731
        same = ""
        if "identical_to_verifier" in row:
            same = f"{row['identical_to_verifier']} runs"
            if row["first_divergences"]:
                same += f"; diverged at {sorted(row['first_divergences'])}"
        lines.append(f"| {row['dtype']} | {row['method']} | {row['median_seconds']:.2f} | "
                     f"{row['median_speedup']:.2f}x | {f('tokens_per_call', '{:.2f}')} | {f('acceptance', '{:.2f}')} | "
                     f"{f('expected_speedup', '{:.2f}x')} | {f('measured_over_expected', '{:.2f}')} | {same} |")
    lines.append("")
    lines.append("c (drafter / verifier time per token): " + ", ".join(f"{k} {v:.2f}" for k, v in c_by_dtype.items()))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="rounds over all prompts and methods")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--quick", action="store_true", help="SmolLM2-135M and its bf16 copy, 2 prompts, 1 round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=str(REPO / "data" / "benchmarks" / "engine_speed"))
    args = parser.parse_args()
    names = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    prompts = PROMPTS
    if args.quick:
        names, prompts = ("smollm2-135m", "smollm2-135m"), dict(list(PROMPTS.items())[:2])
        args.repeats, args.dtypes, args.max_new_tokens = 1, "bfloat16", 32
    started = time.perf_counter()
    rows, tables, c_by_dtype, alphas = [], [], {}, {}
    for dtype in args.dtypes.split(","):
        dtype_rows, alphas[dtype], methods = benchmark_dtype(dtype, names, prompts, repeats=args.repeats,
                                                             max_new_tokens=args.max_new_tokens, quick=args.quick,
                                                             seed=args.seed)
        table, c_by_dtype[dtype] = summarise(dtype_rows, methods, dtype)
        rows += dtype_rows
        tables += table
    elapsed = time.perf_counter() - started
    result = {"pair": names, "prompts": prompts, "repeats": args.repeats, "max_new_tokens": args.max_new_tokens,
              "temperature": 0.0, "threads": torch.get_num_threads(), "torch": torch.__version__,
              "machine": platform.machine(), "elapsed_s": elapsed, "opt_alpha": alphas, "c": c_by_dtype,
              "table": tables, "runs": rows}
    output = Path(args.output + ("_quick" if args.quick else ""))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(tables, c_by_dtype)
    output.with_suffix(".md").write_text(f"# Engine speed ({', '.join(names)})\n\n{text}\n\nTotal {elapsed:.0f} s.\n")
    print(text)
    print(f"\nwrote {output.with_suffix('.json')} and .md in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
