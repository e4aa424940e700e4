"""A results page in JupyterLab shows its numbers in the prose, as the book does: JupyterLab (with
jupyterlab-myst, the `book` extra that `make lab` installs) on a copy of notebook 10 at its smoke profile,
driven in headless Chromium.

Open the notebook: before a run, each number of the prose shows as the expression that will compute it
({eval}`glued["name:format"]` as `glued["name:format"]`), never a stale number. Run > Run All Cells: every
expression is evaluated in the kernel and the prose shows its text, with no expression and no error left.
The notebook is then saved, and the numbers are checked against the cells' own glue outputs, formatted as the
book's {glue:text}`name:format` role formats them (myst-nb's `format_plain_text`): the same texts, in the
order the prose quotes them. The times a reader waits are printed (run with `-s`): the server's start, the
notebook's opening until its kernel is idle, and Run All until the last number shows.

Needs Debian's `chromium` and the `playwright` Python package, as tests/test_browser_widgets.py (skipped
without them, with a message saying so), and jupyterlab-myst (`pip install -e '.[book]'`, part of `make
install`), whose absence fails the test.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from test_notebooks_run import SMALL_PARAMETERS

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "the browser test needs Debian's chromium at /usr/bin/chromium: `apt-get install chromium` "
        "(.ci/run installs it when run as root)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the browser test needs Playwright for Python: "
    "`pip install -e '.[dev]'` (never `playwright install`: it drives /usr/bin/chromium)",
)

from test_browser_widgets import (  # noqa: E402  (after the skips: the same browser and server settings)
    _ALL_CELLS_RUN,
    CHROMIUM_ARGS,
    JUPYTER,
    LAB_SETTINGS,
    TOKEN,
    _free_port,
    _shut_down_kernels,
)

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
#: The cheapest results page that quotes its numbers: notebook 10 at its smoke profile (SmolLM2-135M and its
#: first 16 layers, which `make install` provides; the learned rule on the committed Qwen features), about
#: 2 minutes under papermill on 2 busy cores. 08's smoke run loads and runs the pair longer; 06 and 07
#: re-run or redraw whole sweeps.
NAME = "10_rules_in_engines"
PARAMETERS = SMALL_PARAMETERS[NAME]
#: Seconds Run All may take on a busy machine (the papermill run took 125 s beside other jobs on 2 cores).
RUN_ALL_TIMEOUT_S = 1200

#: JavaScript: per markdown cell of the page (in order), its rendered prose: its text, the expressions not
#: evaluated yet (shown as code), and the errors an evaluation showed.
_PROSE = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')).map(cell => {
    const out = cell.querySelector('.myst');
    if (!out) return null;
    return {
        text: out.innerText,
        pending: Array.from(out.querySelectorAll('code'))
            .map(c => c.textContent).filter(t => t.startsWith('glued[')),
        errors: Array.from(out.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]'))
            .map(e => e.innerText),
    };
})"""


def _quoted_before_glued():
    """A notebook whose first text cell quotes a number that the last cell computes, as 06 and 07 do (their
    findings come before the cell that displays their tables and glues their numbers)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "tutorial-lib",
        "display_name": "Python (tutorial_lib)",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell('The gap is {eval}`glued["gap:.2f"]`, computed below.'),
        nbformat.v4.new_code_cell(
            "import time, tutorial_lib as tl\nglued = tl.lessons.notebook.glue_values(bleu=86.54, n=12683)"
        ),
        nbformat.v4.new_markdown_cell('BLEU {eval}`glued["bleu:.1f"]` on {eval}`glued["n:,d"]` sentences.'),
        nbformat.v4.new_code_cell("time.sleep(2)\nglued = tl.lessons.notebook.glue_values(gap=0.0456)"),
    ]
    return nb


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a folder holding a copy of notebook 10 with its smoke parameters; yields
    (its base URL, the folder, the seconds it took to answer)."""
    from jupyter_client.kernelspec import find_kernel_specs
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    if "tutorial-lib" not in find_kernel_specs():
        pytest.skip("the notebooks' kernel `tutorial-lib` is not installed: run `make install`")
    assert importlib.util.find_spec("jupyterlab_myst"), (
        "JupyterLab shows the prose's numbers through jupyterlab-myst: `pip install -e '.[book]'` "
        "(`make install` does)"
    )
    root = tmp_path_factory.mktemp("lab-numbers")
    nb = load_notebook_node(str(NOTEBOOK_DIR / f"{NAME}.ipynb"))
    nb.metadata.pop("jupytext", None)  # a plain copy: the server writes no .py pair beside it
    nbformat.write(parameterize_notebook(nb, dict(PARAMETERS, output_dir=".")), root / f"{NAME}.ipynb")
    nbformat.write(_quoted_before_glued(), root / "quoted_before_glued.ipynb")
    settings = tmp_path_factory.mktemp("lab-numbers-settings")
    for path, values in LAB_SETTINGS.items():
        (settings / path).parent.mkdir(parents=True, exist_ok=True)
        (settings / path).write_text(json.dumps(values))
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path_factory.mktemp("lab-numbers-workspaces")),
        JUPYTER_CONFIG_DIR=str(tmp_path_factory.mktemp("lab-numbers-config")),
        JUPYTER_RUNTIME_DIR=str(tmp_path_factory.mktemp("lab-numbers-runtime")),
        TUTORIAL_LIB_FIGURES=str(root / "figures"),
        TUTORIAL_LIB_RESULTS=str(root / "results"),
        TUTORIAL_LIB_OUTPUT=str(root / "outputs"),
    )
    command = [
        str(JUPYTER),
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = open(root / "lab.log", "w")
    start = time.perf_counter()
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {server.returncode}:\n{(root / 'lab.log').read_text()[-3000:]}"
                )
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not answer within 120 s")
                time.sleep(0.5)
        yield url, root, time.perf_counter() - start
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium from /usr/bin with a fresh profile folder."""
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield context
        context.close()


def expected_prose(nb) -> list:
    """Per markdown cell of the saved notebook, the texts its roles must show, in order: each glued value's
    text/plain as its cell's glue output recorded it, formatted as the book's `{glue:text}` role does."""
    import sys

    from myst_nb.core.variables import format_plain_text

    sys.path.insert(0, str(NOTEBOOK_DIR.parent / "book"))
    from build_book import EVAL_GLUED

    recorded = {
        output["metadata"]["scrapbook"]["name"]: output["data"]["application/papermill.record/text/plain"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "scrapbook" in output.get("metadata", {})
    }
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        texts = []
        for role in EVAL_GLUED.findall(cell.source):
            name, _, spec = role.rpartition(":") if ":" in role else (role, "", "s")
            assert name in recorded, f"the prose quotes {name}, which no cell of this run glued"
            texts.append((role, format_plain_text(recorded[name], spec)))
        cells.append(texts)
    return cells


def test_a_results_page_shows_its_numbers_in_jupyterlab(lab, browser):
    url, root, server_s = lab
    page = browser.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        start = time.perf_counter()
        page.goto(f"{url}/lab/workspaces/glued-numbers/tree/{NAME}.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-MarkdownCell .myst", timeout=90_000)
        page.wait_for_function(
            "() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.textContent ?? '')",
            timeout=90_000,
            polling=500,
        )
        opened_s = time.perf_counter() - start
        before = page.evaluate(_PROSE)
        quoted = sum(len(cell["pending"]) for cell in before if cell)
        assert quoted >= 10, f"before a run the prose should show its {quoted} expressions as code"

        start = time.perf_counter()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        page.wait_for_function(_ALL_CELLS_RUN, timeout=RUN_ALL_TIMEOUT_S * 1000, polling=1000)
        cells_s = time.perf_counter() - start
        page.wait_for_function(
            f"() => ({_PROSE})().every(cell => !cell || cell.pending.length === 0 || cell.errors.length)",
            timeout=120_000,
            polling=500,
        )
        numbers_s = time.perf_counter() - start
        after = page.evaluate(_PROSE)
        shown_errors = [e for cell in after if cell for e in cell["errors"]]
        assert not shown_errors, f"the prose shows errors instead of numbers: {shown_errors[:5]}"
        assert not any("{eval}" in cell["text"] or "glued[" in cell["text"] for cell in after if cell)

        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_function(
            "() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
            timeout=60_000,
            polling=500,
        )
        saved = nbformat.read(root / f"{NAME}.ipynb", as_version=4)
        expected = expected_prose(saved)
        assert len(expected) == len(after), "one rendered prose per markdown cell"
        assert sum(len(texts) for texts in expected) == quoted
        markdown = [cell for cell in saved.cells if cell.cell_type == "markdown"]
        for cell, texts, shown in zip(markdown, expected, after):
            # what jupyterlab-myst evaluated, as it keeps it: the book's text for each role
            evaluated = {
                e["expression"]: e["result"]["data"]["text/plain"]
                for e in cell.metadata.get("user_expressions", [])
                if e["result"].get("status") == "ok"
            }
            for role, text in texts:
                got = evaluated.get(f'glued["{role}"]')
                assert got == text, f"{role}: JupyterLab evaluated {got!r}, the book shows {text!r}"
            # and the page shows those texts, in the order the prose quotes them
            position = 0
            for role, text in texts:
                found = shown["text"].find(text, position)
                assert found >= 0, (
                    f"{role}: {text!r} is not in the prose after position {position}: {shown['text']}"
                )
                position = found + len(text)
        assert not errors, f"browser console errors: {errors}"
    finally:
        page.close()
        _shut_down_kernels(url)
    print(
        f"\n{NAME} in JupyterLab: server {server_s:.1f} s, notebook open, kernel idle {opened_s:.1f} s, "
        f"Run All {cells_s:.1f} s until every cell ran, {numbers_s:.1f} s until the prose showed its "
        f"{quoted} numbers"
    )


def test_run_all_shows_a_number_the_prose_quotes_before_the_cell_that_computes_it(lab, browser):
    """Run All queues every code cell before jupyterlab-myst asks the kernel for a text cell's numbers, so
    a number quoted above the cell that computes it shows too. (Run cell by cell, that text cell shows an
    error until it is run again: `NotComputedYet: gap is computed by a cell further down ...`, or a
    NameError for `glued` before any glue cell ran.)"""
    url, _, _ = lab
    page = browser.new_page()
    try:
        page.goto(f"{url}/lab/workspaces/quoted-before/tree/quoted_before_glued.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-MarkdownCell .myst", timeout=90_000)
        page.wait_for_function(
            "() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.textContent ?? '')",
            timeout=90_000,
            polling=500,
        )
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        page.wait_for_function(_ALL_CELLS_RUN, timeout=120_000, polling=500)
        page.wait_for_function(
            f"() => ({_PROSE})().every(cell => cell && (cell.pending.length === 0 || cell.errors.length))",
            timeout=60_000,
            polling=500,
        )
        prose = page.evaluate(_PROSE)
        assert [cell["errors"] for cell in prose] == [[], []], prose
        assert [cell["text"].strip() for cell in prose] == [
            "The gap is 0.05, computed below.",
            "BLEU 86.5 on 12,683 sentences.",
        ]
    finally:
        page.close()
        _shut_down_kernels(url)
