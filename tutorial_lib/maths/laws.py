r"""Next-token laws: built from logits, checked, and compared.

`probabilities` turns logits into $\mathrm{softmax}(\text{logits} / T)$ (the one-hot argmax at $T = 0$),
`tv_distance` is $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$, and the checks every function of
`targets` and `accept_reject` runs on its inputs live here: `check_pair` for a drafter / verifier pair
$(q, p)$, `target_and_draft` for a target $\pi$ and the drafter's $q$, and `trusted_inputs` to skip them
for laws valid by construction (the engine's). Each check says what to change.
"""

from __future__ import annotations

import contextlib
import math
import threading

import torch

from ..checks import check_temperature

__all__ = ["probabilities", "tv_distance", "check_pair", "target_and_draft", "trusted_inputs"]


# --------------------------------------------------------------------------------------------
# Input checks: every public function validates, and says what to change.
# --------------------------------------------------------------------------------------------


def _sum_tolerance(x: torch.Tensor) -> float:
    return 1e-2 if x.dtype in (torch.float16, torch.bfloat16) else 1e-4


class _Checks(threading.local):
    """Whether input checks run, per thread: a view redrawn on a timer thread while the main thread
    decodes must not leave the other's checks switched off when the two blocks interleave."""

    enabled = True


_CHECKS = _Checks()


@contextlib.contextmanager
def trusted_inputs():
    """Skip the input checks inside this block.

    The engine builds every law with `probabilities`, so they are valid by construction; the checks
    would cost more than the arithmetic on small vocabularies. Use it only for such inputs. Inside it
    `probabilities` does not check its logits either (with a 152k vocabulary the checks took about a
    third of its time) at T > 0: a model whose forward pass returned NaN then fails at the draw
    (`torch.multinomial`: "probability tensor contains either inf, nan or element < 0").
    """
    previous = _CHECKS.enabled
    _CHECKS.enabled = False
    try:
        yield
    finally:
        _CHECKS.enabled = previous


def as_probabilities(x, name: str) -> torch.Tensor:
    """`x` as a floating tensor of probabilities over a vocabulary (shape `(..., V)`), checked unless
    inside `trusted_inputs`; `name` is how an error names it."""
    x = torch.as_tensor(x)
    if not torch.is_floating_point(x):
        x = x.to(torch.get_default_dtype())
    if not _CHECKS.enabled:
        return x
    if x.ndim == 0:
        raise ValueError(f"{name} must have a vocabulary dimension (shape (..., V)), got a scalar.")
    if x.shape[-1] == 0:
        raise ValueError(f"{name} has an empty vocabulary; pass at least one token's probability.")
    if not torch.isfinite(x).all():
        raise ValueError(
            f"{name} contains NaN or infinite values; pass probabilities, "
            "or convert logits with `probabilities(logits, temperature)`."
        )
    if (x < 0).any():
        raise ValueError(
            f"{name} has negative entries; pass probabilities, not logits "
            "(convert with `probabilities(logits, temperature)`)."
        )
    total = x.sum(-1)
    bad = (total - 1).abs() > _sum_tolerance(x)
    if bad.any():
        worst = total[bad].flatten()[0].item()
        raise ValueError(
            f"{name} does not sum to one over the vocabulary (a row sums to {worst:.6g}); "
            "normalise it or build it with `probabilities(logits, temperature)`."
        )
    return x


def check_pair(q, p, q_name: str = "q", p_name: str = "p"):
    """`(q, p)` as tensors of probabilities over one vocabulary, of one shape and one dtype.

    Raises `ValueError` (naming `q_name` / `p_name`) for anything else; its value checks are skipped
    inside `trusted_inputs`.
    """
    q, p = as_probabilities(q, q_name), as_probabilities(p, p_name)
    if q.shape[-1] != p.shape[-1]:
        raise ValueError(
            f"{q_name} has a vocabulary of {q.shape[-1]} tokens but {p_name} has "
            f"{p.shape[-1]}: the drafter and verifier must share one vocabulary "
            "(the same tokenizer)."
        )
    if q.shape != p.shape:
        raise ValueError(
            f"{q_name} has shape {tuple(q.shape)} but {p_name} has {tuple(p.shape)}; "
            "pass one distribution per position for both models."
        )
    dtype = torch.promote_types(q.dtype, p.dtype)
    return q.to(dtype), p.to(dtype)


def target_and_draft(pi, q):
    """`pi` and `q` as tensors of one floating dtype, checked (unless inside `trusted_inputs`)."""
    pi = torch.as_tensor(pi)
    if not torch.is_floating_point(pi):
        pi = pi.to(torch.get_default_dtype())
    if not _CHECKS.enabled:
        q = torch.as_tensor(q)
        dtype = torch.promote_types(pi.dtype, q.dtype)
        return pi.to(dtype), q.to(dtype)
    if not torch.isfinite(pi).all() or (pi < 0).any():
        raise ValueError("pi must be finite and non-negative; build it with `target_distribution`.")
    if pi.shape[-1] == 0 or (pi.sum(-1) <= 0).any():
        raise ValueError("pi has zero total mass at some position; a target must put mass somewhere.")
    q = as_probabilities(q, "q")
    if pi.shape != q.shape:
        raise ValueError(
            f"pi has shape {tuple(pi.shape)} but q has {tuple(q.shape)}; both need one "
            "row per position over the same vocabulary."
        )
    dtype = torch.promote_types(pi.dtype, q.dtype)
    return pi.to(dtype), q.to(dtype)


# --------------------------------------------------------------------------------------------
# Basic quantities
# --------------------------------------------------------------------------------------------


def probabilities(logits, temperature: float = 1.0) -> torch.Tensor:
    r"""Temperature-scaled next-token probabilities $\mathrm{softmax}(\text{logits} / T)$.

    At $T = 0$ this is the one-hot vector of the argmax (the first one on ties), never a division
    by zero. Half-precision logits are upcast to float32 before the softmax.
    """
    logits = torch.as_tensor(logits)
    if not torch.is_floating_point(logits):
        logits = logits.to(torch.get_default_dtype())
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    temperature = check_temperature(temperature)
    # Trusted logits skip the checks, except at T = 0, whose argmax would pick a NaN without a word.
    checked = _CHECKS.enabled or temperature == 0.0
    if checked and (torch.isnan(logits).any() or (logits == math.inf).any()):
        raise ValueError("logits contain NaN or +inf; check the model's forward pass.")
    if checked and (logits.shape[-1] == 0 or (logits == -math.inf).all(-1).any()):
        raise ValueError("every logit of a row is -inf; at least one token must stay possible.")
    if temperature == 0.0:
        one_hot = torch.zeros_like(logits)
        return one_hot.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    # Shifting by the max first keeps a tiny temperature from overflowing to inf / inf.
    shifted = logits - logits.max(-1, keepdim=True).values
    # T itself would round to 0 (0 / 0 = NaN): divide in float64
    if temperature < torch.finfo(shifted.dtype).tiny:
        return torch.softmax(shifted.double() / temperature, dim=-1).to(shifted.dtype)
    return torch.softmax(shifted / temperature, dim=-1)


def tv_distance(p, q) -> torch.Tensor:
    r"""Total variation distance $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$, shape `(...)`."""
    q, p = check_pair(q, p)
    return (p - q).clamp_min(0).sum(-1)
