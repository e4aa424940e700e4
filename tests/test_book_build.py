"""book/build_book.py without Sphinx: how an executed notebook is staged for a static page, what it does
without the executed copies, and what counts as fetching from the network. (The built site itself is
checked in a browser by tests/test_book_browser.py.)"""

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "book"))
import build_book  # noqa: E402


def _figure(title):
    return {"data": [{"type": "scatter", "x": [0, 1], "y": [1, 0]}], "layout": {"title": {"text": title}}}


def _executed_lesson():
    widget = {
        "output_type": "display_data",
        "metadata": {},
        "data": {build_book.WIDGET_VIEW: {"model_id": "abc"}, "text/plain": "[interactive controls]"},
    }
    static_copy = {"output_type": "display_data", "metadata": {}, "data": {"text/html": "<div>copy</div>"}}

    def plot(title):
        return {
            "output_type": "display_data",
            "metadata": {},
            "data": {build_book.PLOTLY_JSON: _figure(title)},
        }

    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# A lesson\n\nWhat it teaches."},
            {
                "cell_type": "code",
                "metadata": {"tags": ["injected-parameters"]},
                "source": "output_dir = '/home/me'",
                "outputs": [],
            },
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "See [02](02_rejection_rates.ipynb) and "
                "[the T5 rerun](06_t5_evaluation.ipynb#results).",
            },
            {"cell_type": "code", "metadata": {}, "source": "view", "outputs": [widget, static_copy]},
            {
                "cell_type": "code",
                "metadata": {"tags": ["remove-output"]},
                "source": "fig",
                "outputs": [plot("gone")],
            },
            {"cell_type": "code", "metadata": {}, "source": "fig", "outputs": [plot("first")]},
            {"cell_type": "code", "metadata": {}, "source": "fig", "outputs": [plot("second")]},
        ]
    }


def test_a_lesson_is_staged_for_a_page_without_kernel_or_network():
    nb = build_book.stage_notebook(_executed_lesson(), "03_lemma1_token_cascades")
    title, injected, links, view, removed, first, second = nb["cells"]
    assert title["source"].startswith("# A lesson\n\n```{admonition} Run this page as a notebook")
    assert "remove-cell" in injected["metadata"]["tags"]  # this machine's paths stay off the page
    # a link into the other chapter leads there; one inside the chapter stays as it was
    assert links["source"] == (
        "See [02](02_rejection_rates.ipynb) and [the T5 rerun](../reruns/06_t5_evaluation.ipynb#results)."
    )
    assert [list(o["data"]) for o in view["outputs"]] == [
        ["text/html"]
    ]  # the widget goes, its static copy stays
    html_first, html_second = (cell["outputs"][0]["data"]["text/html"] for cell in (first, second))
    assert first["outputs"][0]["data"]["text/plain"] == "<plotly figure: first>"
    # plotly.js from the site, once per page: the first figure loads it, the others use it
    assert html_first.count('src="../_static/plotly/plotly.min.js"') == 1 and "<script" in html_second
    assert "plotly.min.js" not in html_second and "cdn" not in (html_first + html_second).lower()
    assert 'id="03_lemma1_token_cascades-figure-2"' in html_second  # stable ids: same input, same page


def test_a_rerun_links_back_to_the_lessons():
    nb = build_book.stage_notebook(_executed_lesson(), "07_gemma_evaluation")
    assert "](../lessons/02_rejection_rates.ipynb)" in nb["cells"][2]["source"]
    assert "](06_t5_evaluation.ipynb#results)" in nb["cells"][2]["source"]
    # a results page: code folded under its outputs; the lessons show their code
    assert [c["metadata"]["tags"] for c in nb["cells"] if c["cell_type"] == "code"] == [
        ["injected-parameters", "remove-cell"],
        ["hide-input"],
        ["remove-output"],
        ["hide-input"],
        ["hide-input"],
    ]
    lesson = build_book.stage_notebook(_executed_lesson(), "03_lemma1_token_cascades")
    assert not any("hide-input" in c["metadata"]["tags"] for c in lesson["cells"])


def test_every_notebook_has_a_chapter():
    names = build_book.notebook_names()
    assert len(names) == len(list((REPO / "notebooks").glob("[0-9]*.ipynb"))) > 0
    assert {build_book.chapter(n) for n in names} == {"lessons", "reruns"}
    assert [n[:2] for n in names if build_book.chapter(n) == "reruns"] == ["06", "07", "08"]


def test_missing_executed_notebooks_name_make_tutorial(tmp_path):
    (tmp_path / "00_quickstart.ipynb").write_text("{}")
    with pytest.raises(SystemExit, match=r"make tutorial") as failure:
        build_book.build(tmp_path, tmp_path / "site")
    assert "01_target_distributions.ipynb" in str(failure.value) and "00_quickstart.ipynb" not in str(
        failure.value
    )
    assert not (tmp_path / "site").exists()


def test_network_fetches_are_found(tmp_path):
    (tmp_path / "page.html").write_text(
        '<script src="../_static/local.js"></script><script src="https://cdn.example.org/x.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.org/css"><a href="https://example.org">a link</a>'
    )
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "style.css").write_text(
        "@font-face { src: url('https://fonts.example.org/f.woff2') } .a { background: url(../img.png) }"
    )
    assert build_book.check_offline(tmp_path) == [
        "_static/style.css: https://fonts.example.org/f.woff2",
        "page.html: https://cdn.example.org/x.js",
        "page.html: //fonts.example.org/css",
    ]


def test_a_site_older_than_its_sources_is_stale(tmp_path):
    executed = tmp_path / "executed"
    executed.mkdir()
    for name in build_book.notebook_names():
        (executed / f"{name}.ipynb").write_text("{}")
    site = tmp_path / "site"
    assert build_book.is_stale(executed, site)  # no site yet
    site.mkdir()
    (site / "index.html").write_text("")
    assert not build_book.is_stale(executed, site)
    import os

    newest = (site / "index.html").stat().st_mtime + 10
    os.utime(executed / f"{build_book.notebook_names()[0]}.ipynb", (newest, newest))
    assert build_book.is_stale(executed, site)


def test_docstring_markdown_becomes_rest_for_autodoc():
    sys.path.insert(0, str(REPO / "book" / "_ext"))
    from offline_book import markdown_math_to_rst

    lines = [
        "For a prefix $x_{<t}$ the mean $x_i$s, not `$HOME` nor |x - y|:",
        "",
        "    $$R(r) = (1 - r)\\,\\ell",
        "      + r\\,\\alpha,$$",
        "",
        "| wing | what |",
        "|---|---|",
        "| `maths` | $\\alpha$ grids |",
    ]
    assert markdown_math_to_rst(lines) == [
        r"For a prefix :math:`x_{<t}` the mean :math:`x_i`\ s, not `$HOME` nor \|x - y\|:",
        "",
        "",
        "    .. math::",
        "",
        r"       R(r) = (1 - r)\,\ell + r\,\alpha,",
        "",
        "",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - wing",
        "     - what",
        "   * - `maths`",
        "     - :math:`\\alpha` grids",
        "",
    ]


def _library_docstrings():
    """(where, docstring) of every module of the library, each name of its `__all__`, and their methods:
    what the book's API pages give autodoc."""
    import importlib
    import inspect
    import pkgutil

    import tutorial_lib

    names = ["tutorial_lib"] + [m.name for m in pkgutil.walk_packages(tutorial_lib.__path__, "tutorial_lib.")]
    for module_name in names:
        module = importlib.import_module(module_name)
        yield module_name, inspect.getdoc(module)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or getattr(obj, "__module__", module_name) != module_name:
                continue  # described on its own module's page
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{module_name}.{name}", inspect.getdoc(obj)
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and (
                        inspect.isfunction(value) or isinstance(value, property)
                    ):
                        yield f"{module_name}.{name}.{member}", inspect.getdoc(value)


#: roles Sphinx defines and plain docutils does not know
_SPHINX_ROLE = re.compile(r'Unknown interpreted text role "(class|func|meth|mod|attr|data|obj|ref|doc|exc)"')


def test_every_library_docstring_reads_as_rest_without_a_warning():
    """The API pages: each docstring, after the book's Markdown-maths hook, parses as reStructuredText
    with no warning (a backtick that closes inside a word, a list that starts without a blank line,
    a substitution made of a bar...): Sphinx would print it and the page would show the markup."""
    import io

    import docutils.core

    sys.path.insert(0, str(REPO / "book" / "_ext"))
    from offline_book import markdown_math_to_rst

    problems = []
    for where, doc in _library_docstrings():
        if not doc:
            continue
        text = "\n".join(markdown_math_to_rst(doc.splitlines()))
        stream = io.StringIO()
        docutils.core.publish_doctree(
            text,
            settings_overrides={"warning_stream": stream, "report_level": 2, "halt_level": 5},
        )
        problems += [
            f"{where}: {line}"
            for line in stream.getvalue().splitlines()
            if ("(WARNING" in line or "(ERROR" in line) and not _SPHINX_ROLE.search(line)
        ]
    assert not problems, "\n".join(problems)


def test_a_reexported_object_is_described_on_its_own_module_page_only():
    sys.path.insert(0, str(REPO / "book" / "_ext"))
    from offline_book import _described_where_defined

    import tutorial_lib.models as models
    from tutorial_lib.models import language_model
    from tutorial_lib.stats import intervals, paired

    class App:
        class env:
            temp_data = {}

    def skipped(page, name, obj):
        App.env.temp_data["autodoc:module"] = page
        return _described_where_defined(App, "module", name, obj, False, {})

    assert skipped("tutorial_lib.models", "LanguageModel", models.LanguageModel) is True
    assert (
        skipped("tutorial_lib.models.language_model", "LanguageModel", language_model.LanguageModel) is None
    )
    # in its home module's `__all__` only: its home page describes it, no other page names it
    assert "resample_items" in intervals.__all__ and not hasattr(paired, "bootstrap_indices")
    assert skipped("tutorial_lib.stats.intervals", "resample_items", intervals.resample_items) is None
    assert skipped("tutorial_lib.models", "Path", Path) is None  # not the library's own
