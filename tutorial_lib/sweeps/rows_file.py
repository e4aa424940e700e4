"""A sweep's rows file (`rows.jsonl`): one JSON object per line, appended as rows finish.

The file is the only copy of hours of model runs, so reading it never loses a row silently and
writing it never deletes one:

- **A last row without a newline** (the file was cut just before its final `\\n`, or written by
  another tool) is a complete row: it is read, and the next append completes its line first.
- **A last line cut short** (an interruption during a write: no newline, and not UTF-8 or not
  JSON, as every prefix of a JSON object is) holds no row. Reading skips it with a warning; the next append moves it aside, appending
  it to `rows.jsonl.corrupt` beside the file, says so in a warning, and goes on; the sweep redoes
  that row.
- **Any other malformed line** (not UTF-8, not JSON, JSON that is not an object such as `42` or
  `null`, or an object without `task` / `config` / `example_id`) raises `RowsFileError`, which names the
  file and the line number and says how to repair it: delete or fix that line (the sweep redoes a
  missing row), or call `set_aside_bad_lines(path)`, which moves every malformed line to
  `rows.jsonl.corrupt` and keeps the rest.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

__all__ = ["RowsFileError", "read_rows", "append_rows", "set_aside_bad_lines", "corrupt_path", "REQUIRED_KEYS"]

#: What every row must carry: it keys the row in its sweep.
REQUIRED_KEYS = ("task", "config", "example_id")
_TAIL_BLOCK = 64 * 1024


class RowsFileError(ValueError):
    """A line of a rows file is not a row; the message names the file, the line and the repair."""


def corrupt_path(path: os.PathLike) -> Path:
    """Where malformed lines are moved aside: `<rows file>.corrupt`, beside it."""
    path = Path(path)
    return path.with_name(path.name + ".corrupt")


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
    if not isinstance(row, dict):
        return None, f"is JSON but not an object (a row is {{...}}; found {text.strip()[:40]!r})", False
    missing = [key for key in REQUIRED_KEYS if key not in row]
    if missing:
        return None, f"is an object without {', '.join(missing)} (every row has {', '.join(REQUIRED_KEYS)})", False
    return row, "", False


def _error(path: Path, number: int, problem: str) -> RowsFileError:
    return RowsFileError(
        f"{path}, line {number} {problem}. Each line of a rows file is one row (a JSON object). To repair it, "
        f"delete or fix line {number} (the sweep redoes a missing row), or run "
        f"`tutorial_lib.rows_file.set_aside_bad_lines({str(path)!r})`, which moves every malformed line to "
        f"{corrupt_path(path).name} and keeps the rest.")


def read_rows(path: os.PathLike) -> List[dict]:
    """Every row of the file, in order; `[]` for a missing file. Raises `RowsFileError` on a malformed
    line; a last line cut short by an interruption is skipped with a warning (see the module)."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
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
            rows.append(row)
        elif cut and number == len(lines) and not ends_in_newline:
            warnings.warn(f"{path}, line {number} was cut short by an interruption (no newline, not a whole row); "
                          f"it is skipped and the sweep redoes it (the next append moves it to "
                          f"{corrupt_path(path).name}).", stacklevel=2)
        else:
            raise _error(path, number, problem)
    return rows


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
            return start + cut + 1, tail[cut + 1:]
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
    lines = [json.dumps(row, default=str) + "\n" for row in rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
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
                warnings.warn(f"{path}: its last line was cut short by an interruption; it was moved to "
                              f"{corrupt_path(path)} and the sweep redoes that row.", stacklevel=2)
        handle.seek(0, os.SEEK_END)
        handle.write(prefix + "".join(lines).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def set_aside_bad_lines(path: os.PathLike) -> int:
    """Move every malformed line of a rows file to `<path>.corrupt` (appended, as it was) and keep the
    rows; returns how many lines were moved. The sweep then redoes the rows those lines held."""
    path = Path(path)
    data = path.read_bytes()
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
        temporary = path.with_name(path.name + ".repairing")
        temporary.write_bytes(b"".join(line + b"\n" for line in good))
        os.replace(temporary, path)
    return len(bad)
