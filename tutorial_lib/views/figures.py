"""Figures: one `savefig` helper writes every static figure to the figures folder at a fixed size and dpi.

Interactive plotly figures are for people; the PNGs written here are what a headless run leaves
behind and what the README shows. Where they go (`figures_dir`): `$TUTORIAL_LIB_FIGURES` if set (`make
tutorial` sets it to the git-ignored `build/figures/`, `make refresh-figures` to the committed `figures/`, the
one run that regenerates them: some are timings of the machine that runs them), else the git-ignored
`build/figures/` of the checkout the current directory lies in (a notebook runs in its own folder, so
that is the notebook's own repository, whichever checkout the package was imported from), else
`./figures` beside the notebook.

The two figures of notebook 00 (`plot_distributions`, `plot_tradeoff`) are drawn from `Panel`s
(`distributions_panels`, `tradeoff_panels`) like every other view. `import tutorial_lib` imports none of
this (it loads `tl.views` on first use).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import matplotlib

if not os.environ.get("DISPLAY") and "MPLBACKEND" not in os.environ:
    matplotlib.use("Agg")
import numpy as np  # noqa: E402

from .. import paths  # noqa: E402
from .panels import FIGURE_SIZE, Panel, Trace, palette, to_matplotlib  # noqa: E402

__all__ = [
    "FIGURE_SIZE",
    "FIGURE_DPI",
    "checkout_of",
    "figures_dir",
    "savefig",
    "distributions_panels",
    "plot_distributions",
    "tradeoff_panels",
    "plot_tradeoff",
]

#: FIGURE_SIZE (8 x 4.5 inches) is the size `panels.to_matplotlib` draws at; it is defined there.
FIGURE_DPI = 120


def checkout_of(directory: os.PathLike) -> Optional[Path]:
    """The nearest folder at or above `directory` whose `pyproject.toml` names the `tutorial_lib` project."""
    return paths.checkout_of(directory)


def figures_dir() -> Path:
    """Where figures go: `$TUTORIAL_LIB_FIGURES`; else, in a checkout (`checkout_of` the current directory),
    its git-ignored `build/figures/`, never the committed `figures/` (`make refresh-figures`
    sets `$TUTORIAL_LIB_FIGURES` to regenerate those); else `./figures` beside the notebook. The package's own
    location plays no part, so a notebook never writes into the installed package."""
    if os.environ.get("TUTORIAL_LIB_FIGURES"):
        return Path(os.environ["TUTORIAL_LIB_FIGURES"])
    return paths.student_folder("figures")


def savefig(
    fig, name: str, directory: Optional[os.PathLike] = None, *, size: Optional[Sequence[float]] = None
) -> Path:
    """Save a matplotlib figure as `<figures>/<name>.png` at `FIGURE_SIZE` (or `size`, inches, for a
    figure of several panels) and `FIGURE_DPI`."""
    if not name or any(c in name for c in "/\\"):
        raise ValueError(f"figure name {name!r} must be a plain file name such as 'quickstart_tradeoff'.")
    out = Path(directory) if directory is not None else figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    fig.set_size_inches(*(FIGURE_SIZE if size is None else size))
    fig.tight_layout()
    fig.savefig(path, dpi=FIGURE_DPI)
    return path


def _flat(probs) -> List[float]:
    """A distribution as plain floats, whichever array it came in (a torch tensor on any device, numpy,
    a list)."""
    values = probs.tolist() if hasattr(probs, "tolist") else probs
    return np.asarray(values, dtype=np.float64).ravel().tolist()


def distributions_panels(
    rows: Dict[str, Sequence[float]], labels: Sequence[str], title: str = ""
) -> List[Panel]:
    """One panel of grouped bars: several next-token distributions (for example q, p and pi) over `labels`."""
    colors = palette(len(rows))
    traces = [
        Trace(name, list(labels), _flat(probs), kind="bar", color=color)
        for color, (name, probs) in zip(colors, rows.items())
    ]
    return [Panel(traces, "", "probability", title=title, xrotation=45)]


def plot_distributions(rows: Dict[str, Sequence[float]], labels: Sequence[str], title: str = "", ax=None):
    """Grouped bars of several next-token distributions (for example q, p and pi) over `labels`
    (`distributions_panels`, static); drawn into `ax` if given. Returns the figure."""
    return to_matplotlib(distributions_panels(rows, labels, title), legend="each", ax=ax)


def tradeoff_panels(
    curves: Dict[str, Dict[str, Sequence[float]]],
    x: str,
    y: str,
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    reference: Optional[Dict[str, float]] = None,
) -> List[Panel]:
    """One panel, one curve per method through `curves[method][x]`, `curves[method][y]`; `reference` maps a
    label to a horizontal dashed line (for example the verifier's quality)."""
    colors = palette(len(curves))
    traces = [
        Trace(method, points[x], points[y], kind="curve", color=color, width=1.5)
        for color, (method, points) in zip(colors, curves.items())
    ]
    return [
        Panel(
            traces,
            xlabel or x,
            ylabel or y,
            title=title,
            hlines=[(value, label) for label, value in (reference or {}).items()],
        )
    ]


def plot_tradeoff(
    curves: Dict[str, Dict[str, Sequence[float]]],
    x: str,
    y: str,
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    reference: Optional[Dict[str, float]] = None,
    ax=None,
):
    """One line per method through points `curves[method][x]`, `curves[method][y]` (`tradeoff_panels`,
    static); drawn into `ax` if given. `reference` maps a label to a horizontal dashed line (for
    example the verifier's quality). Returns the figure."""
    panels = tradeoff_panels(curves, x, y, xlabel=xlabel, ylabel=ylabel, title=title, reference=reference)
    return to_matplotlib(panels, legend="each", ax=ax)
