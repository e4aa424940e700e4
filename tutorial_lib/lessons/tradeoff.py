r"""Exact cost-quality curves in the toy world: the paper's Figure 1 and the trade-off of Lemma 4 in practice.

Every point comes from `ToyWorld.evaluate` (exact, no sampling). Figure 1 charges a token-level cascade
one verifier call per deferred token (its deferral rate) and SpecDecode with block size $\gamma$ one call
per block, $1 / \mathbb{E}[\text{tokens per call}]$. The trade-off runs every method speculatively and
charges the latency model of `latency`:

$$\text{latency} = \frac{\gamma\,c + 1}{\mathbb{E}[\text{tokens per verifier call}]}
\quad (\text{verifier alone} = 1,\ \text{drafter alone} = c).$$

`tradeoff_summary` reads the paper's two table entries off a curve: the lowest latency at which a
method matches the verifier's quality, and the best quality it reaches within the verifier's latency.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence, Tuple

import torch

from ..maths import targets
from ..maths import rules
from ..checks import check_gamma, check_temperature
from ..toy.examples import default_world, world_from_key, world_key
from ..maths.latency import expected_latency
from ..toy.toyworld import ToyWorld

__all__ = ["TRADEOFF_METHODS", "check_methods", "figure1_curves", "tradeoff_curves", "tradeoff_summary"]


def _tradeoff_methods() -> dict:
    methods = {"SpecDecode": ("spec", 1.0), "Lossy (beta = 1)": ("lossy", 1.0)}
    for record in rules.RULE_TABLE.values():
        if record.family in ("prefix", "token"):
            methods[record.label] = (record.name, 1.0)
    return methods


#: Label -> (rule, beta) of the methods notebook 05 compares, in the order they are drawn: SpecDecode, lossy
#: and every rule of the prefix and token families of `rules.RULE_TABLE` (a live view).
TRADEOFF_METHODS = rules.TableMapping(_tradeoff_methods)


def figure1_curves(
    world: Optional[ToyWorld] = None,
    n_alpha: int = 21,
    temperature: float = 1.0,
    gamma: int = 5,
    prefixes: str = "generated",
) -> dict:
    """Exact quality against calls to the verifier per token (the paper's "deferral rate").

    Chow (TokenCascade, Algorithm 2) and the Diff oracle (Algorithm 3) call the verifier once per
    deferred token, so their cost is the deferral rate; SpecDecode with block size `gamma` calls it
    once per block, 1 / (tokens per call). Quality is the per-token 0-1 loss of `world.evaluate`.
    """
    world = world or default_world()
    temperature, gamma = check_temperature(temperature), check_gamma(gamma)
    out = {}
    for label, rule in (("Chow (TokenCascade)", "chow"), ("Diff (oracle)", "diff")):
        alphas = targets.alpha_grid(rule, n_alpha)
        points = [world.evaluate(rule, float(a), temperature=temperature, prefixes=prefixes) for a in alphas]
        out[label] = {
            "alpha": alphas.tolist(),
            "calls_per_token": [m.deferral_rate for m in points],
            "loss": [m.zero_one_loss for m in points],
        }
    spec = world.evaluate("spec", temperature=temperature, gamma=gamma)
    out[f"SpecDecode (gamma = {gamma})"] = {
        "alpha": [0.0],
        "calls_per_token": [1.0 / spec.tokens_per_verifier_call],
        "loss": [spec.zero_one_loss],
    }
    out["verifier"] = world.evaluate("verifier", temperature=temperature, prefixes=prefixes).zero_one_loss
    out["drafter"] = world.evaluate("drafter", temperature=temperature, prefixes=prefixes).zero_one_loss
    return out


def check_methods(methods) -> Tuple[str, ...]:
    methods = tuple(TRADEOFF_METHODS) if methods is None else tuple(methods)
    unknown = [m for m in methods if m not in TRADEOFF_METHODS]
    if unknown or not methods:
        raise ValueError(f"methods={list(methods)}: choose one or more of {', '.join(TRADEOFF_METHODS)}.")
    return methods


@functools.lru_cache(maxsize=64)
def _cached_curves(settings, gamma, temperature, n_alpha, methods):
    world = world_from_key(settings)
    out = {}
    for label in methods:
        rule, beta = TRADEOFF_METHODS[label]
        # Rules without an alpha (SpecDecode) are one point, not n_alpha copies of it.
        alphas = (
            targets.alpha_grid(rule, n_alpha)
            if rule in rules.ALPHA_RANGES
            else torch.zeros(1, dtype=torch.float64)
        )
        points = [
            world.evaluate(rule, float(a), beta=beta, temperature=temperature, gamma=gamma) for a in alphas
        ]
        out[label] = {
            "alpha": alphas.tolist(),
            "loss": [m.zero_one_loss for m in points],
            "rejection": [m.rejection_rate for m in points],
            "tokens_per_call": [m.tokens_per_verifier_call for m in points],
        }
    ends = {
        name: world.evaluate(name, temperature=temperature).zero_one_loss for name in ("verifier", "drafter")
    }
    return out, ends


def tradeoff_curves(
    world: Optional[ToyWorld] = None,
    gamma: int = 5,
    temperature: float = 1.0,
    n_alpha: int = 21,
    methods: Optional[Sequence[str]] = None,
    cost_ratio: float = 0.0,
) -> dict:
    """Exact curves of every method (speculative execution, block size `gamma`) over its alpha grid.

    Returns `{"curves": {label: {"alpha", "loss", "rejection", "tokens_per_call", "latency"}},
    "verifier": {"loss", "latency"}, "drafter": {"loss", "latency"}}`; loss is the per-token 0-1 loss
    of the generated text under P, latency the expected latency per token relative to the verifier
    alone (`latency.expected_latency`). Computed once per setting: moving `cost_ratio` only rescales latency.
    """
    world = world or default_world()
    gamma, temperature = check_gamma(gamma), check_temperature(temperature)
    expected_latency(1.0, gamma, cost_ratio)  # checks cost_ratio before the curves are computed
    curves, ends = _cached_curves(world_key(world), gamma, temperature, int(n_alpha), check_methods(methods))
    with_latency = {
        k: dict(v, latency=expected_latency(v["tokens_per_call"], gamma, cost_ratio))
        for k, v in curves.items()
    }
    return {
        "curves": with_latency,
        "verifier": {"loss": ends["verifier"], "latency": 1.0},
        # The drafter alone runs one drafter step per token and never calls the verifier.
        "drafter": {"loss": ends["drafter"], "latency": float(cost_ratio)},
    }


def tradeoff_summary(result: dict, tol: float = 1e-9) -> dict:
    """The paper's two table entries per method: the lowest latency at which it matches the verifier's
    quality (`latency_at_verifier_quality`, None if it never does) and the best quality it reaches
    without exceeding the verifier's latency (`best_loss_within_verifier_latency`), plus its best loss."""
    target_loss = result["verifier"]["loss"]
    summary = {}
    for label, c in result["curves"].items():
        matching = [lat for lat, loss in zip(c["latency"], c["loss"]) if loss <= target_loss + tol]
        within = [loss for lat, loss in zip(c["latency"], c["loss"]) if lat <= 1.0 + tol]
        summary[label] = {
            "best_loss": min(c["loss"]),
            "latency_at_verifier_quality": min(matching) if matching else None,
            "best_loss_within_verifier_latency": min(within) if within else None,
        }
    return summary
