"""Notebook 09: what a block of k tokens costs here, the speed-up it allows, and where speculation pays.

`roofline_panels` draws a call of k rows against its two floors, reading the weights and doing their
arithmetic (`models.kernel_paths.roofline_seconds`), with each kernel path's measured seconds. Every
other number comes from `decoding.speed_runs` (`block_costs`, `what_if`: the block-cost model of a
`calibration.Calibration`); this module only draws. `block_cost_panels` gives the two panels of the measured
machine (t_p(k) / t_p(1) against k; predicted speed-up against gamma beside the textbook curve, with measured
points), drawn `to_plotly` or `to_matplotlib`. `what_if_view(acceptance, cost_ratio, calibration=...)` is the
widget callback of the sliders: the same verifier cost curve with another drafter cost and acceptance, and the
acceptance above which speculation starts to pay, against the cost ratio. `batch_speed_panels` draws
`benchmarks/batch_speed.py`'s table: tokens per second against the batch size, measured beside the block-cost
model's prediction, and speculation's speed-up over the verifier at each batch size.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..decoding.calibration import Calibration
from ..decoding.speed_runs import block_costs, what_if
from .widgets import COLORS, number
from .panels import Panel, Trace, to_matplotlib, to_plotly, wrap

__all__ = [
    "roofline_panels",
    "roofline_figure",
    "roofline_view",
    "block_cost_panels",
    "block_cost_figure",
    "block_cost_view",
    "what_if_panels",
    "what_if_view",
    "what_if_figure",
    "describe_what_if",
    "batch_speed_panels",
    "batch_speed_figure",
]

HERE, TEXTBOOK, MEASURED, AUTO = (
    "this machine (block-cost model)",
    "textbook (t_p(k) = t_p(1))",
    "measured",
    "gamma='auto'",
)


def roofline_panels(
    roofline: Mapping, measured: Mapping[str, Mapping[int, float]], *, chosen: Optional[str] = None
) -> List[Panel]:
    """Two panels: a call of k rows against the two floors of `models.kernel_paths.roofline_seconds`
    (reading the weights; their arithmetic) with each path's measured seconds, and each path's
    t(k) / t(1) with the line 1 (a block that costs what a token costs). `measured` maps a path to
    {k: seconds}, all on the same layers as `roofline`."""
    ks = [int(k) for k in roofline["k"]]
    floors = [
        Trace(
            "reading the weights (bytes / bandwidth)", ks, roofline["memory_s"], dash=True, color=COLORS[2]
        ),
        Trace(
            "their arithmetic (2 N k / peak FLOP/s)", ks, roofline["compute_s"], dash="dot", color=COLORS[5]
        ),
    ]
    paths, ratios = [], []
    for i, (path, seconds) in enumerate(measured.items()):
        name = f"{path} (chosen)" if path == chosen else path
        points = sorted((int(k), float(v)) for k, v in seconds.items())
        color = COLORS[i % len(COLORS)]
        paths.append(
            Trace(name, [k for k, _ in points], [v * 1e3 for _, v in points], kind="curve", color=color)
        )
        ratios.append(
            Trace(
                name, [k for k, _ in points], [v / points[0][1] for _, v in points], kind="curve", color=color
            )
        )
    floors = [Trace(t.name, t.x, [v * 1e3 for v in t.y], dash=t.dash, color=t.color) for t in floors]
    ridge = float(roofline["ridge_k"])
    top = max(ks)
    return [
        Panel(
            floors + paths,
            xlabel="k, rows in one call",
            ylabel="milliseconds per call",
            title=f"Bytes against arithmetic: the ridge at k* = {number(ridge)} rows",
            vlines=[(ridge, "ridge")] if ridge <= top else [],
        ),
        Panel(
            ratios,
            xlabel="k, rows in one call",
            ylabel="t(k) / t(1)",
            title="A block should cost what a token costs below the ridge",
            hlines=[(1.0, "t(k) = t(1)")],
        ),
    ]


def roofline_figure(roofline: Mapping, measured: Mapping[str, Mapping[int, float]], title: str, **options):
    """Static twin of `roofline_view` (matplotlib), for `tl.savefig`."""
    return to_matplotlib(roofline_panels(roofline, measured, **options), wrap(title, 95))


def roofline_view(roofline: Mapping, measured: Mapping[str, Mapping[int, float]], title: str, **options):
    """The interactive figure of `roofline_panels` (plotly)."""
    return to_plotly(roofline_panels(roofline, measured, **options), title)


def block_cost_panels(
    calibration: Calibration,
    acceptance: float,
    *,
    measured: Optional[Mapping[int, float]] = None,
    auto: Optional[Tuple[float, float]] = None,
    max_gamma: Optional[int] = None,
) -> List[Panel]:
    """Two panels: the verifier's cost of scoring k tokens relative to one (and the drafter's step, c),
    and the predicted speed-up against gamma at `acceptance` on this machine and in the textbook.

    `measured` maps gamma to a measured speed-up (points); `auto` is `(mean gamma, speed-up)` of gamma="auto".
    """
    n = block_costs(calibration, acceptance, max_gamma)
    c, ks, gammas = n["cost_ratio"], n["ks"], n["gammas"]
    costs = Panel(
        [
            Trace("t_p(k) / t_p(1), measured", ks, n["relative_cost"], kind="curve", color=COLORS[0]),
            Trace(TEXTBOOK, ks, [1.0] * len(ks), dash=True, color=COLORS[2]),
        ],
        xlabel="k, tokens scored in one verifier call",
        ylabel="time relative to scoring 1 token",
        title=f"Scoring k tokens (drafter step: c = {number(c)})",
        hlines=[(c, "drafter step t_q / t_p(1)")],
    )
    traces = [
        Trace(HERE, gammas, n["speedup_here"], kind="curve", color=COLORS[1]),
        Trace(TEXTBOOK, gammas, n["speedup_textbook"], kind="curve", dash=True, color=COLORS[2]),
    ]
    if measured:
        points = sorted(measured.items())
        traces.append(
            Trace(MEASURED, [g for g, _ in points], [s for _, s in points], kind="points", color=COLORS[3])
        )
    if auto is not None:
        traces.append(Trace(AUTO, [auto[0]], [auto[1]], kind="points", color=COLORS[4], labels=["auto"]))
    best = n["best_gamma"]
    speed = Panel(
        traces,
        xlabel="gamma (drafts per block; 0 = verifier alone)",
        ylabel="speed-up over the verifier",
        title=f"a = {number(acceptance)}: best gamma here {best}",
        hlines=[(1.0, "verifier alone")],
        vlines=[(best, f"best gamma = {best}")],
    )
    return [costs, speed]


def block_cost_figure(calibration: Calibration, acceptance: float, **options):
    """Static twin of `block_cost_view` (matplotlib), for `tl.savefig`."""
    return to_matplotlib(block_cost_panels(calibration, acceptance, **options), wrap(_title(calibration), 95))


def block_cost_view(calibration: Calibration, acceptance: float, **options):
    """The interactive figure of `block_cost_panels` (plotly)."""
    return to_plotly(block_cost_panels(calibration, acceptance, **options), _title(calibration))


def _title(calibration: Calibration) -> str:
    dtypes = "/".join(dict.fromkeys(calibration.dtypes.values())) or "?"
    return (
        f"When does speculation pay? {calibration.drafter} drafting for {calibration.verifier} "
        f"({calibration.device}, {dtypes}, {calibration.threads} threads)"
    )


# ---- the sliders: another acceptance, another drafter (numbers: `speed_runs.what_if`) ----------


def what_if_panels(numbers: Dict) -> List[Panel]:
    a, c, gammas = numbers["acceptance"], numbers["cost_ratio"], numbers["gammas"]
    speed = Panel(
        [
            Trace(HERE, gammas, numbers["speedup_here"], kind="curve", color=COLORS[1]),
            Trace(TEXTBOOK, gammas, numbers["speedup_textbook"], kind="curve", dash=True, color=COLORS[2]),
        ],
        xlabel="gamma (0 = verifier alone)",
        ylabel="predicted speed-up",
        title=f"Speed-up at a = {number(a)}, c = {number(c)}",
        hlines=[(1.0, "verifier alone")],
    )

    def line(values: Sequence[Optional[float]]):
        pairs = [(x, y) for x, y in zip(numbers["cost_ratios"], values) if y is not None]
        return [x for x, _ in pairs], [y for _, y in pairs]

    here_x, here_y = line(numbers["break_even_here"])
    flat_x, flat_y = line(numbers["break_even_textbook"])
    pays = Panel(
        [
            Trace(HERE, here_x, here_y, color=COLORS[1]),
            Trace(TEXTBOOK, flat_x, flat_y, dash=True, color=COLORS[2]),
            Trace("your setting (a, c)", [c], [a], kind="points", color=COLORS[3]),
        ],
        xlabel="c = t_q / t_p(1)",
        ylabel="acceptance a",
        ylim=(0.0, 1.02),
        title="Speculation pays above the line (no line: never)",
    )
    return [speed, pays]


def what_if_view(
    acceptance: float, cost_ratio: float, *, calibration: Calibration, max_gamma: Optional[int] = None
):
    """Widget callback for the a and c sliders: `(plotly Figure, numbers)`."""
    numbers = what_if(acceptance, cost_ratio, calibration, max_gamma=max_gamma)
    return to_plotly(what_if_panels(numbers), _what_if_title(numbers)), numbers


def what_if_figure(acceptance: float, cost_ratio: float, calibration: Calibration, **options):
    """Static twin of `what_if_view`."""
    numbers = what_if(acceptance, cost_ratio, calibration, **options)
    return to_matplotlib(what_if_panels(numbers), _what_if_title(numbers))


def _what_if_title(numbers: Dict) -> str:
    # the setting is in the title: where no gamma pays, the best speed-ups stay 1x whatever a and c are
    return (
        f"What if a = {numbers['acceptance']:.2f}, c = {numbers['cost_ratio']:.2f}: best gamma here "
        f"{numbers['best_gamma_here']} ({number(numbers['best_speedup_here'])}x), "
        f"textbook {numbers['best_gamma_textbook']} ({number(numbers['best_speedup_textbook'])}x)"
    )


def describe_what_if(numbers: Dict) -> str:
    """One sentence under the slider view."""
    here = numbers["best_gamma_here"]
    verdict = (
        "do not speculate: the verifier alone is fastest"
        if here == 0
        else f"speculate with gamma = {here}: {number(numbers['best_speedup_here'])}x"
    )
    return (
        f"At a = {number(numbers['acceptance'])} and c = {number(numbers['cost_ratio'])}, "
        f"on this machine: {verdict}; "
        "with blocks as cheap as one step (the textbook) "
        f"gamma = {numbers['best_gamma_textbook']} would give "
        f"{number(numbers['best_speedup_textbook'])}x."
    )


def batch_speed_panels(runs) -> List[Panel]:
    """Two panels from `speed_runs.predict_batch_speed`'s table (or the `runs` of `batch_speed`'s JSON):
    tokens per second against the batch size per gamma (measured points, predicted dashed lines; gamma 0 is
    the verifier alone), and each gamma's speed-up over the verifier alone at the same batch size."""
    import pandas as pd

    table = pd.DataFrame(list(runs) if not isinstance(runs, pd.DataFrame) else runs)
    if table.empty or not {"batch_size", "gamma", "tokens_per_s", "predicted_tokens_per_s"} <= set(
        table.columns
    ):
        raise ValueError(
            "runs: pass speed_runs.predict_batch_speed(...)'s table (or the 'runs' of "
            "data/benchmarks/batch_speed_<profile>_cpu.json)."
        )
    median = (
        table.groupby(["gamma", "batch_size"])[["tokens_per_s", "predicted_tokens_per_s"]]
        .median()
        .reset_index()
    )
    rates, speedups = [], []
    plain = median[median.gamma == 0].set_index("batch_size")
    for i, (gamma, rows) in enumerate(median.groupby("gamma")):
        name = "verifier alone" if gamma == 0 else f"gamma = {gamma}"
        color = COLORS[i % len(COLORS)]
        sizes = rows.batch_size.tolist()
        rates += [
            Trace(f"{name}, measured", sizes, rows.tokens_per_s.tolist(), kind="points", color=color),
            Trace(f"{name}, predicted", sizes, rows.predicted_tokens_per_s.tolist(), dash=True, color=color),
        ]
        if gamma:
            speedups += [
                Trace(
                    f"{name}, measured",
                    sizes,
                    (rows.tokens_per_s.values / plain.loc[sizes, "tokens_per_s"].values).tolist(),
                    kind="points",
                    color=color,
                ),
                Trace(
                    f"{name}, predicted",
                    sizes,
                    (
                        rows.predicted_tokens_per_s.values / plain.loc[sizes, "predicted_tokens_per_s"].values
                    ).tolist(),
                    dash=True,
                    color=color,
                ),
            ]
    return [
        Panel(
            rates,
            xlabel="batch size B (rows per forward pass)",
            ylabel="tokens per second (all rows)",
            title="Throughput against batch size",
            xlog=True,
        ),
        Panel(
            speedups,
            xlabel="batch size B",
            ylabel="speed-up over the verifier alone at the same B",
            title="Where speculation stops paying",
            xlog=True,
            hlines=[(1.0, "verifier alone")],
        ),
    ]


def batch_speed_figure(runs, title: str = "Speculation in a batch: measured against the block-cost model"):
    """Static twin of `batch_speed_panels` (matplotlib), for `tl.savefig`."""
    return to_matplotlib(batch_speed_panels(runs), wrap(title, 95))
