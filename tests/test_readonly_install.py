"""A shared, read-only install: every notebook runs from a student's own folder and writes only there.

The package and its data are copied into a temporary "site" folder and made read-only (as a shared
install on a teaching server would be); each notebook is executed by papermill with `PYTHONPATH` pointing
at that copy, from a fresh student folder outside any checkout, with no `TUTORIAL_LIB_*` folder set. The
run must succeed (a write into the install would fail on the read-only files), leave its metrics,
figures and caches in the student's folder, and leave this repository's `git status` as it found it
(no figures/, data/results/ or notebooks/*.metrics.json written). Run as root, the permission bits stop
nothing, so the fixture also compares the install's file listing before and after.

Run time: every notebook at its CI parameters (`SMALL_PARAMETERS`: the smoke profiles for 06-09), so a
few minutes for the lessons and the smoke reruns each; the read-only checks are the same for all, so it
is the reruns' own writes (sweep rows, tables, 08's results cache, 09's calibration) that make each
notebook worth running here.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import papermill
import pytest

from test_notebooks_run import SMALL_PARAMETERS, kernel_name

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO / "notebooks"
FOLDER_SETTINGS = ("TUTORIAL_LIB_FIGURES", "TUTORIAL_LIB_RESULTS", "TUTORIAL_LIB_OUTPUT")


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _listing(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def readonly_site(tmp_path_factory):
    """`<tmp>/site` holding a read-only copy of `tutorial_lib/` and `data/` (no pyproject: not a checkout)."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(
        REPO / "tutorial_lib", site / "tutorial_lib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copytree(REPO / "data", site / "data", ignore=shutil.ignore_patterns("cache"))
    for path in [site, *site.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    before = _listing(site)
    yield site
    assert _listing(site) == before, "a notebook changed the read-only install"
    for path in [site, *site.rglob("*")]:  # let pytest clean it up
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.mark.parametrize("name", sorted(SMALL_PARAMETERS))
def test_notebook_writes_only_to_the_students_folder(readonly_site, tmp_path, monkeypatch, name):
    for setting in FOLDER_SETTINGS:
        monkeypatch.delenv(setting, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(readonly_site))
    imported = subprocess.run(
        [sys.executable, "-c", "import tutorial_lib; print(tutorial_lib.__file__)"],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert imported.strip() == str(readonly_site / "tutorial_lib" / "__init__.py")
    student = tmp_path / "student"
    student.mkdir()
    status_before = _git_status()
    papermill.execute_notebook(
        str(NOTEBOOK_DIR / f"{name}.ipynb"),
        str(student / f"{name}.ipynb"),
        parameters=dict(SMALL_PARAMETERS[name], output_dir=str(student / "out")),
        kernel_name=kernel_name(),
        cwd=str(student),
        progress_bar=False,
        execution_timeout=2400,
    )  # 07's smoke sweep passed 900 s beside heavy jobs
    assert _git_status() == status_before, f"{name} wrote into the repository"
    written = _listing(student)
    assert f"out/{name}.metrics.json" in written, sorted(written)
    outside = [
        p
        for p in written
        if not p.startswith(("out/", "figures/", "results/", "data/results/")) and p != f"{name}.ipynb"
    ]
    assert not outside, f"{name} wrote outside its output folders: {outside}"
