"""Where the checkout keeps its data: the floor every wing may import (like `checks`)."""

import os
import re
from pathlib import Path
from typing import Optional

__all__ = [
    "CHECKOUT",
    "PACKAGED_DATA_DIR",
    "DATA_DIR",
    "TASKS_DIR",
    "RESULTS_DIR",
    "checkout_of",
    "student_folder",
    "repository_only",
]

#: The folder holding `tutorial_lib/` (a checkout, or site-packages for a plain install).
CHECKOUT = Path(__file__).resolve().parents[1]
#: The data an installed wheel carries inside the package (pyproject.toml's `tutorial_lib.data`, mapped from
#: the checkout's data/): the offline task sets and the trained T5 pair, never the committed results.
PACKAGED_DATA_DIR = Path(__file__).resolve().parent / "data"
#: The packaged data in a wheel install; else the checkout's `data/` (or a copy laid out like one).
DATA_DIR = PACKAGED_DATA_DIR if PACKAGED_DATA_DIR.is_dir() else CHECKOUT / "data"
TASKS_DIR = DATA_DIR / "tasks"
#: The committed results of the reruns (a sweep writes to `$TUTORIAL_LIB_RESULTS` instead when it is set);
#: a checkout's only: a wheel does not ship them (`repository_only`).
RESULTS_DIR = DATA_DIR / "results"


def repository_only(path: os.PathLike, what: str) -> Path:
    """`path`, a file or folder of the repository's data/, where it exists; else a FileNotFoundError that
    says `what` it is and where to get it: an installed wheel ships the task sets and the T5 pair only."""
    path = Path(path)
    if path.exists():
        return path
    if DATA_DIR == PACKAGED_DATA_DIR:
        where = (
            f"It is {what}, in the repository's data/ only: the installed package "
            f"({PACKAGED_DATA_DIR.parent}) ships the task sets and the T5 pair, not the committed results. "
            "Clone the repository and install it from there (`make install`, or `pip install -e .`)."
        )
    else:
        where = f"It is {what}, committed in the repository: restore it with `git checkout -- {path}`."
    raise FileNotFoundError(f"{path} is missing. {where}")


_PROJECT_NAME = re.compile(r"""^\s*name\s*=\s*["']tutorial_lib["']""", re.MULTILINE)


def checkout_of(directory: os.PathLike) -> Optional[Path]:
    """The nearest folder at or above `directory` whose `pyproject.toml` names the `tutorial_lib` project."""
    directory = Path(directory).resolve()
    for candidate in (directory, *directory.parents):
        pyproject = candidate / "pyproject.toml"
        try:
            if pyproject.is_file() and _PROJECT_NAME.search(pyproject.read_text(errors="replace")):
                return candidate
        except OSError:  # unreadable: not ours to write into
            continue
    return None


def student_folder(kind: str, directory: Optional[os.PathLike] = None) -> Path:
    """Where a notebook run writes its `kind` of output ("figures", "results", "outputs") when no setting
    names a folder: inside a checkout of this project (a notebook opened in its `notebooks/`), the
    git-ignored `build/<kind>` of that checkout, so a run never overwrites the committed `figures/` or
    `data/results/`; anywhere else `<directory>/<kind>` beside the notebook (`directory`: the current one)."""
    if not kind or any(c in kind for c in "/\\"):
        raise ValueError(f"kind={kind!r}: pass a plain folder name such as 'figures' or 'results'.")
    here = Path(directory) if directory is not None else Path.cwd()
    checkout = checkout_of(here)
    return (checkout / "build" / kind) if checkout is not None else here.resolve() / kind
