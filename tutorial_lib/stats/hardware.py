r"""Which hardware decides a latency verdict: every latency claim re-priced over the drafter's cost.

Every row counted its calls, so a claim about latency can be re-priced for another machine at no
cost: replace the calibration's call costs and price the same calls again (`pricing.price_rows`).
Two numbers of a machine matter most:

- the drafter's **relative cost** $c = t_q / t_p(1)$ (a drafter step against a verifier step);
- the verifier's **block-scoring cost** $t_p(k)$: as measured here (a CPU, where scoring $k$ tokens
  costs several steps), or **one step per block** ($t_p(k) = t_p(1)$, every call one step of its
  model, prefills included: the regime of an accelerator, `Calibration.accelerator`).

`calibration_at(calibration, c, verifier)` scales every drafter kind of a calibration (steps,
prefills, encoder passes) by one factor so that $t_q / t_p(1) = c$, keeping the verifier's costs,
the per-call and per-block overheads and each rule's block cost as measured.

`verdict_grid` prices the rows at each $c$ of a grid (0.02 to 1) under both verifier costs and
recomputes each latency claim there (`claims.t5_claims` for the T5 run; for a Gemma-style run's
batch-size-1 latency rows, `latency_claims`: "speculation pays", the pooled latency of a method
relative to the verifier below 1). `flip_points` reads off the grid where each verdict changes.

Two points are marked: this machine's $c$ (from its calibration), and the paper's T5-small drafting
for T5-large as an **estimate**: $c \approx$ the ratio of their parameter counts,
$60\text{M} / 770\text{M} \approx 0.078$ (T5 1.1 small and large; a decoder step's cost grows about
with the parameters it reads, which is what bounds a step on an accelerator; the paper does not
report $c$).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import pandas as pd

from ..decoding.calibration import Calibration
from .pricing import LATENCY_COLUMN, price_rows

__all__ = [
    "MEASURED",
    "ONE_STEP",
    "VERIFIER_COSTS",
    "PAPER_T5_C",
    "PAPER_T5_SOURCE",
    "DEFAULT_GRID",
    "machine_c",
    "calibration_at",
    "latency_claims",
    "verdict_grid",
    "flip_points",
]

MEASURED, ONE_STEP = "as measured here", "one step per block"
VERIFIER_COSTS = (MEASURED, ONE_STEP)
#: the paper's T5-small -> T5-large drafter cost, estimated by the ratio of parameter counts
PAPER_T5_PARAMETERS = (60e6, 770e6)
PAPER_T5_C = PAPER_T5_PARAMETERS[0] / PAPER_T5_PARAMETERS[1]
PAPER_T5_SOURCE = "estimate: ratio of parameters, T5-small ~60M / T5-large ~770M"
#: 0.02 to 1, denser where verdicts of a small drafter change
DEFAULT_GRID = tuple(float(c) for c in np.round(np.geomspace(0.02, 1.0, 9), 4))

_DRAFTER_KINDS = ("drafter_step", "drafter_k2", "prefill_drafter", "encoder_drafter")


def machine_c(calibration: Calibration) -> float:
    """This machine's $c = t_q / t_p(1)$ (model time only, without the engine's per-call overhead)."""
    return calibration.t_q(with_overhead=False) / calibration.t_p(1, with_overhead=False)


def calibration_at(calibration: Calibration, c: float, verifier: str = MEASURED) -> Calibration:
    """`calibration` with every drafter call scaled so that $t_q / t_p(1) = c$, and the verifier's
    block-scoring cost `verifier` (`MEASURED` or `ONE_STEP`, module docstring)."""
    # any positive cost: a machine's own c can exceed 1 (tiny models timed on a busy machine)
    if isinstance(c, bool) or not (isinstance(c, (int, float)) and math.isfinite(c) and c > 0):
        raise ValueError(
            f"c={c!r}: pass the drafter's cost relative to a verifier step (> 0), e.g. 0.02 to 1."
        )
    if verifier not in VERIFIER_COSTS:
        raise ValueError(f"verifier={verifier!r}: choose {MEASURED!r} or {ONE_STEP!r}.")
    base = calibration.accelerator() if verifier == ONE_STEP else calibration
    factor = c / machine_c(base)
    samples = {
        kind: ([v * factor for v in values] if kind.startswith(_DRAFTER_KINDS) else list(values))
        for kind, values in base.samples.items()
    }
    return Calibration(**{**base.to_dict(), "samples": samples, "note": f"c = {c:g}, verifier {verifier}"})


def latency_claims(
    rows: pd.DataFrame,
    *,
    column: str = LATENCY_COLUMN,
    labels: Optional[Sequence[str]] = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """ "Speculation pays at batch size 1" for each speculative configuration of a Gemma-style run's
    latency rows: $1 - $ its total latency over the verifier's on the same items, pooled over the
    tasks (total over total) and per task, with the percentile interval over items; verdict as
    `claims.verdict`, except SpecDecode at gamma 1 without the bonus token: one verifier call per emitted
    token, as the verifier alone makes, plus a drafter call, so it cannot be faster at any drafter cost
    (its break-even c is below 0) and its verdict is `claims.BY_CONSTRUCTION`, with the measured
    estimate kept beside it."""
    from .analysis import latency_view
    from .claims import BY_CONSTRUCTION, verdict

    view = latency_view(rows, latency=column, n_resamples=n_resamples, seed=seed)
    unbonused = rows.loc[
        (rows["rule"] == "spec")
        & (rows["gamma"] == 1)
        & rows["config"].astype(str).str.contains("bonus=none", regex=False),
        "label",
    ]
    view = view[view["method"] == "speculative"]
    if labels is not None:
        view = view[view["label"].isin(labels)]
    out = view[["task", "temperature", "label", "gamma", "alpha", "n_items"]].copy()
    out.insert(
        0,
        "claim",
        [
            f"{label} (gamma {gamma}) is faster than the verifier at batch size 1"
            for label, gamma in zip(view["label"], view["gamma"])
        ],
    )
    out["estimate"] = 1.0 - view["latency"].to_numpy()
    out["low"], out["high"] = 1.0 - view["latency_high"].to_numpy(), 1.0 - view["latency_low"].to_numpy()
    fixed = out["label"].isin(set(unbonused)) & (out["gamma"] == 1)
    out["verdict"] = [
        BY_CONSTRUCTION if f else verdict(lo, hi) for f, lo, hi in zip(fixed, out["low"], out["high"])
    ]
    out["reason"] = np.where(
        fixed,
        "gamma 1 without the bonus token: a verifier call per emitted token plus a "
        "drafter call, so no drafter cost makes it faster than the verifier",
        "",
    )
    out["unit"] = "latency reduction (share of the verifier's total latency)"
    return out.reset_index(drop=True)


def verdict_grid(
    rows: pd.DataFrame,
    calibration: Calibration,
    claims_of: Callable[[pd.DataFrame, str], pd.DataFrame],
    *,
    grid: Sequence[float] = DEFAULT_GRID,
    extra_points: Dict[str, float] = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Each claim of `claims_of(priced rows, latency column)` at every $c$ of `grid` (and the named
    `extra_points`, such as this machine's $c$) under both verifier costs: one row per (claim's
    identifying columns, verifier cost, c) with its estimate, interval and verdict."""
    from tqdm.auto import tqdm

    points = [(float(c), "") for c in grid] + [(float(c), name) for name, c in (extra_points or {}).items()]
    out = []
    for verifier in VERIFIER_COSTS:
        for c, name in tqdm(points, desc=f"re-pricing ({verifier})", disable=not progress):
            priced = price_rows(rows, calibration_at(calibration, c, verifier), accelerator=False)
            table = claims_of(priced, LATENCY_COLUMN)
            out.append(table.assign(verifier_cost=verifier, c=c, point=name))
    return pd.concat(out, ignore_index=True)


def flip_points(
    grid: pd.DataFrame, keys: Sequence[str] = ("claim", "task", "temperature", "gamma")
) -> pd.DataFrame:
    """Where each claim's verdict (and the sign of its estimate) changes along the grid of $c$, per
    verifier cost: one row per change, `c_below` / `c_above` the grid points it lies between
    (`verdict_below`, `verdict_above`); a claim whose verdict never changes gets one row with
    `c_below` NaN and its one verdict."""
    keys = [k for k in keys if k in grid.columns]
    out = []
    on_grid = grid[grid["point"] == ""]
    for key, part in on_grid.groupby(keys + ["verifier_cost"], sort=False, dropna=False):
        part = part.sort_values("c")
        cs, verdicts, estimates = (
            part["c"].to_numpy(),
            part["verdict"].to_numpy(),
            part["estimate"].to_numpy(float),
        )
        base = dict(zip(keys + ["verifier_cost"], key))
        changes = [i for i in range(1, len(cs)) if verdicts[i] != verdicts[i - 1]]
        for i in changes:
            out.append(
                {
                    **base,
                    "c_below": cs[i - 1],
                    "c_above": cs[i],
                    "verdict_below": verdicts[i - 1],
                    "verdict_above": verdicts[i],
                    "estimate_below": estimates[i - 1],
                    "estimate_above": estimates[i],
                }
            )
        if not changes:
            out.append(
                {
                    **base,
                    "c_below": np.nan,
                    "c_above": np.nan,
                    "verdict_below": verdicts[0],
                    "verdict_above": verdicts[0],
                    "estimate_below": estimates[0],
                    "estimate_above": estimates[-1],
                }
            )
    return pd.DataFrame(out)
