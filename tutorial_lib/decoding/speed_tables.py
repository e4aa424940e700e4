r"""Speed measurements as tables: the committed runs of `benchmarks/engine_speed.py` and
`benchmarks/batch_speed.py`, read into DataFrames that notebook 09 shows and the benchmarks print.

**The aims.** An engine run is judged against aims stated as inequalities on medians over
(prompt, round) pairs, each computed from the run's own numbers (never copied from its verdicts):

- a block costs what a token costs: measured as $t_p(k) / t_p(1)$ on the verifier's kernel path (per
  calibration round), at the $k \le 6$ whose median is largest; holds when $\le 1.15$.
- the verifier's call is memory-bound: measured as $t_p(1) / (W_p / B)$: its call over its weights' bytes read
  at the measured bandwidth; holds when $\le 1.5$.
- the drafter is cheap: measured as $c = t_q / t_p(1)$ (per calibration round); holds when $\le 0.2$.
- speculation pays on the same weights: measured as time(transformers' greedy, same path) /
  time(`gamma="auto"`); holds when $\ge 2$.
- against what a user runs first: measured as time(transformers' greedy, fp32 as loaded) /
  time(`gamma="auto"`); holds when $\ge 3$.
- against transformers' assisted generation: measured as time(assisted, default schedule, same path) /
  time(`gamma="auto"`); holds when $\ge 1.3$.
- a first call answers soon: measured as seconds from the first `gamma="auto"` call to the end of its first
  block; holds when $\le 30$ s.

A run keeps its processor's class (`models.processor_class`); `data/benchmarks/` keeps one run per class,
`engine_speed_cpu_<class>.json` (`_busy` for a run beside a heavy job).

- `engine_speed_methods`   - one row per method: median seconds, speed-up over our verifier alone with
  quartiles, the model's prediction
- `engine_speed_aims`      - one row per aim: median, quartiles, threshold and verdict
- `aim_limits`             - for each aim a run misses, what stops it, in the run's own numbers
- `processor_classes`      - one row per committed class's run: its processor, paths and headline aims
- `by_batch_and_gamma`     - one row per $(B, \gamma)$ of a batch run: tokens per second, median and range
  over rounds
- `where_speculation_pays` - the batch sizes at which each $\gamma$ beats the verifier alone
- `fixed_call_costs`       - per model of a calibration: what a call costs whatever its $k$, and the share of
  one call that is fixed overhead

**What a call costs whatever it computes.** Fitting a model's measured call times to a line in the tokens
it is fed, $t(k) = t_0 + b\,k$ (least squares over every measured $k$), splits a call into a part
$t_0$ every call pays and a part $b$ per token. Of $t_0$, reading the weights once takes at least
$W / B$ (bytes over the measured read bandwidth); the rest, with the engine's own cost per call $o$,
is what every call pays beyond its bytes: launching the framework's operators, Python, the cache's
bookkeeping, and a kernel that reads slower than the bandwidth allows. Its share of a one-token call,
$(t_0 - W/B + o) / (t(1) + o)$, says whether a call is bound by memory (near 0: a large model on a kernel
at its bound) or by fixed overhead (near 1: millisecond calls of a small model, which fewer bytes or a
faster kernel cannot speed up: only fewer calls can).
"""

from __future__ import annotations

import math
import statistics
from typing import Dict, List

import pandas as pd

__all__ = [
    "AIMS",
    "engine_speed_methods",
    "engine_speed_aims",
    "aim_limits",
    "processor_classes",
    "pairwise_ratio",
    "by_batch_and_gamma",
    "where_speculation_pays",
    "fixed_call_costs",
]

#: aim -> (the comparison, the threshold, whether the measured value must be at most it)
AIMS: Dict[str, tuple] = {
    "block of k <= 6 rows / one row, t_p(k)/t_p(1)": ("block", 1.15, True),
    "verifier's call / its bandwidth bound": ("bound", 1.5, True),
    "drafter's step / verifier's call, c = t_q/t_p(1)": ("c", 0.2, True),
    "HF greedy (same path) time / auto time": ("same path", 2.0, False),
    "HF greedy (fp32 as loaded) time / auto time": ("fp32 as loaded", 3.0, False),
    "HF assisted (same path) time / auto time": ("assisted", 1.3, False),
    "first auto call to its first block, s": ("first block", 30.0, True),
}


def _spread(values: List[float]) -> dict:
    if len(values) > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {"median": statistics.median(values), "q25": q1, "q75": q3, "n": len(values)}


def pairwise_ratio(runs: pd.DataFrame, numerator: str, denominator: str) -> dict:
    """Median, quartiles and count over (round, prompt) of time(numerator) / time(denominator), from the
    runs of one dtype (`method`, `round`, `prompt`, `seconds` columns)."""
    t = runs.set_index(["round", "prompt", "method"])["seconds"]
    keys = sorted(
        {k[:2] for k in t.index if k[2] == numerator} & {k[:2] for k in t.index if k[2] == denominator}
    )
    if not keys:
        raise ValueError(f"no (round, prompt) has both {numerator!r} and {denominator!r}")
    return _spread([t[(r, p, numerator)] / t[(r, p, denominator)] for r, p in keys])


def engine_speed_methods(result: dict) -> pd.DataFrame:
    """The methods of one engine run (the JSON `benchmarks/engine_speed.py` writes), one row each."""
    table = pd.DataFrame(result["table"])
    keep = [
        "dtype",
        "method",
        "median_seconds",
        "speedup",
        "speedup_q25",
        "speedup_q75",
        "time_vs_hf_greedy",
        "tokens_per_call",
        "acceptance",
        "expected_speedup",
        "textbook_speedup",
        "measured_over_expected",
        "same_tokens",
        "n_runs",
    ]
    return table[[c for c in keep if c in table]]


def engine_speed_aims(result: dict) -> pd.DataFrame:
    """One row per aim (`AIMS`) and dtype of one engine run: median, quartiles, n, threshold, verdict.
    An aim the run has no numbers for (an older run, a method left out) reads "not run"."""
    from .calibration import Calibration

    runs = pd.DataFrame(result["runs"])
    rows = []
    for dtype, checks in result["checks"].items():
        mine = runs[runs["dtype"] == dtype]
        names = checks.get("methods", {})
        cal = Calibration.from_dict(result["calibration"][dtype])
        measured: Dict[str, dict] = {}
        rounds = [dict(zip(cal.samples, values)) for values in zip(*cal.samples.values())]
        per_k = {
            k: _spread([r[f"verifier_k{k}"] / r["verifier_k1"] for r in rounds])
            for k in range(2, min(6, cal.max_k) + 1)
        }
        if per_k:  # the aim holds for every k: judged at the k whose median ratio is largest
            measured["block"] = max(per_k.values(), key=lambda spread: spread["median"])
        if "drafter_step" in cal.samples:
            measured["c"] = _spread([r["drafter_step"] / r["verifier_k1"] for r in rounds])
        if cal.read_bandwidth > 0 and cal.weight_bytes.get("verifier"):
            bound = cal.bound_s("verifier")
            measured["bound"] = _spread([s / bound for s in cal.samples["verifier_k1"]])
        auto = names.get("auto")
        for key, role in (
            ("same path", "hf_greedy"),
            ("fp32 as loaded", "hf_greedy_fp32"),
            ("assisted", "hf_assisted"),
        ):
            if auto and names.get(role) and names[role] in set(mine["method"]):
                measured[key] = pairwise_ratio(mine, names[role], auto)
        if "first_auto_block" in checks:
            measured["first block"] = _spread([checks["first_auto_block"]["seconds"]])
        for aim, (key, threshold, at_most) in AIMS.items():
            m = measured.get(key)
            verdict = (
                "not run"
                if m is None
                else (
                    "PASS" if (m["median"] <= threshold if at_most else m["median"] >= threshold) else "FAIL"
                )
            )
            rows.append(
                {
                    "dtype": dtype,
                    "aim": aim,
                    "median": None if m is None else m["median"],
                    "q25": None if m is None else m["q25"],
                    "q75": None if m is None else m["q75"],
                    "n": 0 if m is None else m["n"],
                    "aim is": f"{'<=' if at_most else '>='} {threshold:g}",
                    "verdict": verdict,
                }
            )
    return pd.DataFrame(rows)


def aim_limits(result: dict) -> List[str]:
    """One sentence per aim a run of `benchmarks/engine_speed.py` misses (`engine_speed_aims`), saying
    which physics or kernel stops it, in the run's own numbers: the verifier's arithmetic at the block's
    rows against its bytes' read (at the peak FLOP/s the run measured), the drafter's bytes against the
    verifier's, and the block-cost model's best speed-up at the measured acceptance."""
    from .calibration import Calibration

    aims = engine_speed_aims(result)
    table = pd.DataFrame(result["table"])
    sentences = []
    for dtype, checks in result["checks"].items():
        cal = Calibration.from_dict(result["calibration"][dtype])
        failed = aims[(aims["dtype"] == dtype) & (aims["verdict"] == "FAIL")].set_index("aim")
        read_ms = {role: 1e3 * cal.bound_s(role) for role in ("drafter", "verifier")}
        paths = checks.get("kernel_paths") or {"drafter": "as loaded", "verifier": "as loaded"}
        t1 = 1e3 * cal.t_p(1, with_overhead=False)
        fixed = pd.DataFrame()
        if {"dtype", "method", "expected_speedup"} <= set(table.columns):
            mine = table[table["dtype"] == dtype].set_index("method")
            fixed = mine[
                mine["expected_speedup"].notna()
                & (mine.index != checks.get("methods", {}).get("verifier_only"))
            ]
        runs = pd.DataFrame(result["runs"])
        runs = runs[runs["dtype"] == dtype] if "dtype" in runs else runs
        names = checks.get("methods", {})
        for aim in failed.index:
            key, said = AIMS[aim][0], f"{aim}: {failed.loc[aim, 'median']:.2f}."
            if key == "block":
                worst = max(range(2, min(6, cal.max_k) + 1), key=lambda k: cal.t_p(k) / cal.t_p(1))
                tk = 1e3 * cal.t_p(worst, with_overhead=False)
                said += f" t_p(1) = {t1:.0f} ms, t_p({worst}) = {tk:.0f} ms on {paths['verifier']}"
                peak = checks.get("peak_flops") or 0.0
                if peak and not math.isnan(read_ms["verifier"]):
                    arithmetic = 1e3 * 2 * cal.weight_bytes["verifier"] / 4 * worst / peak
                    said += (
                        f"; the arithmetic of {worst} rows alone, 2 N k / F = {arithmetic:.0f} ms (N ~ W/4"
                        f" fp32 weights, F = {peak / 1e9:.0f} GFLOP/s measured), is"
                        f" {arithmetic / read_ms['verifier']:.0%} of the bytes' read W / B ="
                        f" {read_ms['verifier']:.0f} ms, and the kernel overlaps the two only in part"
                    )
                said += "."
            elif key == "bound":
                said += (
                    f" t_p(1) = {t1:.0f} ms against W / B = {read_ms['verifier']:.0f} ms: the kernel on"
                    f" {paths['verifier']}, not the memory."
                )
            elif key == "c":
                step = 1e3 * cal.t_q(with_overhead=False)
                said += f" The drafter's step on {paths['drafter']} takes {step:.0f} ms"
                if not math.isnan(read_ms["drafter"]):
                    ratio = cal.weight_bytes["drafter"] / cal.weight_bytes["verifier"]
                    said += (
                        f", {cal.call_over_bound('drafter'):.1f}x its bound ({ratio:.2f} of the verifier's"
                        f" bytes, {read_ms['drafter']:.0f} ms): the rest is what every call pays (operators,"
                        " Python, the cache), which fewer bytes do not remove"
                    )
                said += "."
            elif key in ("same path", "fp32 as loaded", "assisted") and not fixed.empty:
                best = fixed["expected_speedup"].idxmax()
                model_best = fixed.loc[best, "expected_speedup"]
                said += (
                    f" At the measured acceptance ({fixed.loc[best, 'acceptance']:.2f}), c ="
                    f" {cal.cost_ratio:.2f} and t_p(k)/t_p(1) as calibrated, the block-cost model's best"
                    f" speed-up over our verifier alone is {model_best:.2f} ({best}; measured"
                    f" {fixed.loc[best, 'speedup']:.2f})"
                )
                reference = {"same path": "hf_greedy", "fp32 as loaded": "hf_greedy_fp32"}.get(key)
                if reference and names.get(reference) and names.get("verifier_only"):
                    alone = pairwise_ratio(runs, names[reference], names["verifier_only"])["median"]
                    said += (
                        f", and {names[reference]} takes {alone:.2f}x our verifier alone's time: a ceiling"
                        f" of {model_best * alone:.2f} for this ratio, set by the acceptance and c."
                    )
                else:
                    said += (
                        ": transformers' assisted generation runs the same two kernels, so only its schedule"
                        " and each call's fixed cost can differ from ours."
                    )
            sentences.append(said)
    return sentences


def processor_classes(folder, this_class: str = "") -> pd.DataFrame:
    """One row per committed run of a processor class in `folder`: `engine_speed_cpu_<class>.json`, then its
    `_capped` run (another machine's processor with torch's kernels held to this class) and its `_busy` run
    (beside a heavy job): its processor, bf16 units, read bandwidth, kernel paths, and the medians of the
    headline aims; `yours` marks `this_class` (e.g. `models.processor_class.class_name()`)."""
    from pathlib import Path

    from ..models.processor_class import CLASSES

    rows = []
    for name in CLASSES:
        for suffix in ("", "_capped", "_busy"):
            path = Path(folder) / f"engine_speed_cpu_{name}{suffix}.json"
            if not path.exists():
                continue
            run = __import__("json").loads(path.read_text())
            aims = engine_speed_aims(run).set_index("aim")
            dtype, checks = next(iter(run["checks"].items()))
            machine = run.get("processor_class") or {}
            row = {
                "yours": "<- yours" if name == this_class else "",
                "class": name,
                "file": path.name,
                "processor": machine.get("model", run["device"]),
                "bf16 units": checks.get("bf16_units"),
                "read GB/s": machine.get("read_bandwidth_gb_s")
                or run["calibration"][dtype].get("read_bandwidth", 0.0) / 1e9
                or None,
                "drafter path": (checks.get("kernel_paths") or {}).get("drafter", "as loaded"),
                "verifier path": (checks.get("kernel_paths") or {}).get("verifier", "as loaded"),
                "beside": run["beside"],
            }
            if suffix == "_capped":
                row["processor"] = f"{row['processor']}, kernels held to {name}"
            row.update({aim: aims.loc[aim, "median"] for aim in AIMS if aim in aims.index})
            rows.append(row)
    if this_class and this_class not in {row["class"] for row in rows}:
        rows.append({"yours": "<- yours (no committed run)", "class": this_class})
    return pd.DataFrame(rows)


def by_batch_and_gamma(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (batch size, gamma) of `benchmarks/batch_speed.py`'s runs: tokens per second's median and
    range over rounds, the model's prediction (median), the acceptance (median) and the peak memory (max),
    the last two where the runs recorded them."""
    measures = dict(
        tokens_per_s=("tokens_per_s", "median"),
        tokens_per_s_low=("tokens_per_s", "min"),
        tokens_per_s_high=("tokens_per_s", "max"),
        predicted_tokens_per_s=("predicted_tokens_per_s", "median"),
    )
    if "acceptance" in runs:
        measures["acceptance"] = ("acceptance", "median")
    if "peak_rss_mib" in runs:
        measures["peak_rss_mib"] = ("peak_rss_mib", "max")
    table = runs.groupby(["batch_size", "gamma"]).agg(**measures).reset_index()
    table["measured_over_predicted"] = table["tokens_per_s"] / table["predicted_tokens_per_s"]
    return table


def where_speculation_pays(runs: pd.DataFrame) -> pd.DataFrame:
    """At which batch sizes each $\\gamma$ decodes more tokens per second than the verifier alone
    ($\\gamma = 0$), from `speed_runs.predict_batch_speed`'s runs: by the medians over rounds (`measured`), in
    every round (`every_round`: its slowest round faster than the verifier's fastest) and by the block-cost
    model (`predicted`). One row per gamma, each column a sorted list of batch sizes."""
    table = by_batch_and_gamma(runs)
    alone = table[table["gamma"] == 0].set_index("batch_size")
    if alone.empty:
        raise ValueError("no verifier-alone runs (gamma 0) to compare with; measure_batch_speed runs them.")
    rows = []
    for gamma, part in table[table["gamma"] > 0].groupby("gamma"):
        part = part.set_index("batch_size")
        sizes = [int(b) for b in part.index if b in alone.index]
        rows.append(
            {
                "gamma": int(gamma),
                "measured": [b for b in sizes if part.loc[b, "tokens_per_s"] > alone.loc[b, "tokens_per_s"]],
                "every_round": [
                    b for b in sizes if part.loc[b, "tokens_per_s_low"] > alone.loc[b, "tokens_per_s_high"]
                ],
                "predicted": [
                    b
                    for b in sizes
                    if part.loc[b, "predicted_tokens_per_s"] > alone.loc[b, "predicted_tokens_per_s"]
                ],
            }
        )
    return pd.DataFrame(rows, columns=["gamma", "measured", "every_round", "predicted"])


def fixed_call_costs(calibration) -> pd.DataFrame:
    """Per model of a `decoding.calibration.Calibration` (module docstring, "What a call costs whatever it
    computes"): t(1), the engine's overhead per call o, the line $t(k) = t_0 + b k$ fitted to the measured
    medians (the drafter's k = 1, 2; the verifier's k = 1..max_k), the weights' read time W / B (nan where
    the calibration did not measure bandwidth or bytes) and the fixed overhead's share of a one-token call
    (taken as $(t_0 + o) / (t(1) + o)$ where W / B is unknown). Milliseconds; one row per model."""
    import math

    import numpy as np

    overhead = calibration.overhead_s
    ks = {
        "drafter": [k for k, kind in ((1, "drafter_step"), (2, "drafter_k2")) if kind in calibration.samples],
        "verifier": list(range(1, calibration.max_k + 1)),
    }
    rows = []
    for role, measured in ks.items():
        times = [
            calibration.median("drafter_step" if k == 1 else "drafter_k2")
            if role == "drafter"
            else calibration.t_p(k, with_overhead=False)
            for k in measured
        ]
        per_token, fixed = np.polyfit(measured, times, 1) if len(measured) > 1 else (math.nan, times[0])
        bound = calibration.bound_s(role)
        overhead_part = fixed + overhead - (0.0 if math.isnan(bound) else bound)
        rows.append(
            {
                "model": role,
                "t(1) ms": 1e3 * times[0],
                "engine overhead o ms": 1e3 * overhead,
                "per extra token b ms": 1e3 * per_token,
                "fixed t_0 ms": 1e3 * fixed,
                "weights read W/B ms": 1e3 * bound,
                "k measured": f"1..{measured[-1]}",
                "fixed share beyond the weights' read": max(overhead_part, 0.0) / (times[0] + overhead),
            }
        )
    return pd.DataFrame(rows).set_index("model")
