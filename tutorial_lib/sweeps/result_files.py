r"""A run's result files checked before they are shown: `results_stamp.json` beside them keeps what they
were computed from (`results_stamp`) and the SHA-256 each file had when written (`write_results_stamp`).

`check_result_files` hashes every file again and raises `ResultFilesChanged`, naming the files that differ
and how to compute them again, so an edited or damaged result is never shown as the run's and never
silently recomputed under its name. `stats.report.write_t5_results` writes and reads the T5 run's files
through these.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Dict, Optional

__all__ = [
    "RESULTS_STAMP",
    "ResultFilesChanged",
    "results_stamp",
    "write_results_stamp",
    "check_result_files",
]

#: Beside a run's result files: what they were computed from (`results_stamp`) and, per file, the
#: SHA-256 it had when written, checked before the files are shown again (`check_result_files`).
RESULTS_STAMP = "results_stamp.json"


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
    digest.update(b"-" if table is None else table.to_json(orient="split", double_precision=15).encode())
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
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
