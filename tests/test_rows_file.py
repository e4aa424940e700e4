"""A sweep's rows file: a last row without a newline is kept, a cut line is set aside, a bad line is named."""

import json
import warnings

import pytest

from tutorial_lib.sweeps import rows_file
from tutorial_lib.sweeps.rows_file import (
    RowsFileError,
    append_rows,
    corrupt_path,
    read_rows,
    set_aside_bad_lines,
)


def _row(i):
    return {"task": "t", "config": "c", "example_id": f"e{i}", "quality": float(i)}


def _line(i):
    return json.dumps(_row(i)).encode()


def test_round_trip_and_missing_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    assert read_rows(path) == []
    append_rows(path, [_row(0), _row(1)])
    append_rows(path, iter([_row(2)]))  # any iterable
    assert read_rows(path) == [_row(0), _row(1), _row(2)]
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 3


def test_a_last_row_without_a_newline_is_kept_and_its_line_completed(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(_line(0) + b"\n" + _line(1))  # complete row, newline missing
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: no row is lost
        assert read_rows(path) == [_row(0), _row(1)]
        append_rows(path, [_row(2)])
    assert path.read_bytes() == _line(0) + b"\n" + _line(1) + b"\n" + _line(2) + b"\n"
    assert read_rows(path) == [_row(0), _row(1), _row(2)]
    assert not corrupt_path(path).exists()


def test_a_single_row_without_a_newline_is_kept(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(_line(0))
    append_rows(path, [_row(1)])
    assert read_rows(path) == [_row(0), _row(1)]


def test_a_line_cut_short_is_skipped_then_moved_aside_never_deleted(tmp_path):
    path = tmp_path / "rows.jsonl"
    cut = _line(1)[:-7]
    path.write_bytes(_line(0) + b"\n" + cut)  # an interruption in the middle of a row
    with pytest.warns(UserWarning, match="line 2 was cut short"):
        assert read_rows(path) == [_row(0)]
    assert path.read_bytes() == _line(0) + b"\n" + cut  # reading changes nothing
    with pytest.warns(UserWarning, match="moved to .*rows.jsonl.corrupt"):
        append_rows(path, [_row(1)])
    assert read_rows(path) == [_row(0), _row(1)]
    assert corrupt_path(path).read_bytes() == cut + b"\n"  # the cut bytes are kept aside


def test_a_line_cut_inside_a_utf8_character_is_a_cut_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    whole = json.dumps(
        {"task": "t", "config": "c", "example_id": "e", "text": "Grüße"}, ensure_ascii=False
    ).encode()
    cut = whole[: whole.index("ü".encode()) + 1]  # half of a two-byte character
    path.write_bytes(_line(0) + b"\n" + cut)
    with pytest.warns(UserWarning, match="cut short"):
        assert read_rows(path) == [_row(0)]
    with pytest.warns(UserWarning, match="corrupt"):
        append_rows(path, [_row(1)])
    assert corrupt_path(path).read_bytes() == cut + b"\n"


@pytest.mark.parametrize(
    "bad, problem",
    [
        (b"{not json", "is not valid JSON"),
        (b"42", "is JSON but not an object"),
        (b"null", "is JSON but not an object"),
        (b"[1, 2]", "is JSON but not an object"),
        (b'"a string"', "is JSON but not an object"),
        (b'{"task": "t", "config": "c"}', "is an object without example_id"),
        (b'{"config": "c", "example_id": "e"}', "is an object without task"),
        (b'{"task": "t", "config": "c", "example_id": "\xff\xfe"}', "is not UTF-8"),
    ],
)
@pytest.mark.parametrize("where", ["middle", "last with newline"])
def test_a_malformed_line_names_the_file_the_line_and_the_repair(tmp_path, bad, problem, where):
    path = tmp_path / "rows.jsonl"
    lines = [_line(0), bad, _line(2)] if where == "middle" else [_line(0), _line(2), bad]
    path.write_bytes(b"\n".join(lines) + b"\n")
    number = lines.index(bad) + 1
    with pytest.raises(RowsFileError) as error:
        read_rows(path)
    message = str(error.value)
    assert str(path) in message and f"line {number} {problem}" in message
    assert f"delete or fix line {number}" in message and "set_aside_bad_lines" in message
    assert isinstance(error.value, ValueError)
    # the repair the message names: the bad line goes aside, every row stays
    assert set_aside_bad_lines(path) == 1
    assert read_rows(path) == [_row(0), _row(2)]
    assert corrupt_path(path).read_bytes() == bad + b"\n"


def test_a_malformed_last_line_without_newline_that_is_json_but_not_a_row_is_an_error(tmp_path):
    # `42` is whole JSON, not something an interrupted write leaves: it is named, not skipped
    path = tmp_path / "rows.jsonl"
    path.write_bytes(_line(0) + b"\n42")
    with pytest.raises(RowsFileError, match="line 2 is JSON but not an object"):
        read_rows(path)


def test_appending_never_deletes_a_row(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(_line(0) + b"\n" + _line(1))
    for i in range(2, 5):
        append_rows(path, [_row(i)])
    assert [r["example_id"] for r in read_rows(path)] == ["e0", "e1", "e2", "e3", "e4"]


def test_appending_checks_its_rows(tmp_path):
    with pytest.raises(TypeError, match="task, config, example_id"):
        append_rows(tmp_path / "rows.jsonl", [{"quality": 1.0}])
    with pytest.raises(TypeError, match="task, config, example_id"):
        append_rows(tmp_path / "rows.jsonl", [42])
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_long_cut_tail_is_found_from_the_end(tmp_path, monkeypatch):
    monkeypatch.setattr(rows_file, "_TAIL_BLOCK", 8)  # the tail spans several blocks
    path = tmp_path / "rows.jsonl"
    cut = _line(1)[:-3]
    path.write_bytes(_line(0) + b"\n" + cut)
    with pytest.warns(UserWarning, match="corrupt"):
        append_rows(path, [_row(1)])
    assert read_rows(path) == [_row(0), _row(1)]
    assert corrupt_path(path).read_bytes() == cut + b"\n"


def test_appending_after_a_last_line_that_is_json_but_not_a_row_refuses(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(_line(0) + b"\n" + _line(1) + b"\nnull")
    with pytest.raises(RowsFileError, match="line 3 is JSON but not an object"):
        append_rows(path, [_row(2)])
    assert path.read_bytes() == _line(0) + b"\n" + _line(1) + b"\nnull"  # untouched
