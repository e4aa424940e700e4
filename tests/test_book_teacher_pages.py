"""What the course book tells a teacher is written when the book is built, from the run that built it:
the time table of the teaching page from that run's times file, what `make tutorial` writes from the
Makefile, and each notebook image's alt text from the figure's own description (book/build_book.py)."""

import base64
import hashlib
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "book"))
import build_book  # noqa: E402

TEACHING = REPO / "book" / "teaching" / "index.md"


def _times(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_the_teaching_page_keeps_no_hand_copied_times_only_the_places_the_build_fills():
    text = TEACHING.read_text(encoding="utf-8")
    assert text.count(build_book.TIME_TABLE_MARKER) == 1 and text.count(build_book.ON_DISK_MARKER) == 1
    assert not re.search(r"^\| \[?\d\d_", text, flags=re.M), "a hand-kept time table row is left"
    for name in re.findall(r"tests/(test_\w+\.py)", text):
        assert (REPO / "tests" / name).exists(), f"the teaching page names tests/{name}, which is not there"


def test_the_time_table_is_the_newest_run_of_the_run_that_built_the_book(tmp_path):
    executed = tmp_path / "executed"
    executed.mkdir()
    assert build_book.run_times_file(executed) == build_book.TIMES  # no run file: the committed one
    run = _times(
        executed / "notebook_times.jsonl",
        {
            "notebook": "07_gemma_evaluation",
            "seconds": 500,
            "slowest_cell_s": 80.0,
            "load": "1 1 1",
            "finished": "2026-12-01 10:00",
            "beside": "a test run",
        },
        {
            "notebook": "07_gemma_evaluation",
            "seconds": 140,
            "slowest_cell_s": 60.5,
            "load": "2.0 1.5 1.0",
            "finished": "2026-12-02 10:00",
            "beside": "nothing (quiet)",
        },
    )
    assert build_book.run_times_file(executed) == run
    page = build_book.teacher_sections(TEACHING.read_text(encoding="utf-8"), executed)
    assert build_book.TIME_TABLE_MARKER not in page and build_book.ON_DISK_MARKER not in page
    row = next(line for line in page.splitlines() if line.startswith("| [07_gemma_evaluation]"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells == [
        "[07_gemma_evaluation](../reruns/07_gemma_evaluation.ipynb)",
        "the Qwen pair (`make models-qwen`), or `redraw_only=True`",
        "140",
        "60.5",
        "2.0 1.5 1.0",
        "2026-12-02 10:00",
    ]
    assert "the times file of the run that executed this book's notebooks" in page
    assert "nothing (quiet): 07" in page
    # the notebooks that run did not time come from the committed file, and the page says so
    committed = build_book.notebook_times()
    quickstart = f"| {committed['00_quickstart']['seconds']} | "
    assert quickstart in next(line for line in page.splitlines() if line.startswith("| [00_quickstart]"))
    assert "Not timed in that run, so from `data/benchmarks/notebook_times.jsonl`: 00_quickstart" in page


def test_without_a_run_file_the_table_is_the_committed_times_and_says_so(tmp_path):
    table = build_book.time_table(build_book.TIMES)
    committed = build_book.notebook_times()
    rows = [line for line in table.splitlines() if re.match(r"^\| \[\d\d_", line)]
    assert [re.match(r"^\| \[(\w+)\]", row).group(1) for row in rows] == sorted(committed)
    for row in rows:
        name = re.match(r"^\| \[(\w+)\]", row).group(1)
        assert f"| {committed[name]['seconds']} |" in row and committed[name]["finished"] in row
    assert "the committed copy of that file, `data/benchmarks/notebook_times.jsonl`" in table
    assert "Not timed in that run" not in table


def test_what_make_tutorial_writes_is_read_from_the_makefile(tmp_path):
    note = build_book.on_disk_note()
    assert "`build/notebooks/`" in note and "`build/figures/`" in note and "`data/results/`" in note
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        (REPO / "Makefile")
        .read_text()
        .replace("FIGURES ?= $(CURDIR)/build/figures", "FIGURES ?= $(CURDIR)/out/pics")
    )
    assert "`out/pics/`" in build_book.on_disk_note(makefile)


def test_the_set_up_page_names_the_figures_folder_the_makefile_writes():
    figures = build_book._make_variable("FIGURES")
    assert figures == "build/figures"
    setup = (REPO / "book" / "manual" / "setup.md").read_text(encoding="utf-8")
    assert "the figures to `build/figures/`" in setup
    assert "the figures to `figures/`" not in setup


def _image_output(png: bytes, text: str, html: str = "") -> dict:
    data = {"image/png": base64.b64encode(png).decode(), "text/plain": text}
    if html:
        data["text/html"] = html
    return {"output_type": "display_data", "metadata": {}, "data": data}


def test_a_notebook_image_gets_its_description_as_alt_text():
    described, bare, copy = b"\x89PNG described", b"\x89PNG bare", b"\x89PNG copy"
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "fig",
                "metadata": {},
                "outputs": [
                    _image_output(described, "Figure: Lemma 3; rejection rate against alpha."),
                    _image_output(bare, "<Figure size 960x540 with 2 Axes>"),
                    _image_output(copy, "hint", html='<img alt="Figure: x" src="data:...">'),
                ],
            }
        ]
    }
    alts = build_book.image_alts(nb)
    assert alts == {
        f"{hashlib.sha256(described).hexdigest()}.png": "Figure: Lemma 3; rejection rate against alpha."
    }
