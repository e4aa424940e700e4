"""Views of notebooks 01 (target distributions) and 02 (rejection rates): they draw, the maths is elsewhere.

The numbers come from `tutorial_lib.lessons.rejection` (read-outs, every rule at once, rejection curves,
Lemma 3 by simulation) and `tutorial_lib.toy.examples` (the pairs). Widget callbacks (`target_view`,
`every_rule_view`, `rejection_curves_view`) return a plotly figure and the numbers it shows, so tests call
them directly and notebooks wire them to sliders with `widgets.live_view`; each has a matplotlib twin
(`*_figure`) whose figure the notebooks save with `tl.savefig`. One naming rule across `views`: `*_view` is
interactive (plotly, or a widget), `*_figure` static (matplotlib).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..lessons import rejection
from ..maths import laws, rules
from ..checks import check_temperature
from ..toy.examples import Example, single_example, toy_examples
from .widgets import COLORS, number
from .panels import Heatmap, Panel, Trace, to_matplotlib, to_plotly

__all__ = [
    "format_readouts",
    "target_view",
    "target_figure",
    "every_rule_view",
    "every_rule_figure",
    "examples_figure",
    "rejection_curves_view",
    "rejection_curves_figure",
    "format_rejection_at",
    "lemma3_view",
    "lemma3_figure",
]


def format_readouts(readouts: dict) -> str:
    """The read-outs of `rejection.target_readouts` as a few lines of text for a notebook."""
    rule = _rule_title(readouts["rule"], readouts["alpha"], readouts.get("beta", 1.0))
    lines = [
        f"{rule}, decision: {readouts['decision']}",
        f"D_TV(p, q) = {readouts['tv_distance']:.4f}   rejection probability = "
        f"{readouts['rejection_probability']:.4f}",
    ]
    if readouts["lemma3_rejection"] is not None:
        lines[-1] += f"   (Lemma 3: delta * D_TV = {readouts['lemma3_rejection']:.4f})"
    lines.append(
        f"expected tokens per verifier call at gamma = {readouts['gamma']}: "
        f"{readouts['expected_tokens_per_call']:.3f}  (same acceptance "
        f"{readouts['acceptance_rate']:.3f} at every position)"
    )
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
        return rules.rule(rule).label
    extra = "" if rule != "lossy" else (", β normalises" if beta == "normalize" else f", β={number(beta)}")
    return f"{rules.rule(rule).label} (α={alpha:.2f}{extra})"


def _readout_title(example: Example, rule: str, readouts: dict, beta, shown: str = "") -> List[str]:
    """Three lines: what is shown, the decision, the numbers."""
    return [
        f"{example.name}: {_rule_title(rule, readouts['alpha'], beta)}, "
        f"T={number(readouts['temperature'])}{shown}",
        readouts["decision"],
        f"D_TV = {readouts['tv_distance']:.3f}, rejection = {readouts['rejection_probability']:.3f}, "
        f"tokens per call (γ={readouts['gamma']}) = {readouts['expected_tokens_per_call']:.2f}",
    ]


# --------------------------------------------------------------------------------------------
# Notebook 01: one pair, one rule (target_view) and every rule at once (every_rule_view)
# --------------------------------------------------------------------------------------------


def _target_panels(
    example: Union[str, Example],
    rule: str,
    alpha: float,
    temperature: float,
    gamma: int,
    beta: rejection.Beta,
    examples,
    max_tokens: int,
) -> Tuple[List[Panel], str, dict]:
    readouts = rejection.target_readouts(example, rule, alpha, temperature, gamma, beta, examples=examples)
    example = single_example(example, examples)
    rows = {"drafter q": readouts["q"], "verifier p": readouts["p"], "target π": readouts["pi"]}
    ids = _shown_tokens(
        list(rows.values()) + ([example.truth] if example.truth is not None else []), max_tokens
    )
    labels = [example.labels[i] for i in ids]
    traces = [
        Trace(name, labels, probs[ids].tolist(), kind="bar", color=color)
        for color, (name, probs) in zip(COLORS, rows.items())
    ]
    if example.truth is not None:
        traces.append(
            Trace("truth P", labels, example.truth[ids].tolist(), kind="points", marker="dash", color="black")
        )
    shown = "" if len(ids) == len(example.labels) else f" ({len(ids)} of {len(example.labels)} tokens)"
    title = "\n".join(_readout_title(example, rule, readouts, beta, shown))
    return [Panel(traces, "", "probability")], title, readouts


def target_view(
    example: Union[str, Example],
    rule: str,
    alpha: float = 0.0,
    temperature: float = 1.0,
    gamma: int = 5,
    beta: rejection.Beta = 1.0,
    *,
    examples=None,
    max_tokens: int = 16,
):
    r"""Widget callback: bars of $q$, $p$ and $\pi$ for one pair and rule, and the read-outs.

    Returns `(plotly Figure, rejection.target_readouts(...))`.
    """
    panels, title, readouts = _target_panels(
        example, rule, alpha, temperature, gamma, beta, examples, max_tokens
    )
    fig = to_plotly(panels, title, height=420)
    fig.update_layout(legend=dict(orientation="h", y=1.02, x=0), margin=dict(t=130))
    return fig, readouts


def target_figure(
    example: Union[str, Example],
    rule: str,
    alpha: float = 0.0,
    temperature: float = 1.0,
    gamma: int = 5,
    beta: rejection.Beta = 1.0,
    *,
    examples=None,
    max_tokens: int = 16,
):
    """Static twin of `target_view` (matplotlib); returns the figure."""
    panels, title, _ = _target_panels(example, rule, alpha, temperature, gamma, beta, examples, max_tokens)
    return to_matplotlib(panels, title, legend="each")


def _row_name(label: str, numbers: Optional[dict]) -> str:
    if numbers is None:
        return label
    alpha = "" if rejection.alpha_span(numbers["rule"]) is None else f" α={numbers['alpha']:.3g}"
    return f"{label}{alpha} · rejects {numbers['rejection']:.2f}"


def _every_rule_panel(
    example: Union[str, Example], lenience: float, temperature: float, examples, max_tokens: int
) -> Tuple[Panel, str, dict]:
    example = single_example(example, examples)
    temperature = check_temperature(temperature)
    rows = rejection.every_rule_numbers(example, lenience, temperature)
    ids = _shown_tokens([pi for pi, _ in rows.values()], max_tokens)
    heatmap = Heatmap(
        [pi[ids].tolist() for pi, _ in rows.values()],
        [example.labels[i] for i in ids],
        [_row_name(label, numbers) for label, (_, numbers) in rows.items()],
        divider=2,
    )
    title = (
        f"{example.name}: every rule at lenience {number(lenience)} of its α range, T={number(temperature)}"
    )
    return (
        Panel([], "", "", heatmap=heatmap),
        title,
        {label: numbers for label, (_, numbers) in rows.items() if numbers is not None},
    )


def every_rule_view(
    example: Union[str, Example],
    lenience: float = 0.5,
    temperature: float = 1.0,
    *,
    examples=None,
    max_tokens: int = 16,
):
    r"""Widget callback: $q$, $p$ and every rule's $\pi$ as one heatmap (rows) over the tokens (columns).

    Each rule sits at `rejection.alpha_at(rule, lenience)`. Returns `(plotly Figure, {label: numbers})`
    with each rule's alpha, rejection probability and deferral weight (q and p above the line, the targets
    below).
    """
    panel, title, numbers = _every_rule_panel(example, lenience, temperature, examples, max_tokens)
    return to_plotly([panel], title, height=520), numbers


def every_rule_figure(
    example: Union[str, Example],
    lenience: float = 0.5,
    temperature: float = 1.0,
    *,
    examples=None,
    max_tokens: int = 16,
):
    """Static twin of `every_rule_view` (a heatmap); returns the figure."""
    panel, title, _ = _every_rule_panel(example, lenience, temperature, examples, max_tokens)
    return to_matplotlib([panel], title)


def examples_figure(
    examples: Optional[Dict[str, Example]] = None, temperature: float = 1.0, max_tokens: int = 8
):
    """Small bars of $q$ and $p$ (and the truth where known) for every single-context example."""
    examples = toy_examples() if examples is None else examples
    panels = []
    for example in (e for e in examples.values() if e.n_contexts == 1):
        q, p = rejection.scaled(example.q, temperature), rejection.scaled(example.p, temperature)
        ids = _shown_tokens([q, p], max_tokens)
        labels = [example.labels[i] for i in ids]
        traces = [
            Trace("drafter q", labels, q[ids].tolist(), kind="bar", color=COLORS[0]),
            Trace("verifier p", labels, p[ids].tolist(), kind="bar", color=COLORS[1]),
        ]
        if example.truth is not None:
            traces.append(
                Trace(
                    "truth P",
                    labels,
                    example.truth[ids].tolist(),
                    kind="points",
                    marker="dash",
                    color="black",
                )
            )
        panels.append(
            Panel(
                traces,
                "",
                "",
                title=f"{example.name}\nD_TV = {float(laws.tv_distance(p, q)):.2f}",
                ylim=(0, 1),
            )
        )
    return to_matplotlib(panels, legend="first", cols=3)


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
    rates = [
        f"{label} {rate:.4f}" if rate is not None else f"{label} (outside its range)"
        for label, rate in result["at_alpha"].items()
    ]
    return f"rejection rate at alpha = {result['alpha']:.2f} (SpecDecode {result['spec']:.4f}): " + ", ".join(
        rates
    )


def _rejection_panels(result: dict) -> Tuple[List[Panel], str]:
    top = max([result["spec"]] + [max(c["rejection"]) for c in result["curves"].values()]) * 1.05 + 1e-3
    panels = []
    for k, (label, curve) in enumerate(result["curves"].items()):
        traces = [
            Trace(label, curve["alpha"], curve["rejection"], color=COLORS[k]),
            Trace(
                "SpecDecode",
                [curve["alpha"][0], curve["alpha"][-1]],
                [result["spec"]] * 2,
                dash=True,
                color="grey",
                width=1,
            ),
        ]
        if result.get("at_alpha", {}).get(label) is not None:
            traces.append(
                Trace(
                    "chosen α",
                    [result["alpha"]],
                    [result["at_alpha"][label]],
                    kind="points",
                    marker="ring",
                    color="black",
                )
            )
        panels.append(
            Panel(
                traces,
                "α" if k >= 6 else "",
                "rejection rate" if k % 3 == 0 else "",
                title=_panel_title(label, curve, result),
                ylim=(0, top),
            )
        )
    marked = f"; rings at α={result['alpha']:.2f}" if "alpha" in result else ""
    return panels, f"Rejection rate against α: {result['example']}, T={number(result['temperature'])}{marked}"


def rejection_curves_view(
    example: Union[str, Example, None] = None,
    temperature: float = 1.0,
    alpha: Optional[float] = None,
    n_alpha: int = 41,
    *,
    examples=None,
):
    """Widget callback: one panel per variant, rejection rate against alpha; with `alpha`, a marker on
    every curve at that alpha and its rate in the panel's title. Returns `(Figure, result)`: the
    `rejection.rejection_curves` result, plus `alpha` and `at_alpha` (`rejection.rejection_at`) if given."""
    result = rejection.rejection_curves(example, temperature, n_alpha, examples=examples)
    if alpha is not None:
        result.update(
            alpha=float(alpha),
            at_alpha=rejection.rejection_at(example, alpha, temperature, examples=examples),
        )
    panels, title = _rejection_panels(result)
    return to_plotly(panels, title, cols=3, height=650, shared_y=True), result


def rejection_curves_figure(result: dict):
    """Static twin of `rejection_curves_view`, from its result (or `rejection.rejection_curves`'); returns the
    figure."""
    panels, title = _rejection_panels(result)
    return to_matplotlib(panels, title, legend="first", cols=3, shared_y=True)


def _lemma3_panels(rows: Sequence[dict]) -> Tuple[List[Panel], str]:
    left, right = [], []
    for k, name in enumerate(dict.fromkeys(row["example"] for row in rows)):
        mine = [row for row in rows if row["example"] == name]
        x = [row["predicted"] for row in mine]
        bars = [2 * row["stderr"] for row in mine]
        hover = [f"{name}<br>r={row['r']:g}, z={row['z']:+.2f}" for row in mine]
        left.append(
            Trace(
                name,
                x,
                [row["empirical"] for row in mine],
                kind="points",
                error=bars,
                color=COLORS[k],
                hover=hover,
            )
        )
        right.append(
            Trace(
                name,
                x,
                [row["empirical"] - row["predicted"] for row in mine],
                kind="points",
                error=bars,
                color=COLORS[k],
                hover=hover,
            )
        )
    left.append(Trace("Lemma 3: r·D_TV", [0, 1], [0, 1], dash=True, color="grey", width=1))
    draws = sorted({row["n"] for row in rows})
    title = (
        f"Lemma 3 by simulation: verification.verify_draft on {', '.join(map(str, draws))} drafts per point"
    )
    return [
        Panel(left, "r · D_TV(p, q)", "simulated rejection rate", title="simulated against predicted"),
        Panel(
            right,
            "r · D_TV(p, q)",
            "simulated − predicted",
            title="difference, ±2 standard errors",
            hlines=[(0.0, "")],
        ),
    ], title


def lemma3_view(rows: Sequence[dict]):
    """Plotly: simulated against predicted rejection (left) and their difference with ±2 se bars (right)."""
    panels, title = _lemma3_panels(rows)
    return to_plotly(panels, title, height=430)


def lemma3_figure(rows: Sequence[dict]):
    """Static twin of `lemma3_view`; returns the figure."""
    panels, title = _lemma3_panels(rows)
    return to_matplotlib(panels, title, legend="first")
