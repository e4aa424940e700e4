r"""The accept/reject step of Algorithm 4 (GenSpecSample), position by position.

A draft $x \sim q$ is accepted with probability $\min\{1, \pi(x)/q(x)\}$ (`acceptance_probability`) and
otherwise replaced by a draw from the residual $\mathrm{norm}(\max\{0, \pi - q\})$
(`residual_distribution`). A draft is rejected with probability $\sum_v \max\{0, q(v) - \pi(v)\}$
(`rejection_probability`; Lemma 3: $r\,D_{TV}(p, q)$ for a mixture $\pi = (1-r)q + rp$), and the token
emitted follows `output_distribution`, which is $\pi$ whenever $\pi$ sums to one. `sample` draws one
token per row; `sample_each` one per row from that row's own random stream. `verification.verify_block`
runs the same step over blocks of drafts.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence

import torch

from .laws import target_and_draft

__all__ = [
    "acceptance_probability",
    "residual_distribution",
    "rejection_probability",
    "output_distribution",
    "sample",
    "sample_each",
]


def acceptance_probability(pi, q, tokens) -> torch.Tensor:
    r"""$\min\{1, \pi(x)/q(x)\}$ for the drafted `tokens` $x$ (shape `(...)`, integer ids).

    A token the drafter gives probability 0 cannot be drafted; it is given acceptance 1.
    """
    pi, q = target_and_draft(pi, q)
    tokens = torch.as_tensor(tokens, dtype=torch.long, device=q.device)
    if tokens.shape != q.shape[:-1]:
        raise ValueError(
            f"tokens has shape {tuple(tokens.shape)}; expected {tuple(q.shape[:-1])}, "
            "one drafted token per position."
        )
    if ((tokens < 0) | (tokens >= q.shape[-1])).any():
        raise ValueError(f"tokens must be ids in [0, {q.shape[-1]}).")
    pi_x = pi.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    q_x = q.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    ratio = torch.where(q_x > 0, pi_x / torch.where(q_x > 0, q_x, torch.ones_like(q_x)), torch.ones_like(q_x))
    return ratio.clamp(max=1.0)


def residual_distribution(pi, q) -> torch.Tensor:
    r"""The distribution a rejected draft is replaced from: $\mathrm{norm}(\max\{0, \pi - q\})$.

    Where $\max\{0, \pi - q\}$ has no mass (for example $\pi = q$) no draft is ever rejected; the
    function then returns $\mathrm{norm}(\pi)$ so the result is always a valid distribution (no NaN).
    """
    pi, q = target_and_draft(pi, q)
    excess = (pi - q).clamp_min(0)
    mass = excess.sum(-1, keepdim=True)
    fallback = pi / pi.sum(-1, keepdim=True)
    safe_mass = torch.where(mass > 0, mass, torch.ones_like(mass))
    return torch.where(mass > 0, excess / safe_mass, fallback)


def rejection_probability(pi, q) -> torch.Tensor:
    r"""Chance that a draft $x \sim q$ is rejected: $\sum_x q(x)(1 - \min\{1, \pi(x)/q(x)\})
    = \sum_v \max\{0, q(v) - \pi(v)\}$. For a mixture this is $r\, D_{TV}(p, q)$ (Lemma 3)."""
    pi, q = target_and_draft(pi, q)
    return (q - pi).clamp_min(0).sum(-1)


def output_distribution(pi, q) -> torch.Tensor:
    r"""Law of the token Algorithm 4 emits at one position:
    $\min\{q, \pi\} + (\sum_v \max\{0, q(v) - \pi(v)\}) \cdot \mathrm{norm}(\max\{0, \pi - q\})$.

    It equals $\pi$ whenever $\pi$ sums to one (every rule except `lossy` with a fixed `beta`).
    """
    pi, q = target_and_draft(pi, q)
    return torch.minimum(q, pi) + rejection_probability(pi, q).unsqueeze(-1) * residual_distribution(pi, q)


def sample(probs, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """One token id per row of `probs` (shape `(..., V)` -> `(...)`)."""
    probs = torch.as_tensor(probs)
    flat = probs.reshape(-1, probs.shape[-1])  # (N, V)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


_POOL = threading.local()  # per thread: a pool made here would be a dead copy in a forked child


def _draw_pool(threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), threads)
    if getattr(_POOL, "key", None) != key:
        _POOL.key, _POOL.executor = key, ThreadPoolExecutor(threads, thread_name_prefix="sample_each")
    return _POOL.executor


def sample_each(laws, generators: Sequence[torch.Generator], threads: Optional[int] = None) -> List[int]:
    r"""One token id per row of `laws` `(k, V)`, row $i$ drawn with its own `generators[i]`.

    Equal, token for token, to `[int(sample(laws[i], generators[i])) for i in range(k)]`: each draw
    uses its row's generator only, so the order in which rows draw changes nothing. A draw
    (`torch.multinomial`'s one-sample path: $\arg\max_v \pi(v) / E_v$ with $E_v \sim \mathrm{Exp}(1)$)
    makes $V$ exponential variates from one sequential stream: about 5 ms for a 152k vocabulary on one
    core here, whatever `torch.set_num_threads` says. So rows are split between `threads` (default
    `torch.get_num_threads()`) threads, in which torch runs without Python's lock
    (`benchmarks/config_batch_draws.py` measures what that gains in a batched sweep).
    """
    laws = torch.as_tensor(laws)
    if laws.ndim != 2 or laws.shape[0] != len(generators):
        raise ValueError(
            f"laws has shape {tuple(laws.shape)} for {len(generators)} generators; pass one law per "
            "row, shape (k, V), and one generator per row."
        )
    k = laws.shape[0]
    threads = torch.get_num_threads() if threads is None else threads
    threads = max(1, min(threads, k))

    def draw(rows: range) -> List[int]:
        return [int(sample(laws[i], generators[i])) for i in rows]

    if threads == 1:
        return draw(range(k))
    parts = [range(t, k, threads) for t in range(threads)]
    out = [0] * k
    for rows, tokens in zip(parts, _draw_pool(threads).map(draw, parts)):
        for i, x in zip(rows, tokens):
            out[i] = x
    return out
