r"""The drafter's kernel path, chosen by what a drafter pays over a whole generation, measured here.

A verifier's calls are blocks of $\gamma + 1$ rows, so `kernel_paths.choose_path` prices its block. A
drafter's are of two other kinds: one prefill over the prompt ($P$ rows, once per prompt) and one-row steps,
about one per token emitted. Its path is the one whose generation costs least,

$$T(\text{path}) = t_{\text{path}}(P) + N\, t_{\text{path}}(1),$$

with both times measured by `kernel_paths.probe_paths` on a sample of the drafter's own layers scaled to the
whole model (its decoder layers times the model's count over the sample's, plus the output head). Every
drafter path is a candidate: `fp32`, `fp32-gemv`, `fp32-packed`, `bf16` and `int8-dynamic`; bf16 stays in
wherever it measures cheaper, bf16 units or not (without them a bf16 call converts its weights, and the probe
sees what that costs).

- `DRAFTER_PREFILL_ROWS` $= P = 56$: the four chat prompts of `decoding.speed_runs.PROMPTS` are 44 to 69
  tokens in the Qwen pair's chat template.
- `DRAFTER_STEPS` $= N = 56$: the one-row steps of a 48-token answer at $\gamma = 5$ and acceptance 0.88 (4.4
  tokens per block of 5 steps: 1.15 steps per token emitted), `benchmarks/engine_speed.py`'s run. With
  $N \gg 1$ the one-row call decides unless a path's prefill costs tens of its steps.

**The drafter's law.** A drafter's path changes the drafter's law (bf16 rounds its weights, int8-dynamic
quantises them and each call's activations): drafts are then accepted a little more or less often, and the
output is still the verifier's law, since Algorithm 4 corrects any $q$. The verifier's path is chosen by
`kernel_paths.choose_path` and keeps the verifier's fp32 law (its fp32 paths differ only in summation order).

`split_cost` prices one more option for the record: a one-row path beside another for the prefill (e.g. bf16
steps beside an fp32 prefill, two copies of the weights); `PathProbe.note` says what it would save.
"""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["DRAFTER_PREFILL_ROWS", "DRAFTER_STEPS", "generation_cost", "split_cost", "choose_drafter_path"]

DRAFTER_PREFILL_ROWS = 56
DRAFTER_STEPS = 56


def generation_cost(
    costs: Dict[int, float], *, prefill_rows: int = DRAFTER_PREFILL_ROWS, steps: int = DRAFTER_STEPS
) -> float:
    """Seconds a generation pays on one path: its prefill of `prefill_rows` plus `steps` one-row calls, from
    `costs` (seconds by rows per call, as `PathProbe.seconds[path]`); the prefill is read at the largest
    measured row count up to `prefill_rows`, scaled by rows (a prefill is compute-bound)."""
    if 1 not in costs:
        raise ValueError(
            f"the probe measured rows {sorted(costs)}; a drafter's cost needs one-row calls (k = 1)"
        )
    measured = max(k for k in costs if k <= prefill_rows)
    prefill = costs[measured] * (prefill_rows / measured if measured > 1 else prefill_rows)
    return prefill + steps * costs[1]


def split_cost(
    seconds: Dict[str, Dict[int, float]],
    *,
    prefill_rows: int = DRAFTER_PREFILL_ROWS,
    steps: int = DRAFTER_STEPS,
) -> Tuple[float, str, str]:
    """The cheapest generation on two paths, one for the one-row steps and one for the prefill: (seconds,
    step path, prefill path)."""
    step_path = min(seconds, key=lambda path: seconds[path][1])
    prefill_path = min(
        seconds, key=lambda path: generation_cost(seconds[path], prefill_rows=prefill_rows, steps=0)
    )
    total = steps * seconds[step_path][1] + generation_cost(
        seconds[prefill_path], prefill_rows=prefill_rows, steps=0
    )
    return total, step_path, prefill_path


def choose_drafter_path(probe, *, prefill_rows: int = DRAFTER_PREFILL_ROWS, steps: int = DRAFTER_STEPS):
    """`probe` (a `kernel_paths.PathProbe` of drafter candidates) with `chosen` set to the path whose
    generation (`generation_cost`) costs least (ties: the first listed), `gamma` 0 (one-row calls), and
    `note` giving each path's total and what a split of paths would save."""
    if not probe.seconds:
        raise ValueError("the probe measured no path; probe at least one of kernel_paths.DRAFTER_PATHS")
    totals = {
        path: generation_cost(costs, prefill_rows=prefill_rows, steps=steps)
        for path, costs in probe.seconds.items()
    }
    probe.chosen, probe.gamma = min(totals, key=totals.get), 0
    split, step_path, prefill_path = split_cost(probe.seconds, prefill_rows=prefill_rows, steps=steps)
    probe.note = (
        f"drafter: prefill of {prefill_rows} rows + {steps} one-row calls, "
        + ", ".join(f"{path} {1000 * total:.0f} ms" for path, total in totals.items())
        + (
            f"; {step_path} steps beside a {prefill_path} prefill would cost {1000 * split:.0f} ms"
            if step_path != prefill_path
            else ""
        )
    )
    return probe
