"""Views of the lemma notebooks (03: Lemma 1, 04: Lemma 2, 05: Lemma 4): they draw, the maths is elsewhere.

The numbers come from `tutorial_lib.lessons.deferral_risks` (risk lines, switch points, risks summed over
contexts, miscalibration), `tutorial_lib.lessons.lossy` (Lemma 2 from its definition, beta = 1 against Lossy*)
and `tutorial_lib.lessons.tradeoff` (Figure 1 and the cost-quality curves). Every `*_view` function is a
widget callback returning a plotly figure; every `*_figure` function returns the matplotlib twin for
`tl.savefig`. Both are drawn from one list of `widgets.Panel` records, so they always show the same numbers.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import ipywidgets
import plotly.graph_objects as go

from ..lessons import deferral_risks as dr
from ..lessons import lossy, tradeoff
from ..toy.examples import context_name, context_options, default_world
from ..toy.toyworld import ToyWorld
from .widgets import COLORS, Panel, Trace, interactive, number, to_matplotlib, to_plotly, wrap

__all__ = [
    "lemma1_view",
    "lemma1_figure",
    "lemma4_view",
    "lemma4_figure",
    "context_risk_controls",
    "context_risk_steps",
    "total_risk_view",
    "total_risk_figure",
    "miscalibration_figure",
    "figure1_view",
    "figure1_figure",
    "lemma2_view",
    "lemma2_figure",
    "beta_view",
    "beta_figure",
    "tradeoff_view",
    "tradeoff_live",
    "format_tradeoff_summary",
    "tradeoff_figure",
]

_OPTIMAL_STYLE = dict(width=7.0, color="#b8b8b8")


def _verdict(defers: bool) -> str:
    return "defers" if defers else "keeps q"


# --------------------------------------------------------------------------------------------
# Lemmas 1 and 4: one context, and summed over contexts
# --------------------------------------------------------------------------------------------


def _context_panels(world, lemma, context_index, alpha, loss) -> Tuple[List[Panel], str]:
    c = dr.context_risk_lines(world or default_world(), lemma, context_index, alpha, loss)
    alphas, alpha = c["alphas"], c["alpha"]
    cost = "alpha" if lemma == 1 else "alpha * D_TV"
    # The optimal rule is drawn first, wide and pale, so the lines it coincides with stay visible on top.
    traces = [
        Trace(f"optimal rule (Lemma {lemma})", alphas, c["optimal"], **_OPTIMAL_STYLE),
        Trace("keep q: R(0)", alphas, c["keep"]),
        Trace(f"defer to p: R(1) (slope {c['weight']:.2f})", alphas, c["defer"]),
    ]
    traces += [Trace(name, alphas, risk, dash=True) for name, risk in c["plugins"].items()]
    low, high = dr.LEMMA_ALPHA_RANGES[lemma][loss]
    vlines = [(alpha, f"alpha = {alpha:.2f}")]
    for label, x in [("optimal switch", c["optimal_switch"])] + [
        (f"{k} switch", v) for k, v in c["plugin_switch"].items()
    ]:
        if x is not None and low <= x <= high:
            vlines.append((x, label))
    title = (
        f"Lemma {lemma}, context {c['name']}, {dr.LOSS_NAMES[loss]}: at alpha = {alpha:.2f} the optimal rule "
        f"{_verdict(c['optimal_defers'])}; "
        + ", ".join(f"{k} {_verdict(v)}" for k, v in c["decisions"].items())
    )
    panel = Panel(
        traces, xlabel="alpha", ylabel=f"deferral risk (expected loss + {cost} if deferred)", vlines=vlines
    )
    return [panel], title


def lemma1_view(
    context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
) -> go.Figure:
    """Equation (3) for one context as `alpha` moves: R(0), R(1), the optimal rule and the Chow and Diff
    plug-ins."""
    return to_plotly(*_context_panels(world, 1, context_index, alpha, loss))


def lemma1_figure(
    context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
):
    panels, title = _context_panels(world, 1, context_index, alpha, loss)
    return to_matplotlib(panels, wrap(title))


def lemma4_view(
    context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
) -> go.Figure:
    """Equation (8) for one context as `alpha` moves: R(1) now rises with slope D_TV(p, q); the OPT
    plug-in."""
    return to_plotly(*_context_panels(world, 4, context_index, alpha, loss))


def lemma4_figure(
    context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
):
    panels, title = _context_panels(world, 4, context_index, alpha, loss)
    return to_matplotlib(panels, wrap(title))


#: What `alpha` costs in each lemma's risk: a deferral (equation 3) or a rejection (equation 8).
_ALPHA_COSTS = {1: "deferral", 4: "rejection"}


def context_risk_controls(
    lemma: int, context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
):
    """One context's risks with a menu of contexts and an `alpha` slider over the lemma's range for `loss`
    (notebooks 03 and 05), wired to `lemma1_view` or `lemma4_view`, which stay plain functions of the
    controls' values. Returns the box to display."""
    view = {1: lemma1_view, 4: lemma4_view}[dr.check_lemma(lemma)]
    world = world or default_world()
    dr.check_lemma_alpha(lemma, loss, alpha)
    low, high = dr.LEMMA_ALPHA_RANGES[lemma][loss]
    return interactive(
        view,
        context_index=ipywidgets.Dropdown(
            options=context_options(world), value=context_index, description="context"
        ),
        alpha=ipywidgets.FloatSlider(
            value=alpha, min=low, max=high, step=0.01, description=f"alpha (cost of a {_ALPHA_COSTS[lemma]})"
        ),
        loss=ipywidgets.fixed(loss),
        world=ipywidgets.fixed(world),
    )


def context_risk_steps(
    lemma: int, context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None
):
    """The figure of `context_risk_controls` with its alpha slider drawn in advance as plotly slider steps
    (`slider_steps.steps_figure`, 21 values over the lemma's range): it moves without a kernel, on a
    static page too."""
    from .slider_steps import slider_values, steps_figure

    view = {1: lemma1_view, 4: lemma4_view}[dr.check_lemma(lemma)]
    world = world or default_world()
    dr.check_lemma_alpha(lemma, loss, alpha)
    low, high = dr.LEMMA_ALPHA_RANGES[lemma][loss]
    return steps_figure(
        view,
        "alpha",
        slider_values(low, high),
        active=alpha,
        label=f"alpha (cost of a {_ALPHA_COSTS[lemma]})",
        context_index=context_index,
        loss=loss,
        world=world,
    )


def _total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha):
    totals = dr.reshaped_total_risks(world, lemma, loss, drafter_sharpness, verifier_sharpness, n_alpha)
    alphas, here, built = totals["alpha"], totals["here"]["risk"], totals["built"]["risk"]
    optimal = f"optimal (Lemma {lemma})"
    styles = {optimal: _OPTIMAL_STYLE, "Lemma 1's optimal rule": dict(dash=True, color="#000000")}
    order = [optimal] + [k for k in here if k != optimal]  # optimal first: drawn underneath
    left = Panel(
        [Trace(k, alphas, here[k], **styles.get(k, {})) for k in order],
        xlabel="alpha",
        ylabel="per-token deferral risk",
        title="risk with prefixes from P",
    )
    excess = [Trace(optimal, alphas, [0.0] * len(alphas), **_OPTIMAL_STYLE)]
    here_excess, built_excess = dr.excess_risks(here, optimal), dr.excess_risks(built, optimal)
    for name in (dr.PLUGIN_NAMES[r] for r in dr.PLUGINS[lemma]):
        excess.append(Trace(name, alphas, here_excess[name]))
        if totals["reshaped"]:
            excess.append(Trace(f"{name}, models as built", alphas, built_excess[name], dash=True))
    right = Panel(
        excess, xlabel="alpha", ylabel="risk above the optimal rule", title="excess risk of the plug-ins"
    )
    title = (
        f"Lemma {lemma}, summed over contexts ({dr.LOSS_NAMES[loss]}); "
        f"drafter sharpness {number(drafter_sharpness)}, "
        f"verifier sharpness {number(verifier_sharpness)}"
    )
    return [left, right], title


def total_risk_view(
    lemma: int,
    loss: str = "zero_one",
    drafter_sharpness: float = 1.0,
    verifier_sharpness: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
    n_alpha: int = 41,
) -> go.Figure:
    """Risk summed over contexts against `alpha` (left) and the plug-ins' excess over the optimal rule
    (right), in `world` with its drafter / verifier sharpened (> 1) or flattened (< 1); dashed: as built."""
    return to_plotly(*_total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha))


def total_risk_figure(
    lemma: int,
    loss: str = "zero_one",
    drafter_sharpness: float = 1.0,
    verifier_sharpness: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
    n_alpha: int = 41,
):
    return to_matplotlib(*_total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha))


def miscalibration_figure(sweep: dict, loss: str = "zero_one"):
    """Mean excess risk of the plug-ins (and the optimal rule's shift) against each model's sharpness
    (`deferral_risks.miscalibration_sweep`)."""
    panels = []
    for model, rows in sweep.items():
        xs = list(rows)
        names = [name for name in next(iter(rows.values())) if name != "optimal_shift"]
        traces = [Trace(name, xs, [rows[s][name] for s in xs], kind="curve") for name in names]
        traces.insert(
            0,
            Trace(
                "optimal rule: change of its risk",
                xs,
                [rows[s]["optimal_shift"] for s in xs],
                kind="curve",
                **_OPTIMAL_STYLE,
            ),
        )
        panels.append(
            Panel(
                traces,
                xlabel=f"{model} sharpness (log scale)",
                ylabel="mean excess risk over the optimal rule",
                title=f"{model} flattened (< 1) or sharpened (> 1)",
                xlog=True,
                vlines=[(1.0, "as built")],
            )
        )
    return to_matplotlib(
        panels, f"Lemma 1 ({dr.LOSS_NAMES[loss]}): miscalibration moves the plug-ins, not the optimal rule"
    )


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
# Lemma 2: lossy speculative sampling against Algorithm 4
# --------------------------------------------------------------------------------------------


def _lemma2_panels(world, context_index, alpha, beta, temperature):
    world = world or default_world()
    c = lossy.lemma2_context(world, context_index, alpha, beta, temperature)
    # <bos> is never predicted (q = p = 0), so its column would only show the "never drafted" convention.
    keep, labels = slice(1, None), world.tokens[1:]
    models = Panel(
        [
            Trace("q (drafter)", labels, c["q"][keep], kind="bar"),
            Trace("p (verifier)", labels, c["p"][keep], kind="bar"),
        ],
        xlabel="token",
        ylabel="probability",
        title="the two models",
    )
    accept = Panel(
        [
            Trace(
                "Tran-Thien: min(1, p / ((1-alpha) q))", labels, c["tran_thien_acceptance"][keep], kind="bar"
            ),
            Trace(
                "Algorithm 4: min(1, pi / q)",
                labels,
                c["algorithm4_acceptance"][keep],
                kind="points",
                color="#000000",
            ),
        ],
        xlabel="token",
        ylabel="acceptance probability",
        title="acceptance of each token as a draft",
        ylim=(0.0, 1.35),
    )
    residual_traces = [
        Trace("Tran-Thien: norm(max(0, p / beta - q))", labels, c["tran_thien_residual"][keep], kind="bar")
    ]
    if c["rejection"] > 0:
        residual_traces.append(
            Trace(
                "Algorithm 4: norm(max(0, pi - q))",
                labels,
                c["algorithm4_residual"][keep],
                kind="points",
                color="#000000",
            )
        )
    residual = Panel(
        residual_traces,
        xlabel="token",
        ylabel="probability",
        ylim=(0.0, 1.35),
        title="residual" + ("" if c["rejection"] > 0 else " (never reached)"),
    )
    beta_text = f"{float(c['beta']):.3g}" + (" (normalising)" if isinstance(beta, str) else "")
    title = (
        f"Lemma 2, context {context_name(world, c['table'], c['row'])}, alpha = {c['alpha']:.2f}, "
        f"beta = {beta_text}, "
        f"T = {number(temperature)}: rejection probability {c['rejection']:.3f}"
    )
    return [models, accept, residual], title


def lemma2_view(
    context_index: int,
    alpha: float,
    beta="normalize",
    temperature: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
) -> go.Figure:
    """Acceptance per token and residual of lossy speculative sampling (bars) and of Algorithm 4 on the
    lossy target (black dots) for one context; they coincide (Lemma 2)."""
    return to_plotly(*_lemma2_panels(world, context_index, alpha, beta, temperature))


def lemma2_figure(
    context_index: int,
    alpha: float,
    beta="normalize",
    temperature: float = 1.0,
    *,
    world: Optional[ToyWorld] = None,
):
    panels, title = _lemma2_panels(world, context_index, alpha, beta, temperature)
    return to_matplotlib(panels, wrap(title), legend="each")


def _beta_panels(world, alpha, context_index, temperature):
    world = world or default_world()
    c = lossy.beta_context(world, alpha, context_index, temperature)
    notes = "; ".join(f"{label}: TV {d['tv']:.3f}, KL {d['kl']:.3f}" for label, d in c["distances"].items())
    panel = Panel(
        [Trace(k, world.tokens, v, kind="bar") for k, v in c["laws"].items()],
        xlabel="token",
        ylabel="probability",
        title=notes,
    )
    title = (
        f"context {context_name(world, c['table'], c['row'])}, alpha = {c['alpha']:.2f}, "
        f"T = {number(temperature)}: "
        f"acceptance {c['acceptance']:.3f} for both betas"
    )
    return [panel], title


def beta_view(
    alpha: float, context_index: int, temperature: float = 1.0, *, world: Optional[ToyWorld] = None
) -> go.Figure:
    """One context: p, q and the law Algorithm 4 emits with `beta = 1` and with the normalising beta."""
    return to_plotly(*_beta_panels(world, alpha, context_index, temperature))


def beta_figure(sweep: dict, temperature: float = 1.0):
    """Left: acceptance rate, distance to p (TV and KL) against alpha for both betas (they overlap);
    right: the differences beta = 1 minus Lossy*, which show which of them beta moves at all
    (`lossy.beta_sweep`)."""
    one, star = [k for k in sweep if k != "alpha"][:2]
    palette = COLORS
    names = {
        "acceptance_rate": "acceptance rate",
        "tv_to_p": "D_TV(emitted, p)",
        "kl_to_p": "KL(emitted || p)",
        "loss": "0-1 loss of generated text",
    }
    # Lossy*'s curves are thin black dashes on top of beta = 1's: where they vanish, beta changed nothing.
    left = Panel(
        [
            Trace(names[m], sweep["alpha"], sweep[one][m], width=3.0, color=palette[i])
            for i, m in enumerate(("acceptance_rate", "tv_to_p", "kl_to_p"))
        ]
        + [
            Trace(f"{star} (dashed)", sweep["alpha"], sweep[star][m], dash=True, width=1.2, color="#000000")
            for m in ("acceptance_rate", "tv_to_p", "kl_to_p")
        ],
        xlabel="alpha",
        ylabel="mean over contexts (prefixes from P)",
        title=f"coloured: {one}; dashed: Lossy*",
    )
    differences = lossy.beta_differences(sweep, one, star)
    right = Panel(
        [
            Trace(names[m], sweep["alpha"], differences[m], kind="curve", color=palette[i])
            for i, m in enumerate(("acceptance_rate", "tv_to_p", "kl_to_p", "loss"))
        ],
        xlabel="alpha",
        ylabel=f"difference ({one}) - (Lossy*)",
        title="what beta changes",
    )
    return to_matplotlib(
        [left, right],
        f"Lossy speculative sampling: beta = 1 against the normalising beta (T = {number(temperature)})",
        legend="each",
    )


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
