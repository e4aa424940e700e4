r"""The engine on the toy world, scored against the truth: a check of `ToyWorld.evaluate`'s exact curves.

`ToyWorld.evaluate` computes, by dynamic programming, what Algorithm 4 with block size $\gamma$
*should* produce. Here the real engine (`tutorial_lib.generate`, with KV-cache bookkeeping, blocks,
rollbacks and bonus tokens) generates `n` sequences from `<bos>` with the toy world's drafter and
verifier, and each emitted token $x_t$ is scored by the truth: its 0-1 loss is
$1 - P(x_t \mid x_{<t})$, the chance that a fresh draw of the truth differs from it. Per-token
averages are ratios of sums over sequences, with delta-method standard errors, exactly as
`ToyWorld.simulate` reports them, so the z-score

$$z = \frac{\hat m_{\text{engine}} - m_{\text{exact}}}{\widehat{\mathrm{se}}}$$

should be within a few units for every metric.
"""

from __future__ import annotations

import math
from typing import Dict, Tuple

import torch
from tqdm.auto import tqdm

from ..decoding.engine import generate
from ..models.toy import toy_pair
from ..toy.toyworld import BOS, EOS, ToyMetrics, ToyWorld, ratio_of_means

__all__ = ["engine_metrics", "engine_check", "z_scores", "engine_interval", "METRICS"]

#: The metrics compared, each a ratio of per-sequence sums (numerator, denominator).
METRICS = ("zero_one_loss", "deferral_rate", "rejection_rate", "tokens_per_verifier_call")


def engine_metrics(
    world: ToyWorld,
    rule: str,
    alpha: float = 0.0,
    *,
    gamma: int = 5,
    n: int = 2000,
    beta=1.0,
    temperature: float = 1.0,
    seed: int = 0,
    progress: bool = False,
) -> ToyMetrics:
    """Run `generate(method="speculative")` on `n` sequences of the toy world and average per token."""
    if n < 2:
        raise ValueError(f"n={n}: standard errors need at least two sequences.")
    drafter, verifier = toy_pair(world)
    V = world.vocab_size
    P = world.P.reshape(V * V, V)  # (context, V)
    sums = {
        k: torch.zeros(n, dtype=torch.float64)
        for k in ("zero_one", "deferral", "rejection", "judged", "length", "calls")
    }
    for i in tqdm(range(n), desc=f"engine {rule} alpha={alpha:g}", disable=not progress):
        g = generate(
            drafter,
            verifier,
            [BOS],
            method="speculative",
            rule=rule,
            alpha=alpha,
            beta=beta,
            gamma=gamma,
            temperature=temperature,
            max_new_tokens=world.max_len,
            seed=seed + i,
            eos_token_id=EOS,
        )
        a, b = BOS, BOS
        for step in g.trace:
            sums["zero_one"][i] += 1.0 - float(P[a * V + b, step.token])
            if not math.isnan(step.deferral):
                sums["deferral"][i] += step.deferral
            a, b = b, step.token
        sums["rejection"][i] = g.n_rejected
        sums["judged"][i] = g.n_accepted + g.n_rejected
        sums["length"][i] = len(g.tokens)
        sums["calls"][i] = g.n_verifier_calls
    est, se = {}, {}
    for key, (num, den) in {
        "zero_one_loss": ("zero_one", "length"),
        "deferral_rate": ("deferral", "judged"),
        "rejection_rate": ("rejection", "judged"),
        "tokens_per_verifier_call": ("length", "calls"),
    }.items():
        est[key], se[key] = ratio_of_means(sums[num], sums[den])
    se["mean_length"] = float(sums["length"].std() / math.sqrt(n))
    return ToyMetrics(
        zero_one_loss=est["zero_one_loss"],
        log_loss=math.nan,
        deferral_rate=est["deferral_rate"],
        rejection_rate=est["rejection_rate"],
        mean_length=float(sums["length"].mean()),
        tokens_per_verifier_call=est["tokens_per_verifier_call"],
        stderr=se,
    )


def z_scores(exact: ToyMetrics, estimate: ToyMetrics) -> Dict[str, float]:
    """(engine - exact) / standard error for each metric in `METRICS` (NaN where undefined)."""
    out = {}
    for key in METRICS:
        e, s, se = getattr(exact, key), getattr(estimate, key), estimate.stderr.get(key, math.nan)
        out[key] = (s - e) / se if se > 0 and not math.isnan(e) else (0.0 if s == e else math.nan)
    return out


def engine_check(
    world: ToyWorld,
    methods: Dict[str, tuple],
    alphas: Dict[str, float],
    *,
    gamma: int,
    temperature: float = 1.0,
    n: int = 600,
    seed: int = 0,
    progress: bool = True,
) -> Dict[str, dict]:
    """For each `label -> (rule, beta)` in `methods`, the exact metrics at `alphas[label]`, the engine's
    estimates with standard errors, and their z-scores."""
    out = {}
    for label, (rule, beta) in tqdm(methods.items(), desc="engine check", disable=not progress):
        alpha = float(alphas[label])
        exact = world.evaluate(rule, alpha, beta=beta, temperature=temperature, gamma=gamma)
        estimate = engine_metrics(
            world, rule, alpha, gamma=gamma, n=n, beta=beta, temperature=temperature, seed=seed
        )
        out[label] = {
            "rule": rule,
            "alpha": alpha,
            "exact": {k: getattr(exact, k) for k in METRICS},
            "engine": {k: getattr(estimate, k) for k in METRICS},
            "stderr": {k: estimate.stderr.get(k, math.nan) for k in METRICS},
            "z": z_scores(exact, estimate),
        }
    return out


def engine_interval(result: dict, metric: str, width: float = 2.0) -> Tuple[float, float]:
    """`(low, high)`: the engine's estimate of `metric` in one `engine_check` result, `width` standard
    errors each way (2: about 95%)."""
    estimate, se = result["engine"][metric], result["stderr"][metric]
    return estimate - width * se, estimate + width * se
