"""The numbers a results page's prose quotes, in JupyterLab and in the book, from one source.

The prose of notebooks 06-10 quotes each number as {eval}`glued["name:format"]`: JupyterLab with
jupyterlab-myst evaluates it in the running kernel (`lessons.notebook.GLUED`, filled by `glue_values`), and
book/build_book.py writes it as myst-nb's {glue:text}`name:format` for the book, which never executes. These
checks are static (the notebooks' `.py` pairs) or in-process; tests/test_browser_lab_numbers.py runs a
notebook in JupyterLab itself."""

import ast
import json
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from IPython.core.formatters import PlainTextFormatter
from myst_nb.core.variables import format_plain_text

from tutorial_lib.lessons import notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))
import build_book  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
#: The results pages, whose findings quote at least ten numbers each.
RESULTS_PAGES = (
    "06_t5_evaluation",
    "07_gemma_evaluation",
    "08_real_pair_token_analysis",
    "10_rules_in_engines",
)


def _cells(path: Path):
    """(kind, source) per cell of a py:percent notebook, as jupytext reads it."""
    import jupytext

    return [(cell.cell_type, cell.source) for cell in jupytext.read(path).cells]


def quoted_roles(path: Path) -> list:
    """The `name:format` of every {eval}`glued[...]` role in the notebook's markdown, in order."""
    return [
        role
        for kind, source in _cells(path)
        if kind == "markdown"
        for role in build_book.EVAL_GLUED.findall(source)
    ]


def glue_calls(path: Path):
    """(cell index, call node, whether its value is bound to `glued`) for every `glue_values(...)` call."""
    found = []
    for index, (kind, source) in enumerate(_cells(path)):
        if kind != "code":
            continue
        tree = ast.parse(source)
        bound = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["glued"]
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "glue_values":
                found.append((index, node, id(node) in bound))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_prose_quotes_exactly_the_names_its_cells_glue(path):
    quoted = {role.split(":")[0] for role in quoted_roles(path)}
    glued = set()
    for _, call, _ in glue_calls(path):
        assert all(k.arg for k in call.keywords), f"{path.name}: glue_values(**...) hides the glued names"
        glued.update(k.arg for k in call.keywords)
    assert not quoted - glued, f"{path.name} quotes names no cell glues: {sorted(quoted - glued)}"
    assert not glued - quoted, f"{path.name} glues names its prose never quotes: {sorted(glued - quoted)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glue_call_binds_glued_and_the_prose_has_one_form(path):
    for index, call, bound in glue_calls(path):
        assert bound, f"{path.name} cell {index}: write `glued = tl.lessons.notebook.glue_values(...)`"
    for index, (kind, source) in enumerate(_cells(path)):
        if kind == "markdown":
            assert "{glue" not in source, (
                f'{path.name} cell {index}: quote a number as {{eval}}`glued["name:format"]`, which '
                "JupyterLab shows too; the book writes it as a glue role"
            )
            build_book.glue_roles(source, path.stem)  # no other {eval}: the book could not show it


def test_the_results_pages_quote_their_numbers():
    for stem in RESULTS_PAGES:
        assert len(quoted_roles(ROOT / "notebooks" / f"{stem}.py")) >= 10, stem


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")), ids=lambda p: p.name)
def test_committed_notebooks_carry_no_evaluated_prose(path):
    """jupyterlab-myst keeps what it evaluated in the markdown cell's metadata (`user_expressions`), and a
    save writes it to the .ipynb; jupytext.toml's `cell_metadata_filter` keeps it out of the .py pair's cell
    headers, and `make sync` clears it from the .ipynb: a run's numbers are never committed."""
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        assert "user_expressions" not in cell.metadata, (
            f"{path.name} cell {i} keeps the numbers a JupyterLab run evaluated (its `user_expressions` "
            "metadata, which `make sync` does not clear): delete that key, or `git checkout` the pair"
        )
    headers = [
        line
        for line in path.with_suffix(".py").read_text(encoding="utf-8").splitlines()
        if line.startswith("# %%")
    ]
    assert not [line for line in headers if "user_expressions" in line], (
        f"{path.with_suffix('.py').name} keeps the numbers a JupyterLab run evaluated in a cell header"
    )


# ---- the book's rewrite: {eval}`glued["name:format"]` -> {glue:text}`name:format` -------------------------


def test_the_book_writes_each_glued_role_as_a_glue_role():
    text = (
        'BLEU {eval}`glued["t5_bleu:.1f"]` [{eval}`glued["t5_low:.1f"]`, {eval}`glued["t5_high:.1f"]`],\n'
        'won by {eval}`glued["t5_fastest"]` at {eval}`glued["t5_cut:+.0%"]` and '
        '{eval}`glued["rows:,d"]` rows.'
    )
    assert build_book.glue_roles(text) == (
        "BLEU {glue:text}`t5_bleu:.1f` [{glue:text}`t5_low:.1f`, {glue:text}`t5_high:.1f`],\n"
        "won by {glue:text}`t5_fastest` at {glue:text}`t5_cut:+.0%` and {glue:text}`rows:,d` rows."
    )
    assert build_book.glue_roles("no roles, `glued` in code") == "no roles, `glued` in code"


@pytest.mark.parametrize(
    "role", ["{eval}`1 + 1`", "{eval}`glued.bleu`", "{eval}`glued['bleu']`", '{eval}`other["bleu:.1f"]`']
)
def test_the_book_refuses_an_eval_it_cannot_show(role):
    with pytest.raises(ValueError, match=r"^06_x: .*never executes a notebook"):
        build_book.glue_roles(f"the value {role} here", "06_x")


def test_staging_a_notebook_rewrites_its_prose():
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# A page"]},
            {"cell_type": "markdown", "metadata": {}, "source": ['BLEU {eval}`glued["bleu:.1f"]`.']},
            {"cell_type": "code", "metadata": {}, "source": "glued = glue_values(bleu=86.54)", "outputs": []},
        ]
    }
    staged = build_book.stage_notebook(nb, "06_t5_evaluation")
    assert staged["cells"][0]["source"].startswith("# A page\n\n```{admonition} Run this page as a notebook")
    assert staged["cells"][1]["source"] == "BLEU {glue:text}`bleu:.1f`."
    assert staged["cells"][2]["source"] == "glued = glue_values(bleu=86.54)"


# ---- the kernel's side: glue_values keeps the texts the book shows ----------------------------------------

#: Values of the kinds the notebooks glue, and every format their prose uses.
VALUES = {
    "bleu": np.float64(86.54321),
    "share": 0.1234567,
    "negative": -0.0456,
    "rows": np.int64(12683),
    "n": 200,
    "method": "SpecCascade [Token-V2]",
    "quoted": 'it\'s "quoted"',
    "missing": float("nan"),
    "flag": True,
    "alpha": 0.30000000000000004,
}


def _book_text(value, role: str) -> str:
    """What the book shows for {glue:text}`role` with `value` glued: myst-nb's glue records the text/plain
    of IPython's formatter, and its `glue:text` role splits `role` at its last colon and formats that text."""
    plain = PlainTextFormatter()(value.item() if isinstance(value, np.generic) else value)
    key_format = role.rsplit(":", 1)
    return format_plain_text(plain, key_format[1] if len(key_format) == 2 else "s")


@pytest.fixture
def glued(monkeypatch):
    """`glue_values` without a kernel: myst-nb's glue recorded, `GLUED` fresh."""
    import myst_nb

    recorded = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: recorded.update({name: value}))
    monkeypatch.setattr(notebook, "GLUED", notebook.Glued())
    return recorded


def test_glued_texts_are_the_texts_the_book_shows(glued):
    formats = sorted({role.partition(":")[2] for path in NOTEBOOKS for role in quoted_roles(path)})
    assert {".1f", ".3f", ".1%", "+.0%", ",d", ".3g", "+.5f", ""} <= set(formats)
    out = notebook.glue_values(**VALUES)
    assert out is notebook.GLUED and set(out.names()) == set(VALUES) == set(glued)
    for name, value in VALUES.items():
        numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
        for spec in formats if numeric else ["", "s"]:
            if spec.endswith("d") and not float(value).is_integer():
                continue  # an integer format on a fraction fails in the book too
            role = f"{name}:{spec}" if spec else name
            shown = out[role]
            assert isinstance(shown, notebook.GluedText)
            assert shown == _book_text(value, role), role
            # jupyterlab-myst shows the text/plain repr: the text itself, no quotes
            assert PlainTextFormatter()(shown) == repr(shown) == str(shown) == _book_text(value, role)
    assert out["method"].text == "SpecCascade [Token-V2]" and out["rows:,d"] == "12,683"
    assert out["share:.1%"] == "12.3%" and out["negative:+.0%"] == "-5%" and out["missing:.2f"] == "nan"


def test_a_name_not_glued_yet_says_which_cell_to_run(glued):
    notebook.glue_values(bleu=1.0)
    with pytest.raises(notebook.NotComputedYet, match=r"gap is computed by a cell further down: run that"):
        notebook.GLUED["gap:.2f"]
    assert "gap" not in notebook.GLUED and "bleu" in notebook.GLUED
    with pytest.raises(KeyError, match="quote a value"):
        notebook.GLUED["other.ipynb::bleu"]
    assert "1 values (bleu)" in repr(notebook.GLUED)


def test_a_later_glue_of_a_name_replaces_its_text(glued):
    notebook.glue_values(rows=10)
    assert notebook.glue_values(rows=20)["rows"] == "20"


def test_a_table_is_refused_before_anything_is_glued(glued):
    import pandas as pd

    with pytest.raises(TypeError, match="show a table with its own cell"):
        notebook.glue_values(table=pd.DataFrame({"a": [1]}))
    assert notebook.GLUED.names() == [] and glued == {}


def test_in_a_kernel_the_text_is_the_kernels_own_formatting(glued, monkeypatch):
    """Inside IPython the kernel's formatter gives the text/plain myst-nb's glue records (e.g. after
    `%precision 2`), so the prose in JupyterLab and the book's page agree."""
    import IPython

    class Shell:
        display_formatter = type(
            "F", (), {"formatters": {"text/plain": PlainTextFormatter(float_precision="%.2f")}}
        )

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    notebook.glue_values(x=3.14159)
    assert notebook.GLUED["x"] == "3.14" and notebook.GLUED["x:.4f"] == "3.1400"


def test_jupyterlab_and_the_book_show_the_same_texts_for_an_executed_notebook():
    """One kernel runs a glue cell, then evaluates the prose's expressions as jupyterlab-myst asks it to (an
    execute request's `user_expressions`, whose text/plain it shows); the executed notebook is then staged
    by book/build_book.py and rendered by myst-nb (execution off, as the book): the same texts."""
    import io

    from docutils import nodes
    from docutils.core import publish_doctree
    from jupyter_client.kernelspec import find_kernel_specs
    from myst_nb.docutils_ import Parser
    from nbclient import NotebookClient

    kernel = "tutorial-lib" if "tutorial-lib" in find_kernel_specs() else "python3"
    roles = ["bleu:.1f", "share:+.1%", "rows:,d", "method", "quoted", "missing:.3f", "alpha:.3g", "n"]
    prose = "Quoted: " + ", ".join(f'{{eval}}`glued["{role}"]`' for role in roles) + "."
    expressions = {str(i): f'glued["{role}"]' for i, role in enumerate(roles)}
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import json, numpy as np, tutorial_lib as tl\n"
            "glued = tl.lessons.notebook.glue_values(bleu=np.float64(86.54321), share=0.01234, "
            "rows=np.int64(12683), method='Token [V2]', quoted=\"it's\", missing=float('nan'), "
            "alpha=np.float32(0.30000001), n=200)"
        ),
        nbformat.v4.new_markdown_cell(prose),
        nbformat.v4.new_code_cell(
            f"print(json.dumps(get_ipython().user_expressions({expressions!r})))"  # jupyterlab-myst's request
        ),
    ]
    NotebookClient(nb, kernel_name=kernel, timeout=120).execute()
    answers = json.loads(nb.cells[2].outputs[0]["text"])
    lab = [answers[str(i)]["data"]["text/plain"] for i in range(len(roles))]
    assert lab == ["86.5", "+1.2%", "12,683", "Token [V2]", "it's", "nan", "0.3", "200"]

    staged = build_book.stage_notebook(json.loads(nbformat.writes(nb)), "06_t5_evaluation")
    # the run box the staging adds links to a page of the book, which only Sphinx resolves
    # (tests/test_book_staging.py checks the box): this page is read without it
    assert staged["cells"][0]["source"].startswith("```{admonition} Run this page as a notebook")
    del staged["cells"][0]
    warnings = io.StringIO()
    page = publish_doctree(
        json.dumps(staged),
        source_path="06_t5_evaluation.ipynb",
        parser=Parser(),
        settings_overrides={"nb_execution_mode": "off", "warning_stream": warnings, "report_level": 2},
    )
    book = [n.astext() for n in page.findall(nodes.inline) if "pasted-text" in n["classes"]]
    assert book == lab and not warnings.getvalue(), warnings.getvalue()


def test_the_lab_extension_is_in_the_extra_make_lab_installs():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(re.match(r"jupyterlab-myst\b", d) for d in extras["book"])
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"pip install -e '\.\[[^]]*\bbook\b", makefile)  # `make install`, which `make lab` needs
    assert re.search(r"^lab: install$", makefile, flags=re.M)
