"""The engine on the toy world against the exact curves (notebook 05): `lessons.toycheck`'s numbers, drawn
from one `panels.Panel` (`engine_check_panels`): `engine_check_figure` (matplotlib), `engine_check_view`
(plotly)."""

from __future__ import annotations

from typing import Dict, List

from ..lessons.toycheck import engine_interval
from .widgets import COLORS
from .panels import Panel, Trace, to_matplotlib, to_plotly

__all__ = ["engine_check_panels", "engine_check_figure", "engine_check_view"]

_TITLE = "The engine on the toy world's models (points, +-2 s.e.) against the exact curves (lines)"


def engine_check_panels(check: Dict[str, dict], curves: Dict[str, dict]) -> List[Panel]:
    """Exact loss-against-rejection curves (lines) and the engine's estimates (points, +-2 standard errors
    on both axes: `toycheck.engine_interval`)."""
    traces = []
    for i, (label, result) in enumerate(check.items()):
        name, color = f"{label} (alpha={result['alpha']:.3g})", COLORS[i % len(COLORS)]
        if label in curves:
            traces.append(
                Trace(
                    name,
                    curves[label]["rejection"],
                    curves[label]["loss"],
                    color=color,
                    width=1.2,
                    opacity=0.7,
                    legend=False,
                )
            )
        e = result["engine"]
        (x_low, x_high), (y_low, y_high) = (
            engine_interval(result, m) for m in ("rejection_rate", "zero_one_loss")
        )
        traces.append(
            Trace(
                name,
                [e["rejection_rate"]],
                [e["zero_one_loss"]],
                kind="points",
                color=color,
                marker_size=4,
                xlow=[x_low],
                xhigh=[x_high],
                low=[y_low],
                high=[y_high],
            )
        )
    return [Panel(traces, "rejection rate", "per-token 0-1 loss", title=_TITLE)]


def engine_check_figure(check: Dict[str, dict], curves: Dict[str, dict]):
    """Exact loss-against-rejection curves (lines) and the engine's estimates (points, +-2 standard
    errors)."""
    return to_matplotlib(engine_check_panels(check, curves), legend="each")


def engine_check_view(check: Dict[str, dict], curves: Dict[str, dict]):
    """The interactive figure of `engine_check_figure` (plotly)."""
    return to_plotly(engine_check_panels(check, curves))
