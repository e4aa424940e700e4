"""A configuration's identity: the exact values that name its numbers, the key of its rows, and the
canonical form of the settings a sweep's hash reads.

A processor's vector routines (`np.linspace`, `np.geomspace`) may round the last bit of a float otherwise
than another's, so no key, hash or comparison of settings reads a float's every digit: each reads its
`exact_value`, the float rounded to `KEY_DIGITS` significant digits (0 below 1e-12). Two alphas that agree
to 10 digits are one configuration; any other two never share a key.
"""

from __future__ import annotations

__all__ = ["KEY_DIGITS", "exact_value", "canonical", "alpha_text", "beta_text", "key_of_row"]

#: Significant digits that name a number in a configuration's key and a sweep's hash: two floats that
#: agree to this many digits are one value, so the last bits a processor's vector routines round
#: differently (`np.geomspace`, `np.linspace`) never make a configuration, or a sweep, another one.
KEY_DIGITS = 10


def exact_value(value: float) -> float:
    """`value` rounded to `KEY_DIGITS` significant digits, and 0 below 1e-12 in size (a grid's middle
    point is 0 on one processor and 5.6e-17 on another): what names it in a key or a hash."""
    value = float(value)
    return 0.0 if abs(value) < 1e-12 else float(f"{value:.{KEY_DIGITS}g}")


def canonical(settings):
    """`settings` (JSON-like) with every float replaced by its `exact_value`: the form a sweep's hash and
    the comparison of saved settings read, so a profile's floats that differ in their last bits name
    the same sweep."""
    if isinstance(settings, float):
        return exact_value(settings)
    if isinstance(settings, dict):
        return {key: canonical(value) for key, value in settings.items()}
    if isinstance(settings, (list, tuple)):
        return type(settings)(canonical(value) for value in settings)
    return settings


def alpha_text(alpha: float) -> str:
    """Alpha in a key: 6 significant digits where those are its exact value, else the exact value's digits."""
    alpha = exact_value(alpha)
    short = f"{alpha:.6g}"
    return short if float(short) == alpha else repr(alpha)


def beta_text(beta) -> str:
    """Beta in a key: its exact value's digits, or the word `normalize` (Lossy*)."""
    return beta if isinstance(beta, str) else repr(exact_value(beta))


def key_of_row(row: dict) -> str:
    """The configuration key of a saved row, written as `Config.key` writes it today, from the row's own
    alpha and beta: rows saved under an earlier form of the key (6 significant digits, or the float's
    every digit) are read as their configuration's."""
    fields = str(row["config"]).split("|")
    if len(fields) < 7:
        return row["config"]
    alpha, beta = row.get("alpha"), row.get("beta")
    if isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        fields[3] = alpha_text(alpha)
    try:
        fields[4] = beta_text(beta if beta == "normalize" else float(beta))
    except (TypeError, ValueError):
        pass
    return "|".join(fields)
