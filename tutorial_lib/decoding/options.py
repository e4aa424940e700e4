"""The options of `generate` and `generate_batch`, checked once for both.

`check_generate_options` turns what a caller passed into the values the engines run with, or
raises a `ValueError` / `TypeError` that says what to change; `stop_tokens` resolves
`eos_token_id`. Two thresholds share the letter alpha in the literature and get separate names
here: `alpha` is the threshold of a deferral *rule* (for `rule="bild"` a bound on
$D_{TV}(p, q)$), `bild_threshold` the rollback threshold of the original Big-Little Decoder
(`method="bild"`), a bound on $-\\log p(x)$ of a drafted token.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional

from ..maths import targets
from ..maths import rules
from ..checks import check_choice, check_gamma, check_real, check_temperature, check_whole_number

__all__ = [
    "METHODS",
    "SEQ_AGGREGATES",
    "BONUS_OPTIONS",
    "GenerateOptions",
    "check_generate_options",
    "stop_tokens",
]

METHODS = ("drafter", "verifier", "speculative", "token_cascade", "oracle", "seq_cascade", "bild")
SEQ_AGGREGATES = ("sequence", "mean", "min")
#: What follows a fully accepted block: a token from p (the paper), from pi, or nothing.
BONUS_OPTIONS = ("verifier", "target", "none")


@dataclass(frozen=True)
class GenerateOptions:
    """The checked options of one run (see `engine.generate` for their meaning)."""

    method: str
    rule: Optional[str]
    alpha: float
    gamma: int
    temperature: float
    max_new_tokens: int
    aggregate: str
    bonus: str
    bild_threshold: Optional[float]
    bild_fallback: float


def _check_bild(alpha, bild_threshold, bild_fallback):
    if alpha is not None:
        raise ValueError(
            f"alpha={alpha!r} with method='bild' is ambiguous: method='bild' rolls back when "
            "-log p(draft) exceeds bild_threshold, while alpha is the D_TV threshold of "
            "rule='bild' (method='speculative'). Pass bild_threshold=... instead of alpha."
        )
    if bild_threshold is None:
        raise ValueError(
            "method='bild' needs bild_threshold=..., its rollback threshold on -log p(draft) "
            "(a value >= 0, e.g. 1.0)."
        )
    bild_threshold = check_real(bild_threshold, "bild_threshold")
    if not (math.isfinite(bild_threshold) and bild_threshold >= 0):
        raise ValueError(
            f"bild_threshold={bild_threshold} is BiLD's rollback threshold on -log p(draft); "
            "use a finite value >= 0."
        )
    bild_fallback = check_real(bild_fallback, "bild_fallback")
    if not 0.0 <= bild_fallback <= 1.0:
        raise ValueError(f"bild_fallback={bild_fallback} is a probability threshold; use a value in [0, 1].")
    return bild_threshold, bild_fallback


def _check_rule_for(method: str, rule) -> Optional[str]:
    if method == "speculative":
        return check_choice("spec" if rule is None else rule, rules.RULES, "rule")
    if method in ("token_cascade", "seq_cascade"):
        if rule not in (None, "chow"):
            raise ValueError(
                f"method={method!r} runs the Chow rule (it needs only the drafter to decide); "
                f"for rule={rule!r} use method='oracle' or 'speculative'."
            )
        return "chow"
    if method == "oracle":
        if rule not in rules.PREFIX_RULES:
            raise ValueError(f"method='oracle' needs a prefix rule: one of {', '.join(rules.PREFIX_RULES)}.")
        return rule
    if rule is not None:  # drafter, verifier, bild: a rule given here would be silently ignored
        raise ValueError(
            f"rule={rule!r} with method={method!r}: this method uses no deferral rule; pass rule=None "
            "(or method='speculative' to run a rule)."
        )
    return None


def check_generate_options(
    *,
    method,
    rule=None,
    alpha=None,
    gamma=5,
    temperature=0.0,
    max_new_tokens=128,
    aggregate="sequence",
    bonus="verifier",
    bild_threshold=None,
    bild_fallback=0.5,
) -> GenerateOptions:
    """Check the options of `generate` / `generate_batch`; returns them cleaned (`GenerateOptions`).

    `alpha=None` means 0 for the methods that use a rule; `method="bild"` takes `bild_threshold`
    and refuses `alpha` (see the module docstring); the drafter and the verifier alone use no alpha,
    and a non-zero one given to them is a no-op with a warning.
    """
    method = check_choice(method, METHODS, "method")
    gamma = check_gamma(gamma)
    temperature = check_temperature(temperature)
    max_new_tokens = check_whole_number(max_new_tokens, "max_new_tokens", 1, "ask for at least one new token")
    rule = _check_rule_for(method, rule)
    if method == "bild":
        bild_threshold, bild_fallback = _check_bild(alpha, bild_threshold, bild_fallback)
        alpha = math.nan  # not used by this method: its threshold is bild_threshold
    else:
        if bild_threshold is not None:
            raise ValueError(
                f"bild_threshold is the threshold of method='bild'; method={method!r} does not use it "
                "(for the BiLD deferral rule use method='speculative', rule='bild', alpha=...)."
            )
        given = alpha
        alpha = 0.0 if alpha is None else check_real(alpha, "alpha")
        if rule is not None:
            alpha = targets.check_alpha(rule, alpha)
        elif given is not None and alpha != 0.0:
            warnings.warn(
                f"alpha={given!r} has no effect with method={method!r}, which uses no deferral rule; "
                "pass alpha=None (or method='speculative' with a rule to use it).",
                UserWarning,
                stacklevel=3,
            )
    aggregate = check_choice(aggregate, SEQ_AGGREGATES, "aggregate")
    if bonus not in BONUS_OPTIONS:
        raise ValueError(f"bonus={bonus!r} is unknown; use 'verifier' (the paper), 'target' or 'none'.")
    return GenerateOptions(
        method,
        rule,
        float(alpha),
        gamma,
        temperature,
        max_new_tokens,
        aggregate,
        bonus,
        bild_threshold,
        float(bild_fallback),
    )


def stop_tokens(eos_token_id, verifier) -> frozenset:
    """The token ids that end an output: `eos_token_id` (an id or several), by default the verifier's;
    `()` or `False` for none (the output then runs to `max_new_tokens`)."""
    if eos_token_id is None:
        eos_token_id = verifier.eos_token_id
    if eos_token_id is None or eos_token_id is False:
        return frozenset()
    ids = (
        [eos_token_id] if not isinstance(eos_token_id, (list, tuple, set, frozenset)) else list(eos_token_id)
    )
    vocabulary = getattr(verifier, "vocab_size", None)
    checked = []
    for token in ids:
        token = check_whole_number(token, "eos_token_id", 0, "token ids are non-negative")
        if isinstance(vocabulary, int) and token >= vocabulary:
            raise ValueError(
                f"eos_token_id={token} is not a token of the verifier (its ids are 0 to {vocabulary - 1}); "
                "pass one of its ids, None for its own end-of-sequence token, or () for none."
            )
        checked.append(token)
    return frozenset(checked)
