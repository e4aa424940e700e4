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
from tutorial_lib.lessons import notebook  # noqa: E402
from tutorial_lib.lessons.exercises import EXERCISES  # noqa: E402

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
    # the check cells' glued values, which the exercises page pastes
    glued = [_glue_output(notebook.exercise_glue_name(exercise_id), "0.5") for exercise_id in EXERCISES]
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "check", "outputs": glued})
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


# ---- the exercises page: each solution gives the value its executed notebook computed -----------------

#: A value as a solution shows it: a number, "not reached", a verdict or a method's name, or a (method,
#: number) exercise's value for each method, "method: number; method: not reached".
_SHOWN_VALUE = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?|not reached|[A-Za-z][^\n]*")
#: Values that stand for a notebook's run, of each kind an exercise has.
_RUN_VALUES = {
    "number": 0.589636,
    "integer": 4,
    "choice": "not resolved",
    "method_and_number": {"SpecCascade [OPT]": 0.731, "Drafter": "not reached"},
}


def _solutions(page: str) -> dict:
    """{exercise id: its solution's text} of the exercises page."""
    return dict(re.findall(r"```\{solution\} exercise-(\d\d-\d+)\n(.*?)```", page, flags=re.S))


def _values_shown(page: str) -> dict:
    """{exercise id: the value its solution shows}, "" where it shows none."""
    line = re.compile(r"\*\*Value in the executed notebook(?:\*\*, [^:]*:|\.\*\*) (.*)")
    shown = {}
    for exercise_id, text in _solutions(page).items():
        found = line.search(text)
        shown[exercise_id] = found.group(1).strip() if found else ""
    return shown


def _check_cell_outputs(monkeypatch) -> dict:
    """{notebook: the outputs of its check cell, run in a kernel}: `check` of an exercise that needs no
    objects glues what the library computes; the others glue a value of their kind (`_RUN_VALUES`)."""
    import myst_nb

    outputs = {}
    monkeypatch.setattr(notebook, "_in_kernel", lambda: True)
    for exercise_id, spec in EXERCISES.items():
        name = next(n for n in build_book.notebook_names() if n[:2] == exercise_id[:2])
        glued = outputs.setdefault(name, [])
        monkeypatch.setattr(
            myst_nb,
            "glue",
            lambda key, value, display=True, into=glued: into.append(_glue_output(key, value)),
        )
        if spec.needs:
            value = notebook.value_text(_RUN_VALUES[spec.kind])
            notebook.glue_values(**{notebook.exercise_glue_name(exercise_id): value})
        else:
            assert notebook.check(exercise_id, None) is None
    return outputs


def _glue_output(key, value):
    """An output as myst-nb's `glue(key, value, display=False)` leaves it in an executed notebook."""
    from myst_nb.ext.glue import GLUE_PREFIX

    return {
        "output_type": "display_data",
        "metadata": {"scrapbook": {"name": key, "mime_prefix": GLUE_PREFIX}},
        "data": {GLUE_PREFIX + "text/plain": repr(value)},
    }


def _executed(outputs: dict) -> dict:
    return {
        name: {"cells": [{"cell_type": "code", "metadata": {}, "source": "check", "outputs": glued}]}
        for name, glued in outputs.items()
    }


def test_the_exercises_page_is_the_one_build_book_writes():
    assert build_book.EXERCISES_PAGE.read_text(encoding="utf-8") == build_book.exercises_page(), (
        "the exercises page differs from tutorial_lib/lessons/exercises.py: run "
        "`python book/build_book.py --exercises-page`"
    )


def test_every_solution_pastes_its_value_from_its_own_notebook():
    page = build_book.EXERCISES_PAGE.read_text(encoding="utf-8")
    solutions = _solutions(page)
    assert list(solutions) == list(EXERCISES)
    for exercise_id, text in solutions.items():
        name = next(n for n in build_book.notebook_names() if n[:2] == exercise_id[:2])
        pasted = build_book.GLUE_FROM_NOTEBOOK.findall(text)
        key = notebook.exercise_glue_name(exercise_id)
        assert pasted == [(build_book.chapter(name), name, key, "")], f"{exercise_id}: {pasted}"
    assert not [i for i, value in _values_shown(page).items() if not value]


def test_staged_solutions_show_the_values_the_check_cells_glued(monkeypatch):
    page = build_book.EXERCISES_PAGE.read_text(encoding="utf-8")
    staged = build_book.paste_glued(page, _executed(_check_cell_outputs(monkeypatch)))
    shown = _values_shown(staged)
    assert list(shown) == list(EXERCISES)
    for exercise_id, value in shown.items():
        spec = EXERCISES[exercise_id]
        assert "{glue" not in value and _SHOWN_VALUE.fullmatch(value), f"{exercise_id}: {value!r}"
        if not spec.needs:  # computed by the library in the check cell: the value check() compares with
            assert value == notebook.value_text(spec.solve()), exercise_id
        elif spec.kind == "method_and_number":
            assert value == r"SpecCascade \[OPT\]: 0.731; Drafter: not reached"
        else:
            assert value == notebook.value_text(_RUN_VALUES[spec.kind]), exercise_id
    assert shown["01-3"] == "2.7731" and shown["10-2"] == "0.12"


def test_a_solution_without_its_value_fails(monkeypatch):
    """A page whose solution lost its value, and a notebook whose check cell glued nothing, are caught."""
    page = build_book.EXERCISES_PAGE.read_text(encoding="utf-8")
    lost = re.sub(r"\n\*\*Value in the executed notebook\.\*\* \{glue:text\}`[^`]*exercise_03_2`", "", page)
    assert lost != page and [i for i, value in _values_shown(lost).items() if not value] == ["03-2"]
    outputs = _check_cell_outputs(monkeypatch)
    outputs["03_lemma1_token_cascades"] = [
        o for o in outputs["03_lemma1_token_cascades"] if "exercise_03_2" not in json.dumps(o)
    ]
    with pytest.raises(
        ValueError, match="'exercise_03_2' from 03_lemma1_token_cascades.ipynb.*glued no such"
    ):
        build_book.paste_glued(page, _executed(outputs), "teaching/exercises.md")
    with pytest.raises(ValueError, match="not a page of the book"):
        build_book.paste_glued("{glue:text}`../reruns/03_lemma1_token_cascades.ipynb::x`", {}, "a page")


# ---- every notebook links to its solutions; the chapters and the class paths link the notebooks ----


def _solution_links(nb: dict, prefix: str) -> list:
    """The anchors of the exercises page that `nb`'s exercises section links to, as `prefix` + page."""
    found = []
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^## Exercises", source, flags=re.M):
            found += re.findall(rf"\]\({re.escape(prefix)}teaching/exercises\.md#([\w-]+)\)", source)
    return found


def _page_anchors(page: str) -> list:
    from myst_parser.mdit_to_docutils.base import default_slugify

    headings = re.findall(r"^## (.*)$", page, flags=re.M)
    return [default_slugify(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)) for h in headings]


@pytest.mark.parametrize("name", build_book.notebook_names())
def test_each_notebook_links_to_its_solutions_in_a_clone_and_in_the_book(name):
    assert notebook.exercise_ids(name[:2]), f"{name} has no checked exercise"
    committed = _committed(name)
    anchor = build_book.exercises_anchor(name)
    assert anchor in _page_anchors(build_book.EXERCISES_PAGE.read_text(encoding="utf-8"))
    assert _solution_links(committed, "../book/") == [anchor], (
        f"{name}: its exercises section must link to ../book/teaching/exercises.md#{anchor}"
    )
    assert (REPO / "notebooks" / "../book/teaching/exercises.md").resolve() == build_book.EXERCISES_PAGE
    staged = build_book.stage_notebook(_committed(name), name, {})
    assert _solution_links(staged, "../") == [anchor]  # staged in lessons/ or reruns/, beside teaching/
    assert "../book/" not in json.dumps(staged["cells"])


def test_a_notebook_without_its_solutions_link_fails():
    nb = _committed("03_lemma1_token_cascades")
    for cell in nb["cells"]:
        cell["source"] = re.sub(r"\*\*Solutions:\*\*.*", "", "".join(cell["source"]))
    assert _solution_links(nb, "../book/") == []


def _listed_notebooks(page: Path) -> list:
    return re.findall(
        r"^- Notebook \d\d: \[[^\]]+\]\((\d\d_[A-Za-z0-9_]+)\.ipynb\)$", page.read_text(), flags=re.M
    )


@pytest.mark.parametrize("folder", ["lessons", "reruns"])
def test_each_chapter_page_lists_its_notebooks_with_links(folder):
    toc = (REPO / "book" / "_toc.yml").read_text()
    assert f"file: {folder}/index" in toc and f"glob: {folder}/[0-9]*" in toc
    expected = [name for name in build_book.notebook_names() if build_book.chapter(name) == folder]
    assert _listed_notebooks(REPO / "book" / folder / "index.md") == expected


def test_the_class_paths_link_their_notebooks_and_give_every_lesson_a_class():
    text = (REPO / "book" / "teaching" / "index.md").read_text(encoding="utf-8")
    paths = text.split("## Suggested paths", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in paths.splitlines() if re.match(r"^\| (one|two|four|five|\w+) \|", line)]
    assert len(rows) >= 3
    linked = re.findall(r"\]\(\.\./(lessons|reruns)/(\d\d_[A-Za-z0-9_]+)\.ipynb\)", paths)
    for folder, name in linked:
        assert name in build_book.notebook_names() and build_book.chapter(name) == folder, name
    for row in rows:  # every notebook a path names is a link
        named = re.findall(r"(?<![\w/\[])(\d\d)(?![\w.])", re.sub(r"\[[^\]]*\]\([^)]*\)", "", row))
        assert not named, f"a class path names notebooks {named} without a link: {row}"
    lessons = {name for name in build_book.notebook_names() if build_book.chapter(name) == "lessons"}
    assert lessons <= {name for _, name in linked}, f"no class for {sorted(lessons - {n for _, n in linked})}"


# ---- from a page to the code it names ------------------------------------------------------------------


def test_library_names_link_to_their_module_pages_outside_code_blocks():
    text = (
        "Use `tl.maths.verification.verify_draft`, `tutorial_lib/stats/pricing.py` and `tl.generate`; "
        'quoted {eval}`glued["x:.1f"]`, code ``tl.maths`` and `numpy.mean` stay.\n'
        "```python\n`tl.maths.rules`\n```\nthen `tutorial_lib.maths.rules`."
    )
    assert build_book.link_library_names(text) == (
        "Use {py:mod}`tl.maths.verification.verify_draft <tutorial_lib.maths.verification>`, "
        "{py:mod}`tutorial_lib/stats/pricing.py <tutorial_lib.stats.pricing>` and "
        "{py:mod}`tl.generate <tutorial_lib>`; "
        'quoted {eval}`glued["x:.1f"]`, code ``tl.maths`` and `numpy.mean` stay.\n'
        "```python\n`tl.maths.rules`\n```\n"
        "then {py:mod}`tutorial_lib.maths.rules <tutorial_lib.maths.rules>`."
    )


def test_every_module_a_notebook_names_is_linked_on_its_page():
    for name in build_book.notebook_names():
        staged = build_book.stage_notebook(_committed(name), name)
        prose = "\n".join("".join(c["source"]) for c in staged["cells"] if c["cell_type"] == "markdown")
        unlinked = [m.group(1) for m in build_book._LIBRARY_NAME.finditer(prose)]
        assert not unlinked, f"{name}: names the library without a link: {unlinked[:5]}"
        assert build_book.library_module("tl.maths.rules") == "tutorial_lib.maths.rules"
