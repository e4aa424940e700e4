r"""The paper's claims about its T5 and Gemma experiments, checked on a sweep's rows.

Each claim becomes one measured difference $\hat\Delta$ per (task, temperature[, gamma]), positive
when the claim holds, computed from the curves of `curve_bootstrap` (the paper's table: reduction
of cost at the verifier's quality, best quality within a cost).

**What a rule is credited with.** A claim about a rule uses that rule's **own measured
configurations** only (`own_configurations`): never the drafter's, SpecDecode's or the verifier's
runs attached as the ends of its curve, not its alphas at the ends of its range (where its output
law *is* SpecDecode's or the drafter's), and not a configuration whose texts equal SpecDecode's on
every item (at $T = 0$ lossy SpecDecode is SpecDecode: exact, so nothing of its own to measure).
Where a rule keeps no configuration of its own, the claim reads **by construction**, with the
reason, and no number.

**Intervals that include the selection.** A claim about "the best Token rule" or "the best other
method" takes a maximum over several curves, which is biased upward even when nothing differs. Its
interval comes from bounds that hold for every curve at once (`intervals.simultaneous_bounds` on
the same resamples of the items, the whole computation redone per resample), so the selection is
inside the interval: for a best-of group, $[\max L, \max U]$; for a difference of two groups,
$[\max L_A - \max U_B,\ \max U_A - \max L_B]$.

**The noise floor, in the claim's own unit** (`paired.same_law_floor`): two runs with one output law on
the same items, with its percentile interval. A claim in the quality unit gets the quality floor (the
verifier with a second seed set minus the verifier, or else SpecDecode minus the verifier; at $T = 0$ the
latter is 0 by construction and is not given as a floor); a claim in the rejection-rate unit gets
SpecDecode's rate with a second seed set relative to its rate; a claim on a latency axis gets none (no two
runs of one law were priced). `noise_floor_from` says which, or why there is none; `against_floor` says
whether the estimate lies **within the floor** ($|\hat\Delta| \le \max(|l_f|, |h_f|)$: what two runs of
one law differ by) or beyond it.

**Units.** On the rejection-rate axis (Gemma-style) each rule's number is the rejection rate at which
its curve first reaches the verifier's quality, and differences are reported as a reduction
relative to SpecDecode's own rejection rate, $(\,r_B - r_A) / r_{\rm spec}$ (positive: A rejects less),
with the rates themselves in the row. A claim that compares the two reruns (OPT with Gemma against
OPT with T5) measures both on that same axis (the T5 rows count their rejections too).

Verdicts: **holds** when $l > 0$; **does not hold** when $h \le 0$; **by construction** where the
difference is fixed (or undefined) by the design, whatever the items, with the reason (a rule with
no configuration of its own, no compared curve reaching the verifier's quality so both sides are
"not reached", SpecDecode at $\gamma = 1$ without the bonus token on a latency axis); **not run**
where a compared method was not run at that temperature (the sweep's design: named in the reason);
otherwise **not resolved at this sample size**, with the number of items that would resolve
it if the effect stayed at its estimate: the interval's half-width shrinks as $1/\sqrt n$, so with
$\widehat{se} = (h - l) / (2 z_{0.975})$,
$$n_{\rm needed} = \Big\lceil n\,\Big(\frac{(z_{0.975} + z_{0.8})\,\widehat{se}}{|\hat\Delta|}\Big)^2 \Big\rceil,$$
the size at which a two-sided 5% test detects $\hat\Delta$ with 80% power (empty where $\hat\Delta$
is 0 or infinite or the interval unbounded).

The claims (the paper's section 6 and appendix, as `DIGEST.md` summarises them):

- T5: *SpecCascade [Token] gives the best quality-latency trade-off* (best Token rule's latency
  reduction at the verifier's quality minus the best of every other method); *OPT is second*
  (OPT's minus the best of the methods other than the Token rules); *sequential cascades are best
  only at very low latency*, as two measurements named by their budget: within the verifier's
  latency the best speculative cascade beats the best sequential one, and within the latency of the
  cheapest speculative cascade point (a budget above the verifier's when speculation does not pay:
  the measurement gives it as a multiple of the verifier's latency) the best sequential cascade beats
  the best speculative one.
- Gemma-style: *[Token] matches the large model's quality at a lower rejection rate* (the best Token
  rule against the best of Chow, Diff, OPT and lossy SpecDecode); *[Token] often beats the large
  model* (the best Token configuration's quality minus the verifier's); *OPT helps less with Gemma
  than with T5* (OPT's rejection-rate advantage over the best of Chow and Diff, T5 minus
  Gemma-style, both relative to SpecDecode's rate; independent resamples of the two runs).
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from . import intervals
from .curve_bootstrap import REJECTION, CurveBootstrap
from .paired import FLOOR_COLUMNS, ItemScores, item_scores, same_law_floor
from ..maths.targets import LIVE_ALPHA_RANGES

__all__ = ["HOLDS", "DOES_NOT_HOLD", "NOT_RESOLVED", "BY_CONSTRUCTION", "NOT_RUN", "VERDICTS", "WITHIN_FLOOR",
           "BEYOND_FLOOR", "against_floor", "verdict", "n_needed",
           "own_configurations", "t5_claims", "gemma_claims", "compare_claims", "TOKEN_RULES", "PREFIX_RULES", "SEQUENTIAL"]

HOLDS, DOES_NOT_HOLD, NOT_RESOLVED = "holds", "does not hold", "not resolved at this sample size"
BY_CONSTRUCTION, NOT_RUN = "by construction", "not run"
VERDICTS = (HOLDS, DOES_NOT_HOLD, NOT_RESOLVED, BY_CONSTRUCTION, NOT_RUN)
WITHIN_FLOOR, BEYOND_FLOOR = "within the noise floor", "beyond the noise floor"
_QUALITY, _RATE = "quality", "rate"
TOKEN_RULES = ("SpecCascade [Token-V1]", "SpecCascade [Token-V2]", "SpecCascade [Token-V3]")
PREFIX_RULES = ("SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]")
SEQUENTIAL = ("SeqCascade [Chow]", "TokenCascade [Chow]")
_BASELINES = ("Drafter", "Verifier")
#: rules whose low alpha end is SpecDecode's law (Token-V3's is "the verifier's argmax only")
_SPEC_END = {"lossy", "chow", "diff", "opt", "bild", "token_v1", "token_v2"}


def verdict(low: float, high: float) -> str:
    """The verdict on a claim measured as a difference that is positive when it holds."""
    if low > 0:
        return HOLDS
    if high <= 0:
        return DOES_NOT_HOLD
    return NOT_RESOLVED


def against_floor(estimate: float, floor_low: float, floor_high: float) -> str:
    """Whether `estimate` lies within the noise floor's interval of two same-law runs (module docstring):
    `WITHIN_FLOOR`, `BEYOND_FLOOR`, or "" where either is missing."""
    if not all(map(np.isfinite, (estimate, floor_low, floor_high))):
        return ""
    return WITHIN_FLOOR if abs(estimate) <= max(abs(floor_low), abs(floor_high)) else BEYOND_FLOOR


def n_needed(estimate: float, low: float, high: float, n: int, *, confidence: float = 0.95,
             power: float = 0.8) -> float:
    """Items at which the interval would resolve `estimate` (module docstring); NaN where none follows."""
    if not all(map(math.isfinite, (estimate, low, high))) or estimate == 0:
        return float("nan")
    z_alpha = scipy_stats.norm.ppf(0.5 + confidence / 2)
    se = (high - low) / (2 * z_alpha)
    return float(math.ceil(n * ((z_alpha + scipy_stats.norm.ppf(power)) * se / abs(estimate)) ** 2))


# ---- the rule's own configurations ------------------------------------------------------------------

def _end_of_range(rule: str, alpha: float) -> str:
    """"spec" or "drafter" where `alpha` is the end of `rule`'s range at which its law is that
    method's, else ""."""
    if rule not in LIVE_ALPHA_RANGES:
        return ""
    low, high = LIVE_ALPHA_RANGES[rule]
    if rule in _SPEC_END and alpha <= low + 1e-9:
        return "spec"
    if alpha >= high - 1e-9:
        return "drafter"
    return ""


def own_configurations(rows: pd.DataFrame) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """`(kept rows, dropped)`: the rows without the configurations that are not a rule's own
    measurement (module docstring), and one row per dropped configuration with the `reason`."""
    speculative = (rows["method"] == "speculative") & ~rows["rule"].isin(["spec"]) & rows["rule"].notna()
    dropped = []
    spec_texts = {(t, temp, g): part.set_index("example_id")["text"]
                  for (t, temp, g), part in rows[rows["rule"] == "spec"].groupby(["task", "temperature", "gamma"])}
    for (task, temperature, gamma, config), part in rows[speculative].groupby(
            ["task", "temperature", "gamma", "config"], sort=False):
        rule, alpha = part["rule"].iloc[0], float(part["alpha"].iloc[0])
        end = _end_of_range(rule, alpha)
        reason = {"spec": "the end of its range where its law is SpecDecode's",
                  "drafter": "the end of its range where its law is the drafter's"}.get(end, "")
        reference = spec_texts.get((task, temperature, gamma))
        if not reason and reference is not None and "text" in part:
            mine = part.set_index("example_id")["text"]
            common = mine.index.intersection(reference.index)
            if len(common) == len(mine) and (mine.loc[common] == reference.loc[common]).all():
                reason = "its texts equal SpecDecode's on every item"
        if reason:
            dropped.append({"task": task, "temperature": temperature, "gamma": gamma, "config": config,
                            "label": part["label"].iloc[0], "alpha": alpha, "reason": reason})
    dropped = pd.DataFrame(dropped, columns=["task", "temperature", "gamma", "config", "label", "alpha", "reason"])
    return rows[~rows["config"].isin(set(dropped["config"]))], dropped


# ---- statistics with selection-aware intervals -------------------------------------------------------

class _Group:
    """The best of some curves for one statistic: point, resampled values and simultaneous bounds."""

    def __init__(self, boot: CurveBootstrap, curves: Sequence[tuple], name: str, budget: float, bounds: dict):
        self.curves = list(curves)
        values = [boot.value(name, c, budget) for c in self.curves]
        self.points = np.array([v[0] for v in values]) if values else np.zeros(0)
        self.low = np.array([bounds[(name, budget, c)][0] for c in self.curves])
        self.high = np.array([bounds[(name, budget, c)][1] for c in self.curves])

    @property
    def empty(self) -> bool:
        return not self.curves

    @property
    def best(self) -> float:
        return float(self.points.max())

    @property
    def label(self) -> str:
        return self.curves[int(np.argmax(self.points))][0]


def _bounds(boot: CurveBootstrap, curves: Sequence[tuple], name: str, budget: float, confidence: float) -> dict:
    """Simultaneous bounds over every curve of the claim (one family per claim)."""
    if not curves:
        return {}
    values = [boot.value(name, c, budget) for c in curves]
    points = np.array([v[0] for v in values])
    distribution = np.vstack([v[1] for v in values])
    low, high = intervals.simultaneous_bounds(points, distribution, confidence)
    return {(name, budget, c): (lo, hi) for c, lo, hi in zip(curves, low, high)}


def _minus(a: float, b: float) -> float:
    """a - b where -inf means "not reached": both not reached differ by 0."""
    if np.isinf(a) and a == b:
        return 0.0
    return float(a - b)


def _floor_of(floors: pd.DataFrame, task: str, temperature: float, kind: Optional[str]) -> dict:
    """The noise floor of one (task, T) in the unit `kind` (`_QUALITY`, `_RATE`, or None: a latency axis)."""
    empty = {"noise_floor": np.nan, "noise_floor_low": np.nan, "noise_floor_high": np.nan}
    if kind is None:
        return {**empty, "noise_floor_from": "none: no two runs of one law were measured in this claim's unit"}
    match = floors[(floors["task"] == task) & (floors["temperature"] == temperature)] if len(floors) else floors
    if not len(match):
        return {**empty, "noise_floor_from": "not run: no verifier or SpecDecode rows here"}
    row = match.iloc[0]
    return {"noise_floor": row[f"{kind}_floor"], "noise_floor_low": row[f"{kind}_floor_low"],
            "noise_floor_high": row[f"{kind}_floor_high"], "noise_floor_from": row[f"{kind}_floor_from"]}


def _text(value: float, unit: str = "") -> str:
    return "not reached" if np.isneginf(value) else f"{value:.3g}{unit}"


class _Claims:
    """The rows of one (task, temperature): bootstrap, noise floor, row builder."""

    def __init__(self, scores: ItemScores, cost: str, n_resamples: int, seed: int, confidence: float,
                 dropped: pd.DataFrame, budgets=None, floors: Optional[pd.DataFrame] = None):
        self.scores, self.cost, self.confidence = scores, cost, confidence
        self.floors = floors if floors is not None else pd.DataFrame(columns=["task", "temperature", *FLOOR_COLUMNS])
        self.n_resamples, self.seed = n_resamples, seed
        self.boot = CurveBootstrap(scores, cost, ends=False)
        if budgets is not None:
            self.boot.budgets = [1.0] + [b for b in budgets(self.boot) if b != 1.0]
        self.boot.run(n_resamples, seed)
        self.dropped = dropped[(dropped["task"] == scores.task) & (dropped["temperature"] == scores.temperature)]

    def curves(self, labels: Sequence[str], gamma) -> List[tuple]:
        configs = self.scores.configs
        plain = set(configs.loc[~configs["method"].isin(["speculative"]), "label"])  # one gamma: any fits
        return [c for c in self.boot.curves if c[0] in labels and (c[1] == gamma or c[0] in plain)]

    def why_none(self, labels: Sequence[str]) -> Tuple[str, str]:
        """`(verdict, reason)` for a group of curves with no configuration in the claim: `BY_CONSTRUCTION`
        where its configurations ran but none is the rules' own, `NOT_RUN` where none ran here."""
        gone = self.dropped[self.dropped["label"].isin(labels)]
        if len(gone):
            reasons = "; ".join(f"{label}: {', '.join(sorted(set(part['reason'])))}"
                                for label, part in gone.groupby("label"))
            return BY_CONSTRUCTION, f"no configuration of its own ({reasons})"
        return NOT_RUN, f"not run at T = {self.scores.temperature:g} in this sweep (its design)"

    def row(self, claim: str, gamma, measurement: str, estimate: float, low: float, high: float, detail: str,
            *, unit: str, reason: str = "", unmeasured: str = BY_CONSTRUCTION, floor: Optional[str] = _QUALITY,
            **extra) -> dict:
        """One claim's row. With a `reason` the claim is not measured: its verdict is `unmeasured`
        (`BY_CONSTRUCTION` or `NOT_RUN`). `floor`: the unit of its noise floor (None: none)."""
        n = self.scores.n
        if unmeasured not in (BY_CONSTRUCTION, NOT_RUN):
            raise ValueError(f"unmeasured={unmeasured!r}: pass {BY_CONSTRUCTION!r} or {NOT_RUN!r}.")
        if reason:
            decided, estimate, low, high = unmeasured, np.nan, np.nan, np.nan
        else:
            decided = NOT_RESOLVED if np.isnan(low) or np.isnan(high) else verdict(low, high)
        floor_of = _floor_of(self.floors, self.scores.task, self.scores.temperature, floor)
        return {"claim": claim, "task": self.scores.task, "temperature": self.scores.temperature, "gamma": gamma,
                "measurement": measurement, "estimate": estimate, "low": low, "high": high, "n": n,
                "verdict": decided,
                "n_needed": (n_needed(estimate, low, high, n, confidence=self.confidence) if decided == NOT_RESOLVED
                             else float("nan")), "detail": detail, "unit": unit, "reason": reason,
                "interval": "simultaneous over the compared curves (selection included)", **floor_of,
                "against_floor": against_floor(estimate, floor_of["noise_floor_low"], floor_of["noise_floor_high"]),
                "metric": self.scores.metric, **extra}

    def compare(self, claim, gamma, measurement, mine, theirs, *, name="reduction", budget=1.0, unit="",
                scale: float = 1.0, extra_detail: str = "", floor: Optional[str] = _QUALITY) -> dict:
        """best of `mine` - best of `theirs` for statistic `name`, divided by `scale`."""
        a_curves, b_curves = self.curves(mine, gamma), self.curves(theirs, gamma)
        missing = [(group, *self.why_none(group)) for group, found in ((mine, a_curves), (theirs, b_curves))
                   if not found]
        if missing:
            # a group empty by construction stays empty whatever else is run: that decides the label
            unmeasured = BY_CONSTRUCTION if any(v == BY_CONSTRUCTION for _, v, _ in missing) else NOT_RUN
            return self.row(claim, gamma, measurement, np.nan, np.nan, np.nan, "", unit=unit, floor=floor,
                            reason="; ".join(f"{', '.join(group)}: {why}" for group, _, why in missing),
                            unmeasured=unmeasured)
        bounds = _bounds(self.boot, a_curves + b_curves, name, budget, self.confidence)
        a, b = (_Group(self.boot, c, name, budget, bounds) for c in (a_curves, b_curves))
        if np.isneginf(a.best) and np.isneginf(b.best) and name == "reduction":
            return self.row(claim, gamma, measurement, np.nan, np.nan, np.nan, "", unit=unit, floor=floor,
                            reason=f"none of the {len(a_curves) + len(b_curves)} compared curves reaches the "
                                   "verifier's quality on its own runs, so both sides are 'not reached' and the "
                                   "difference is 0 by construction (a curve needs alphas nearer its SpecDecode "
                                   "end to reach it)")
        estimate = _minus(a.best, b.best) / scale
        low = _minus(float(a.low.max()), float(b.high.max())) / scale
        high = _minus(float(a.high.max()), float(b.low.max())) / scale
        detail = f"{a.label}: {_text(a.best)}; {b.label}: {_text(b.best)}{extra_detail}"
        return self.row(claim, gamma, measurement, estimate, low, high, detail, unit=unit, floor=floor,
                        mine_best=a.best, theirs_best=b.best, mine_label=a.label, theirs_label=b.label)


def _cheapest_speculative(boot: CurveBootstrap) -> List[float]:
    points = boot.point_costs()
    speculative = points[points["label"].str.startswith("SpecCascade") & np.isfinite(points["cost"])]
    return [float(speculative["cost"].min())] if len(speculative) else []


def _check(n_resamples: int, confidence: float) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples={n_resamples!r}: pass a whole number of resamples >= 100 (2000 for tables).")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: pass a level strictly between 0 and 1, e.g. 0.95.")


def _runs(rows, tasks, cost, n_resamples, seed, confidence, budgets=None, second_seed=None) -> List[_Claims]:
    kept, dropped = own_configurations(rows)
    floors = same_law_floor(rows, tasks, second_seed=second_seed, n_resamples=n_resamples, confidence=confidence,
                            seed=seed)
    return [_Claims(scores, cost, n_resamples, seed, confidence, dropped, budgets, floors)
            for scores in item_scores(kept, tasks)]


def t5_claims(rows: pd.DataFrame, tasks=None, *, cost: str = "wall_time_s", n_resamples: int = 2000,
              confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The T5 claims (module docstring) per (task, T, gamma) on a latency axis `cost` (a row column,
    relative to the verifier: `wall_time_s`, or the cost model's `modelled_latency_s`). `tasks`: the
    sweep's `evaluation.Task`s, so that BLEU is corpus BLEU."""
    _check(n_resamples, confidence)
    out = []
    unit = "latency reduction (share of the verifier's latency)"
    for run in _runs(rows, tasks, cost, n_resamples, seed, confidence, budgets=_cheapest_speculative):
        boot = run.boot
        others = [c[0] for c in boot.curves if c[0] not in TOKEN_RULES + _BASELINES]
        speculative = [c[0] for c in boot.curves if c[0].startswith("SpecCascade")]
        low_budget = boot.budgets[1] if len(boot.budgets) > 1 else None
        for gamma in sorted({int(g) for g in run.scores.configs.loc[run.scores.configs["method"] == "speculative",
                                                                      "gamma"]}):
            out += [
                run.compare("SpecCascade [Token] gives the best quality-latency trade-off", gamma,
                            "latency reduction at the verifier's quality: best Token rule - best other method",
                            TOKEN_RULES, others, unit=unit, floor=None),
                run.compare("OPT is second with T5", gamma,
                            "latency reduction at the verifier's quality: OPT - best method other than Token and OPT",
                            ["SpecCascade [OPT]"], [m for m in others if m != "SpecCascade [OPT]"], unit=unit,
                            floor=None),
                run.compare("Sequential cascades are not the best at the verifier's latency", gamma,
                            "best quality within the verifier's latency: best speculative cascade - best sequential",
                            speculative, SEQUENTIAL, name="best_quality", unit=run.scores.metric),
            ]
            if low_budget is not None:
                # named by its budget: the cheapest speculative cascade point can cost more than the verifier
                out.append(run.compare(
                    "Sequential cascades are best within the cheapest speculative cascade's latency", gamma,
                    f"best quality within {low_budget:.3g}x the verifier's latency (the cheapest speculative "
                    "cascade point): best sequential - best speculative cascade", SEQUENTIAL, speculative,
                    name="best_quality", budget=low_budget, unit=run.scores.metric))
    return pd.DataFrame(out)


def _spec_rate(scores: ItemScores, gamma) -> float:
    spec = scores.index("SpecDecode", gamma) or scores.index("SpecDecode")
    if not spec:
        return np.nan
    rejected, accepted = scores.columns["n_rejected"][spec[0]].sum(), scores.columns["n_accepted"][spec[0]].sum()
    return float(rejected / (rejected + accepted)) if rejected + accepted else np.nan


def _rate_comparison(run: _Claims, claim: str, gamma, mine, theirs) -> dict:
    """Best rejection rate at the verifier's quality of `mine` against `theirs`, relative to
    SpecDecode's rate (module docstring)."""
    rate = _spec_rate(run.scores, gamma)
    unit = "rejection-rate reduction relative to SpecDecode's rate"
    if np.isnan(rate):
        return run.row(claim, gamma, "", np.nan, np.nan, np.nan, "", unit=unit, floor=_RATE, unmeasured=NOT_RUN,
                       reason="SpecDecode did not run here, so no rate reduction relative to its rate is defined")
    if not rate > 0:
        return run.row(claim, gamma, "", np.nan, np.nan, np.nan, "", unit=unit, floor=_RATE,
                       reason="SpecDecode rejected no drafted token here, so a reduction relative to its rate "
                              "is 0/0")
    row = run.compare(claim, gamma, f"rejection rate at the verifier's quality: best of {', '.join(theirs)} - best "
                      f"of {', '.join(mine)}, over SpecDecode's rate {rate:.3g}", mine, theirs, scale=rate,
                      unit=unit, floor=_RATE)
    # the reduction statistic is 1 - rate on this axis: report the rates themselves
    for side in ("mine", "theirs"):
        best = row.pop(f"{side}_best", np.nan)
        row[f"{side}_rate"] = np.inf if np.isneginf(best) else 1.0 - best if np.isfinite(best) else np.nan
    row["spec_rate"] = rate
    if row["verdict"] not in (BY_CONSTRUCTION, NOT_RUN):
        rates = [f"{row[f'{side}_label']}: " + ("never reaches" if np.isinf(row[f"{side}_rate"]) else
                                               f"rate {row[f'{side}_rate']:.3g}") for side in ("mine", "theirs")]
        row["detail"] = f"{rates[0]}; {rates[1]}; SpecDecode's rate {rate:.3g}"
    return row


def _opt_advantage(run: _Claims, gamma) -> Optional[dict]:
    return _rate_comparison(run, "OPT's rejection-rate advantage over Chow and Diff", gamma, ["SpecCascade [OPT]"],
                            ["SpecCascade [Chow]", "SpecCascade [Diff]"])


def gemma_claims(rows: pd.DataFrame, tasks=None, *, cost: str = REJECTION, t5_rows: Optional[pd.DataFrame] = None,
                 t5_tasks=None, t5_cost: str = REJECTION, n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = 0, second_seed: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """The Gemma-style claims (module docstring) per (task, T) on the rejection-rate axis (`cost`).
    With `t5_rows` (and `t5_tasks`) the claim "OPT helps less with Gemma than with T5" is measured
    against the T5 run at the same temperature, on the same axis (`t5_cost`, the rejection rate);
    without them it is left out. `second_seed`: the verifier's and SpecDecode's rows with a second seed
    set, for the same-law noise floor (`paired.same_law_floor`)."""
    _check(n_resamples, confidence)
    if t5_cost != REJECTION or cost != REJECTION:
        raise ValueError(f"cost={cost!r}, t5_cost={t5_cost!r}: the Gemma-style claims compare rejection rates on "
                         f"both runs; pass {REJECTION!r} (one unit on both sides).")
    t5 = _runs(t5_rows, t5_tasks, REJECTION, n_resamples, seed + 1, confidence) if t5_rows is not None else []
    out = []
    for run in _runs(rows, tasks, cost, n_resamples, seed, confidence, second_seed=second_seed):
        gamma = 1
        out.append(_rate_comparison(run, "[Token] matches the large model's quality at a lower rejection rate", gamma,
                                    TOKEN_RULES, PREFIX_RULES + ("SpecDecode [Lossy]",)))
        out.append(_beats_verifier(run, gamma))
        gemma_opt = _opt_advantage(run, gamma)
        for other in [r for r in t5 if r.scores.temperature == run.scores.temperature]:
            t5_gamma = min((c[1] for c in other.boot.curves if c[0] == "SpecCascade [OPT]"), default=None)
            if t5_gamma is None:
                continue
            t5_opt = _opt_advantage(other, t5_gamma)
            claim = "OPT helps less with Gemma than with T5"
            measurement = ("OPT's rejection-rate advantage over the best of Chow/Diff (relative to SpecDecode's "
                           f"rate): T5 ({other.scores.task}, gamma {t5_gamma}) - Gemma-style")
            sides = (("T5", t5_opt), ("Gemma-style", gemma_opt))
            unmeasured = [side["verdict"] for _, side in sides if side["verdict"] in (BY_CONSTRUCTION, NOT_RUN)]
            if unmeasured:
                out.append(run.row(claim, gamma, measurement, np.nan, np.nan, np.nan, "", unit=gemma_opt["unit"],
                                   reason="; ".join(f"{where}: {side['reason']}" for where, side in sides
                                                    if side["verdict"] in unmeasured),
                                   unmeasured=BY_CONSTRUCTION if BY_CONSTRUCTION in unmeasured else NOT_RUN,
                                   floor=None))
                continue
            # independent runs: the difference's bounds from each side's simultaneous bounds
            out.append(run.row(claim, gamma, measurement, _minus(t5_opt["estimate"], gemma_opt["estimate"]),
                               _minus(t5_opt["low"], gemma_opt["high"]), _minus(t5_opt["high"], gemma_opt["low"]),
                               f"T5: {_text(t5_opt['estimate'])} [{t5_opt['low']:.3g}, {t5_opt['high']:.3g}]; "
                               f"Gemma-style: {_text(gemma_opt['estimate'])} [{gemma_opt['low']:.3g}, "
                               f"{gemma_opt['high']:.3g}]", unit=gemma_opt["unit"], floor=None))
    return pd.DataFrame([r for r in out if r is not None])


def _beats_verifier(run: _Claims, gamma) -> dict:
    """The best Token configuration's quality minus the verifier's, simultaneous over the Token
    configurations (every own configuration is a candidate, whatever its rejection rate)."""
    claim = "[Token] beats the large model's quality"
    measurement = "best Token-rule configuration's quality - verifier quality"
    scores = run.scores
    candidates = [j for label in TOKEN_RULES for j in scores.index(label, gamma)]
    verifier = scores.index("Verifier")
    if not candidates:
        unmeasured, why = run.why_none(TOKEN_RULES)
        return run.row(claim, gamma, measurement, np.nan, np.nan, np.nan, "", unit=scores.metric, reason=why,
                       unmeasured=unmeasured)
    point, distribution = scores.resampled(run.n_resamples, run.seed)
    differences = point[candidates] - point[verifier[0]]
    best, low, high = intervals.best_of(differences, distribution[candidates] - distribution[verifier[0]],
                                        run.confidence)
    j = candidates[int(np.argmax(differences))]
    chosen = scores.configs.iloc[j]
    detail = (f"{chosen['label']} (alpha {chosen['alpha']:.4g}): {point[j]:.3g}; verifier: {point[verifier[0]]:.3g}; "
              f"best of {len(candidates)} own configurations")
    return run.row(claim, gamma, measurement, best, low, high, detail, unit=scores.metric)


def compare_claims(before: pd.DataFrame, after: pd.DataFrame, renamed_tasks: Optional[dict] = None) -> pd.DataFrame:
    """Every claim of two claims tables side by side (e.g. a rerun on more items against the run it
    replaces): estimate, interval, n, verdict and n needed before and after, one row per (claim, task,
    temperature, gamma). `renamed_tasks` maps a task of `before` to the one that replaced it in `after`
    (`{"code": "humaneval"}`); a claim present in only one table keeps its row, the other side empty, and
    `changed` says whether the verdict moved."""
    keys = ["claim", "task", "temperature", "gamma"]
    fields = ["estimate", "low", "high", "n", "verdict", "n_needed"]
    missing = [c for table in (before, after) for c in keys + fields if c not in table]
    if missing:
        raise ValueError(f"claims tables need the columns of claims.csv; missing {sorted(set(missing))}")
    old = before.assign(task=before["task"].replace(renamed_tasks or {}))
    both = old[keys + fields].merge(after[keys + fields], on=keys, how="outer", suffixes=("_before", "_after"))
    both["changed"] = both["verdict_before"].ne(both["verdict_after"])
    order = {claim: i for i, claim in enumerate(pd.unique(pd.concat([after["claim"], before["claim"]])))}
    both = both.sort_values(keys, key=lambda s: s.map(order) if s.name == "claim" else s)
    return both.reset_index(drop=True)
