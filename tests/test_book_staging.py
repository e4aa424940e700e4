"""book/build_book.py's staging, page by page, without Sphinx: every notebook page opens with how to run
it (the path in a clone, `make lab`, what it needs, its time from the committed times file, what of the
paper it is about, linked to arXiv), a page with live controls says which sections need the running
notebook, and nothing of the builder's machine (the checkout, the home and temporary folders) is left in
a staged notebook, which is both the page and its download."""

import json
import re
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "book"))
import build_book  # noqa: E402

ARXIV_LINK = f"]({build_book.ARXIV})"


def _committed(name):
    """The committed notebook (no outputs): its real title and opening cell."""
    return json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text())


def _box(nb):
    """The first markdown cell of a staged notebook, which holds its title and the box."""
    return next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("name", build_book.notebook_names())
def test_every_notebook_page_opens_with_how_to_run_it_and_a_paper_link(name):
    nb = build_book.stage_notebook(_committed(name), name)
    first = _box(nb)
    title, rest = first.split("\n", 1)
    assert title.startswith("# ")
    box = re.match(r"\s*```\{admonition\} Run this page as a notebook\n(.*?)\n```", rest, flags=re.S)
    assert box, f"{name}: no box right under the title"
    text = box.group(1)
    assert f"`notebooks/{name}.ipynb`" in text and "`make lab`" in text
    assert "in a clone of this repository" in text.lower()
    assert ARXIV_LINK in text and f"[{build_book.PAPER_CITES[name[:2]]}]" in text
    assert "](../reference/glossary.md)" in text and (REPO / "book" / "reference" / "glossary.md").exists()
    needs = re.search(r"\*\*Needs:\*\* (.*)", text).group(1)
    if name[:2] in ("07", "08"):
        assert "the Qwen pair (`make models-qwen`)" in needs
    elif name[:2] in ("09", "10"):
        assert "SmolLM2-135M" in needs and "make install" in needs
    elif name[:2] <= "05":
        assert "no model to download" in needs
    times = build_book.notebook_times()
    seconds = times[name]["seconds"]
    assert f"({seconds} s) at its default parameters" in text
    assert f"finished {times[name]['finished']} UTC" in text


def test_the_time_is_each_notebooks_newest_run(tmp_path):
    path = tmp_path / "notebook_times.jsonl"
    path.write_text(
        '{"notebook": "03_lemma1_token_cascades", "seconds": 14, "finished": "2026-01-01 00:00"}\n'
        '{"notebook": "03_lemma1_token_cascades", "seconds": 130, "finished": "2026-01-02 00:00"}\n'
    )
    times = build_book.notebook_times(path)
    box = build_book.run_box("03_lemma1_token_cascades", times)
    assert "about 2 minutes (130 s)" in box and "2026-01-02 00:00" in box and "(14 s)" not in box
    assert "not timed yet" in build_book.run_box("04_lemma2_lossy", times)
    assert build_book.notebook_times(tmp_path / "none.jsonl") == {}


def test_a_notebook_the_paper_table_does_not_name_is_refused():
    assert set(build_book.PAPER_CITES) == {name[:2] for name in build_book.notebook_names()}
    with pytest.raises(KeyError, match="PAPER_CITES"):
        build_book.run_box("99_new_lesson", {})


def _output(data):
    return {"output_type": "display_data", "metadata": {}, "data": data}


def _live_view_outputs():
    from tutorial_lib.views import static

    widget = _output({build_book.WIDGET_VIEW: {"model_id": "a"}, "text/plain": static.WIDGET_TEXT})
    copy = _output({"text/html": f'<div class="{static.STATIC_CLASS}">copy</div>', "text/plain": static.HINT})
    return [widget, copy]


def _lesson_with_controls():
    progress = _output({build_book.WIDGET_VIEW: {"model_id": "b"}, "text/plain": "loading:   0%|"})
    steps = _output({build_book.PLOTLY_JSON: {"data": [], "layout": {"sliders": [{"steps": []}]}}})
    markdown = [
        "# A lesson\n\nMove `alpha`.",
        "## Loading\n\nA progress bar is a widget too.",
        "## One rule, your alpha",
        "## Every rule at once",
    ]
    outputs = [[], [progress], _live_view_outputs(), [*_live_view_outputs(), steps]]
    cells = []
    for source, out in zip(markdown, outputs):
        cells.append({"cell_type": "markdown", "metadata": {}, "source": source})
        cells.append({"cell_type": "code", "metadata": {}, "source": "view", "outputs": out})
    return {"cells": cells, "metadata": {}}


def test_a_page_with_live_controls_names_their_sections_under_the_box():
    nb = build_book.stage_notebook(_lesson_with_controls(), "01_target_distributions", {})
    first = _box(nb)
    note = first.split("```\n", 2)[-1].strip().splitlines()[0]
    assert note.startswith("The sliders and menus in *One rule, your alpha* and *Every rule at once* need")
    assert "(`make lab`)" in note and "static copies" in note and "Loading" not in note
    assert "moves here too" in note  # a plotly slider drawn in advance works without a kernel
    assert first.endswith("Move `alpha`.")  # the notebook's own text follows
    plain = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Quiet\n\nNo widgets."}]}
    staged = _box(build_book.stage_notebook(plain, "04_lemma2_lossy", {}))
    assert "sliders and menus" not in staged and staged.endswith("No widgets.")


# ---- nothing of the builder's machine in a page or a download -----------------------------------------


def _machine_paths(text: str, tmp_path: Path) -> list[str]:
    """Every absolute folder of the build machine in `text`: the checkout, the home folder, the temporary
    folder (and the test's own)."""
    folders = {str(REPO), str(Path.home()), tempfile.gettempdir(), str(tmp_path)}
    return sorted({f for f in folders if len(f) > 1 and re.search(re.escape(f) + r"(?![\w.-])", text)})


def _executed_on_this_machine(tmp_path: Path) -> dict:
    """A notebook as `make tutorial` leaves it: papermill's injected `output_dir` (the build folder of this
    checkout) and its record of it, outputs that print this machine's paths."""
    build = REPO / "build" / "notebooks"
    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# A rerun\n", "\n", "Its text."]},
            {
                "cell_type": "code",
                "metadata": {"tags": ["parameters"]},
                "source": 'output_dir = "."  # where the metrics JSON is written',
                "outputs": [],
            },
            {
                "cell_type": "code",
                "metadata": {"tags": ["injected-parameters"]},
                "source": ["# Parameters\n", f'output_dir = "{build}"\n'],
                "outputs": [],
            },
            {
                "cell_type": "code",
                "metadata": {},
                "source": "run()",
                "outputs": [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": [
                            f"32000 rows in {REPO}/data/results/t5-offline-b9b8c2dcad8e\n",
                            f"wrote {build}/06_t5_evaluation.metrics.json\n",
                        ],
                    },
                    {
                        "output_type": "stream",
                        "name": "stderr",
                        "text": f"{REPO}/.venv/lib/python3.11/site-packages/x.py:1: Warning\n"
                        f"cache {Path.home()}/.cache/huggingface; scratch {tmp_path}/run/a.json\n",
                    },
                    _output(
                        {
                            "text/html": f"<pre>PosixPath('{REPO}')</pre>",
                            "text/plain": f"PosixPath('{REPO}')",
                        }
                    ),
                ],
            },
        ],
        "metadata": {
            "papermill": {
                "parameters": {"output_dir": str(build)},
                "input_path": "notebooks/06_t5_evaluation.ipynb",
                "output_path": "build/notebooks/06_t5_evaluation.ipynb",
            }
        },
    }


def test_staged_pages_and_downloads_hold_no_path_of_the_build_machine(tmp_path):
    executed = tmp_path / "executed"
    executed.mkdir()
    nb = _executed_on_this_machine(tmp_path)
    assert _machine_paths(json.dumps(nb), tmp_path)  # the fake holds them, as a real run does
    for name in build_book.notebook_names():
        (executed / f"{name}.ipynb").write_text(json.dumps(nb))
    source = tmp_path / "book-source"
    build_book.stage(executed, source)
    staged = sorted(source.glob("*/[0-9]*.ipynb"))
    assert [p.stem for p in staged] == sorted(build_book.notebook_names(), key=build_book.chapter)
    for path in staged:  # the page's source and the `.ipynb` its download button offers
        text = path.read_text()
        assert not _machine_paths(text, tmp_path), f"{path.name}: {_machine_paths(text, tmp_path)}"
        page = json.loads(text)
        injected = next(c for c in page["cells"] if "injected-parameters" in c["metadata"]["tags"])
        assert "".join(injected["source"]) == '# Parameters\noutput_dir = "."\n'  # a run writes beside it
        assert page["metadata"]["papermill"]["parameters"] == {"output_dir": "."}
        out = page["cells"][3]["outputs"]
        assert out[0]["text"] == [
            "32000 rows in data/results/t5-offline-b9b8c2dcad8e\n",
            "wrote build/notebooks/06_t5_evaluation.metrics.json\n",
        ]
        assert ".venv/lib/python3.11" in out[1]["text"] and "~/.cache/huggingface" in out[1]["text"]
        assert "$TMPDIR/" in out[1]["text"] and out[2]["data"]["text/plain"] == "PosixPath('.')"


def test_authored_text_and_images_are_left_as_they_are():
    """Only what a run printed or recorded is rewritten: a lesson may name the sandbox's `/tmp`, and an
    image's base64 may happen to spell a folder."""
    png = "iVBORw0KGgo/tmp/AAAA/root/BBBB=="
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Sandbox\n\nIt writes to `/tmp`."},
            {
                "cell_type": "code",
                "metadata": {},
                "source": "show()",
                "outputs": [
                    _output(
                        {"image/png": png, "text/html": f'<img src="data:image/png;base64,{png}"> /tmp/x'}
                    )
                ],
            },
        ]
    }
    staged = build_book.stage_notebook(nb, "07_gemma_evaluation", {})
    assert staged["cells"][0]["source"].endswith("It writes to `/tmp`.")
    data = staged["cells"][1]["outputs"][0]["data"]
    assert data["image/png"] == png
    assert data["text/html"] == f'<img src="data:image/png;base64,{png}"> $TMPDIR/x'


def test_the_sites_pages_name_no_checkout(tmp_path):
    """autodoc prints a path constant's value (`tutorial_lib.paths.DATA_DIR`): the built pages write it
    relative to a clone; the manual's `/tmp` and `/root` (the sandbox's) stay."""
    page = tmp_path / "reference" / "paths.html"
    page.parent.mkdir()
    page.write_text(f"<dt>DATA_DIR = PosixPath('{REPO}/data')</dt><p>the sandbox's /tmp and /root</p>")
    (tmp_path / "searchindex.js").write_text('Search.setIndex({"titles": []})')
    assert build_book.relative_site(tmp_path) == []
    assert page.read_text() == "<dt>DATA_DIR = PosixPath('data')</dt><p>the sandbox's /tmp and /root</p>"


def test_relative_paths_leave_other_folders_alone():
    paths = [("/work/main", "."), ("/root", "~"), ("/tmp", "$TMPDIR")]
    assert (
        build_book.relative_paths("/work/main/data/x /work/mainframe/y", paths) == "data/x /work/mainframe/y"
    )
    assert build_book.relative_paths("'/work/main' /rooted /tmp/a", paths) == "'.' /rooted $TMPDIR/a"


@pytest.mark.skipif(
    not (REPO / "build" / "notebooks" / "07_gemma_evaluation.ipynb").exists(),
    reason="no executed copy of notebook 07 in build/notebooks/",
)
def test_an_executed_rerun_is_staged_without_this_checkouts_paths(tmp_path):
    """The real thing where this checkout has it: papermill's injected `output_dir` and the printed
    result folders of notebook 07 as `make reruns` executed it."""
    nb = json.loads((REPO / "build" / "notebooks" / "07_gemma_evaluation.ipynb").read_text())
    staged = json.dumps(build_book.stage_notebook(nb, "07_gemma_evaluation"))
    assert str(REPO) not in staged
    assert _box(json.loads(staged)).count(ARXIV_LINK) == 1
