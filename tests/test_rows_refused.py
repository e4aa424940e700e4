"""Rows that are wrong are refused with the file and the line; configuration keys
tell every distinct alpha apart; a folder written by several processes reads as one run."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Config, Task
from tutorial_lib.sweeps.identity import canonical
from tutorial_lib.sweeps.rows_file import RowsFileError

pytestmark = pytest.mark.usefixtures("one_thread")

TOY = tl.load_pair("toy-drafter", "toy-verifier")
TASK = Task(
    "t",
    "qa_em",
    [{"id": "a", "prompt": "mi", "references": ["x"]}, {"id": "b", "prompt": "mi", "references": ["y"]}],
    max_new_tokens=2,
)
CONFIGS = [Config("Drafter", "drafter")]


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
        Config("SpecCascade [Chow]", "speculative", "chow", alpha, gamma=1)
        for alpha in (0.3000001, 0.3000002)
    ]
    assert close[0].key != close[1].key
    table = _sweep(tmp_path, close)
    assert len(table) == 4 and table.groupby("config").size().tolist() == [2, 2]


@pytest.mark.parametrize(
    "alpha",
    [1 / 3, 2 ** (1 / 3), 0.1 + 0.2, -0.42, 0.505, 2.519842099789745, 1e-7, 0.0, 5.551115123125783e-17],
)
def test_an_alpha_moved_by_one_unit_in_the_last_place_names_the_same_configuration(alpha):
    """A processor whose vector routines round the last bit otherwise computes the same grid: each key
    and each sweep's hash must not see it."""
    for moved in (np.nextafter(alpha, np.inf), np.nextafter(alpha, -np.inf)):
        kinds = [("bild", None)] + ([("speculative", "chow")] if abs(alpha) <= 1 else [])
        for method, rule in kinds:
            here = Config("SpecCascade [Chow]" if rule else "BiLD", method, rule, abs(alpha), gamma=1)
            there = Config(here.label, method, rule, abs(float(moved)), gamma=1)
            assert here.key == there.key
        assert canonical({"alphas": [alpha, 1.0]}) == canonical({"alphas": [float(moved), 1.0]})


def test_rows_under_an_earlier_form_of_the_key_are_read_as_their_alphas_configuration(tmp_path):
    third = Config("SpecCascade [Chow]", "speculative", "chow", 1 / 3, gamma=1)
    rows = _sweep(tmp_path, [third])
    path = Path(rows.attrs["path"]) / "rows.jsonl"
    saved = [json.loads(line) for line in path.read_text().splitlines()]
    for earlier in ("0.333333", repr(1 / 3)):  # 6 digits, then every digit of the float
        fields = third.key.split("|")
        fields[3] = earlier
        legacy = [{**row, "config": "|".join(fields)} for row in saved]
        path.write_text("".join(json.dumps(row) + "\n" for row in legacy))  # as an earlier version saved them
        reloaded = _sweep(tmp_path, [third])
        assert len(reloaded) == 2 and set(reloaded["config"]) == {third.key}
        assert path.read_text().count("|".join(fields)) == 2  # nothing recomputed, nothing rewritten
