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
- a link to a notebook of the other chapter points into that chapter.

The site is written to build/book/ (open build/book/index.html); nothing on it is fetched from the
network, which `check_offline` verifies after the build (MathJax comes from sphinx-mathjax-offline).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
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


def stage_notebook(nb: dict, name: str) -> dict:
    """`nb` (an executed notebook as JSON) ready for a static page: see the module's docstring."""
    home = chapter(name)
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
            source = glue_roles("".join(cell["source"]), name)
            cell["source"] = _NOTEBOOK_LINK.sub(
                lambda m: (
                    f"]({m.group(1)}.ipynb"
                    if chapter(m.group(1)) == home
                    else f"](../{chapter(m.group(1))}/{m.group(1)}.ipynb"
                ),
                source,
            )
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


def stage(executed: Path, source: Path) -> None:
    """book/ copied to `source`, with the executed notebooks staged into their chapters and plotly.js."""
    import plotly

    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(BOOK, source, ignore=shutil.ignore_patterns("build_book.py", "__pycache__", "_build"))
    (source / EXTRA / PLOTLY_JS).parent.mkdir(parents=True)
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", source / EXTRA / PLOTLY_JS)
    for name in notebook_names():
        nb = json.loads((executed / f"{name}.ipynb").read_text())
        target = source / chapter(name) / f"{name}.ipynb"
        target.write_text(json.dumps(stage_notebook(nb, name), indent=1))


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
    fetches = check_offline(out)
    if fetches:
        raise RuntimeError("the site would fetch from the network:\n" + "\n".join(fetches[:20]))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=EXECUTED, help="folder of the executed notebooks")
    parser.add_argument("--out", type=Path, default=OUT, help="folder the site is written to")
    args = parser.parse_args(argv)
    start = time.monotonic()
    out = build(args.executed, args.out, quiet=True)
    pages = sum(1 for _ in out.rglob("*.html"))
    print(f"book: {pages} HTML pages in {out} ({time.monotonic() - start:.0f} s); open {out / 'index.html'}")


if __name__ == "__main__":
    main()
