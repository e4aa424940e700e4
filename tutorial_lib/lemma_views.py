r"""Widget callbacks and figures for the lemma notebooks (03: Lemma 1, 04: Lemma 2, 05: Lemma 4).

Lemmas 1 and 4 minimise, for one prefix $x_{<t}$, a risk that is linear in the deferral decision $r$:

$$R(r) = (1 - r)\,\mathbb{E}_P[\ell(x, q_t)] + r\,\big(\mathbb{E}_P[\ell(x, p_t)] + \alpha\,w_t\big),
\qquad w_t = 1 \text{ (eq. 3, Lemma 1)}, \quad w_t = D_{TV}(p_t, q_t) \text{ (eq. 8, Lemma 4)},$$

so the optimal rule defers exactly when $\alpha$ lies below the *switch point*
$\alpha^*_t = (\mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]) / w_t$. A plug-in rule has the same
form with the models' own estimates of the expected losses ($1 - \max q$, $1 - \max p$ for 0-1 loss,
the entropies for log loss), so it switches somewhere else; how far off is a matter of calibration.

Lemma 2: lossy speculative sampling (Tran-Thien) keeps a draft $x \sim q$ with probability
$\min\{1, p(x) / ((1 - \alpha)\,q(x))\}$ and replaces a rejected one from
$\mathrm{norm}(\max\{0, p/\beta - q\})$; here both are written from that definition alone, to be
compared with Algorithm 4 run on the lossy target of `targets`.

The cost-quality trade-off of notebook 05 charges, per verifier call, $\gamma$ drafter steps of cost
$c$ (relative to one verifier call) plus the call itself, so the expected latency per token relative to
running the verifier alone is

$$\text{latency} = \frac{\gamma\,c + 1}{\mathbb{E}[\text{tokens per verifier call}]}.$$

Every `*_view` function is a widget callback returning a plotly figure; every `*_figure` function
returns the matplotlib twin for `tl.savefig`. Both are drawn from one list of `Panel`s, so the
interactive and the static figure always show the same numbers.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import matplotlib.pyplot as plt
import seaborn as sns
import torch
from matplotlib.ticker import NullLocator

from . import lemmas, targets
from .plotting import FIGURE_SIZE, savefig
from .toyworld import ToyWorld

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = [
    "LEMMA_ALPHA_RANGES", "TRADEOFF_METHODS", "Trace", "Panel", "to_plotly", "to_matplotlib", "save",
    "interactive", "default_world", "reshaped_world", "context_options", "default_context", "lemma_alpha_grid",
    "context_risks", "lemma1_view", "lemma1_figure", "lemma4_view", "lemma4_figure",
    "total_risks", "plugin_agreement", "total_risk_view", "total_risk_figure", "brute_force_check",
    "miscalibration_sweep", "miscalibration_figure", "figure1_curves", "figure1_view", "figure1_figure",
    "tran_thien_acceptance", "tran_thien_residual", "lemma2_check", "lemma2_view", "lemma2_figure",
    "beta_sweep", "beta_view", "beta_figure", "expected_latency", "tradeoff_curves", "tradeoff_summary",
    "tradeoff_view", "tradeoff_figure",
]

#: The `alpha` range each lemma's views and sweeps span, per loss. `alpha >= 0` is a cost (the paper's
#: setting); the upper ends cover every switch point of the default toy world (0-1 losses differ by at
#: most 1, log losses by a few nats, and Lemma 4 divides the gap by D_TV <= 1).
LEMMA_ALPHA_RANGES = {
    1: {"zero_one": (0.0, 1.0), "log": (0.0, 3.0)},
    4: {"zero_one": (0.0, 2.0), "log": (0.0, 5.0)},
}

#: Label -> (rule, beta) of the methods notebook 05 compares, in the order they are drawn.
TRADEOFF_METHODS = {
    "SpecDecode": ("spec", 1.0),
    "Lossy (beta = 1)": ("lossy", 1.0),
    "BiLD*": ("bild", 1.0),
    "Chow": ("chow", 1.0),
    "Diff": ("diff", 1.0),
    "OPT": ("opt", 1.0),
    "Token-V1": ("token_v1", 1.0),
    "Token-V2": ("token_v2", 1.0),
    "Token-V3": ("token_v3", 1.0),
}

_PLUGINS = {1: ("chow", "diff"), 4: ("opt",)}
_OPTIMAL_STYLE = dict(width=7.0, color="#b8b8b8")
_PLUGIN_NAMES = {"chow": "Chow plug-in", "diff": "Diff plug-in", "opt": "OPT plug-in"}
_LOSS_NAMES = {"zero_one": "0-1 loss", "log": "log loss"}


# --------------------------------------------------------------------------------------------
# One figure description, two renderers
# --------------------------------------------------------------------------------------------

@dataclass
class Trace:
    """One series: `kind` is "line", "curve" (line with markers), "points" (markers only) or "bar"."""
    name: str
    x: Sequence
    y: Sequence
    kind: str = "line"
    dash: bool = False
    color: Optional[str] = None
    width: float = 1.6
    labels: Optional[Sequence[str]] = None  # text beside each point ("points" only)


@dataclass
class Panel:
    """One set of axes: traces, axis labels, and labelled vertical / horizontal reference lines."""
    traces: List[Trace]
    xlabel: str
    ylabel: str
    title: str = ""
    vlines: List[Tuple[float, str]] = field(default_factory=list)
    hlines: List[Tuple[float, str]] = field(default_factory=list)
    xlog: bool = False
    ylim: Optional[Tuple[float, float]] = None


def _colors(panels: Sequence[Panel]) -> Dict[str, str]:
    """One colour per trace name across all panels, so a shared legend is right for every panel."""
    names = list(dict.fromkeys(t.name for panel in panels for t in panel.traces if t.color is None))
    # The colour-blind palette has 10 colours and would repeat them beyond that.
    palette = sns.color_palette("colorblind" if len(names) <= 10 else "husl", max(len(names), 1)).as_hex()
    return dict(zip(names, palette))


def _floats(values) -> list:
    return [float(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]


def _categorical(values) -> bool:
    return any(isinstance(v, str) for v in values)


def to_plotly(panels: Sequence[Panel], title: str = "") -> "go.Figure":
    """The interactive figure: one subplot per panel, one legend entry per trace name."""
    # Imported here so that `import tutorial_lib` does not pay for plotly.
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    colors = _colors(panels)
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.title for p in panels])
    shown = set()
    for col, panel in enumerate(panels, start=1):
        for t in panel.traces:
            color = t.color or colors[t.name]
            common = dict(name=t.name, legendgroup=t.name, showlegend=t.name not in shown)
            shown.add(t.name)
            if t.kind == "bar":
                fig.add_trace(go.Bar(x=list(t.x), y=_floats(t.y), marker_color=color, **common), row=1, col=col)
                continue
            mode = {"line": "lines", "curve": "lines+markers", "points": "markers+text" if t.labels else "markers"}[t.kind]
            fig.add_trace(go.Scatter(
                x=list(t.x) if _categorical(t.x) else _floats(t.x), y=_floats(t.y), mode=mode,
                text=list(t.labels) if t.labels else None,
                textposition="top center", marker=dict(size=9 if t.kind == "points" else 5, color=color),
                line=dict(color=color, width=t.width, dash="dash" if t.dash else "solid"), **common), row=1, col=col)
        for x, label in panel.vlines:
            fig.add_vline(x=float(x), line_dash="dot", line_color="grey", annotation_text=label,
                          annotation_font_size=10, row=1, col=col)
        for y, label in panel.hlines:
            fig.add_hline(y=float(y), line_dash="dash", line_color="grey", annotation_text=label,
                          annotation_position="bottom left", annotation_font_size=10, row=1, col=col)
        fig.update_xaxes(title_text=panel.xlabel, type="log" if panel.xlog else "linear", row=1, col=col)
        fig.update_yaxes(title_text=panel.ylabel, range=list(panel.ylim) if panel.ylim else None, row=1, col=col)
    fig.update_layout(title=title, template="plotly_white", barmode="group", height=480,
                      margin=dict(t=90), legend=dict(font=dict(size=11)))
    return fig


def to_matplotlib(panels: Sequence[Panel], title: str = "", legend: str = "right"):
    """The static figure for `tl.savefig`. `legend="right"` draws one shared legend beside the last
    panel (it survives `tight_layout`, which a figure-level legend would not); `"each"` one per panel."""
    colors = _colors(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=FIGURE_SIZE, squeeze=False)
    handles: Dict[str, object] = {}
    for ax, panel in zip(axes[0], panels):
        own: Dict[str, object] = {}  # this panel's legend entries, one per name
        bars = [t for t in panel.traces if t.kind == "bar"]
        for t in panel.traces:
            color = t.color or colors[t.name]
            if t.kind == "bar":
                k, width = bars.index(t), 0.8 / len(bars)
                xs = [j + (k - (len(bars) - 1) / 2) * width for j in range(len(t.x))]
                h = ax.bar(xs, _floats(t.y), width=width, color=color, label=t.name)
                ax.set_xticks(range(len(t.x)))
                ax.set_xticklabels(list(t.x), rotation=60, ha="right", fontsize=7)
            else:
                style = dict(linestyle="none" if t.kind == "points" else ("--" if t.dash else "-"),
                             marker="o" if t.kind in ("curve", "points") else None,
                             markersize=7 if t.kind == "points" else 3)
                # Token labels sit at 0..V-1, where the bars are centred.
                xs = list(range(len(t.x))) if _categorical(t.x) else _floats(t.x)
                (h,) = ax.plot(xs, _floats(t.y), color=color, linewidth=t.width, label=t.name, **style)
                for x, y, text in zip(xs, _floats(t.y), t.labels or []):
                    ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, color=color)
            handles.setdefault(t.name, h)
            own.setdefault(t.name, h)
        for x, label in panel.vlines:
            ax.axvline(float(x), color="grey", linestyle=":", linewidth=1)
            ax.annotate(label, (float(x), 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        ha="right", va="top", fontsize=7, color="dimgrey")
        for y, label in panel.hlines:
            ax.axhline(float(y), color="grey", linestyle="--", linewidth=1)
            ax.annotate(label, (0.01, float(y)), xycoords=("axes fraction", "data"), textcoords="offset points",
                        xytext=(0, 3), fontsize=7, color="dimgrey")
        if panel.xlog:
            # Ticks at the plotted values, written plainly (0.5, 1, 2), not as powers of ten.
            ax.set_xscale("log")
            ticks = sorted({x for t in panel.traces for x in _floats(t.x)})
            ax.set_xticks(ticks, [f"{x:g}" for x in ticks])
            ax.xaxis.set_minor_locator(NullLocator())
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        ax.set_xlabel(panel.xlabel, fontsize=9)
        ax.set_ylabel(panel.ylabel, fontsize=9)
        ax.set_title(panel.title, fontsize=9)
        ax.tick_params(labelsize=8)
        if legend == "each":
            ax.legend(list(own.values()), list(own.keys()), fontsize=6 if len(panels) > 2 else 7,
                      loc="upper left" if panel.ylim else "best")
    if legend == "right":
        axes[0, -1].legend(list(handles.values()), list(handles.keys()), loc="upper left",
                           bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def save(fig, name: str):
    """`tl.savefig` and close: the notebook shows the interactive twin, the PNG goes to `figures/`."""
    path = savefig(fig, name)
    plt.close(fig)
    return path


def interactive(view, **controls):
    """`ipywidgets.interactive(view, **controls)`-style wiring for a `view` that returns one figure.

    It runs on `explore.live_view`, which writes the figure straight into its `Output` widget (plain
    `interactive` stalls now and then under papermill/nbclient, jupyter/nbclient#312). Pass fixed
    arguments with `ipywidgets.fixed`; an unlabelled control is labelled with its argument's name. A
    `ValueError` from `view` shows as text under the controls. Returns the box to display.
    """
    import ipywidgets

    from .explore import live_view

    fixed = {name: w.value for name, w in controls.items() if isinstance(w, ipywidgets.fixed)}
    live = {name: w for name, w in controls.items() if not isinstance(w, ipywidgets.fixed)}
    for name, w in live.items():
        if not w.description:
            w.description = name
    return live_view(lambda **kwargs: (view(**kwargs), None), live, **fixed)


# --------------------------------------------------------------------------------------------
# Worlds, contexts, input checks
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def _world_from(settings: Tuple[Tuple[str, object], ...]) -> ToyWorld:
    return ToyWorld(**dict(settings))


def default_world() -> ToyWorld:
    """The package's default `ToyWorld` (built once per process)."""
    return _world_from(())


def _key(world: ToyWorld) -> Tuple[Tuple[str, object], ...]:
    return tuple(sorted(world.settings.items()))


def reshaped_world(world: Optional[ToyWorld] = None, **changes) -> ToyWorld:
    """`world` with some settings changed (for example `drafter_sharpness=3.0`), built once per setting.

    Only the changed models differ: the truth, the blind spots and the noise draws come from the
    same seed, so a sharper drafter has the same argmax everywhere.
    """
    world = world or default_world()
    unknown = set(changes) - set(world.settings)
    if unknown:
        raise ValueError(f"unknown ToyWorld setting(s) {sorted(unknown)}; use some of {sorted(world.settings)}.")
    return _world_from(tuple(sorted({**world.settings, **changes}.items())))


def _check_context(world: ToyWorld, context_index) -> int:
    n = len(world.contexts().contexts)
    try:
        whole = not isinstance(context_index, bool) and float(context_index).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole or not 0 <= int(context_index) < n:
        raise ValueError(f"context_index={context_index!r}: use an integer row in [0, {n}) of "
                         "world.contexts() (see `context_options`).")
    return int(context_index)


def _check_loss(loss: str) -> str:
    if loss not in lemmas.LOSSES:
        raise ValueError(f"loss={loss!r} is unknown; use one of {', '.join(lemmas.LOSSES)}.")
    return loss


def _check_lemma(lemma) -> int:
    if lemma not in LEMMA_ALPHA_RANGES:
        raise ValueError(f"lemma={lemma!r}: these views cover Lemma 1 (eq. 3) and Lemma 4 (eq. 8); pass 1 or 4.")
    return lemma


def _check_lemma_alpha(lemma: int, loss: str, alpha) -> float:
    low, high = LEMMA_ALPHA_RANGES[_check_lemma(lemma)][_check_loss(loss)]
    alpha = float(alpha)
    if not low <= alpha <= high:
        raise ValueError(f"alpha={alpha} is outside [{low}, {high}], the range of Lemma {lemma}'s views for the "
                         f"{_LOSS_NAMES[loss]}; pick alpha in that range.")
    return alpha


def _check_temperature(temperature) -> float:
    temperature = float(temperature)
    if math.isnan(temperature) or temperature < 0:
        raise ValueError(f"temperature={temperature}: use T = 0 (greedy) or T > 0.")
    return temperature


def _check_gamma(gamma) -> int:
    if isinstance(gamma, bool) or not float(gamma).is_integer() or int(gamma) < 1:
        raise ValueError(f"gamma={gamma!r}: the draft block holds at least one token; pass an integer gamma >= 1.")
    return int(gamma)


def _check_cost_ratio(cost_ratio) -> float:
    cost_ratio = float(cost_ratio)
    if not (math.isfinite(cost_ratio) and cost_ratio >= 0):
        raise ValueError(f"cost_ratio={cost_ratio}: a drafter step costs c >= 0 verifier calls "
                         "(0 = free drafts, 1 = as slow as the verifier).")
    return cost_ratio


def _context_name(world: ToyWorld, table, row: int) -> str:
    a, b = table.contexts[row]
    return f"'{world.tokens[a]} {world.tokens[b]}'" + (" (blind spot)" if bool(table.blind[row]) else "")


def context_options(world: Optional[ToyWorld] = None, top: Optional[int] = None) -> List[Tuple[str, int]]:
    """`(label, row)` pairs for a dropdown, most visited context first (rows of `world.contexts()`)."""
    world = world or default_world()
    t = world.contexts()
    order = t.weight.argsort(descending=True).tolist()[:top]
    return [(f"{_context_name(world, t, row)}: {float(t.weight[row]):.3f} visits", row) for row in order]


def default_context(world: Optional[ToyWorld] = None) -> int:
    """The most visited blind-spot context (where the verifier is confidently wrong), else the most visited."""
    world = world or default_world()
    t = world.contexts()
    rows = t.blind.nonzero().flatten() if t.blind.any() else torch.arange(len(t.contexts))
    return int(rows[t.weight[rows].argmax()])


def lemma_alpha_grid(lemma: int, loss: str, n: int) -> torch.Tensor:
    """`n` values of `alpha` spanning `LEMMA_ALPHA_RANGES[lemma][loss]`."""
    if n < 2:
        raise ValueError(f"n={n}: a grid needs at least its two ends.")
    low, high = LEMMA_ALPHA_RANGES[_check_lemma(lemma)][_check_loss(loss)]
    return torch.linspace(low, high, n, dtype=torch.float64)


# --------------------------------------------------------------------------------------------
# Lemmas 1 and 4: one context
# --------------------------------------------------------------------------------------------

def _plugin_estimates(q: torch.Tensor, p: torch.Tensor, loss: str) -> Tuple[float, float]:
    """What the plug-ins put in place of E_P[l(x, q)] and E_P[l(x, p)]: 1 - max, or the entropy."""
    if loss == "zero_one":
        return 1.0 - float(q.max()), 1.0 - float(p.max())
    entropy = lambda m: float(-(m * torch.where(m > 0, m.log(), torch.zeros_like(m))).sum())  # noqa: E731
    return entropy(q), entropy(p)


def context_risks(world: Optional[ToyWorld], context_index: int, loss: str = "zero_one", lemma: int = 1) -> dict:
    r"""The numbers behind one context's risk lines, for Lemma 1 or Lemma 4.

    `loss_q`, `loss_p` are $\mathbb{E}_P[\ell(x, q_t)]$, $\mathbb{E}_P[\ell(x, p_t)]$; `weight` is $w_t$
    (1 or $D_{TV}$); `optimal_switch` the $\alpha$ below which the optimal rule defers (None when it
    never does: $w_t = 0$); `plugin_switch` the same for each plug-in, from the models' own estimates.
    """
    world = world or default_world()
    _check_lemma(lemma)
    _check_loss(loss)
    row = _check_context(world, context_index)
    t = world.contexts()
    P, q, p = t.P[row], t.q[row], t.p[row]
    loss_q = float(lemmas.expected_loss(P, q, loss))
    loss_p = float(lemmas.expected_loss(P, p, loss))
    tv = float(targets.tv_distance(p, q))
    weight = 1.0 if lemma == 1 else tv
    est_q, est_p = _plugin_estimates(q, p, loss)
    gap = {"chow": est_q, "diff": est_q - est_p, "opt": est_q - est_p}
    switch = lambda g: g / weight if weight > 0 else None  # noqa: E731  (w = 0: deferring is free, never strictly better)
    return dict(context=t.contexts[row], name=_context_name(world, t, row), blind=bool(t.blind[row]),
                weight_visits=float(t.weight[row]), loss_q=loss_q, loss_p=loss_p, tv=tv, weight=weight,
                optimal_switch=switch(loss_q - loss_p),
                plugin_switch={_PLUGIN_NAMES[r]: switch(gap[r]) for r in _PLUGINS[lemma]},
                P=P, q=q, p=p)


def _context_panels(world, lemma, context_index, alpha, loss) -> Tuple[List[Panel], str]:
    world = world or default_world()
    alpha = _check_lemma_alpha(lemma, loss, alpha)
    c = context_risks(world, context_index, loss, lemma)
    alphas = lemma_alpha_grid(lemma, loss, 201)
    r0 = torch.full_like(alphas, c["loss_q"])
    r1 = c["loss_p"] + alphas * c["weight"]
    cost = "alpha" if lemma == 1 else "alpha * D_TV"
    # The optimal rule is drawn first, wide and pale, so the lines it coincides with stay visible on top.
    traces = [Trace(f"optimal rule (Lemma {lemma})", alphas, torch.minimum(r0, r1), **_OPTIMAL_STYLE),
              Trace("keep q: R(0)", alphas, r0), Trace(f"defer to p: R(1) (slope {c['weight']:.2f})", alphas, r1)]
    decisions = {}
    for rule in _PLUGINS[lemma]:
        # The plug-in's risk is the true risk of the decision it makes from its own estimates.
        defer = torch.tensor([bool(lemmas.plugin_deferral(rule, c["q"], c["p"], float(a), loss)) for a in alphas])
        traces.append(Trace(_PLUGIN_NAMES[rule], alphas, torch.where(defer, r1, r0), dash=True))
        decisions[_PLUGIN_NAMES[rule]] = bool(lemmas.plugin_deferral(rule, c["q"], c["p"], alpha, loss))
    low, high = LEMMA_ALPHA_RANGES[lemma][loss]
    vlines = [(alpha, f"alpha = {alpha:.2f}")]
    for label, x in [("optimal switch", c["optimal_switch"])] + [(f"{k} switch", v) for k, v in c["plugin_switch"].items()]:
        if x is not None and low <= x <= high:
            vlines.append((x, label))
    optimal = c["optimal_switch"] is not None and alpha < c["optimal_switch"]
    verdict = lambda d: "defers" if d else "keeps q"  # noqa: E731
    title = (f"Lemma {lemma}, context {c['name']}, {_LOSS_NAMES[loss]}: at alpha = {alpha:.2f} the optimal rule "
             f"{verdict(optimal)}; " + ", ".join(f"{k} {verdict(v)}" for k, v in decisions.items()))
    panel = Panel(traces, xlabel="alpha", ylabel=f"deferral risk (expected loss + {cost} if deferred)", vlines=vlines)
    return [panel], title


def lemma1_view(context_index: int, alpha: float, loss: str = "zero_one", *,
                world: Optional[ToyWorld] = None) -> "go.Figure":
    """Equation (3) for one context as `alpha` moves: R(0), R(1), the optimal rule and the Chow and Diff plug-ins."""
    return to_plotly(*_context_panels(world, 1, context_index, alpha, loss))


def lemma1_figure(context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None):
    panels, title = _context_panels(world, 1, context_index, alpha, loss)
    return to_matplotlib(panels, _wrap(title))


def lemma4_view(context_index: int, alpha: float, loss: str = "zero_one", *,
                world: Optional[ToyWorld] = None) -> "go.Figure":
    """Equation (8) for one context as `alpha` moves: R(1) now rises with slope D_TV(p, q); the OPT plug-in."""
    return to_plotly(*_context_panels(world, 4, context_index, alpha, loss))


def lemma4_figure(context_index: int, alpha: float, loss: str = "zero_one", *, world: Optional[ToyWorld] = None):
    panels, title = _context_panels(world, 4, context_index, alpha, loss)
    return to_matplotlib(panels, _wrap(title))


def _wrap(title: str, width: int = 110) -> str:
    """Break a long title at a separator so a static figure's title fits its width."""
    if len(title) <= width:
        return title
    cut = max(title.rfind(sep, 0, width) for sep in (": ", "; ", ", "))
    return title if cut < 0 else title[:cut + 1] + "\n" + title[cut + 2:]


# --------------------------------------------------------------------------------------------
# Lemmas 1 and 4: summed over contexts
# --------------------------------------------------------------------------------------------

def _risk_fn(lemma: int):
    return lemmas.deferral_risk if lemma == 1 else lemmas.speculative_deferral_risk


def _optimal_fn(lemma: int):
    return lemmas.optimal_deferral if lemma == 1 else lemmas.optimal_speculative_deferral


def total_risks(world: Optional[ToyWorld], lemma: int, loss: str, alphas) -> dict:
    r"""Per-token deferral risk summed over contexts, $\sum_c w_c R_c(r_c) / \sum_c w_c$, with prefixes from $P$.

    `w_c` is the expected number of visits of context `c` under $P$ (the $\mathbb{E}_{x_{<t}}$ of the
    lemmas). Returns `{"alpha": [...], "risk": {rule: [...]}, "deferral_rate": {rule: [...]}}` for
    keeping `q` everywhere, deferring everywhere, the optimal rule and the plug-ins (for Lemma 4 also
    Lemma 1's optimal rule, which ignores the D_TV factor).
    """
    world = world or default_world()
    _check_lemma(lemma)
    _check_loss(loss)
    t = world.contexts()
    risk = _risk_fn(lemma)
    ones = torch.ones(len(t.contexts), dtype=torch.float64)
    out = {"alpha": [], "risk": {}, "deferral_rate": {}}
    for alpha in _floats(alphas):
        _check_lemma_alpha(lemma, loss, alpha)
        rules = {"keep q (r = 0)": 0 * ones, "defer to p (r = 1)": ones,
                 f"optimal (Lemma {lemma})": _optimal_fn(lemma)(t.P, t.q, t.p, alpha, loss).double()}
        if lemma == 4:
            rules["Lemma 1's optimal rule"] = lemmas.optimal_deferral(t.P, t.q, t.p, alpha, loss).double()
        for rule in _PLUGINS[lemma]:
            rules[_PLUGIN_NAMES[rule]] = lemmas.plugin_deferral(rule, t.q, t.p, alpha, loss).double()
        out["alpha"].append(alpha)
        for name, r in rules.items():
            out["risk"].setdefault(name, []).append(lemmas.total_risk(t.weight, risk(r, t.P, t.q, t.p, alpha, loss)))
            out["deferral_rate"].setdefault(name, []).append(lemmas.total_risk(t.weight, r))
    return out


def plugin_agreement(world: Optional[ToyWorld], lemma: int, loss: str, alphas) -> Dict[str, float]:
    """How often each plug-in makes the optimal decision: the visit-weighted share of contexts where it
    agrees with Lemma 1's (or 4's) rule, averaged over `alphas`."""
    world = world or default_world()
    t = world.contexts()
    alphas = [_check_lemma_alpha(lemma, loss, a) for a in _floats(alphas)]
    out = {}
    for rule in _PLUGINS[lemma]:
        shares = [lemmas.total_risk(t.weight, (lemmas.plugin_deferral(rule, t.q, t.p, a, loss)
                                               == _optimal_fn(lemma)(t.P, t.q, t.p, a, loss)).double()) for a in alphas]
        out[_PLUGIN_NAMES[rule]] = sum(shares) / len(shares)
    return out


def _total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha):
    base = world or default_world()
    for name, value in (("drafter_sharpness", drafter_sharpness), ("verifier_sharpness", verifier_sharpness)):
        if not float(value) > 0:
            raise ValueError(f"{name}={value} must be > 0 (1 = the models as built).")
    changes = dict(drafter_sharpness=float(drafter_sharpness), verifier_sharpness=float(verifier_sharpness))
    reshaped = any(base.settings[k] != v for k, v in changes.items())
    shaped = reshaped_world(base, **changes)
    alphas = lemma_alpha_grid(lemma, loss, n_alpha)
    here, built = total_risks(shaped, lemma, loss, alphas), total_risks(base, lemma, loss, alphas)
    optimal = f"optimal (Lemma {lemma})"
    styles = {optimal: _OPTIMAL_STYLE, "Lemma 1's optimal rule": dict(dash=True, color="#000000")}
    order = [optimal] + [k for k in here["risk"] if k != optimal]   # optimal first: drawn underneath
    left = Panel([Trace(k, alphas, here["risk"][k], **styles.get(k, {})) for k in order], xlabel="alpha",
                 ylabel="per-token deferral risk", title="risk with prefixes from P")
    excess = [Trace(optimal, alphas, [0.0] * len(alphas), **_OPTIMAL_STYLE)]
    for name in (_PLUGIN_NAMES[r] for r in _PLUGINS[lemma]):
        excess.append(Trace(name, alphas, [a - b for a, b in zip(here["risk"][name], here["risk"][optimal])]))
        if reshaped:
            excess.append(Trace(f"{name}, models as built", alphas,
                                [a - b for a, b in zip(built["risk"][name], built["risk"][optimal])], dash=True))
    right = Panel(excess, xlabel="alpha", ylabel="risk above the optimal rule", title="excess risk of the plug-ins")
    title = (f"Lemma {lemma}, summed over contexts ({_LOSS_NAMES[loss]}); drafter sharpness {float(drafter_sharpness):g}, "
             f"verifier sharpness {float(verifier_sharpness):g}")
    return [left, right], title


def total_risk_view(lemma: int, loss: str = "zero_one", drafter_sharpness: float = 1.0, verifier_sharpness: float = 1.0,
                    *, world: Optional[ToyWorld] = None, n_alpha: int = 41) -> "go.Figure":
    """Risk summed over contexts against `alpha` (left) and the plug-ins' excess over the optimal rule
    (right), in `world` with its drafter / verifier sharpened (> 1) or flattened (< 1); dashed: as built."""
    return to_plotly(*_total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha))


def total_risk_figure(lemma: int, loss: str = "zero_one", drafter_sharpness: float = 1.0, verifier_sharpness: float = 1.0,
                      *, world: Optional[ToyWorld] = None, n_alpha: int = 41):
    return to_matplotlib(*_total_panels(lemma, loss, drafter_sharpness, verifier_sharpness, world, n_alpha))


def brute_force_check(world: Optional[ToyWorld], lemma: int, alphas_per_loss: Dict[str, Sequence[float]],
                      temperatures: Sequence[float] = (1.0,), grid: int = 101) -> dict:
    """Brute-force minimisers of equation (3) or (8) against the closed form, on every context and grid point.

    Returns `points_checked` (contexts x alphas x losses x temperatures), `mismatches`, and the first
    few mismatches as `(loss, T, alpha, context)` so a failure can be looked at.
    """
    world = world or default_world()
    _check_lemma(lemma)
    checked, bad = 0, []
    for T in temperatures:
        t = world.contexts(_check_temperature(T))
        for loss, alphas in alphas_per_loss.items():
            _check_loss(loss)
            for alpha in _floats(alphas):
                brute = lemmas.brute_force_deferral(_risk_fn(lemma), t.P, t.q, t.p, alpha, loss, grid=grid)
                closed = _optimal_fn(lemma)(t.P, t.q, t.p, alpha, loss).double()
                checked += len(t.contexts)
                bad += [(loss, T, alpha, t.contexts[i]) for i in (brute != closed).nonzero().flatten().tolist()]
    return dict(points_checked=checked, mismatches=len(bad), first_mismatches=bad[:5])


def miscalibration_sweep(world: Optional[ToyWorld], values: Sequence[float], loss: str = "zero_one",
                         n_alpha: int = 41) -> dict:
    """Lemma 1 in worlds whose drafter (or verifier) is sharpened or flattened by each of `values`.

    For each model and sharpness: the plug-ins' mean excess risk over the optimal rule across the
    alpha grid, and how far the optimal rule's own risk curve moved from the world as built
    (`optimal_shift`, the largest absolute change over the grid).
    """
    base = world or default_world()
    alphas = lemma_alpha_grid(1, loss, n_alpha)
    built = total_risks(base, 1, loss, alphas)["risk"]["optimal (Lemma 1)"]
    out = {}
    for model in ("drafter", "verifier"):
        out[model] = {}
        for s in _floats(values):
            shaped = reshaped_world(base, **{f"{model}_sharpness": s})
            risk = total_risks(shaped, 1, loss, alphas)["risk"]
            optimal = risk["optimal (Lemma 1)"]
            row = {name: sum(a - b for a, b in zip(risk[name], optimal)) / len(optimal)
                   for name in (_PLUGIN_NAMES[r] for r in _PLUGINS[1])}
            row["optimal_shift"] = max(abs(a - b) for a, b in zip(optimal, built))
            out[model][s] = row
    return out


def miscalibration_figure(sweep: dict, loss: str = "zero_one"):
    """Mean excess risk of the plug-ins (and the optimal rule's shift) against each model's sharpness."""
    panels = []
    for model, rows in sweep.items():
        xs = list(rows)
        names = [name for name in next(iter(rows.values())) if name != "optimal_shift"]
        traces = [Trace(name, xs, [rows[s][name] for s in xs], kind="curve") for name in names]
        traces.insert(0, Trace("optimal rule: change of its risk", xs, [rows[s]["optimal_shift"] for s in xs], kind="curve",
                               **_OPTIMAL_STYLE))
        panels.append(Panel(traces, xlabel=f"{model} sharpness (log scale)",
                            ylabel="mean excess risk over the optimal rule",
                            title=f"{model} flattened (< 1) or sharpened (> 1)", xlog=True,
                            vlines=[(1.0, "as built")]))
    return to_matplotlib(panels, f"Lemma 1 ({_LOSS_NAMES[loss]}): miscalibration moves the plug-ins, not the optimal rule")


# --------------------------------------------------------------------------------------------
# The paper's Figure 1: token-level cascades against speculative decoding
# --------------------------------------------------------------------------------------------

def figure1_curves(world: Optional[ToyWorld] = None, n_alpha: int = 21, temperature: float = 1.0, gamma: int = 5,
                   prefixes: str = "generated") -> dict:
    """Exact quality against calls to the verifier per token (the paper's "deferral rate").

    Chow (TokenCascade, Algorithm 2) and the Diff oracle (Algorithm 3) call the verifier once per
    deferred token, so their cost is the deferral rate; SpecDecode with block size `gamma` calls it
    once per block, 1 / (tokens per call). Quality is the per-token 0-1 loss of `world.evaluate`.
    """
    world = world or default_world()
    temperature, gamma = _check_temperature(temperature), _check_gamma(gamma)
    out = {}
    for label, rule in (("Chow (TokenCascade)", "chow"), ("Diff (oracle)", "diff")):
        alphas = targets.alpha_grid(rule, n_alpha)
        points = [world.evaluate(rule, float(a), temperature=temperature, prefixes=prefixes) for a in alphas]
        out[label] = {"alpha": _floats(alphas), "calls_per_token": [m.deferral_rate for m in points],
                      "loss": [m.zero_one_loss for m in points]}
    spec = world.evaluate("spec", temperature=temperature, gamma=gamma)
    out[f"SpecDecode (gamma = {gamma})"] = {"alpha": [0.0], "calls_per_token": [1.0 / spec.tokens_per_verifier_call],
                                            "loss": [spec.zero_one_loss]}
    out["verifier"] = world.evaluate("verifier", temperature=temperature, prefixes=prefixes).zero_one_loss
    out["drafter"] = world.evaluate("drafter", temperature=temperature, prefixes=prefixes).zero_one_loss
    return out


def _figure1_panels(curves: dict, temperature: float, prefixes: str):
    traces = []
    for label, c in curves.items():
        if isinstance(c, dict):
            kind = "points" if len(c["loss"]) == 1 else "curve"
            traces.append(Trace(label, c["calls_per_token"], c["loss"], kind=kind))
    panel = Panel(traces, xlabel="calls to the verifier per generated token", ylabel="per-token 0-1 loss (lower is better)",
                  hlines=[(curves["verifier"], "verifier alone"), (curves["drafter"], "drafter alone")])
    return [panel], f"Figure 1 in the toy world (exact, T = {temperature:g}, prefixes {prefixes})"


def figure1_view(temperature: float = 1.0, gamma: int = 5, prefixes: str = "generated", *,
                 world: Optional[ToyWorld] = None, n_alpha: int = 21) -> "go.Figure":
    """Quality against verifier calls per token for Chow, the Diff oracle and SpecDecode (the paper's Figure 1)."""
    curves = figure1_curves(world, n_alpha, temperature, gamma, prefixes)
    return to_plotly(*_figure1_panels(curves, temperature, prefixes))


def figure1_figure(curves: dict, temperature: float = 1.0, prefixes: str = "generated"):
    return to_matplotlib(*_figure1_panels(curves, temperature, prefixes), legend="each")


# --------------------------------------------------------------------------------------------
# Lemma 2: lossy speculative sampling, from its own definition
# --------------------------------------------------------------------------------------------

def tran_thien_acceptance(q, p, alpha: float) -> torch.Tensor:
    r"""Lossy speculative sampling's chance of keeping each token $x$ if drafted:
    $\min\{1, p(x) / ((1 - \alpha)\, q(x))\}$, shape `(..., V)`. Tokens with $q(x) = 0$ are never
    drafted; they get 1, the convention of `targets.acceptance_probability`."""
    alpha = float(alpha)
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha={alpha}: lossy speculative sampling needs 0 <= alpha < 1.")
    q, p = torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
    safe_q = torch.where(q > 0, q, torch.ones_like(q))
    return torch.where(q > 0, (p / ((1 - alpha) * safe_q)).clamp(max=1.0), torch.ones_like(q))


def tran_thien_residual(q, p, beta) -> torch.Tensor:
    r"""Where lossy speculative sampling resamples a rejected draft: $\mathrm{norm}(\max\{0, p/\beta - q\})$.

    `beta` is a number or a tensor of shape `(...)` (one per position; `inf` allowed). Rows where
    $\max\{0, p/\beta - q\}$ has no mass are never reached (nothing is rejected there) and are all zeros.
    """
    q, p = torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
    beta = torch.as_tensor(beta, dtype=torch.float64)
    if (beta <= 0).any() or torch.isnan(beta).any():
        raise ValueError("beta must be positive (lossy speculative sampling needs beta >= 1 - alpha).")
    excess = (p / beta.unsqueeze(-1) - q).clamp_min(0) if beta.ndim else (p / beta - q).clamp_min(0)
    mass = excess.sum(-1, keepdim=True)
    return torch.where(mass > 0, excess / torch.where(mass > 0, mass, torch.ones_like(mass)), torch.zeros_like(excess))


def _beta_value(q, p, alpha, beta):
    """A number, or the per-position normalising beta (Lossy*) of `targets.lossy_beta`."""
    if isinstance(beta, str):
        if beta != "normalize":
            raise ValueError(f"beta={beta!r}: pass a number >= 1 - alpha or 'normalize'.")
        return targets.lossy_beta(q, p, alpha)
    return float(beta)


def lemma2_check(world: Optional[ToyWorld], alphas: Sequence[float], betas: Sequence = (1.0, "normalize"),
                 temperatures: Sequence[float] = (1.0,)) -> dict:
    r"""Algorithm 4 on the lossy target against lossy speculative sampling, token by token.

    For every context, `alpha`, `beta` and temperature: the acceptance probability of every token as a
    draft, and the residual on every position where a draft can be rejected. Returns the largest
    absolute differences, how many tokens / positions were compared, and, per beta, how many
    positions reject drafts although $\max\{0, p/\beta - q\}$ has no mass: there lossy speculative
    sampling has no residual to sample from (possible for a fixed $\beta > 1$, whose target sums to less
    than one; never for $\beta = 1$ or the normalising $\beta$), so they are counted, not compared.
    """
    world = world or default_world()
    acc_diff = res_diff = 0.0
    tokens = positions = skipped = 0
    undefined = {_beta_label(beta): 0 for beta in betas}
    for T in temperatures:
        t = world.contexts(_check_temperature(T))
        q, p = t.q, t.p
        C, V = q.shape
        every_token = torch.arange(V).expand(C, V)                  # (C, V): token v drafted at each context
        for alpha in _floats(alphas):
            for beta in betas:
                pi = targets.target_distribution("lossy", q, p, alpha, beta=beta)
                # (C, V, V): row (c, v) repeats context c so each token is scored as a draft.
                ours = targets.acceptance_probability(pi.unsqueeze(1).expand(C, V, V), q.unsqueeze(1).expand(C, V, V),
                                                      every_token)
                acc_diff = max(acc_diff, float((ours - tran_thien_acceptance(q, p, alpha)).abs().max()))
                tokens += C * V
                # A rejection chance below 1e-12 is rounding (Lossy* divides by the target's sum):
                # such a position is never rejected in practice, and its residual is arbitrary.
                reachable = targets.rejection_probability(pi, q) > 1e-12
                theirs = tran_thien_residual(q, p, _beta_value(q, p, alpha, beta))
                defined = theirs.sum(-1) > 0
                compare = reachable & defined
                diff = (targets.residual_distribution(pi, q) - theirs).abs().max(-1).values
                res_diff = max(res_diff, float(diff[compare].max()) if compare.any() else 0.0)
                positions += int(compare.sum())
                skipped += int((~reachable).sum())
                undefined[_beta_label(beta)] += int((reachable & ~defined).sum())
    return dict(acceptance_max_abs_diff=acc_diff, residual_max_abs_diff=res_diff, tokens_compared=tokens,
                positions_compared=positions, positions_never_rejected=skipped, residual_undefined=undefined)


def _lemma2_panels(world, context_index, alpha, beta, temperature):
    world = world or default_world()
    alpha = targets.check_alpha("lossy", alpha)
    row = _check_context(world, context_index)
    t = world.contexts(_check_temperature(temperature))
    q, p = t.q[row], t.p[row]
    beta_used = _beta_value(q, p, alpha, beta)
    pi = targets.target_distribution("lossy", q, p, alpha, beta=beta)
    V = q.shape[-1]
    ours = targets.acceptance_probability(pi.expand(V, V), q.expand(V, V), torch.arange(V))  # (V,): each token as the draft
    # Below 1e-12 a rejection chance is rounding (see `lemma2_check`): the residual is never used.
    rejected = float(targets.rejection_probability(pi, q))
    rejected = rejected if rejected > 1e-12 else 0.0
    # <bos> is never predicted (q = p = 0), so its column would only show the "never drafted" convention.
    keep, labels = slice(1, None), world.tokens[1:]
    models = Panel([Trace("q (drafter)", labels, q[keep], kind="bar"), Trace("p (verifier)", labels, p[keep], kind="bar")],
                   xlabel="token", ylabel="probability", title="the two models")
    theirs = tran_thien_acceptance(q, p, alpha)[keep]
    accept = Panel([Trace("Tran-Thien: min(1, p / ((1-alpha) q))", labels, theirs, kind="bar"),
                    Trace("Algorithm 4: min(1, pi / q)", labels, ours[keep], kind="points", color="#000000")],
                   xlabel="token", ylabel="acceptance probability", title="acceptance of each token as a draft",
                   ylim=(0.0, 1.35))
    residual_traces = [Trace("Tran-Thien: norm(max(0, p / beta - q))", labels,
                             tran_thien_residual(q, p, beta_used)[keep], kind="bar")]
    if rejected > 0:
        residual_traces.append(Trace("Algorithm 4: norm(max(0, pi - q))", labels, targets.residual_distribution(pi, q)[keep],
                                     kind="points", color="#000000"))
    residual = Panel(residual_traces, xlabel="token", ylabel="probability", ylim=(0.0, 1.35),
                     title="residual" + ("" if rejected > 0 else " (never reached)"))
    beta_text = f"{float(beta_used):.3g}" + (" (normalising)" if isinstance(beta, str) else "")
    title = (f"Lemma 2, context {_context_name(world, t, row)}, alpha = {alpha:.2f}, beta = {beta_text}, "
             f"T = {float(temperature):g}: rejection probability {rejected:.3f}")
    return [models, accept, residual], title


def lemma2_view(context_index: int, alpha: float, beta="normalize", temperature: float = 1.0, *,
                world: Optional[ToyWorld] = None) -> "go.Figure":
    """Acceptance per token and residual of lossy speculative sampling (bars) and of Algorithm 4 on the
    lossy target (black dots) for one context; they coincide (Lemma 2)."""
    return to_plotly(*_lemma2_panels(world, context_index, alpha, beta, temperature))


def lemma2_figure(context_index: int, alpha: float, beta="normalize", temperature: float = 1.0, *,
                  world: Optional[ToyWorld] = None):
    panels, title = _lemma2_panels(world, context_index, alpha, beta, temperature)
    return to_matplotlib(panels, _wrap(title), legend="each")


def _kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """KL(a || b) per row (0 log 0 = 0)."""
    ratio = torch.where(a > 0, a / torch.where(b > 0, b, torch.ones_like(b)), torch.ones_like(a))
    return (a * ratio.log()).sum(-1)


def _beta_label(beta) -> str:
    return "Lossy* (normalising beta)" if beta == "normalize" else f"beta = {float(beta):g}"


def beta_sweep(world: Optional[ToyWorld], alphas: Sequence[float], betas: Sequence = (1.0, "normalize"),
               temperature: float = 1.0) -> dict:
    r"""`beta = 1` against the normalising beta as `alpha` moves.

    Per beta, averaged over the contexts visited under $P$ (weights as in the lemmas): `acceptance_rate`,
    the mean chance a draft is kept; `tv_to_p`, the mean $D_{TV}$ between the emitted law
    (`targets.output_distribution`) and $p$; `kl_to_p`, the mean $\mathrm{KL}(\text{emitted} \,\|\, p)$;
    `target_mass`, the mean of $\sum_v \pi(v)$ (1 for Lossy*, above 1 for `beta = 1`). And `loss`, the
    exact per-token 0-1 loss of the text the rule generates (`world.evaluate`).
    """
    world = world or default_world()
    temperature = _check_temperature(temperature)
    t = world.contexts(temperature)
    out = {"alpha": _floats(alphas)}
    for beta in betas:
        rows = {"acceptance_rate": [], "tv_to_p": [], "kl_to_p": [], "target_mass": [], "loss": []}
        for alpha in out["alpha"]:
            pi = targets.target_distribution("lossy", t.q, t.p, alpha, beta=beta)
            emitted = targets.output_distribution(pi, t.q)
            rows["acceptance_rate"].append(lemmas.total_risk(t.weight, 1 - targets.rejection_probability(pi, t.q)))
            rows["tv_to_p"].append(lemmas.total_risk(t.weight, targets.tv_distance(emitted, t.p)))
            rows["kl_to_p"].append(lemmas.total_risk(t.weight, _kl(emitted, t.p)))
            rows["target_mass"].append(lemmas.total_risk(t.weight, pi.sum(-1)))
            rows["loss"].append(world.evaluate("lossy", alpha, beta=beta, temperature=temperature).zero_one_loss)
        out[_beta_label(beta)] = rows
    return out


def _beta_panels(world, alpha, context_index, temperature):
    world = world or default_world()
    alpha = targets.check_alpha("lossy", alpha)
    row = _check_context(world, context_index)
    t = world.contexts(_check_temperature(temperature))
    q, p = t.q[row], t.p[row]
    laws = {"p (verifier)": p, "q (drafter)": q}
    notes = []
    for beta in (1.0, "normalize"):
        pi = targets.target_distribution("lossy", q, p, alpha, beta=beta)
        emitted = targets.output_distribution(pi, q)
        laws[f"emitted, {_beta_label(beta)}"] = emitted
        tv, kl = float(targets.tv_distance(emitted, p)), float(_kl(emitted, p))
        notes.append(f"{_beta_label(beta)}: TV {tv:.3f}, KL {kl:.3f}")
    accept = 1 - float(targets.rejection_probability(targets.target_distribution("lossy", q, p, alpha), q))
    panel = Panel([Trace(k, world.tokens, v, kind="bar") for k, v in laws.items()], xlabel="token", ylabel="probability",
                  title="; ".join(notes))
    title = (f"context {_context_name(world, t, row)}, alpha = {alpha:.2f}, T = {float(temperature):g}: "
             f"acceptance {accept:.3f} for both betas")
    return [panel], title


def beta_view(alpha: float, context_index: int, temperature: float = 1.0, *,
              world: Optional[ToyWorld] = None) -> "go.Figure":
    """One context: p, q and the law Algorithm 4 emits with `beta = 1` and with the normalising beta."""
    return to_plotly(*_beta_panels(world, alpha, context_index, temperature))


def beta_figure(sweep: dict, temperature: float = 1.0):
    """Left: acceptance rate, distance to p (TV and KL) against alpha for both betas (they overlap);
    right: the differences beta = 1 minus Lossy*, which show which of them beta moves at all."""
    one, star = [k for k in sweep if k != "alpha"][:2]
    palette = sns.color_palette("colorblind").as_hex()
    names = {"acceptance_rate": "acceptance rate", "tv_to_p": "D_TV(emitted, p)", "kl_to_p": "KL(emitted || p)",
             "loss": "0-1 loss of generated text"}
    # Lossy*'s curves are thin black dashes on top of beta = 1's: where they vanish, beta changed nothing.
    left = Panel([Trace(names[m], sweep["alpha"], sweep[one][m], width=3.0, color=palette[i])
                  for i, m in enumerate(("acceptance_rate", "tv_to_p", "kl_to_p"))]
                 + [Trace(f"{star} (dashed)", sweep["alpha"], sweep[star][m], dash=True, width=1.2, color="#000000")
                    for m in ("acceptance_rate", "tv_to_p", "kl_to_p")],
                 xlabel="alpha", ylabel="mean over contexts (prefixes from P)", title=f"coloured: {one}; dashed: Lossy*")
    right = Panel([Trace(names[m], sweep["alpha"], [a - b for a, b in zip(sweep[one][m], sweep[star][m])], kind="curve",
                         color=palette[i])
                   for i, m in enumerate(("acceptance_rate", "tv_to_p", "kl_to_p", "loss"))],
                  xlabel="alpha", ylabel=f"difference ({one}) - (Lossy*)", title="what beta changes")
    return to_matplotlib([left, right],
                         f"Lossy speculative sampling: beta = 1 against the normalising beta (T = {temperature:g})",
                         legend="each")


# --------------------------------------------------------------------------------------------
# Lemma 4 in practice: the cost-quality trade-off
# --------------------------------------------------------------------------------------------

def expected_latency(tokens_per_call, gamma: int, cost_ratio: float):
    r"""Expected latency per token relative to the verifier alone: $(\gamma c + 1) / \text{tokens per call}$.

    Each verifier call follows `gamma` drafter steps of cost `cost_ratio` each (the drafter drafts the
    whole block before the verifier sees it, rejected or not). The verifier alone costs 1 per token.
    """
    gamma, cost_ratio = _check_gamma(gamma), _check_cost_ratio(cost_ratio)
    if isinstance(tokens_per_call, (list, tuple)):
        return [expected_latency(n, gamma, cost_ratio) for n in tokens_per_call]
    if not 1.0 <= float(tokens_per_call) <= gamma + 1 + 1e-9:
        raise ValueError(f"tokens_per_call={tokens_per_call}: one verifier call emits between 1 and gamma + 1 tokens.")
    return (gamma * cost_ratio + 1.0) / float(tokens_per_call)


def _check_methods(methods) -> Tuple[str, ...]:
    methods = tuple(TRADEOFF_METHODS) if methods is None else tuple(methods)
    unknown = [m for m in methods if m not in TRADEOFF_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods={list(methods)}: choose one or more of {', '.join(TRADEOFF_METHODS)}.")
    return methods


@functools.lru_cache(maxsize=64)
def _cached_curves(settings, gamma, temperature, n_alpha, methods):
    world = _world_from(settings)
    out = {}
    for label in methods:
        rule, beta = TRADEOFF_METHODS[label]
        # Rules without an alpha (SpecDecode) are one point, not n_alpha copies of it.
        alphas = targets.alpha_grid(rule, n_alpha) if rule in targets.ALPHA_RANGES else torch.zeros(1, dtype=torch.float64)
        points = [world.evaluate(rule, float(a), beta=beta, temperature=temperature, gamma=gamma) for a in alphas]
        out[label] = {"alpha": _floats(alphas), "loss": [m.zero_one_loss for m in points],
                      "rejection": [m.rejection_rate for m in points],
                      "tokens_per_call": [m.tokens_per_verifier_call for m in points]}
    ends = {name: world.evaluate(name, temperature=temperature).zero_one_loss for name in ("verifier", "drafter")}
    return out, ends


def tradeoff_curves(world: Optional[ToyWorld] = None, gamma: int = 5, temperature: float = 1.0, n_alpha: int = 21,
                    methods: Optional[Sequence[str]] = None, cost_ratio: float = 0.0) -> dict:
    """Exact curves of every method (speculative execution, block size `gamma`) over its alpha grid.

    Returns `{"curves": {label: {"alpha", "loss", "rejection", "tokens_per_call", "latency"}},
    "verifier": {"loss", "latency"}, "drafter": {"loss", "latency"}}`; loss is the per-token 0-1 loss
    of the generated text under P, latency the expected latency per token relative to the verifier
    alone (`expected_latency`). Computed once per setting: moving `cost_ratio` only rescales latency.
    """
    world = world or default_world()
    gamma, temperature, cost_ratio = _check_gamma(gamma), _check_temperature(temperature), _check_cost_ratio(cost_ratio)
    curves, ends = _cached_curves(_key(world), gamma, temperature, int(n_alpha), _check_methods(methods))
    with_latency = {k: dict(v, latency=expected_latency(v["tokens_per_call"], gamma, cost_ratio)) for k, v in curves.items()}
    return {"curves": with_latency,
            "verifier": {"loss": ends["verifier"], "latency": 1.0},
            # The drafter alone runs one drafter step per token and never calls the verifier.
            "drafter": {"loss": ends["drafter"], "latency": cost_ratio}}


def tradeoff_summary(result: dict, tol: float = 1e-9) -> dict:
    """The paper's two table entries per method: the lowest latency at which it matches the verifier's
    quality (`latency_at_verifier_quality`, None if it never does) and the best quality it reaches
    without exceeding the verifier's latency (`best_loss_within_verifier_latency`), plus its best loss."""
    target_loss = result["verifier"]["loss"]
    summary = {}
    for label, c in result["curves"].items():
        matching = [lat for lat, loss in zip(c["latency"], c["loss"]) if loss <= target_loss + tol]
        within = [loss for lat, loss in zip(c["latency"], c["loss"]) if lat <= 1.0 + tol]
        summary[label] = {"best_loss": min(c["loss"]),
                          "latency_at_verifier_quality": min(matching) if matching else None,
                          "best_loss_within_verifier_latency": min(within) if within else None}
    return summary


def _tradeoff_panels(result: dict, gamma: int, cost_ratio: float, temperature: float):
    curves = result["curves"]
    kind = {k: "points" if len(v["loss"]) == 1 else "curve" for k, v in curves.items()}   # SpecDecode is one point
    left = Panel([Trace(k, v["rejection"], v["loss"], kind=kind[k]) for k, v in curves.items()],
                 xlabel="rejection rate", ylabel="per-token 0-1 loss (lower is better)",
                 title="quality against rejection rate",
                 hlines=[(result["verifier"]["loss"], "verifier alone")])
    right = Panel([Trace(k, v["latency"], v["loss"], kind=kind[k]) for k, v in curves.items()]
                  + [Trace("models alone", [1.0, result["drafter"]["latency"]],
                           [result["verifier"]["loss"], result["drafter"]["loss"]],
                           kind="points", color="#000000", labels=["verifier", "drafter"])],
                  xlabel="expected latency per token (verifier alone = 1)",
                  ylabel="per-token 0-1 loss (lower is better)", title="quality against latency",
                  vlines=[(1.0, "verifier latency")])
    return [left, right], (f"Speculative cascades in the toy world (exact, T = {temperature:g}, gamma = {gamma}, "
                           f"drafter step = {cost_ratio:g} verifier calls)")


def tradeoff_view(gamma: int = 5, cost_ratio: float = 0.1, temperature: float = 1.0, *, world: Optional[ToyWorld] = None,
                  n_alpha: int = 21, methods: Optional[Sequence[str]] = None) -> "go.Figure":
    """Quality against rejection rate (left) and against expected latency (right) for every method."""
    result = tradeoff_curves(world, gamma, temperature, n_alpha, methods, cost_ratio)
    return to_plotly(*_tradeoff_panels(result, int(gamma), float(cost_ratio), float(temperature)))


def tradeoff_figure(result: dict, gamma: int, cost_ratio: float, temperature: float = 1.0):
    return to_matplotlib(*_tradeoff_panels(result, int(gamma), float(cost_ratio), float(temperature)))
