r"""Exploring target distributions and rejection rates: widget callbacks and their static figures.

For a drafter $q$ and a verifier $p$ over one vocabulary, every rule picks a target
$\pi = \mathbb{T}(q, p)$ (see `targets`). Algorithm 4 keeps a draft $x \sim q$ with probability
$\min\{1, \pi(x)/q(x)\}$, so a draft is rejected with probability

$$\rho(\pi, q) = \sum_v \max\{0,\, q(v) - \pi(v)\},$$

and for a mixture $\pi = (1 - r)\,q + r\,p$ (a deferral rule's target, $r = \delta \in \{0, 1\}$, or a
randomised deferral $r \in [0, 1]$) Lemma 3 gives

$$\rho = r\, D_{TV}(p, q), \qquad D_{TV}(p, q) = \sum_v \max\{0,\, p(v) - q(v)\}.$$

If each of the $\gamma$ drafts of a block is accepted with the same probability $a = 1 - \rho$,
independently of the others, one call of the verifier emits the accepted drafts plus one token of its
own (the replacement of the first rejected draft, or the bonus token after a full block):

$$\mathbb{E}[\text{tokens per verifier call}] = \sum_{j=0}^{\gamma} a^j = \frac{1 - a^{\gamma+1}}{1 - a}
\quad (\gamma + 1 \text{ when } a = 1).$$

The simulation check of Lemma 3 passes $n$ drafts $x \sim q$ through `targets.verify_draft`; the
number rejected is binomial, so the empirical rate $\hat\rho$ has standard error
$\sqrt{\rho(1-\rho)/n}$ and $z = (\hat\rho - \rho)/\mathrm{se}$.

Examples hold temperature-1 probabilities; the views scale them with `targets.probabilities`
(decisions use the temperature-1 ones, as in `targets`). Widget callbacks (`target_view`,
`every_rule_view`, `rejection_curves_view`) return a plotly figure and the numbers it shows, so tests
call them directly and notebooks only wire them to sliders (`live_view`); each has a matplotlib twin (`plot_*`)
whose figure the notebooks save with `savefig`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import plotly.graph_objects as go
import seaborn as sns
import torch
from plotly.subplots import make_subplots

from . import targets
from .plotting import FIGURE_SIZE, plot_distributions
from .toyworld import ToyWorld

__all__ = [
    "Example", "RULE_LABELS", "VARIANTS", "CURVE_VARIANTS", "SLIDER_RANGES", "toy_examples",
    "toy_world_inputs", "get_example", "example_from_distributions", "slider_range", "alpha_at",
    "slider_grid", "scaled", "expected_tokens_per_call", "binomial_z", "target_readouts", "target_view",
    "plot_target_view", "every_rule_view", "plot_every_rule", "rejection_table", "lemma3_gap", "plot_examples",
    "format_readouts",
    "link_alpha_slider", "live_view", "rejection_curves", "rejection_curves_view", "plot_rejection_curves",
    "simulate_rejections", "lemma3_check", "rule_rejection_check", "lemma3_figure", "plot_lemma3",
]

RULE_LABELS = {
    "drafter": "drafter q", "verifier": "verifier p", "spec": "SpecDecode", "lossy": "Lossy",
    "bild": "BiLD*", "chow": "Chow", "diff": "Diff", "opt": "OPT",
    "token_v1": "Token-V1", "token_v2": "Token-V2", "token_v3": "Token-V3",
}

Beta = Union[float, str]

#: (label, rule, beta) for every target the figures compare; `beta` only matters for `lossy`.
VARIANTS: Tuple[Tuple[str, str, Beta], ...] = (
    ("SpecDecode", "spec", 1.0),
    ("Lossy (β=1)", "lossy", 1.0),
    ("Lossy* (β normalises)", "lossy", "normalize"),
    ("BiLD*", "bild", 1.0),
    ("Chow", "chow", 1.0),
    ("Diff", "diff", 1.0),
    ("OPT", "opt", 1.0),
    ("Token-V1", "token_v1", 1.0),
    ("Token-V2", "token_v2", 1.0),
    ("Token-V3", "token_v3", 1.0),
)
#: The variants whose rejection rate moves with alpha (SpecDecode is their common reference).
CURVE_VARIANTS = VARIANTS[1:]

#: Slider range of alpha per rule: `targets.ALPHA_RANGES`, except that OPT (unbounded) gets [-5, 5]
#: and lossy (which excludes 1) stops at 0.99. OPT's decision can only change where
#: |alpha| <= |max p - max q| / D_TV(p, q). At T = 1 that ratio is at most 1 (with v the argmax of p,
#: max p - max q <= p(v) - q(v) <= D_TV, and the same the other way round), so [-1, 1] would do; at
#: other temperatures D_TV is that of the scaled distributions and the ratio grows, hence [-5, 5].
SLIDER_RANGES: Dict[str, Tuple[float, float]] = {
    **targets.ALPHA_RANGES, "opt": (-5.0, 5.0), "lossy": (0.0, 0.99),
}

_LOG_FLOOR = -1e4  # stands in for log(0) so the logits stay finite; exp() of it is exactly 0
_COLORS = sns.color_palette("colorblind", 10).as_hex()


# --------------------------------------------------------------------------------------------
# Examples: pairs (q, p) at temperature 1
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Example:
    """A drafter/verifier pair of temperature-1 next-token distributions over `labels`.

    `q`, `p` have shape `(V,)` for one context or `(C, V)` for several, with `weight` `(C,)` saying
    how often each context is visited (used to average rejection rates). `truth` is the true next-token
    distribution $P$ where it is known (the toy world), drawn as markers.
    """
    name: str
    q: torch.Tensor
    p: torch.Tensor
    labels: Tuple[str, ...]
    description: str = ""
    truth: Optional[torch.Tensor] = None
    weight: Optional[torch.Tensor] = None

    def __post_init__(self):
        targets.tv_distance(self.p, self.q)  # validates both as distributions over one vocabulary
        if len(self.labels) != self.q.shape[-1]:
            raise ValueError(f"example {self.name!r} has {len(self.labels)} labels for a vocabulary of "
                             f"{self.q.shape[-1]} tokens; pass one label per token.")
        if self.q.ndim == 2 and (self.weight is None or tuple(self.weight.shape) != (self.q.shape[0],)):
            raise ValueError(f"example {self.name!r} holds {self.q.shape[0]} contexts; pass `weight` of "
                             "shape (C,) saying how often each is visited.")

    @property
    def n_contexts(self) -> int:
        return 1 if self.q.ndim == 1 else self.q.shape[0]


def _example(name, q, p, labels, description, truth=None, weight=None) -> Example:
    def f64(x):
        return None if x is None else torch.as_tensor(x, dtype=torch.float64)
    return Example(name, f64(q), f64(p), tuple(labels), description, f64(truth), f64(weight))


_STORY_WORDS = ("sat", "ran", "slept", "sang", "ate", "<eos>")  # next word after "the cat"


@lru_cache(maxsize=4)
def _toy_examples(seed: int) -> Tuple[Example, ...]:
    world = ToyWorld(seed=seed)
    table = world.contexts()
    max_q, max_p = table.q.max(-1).values, table.p.max(-1).values

    def from_context(name: str, row: int, description: str) -> Example:
        a, b = table.contexts[row]
        where = f" (toy world, after '{world.tokens[a]} {world.tokens[b]}')"
        return _example(name, table.q[row], table.p[row], world.tokens, description + where, truth=table.P[row])

    # Among commonly visited contexts (>= 0.02 visits per sequence), where the verifier is surest
    # of itself relative to the drafter.
    common = table.weight >= 0.02
    confident_p = int(torch.where(common, max_p - max_q, torch.full_like(max_p, -math.inf)).argmax())
    blind_rows = table.blind.nonzero().flatten()
    blind = int(blind_rows[table.weight[blind_rows].argmax()])
    start = table.contexts.index((0, 0))
    return (
        # The toy drafter never exceeds max q = 0.44, so agreement and a confident drafter are hand-made.
        _example("agree", [0.70, 0.12, 0.08, 0.05, 0.03, 0.02], [0.74, 0.10, 0.07, 0.04, 0.03, 0.02],
                 _STORY_WORDS, "both models are confident of the same word after 'the cat'"),
        _example("confident drafter, unsure verifier", [0.80, 0.08, 0.05, 0.04, 0.02, 0.01],
                 [0.30, 0.25, 0.20, 0.13, 0.08, 0.04], _STORY_WORDS,
                 "the drafter is sure of 'sat', the verifier spreads its mass"),
        from_context("unsure drafter, confident verifier", confident_p,
                     "the verifier is far surer than the drafter, and right"),
        from_context("verifier blind spot", blind,
                     "the verifier confidently predicts a wrong word; the drafter is close to P"),
        from_context("both unsure", start, "the first word of a sentence: both models spread their mass"),
        _example("disjoint", [0.6, 0.4, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.3, 0.2], _STORY_WORDS,
                 "no word both models allow: D_TV(p, q) = 1"),
    )


def toy_examples(seed: int = 0) -> Dict[str, Example]:
    """The named single-context examples (a fresh dict each call; add your own to it).

    Three hand-made pairs over six words (`agree`, `confident drafter, unsure verifier`, `disjoint`)
    and three contexts of `ToyWorld(seed=seed)` with their truth $P$.
    """
    return {example.name: example for example in _toy_examples(seed)}


@lru_cache(maxsize=4)
def toy_world_inputs(seed: int = 0) -> Example:
    """Every reachable context of `ToyWorld(seed=seed)`, weighted by its visits under $P$.

    Averages over it are the per-token rates of `world.evaluate(..., prefixes="truth")`.
    """
    world = ToyWorld(seed=seed)
    table = world.contexts()
    return _example("toy world (every context)", table.q_unscaled, table.p_unscaled, world.tokens,
                    f"all {len(table.contexts)} contexts of the toy world, weighted by visits under P",
                    truth=table.P, weight=table.weight)


def get_example(example: Union[str, Example], examples: Optional[Dict[str, Example]] = None) -> Example:
    """`example` itself, or the example of that name in `examples` (default `toy_examples()`)."""
    if isinstance(example, Example):
        return example
    examples = toy_examples() if examples is None else examples
    if example not in examples:
        raise ValueError(f"unknown example {example!r}; choose one of: {', '.join(map(repr, examples))}, "
                         "or build one with `example_from_distributions`.")
    return examples[example]


def example_from_distributions(name: str, q, p, labels: Union[Sequence[str], Callable[[int], str], None] = None,
                               description: str = "") -> Example:
    """An example from any pair of temperature-1 next-token distributions of shape `(V,)`.

    `labels` names the tokens: a sequence of `V` strings, a function from token id to text (for
    example `lambda i: tokenizer.decode([i])`, called once per token of the vocabulary), or `None`
    for `#id`. The views compute on the whole vocabulary and draw only its most probable tokens.
    """
    q, p = torch.as_tensor(q, dtype=torch.float64), torch.as_tensor(p, dtype=torch.float64)
    if q.ndim != 1:
        raise ValueError(f"q has shape {tuple(q.shape)}; pass one next-token distribution of shape (V,).")
    V = q.shape[-1]
    if labels is None:
        labels = [f"#{i}" for i in range(V)]
    elif callable(labels):
        labels = [labels(i) for i in range(V)]
    return _example(name, q, p, labels, description)


# --------------------------------------------------------------------------------------------
# Sliders and small formulas
# --------------------------------------------------------------------------------------------

def slider_range(rule: str) -> Optional[Tuple[float, float]]:
    """The alpha slider's `(low, high)` for `rule` (low = SpecDecode end), or `None` if it ignores alpha."""
    return SLIDER_RANGES.get(_check_rule(rule))


def _check_rule(rule: str) -> str:
    if rule not in targets.RULES:
        raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(targets.RULES)}.")
    return rule


def alpha_at(rule: str, lenience: float) -> float:
    """The alpha a fraction `lenience` of the way along `rule`'s slider (0: SpecDecode end, 1: drafter end)."""
    if not 0.0 <= float(lenience) <= 1.0:
        raise ValueError(f"lenience={lenience} must lie in [0, 1] (0 = SpecDecode end, 1 = drafter end).")
    span = slider_range(rule)
    if span is None:
        return 0.0
    low, high = span
    return low + float(lenience) * (high - low)


def slider_grid(rule: str, n: int = 41) -> torch.Tensor:
    """`n` evenly spaced alphas over `rule`'s slider range (shape `(n,)`)."""
    if int(n) < 2:
        raise ValueError(f"n_alpha={n}: a curve needs at least its two ends (n_alpha >= 2).")
    span = slider_range(rule)
    if span is None:
        return torch.zeros(int(n), dtype=torch.float64)
    return torch.linspace(span[0], span[1], int(n), dtype=torch.float64)


def _check_gamma(gamma) -> int:
    if isinstance(gamma, bool) or not float(gamma).is_integer() or gamma < 1:
        raise ValueError(f"gamma={gamma}: the block size is a whole number of drafts, gamma >= 1.")
    return int(gamma)


def _check_temperature(temperature) -> float:
    temperature = float(temperature)
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature={temperature}: use T = 0 for greedy decoding or a finite T > 0.")
    return temperature


def scaled(probs, temperature: float) -> torch.Tensor:
    """Temperature-$T$ version of temperature-1 probabilities: $\\mathrm{softmax}(\\log \\text{probs} / T)$."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    logits = probs.clamp_min(1e-300).log().clamp_min(_LOG_FLOOR)
    return targets.probabilities(logits, _check_temperature(temperature))


def expected_tokens_per_call(acceptance: float, gamma: int) -> float:
    """$(1 - a^{\\gamma+1}) / (1 - a)$: tokens per verifier call if every draft is kept with probability $a$."""
    gamma = _check_gamma(gamma)
    a = float(acceptance)
    if not -1e-9 <= a <= 1.0 + 1e-9:
        raise ValueError(f"acceptance={a} is a probability; pass a value in [0, 1].")
    a = min(max(a, 0.0), 1.0)  # 1 - rho can miss [0, 1] by a rounding error of the sum in rho
    return float(gamma + 1) if a == 1.0 else (1.0 - a ** (gamma + 1)) / (1.0 - a)


def binomial_z(count: int, n: int, rho: float) -> Tuple[float, float, float]:
    """`(rate, stderr, z)` of `count` rejections in `n` draws against the predicted probability `rho`.

    The standard error $\\sqrt{\\rho(1-\\rho)/n}$ is the one of the prediction; where it is 0 (a draw
    is then always or never rejected) any deviation is infinitely unlikely: z is 0 or inf.
    """
    rate = count / n
    stderr = math.sqrt(max(rho * (1.0 - rho), 0.0) / n)
    if stderr == 0.0:
        return rate, 0.0, 0.0 if abs(rate - rho) < 1e-12 else math.inf
    return rate, stderr, (rate - rho) / stderr


# --------------------------------------------------------------------------------------------
# Notebook 01: one pair, one rule (target_view) and every rule at once (every_rule_view)
# --------------------------------------------------------------------------------------------

def _single(example: Union[str, Example], examples=None) -> Example:
    example = get_example(example, examples)
    if example.n_contexts != 1:
        raise ValueError(f"example {example.name!r} holds {example.n_contexts} contexts; this view shows "
                         "one pair (q, p): pick a single-context example.")
    return example


def _target(rule: str, q_unscaled, p_unscaled, alpha: float, temperature: float, beta: Beta):
    """`(q, p, pi)` at `temperature`; decisions use the temperature-1 distributions."""
    q, p = scaled(q_unscaled, temperature), scaled(p_unscaled, temperature)
    pi = targets.target_distribution(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta)
    return q, p, pi


def target_readouts(example: Union[str, Example], rule: str, alpha: float = 0.0, temperature: float = 1.0,
                    gamma: int = 5, beta: Beta = 1.0, *, examples=None) -> dict:
    """The numbers `target_view` shows for one pair: decision, D_TV, rejection, tokens per call.

    Keys: `decision` (a sentence), `defers` (the prefix decision; `None` for token and lossy rules),
    `deferral_weight` (mass of $\\pi$ taken from $p$; `None` for lossy), `acceptance_set` (token
    rules), `tv_distance` $D_{TV}(p, q)$ at `temperature`, `rejection_probability` $\\rho$,
    `lemma3_rejection` ($\\delta D_{TV}$ for mixtures, else `None`), `acceptance_rate` $1 - \\rho$,
    `expected_tokens_per_call`, `target_mass` ($\\sum_v \\pi(v)$; above 1 for lossy with $\\beta = 1$),
    and for lossy `beta` (the normalising value when `beta="normalize"`), plus `q`, `p`, `pi`.
    """
    example = _single(example, examples)
    _check_rule(rule)
    alpha = targets.check_alpha(rule, alpha)
    temperature, gamma = _check_temperature(temperature), _check_gamma(gamma)
    q, p, pi = _target(rule, example.q, example.p, alpha, temperature, beta)
    q_u, p_u = example.q, example.p
    tv = float(targets.tv_distance(p, q))
    rho = float(targets.rejection_probability(pi, q))
    out = dict(example=example.name, rule=rule, alpha=alpha, temperature=temperature, gamma=gamma,
               tv_distance=tv, rejection_probability=rho, acceptance_rate=1.0 - rho,
               expected_tokens_per_call=expected_tokens_per_call(1.0 - rho, gamma),
               target_mass=float(pi.sum()), defers=None, deferral_weight=None, acceptance_set=None,
               lemma3_rejection=None, q=q, p=p, pi=pi)
    weight = float(targets.deferral_weight(rule, q, p, alpha, q_unscaled=q_u, p_unscaled=p_u))
    max_q, max_p = float(q_u.max()), float(p_u.max())
    if rule == "lossy":
        beta_value = float(targets.lossy_beta(q, p, alpha)) if beta == "normalize" else float(beta)
        out["beta"] = beta_value
        out["decision"] = (f"no deferral decision: pi = max{{min{{q, p/(1-alpha)}}, p/beta}} with "
                           f"beta = {beta_value:.4g}; pi sums to {out['target_mass']:.3f}")
        return out
    out["deferral_weight"] = weight
    if rule in targets.TOKEN_RULES:
        in_set = targets.acceptance_set(rule, q, p, alpha, q_unscaled=q_u, p_unscaled=p_u)
        accepted = [example.labels[i] for i in in_set.nonzero().flatten().tolist()]
        out["acceptance_set"] = accepted
        out["decision"] = (f"keeps drafts in A = {{{', '.join(accepted)}}} (q(A) = {1 - weight:.3f}); "
                           f"the other {weight:.3f} of the mass comes from p")
        return out
    out["defers"] = bool(weight > 0.5)
    out["lemma3_rejection"] = weight * tv
    verdict = "defer to p" if out["defers"] else "keep q"
    if rule == "drafter":
        out["decision"] = "pi = q: every draft is kept"
    elif rule in ("spec", "verifier"):
        out["decision"] = "pi = p: always defers to the verifier"
    elif rule == "chow":
        out["decision"] = f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} 1 - alpha = {1 - alpha:.3f}: {verdict}"
    elif rule == "diff":
        out["decision"] = (f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} max p - alpha = "
                           f"{max_p - alpha:.3f}: {verdict}")
    elif rule == "opt":
        out["decision"] = (f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} max p - alpha D_TV = "
                           f"{max_p - alpha * tv:.3f}: {verdict}")
    else:  # bild: the distance of the temperature-1 distributions
        distance = float(targets.tv_distance(p_u, q_u))
        out["decision"] = (f"D_TV at T=1 = {distance:.3f} {'>' if out['defers'] else '<='} alpha = {alpha:.3f}: "
                           f"{verdict}")
    return out


def format_readouts(readouts: dict) -> str:
    """The read-outs of `target_readouts` as a few lines of text for a notebook."""
    lines = [f"decision: {readouts['decision']}",
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


def _rule_title(rule: str, alpha: float, beta: Beta = 1.0) -> str:
    if slider_range(rule) is None:
        return RULE_LABELS[rule]
    extra = "" if rule != "lossy" else (", β normalises" if beta == "normalize" else f", β={float(beta):g}")
    return f"{RULE_LABELS[rule]} (α={alpha:.2f}{extra})"


def target_view(example: Union[str, Example], rule: str, alpha: float = 0.0, temperature: float = 1.0,
                gamma: int = 5, beta: Beta = 1.0, *, examples=None, max_tokens: int = 16):
    """Widget callback: bars of $q$, $p$ and $\\pi$ for one pair and rule, and the read-outs.

    Returns `(plotly Figure, target_readouts(...))`.
    """
    readouts = target_readouts(example, rule, alpha, temperature, gamma, beta, examples=examples)
    example = _single(example, examples)
    rows = {"drafter q": readouts["q"], "verifier p": readouts["p"], "target π": readouts["pi"]}
    ids = _shown_tokens(list(rows.values()) + ([example.truth] if example.truth is not None else []), max_tokens)
    labels = [example.labels[i] for i in ids]
    fig = go.Figure()
    for color, (name, probs) in zip(_COLORS, rows.items()):
        fig.add_trace(go.Bar(x=labels, y=probs[ids].tolist(), name=name, marker_color=color))
    if example.truth is not None:
        fig.add_trace(go.Scatter(x=labels, y=example.truth[ids].tolist(), name="truth P", mode="markers",
                                 marker=dict(symbol="line-ew-open", size=22, color="black", line_width=2)))
    shown = "" if len(ids) == len(example.labels) else f" ({len(ids)} of {len(example.labels)} tokens)"
    fig.update_layout(
        barmode="group", height=420, legend=dict(orientation="h", y=1.02, x=0),
        title=dict(text=f"{example.name}: {_rule_title(rule, readouts['alpha'], beta)}, T={readouts['temperature']:g}"
                   f"{shown}<br><sup>{readouts['decision']}<br>D_TV = {readouts['tv_distance']:.3f}, "
                   f"rejection = {readouts['rejection_probability']:.3f}, tokens per call (γ={readouts['gamma']})"
                   f" = {readouts['expected_tokens_per_call']:.2f}</sup>", y=0.95),
        yaxis_title="probability", margin=dict(t=130))
    return fig, readouts


def plot_target_view(example: Union[str, Example], rule: str, alpha: float = 0.0, temperature: float = 1.0,
                     gamma: int = 5, beta: Beta = 1.0, *, examples=None, max_tokens: int = 16):
    """Static twin of `target_view` (matplotlib); returns the figure."""
    readouts = target_readouts(example, rule, alpha, temperature, gamma, beta, examples=examples)
    example = _single(example, examples)
    rows = {"drafter q": readouts["q"], "verifier p": readouts["p"], "target π": readouts["pi"]}
    ids = _shown_tokens(list(rows.values()) + ([example.truth] if example.truth is not None else []), max_tokens)
    fig, ax = plt.subplots(figsize=FIGURE_SIZE)
    plot_distributions({k: v[ids] for k, v in rows.items()}, [example.labels[i] for i in ids], ax=ax)
    if example.truth is not None:
        ax.scatter(range(len(ids)), example.truth[ids].tolist(), marker="_", s=300, color="black",
                   linewidths=2, label="truth P", zorder=3)
        ax.legend()
    ax.set_title(f"{example.name}: {_rule_title(rule, readouts['alpha'], beta)}, T={readouts['temperature']:g}\n"
                 f"{readouts['decision']}\nD_TV = {readouts['tv_distance']:.3f}, rejection = "
                 f"{readouts['rejection_probability']:.3f}, tokens per call (γ={readouts['gamma']}) = "
                 f"{readouts['expected_tokens_per_call']:.2f}", fontsize=9)
    return fig


def _every_rule_rows(example: Example, lenience: float, temperature: float):
    """Rows `label -> (pi, numbers)` for q, p and every variant at `alpha_at(rule, lenience)`."""
    q, p = scaled(example.q, temperature), scaled(example.p, temperature)
    rows = {"drafter q": (q, None), "verifier p": (p, None)}
    for label, rule, beta in VARIANTS:
        alpha = alpha_at(rule, lenience)
        _, _, pi = _target(rule, example.q, example.p, alpha, temperature, beta)
        numbers = dict(rule=rule, alpha=alpha, rejection=float(targets.rejection_probability(pi, q)),
                       deferral_weight=float(targets.deferral_weight(rule, q, p, alpha, q_unscaled=example.q,
                                                                    p_unscaled=example.p)))
        rows[label] = (pi, numbers)
    return rows


def _row_name(label: str, numbers: Optional[dict]) -> str:
    if numbers is None:
        return label
    alpha = "" if slider_range(numbers["rule"]) is None else f" α={numbers['alpha']:.3g}"
    return f"{label}{alpha} · rejects {numbers['rejection']:.2f}"


def every_rule_view(example: Union[str, Example], lenience: float = 0.5, temperature: float = 1.0, *,
                    examples=None, max_tokens: int = 16):
    """Widget callback: $q$, $p$ and every rule's $\\pi$ as one heatmap (rows) over the tokens (columns).

    Each rule sits at `alpha_at(rule, lenience)`. Returns `(plotly Figure, {label: numbers})` with
    each rule's alpha, rejection probability and deferral weight.
    """
    example = _single(example, examples)
    temperature = _check_temperature(temperature)
    rows = _every_rule_rows(example, lenience, temperature)
    ids = _shown_tokens([pi for pi, _ in rows.values()], max_tokens)
    z = [pi[ids].tolist() for pi, _ in rows.values()]
    names = [_row_name(label, numbers) for label, (_, numbers) in rows.items()]
    fig = go.Figure(go.Heatmap(z=z, x=[example.labels[i] for i in ids], y=names, colorscale="Blues", zmin=0,
                               zmax=1, text=[[f"{v:.2f}" if v >= 0.005 else "" for v in row] for row in z],
                               texttemplate="%{text}", colorbar_title="prob."))
    fig.update_layout(height=520, yaxis_autorange="reversed",
                      title=f"{example.name}: every rule at lenience {lenience:g} of its α range, T={temperature:g}")
    return fig, {label: numbers for label, (_, numbers) in rows.items() if numbers is not None}


def plot_every_rule(example: Union[str, Example], lenience: float = 0.5, temperature: float = 1.0, *,
                    examples=None, max_tokens: int = 16):
    """Static twin of `every_rule_view` (a seaborn heatmap); returns the figure."""
    example = _single(example, examples)
    temperature = _check_temperature(temperature)
    rows = _every_rule_rows(example, lenience, temperature)
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
    ax.set_title(f"{example.name}: every rule at lenience {lenience:g} of its α range, T={temperature:g}", fontsize=10)
    return fig


def rejection_table(examples: Optional[Dict[str, Example]] = None, lenience: float = 0.5,
                    temperature: float = 1.0) -> Dict[str, Dict[str, float]]:
    """`{example: {variant label: rejection probability}}` with every rule at `alpha_at(rule, lenience)`."""
    examples = toy_examples() if examples is None else examples
    temperature = _check_temperature(temperature)
    return {name: {label: numbers["rejection"] for label, (_, numbers) in
                   _every_rule_rows(example, lenience, temperature).items() if numbers is not None}
            for name, example in examples.items() if example.n_contexts == 1}


def lemma3_gap(example: Union[str, Example], temperature: float = 1.0, n_alpha: int = 21, *, examples=None) -> float:
    r"""Largest $|\rho - \delta D_{TV}(p, q)|$ of the read-outs over every mixture rule and `n_alpha`
    alphas spanning its slider range (0 up to rounding, by Lemma 3)."""
    gaps = []
    for rule in ("drafter", "verifier", "spec") + targets.PREFIX_RULES:
        for alpha in slider_grid(rule, n_alpha).tolist():
            out = target_readouts(example, rule, alpha, temperature, examples=examples)
            gaps.append(abs(out["rejection_probability"] - out["lemma3_rejection"]))
    return max(gaps)


def plot_examples(examples: Optional[Dict[str, Example]] = None, temperature: float = 1.0, max_tokens: int = 8):
    """Small bars of $q$ and $p$ (and the truth where known) for every single-context example."""
    examples = toy_examples() if examples is None else examples
    examples = [e for e in examples.values() if e.n_contexts == 1]
    n_cols = 3
    n_rows = math.ceil(len(examples) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=FIGURE_SIZE, squeeze=False)
    for ax, example in zip(axes.flat, examples):
        q, p = scaled(example.q, temperature), scaled(example.p, temperature)
        ids = _shown_tokens([q, p], max_tokens)
        xs = np.arange(len(ids))
        ax.bar(xs - 0.2, q[ids].tolist(), width=0.4, color=_COLORS[0], label="drafter q")
        ax.bar(xs + 0.2, p[ids].tolist(), width=0.4, color=_COLORS[1], label="verifier p")
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


def link_alpha_slider(rule_widget, alpha_widget) -> Callable:
    """Keep an ipywidgets alpha slider on the chosen rule's range, at the same lenience.

    Register it *before* `live_view` (or `ipywidgets.interactive`) observes the same widgets, so the
    slider has moved into the new range when the callback runs. Returns the observer.
    """
    def follow(change=None):
        rule = rule_widget.value
        span = slider_range(rule)
        if span is None:  # spec, drafter and verifier ignore alpha
            alpha_widget.disabled = True
            return
        old_span = slider_range(change["old"]) if change is not None else None
        if old_span is None:  # first call, or coming from a rule without alpha: keep the value if it fits
            alpha = min(max(alpha_widget.value, span[0]), span[1])
        else:
            lenience = (alpha_widget.value - old_span[0]) / (old_span[1] - old_span[0])
            alpha = alpha_at(rule, min(max(lenience, 0.0), 1.0))
        # Cross-validation of min <= value <= max waits until all three are set.
        with alpha_widget.hold_trait_notifications():
            alpha_widget.min, alpha_widget.max, alpha_widget.value = span[0], span[1], alpha
        alpha_widget.disabled = False

    rule_widget.observe(follow, names="value")
    follow()
    return follow


def live_view(callback: Callable, controls: Dict[str, ipywidgets.ValueWidget], *,
              describe: Optional[Callable[[dict], str]] = None, **fixed):
    """Controls above a figure that `callback(**values, **fixed)` redraws whenever a control changes.

    `callback` is one of the widget callbacks here, returning `(plotly Figure, numbers)`;
    `describe(numbers)` (optional) adds text under the figure. The result goes straight into the
    `Output` widget's state instead of being captured from the kernel's output stream as
    `ipywidgets.interactive` does: executed headlessly (papermill, nbclient 0.11) a cell with
    `interactive` and a plotly figure hung about one run in five here, this never did. Bad input shows
    its `ValueError` under the controls. Returns the `VBox` to display.
    """
    out = ipywidgets.Output()

    def redraw(change=None):
        try:
            fig, numbers = callback(**{name: widget.value for name, widget in controls.items()}, **fixed)
        except ValueError as error:
            out.outputs = ({"output_type": "stream", "name": "stderr", "text": f"{error}\n"},)
            return
        bundle = {"text/plain": f"<{type(fig).__name__}: {fig.layout.title.text}>", **fig._repr_mimebundle_()}
        outputs = [{"output_type": "display_data", "data": bundle, "metadata": {}}]
        if describe is not None:
            outputs.append({"output_type": "stream", "name": "stdout", "text": describe(numbers) + "\n"})
        out.outputs = tuple(outputs)

    for widget in controls.values():
        widget.observe(redraw, names="value")
    redraw()
    return ipywidgets.VBox(list(controls.values()) + [out])


# --------------------------------------------------------------------------------------------
# Notebook 02: rejection rate against alpha, and Lemma 3 by simulation
# --------------------------------------------------------------------------------------------

def _weights(example: Example) -> torch.Tensor:
    if example.n_contexts == 1:
        return torch.ones(1, dtype=torch.float64)
    return example.weight / example.weight.sum()


def rejection_curves(example: Union[str, Example, None] = None, temperature: float = 1.0, n_alpha: int = 41, *,
                     examples=None) -> dict:
    """Rejection rate against alpha for every variant of `CURVE_VARIANTS` on the same inputs.

    `example` is one pair or a weighted set of contexts (default: `toy_world_inputs()`); rates are
    averaged with the contexts' weights. Returns `{"spec": SpecDecode's rate, "curves": {label:
    {"rule", "beta", "alpha": [...], "rejection": [...]}}}`.
    """
    example = toy_world_inputs() if example is None else get_example(example, examples)
    temperature = _check_temperature(temperature)
    q_u, p_u = example.q.reshape(-1, example.q.shape[-1]), example.p.reshape(-1, example.p.shape[-1])  # (C, V)
    w = _weights(example)
    q, p = scaled(q_u, temperature), scaled(p_u, temperature)
    curves = {}
    for label, rule, beta in CURVE_VARIANTS:
        alphas = slider_grid(rule, n_alpha)
        rates = [float(w @ targets.rejection_probability(
            targets.target_distribution(rule, q, p, float(a), q_unscaled=q_u, p_unscaled=p_u, beta=beta), q))
            for a in alphas]
        curves[label] = dict(rule=rule, beta=beta, alpha=alphas.tolist(), rejection=rates)
    return dict(example=example.name, temperature=temperature, spec=float(w @ targets.tv_distance(p, q)),
                curves=curves)


def rejection_curves_view(example: Union[str, Example, None] = None, temperature: float = 1.0, n_alpha: int = 41,
                          *, examples=None):
    """Widget callback: one panel per variant, rejection rate against alpha. Returns `(Figure, curves)`."""
    result = rejection_curves(example, temperature, n_alpha, examples=examples)
    labels = list(result["curves"])
    fig = make_subplots(rows=3, cols=3, subplot_titles=labels, shared_yaxes=True,
                        horizontal_spacing=0.04, vertical_spacing=0.12)
    top = max([result["spec"]] + [max(c["rejection"]) for c in result["curves"].values()]) * 1.05 + 1e-3
    for k, (label, curve) in enumerate(result["curves"].items()):
        row, col = k // 3 + 1, k % 3 + 1
        fig.add_trace(go.Scatter(x=curve["alpha"], y=curve["rejection"], mode="lines", name=label,
                                 line_color=_COLORS[k], showlegend=False), row=row, col=col)
        fig.add_trace(go.Scatter(x=[curve["alpha"][0], curve["alpha"][-1]], y=[result["spec"]] * 2, mode="lines",
                                 line=dict(dash="dash", color="grey", width=1), name="SpecDecode",
                                 showlegend=k == 0), row=row, col=col)
        fig.update_xaxes(title_text="α" if row == 3 else None, row=row, col=col)
        fig.update_yaxes(range=[0, top], title_text="rejection rate" if col == 1 else None, row=row, col=col)
    fig.update_layout(height=650,
                      title=f"Rejection rate against α: {result['example']}, T={result['temperature']:g}")
    return fig, result


def plot_rejection_curves(result: dict):
    """Static twin of `rejection_curves_view`, from the `rejection_curves` result; returns the figure."""
    fig, axes = plt.subplots(3, 3, figsize=FIGURE_SIZE, sharey=True)
    for k, (ax, (label, curve)) in enumerate(zip(axes.flat, result["curves"].items())):
        ax.plot(curve["alpha"], curve["rejection"], color=_COLORS[k])
        ax.axhline(result["spec"], linestyle="--", color="grey", linewidth=1, label="SpecDecode")
        ax.set_title(label, fontsize=8, pad=2)
        ax.tick_params(labelsize=6)
        if k % 3 == 0:
            ax.set_ylabel("rejection rate", fontsize=7)
        if k >= 6:
            ax.set_xlabel("α", fontsize=7)
    axes.flat[0].legend(fontsize=6, loc="lower left")
    axes.flat[0].set_ylim(bottom=0)
    fig.suptitle(f"Rejection rate against α: {result['example']}, T={result['temperature']:g}", fontsize=9)
    return fig


def simulate_rejections(pi, q, n: int, generator: Optional[torch.Generator] = None) -> int:
    """How many of `n` drafts $x \\sim q$ `targets.verify_draft` rejects under target `pi` (one position)."""
    q = torch.as_tensor(q, dtype=torch.float64)
    pi = torch.as_tensor(pi, dtype=torch.float64)
    if int(n) < 1:
        raise ValueError(f"n={n}: simulate at least one draft.")
    V = q.shape[-1]
    q_rows, pi_rows = q.expand(int(n), V), pi.expand(int(n), V)  # (n, V): n independent drafts
    draft = targets.sample(q_rows, generator)
    _, accepted = targets.verify_draft(pi_rows, q_rows, draft, generator)
    return int((~accepted).sum())


def lemma3_check(examples: Optional[Dict[str, Example]] = None, rs: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
                 n: int = 20000, temperature: float = 1.0, seed: int = 0) -> List[dict]:
    """Lemma 3 by simulation: for each example and $r$, the empirical rejection rate of the mixture
    $\\pi = (1-r)q + rp$ against $r D_{TV}(p, q)$. One row per (example, r) with `predicted`,
    `empirical`, `stderr` and `z` (see `binomial_z`)."""
    examples = toy_examples() if examples is None else examples
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for example in examples.values():
        if example.n_contexts != 1:
            continue
        q, p = scaled(example.q, temperature), scaled(example.p, temperature)
        tv = float(targets.tv_distance(p, q))
        for r in rs:
            if not 0.0 <= r <= 1.0:
                raise ValueError(f"r={r}: a mixture weight lies in [0, 1].")
            pi = (1 - r) * q + r * p
            predicted = r * tv
            count = simulate_rejections(pi, q, n, generator)
            rate, stderr, z = binomial_z(count, n, predicted)
            rows.append(dict(example=example.name, r=r, tv_distance=tv, predicted=predicted, empirical=rate,
                             stderr=stderr, z=z, n=n))
    return rows


def rule_rejection_check(examples: Optional[Dict[str, Example]] = None, lenience: float = 0.5, n: int = 20000,
                         temperature: float = 1.0, seed: int = 1) -> List[dict]:
    """The same simulation for the targets that are not mixtures (lossy and the token rules): the
    empirical rate against $\\rho(\\pi, q) = \\sum_v \\max\\{0, q(v) - \\pi(v)\\}$ at `alpha_at(rule, lenience)`."""
    examples = toy_examples() if examples is None else examples
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for example in examples.values():
        if example.n_contexts != 1:
            continue
        for label, rule, beta in VARIANTS:
            if rule != "lossy" and rule not in targets.TOKEN_RULES:
                continue
            alpha = alpha_at(rule, lenience)
            q, _, pi = _target(rule, example.q, example.p, alpha, temperature, beta)
            predicted = float(targets.rejection_probability(pi, q))
            rate, stderr, z = binomial_z(simulate_rejections(pi, q, n, generator), n, predicted)
            rows.append(dict(example=example.name, rule=label, alpha=alpha, predicted=predicted, empirical=rate,
                             stderr=stderr, z=z, n=n))
    return rows


def lemma3_figure(rows: Sequence[dict]):
    """Plotly: simulated against predicted rejection (left) and their difference with ±2 se bars (right)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("simulated against r·D_TV",
                                                         "simulated − r·D_TV (±2 standard errors)"))
    names = list(dict.fromkeys(row["example"] for row in rows))
    for k, name in enumerate(names):
        mine = [row for row in rows if row["example"] == name]
        x = [row["predicted"] for row in mine]
        hover = [f"{name}<br>r={row['r']:g}, z={row['z']:+.2f}" for row in mine]
        fig.add_trace(go.Scatter(x=x, y=[row["empirical"] for row in mine], mode="markers", name=name,
                                 marker_color=_COLORS[k], hovertext=hover, hoverinfo="text",
                                 error_y=dict(array=[2 * row["stderr"] for row in mine])), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=[row["empirical"] - row["predicted"] for row in mine], mode="markers",
                                 marker_color=_COLORS[k], hovertext=hover, hoverinfo="text", showlegend=False,
                                 error_y=dict(array=[2 * row["stderr"] for row in mine])), row=1, col=2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(dash="dash", color="grey"),
                             name="Lemma 3"), row=1, col=1)
    fig.add_hline(0, line_dash="dash", line_color="grey", row=1, col=2)
    fig.update_xaxes(title_text="r · D_TV(p, q)")
    fig.update_yaxes(title_text="rejection rate", row=1, col=1)
    draws = sorted({row["n"] for row in rows})
    fig.update_layout(height=430, title=f"Lemma 3 by simulation: targets.verify_draft on "
                                        f"{', '.join(map(str, draws))} drafts per point")
    return fig


def plot_lemma3(rows: Sequence[dict]):
    """Static twin of `lemma3_figure`; returns the figure."""
    fig, (left, right) = plt.subplots(1, 2, figsize=FIGURE_SIZE)
    names = list(dict.fromkeys(row["example"] for row in rows))
    for k, name in enumerate(names):
        mine = [row for row in rows if row["example"] == name]
        x = np.array([row["predicted"] for row in mine])
        y = np.array([row["empirical"] for row in mine])
        bars = 2 * np.array([row["stderr"] for row in mine])
        left.errorbar(x, y, yerr=bars, fmt="o", markersize=3, color=_COLORS[k], label=name)
        right.errorbar(x, y - x, yerr=bars, fmt="o", markersize=3, color=_COLORS[k], capsize=2)
    left.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="Lemma 3: r·D_TV")
    right.axhline(0, linestyle="--", color="grey", linewidth=1)
    left.set(xlabel="r · D_TV(p, q)", ylabel="simulated rejection rate", title="simulated against predicted")
    right.set(xlabel="r · D_TV(p, q)", ylabel="simulated − predicted", title="difference, ±2 standard errors")
    left.legend(fontsize=6, loc="upper left")
    for ax in (left, right):
        ax.title.set_fontsize(9)
    draws = sorted({row["n"] for row in rows})
    fig.suptitle(f"Lemma 3 by simulation: targets.verify_draft on {', '.join(map(str, draws))} drafts per point",
                 fontsize=10)
    return fig
