r"""The input checks every public function shares: each returns the cleaned value or says what to change.

One place for the checks that several modules need, so that the same mistake gets the same
message everywhere:

- whole numbers (`check_whole_number`, `check_gamma`): Python ints, numpy integers and integral
  floats (`3`, `np.int64(3)`, `3.0`) are accepted; `True`, `2.5`, `"3"` are not;
- real numbers (`check_real`): ints, floats and numpy scalars, never strings or booleans;
- the sampling temperature $T$ (`check_temperature`): $T = 0$ (greedy) or a finite $T > 0$;
- names from a fixed list (`check_choice`, `check_loss`; `rules.check_rule` checks a rule), random seeds
  (`check_seed`) and devices (`check_device`).

Each raises `TypeError` for a value of the wrong kind and `ValueError` for one out of range.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Optional, Sequence

__all__ = [
    "LOSSES",
    "check_whole_number",
    "check_gamma",
    "check_real",
    "check_temperature",
    "check_choice",
    "check_loss",
    "check_seed",
    "check_device",
]

#: The losses of the lemmas: 0-1 loss and log loss.
LOSSES = ("zero_one", "log")


def check_whole_number(value, name: str, minimum: Optional[int] = None, meaning: str = "") -> int:
    """`value` as an `int`: Python and numpy integers and integral floats pass; at least `minimum`.

    `meaning` completes the message of a value below `minimum`, e.g. "the draft block holds at
    least one token".
    """
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name}={value!r} is not a whole number; pass an integer such as {minimum or 0}.")
    try:
        whole = operator.index(value)
    except TypeError:
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{name}={value!r} is not a whole number; pass an integer.") from None
        if not (math.isfinite(float(value)) and float(value).is_integer()):
            raise ValueError(f"{name}={value!r} is not a whole number; pass an integer.") from None
        whole = int(value)
    if minimum is not None and whole < minimum:
        why = f" ({meaning})" if meaning else ""
        raise ValueError(f"{name}={value!r} is below {minimum}{why}; pass an integer {name} >= {minimum}.")
    return int(whole)


def check_gamma(gamma, name: str = "gamma") -> int:
    r"""The draft block size $\gamma$: a whole number of drafted tokens, at least 1."""
    return check_whole_number(gamma, name, 1, "the draft block holds at least one token")


def check_real(value, name: str, *, finite: bool = False, allow_nan: bool = False) -> float:
    """`value` as a `float`: ints, floats and numpy scalars pass; strings, booleans and NaN do not."""
    if isinstance(value, bool) or isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real):
        try:  # a 0-d tensor or array holds one number too
            if (
                getattr(value, "ndim", None) == 0
                and getattr(value, "dtype", None) is not None
                and str(value.dtype) != "bool"
            ):
                value = value.item()
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    return check_real(value, name, finite=finite, allow_nan=allow_nan)
        except (TypeError, ValueError):
            pass
        raise TypeError(f"{name}={value!r} is not a number; pass a float such as {name}=0.3 (not a string).")
    value = float(value)
    if math.isnan(value) and not allow_nan:
        raise ValueError(f"{name} is NaN; pass a number.")
    if finite and math.isinf(value):
        raise ValueError(f"{name}={value} is infinite; pass a finite number.")
    return value


def check_temperature(temperature) -> float:
    r"""The sampling temperature $T$: 0 for greedy decoding, or a finite $T > 0$ (however small:
    `laws.probabilities` divides in float64 where float32 would round $T$ to 0)."""
    temperature = check_real(temperature, "temperature", allow_nan=True)
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(
            f"temperature={temperature} is invalid; use T = 0 for greedy decoding or a finite T > 0."
        )
    return temperature


def check_choice(value, choices: Sequence[str], name: str) -> str:
    """`value` if it is one of `choices`, else a `ValueError` that lists them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is unknown; choose one of {', '.join(choices)}.")
    return value


def check_loss(loss) -> str:
    """A loss of `LOSSES`."""
    return check_choice(loss, LOSSES, "loss")


def check_seed(seed, name: str = "seed") -> int:
    """A random seed: a whole number >= 0. `None` is refused: every run of this package is reproducible."""
    if seed is None:
        raise TypeError(
            f"{name}=None: runs are reproducible by design, so pass an integer seed "
            f"(e.g. {name}=0; different seeds give different samples)."
        )
    seed = check_whole_number(seed, name, 0, "torch seeds are non-negative")
    if seed > 2**64 - 1:
        raise ValueError(
            f"{name}={seed} is larger than torch's largest seed, 2**64 - 1; pass a smaller integer."
        )
    return seed


def check_device(device) -> str:
    """A torch device that exists on this machine: `"cpu"`, or `"cuda[:i]"` / `"mps"` where available."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device={device!r} is not a torch device; use 'cpu' or 'cuda'.") from error
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} but this machine has no CUDA device available to torch; use device='cpu'."
            )
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} but there are only {torch.cuda.device_count()} CUDA devices; "
                "use a smaller index."
            )
    elif parsed.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"device={device!r} but MPS is not available here; use device='cpu'.")
    return str(parsed)
