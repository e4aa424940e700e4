"""The widgets in a real browser: JupyterLab on a copy of notebooks 01-03, driven in headless Chromium.

For each notebook: open it, Run > Run All Cells, move one slider with the keyboard (arrow keys on its
handle), and check that the read-out under the figure and the plotly figure itself change, and that the
browser console shows no error. The time from the key press to the redrawn figure is printed (run with
`-s` to see it): `slider move -> redraw: ...`.

Needs Debian's `chromium` (`apt-get install chromium`; Playwright drives it through `executable_path`,
never a browser download: do not run `playwright install`) and the `playwright` Python package (`pip
install -e '.[dev]'`). Without them the test is skipped with a message saying so.
"""
from __future__ import annotations

import json
import os
import shutil
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
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TOKEN = "tutorial-lib-browser-test"

if not CHROMIUM.exists():
    pytest.skip("the browser test needs Debian's chromium at /usr/bin/chromium: `apt-get install chromium` "
                "(.ci/run installs it when run as root)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs Playwright for Python: "
                               "`pip install -e '.[dev]'` (never `playwright install`: it drives /usr/bin/chromium)")

#: notebook -> (label the slider's description starts with, parameters injected like papermill's, or None).
# Notebook 01 runs at its defaults (its small CI parameters load a model pair); 02 and 03 at their CI ones.
SLIDERS = {
    "01_target_distributions": ("alpha", None),
    "02_rejection_rates": ("alpha (marked on every curve)", SMALL_PARAMETERS["02_rejection_rates"]),
    "03_lemma1_token_cascades": ("alpha (cost of a deferral)", SMALL_PARAMETERS["03_lemma1_token_cascades"]),
}
#: Settings of the test's own JupyterLab: no news pop-up or update check, every cell rendered (no windowing).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a temporary copy of the notebooks; yields its base URL."""
    from jupyter_client.kernelspec import find_kernel_specs
    if "tutorial-lib" not in find_kernel_specs():
        pytest.skip("the notebooks' kernel `tutorial-lib` is not installed: run `make install`")
    root = tmp_path_factory.mktemp("lab")
    for name, (_, parameters) in SLIDERS.items():
        _copy_notebook(name, parameters, root)
    settings = tmp_path_factory.mktemp("lab-settings")
    for path, values in LAB_SETTINGS.items():
        (settings / path).parent.mkdir(parents=True, exist_ok=True)
        (settings / path).write_text(json.dumps(values))
    port = _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path_factory.mktemp("lab-workspaces")),
               JUPYTER_CONFIG_DIR=str(tmp_path_factory.mktemp("jupyter-config")),
               JUPYTER_RUNTIME_DIR=str(tmp_path_factory.mktemp("jupyter-runtime")),
               TUTORIAL_LIB_FIGURES=str(root / "figures"))
    command = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = open(root / "lab.log", "w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {server.returncode}:\n{(root / 'lab.log').read_text()[-3000:]}")
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
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        yield context
        context.close()


def _shut_down_kernels(url: str) -> None:
    """Stop the kernels the page started, so the next notebook has the CPU to itself."""
    with urllib.request.urlopen(f"{url}/api/kernels?token={TOKEN}", timeout=10) as answer:
        kernels = json.load(answer)
    for kernel in kernels:
        request = urllib.request.Request(f"{url}/api/kernels/{kernel['id']}?token={TOKEN}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


#: JavaScript: the slider whose label starts with `label`, the live view it belongs to, and what it shows.
_VIEW_STATE = """(label) => {
    const slider = Array.from(document.querySelectorAll('.widget-slider'))
        .find(s => s.querySelector('.widget-label').textContent.trim().startsWith(label));
    if (!slider) return null;
    const view = slider.closest('.widget-vbox');
    const plot = view.querySelector('.js-plotly-plot');
    const stdout = Array.from(view.querySelectorAll('.jp-OutputArea-output'))
        .filter(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stdout')
        .map(o => o.textContent).join('');
    return {
        widget_readout: slider.querySelector('.widget-readout').textContent,
        stdout: stdout,
        title: plot && plot.layout ? JSON.stringify(plot.layout.title) : null,
        figure: plot && plot.data ? JSON.stringify([plot.layout.title, plot.layout.annotations,
                                                    plot.data.map(t => [t.name, t.x, t.y])]) : null,
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
        page.wait_for_function("() => /\\| Idle/.test(document.querySelector('.jp-StatusBar-Widget')?.textContent ?? '')",
                               timeout=90_000, polling=500)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        page.wait_for_function(_ALL_CELLS_RUN, timeout=150_000, polling=500)
        page.wait_for_function(f"() => ({_VIEW_STATE})({json.dumps(label)})?.figure", timeout=30_000)
        handle = page.locator(".widget-slider", has=page.locator(".widget-label", has_text=label)).first \
            .locator(".noUi-handle")
        handle.scroll_into_view_if_needed()
        times = []
        for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):
            before = page.evaluate(_VIEW_STATE, label)
            handle.focus()
            start = time.perf_counter()
            page.keyboard.press(key)
            page.wait_for_function(  # redrawn: the kernel's new figure is on the page
                f"(old) => {{ const now = ({_VIEW_STATE})({json.dumps(label)});"
                " return now && now.figure && now.title !== old.title && now.figure !== old.figure"
                " && now.widget_readout !== old.widget_readout; }",
                arg=before, timeout=30_000, polling="raf")
            times.append(time.perf_counter() - start)
            after = page.evaluate(_VIEW_STATE, label)
            assert after["title"] != before["title"], "the figure's title (its read-out of alpha) did not change"
            assert after["widget_readout"] != before["widget_readout"]
            if before["stdout"]:  # notebooks 01 and 02 print a read-out under the figure
                assert after["stdout"] and after["stdout"] != before["stdout"], "the read-out text did not change"
        print(f"\n{name}: slider move -> redraw: {', '.join(f'{t * 1000:.0f}' for t in times)} ms "
              f"(median {statistics.median(times) * 1000:.0f} ms)")
        assert not errors, f"browser console errors: {errors}"
    finally:
        page.close()
        _shut_down_kernels(lab)
