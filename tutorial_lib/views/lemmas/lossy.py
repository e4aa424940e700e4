"""Views of notebook 04 (Lemma 2): lossy speculative sampling against Algorithm 4 in one context, and beta = 1
against the normalising beta; they draw, the numbers come from `tutorial_lib.lessons.lossy`. Every `*_view`
function is a widget callback returning a plotly figure; every `*_figure` function returns the matplotlib twin
for `tl.savefig`, both drawn from one list of `panels.Panel` records.
"""

from __future__ import annotations

from typing import Optional

import plotly.graph_objects as go

from ...lessons import lossy
from ...toy.examples import context_name, default_world
from ...toy.toyworld import ToyWorld
from ..widgets import COLORS, number
from ..panels import Panel, Trace, to_matplotlib, to_plotly, wrap

__all__ = [
    "lemma2_view",
    "lemma2_figure",
    "beta_view",
    "beta_figure",
]

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
