r"""Speed measurements as tables: the committed runs of `benchmarks/engine_speed.py` and
`benchmarks/batch_speed.py`, read into DataFrames that notebook 09 shows and the benchmarks print.

**The aims.** An engine run is judged against aims stated as inequalities on medians over
(prompt, round) pairs, each computed from the run's own numbers (never copied from its verdicts):

- a block costs what a token costs: measured as $t_p(k) / t_p(1)$ on the verifier's kernel path (per
  calibration round), at the $k \le 6$ whose median is largest; holds when $\le 1.15$.
- the verifier's call is memory-bound: measured as $t_p(1) / (W_p / B)$: its call over its weights' bytes read
  at the measured bandwidth; holds when $\le 2$.
- speculation pays on the same weights: measured as time(transformers' greedy, same path) /
  time(`gamma="auto"`); holds when $\ge 2$.
- against what a user runs first: measured as time(transformers' greedy, fp32 as loaded) /
  time(`gamma="auto"`); holds when $\ge 5$.
- against transformers' assisted generation: measured as time(assisted, default schedule, same path) /
  time(`gamma="auto"`); holds when $\ge 1.3$.
- a first call answers soon: measured as seconds from the first `gamma="auto"` call to the end of its first
  block; holds when $\le 30$ s.

- `engine_speed_methods`   - one row per method: median seconds, speed-up over our verifier alone with
  quartiles, the model's prediction
- `engine_speed_aims`      - one row per aim: median, quartiles, threshold and verdict
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

import statistics
from typing import Dict, List

import pandas as pd

__all__ = [
    "AIMS",
    "engine_speed_methods",
    "engine_speed_aims",
    "pairwise_ratio",
    "by_batch_and_gamma",
    "where_speculation_pays",
    "fixed_call_costs",
]

#: aim -> (the comparison, the threshold, whether the measured value must be at most it)
AIMS: Dict[str, tuple] = {
    "block of k <= 6 rows / one row, t_p(k)/t_p(1)": ("block", 1.15, True),
    "verifier's call / its bandwidth bound": ("bound", 2.0, True),
    "HF greedy (same path) time / auto time": ("same path", 2.0, False),
    "HF greedy (fp32 as loaded) time / auto time": ("fp32 as loaded", 5.0, False),
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
