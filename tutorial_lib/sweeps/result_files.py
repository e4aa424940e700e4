r"""A run's result files checked before they are shown: `results_stamp.json` beside them keeps what they
were computed from (`results_stamp`) and the SHA-256 each file had when written (`write_results_stamp`).

`check_result_files` hashes every file again and raises `ResultFilesChanged`, naming the files that differ
and how to compute them again, so an edited or damaged result is never shown as the run's and never
silently recomputed under its name. `stats.report.write_t5_results` writes and reads the T5 run's files
through these.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pandas as pd

from .identity import canonical

__all__ = [
    "RESULTS_STAMP",
    "SAME_VALUE_RTOL",
    "write_table",
    "write_json",
    "ResultFilesChanged",
    "results_stamp",
    "write_results_stamp",
    "check_result_files",
]

#: Beside a run's result files: what they were computed from (`results_stamp`) and, per file, the
#: SHA-256 it had when written, checked before the files are shown again (`check_result_files`).
RESULTS_STAMP = "results_stamp.json"


#: Two values of a derived file that agree to this relative tolerance are the same result: a processor
#: whose vector routines round the last bits otherwise (AVX2 against AVX-512) leaves the file as it is.
SAME_VALUE_RTOL = 1e-9


def _same_value(old, new) -> bool:
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        return math.isclose(old, new, rel_tol=SAME_VALUE_RTOL, abs_tol=1e-12)
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same_value(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same_value(a, b) for a, b in zip(old, new))
    return old == new


def _same_frame(old: pd.DataFrame, new: pd.DataFrame) -> bool:
    if list(old.columns) != list(new.columns) or old.shape != new.shape:
        return False
    for column in old.columns:
        a, b = old[column], new[column]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            close = np.isclose(a.to_numpy(float), b.to_numpy(float), rtol=SAME_VALUE_RTOL, atol=1e-12)
            if not (close | (a.isna().to_numpy() & b.isna().to_numpy())).all():
                return False
        elif not a.astype(str).equals(b.astype(str)):
            return False
    return True


def write_table(table: pd.DataFrame, path, *, index: bool = False) -> bool:
    """Write a derived table as CSV unless the file there already holds the same table: the same
    columns and text, numbers equal within `SAME_VALUE_RTOL`. So a result computed again on another
    processor changes no byte of a committed file. Returns whether it wrote."""
    path = Path(path)
    text = table.to_csv(index=index)
    if path.is_file():
        try:
            same = _same_frame(pd.read_csv(path), pd.read_csv(io.StringIO(text)))
        except (ValueError, pd.errors.ParserError):
            same = False
        if same:
            return False
    path.write_text(text)
    return True


def write_json(value, path) -> bool:
    """`write_table` for a JSON document (numbers equal within `SAME_VALUE_RTOL` are the same)."""
    path = Path(path)
    text = json.dumps(value, indent=1)
    if path.is_file():
        try:
            if _same_value(json.loads(path.read_text()), json.loads(text)):
                return False
        except ValueError:
            pass
    path.write_text(text)
    return True


class ResultFilesChanged(RuntimeError):
    """Result files that are not those their stamp recorded when they were written (edited, damaged or
    missing): they are not shown as the run's results, and not silently recomputed either."""


def results_stamp(folders, table=None, **settings) -> str:
    """A hash of what a run's result files are computed from: the rows files and `calibration.json` of
    its sweep `folders` (as saved, so rows read back hash alike), a `table` (a DataFrame) derived from
    them, the settings, and the source of the code that computes the files (the `stats` and `maths` wings, the
    calibration): a change to any of them computes the files again."""
    from .rows_file import folder_rows_paths

    digest = hashlib.sha256()
    for folder in dict.fromkeys(Path(f) for f in folders):
        for path in [*folder_rows_paths(folder), folder / "calibration.json"]:
            digest.update(path.name.encode() + (path.read_bytes() if path.exists() else b"-"))
    # a table and settings by their values to 10 digits: another processor's last bits are the same inputs
    digest.update(b"-" if table is None else table.to_json(orient="split", double_precision=10).encode())
    digest.update(
        json.dumps(canonical(json.loads(json.dumps(settings, default=str))), sort_keys=True).encode()
    )
    package = Path(__file__).resolve().parents[1]
    sources = [
        *package.glob("stats/**/*.py"),  # the wing and its packages (`stats.analysis`, `stats.claims`)
        *package.glob("maths/*.py"),
        *package.glob("decoding/calibration/*.py"),
    ]
    for source in sorted(sources):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()


def write_results_stamp(folder, stamp: str, files, key: str) -> dict:
    """Keep `stamp` (what the files were computed from) under `key` and the SHA-256 of each of `files` in
    `folder`'s `results_stamp.json`; returns what it wrote."""
    folder = Path(folder)
    hashes = {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in files}
    kept = {key: stamp, "files": hashes}
    (folder / RESULTS_STAMP).write_text(json.dumps(kept, indent=1) + "\n")
    return kept


def check_result_files(folder, files, *, recompute: str = "") -> Dict[str, bytes]:
    """Each of `files` in `folder` as bytes, if each has the SHA-256 that its `results_stamp.json`
    recorded when the files were written; else `ResultFilesChanged`. `recompute` says how to compute them
    again. Returns what was hashed, so that a caller parses the bytes checked and not a later file."""
    folder = Path(folder)
    contents: Dict[str, bytes] = {}
    recorded: Optional[dict]
    try:
        recorded = json.loads((folder / RESULTS_STAMP).read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if not isinstance(recorded, dict):
        differ = [f"{RESULTS_STAMP} records no hashes of the result files, so they cannot be checked"]
    else:
        differ = []
        for name in files:
            path = folder / name
            if name not in recorded:
                differ.append(f"{name}: no hash recorded")
            elif not path.is_file():
                differ.append(f"{name}: missing (recorded sha256 {recorded[name]})")
            else:
                contents[name] = path.read_bytes()
                found = hashlib.sha256(contents[name]).hexdigest()
                if found != recorded[name]:
                    differ.append(f"{name}: recorded sha256 {recorded[name]}, found {found}")
    if differ:
        raise ResultFilesChanged(
            f"The result files in {folder} are not those written with their stamp ({RESULTS_STAMP}), so they "
            "are not shown as this run's results:\n  " + "\n  ".join(differ) + "\nA committed run: restore "
            f"them with `git checkout -- {folder}`. Else compute them again from the rows"
            + (f": {recompute}." if recompute else ".")
        )
    return contents
