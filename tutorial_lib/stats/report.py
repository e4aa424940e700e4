r"""Numbers in prose come from the results: the reruns' result files and the README sentences made from them.

Notebooks 06 and 07 write their result files with the functions here (`write_t5_results`,
`write_gemma_results`), into the sweep's folder beside `rows.jsonl`:

| file | what |
|---|---|
| `claims.csv` | the claims (`tl.stats.claims`) |
| `signed_error.csv` | per method, the modelled latency's signed error against the wall time: median and quartiles (`pricing.signed_error`) |
| `latency_by_task.csv` | (Gemma-style) batch-size-1 latency per task and pooled, total over total (`analysis.latency_view`) |
| `verdicts_by_c.csv`, `flip_points.csv` | each latency claim re-priced over the drafter's relative cost c (`tl.stats.hardware`) |
| `facts.json` | the other numbers the README quotes (cost ratio, SpecDecode's relative latency, ...) |
| `answer_lengths.csv`, `paired_differences.csv`, `summary.csv` | written by the notebooks' own cells (`analysis.answer_lengths`, `paired.paired_differences`, `analysis.summarize`); the README quotes them too |

`write_t5_results` keeps `results_stamp.json` beside its files (`sweeps.result_files`): a hash of what they
were computed from and each file's SHA-256. A redraw reads the files back only if every hash still matches,
else it raises `ResultFilesChanged` naming the files, so an edited result is never shown as the run's.

`render(root)` turns those files into the README's marked regions,
`<!-- results:NAME -->` ... `<!-- /results:NAME -->`, and `python -m tutorial_lib.stats.report --write`
rewrites them in README.md (`--check` only compares). `tests/test_report.py` re-renders every
region from the committed files and fails when the README says something else, so a quoted number
cannot outlive the result it quotes. The renderers read files only: no model, no bootstrap. The Gemma-style
run's claims are also set beside those of the run it replaced (`GEMMA_EARLIER_RUN`, `claims.compare_claims`).
"""
from __future__ import annotations

import argparse
import io
import json
import math
import re
import sys
from pathlib import Path
from typing import Callable, Dict, Optional

import numpy as np
import pandas as pd

from .. import paths
from ..decoding.speed_tables import batch_speed_table, batch_throughput_text, engine_speed_region, timing_threads_text
from ..lessons.notebook import notebook_times_table
from ..sweeps.evaluation import rerun_progress_text
from ..sweeps.result_files import (RESULTS_STAMP, ResultFilesChanged, check_result_files, results_stamp,
                                   write_results_stamp)

from .analysis import distinct_runs, same_calls, same_texts_as

__all__ = ["T5_RUN", "GEMMA_RUN", "GEMMA_LATENCY_RUN", "GEMMA_LARGE_RUN", "GEMMA_EARLIER_RUN", "GEMMA_RENAMED_TASKS", "NOTEBOOK_TIMES", "write_t5_results", "write_t5_facts", "write_gemma_results",
           "ResultFilesChanged", "check_result_files", "write_results_stamp", "T5_RESULT_FILES",
           "distinct_runs", "same_texts_as", "render",
           "regions", "rewrite", "REGION"]

ROOT = paths.CHECKOUT
#: the committed runs the README quotes (folder names under data/results/)
T5_RUN = "t5-offline-b9b8c2dcad8e"
#: the Gemma-style run the README quotes, notebook 07's default: the enlarged rerun (enough items to
#: decide: HumanEval 164, arithmetic-300, facts 49), filled over several sessions
GEMMA_RUN = "gemma-offline-large-7d3b2f2acc96"
GEMMA_LATENCY_RUN = "gemma-offline-large-latency-5805bce581e2"
GEMMA_LARGE_RUN = GEMMA_RUN   # its progress region
#: the run it replaced (every item of the smaller offline sets, 3 alphas per rule), whose claims the README
#: sets beside the new ones; its tasks under the names of the tasks that replaced them
GEMMA_EARLIER_RUN = "gemma-offline-all-9a41956cad40"
GEMMA_RENAMED_TASKS = {"code": "humaneval", "arithmetic": "arithmetic-300"}
#: the aim for the enlarged rerun: at most this many hours of compute from empty on this machine
GEMMA_LARGE_AIM_HOURS = 6.0
REGION = re.compile(r"(<!-- results:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /results:(?P=name) -->)", re.S)
GRID_RESAMPLES = 400
#: The cost model's aim: |median signed error| per method at most this.
AIM = 0.05


# ---- writing the result files (the notebooks call these) ----------------------------------------

def _relative_total(rows: pd.DataFrame, label: str, temperature: float, column: str) -> float:
    part = rows[rows["temperature"] == temperature]
    verifier = part.loc[part["method"] == "verifier", column].sum()
    return float(part.loc[part["label"] == label, column].sum() / verifier)


_T5_TABLES = ("claims", "signed_error", "verdicts_by_c", "flip_points")
#: what `write_t5_results` writes, so what its stamp (`sweeps.result_files`) hashes
T5_RESULT_FILES = (*(f"{name}.csv" for name in _T5_TABLES), "facts.json")


def write_t5_results(rows: pd.DataFrame, tasks, folder, calibration, *, n_resamples: int = 2000,
                     grid_resamples: int = GRID_RESAMPLES, table: Optional[pd.DataFrame] = None,
                     progress: bool = True, clock_rows: Optional[pd.DataFrame] = None,
                     recompute: bool = False) -> Dict[str, pd.DataFrame]:
    """The T5 run's result files (module docstring) from its priced rows; returns the tables. `clock_rows`:
    priced rows decoded at batch size 1 for the signed error against the clock, where `rows` were batched
    (their wall times are shares of a batch); None: `rows` themselves.

    The re-pricing over `c` takes minutes, so files computed from the same rows, calibration, settings
    and code (`results_stamp`, kept in `results_stamp.json`) are read back instead: redrawing the
    committed run recomputes nothing. Read back only if each file still has the SHA-256 recorded when it
    was written: else `ResultFilesChanged`, naming the files (`recompute=True` computes them again)."""
    from . import claims, hardware, pricing
    folder = Path(folder)
    clock_folder = (clock_rows if clock_rows is not None else rows).attrs.get("path", folder)
    stamp = results_stamp([folder, clock_folder], table, calibration=calibration.to_dict(), n_resamples=n_resamples,
                          grid_resamples=grid_resamples, rows=len(rows), tasks=[getattr(t, "name", str(t)) for t in tasks],
                          clock_wall_s=None if clock_rows is None else float(clock_rows["wall_time_s"].sum()))
    stamp_path = folder / RESULTS_STAMP
    try:
        kept = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
    except ValueError:
        kept = {}
    if not recompute and isinstance(kept, dict) and kept.get("t5_results") == stamp:
        # the same inputs: the files must be the ones computed from them; edited ones are refused, not
        # recomputed in place, so an edit is never shown and never quietly overwritten
        checked = check_result_files(folder, T5_RESULT_FILES, recompute=(
            "report.write_t5_results(..., recompute=True), or delete "
            f"{stamp_path} and run notebook 06 again (minutes)"))
        return {name: pd.read_csv(io.BytesIO(checked[f"{name}.csv"])) for name in _T5_TABLES}
    column = pricing.LATENCY_COLUMN
    claims_table = claims.t5_claims(rows, tasks, cost=column, n_resamples=n_resamples)
    claims_table.to_csv(folder / "claims.csv", index=False)
    errors = pricing.signed_error(rows if clock_rows is None else clock_rows, by=["label", "temperature"])
    errors.to_csv(folder / "signed_error.csv", index=False)
    machine = hardware.machine_c(calibration)
    grid = hardware.verdict_grid(
        rows, calibration, lambda priced, cost: claims.t5_claims(priced, tasks, cost=cost, n_resamples=grid_resamples),
        extra_points={"this machine": machine, "paper's T5 pair (estimate)": hardware.PAPER_T5_C}, progress=progress)
    grid.to_csv(folder / "verdicts_by_c.csv", index=False)
    flips = hardware.flip_points(grid)
    flips.to_csv(folder / "flip_points.csv", index=False)
    write_t5_facts(rows, folder, calibration, table=table, grid_resamples=grid_resamples)
    write_results_stamp(folder, stamp, T5_RESULT_FILES, "t5_results")
    return _read_tables(folder, _T5_TABLES)   # as read back, so a computed and a reused run return alike


def _read_tables(folder: Path, names) -> Dict[str, pd.DataFrame]:
    return {name: pd.read_csv(folder / f"{name}.csv") for name in names}


def write_t5_facts(rows: pd.DataFrame, folder, calibration, *, table: Optional[pd.DataFrame] = None,
                   grid_resamples: int = GRID_RESAMPLES) -> dict:
    """`facts.json` of the T5 run: the numbers its README sentences quote (cost ratio, step times,
    SpecDecode's relative latency, configurations with the same calls, distinct runs at `T = 0`, the
    speculative methods' extra latency at the verifier's quality from `table`)."""
    from . import hardware, pricing
    column = pricing.LATENCY_COLUMN
    per_rule = rows[(rows["method"] == "speculative") & (rows["temperature"] == 0.0)].groupby("label")["config"].nunique()
    facts = {"c": hardware.machine_c(calibration), "drafter_step_ms": 1e3 * calibration.t_q(with_overhead=False),
             "verifier_step_ms": 1e3 * calibration.t_p(1, with_overhead=False),
             "spec_relative_latency": {str(t): _relative_total(rows, "SpecDecode", t, column)
                                       for t in sorted(set(rows["temperature"]))},
             "same_calls_T0": same_calls(rows, 0.0), "distinct_runs_T0": distinct_runs(rows, 0.0),
             "configurations_per_rule": int(per_rule.max()) if len(per_rule) else 0,   # 0: no T = 0 rows
             "configurations_T0": {label: int(n) for label, n in per_rule.items() if label != "SpecDecode"},
             "not_run_T0": sorted(set(rows.loc[(rows["method"] == "speculative") & (rows["temperature"] != 0.0), "label"])
                                  - set(per_rule.index)),
             "same_as_diff_T0": {label: same_texts_as(rows, label, "SpecCascade [Diff]", 0.0)
                                 for label in ("SpecCascade [OPT]", "SpecCascade [Token-V1]")},
             "paper_c": hardware.PAPER_T5_C,
             "paper_c_source": hardware.PAPER_T5_SOURCE, "grid_resamples": grid_resamples}
    if table is not None:
        cold = table[(table["temperature"] == 0.0) & table["method"].str.startswith(("SpecCascade", "SpecDecode", "Lossy",
                                                                                      "BiLD*"))]
        reached = pd.to_numeric(cold["reduction_at_verifier_quality"], errors="coerce").dropna()
        facts["speculative_extra_latency_T0"] = [float(-reached.max()), float(-reached.min())]
    path = Path(folder) / "facts.json"
    if path.exists():   # how the sweep was run is said once, when it ran; a redraw keeps it
        facts = {**facts, **{k: v for k, v in json.loads(path.read_text()).items() if k == "run"}}   # where it was: last
    path.write_text(json.dumps(facts, indent=1))
    return facts


def write_gemma_results(rows: pd.DataFrame, tasks, folder, calibration, latency_rows: pd.DataFrame, *,
                        t5_rows=None, t5_tasks=None, n_resamples: int = 2000, progress: bool = True
                        ) -> Dict[str, pd.DataFrame]:
    """The Gemma-style run's result files (module docstring); `latency_rows` are its batch-size-1
    latency rows, priced with `calibration`."""
    from . import analysis, claims, hardware, pricing
    folder = Path(folder)
    claims_table = claims.gemma_claims(rows, tasks, t5_rows=t5_rows, t5_tasks=t5_tasks, n_resamples=n_resamples)
    claims_table.to_csv(folder / "claims.csv", index=False)
    column = pricing.LATENCY_COLUMN
    by_task = analysis.latency_view(latency_rows, latency=column, tasks=tasks, n_resamples=n_resamples)
    by_task.to_csv(folder / "latency_by_task.csv", index=False)
    errors = pricing.signed_error(latency_rows, by=["label", "gamma"])
    errors.to_csv(folder / "signed_error.csv", index=False)
    machine = hardware.machine_c(calibration)

    def pooled_claims(priced, cost):
        table = hardware.latency_claims(priced, column=cost, n_resamples=GRID_RESAMPLES)
        return table[table["task"] == analysis.POOLED]

    grid = hardware.verdict_grid(latency_rows, calibration, pooled_claims,
                                 extra_points={"this machine": machine,
                                               "paper's T5 pair (estimate)": hardware.PAPER_T5_C}, progress=progress)
    grid.to_csv(folder / "verdicts_by_c.csv", index=False)
    flips = hardware.flip_points(grid, keys=("claim", "temperature"))
    flips.to_csv(folder / "flip_points.csv", index=False)
    facts = {"c": machine, "drafter_step_ms": 1e3 * calibration.t_q(with_overhead=False),
             "verifier_step_ms": 1e3 * calibration.t_p(1, with_overhead=False), "grid_resamples": GRID_RESAMPLES,
             "latency_items": int(latency_rows.groupby("task")["example_id"].nunique().sum()),
             "paper_c": hardware.PAPER_T5_C, "paper_c_source": hardware.PAPER_T5_SOURCE}
    (folder / "facts.json").write_text(json.dumps(facts, indent=1))
    return {"claims": claims_table, "latency_by_task": by_task, "signed_error": errors, "verdicts_by_c": grid,
            "flip_points": flips}


# ---- rendering -----------------------------------------------------------------------------------

def _number(value: float, digits: int = 3, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = f"{value:+.{digits}g}" if signed else f"{value:.{digits}g}"
    return text


def _interval(row) -> str:
    if row["verdict"] == "not measurable here":
        return "-"
    low = "(-inf" if np.isneginf(row["low"]) else f"[{_number(row['low'])}"
    high = "inf)" if np.isposinf(row["high"]) else f"{_number(row['high'])}]"
    return f"{_number(row['estimate'], signed=True)} {low}, {high}"


def _claims_table(claims: pd.DataFrame, with_task: bool) -> str:
    head = "| claim |" + (" task |" if with_task else "") + \
        " T | estimate [95% interval] | verdict | noise floor (SpecDecode - verifier) | n needed | detail or reason |\n"
    head += "|---|" + ("---|" if with_task else "") + "---|---|---|---|---|---|\n"
    lines = []
    for _, row in claims.iterrows():
        floor = f"{_number(row['noise_floor'], signed=True)} [{_number(row['noise_floor_low'])}, " \
                f"{_number(row['noise_floor_high'])}]" if not pd.isna(row.get("noise_floor")) else ""
        needed = "" if pd.isna(row["n_needed"]) else f"{int(row['n_needed']):,}"
        why = row["reason"] if isinstance(row.get("reason"), str) and row["reason"] else row.get("detail", "")
        why = "" if pd.isna(why) else str(why)
        lines.append(f"| {row['claim']} |" + (f" {row['task']} |" if with_task else "") +
                     f" {row['temperature']:g} | {_interval(row)} | {row['verdict']} | {floor} | {needed} | {why} |")
    return head + "\n".join(lines) + "\n"


def _errors_table(errors: pd.DataFrame, keys) -> str:
    head = "| " + " | ".join(keys) + " | rows | median | quartiles |\n|" + "---|" * (len(keys) + 3) + "\n"
    lines = []
    for _, row in errors.iterrows():
        values = [f"{row[k]:g}" if isinstance(row[k], float) else str(row[k]) for k in keys]
        lines.append("| " + " | ".join(values) + f" | {int(row['n_rows'])} | {row['median']:+.1%} | "
                     f"{row['q25']:+.1%} / {row['q75']:+.1%} |")
    name = lambda row: " ".join(f"{k} {row[k]:g}" if isinstance(row[k], float) else str(row[k]) for k in keys)
    missed = [f"{name(row)} ({row['median']:+.1%})" for _, row in errors.iterrows() if abs(row["median"]) > AIM]
    verdict = (f"\n{len(errors) - len(missed)} of {len(errors)} methods meet the aim |median| <= {AIM:.0%}; "
               + (f"missed by {', '.join(missed)}.\n" if missed else "none misses it.\n"))
    return head + "\n".join(lines) + "\n" + verdict


def _flips(flips: pd.DataFrame, facts: dict) -> str:
    lines = []
    for (claim, *rest), part in flips.groupby(["claim"] + [c for c in ("task", "temperature", "gamma")
                                                          if c in flips.columns], sort=False):
        where = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in zip([c for c in ("task", "temperature", "gamma") if c in flips.columns], rest)
                          if k != "task" or v)
        said = []
        for verifier, sub in part.groupby("verifier_cost", sort=False):
            changes = sub.dropna(subset=["c_below"])
            if changes.empty:
                verdict = sub["verdict_below"].iloc[0]
                said.append(f"with the verifier's block {verifier}, it "
                            f"{verdict if verdict in ('holds', 'does not hold') else 'is ' + verdict} at every c "
                            "from 0.02 to 1")
            else:
                said.append(f"with the verifier's block {verifier}, " + "; ".join(
                    f"it turns from {r.verdict_below} to {r.verdict_above} between c = {r.c_below:.3g} and "
                    f"{r.c_above:.3g}" for r in changes.itertuples()))
        lines.append(f"- **{claim}** ({where}): " + "; ".join(said) + ".")
    lines.append(f"\nThis machine's c is {facts['c']:.2f}; the paper's T5-small -> T5-large pair is at about "
                 f"{facts['paper_c']:.3f} ({facts['paper_c_source']}). Verdicts on the "
                 f"grid use {facts['grid_resamples']} resamples of the items.")
    return "\n".join(lines) + "\n"


def _latency_table(view: pd.DataFrame) -> str:
    head = "| method | gamma | task | items | latency / verifier's (total over total) [95%] | quality (its metric) |\n" \
           "|---|---|---|---|---|---|\n"
    lines = []
    for _, row in view[view["method"] != "verifier"].iterrows():
        quality = "not pooled (different metrics)" if not row["quality_metric"] or pd.isna(row["quality_metric"]) \
            else f"{row['quality']:.3f} ({row['quality_metric']})"
        lines.append(f"| {row['label']} | {int(row['gamma'])} | {row['task']} | {int(row['n_items'])} | "
                     f"{row['latency']:.3f} [{row['latency_low']:.3f}, {row['latency_high']:.3f}] | {quality} |")
    return head + "\n".join(lines) + "\n"


def _rules_in_engines(path: Path) -> str:
    from .learned_deferral import rules_in_engines_text   # torch and scikit-learn: only when rendered
    return rules_in_engines_text(path)


def regions(root: Optional[Path] = None) -> Dict[str, Callable[[], str]]:
    """The README's regions, each a function that renders it from the committed result files."""
    results = Path(root or ROOT) / "data" / "results"
    t5, gemma, earlier = results / T5_RUN, results / GEMMA_RUN, results / GEMMA_EARLIER_RUN
    read = lambda folder, name: pd.read_csv(folder / name)
    facts = lambda folder: json.loads((folder / "facts.json").read_text())

    def t5_cost() -> str:
        f = facts(t5)
        spec, same = f["spec_relative_latency"], f["same_calls_T0"]
        low, high = f["speculative_extra_latency_T0"]
        return (f"With this synthetic pair a drafter step costs {f['c']:.2f} of a verifier step "
                f"({f['drafter_step_ms']:.2f} ms against {f['verifier_step_ms']:.2f} ms: calls this small are "
                f"mostly fixed costs), so on the latency axis no speculative method is faster than the verifier, "
                f"whatever its rule: SpecDecode costs {spec['0.0']:.2f} times the verifier at `T = 0` "
                f"({spec['1.0']:.2f} at `T = 1`; total modelled latency over the verifier's). Every speculative "
                f"method that reaches the verifier's quality at `T = 0` does so only at {low:.0%}-{high:.0%} *more* "
                f"latency. Configurations that make the same calls on every sentence get the same modelled latency: "
                f"at `T = 0`, {same['configurations']} configurations in {same['groups']} groups, the largest of "
                f"{same['largest']} (SpecDecode and the runs whose calls equal its own).\n")

    def t5_run() -> str:
        f = facts(t5)
        run = f.get("run")
        if run is None:
            return "*The facts of this run do not say how it was run (rerun notebook 06 to write them).*\n"
        alphas = ("placed per temperature from token-level analyses of the pair (at `T = 1` at rejection levels "
                  "spread evenly along each curve, `tl.reruns.T5_OFFLINE_ALPHAS`; at `T = 0`, where the curve is a "
                  "staircase, one alpha per step, `tl.reruns.T5_OFFLINE_ALPHAS_T0`)" if run.get("alphas_per_temperature")
                  else "placed from a token-level analysis of the pair (`tl.reruns.T5_OFFLINE_ALPHAS`)")
        return (f"*{run['examples']} held-out sentences, `gamma = {run['gammas']}`, `T` = {run['temperatures']}. "
                f"Every speculative rule has up to 5 interior `alpha` values plus its two ends, {alphas}; the other "
                f"curves have {run['n_alpha']}-point grids ({run['configurations']} configurations, {run['rows']:,} rows). "
                "Quality is corpus BLEU (sacrebleu). The x axis is latency relative to the verifier, modelled from "
                "the calls each row counted: in the top figure priced with the measured CPU calibration of this pair "
                "on this machine (`calibration.json` beside the rows), in the bottom figure at the accelerator "
                f"pricing, where scoring `k` tokens costs one step. The sweep ran from an empty results folder in "
                f"{run['sweep_seconds']:.0f} s ({run['sweep_seconds'] / 60:.1f} min) on {run['finished']}, beside "
                f"{run['beside']}."
                + (f" Its calibration: {run['calibration'].split('; ', 2)[-1]}." if "reused" in run.get("calibration", "")
                   else "") + "*\n")

    def t5_distinct() -> str:
        f = facts(t5)
        runs, counts = f["distinct_runs_T0"], f["configurations_T0"]
        listed = "; ".join(f"{label} {n} of {counts.get(label, '?')}" for label, n in runs.items())
        absent = f.get("not_run_T0", [])
        left_out = (f" {' and '.join(absent)} {'are' if len(absent) > 1 else 'is'} not run at `T = 0`: there "
                    "they are SpecDecode for every alpha below 1 (exact, the verifier's greedy text), so their runs "
                    "would only repeat SpecDecode's." if absent else
                    " Lossy SpecDecode is exact at `T = 0` (its output law is the verifier's greedy text), so its "
                    "runs there are SpecDecode's, not points of its own.")
        same = "".join(f" {label} emits exactly Diff's texts at {n['same']} of the {n['shared_alphas']} alphas they "
                       "share (at `T = 0` both reduce to Diff's test on the drafted top token)."
                       for label, n in f.get("same_as_diff_T0", {}).items() if n["shared_alphas"])
        return (f"At `T = 0` the distinct runs of each rule's own among its configurations (alphas, ends included; "
                f"texts unlike SpecDecode's, the drafter's and each other's on some sentence): {listed}.{left_out}"
                f"{same} The claims drop runs that are not a rule's own (`tl.claims.own_configurations`).\n")

    def notebook_times() -> str:
        return notebook_times_table(Path(root or ROOT) / NOTEBOOK_TIMES)

    def gemma_task(*prefixes: str) -> str:
        names = pd.unique(read(gemma, "answer_lengths.csv")["task"])
        return next(n for n in names if n.startswith(prefixes))

    def gemma_run() -> str:
        summary, lengths = read(gemma, "summary.csv"), read(gemma, "answer_lengths.csv")
        metrics = read(gemma, "latency_by_task.csv").dropna(subset=["quality_metric"]).drop_duplicates("task")
        metric = dict(zip(metrics["task"], metrics["quality_metric"]))
        temperatures = sorted(summary["temperature"].unique(), reverse=True)

        def cell(task, label, column) -> str:
            values = []
            for t in temperatures:
                hit = summary[(summary["task"] == task) & (summary["label"] == label) & (summary["temperature"] == t)
                              & summary["end"].isna()]
                values.append(f"{hit[column].iloc[0]:.{3 if column == 'rejection_rate' else 2}f}" if len(hit)
                              else "not run")
            return " / ".join(values)

        def cut(task, label="Verifier") -> str:
            return " / ".join(f"{v:.1%}" for v in (lengths[(lengths["task"] == task) & (lengths["label"] == label) &
                                                           (lengths["temperature"] == t)]["cut_rate"].mean()
                                                   for t in temperatures))

        when = " / ".join(f"T={t:g}" for t in temperatures)
        head = (f"| task (items) | metric | drafter {when} | verifier {when} | SpecDecode rejection rate {when} | "
                f"verifier's cut rate {when} |\n|---|---|---|---|---|---|\n")
        lines = [f"| {task} ({int(summary[summary['task'] == task]['n'].max())}) | {metric.get(task, '')} | "
                 f"{cell(task, 'Drafter', 'quality')} | {cell(task, 'Verifier', 'quality')} | "
                 f"{cell(task, 'SpecDecode', 'rejection_rate')} | {cut(task)} |" for task in pd.unique(summary["task"])]
        others = lengths[~lengths["label"].isin(["Verifier", "Drafter"])]
        per_method = others.groupby(["task", "temperature", "label"])["cut_rate"].mean()
        (task, t, label), top = per_method.idxmax(), per_method.max()
        single = others.loc[others["cut_rate"].idxmax()]
        return (head + "\n".join(lines) + "\n\n"
                f"The cut rate is the share of answers that reached `max_new_tokens` (`answer_lengths.csv`). Of the "
                f"other methods (mean over a method's alphas) the highest is {top:.1%}, {label} on {task} at "
                f"`T = {t:g}`; the highest single configuration {single['cut_rate']:.1%} ({single['label']} at "
                f"`alpha = {single['alpha']:.3g}`, {single['task']}, `T = {single['temperature']:g}`).\n")

    def gemma_answer_lengths() -> str:
        table = read(gemma, "answer_lengths.csv")
        arithmetic, code = gemma_task("arithmetic"), gemma_task("humaneval", "code")
        cold = table[(table["task"] == arithmetic) & (table["temperature"] == 0.0)]
        one = lambda label: cold[cold["label"] == label]
        token = one("SpecCascade [Token-V2]").sort_values("alpha")
        verifier, spec = one("Verifier").iloc[0], one("SpecDecode").iloc[0]
        ratio = token["verifier_calls_per_answer"] / verifier["verifier_calls_per_answer"] - 1
        words = lambda r: f"{abs(r):.0%} {'more' if r >= 0 else 'fewer'}"
        drafter = (f" and the drafter in {one('Drafter').iloc[0]['answer_tokens']:.1f}" if len(one("Drafter"))
                   else " (the drafter alone is not run at `T = 0`)")
        tokens = ", ".join(f"{t:.1f}" for t in token["answer_tokens"])
        alphas = ", ".join(f"{a:.3g}" for a in token["alpha"])
        calls = (words(ratio.iloc[0]) if len(ratio) == 1 else f"{words(ratio.min())} to {words(ratio.max())}")
        summary = read(gemma, "summary.csv")
        rate = lambda label: summary[(summary["task"] == arithmetic) & (summary["temperature"] == 0.0) &
                                     (summary["label"] == label) & summary["end"].isna()]["rejection_rate"]
        token_rates, spec_rate = rate("SpecCascade [Token-V2]"), float(rate("SpecDecode").iloc[0])
        rates = ", ".join(f"{r:.3f}" for r in token_rates)
        compared = ("lower than" if token_rates.max() < spec_rate else "higher than" if token_rates.min() > spec_rate
                    else "around")
        lesson = (f"while its rejection rate ({rates}) is {compared} SpecDecode's ({spec_rate:.3f})"
                  + (": a cost per token would hide the longer answers" if ratio.min() > 0 else ""))
        warm = table[(table["task"] == code) & (table["temperature"] == 1.0)]
        v1 = warm[warm["label"] == "SpecCascade [Token-V1]"]["answer_tokens"]
        warm_verifier = warm[warm["label"] == "Verifier"]["answer_tokens"].iloc[0]
        v1_text = f"{v1.iloc[0]:.1f}" if len(v1) == 1 else f"{v1.min():.1f}-{v1.max():.1f}"
        cost = (f" At batch size 1, with the measured CPU calibration, its modelled latency per answer is "
                f"{token['cost_per_answer'].min():.1f}" + (f"-{token['cost_per_answer'].max():.1f}" if len(token) > 1 else "")
                + f" s, against {spec['cost_per_answer']:.1f} s for SpecDecode and {verifier['cost_per_answer']:.1f} s "
                "for the verifier." if "cost_per_answer" in token and token["cost_per_answer"].notna().all() else "")
        return (f"Answer length, per rule (`answer_lengths.csv`). On {arithmetic} at `T = 0` the verifier answers in "
                f"{verifier['answer_tokens']:.1f} tokens on average{drafter}. Token-V2 (alpha {alphas}) answers in "
                f"{tokens} tokens, so it makes {calls} verifier calls per answer than the verifier alone, {lesson}.{cost} "
                f"On {code} at `T = 1` Token-V1 answers in {v1_text} tokens against the verifier's "
                f"{warm_verifier:.1f}.\n")

    def gemma_claims_compared() -> str:
        from .claims import compare_claims
        both = compare_claims(read(earlier, "claims.csv"), read(gemma, "claims.csv"), GEMMA_RENAMED_TASKS)

        def side(row, which: str) -> str:
            if pd.isna(row[f"verdict_{which}"]):
                return "not in this run"
            values = {k: row[f"{k}_{which}"] for k in ("estimate", "low", "high", "verdict")}
            n = "" if pd.isna(row[f"n_{which}"]) else f" (n {int(row[f'n_{which}'])})"
            return f"{_interval(values)}, {values['verdict']}{n}"

        head = ("| claim | task | T | earlier run: estimate [95%], verdict (n items) | this run | verdict changed |\n"
                "|---|---|---|---|---|---|\n")
        lines = [f"| {row['claim']} | {row['task']} | {row['temperature']:g} | {side(row, 'before')} | "
                 f"{side(row, 'after')} | {'yes' if row['changed'] else 'no'} |" for _, row in both.iterrows()]
        counts = lambda which: "; ".join(f"{verdict} {n}" for verdict, n in both[f"verdict_{which}"].value_counts().items())
        return (head + "\n".join(lines) + f"\n\n{int(both['changed'].sum())} of {len(both)} verdicts changed. "
                f"Verdicts of the earlier run: {counts('before')}; of this run: {counts('after')}.\n")

    def gemma_paired() -> str:
        table = read(gemma, "paired_differences.csv")
        separated = table[(table["low"] > 0) | (table["high"] < 0)]
        width = table["high"] - table["low"]
        return (f"**Paired differences** (`paired_differences.csv`, 2,000 resamples): {len(separated)} of {len(table)} "
                f"(configuration, reference) pairs differ at 95% ({int((separated['low'] > 0).sum())} above, "
                f"{int((separated['high'] < 0).sum())} below). The median interval width of a difference is "
                f"{width[table['versus'] == 'Verifier'].median():.2f} against the verifier and "
                f"{width[table['versus'] == 'SpecDecode'].median():.2f} against SpecDecode.\n")

    def t5_contexts() -> str:
        table = pd.read_csv(t5 / "quality_by_context.csv")
        temperature = f"{table['temperature'].iloc[0]:g}"
        n = table["n"].unique()
        items = f"{int(n[0])} held-out sentences each" if len(n) == 1 else "held-out sentences: n per row"
        lines = []
        for _, row in table.iterrows():
            drafter_wins = row["Drafter"] > row["Verifier"]
            cell = lambda v, bold: f"**{v:.1f}**" if bold else f"{v:.1f}"
            lines.append(f"| {row['group']} | {cell(row['Drafter'], drafter_wins)} | {cell(row['Verifier'], drafter_wins)} |"
                         + ("" if len(n) == 1 else f" {int(row['n'])} |"))
        head = (f"| context ({items}, T = {temperature}) | drafter mean sentence BLEU | verifier mean sentence BLEU |"
                + ("" if len(n) == 1 else " n |") + "\n|---|---|---|" + ("" if len(n) == 1 else "---|") + "\n")
        wins = table.loc[table["Drafter"] > table["Verifier"], "group"].tolist()
        return (head + "\n".join(lines) + "\n\nIn bold: where the drafter beats the verifier "
                f"({', '.join(wins) if wins else 'nowhere'}; `quality_by_context.csv`, `analysis.quality_by_group`).\n")

    def t5_paired() -> str:
        table = read(t5, "paired_differences.csv")
        separated = table[(table["low"] > 0) | (table["high"] < 0)]
        return (f"{len(separated)} of the {len(table)} paired differences (to the verifier and to SpecDecode, "
                f"2,000 resamples of the sentences) exclude 0 ({int((separated['low'] > 0).sum())} above, "
                f"{int((separated['high'] < 0).sum())} below).\n")

    def t5_findings() -> str:
        from .analysis import t5_findings_text
        return t5_findings_text(t5)

    return {
        "notebook-times": notebook_times,
        "batch-throughput": lambda: batch_throughput_text(Path(root or ROOT) / "data" / "benchmarks" / "t5_batch_throughput_cpu.json"),
        "timing-threads": lambda: timing_threads_text(Path(root or ROOT) / "data" / "benchmarks" / "timing_threads_cpu.json"),
        "batch-speed": lambda: "\n".join(
            batch_speed_table(Path(root or ROOT) / "data" / "benchmarks" / f"batch_speed_{profile}_cpu.json")
            for profile in ("qwen", "default")),
        "engine-speed": lambda: engine_speed_region({
            "Quiet machine": (Path(root or ROOT) / "data" / "benchmarks" / "engine_speed_cpu.json",
                              "python benchmarks/engine_speed.py"),
            "Beside a heavy job": (Path(root or ROOT) / "data" / "benchmarks" / "engine_speed_cpu_busy.json",
                                   "python benchmarks/engine_speed.py --beside-heavy-job "
                                   "--output data/benchmarks/engine_speed_cpu_busy")}),
        "t5-paired": t5_paired,
        "t5-findings": t5_findings,
        "rules-in-engines": lambda: _rules_in_engines(results / "rules-in-engines.metrics.json"),
        "t5-contexts": t5_contexts,
        "gemma-large-progress": lambda: rerun_progress_text(
            results / GEMMA_LARGE_RUN, "nice python benchmarks/gemma_rerun.py --profile offline-large --latency",
            aim_hours=GEMMA_LARGE_AIM_HOURS),
        "gemma-run": gemma_run,
        "gemma-answer-lengths": gemma_answer_lengths,
        "gemma-claims-compared": gemma_claims_compared,
        "gemma-paired": gemma_paired,
        "t5-distinct": t5_distinct,
        "t5-run": t5_run,
        "t5-cost": t5_cost,
        "t5-claims": lambda: _claims_table(read(t5, "claims.csv"), with_task=False),
        "t5-signed-error": lambda: _errors_table(read(t5, "signed_error.csv"), ["label", "temperature"]),
        "t5-flips": lambda: _flips(read(t5, "flip_points.csv"), facts(t5)),
        "gemma-claims": lambda: _claims_table(read(gemma, "claims.csv"), with_task=True),
        "gemma-latency": lambda: _latency_table(read(gemma, "latency_by_task.csv")),
        "gemma-signed-error": lambda: _errors_table(read(gemma, "signed_error.csv"), ["label", "gamma"]),
        "gemma-flips": lambda: _flips(read(gemma, "flip_points.csv"), facts(gemma)),
    }


#: Where `make run-notebooks` appends each notebook's time (copied from build/notebooks after a run).
NOTEBOOK_TIMES = Path("data") / "benchmarks" / "notebook_times.jsonl"


def render(root: Optional[Path] = None) -> Dict[str, str]:
    """Every region's text, rendered from the result files under `root` (the repository)."""
    return {name: make() for name, make in regions(root).items()}


def rewrite(text: str, rendered: Dict[str, str]) -> str:
    """`text` with each marked region's body replaced by its rendering; a region in the text that
    is not rendered, or a rendered one missing from the text, is an error naming it."""
    found = {m.group("name") for m in REGION.finditer(text)}
    unknown, missing = found - set(rendered), set(rendered) - found
    if unknown or missing:
        raise ValueError(f"README regions {sorted(unknown)} have no renderer and {sorted(missing)} are not in the "
                         "README; add `<!-- results:NAME -->` ... `<!-- /results:NAME -->` or a renderer.")
    return REGION.sub(lambda m: m.group(1) + rendered[m.group("name")] + m.group(4), text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Render the README's result regions from the committed result files.")
    parser.add_argument("--write", action="store_true", help="rewrite README.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md differs from the rendering")
    args = parser.parse_args(argv)
    path = ROOT / "README.md"
    text = path.read_text()
    new = rewrite(text, render())
    if args.write:
        path.write_text(new)
        print(f"README.md: {sum(1 for _ in REGION.finditer(new))} regions rendered")
    elif args.check:
        if new != text:
            print("README.md does not match the committed results; run python -m tutorial_lib.stats.report --write")
            return 1
        print("README.md matches the committed results")
    else:
        sys.stdout.write("".join(f"## {k}\n{v}\n" for k, v in render().items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
