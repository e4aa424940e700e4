"""Committed notebooks: no outputs, no widget state, one `parameters` cell, in step with their .py pair."""

import tomllib
from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_outputs_and_no_widget_state(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata, f"{path.name} carries widget state: run `make sync`"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name} cell {i} has outputs: run `make sync`"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"
        assert "widgets" not in cell.metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exactly_one_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name} has {len(tagged)} cells tagged 'parameters'"
    assert tagged[0].cell_type == "code"
    assert "output_dir" in tagged[0].source, "every notebook records its numbers under output_dir"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_paired_with_a_percent_script(path):
    script = path.with_suffix(".py")
    assert script.exists(), f"{path.name} has no paired {script.name}: run `make sync`"
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    paired = jupytext.read(script)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in paired.cells], (
        f"{path.name} and {script.name} differ: run `make sync`"
    )
    assert [c.metadata.get("tags", []) for c in nb.cells] == [
        c.metadata.get("tags", []) for c in paired.cells
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_parses(path):
    # a broken cell otherwise surfaces only when a notebook runs, minutes (or hours) into it
    import ast

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        source = "\n".join(
            "pass" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines()
        )
        try:
            ast.parse(source)
        except SyntaxError as error:
            pytest.fail(
                f"{path.name} cell {i} does not parse ({error.msg}, line {error.lineno}): fix its .py pair "
                "and run `make sync`"
            )


#: The house's line length, which ruff checks everywhere but in the notebooks' .py pairs, whose markdown cells
#: hold one paragraph per line.
LINE_LENGTH = tomllib.loads((NOTEBOOK_DIR.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "ruff"
]["line-length"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_cells_keep_the_house_line_length(path):
    nb = nbformat.read(path, as_version=4)
    long = [
        f"cell {i} line {n}: {len(line)} columns"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for n, line in enumerate(cell.source.splitlines(), 1)
        if len(line) > LINE_LENGTH
    ]
    assert not long, (
        f"{path.name}: code lines over {LINE_LENGTH} columns (wrap them in its .py pair, then `make sync`):\n"
        + "\n".join(long)
    )
