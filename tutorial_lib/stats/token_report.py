r"""What notebook 08 reads off the token-level analysis (`token_curves`): its profiles and pair, the rules
ranked by their distance to the oracle envelope, the points below it, and the toy-world check.

**Toy-world check.** With references $y \sim P$ drawn from the toy world's truth, the mean of a statistic
over positions, $\hat\mu = \sum_i s_i / \sum_i n_i$ ($s_i$ the sum over answer $i$'s $n_i$ positions),
estimates the exact teacher-forced expectation of `ToyWorld.evaluate(prefixes="truth")`. Its standard error is
the ratio estimator's, $\mathrm{se} = \mathrm{sd}(s_i - \hat\mu\, n_i)\,\sqrt{m} / \sum_i n_i$ over the $m$
answers, and $z = (\hat\mu - \mu) / \mathrm{se}$.
"""

from __future__ import annotations

import math
from typing import Dict, List

import numpy as np
import pandas as pd

from ..maths import token_analysis as ta
from ..models.adapter import load_model, load_pair
from ..models.language_model import ModelPair
from ..models.layer_skip import layer_skip_drafter, split_layers
from . import token_curves as tc

__all__ = [
    "TOKEN_PROFILES",
    "GREEDY_LIMITS",
    "token_profile",
    "load_profile_pair",
    "ranking",
    "below_envelope",
    "toy_world_check",
]

#: Notebook 08's profiles: the Qwen pair on every offline item, or SmolLM2 drafting with its first
#: 16 layers (CI).
TOKEN_PROFILES = {
    "qwen": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", n_items=None, greedy_items=16),
    "smoke": dict(drafter="smollm2-135m:layers=16", verifier="smollm2-135m", n_items=2, greedy_items=1),
}
#: The longest greedy reference per task (tokens).
GREEDY_LIMITS = {"code": 64, "arithmetic": 64, "facts": 16}


def token_profile(profile: str, n_items=None) -> dict:
    """The settings of a notebook-08 profile; `n_items` (not None) replaces the profile's item count."""
    if profile not in TOKEN_PROFILES:
        raise ValueError(f"profile={profile!r}: choose one of {', '.join(TOKEN_PROFILES)}")
    return dict(TOKEN_PROFILES[profile], **({"n_items": n_items} if n_items is not None else {}))


def load_profile_pair(settings: dict) -> ModelPair:
    """The profile's pair in float32; a drafter named `<verifier>:layers=N` is the verifier's first N
    layers."""
    drafter = settings["drafter"]
    base, n_layers = split_layers(drafter)
    if n_layers is not None and base == settings["verifier"]:  # the verifier's weights, loaded once
        verifier = load_model(settings["verifier"], dtype="float32")
        return ModelPair(layer_skip_drafter(verifier, n_layers), verifier)
    return load_pair(drafter, settings["verifier"], dtype="float32")


def ranking(summary: dict, loss: str = "expected_01") -> List[str]:
    """Curves ordered by their area above the envelope (smallest first)."""
    areas = {c: float(v["area"]["mean"][0]) for c, v in summary[loss]["curves"].items()}
    return sorted(areas, key=areas.get)


def below_envelope(summary: dict, loss: str = "expected_01") -> Dict[str, int]:
    """How many grid points of each curve lie below the envelope (possible only for rules that are not
    mixtures of q and p: the token rules and Lossy)."""
    rejection, column = summary["rejection_axis"], ta.STATS.index(loss)
    envelope = summary[loss]["envelope"]["mean"]
    counts: Dict[str, int] = {}
    for j, (curve, _) in enumerate(summary["points"]):
        if summary["mean"][j, column] < np.interp(summary["mean"][j, 0], rejection, envelope) - 1e-12:
            counts[curve] = counts.get(curve, 0) + 1
    return counts


def toy_world_check(world, result: "tc.TokenAnalysis") -> pd.DataFrame:
    """One row per (curve, alpha, statistic) of `result` (an analysis of references drawn from `world`'s P):
    the exact expectation, the module's mean, its standard error and z (see the module docstring).
    Statistics a rule does not define (NaN in the exact numbers) are left out."""
    n = result.counts.astype(float)
    rows = []
    for j, (curve, alpha) in enumerate(result.grid.points):
        rule, beta = ta.curve_rule(curve)
        if rule == "lossy" and alpha >= 1:
            continue
        exact = world.evaluate(rule, alpha, beta=beta, prefixes="truth")
        for column, value in (
            ("rejection", exact.rejection_rate),
            ("expected_01", exact.zero_one_loss),
            ("log_loss", exact.log_loss),
            ("deferral", exact.deferral_rate),
        ):
            if math.isnan(value):
                continue
            s = result.sums[:, j, ta.STATS.index(column)]
            mean = s.sum() / n.sum()
            se = np.std(s - mean * n, ddof=1) * math.sqrt(len(n)) / n.sum()
            rows.append(
                {
                    "curve": curve,
                    "alpha": alpha,
                    "statistic": column,
                    "exact": value,
                    "module": mean,
                    "se": se,
                    "z": (mean - value) / se if se > 0 else 0.0,
                }
            )
    return pd.DataFrame(rows)
