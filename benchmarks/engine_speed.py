r"""How fast is the engine? Fixed gamma, gamma="auto", the verifier alone, and transformers' own, on the
kernel paths this machine measures fastest, against the bandwidth bound, one result per processor class.

Runs Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct (the offline pair; run
`make models-qwen` once) on three chat prompts, greedy (T = 0), batch size 1, 48 new tokens. The pair is
loaded on `--kernel-paths` (default `auto`: as `load_pair(..., dtype="auto")` loads it, so what a user
following the README gets is what this measures: the verifier on the fp32 path the probe of
`tutorial_lib.models.kernel_paths` finds cheapest for a block of 6 rows, bf16 only where the processor has
bf16 units; the drafter on the path whose generation costs least, `tutorial_lib.models.drafter_paths`,
every drafter path a candidate). Methods:

- ours: the verifier alone, speculative decoding at each fixed gamma, and `gamma="auto"`;
- transformers on the same weights and paths: greedy `generate`, and assisted generation with its default
  schedule (20 assistant tokens, confidence threshold 0.4; the drafter's generation config is restored
  after every call);
- transformers' greedy on the verifier as `from_pretrained` loads it (fp32, `F.linear`): what a user runs
  first.

First `gamma="auto"` meets the pair as a user's first call does: the stored quick calibration of this pair and
machine is deleted (`--keep-calibration` keeps it), and the time of that first call to the end of its first
block is measured. Then `tl.calibrate` measures $t_q$, $t_p(k)$ for k = 1..8 and the read bandwidth (the
predictions and the aims use it). Every method runs on every prompt in each round, in a shuffled order,
after a warm-up; the tables report medians with quartiles over (prompt, round) pairs of time ratios.
For each fixed gamma the block-cost model (`tutorial_lib.maths.latency`) predicts the speed-up,

$$\hat S(\gamma) = \frac{t_p(1)}{\bigl(\gamma t_q + t_p(\gamma+1)\bigr) (1 - a)/(1 - a^{\gamma+1})}
  \quad (\text{plus the prompt's prefill calls}),$$

beside the textbook $(1 - a^{\gamma+1}) / ((1 - a)(\gamma c + 1))$. The aims (`decoding.speed_tables.AIMS`)
are judged from the numbers in the JSON; where one is missed, the text says what stops it, in the run's
numbers (`speed_tables.aim_limits`, with the peak FLOP/s measured here). Lossless: at T = 0 every speculative
run must give our verifier's tokens. `--beside-heavy-job` runs the whole measurement while another process
keeps one core busy with matrix products (a laptop that is doing something else).

**One result per processor class.** The run records its processor's class (`models.processor_class`: vector
units avx2 / avx512 / amx, bf16 units, model name) and the read bandwidth it measured, and writes
`data/benchmarks/engine_speed_cpu_<class>.json` and `.md` (`_busy` beside a heavy job), so each class keeps
its own table and notebook 09 shows them side by side. With torch's kernels capped to a narrower class
(`ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`: `models.processor_class.isa_cap`) the file is
`engine_speed_cpu_avx2_capped`: that class's kernels at this machine's bandwidth.

    python benchmarks/engine_speed.py          # Qwen pair, 3 prompts x 3 rounds x 48 tokens
    python benchmarks/engine_speed.py --kernel-paths none --output /tmp/as_loaded   # the models as loaded
    python benchmarks/engine_speed.py --quick  # SmolLM2 verifying a perturbed copy, 2 prompts x 2 rounds
    python benchmarks/engine_speed.py --device cuda --dtypes bfloat16,float32 --kernel-paths none   # on a GPU
    python benchmarks/engine_speed.py --beside-heavy-job   # data/benchmarks/engine_speed_cpu_<class>_busy
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from tutorial_lib.decoding import gamma_policy, speed_runs, speed_tables
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.engine import calibrate, generate
from tutorial_lib.models import kernel_paths
from tutorial_lib.models.adapter import load_model
from tutorial_lib.models.processor_class import processor_class

REPO = Path(__file__).resolve().parent.parent
VERIFIER_ONLY, AUTO = "ours verifier-only", "ours gamma=auto"
HF_GREEDY, HF_DEFAULT = "HF greedy (same path)", "HF assisted (default schedule, same path)"
HF_GREEDY_PLAIN = "HF greedy (fp32 as loaded)"


def device_name(device: str) -> str:
    """The machine in words: the GPU's name, or the CPU's model and the threads torch uses."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(torch.device(device))} (CUDA {torch.version.cuda})"
    model = platform.processor() or platform.machine()
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    return f"{model}, {torch.get_num_threads()} threads"


def hf_method(drafter, verifier, *, assisted: bool, constant=None):
    """transformers' greedy `generate`, or assisted generation (`constant` fixes the assistant tokens)."""
    eos = verifier.eos_token_id
    pad = eos if isinstance(eos, int) else eos[0]

    def run(prompt, max_new_tokens):
        config = drafter.model.generation_config
        saved = {
            k: getattr(config, k, None)
            for k in (
                "num_assistant_tokens",
                "num_assistant_tokens_schedule",
                "assistant_confidence_threshold",
            )
        }
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
                out = verifier.model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    do_sample=False,
                    max_new_tokens=max_new_tokens,
                    eos_token_id=eos,
                    pad_token_id=pad,
                    **extra,
                )
            seconds = time.perf_counter() - start
        finally:
            for (
                key,
                value,
            ) in saved.items():  # the default schedule adapts these in place: start each call afresh
                setattr(config, key, value)
        return {"tokens": out[0, len(prompt) :].tolist(), "seconds": seconds}

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
    # the timed call below finds the stored copy: measure the whole path once more
    gamma_policy._CALIBRATIONS.clear()
    if path is not None and not keep:
        path.unlink(missing_ok=True)
    start = time.perf_counter()
    g = generate(
        drafter, verifier, prompt, method="speculative", gamma="auto", max_new_tokens=1, eos_token_id=()
    )
    return {
        "seconds": time.perf_counter() - start,
        "calibration_s": calibration_s,
        "first_gamma": g.gammas[:1],
    }


pairwise = speed_tables.pairwise_ratio


def pair_settings(args, dtype) -> dict:
    """The speed profile this run loads its pair with (`speed_runs.load_speed_pair`): `--kernel-paths auto`
    loads it as `load_pair(..., dtype="auto")` does."""
    paths = None if args.kernel_paths == "none" else tuple(args.kernel_paths.split(","))
    if paths is not None and len(paths) == 1:
        paths = paths[0] if paths[0] == "auto" else paths * 2
    return speed_runs.speed_profile(
        "default" if args.quick else "qwen",
        dtype=dtype,
        device=args.device,
        kernel_paths=paths,
        gammas=args.gammas,
    )


def benchmark_dtype(args, dtype):
    settings = pair_settings(args, dtype)
    pair = speed_runs.load_speed_pair(settings)
    drafter, verifier = pair
    on_paths = {
        role: getattr(lm, "kernel_path", None) or kernel_paths.path_of(lm.model)
        for role, lm in (("drafter", drafter), ("verifier", verifier))
    }
    print(f"[{dtype}] kernel paths: {on_paths}", flush=True)
    prompts = speed_runs.speed_prompts(verifier, args.prompts)
    context = int(statistics.median(len(p) for p in prompts.values())) + args.max_new_tokens // 2
    first_block = first_auto_block(pair, next(iter(prompts.values())), keep=args.keep_calibration)
    print(
        f"[{dtype}] first gamma='auto' call: {first_block['seconds']:.1f} s to its first block "
        f"(calibration {first_block['calibration_s']:.1f} s)",
        flush=True,
    )
    if args.calibration == "full":
        print(
            f"[{dtype}] calibrating {drafter.name} -> {verifier.name} (context {context} tokens)", flush=True
        )
        calibration = calibrate(
            pair, max_k=args.max_k, repeats=args.calibration_repeats, context_tokens=context
        )
    else:
        calibration = gamma_policy.calibration_for(drafter, verifier)
    options = dict(eos_token_id=verifier.eos_token_id)
    methods = {VERIFIER_ONLY: speed_runs.engine_method(pair, 0, **options)}
    methods.update(
        {f"ours spec gamma={g}": speed_runs.engine_method(pair, g, **options) for g in args.gammas}
    )
    methods[AUTO] = speed_runs.engine_method(pair, "auto", **options)
    methods[HF_GREEDY] = hf_method(drafter, verifier, assisted=False)
    methods[HF_DEFAULT] = hf_method(drafter, verifier, assisted=True)
    plain = None
    if on_paths["verifier"] != "fp32" and not args.no_plain_reference:
        # what a user runs first: transformers' greedy on the verifier as `from_pretrained` loads it
        plain = load_model(settings["verifier"], dtype=dtype, device=args.device)
        methods[HF_GREEDY_PLAIN] = hf_method(drafter, plain, assisted=False)
    for g in args.hf_constant:
        methods[f"HF assisted (constant {g})"] = hf_method(drafter, verifier, assisted=True, constant=g)
    rows = speed_runs.measure_speed(
        methods,
        prompts,
        max_new_tokens=args.max_new_tokens,
        repeats=args.rounds,
        reference=VERIFIER_ONLY,
        seed=args.seed,
    )
    rows.insert(0, "dtype", dtype)
    summary = speed_runs.summarise_speed(rows, calibration, reference=VERIFIER_ONLY)
    summary.insert(0, "dtype", dtype)
    fixed = [f"ours spec gamma={g}" for g in args.gammas]
    by_method = summary.set_index("method")
    best_fixed = max(fixed, key=lambda name: by_method.loc[name, "speedup"])
    plain_name = (
        HF_GREEDY_PLAIN if plain is not None else (HF_GREEDY if on_paths["verifier"] == "fp32" else None)
    )
    checks = {
        "kernel_paths": on_paths,
        "bf16_units": kernel_paths.cpu_has_bf16_units() if args.device == "cpu" else None,
        "methods": {
            "auto": AUTO,
            "verifier_only": VERIFIER_ONLY,
            "hf_greedy": HF_GREEDY,
            "hf_greedy_fp32": plain_name,
            "hf_assisted": HF_DEFAULT,
            "best_fixed": best_fixed,
        },
        "best_fixed": best_fixed,
        "auto_time_over_best_fixed": pairwise(rows, AUTO, best_fixed),
        "hf_default_time_over_auto": pairwise(rows, HF_DEFAULT, AUTO),
        "auto_time_over_hf_greedy": pairwise(rows, AUTO, HF_GREEDY),
        "verifier_only_time_over_hf_greedy": pairwise(rows, VERIFIER_ONLY, HF_GREEDY),
        "min_measured_over_expected": float(by_method.loc[fixed, "measured_over_expected"].min()),
        "auto_gammas": {
            int(g): int(n)
            for g, n in (rows.loc[rows["method"] == AUTO, "gammas"].explode().value_counts().items())
        },
    }
    checks["first_auto_block"] = first_block
    checks["peak_flops"] = kernel_paths.measure_peak_flops() if args.device == "cpu" else None
    checks["kernel_probes"] = {
        role: {"chosen": probe.chosen, "note": probe.note or probe.describe(), "seconds": probe.seconds}
        for role, lm in (("drafter", drafter), ("verifier", verifier))
        if (probe := getattr(lm, "kernel_probe", None)) is not None
    }
    last_auto = rows.loc[rows["method"] == AUTO].iloc[-1]
    checks["auto_learned_costs"] = last_auto["auto_costs"]
    for name in (
        [VERIFIER_ONLY] + fixed + [AUTO, HF_GREEDY, HF_DEFAULT] + ([HF_GREEDY_PLAIN] if plain else [])
    ):
        summary.loc[summary["method"] == name, "time_vs_hf_greedy"] = pairwise(rows, name, HF_GREEDY)[
            "median"
        ]
    return rows, summary, calibration, checks, str(verifier.device)


def markdown(result: dict) -> str:
    """The run's `.md`: what ran, the methods' table and the aims' table (verdicts from the numbers)."""
    args, pair = result["args"], result["pair"]
    lines = [
        f"# Engine speed: {pair[0]} drafting for {pair[1]}",
        "",
        f"Device: {result['device']}; processor class: {_class_words(result)}; beside it: "
        f"{result['beside']}. T = 0, {args['prompts']} prompts x "
        f"{args['rounds']} rounds in a shuffled order, {args['max_new_tokens']} new tokens, torch "
        f"{result['torch']}, {result['elapsed_s']:.0f} s in all. Kernel paths: "
        + "; ".join(f"{d}: {c['kernel_paths']}" for d, c in result["checks"].items())
        + ". Speed-ups: medians [quartiles] over (prompt, round) of our verifier-only time / the method's.",
        "",
    ]
    lines += [speed_tables.engine_speed_methods(result).to_markdown(index=False, floatfmt=".3g"), ""]
    lines += [speed_tables.engine_speed_aims(result).to_markdown(index=False, floatfmt=".3g"), ""]
    limits = speed_tables.aim_limits(result)
    if limits:
        lines += ["What stops each aim missed here:", ""] + [f"- {sentence}" for sentence in limits] + [""]
    for dtype, c in result["checks"].items():
        cal = Calibration.from_dict(result["calibration"][dtype])
        lines.append(
            f"{dtype}: t_q = {cal.t_q() * 1e3:.1f} ms, t_p(1) = {cal.t_p(1) * 1e3:.1f} ms (c = "
            f"{cal.cost_ratio:.3f}); t_p(k)/t_p(1), k = 1..{cal.max_k}: "
            + ", ".join(f"{cal.t_p(k) / cal.t_p(1):.2f}" for k in range(1, cal.max_k + 1))
            + f"; read bandwidth {cal.read_bandwidth / 1e9:.1f} GB/s; auto chose "
            + ", ".join(
                f"gamma {g}: {n}" for g, n in sorted(c["auto_gammas"].items(), key=lambda kv: int(kv[0]))
            )
            + "."
        )
    return "\n".join(lines)


def _class_words(result: dict) -> str:
    machine = result.get("processor_class")
    if not machine:
        return "not recorded"
    bandwidth = machine.get("read_bandwidth_gb_s")
    return (
        f"{machine['class']} (bf16 units: {'yes' if machine['bf16_units'] else 'no'}; {machine['model']}"
        + (f"; read bandwidth {bandwidth:.1f} GB/s" if bandwidth else "")
        + ")"
    )


def parse_args(argv=None):
    """The command line (`argv`, default `sys.argv[1:]`), checked and with its lists parsed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds over all prompts and methods (>= 2)")
    parser.add_argument("--prompts", type=int, default=3, help="how many of the four chat prompts")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--kernel-paths",
        default="auto",
        help="drafter,verifier kernel paths (models.kernel_paths), or 'auto' alone: as load_pair(..., "
        "dtype='auto') loads the pair; 'none': as loaded",
    )
    parser.add_argument(
        "--no-plain-reference",
        action="store_true",
        help="leave out transformers' greedy on the verifier as loaded (fp32, F.linear)",
    )
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--gammas", default="3,5,7", help="fixed block sizes")
    parser.add_argument(
        "--hf-constant", default="", help="also transformers with these constant assistant tokens"
    )
    parser.add_argument(
        "--max-k", type=int, default=8, help="calibrate t_p(k) for k = 1..max_k (auto: gamma < max_k)"
    )
    parser.add_argument("--calibration-repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--quick", action="store_true", help="SmolLM2-135M verifying a perturbed copy, 2 prompts, 48 tokens"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--calibration",
        choices=("quick", "full"),
        default="full",
        help="what the predictions use: gamma='auto''s stored quick calibration, or tl.calibrate's",
    )
    parser.add_argument(
        "--keep-calibration",
        action="store_true",
        help="time the first auto call with the stored quick calibration (default: delete it first)",
    )
    parser.add_argument(
        "--beside-heavy-job", action="store_true", help="measure while another process keeps one core busy"
    )
    parser.add_argument(
        "--beside",
        default=None,
        help="what else the machine ran meanwhile, recorded with the result (default: nothing else, "
        "or the heavy job of --beside-heavy-job)",
    )
    parser.add_argument(
        "--output",
        default=None,
        help="path stem (default data/benchmarks/engine_speed[_quick]_<device>, on a CPU "
        "engine_speed_cpu_<class>[_busy])",
    )
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: the spread over rounds is part of the result.")
    args.gammas = [int(g) for g in args.gammas.split(",") if g]
    args.hf_constant = [int(g) for g in args.hf_constant.split(",") if g]
    if args.quick:
        args.prompts, args.max_new_tokens = min(args.prompts, 2), min(args.max_new_tokens, 48)
    return args


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
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
    kind = device.split(":")[0]
    machine_class = None
    if kind == "cpu":
        machine_class = {**processor_class(), "read_bandwidth_gb_s": calibration.read_bandwidth / 1e9}
        capped = machine_class["isa_capped_to"]  # another class's kernels on this machine
        kind = f"cpu_{f'{capped}_capped' if capped else machine_class['class']}"
        kind += "_busy" if args.beside_heavy_job else ""
    stem = args.output or str(
        REPO / "data" / "benchmarks" / f"engine_speed{'_quick' if args.quick else ''}_{kind}"
    )
    pair = (calibration.drafter, calibration.verifier)
    beside = args.beside or (
        "a heavy job (another process keeping one core busy)" if args.beside_heavy_job else "nothing else"
    )
    result = {
        "pair": pair,
        "device": machine,
        "processor_class": machine_class,
        "beside": beside,
        "args": vars(args),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "elapsed_s": elapsed,
        "checks": checks,
        "calibration": {d: c.to_dict() for d, c in calibrations.items()},
        "table": summary.drop(columns=[], errors="ignore").to_dict(orient="records"),
        "runs": rows.to_dict(orient="records"),
    }
    result = json.loads(json.dumps(result, default=str))  # what the file holds, so the text reads it
    text = markdown(result)
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    Path(stem + ".json").write_text(json.dumps(result, indent=1))
    Path(stem + ".md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {stem}.json and .md in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
