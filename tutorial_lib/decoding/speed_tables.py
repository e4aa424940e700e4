r"""Speed measurements as tables: the committed runs of `benchmarks/engine_speed.py` and
`benchmarks/batch_speed.py`, read into DataFrames that notebook 09 shows and the benchmarks print.

**The aims.** An engine run is judged against aims stated as inequalities on medians over
(prompt, round) pairs, each computed from the run's own numbers (never copied from its verdicts):

| aim | measured as | holds when |
|---|---|---|
| a block costs what a token costs | $t_p(k) / t_p(1)$ on the verifier's kernel path (per calibration round), at the $k \le 6$ whose median is largest | $\le 1.15$ |
| the verifier's call is memory-bound | $t_p(1) / (W_p / B)$: its call over its weights' bytes read at the measured bandwidth | $\le 2$ |
| speculation pays on the same weights | time(transformers' greedy, same path) / time(`gamma="auto"`) | $\ge 2$ |
| against what a user runs first | time(transformers' greedy, fp32 as loaded) / time(`gamma="auto"`) | $\ge 5$ |
| against transformers' assisted generation | time(assisted, default schedule, same path) / time(`gamma="auto"`) | $\ge 1.3$ |
| a first call answers soon | seconds from the first `gamma="auto"` call to the end of its first block | $\le 30$ s |

| function | what |
|---|---|
| `engine_speed_methods` | one row per method: median seconds, speed-up over our verifier alone with quartiles, the model's prediction |
| `engine_speed_aims` | one row per aim: median, quartiles, threshold and verdict |
| `by_batch_and_gamma` | one row per $(B, \gamma)$ of a batch run: tokens per second, median and range over rounds |
| `where_speculation_pays` | the batch sizes at which each $\gamma$ beats the verifier alone |

The README's speed regions still read their committed runs through `engine_speed_text`,
`engine_speed_region`, `batch_speed_table`, `batch_throughput_text` and `timing_threads_text`.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Dict, List, Tuple

import pandas as pd

__all__ = ["AIMS", "engine_speed_methods", "engine_speed_aims", "pairwise_ratio", "by_batch_and_gamma",
           "where_speculation_pays", "engine_speed_text", "engine_speed_region", "batch_speed_table",
           "batch_throughput_text", "timing_threads_text"]

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
    keys = sorted({k[:2] for k in t.index if k[2] == numerator} & {k[:2] for k in t.index if k[2] == denominator})
    if not keys:
        raise ValueError(f"no (round, prompt) has both {numerator!r} and {denominator!r}")
    return _spread([t[(r, p, numerator)] / t[(r, p, denominator)] for r, p in keys])


def engine_speed_methods(result: dict) -> pd.DataFrame:
    """The methods of one engine run (the JSON `benchmarks/engine_speed.py` writes), one row each."""
    table = pd.DataFrame(result["table"])
    keep = ["dtype", "method", "median_seconds", "speedup", "speedup_q25", "speedup_q75", "time_vs_hf_greedy",
            "tokens_per_call", "acceptance", "expected_speedup", "textbook_speedup", "measured_over_expected",
            "same_tokens", "n_runs"]
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
        per_k = {k: _spread([r[f"verifier_k{k}"] / r["verifier_k1"] for r in rounds])
                 for k in range(2, min(6, cal.max_k) + 1)}
        if per_k:  # the aim holds for every k: judged at the k whose median ratio is largest
            measured["block"] = max(per_k.values(), key=lambda spread: spread["median"])
        if cal.read_bandwidth > 0 and cal.weight_bytes.get("verifier"):
            bound = cal.bound_s("verifier")
            measured["bound"] = _spread([s / bound for s in cal.samples["verifier_k1"]])
        auto = names.get("auto")
        for key, role in (("same path", "hf_greedy"), ("fp32 as loaded", "hf_greedy_fp32"),
                          ("assisted", "hf_assisted")):
            if auto and names.get(role) and names[role] in set(mine["method"]):
                measured[key] = pairwise_ratio(mine, names[role], auto)
        if "first_auto_block" in checks:
            measured["first block"] = _spread([checks["first_auto_block"]["seconds"]])
        for aim, (key, threshold, at_most) in AIMS.items():
            m = measured.get(key)
            verdict = "not run" if m is None else (
                "PASS" if (m["median"] <= threshold if at_most else m["median"] >= threshold) else "FAIL")
            rows.append({"dtype": dtype, "aim": aim, "median": None if m is None else m["median"],
                         "q25": None if m is None else m["q25"], "q75": None if m is None else m["q75"],
                         "n": 0 if m is None else m["n"], "aim is": f"{'<=' if at_most else '>='} {threshold:g}",
                         "verdict": verdict})
    return pd.DataFrame(rows)


def by_batch_and_gamma(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (batch size, gamma) of `benchmarks/batch_speed.py`'s runs: tokens per second's median and
    range over rounds, the model's prediction (median), the acceptance (median) and the peak memory (max),
    the last two where the runs recorded them."""
    measures = dict(tokens_per_s=("tokens_per_s", "median"), tokens_per_s_low=("tokens_per_s", "min"),
                    tokens_per_s_high=("tokens_per_s", "max"),
                    predicted_tokens_per_s=("predicted_tokens_per_s", "median"))
    if "acceptance" in runs:
        measures["acceptance"] = ("acceptance", "median")
    if "peak_rss_mib" in runs:
        measures["peak_rss_mib"] = ("peak_rss_mib", "max")
    table = runs.groupby(["batch_size", "gamma"]).agg(**measures).reset_index()
    table["measured_over_predicted"] = table["tokens_per_s"] / table["predicted_tokens_per_s"]
    return table


def where_speculation_pays(runs: pd.DataFrame) -> pd.DataFrame:
    """At which batch sizes each $\\gamma$ decodes more tokens per second than the verifier alone ($\\gamma = 0$),
    from `speed_runs.predict_batch_speed`'s runs: by the medians over rounds (`measured`), in every round
    (`every_round`: its slowest round faster than the verifier's fastest) and by the block-cost model
    (`predicted`). One row per gamma, each column a sorted list of batch sizes."""
    table = by_batch_and_gamma(runs)
    alone = table[table["gamma"] == 0].set_index("batch_size")
    if alone.empty:
        raise ValueError("no verifier-alone runs (gamma 0) to compare with; measure_batch_speed runs them.")
    rows = []
    for gamma, part in table[table["gamma"] > 0].groupby("gamma"):
        part = part.set_index("batch_size")
        sizes = [int(b) for b in part.index if b in alone.index]
        rows.append({"gamma": int(gamma),
                     "measured": [b for b in sizes if part.loc[b, "tokens_per_s"] > alone.loc[b, "tokens_per_s"]],
                     "every_round": [b for b in sizes
                                     if part.loc[b, "tokens_per_s_low"] > alone.loc[b, "tokens_per_s_high"]],
                     "predicted": [b for b in sizes
                                   if part.loc[b, "predicted_tokens_per_s"] > alone.loc[b, "predicted_tokens_per_s"]]})
    return pd.DataFrame(rows, columns=["gamma", "measured", "every_round", "predicted"])


# ---- the README's speed regions, in words ----


def engine_speed_text(result: dict, *, heading: bool = True) -> str:
    """One run of `benchmarks/engine_speed.py` in words and a table (its `.md` and the README's region):
    per method the median time, the speed-up over our verifier alone with quartiles over (prompt, round),
    the block-cost model's prediction beside the measurement, and the checks of issue 25 with their spread.
    `result` is the JSON the benchmark writes."""
    from .calibration import Calibration
    args = result["args"]
    pair = result["pair"]
    beside = result.get("beside") or ("a heavy job (another process keeping one core busy)"
                                      if args.get("beside_heavy_job") else "not recorded")
    lines = []
    if heading:
        lines += [f"# Engine speed: {pair[0]} drafting for {pair[1]}", ""]
    lines.append(f"Device: {result['device']}; beside it: {beside}. T = 0, {args['prompts']} prompts x {args['rounds']} "
                 f"rounds in a shuffled order, {args['max_new_tokens']} new tokens, torch {result['torch']}, "
                 f"{result['elapsed_s']:.0f} s in all. Speed-ups: medians [quartiles] over (prompt, round) of our "
                 "verifier-only time / the method's time; \"model\": the block-cost model's prediction from the "
                 "calibration and the measured acceptance; \"textbook\": Leviathan's.")
    cols = ["dtype", "method", "median s", "speed-up vs ours verifier [q25, q75]", "time / HF greedy", "tokens / call",
            "acceptance", "model", "textbook", "measured / expected", "same tokens as ours verifier"]
    lines += ["", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]

    def fmt(value, pattern):
        return "" if value is None or value != value else pattern.format(value)
    for r in result["table"]:
        lines.append(f"| {r['dtype']} | {r['method']} | {r['median_seconds']:.2f} | {r['speedup']:.2f}x "
                     f"[{r['speedup_q25']:.2f}, {r['speedup_q75']:.2f}] | {fmt(r.get('time_vs_hf_greedy'), '{:.2f}')} | "
                     f"{fmt(r.get('tokens_per_call'), '{:.2f}')} | {fmt(r.get('acceptance'), '{:.2f}')} | "
                     f"{fmt(r.get('expected_speedup'), '{:.2f}x')} | {fmt(r.get('textbook_speedup'), '{:.2f}x')} | "
                     f"{fmt(r.get('measured_over_expected'), '{:.2f}')} | {r['same_tokens']} of {r['n_runs']} |")
    lines.append("")
    verdict = lambda ok: "PASS" if ok else "FAIL"   # noqa: E731
    for dtype, c in result["checks"].items():
        cal = Calibration.from_dict(result["calibration"][dtype])
        tp = ", ".join(f"{cal.t_p(k) / cal.t_p(1):.2f}" for k in range(1, cal.max_k + 1))
        a, h = c["auto_time_over_best_fixed"], c["hf_default_time_over_auto"]
        chose = ", ".join(f"gamma = {g}: {n}" for g, n in sorted(c["auto_gammas"].items(), key=lambda kv: int(kv[0])))
        lines += [f"**{dtype}**: t_q = {cal.t_q() * 1e3:.1f} ms, t_p(1) = {cal.t_p(1) * 1e3:.1f} ms (c = {cal.cost_ratio:.2f}); "
                  f"t_p(k) / t_p(1) for k = 1..{cal.max_k}: {tp}. `gamma=\"auto\"` chose (blocks per gamma over all its "
                  f"runs) {chose}.",
                  f"- auto's time / the best fixed gamma's ({c['best_fixed']}): median {a['median']:.3f} [q25 {a['q25']:.3f}, "
                  f"q75 {a['q75']:.3f}], n = {a['n']}: {verdict(a['median'] <= 1.05)} (aim <= 1.05)",
                  f"- transformers' default assisted time / auto's: median {h['median']:.3f} [q25 {h['q25']:.3f}, "
                  f"q75 {h['q75']:.3f}], n = {h['n']}: {verdict(h['median'] >= 1.0)} (aim >= 1.0)"]
        if "first_auto_block" in c:
            first = c["first_auto_block"]
            lines.append(f"- the first `gamma=\"auto\"` call, to the end of its first block: {first['seconds']:.1f} s "
                         f"(its quick calibration {first['calibration_s']:.1f} s): "
                         f"{verdict(first['seconds'] <= 30.0)} (aim <= 30 s)")
        if c.get("auto_learned_costs"):
            lines.append("- what `gamma=\"auto\"` knew at the end of its last run (a block's seconds: calibration -> "
                         "measured mean x blocks timed -> estimate): " + "; ".join(
                             f"gamma = {r['gamma']}: {r['calibration_s'] * 1e3:.0f} ms -> "
                             + (f"{r['measured_mean_s'] * 1e3:.0f} ms x {r['blocks_timed']}" if r['blocks_timed'] else "not run")
                             + f" -> {r['estimate_s'] * 1e3:.0f} ms" for r in c["auto_learned_costs"]))
        lines += [f"- smallest measured / expected over the fixed gammas: {c['min_measured_over_expected']:.3f}: "
                  f"{verdict(c['min_measured_over_expected'] >= 0.9)} (aim >= 0.9)", ""]
    return "\n".join(lines)


def engine_speed_region(runs_by_setting: Dict[str, Tuple[Path, str]]) -> str:
    """The README's engine-speed region: each committed run of `benchmarks/engine_speed.py` (quiet, beside a
    heavy job), given as `{setting: (json path, command that makes it)}`, or a line saying which is missing
    and its command."""
    parts = []
    for setting, (path, command) in runs_by_setting.items():
        if not path.exists():
            parts.append(f"*{setting}: no committed run ({path.name}; `{command}`).*\n")
            continue
        parts.append(f"**{setting}** (`data/benchmarks/{path.name}`):\n\n"
                     + engine_speed_text(json.loads(path.read_text()), heading=False))
    return "\n".join(parts)


def batch_speed_table(path: Path) -> str:
    """Tokens per second against batch size, measured (median and range over rounds) and predicted, and at
    which batch sizes each gamma beats the verifier alone, measured and by the model (`benchmarks/batch_speed.py`)."""
    if not path.exists():
        return f"No committed run of `benchmarks/batch_speed.py` ({path.name}).\n"
    d = json.loads(path.read_text())
    runs = pd.DataFrame(d["runs"])
    table = by_batch_and_gamma(runs)
    beside = f", beside {d['beside']}" if d.get("beside") else ""
    lines = [f"{d['drafter']} drafting for {d['verifier']} ({d['dtype']}, {d['device']}, {d['torch_threads']} threads{beside}), "
             f"{d['max_new_tokens']} new tokens per row, T = 0, median [range] of {d['repeats']} shuffled rounds; gamma 0 "
             "is the verifier alone; predicted: the block-cost model from calls timed on B rows, at the run's acceptance.\n",
             "| B | gamma | tokens/s [range] | predicted | measured / predicted | peak RSS (MiB) |", "|---|---|---|---|---|---|"]
    for row in table.itertuples():
        spread = f" [{row.tokens_per_s_low:.1f}, {row.tokens_per_s_high:.1f}]" if d["repeats"] > 1 else ""
        lines.append(f"| {row.batch_size} | {row.gamma} | {row.tokens_per_s:.1f}{spread} | {row.predicted_tokens_per_s:.1f} | "
                     f"{row.tokens_per_s / row.predicted_tokens_per_s:.2f} | "
                     + (f"{row.peak_rss_mib:.0f} |" if "peak_rss_mib" in table else "not recorded |"))
    ratio = table["tokens_per_s"] / table["predicted_tokens_per_s"]
    lines.append(f"\nMeasured over predicted: {ratio.min():.2f}-{ratio.max():.2f}.")
    sizes = lambda bs: ", ".join(map(str, bs)) if bs else "none"   # noqa: E731
    pays = [f"gamma = {row.gamma}: measured at B = {sizes(row.measured)}"
            + (f" (every round: {sizes(row.every_round)})" if d["repeats"] > 1 else "")
            + f"; predicted at B = {sizes(row.predicted)}" for row in where_speculation_pays(runs).itertuples()]
    lines.append("Speculation beats the verifier alone in tokens per second (medians): " + "; ".join(pays) + ".")
    return "\n".join(lines) + "\n"


def batch_throughput_text(path: Path) -> str:
    """The batched T5 sweep against today's path (`benchmarks/t5_batch_throughput.py`): rows per minute,
    the ratio's median and range over interleaved rounds, identical rows, peak memory."""
    if not path.exists():
        return f"No committed run of `benchmarks/t5_batch_throughput.py` ({path.name}).\n"
    d = json.loads(path.read_text())
    ratio, same, rss = d["ratio"], d["identical_rows"], d["peak_rss_mib"]
    per_min = {p: [r["rows_per_min"] for r in d["runs"] if r["path"] == p] for p in ("single", "batch")}
    same_text = " and ".join(f"{v['same_text']:,} of {v['rows']:,} texts and {v['same_counters']:,} counters at `{t}`"
                             for t, v in same.items())
    return (f"The T5 offline sweep ({d['items']} sentences, {d['configurations']} configurations, batch size "
            f"{d['batch_size']}, {d['torch_threads']} thread, {d['rounds']} interleaved rounds with alternating "
            f"order): the batched path makes **{ratio['median']:.2f}x** the rows per minute of one row at a time "
            f"(median over rounds; range {ratio['low']:.2f}-{ratio['high']:.2f}x; single {min(per_min['single']):.0f}-"
            f"{max(per_min['single']):.0f}, batched {min(per_min['batch']):.0f}-{max(per_min['batch']):.0f} rows per "
            f"minute), with identical rows: {same_text}. Peak resident memory: single {rss['single']:.0f} MiB, "
            f"batched {rss['batch']:.0f} MiB.\n")


def timing_threads_text(path: Path) -> str:
    """`benchmarks/timing_threads.py`'s run: the wall time of notebook 09's timing at each thread count
    (median and range over rounds, and relative to the first count in the same round), the speed-ups each
    count measured, and what `speed_runs.use_free_cores` chose."""
    if not path.exists():
        return f"No committed run of `benchmarks/timing_threads.py` ({path.name}).\n"
    d = json.loads(path.read_text())
    first = d["threads"][0]
    plural = lambda n, word: f"{n} {word}{'s' if n != 1 else ''}"   # noqa: E731
    lines = [f"{d['drafter']} drafting for {d['verifier']}, {plural(d['prompts'], 'prompt')} x {d['max_new_tokens']} tokens, "
             f"gamma {', '.join(map(str, d['gammas']))} and the verifier alone, {d['rounds']} rounds with the thread "
             f"counts in a rotating order after an untimed pass at each, {plural(d['cores'], 'core')}, beside {d['beside']}. "
             f"When it started, `use_free_cores` chose {plural(d['use_free_cores_chose'], 'thread')} "
             f"(and the next half second, `busy_cores` read {d['busy_cores_at_start']:.1f} cores busy).\n",
             f"| threads | seconds, median [range] | time / time at {first} thread{'s' if first != 1 else ''}, "
             "median [range] | measured speed-up over the verifier (median): "
             + ", ".join(f"gamma {g}" for g in d["gammas"]) + " |", "|---|---|---|---|"]
    for t in d["threads"]:
        r = d["summary"][str(t)]
        speedups = ", ".join(f"{r['speedup_over_verifier_median'][f'gamma={g}']:.2f}" for g in d["gammas"])
        lines.append(f"| {t} | {r['seconds_median']:.1f} [{r['seconds_min']:.1f}, {r['seconds_max']:.1f}] | "
                     f"{r[f'vs_{first}_median']:.2f} [{r[f'vs_{first}_min']:.2f}, {r[f'vs_{first}_max']:.2f}] | {speedups} |")
    return "\n".join(lines) + "\n"
