"""The engine on the toy world against the exact curves (notebook 05): `lessons.toycheck`'s numbers, drawn."""
from __future__ import annotations

from typing import Dict

import matplotlib.pyplot as plt

from .figures import FIGURE_SIZE

__all__ = ["engine_check_figure"]


def engine_check_figure(check: Dict[str, dict], curves: Dict[str, dict]):
    """Exact loss-against-rejection curves (lines) and the engine's estimates (points, +-2 standard errors)."""
    fig, ax = plt.subplots(figsize=FIGURE_SIZE)
    for i, (label, result) in enumerate(check.items()):
        color = f"C{i % 10}"
        if label in curves:
            ax.plot(curves[label]["rejection"], curves[label]["loss"], color=color, lw=1.2, alpha=0.7)
        e, se = result["engine"], result["stderr"]
        ax.errorbar(e["rejection_rate"], e["zero_one_loss"], xerr=2 * se["rejection_rate"],
                    yerr=2 * se["zero_one_loss"], fmt="o", color=color, ms=4, capsize=2,
                    label=f"{label} (alpha={result['alpha']:.3g})")
    ax.set_xlabel("rejection rate")
    ax.set_ylabel("per-token 0-1 loss")
    ax.set_title("The engine on the toy world's models (points, +-2 s.e.) against the exact curves (lines)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
