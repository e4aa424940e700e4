r"""The reruns' result files: what notebooks 06 and 07 compute from a sweep's rows and keep beside them.

Notebooks 06 and 07 write their result files with the functions here (`write_t5_results`,
`write_gemma_results`), into the sweep's folder beside `rows.jsonl`:

- `claims.csv` - the claims (`stats.claims`).
- `headline.csv` - (T5) the headline claim's statistics on this run, as on the Gemma-style headline run
  (`claims.headline_table` at the Token rules' block size), so both reruns answer it in the same terms.
- `signed_error.csv` - per method, the modelled latency's signed error against the wall time: median and
  quartiles (`pricing.signed_error`).
- `latency_by_task.csv` - (Gemma-style) batch-size-1 latency per task and pooled, total over total
  (`analysis.latency_view`).
- `verdicts_by_c.csv`, `flip_points.csv` - each latency claim re-priced over the drafter's relative cost c
  (`stats.hardware`).
- `noise_floor.csv` - (Gemma-style) per task and temperature, the same-law noise floor in the quality and
  rejection-rate units (`paired.same_law_floor`; from the second-seed run where one is saved).
- `facts.json` - the run's other numbers (cost ratio, step times, SpecDecode's relative latency, ...) that the
  notebooks' prose quotes.
- `answer_lengths.csv`, `paired_differences.csv`, `summary.csv` - written by the notebooks' own cells
  (`analysis.answer_lengths`, `paired.paired_differences`, `analysis.summarize`).

`write_t5_results` keeps `results_stamp.json` beside its files (`sweeps.result_files`): a hash of what they
were computed from and each file's SHA-256. A redraw reads the files back only if every hash still matches,
else it raises `ResultFilesChanged` naming the files, so an edited result is never shown as the run's.
The notebooks show these tables with their own cells and glue the numbers their prose quotes
(`lessons.notebook.glue_values`); nothing here writes sentences. The Gemma-style run's claims are also set
beside those of the run it replaced (`sweeps.reruns.EARLIER_PROFILES`, `reruns.earlier_claims`,
`claims.compare_claims`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Dict, Optional

import pandas as pd

from ..sweeps.result_files import (
    RESULTS_STAMP,
    check_result_files,
    results_stamp,
    write_json,
    write_results_stamp,
    write_table,
)

from .analysis import distinct_runs, same_calls, same_texts_as

__all__ = [
    "T5_RUN",
    "GEMMA_RUN",
    "GEMMA_LATENCY_RUN",
    "GEMMA_RENAMED_TASKS",
    "AIM",
    "GRID_RESAMPLES",
    "write_t5_results",
    "write_t5_facts",
    "t5_stamp",
    "write_gemma_results",
    "gemma_results",
    "gemma_tables",
    "write_tables",
    "saved_gemma_run",
    "T5_RESULT_FILES",
]

#: the committed runs the results pages show (folder names under data/results/)
T5_RUN = "t5-offline-b9b8c2dcad8e"
#: the Gemma-style run of notebook 07's default profile: the headline comparison (every rule at 3 alphas at
#: T = 1 and T = 0, in bf16, on HumanEval 164, arithmetic-300 and facts 49), filled over several sessions
GEMMA_RUN = "gemma-headline-e2cc8ff38748"
GEMMA_LATENCY_RUN = "gemma-headline-latency-edfaf343a75b"
#: the tasks of the earliest run (offline-all) under the names of the tasks that replaced them, for setting
#: its claims beside a later run's
GEMMA_RENAMED_TASKS = {"code": "humaneval", "arithmetic": "arithmetic-300"}
GRID_RESAMPLES = 400
#: The cost model's aim: |median signed error| per method at most this.
AIM = 0.05


# ---- writing the result files (the notebooks call these) ----------------------------------------


def _relative_total(rows: pd.DataFrame, label: str, temperature: float, column: str) -> float:
    part = rows[rows["temperature"] == temperature]
    verifier = part.loc[part["method"] == "verifier", column].sum()
    return float(part.loc[part["label"] == label, column].sum() / verifier)


_T5_TABLES = ("claims", "headline", "signed_error", "verdicts_by_c", "flip_points")
#: what `write_t5_results` writes, so what its stamp (`sweeps.result_files`) hashes
T5_RESULT_FILES = (*(f"{name}.csv" for name in _T5_TABLES), "facts.json")


def write_t5_results(
    rows: pd.DataFrame,
    tasks,
    folder,
    calibration,
    *,
    n_resamples: int = 2000,
    grid_resamples: int = GRID_RESAMPLES,
    table: Optional[pd.DataFrame] = None,
    progress: bool = True,
    clock_rows: Optional[pd.DataFrame] = None,
    recompute: bool = False,
) -> Dict[str, pd.DataFrame]:
    """The T5 run's result files (module docstring) from its priced rows; returns the tables. `clock_rows`:
    priced rows decoded at batch size 1 for the signed error against the clock, where `rows` were batched
    (their wall times are shares of a batch); None: `rows` themselves.

    The re-pricing over `c` takes minutes, so files computed from the same rows, calibration, settings
    and code (`results_stamp`, kept in `results_stamp.json`) are read back instead: redrawing the
    committed run recomputes nothing. Read back only if each file still has the SHA-256 recorded when it
    was written: else `ResultFilesChanged`, naming the files (`recompute=True` computes them again)."""
    from . import claims, hardware, pricing

    folder = Path(folder)
    stamp = t5_stamp(
        rows,
        tasks,
        folder,
        calibration,
        table=table,
        clock_rows=clock_rows,
        n_resamples=n_resamples,
        grid_resamples=grid_resamples,
    )
    stamp_path = folder / RESULTS_STAMP
    try:
        kept = json.loads(stamp_path.read_text()) if stamp_path.exists() else {}
    except ValueError:
        kept = {}
    if not recompute and isinstance(kept, dict) and kept.get("t5_results") == stamp:
        # the same inputs: the files must be the ones computed from them; edited ones are refused, not
        # recomputed in place, so an edit is never shown and never quietly overwritten
        checked = check_result_files(
            folder,
            T5_RESULT_FILES,
            recompute=(
                "report.write_t5_results(..., recompute=True), or delete "
                f"{stamp_path} and run notebook 06 again (minutes)"
            ),
        )
        return {name: pd.read_csv(io.BytesIO(checked[f"{name}.csv"])) for name in _T5_TABLES}
    column = pricing.LATENCY_COLUMN
    claims_table = claims.t5_claims(rows, tasks, cost=column, n_resamples=n_resamples)
    write_table(claims_table, folder / "claims.csv")
    headline = claims.headline_table(
        rows, tasks, n_resamples=n_resamples, gamma=claims.headline.run_gamma(rows)
    )
    write_table(headline, folder / "headline.csv")
    errors = pricing.signed_error(rows if clock_rows is None else clock_rows, by=["label", "temperature"])
    write_table(errors, folder / "signed_error.csv")
    machine = hardware.machine_c(calibration)
    grid = hardware.verdict_grid(
        rows,
        calibration,
        lambda priced, cost: claims.t5_claims(priced, tasks, cost=cost, n_resamples=grid_resamples),
        extra_points={"this machine": machine, "paper's T5 pair (estimate)": hardware.PAPER_T5_C},
        progress=progress,
    )
    write_table(grid, folder / "verdicts_by_c.csv")
    flips = hardware.flip_points(grid)
    write_table(flips, folder / "flip_points.csv")
    write_t5_facts(rows, folder, calibration, table=table, grid_resamples=grid_resamples)
    write_results_stamp(folder, stamp, T5_RESULT_FILES, "t5_results")
    return _read_tables(folder, _T5_TABLES)  # as read back, so a computed and a reused run return alike


def t5_stamp(
    rows: pd.DataFrame,
    tasks,
    folder,
    calibration,
    *,
    table: Optional[pd.DataFrame] = None,
    clock_rows: Optional[pd.DataFrame] = None,
    n_resamples: int = 2000,
    grid_resamples: int = GRID_RESAMPLES,
) -> str:
    """What `write_t5_results` records its files as computed from (`sweeps.result_files.results_stamp`): the
    rows files and calibration of the sweep and of its clock rows, `table`, the settings and the code."""
    folder = Path(folder)
    clock_folder = (clock_rows if clock_rows is not None else rows).attrs.get("path", folder)
    return results_stamp(
        [folder, clock_folder],
        table,
        calibration=calibration.to_dict(),
        n_resamples=n_resamples,
        grid_resamples=grid_resamples,
        rows=len(rows),
        tasks=[getattr(t, "name", str(t)) for t in tasks],
        clock_wall_s=None if clock_rows is None else float(clock_rows["wall_time_s"].sum()),
    )


def _read_tables(folder: Path, names) -> Dict[str, pd.DataFrame]:
    return {name: pd.read_csv(folder / f"{name}.csv") for name in names}


def write_t5_facts(
    rows: pd.DataFrame,
    folder,
    calibration,
    *,
    table: Optional[pd.DataFrame] = None,
    grid_resamples: int = GRID_RESAMPLES,
) -> dict:
    """`facts.json` of the T5 run: the numbers its README sentences quote (cost ratio, step times,
    SpecDecode's relative latency, configurations with the same calls, distinct runs at `T = 0`, the
    speculative methods' extra latency at the verifier's quality from `table`)."""
    from . import hardware, pricing

    column = pricing.LATENCY_COLUMN
    per_rule = (
        rows[(rows["method"] == "speculative") & (rows["temperature"] == 0.0)]
        .groupby("label")["config"]
        .nunique()
    )
    facts = {
        "c": hardware.machine_c(calibration),
        "drafter_step_ms": 1e3 * calibration.t_q(with_overhead=False),
        "verifier_step_ms": 1e3 * calibration.t_p(1, with_overhead=False),
        "spec_relative_latency": {
            str(t): _relative_total(rows, "SpecDecode", t, column) for t in sorted(set(rows["temperature"]))
        },
        "same_calls_T0": same_calls(rows, 0.0),
        "distinct_runs_T0": distinct_runs(rows, 0.0),
        "configurations_per_rule": int(per_rule.max()) if len(per_rule) else 0,  # 0: no T = 0 rows
        "configurations_T0": {label: int(n) for label, n in per_rule.items() if label != "SpecDecode"},
        "not_run_T0": sorted(
            set(rows.loc[(rows["method"] == "speculative") & (rows["temperature"] != 0.0), "label"])
            - set(per_rule.index)
        ),
        "same_as_diff_T0": {
            label: same_texts_as(rows, label, "SpecCascade [Diff]", 0.0)
            for label in ("SpecCascade [OPT]", "SpecCascade [Token-V1]")
        },
        "paper_c": hardware.PAPER_T5_C,
        "paper_c_source": hardware.PAPER_T5_SOURCE,
        "grid_resamples": grid_resamples,
    }
    if table is not None:
        cold = table[
            (table["temperature"] == 0.0)
            & table["method"].str.startswith(("SpecCascade", "SpecDecode", "Lossy", "BiLD*"))
        ]
        reached = pd.to_numeric(cold["reduction_at_verifier_quality"], errors="coerce").dropna()
        facts["speculative_extra_latency_T0"] = [float(-reached.max()), float(-reached.min())]
    path = Path(folder) / "facts.json"
    if path.exists():  # how the sweep was run is said once, when it ran; a redraw keeps it
        facts = {
            **facts,
            **{k: v for k, v in json.loads(path.read_text()).items() if k == "run"},
        }  # where it was: last
    write_json(facts, path)
    return facts


def gemma_tables(
    rows: pd.DataFrame, tasks, *, cost: Optional[str] = None, n_resamples: int = 2000
) -> Dict[str, pd.DataFrame]:
    """The tables notebook 07 shows before its claims, as kept beside the rows: `answer_lengths` (with the
    priced `cost` per answer where given), `paired_differences`, `table` (the paper's table on the
    rejection-rate axis) and `summary` (every point, with each rule's curve ends)."""
    from . import analysis, curve_bootstrap, paired

    return {
        "answer_lengths": analysis.answer_lengths(rows, tasks, cost=cost),
        "paired_differences": paired.paired_differences(rows, tasks, n_resamples=n_resamples),
        "table": curve_bootstrap.curve_table(rows, tasks, cost="rejection_rate", n_resamples=n_resamples),
        "summary": analysis.with_rule_ends(analysis.summarize(rows)),
    }


def gemma_results(
    rows: pd.DataFrame,
    tasks,
    calibration,
    latency_rows: pd.DataFrame,
    *,
    t5_rows=None,
    t5_tasks=None,
    n_resamples: int = 2000,
    progress: bool = True,
    second_seed: Optional[pd.DataFrame] = None,
) -> Dict[str, object]:
    """The Gemma-style run's claims and latency files (module docstring), computed, not written:
    `latency_rows` are its batch-size-1 latency rows, priced with `calibration`; `second_seed`: the
    verifier's and SpecDecode's rows with a second seed set (`reruns.second_seed_rows`), for the noise
    floor. The values are tables, and `facts` a dict."""
    from . import analysis, claims, hardware, paired, pricing

    claims_table = claims.gemma_claims(
        rows, tasks, t5_rows=t5_rows, t5_tasks=t5_tasks, n_resamples=n_resamples, second_seed=second_seed
    )
    floors = paired.same_law_floor(rows, tasks, second_seed=second_seed, n_resamples=n_resamples)
    column = pricing.LATENCY_COLUMN
    by_task = analysis.latency_view(latency_rows, latency=column, tasks=tasks, n_resamples=n_resamples)
    errors = pricing.signed_error(latency_rows, by=["label", "gamma"])
    machine = hardware.machine_c(calibration)

    def pooled_claims(priced, cost):
        table = hardware.latency_claims(priced, column=cost, n_resamples=GRID_RESAMPLES)
        return table[table["task"] == analysis.POOLED]

    grid = hardware.verdict_grid(
        latency_rows,
        calibration,
        pooled_claims,
        extra_points={"this machine": machine, "paper's T5 pair (estimate)": hardware.PAPER_T5_C},
        progress=progress,
    )
    flips = hardware.flip_points(grid, keys=("claim", "temperature"))
    facts = {
        "c": machine,
        "drafter_step_ms": 1e3 * calibration.t_q(with_overhead=False),
        "verifier_step_ms": 1e3 * calibration.t_p(1, with_overhead=False),
        "grid_resamples": GRID_RESAMPLES,
        "latency_items": int(latency_rows.groupby("task")["example_id"].nunique().sum()),
        "paper_c": hardware.PAPER_T5_C,
        "paper_c_source": hardware.PAPER_T5_SOURCE,
    }
    return {
        "claims": claims_table,
        "noise_floor": floors,
        "latency_by_task": by_task,
        "signed_error": errors,
        "verdicts_by_c": grid,
        "flip_points": flips,
        "facts": facts,
    }


def write_gemma_results(
    rows: pd.DataFrame,
    tasks,
    folder,
    calibration,
    latency_rows: pd.DataFrame,
    *,
    t5_rows=None,
    t5_tasks=None,
    n_resamples: int = 2000,
    progress: bool = True,
    second_seed: Optional[pd.DataFrame] = None,
) -> Dict[str, object]:
    """`gemma_results`, each written beside the rows in `folder` (`<name>.csv`, `facts.json`); returns
    them."""
    results = gemma_results(
        rows,
        tasks,
        calibration,
        latency_rows,
        t5_rows=t5_rows,
        t5_tasks=t5_tasks,
        n_resamples=n_resamples,
        progress=progress,
        second_seed=second_seed,
    )
    write_tables(folder, results)
    return results


def write_tables(folder, tables: Dict[str, object]) -> None:
    """Each table as `<name>.csv` in `folder` (a dict as `<name>.json`), each rewritten only where its values
    changed (`sweeps.result_files.write_table`)."""
    folder = Path(folder)
    for name, table in tables.items():
        if isinstance(table, dict):
            write_json(table, folder / f"{name}.json")
        else:
            write_table(table, folder / f"{name}.csv")


def saved_gemma_run(profile: str, *, results_dir=None) -> Dict[str, object]:
    """A committed Gemma-style run as notebook 07 reads it, loading no model: its `settings`, `tasks`, priced
    `rows`, `calibration`, priced `latency_rows`, the T5 run its OPT claim compares with (`t5_rows`,
    `t5_tasks`; None where not saved) and its `second_seed` rows (None where it has none)."""
    from . import analysis, pricing
    from ..sweeps import evaluation as ev
    from ..sweeps import reruns

    settings = reruns.gemma_profile(profile)
    name = f"gemma-{settings['profile']}"
    pair = reruns.saved_pair(name, settings, results_dir=results_dir)
    tasks = reruns.gemma_tasks(settings)
    rows = ev.run_sweep(
        pair,
        tasks,
        reruns.gemma_configs(settings),
        name=name,
        root=results_dir,
        runner="batch",
        batch_size=settings["batch_size"],
        extra_config=reruns.run_config(settings),
        progress=False,
    )
    rows, calibration, why_not = pricing.price_sweep(pair, rows, settings["latency_gammas"], required=True)
    latency_tasks = [t.head(settings["latency_items"]) for t in tasks]
    latency_rows = ev.run_sweep(
        reruns.latency_pair(settings, pair, results_dir=results_dir),
        latency_tasks,
        reruns.latency_configs(settings),
        name=f"{name}-latency",
        root=results_dir,
        runner="single",
        extra_config=reruns.latency_run_config(settings),
        progress=False,
    )
    try:
        t5_rows, t5_tasks, _ = analysis.saved_t5_run("offline", results_dir=results_dir)
    except (FileNotFoundError, ev.MissingRowsError):
        t5_rows = t5_tasks = None
    return {
        "settings": settings,
        "tasks": tasks,
        "rows": rows,
        "calibration": calibration,
        "latency_rows": pricing.price_rows(latency_rows, calibration),
        "t5_rows": t5_rows,
        "t5_tasks": t5_tasks,
        "second_seed": reruns.second_seed_rows(settings, results_dir=results_dir),
    }
