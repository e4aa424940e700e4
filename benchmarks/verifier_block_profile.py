r"""Where a verifier call of k rows spends its time as k grows: its linear layers, its output head, its
attention beyond those layers (rotary, the cache's append, the product with the cache), and the rest (norms,
activations, masks, Python), on the kernel path `load_pair(..., dtype="auto")` gives the verifier here.

A block of k drafted tokens should cost what one token costs (the weights are read once either way); where
$t_p(k)/t_p(1)$ grows, this says which part grows. Each part is timed inside the real call by forward hooks
(`time.perf_counter` before and after each module), on top of a context of `--context` tokens, every k once
per round in a shuffled order, medians over rounds; a call is cropped back after it, as the calibration does.

`--attention both` (the default) times the verifier's attention both ways in the same rounds, interleaved:
`sdpa` (transformers' own, which copies the grouped key/value heads for $k > 1$) and `grouped`
(`models.grouped_attention`, which `put_on_path` gives a CPU model). `ATEN_CPU_CAPABILITY` and
`ONEDNN_MAX_CPU_ISA`, where set, cap the kernels' instruction set (e.g. `avx2` on an AVX-512 machine, the
nearest it gets to the AVX2-only class): the output records them and the capability ATen reports, and its
name says `_capped_<isa>`, as the processor's flags still say what the chip has.

    python benchmarks/verifier_block_profile.py            # Qwen2.5-Coder-1.5B, context 75, k = 1..8
    python benchmarks/verifier_block_profile.py --model smollm2-135m --rounds 3 --output /tmp/profile
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/verifier_block_profile.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from tutorial_lib.models import grouped_attention, kernel_paths
from tutorial_lib.models.adapter import load_model
from tutorial_lib.models.processor_class import ISA_CAP_VARIABLES, isa_cap, processor_class

REPO = Path(__file__).resolve().parent.parent
PARTS = ("linear layers", "output head", "attention beyond its linears", "rest")
ATTENTIONS = {"sdpa": "sdpa", "grouped": grouped_attention.GROUPED_SDPA}


def hooked_timers(model: nn.Module) -> dict:
    """Seconds spent in each part during the calls since the last reset (`timers["reset"]()`)."""
    head = model.get_output_embeddings()
    spent = dict.fromkeys(("linear", "head", "attention", "attention's linears"), 0.0)
    started, inside = {}, []

    def before(module, *_):
        started[id(module)] = time.perf_counter()

    def after_as(part):
        def after(module, *_):
            seconds = time.perf_counter() - started[id(module)]
            spent[part] += seconds
            if part == "linear" and inside:
                spent["attention's linears"] += seconds

        return after

    def enter(module, *_):
        inside.append(module)
        before(module)

    def leave(module, *_):
        inside.pop()
        after_as("attention")(module)

    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            module.register_forward_pre_hook(before)
            module.register_forward_hook(after_as("head" if module is head else "linear"))
        elif name.endswith("self_attn"):
            module.register_forward_pre_hook(enter)
            module.register_forward_hook(leave)
    return spent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--path", default=None, help="kernel path (default: the probe's choice for gamma 5)")
    parser.add_argument("--context", type=int, default=75, help="tokens in the cache before each call")
    parser.add_argument("--ks", default="1,2,3,4,6,8")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--beside", default="nothing else", help="what else the machine ran meanwhile")
    parser.add_argument("--attention", choices=("sdpa", "grouped", "both"), default="both")
    parser.add_argument("--output", default=None, help="path stem (default data/benchmarks/...)")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    lm = load_model(args.model, dtype="float32")
    kernel_paths.put_on_path(lm, args.path or "auto", gamma=5, role="verifier")
    attentions = ["sdpa", "grouped"] if args.attention == "both" else [args.attention]
    if "grouped" in attentions and grouped_attention.attention_of(lm.model) != "grouped":
        raise SystemExit(f"{args.model} is not on grouped attention (no grouped key/value heads?)")
    spent = hooked_timers(lm.model)
    context = [(1000 + 7 * i) % lm.vocab_size for i in range(args.context)]
    session = lm.start(context)
    session.feed(context, keep=1)
    length = session.length
    samples = {(a, k): {part: [] for part in ("total", *PARTS)} for a in attentions for k in ks}
    order = [(a, k) for a in attentions for k in ks]
    for round_index in range(args.rounds + 1):  # the first round warms up
        random.Random(round_index).shuffle(order)
        for attention, k in order:
            lm.model.set_attn_implementation(ATTENTIONS[attention])
            assert grouped_attention.attention_of(lm.model) == attention
            for part in spent:
                spent[part] = 0.0
            start = time.perf_counter()
            session.feed([(2000 + 11 * i) % lm.vocab_size for i in range(k)], keep=k)
            total = time.perf_counter() - start
            session.crop(length)
            if not round_index:
                continue
            parts = {  # q, k, v and o ran inside self_attn: counted once, as linear layers
                "linear layers": spent["linear"],
                "output head": spent["head"],
                "attention beyond its linears": spent["attention"] - spent["attention's linears"],
            }
            parts["rest"] = total - sum(parts.values())
            samples[attention, k]["total"].append(total)
            for part, seconds in parts.items():
                samples[attention, k][part].append(seconds)
    medians = {
        key: {part: statistics.median(v) for part, v in by_part.items()} for key, by_part in samples.items()
    }
    rows = []
    for a in attentions:
        first = medians[a, ks[0]]
        for k in ks:
            m = medians[a, k]
            row = {"attention": a, "k": k, **{f"{part} ms": 1e3 * m[part] for part in ("total", *PARTS)}}
            row["t(k)/t(1)"] = m["total"] / first["total"]
            row["growth over k=1, ms"] = 1e3 * (m["total"] - first["total"])
            for part in PARTS:
                row[f"{part}: growth ms"] = 1e3 * (m[part] - first[part])
            rows.append(row)
    machine = processor_class()
    caps = {name: os.environ.get(name) for name in ISA_CAP_VARIABLES}
    capped = isa_cap()
    result = {
        "model": args.model,
        "kernel_path": lm.kernel_path,
        "attention": attentions,
        "attention_note": "sdpa: transformers' sdpa (repeat_kv copies the key/value heads for k > 1 on a "
        "CPU); grouped: tutorial_lib.models.grouped_attention (query heads folded into rows); interleaved",
        "isa_capped_to": capped,
        "isa_cap_variables": caps,
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "context": args.context,
        "rounds": args.rounds,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "processor_class": machine,  # the chip's flags; under a cap the kernels use less (isa_capped_to)
        "beside": args.beside,
        "note": "linear layers: every torch.nn.Linear but the output head, q/k/v/o included; the hooks' own "
        "time (about 200 per call) falls in the parts they bracket",
        "rows": rows,
        "samples": {f"{a} k={k}": v for (a, k), v in samples.items()},
    }
    name = f"verifier_block_profile_cpu_{machine['class']}" + (f"_capped_{capped}" if capped else "")
    stem = args.output or str(REPO / "data" / "benchmarks" / name)
    Path(stem + ".json").write_text(json.dumps(result, indent=1))
    import pandas as pd

    print(pd.DataFrame(rows).round(3).to_string(index=False))
    print(f"wrote {stem}.json")


if __name__ == "__main__":
    main()
