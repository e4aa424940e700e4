r"""Lemmas 1 and 4 on a toy world: each context's two risk lines, switch points, and risks summed over
contexts.

For one prefix $x_{<t}$ the risks of equations (3) and (8) are linear in the deferral decision $r$:

$$R(r) = (1 - r)\,\mathbb{E}_P[\ell(x, q_t)] + r\,\big(\mathbb{E}_P[\ell(x, p_t)] + \alpha\,w_t\big),
\qquad w_t = 1 \text{ (eq. 3, Lemma 1)}, \quad w_t = D_{TV}(p_t, q_t) \text{ (eq. 8, Lemma 4)},$$

so the optimal rule defers exactly when $\alpha$ lies below the *switch point*
$\alpha^*_t = (\mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]) / w_t$. A plug-in rule has the same
form with the models' own estimates of the expected losses ($1 - \max q$, $1 - \max p$ for 0-1 loss,
the entropies $H(q_t)$, $H(p_t)$ for log loss), so it switches somewhere else. Summed over contexts,
each weighted by its expected visits $w_c$ under $P$, the per-token risk is $\sum_c w_c R_c(r_c) / \sum_c w_c$
(`lemmas.total_risk`). The risks and closed forms themselves live in `lemmas`.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import torch

from ..maths import lemmas
from ..maths import laws
from ..checks import check_loss, check_temperature
from ..toy.examples import check_context, context_name, default_world, reshaped_world
from ..toy.toyworld import ToyWorld

__all__ = [
    "LEMMA_ALPHA_RANGES",
    "PLUGINS",
    "PLUGIN_NAMES",
    "LOSS_NAMES",
    "check_lemma",
    "check_lemma_alpha",
    "lemma_alpha_grid",
    "plugin_estimates",
    "context_risks",
    "context_risk_lines",
    "total_risks",
    "plugin_agreement",
    "reshaped_total_risks",
    "excess_risks",
    "brute_force_check",
    "miscalibration_sweep",
]

#: The `alpha` range each lemma's views and sweeps span, per loss. `alpha >= 0` is a cost (the paper's
#: setting); the upper ends cover every switch point of the default toy world (0-1 losses differ by at
#: most 1, log losses by a few nats, and Lemma 4 divides the gap by D_TV <= 1).
LEMMA_ALPHA_RANGES = {
    1: {"zero_one": (0.0, 1.0), "log": (0.0, 3.0)},
    4: {"zero_one": (0.0, 2.0), "log": (0.0, 5.0)},
}
#: The plug-in rules of each lemma, and how the lessons name them.
PLUGINS = {1: ("chow", "diff"), 4: ("opt",)}
PLUGIN_NAMES = {"chow": "Chow plug-in", "diff": "Diff plug-in", "opt": "OPT plug-in"}
LOSS_NAMES = {"zero_one": "0-1 loss", "log": "log loss"}


def check_lemma(lemma) -> int:
    if lemma not in LEMMA_ALPHA_RANGES:
        raise ValueError(
            f"lemma={lemma!r}: these views cover Lemma 1 (eq. 3) and Lemma 4 (eq. 8); pass 1 or 4."
        )
    return lemma


def check_lemma_alpha(lemma: int, loss: str, alpha) -> float:
    low, high = LEMMA_ALPHA_RANGES[check_lemma(lemma)][check_loss(loss)]
    alpha = float(alpha)
    if not low <= alpha <= high:
        raise ValueError(
            f"alpha={alpha} is outside [{low}, {high}], the range of Lemma {lemma}'s views for the "
            f"{LOSS_NAMES[loss]}; pick alpha in that range."
        )
    return alpha


def lemma_alpha_grid(lemma: int, loss: str, n: int) -> torch.Tensor:
    """`n` values of `alpha` spanning `LEMMA_ALPHA_RANGES[lemma][loss]`."""
    if n < 2:
        raise ValueError(f"n={n}: a grid needs at least its two ends.")
    low, high = LEMMA_ALPHA_RANGES[check_lemma(lemma)][check_loss(loss)]
    return torch.linspace(low, high, n, dtype=torch.float64)


def _risk_fn(lemma: int):
    return lemmas.deferral_risk if lemma == 1 else lemmas.speculative_deferral_risk


def _optimal_fn(lemma: int):
    return lemmas.optimal_deferral if lemma == 1 else lemmas.optimal_speculative_deferral


def plugin_estimates(q: torch.Tensor, p: torch.Tensor, loss: str) -> Tuple[float, float]:
    r"""What the plug-ins put in place of $\mathbb{E}_P[\ell(x, q)]$ and $\mathbb{E}_P[\ell(x, p)]$:
    $1 - \max$ for 0-1 loss, the entropy $H = -\sum_v m(v) \log m(v)$ for log loss."""
    if check_loss(loss) == "zero_one":
        return 1.0 - float(q.max()), 1.0 - float(p.max())
    entropy = lambda m: float(-(m * torch.where(m > 0, m.log(), torch.zeros_like(m))).sum())  # noqa: E731
    return entropy(q), entropy(p)


def context_risks(
    world: Optional[ToyWorld], context_index: int, loss: str = "zero_one", lemma: int = 1
) -> dict:
    r"""The numbers behind one context's risk lines, for Lemma 1 or Lemma 4.

    `loss_q`, `loss_p` are $\mathbb{E}_P[\ell(x, q_t)]$, $\mathbb{E}_P[\ell(x, p_t)]$; `weight` is $w_t$
    (1 or $D_{TV}$); `optimal_switch` the $\alpha$ below which the optimal rule defers (None when it
    never does: $w_t = 0$); `plugin_switch` the same for each plug-in, from the models' own estimates.
    """
    world = world or default_world()
    check_lemma(lemma)
    check_loss(loss)
    row = check_context(world, context_index)
    t = world.contexts()
    P, q, p = t.P[row], t.q[row], t.p[row]
    loss_q = float(lemmas.expected_loss(P, q, loss))
    loss_p = float(lemmas.expected_loss(P, p, loss))
    tv = float(laws.tv_distance(p, q))
    weight = 1.0 if lemma == 1 else tv
    est_q, est_p = plugin_estimates(q, p, loss)
    gap = {"chow": est_q, "diff": est_q - est_p, "opt": est_q - est_p}
    # w = 0: deferring is free, never strictly better
    switch = lambda g: g / weight if weight > 0 else None
    return dict(
        context=t.contexts[row],
        name=context_name(world, t, row),
        blind=bool(t.blind[row]),
        weight_visits=float(t.weight[row]),
        loss_q=loss_q,
        loss_p=loss_p,
        tv=tv,
        weight=weight,
        optimal_switch=switch(loss_q - loss_p),
        plugin_switch={PLUGIN_NAMES[r]: switch(gap[r]) for r in PLUGINS[lemma]},
        P=P,
        q=q,
        p=p,
    )


def context_risk_lines(
    world: Optional[ToyWorld], lemma: int, context_index: int, alpha: float, loss: str, n: int = 201
) -> dict:
    r"""One context's risk against $\alpha$ on `n` points of the lemma's range: `keep` $R(0)$, `defer` $R(1)$,
    `optimal` $\min\{R(0), R(1)\}$, and per plug-in the true risk of the decision it makes from its own
    estimates (`plugins`) and its decision at `alpha` (`decisions`); `optimal_defers` at `alpha`."""
    alpha = check_lemma_alpha(lemma, loss, alpha)
    c = context_risks(world, context_index, loss, lemma)
    alphas = lemma_alpha_grid(lemma, loss, n)
    keep = torch.full_like(alphas, c["loss_q"])
    defer = c["loss_p"] + alphas * c["weight"]
    plugins, decisions = {}, {}
    for rule in PLUGINS[lemma]:
        defers = torch.tensor(
            [bool(lemmas.plugin_deferral(rule, c["q"], c["p"], float(a), loss)) for a in alphas]
        )
        plugins[PLUGIN_NAMES[rule]] = torch.where(defers, defer, keep)
        decisions[PLUGIN_NAMES[rule]] = bool(lemmas.plugin_deferral(rule, c["q"], c["p"], alpha, loss))
    return dict(
        c,
        alpha=alpha,
        alphas=alphas,
        keep=keep,
        defer=defer,
        optimal=torch.minimum(keep, defer),
        plugins=plugins,
        decisions=decisions,
        optimal_defers=c["optimal_switch"] is not None and alpha < c["optimal_switch"],
    )


def total_risks(world: Optional[ToyWorld], lemma: int, loss: str, alphas) -> dict:
    r"""Per-token deferral risk summed over contexts, $\sum_c w_c R_c(r_c) / \sum_c w_c$, with prefixes
    from $P$.

    `w_c` is the expected number of visits of context `c` under $P$ (the $\mathbb{E}_{x_{<t}}$ of the
    lemmas). Returns `{"alpha": [...], "risk": {rule: [...]}, "deferral_rate": {rule: [...]}}` for
    keeping `q` everywhere, deferring everywhere, the optimal rule and the plug-ins (for Lemma 4 also
    Lemma 1's optimal rule, which ignores the D_TV factor).
    """
    world = world or default_world()
    check_lemma(lemma)
    check_loss(loss)
    t = world.contexts()
    risk = _risk_fn(lemma)
    ones = torch.ones(len(t.contexts), dtype=torch.float64)
    out = {"alpha": [], "risk": {}, "deferral_rate": {}}
    for alpha in [float(a) for a in alphas]:
        check_lemma_alpha(lemma, loss, alpha)
        rules = {
            "keep q (r = 0)": 0 * ones,
            "defer to p (r = 1)": ones,
            f"optimal (Lemma {lemma})": _optimal_fn(lemma)(t.P, t.q, t.p, alpha, loss).double(),
        }
        if lemma == 4:
            rules["Lemma 1's optimal rule"] = lemmas.optimal_deferral(t.P, t.q, t.p, alpha, loss).double()
        for rule in PLUGINS[lemma]:
            rules[PLUGIN_NAMES[rule]] = lemmas.plugin_deferral(rule, t.q, t.p, alpha, loss).double()
        out["alpha"].append(alpha)
        for name, r in rules.items():
            out["risk"].setdefault(name, []).append(
                lemmas.total_risk(t.weight, risk(r, t.P, t.q, t.p, alpha, loss))
            )
            out["deferral_rate"].setdefault(name, []).append(lemmas.total_risk(t.weight, r))
    return out


def plugin_agreement(world: Optional[ToyWorld], lemma: int, loss: str, alphas) -> Dict[str, float]:
    """How often each plug-in makes the optimal decision: the visit-weighted share of contexts where it
    agrees with Lemma 1's (or 4's) rule, averaged over `alphas`."""
    world = world or default_world()
    t = world.contexts()
    alphas = [check_lemma_alpha(lemma, loss, float(a)) for a in alphas]
    out = {}
    for rule in PLUGINS[lemma]:
        shares = [
            lemmas.total_risk(
                t.weight,
                (
                    lemmas.plugin_deferral(rule, t.q, t.p, a, loss)
                    == _optimal_fn(lemma)(t.P, t.q, t.p, a, loss)
                ).double(),
            )
            for a in alphas
        ]
        out[PLUGIN_NAMES[rule]] = sum(shares) / len(shares)
    return out


def reshaped_total_risks(
    world: Optional[ToyWorld],
    lemma: int,
    loss: str,
    drafter_sharpness: float,
    verifier_sharpness: float,
    n_alpha: int,
) -> dict:
    """`total_risks` in `world` with its drafter / verifier sharpened (> 1) or flattened (< 1), and in the
    world as built: `{"alpha", "here", "built", "reshaped": whether any sharpness differs}`."""
    base = world or default_world()
    for name, value in (("drafter_sharpness", drafter_sharpness), ("verifier_sharpness", verifier_sharpness)):
        if not float(value) > 0:
            raise ValueError(f"{name}={value} must be > 0 (1 = the models as built).")
    changes = dict(drafter_sharpness=float(drafter_sharpness), verifier_sharpness=float(verifier_sharpness))
    alphas = lemma_alpha_grid(lemma, loss, n_alpha)
    return dict(
        alpha=alphas,
        here=total_risks(reshaped_world(base, **changes), lemma, loss, alphas),
        built=total_risks(base, lemma, loss, alphas),
        reshaped=any(base.settings[k] != v for k, v in changes.items()),
    )


def brute_force_check(
    world: Optional[ToyWorld],
    lemma: int,
    alphas_per_loss: Dict[str, Sequence[float]],
    temperatures: Sequence[float] = (1.0,),
    grid: int = 101,
) -> dict:
    """Brute-force minimisers of equation (3) or (8) against the closed form, on every context and grid point.

    Returns `points_checked` (contexts x alphas x losses x temperatures), `mismatches`, and the first
    few mismatches as `(loss, T, alpha, context)` so a failure can be looked at.
    """
    world = world or default_world()
    check_lemma(lemma)
    checked, bad = 0, []
    for T in temperatures:
        t = world.contexts(check_temperature(T))
        for loss, alphas in alphas_per_loss.items():
            check_loss(loss)
            for alpha in [float(a) for a in alphas]:
                brute = lemmas.brute_force_deferral(_risk_fn(lemma), t.P, t.q, t.p, alpha, loss, grid=grid)
                closed = _optimal_fn(lemma)(t.P, t.q, t.p, alpha, loss).double()
                checked += len(t.contexts)
                bad += [
                    (loss, T, alpha, t.contexts[i]) for i in (brute != closed).nonzero().flatten().tolist()
                ]
    return dict(points_checked=checked, mismatches=len(bad), first_mismatches=bad[:5])


def miscalibration_sweep(
    world: Optional[ToyWorld], values: Sequence[float], loss: str = "zero_one", n_alpha: int = 41
) -> dict:
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
        for s in [float(v) for v in values]:
            shaped = reshaped_world(base, **{f"{model}_sharpness": s})
            risk = total_risks(shaped, 1, loss, alphas)["risk"]
            optimal = risk["optimal (Lemma 1)"]
            row = {
                name: sum(a - b for a, b in zip(risk[name], optimal)) / len(optimal)
                for name in (PLUGIN_NAMES[r] for r in PLUGINS[1])
            }
            row["optimal_shift"] = max(abs(a - b) for a, b in zip(optimal, built))
            out[model][s] = row
    return out


def excess_risks(risks: dict, optimal: str) -> dict:
    """Each rule's risk curve (`name -> list over alpha`, as `reshaped_total_risks` gives them) minus the
    optimal rule's (`risks[optimal]`), alpha by alpha."""
    return {name: [a - b for a, b in zip(curve, risks[optimal])] for name, curve in risks.items()}
