"""Views of notebooks 01 (target distributions) and 02 (rejection rates): they draw, the maths is elsewhere.

The numbers come from `tutorial_lib.lessons.rejection` (read-outs, every rule at once, rejection curves, Lemma 3
by simulation) and `tutorial_lib.toy.examples` (the pairs). Widget callbacks (`target_view`,
`every_rule_view`, `rejection_curves_view`) return a plotly figure and the numbers it shows, so tests
call them directly and notebooks wire them to sliders with `widgets.live_view`; each has a matplotlib
twin (`*_figure`) whose figure the notebooks save with `tl.savefig`. One naming rule across `views`:
`*_view` is interactive (plotly, or a widget), `*_figure` static (matplotlib).
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Union

import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
import seaborn as sns
import torch
from plotly.subplots import make_subplots

from ..lessons import rejection
from ..maths import targets
from ..checks import check_temperature
from ..toy.examples import Example, single_example, toy_examples
from .figures import FIGURE_SIZE, plot_distributions
from .widgets import COLORS, RULE_LABELS, number

__all__ = [
    "format_readouts", "target_view", "target_figure", "every_rule_view", "every_rule_figure", "examples_figure",
    "rejection_curves_view", "rejection_curves_figure", "format_rejection_at", "lemma3_view", "lemma3_figure",
]


def format_readouts(readouts: dict) -> str:
    """The read-outs of `rejection.target_readouts` as a few lines of text for a notebook."""
    rule = _rule_title(readouts["rule"], readouts["alpha"], readouts.get("beta", 1.0))
    lines = [f"{rule}, decision: {readouts['decision']}",
             f"D_TV(p, q) = {readouts['tv_distance']:.4f}   rejection probability = "
             f"{readouts['rejection_probability']:.4f}"]
    if readouts["lemma3_rejection"] is not None:
        lines[-1] += f"   (Lemma 3: delta * D_TV = {readouts['lemma3_rejection']:.4f})"
    lines.append(f"expected tokens per verifier call at gamma = {readouts['gamma']}: "
                 f"{readouts['expected_tokens_per_call']:.3f}  (same acceptance "
                 f"{readouts['acceptance_rate']:.3f} at every position)")
    return "\n".join(lines)


def _shown_tokens(rows: Sequence[torch.Tensor], max_tokens: int) -> List[int]:
    """Ids of the tokens worth a bar: with mass somewhere, the `max_tokens` largest, in vocabulary order.

    Temperature scaling turns an impossible token's probability into about 1e-300 rather than 0,
    hence a threshold rather than `> 0`.
    """
    top = torch.stack([r.flatten() for r in rows]).max(0).values  # (V,)
    ids = [i for i in top.argsort(descending=True).tolist() if top[i] > 1e-9][:max_tokens]
    return sorted(ids)


def _rule_title(rule: str, alpha: float, beta: rejection.Beta = 1.0) -> str:
    if rejection.alpha_span(rule) is None:
        return RULE_LABELS[rule]
    extra = "" if rule != "lossy" else (", β normalises" if beta == "normalize" else f", β={number(beta)}")
    return f"{RULE_LABELS[rule]} (α={alpha:.2f}{extra})"


def _readout_title(example: Example, rule: str, readouts: dict, beta, shown: str = "") -> List[str]:
    """Three lines: what is shown, the decision, the numbers."""
    return [f"{example.name}: {_rule_title(rule, readouts['alpha'], beta)}, T={number(readouts['temperature'])}{shown}",
            readouts["decision"],
            f"D_TV = {readouts['tv_distance']:.3f}, rejection = {readouts['rejection_probability']:.3f}, "
            f"tokens per call (γ={readouts['gamma']}) = {readouts['expected_tokens_per_call']:.2f}"]


# --------------------------------------------------------------------------------------------
# Notebook 01: one pair, one rule (target_view) and every rule at once (every_rule_view)
# --------------------------------------------------------------------------------------------

def target_view(example: Union[str, Example], rule: str, alpha: float = 0.0, temperature: float = 1.0,
                gamma: int = 5, beta: rejection.Beta = 1.0, *, examples=None, max_tokens: int = 16):
    r"""Widget callback: bars of $q$, $p$ and $\pi$ for one pair and rule, and the read-outs.

    Returns `(plotly Figure, rejection.target_readouts(...))`.
    """
    readouts = rejection.target_readouts(example, rule, alpha, temperature, gamma, beta, examples=examples)
    example = single_example(example, examples)
    rows = {"drafter q": readouts["q"], "verifier p": readouts["p"], "target π": readouts["pi"]}
    ids = _shown_tokens(list(rows.values()) + ([example.truth] if example.truth is not None else []), max_tokens)
    labels = [example.labels[i] for i in ids]
    fig = go.Figure()
    for color, (name, probs) in zip(COLORS, rows.items()):
        fig.add_trace(go.Bar(x=labels, y=probs[ids].tolist(), name=name, marker_color=color))
    if example.truth is not None:
        fig.add_trace(go.Scatter(x=labels, y=example.truth[ids].tolist(), name="truth P", mode="markers",
                                 marker=dict(symbol="line-ew-open", size=22, color="black", line_width=2)))
    shown = "" if len(ids) == len(example.labels) else f" ({len(ids)} of {len(example.labels)} tokens)"
    head, decision, numbers = _readout_title(example, rule, readouts, beta, shown)
    title = f"{head}<br><sup>{decision}<br>{numbers}</sup>"
    fig.update_layout(barmode="group", height=420, legend=dict(orientation="h", y=1.02, x=0),
                      title=dict(text=title, y=0.95), yaxis_title="probability", margin=dict(t=130))
    return fig, readouts


def target_figure(example: Union[str, Example], rule: str, alpha: float = 0.0, temperature: float = 1.0,
                     gamma: int = 5, beta: rejection.Beta = 1.0, *, examples=None, max_tokens: int = 16):
    """Static twin of `target_view` (matplotlib); returns the figure."""
    readouts = rejection.target_readouts(example, rule, alpha, temperature, gamma, beta, examples=examples)
    example = single_example(example, examples)
    rows = {"drafter q": readouts["q"], "verifier p": readouts["p"], "target π": readouts["pi"]}
    ids = _shown_tokens(list(rows.values()) + ([example.truth] if example.truth is not None else []), max_tokens)
    fig, ax = plt.subplots(figsize=FIGURE_SIZE)
    plot_distributions({k: v[ids] for k, v in rows.items()}, [example.labels[i] for i in ids], ax=ax)
    if example.truth is not None:
        ax.scatter(range(len(ids)), example.truth[ids].tolist(), marker="_", s=300, color="black",
                   linewidths=2, label="truth P", zorder=3)
        ax.legend()
    ax.set_title("\n".join(_readout_title(example, rule, readouts, beta)), fontsize=9)
    return fig


def _row_name(label: str, numbers: Optional[dict]) -> str:
    if numbers is None:
        return label
    alpha = "" if rejection.alpha_span(numbers["rule"]) is None else f" α={numbers['alpha']:.3g}"
    return f"{label}{alpha} · rejects {numbers['rejection']:.2f}"


def every_rule_view(example: Union[str, Example], lenience: float = 0.5, temperature: float = 1.0, *,
                    examples=None, max_tokens: int = 16):
    r"""Widget callback: $q$, $p$ and every rule's $\pi$ as one heatmap (rows) over the tokens (columns).

    Each rule sits at `rejection.alpha_at(rule, lenience)`. Returns `(plotly Figure, {label: numbers})`
    with each rule's alpha, rejection probability and deferral weight.
    """
    example = single_example(example, examples)
    temperature = check_temperature(temperature)
    rows = rejection.every_rule_numbers(example, lenience, temperature)
    ids = _shown_tokens([pi for pi, _ in rows.values()], max_tokens)
    z = [pi[ids].tolist() for pi, _ in rows.values()]
    names = [_row_name(label, numbers) for label, (_, numbers) in rows.items()]
    fig = go.Figure(go.Heatmap(z=z, x=[example.labels[i] for i in ids], y=names, colorscale="Blues", zmin=0,
                               zmax=1, text=[[f"{v:.2f}" if v >= 0.005 else "" for v in row] for row in z],
                               texttemplate="%{text}", colorbar_title="prob."))
    fig.update_layout(height=520, yaxis_autorange="reversed", title=f"{example.name}: every rule at lenience "
                      f"{number(lenience)} of its α range, T={number(temperature)}")
    return fig, {label: numbers for label, (_, numbers) in rows.items() if numbers is not None}


def every_rule_figure(example: Union[str, Example], lenience: float = 0.5, temperature: float = 1.0, *,
                    examples=None, max_tokens: int = 16):
    """Static twin of `every_rule_view` (a seaborn heatmap); returns the figure."""
    example = single_example(example, examples)
    temperature = check_temperature(temperature)
    rows = rejection.every_rule_numbers(example, lenience, temperature)
    ids = _shown_tokens([pi for pi, _ in rows.values()], max_tokens)
    values = np.array([pi[ids].tolist() for pi, _ in rows.values()])  # (rows, shown tokens)
    annotations = np.vectorize(lambda v: f"{v:.2f}" if v >= 0.005 else "")(values)
    fig, ax = plt.subplots(figsize=FIGURE_SIZE)
    sns.heatmap(values, ax=ax, cmap="Blues", vmin=0, vmax=1, annot=annotations, fmt="", annot_kws={"size": 6},
                xticklabels=[example.labels[i] for i in ids], cbar_kws={"label": "probability"},
                yticklabels=[_row_name(label, numbers) for label, (_, numbers) in rows.items()])
    ax.axhline(2, color="black", linewidth=1)  # q and p above the line, the targets below
    ax.tick_params(axis="y", labelsize=7)
    ax.tick_params(axis="x", labelsize=8, rotation=45)
    ax.set_title(f"{example.name}: every rule at lenience {number(lenience)} of its α range, T={number(temperature)}",
                 fontsize=10)
    return fig


def examples_figure(examples: Optional[Dict[str, Example]] = None, temperature: float = 1.0, max_tokens: int = 8):
    """Small bars of $q$ and $p$ (and the truth where known) for every single-context example."""
    examples = toy_examples() if examples is None else examples
    examples = [e for e in examples.values() if e.n_contexts == 1]
    n_cols = 3
    n_rows = math.ceil(len(examples) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=FIGURE_SIZE, squeeze=False)
    for ax, example in zip(axes.flat, examples):
        q, p = rejection.scaled(example.q, temperature), rejection.scaled(example.p, temperature)
        ids = _shown_tokens([q, p], max_tokens)
        xs = np.arange(len(ids))
        ax.bar(xs - 0.2, q[ids].tolist(), width=0.4, color=COLORS[0], label="drafter q")
        ax.bar(xs + 0.2, p[ids].tolist(), width=0.4, color=COLORS[1], label="verifier p")
        if example.truth is not None:
            ax.scatter(xs, example.truth[ids].tolist(), marker="_", s=80, color="black", label="truth P", zorder=3)
        ax.set_xticks(xs)
        ax.set_xticklabels([example.labels[i] for i in ids], rotation=45, ha="right", fontsize=6)
        ax.tick_params(axis="y", labelsize=6)
        ax.set_ylim(0, 1)
        ax.set_title(f"{example.name}\nD_TV = {float(targets.tv_distance(p, q)):.2f}", fontsize=7)
    for ax in list(axes.flat)[len(examples):]:
        ax.axis("off")
    legend = {}  # one entry per series, whichever panels draw it
    for ax in axes.flat:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(name, handle)
    axes.flat[0].legend(legend.values(), legend.keys(), fontsize=6, loc="upper right")
    return fig


# --------------------------------------------------------------------------------------------
# Notebook 02: rejection rate against alpha, and Lemma 3 by simulation
# --------------------------------------------------------------------------------------------

def _panel_title(label: str, curve: dict, result: dict) -> str:
    if "at_alpha" not in result:
        return label
    rate, alpha = result["at_alpha"][label], result["alpha"]
    if rate is None:
        low, high = rejection.alpha_span(curve["rule"])
        return f"{label}: α={alpha:.2f} outside [{low:g}, {high:g}]"
    return f"{label}: {rate:.3f} at α={alpha:.2f}"


def format_rejection_at(result: dict) -> str:
    """The read-out under notebook 02's curves: each rule's rejection rate at the chosen alpha."""
    if "at_alpha" not in result:
        return f"SpecDecode rejects {result['spec']:.4f} of the drafts"
    rates = [f"{label} {rate:.4f}" if rate is not None else f"{label} (outside its range)"
             for label, rate in result["at_alpha"].items()]
    return (f"rejection rate at alpha = {result['alpha']:.2f} (SpecDecode {result['spec']:.4f}): " + ", ".join(rates))


def rejection_curves_view(example: Union[str, Example, None] = None, temperature: float = 1.0,
                          alpha: Optional[float] = None, n_alpha: int = 41, *, examples=None):
    """Widget callback: one panel per variant, rejection rate against alpha; with `alpha`, a marker on
    every curve at that alpha and its rate in the panel's title. Returns `(Figure, result)`: the
    `rejection.rejection_curves` result, plus `alpha` and `at_alpha` (`rejection.rejection_at`) if given."""
    result = rejection.rejection_curves(example, temperature, n_alpha, examples=examples)
    if alpha is not None:
        result.update(alpha=float(alpha), at_alpha=rejection.rejection_at(example, alpha, temperature, examples=examples))
    labels = [_panel_title(label, curve, result) for label, curve in result["curves"].items()]
    fig = make_subplots(rows=3, cols=3, subplot_titles=labels, shared_yaxes=True,
                        horizontal_spacing=0.04, vertical_spacing=0.12)
    top = max([result["spec"]] + [max(c["rejection"]) for c in result["curves"].values()]) * 1.05 + 1e-3
    for k, (label, curve) in enumerate(result["curves"].items()):
        row, col = k // 3 + 1, k % 3 + 1
        fig.add_trace(go.Scatter(x=curve["alpha"], y=curve["rejection"], mode="lines", name=label,
                                 line_color=COLORS[k], showlegend=False), row=row, col=col)
        fig.add_trace(go.Scatter(x=[curve["alpha"][0], curve["alpha"][-1]], y=[result["spec"]] * 2, mode="lines",
                                 line=dict(dash="dash", color="grey", width=1), name="SpecDecode",
                                 showlegend=k == 0), row=row, col=col)
        if result.get("at_alpha", {}).get(label) is not None:
            fig.add_trace(go.Scatter(x=[result["alpha"]], y=[result["at_alpha"][label]], mode="markers",
                                     marker=dict(size=10, color="black", symbol="circle-open", line_width=2),
                                     name="chosen α", showlegend=k == 0), row=row, col=col)
        fig.update_xaxes(title_text="α" if row == 3 else None, row=row, col=col)
        fig.update_yaxes(range=[0, top], title_text="rejection rate" if col == 1 else None, row=row, col=col)
    fig.update_annotations(font_size=12)
    marked = f"; rings at α={result['alpha']:.2f}" if "alpha" in result else ""
    fig.update_layout(height=650, title=f"Rejection rate against α: {result['example']}, "
                                        f"T={number(result['temperature'])}{marked}")
    return fig, result


def rejection_curves_figure(result: dict):
    """Static twin of `rejection_curves_view`, from its result (or `rejection.rejection_curves`'); returns the figure."""
    fig, axes = plt.subplots(3, 3, figsize=FIGURE_SIZE, sharey=True)
    for k, (ax, (label, curve)) in enumerate(zip(axes.flat, result["curves"].items())):
        ax.plot(curve["alpha"], curve["rejection"], color=COLORS[k])
        ax.axhline(result["spec"], linestyle="--", color="grey", linewidth=1, label="SpecDecode")
        if result.get("at_alpha", {}).get(label) is not None:
            ax.plot([result["alpha"]], [result["at_alpha"][label]], "o", markerfacecolor="none", color="black",
                    label="chosen α")
        ax.set_title(_panel_title(label, curve, result), fontsize=8, pad=2)
        ax.tick_params(labelsize=6)
        if k % 3 == 0:
            ax.set_ylabel("rejection rate", fontsize=7)
        if k >= 6:
            ax.set_xlabel("α", fontsize=7)
    axes.flat[0].legend(fontsize=6, loc="lower left")
    axes.flat[0].set_ylim(bottom=0)
    marked = f"; rings at α={result['alpha']:.2f}" if "alpha" in result else ""
    fig.suptitle(f"Rejection rate against α: {result['example']}, T={number(result['temperature'])}{marked}", fontsize=9)
    return fig


def lemma3_view(rows: Sequence[dict]):
    """Plotly: simulated against predicted rejection (left) and their difference with ±2 se bars (right)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("simulated against r·D_TV",
                                                         "simulated − r·D_TV (±2 standard errors)"))
    names = list(dict.fromkeys(row["example"] for row in rows))
    for k, name in enumerate(names):
        mine = [row for row in rows if row["example"] == name]
        x = [row["predicted"] for row in mine]
        hover = [f"{name}<br>r={row['r']:g}, z={row['z']:+.2f}" for row in mine]
        fig.add_trace(go.Scatter(x=x, y=[row["empirical"] for row in mine], mode="markers", name=name,
                                 marker_color=COLORS[k], hovertext=hover, hoverinfo="text",
                                 error_y=dict(array=[2 * row["stderr"] for row in mine])), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=[row["empirical"] - row["predicted"] for row in mine], mode="markers",
                                 marker_color=COLORS[k], hovertext=hover, hoverinfo="text", showlegend=False,
                                 error_y=dict(array=[2 * row["stderr"] for row in mine])), row=1, col=2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dash", color="grey"),
                             name="Lemma 3"), row=1, col=1)
    fig.add_hline(0, line_dash="dash", line_color="grey", row=1, col=2)
    fig.update_xaxes(title_text="r · D_TV(p, q)")
    fig.update_yaxes(title_text="rejection rate", row=1, col=1)
    draws = sorted({row["n"] for row in rows})
    fig.update_layout(height=430, title=f"Lemma 3 by simulation: verification.verify_draft on "
                                        f"{', '.join(map(str, draws))} drafts per point")
    return fig


def lemma3_figure(rows: Sequence[dict]):
    """Static twin of `lemma3_view`; returns the figure."""
    fig, (left, right) = plt.subplots(1, 2, figsize=FIGURE_SIZE)
    names = list(dict.fromkeys(row["example"] for row in rows))
    for k, name in enumerate(names):
        mine = [row for row in rows if row["example"] == name]
        x = np.array([row["predicted"] for row in mine])
        y = np.array([row["empirical"] for row in mine])
        bars = 2 * np.array([row["stderr"] for row in mine])
        left.errorbar(x, y, yerr=bars, fmt="o", markersize=3, color=COLORS[k], label=name)
        right.errorbar(x, y - x, yerr=bars, fmt="o", markersize=3, color=COLORS[k], capsize=2)
    left.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="Lemma 3: r·D_TV")
    right.axhline(0, linestyle="--", color="grey", linewidth=1)
    left.set(xlabel="r · D_TV(p, q)", ylabel="simulated rejection rate", title="simulated against predicted")
    right.set(xlabel="r · D_TV(p, q)", ylabel="simulated − predicted", title="difference, ±2 standard errors")
    left.legend(fontsize=6, loc="upper left")
    for ax in (left, right):
        ax.title.set_fontsize(9)
    draws = sorted({row["n"] for row in rows})
    fig.suptitle(f"Lemma 3 by simulation: verification.verify_draft on {', '.join(map(str, draws))} drafts per point",
                 fontsize=10)
    return fig
