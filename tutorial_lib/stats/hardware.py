r"""Which hardware decides a latency verdict: every latency claim re-priced over the drafter's cost, and
what each verdict timed, per task, beside the quality rows.

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

`timed_verdicts` says what the clock timed: per task first (every task), then pooled, each timed
configuration's modelled and wall-clock latency over the verifier's with intervals and verdicts, named
for its gamma, alpha, T and kernel paths, beside the text agreement of its rows with the quality rows'
equal configuration on the same items (the latency rows of a run may run other kernel paths than its
quality rows, as the headline run's int8 drafter against the sweep's bf16).
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
    "paths_name",
    "timed_verdicts",
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


# ---- what the clock timed: per task, modelled beside wall-clock, and the texts beside the quality rows ----

#: the columns of the agreement where the quality rows have no configuration equal to the timed one
_AGREEMENT = (
    "n_compared",
    "n_differ",
    "quality_timed",
    "quality_swept",
    "quality_timed_differing",
    "quality_swept_differing",
    "rejection_timed",
    "rejection_swept",
)


def paths_name(paths: Optional[Sequence[Optional[str]]]) -> str:
    """The kernel paths a pair was timed on, as a verdict names them: `("int8-dynamic", "bf16")` gives
    "int8-dynamic drafter, bf16 verifier" (a profile's `latency_paths`); None: "" (as loaded)."""
    if not paths:
        return ""
    return ", ".join(f"{p or 'as loaded'} {model}" for p, model in zip(paths, ("drafter", "verifier")))


def _items(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.drop_duplicates(["task", "example_id"]).set_index(["task", "example_id"])


def _counterpart(config: pd.Series, quality: pd.DataFrame, other_gamma: bool):
    """(the quality rows' configuration equal to the timed `config`, whether equal, a note): equal is the
    same `config` string (rule, alpha, gamma, T, bonus), or for a model alone the same label at the same T
    (its gamma is no part of it); with `other_gamma`, else the same label, alpha and T at the quality rows'
    gamma, named as such."""
    same = quality[
        (quality["label"] == config["label"])
        & (quality["temperature"] == config["temperature"])
        & np.isclose(quality["alpha"].astype(float), float(config["alpha"]))
    ]
    if config["method"] in ("drafter", "verifier") and len(same):
        return same["config"].iloc[0], True, "the same model alone"
    if (same["config"] == config["config"]).any():
        return config["config"], True, "the same configuration"
    gammas = sorted(set(same["gamma"].astype(int)))
    if not gammas:
        return None, False, "the quality rows have no configuration of this label, alpha and T"
    law = (
        "the same law, the verifier's, at every gamma"
        if config["rule"] == "spec"
        else "another law wherever a bonus token, the verifier's, follows accepted drafts"
    )
    note = (
        f"the quality rows have no configuration at gamma {config['gamma']} (they ran this label, alpha and "
        f"T at gamma {', '.join(map(str, gammas))}: {law})"
    )
    if not other_gamma:
        return None, False, note
    nearest = same.loc[same["gamma"].astype(int) == gammas[0], "config"].iloc[0]
    return nearest, False, note + f"; compared with gamma {gammas[0]}"


def _rejection(part: pd.DataFrame) -> float:
    judged = part["n_accepted"].sum() + part["n_rejected"].sum()
    return float(part["n_rejected"].sum() / judged) if judged else np.nan


def _agreement(timed: pd.DataFrame, swept: pd.DataFrame) -> Dict[str, float]:
    """How the timed rows' texts and scores compare with the quality rows' on the items both have."""
    items = timed.index.intersection(swept.index)
    a, b = timed.loc[items], swept.loc[items]
    differ = (a["text"].astype(str) != b["text"].astype(str)).to_numpy()

    def mean(values: pd.Series) -> float:
        return float(values.mean()) if len(values) else np.nan

    return {
        "n_compared": len(items),
        "n_differ": int(differ.sum()),
        "quality_timed": mean(a["quality"]),
        "quality_swept": mean(b["quality"]),
        "quality_timed_differing": mean(a["quality"][differ]),
        "quality_swept_differing": mean(b["quality"][differ]),
        "rejection_timed": _rejection(a),
        "rejection_swept": _rejection(b),
    }


def timed_verdicts(
    latency_rows: pd.DataFrame,
    quality_rows: pd.DataFrame,
    *,
    paths: Optional[Sequence[Optional[str]]] = None,
    column: str = LATENCY_COLUMN,
    other_gamma: bool = False,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    r""" "Faster than the verifier at batch size 1" for each timed speculative configuration, **per task
    first, then pooled**, each named for what the clock timed, beside the quality rows it is quoted with.

    Per (temperature, task, then `POOLED`; configuration): the configuration's total over the verifier's
    on the same items, modelled (`modelled`, from `column`) and on the clock (`clock`, `wall_time_s`), each
    with its percentile interval over items (`intervals.ratio_of_means`, item pairs resampled) and its
    verdict (`claims.verdict` on $1 -$ ratio; SpecDecode at gamma 1 without the bonus token is
    `BY_CONSTRUCTION`, as in `latency_claims`). The claim names the gamma, alpha, T and the kernel
    `paths` (`paths_name`) it timed.

    Beside it, the texts of the quality rows' **equal** configuration (the same config string: rule,
    alpha, gamma, T, bonus; `quality_config`, `same_configuration`, `agreement`) on the same items:
    `n_compared`, `n_differ` (texts that differ), the mean item score of each (`quality_timed`,
    `quality_swept`; pooled, a mean over every task's items, each in its task's metric) overall and on
    the differing items, and each one's rejection rate (total over total). Where the quality rows have
    no equal configuration (a gamma they did not run) the agreement columns are NaN and `agreement` says
    so; `other_gamma=True` compares with the same label, alpha and T at the quality rows' gamma instead,
    `same_configuration` False. `drafter_n_differ` / `verifier_n_differ`: the models alone, timed
    against the quality rows, on the same items."""
    from . import intervals
    from .analysis import POOLED
    from .claims import BY_CONSTRUCTION, verdict

    for name in (column, "wall_time_s", "text"):
        if name not in latency_rows:
            raise ValueError(
                f"the latency rows have no column {name!r}"
                + ("; price them first (pricing.price_rows)." if name == column else ".")
            )
    timed_as = paths_name(paths)
    out = []
    for temperature, block in latency_rows.groupby("temperature", sort=False):
        quality = quality_rows[quality_rows["temperature"] == temperature]
        base = _items(block[block["method"] == "verifier"])
        if base.empty:
            raise ValueError(f"no verifier rows at T = {temperature:g}; relative latency needs them.")
        configs = block.drop_duplicates("config")
        models = {}
        for method in ("drafter", "verifier"):
            mine = configs[configs["method"] == method]
            found = _counterpart(mine.iloc[0], quality, False)[0] if len(mine) else None
            models[method] = (
                (
                    _items(block[block["config"] == mine["config"].iloc[0]]),
                    _items(quality[quality["config"] == found]),
                )
                if found is not None
                else None
            )
        tasks = list(dict.fromkeys(block["task"]))
        for task in tasks + [POOLED]:
            at = (lambda t: t) if task == POOLED else (lambda t: t[t.index.get_level_values(0) == task])
            model_columns = {
                f"{m}_n_differ": (_agreement(at(pair[0]), pair[1])["n_differ"] if pair else np.nan)
                for m, pair in models.items()
            }
            for _, config in configs[configs["method"] == "speculative"].iterrows():
                mine = at(_items(block[block["config"] == config["config"]]))
                items = mine.index.intersection(base.index)
                if not len(items):
                    continue
                ratios = {}
                for key, name in (("modelled", column), ("clock", "wall_time_s")):
                    x, y = mine.loc[items, name].to_numpy(float), base.loc[items, name].to_numpy(float)
                    ratios[key] = intervals.ratio_of_means(x, y, n_resamples=n_resamples, seed=seed)
                fixed = (
                    config["rule"] == "spec"
                    and int(config["gamma"]) == 1
                    and "bonus=none" in str(config["config"])
                )
                found, equal, note = _counterpart(config, quality, other_gamma)
                agreement = (
                    _agreement(mine.loc[items], _items(quality[quality["config"] == found]))
                    if found is not None
                    else dict.fromkeys(_AGREEMENT, np.nan)
                )
                named = ", ".join(
                    [f"gamma {config['gamma']}"]
                    + ([f"alpha {config['alpha']:g}"] if config["rule"] != "spec" else [])
                    + [f"T = {temperature:g}"]
                    + ([timed_as] if timed_as else [])
                )
                row = {
                    "claim": f"{config['label']} ({named}) is faster than the verifier at batch size 1 "
                    f"on {task}",
                    "task": task,
                    "temperature": temperature,
                    "label": config["label"],
                    "gamma": config["gamma"],
                    "alpha": config["alpha"],
                    "timed_as": timed_as,
                    "n_items": len(items),
                }
                for key, (ratio, low, high) in ratios.items():
                    row.update({key: ratio, f"{key}_low": low, f"{key}_high": high})
                    row[f"{key}_verdict"] = BY_CONSTRUCTION if fixed else verdict(1.0 - high, 1.0 - low)
                row.update(
                    quality_config=found or "",
                    same_configuration=bool(equal),
                    agreement=note,
                    **agreement,
                    **model_columns,
                )
                out.append(row)
    return pd.DataFrame(out)
