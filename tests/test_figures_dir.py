"""Where `tl.savefig` writes: `$TUTORIAL_LIB_FIGURES`, else the git-ignored build/figures/ of the checkout the
notebook runs in (never its committed figures/: `make refresh-figures` sets the variable to regenerate those;
`make tutorial` sets it to build/figures), else
./figures beside the notebook - never a folder of the checkout the package happens to be imported from."""

import re
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt

from tutorial_lib.views import figures

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = '[project]\nname = "tutorial_lib"\nversion = "0.1.0"\n'


def checkout(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def test_environment_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_FIGURES", str(tmp_path / "mine"))
    monkeypatch.chdir(checkout(tmp_path / "other"))
    assert figures.figures_dir() == tmp_path / "mine"


def test_a_notebook_writes_into_its_own_checkouts_build_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TUTORIAL_LIB_FIGURES", raising=False)
    here = checkout(tmp_path / "second-clone")
    monkeypatch.chdir(here / "notebooks")  # papermill --cwd notebooks, or JupyterLab opening the notebook
    package_checkout = Path(figures.__file__).resolve().parent.parent
    assert figures.figures_dir() == here.resolve() / "build" / "figures"
    assert figures.figures_dir() not in (here.resolve() / "figures", package_checkout / "figures")
    fig, _ = plt.subplots()
    path = figures.savefig(fig, "where")
    plt.close(fig)
    assert path == here.resolve() / "build" / "figures" / "where.png" and path.stat().st_size > 0
    assert not (here / "figures").exists()  # the committed figures are left alone


def test_outside_any_checkout_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TUTORIAL_LIB_FIGURES", raising=False)
    elsewhere = tmp_path / "copy-of-a-notebook"
    elsewhere.mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')  # not our project
    monkeypatch.chdir(elsewhere)
    assert figures.checkout_of(elsewhere) is None
    assert figures.figures_dir() == elsewhere.resolve() / "figures"


def test_checkout_of_finds_the_nearest_project(tmp_path):
    outer = checkout(tmp_path / "outer")
    inner = checkout(outer / "vendor" / "inner")
    assert figures.checkout_of(inner / "notebooks") == inner.resolve()
    assert figures.checkout_of(outer / "vendor") == outer.resolve()


def _figure_folders(target: str) -> set:
    """The `TUTORIAL_LIB_FIGURES` folders `make <target>` would run the notebooks with (`make -n`: nothing
    runs)."""
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return set(re.findall(r"TUTORIAL_LIB_FIGURES=(\S+)", out))


def test_make_tutorial_leaves_the_committed_figures_alone():
    # Some figures are timings of the machine that runs them (notebook 09's): a clean clone stays clean.
    assert _figure_folders("tutorial") == {str(REPO / "build" / "figures")}


def test_refreshing_the_committed_figures_is_its_own_target():
    assert _figure_folders("refresh-figures") == {str(REPO / "figures")}
