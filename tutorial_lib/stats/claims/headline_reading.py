"""Reading the headline table (`headline`): the per-task verdicts on the paper's headline claim
(`headline_summary`), one cell as prose quotes it (`headline_cell`), and the committed runs it is read on
(`headline_rows`, `saved_headline`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from ... import paths
from ...sweeps import rows_file
from .headline import RATE_VS_OTHERS, RATE_VS_SPEC, VS_OTHERS, VS_VERIFIER
from .verdicts import DOES_NOT_HOLD, HOLDS

__all__ = [
    "HEADLINE_RUN",
    "HEADLINE_SEED2_RUN",
    "T5_RUN",
    "PARTLY",
    "SUMMARY_CLAIMS",
    "headline_summary",
    "headline_cell",
    "headline_rows",
    "saved_headline",
]

#: The committed headline run and its second seed set (folders of `paths.RESULTS_DIR`).
HEADLINE_RUN = "gemma-headline-e2cc8ff38748"
HEADLINE_SEED2_RUN = "gemma-headline-seed2-0bd0a43005da"
#: The committed T5 run (notebook 06) whose folder holds its headline table (`headline.csv`).
T5_RUN = "t5-offline-b9b8c2dcad8e"
#: `headline_summary`'s verdict where some but not all of a claim's cells hold.
PARTLY = "partly"


def _signed(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:+.3f}"


#: `headline_summary`'s claims: (claim, statistic of its cells).
SUMMARY_CLAIMS = (
    ("[Token] gives the best quality at a matched rejection rate (the headline)", VS_OTHERS),
    ("[Token] beats the verifier at a matched rejection rate", VS_VERIFIER),
    ("[Token] comes within the margin of the verifier at a lower rate than the other rules", RATE_VS_OTHERS),
    ("[Token] comes within the margin of the verifier at a lower rate than SpecDecode", RATE_VS_SPEC),
)


def _cell_text(row) -> str:
    where = f"T={row['temperature']:g}" + (f" {row['fraction']:g}r" if np.isfinite(row["fraction"]) else "")
    interval = f"[{_signed(row['low'])}, {_signed(row['high'])}]"
    return f"{where}: {_signed(row['estimate'])} {interval} {row['verdict']}"


def headline_cell(
    table: pd.DataFrame,
    task: str,
    temperature: float,
    statistic: str,
    fraction=None,
    *,
    missing: Optional[str] = None,
) -> str:
    """One cell of `headline_table` as prose quotes it: "+0.116 [+0.055, +0.157], holds" (the estimate, its
    95% interval and its verdict; the chosen curves of the two groups where a group's value is compared).
    `missing`: the text for a cell the run did not compute (a temperature its profile did not run); None:
    such a cell is an error."""
    where = (table["task"] == task) & (table["temperature"] == float(temperature))
    cells = table[where & (table["statistic"] == statistic)]
    if fraction is not None:
        cells = cells[np.isclose(cells["fraction"], float(fraction))]
    if not len(cells) and missing is not None:
        return missing
    if len(cells) != 1:
        raise ValueError(
            f"{len(cells)} cells of the headline table match task={task!r}, temperature={temperature}, "
            f"statistic={statistic!r}, fraction={fraction}; pick one of its rows."
        )
    row = cells.iloc[0]
    text = f"{_signed(row['estimate'])} [{_signed(row['low'])}, {_signed(row['high'])}], {row['verdict']}"
    curves = [row.get("token_curve"), row.get("other_curve")]
    named = [c for c in curves if isinstance(c, str) and c]
    return text + (f" ({' against '.join(named)})" if named else "")


def headline_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per task, the verdict on the paper's headline claim and its parts (`SUMMARY_CLAIMS`), from
    `headline_table`'s rows: a claim's **cells** are its statistic's rows at every temperature and fraction
    (1/4, 1/2, 3/4 of SpecDecode's rate; one cell per temperature for the rate statistics). Its verdict is
    **holds** when every cell holds; **partly** when at least one cell holds and at least one does not
    (does not hold, or not resolved at this sample size); **does not hold** when no cell holds (the counts
    say how many of them are measured misses, `does_not_hold`, and how many unresolved). `numbers` lists
    each cell's estimate, 95% interval and verdict (`1/2r`: at half of SpecDecode's rate)."""
    out = []
    for task, part in table.groupby("task", sort=False):
        for claim, statistic in SUMMARY_CLAIMS:
            cells = part[part["statistic"] == statistic]
            holds = int((cells["verdict"] == HOLDS).sum())
            misses = int((cells["verdict"] == DOES_NOT_HOLD).sum())
            decided = HOLDS if holds == len(cells) and holds else PARTLY if holds else DOES_NOT_HOLD
            out.append(
                {
                    "task": task,
                    "claim": claim,
                    "verdict": decided,
                    "cells": len(cells),
                    "holds": holds,
                    "does_not_hold": misses,
                    "not_resolved": len(cells) - holds - misses,
                    "numbers": "; ".join(_cell_text(r) for _, r in cells.iterrows()),
                }
            )
    return pd.DataFrame(out)


def saved_headline(run: str = T5_RUN, results_dir=None) -> pd.DataFrame:
    """A committed run's headline table as its notebook wrote it (`headline.csv` in folder `run` of
    `results_dir`, default `paths.RESULTS_DIR`): the T5 run's, read without loading its rows."""
    root = Path(results_dir) if results_dir is not None else paths.RESULTS_DIR
    path = root / run / "headline.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no headline table; run notebook 06 (the T5 run) to write it.")
    return pd.read_csv(path)


def headline_rows(
    results_dir=None, *, run: str = HEADLINE_RUN, seed2_run: Optional[str] = HEADLINE_SEED2_RUN
):
    """`(rows, second_seed)`: the committed headline run's rows and its second seed set's rows (None where
    `seed2_run` is None), read from their folders under `results_dir` (default `paths.RESULTS_DIR`) with
    `rows_file.read_folder_rows` (`report.saved_gemma_run("headline")` gives the same rows, priced, in
    minutes)."""
    root = Path(results_dir) if results_dir is not None else paths.RESULTS_DIR
    rows = pd.DataFrame(rows_file.read_folder_rows(root / run))
    second = pd.DataFrame(rows_file.read_folder_rows(root / seed2_run)) if seed2_run else None
    return rows, second
