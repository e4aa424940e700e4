r"""Where the offline T5 profile's alphas come from, at each temperature.

`reruns.T5_OFFLINE_ALPHAS` placed every rule's alphas on a token-level analysis at $T = 1$: at $T = 0$
those alphas bunch up (Lossy's seven runs all equal SpecDecode, OPT's give 5 distinct runs of 7),
because at $T = 0$ a rule emits the drafter's top token or the verifier's, and its rejection rate
against $\alpha$ is a different curve. This script runs `token_curves.analyse` on the synthetic T5
pair along the first `--items` held-out reference translations at $T = 0$ and at $T = 1$, places `k`
interior alphas per rule, and writes both placements with each rule's rejection range to
`data/benchmarks/t5_alpha_placement.json`. At $T = 0$ the curve is a staircase, so the alphas are one
per interior plateau (`alpha_grids.plateau_alphas`): interpolating between grid points would put
several alphas on one step. A rule with no interior plateau (Lossy and Lossy* at $T = 0$, which are
SpecDecode there for every alpha below 1) gets no alphas at it: its runs would repeat SpecDecode's.
`reruns.T5_OFFLINE_ALPHAS_T0` and `reruns.T5_OFFLINE_ALPHAS` hold the placements this prints, for the pair
whose weight hashes the file records (the shipped pair of `data/models/`; a test checks all three agree).

    python benchmarks/t5_alpha_placement.py --items 60 --k 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

import tutorial_lib as tl
from tutorial_lib.maths import alpha_grids
from tutorial_lib.maths import token_analysis as ta
from tutorial_lib.stats import token_curves as tc
from tutorial_lib.toy import synthetic_mt

CURVES = ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "lossy", "lossy*", "bild")
OUT = Path(__file__).resolve().parent.parent / "data" / "benchmarks" / "t5_alpha_placement.json"


def placement(result, k: int, temperature: float) -> dict:
    """{label: {"alphas": [...] or [], "rejection": [spec end, drafter end], "plateaus": n}} for every
    curve: at T = 0 one alpha per interior plateau of the staircase (`alpha_grids.plateau_alphas`), at
    T = 1 alphas at evenly spaced rejection levels (`alpha_grids.placed_alphas`)."""
    out = {}
    for curve in CURVES:
        alphas, rejection = alpha_grids.token_rejection_curve(result, curve)
        order = np.argsort(alphas)
        label = alpha_grids.evaluation_label(curve)
        interior = len(alpha_grids.plateaus(alphas, rejection)) - 2
        if temperature == 0:
            placed = alpha_grids.plateau_alphas(result, curve, k)
        else:
            placed = alpha_grids.placed_alphas(result, k, curves=(curve,), ends=True)[label]
        out[label] = {
            "alphas": placed,
            "rejection": [float(rejection[order][0]), float(rejection[order][-1])],
            "interior_plateaus": max(interior, 0),
        }
        if not placed:
            out[label]["why"] = "no interior plateau: every alpha below its drafter end behaves as SpecDecode"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=60, help="held-out sentences (reference translations)")
    parser.add_argument("--k", type=int, default=5, help="interior alphas per rule")
    parser.add_argument("--n-alpha", type=int, default=201, help="grid points over each rule's live range")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    settings = tl.sweeps.reruns.t5_profile("offline")
    tl.models.synthetic_t5.train_t5_pair(budget=tl.sweeps.reruns.t5_training_budget(settings), progress=False)
    pair = tl.sweeps.reruns.load_t5_pair(settings)
    examples = synthetic_mt.TranslationGrammar().examples(args.items, split="test")
    items = [tc.Item(ex["id"], "synthetic_mt", ex["prompt"], ex["references"][0]) for ex in examples]
    # the weights' hashes, as the sweeps key them: alphas placed on one pair are that pair's
    report = {
        "items": len(items),
        "k": args.k,
        "n_alpha": args.n_alpha,
        "pair": [pair.drafter.name, pair.verifier.name],
        "weights": {
            role: tl.sweeps.sweep_folders.model_identity(lm)["weights"]
            for role, lm in (("drafter", pair.drafter), ("verifier", pair.verifier))
        },
    }
    for temperature in (0.0, 1.0):
        grid = ta.default_grid(args.n_alpha, temperature)
        result = tc.analyse(
            pair, items, grid=grid, temperature=temperature, chat=False, cache=False, progress=False
        )
        report[f"T={temperature:g}"] = placement(result, args.k, temperature)
    report["wall_s"] = round(time.perf_counter() - start, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
