r"""When does speculation pay? Tokens per verifier call, the textbook speed-up and the block-cost model.

Speculative decoding drafts $\gamma$ tokens with the drafter $q$ and scores them with one call of the
verifier $p$. If every draft is kept with probability $a$, independently (the assumption of
Leviathan et al.), one block emits on average

$$\mathbb{E}[N_\gamma] = \sum_{j=0}^{\gamma} a^j = \frac{1 - a^{\gamma+1}}{1 - a}
  \qquad (\gamma + 1 \text{ at } a = 1)$$

tokens: the accepted drafts plus one token from $p$ (the residual after a rejection, or the bonus).

**The block-cost model.** A block costs $\gamma$ drafter steps of $t_q$ each and one verifier call
that scores $\gamma + 1$ tokens (the token the previous block emitted last, then the $\gamma$
drafts), which takes $t_p(\gamma + 1)$. The expected time per emitted token is

$$\tau(\gamma) = \frac{\gamma\, t_q + t_p(\gamma + 1)}{\mathbb{E}[N_\gamma]}
             = \bigl(\gamma\, t_q + t_p(\gamma + 1)\bigr)\, \frac{1 - a}{1 - a^{\gamma + 1}},$$

and $\gamma = 0$ is plain decoding with the verifier, $\tau(0) = t_p(1)$. One refinement, optional: after a
fully accepted block (probability $a^\gamma$) the drafter's first call of the next block feeds two tokens (its
last draft, never fed while drafting, and the bonus token), which costs $t_q^{(2)}$ instead of $t_q$; with
$\Delta_q = t_q^{(2)} - t_q$ the block costs $\gamma t_q + a^\gamma \Delta_q + t_p(\gamma + 1)$.
$\Delta_q = 0$ (the default) is the model above; on an accelerator $\Delta_q \approx 0$ anyway. The predicted
speed-up over plain decoding is $S(\gamma) = t_p(1) / \tau(\gamma)$, and the best block size is
$\gamma^* = \arg\min_\gamma \tau(\gamma)$, with $\gamma^* = 0$ meaning "do not speculate".

**The textbook speed-up** is the special case where scoring $k$ tokens costs as much as scoring one,
$t_p(k) = t_p(1)$ (a memory-bound accelerator), with cost ratio $c = t_q / t_p(1)$:

$$S(\gamma) = \frac{1 - a^{\gamma+1}}{(1 - a)(\gamma c + 1)}.$$

On a CPU, $t_p(k)$ grows with $k$ (compute-bound), so the same $a$ and $c$ buy much less: this module
says how much, from measured $t_q$ and $t_p(k)$ (`tutorial_lib.decoding.calibration`).

**Batches.** With $B$ rows decoded together (`batch.generate_batch`) every call serves all rows, and the
costs become those of a call on $B$ rows: $t_q(B)$, $t_p(k, B)$. Each row keeps its own drafts, so a
block still emits $\mathbb{E}[N_\gamma]$ tokens per row, and the batch's throughput is

$$R_B(\gamma) = \frac{B\,\mathbb{E}[N_\gamma]}{\gamma\, t_q(B) + \bigl(1 - (1 - a^\gamma)^B\bigr)\,\Delta_q(B)
  + t_p(\gamma + 1, B)}, \qquad R_B(0) = \frac{B}{t_p(1, B)}$$

tokens per second (the drafter's first call feeds two tokens to every row as soon as one row accepted its
whole block). On a memory-bound device $t_p(k, B)$ hardly grows with $k$ or $B$; on a compute-bound one it
grows with the $kB$ tokens scored, so speculation's extra $\gamma B$ tokens per call stop paying once the
batch alone keeps the arithmetic units busy (`batch_tokens_per_second`, `benchmarks/batch_speed.py`).
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

from ..checks import check_whole_number

__all__ = [
    "expected_tokens_per_call",
    "expected_latency",
    "textbook_speedup",
    "block_time_per_token",
    "predicted_speedup",
    "best_gamma",
    "break_even_acceptance",
    "speedup_curve",
    "verifier_cost",
    "batch_tokens_per_second",
]

#: $t_p$ given as a function of $k$, a mapping $k \mapsto$ seconds, or a sequence whose item $k - 1$ is
#: $t_p(k)$.
VerifierCost = Union[Callable[[int], float], Mapping[int, float], Sequence[float]]


def _check_acceptance(acceptance: float) -> float:
    a = float(acceptance)
    if not -1e-9 <= a <= 1.0 + 1e-9:  # NaN fails too
        raise ValueError(f"acceptance={acceptance} is a probability; pass a value in [0, 1].")
    return min(max(a, 0.0), 1.0)  # a rate computed as 1 - rho can miss [0, 1] by a rounding error


def _check_gamma(gamma) -> int:
    return check_whole_number(gamma, "gamma", minimum=0, meaning="0 means no speculation")


def _check_seconds(value: float, name: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name}={value}: a time in seconds must be finite and >= 0.")
    return value


def verifier_cost(t_p: VerifierCost) -> Callable[[int], float]:
    """$t_p$ as a function of $k$, whichever form it came in; a missing $k$ raises a ValueError."""
    if callable(t_p):

        def cost(k: int) -> float:
            return _check_seconds(t_p(k), f"t_p({k})")

        return cost
    if isinstance(t_p, Mapping):
        table: Dict[int, float] = {int(k): v for k, v in t_p.items()}
    else:
        table = {k + 1: v for k, v in enumerate(t_p)}

    def lookup(k: int) -> float:
        if k not in table:
            raise ValueError(f"t_p({k}) is not given (known k: {sorted(table)}); calibrate up to k = {k}.")
        return _check_seconds(table[k], f"t_p({k})")

    return lookup


def expected_tokens_per_call(acceptance: float, gamma: int) -> float:
    r"""$\mathbb{E}[N_\gamma] = (1 - a^{\gamma+1}) / (1 - a)$: tokens per verifier call (1 at
    $\gamma = 0$)."""
    a, gamma = _check_acceptance(acceptance), _check_gamma(gamma)
    return float(gamma + 1) if a == 1.0 else (1.0 - a ** (gamma + 1)) / (1.0 - a)


def expected_latency(tokens_per_call, gamma: int, cost_ratio: float):
    r"""Latency per token relative to the verifier alone, from counted calls:
    $(\gamma c + 1) / \text{tokens per call}$.

    Each verifier call follows `gamma` drafter steps of cost `cost_ratio` each (the drafter drafts the
    whole block before the verifier sees it, rejected or not); the verifier alone costs 1 per token.
    This is the textbook pricing ($t_p(k) = t_p(1)$); `block_time_per_token` prices blocks as measured.
    A list of tokens-per-call values gives a list.
    """
    gamma, c = _check_gamma(gamma), _check_seconds(cost_ratio, "cost_ratio")
    if isinstance(tokens_per_call, (list, tuple)):
        return [expected_latency(n, gamma, c) for n in tokens_per_call]
    if not 1.0 <= float(tokens_per_call) <= gamma + 1 + 1e-9:
        raise ValueError(
            f"tokens_per_call={tokens_per_call}: one verifier call emits between 1 and gamma + 1 tokens."
        )
    return (gamma * c + 1.0) / float(tokens_per_call)


def textbook_speedup(acceptance: float, gamma: int, cost_ratio: float) -> float:
    r"""Leviathan et al.'s $(1 - a^{\gamma+1}) / ((1 - a)(\gamma c + 1))$: scoring $k$ tokens costs one
    step."""
    c = _check_seconds(cost_ratio, "cost_ratio")
    return expected_tokens_per_call(acceptance, gamma) / (gamma * c + 1.0)


def block_time_per_token(
    gamma: int, acceptance: float, t_q: float, t_p: VerifierCost, t_q2: Optional[float] = None
) -> float:
    r"""$\tau(\gamma) = (\gamma t_q + a^\gamma \Delta_q + t_p(\gamma + 1)) (1 - a) / (1 - a^{\gamma+1})$,
    seconds per emitted token; `t_q2` is the drafter fed two tokens ($\Delta_q = t_q^{(2)} - t_q$; None:
    $\Delta_q = 0$)."""
    gamma, t_q = _check_gamma(gamma), _check_seconds(t_q, "t_q")
    a = _check_acceptance(acceptance)
    catch_up = 0.0 if t_q2 is None or gamma == 0 else (_check_seconds(t_q2, "t_q2") - t_q) * a**gamma
    block = gamma * t_q + catch_up + verifier_cost(t_p)(gamma + 1)
    return block / expected_tokens_per_call(a, gamma)


def predicted_speedup(
    gamma: int, acceptance: float, t_q: float, t_p: VerifierCost, t_q2: Optional[float] = None
) -> float:
    r"""$S(\gamma) = t_p(1) / \tau(\gamma)$: how much faster than plain decoding with the verifier."""
    cost = verifier_cost(t_p)
    tau = block_time_per_token(gamma, acceptance, t_q, cost, t_q2)
    return cost(1) / tau if tau > 0 else math.inf


def best_gamma(
    acceptance: float, t_q: float, t_p: VerifierCost, max_gamma: int, t_q2: Optional[float] = None
) -> int:
    r"""$\gamma^* = \arg\min_{0 \le \gamma \le \gamma_{max}} \tau(\gamma)$; 0 means plain verifier decoding.

    Ties go to the smaller block (less drafting for the same expected time).
    """
    max_gamma = _check_gamma(max_gamma)
    cost = verifier_cost(t_p)
    times = [block_time_per_token(g, acceptance, t_q, cost, t_q2) for g in range(max_gamma + 1)]
    best = min(times)
    return next(g for g, t in enumerate(times) if t <= best * (1 + 1e-12))


def speedup_curve(acceptance: float, t_q: float, t_p: VerifierCost, gammas: Sequence[int]) -> List[float]:
    """`predicted_speedup` at each gamma of `gammas` (for plots)."""
    return [predicted_speedup(g, acceptance, t_q, t_p) for g in gammas]


def break_even_acceptance(gamma: int, t_q: float, t_p: VerifierCost) -> Optional[float]:
    r"""The acceptance $a$ above which a block of $\gamma$ drafts beats plain decoding,
    $\tau(\gamma) < t_p(1)$.

    $\mathbb{E}[N_\gamma]$ rises from 1 at $a = 0$ to $\gamma + 1$ at $a = 1$, so the break-even point solves
    $\mathbb{E}[N_\gamma](a) = (\gamma t_q + t_p(\gamma + 1)) / t_p(1)$ (a root of a polynomial, found by
    `scipy.optimize.brentq`). Returns `None` when even $a = 1$ does not pay, 0.0 when every $a$ does.
    """
    from scipy.optimize import brentq

    gamma, t_q = _check_gamma(gamma), _check_seconds(t_q, "t_q")
    if gamma == 0:
        raise ValueError("gamma=0 is plain decoding itself; ask about a block of gamma >= 1 drafts.")
    cost = verifier_cost(t_p)
    if cost(1) <= 0:
        raise ValueError("t_p(1) = 0: plain decoding is free and nothing can beat it; check the calibration.")
    needed = (gamma * t_q + cost(gamma + 1)) / cost(1)  # tokens a call must emit to break even
    if needed >= gamma + 1:
        return None
    if needed <= 1:
        return 0.0
    return float(brentq(lambda a: expected_tokens_per_call(a, gamma) - needed, 0.0, 1.0, xtol=1e-12))


def batch_tokens_per_second(
    gamma: int,
    acceptance: float,
    t_q: float,
    t_p: VerifierCost,
    batch_size: int,
    t_q2: Optional[float] = None,
) -> float:
    r"""$R_B(\gamma)$ of the module docstring: tokens per second of $B$ rows decoded together, from the costs
    of one call on all $B$ rows (`t_q`, `t_p(k)`, `t_q2` measured at this batch size); `gamma=0` is plain
    decoding with the verifier, $B / t_p(1, B)$."""
    gamma, t_q = _check_gamma(gamma), _check_seconds(t_q, "t_q")
    batch_size = check_whole_number(batch_size, "batch_size", 1, "a batch holds at least one row")
    a, cost = _check_acceptance(acceptance), verifier_cost(t_p)
    if gamma == 0:
        return batch_size / cost(1)
    catch_up = (
        0.0 if t_q2 is None else (_check_seconds(t_q2, "t_q2") - t_q) * (1.0 - (1.0 - a**gamma) ** batch_size)
    )
    return batch_size * expected_tokens_per_call(a, gamma) / (gamma * t_q + catch_up + cost(gamma + 1))
