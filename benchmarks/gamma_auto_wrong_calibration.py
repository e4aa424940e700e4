r"""How `gamma="auto"` fares when its calibration is not the machine's: simulated answers, no model.

`gamma="auto"` starts from a quick calibration stored once per pair and machine. One measured while another
process held the cores has the wrong costs, and the wrong *shape* (a drafter step timed 7x too slow, blocks
that seem to grow with k). The policy times every block it runs and corrects the costs as it decodes
(`decoding.gamma_policy`); this measures how close that gets to the best fixed block size in hindsight.

Each row: a true machine (seconds a draft $t_q$, seconds a verifier call of $k$ rows $t_p(k)$), a calibration
(right or wrong), a per-draft acceptance $a$ and an answer length. `gamma_policy.simulated_answer` decodes
the answer 30 times (seeds 0..29: the same draws for every policy) with a block of $\gamma$ drafts costing
$\gamma t_q + t_p(\gamma + 1)$. Reported: the policy's mean seconds over the best fixed $\gamma$'s (0..5,
chosen on the same draws: the bound a policy that knew the machine would reach), and the same for the policy
deciding on the calibration alone (`learn_costs=False`).

    python benchmarks/gamma_auto_wrong_calibration.py   # data/benchmarks/gamma_auto_wrong_calibration.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.gamma_policy import AutoGamma, simulated_answer

REPO = Path(__file__).resolve().parent.parent
MAX_K = 6  # the quick calibration's largest block (QUICK_CALIBRATION["max_k"])
SEEDS = range(30)


def flat(k: int) -> float:
    return 0.100


def mid(k: int) -> float:
    return 0.100 * (1 + 0.15 * (k - 1))


def steep(k: int) -> float:
    return 0.100 * k


#: name -> (t_q, t_p): the machine as it is.
MACHINES = {
    "flat block, c = 0.3": (0.030, flat),
    "block +15% a row, c = 0.3": (0.030, mid),
    "block costs k steps, c = 0.3": (0.030, steep),
    "flat block, drafter c = 2": (0.200, flat),
}
#: name -> calibration: what the policy starts from.
CALIBRATIONS = {
    "flat block, c = 0.3": Calibration.synthetic(0.030, flat, max_k=MAX_K),
    "block +15% a row, c = 0.3": Calibration.synthetic(0.030, mid, max_k=MAX_K),
    "block costs k steps, c = 0.3": Calibration.synthetic(0.030, steep, max_k=MAX_K),
    "disturbed: c = 2, block +30% a row": Calibration.synthetic(
        0.200, lambda k: 0.1 * (1 + 0.3 * (k - 1)), max_k=MAX_K
    ),
}


def fixed_gamma_seconds(gamma: int, t_q: float, t_p, acceptance: float, tokens: int, seed: int) -> float:
    """An answer at a fixed block size on the same draws (a fixed policy: its calibration plays no part)."""

    class Fixed(AutoGamma):
        def next_gamma(self, remaining=None):
            g = gamma if remaining is None else min(gamma, max(1, remaining)) if gamma else 0
            self.decisions.append((g, self.acceptance))
            return g

    return simulated_answer(
        Fixed(CALIBRATIONS["flat block, c = 0.3"]), t_q, t_p, acceptance, tokens=tokens, seed=seed
    )[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output", default=str(REPO / "data" / "benchmarks" / "gamma_auto_wrong_calibration.json")
    )
    args = parser.parse_args()
    rows = []
    for tokens in (48, 200):
        for acceptance in (0.9, 0.6):
            for machine, (t_q, t_p) in MACHINES.items():
                best = min(
                    statistics.mean(fixed_gamma_seconds(g, t_q, t_p, acceptance, tokens, s) for s in SEEDS)
                    for g in range(0, MAX_K)
                )
                for calibration_name, calibration in CALIBRATIONS.items():
                    learned, alone = (
                        statistics.mean(
                            simulated_answer(policy, t_q, t_p, acceptance, tokens=tokens, seed=s)[1]
                            for s in SEEDS
                        )
                        for policy in (AutoGamma(calibration), AutoGamma(calibration, learn_costs=False))
                    )
                    rows.append(
                        {
                            "tokens": tokens,
                            "acceptance": acceptance,
                            "machine": machine,
                            "calibration": calibration_name,
                            "right": calibration_name == machine,
                            "auto_over_best_fixed": learned / best,
                            "calibration_alone_over_best_fixed": alone / best,
                        }
                    )
                    print(
                        f"{tokens:4d} tokens a={acceptance} machine: {machine:30s} "
                        f"calibration: {calibration_name:36s} auto {learned / best:5.2f}x, "
                        f"calibration alone {alone / best:5.2f}x the best fixed gamma"
                    )
    wrong = [r["auto_over_best_fixed"] for r in rows if not r["right"]]
    right = [r["auto_over_best_fixed"] for r in rows if r["right"]]
    summary = {
        "wrong_calibration_auto_over_best": {"median": statistics.median(wrong), "max": max(wrong)},
        "right_calibration_auto_over_best": {"median": statistics.median(right), "max": max(right)},
        "wrong_calibration_alone_over_best": {
            "median": statistics.median(
                r["calibration_alone_over_best_fixed"] for r in rows if not r["right"]
            ),
            "max": max(r["calibration_alone_over_best_fixed"] for r in rows if not r["right"]),
        },
    }
    print(json.dumps(summary, indent=1))
    Path(args.output).write_text(
        json.dumps({"seeds": len(SEEDS), "rows": rows, "summary": summary}, indent=1) + "\n"
    )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
