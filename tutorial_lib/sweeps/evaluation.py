r"""The evaluation harness: resumable sweeps saved as rows (of the tasks and configurations of `configs`).

A **sweep** runs every configuration $c$ = (method, rule, $\alpha$, $\beta$, $\gamma$, $T$) on every
example $x$ of a task and records one row per $(c, x)$: the quality of the output against the
references (a metric from its standard package, `tutorial_lib.tasks.metrics`), the `Generation` counters
(drafted, accepted, rejected, calls of each model) and the wall time. Rows are appended to
`rows.jsonl` as they finish, in a folder named after a hash of the run's configuration, so an
interrupted sweep resumes where it stopped and a rerun reuses every finished row.

Rows are written and read by `rows_file` (what happens to a cut or malformed line is documented
there). A sweep's analysis (curves, the paper's table) is in `analysis` (claims in `claims`), its figures in
`rerun_figures`.

A sweep can be split over processes: under `accelerate launch --num_processes N` (or torchrun)
`run_sweep` runs only this process's share of the pending rows into its own rows file, and every
process returns the whole table (`processes` says how the work is dealt out).

A sweep's folder, its hash and the models the hash records are `sweep_folders`. A sweep can be reloaded
without its models: `sweep_folders.ModelRecord(name, dtype)` stands in for a model that is not installed,
and `run_sweep` then returns the saved rows, or says which are missing and how to install the models that
would compute them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from . import rows_file
from .processes import Processes, current_processes
from ..checks import check_seed, check_whole_number
from .configs import (
    Config,
    Example,
    Task,
    sequence_argument,
    check_run_name,
)
from .sweep_folders import ROW_KEY, ModelRecord, Sweep, sweep_of

__all__ = [
    "run_sweep",
    "prompt_ids",
    "batch_plan",
    "MissingRowsError",
    "IncompleteSweepError",
]


class MissingRowsError(RuntimeError):
    """`run_sweep` was given `ModelRecord` objects (models not loaded) and some requested rows are not
    saved."""


def _row(task: Task, example: Example, config: Config, generation, seed: int) -> dict:
    n_tokens = len(generation.tokens)
    return {
        "task": task.name,
        "example_id": example.id,
        "config": config.key,
        "label": config.label,
        "method": config.method,
        "rule": config.rule,
        "alpha": config.alpha,
        "beta": str(config.beta),
        "gamma": config.gamma,
        "temperature": config.temperature,
        "seed": seed,
        "quality": task.score(generation.text, example),
        "text": generation.text,
        "n_tokens": n_tokens,
        "n_verifier_calls": generation.n_verifier_calls,
        "n_drafter_calls": generation.n_drafter_calls,
        "n_drafted": generation.n_drafted,
        "n_accepted": generation.n_accepted,
        "n_rejected": generation.n_rejected,
        "deferral_rate": generation.deferral_rate,
        "wall_time_s": generation.wall_time_s,
        "drafter_time_s": generation.drafter_time_s,
        "verifier_time_s": generation.verifier_time_s,
        # the calls each model made, which `pricing.price_rows` prices with a calibration
        "prompt_tokens": len(generation.prompt_tokens),
        **generation.call_counts(),
    }


def prompt_ids(lm, task: Task, example: Example) -> List[int]:
    """The token ids `lm` reads for an example: its chat template for chat tasks, else the plain text,
    cut to `task.max_input_tokens` (keeping a final end-of-sequence token, as tokenizers truncate)."""
    if task.chat:
        return lm.chat_prompt(example.prompt)
    ids = lm.encode(example.prompt)
    limit = task.max_input_tokens
    if limit is not None and len(ids) > limit:
        eos = getattr(getattr(lm, "tokenizer", None), "eos_token_id", None)
        ids = ids[: limit - 1] + ids[-1:] if eos is not None and ids[-1] == eos else ids[:limit]
    return ids


def run_sweep(
    pair,
    tasks: Union[Task, Sequence[Task]],
    configs: Sequence[Config],
    *,
    name: str,
    seed: int = 0,
    runner: str = "single",
    batch_size: int = 16,
    root: Optional[os.PathLike] = None,
    progress: bool = True,
    extra_config: Optional[dict] = None,
    max_rows: Optional[int] = None,
    eos_token_id=None,
    processes: Optional[Processes] = None,
) -> pd.DataFrame:
    """Run every configuration on every example of every task; returns the sweep's whole table.

    `runner="single"` runs `engine.generate` one example at a time (batch size 1: the wall times
    are latencies); `runner="batch"` decodes `batch_size` examples at once: a decoder-only pair's
    configurations at `gamma = 1` without a bonus token (and plain decoding) all in one batch
    (`config_batch.generate_configs`: rows with one history share their forward passes), every other
    configuration (any `gamma`, Algorithm 4's bonus token, encoder-decoder pairs, the sequential and
    token cascades, the original BiLD) one at a time through `batch.generate_batch`, and the oracle
    (and `bonus="target"`) one example at a time as `"single"` does. A batched row's tokens and
    counters are those of its single run (so its priced latency, `pricing`, is a batch-size-1 latency);
    its `wall_time_s` is its share of the batch's time, not a latency. Finished rows are skipped; `max_rows`
    stops after that many new rows (as an interruption would). Example `i` of a task uses seed
    `seed + i` in every configuration (common random numbers across methods).

    `pair` may hold `ModelRecord` objects instead of models: then nothing runs, and the saved rows are
    returned if every requested row is saved (`MissingRowsError` says how many are not, and how to
    install the models, otherwise).

    `processes` (default `processes.current_processes()`: one process, unless launched as several by
    `accelerate launch` or torchrun) splits the pending work: this process runs its share into its own
    rows file (`rows.process-<k>.jsonl`), and once every process has finished each returns the whole
    table (the `processes` module); `max_rows` then counts this process's rows.
    """
    check_run_name(name)
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, (Task, dict, list, tuple)):
        raise TypeError(f"tasks={str(tasks)[:60]!r}: pass a Task or a list of Tasks.")
    tasks = [tasks] if isinstance(tasks, (Task, dict)) else list(tasks)
    tasks = [Task.from_dict(t) for t in tasks]
    if not tasks:  # an empty table would come back as if the sweep had run
        raise ValueError("tasks=[]: pass at least one Task, e.g. configs.Task('qa', 'qa_em', examples).")
    if len({t.name for t in tasks}) != len(tasks):
        raise ValueError(
            f"tasks share a name ({[t.name for t in tasks]}); rows are keyed by task name, so give each "
            "task its own."
        )
    configs = sequence_argument(configs, "configs", "configs.sweep_configs(...)")
    if not configs or not all(isinstance(c, Config) for c in configs):
        raise TypeError("configs: pass a non-empty list of configs.Config, e.g. configs.sweep_configs(...).")
    if len({c.key for c in configs}) != len(configs):
        raise ValueError("configs holds the same configuration twice; pass each once.")
    seed = check_seed(seed)
    if runner not in ("single", "batch"):
        raise ValueError(f"runner={runner!r}; use 'single' (latency at batch size 1) or 'batch' (gamma = 1).")
    batch_size = check_whole_number(batch_size, "batch_size", 1, "a batch holds at least one example")
    if max_rows is not None:
        max_rows = check_whole_number(max_rows, "max_rows", 0, "None runs every row; 0 computes none")
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress={progress!r}: pass True or False.")
    if extra_config is not None and not isinstance(extra_config, dict):
        raise TypeError(
            f"extra_config={extra_config!r}: pass a dict (recorded in the run's configuration) or None."
        )
    if not (isinstance(pair, (tuple, list)) or hasattr(pair, "__iter__")) or isinstance(pair, (str, bytes)):
        raise TypeError(f"pair={pair!r}: pass (drafter, verifier), e.g. tutorial_lib.load_pair(...).")
    pair = tuple(pair)
    if len(pair) != 2:
        raise ValueError(
            f"pair holds {len(pair)} model{'' if len(pair) == 1 else 's'}; a sweep needs two, "
            "(drafter, verifier), e.g. tutorial_lib.load_pair('toy-drafter', 'toy-verifier') "
            "(for one model alone, pass it twice and run the 'Drafter' or 'Verifier' curve)."
        )
    for role, model in zip(("drafter", "verifier"), pair):
        loaded = isinstance(model, ModelRecord) or hasattr(model, "encode")
        if isinstance(model, (str, bytes)) or not loaded:
            raise TypeError(
                f"the {role} is {model!r:.60}, not a loaded model; load the pair first, e.g. "
                "pair = tutorial_lib.load_pair('toy-drafter', 'toy-verifier'), or pass "
                "ModelRecords (sweep_folders.saved_models) to reload saved rows."
            )
    drafter, verifier = pair
    if eos_token_id is not None and eos_token_id is not False and not isinstance(verifier, ModelRecord):
        from ..decoding.options import stop_tokens

        stop_tokens(eos_token_id, verifier)  # named now, not after the first row
    sweep = sweep_of(pair, tasks, name, runner=runner, seed=seed, extra_config=extra_config, root=root)
    load_options = dict(example_ids={t.name: {e.id for e in t.examples} for t in tasks}, configs=configs)
    done = sweep.done(**load_options)
    todo = [(t, c) for t in tasks for c in configs]
    total = sum(len(t.examples) for t, _ in todo)
    saved = sum(1 for t, c in todo for e in t.examples if (t.name, c.key, e.id) in done)
    records = [m for m in (drafter, verifier) if isinstance(m, ModelRecord)]
    if records and saved < total:
        install = "; ".join(dict.fromkeys(m.install for m in records if m.install)) or "load the models"
        raise MissingRowsError(
            f"{total - saved} of the {total} requested rows are not saved in {sweep.path} and "
            f"{', '.join(m.name for m in records)} is not loaded to compute them: {install}, "
            "then run again with the models."
        )
    processes = current_processes() if processes is None else processes
    if not isinstance(processes, Processes):
        raise TypeError(
            f"processes={processes!r}: pass a processes.Processes, or None (this process's place, from "
            "the launcher)."
        )
    # process 0 holds the folder for the whole launch, so that another launch on it waits rather than
    # writing while this one's processes read the pending work (they would then deal out different lists)
    with _holding_folder(sweep, wanted=processes.index == 0 and saved < total) as waited:
        if processes.index == 0 and saved < total:
            # a last line cut when a process died, in a file no process of this run appends to (an earlier
            # run's other count of processes): moved aside here, as an append would
            for path in sweep.rows_paths():
                if path.name not in processes.rows_names and path.exists():
                    rows_file.set_aside_bad_lines(path)
        if waited and processes.count == 1:
            done = sweep.done(**load_options)  # the other launch's rows: not computed again
        label = name
        if processes.count > 1:  # the rows of other processes' shares count as done here
            processes.wait()  # process 0 holds the folder (bad lines set aside) before the others read it
            done = sweep.done(**load_options)
            processes.wait()  # every process has read the saved rows before any writes one: one pending list
            done = done | _left_to_others(tasks, configs, done, runner, batch_size, processes)
            label = f"{name} [process {processes.index + 1}/{processes.count}]"
        sweep.processes = processes  # where `append` writes; `_requested` waits for the other processes
        table, complete = _compute(
            sweep,
            (drafter, verifier),
            tasks,
            configs,
            done,
            load_options,
            label=label,
            total=total,
            seed=seed,
            runner=runner,
            batch_size=batch_size,
            max_rows=max_rows,
            progress=progress,
            eos_token_id=eos_token_id,
        )
    if complete:
        _check_complete(table, sweep, tasks, configs, processes, waited)
    return table


def _compute(
    sweep: "Sweep",
    pair,
    tasks: Sequence[Task],
    configs: Sequence[Config],
    done: set,
    load_options: dict,
    *,
    label: str,
    total: int,
    seed: int,
    runner: str,
    batch_size: int,
    max_rows: Optional[int],
    progress: bool,
    eos_token_id,
) -> Tuple[pd.DataFrame, bool]:
    """`run_sweep`'s rows not in `done`, computed and appended; the table once every process has finished,
    and whether this process ran its whole share (False: it stopped at `max_rows`)."""
    from tqdm.auto import tqdm

    drafter, verifier = pair
    todo = [(t, c) for t in tasks for c in configs]
    bar = tqdm(total=total, desc=label, disable=not progress, unit="example")
    bar.update(sum(1 for t, c in todo for e in t.examples if (t.name, c.key, e.id) in done))
    new_rows = 0
    if runner == "single":
        lockstep, blocks, singles = [], [], list(configs)
    else:
        lockstep, blocks, singles = batch_plan(configs, verifier)
    from ..decoding.engine import generate

    for task in tasks:
        for config in singles:  # batch size 1: the wall times are latencies
            bar.set_postfix_str(f"{task.name}: {config.label} a={config.alpha:.3g}", refresh=False)
            for i, example in enumerate(task.examples):
                if (task.name, config.key, example.id) in done:
                    continue
                if max_rows is not None and new_rows >= max_rows:
                    bar.close()
                    return _requested(sweep, tasks, configs, load_options), False
                generation = generate(
                    drafter,
                    verifier,
                    prompt_ids(verifier, task, example),
                    max_new_tokens=task.max_new_tokens,
                    seed=seed + i,
                    eos_token_id=eos_token_id,
                    **config.engine_options(),
                )
                sweep.append([_row(task, example, config, generation, seed + i)])
                new_rows += 1
                bar.update(1)
        if lockstep or blocks:
            from ..decoding.batch import generate_batch
            from ..decoding.config_batch import generate_configs
        for start in range(0, len(task.examples), batch_size) if lockstep or blocks else ():
            chunk = task.examples[start : start + batch_size]
            # every gamma = 1 configuration still missing a row of this chunk decodes in one batch, rows
            # with one history sharing their forward passes (`config_batch`)
            pending = [c for c in lockstep if any((task.name, c.key, e.id) not in done for e in chunk)]
            missing = [c for c in blocks if any((task.name, c.key, e.id) not in done for e in chunk)]
            if not pending and not missing:
                continue  # (so saved runs reload without their models)
            prompts = [prompt_ids(verifier, task, e) for e in chunk]
            seeds = [seed + start + j for j in range(len(chunk))]
            if pending:
                if max_rows is not None:
                    if new_rows >= max_rows:
                        bar.close()
                        return _requested(sweep, tasks, configs, load_options), False
                    pending = pending[: -(-(max_rows - new_rows) // len(chunk))]
                bar.set_postfix_str(
                    f"{task.name}: items {start}-{start + len(chunk) - 1}, {len(pending)} configurations",
                    refresh=False,
                )
                options = []
                for config in pending:
                    o = config.engine_options()
                    options.append(
                        {k: o[k] for k in ("method", "rule", "alpha", "beta", "temperature") if k in o}
                    )
                # prefilled there, for the models the pending configurations call
                shared = generate_configs(
                    drafter,
                    verifier,
                    prompts,
                    options,
                    seeds=seeds,
                    max_new_tokens=task.max_new_tokens,
                    eos_token_id=eos_token_id,
                )
                rows = [
                    _row(task, e, config, g, s)
                    for config, generations in zip(pending, shared.generations)
                    for e, g, s in zip(chunk, generations, seeds)
                    if (task.name, config.key, e.id) not in done
                ]
                sweep.append(rows)
                new_rows += len(rows)
                bar.update(len(rows))
            # the other batched configurations: one `generate_batch` each (blocks of gamma drafts per row)
            for config in missing:
                if max_rows is not None and new_rows >= max_rows:
                    bar.close()
                    return _requested(sweep, tasks, configs, load_options), False
                bar.set_postfix_str(
                    f"{task.name}: items {start}-{start + len(chunk) - 1}, {config.label} "
                    f"a={config.alpha:.3g}",
                    refresh=False,
                )
                options = config.engine_options()
                if options["method"] != "speculative":
                    options["bonus"] = (
                        "none" if options["gamma"] == 1 else "verifier"
                    )  # unused by plain decoding
                generations = generate_batch(
                    drafter,
                    verifier,
                    prompts,
                    seeds=seeds,
                    max_new_tokens=task.max_new_tokens,
                    eos_token_id=eos_token_id,
                    **options,
                )
                rows = [
                    _row(task, e, config, g, s)
                    for e, g, s in zip(chunk, generations, seeds)
                    if (task.name, config.key, e.id) not in done
                ]
                sweep.append(rows)
                new_rows += len(rows)
                bar.update(len(rows))
    bar.close()
    return _requested(sweep, tasks, configs, load_options), True


class IncompleteSweepError(RuntimeError):
    """A sweep's launch finished, but its folder lacks rows of the plan: the message says how many, which,
    the likely reason and that the same call computes only those."""


@contextlib.contextmanager
def _holding_folder(sweep: "Sweep", *, wanted: bool):
    """An exclusive lock on the run's folder while this launch computes rows (yields whether it had to
    wait for another launch). Where the folder cannot be created or locked (a read-only copy, a file
    system without `flock`), nothing is held: `_check_complete` still catches a partial table."""
    if not wanted:
        yield False
        return
    created = not sweep.path.exists()
    try:
        sweep.path.mkdir(parents=True, exist_ok=True)
        handle = os.open(sweep.path, os.O_RDONLY)
    except OSError:
        yield False
        return
    waited = False
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = True
            warnings.warn(
                f"another launch is computing rows of this sweep in {sweep.path}; waiting for it "
                "to finish (this one then computes only the rows still missing).",
                stacklevel=4,
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield waited
    finally:
        os.close(handle)
        if created:  # a run that wrote nothing (an error at its first row) leaves no empty folder behind
            with contextlib.suppress(OSError):
                sweep.path.rmdir()


def _check_complete(
    table: pd.DataFrame,
    sweep: "Sweep",
    tasks: Sequence[Task],
    configs: Sequence[Config],
    processes: Processes,
    waited: bool,
) -> None:
    """Refuse to return a table that lacks rows of the plan (every configuration on every example)."""
    have = set() if table.empty else set(zip(*(table[k] for k in ROW_KEY)))
    planned = [(t.name, c, e.id) for t in tasks for c in configs for e in t.examples]
    missing = [(task, c, item) for task, c, item in planned if (task, c.key, item) not in have]
    if not missing:
        return
    by_config: Dict[Tuple[str, str], List[str]] = {}
    for task, c, item in missing:
        config = f"{c.label} a={c.alpha:.3g} g={c.gamma} T={c.temperature:g}"
        by_config.setdefault((task, config), []).append(item)
    listed = [
        f"{task}: {config} (items {', '.join(items[:4])}{', ...' if len(items) > 4 else ''})"
        for (task, config), items in list(by_config.items())[:6]
    ]
    more = f"; and {len(by_config) - 6} more configurations" if len(by_config) > 6 else ""
    reasons = []
    if processes.count > 1:
        reasons.append(
            f"a process of this launch of {processes.count} stopped before its share was done (an "
            "error, a kill, or max_rows given to it)"
        )
    reasons.append(
        "another launch wrote to this folder meanwhile, so this launch's processes saw different "
        "pending work" + (" (one held it while this launch started)" if waited else "")
        if processes.count > 1
        else "another writer changed this folder's rows files meanwhile"
    )
    raise IncompleteSweepError(
        f"{len(missing)} of the {len(planned)} rows this sweep plans are missing from {sweep.path} after "
        f"this launch finished: {'; '.join(listed)}{more}. Likely reason: {', or '.join(reasons)}. Run the "
        "same call again once nothing else runs on this folder: it computes only the missing rows."
    )


def _left_to_others(
    tasks: Sequence[Task],
    configs: Sequence[Config],
    done: set,
    runner: str,
    batch_size: int,
    processes: Processes,
) -> set:
    """The keys of the pending rows that other processes run: the pending units (an example of a
    configuration with `runner="single"`, a chunk of `batch_size` examples under every configuration
    with `"batch"`), in the sweep's order, are dealt out by `processes.share`."""
    if runner == "single":
        units = [[(t.name, c.key, e.id)] for t in tasks for c in configs for e in t.examples]
    else:
        units = [
            [(t.name, c.key, e.id) for c in configs for e in t.examples[start : start + batch_size]]
            for t in tasks
            for start in range(0, len(t.examples), batch_size)
        ]
    pending = [unit for unit in units if any(key not in done for key in unit)]
    mine = {key for unit in processes.share(pending) for key in unit}
    return {key for unit in pending for key in unit if key not in mine}


def batch_plan(configs: Sequence[Config], verifier) -> Tuple[list, list, list]:
    """`runner="batch"`'s split of the configurations: (one shared batch at gamma = 1 through
    `config_batch`, one `generate_batch` each, one example at a time)."""
    encoder_decoder = bool(getattr(verifier, "is_encoder_decoder", False))  # (a `ModelRecord`: nothing runs)
    lockstep, blocks, singles = [], [], []
    for config in configs:
        plain = config.method in ("drafter", "verifier")
        if config.method == "oracle" or config.gamma == "auto":
            singles.append(config)  # both models at every position, or a block per row: `engine.generate`
        elif config.method in ("token_cascade", "seq_cascade", "bild"):
            blocks.append(config)
        elif not encoder_decoder and (plain or config.gamma == 1 and config.bonus == "none"):
            lockstep.append(config)
        elif plain or config.bonus in ("verifier", "none"):
            blocks.append(config)
        else:
            singles.append(config)  # bonus="target": one more drafter step per row
    return lockstep, blocks, singles


def _requested(
    sweep: Sweep, tasks: Sequence[Task], configs: Sequence[Config], load_options: dict
) -> pd.DataFrame:
    """The sweep's rows of these tasks and configurations (a folder may also hold rows of others), once
    every process of a split sweep has finished its share."""
    if sweep.processes is not None:
        sweep.processes.wait()
    table = sweep.load(**load_options)
    if not table.empty:
        keys = {c.key for c in configs}
        names = {t.name for t in tasks}
        table = table[table["config"].isin(keys) & table["task"].isin(names)].reset_index(drop=True)
    table.attrs["path"] = str(sweep.path)
    return table
