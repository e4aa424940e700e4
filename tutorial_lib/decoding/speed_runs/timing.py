"""Timing the engine: methods timed on every prompt in shuffled rounds (`engine_method`, `measure_speed`),
and their speed-ups over the verifier alone beside the block-cost model's (`summarise_speed`,
`expected_run_time`)."""

from __future__ import annotations

import random
import statistics
from typing import Callable, List, Mapping, Optional, Sequence

import pandas as pd

from ...maths import latency
from ..calibration import Calibration

__all__ = ["engine_method", "measure_speed", "summarise_speed", "expected_run_time"]


def engine_method(pair, gamma, **options) -> Callable[[List[int], int], dict]:
    """A timed method for `measure_speed`: `tl.generate` at T = 0 (`gamma=0` is plain verifier decoding)."""
    from ..engine import generate

    drafter, verifier = pair

    def run(prompt: List[int], max_new_tokens: int) -> dict:
        if gamma == 0:
            g = generate(
                drafter, verifier, prompt, method="verifier", max_new_tokens=max_new_tokens, **options
            )
        else:
            g = generate(
                drafter,
                verifier,
                prompt,
                method="speculative",
                rule="spec",
                gamma=gamma,
                max_new_tokens=max_new_tokens,
                **options,
            )
        gammas = getattr(g, "gammas", None)
        return {
            "tokens": list(g.tokens),
            "seconds": g.wall_time_s,
            "n_verifier_calls": g.n_verifier_calls,
            "n_drafter_calls": g.n_drafter_calls,
            "n_accepted": g.n_accepted,
            "n_rejected": g.n_rejected,
            "gammas": list(gammas) if gammas is not None else None,
            "auto_costs": list(getattr(g, "auto_costs", []) or []) or None,
        }

    return run


def measure_speed(
    methods: Mapping[str, Callable],
    prompts: Mapping[str, List[int]],
    *,
    max_new_tokens: int,
    repeats: int = 2,
    reference: str = "verifier",
    seed: int = 0,
    warmup: bool = True,
    progress: bool = True,
) -> pd.DataFrame:
    """Every method on every prompt, `repeats` rounds, shuffled per (round, prompt); one row per run.

    `methods[name](prompt_ids, max_new_tokens)` returns at least `tokens` and `seconds`; `reference`
    names the method the others are divided by. A warm-up pass runs each method once on 4 tokens.
    """
    if reference not in methods:
        raise ValueError(f"reference={reference!r} is not among the methods {list(methods)}.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r}: run every method at least once (repeats >= 1).")
    from tqdm.auto import tqdm

    first = next(iter(prompts.values()))
    if warmup:
        for fn in methods.values():
            fn(first, 4)
    rng, rows = random.Random(seed), []
    bar = tqdm(total=repeats * len(prompts) * len(methods), desc="timing", disable=not progress)
    for round_ in range(repeats):
        for label, ids in prompts.items():
            order = list(methods)
            rng.shuffle(order)
            for name in order:
                result = dict(methods[name](ids, max_new_tokens))
                rows.append(
                    {"round": round_, "prompt": label, "prompt_tokens": len(ids), "method": name, **result}
                )
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def expected_run_time(
    calibration: Calibration, gamma: int, acceptance: float, n_tokens: int, prompt_tokens: int
) -> float:
    """Seconds the block-cost model expects for one run: the prefill call(s), then n tokens at
    $\\tau(\\gamma)$."""
    scale = prompt_tokens / max(calibration.context_tokens, 1)
    prefill = calibration.price("prefill_verifier") if "prefill_verifier" in calibration.samples else 0.0
    if gamma > 0 and "prefill_drafter" in calibration.samples:
        prefill += calibration.price("prefill_drafter")
    return prefill * scale + n_tokens * calibration.time_per_token(gamma, acceptance)


def _quartiles(values: Sequence[float]):
    values = list(values)
    if len(values) == 1:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def summarise_speed(
    rows: pd.DataFrame,
    calibration: Optional[Calibration] = None,
    *,
    gammas: Optional[Mapping[str, int]] = None,
    reference: str = "verifier",
) -> pd.DataFrame:
    """Per method: median speed-up over the reference with quartiles, acceptance, tokens per call,
    same tokens as the reference, and (fixed gamma, with a calibration) expected and measured / expected.

    `gammas` maps a method to its fixed gamma (0 for the reference); by default names `gamma=<g>` are read.
    """
    keys = ["round", "prompt"]
    ref = rows[rows["method"] == reference].set_index(keys)
    out = []
    for name, runs in rows.groupby("method", sort=False):
        runs = runs.set_index(keys)
        speedups = (ref["seconds"] / runs["seconds"]).dropna()
        q1, q3 = _quartiles(speedups)
        row = {
            "method": name,
            "median_seconds": runs["seconds"].median(),
            "speedup": speedups.median(),
            "speedup_q25": q1,
            "speedup_q75": q3,
            "n_runs": len(speedups),
            "same_tokens": int(
                sum(list(a) == list(b) for a, b in zip(runs["tokens"], ref.loc[runs.index, "tokens"]))
            ),
        }
        if "n_accepted" in runs and runs["n_accepted"].notna().all():
            judged = (runs["n_accepted"] + runs["n_rejected"]).sum()
            row["acceptance"] = runs["n_accepted"].sum() / judged if judged else float("nan")
            n_tokens = runs["tokens"].map(len)
            row["tokens_per_call"] = n_tokens.sum() / runs["n_verifier_calls"].sum()
        gamma = (gammas or {}).get(name)
        if gamma is None and "gamma=" in name:
            tail = name.split("gamma=")[1].split()[0]
            gamma = int(tail) if tail.isdigit() else None
        if name == reference:
            gamma = 0
        if calibration is not None and gamma is not None and "acceptance" in row:
            a = row["acceptance"] if gamma else 0.0
            a = 0.0 if a != a else a  # no drafts judged (gamma = 0)
            expected = statistics.median(
                expected_run_time(calibration, 0, 0.0, len(t), p)
                / expected_run_time(calibration, gamma, a, len(t), p)
                for t, p in zip(runs["tokens"], runs["prompt_tokens"])
            )
            row.update(
                gamma=gamma,
                expected_speedup=expected,
                measured_over_expected=row["speedup"] / expected,
                model_speedup=calibration.speedup(gamma, a),
                textbook_speedup=latency.textbook_speedup(a, gamma, calibration.cost_ratio),
            )
        out.append(row)
    return pd.DataFrame(out)
