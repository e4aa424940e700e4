r"""Lemma 2: lossy speculative sampling, written from its own definition, against Algorithm 4.

Lossy speculative sampling (Tran-Thien) with $\alpha \in [0, 1)$ and $\beta \ge 1 - \alpha$ keeps a
draft $x \sim q$ with probability

$$a(x) = \min\Big\{1, \frac{p(x)}{(1 - \alpha)\,q(x)}\Big\}$$

and replaces a rejected one by a draw from $\mathrm{norm}(\max\{0, p/\beta - q\})$. Lemma 2: Algorithm 4
(keep with $\min\{1, \pi(x)/q(x)\}$, resample from $\mathrm{norm}(\max\{0, \pi - q\})$) on the target

$$\pi(v) = \max\Big\{\min\Big\{q(v), \frac{p(v)}{1 - \alpha}\Big\}, \frac{p(v)}{\beta}\Big\}$$

does exactly the same. `tran_thien_acceptance` and `tran_thien_residual` are the definition and use
nothing of `targets`; `lemma2_check` compares them with `targets` token by token over a toy world.

`beta_sweep` compares $\beta = 1$ with the normalising $\beta$ (Lossy*, `targets.lossy_beta`) through
the law Algorithm 4 emits, `accept_reject.output_distribution`: its $D_{TV}$ and
$\mathrm{KL}(\text{emitted} \,\|\, p) = \sum_v e(v) \log(e(v)/p(v))$ to $p$.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

from ..maths import lemmas, targets
from ..maths import laws
from ..maths import accept_reject
from ..checks import check_temperature
from ..toy.examples import check_context, default_world
from ..toy.toyworld import ToyWorld

__all__ = [
    "tran_thien_acceptance",
    "tran_thien_residual",
    "beta_value",
    "beta_label",
    "kl_divergence",
    "lemma2_check",
    "lemma2_context",
    "beta_sweep",
    "beta_differences",
    "beta_context",
]


def tran_thien_acceptance(q, p, alpha: float) -> torch.Tensor:
    r"""Lossy speculative sampling's chance of keeping each token $x$ if drafted:
    $\min\{1, p(x) / ((1 - \alpha)\, q(x))\}$, shape `(..., V)`. Tokens with $q(x) = 0$ are never
    drafted; they get 1, the convention of `accept_reject.acceptance_probability`."""
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
    return torch.where(
        mass > 0, excess / torch.where(mass > 0, mass, torch.ones_like(mass)), torch.zeros_like(excess)
    )


def beta_value(q, p, alpha, beta):
    """A number, or the per-position normalising beta (Lossy*) of `targets.lossy_beta` for `"normalize"`."""
    if isinstance(beta, str):
        if beta != "normalize":
            raise ValueError(f"beta={beta!r}: pass a number >= 1 - alpha or 'normalize'.")
        return targets.lossy_beta(q, p, alpha)
    return float(beta)


def beta_label(beta) -> str:
    """How the lessons name a beta: "Lossy* (normalising beta)" or "beta = 2"."""
    return "Lossy* (normalising beta)" if beta == "normalize" else f"beta = {float(beta):g}"


def kl_divergence(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""$\mathrm{KL}(a \,\|\, b) = \sum_v a(v) \log(a(v)/b(v))$ per row ($0 \log 0 = 0$)."""
    ratio = torch.where(a > 0, a / torch.where(b > 0, b, torch.ones_like(b)), torch.ones_like(a))
    return (a * ratio.log()).sum(-1)


def lemma2_check(
    world: Optional[ToyWorld],
    alphas: Sequence[float],
    betas: Sequence = (1.0, "normalize"),
    temperatures: Sequence[float] = (1.0,),
) -> dict:
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
    undefined = {beta_label(beta): 0 for beta in betas}
    for T in temperatures:
        t = world.contexts(check_temperature(T))
        q, p = t.q, t.p
        C, V = q.shape
        every_token = torch.arange(V).expand(C, V)  # (C, V): token v drafted at each context
        for alpha in [float(a) for a in alphas]:
            for beta in betas:
                pi = targets.target_distribution("lossy", q, p, alpha, beta=beta)
                # (C, V, V): row (c, v) repeats context c so each token is scored as a draft.
                ours = accept_reject.acceptance_probability(
                    pi.unsqueeze(1).expand(C, V, V), q.unsqueeze(1).expand(C, V, V), every_token
                )
                acc_diff = max(acc_diff, float((ours - tran_thien_acceptance(q, p, alpha)).abs().max()))
                tokens += C * V
                # A rejection chance below 1e-12 is rounding (Lossy* divides by the target's sum):
                # such a position is never rejected in practice, and its residual is arbitrary.
                reachable = accept_reject.rejection_probability(pi, q) > 1e-12
                theirs = tran_thien_residual(q, p, beta_value(q, p, alpha, beta))
                defined = theirs.sum(-1) > 0
                compare = reachable & defined
                diff = (accept_reject.residual_distribution(pi, q) - theirs).abs().max(-1).values
                res_diff = max(res_diff, float(diff[compare].max()) if compare.any() else 0.0)
                positions += int(compare.sum())
                skipped += int((~reachable).sum())
                undefined[beta_label(beta)] += int((reachable & ~defined).sum())
    return dict(
        acceptance_max_abs_diff=acc_diff,
        residual_max_abs_diff=res_diff,
        tokens_compared=tokens,
        positions_compared=positions,
        positions_never_rejected=skipped,
        residual_undefined=undefined,
    )


def lemma2_context(
    world: Optional[ToyWorld], context_index: int, alpha: float, beta="normalize", temperature: float = 1.0
) -> dict:
    """Both procedures at one context: `q`, `p`, the lossy target `pi`, `beta` (the value used), and per
    token as a draft the acceptance of each (`tran_thien_acceptance`, `algorithm4_acceptance`), both
    residuals and `rejection` (0 below 1e-12: rounding, the residual is then never used)."""
    world = world or default_world()
    alpha = targets.check_alpha("lossy", alpha)
    row = check_context(world, context_index)
    t = world.contexts(check_temperature(temperature))
    q, p = t.q[row], t.p[row]
    used = beta_value(q, p, alpha, beta)
    pi = targets.target_distribution("lossy", q, p, alpha, beta=beta)
    V = q.shape[-1]
    rejected = float(accept_reject.rejection_probability(pi, q))
    return dict(
        table=t,
        row=row,
        q=q,
        p=p,
        pi=pi,
        beta=used,
        alpha=alpha,
        rejection=rejected if rejected > 1e-12 else 0.0,
        algorithm4_acceptance=accept_reject.acceptance_probability(
            pi.expand(V, V), q.expand(V, V), torch.arange(V)
        ),
        tran_thien_acceptance=tran_thien_acceptance(q, p, alpha),
        tran_thien_residual=tran_thien_residual(q, p, used),
        algorithm4_residual=accept_reject.residual_distribution(pi, q),
    )


def beta_sweep(
    world: Optional[ToyWorld],
    alphas: Sequence[float],
    betas: Sequence = (1.0, "normalize"),
    temperature: float = 1.0,
) -> dict:
    r"""`beta = 1` against the normalising beta as `alpha` moves.

    Per beta, averaged over the contexts visited under $P$ (weights as in the lemmas): `acceptance_rate`,
    the mean chance a draft is kept; `tv_to_p`, the mean $D_{TV}$ between the emitted law
    (`accept_reject.output_distribution`) and $p$; `kl_to_p`, the mean $\mathrm{KL}(\text{emitted} \,\|\, p)$;
    `target_mass`, the mean of $\sum_v \pi(v)$ (1 for Lossy*, above 1 for `beta = 1`). And `loss`, the
    exact per-token 0-1 loss of the text the rule generates (`world.evaluate`).
    """
    world = world or default_world()
    temperature = check_temperature(temperature)
    t = world.contexts(temperature)
    out = {"alpha": [float(a) for a in alphas]}
    for beta in betas:
        rows = {"acceptance_rate": [], "tv_to_p": [], "kl_to_p": [], "target_mass": [], "loss": []}
        for alpha in out["alpha"]:
            pi = targets.target_distribution("lossy", t.q, t.p, alpha, beta=beta)
            emitted = accept_reject.output_distribution(pi, t.q)
            rows["acceptance_rate"].append(
                lemmas.total_risk(t.weight, 1 - accept_reject.rejection_probability(pi, t.q))
            )
            rows["tv_to_p"].append(lemmas.total_risk(t.weight, laws.tv_distance(emitted, t.p)))
            rows["kl_to_p"].append(lemmas.total_risk(t.weight, kl_divergence(emitted, t.p)))
            rows["target_mass"].append(lemmas.total_risk(t.weight, pi.sum(-1)))
            rows["loss"].append(
                world.evaluate("lossy", alpha, beta=beta, temperature=temperature).zero_one_loss
            )
        out[beta_label(beta)] = rows
    return out


def beta_differences(sweep: dict, one: str, other: str) -> dict:
    """Per quantity of `beta_sweep` (`acceptance_rate`, `tv_to_p`, ...), the curve of beta `one` minus
    that of beta `other` (labels as `beta_label` writes them), alpha by alpha."""
    return {m: [a - b for a, b in zip(sweep[one][m], sweep[other][m])] for m in sweep[one]}


def beta_context(
    world: Optional[ToyWorld], alpha: float, context_index: int, temperature: float = 1.0
) -> dict:
    """One context, both betas: `laws` (p, q and the emitted law of each beta), per beta its `tv` and `kl`
    to p, and the `acceptance` rate (the same for both)."""
    world = world or default_world()
    alpha = targets.check_alpha("lossy", alpha)
    row = check_context(world, context_index)
    t = world.contexts(check_temperature(temperature))
    q, p = t.q[row], t.p[row]
    shown, distances = {"p (verifier)": p, "q (drafter)": q}, {}
    for beta in (1.0, "normalize"):
        emitted = accept_reject.output_distribution(
            targets.target_distribution("lossy", q, p, alpha, beta=beta), q
        )
        shown[f"emitted, {beta_label(beta)}"] = emitted
        distances[beta_label(beta)] = dict(
            tv=float(laws.tv_distance(emitted, p)), kl=float(kl_divergence(emitted, p))
        )
    accept = 1 - float(
        accept_reject.rejection_probability(targets.target_distribution("lossy", q, p, alpha), q)
    )
    return dict(table=t, row=row, alpha=alpha, laws=shown, distances=distances, acceptance=accept)
