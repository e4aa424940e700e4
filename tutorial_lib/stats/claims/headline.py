r"""The paper's headline claim on a Gemma-style run, answered per task with statistics that are always finite.

The claim "[Token] matches the large model's quality at a lower rejection rate" (`gemma_claims`) reads
the rejection rate at which a curve first reaches the verifier's quality, and a curve made of a rule's own
configurations only may never reach it: the estimate is then infinite. The statistics here are fixed
before looking at the rows and are finite whenever the verifier and SpecDecode ran.

**Curves.** Per (task, temperature), at $\gamma = 1$, each rule's curve on the (rejection rate, quality)
plane is its own measured configurations plus its two ends, as `curve_bootstrap.CurveBootstrap` adds
them: the **drafter end** (the drafter's run; it has no rejections, so its point is $(0, Q_{\rm drafter})$)
and, for rules with `rules.has_spec_end`, the **SpecDecode end** (SpecDecode's run: $(r_s, Q_s)$), an end
being left out where the rule measured that alpha itself. The rejection rate of a configuration is
$\sum$ rejected / $\sum$ judged drafts over the items. A curve's points, sorted by rate, are
**joined by straight lines in rejection rate** (linear interpolation, as `analysis` joins a curve), and
its **quality at rejection rate $x$** is the best quality of that interpolated curve at rates up to $x$
(`analysis.best_quality_within` with the budget $x$: a rule can always run at a configuration that
rejects less), so a curve that stops below $x$ (Token-V3, which has no SpecDecode end) keeps the best it
reached. The rate at which a curve **first reaches** a quality is where its interpolated line first gets
there (`analysis.crossing_latency`).

**Groups.** The Token group is `TOKEN_CURVES` (Token-V1/V2/V3); the other group is `DEFERRAL_CURVES`
(Chow, Diff, OPT) and lossy SpecDecode. A group's value is that of its **best curve, chosen again in every
resample** (the highest quality, or the lowest rate), so the selection is inside the interval. At $T = 0$
some rules are others by design: OPT and Token-V1 emit Diff's tokens, lossy SpecDecode emits SpecDecode's,
and SpecDecode the verifier's. Each such identity is checked on the rows (the texts of every configuration
at the same alpha equal on every item: `design_identities`); only where it holds is the copy left out of
its group (so at $T = 0$ {Token-V2, Token-V3} are compared with {Chow, Diff}) and does its row read
**by construction**. A failed identity keeps the copy in its group and gets a measured verdict.

**Statistics** (each positive when the claim holds), on $B$ paired resamples of the items
(`intervals.resample_items`: the same resampled items for every curve, the verifier and SpecDecode; the
rates, $r_s$ and the verifier's quality are recomputed on each), with the 95% percentile interval
(`intervals.percentile_interval`) and a fixed seed:

- (a) **quality at a matched rejection rate** $x = f\,r_s$, $f \in$ `FRACTIONS` (1/4, 1/2, 3/4 of
  SpecDecode's rate): the Token group's quality minus the verifier's (`VS_VERIFIER`; the verifier sampled
  at the same temperature, and beside it, in `vs_greedy_*`, the same difference against the greedy
  ($T = 0$) verifier's quality on the same items), and minus the other group's (`VS_OTHERS`);
- (b) **the rate needed to come within `MARGIN` of the verifier's quality** (quality units), relative to
  $r_s$: the smallest $x$ at which the curve reaches $Q_{\rm verifier} - $ `MARGIN`, over $r_s$, **capped
  at 1** (SpecDecode's rate itself, the SpecDecode end) where the curve does not get there below $r_s$; the
  `detail` then says "never within the margin below SpecDecode's rate". Reported as the other group's
  value minus the Token group's (`RATE_VS_OTHERS`, in $[-1, 1]$) and as 1 minus the Token group's
  (`RATE_VS_SPEC`: Token needs a lower rate than SpecDecode, in $[0, 1]$); never an infinity.

**Verdicts** (`verdicts.verdict`): *holds* when $l > 0$, *does not hold* when $h \le 0$, *not resolved at
this sample size* otherwise; *by construction* only on the rows of design identities whose texts are
equal on every item (`IDENTITY`), never on a measured outcome.

**Noise floor** (c). With a second seed set (the verifier's and SpecDecode's runs redrawn on the same
items), each statistic is computed again with those two runs replaced by their second-seed rows (the
rules' runs have no second seed and stay), on the same resamples; the floor is that minus the statistic,
with its percentile interval. It measures how far the statistic moves when the references alone are
redrawn (a lower bound on the whole run-to-run noise). `against_floor` is the package's symmetric rule
(`verdicts.against_floor`): *within the noise floor* when $|\hat\Delta| \le \max(|l_f|, |h_f|)$, i.e. the
estimate lies inside the floor's interval reflected about 0, else *beyond*. At $T = 0$ nothing is drawn,
so a second seed set repeats the run: no floor is given, and `noise_floor_from` says why.

`headline_table` gives the tidy table (one row per task, temperature, statistic and fraction or margin);
`headline_reading` its per-task verdicts, a cell as prose quotes it and the committed runs.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .. import intervals
from ..paired import ItemScores, item_scores
from .headline_curves import (
    FRACTIONS,
    MARGIN,
    OTHER_CURVES,
    HeadlineBootstrap,
    design_identities,
    margin_for,
)
from .paper_claims import TOKEN_CURVES
from .verdicts import BY_CONSTRUCTION, NOT_RESOLVED, NOT_RUN, against_floor, verdict

__all__ = [
    "VS_VERIFIER",
    "VS_OTHERS",
    "RATE_VS_OTHERS",
    "RATE_VS_SPEC",
    "IDENTITY",
    "NEVER_WITHIN",
    "run_gamma",
    "HeadlinePair",
    "headline_pairs",
    "headline_table",
]


VS_VERIFIER = "quality at a matched rejection rate: Token - verifier"
VS_OTHERS = "quality at a matched rejection rate: Token - best other rule"
RATE_VS_OTHERS = "rate to come within the margin of the verifier (over SpecDecode's): best other rule - Token"
RATE_VS_SPEC = "rate to come within the margin of the verifier (over SpecDecode's): SpecDecode - Token"
IDENTITY = "design identity (texts equal on every item)"
STATISTICS = (VS_VERIFIER, VS_OTHERS, RATE_VS_OTHERS, RATE_VS_SPEC)
NEVER_WITHIN = "never within the margin below SpecDecode's rate"


# ---- the table --------------------------------------------------------------------------------------


def _group_values(
    boot: HeadlineBootstrap, values: np.ndarray, group: Sequence[str], field: int, best
) -> Tuple[np.ndarray, np.ndarray]:
    """The group's value per column of `values` (k,) or (k, B) and which of `group` gave it (the best curve,
    chosen in every column: `best` is np.argmax or np.argmin)."""
    block = np.stack([values[boot.index(label) + field] for label in group])
    choice = best(np.where(np.isnan(block), -np.inf if best is np.argmax else np.inf, block), axis=0)
    return np.take_along_axis(block, np.expand_dims(choice, 0), 0)[0], choice


def _interval(values: np.ndarray, confidence: float) -> Tuple[float, float]:
    if values.size == 0 or not np.isfinite(values).all():
        return np.nan, np.nan
    low, high = intervals.percentile_interval(values, confidence)
    return float(low), float(high)


def _greedy_quality(rows: pd.DataFrame, task: str, items: Sequence[str]) -> Optional[np.ndarray]:
    greedy = rows[(rows["task"] == task) & (rows["temperature"] == 0) & (rows["label"] == "Verifier")]
    by_item = greedy.drop_duplicates("example_id", keep="last").set_index("example_id")["quality"]
    if not len(by_item) or not set(items) <= set(by_item.index):
        return None
    return by_item.loc[list(items)].to_numpy(float)


def _second_seed_part(part: pd.DataFrame, second_seed: Optional[pd.DataFrame], task, temperature):
    """`(rows with the verifier and SpecDecode of the second seed set, None)` or `(None, why not)`."""
    if temperature == 0:
        return None, (
            "by construction: at T = 0 nothing is drawn, so a second seed set repeats the run (no floor "
            "measured)"
        )
    if second_seed is None:
        return None, "none: no second seed set given"
    again = second_seed[
        (second_seed["task"] == task)
        & (second_seed["temperature"] == temperature)
        & second_seed["label"].isin(["Verifier", "SpecDecode"])
    ]
    items = set(part.loc[part["label"] == "Verifier", "example_id"])
    for label in ("Verifier", "SpecDecode"):
        if not items <= set(again.loc[again["label"] == label, "example_id"]):
            return None, f"not run: the second seed set has no {label} rows on every item here"
    again = again[again["example_id"].isin(items)]
    if "gamma" in again:
        again = again[again["gamma"] == 1]
    swapped = pd.concat([part[~part["label"].isin(["Verifier", "SpecDecode"])], again], ignore_index=True)
    return swapped.drop(columns=["seed"], errors="ignore"), None


def _scores(part: pd.DataFrame, tasks) -> ItemScores:
    ordered = part.sort_values(["example_id"], kind="stable").drop(columns=["seed"], errors="ignore")
    (scores,) = item_scores(ordered, tasks)
    return scores


class HeadlinePair:
    """One (task, temperature): the bootstrap of its first run (and of the second-seed swap), the groups
    and the rows of the table (`headline_pairs` builds them). `margin` None: `headline_curves.margin_for`
    the task's metric."""

    def __init__(self, rows, part, second_seed, tasks, margin, n_resamples, seed, confidence):
        self.task, self.temperature = part["task"].iloc[0], float(part["temperature"].iloc[0])
        self.confidence = confidence
        self.scores = _scores(part, tasks)
        margin = margin_for(self.scores.metric) if margin is None else margin
        self.identities = design_identities(part)
        greedy = _greedy_quality(rows, self.task, self.scores.items)
        self.main = HeadlineBootstrap(self.scores, margin=margin, greedy=greedy)
        swapped, self.floor_from = _second_seed_part(part, second_seed, self.task, self.temperature)
        self.swap = None
        if swapped is not None:
            scores = _scores(swapped, tasks)
            if list(scores.items) != list(self.scores.items):
                self.floor_from = "not run: the second seed set's items differ from the run's"
            else:
                self.swap = HeadlineBootstrap(scores, margin=margin, greedy=greedy)
                self.floor_from = (
                    "the statistic with the verifier's and SpecDecode's runs of a second seed set (the "
                    "rules' runs kept), minus the statistic; same items and resamples"
                )
        width = len(self.main.statistic(np.arange(self.scores.n)))

        def both(idx):
            mine = self.main.statistic(idx)
            return np.concatenate([mine, self.swap.statistic(idx) if self.swap else np.full(width, np.nan)])

        point, distribution = intervals.resample_items(
            both, self.scores.n, n_resamples=n_resamples, seed=seed
        )
        self.point, self.distribution = point[:width], distribution[:width]
        self.swap_point, self.swap_distribution = point[width:], distribution[width:]

    # the groups, with the copies of a design identity that holds left out
    def groups(self) -> Tuple[List[str], List[str], str]:
        held = self.identities[self.identities["holds"]] if len(self.identities) else self.identities
        copies = set(held["copy"]) if len(held) else set()
        token = [c for c in TOKEN_CURVES if c in self.main.curves and c not in copies]
        other = [c for c in OTHER_CURVES if c in self.main.curves and c not in copies]
        left = sorted(copies & set(TOKEN_CURVES + OTHER_CURVES) & set(self.main.curves))
        note = f"left out as copies (identity checked on the rows): {', '.join(left)}" if left else ""
        return token, other, note

    def _statistic(self, which: str, values, field: int, token, other):
        """`(difference, token side, other side, token choice, other choice)` for statistic `which` on
        the first-run vector(s) `values` (k,) or (k, B)."""
        if which in (VS_VERIFIER, VS_OTHERS):
            mine, mine_at = _group_values(self.main, values, token, field, np.argmax)
            if which == VS_VERIFIER:
                return mine - values[0], mine, values[0], mine_at, None
            theirs, theirs_at = _group_values(self.main, values, other, field, np.argmax)
            return mine - theirs, mine, theirs, mine_at, theirs_at
        mine, mine_at = _group_values(self.main, values, token, len(FRACTIONS), np.argmin)
        if which == RATE_VS_SPEC:
            return 1.0 - mine, mine, np.ones_like(mine), mine_at, None
        theirs, theirs_at = _group_values(self.main, values, other, len(FRACTIONS), np.argmin)
        return theirs - mine, mine, theirs, mine_at, theirs_at

    def rows(self) -> List[dict]:
        token, other, left_out = self.groups()
        spec_rate = float(self.point[2])
        base = {"task": self.task, "temperature": self.temperature, "n_items": self.scores.n}
        if self.main.spec is None or not token:
            why = "SpecDecode did not run here" if self.main.spec is None else "no Token rule ran here"
            cells = [(VS_VERIFIER, i) for i in range(len(FRACTIONS))] + [
                (VS_OTHERS, i) for i in range(len(FRACTIONS))
            ]
            cells += [(RATE_VS_OTHERS, None), (RATE_VS_SPEC, None)]
            return [self._not_run(base, which, i, why) for which, i in cells] + self.identity_rows()
        out = []
        cells = [(VS_VERIFIER, i) for i in range(len(FRACTIONS))] + [
            (VS_OTHERS, i) for i in range(len(FRACTIONS))
        ]
        cells += [(RATE_VS_OTHERS, None), (RATE_VS_SPEC, None)]
        for which, i in cells:
            field = i if i is not None else len(FRACTIONS)
            if which in (VS_OTHERS, RATE_VS_OTHERS) and not other:
                out.append(self._not_run(base, which, i, "no rule of the other group ran here"))
                continue
            estimate, mine, theirs, mine_at, theirs_at = self._statistic(
                which, self.point, field, token, other
            )
            dist, mine_d, theirs_d, mine_at_d, theirs_at_d = self._statistic(
                which, self.distribution, field, token, other
            )
            low, high = _interval(dist, self.confidence)
            estimate = float(estimate)
            mine_label = token[int(mine_at)]
            theirs_label = other[int(theirs_at)] if theirs_at is not None else None
            row = {
                **base,
                "statistic": which,
                "fraction": FRACTIONS[i] if i is not None else np.nan,
                "margin": self.main.margin if i is None else np.nan,
                "rate": FRACTIONS[i] * spec_rate if i is not None else np.nan,
                "spec_rate": spec_rate,
                "estimate": estimate,
                "low": low,
                "high": high,
                "verdict": verdict(low, high) if np.isfinite(low) and np.isfinite(high) else NOT_RESOLVED,
                "token_value": float(mine),
                "token_low": _interval(mine_d, self.confidence)[0],
                "token_high": _interval(mine_d, self.confidence)[1],
                "token_curve": mine_label,
                "token_chosen_share": float(np.mean(mine_at_d == mine_at)) if mine_at_d.size else np.nan,
                "other_value": float(theirs),
                "other_low": _interval(theirs_d, self.confidence)[0],
                "other_high": _interval(theirs_d, self.confidence)[1],
                "other_curve": theirs_label
                if theirs_label
                else ("Verifier" if which == VS_VERIFIER else "SpecDecode"),
                "other_chosen_share": (
                    float(np.mean(theirs_at_d == theirs_at))
                    if theirs_at is not None and theirs_at_d.size
                    else np.nan
                ),
                "verifier": f"Verifier sampled at T = {self.temperature:g}",
                "verifier_quality": float(self.point[0]),
                "token_group": ", ".join(token),
                "other_group": ", ".join(other) if which in (VS_OTHERS, RATE_VS_OTHERS) else "",
            }
            row.update(self._greedy(which, field, token, other, estimate))
            row.update(self._floor(which, field, token, other, estimate))
            row["detail"] = self._detail(which, row, left_out)
            out.append(row)
        return out + self.identity_rows()

    def _not_run(self, base: dict, which: str, i, why: str) -> dict:
        return {
            **base,
            "statistic": which,
            "fraction": FRACTIONS[i] if i is not None else np.nan,
            "margin": self.main.margin if i is None else np.nan,
            "estimate": np.nan,
            "low": np.nan,
            "high": np.nan,
            "verdict": NOT_RUN,
            "noise_floor_from": "",
            "against_floor": "",
            "detail": f"not run: {why}",
        }

    def _greedy(self, which, field, token, other, estimate) -> dict:
        """(d): the difference against the greedy (T = 0) verifier's quality on the same items."""
        empty = {"vs_greedy_estimate": np.nan, "vs_greedy_low": np.nan, "vs_greedy_high": np.nan}
        if which != VS_VERIFIER or not np.isfinite(self.point[1]):
            return {**empty, "vs_greedy_verdict": ""}
        mine = _group_values(self.main, self.point, token, field, np.argmax)[0]
        mine_d = _group_values(self.main, self.distribution, token, field, np.argmax)[0]
        low, high = _interval(mine_d - self.distribution[1], self.confidence)
        return {
            "vs_greedy_estimate": float(mine - self.point[1]),
            "vs_greedy_low": low,
            "vs_greedy_high": high,
            "vs_greedy_verdict": verdict(low, high) if np.isfinite(low) else NOT_RESOLVED,
            "greedy_verifier_quality": float(self.point[1]),
        }

    def _floor(self, which, field, token, other, estimate) -> dict:
        """(c): the statistic with the second seed set's references minus the statistic (module docstring)."""
        floor = {"noise_floor": np.nan, "noise_floor_low": np.nan, "noise_floor_high": np.nan}
        if self.swap is None:
            return {**floor, "noise_floor_from": self.floor_from, "against_floor": ""}
        again = self._statistic(which, self.swap_point, field, token, other)[0]
        again_d = self._statistic(which, self.swap_distribution, field, token, other)[0]
        low, high = _interval(
            again_d - self._statistic(which, self.distribution, field, token, other)[0], self.confidence
        )
        return {
            "noise_floor": float(again - estimate),
            "noise_floor_low": low,
            "noise_floor_high": high,
            "noise_floor_from": self.floor_from,
            "against_floor": against_floor(estimate, low, high),
        }

    def _detail(self, which: str, row: dict, left_out: str) -> str:
        parts = []
        if which in (VS_VERIFIER, VS_OTHERS):
            parts.append(
                f"at rejection rate {row['rate']:.3g} ({row['fraction']:g} x SpecDecode's "
                f"{row['spec_rate']:.3g}): "
                f"{row['token_curve']} {row['token_value']:.3f}"
                f" (chosen in {row['token_chosen_share']:.0%} of resamples); "
                + (
                    f"{row['verifier']} {row['verifier_quality']:.3f}"
                    if which == VS_VERIFIER
                    else f"{row['other_curve']} {row['other_value']:.3f}"
                    f" (chosen in {row['other_chosen_share']:.0%})"
                )
            )
        else:
            sides = [("Token", row["token_curve"], row["token_value"])]
            if which == RATE_VS_OTHERS:
                sides.append(("other", row["other_curve"], row["other_value"]))
            texts = [
                f"{label}: " + (NEVER_WITHIN if value >= 1.0 else f"{value:.3f} x SpecDecode's rate")
                for _, label, value in sides
            ]
            parts.append(
                f"within {row['margin']:g} of the verifier's {row['verifier_quality']:.3f}: "
                + "; ".join(texts)
            )
        if left_out:
            parts.append(left_out)
        return "; ".join(parts)

    def identity_holds(self, copy: str) -> bool:
        """Whether the design identity of `copy` (`T0_IDENTITIES`) was checked on the rows and holds."""
        held = self.identities[self.identities["copy"] == copy] if len(self.identities) else self.identities
        return bool(len(held)) and bool(held["holds"].all())

    def rate_gap(self, mine: Sequence[str], theirs: Sequence[str]):
        """Statistic (b) for any two groups of curves: the best (lowest) capped relative rate to come within
        the margin of `theirs` minus that of `mine`, each group's best chosen again in every resample.
        `(estimate, resampled (B,), mine's value, theirs' value, mine's curve, theirs' curve)`, or None
        where a group has no curve here."""
        mine = [c for c in mine if c in self.main.curves]
        theirs = [c for c in theirs if c in self.main.curves]
        if not mine or not theirs:
            return None
        field = len(FRACTIONS)
        a, a_at = _group_values(self.main, self.point, mine, field, np.argmin)
        b, b_at = _group_values(self.main, self.point, theirs, field, np.argmin)
        a_d = _group_values(self.main, self.distribution, mine, field, np.argmin)[0]
        b_d = _group_values(self.main, self.distribution, theirs, field, np.argmin)[0]
        return float(b - a), b_d - a_d, float(a), float(b), mine[int(a_at)], theirs[int(b_at)]

    def identity_rows(self) -> List[dict]:
        out = []
        for record in self.identities.itertuples():
            base = {
                "task": self.task,
                "temperature": self.temperature,
                "n_items": self.scores.n,
                "statistic": IDENTITY,
                "token_curve": record.copy,
                "other_curve": record.original,
                "noise_floor_from": "none: a design identity",
                "against_floor": "",
            }
            what = f"{record.copy} = {record.original} at T = 0"
            if record.holds:
                out.append(
                    {
                        **base,
                        "estimate": 0.0,
                        "low": 0.0,
                        "high": 0.0,
                        "verdict": BY_CONSTRUCTION,
                        "detail": f"{what}: texts equal on all {record.n_items} items in each of "
                        f"{record.n_compared} configuration(s) (0 differ)",
                    }
                )
                continue
            estimate, low, high = self._identity_difference(record.copy, record.original)
            out.append(
                {
                    **base,
                    "estimate": estimate,
                    "low": low,
                    "high": high,
                    "verdict": verdict(low, high) if np.isfinite(low) and np.isfinite(high) else NOT_RESOLVED,
                    "detail": f"{what} does not hold on the rows: {record.n_differ} item texts differ over "
                    f"{record.n_compared} configuration(s)"
                    + (f", alphas {record.missing} unmatched" if record.missing else "")
                    + f"; the estimate is the measured quality difference {record.copy} - {record.original} "
                    "(mean over its configurations), not by construction",
                }
            )
        return out

    def _identity_difference(self, copy: str, original: str) -> Tuple[float, float, float]:
        mine, theirs = self.scores.index(copy), self.scores.index(original)
        if not mine or not theirs:
            return np.nan, np.nan, np.nan
        quality = self.scores.quality
        return intervals.paired_mean_difference(
            quality[mine].mean(0),
            quality[theirs].mean(0),
            confidence=self.confidence,
            n_resamples=self.distribution.shape[1] or 1,
            seed=0,
        )


def _check(n_resamples, confidence, margin) -> None:
    if margin is None:
        return _check(n_resamples, confidence, MARGIN)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 10:
        raise ValueError(f"n_resamples={n_resamples!r}: pass a whole number of resamples (2000 for tables).")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: pass a level strictly between 0 and 1, e.g. 0.95.")
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin={margin!r}: pass a margin >= 0 in quality units, e.g. {MARGIN}.")


def headline_table(
    rows: pd.DataFrame,
    tasks=None,
    *,
    second_seed: Optional[pd.DataFrame] = None,
    margin: Optional[float] = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    gamma: int = 1,
) -> pd.DataFrame:
    """The headline statistics (module docstring) per (task, temperature) of a run's `rows` (Gemma-style at
    gamma 1; the T5 run at its gamma 5): one row per (task, temperature, statistic, fraction or margin),
    and one per design identity checked.
    Columns: `estimate`, `low`, `high` (95% percentile interval over `n_resamples` paired
    resamples of the items, seed `seed`), `verdict`, the noise floor (`noise_floor`, `_low`, `_high`,
    `_from`, `against_floor`) from `second_seed` (the verifier's and SpecDecode's rows with a second seed
    set), `detail`, `n_items`; each group's value and interval (`token_*`, `other_*`) with the curve chosen
    on all items and the share of resamples that chose it; and, on the rows against the verifier, the
    difference against the greedy verifier (`vs_greedy_*`). `tasks`: the sweep's tasks (corpus BLEU).
    `margin`: quality units (None: `headline_curves.margin_for` each task's metric)."""
    out = []
    for pair in headline_pairs(
        rows,
        tasks,
        second_seed=second_seed,
        margin=margin,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        gamma=gamma,
    ):
        out += pair.rows()
    table = pd.DataFrame(out)
    order = {s: i for i, s in enumerate(STATISTICS + (IDENTITY,))}
    table["_order"] = table["statistic"].map(order)
    table = table.sort_values(
        ["task", "temperature", "_order", "fraction"], kind="stable", ascending=[True, False, True, True]
    )
    return table.drop(columns="_order").reset_index(drop=True)


def headline_pairs(
    rows: pd.DataFrame,
    tasks=None,
    *,
    second_seed: Optional[pd.DataFrame] = None,
    margin: Optional[float] = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    gamma: int = 1,
) -> List[HeadlinePair]:
    """One `HeadlinePair` per (task, temperature) of `rows` at block size `gamma` (`headline_table`'s
    arguments), resampled once: the table's rows and any other group comparison (`HeadlinePair.rate_gap`)
    share its resamples."""
    _check(n_resamples, confidence, margin)
    if "gamma" in rows:
        rows = rows[rows["gamma"] == gamma]
    if not len(rows):
        raise ValueError(f"no rows at gamma={gamma}: pass the block size the run's rules ran at.")
    return [
        HeadlinePair(rows, part, second_seed, tasks, margin, n_resamples, seed, confidence)
        for _, part in rows.groupby(["task", "temperature"], sort=False)
    ]


def run_gamma(rows: pd.DataFrame) -> int:
    """The block size a run's Token rules ran at (the smallest, where several): the gamma of its headline
    table (1 on the Gemma-style runs, 5 on the T5 run)."""
    if "gamma" not in rows or not len(rows):
        return 1
    token = rows[rows["label"].isin(TOKEN_CURVES)]
    # without Token rules the table reads "not run" at the run's own block size
    return int((token if len(token) else rows)["gamma"].min())
