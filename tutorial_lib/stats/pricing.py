r"""Latency from counted calls: every row priced with the measured cost of each call it made.

A row (one configuration on one item) counts, per model $m \in \{q, p\}$, its decoder calls by the
number $k$ of tokens each fed ($c_m(k)$), its prefills $n^{\text{pre}}_m$ (a decoder-only model
reading the prompt) and its encoder passes $n^{\text{enc}}_m$ (an encoder-decoder reading it). With a
`calibration.Calibration` of the same models on the same machine (median seconds $t_q(k)$, $t_p(k)$,
$t^{\text{pre}}_m$, $t^{\text{enc}}_m$, and the engine's per-call overhead $o$), its modelled latency is

$$
L = \sum_{m \in \{q, p\}} \Big[ n^{\text{pre}}_m \,(t^{\text{pre}}_m + o)
    + n^{\text{enc}}_m\, t^{\text{enc}}_m
    + \sum_{k \ge 1} c_m(k)\,\big(t_m(k) + o\big) \Big] + n_{\text{blocks}}\, o_{\text{block}},
$$

where $n_{\text{blocks}}$ is the verifier calls of a speculative row (`method == "speculative"`; 0
for the others) and $o_{\text{block}}$ the engine's measured work per block beyond its calls
(drafting bookkeeping, verification, the trace), **priced with the row's own rule and gamma**
(`Calibration.block_overhead_for`: each rule's target computation timed by
`calibration.rule_block_costs`), never SpecDecode's for every rule.

So two configurations that make the same calls get the same latency, whatever else the machine did
while they ran: the noise of one wall-clock run per row is gone, and what remains is the spread over
items (`latency_intervals`, a bootstrap over items). The measured wall time stays as a check
(`model_error`: per configuration, the median absolute relative error of $L$ against it).

Two pricings (columns of `price_rows`):

- `modelled_latency_s`: the calibration as measured (here a CPU, where scoring $k$ tokens costs
  about $k$ one-token steps of the verifier);
- `modelled_latency_accelerator_s`: the same calls if every call cost its model's one-token step,
  $t_m(k) = t_m(1)$ for every $k$, prefills and encoder passes included (`Calibration.accelerator`):
  the regime of an accelerator, where a call is bound by reading the weights, not by arithmetic.

Prefills and encoder passes are priced at the row's prompt length (`prompt_tokens`) by a
least-squares line through every length the calibration measured, its slope held >= 0 so that a
longer prompt never costs less (`Calibration.prefill_fit`; `calibrate_for_sweep` measures at the
10%, 50% and 90% quantiles of the sweep's prompt lengths and at each task's median). Rows of the batched
runner are priced as the calls `engine.generate` makes for that item alone (`batch.generate_batch` counts them
so), i.e. a latency at batch size 1; their `wall_time_s` is a share of a batch's time, so `model_error` of
such rows measures batching as much as the model. Rows written before the counters existed (no
`verifier_calls_by_k`) cannot be priced from their total call counts (a speculative call's $k$ is not
recorded) and are refused: rerun them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import intervals
from ..decoding.calibration import Calibration, rule_block_costs, sweep_rules, target_kind
from ..decoding.engine import calibrate

__all__ = [
    "add_rule_block_costs",
    "signed_error",
    "LATENCY_COLUMN",
    "ACCELERATOR_COLUMN",
    "PRICINGS",
    "CALL_COLUMNS",
    "row_latency",
    "price_rows",
    "latency_intervals",
    "relative_latency",
    "model_error",
    "overall_model_error",
    "calibrate_for_sweep",
    "load_sweep_calibration",
    "CALIBRATION_FILE",
    "counts_calls",
    "PricedSweep",
    "price_sweep",
]

LATENCY_COLUMN = "modelled_latency_s"
ACCELERATOR_COLUMN = "modelled_latency_accelerator_s"
#: pricing name -> the column `price_rows` writes, and what it means (for figure captions)
PRICINGS = {
    "measured": (LATENCY_COLUMN, "calls priced at this machine's measured costs"),
    "accelerator": (ACCELERATOR_COLUMN, "the same calls if scoring k tokens cost one step"),
}
MODELS = ("drafter", "verifier")
CALL_COLUMNS = tuple(f"{m}_{c}" for m in MODELS for c in ("calls_by_k", "prefills", "encoder_passes"))
CALIBRATION_FILE = "calibration.json"


# ---- the cost of one call -----------------------------------------------------------------------


def _drafter_step(calibration: Calibration, k: int) -> float:
    """$t_q(k)$ without overhead: measured for k = 1 (and 2, if `drafter_k2` was), beyond that the
    straight line through the last two measured points."""
    one = calibration.median("drafter_step")
    two = calibration.median("drafter_k2") if "drafter_k2" in calibration.samples else one
    return one if k == 1 else two + (k - 2) * max(two - one, 0.0)


def _step(calibration: Calibration, model: str, k: int) -> float:
    return _drafter_step(calibration, k) if model == "drafter" else calibration.t_p(k, with_overhead=False)


def _fixed(calibration: Calibration, kind: str, model: str, n_tokens: Optional[int]) -> float:
    key = f"{kind}_{model}"
    if key not in calibration.samples:
        what = "prefill of a decoder-only" if kind == "prefill" else "encoder pass of an encoder-decoder"
        raise ValueError(
            f"the rows count a {what} {model}, but the calibration has no {key!r} "
            f"(it holds {sorted(calibration.samples)}); calibrate the pair that made the rows."
        )
    return calibration.prefill_time(key, n_tokens)


# ---- pricing rows -------------------------------------------------------------------------------


def _counts(row: Mapping, model: str):
    by_k = row.get(f"{model}_calls_by_k")
    if by_k is None or isinstance(by_k, float):  # a missing cell of a DataFrame reads NaN
        raise ValueError(
            f"row {row.get('config', '?')} / {row.get('example_id', '?')} has no {model}_calls_by_k: it "
            "was written before rows counted calls by tokens fed, and its total call counts do not say "
            "what a speculative call cost. Rerun it (an empty results folder, or a new one)."
        )
    return (
        [int(c) for c in by_k],
        int(row.get(f"{model}_prefills", 0)),
        int(row.get(f"{model}_encoder_passes", 0)),
    )


class _Costs:
    """One calibration's costs, each asked of it once: a run's rows ask the same few numbers (a step at k,
    a prefill at a prompt length, a rule's block cost) thousands of times, and each answer is a median or
    a least-squares fit over the calibration's samples. The calibration must not change while priced."""

    def __init__(self, calibration: Calibration):
        self.calibration = calibration
        self.overhead_s = calibration.overhead_s
        self._answers: dict = {}

    def _once(self, key, compute):
        if key not in self._answers:
            self._answers[key] = compute()
        return self._answers[key]

    def fixed(self, kind: str, model: str, n_tokens: Optional[int]) -> float:
        return self._once((kind, model, n_tokens), lambda: _fixed(self.calibration, kind, model, n_tokens))

    def step(self, model: str, k: int) -> float:
        return self._once(("step", model, k), lambda: _step(self.calibration, model, k))

    def block(self, rule: str, gamma: int, beta) -> float:
        return self._once(
            ("block", rule, gamma, beta), lambda: self.calibration.block_overhead_for(rule, gamma, beta)
        )


def row_latency(row: Mapping, calibration: Calibration) -> float:
    """$L$ of one row (a dict, or a row of a table): its counted calls at the calibration's median
    costs, plus the per-call overhead for every decoder call and, for a speculative row, the
    per-block overhead for every verifier call (see the module docstring)."""
    costs = calibration if isinstance(calibration, _Costs) else _Costs(calibration)
    overhead = costs.overhead_s
    n_prompt = row.get("prompt_tokens")
    n_prompt = (
        None if n_prompt is None or isinstance(n_prompt, float) and math.isnan(n_prompt) else int(n_prompt)
    )
    total = 0.0
    for model in MODELS:
        by_k, prefills, encoder_passes = _counts(row, model)
        if prefills:
            total += prefills * (costs.fixed("prefill", model, n_prompt) + overhead)
        if encoder_passes:
            total += encoder_passes * costs.fixed("encoder", model, n_prompt)
        total += sum(c * (costs.step(model, k) + overhead) for k, c in enumerate(by_k, start=1) if c)
        if model == "verifier" and row.get("method") == "speculative":
            block = costs.block(str(row.get("rule")), int(row.get("gamma", 1)), row.get("beta", 1.0))
            total += (sum(by_k) + prefills) * block
    return total


def _as_table(rows) -> pd.DataFrame:
    if isinstance(rows, pd.DataFrame):
        return rows.copy()
    return pd.DataFrame(list(rows))


def price_rows(
    rows: Union[pd.DataFrame, Iterable[Mapping]], calibration: Calibration, *, accelerator: bool = True
) -> pd.DataFrame:
    """A copy of `rows` with `modelled_latency_s` (the calibration as measured) and, unless told not
    to, `modelled_latency_accelerator_s` (`Calibration.accelerator`). Rows without per-call counts
    are refused with the reason (see `row_latency`)."""
    if not isinstance(calibration, Calibration):
        raise TypeError(
            "calibration must be a tutorial_lib.decoding.calibration.Calibration "
            "(calibrate_for_sweep or Calibration.load), "
            f"not {type(calibration).__name__}."
        )
    table = _as_table(rows)
    if table.empty:
        raise ValueError("no rows to price.")
    missing = [c for c in ("drafter_calls_by_k", "verifier_calls_by_k") if c not in table.columns]
    if missing:
        raise ValueError(
            f"the rows have no {' or '.join(missing)}: they were written before rows counted calls by "
            "tokens fed, so their latency cannot be priced. Rerun the sweep into an empty results folder."
        )
    records = table.to_dict("records")
    costs = _Costs(calibration)
    table[LATENCY_COLUMN] = [row_latency(r, costs) for r in records]
    if accelerator:
        flat = _Costs(calibration.accelerator())
        table[ACCELERATOR_COLUMN] = [row_latency(r, flat) for r in records]
    return table


# ---- intervals and the check against wall time ---------------------------------------------------


def _check_columns(table: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        hint = (
            " (price the rows first: price_rows(rows, calibration))"
            if {LATENCY_COLUMN, ACCELERATOR_COLUMN} & set(missing)
            else ""
        )
        raise ValueError(f"the rows have no column {', '.join(missing)}{hint}.")


def latency_intervals(
    rows: pd.DataFrame,
    *,
    column: str = LATENCY_COLUMN,
    by: Sequence[str] = ("task", "config"),
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per configuration (`by`), the mean of `column` over its items with a `confidence` percentile
    bootstrap interval (`intervals.mean_interval`, `n_resamples` resamples of the items). Rows whose
    values are all equal get that value as both ends; a single item gets no interval (NaN): `intervals`."""
    table = _as_table(rows)
    _check_columns(table, [column, *by])
    out = []
    for key, group in table.groupby(list(by), sort=False, dropna=False):
        values = group[column].to_numpy(dtype=float)
        _, low, high = intervals.mean_interval(
            values, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
        out.append(
            {
                **dict(zip(by, key if isinstance(key, tuple) else (key,))),
                "n_items": len(values),
                "mean_s": float(values.mean()),
                "ci_low_s": low,
                "ci_high_s": high,
            }
        )
    return pd.DataFrame(out)


def relative_latency(
    rows: pd.DataFrame,
    *,
    column: str = LATENCY_COLUMN,
    reference_method: str = "verifier",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per (task, config), mean latency over the mean latency of the `reference_method` configuration
    of the same task and temperature on the same items, with a paired bootstrap interval over items
    (resampling items, both configurations together: `intervals.ratio_of_means`, total over total)."""
    table = _as_table(rows)
    _check_columns(table, [column, "task", "config", "method", "temperature", "example_id"])
    out = []
    for (task, temperature), block in table.groupby(["task", "temperature"], sort=False):
        reference = block[block["method"] == reference_method]
        if reference["config"].nunique() != 1:
            raise ValueError(
                f"task {task!r} at T = {temperature:g} has {reference['config'].nunique()} "
                f"{reference_method!r} configurations; relative latency needs exactly one."
            )
        base = reference.set_index("example_id")[column]
        for config, group in block.groupby("config", sort=False):
            mine = group.set_index("example_id")[column]
            items = mine.index.intersection(base.index)
            x, y = mine.loc[items].to_numpy(float), base.loc[items].to_numpy(float)
            _, low, high = intervals.ratio_of_means(
                x, y, confidence=confidence, n_resamples=n_resamples, seed=seed
            )
            out.append(
                {
                    "task": task,
                    "temperature": temperature,
                    "config": config,
                    "label": group["label"].iloc[0] if "label" in group else config,
                    "n_items": len(items),
                    "relative_latency": float(x.mean() / y.mean()),
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    return pd.DataFrame(out)


def _relative_errors(table: pd.DataFrame, column: str) -> pd.Series:
    _check_columns(table, [column, "wall_time_s"])
    wall = table["wall_time_s"].astype(float)
    if (wall <= 0).any():
        raise ValueError("some rows have wall_time_s <= 0; the relative error needs measured times.")
    return (table[column].astype(float) - wall).abs() / wall


def model_error(
    rows: pd.DataFrame, *, column: str = LATENCY_COLUMN, by: Sequence[str] = ("task", "config")
) -> pd.DataFrame:
    """Per configuration: the median absolute relative error $|L - W| / W$ of the modelled latency
    $L$ against the measured wall time $W$ over its rows, and the two medians themselves."""
    table = _as_table(rows)
    table["abs_rel_error"] = _relative_errors(table, column)
    grouped = table.groupby(list(by), sort=False, dropna=False)
    out = grouped.agg(
        n_items=("abs_rel_error", "size"),
        median_abs_rel_error=("abs_rel_error", "median"),
        median_modelled_s=(column, "median"),
        median_wall_s=("wall_time_s", "median"),
    )
    if "label" in table:
        out.insert(0, "label", grouped["label"].first())
    return out.reset_index()


def overall_model_error(rows: pd.DataFrame, *, column: str = LATENCY_COLUMN) -> float:
    """The median absolute relative error of the modelled latency against wall time over all rows."""
    return float(_relative_errors(_as_table(rows), column).median())


# ---- the calibration of a sweep -------------------------------------------------------------------


def _sweep_path(sweep) -> Path:
    if isinstance(sweep, pd.DataFrame):
        if "path" not in sweep.attrs:
            raise ValueError(
                "this table does not say which sweep folder it came from; pass the folder "
                "(run_sweep's table has it in .attrs['path'])."
            )
        return Path(sweep.attrs["path"])
    return Path(getattr(sweep, "path", sweep))


def load_sweep_calibration(sweep) -> Calibration:
    """The calibration stored with a sweep (`<folder>/calibration.json`); `sweep` is the folder, a
    `Sweep`, or `run_sweep`'s table."""
    path = _sweep_path(sweep) / CALIBRATION_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"no {CALIBRATION_FILE} in {path.parent}; run calibrate_for_sweep(pair, ...) with "
            "the models loaded, on the machine that ran the sweep."
        )
    return Calibration.load(path)


def _prompt_lengths(folder: Path) -> Dict[str, int]:
    """Each task's median prompt length in the sweep's saved rows, and (keys `"q10"`, `"q90"`) the
    10% and 90% quantiles over all of them, so that a prefill is measured at well-spread lengths
    (empty without rows)."""
    from ..sweeps import rows_file

    lengths: Dict[str, List[int]] = {}
    for r in rows_file.read_folder_rows(folder):  # rows.jsonl and each process's rows file
        if r.get("prompt_tokens"):
            lengths.setdefault(str(r.get("task")), []).append(int(r["prompt_tokens"]))
    out = {task: int(np.median(values)) for task, values in lengths.items()}
    every = [v for values in lengths.values() for v in values]
    if every:
        out.update(q10=int(np.quantile(every, 0.1)), q90=int(np.quantile(every, 0.9)))
    return out


def _rules_at(rows: pd.DataFrame, gammas) -> List[tuple]:
    """The sweep's rules (`calibration.sweep_rules`) at their own gammas and at every fixed gamma in
    `gammas` (a sweep's latency runs may use block sizes its rows do not)."""
    rules = sweep_rules(rows)
    fixed = [g for g in ([gammas] if isinstance(gammas, (int, str)) else gammas) if not isinstance(g, str)]
    extra = [(rule, beta, alpha, int(g)) for rule, beta, alpha, _ in rules for g in fixed]
    return list(dict.fromkeys(rules + extra))


def _saved_rows(folder: Path) -> pd.DataFrame:
    from ..sweeps import rows_file

    rows = rows_file.read_folder_rows(folder)  # rows.jsonl and each process's rows file
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["method", "rule", "beta", "alpha", "gamma"])


def _needed_k(gammas: Sequence) -> int:
    if isinstance(gammas, (int, str)):
        gammas = [gammas]
    fixed = [g for g in gammas if not isinstance(g, str)]
    if any(isinstance(g, bool) or not isinstance(g, int) or g < 1 for g in fixed) or any(
        g != "auto" for g in gammas if isinstance(g, str)
    ):
        raise ValueError(
            f"gammas={gammas!r}: pass the block sizes the sweep uses (whole numbers >= 1, or 'auto')."
        )
    # gamma="auto" picks sizes up to the calibration's max_k - 1; 8 is `calibrate`'s default
    return max([g + 1 for g in fixed] + ([8] if len(fixed) < len(gammas) else []) + [2])


def _fits(calibration: Calibration, drafter, verifier, max_k: int) -> List[str]:
    problems = []
    if calibration.max_k < max_k:
        problems.append(f"it measured k up to {calibration.max_k}, the sweep needs {max_k}")
    for role, lm in (("drafter", drafter), ("verifier", verifier)):
        name = getattr(lm, "name", None)
        if name is not None and name != getattr(calibration, role):
            problems.append(f"its {role} is {getattr(calibration, role)!r}, not {name!r}")
        if getattr(lm, "is_encoder_decoder", False) and f"encoder_{role}" not in calibration.samples:
            problems.append(f"it has no encoder pass of the {role}")
    return problems


#: A sweep's calibration lasts at least this share of its saved rows' summed wall time, up to
#: `SWEEP_CALIBRATION_SECONDS` (more rounds for pairs whose calls are fast; a smoke sweep stays quick).
SWEEP_CALIBRATION_SHARE, SWEEP_CALIBRATION_SECONDS = 0.1, 60.0


def calibrate_for_sweep(
    pair,
    sweep,
    gammas: Sequence = (1,),
    *,
    repeats: int = 5,
    context_tokens: Optional[int] = None,
    recalibrate: bool = False,
    progress: bool = True,
    min_seconds: Optional[float] = None,
) -> Calibration:
    """The calibration of a sweep's pair, measured once and stored as `<folder>/calibration.json`.

    `sweep` is the sweep's folder, a `Sweep` or `run_sweep`'s table; `gammas` the block sizes it runs
    ($t_p(k)$ is measured for k = 1..max(gamma) + 1). `calibration.calibrate` times every call kind
    `repeats` (>= 5) rounds, interleaved in a shuffled order, and keeps each kind's median; encoder
    passes are timed for encoder-decoders. `context_tokens` (cached tokens under each call) defaults
    to the median over tasks of each task's median prompt length in the sweep's saved rows (64
    without rows); prefills and encoder passes are timed at each of those task medians too, so a
    row's prefill is priced at its own prompt length (run it after the sweep, or calibrate again). A stored
    calibration is reused when it covers the sweep's k and models; `recalibrate=True` measures again (and
    replaces it). The rounds go on until the measurement has lasted `min_seconds`; by default a tenth of the
    saved rows' summed wall time, at most a minute (5 rounds of a small pair's millisecond calls last seconds,
    and one slow spell of the machine would move every median; `interleaved_rounds`). With models that are not
    loaded (`sweep_folders.ModelRecord`), the stored calibration is returned or its absence reported.
    """
    folder = _sweep_path(sweep)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 5:
        raise ValueError(f"repeats={repeats!r}: a sweep's calibration takes the median of at least 5 rounds.")
    drafter, verifier = pair
    max_k = _needed_k(gammas)
    path = folder / CALIBRATION_FILE
    loaded = all(hasattr(lm, "start") for lm in (drafter, verifier))
    rules = _rules_at(_saved_rows(folder), gammas)
    if path.exists() and not recalibrate:
        stored = Calibration.load(path)
        problems = _fits(stored, drafter, verifier, max_k)
        if not problems:
            missing = [r for r in rules if target_kind(r[0], r[3], r[1]) not in stored.samples]
            if missing and loaded:  # measured before rules were priced apart: add their block costs
                stored = rule_block_costs(
                    stored, missing, int(verifier.vocab_size), repeats=repeats, progress=progress
                )
                stored.save(path)
            return stored
        how = "pass recalibrate=True to measure again" if loaded else "calibrate again with the models loaded"
        raise ValueError(f"{path} does not fit this sweep ({'; '.join(problems)}): {how}.")
    if not loaded:
        raise FileNotFoundError(
            f"no {CALIBRATION_FILE} in {folder} and the models are not loaded; run "
            "calibrate_for_sweep with the sweep's models on the machine that ran it."
        )
    by_task = _prompt_lengths(folder)
    medians = [v for k, v in by_task.items() if k not in ("q10", "q90")]
    context = context_tokens or (int(np.median(medians)) if medians else 64)
    if min_seconds is None:
        saved = _saved_rows(folder)
        spent = float(saved["wall_time_s"].sum()) if "wall_time_s" in saved else 0.0
        min_seconds = min(SWEEP_CALIBRATION_SECONDS, SWEEP_CALIBRATION_SHARE * spent)
    calibration = calibrate(
        drafter,
        verifier,
        max_k=max_k,
        repeats=repeats,
        context_tokens=int(context),
        prefill_lengths=sorted(set(by_task.values())),
        progress=progress,
        min_seconds=min_seconds,
    )
    rounds = len(next(iter(calibration.samples.values())))
    calibration = rule_block_costs(
        calibration, rules, int(verifier.vocab_size), repeats=repeats, progress=progress
    )
    calibration.note = (
        f"calibrate_for_sweep: gammas {list(gammas) if not isinstance(gammas, (int, str)) else gammas}; "
        f"{rounds} rounds over at least {min_seconds:.3g} s"
    )
    calibration.save(path)
    return calibration


def counts_calls(rows: pd.DataFrame) -> bool:
    """Whether every row counted its calls by tokens fed (`price_rows` can price them): rows
    written before the counters existed cannot be priced."""
    columns = ("drafter_calls_by_k", "verifier_calls_by_k")
    return len(rows) > 0 and all(c in rows and rows[c].notna().all() for c in columns)


class PricedSweep(NamedTuple):
    """A sweep's rows priced (`rows` with the pricing columns, and the `calibration` that priced them), or
    left as they were (`calibration` None) with the reason in `why_not`."""

    rows: pd.DataFrame
    calibration: Optional[Calibration]
    why_not: Optional[str]


def price_sweep(pair, rows: pd.DataFrame, gammas: Sequence = (1,), *, required: bool = False) -> PricedSweep:
    """A sweep's rows priced from the calls they counted with the calibration stored beside them (measured
    once, `calibrate_for_sweep`): the pipeline of notebooks 06 and 07. Rows written before rows counted their
    calls, or a calibration that cannot be had (models not loaded, a stored one that does not fit), leave the
    rows as they are with the reason in `why_not`; `required=True` raises instead (batched wall times are no
    latencies, so a batched run has nothing to fall back on)."""
    if not counts_calls(rows):
        why = (
            "these rows were written before rows counted their calls by tokens fed, so the cost model "
            "cannot price them; rerun the sweep into an empty results folder to price it"
        )
        if required:
            raise ValueError(why)
        return PricedSweep(rows, None, why)
    try:
        calibration = calibrate_for_sweep(pair, rows, gammas=gammas)
    except (ValueError, FileNotFoundError) as error:
        if required:
            raise
        return PricedSweep(rows, None, str(error))
    return PricedSweep(price_rows(rows, calibration), calibration, None)


def add_rule_block_costs(
    sweep, vocab_size: int, *, also=None, repeats: int = 30, progress: bool = True
) -> Calibration:
    """Add each rule's block cost (`calibration.rule_block_costs`) to the calibration stored with a
    sweep, for the rules and gammas of its saved rows and of the rows `also` (a table priced with the
    same calibration, such as a run's batch-size-1 latency rows), and store it again. No model is
    loaded: only the pair's vocabulary size `vocab_size` matters. Use it for a calibration measured
    before block costs were priced per rule."""
    folder = _sweep_path(sweep)
    calibration = load_sweep_calibration(folder)
    rows = _saved_rows(folder)
    if also is not None:
        rows = pd.concat([rows, _as_table(also)], ignore_index=True)
    rules = sweep_rules(rows)
    if not rules:
        raise ValueError(f"no speculative rows in {folder} (or `also`): there is no rule to time.")
    calibration = rule_block_costs(calibration, rules, vocab_size, repeats=repeats, progress=progress)
    calibration.save(folder / CALIBRATION_FILE)
    return calibration


def signed_error(
    rows: pd.DataFrame, *, column: str = LATENCY_COLUMN, by: Sequence[str] = ("label",)
) -> pd.DataFrame:
    """Per method (`by`, default the curve's label): the signed relative error $(L - W) / W$ of the
    modelled latency $L$ against the measured wall time $W$ over its rows, as its median and
    quartiles (negative: the model is faster than the clock), and the number of rows."""
    table = _as_table(rows)
    _check_columns(table, [column, "wall_time_s", *by])
    wall = table["wall_time_s"].astype(float)
    if (wall <= 0).any():
        raise ValueError("some rows have wall_time_s <= 0; the relative error needs measured times.")
    table["signed_error"] = (table[column].astype(float) - wall) / wall
    grouped = table.groupby(list(by), sort=False, dropna=False)["signed_error"]
    out = pd.DataFrame(
        {
            "n_rows": grouped.size(),
            "q25": grouped.quantile(0.25),
            "median": grouped.median(),
            "q75": grouped.quantile(0.75),
        }
    )
    return out.reset_index()
