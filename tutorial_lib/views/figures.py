"""Figures: one `savefig` helper writes every static figure to the figures folder at a fixed size and dpi.

Interactive plotly figures are for people; the PNGs written here are what a headless run leaves
behind and what the README shows. Where they go (`figures_dir`): `$TUTORIAL_LIB_FIGURES` if set (`make
tutorial` sets it to the committed `figures/`, the one run that regenerates them), else the git-ignored
`build/figures/` of the checkout the current directory lies in (a notebook runs in its own folder, so
that is the notebook's own repository, whichever checkout the package was imported from), else
`./figures` beside the notebook.

seaborn is imported only when a figure is drawn: it imports ipywidgets, which `import tutorial_lib`
must not.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Optional, Sequence

import matplotlib

if not os.environ.get("DISPLAY") and "MPLBACKEND" not in os.environ:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from .. import paths  # noqa: E402

__all__ = ["FIGURE_SIZE", "FIGURE_DPI", "checkout_of", "figures_dir", "savefig", "plot_distributions", "plot_tradeoff"]

FIGURE_SIZE = (8.0, 4.5)  # inches
FIGURE_DPI = 120


def checkout_of(directory: os.PathLike) -> Optional[Path]:
    """The nearest folder at or above `directory` whose `pyproject.toml` names the `tutorial_lib` project."""
    return paths.checkout_of(directory)


def figures_dir() -> Path:
    """Where figures go: `$TUTORIAL_LIB_FIGURES`; else, in a checkout (`checkout_of` the current directory),
    its git-ignored `build/figures/`, never the committed `figures/` (`make tutorial` sets
    `$TUTORIAL_LIB_FIGURES` to regenerate those); else `./figures` beside the notebook. The package's own
    location plays no part, so a notebook never writes into the installed package."""
    if os.environ.get("TUTORIAL_LIB_FIGURES"):
        return Path(os.environ["TUTORIAL_LIB_FIGURES"])
    return paths.student_folder("figures")


def savefig(fig, name: str, directory: Optional[os.PathLike] = None, *,
            size: Optional[Sequence[float]] = None) -> Path:
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


def plot_distributions(rows: Dict[str, torch.Tensor], labels: Sequence[str], title: str = "", ax=None):
    """Grouped bars of several next-token distributions (for example q, p and pi) over `labels`."""
    if ax is None:
        _, ax = plt.subplots(figsize=FIGURE_SIZE)
    n = len(rows)
    width = 0.8 / max(n, 1)
    import seaborn as sns
    colors = sns.color_palette("colorblind", n)
    for i, (name, probs) in enumerate(rows.items()):
        probs = torch.as_tensor(probs, dtype=torch.float64).flatten()
        xs = [k + (i - (n - 1) / 2) * width for k in range(len(labels))]
        ax.bar(xs, probs.tolist(), width=width, label=name, color=colors[i])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel("probability")
    ax.set_title(title)
    ax.legend()
    return ax.figure


def plot_tradeoff(curves: Dict[str, Dict[str, Sequence[float]]], x: str, y: str, *, xlabel: str = "",
                  ylabel: str = "", title: str = "", reference: Optional[Dict[str, float]] = None, ax=None):
    """One line per method through points `curves[method][x]`, `curves[method][y]`.

    `reference` maps a label to a horizontal dashed line (for example the verifier's quality).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=FIGURE_SIZE)
    import seaborn as sns
    colors = sns.color_palette("colorblind", max(len(curves), 1))
    for color, (method, points) in zip(colors, curves.items()):
        ax.plot(points[x], points[y], marker="o", markersize=3, label=method, color=color)
    for label, value in (reference or {}).items():
        ax.axhline(value, linestyle="--", color="grey", linewidth=1)
        ax.annotate(label, (ax.get_xlim()[0], value), textcoords="offset points", xytext=(4, 4),
                    fontsize=8, color="grey")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax.figure
