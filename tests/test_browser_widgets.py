"""The widgets in a real browser: JupyterLab on a copy of every notebook with widgets (01, 02, 03, 05, 08,
09), driven in headless Chromium.

For each notebook: open it, Run > Run All Cells, move one slider with the keyboard (arrow keys on its
handle), and check that the read-out under the figure and the figure itself (plotly, or 08's HTML) change,
that each live view's static copy is in the page but hidden while the widget lives, and that the
browser console shows no error. Then save the notebook, stop its kernel and reopen the saved copy: each
view must show its static picture and the hint to run the cell again, and no "Error displaying widget"
or raw `VBox(...)` text. A papermill-executed copy (notebook 02) is opened the same way. The time from
the key press to the redrawn figure is printed (run with `-s` to see it): `slider move -> redraw: ...`.

Needs Debian's `chromium` (`apt-get install chromium`; Playwright drives it through `executable_path`,
never a browser download: do not run `playwright install`) and the `playwright` Python package (`pip
install -e '.[dev]'`). Without them the test is skipped with a message saying so.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from test_notebooks_run import SMALL_PARAMETERS

CHROMIUM = Path("/usr/bin/chromium")
NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
JUPYTER = Path(sys.executable).parent / "jupyter"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "tutorial-lib-browser-test"

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

#: notebook -> (label the slider's description starts with, parameters injected like papermill's, or None).
# Notebook 01 runs at its defaults (its small CI parameters load a model pair); the others at their CI ones
# (05 a smaller engine check, 08 and 09 the smoke profiles: SmolLM2-135M and a tiny pair).
SLIDERS = {
    "01_target_distributions": ("alpha", None),
    "02_rejection_rates": ("alpha (marked on every curve)", SMALL_PARAMETERS["02_rejection_rates"]),
    "03_lemma1_token_cascades": ("alpha (cost of a deferral)", SMALL_PARAMETERS["03_lemma1_token_cascades"]),
    "05_lemma4_spec_cascades": ("alpha (cost of a rejection)", SMALL_PARAMETERS["05_lemma4_spec_cascades"]),
    "08_real_pair_token_analysis": ("alpha", SMALL_PARAMETERS["08_real_pair_token_analysis"]),
    "09_speed_on_your_hardware": ("acceptance a", SMALL_PARAMETERS["09_speed_on_your_hardware"]),
}
#: The papermill-executed copy opened as a reader would (its static copies must show).
EXECUTED = "02_rejection_rates"
#: Seconds "Run All Cells" may take: the smoke profiles load and run models on a busy CPU (08's took over
#: 900 s beside three other notebook runs on two cores).
RUN_ALL_TIMEOUT_S = 1800
#: Settings of the test's own JupyterLab: no news pop-up or update check, every cell rendered (no windowing).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_notebook(name: str, parameters, folder: Path) -> None:
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(NOTEBOOK_DIR / f"{name}.ipynb"))  # with the cell metadata papermill expects
    if parameters:
        nb = parameterize_notebook(nb, dict(parameters, output_dir="."))
    nbformat.write(nb, folder / f"{name}.ipynb")


def _execute_copy(name: str, parameters, folder: Path) -> None:
    """`executed-<name>.ipynb`: the notebook run by papermill, as `make tutorial` leaves it."""
    import papermill

    papermill.execute_notebook(
        str(NOTEBOOK_DIR / f"{name}.ipynb"),
        str(folder / f"executed-{name}.ipynb"),
        parameters=dict(parameters or {}, output_dir=str(folder / "outputs")),
        kernel_name="tutorial-lib",
        cwd=str(folder),
        progress_bar=False,
        execution_timeout=600,
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a temporary copy of the notebooks; yields its base URL."""
    from jupyter_client.kernelspec import find_kernel_specs

    if "tutorial-lib" not in find_kernel_specs():
        pytest.skip("the notebooks' kernel `tutorial-lib` is not installed: run `make install`")
    root = tmp_path_factory.mktemp("lab")
    for name, (_, parameters) in SLIDERS.items():
        _copy_notebook(name, parameters, root)
    _execute_copy(EXECUTED, SLIDERS[EXECUTED][1], root)
    settings = tmp_path_factory.mktemp("lab-settings")
    for path, values in LAB_SETTINGS.items():
        (settings / path).parent.mkdir(parents=True, exist_ok=True)
        (settings / path).write_text(json.dumps(values))
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path_factory.mktemp("lab-workspaces")),
        JUPYTER_CONFIG_DIR=str(tmp_path_factory.mktemp("jupyter-config")),
        JUPYTER_RUNTIME_DIR=str(tmp_path_factory.mktemp("jupyter-runtime")),
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
        yield url
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


def _shut_down_kernels(url: str) -> None:
    """Stop the kernels the page started, so the next notebook has the CPU to itself."""
    with urllib.request.urlopen(f"{url}/api/kernels?token={TOKEN}", timeout=10) as answer:
        kernels = json.load(answer)
    for kernel in kernels:
        request = urllib.request.Request(f"{url}/api/kernels/{kernel['id']}?token={TOKEN}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


#: JavaScript: the slider whose label starts with `label`, the live view it belongs to, and what it shows
#: (a plotly figure, or notebook 08's HTML, whose first line plays the title's part).
_VIEW_STATE = """(label) => {
    const slider = Array.from(document.querySelectorAll('.widget-slider'))
        .find(s => s.querySelector('.widget-label').textContent.trim().startsWith(label));
    if (!slider) return null;
    const view = slider.closest('.widget-vbox');
    const plot = view.querySelector('.js-plotly-plot');
    const html = view.querySelector('.widget-html-content');
    const stdout = Array.from(view.querySelectorAll('.jp-OutputArea-output'))
        .filter(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stdout')
        .map(o => o.textContent).join('');
    const output = view.closest('.jp-OutputArea-child');
    const copy = output && output.nextElementSibling
        ? output.nextElementSibling.querySelector('.tl-static-copy') : null;
    return {
        widget_readout: slider.querySelector('.widget-readout').textContent,
        stdout: stdout,
        title: plot && plot.layout ? JSON.stringify(plot.layout.title)
               : (html ? html.textContent.slice(0, 160) : null),
        figure: plot && plot.data ? JSON.stringify([plot.layout.title, plot.layout.annotations,
                                                    plot.data.map(t => [t.name, t.x, t.y])])
                : (html && html.innerHTML.length > 0 ? html.innerHTML : null),
        static_copy: copy ? getComputedStyle(copy).display : null,
        static_picture: copy ? (copy.querySelector('img') ? copy.querySelector('img').src : copy.innerHTML)
                             : null,
    };
}"""

#: JavaScript: what a reader of a reopened notebook sees: static copies shown (with their hint and a
#: picture or the view's HTML), and any visible broken-widget or raw widget text.
_REOPENED = r"""() => {
    const visible = e => e.offsetParent !== null && getComputedStyle(e).display !== 'none';
    const copies = Array.from(document.querySelectorAll('.tl-static-copy'));
    const outputs = Array.from(document.querySelectorAll('.jp-OutputArea-output')).filter(visible);
    return {
        copies: copies.length,
        shown: copies.filter(visible).length,
        with_hint: copies.filter(
            c => visible(c) && c.textContent.includes('run this cell to move the controls again')).length,
        pictures: copies.filter(c => visible(c) && (Array.from(c.querySelectorAll('img'))
                                    .some(i => i.complete && i.naturalWidth > 100)
                                    || c.querySelector('span[title]'))).length,
        broken: outputs.filter(o => /Error displaying widget|VBox\(children/.test(o.textContent)).length,
    };
}"""

_ALL_CELLS_RUN = """() => {
    const prompts = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt'));
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


@pytest.mark.parametrize("name", list(SLIDERS))
def test_slider_redraws_in_the_browser(lab, browser, name):
    label, _ = SLIDERS[name]
    page = browser.new_page()
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        # A workspace of its own, reset: no tab of an earlier test hides this notebook.
        page.goto(f"{lab}/lab/workspaces/{name}/tree/{name}.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90_000)
        page.wait_for_function(
            "() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.textContent ?? '')",
            timeout=90_000,
            polling=500,
        )
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        page.wait_for_function(_ALL_CELLS_RUN, timeout=RUN_ALL_TIMEOUT_S * 1000, polling=1000)
        # the page draws every plotly figure of the notebook after its cells ran: slow on a busy machine
        page.wait_for_function(
            f"() => ({_VIEW_STATE})({json.dumps(label)})?.figure", timeout=120_000, polling=1000
        )
        handle = page.locator(
            ".widget-slider", has=page.locator(".widget-label", has_text=label)
        ).first.locator(".noUi-handle")
        handle.scroll_into_view_if_needed()
        times = []
        first = page.evaluate(_VIEW_STATE, label)
        # A slider that starts at its top (notebook 09's acceptance where the smoke pair agrees on every
        # draft) cannot move right: walk away from whichever end it sits at.
        at_top = float(handle.get_attribute("aria-valuenow")) >= float(handle.get_attribute("aria-valuemax"))
        keys = (
            ("ArrowLeft", "ArrowLeft", "ArrowRight") if at_top else ("ArrowRight", "ArrowRight", "ArrowLeft")
        )
        for key in keys:
            before = page.evaluate(_VIEW_STATE, label)
            handle.focus()
            start = time.perf_counter()
            page.keyboard.press(key)
            page.wait_for_function(  # redrawn: the kernel's new figure is on the page
                f"(old) => {{ const now = ({_VIEW_STATE})({json.dumps(label)});"
                " return now && now.figure && now.title !== old.title && now.figure !== old.figure"
                " && now.widget_readout !== old.widget_readout; }",
                arg=before,
                timeout=30_000,
                polling="raf",
            )
            times.append(time.perf_counter() - start)
            after = page.evaluate(_VIEW_STATE, label)
            assert after["title"] != before["title"], (
                "the figure's title (its read-out of alpha) did not change"
            )
            assert after["widget_readout"] != before["widget_readout"]
            if before["stdout"]:  # notebooks 01 and 02 print a read-out under the figure
                assert after["stdout"] and after["stdout"] != before["stdout"], (
                    "the read-out text did not change"
                )
        print(
            f"\n{name}: slider move -> redraw: {', '.join(f'{t * 1000:.0f}' for t in times)} ms "
            f"(median {statistics.median(times) * 1000:.0f} ms)"
        )
        assert after["static_copy"] == "none", (
            "the live view's static copy is missing or shown beside the widget"
        )
        # the copy follows the controls once they rest (LiveBox.REFRESH_DELAY_S), so a save keeps the last
        # setting
        page.wait_for_function(
            f"(old) => ({_VIEW_STATE})({json.dumps(label)}).static_picture !== old",
            arg=first["static_picture"],
            timeout=60_000,
            polling=500,
        )
        assert not errors, f"browser console errors: {errors}"
        # Save, stop the kernel, reopen the saved copy as a student would the next day.
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        page.wait_for_function(
            "() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
            timeout=60_000,
            polling=500,
        )
    finally:
        page.close()
        _shut_down_kernels(lab)
    _check_reopened(lab, browser, name)


def _check_reopened(lab, browser, name):
    """Open `name` (no kernel state left) and check every live view shows its static copy and hint."""
    page = browser.new_page()
    try:
        page.goto(f"{lab}/lab/workspaces/reopen-{name}/tree/{name}.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90_000)
        page.wait_for_function(
            "() => document.querySelectorAll('.tl-static-copy').length > 0", timeout=60_000
        )
        page.wait_for_timeout(3000)  # the widget manager gives up on the missing models
        seen = page.evaluate(_REOPENED)
        print(f"{name} reopened: {seen}")
        assert seen["copies"] >= 1 and seen["shown"] == seen["copies"], seen
        assert seen["with_hint"] == seen["copies"] and seen["pictures"] == seen["copies"], seen
        assert seen["broken"] == 0, f"a reopened view shows a broken widget: {seen}"
    finally:
        page.close()
        _shut_down_kernels(lab)


def test_papermill_executed_copy_shows_static_pictures(lab, browser):
    _check_reopened(lab, browser, f"executed-{EXECUTED}")
