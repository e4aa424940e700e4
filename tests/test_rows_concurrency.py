"""Two processes appending to one rows file lose no row, and a repair running
meanwhile deletes none.

The writers load `rows_file` straight from its file (it needs nothing else of the package), so the
test times appends, not imports. The file lives on /dev/shm where there is one: the locking is the
same there, and fsync is free, which keeps 100,000 appends to a few tens of seconds."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tutorial_lib.sweeps import rows_file

ROWS_FILE_SOURCE = Path(rows_file.__file__)
APPENDS_PER_WRITER = 50_000
WRITER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("rows_file", sys.argv[1])
rows_file = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rows_file)
path, name, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(count):
    # every 500th row is larger than a pipe buffer and a page, so a write is never one small syscall
    text = "x" * (100_000 if i % 500 == 0 else 10)
    rows_file.append_rows(
        path, [{"task": "t", "config": name, "example_id": str(i), "quality": 1.0, "text": text}]
    )
"""
REPAIRER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("rows_file", sys.argv[1])
rows_file = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rows_file)
path, stop = sys.argv[2], sys.argv[3]
import os
repairs = 0
while not os.path.exists(stop):
    if os.path.exists(path):
        rows_file.set_aside_bad_lines(path)
        rows_file.read_rows(path)
        repairs += 1
    time.sleep(0.05)
print(repairs)
"""


@pytest.fixture
def fast_folder(tmp_path):
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = shm / f"tutorial_lib_rows_test_{os.getpid()}"
        folder.mkdir()
        yield folder
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
    else:
        yield tmp_path


def test_two_writers_and_a_repairer_lose_no_row_over_100000_appends(fast_folder):
    path = fast_folder / "rows.jsonl"
    stop = fast_folder / "stop"
    started = time.monotonic()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ROWS_FILE_SOURCE), str(path), name, str(APPENDS_PER_WRITER)]
        )
        for name in ("a", "b")
    ]
    repairer = subprocess.Popen(
        [sys.executable, "-c", REPAIRER, str(ROWS_FILE_SOURCE), str(path), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    finally:
        stop.touch()
        repairs = int(repairer.communicate(timeout=60)[0].strip() or 0)
    elapsed = time.monotonic() - started
    rows = rows_file.read_rows(path)
    keys = [(row["config"], row["example_id"]) for row in rows]
    expected = {(name, str(i)) for name in ("a", "b") for i in range(APPENDS_PER_WRITER)}
    print(
        f"{2 * APPENDS_PER_WRITER} appends by 2 writers with {repairs} repairs meanwhile: {len(rows)} rows, "
        f"{len(expected - set(keys))} lost, {len(keys) - len(set(keys))} duplicated, {elapsed:.1f} s"
    )
    assert len(keys) == len(set(keys)) == len(expected) and set(keys) == expected
    assert not rows_file.corrupt_path(path).exists()  # no writer ever saw another's half-written row


def test_a_repair_waits_for_the_writer_and_a_writer_reopens_a_replaced_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    good = {"task": "t", "config": "c", "example_id": "0", "quality": 1.0}
    path.write_bytes(json.dumps(good).encode() + b"\n{broken\n")
    assert rows_file.set_aside_bad_lines(path) == 1  # replaces the file (a new inode)
    rows_file.append_rows(path, [{**good, "example_id": "1"}])
    assert [row["example_id"] for row in rows_file.read_rows(path)] == ["0", "1"]


def test_a_folder_where_a_rows_file_belongs_is_named(tmp_path):
    (tmp_path / "rows.jsonl").mkdir()
    with pytest.raises(rows_file.RowsFileError, match="is a folder, not a rows file"):
        rows_file.read_rows(tmp_path / "rows.jsonl")
    with pytest.raises(rows_file.RowsFileError, match="is a folder, not a rows file"):
        rows_file.append_rows(tmp_path / "rows.jsonl", [{"task": "t", "config": "c", "example_id": "0"}])
    other = tmp_path / "other"
    other.mkdir()
    rows_file.corrupt_path(other / "rows.jsonl").mkdir()
    with pytest.raises(rows_file.RowsFileError, match="rows.jsonl.corrupt is a folder"):
        rows_file.append_rows(other / "rows.jsonl", [{"task": "t", "config": "c", "example_id": "0"}])


SWEEP = """
import sys
import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Config, Task
examples = [{"id": f"e{i}", "prompt": "mi", "references": ["x"]} for i in range(32)]
task = Task("t", "qa_em", examples, max_new_tokens=3)
configs = [
    Config("Drafter", "drafter", gamma=1, temperature=1.0),
    Config("Verifier", "verifier", gamma=1, temperature=1.0),
]
table = ev.run_sweep(
    tl.load_pair("toy-drafter", "toy-verifier"), [task], configs, name="split", root=sys.argv[1],
    progress=False,
)
print("ROWS", len(table))
"""


def test_two_sweep_processes_on_one_run_leave_every_row_exactly_once(tmp_path):
    """Two `run_sweep` processes working on one sweep once returned 63 of 64 rows; now the
    folder reads as one run with each of the 64 rows once (a row both computed is read once: its
    copies agree)."""
    processes = [
        subprocess.Popen([sys.executable, "-c", SWEEP, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=600)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0]
    folder = next(tmp_path.glob("split-*"))
    rows = rows_file.read_rows(folder / "rows.jsonl")
    keys = {(row["config"], row["example_id"]) for row in rows}
    assert len(keys) == 64
    rows_file.check_rows(
        rows_file.read_numbered_rows(folder / "rows.jsonl"), folder / "rows.jsonl"
    )  # copies agree
    last = subprocess.run(
        [sys.executable, "-c", SWEEP, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert "ROWS 64" in last.stdout, (outputs, last.stderr[-2000:])
