"""Views of notebooks 03 (Lemma 1) and 05 (Lemma 4): one context's deferral risks, and the risks summed over
contexts; they draw, the numbers come from `tutorial_lib.lessons.deferral_risks` (risk lines, switch points,
risks summed over contexts, miscalibration). Every `*_view` function is a widget callback returning a plotly
figure; every `*_figure` function returns the matplotlib twin for `tl.savefig`. Both are drawn from one list
of `panels.Panel` records, so they always show the same numbers.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import ipywidgets
import plotly.graph_objects as go

from ...lessons import deferral_risks as dr
from ...toy.examples import context_options, default_world
from ...toy.toyworld import ToyWorld
from ..widgets import interactive, number
from ..panels import Panel, Trace, to_matplotlib, to_plotly, wrap

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
    from ..slider_steps import slider_values, steps_figure

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
