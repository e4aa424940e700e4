r"""What share of the synthetic T5 pair's calls is fixed per-call overhead, on this machine.

The T5 rerun (notebook 06) prices calls of millisecond models. This calibrates that pair as notebook 06's
sweep does (`decoding.calibration.calibrate`: every call kind interleaved in a shuffled order, medians over
rounds; one torch thread, as its calibration ran), with the read bandwidth and the weights' bytes, and splits
each model's call with `decoding.speed_tables.fixed_call_costs`: $t(k) = t_0 + b\,k$ fitted over the measured
$k$, of $t_0$ the weights' read time $W / B$, the rest (with the engine's overhead $o$) fixed per call.
The calibration and the table go to `data/benchmarks/t5_call_overhead_cpu.json`; notebook 09 shows them.

    python benchmarks/t5_call_overhead.py
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from tutorial_lib.decoding import speed_tables
from tutorial_lib.decoding.engine import calibrate
from tutorial_lib.models import adapter, synthetic_t5

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="rounds after the warm-up (>= 5)")
    parser.add_argument(
        "--min-seconds", type=float, default=30.0, help="more rounds until the measurement lasts this"
    )
    parser.add_argument("--output", default=str(REPO / "data" / "benchmarks" / "t5_call_overhead_cpu.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    synthetic_t5.train_t5_pair(budget="default")  # copies the shipped pair into the cache (never trains it)
    pair = adapter.load_pair("synthetic-t5-drafter", "synthetic-t5-verifier", dtype=torch.float32)
    start = time.perf_counter()
    calibration = calibrate(
        pair, max_k=6, repeats=args.repeats, context_tokens=9, min_seconds=args.min_seconds
    )
    table = speed_tables.fixed_call_costs(calibration)
    print(table.round(4).to_string())
    result = {
        "pair": [pair.drafter.name, pair.verifier.name],
        "threads": 1,
        "load_average": list(os.getloadavg()),
        "seconds": round(time.perf_counter() - start, 1),
        "calibration": calibration.to_dict(),
        "table": table.reset_index().to_dict(orient="records"),
    }
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
