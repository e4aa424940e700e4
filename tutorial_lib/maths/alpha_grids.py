r"""Live alpha grids: where each rule's $\alpha$ changes a decision, and alphas placed along a curve.

**Live ranges.** Every rule defers (or shrinks its acceptance set) as $\alpha$ falls, from its
drafter end (target $q$) to its SpecDecode end (target $p$; Token-V3's $\alpha = 0$ still accepts
$p$'s top token). The decisions use the temperature-1 laws (`targets.deferral_decision`), so the
range over which they change does not depend on $T$: Chow $[0, 1]$, Diff $[-1, 1]$, Token-V1/V2
$[-1, 1]$, Token-V3 $[0, 1]$, lossy $[0, 1)$, BiLD* $[0, 1]$ (`rules.LIVE_ALPHA_RANGES`).

**OPT** defers where $\max q < \max p - \alpha\, D_{TV}(p_T, q_T)$; its TV term is computed on the
temperature-scaled laws. With $g = \max p - \max q$ (temperature 1) and $D = D_{TV}(p_T, q_T)$, a
position with $D > 0$ defers iff $\alpha < g / D$: its decision switches at $\alpha = g/D$
(`opt_switch_points`), and a position with $D = 0$ ignores $\alpha$. So OPT's live range is
$[\min g/D, \max g/D]$ over the positions a run meets (`opt_live_range`):

- at $T = 1$, $|\max p - \max q| \le D_{TV}(p, q)$, so every switch point lies in $[-1, 1]$: OPT
  never defers for $\alpha \ge 1$ and defers wherever $p \ne q$ for $\alpha < -1$;
- at $T = 0$ the scaled laws are one-hot, $D = 1(\arg\max p \ne \arg\max q)$: where the argmaxes
  differ OPT($\alpha$) is Diff($\alpha$), and where they agree both targets put all their mass on the
  same token. So **at $T = 0$ OPT($\alpha$) emits exactly Diff($\alpha$)'s tokens** (with the same
  rejections), and its live range is Diff's, $[-1, 1]$; only its counted deferral decisions differ;
- at other $T$, $D_{TV}(p_T, q_T)$ can be far smaller than $D_{TV}(p, q)$ ($T > 1$ flattens both
  laws), so $g/D$ is unbounded: derive the range from the distributions a run meets
  (`opt_live_range(q_logits, p_logits, T)`) and pass the grid to `sweep_configs(alphas=...)`;
  `live_alpha_grid("opt", n, T)` refuses to guess there.

**Placing alphas along a curve** (`alphas_at_rejection_quantiles`). A grid even in $\alpha$ wastes
points where the rejection rate $r(\alpha)$ is flat (Diff below $-0.8$ barely moves on a real pair).
Instead, given a measured curve $r(\alpha)$ (the token-level analysis of `token_curves`, or a pilot
run's `analysis.summarize` rows), the $k$ interior alphas are placed at the rejection levels
$$r_j = r_{\rm spec} - \tfrac{j}{k+1}\,(r_{\rm spec} - r_{\rm drafter}),\qquad j = 1..k,$$
evenly spaced between the curve's two ends, by inverting its monotone envelope
($\tilde r(\alpha) = \max_{\alpha' \ge \alpha} r(\alpha')$, which is $r$ wherever $r$ falls) with
linear interpolation between grid points. The levels are those of the pooled, token-weighted
curve of all items (all tasks) of the analysis, at its temperature.

**At $T = 0$ the curve is a staircase** (`plateau_alphas`). A rule then emits the drafter's or the
verifier's top token, and each position's decision switches at one $\alpha$: $r(\alpha)$ is constant
between switch points. Interpolating a staircase puts several alphas on one step (one behaviour, the
same texts), so at $T = 0$ the alphas are taken from the plateaus themselves: the grid's runs of equal
rejection rate between the two end plateaus, $k$ of them evenly spread in rejection level, each
represented by its middle grid point. A rule with no interior plateau (Lossy, which at $T = 0$ is
SpecDecode for every $\alpha < 1$) gets none: its runs would repeat SpecDecode's.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np
import pandas as pd

from . import rules
from . import laws

__all__ = [
    "evaluation_label",
    "live_range",
    "live_alpha_grid",
    "opt_switch_points",
    "opt_live_range",
    "token_rejection_curve",
    "summary_rejection_curve",
    "alphas_at_levels",
    "alphas_at_rejection_quantiles",
    "placed_alphas",
    "plateaus",
    "plateau_alphas",
]


def evaluation_label(curve: str) -> str:
    """The evaluation's curve label (`sweeps.configs.CURVES`, the rows' `label`) of a curve name of the
    token-level analysis (`token_analysis.CURVES`): the rule's curve in `rules.RULE_TABLE`, and "Lossy*" for
    `lossy*` (lossy with the normalising beta)."""
    if curve == "lossy*":
        return "Lossy*"
    label = rules.rule(curve).curve
    if label is None:
        raise ValueError(f"rule {curve!r} draws no curve of its own in the evaluation; pick a rule with one.")
    return label


def live_range(rule: str, temperature: float = 1.0) -> tuple:
    """`(low, high)`: the alphas between which `rule`'s decisions change (SpecDecode end first).
    OPT's is $[-1, 1]$ at $T \\in \\{0, 1\\}$ and depends on the distributions elsewhere (ValueError)."""
    rules.check_rule(rule)
    if rule not in rules.LIVE_ALPHA_RANGES:
        raise ValueError(f"rule {rule!r} has no alpha; rules with one: {', '.join(rules.LIVE_ALPHA_RANGES)}.")
    if rule == "opt" and temperature not in (0.0, 1.0):
        raise ValueError(
            f"OPT's live range at T={temperature} depends on the distributions (its TV term is on the "
            "temperature-scaled laws): derive it with alpha_grids.opt_live_range(q_logits, p_logits, T) "
            "and pass the grid as sweep_configs(alphas={'SpecCascade [OPT]': [...]})."
        )
    return rules.LIVE_ALPHA_RANGES[rule]


def live_alpha_grid(rule: str, n: int, temperature: float = 1.0) -> np.ndarray:
    """`n` evenly spaced alphas over `live_range(rule, temperature)`, both ends included (lossy stops at
    0.99)."""
    if n < 2:
        raise ValueError(f"n={n}: a grid needs at least its two ends.")
    low, high = live_range(rule, temperature)
    return np.linspace(low, 0.99 if rule == "lossy" else high, n)


def opt_switch_points(q_logits, p_logits, temperature: float) -> np.ndarray:
    r"""Per position, the alpha $g/D$ at which OPT's decision switches (defer iff $\alpha < g/D$),
    $g = \max p - \max q$ at $T = 1$, $D = D_{TV}(p_T, q_T)$; positions with $D = 0$ (alpha-blind) are
    left out. `q_logits`, `p_logits`: shape `(..., V)`."""
    q_scaled, p_scaled = (
        laws.probabilities(q_logits, temperature),
        laws.probabilities(p_logits, temperature),
    )
    q1, p1 = laws.probabilities(q_logits, 1.0), laws.probabilities(p_logits, 1.0)
    gap = (p1.max(-1).values - q1.max(-1).values).double().reshape(-1)
    distance = laws.tv_distance(p_scaled, q_scaled).double().reshape(-1)
    live = distance > 0
    return (gap[live] / distance[live]).numpy()


def opt_live_range(q_logits, p_logits, temperature: float) -> tuple:
    """`(low, high)` of `opt_switch_points`: OPT's live range on these distributions ((0, 0) when none is
    live)."""
    points = opt_switch_points(q_logits, p_logits, temperature)
    return (float(points.min()), float(points.max())) if len(points) else (0.0, 0.0)


def token_rejection_curve(result, curve: str, task: Optional[str] = None) -> tuple:
    """`(alphas, rejection)` of a token-analysis curve (`token_curves.TokenAnalysis`): the token-weighted
    mean rejection rate per grid alpha over the items of `task` (all when None), as `summarise` gives it."""
    from .token_analysis import STATS

    if curve not in result.grid.alphas:
        raise ValueError(f"curve {curve!r} is not in this analysis; curves: {', '.join(result.grid.alphas)}.")
    members = (
        np.arange(len(result.tasks)) if task is None else np.flatnonzero(np.asarray(result.tasks) == task)
    )
    if len(members) == 0:
        raise ValueError(f"no items of task {task!r}; tasks here: {', '.join(dict.fromkeys(result.tasks))}.")
    block = result.sums[members][:, result.grid.slice(curve), STATS.index("rejection")]
    return np.asarray(result.grid.alphas[curve], float), block.sum(0) / result.counts[members].sum()


def summary_rejection_curve(summary: pd.DataFrame, label: str, **where) -> tuple:
    """`(alphas, rejection)` of one label of an `analysis.summarize` table (a pilot run), restricted by
    `where` (e.g. `temperature=1.0, task="code"`); several tasks are averaged per alpha."""
    part = summary[summary["label"] == label]
    for column, value in where.items():
        part = part[part[column] == value]
    if part.empty:
        raise ValueError(
            f"no points of {label!r} with {where}; labels here: {', '.join(summary['label'].unique())}."
        )
    curve = part.groupby("alpha")["rejection_rate"].mean()
    return curve.index.to_numpy(float), curve.to_numpy(float)


def alphas_at_levels(
    alphas: Sequence[float], rejection: Sequence[float], levels: Sequence[float]
) -> np.ndarray:
    """The alphas at which the curve's monotone envelope (falling in alpha) first comes down to each
    level, by linear interpolation between neighbouring grid points."""
    alphas, rejection = np.asarray(alphas, float), np.asarray(rejection, float)
    if alphas.shape != rejection.shape or len(alphas) < 2:
        raise ValueError("give at least two (alpha, rejection) points, as arrays of one length.")
    order = np.argsort(alphas)
    alphas, rejection = alphas[order], rejection[order]
    envelope = np.maximum.accumulate(rejection[::-1])[::-1]  # max over alpha' >= alpha: non-increasing
    out = []
    for level in levels:
        if not envelope[-1] <= level <= envelope[0]:
            raise ValueError(
                f"rejection level {level} lies outside the curve's [{envelope[-1]}, {envelope[0]}]."
            )
        i = int(np.argmax(envelope <= level))  # first grid point at or below the level
        if i == 0:
            out.append(alphas[0])
            continue
        r0, r1 = envelope[i - 1], envelope[i]
        out.append(alphas[i - 1] + (r0 - level) / (r0 - r1) * (alphas[i] - alphas[i - 1]))
    return np.asarray(out)


def alphas_at_rejection_quantiles(
    source, curve: str, k: int, *, task: Optional[str] = None, digits: int = 4, **where
) -> np.ndarray:
    """`k` interior alphas of `curve` whose rejection rates split the curve's range into `k + 1`
    equal steps (see the module docstring). `source`: a `token_curves.TokenAnalysis` (`curve` a token
    curve name, e.g. "diff"), or an `analysis.summarize` table of a pilot run (`curve` a label; `where`
    restricts it, e.g. `temperature=1.0`). Rounded to `digits` decimals, increasing."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r}: ask for at least one interior alpha.")
    if isinstance(source, pd.DataFrame):
        alphas, rejection = summary_rejection_curve(
            source, curve, **({"task": task} if task else {}), **where
        )
    else:
        alphas, rejection = token_rejection_curve(source, curve, task)
    order = np.argsort(alphas)
    top, bottom = rejection[order][0], rejection[order][-1]
    if not top > bottom:
        raise ValueError(
            f"curve {curve!r} does not fall from its SpecDecode end to its drafter end "
            f"(rejection {top} -> {bottom}); nothing to spread alphas along."
        )
    levels = top - np.arange(1, k + 1) / (k + 1) * (top - bottom)
    placed = np.round(alphas_at_levels(alphas, rejection, levels), digits)
    return np.unique(placed)


def placed_alphas(
    result,
    k: int,
    *,
    curves: Sequence[str] = ("chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "lossy"),
    task: Optional[str] = None,
    ends: bool = False,
) -> Dict[str, list]:
    """`{evaluation label: [alphas]}` for `sweep_configs(alphas=...)`: `k` interior alphas per curve
    from a token analysis, plus the measured end that no other run stands for (Token-V3's
    $\\alpha = 0$, which is not SpecDecode; see `analysis.with_rule_ends`). `ends=True` adds both
    ends of each live range (lossy's drafter end as 0.999, its limit 1 being excluded): for runs
    with a bonus token (`gamma > 1`), whose ends are not the drafter's or SpecDecode's runs."""
    out = {}
    for curve in curves:
        alphas = alphas_at_rejection_quantiles(result, curve, k, task=task).tolist()
        rule = curve.rstrip("*")
        low, high = rules.LIVE_ALPHA_RANGES[rule]
        if ends:
            alphas = [low] + alphas + [0.999 if rule == "lossy" else high]
        elif not rules.rule(rule).spec_end:  # Token-V3's alpha = 0: a run no other stands for
            alphas = [low] + alphas
        out[evaluation_label(curve)] = [float(a) for a in dict.fromkeys(alphas)]
    return out


def plateaus(alphas: Sequence[float], rejection: Sequence[float], *, tolerance: float = 1e-9) -> list:
    """The runs of equal rejection rate of a sampled curve, in increasing alpha: `[(first alpha, last
    alpha, middle grid alpha, rate)]`. Neighbouring grid points whose rates differ by at most
    `tolerance` belong to one run."""
    alphas, rejection = np.asarray(alphas, float), np.asarray(rejection, float)
    if alphas.shape != rejection.shape or len(alphas) < 1:
        raise ValueError("give (alpha, rejection) points as two arrays of one length.")
    order = np.argsort(alphas)
    alphas, rejection = alphas[order], rejection[order]
    runs, start = [], 0
    for i in range(1, len(alphas) + 1):
        if i == len(alphas) or abs(rejection[i] - rejection[start]) > tolerance:
            runs.append(
                (
                    float(alphas[start]),
                    float(alphas[i - 1]),
                    float(alphas[(start + i - 1) // 2]),
                    float(rejection[start]),
                )
            )
            start = i
    return runs


def plateau_alphas(
    result, curve: str, k: int, *, task: Optional[str] = None, ends: bool = True, digits: int = 4
) -> list:
    """Up to `k` alphas of a staircase curve (a $T = 0$ token analysis), one per interior plateau,
    the plateaus chosen evenly in rejection level; with `ends`, the rule's two live-range ends too.
    A curve with no interior plateau gives `[]` (every alpha below its drafter end behaves alike)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r}: ask for at least one interior alpha.")
    alphas, rejection = token_rejection_curve(result, curve, task)
    interior = plateaus(alphas, rejection)[1:-1]
    if not interior:
        return []
    if len(interior) > k:  # k plateaus nearest to evenly spaced levels, each taken once
        top, bottom = interior[0][3], interior[-1][3]
        levels = top - np.arange(k) / max(k - 1, 1) * (top - bottom)
        chosen = sorted({int(np.argmin([abs(run[3] - level) for run in interior])) for level in levels})
        interior = [interior[i] for i in chosen]
    placed = [round(run[2], digits) for run in interior]
    if ends:
        low, high = rules.LIVE_ALPHA_RANGES[curve.rstrip("*")]
        placed = [low] + placed + [0.999 if curve.startswith("lossy") else high]
    return [float(a) for a in dict.fromkeys(placed)]
