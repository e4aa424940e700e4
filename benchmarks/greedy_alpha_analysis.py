r"""A token-level analysis of the Qwen pair at T = 0, to place the rules' T = 0 alphas.

At $T = 0$ a Token rule emits the drafter's top token when it lies in the acceptance set $A$ (built
from the temperature-1 laws) and the verifier's otherwise, so its rejection rate as a function of
alpha differs from the $T = 1$ curve that placed `reruns.GEMMA_OFFLINE_ALPHAS`; alphas placed at
$T = 1$ bunch up at $T = 0$. This runs `token_curves.analyse` at $T = 0$ along the
gold answers of the first `--items` items of each offline task (code, arithmetic, facts), with a fine
grid on the rules of `--curves` (the three Token rules by default), caches it under
`data/results/token-analysis-<key>/`, and prints `k` interior alphas per rule: for a Token rule at evenly
spaced rejection levels (`alpha_grids.placed_alphas(result, k)`), for Chow and Diff, staircases at T = 0,
one per plateau (`alpha_grids.plateau_alphas`). `reruns.GEMMA_GREEDY_ALPHAS` holds the k = 1 placement of
`--items 16`, `reruns.GEMMA_GREEDY_ALPHAS_3` the second command's:

    python benchmarks/greedy_alpha_analysis.py --items 16 --k 5
    python benchmarks/greedy_alpha_analysis.py --items 16 --k 3 --curves chow diff token_v1 token_v2 \
        token_v3 --dtype bfloat16
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import tutorial_lib as tl
from tutorial_lib.maths import alpha_grids
from tutorial_lib.maths import token_analysis as ta
from tutorial_lib.stats import token_curves as tc

TOKEN_CURVES = ("token_v1", "token_v2", "token_v3")
#: OPT emits Diff's tokens at T = 0 (its TV term is on one-hot laws): placing Diff places both
PREFIX_CURVES = ("chow", "diff")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16, help="items per offline task (gold answers)")
    parser.add_argument("--k", type=int, default=5, help="interior alphas per rule")
    parser.add_argument("--n-alpha", type=int, default=101, help="grid points over each rule's live range")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--curves",
        nargs="+",
        default=list(TOKEN_CURVES),
        choices=TOKEN_CURVES + PREFIX_CURVES,
        help="rules to place; Chow and Diff are staircases at T = 0 (one alpha per plateau)",
    )
    parser.add_argument(
        "--dtype", default="float32", help="the pair's dtype (bfloat16 on a processor with AMX)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    pair = tl.load_pair("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", dtype=args.dtype)
    items = tc.offline_items(n=args.items)
    curves = tuple(args.curves)
    grid = ta.default_grid(args.n_alpha, 0.0, curves=("drafter", "verifier", "spec") + curves)
    result = tc.analyse(pair, items, grid=grid, temperature=0.0, cache=True)
    tokens = [c for c in curves if c in TOKEN_CURVES]
    placed = alpha_grids.placed_alphas(result, args.k, curves=tokens) if tokens else {}
    # a staircase's alphas between two steps behave alike: one alpha per plateau, evenly in rejection level
    for curve in (c for c in curves if c in PREFIX_CURVES):
        placed[curve] = alpha_grids.plateau_alphas(result, curve, args.k, ends=False)
    print(
        json.dumps(
            {
                "path": str(result.path),
                "items": len(items),
                "timing": result.timing,
                "wall_s": time.perf_counter() - start,
                "placed": placed,
            },
            indent=1,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
