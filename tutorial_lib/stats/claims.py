r"""The paper's claims about its T5 and Gemma experiments, checked on a sweep's rows.

Each claim becomes one measured difference $\hat\Delta$ per (task, temperature[, gamma]), positive
when the claim holds, computed from the curves of `curve_bootstrap` (the paper's table: reduction
of cost at the verifier's quality, best quality within a cost), with a 95% percentile bootstrap
interval $[l, h]$ over items (every method and the verifier on the same resamples, so the difference
is paired). A curve that does not reach the verifier's quality has reduction $-\infty$; the best of
a group of methods is taken inside every resample (the choice of the best is part of what is
resampled), and two groups that both fail to reach differ by 0.

Verdicts: **holds** when $l > 0$; **does not hold** when $h \le 0$ (the claim's side is excluded, or
at best a tie); otherwise **not resolved at this sample size**, with the number of items that would
resolve it if the effect stayed at its estimate: the interval's half-width shrinks as $1/\sqrt n$,
so with $\widehat{se} = (h - l) / (2 z_{0.975})$,
$$n_{\rm needed} = \Big\lceil n\,\Big(\frac{(z_{0.975} + z_{0.8})\,\widehat{se}}{|\hat\Delta|}\Big)^2 \Big\rceil,$$
the size at which a two-sided 5% test detects $\hat\Delta$ with 80% power. It is left empty where
$\hat\Delta$ is 0 or infinite or the interval unbounded (a method fails to reach in some resamples):
then no size follows from the measured variance.

The claims (the paper's section 6 and appendix, as `DIGEST.md` summarises them):

- T5: *SpecCascade [Token] gives the best quality-latency trade-off* (best Token rule's latency
  reduction at the verifier's quality minus the best of every other method); *OPT is second*
  (OPT's minus the best of the methods other than the Token rules); *sequential cascades are best
  only at very low latency*, as two measurements: within the verifier's latency the best
  speculative cascade beats the best sequential one, and within the lowest latency a speculative
  cascade reaches, the best sequential cascade beats the best speculative one.
- Gemma-style: *[Token] matches the large model's quality at a lower rejection rate* (best Token
  rule's rejection-rate reduction minus the best of Chow, Diff, OPT and lossy SpecDecode); *[Token]
  often beats the large model* (best Token quality at any rejection rate minus the verifier's);
  *OPT helps less with Gemma than with T5* (OPT's reduction minus the best of Chow and Diff, with
  Gemma minus the same with T5 at the same temperature; needs the T5 rows; independent resamples).
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from .curve_bootstrap import REJECTION, CurveBootstrap
from .paired import item_scores

__all__ = ["HOLDS", "DOES_NOT_HOLD", "NOT_RESOLVED", "verdict", "n_needed", "t5_claims", "gemma_claims",
           "TOKEN_RULES", "PREFIX_RULES", "SEQUENTIAL"]

HOLDS, DOES_NOT_HOLD, NOT_RESOLVED = "holds", "does not hold", "not resolved at this sample size"
TOKEN_RULES = ("SpecCascade [Token-V1]", "SpecCascade [Token-V2]", "SpecCascade [Token-V3]")
PREFIX_RULES = ("SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]")
SEQUENTIAL = ("SeqCascade [Chow]", "TokenCascade [Chow]")
_BASELINES = ("Drafter", "Verifier")
_PLAIN = ("drafter", "verifier", "token_cascade", "seq_cascade")


def verdict(low: float, high: float) -> str:
    """The verdict on a claim measured as a difference that is positive when it holds."""
    if low > 0:
        return HOLDS
    if high <= 0:
        return DOES_NOT_HOLD
    return NOT_RESOLVED


def n_needed(estimate: float, low: float, high: float, n: int, *, confidence: float = 0.95,
             power: float = 0.8) -> float:
    """Items at which the interval would resolve `estimate` (module docstring); NaN where none follows."""
    if not all(map(math.isfinite, (estimate, low, high))) or estimate == 0:
        return float("nan")
    z_alpha = scipy_stats.norm.ppf(0.5 + confidence / 2)
    se = (high - low) / (2 * z_alpha)
    return float(math.ceil(n * ((z_alpha + scipy_stats.norm.ppf(power)) * se / abs(estimate)) ** 2))


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b where an infinity means "not reached" (or a difference that involved it): equal
    infinities (both fail) differ by 0."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(invalid="ignore"):
        out = a - b
    return np.where(np.isinf(a) & (a == b), 0.0, out)


def _text(value: float) -> str:
    return "not reached" if np.isneginf(value) else f"{value:.3g}"


def _best(boot: CurveBootstrap, labels: Sequence[str], gamma, name: str, budget: float = 1.0) -> Optional[tuple]:
    """`(point, resampled, best label)` of the best of `labels` for statistic `name` (None if none ran)."""
    configs = boot.scores.configs
    plain = set(configs.loc[configs["method"].isin(_PLAIN), "label"])  # run at one gamma: they do not depend on it
    curves = [c for c in boot.curves if c[0] in labels and (c[1] == gamma or c[0] in plain)]
    if not curves:
        return None
    values = [boot.value(name, c, budget) for c in curves]
    points = np.array([v[0] for v in values])
    resampled = np.max(np.vstack([v[1] for v in values]), axis=0) if values[0][1].size else values[0][1]
    return float(points.max()), resampled, curves[int(np.argmax(points))][0]


def _row(claim: str, boot: CurveBootstrap, gamma, measurement: str, estimate: float, resampled: np.ndarray,
         detail: str, confidence: float) -> dict:
    tail = (1 - confidence) / 2
    if resampled.size:
        low, high = (float(v) for v in np.quantile(resampled, [tail, 1 - tail], method="inverted_cdf"))
    else:
        low = high = float("nan")
    n = boot.scores.n
    decided = verdict(low, high) if resampled.size else NOT_RESOLVED
    return {"claim": claim, "task": boot.scores.task, "temperature": boot.scores.temperature, "gamma": gamma,
            "measurement": measurement, "estimate": estimate, "low": low, "high": high, "n": n, "verdict": decided,
            "n_needed": (n_needed(estimate, low, high, n, confidence=confidence) if decided == NOT_RESOLVED
                         else float("nan")), "detail": detail}


def _compare(claim, boot, gamma, measurement, mine, theirs, confidence, *, name="reduction", budget=1.0):
    a, b = _best(boot, mine, gamma, name, budget), _best(boot, theirs, gamma, name, budget)
    if a is None or b is None:
        return None
    estimate = float(_difference(np.array([a[0]]), np.array([b[0]]))[0])
    detail = f"{a[2]}: {_text(a[0])}; {b[2]}: {_text(b[0])}"
    return _row(claim, boot, gamma, measurement, estimate, _difference(a[1], b[1]), detail, confidence)


def _bootstraps(rows, tasks, cost, n_resamples, seed, budgets=None) -> List[CurveBootstrap]:
    out = []
    for scores in item_scores(rows, tasks):
        boot = CurveBootstrap(scores, cost)
        if budgets is not None:
            boot.budgets = [1.0] + [b for b in budgets(boot) if b != 1.0]
        out.append(boot.run(n_resamples, seed))
    return out


def _cheapest_speculative(boot: CurveBootstrap) -> List[float]:
    points = boot.point_costs()
    speculative = points[points["label"].str.startswith("SpecCascade") & np.isfinite(points["cost"])]
    return [float(speculative["cost"].min())] if len(speculative) else []


def t5_claims(rows: pd.DataFrame, tasks=None, *, cost: str = "wall_time_s", n_resamples: int = 2000,
              confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The T5 claims (module docstring) per (task, T, gamma) on a latency axis `cost` (a row column,
    relative to the verifier: `wall_time_s`, or the cost model's `modelled_latency_s`). `tasks`: the
    sweep's `evaluation.Task`s, so that BLEU is corpus BLEU."""
    out = []
    for boot in _bootstraps(rows, tasks, cost, n_resamples, seed, budgets=_cheapest_speculative):
        others = [c[0] for c in boot.curves if c[0] not in TOKEN_RULES + _BASELINES]
        for gamma in sorted({c[1] for c in boot.curves if c[0].startswith("SpecCascade")}):
            low_budget = boot.budgets[1] if len(boot.budgets) > 1 else None
            speculative = [c[0] for c in boot.curves if c[0].startswith("SpecCascade")]
            rows_ = [
                _compare("SpecCascade [Token] gives the best quality-latency trade-off", boot, gamma,
                         "latency reduction at the verifier's quality: best Token rule - best other method",
                         TOKEN_RULES, others, confidence),
                _compare("OPT is second with T5", boot, gamma,
                         "latency reduction at the verifier's quality: OPT - best method other than Token and OPT",
                         ["SpecCascade [OPT]"], [m for m in others if m != "SpecCascade [OPT]"], confidence),
                _compare("Sequential cascades are not the best at the verifier's latency", boot, gamma,
                         "best quality within the verifier's latency: best speculative cascade - best sequential",
                         speculative, SEQUENTIAL, confidence, name="best_quality"),
            ]
            if low_budget is not None:
                rows_.append(_compare(
                    "Sequential cascades are best at very low latency", boot, gamma,
                    f"best quality within latency {low_budget:.3g} (the cheapest speculative cascade point): "
                    "best sequential - best speculative cascade", SEQUENTIAL, speculative, confidence,
                    name="best_quality", budget=low_budget))
            out += [r for r in rows_ if r is not None]
    return pd.DataFrame(out)


def _opt_advantage(boot: CurveBootstrap, gamma) -> Optional[tuple]:
    opt = _best(boot, ["SpecCascade [OPT]"], gamma, "reduction")
    rest = _best(boot, ["SpecCascade [Chow]", "SpecCascade [Diff]"], gamma, "reduction")
    if opt is None or rest is None:
        return None
    return (float(_difference(np.array([opt[0]]), np.array([rest[0]]))[0]), _difference(opt[1], rest[1]))


def gemma_claims(rows: pd.DataFrame, tasks=None, *, cost: str = REJECTION, t5_rows: Optional[pd.DataFrame] = None,
                 t5_tasks=None, t5_cost: str = "wall_time_s", n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0) -> pd.DataFrame:
    """The Gemma-style claims (module docstring) per (task, T) on the rejection-rate axis (`cost`).
    With `t5_rows` (and `t5_tasks`, `t5_cost`) the claim "OPT helps less with Gemma than with T5" is
    measured against the T5 run at the same temperature; without them it is left out."""
    t5 = _bootstraps(t5_rows, t5_tasks, t5_cost, n_resamples, seed + 1) if t5_rows is not None else []
    out = []
    for boot in _bootstraps(rows, tasks, cost, n_resamples, seed):
        gamma = 1
        others = [m for m in PREFIX_RULES + ("SpecDecode [Lossy]",)]
        out.append(_compare("[Token] matches the large model's quality at a lower rejection rate", boot, gamma,
                            "rejection-rate reduction at the verifier's quality: best Token rule - best of "
                            "Chow/Diff/OPT/Lossy", TOKEN_RULES, others, confidence))
        token = _best(boot, TOKEN_RULES, gamma, "best_quality")
        if token is not None:
            target, target_resampled = boot.value("verifier_quality")
            out.append(_row("[Token] beats the large model's quality", boot, gamma,
                            "best Token-rule quality at any rejection rate - verifier quality",
                            token[0] - target, token[1] - target_resampled,
                            f"{token[2]}: {_text(token[0])}; verifier: {target:.3g}", confidence))
        gemma_opt = _opt_advantage(boot, gamma)
        for other in [b for b in t5 if b.scores.temperature == boot.scores.temperature]:
            t5_gamma = min(c[1] for c in other.curves if c[0] == "SpecCascade [OPT]")
            t5_opt = _opt_advantage(other, t5_gamma)
            if gemma_opt is None or t5_opt is None:
                continue
            size = min(gemma_opt[1].size, t5_opt[1].size)  # independent resamples of the two runs, paired by index
            row = _row("OPT helps less with Gemma than with T5", boot, gamma,
                       f"(OPT - best of Chow/Diff) reduction: T5 ({other.scores.task}) - Gemma-style",
                       float(_difference(np.array([t5_opt[0]]), np.array([gemma_opt[0]]))[0]),
                       _difference(t5_opt[1][:size], gemma_opt[1][:size]),
                       f"T5: {_text(t5_opt[0])}; Gemma-style: {_text(gemma_opt[0])}", confidence)
            out.append(row)
    return pd.DataFrame([r for r in out if r is not None])
