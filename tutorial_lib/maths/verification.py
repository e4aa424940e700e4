r"""Algorithm 4's block verification, once, for every engine: `verify_block`.

Given, for each of $B$ rows, $n \le \gamma$ drafted tokens $x_0, \dots, x_{n-1}$ with $x_j \sim q_j$,
their targets $\pi_j = \mathbb{T}(q_j, p_j)$ and, optionally, the law of a bonus token (the
verifier's $p_n$ in the paper), one verification step

1. accepts $x_j$ with probability $\min\{1, \pi_j(x_j) / q_j(x_j)\}$, for $j = 0, 1, \dots$ in order,
   and stops at the first rejection $j^*$;
2. replaces $x_{j^*}$ by a draw from the residual $\mathrm{norm}(\max\{0, \pi_{j^*} - q_{j^*}\})$;
3. or, when all $n$ drafts were accepted, appends a bonus token drawn from the bonus law.

Each emitted token then follows $\min\{q_j, \pi_j\} + \big(\sum_v \max\{0, q_j(v) - \pi_j(v)\}\big)
\,\mathrm{norm}(\max\{0, \pi_j - q_j\})$ (`accept_reject.output_distribution`), which is $\pi_j$ when $\pi_j$
sums to one (Leviathan et al.'s Lemma; Algorithm 5 of the paper for the deferral rules).

Random draws come in the order of the algorithm: coin $j$, then (after a rejection) the residual,
then the bonus token. With one generator for all rows, the draws of a step are made for every row
still verifying at once; with one generator per row (a batch whose rows must equal their single
runs) each row draws from its own stream. `generate` (one row, one generator), `generate_batch`
(one generator per row, $\gamma = 1$) and `verification.verify_draft` (many rows, one generator, one
draft each) all call `verify_block`.

`temperature_laws` is the one place where logits become the laws the engines sample from (at
temperature $T$) and decide with (at $T = 1$); `block_targets` the one place where those laws become
the target $\pi$ and the deferral weight of a rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple, Union

import torch

from . import targets
from . import laws
from . import accept_reject
from .accept_reject import sample_each

__all__ = ["BlockVerdict", "temperature_laws", "block_targets", "verify_block", "verify_draft"]

Generators = Union[None, torch.Generator, Sequence[torch.Generator]]
#: A bonus law: a tensor `(B, V)`, or a function of the row indices `(k,)` that returns their laws `(k, V)`
#: (called only for rows that accepted every draft: e.g. one more drafter step for a bonus from pi).
Bonus = Union[None, torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]


@dataclass
class BlockVerdict:
    """What `verify_block` decided, per row (all tensors of shape `(B,)`).

    `n_accepted`: drafts kept (the first `n_accepted` of the row); `rejected`: the block ended at a
    rejection; `extra`: the token emitted after the kept drafts (the residual token after a
    rejection, the bonus token after a full block), -1 where there is none (the row stopped at a
    stop token, or no bonus was asked for).
    """

    n_accepted: torch.Tensor
    rejected: torch.Tensor
    extra: torch.Tensor

    def tokens(self, drafts: torch.Tensor, row: int) -> list:
        """The tokens row `row` emits: its kept drafts, then the residual or bonus token if any."""
        kept = drafts[row, : int(self.n_accepted[row])].tolist()
        return kept + ([int(self.extra[row])] if int(self.extra[row]) >= 0 else [])


def temperature_laws(logits, temperature: float) -> Tuple[torch.Tensor, torch.Tensor]:
    r"""`(scaled, unscaled)`: $\mathrm{softmax}(\text{logits}/T)$, sampled, and the $T = 1$ law, decided on.

    The paper's rules compare temperature-1 probabilities (max-probability tests, acceptance sets,
    BiLD's distance) while drafts and outputs are sampled at $T$; shape `(..., V)` each. At $T = 1$
    both are the same tensor.
    """
    scaled = laws.probabilities(logits, temperature)
    unscaled = scaled if temperature == 1.0 else laws.probabilities(logits, 1.0)
    return scaled, unscaled


def block_targets(
    rule: str, q, p, alpha: float, *, q_unscaled=None, p_unscaled=None, beta=1.0
) -> Tuple[torch.Tensor, torch.Tensor]:
    r"""`(pi, weight)`: the target $\pi = \mathbb{T}(q, p)$ of `rule`, shape `(..., V)`, and the
    deferral weight (`targets.deferral_weight`, NaN for `lossy`) in float64, shape `(...)`."""
    kw = dict(q_unscaled=q_unscaled, p_unscaled=p_unscaled)
    pi = targets.target_distribution(rule, q, p, alpha, beta=beta, **kw)
    weight = targets.deferral_weight(rule, q, p, alpha, **kw).double()
    return pi, weight


def _draw_coins(generators: Generators, rows: torch.Tensor, dtype) -> torch.Tensor:
    if generators is None or isinstance(generators, torch.Generator):
        return torch.rand(rows.shape, generator=generators, dtype=dtype)
    return torch.stack([torch.rand((), generator=generators[int(r)], dtype=dtype) for r in rows])


def _draw_tokens(generators: Generators, rows: torch.Tensor, laws: torch.Tensor) -> torch.Tensor:
    """One token per row from `laws` `(k, V)`, each row from its own generator or all from one."""
    if generators is None or isinstance(generators, torch.Generator):
        return accept_reject.sample(laws, generators)
    return torch.tensor(sample_each(laws, [generators[int(r)] for r in rows]), dtype=torch.long)


def verify_block(
    pi,
    q,
    drafts,
    generators: Generators = None,
    *,
    bonus: Bonus = None,
    stop_tokens=(),
    coin_dtype=torch.float64,
) -> BlockVerdict:
    r"""Verify $B$ blocks of $n$ drafts at once: Algorithm 4's accept/reject step (module docstring).

    `pi`, `q`: the targets and the drafter's sampled laws, `(B, n, V)`; `drafts`: the drafted ids
    `(B, n)`; `generators`: one `torch.Generator` shared by all rows, or a sequence of one per row.
    `bonus`: the law of the token after a fully accepted block, `(B, V)` or a function of the row
    indices (see `Bonus`), or `None` for no bonus token. A row stops as soon as it emits one of
    `stop_tokens` (no further draws), as decoding does at an EOS token. Coins are drawn in
    `coin_dtype` and compared with the acceptance probability.
    """
    pi, q = torch.as_tensor(pi), torch.as_tensor(q)
    drafts = torch.as_tensor(drafts, dtype=torch.long)
    if pi.ndim != 3 or pi.shape != q.shape or drafts.shape != pi.shape[:2]:
        raise ValueError(
            f"pi and q must have shape (B, n, V) and drafts (B, n); got {tuple(pi.shape)}, "
            f"{tuple(q.shape)} and {tuple(drafts.shape)}."
        )
    B, n = drafts.shape
    if not (generators is None or isinstance(generators, torch.Generator)) and len(generators) != B:
        raise ValueError(f"{len(generators)} generators for {B} rows; pass one per row or a single one.")
    keep = accept_reject.acceptance_probability(pi, q, drafts)  # (B, n)
    stops = torch.tensor(sorted(int(t) for t in stop_tokens), dtype=torch.long)
    n_accepted = torch.zeros(B, dtype=torch.long)
    rejected = torch.zeros(B, dtype=torch.bool)
    extra = torch.full((B,), -1, dtype=torch.long)
    live = torch.arange(B)  # rows still verifying
    for j in range(n):
        if not len(live):
            break
        coins = _draw_coins(generators, live, coin_dtype)
        accept = coins < keep[live, j].to(coin_dtype)
        out = live[~accept]
        if len(out):
            rejected[out] = True
            residual = accept_reject.residual_distribution(pi[out, j], q[out, j])  # (k, V)
            extra[out] = _draw_tokens(generators, out, residual)
        kept = live[accept]
        n_accepted[kept] += 1
        live = kept[~torch.isin(drafts[kept, j], stops)]
    if bonus is not None and len(live):
        bonus_laws = bonus(live) if callable(bonus) else torch.as_tensor(bonus)[live]  # (k, V)
        extra[live] = _draw_tokens(generators, live, bonus_laws)
    return BlockVerdict(n_accepted=n_accepted, rejected=rejected, extra=extra)


def verify_draft(pi, q, draft, generator: Optional[torch.Generator] = None):
    r"""One accept/reject step of Algorithm 4 at every position: `verify_block` with one
    draft per position and no bonus token.

    Keeps each drafted token $x \sim q$ with probability $\min\{1, \pi(x)/q(x)\}$ and otherwise
    replaces it by a sample of the residual $\mathrm{norm}(\max\{0, \pi - q\})$. `pi`, `q` have shape
    `(..., V)` and `draft` `(...)`. Returns `(tokens, accepted)`, each of shape `(...)`; the emitted
    token follows `output_distribution(pi, q)`.
    """
    pi, q = laws.target_and_draft(pi, q)
    draft = torch.as_tensor(draft, dtype=torch.long, device=q.device)
    if draft.shape != q.shape[:-1]:
        raise ValueError(
            f"draft has shape {tuple(draft.shape)}; expected {tuple(q.shape[:-1])}, "
            "one drafted token per position."
        )
    V = q.shape[-1]
    verdict = verify_block(
        pi.reshape(-1, 1, V), q.reshape(-1, 1, V), draft.reshape(-1, 1), generator, coin_dtype=q.dtype
    )
    accepted = (verdict.n_accepted == 1).reshape(draft.shape)
    return torch.where(accepted, draft, verdict.extra.reshape(draft.shape)), accepted
