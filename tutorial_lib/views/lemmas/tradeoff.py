"""Views of notebook 05 (Lemma 4 in practice): the paper's Figure 1 and the cost-quality trade-off in the toy
world; they draw, the numbers come from `tutorial_lib.lessons.tradeoff`. Every `*_view` function is a widget
callback returning a plotly figure; every `*_figure` function returns the matplotlib twin for `tl.savefig`,
both drawn from one list of `panels.Panel` records.
"""

from __future__ import annotations

from typing import Optional, Sequence

import plotly.graph_objects as go

from ...lessons import tradeoff
from ...toy.toyworld import ToyWorld
from ..widgets import number
from ..panels import Panel, Trace, to_matplotlib, to_plotly

__all__ = [
    "figure1_view",
    "figure1_figure",
    "tradeoff_view",
    "tradeoff_live",
    "format_tradeoff_summary",
    "tradeoff_figure",
]

# --------------------------------------------------------------------------------------------
# The paper's Figure 1
# --------------------------------------------------------------------------------------------


def _figure1_panels(curves: dict, temperature: float, prefixes: str):
    traces = []
    for label, c in curves.items():
        if isinstance(c, dict):
            kind = "points" if len(c["loss"]) == 1 else "curve"
            traces.append(Trace(label, c["calls_per_token"], c["loss"], kind=kind))
    panel = Panel(
        traces,
        xlabel="calls to the verifier per generated token",
        ylabel="per-token 0-1 loss (lower is better)",
        hlines=[(curves["verifier"], "verifier alone"), (curves["drafter"], "drafter alone")],
    )
    return [panel], f"Figure 1 in the toy world (exact, T = {number(temperature)}, prefixes {prefixes})"


def figure1_view(
    temperature: float = 1.0,
    gamma: int = 5,
    prefixes: str = "generated",
    *,
    world: Optional[ToyWorld] = None,
    n_alpha: int = 21,
) -> go.Figure:
    """Quality against verifier calls per token for Chow, the Diff oracle and SpecDecode (the paper's Figure
    1)."""
    curves = tradeoff.figure1_curves(world, n_alpha, temperature, gamma, prefixes)
    return to_plotly(*_figure1_panels(curves, temperature, prefixes))


def figure1_figure(curves: dict, temperature: float = 1.0, prefixes: str = "generated"):
    return to_matplotlib(*_figure1_panels(curves, temperature, prefixes), legend="each")


# --------------------------------------------------------------------------------------------
# Lemma 4 in practice: the cost-quality trade-off
# --------------------------------------------------------------------------------------------


def _tradeoff_panels(result: dict, gamma: int, cost_ratio: float, temperature: float):
    curves = result["curves"]
    kind = {
        k: "points" if len(v["loss"]) == 1 else "curve" for k, v in curves.items()
    }  # SpecDecode is one point
    left = Panel(
        [Trace(k, v["rejection"], v["loss"], kind=kind[k]) for k, v in curves.items()],
        xlabel="rejection rate",
        ylabel="per-token 0-1 loss (lower is better)",
        title="quality against rejection rate",
        hlines=[(result["verifier"]["loss"], "verifier alone")],
    )
    right = Panel(
        [Trace(k, v["latency"], v["loss"], kind=kind[k]) for k, v in curves.items()]
        + [
            Trace(
                "models alone",
                [1.0, result["drafter"]["latency"]],
                [result["verifier"]["loss"], result["drafter"]["loss"]],
                kind="points",
                color="#000000",
                labels=["verifier", "drafter"],
            )
        ],
        xlabel="expected latency per token (verifier alone = 1)",
        ylabel="per-token 0-1 loss (lower is better)",
        title="quality against latency",
        vlines=[(1.0, "verifier latency")],
    )
    return [left, right], (
        f"Speculative cascades in the toy world (exact, T = {number(temperature)}, gamma = {gamma}, "
        f"drafter step = {number(cost_ratio)} verifier calls)"
    )


def tradeoff_view(
    gamma: int = 5,
    cost_ratio: float = 0.1,
    temperature: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
    n_alpha: int = 21,
    methods: Optional[Sequence[str]] = None,
) -> go.Figure:
    """Quality against rejection rate (left) and against expected latency (right) for every method."""
    result = tradeoff.tradeoff_curves(world, gamma, temperature, n_alpha, methods, cost_ratio)
    return to_plotly(*_tradeoff_panels(result, int(gamma), float(cost_ratio), float(temperature)))


def tradeoff_live(
    gamma: int = 5,
    cost_ratio: float = 0.1,
    temperature: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
    n_alpha: int = 21,
    methods: Optional[Sequence[str]] = None,
):
    """`tradeoff_view` for `widgets.live_view`: `(figure, (setting, tradeoff.tradeoff_summary))`, so the
    summary table under the figure follows the sliders (`format_tradeoff_summary`)."""
    result = tradeoff.tradeoff_curves(world, gamma, temperature, n_alpha, methods, cost_ratio)
    setting = {"gamma": int(gamma), "cost_ratio": float(cost_ratio), "temperature": float(temperature)}
    return (
        to_plotly(*_tradeoff_panels(result, int(gamma), float(cost_ratio), float(temperature))),
        (setting, tradeoff.tradeoff_summary(result)),
    )


def format_tradeoff_summary(numbers) -> str:
    """The summary table of `tradeoff_live` as text, headed by the setting it belongs to."""
    setting, summary = numbers

    def cell(value):
        return "never" if value is None else f"{value:.4f}"

    lines = [
        f"summary at gamma = {setting['gamma']}, c = {number(setting['cost_ratio'])}, "
        f"T = {number(setting['temperature'])}:",
        f"{'method':<26}{'best loss':>11}"
        f"{'latency at verifier quality':>29}{'best loss at latency <= 1':>27}",
    ]
    lines += [
        f"{label:<26}{cell(row['best_loss']):>11}{cell(row['latency_at_verifier_quality']):>29}"
        f"{cell(row['best_loss_within_verifier_latency']):>27}"
        for label, row in summary.items()
    ]
    return "\n".join(lines)


def tradeoff_figure(result: dict, gamma: int, cost_ratio: float, temperature: float = 1.0):
    return to_matplotlib(*_tradeoff_panels(result, int(gamma), float(cost_ratio), float(temperature)))
