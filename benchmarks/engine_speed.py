r"""How fast is the engine? Fixed gamma, gamma="auto", the verifier alone, and transformers' own.

Runs Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct (the offline pair; run
`make models-qwen` once) on four chat prompts, greedy (T = 0), batch size 1, 64 new tokens:

- ours: the verifier alone, speculative decoding at each fixed gamma, and `gamma="auto"`;
- transformers: greedy `generate`, and assisted generation with its default schedule (20 assistant
  tokens, confidence threshold 0.4; the drafter's generation config is restored after every call).

First `gamma="auto"` meets the pair as a user's first call does: the stored quick calibration of this pair and
machine is deleted (`--keep-calibration` keeps it), and the time of that first call to the end of its first
block is measured (the quick calibration, `gamma_policy.calibration_for`, then the prefill and one block);
`gamma="auto"` then runs as users run it (`gamma="auto"`: the stored calibration, refined as it decodes),
and the block-cost model's predictions use the same calibration (`--calibration full` measures
`tl.calibrate`'s longer one for the predictions instead). Then every method
runs on every prompt in each round, in a shuffled order, after a warm-up; a method's time is divided by
the time of our verifier-only run on the same prompt and round, and the tables report medians with
quartiles over (prompt, round) pairs (these machines are shared and noisy: absolute seconds drift,
ratios much less). For each fixed gamma the block-cost model (`tutorial_lib.maths.latency`) predicts the
speed-up from the calibration and the measured acceptance $a$,

$$\hat S(\gamma) = \frac{t_p(1)}{\bigl(\gamma t_q + t_p(\gamma+1)\bigr) (1 - a)/(1 - a^{\gamma+1})}
  \quad (\text{plus the prompt's prefill calls}),$$

beside the textbook $(1 - a^{\gamma+1}) / ((1 - a)(\gamma c + 1))$, and "measured / expected" compares.
The checks: measured / expected >= 0.9 for every fixed gamma; `gamma="auto"` within 5% of the best fixed
gamma (pairwise time ratio); `gamma="auto"` at least as fast as transformers' default assisted schedule;
the first `gamma="auto"` call's first block within 30 s. Lossless: at fp32 every speculative run must give
our verifier's tokens. `--beside-heavy-job` runs the whole measurement while another process keeps one
core busy with matrix products (a laptop that is doing something else).

    python benchmarks/engine_speed.py                    # Qwen pair, fp32, 4 prompts x 2 rounds (longer than the 16.4 min that 3 prompts x 48 tokens took on 2 quiet cores)
    python benchmarks/engine_speed.py --quick            # SmolLM2 verifying a perturbed copy, 2 prompts x 2 rounds
    python benchmarks/engine_speed.py --device cuda --dtypes bfloat16,float32   # on a GPU
    python benchmarks/engine_speed.py --beside-heavy-job --output data/benchmarks/engine_speed_cpu_busy
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from tutorial_lib.decoding import gamma_policy, speed_runs, speed_text
from tutorial_lib.decoding.engine import calibrate, generate

REPO = Path(__file__).resolve().parent.parent
VERIFIER_ONLY, AUTO = "ours verifier-only", "ours gamma=auto"
HF_GREEDY, HF_DEFAULT = "HF greedy", "HF assisted (default schedule)"


def device_name(device: str) -> str:
    """The machine in words: the GPU's name, or the CPU's model and the threads torch uses."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA {torch.version.cuda})"
    model = platform.processor() or platform.machine()
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {torch.get_num_threads()} threads"


def hf_method(drafter, verifier, *, assisted: bool, constant=None):
    """transformers' greedy `generate`, or assisted generation (`constant` fixes the assistant tokens)."""
    eos = verifier.eos_token_id
    pad = eos if isinstance(eos, int) else eos[0]

    def run(prompt, max_new_tokens):
        config = drafter.model.generation_config
        saved = {k: getattr(config, k, None) for k in ("num_assistant_tokens", "num_assistant_tokens_schedule",
                                                       "assistant_confidence_threshold")}
        if constant is not None:
            config.num_assistant_tokens, config.num_assistant_tokens_schedule = constant, "constant"
            config.assistant_confidence_threshold = 0.0
        ids = torch.tensor([prompt], device=verifier.device)
        extra = dict(assistant_model=drafter.model) if assisted else {}
        try:
            if verifier.device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            with torch.inference_mode():
                out = verifier.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                              max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=pad, **extra)
            seconds = time.perf_counter() - start
        finally:
            for key, value in saved.items():   # the default schedule adapts these in place: start each call afresh
                setattr(config, key, value)
        return {"tokens": out[0, len(prompt):].tolist(), "seconds": seconds}
    return run


def first_auto_block(pair, prompt, *, keep: bool) -> dict:
    """Seconds from a first `generate(gamma="auto")` call to the end of its first block, calibration included
    (the stored quick calibration deleted first unless `keep`), and how long the calibration itself took."""
    drafter, verifier = pair
    path = gamma_policy.stored_calibration_path(drafter, verifier)
    if path is not None and path.exists() and not keep:
        path.unlink()
    gamma_policy._CALIBRATIONS.clear()
    start = time.perf_counter()
    gamma_policy.calibration_for(drafter, verifier)
    calibration_s = time.perf_counter() - start
    gamma_policy._CALIBRATIONS.clear()   # the timed call below finds the stored copy: measure the whole path once more
    if path is not None and not keep:
        path.unlink(missing_ok=True)
    start = time.perf_counter()
    g = generate(drafter, verifier, prompt, method="speculative", gamma="auto", max_new_tokens=1, eos_token_id=())
    return {"seconds": time.perf_counter() - start, "calibration_s": calibration_s, "first_gamma": g.gammas[:1]}


def pairwise(rows, numerator: str, denominator: str):
    """Median and quartiles over (round, prompt) of time(numerator) / time(denominator)."""
    t = rows.set_index(["round", "prompt", "method"])["seconds"]
    ratios = [t[(r, p, numerator)] / t[(r, p, denominator)] for r, p in sorted({k[:2] for k in t.index})]
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else (ratios[0],) * 3
    return {"median": statistics.median(ratios), "q25": q1, "q75": q3, "min": min(ratios), "max": max(ratios),
            "n": len(ratios)}


def benchmark_dtype(args, dtype):
    settings = speed_runs.speed_profile("default" if args.quick else "qwen", dtype=dtype, device=args.device)
    pair = speed_runs.load_speed_pair(settings)
    drafter, verifier = pair
    prompts = speed_runs.speed_prompts(verifier, args.prompts)
    context = int(statistics.median(len(p) for p in prompts.values())) + args.max_new_tokens // 2
    first_block = first_auto_block(pair, next(iter(prompts.values())), keep=args.keep_calibration)
    print(f"[{dtype}] first gamma='auto' call: {first_block['seconds']:.1f} s to its first block "
          f"(calibration {first_block['calibration_s']:.1f} s)", flush=True)
    if args.calibration == "full":
        print(f"[{dtype}] calibrating {drafter.name} -> {verifier.name} (context {context} tokens)", flush=True)
        calibration = calibrate(pair, max_k=args.max_k, repeats=args.calibration_repeats, context_tokens=context)
    else:
        calibration = gamma_policy.calibration_for(drafter, verifier)
    policy = "auto"
    options = dict(eos_token_id=verifier.eos_token_id)
    methods = {VERIFIER_ONLY: speed_runs.engine_method(pair, 0, **options)}
    methods.update({f"ours spec gamma={g}": speed_runs.engine_method(pair, g, **options) for g in args.gammas})
    methods[AUTO] = speed_runs.engine_method(pair, policy, **options)
    methods[HF_GREEDY] = hf_method(drafter, verifier, assisted=False)
    methods[HF_DEFAULT] = hf_method(drafter, verifier, assisted=True)
    for g in args.hf_constant:
        methods[f"HF assisted (constant {g})"] = hf_method(drafter, verifier, assisted=True, constant=g)
    rows = speed_runs.measure_speed(methods, prompts, max_new_tokens=args.max_new_tokens, repeats=args.rounds,
                                    reference=VERIFIER_ONLY, seed=args.seed)
    rows.insert(0, "dtype", dtype)
    summary = speed_runs.summarise_speed(rows, calibration, reference=VERIFIER_ONLY)
    summary.insert(0, "dtype", dtype)
    fixed = [f"ours spec gamma={g}" for g in args.gammas]
    by_method = summary.set_index("method")
    best_fixed = max(fixed, key=lambda name: by_method.loc[name, "speedup"])
    checks = {
        "best_fixed": best_fixed,
        "auto_time_over_best_fixed": pairwise(rows, AUTO, best_fixed),
        "hf_default_time_over_auto": pairwise(rows, HF_DEFAULT, AUTO),
        "auto_time_over_hf_greedy": pairwise(rows, AUTO, HF_GREEDY),
        "verifier_only_time_over_hf_greedy": pairwise(rows, VERIFIER_ONLY, HF_GREEDY),
        "min_measured_over_expected": float(by_method.loc[fixed, "measured_over_expected"].min()),
        "auto_gammas": {int(g): int(n) for g, n in
                        (rows.loc[rows["method"] == AUTO, "gammas"].explode().value_counts().items())},
    }
    checks["first_auto_block"] = first_block
    last_auto = rows.loc[rows["method"] == AUTO].iloc[-1]
    checks["auto_learned_costs"] = last_auto["auto_costs"]
    checks["pass"] = {
        "measured_over_expected_ge_0.9": checks["min_measured_over_expected"] >= 0.9,
        "auto_within_5pct_of_best_fixed": checks["auto_time_over_best_fixed"]["median"] <= 1.05,
        "auto_at_least_as_fast_as_hf_default": checks["hf_default_time_over_auto"]["median"] >= 1.0,
        "first_auto_block_within_30s": first_block["seconds"] <= 30.0,
    }
    for name in [VERIFIER_ONLY] + fixed + [AUTO, HF_GREEDY, HF_DEFAULT]:
        summary.loc[summary["method"] == name, "time_vs_hf_greedy"] = pairwise(rows, name, HF_GREEDY)["median"]
    return rows, summary, calibration, checks, str(verifier.device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds over all prompts and methods (>= 2)")
    parser.add_argument("--prompts", type=int, default=4, help="how many of the four chat prompts")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--gammas", default="1,3,5", help="fixed block sizes")
    parser.add_argument("--hf-constant", default="", help="also transformers with these constant assistant tokens")
    parser.add_argument("--max-k", type=int, default=8, help="calibrate t_p(k) for k = 1..max_k (auto: gamma < max_k)")
    parser.add_argument("--calibration-repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="SmolLM2-135M verifying a perturbed copy, 2 prompts, 48 tokens")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calibration", choices=("quick", "full"), default="quick",
                        help="what the predictions use: gamma='auto''s stored quick calibration, or tl.calibrate's")
    parser.add_argument("--keep-calibration", action="store_true",
                        help="time the first auto call with the stored quick calibration (default: delete it first)")
    parser.add_argument("--beside-heavy-job", action="store_true",
                        help="measure while another process keeps one core busy")
    parser.add_argument("--beside", default=None,
                        help="what else the machine ran meanwhile, recorded with the result (default: nothing else, "
                             "or the heavy job of --beside-heavy-job)")
    parser.add_argument("--output", default=None, help="path stem (default data/benchmarks/engine_speed[_quick]_<device>)")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: the spread over rounds is part of the result.")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.gammas = [int(g) for g in args.gammas.split(",") if g]
    args.hf_constant = [int(g) for g in args.hf_constant.split(",") if g]
    if args.quick:
        args.prompts, args.max_new_tokens = min(args.prompts, 2), min(args.max_new_tokens, 48)
    busy = speed_runs.start_heavy_job(1) if args.beside_heavy_job else None
    started = time.perf_counter()
    all_rows, summaries, checks, calibrations = [], [], {}, {}
    for dtype in args.dtypes.split(","):
        rows, summary, calibration, checks[dtype], device = benchmark_dtype(args, dtype)
        all_rows.append(rows)
        summaries.append(summary)
        calibrations[dtype] = calibration
    elapsed = time.perf_counter() - started
    if busy is not None:
        busy.terminate()
        busy.join(5)
    import pandas as pd
    summary, rows = pd.concat(summaries, ignore_index=True), pd.concat(all_rows, ignore_index=True)
    machine = device_name(device)
    stem = args.output or str(REPO / "data" / "benchmarks" /
                              f"engine_speed{'_quick' if args.quick else ''}_{device.split(':')[0]}")
    pair = (calibration.drafter, calibration.verifier)
    beside = args.beside or ("a heavy job (another process keeping one core busy)" if args.beside_heavy_job
                             else "nothing else")
    result = {"pair": pair, "device": machine, "beside": beside, "args": vars(args), "threads": torch.get_num_threads(),
              "torch": torch.__version__, "elapsed_s": elapsed, "checks": checks,
              "calibration": {d: c.to_dict() for d, c in calibrations.items()},
              "table": summary.drop(columns=[], errors="ignore").to_dict(orient="records"),
              "runs": rows.to_dict(orient="records")}
    result = json.loads(json.dumps(result, default=str))     # what the file holds, so the text reads as the README's
    text = speed_text.engine_speed_text(result)
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    Path(stem + ".json").write_text(json.dumps(result, indent=1))
    Path(stem + ".md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {stem}.json and .md in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
