"""The curves of the headline statistic (`headline`'s docstring says what they are and why): one
(task, temperature)'s rule curves on the (rejection rate, quality) plane with their drafter and SpecDecode
ends, their statistics on the items and on each resample (`HeadlineBootstrap`), and the design identities of
greedy decoding checked on the texts (`design_identities`)."""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np
import pandas as pd

from ...maths import rules
from ..analysis import best_quality_within, crossing_latency
from ..curve_bootstrap import REJECTION, CurveBootstrap
from ..paired import ItemScores
from .paper_claims import DEFERRAL_CURVES

__all__ = [
    "MARGIN",
    "PERCENT_METRICS",
    "margin_for",
    "FRACTIONS",
    "OTHER_CURVES",
    "T0_IDENTITIES",
    "design_identities",
    "HeadlineBootstrap",
]

#: Quality units within which a curve counts as matching the verifier's quality (statistic (b)).
MARGIN = 0.02
#: Metrics on a 0-100 scale: the margin is `MARGIN` of that scale (2 BLEU points).
PERCENT_METRICS = ("bleu",)


def margin_for(metric: str) -> float:
    """The margin of statistic (b) in `metric`'s units: `MARGIN` of the metric's scale (0.02 on a score in
    [0, 1], 2 points of BLEU's 0-100), so every run states the same margin."""
    return MARGIN * (100.0 if str(metric).lower() in PERCENT_METRICS else 1.0)


#: The matched rejection rates of statistic (a), as fractions of SpecDecode's rate.
FRACTIONS = (0.25, 0.5, 0.75)

LOSSY = "SpecDecode [Lossy]"
#: The other group: the deferral rules and lossy SpecDecode (a live view of the rule table).
OTHER_CURVES = rules.TableView(lambda: tuple(DEFERRAL_CURVES) + (LOSSY,))
_DIFF, _OPT, _TOKEN_V1 = "SpecCascade [Diff]", "SpecCascade [OPT]", "SpecCascade [Token-V1]"
#: The design identities at T = 0 (greedy decoding): (copy, original). A copy whose identity holds on the
#: rows leaves its group: it is the original.
T0_IDENTITIES = (("SpecDecode", "Verifier"), (_OPT, _DIFF), (_TOKEN_V1, _DIFF), (LOSSY, "SpecDecode"))

CURVE_FIELDS = 2 + len(FRACTIONS)  # quality at each fraction, capped relative rate, reached below r_s


# ---- design identities ------------------------------------------------------------------------------


def _texts(part: pd.DataFrame, label: str) -> Dict[float, pd.Series]:
    """Per alpha, the texts of configuration `label` by item."""
    mine = part[part["label"] == label]
    return {
        round(float(alpha), 9): group.set_index("example_id")["text"].sort_index()
        for alpha, group in mine.groupby("alpha")
    }


def design_identities(part: pd.DataFrame) -> pd.DataFrame:
    """The design identities of one (task, temperature)'s rows (`T0_IDENTITIES`, at T = 0 only), each
    checked on the texts: one row per identity with `copy`, `original`, `n_items`, `n_compared`
    (configurations paired by alpha; SpecDecode and the verifier pair any alpha), `n_differ` (item texts
    that differ, summed over them), `missing` (the copy's alphas the original did not run) and `holds`
    (every text equal, nothing missing)."""
    columns = ["copy", "original", "n_items", "n_compared", "n_differ", "missing", "holds"]
    temperature = float(part["temperature"].iloc[0]) if len(part) else np.nan
    if temperature != 0 or "text" not in part:
        return pd.DataFrame([], columns=columns)
    out = []
    for copy, original in T0_IDENTITIES:
        mine, theirs = _texts(part, copy), _texts(part, original)
        if not mine or not theirs:
            continue
        single = len(theirs) == 1 and original in ("Verifier", "SpecDecode")
        n_items = n_differ = n_compared = 0
        missing = []
        for alpha, texts in mine.items():
            reference = next(iter(theirs.values())) if single else theirs.get(alpha)
            if reference is None or not texts.index.equals(reference.index):
                missing.append(alpha)
                continue
            n_compared += 1
            n_items = max(n_items, len(texts))
            n_differ += int((texts != reference).sum())
        out.append(
            {
                "copy": copy,
                "original": original,
                "n_items": n_items,
                "n_compared": n_compared,
                "n_differ": n_differ,
                "missing": missing,
                "holds": n_compared > 0 and n_differ == 0 and not missing,
            }
        )
    return pd.DataFrame(out, columns=columns)


# ---- the curves and their statistics on one (task, temperature) -----------------------------------


def _curve_value(xs: np.ndarray, ys: np.ndarray, rates: np.ndarray, target: float, spec_rate: float):
    """The curve's quality at each of `rates` (the best of the interpolated curve at rates up to it:
    `analysis.best_quality_within`), its capped relative rate to reach `target` (`analysis.crossing_latency`
    over `spec_rate`, 1.0 where it does not reach it below `spec_rate`) and 1.0 if it does (module
    docstring)."""
    keep = np.isfinite(xs) & np.isfinite(ys)
    order = np.lexsort((ys[keep], xs[keep]))  # by rate, then quality (as `analysis` sorts a curve)
    xs, ys = xs[keep][order], ys[keep][order]
    quality = []
    for rate in rates:
        best = best_quality_within(xs, ys, rate) if np.isfinite(rate) else None
        quality.append(np.nan if best is None else best)
    crossing = crossing_latency(xs, ys, target)
    if not spec_rate > 0:
        return quality + [1.0, 0.0]  # SpecDecode rejected nothing: its rate is the only rate below
    below = crossing is not None and crossing < spec_rate
    return quality + [crossing / spec_rate if below else 1.0, float(below)]


class HeadlineBootstrap:
    """The curves of one (task, temperature) on the rejection-rate axis (module docstring) and their
    statistics on the items and on each resample. `statistic(idx)` is the vector `[verifier quality, greedy
    verifier quality, SpecDecode's rate, then per curve of `curves`: quality at each of `FRACTIONS` of
    SpecDecode's rate, relative rate to come within `margin`, 1 if that is below SpecDecode's rate]`.
    `greedy`: the T = 0 verifier's per-item quality on `scores.items` (NaN where it did not run)."""

    def __init__(self, scores: ItemScores, *, margin: float = MARGIN, greedy: Optional[np.ndarray] = None):
        self.scores, self.margin = scores, float(margin)
        self.boot = CurveBootstrap(scores, REJECTION, ends=True)
        self.verifier = scores.index("Verifier")[0]
        spec = scores.index("SpecDecode", 1) or scores.index("SpecDecode")
        self.spec = spec[0] if spec else None
        self.greedy = greedy
        speculative = set(scores.configs.loc[scores.configs["method"] == "speculative", "label"])
        self.curves = [c[0] for c in self.boot.curves if c[0] in speculative and c[0] != "SpecDecode"]
        self._points = {
            label: [(p[4], p[5], p[6]) for p in self.boot.points if p[0] == label] for label in self.curves
        }
        self.ends = {
            label: sorted({p[3] for p in self.boot.points if p[0] == label and p[3]}) for label in self.curves
        }
        self._rows = sorted({row for pts in self._points.values() for j, _, k in pts for row in (j, k)})

    def rates(self, idx: np.ndarray) -> np.ndarray:
        """Each configuration's rejection rate on items `idx` (0 for the drafter, NaN without drafts)."""
        columns, method = self.scores.columns, self.scores.configs["method"].to_numpy()
        rejected = columns["n_rejected"][:, idx].sum(1)
        judged = rejected + columns["n_accepted"][:, idx].sum(1)
        rate = np.where(judged > 0, rejected / np.where(judged > 0, judged, 1), np.nan)
        rate[method == "drafter"] = 0.0
        return rate

    def statistic(self, idx) -> np.ndarray:
        """The vector of the class docstring on items `idx` (indices into `scores.items`)."""
        idx = np.asarray(idx)
        rows = sorted(set(self._rows) | {self.verifier})
        quality = dict(zip(rows, self.scores.score(rows, idx)))
        rate = self.rates(idx)
        target = float(quality[self.verifier])
        greedy = float(self.greedy[idx].mean()) if self.greedy is not None else np.nan
        spec_rate = float(rate[self.spec]) if self.spec is not None else np.nan
        out = [target, greedy, spec_rate]
        matched = np.array(FRACTIONS) * spec_rate
        for label in self.curves:
            points = self._points[label]
            xs = np.array([0.0 if kind == "drafter_end" else rate[k] for _, kind, k in points])
            ys = np.array([quality[j] for j, _, _ in points])
            out += _curve_value(xs, ys, matched, target - self.margin, spec_rate)
        return np.asarray(out, float)

    def index(self, label: str) -> int:
        """Position of curve `label`'s first field in `statistic`'s vector."""
        return 3 + CURVE_FIELDS * self.curves.index(label)
