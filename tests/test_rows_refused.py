"""Rows that are wrong are refused with the file and the line; configuration keys
tell every distinct alpha apart; a folder written by several processes reads as one run."""

import json
import math
from pathlib import Path

import pytest

import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.rows_file import RowsFileError

pytestmark = pytest.mark.usefixtures("one_thread")

TOY = tl.load_pair("toy-drafter", "toy-verifier")
TASK = ev.Task(
    "t",
    "qa_em",
    [{"id": "a", "prompt": "mi", "references": ["x"]}, {"id": "b", "prompt": "mi", "references": ["y"]}],
    max_new_tokens=2,
)
CONFIGS = [ev.Config("Drafter", "drafter")]


def _sweep(root, configs=CONFIGS):
    return ev.run_sweep(TOY, [TASK], configs, name="refused", root=root, progress=False)


@pytest.fixture
def saved(tmp_path):
    rows = _sweep(tmp_path)
    path = Path(rows.attrs["path"]) / "rows.jsonl"
    return path, [json.loads(line) for line in path.read_text().splitlines()]


def _append_line(path: Path, row: dict) -> int:
    with open(path, "a") as handle:
        handle.write(json.dumps(row) + "\n")
    return len(path.read_text().splitlines())


@pytest.mark.parametrize(
    "change, problem",
    [
        (dict(example_id="zz"), "is a row of task 't' for example_id='zz', which that task does not have"),
        (dict(example_id=7), "has example_id=7 of type int (it must be a string)"),
        (dict(quality=math.nan), "has quality=nan (it must be a finite number)"),
        (dict(quality="1.0"), "has quality=1.0 (it must be a finite number)"),
        (
            dict(quality=0.5, text="other"),
            "repeats the row of line 1 (t, Drafter|drafter|None|0|1.0|g5|T0, a) with another "
            "quality and text",
        ),
    ],
)
def test_a_wrong_row_is_refused_with_the_file_and_the_line(saved, change, problem):
    path, rows = saved
    number = _append_line(path, {**rows[0], **change})
    with pytest.raises(RowsFileError) as error:
        _sweep(path.parent.parent)
    message = str(error.value)
    assert str(path) in message and f"line {number} {problem}" in message, message


def test_a_copy_with_the_same_result_is_read_once(saved):
    path, rows = saved
    _append_line(path, {**rows[0], "wall_time_s": 123.0})  # written twice, e.g. by two processes
    table = _sweep(path.parent.parent)
    assert len(table) == 2 and sorted(table["example_id"]) == ["a", "b"]


def test_rows_files_of_several_writers_read_as_one_run(saved):
    path, rows = saved
    other = path.with_name("rows.writer-1.jsonl")
    other.write_text(json.dumps(rows[1]) + "\n")  # a copy of one row in a second writer's file
    path.write_text(json.dumps(rows[0]) + "\n")  # and the first writer holds the other row
    table = _sweep(path.parent.parent)
    assert sorted(table["example_id"]) == ["a", "b"] and len(table) == 2
    other.write_text(json.dumps({**rows[0], "quality": 0.25}) + "\n")  # disagreeing copies across files
    with pytest.raises(RowsFileError, match="with another quality"):
        _sweep(path.parent.parent)


def test_alphas_that_differ_in_the_seventh_digit_get_their_own_rows(tmp_path):
    close = [
        ev.Config("SpecCascade [Chow]", "speculative", "chow", alpha, gamma=1)
        for alpha in (0.3000001, 0.3000002)
    ]
    assert close[0].legacy_key == close[1].legacy_key  # what the 6-digit keys did
    assert close[0].key != close[1].key
    assert (
        ev.Config("Drafter", "drafter", alpha=0.25).key
        == ev.Config("Drafter", "drafter", alpha=0.25).legacy_key
    )
    table = _sweep(tmp_path, close)
    assert len(table) == 4 and table.groupby("config").size().tolist() == [2, 2]


def test_rows_under_a_legacy_key_are_read_as_their_alphas_configuration(tmp_path):
    third = ev.Config("SpecCascade [Chow]", "speculative", "chow", 1 / 3, gamma=1)
    rows = _sweep(tmp_path, [third])
    path = Path(rows.attrs["path"]) / "rows.jsonl"
    legacy = [{**json.loads(line), "config": third.legacy_key} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(row) + "\n" for row in legacy))  # as an earlier version saved them
    reloaded = _sweep(tmp_path, [third])
    assert len(reloaded) == 2 and set(reloaded["config"]) == {third.key}
    assert path.read_text().count(third.legacy_key) == 2  # nothing recomputed, nothing rewritten
