"""A sweep's rows file (`rows.jsonl`): one JSON object per line, appended as rows finish.

The file is the only copy of hours of model runs, so reading it never loses a row silently and
writing it never deletes one:

- **A last row without a newline** (the file was cut just before its final `\\n`, or written by
  another tool) is a complete row: it is read, and the next append completes its line first.
- **A last line cut short** (an interruption during a write: no newline, and not UTF-8 or not
  JSON, as every prefix of a JSON object is) holds no row. Reading skips it with a warning; the next append
  moves it aside, appending it to `rows.jsonl.corrupt` beside the file, says so in a warning, and goes on; the
  sweep redoes that row.
- **Any other malformed line** (not UTF-8, not JSON, JSON that is not an object such as `42` or
  `null`, or an object without `task` / `config` / `example_id`) raises `RowsFileError`, which names the
  file and the line number and says how to repair it: delete or fix that line (the sweep redoes a
  missing row), or call `set_aside_bad_lines(path)`, which moves every malformed line to
  `rows.jsonl.corrupt` and keeps the rest. A row whose `task`, `config` or `example_id` is not a
  string, or whose `quality` is not a finite number, is malformed too.

**One writer at a time.** Appends and repairs hold an exclusive `fcntl.flock` on the rows file (readers
a shared one) for the whole check-then-write, so a process never sees another's half-written row:
the only cut line is one left by a process that died mid-write, and moving it aside cannot delete a
row another process saved. A repair replaces the file (`os.replace`); a writer that was waiting for
the lock notices that its handle is no longer the file at `path` and opens it again. Several
processes may append to one file; `check_rows` then names a row written twice with different
results (same `task`, `config`, `example_id`; another `quality` or `text`), and `unique_rows` keeps
one of each.

**One file per process.** A sweep split over processes (`sweeps.processes`) gives process `k` its own
file, `rows.process-<k>.jsonl` (`process_rows_name`), beside `rows.jsonl`; `folder_rows_paths` lists a
folder's rows files, which read together as one run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import warnings
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

__all__ = [
    "RowsFileError",
    "read_rows",
    "read_numbered_rows",
    "append_rows",
    "set_aside_bad_lines",
    "corrupt_path",
    "check_rows",
    "unique_rows",
    "REQUIRED_KEYS",
    "RESULT_KEYS",
    "ROWS_NAME",
    "process_rows_name",
    "folder_rows_paths",
    "read_folder_rows",
]

#: What every row must carry: it keys the row in its sweep.
REQUIRED_KEYS = ("task", "config", "example_id")
#: What two copies of one row must agree on (timings may differ between two runs of it).
RESULT_KEYS = ("quality", "text")
_TAIL_BLOCK = 64 * 1024
#: The rows file of a sweep run by one process.
ROWS_NAME = "rows.jsonl"


class RowsFileError(ValueError):
    """A line of a rows file is not a row; the message names the file, the line and the repair."""


def corrupt_path(path: os.PathLike) -> Path:
    """Where malformed lines are moved aside: `<rows file>.corrupt`, beside it."""
    path = Path(path)
    return path.with_name(path.name + ".corrupt")


def process_rows_name(index: int) -> str:
    """The rows file of process `index` of a sweep split over several processes."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index={index!r}: a process index is a whole number >= 0.")
    return f"rows.process-{index}.jsonl"


def folder_rows_paths(folder: os.PathLike) -> List[Path]:
    """A sweep folder's rows files: `rows.jsonl` first (listed even when missing: it reads as no rows),
    then every other `rows.<writer>.jsonl` (one per process of a split sweep), sorted by name."""
    folder = Path(folder)
    extra = (
        sorted(path for path in folder.glob("rows.*.jsonl") if path.name != ROWS_NAME)
        if folder.is_dir()
        else []
    )
    return [folder / ROWS_NAME, *extra]


def read_folder_rows(folder: os.PathLike) -> List[dict]:
    """Every row of a sweep folder's rows files (`folder_rows_paths`), one per (task, config,
    example_id) (`unique_rows`; copies with different results are refused by `check_rows`)."""
    numbered = []
    for path in folder_rows_paths(folder):
        numbered += [(f"{number} of {path.name}", row) for number, row in read_numbered_rows(path)]
    check_rows(numbered, Path(folder) / "rows*.jsonl")
    return unique_rows(row for _, row in numbered)


def _parse(line: bytes) -> Tuple[Optional[dict], str, bool]:
    """The row on one line (without its newline), or None, what is wrong with it, and whether it could
    be a row cut short (not UTF-8 or not JSON: a prefix of a JSON object is never whole JSON)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"is not UTF-8 text ({error})", True
    try:
        row = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"is not valid JSON ({error.msg} at column {error.colno})", True
    except RecursionError:
        return None, "is JSON nested too deeply to be a row", False
    if not isinstance(row, dict):
        return None, f"is JSON but not an object (a row is {{...}}; found {text.strip()[:40]!r})", False
    problem = row_problem(row)
    if problem:
        return None, problem, False
    return row, "", False


def row_problem(row) -> str:
    """What is wrong with a row ("" when nothing): not a dict, a key missing, a key that is not a
    string, a quality that is not a finite number."""
    if not isinstance(row, dict):
        return f"is not an object but {type(row).__name__}"
    missing = [key for key in REQUIRED_KEYS if key not in row]
    if missing:
        return f"is an object without {', '.join(missing)} (every row has {', '.join(REQUIRED_KEYS)})"
    for key in REQUIRED_KEYS:
        if not isinstance(row[key], str):
            return f"has {key}={str(row[key])[:40]} of type {type(row[key]).__name__} (it must be a string)"
    quality = row.get("quality", 0.0)
    if isinstance(quality, bool) or not isinstance(quality, (int, float)) or not math.isfinite(quality):
        return f"has quality={str(quality)[:40]} (it must be a finite number)"
    return ""


def _error(path: Path, number: int, problem: str, *, set_aside: bool = True) -> RowsFileError:
    """`set_aside=False` for a row that parses but is wrong here (`check_rows`): only deleting or fixing
    it repairs the file."""
    repair = (
        f", or run `tutorial_lib.sweeps.rows_file.set_aside_bad_lines({str(path)!r})`, which moves every "
        f"malformed line to {corrupt_path(path).name} and keeps the rest"
        if set_aside
        else ""
    )
    return RowsFileError(
        f"{path}, line {number} {problem}. Each line of a rows file is one row (a JSON object). "
        "To repair it, "
        f"delete or fix line {number} (the sweep redoes a missing row){repair}."
    )


def _not_a_file(path: Path) -> RowsFileError:
    return RowsFileError(
        f"{path} is a folder, not a rows file; move it away (the sweep then starts a new rows file) "
        "or point the sweep at another results folder."
    )


@contextlib.contextmanager
def _locked(path: Path, mode: str, *, exclusive: bool):
    """`path` opened in `mode` under an flock, reopened until the handle is the file at `path` (a repair
    may have replaced it while this process waited for the lock)."""
    if path.is_dir():
        raise _not_a_file(path)
    while True:
        handle = open(path, mode)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                current = os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
            except FileNotFoundError:
                current = False
        except BaseException:
            handle.close()
            raise
        if current:
            break
        handle.close()
    try:
        yield handle
    finally:
        handle.close()  # releases the lock


def read_numbered_rows(path: os.PathLike) -> List[Tuple[int, dict]]:
    """(line number, row) of every row of the file, in order; see `read_rows`."""
    path = Path(path)
    if not path.exists():
        return []
    with _locked(path, "rb", exclusive=False) as handle:
        data = handle.read()
    lines = data.split(b"\n")
    ends_in_newline = lines[-1] == b""
    if ends_in_newline:
        lines.pop()
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        row, problem, cut = _parse(line)
        if row is not None:
            rows.append((number, row))
        elif cut and number == len(lines) and not ends_in_newline:
            warnings.warn(
                f"{path}, line {number} was cut short by an interruption (no newline, not a whole row); "
                f"it is skipped and the sweep redoes it (the next append moves it to "
                f"{corrupt_path(path).name}).",
                stacklevel=3,
            )
        else:
            raise _error(path, number, problem)
    return rows


def read_rows(path: os.PathLike) -> List[dict]:
    """Every row of the file, in order; `[]` for a missing file. Raises `RowsFileError` on a malformed
    line; a last line cut short by an interruption is skipped with a warning (see the module)."""
    return [row for _, row in read_numbered_rows(path)]


def check_rows(
    numbered: Iterable[Tuple[int, dict]], path: os.PathLike, *, example_ids: Optional[dict] = None
) -> None:
    """Raise `RowsFileError` (naming the file and the line) for a row written twice with different
    results (`RESULT_KEYS`), or, where `example_ids` maps a task name to its example ids, for a row of
    that task whose example id the task does not have."""
    path = Path(path)
    first_seen = {}
    for number, row in numbered:
        task, example_id = row["task"], row["example_id"]
        if example_ids is not None and task in example_ids and example_id not in example_ids[task]:
            raise _error(
                path,
                number,
                f"is a row of task {task!r} for example_id={example_id!r}, which that task "
                f"does not have (a row of another task or of an edited task)",
                set_aside=False,
            )
        key = (task, row["config"], example_id)
        if key in first_seen:
            earlier_number, earlier = first_seen[key]
            differing = [name for name in RESULT_KEYS if earlier.get(name) != row.get(name)]
            if differing:
                raise _error(
                    path,
                    number,
                    f"repeats the row of line {earlier_number} ({task}, {row['config']}, "
                    f"{example_id}) with another {' and '.join(differing)}",
                    set_aside=False,
                )
        else:
            first_seen[key] = (number, row)


def unique_rows(rows: Iterable[dict]) -> List[dict]:
    """One row per (task, config, example_id), the last written (copies agree on their results, which
    `check_rows` makes sure of), in the order of their first occurrence."""
    unique = {}
    for row in rows:
        key = (row["task"], row["config"], row["example_id"])
        unique[key] = row
    return list(unique.values())


def _tail(handle) -> Tuple[int, bytes]:
    """The offset and bytes of the file's last line when it has no newline (`b""` when it ends in one)."""
    size = handle.seek(0, os.SEEK_END)
    start = size
    tail = b""
    while start > 0:
        step = min(_TAIL_BLOCK, start)
        start -= step
        handle.seek(start)
        tail = handle.read(step) + tail
        cut = tail.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1, tail[cut + 1 :]
    return 0, tail


def _line_number(handle, offset: int) -> int:
    """The number of the line that starts at `offset` (1 + the newlines before it)."""
    handle.seek(0)
    return handle.read(offset).count(b"\n") + 1


def append_rows(path: os.PathLike, rows: Iterable[dict]) -> None:
    """Append rows, one JSON object per line, and flush them to disk. Only the file's end is read:
    a last row without a newline gets one; a last line cut short is moved to `<path>.corrupt` first."""
    path = Path(path)
    rows = list(rows)
    for row in rows:
        if not isinstance(row, dict) or any(key not in row for key in REQUIRED_KEYS):
            raise TypeError(f"a row is a dict with {', '.join(REQUIRED_KEYS)}; got {str(row)[:80]}.")
        problem = row_problem(row)
        if problem:
            raise ValueError(f"a row to append to {path} {problem}: {str(row)[:120]}")
    # NaN is a legitimate value of some fields (BiLD's alpha, a rate with nothing to count); quality is
    # checked above
    lines = [json.dumps(row, default=str) + "\n" for row in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    if corrupt_path(path).is_dir():
        raise _not_a_file(corrupt_path(path))
    with _locked(path, "a+b", exclusive=True) as handle:
        offset, tail = _tail(handle)
        prefix = b""
        if tail.strip():
            row, problem, cut = _parse(tail)
            if row is not None:
                prefix = b"\n"  # a complete row missing its newline: complete the line, keep the row
            elif not cut:
                raise _error(path, _line_number(handle, offset), problem)
            else:
                with open(corrupt_path(path), "ab") as aside:
                    aside.write(tail + b"\n")
                    aside.flush()
                    os.fsync(aside.fileno())
                handle.truncate(offset)
                warnings.warn(
                    f"{path}: its last line was cut short by an interruption; it was moved to "
                    f"{corrupt_path(path)} and the sweep redoes that row.",
                    stacklevel=2,
                )
        handle.seek(0, os.SEEK_END)
        handle.write(prefix + "".join(lines).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def set_aside_bad_lines(path: os.PathLike) -> int:
    """Move every malformed line of a rows file to `<path>.corrupt` (appended, as it was) and keep the
    rows; returns how many lines were moved. The sweep then redoes the rows those lines held. Holds
    the file's lock throughout, so no row another process appends meanwhile is lost."""
    path = Path(path)
    if corrupt_path(path).is_dir():
        raise _not_a_file(corrupt_path(path))
    with _locked(path, "rb", exclusive=True) as handle:
        data = handle.read()
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        good, bad = [], []
        for line in lines:
            if not line.strip():
                continue
            (good if _parse(line)[0] is not None else bad).append(line)
        if bad:
            with open(corrupt_path(path), "ab") as aside:
                aside.write(b"".join(line + b"\n" for line in bad))
                aside.flush()
                os.fsync(aside.fileno())
            temporary = path.with_name(path.name + ".repairing")
            with open(temporary, "wb") as repaired:
                repaired.write(b"".join(line + b"\n" for line in good))
                repaired.flush()
                os.fsync(repaired.fileno())
            os.replace(temporary, path)  # writers waiting for the lock reopen the new file (`_locked`)
    return len(bad)
