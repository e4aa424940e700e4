r"""What each kernel path costs the Qwen pair's calls here, against the memory-bandwidth bound.

For every path of `tutorial_lib.models.kernel_paths` (the verifier: fp32, fp32-gemv, fp32-packed, and bf16
where the processor has bf16 units or `--bf16` asks for it; the drafter also int8-dynamic) this times the
whole model fed k tokens on top of a 64-token context (k rows kept, as the engine's verifier call; the cache
cropped back after each call), k = 1, 2, 3, 4, 6, 8. One round runs every (model, path, k) once in a shuffled
order; medians and quartiles over rounds after a warm-up round. Beside each: t(k) / t(1), and t(1) as a
multiple of the bound (the path's bytes of weights over the read bandwidth measured in the same run: a sum
over 1 GiB of fp32 on torch's threads).
Then the probe's choice (`kernel_paths.probe_paths` on a sample of the verifier's layers, the quick
measurement `load_pair(..., dtype="auto")` makes) is set beside the full model's cheapest path, and the
drafter's cost ratio c = t_q / t_p(1) and greedy acceptance (SpecDecode, gamma 5, 3 prompts x 48 tokens)
are reported for each drafter path against the verifier's chosen path: a cheaper drafter must keep its
acceptance to pay.

    python benchmarks/kernel_paths.py                      # Qwen pair (make models-qwen), 7 rounds
    python benchmarks/kernel_paths.py --pair smollm2 --rounds 2 --output /tmp/kp   # checks the script
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from tutorial_lib import models
from tutorial_lib.decoding.engine import generate
from tutorial_lib.models import kernel_paths as kp
from tutorial_lib.models.processor_class import class_name

REPO = Path(__file__).resolve().parents[1]
PAIRS = {"qwen": ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"), "smollm2": ("smollm2-135m", "smollm2-135m")}
KS = (1, 2, 3, 4, 6, 8)
PROMPTS = (
    "Write a Python function that returns the n-th Fibonacci number.",
    "Write a Python function that checks whether a string is a palindrome.",
    "Write a Python function that merges two sorted lists into one sorted list.",
)


def _context(lm, n: int, seed: int) -> list:
    generator = random.Random(seed)
    return [generator.randrange(100, 20000) for _ in range(n)]


def _quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return [q[0], q[2]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", choices=sorted(PAIRS), default="qwen")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument(
        "--output",
        default=str(REPO / "data" / "benchmarks" / f"kernel_paths_cpu_{class_name()}"),
        help="path stem (default: data/benchmarks/kernel_paths_cpu_<processor class>)",
    )
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="time bf16 also without bf16 units (another copy of each model: 26 GB for the Qwen pair)",
    )
    args = parser.parse_args()
    run_bf16 = args.bf16 or kp.cpu_has_bf16_units()
    verifier_paths = [p for p in kp.VERIFIER_PATHS if run_bf16 or p != "bf16"]
    # The drafter's calls are of 1 or 2 rows, where fp32 is already at its bound; a packed copy would only
    # take memory (the Qwen pair's copies fill 19 GB as it is).
    drafter_paths = [p for p in kp.DRAFTER_PATHS if (run_bf16 or p != "bf16") and p != "fp32-packed"]

    drafter_name, verifier_name = PAIRS[args.pair]
    base = models.load_pair(drafter_name, verifier_name, dtype=torch.float32)
    bandwidth = kp.measure_read_bandwidth()
    print(f"read bandwidth: {bandwidth / 1e9:.1f} GB/s on {torch.get_num_threads()} threads", flush=True)
    holders = {}  # (role, path) -> LanguageModel
    for role, lm in (("drafter", base.drafter), ("verifier", base.verifier)):
        paths = drafter_paths if role == "drafter" else verifier_paths
        for path in paths:
            if path in ("fp32", "fp32-gemv"):
                holders[(role, path)] = lm  # one set of fp32 weights, the patch toggled per call
            else:  # int8-dynamic quantises a copy; the others change the weights in place
                copy_lm = copy.copy(lm)
                own = path in ("bf16", "fp32-packed")
                copy_lm.model = kp.apply_path(copy.deepcopy(lm.model) if own else lm.model, path)
                holders[(role, path)] = copy_lm
    context = _context(base.verifier, args.context, 0)
    extra = _context(base.verifier, max(KS), 1)
    sessions = {}
    for key, lm in holders.items():
        kp.apply_path(lm.model, key[1]) if key[1] in ("fp32", "fp32-gemv") else None
        session = lm.start(context)
        session.feed(context, keep=1)
        sessions[key] = session
    samples = {key: {k: [] for k in KS} for key in holders}
    order = [(key, k) for key in holders for k in KS if key[0] == "verifier" or k <= 2]
    shuffle = random.Random(0)
    for round_index in tqdm(range(args.rounds + 1), desc="rounds"):
        shuffle.shuffle(order)
        for key, k in order:
            lm, session = holders[key], sessions[key]
            if key[1] in ("fp32", "fp32-gemv"):
                kp.apply_path(lm.model, key[1])
            length = session.length
            start = time.perf_counter()
            session.feed(extra[:k], keep=k)
            seconds = time.perf_counter() - start
            session.crop(length)
            if round_index:
                samples[key][k].append(seconds)
    results = {}
    for key, by_k in samples.items():
        lm = holders[key]
        if key[1] in ("fp32", "fp32-gemv"):
            kp.apply_path(lm.model, key[1])
        bound = kp.bound_seconds(lm.model, bandwidth)
        medians = {k: statistics.median(v) for k, v in by_k.items() if v}
        results[f"{key[0]} {key[1]}"] = {
            "role": key[0],
            "path": key[1],
            "weight_bytes": kp.weight_bytes(lm.model),
            "bound_s": bound,
            "t_s": medians,
            "t_quartiles_s": {k: _quartiles(v) for k, v in by_k.items() if v},
            "t_over_t1": {k: medians[k] / medians[1] for k in medians},
            "t1_over_bound": medians[1] / bound,
        }
        row = results[f"{key[0]} {key[1]}"]
        ratios = ", ".join(f"{k}: {row['t_over_t1'][k]:.2f}" for k in medians if k > 1)
        print(
            f"{key[0]:8s} {key[1]:12s} t(1) {1000 * medians[1]:7.1f} ms = {row['t1_over_bound']:.2f} x bound "
            f"({1000 * bound:.1f} ms); t(k)/t(1) {ratios}",
            flush=True,
        )

    probe = kp.choose_path(
        kp.probe_paths(
            base.verifier.model
            if kp.path_of(base.verifier.model) != "int8-dynamic"
            else holders[("verifier", "fp32")].model
        ),
        gamma=5,
    )
    full_best = min(verifier_paths, key=lambda p: results[f"verifier {p}"]["t_s"][6])
    print(f"probe: {probe.describe()}; the full model's cheapest block of 6 rows: {full_best}", flush=True)
    verifier_path = probe.chosen
    verifier = holders[("verifier", verifier_path)]
    kp.apply_path(verifier.model, verifier_path) if verifier_path in ("fp32", "fp32-gemv") else None
    drafters = {}
    for path in drafter_paths:
        drafter = holders[("drafter", path)]
        if path in ("fp32", "fp32-gemv"):
            kp.apply_path(drafter.model, path)
        accepted = rejected = 0
        for prompt in PROMPTS:
            ids = verifier.chat_prompt(prompt) if verifier.tokenizer is not None else list(prompt.encode())
            g = generate(
                drafter,
                verifier,
                ids,
                method="speculative",
                rule="spec",
                gamma=5,
                max_new_tokens=args.tokens,
                eos_token_id=(),
            )
            accepted, rejected = accepted + g.n_accepted, rejected + g.n_rejected
        c = results[f"drafter {path}"]["t_s"][1] / results[f"verifier {verifier_path}"]["t_s"][1]
        drafters[path] = {
            "acceptance": accepted / max(1, accepted + rejected),
            "drafted": accepted + rejected,
            "c": c,
        }
        print(
            f"drafter {path:12s}: acceptance {drafters[path]['acceptance']:.3f} "
            f"of {accepted + rejected} drafts, "
            f"c = {c:.3f} (against the verifier on {verifier_path})",
            flush=True,
        )
    summary = {
        "pair": [drafter_name, verifier_name],
        "rounds": args.rounds,
        "context_tokens": args.context,
        "threads": torch.get_num_threads(),
        "machine": kp.machine_key(),
        "bf16_units": kp.cpu_has_bf16_units(),
        "read_bandwidth_bytes_per_s": bandwidth,
        "load_average": os.getloadavg(),
        "paths": results,
        "bf16": "timed" if run_bf16 else "not run: no bf16 units here (--bf16 times it anyway)",
        "probe": probe.to_dict(),
        "full_model_cheapest_block_of_6": full_best,
        "drafters": drafters,
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    out = Path(args.output).with_suffix(".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
