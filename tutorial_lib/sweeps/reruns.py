r"""The paper's two evaluations as profiles: which models, tasks and settings each notebook run uses.

`notebooks/06_t5_evaluation` reruns the T5 experiments (quality against latency at batch size 1)
and `notebooks/07_gemma_evaluation` the Gemma ones (quality against rejection rate at
$\gamma = 1$). Each has a few profiles, chosen by the notebook's `profile` parameter:

| profile | models | tasks |
|---|---|---|
| `hub` | the paper's families from the Hugging Face hub | the real datasets through `datasets.load_dataset` |
| `offline` (T5's default) | models that run here without a network | task sets the package makes or ships |
| `offline-all` (Gemma) | as `offline` | every item of the smaller offline sets, room to answer |
| `offline-large` (Gemma) | as `offline` | HumanEval, arithmetic-300, facts: enough to decide |
| `headline` (Gemma's default) | as `offline`, bf16 | as `offline-large`; 3 alphas per rule, T = 1 and 0 |
| `full` (T5) | as `offline` | more examples, the whole grid |
| `smoke` | the cheapest models | a few examples (`make test`) |

Everything a profile decides is a plain dict, so a notebook shows it and a reader can change it. The
tables are `rerun_profiles` (re-exported here).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

from . import evaluation as ev
from .configs import CURVES, Config, Task, sweep_configs
from .sweep_folders import Sweep, saved_models, sweep_of
from .identity import canonical

# not in `__all__`, but tests and benchmarks read it here (`reruns.GEMMA_OFFLINE_ALPHAS`)
from .rerun_profiles import GEMMA_OFFLINE_ALPHAS as GEMMA_OFFLINE_ALPHAS
from .rerun_profiles import (
    GEMMA_GREEDY_ALPHAS,
    GEMMA_GREEDY_ALPHAS_3,
    GEMMA_MIDDLE_ALPHAS,
    GEMMA_PROFILES,
    EARLIER_PROFILES,
    SECOND_SEED_PROFILES,
    T5_HUB_DATASETS,
    T5_OFFLINE_ALPHAS,
    T5_OFFLINE_ALPHAS_T0,
    T5_PREFIXES,
    T5_PROFILES,
)

if TYPE_CHECKING:  # annotations only: the wing loads pandas when a sweep does
    import pandas as pd

__all__ = [
    "T5_PROFILES",
    "T5_OFFLINE_ALPHAS",
    "T5_OFFLINE_ALPHAS_T0",
    "GEMMA_PROFILES",
    "GEMMA_MIDDLE_ALPHAS",
    "GEMMA_GREEDY_ALPHAS",
    "GEMMA_GREEDY_ALPHAS_3",
    "SECOND_SEED_PROFILES",
    "second_seed_rows",
    "EARLIER_PROFILES",
    "earlier_claims",
    "planned_rows",
    "batch_sweep",
    "T5_HUB_DATASETS",
    "t5_profile",
    "gemma_profile",
    "t5_hub_task",
    "t5_tasks",
    "t5_training_budget",
    "t5_configs",
    "load_t5_pair",
    "gemma_tasks",
    "load_gemma_pair",
    "latency_pair",
    "gemma_configs",
    "latency_configs",
    "LATENCY_KEYS",
    "run_config",
    "latency_run_config",
    "saved_pair",
    "finished_rows",
    "run_sessions",
    "describe_pair",
    "task_table",
]

# ---- T5 -------------------------------------------------------------------------------------------


def _profile(profiles: Dict[str, dict], name: str, overrides: Optional[dict]) -> dict:
    if name not in profiles:
        raise ValueError(f"profile={name!r} is unknown; choose one of {', '.join(profiles)}.")
    # every float by its exact value (`configs.canonical`): one a processor computed with other last
    # bits is the same setting, and names the same sweep
    settings = canonical(copy.deepcopy(profiles[name]))
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in settings:
            raise ValueError(
                f"{key!r} is not a setting of the {name!r} profile; settings: {', '.join(settings)}."
            )
        settings[key] = canonical(value)
    settings["profile"] = name
    return settings


def t5_profile(name: str = "offline", **overrides) -> dict:
    """The settings of one T5 profile; keyword arguments that are not None replace settings."""
    return _profile(T5_PROFILES, name, overrides)


def t5_hub_task(name: str, n: int, *, split: str = "validation") -> Task:
    """A T5 task from the hub (needs a network): WMT14 EN->DE (BLEU), CNN/DailyMail or XSum (ROUGE-2),
    the first `n` items of `split` (validation, as the paper), inputs cut as the paper cuts them."""
    if name not in T5_HUB_DATASETS:
        raise ValueError(f"task {name!r} is unknown; choose one of {', '.join(T5_HUB_DATASETS)}.")
    spec = T5_HUB_DATASETS[name]
    options = {"split": split, **({"revision": spec["revision"]} if spec["revision"] else {})}
    try:
        from datasets import load_dataset

        data = (
            load_dataset(spec["path"], spec["name"], **options)
            if spec["name"]
            else load_dataset(spec["path"], **options)
        )
    except Exception as error:  # noqa: BLE001 - no network, no access, or the hub moved the dataset
        where = spec["path"] + (f" ({spec['name']})" if spec["name"] else "") + f", split {split!r}"
        raise OSError(
            f"could not load {where} through datasets.load_dataset ({type(error).__name__}: {error}); "
            "without access to the hub use profile='offline'."
        ) from error
    pairs = [(spec["source"](row), spec["target"](row)) for row in data.select(range(min(n, len(data))))]
    examples = [
        {"id": f"{name}-{i}", "prompt": T5_PREFIXES[name] + source, "references": [target]}
        for i, (source, target) in enumerate(pairs)
    ]
    return Task(
        name,
        spec["metric"],
        examples,
        max_new_tokens=spec["max_new_tokens"],
        max_input_tokens=spec["max_input_tokens"],
    )


def t5_tasks(settings: dict) -> List[Task]:
    """The profile's tasks: the hub datasets, or held-out sentences of the synthetic translation task."""
    if settings["profile"] == "hub":
        return [t5_hub_task(name, settings["n_examples"]) for name in settings["tasks"]]
    from ..toy import synthetic_mt

    examples = synthetic_mt.TranslationGrammar().examples(settings["n_examples"], split="test")
    # the longest valid translation has 13 words; a model that has not learned to stop gets a few more
    return [Task("synthetic_mt", "bleu", examples, max_new_tokens=20)]


def t5_configs(settings: dict) -> List[Config]:
    """The T5 sweep: every curve over its grid (the profile's `alphas` where it gives them, else an
    `n_alpha`-point grid over the curve's live range), at every gamma and temperature."""
    return sweep_configs(
        settings["curves"],
        gammas=settings["gammas"],
        temperatures=settings["temperatures"],
        n_alpha=settings["n_alpha"],
        alphas=settings.get("alphas"),
    )


def t5_training_budget(settings: dict) -> Optional[str]:
    """The `synthetic_t5.train_t5_pair` budget a T5 profile's models need ("default", "tiny"), or None
    where they are not trained here (the hub's T5s)."""
    names = [settings["drafter"], settings["verifier"]]
    if not all(name.startswith("synthetic-t5-") for name in names):
        return None
    budgets = {name.partition(":")[2] or "default" for name in names}
    if len(budgets) != 1:
        raise ValueError(f"the drafter and verifier {names} were trained with different budgets; use one.")
    return budgets.pop()


def load_t5_pair(settings: dict, **placement):
    """The drafter and verifier of a T5 profile. The offline pair must be trained first:
    `synthetic_t5.train_t5_pair(budget=t5_training_budget(settings))` (loading never trains).
    `placement` (`device_map`, `max_memory`) goes to `load_pair`."""
    from ..models.adapter import load_pair

    return load_pair(
        settings["drafter"],
        settings["verifier"],
        dtype=settings["dtype"],
        device=settings["device"],
        **placement,
    )


# ---- both -----------------------------------------------------------------------------------------

#: The settings of a profile's batch-size-1 latency rows alone: how many items, which block sizes and
#: curves, and the kernel paths the pair is put on for them (`latency_paths`, a drafter's and a
#: verifier's, as `models.load_pair(kernel_paths=)` takes them). They decide no row of the batched sweep,
#: so they are left out of its folder's hash: the latency rows can be measured again on another path or
#: on more items without moving the sweep's rows.
LATENCY_KEYS = ("latency_items", "latency_gammas", "latency_curves", "latency_paths", "latency_alphas")


def run_config(settings: dict) -> dict:
    """What a profile adds to its sweep's configuration (and so to the folder's hash): every
    setting but the list of curves and the latency rows' settings (`LATENCY_KEYS`)."""
    return {"profile": {k: v for k, v in settings.items() if k != "curves" and k not in LATENCY_KEYS}}


def latency_run_config(settings: dict) -> dict:
    """What a profile adds to its latency rows' configuration (and so to their folder's hash): every
    setting but the list of curves, the latency rows' own settings included."""
    return {"profile": {k: v for k, v in settings.items() if k != "curves"}}


def saved_pair(name: str, settings: dict, *, results_dir=None):
    """Stand-ins for the models of the saved sweep `name` run with these settings, so a notebook
    redraws its tables and figures from the saved rows without loading (or training) the models."""
    install = (
        "make models-qwen"
        if "qwen" in settings["verifier"]
        else "tutorial_lib.models.synthetic_t5.train_t5_pair()"
        if settings["verifier"].startswith("synthetic-t5")
        else f"load {settings['drafter']} and {settings['verifier']}"
    )
    return saved_models(name, root=results_dir, extra_config=run_config(settings), install=install)


def describe_pair(pair) -> "pd.DataFrame":
    """One row per model: role, name, parameters, and for encoder-decoders the layers and width
    (models that are not loaded, `sweep_folders.ModelRecord`, show their name only)."""
    import pandas as pd

    rows = []
    for role, lm in zip(("drafter", "verifier"), pair):
        row = {"role": role, "name": lm.name}
        network = getattr(lm, "model", None)
        if hasattr(network, "parameters"):
            row["parameters"] = sum(w.numel() for w in network.parameters())
            row["dtype"] = str(lm.dtype).replace("torch.", "")
            config = getattr(network, "config", None)
            if getattr(config, "is_encoder_decoder", False):
                row["layers (enc+dec)"] = f"{config.num_layers}+{config.num_decoder_layers}"
                row["d_model"] = config.d_model
        else:
            row["parameters"] = "not loaded (saved rows only)"
        rows.append(row)
    return pd.DataFrame(rows)


def task_table(tasks: List[Task], verifier=None) -> "pd.DataFrame":
    """One row per task: metric, items, the cap on new tokens, and (given the verifier, loaded) the
    mean prompt length in its tokens."""
    import numpy as np
    import pandas as pd

    rows = []
    for task in tasks:
        row = {
            "task": task.name,
            "metric": task.metric_name,
            "items": len(task.examples),
            "max_new_tokens": task.max_new_tokens,
        }
        if hasattr(verifier, "chat_prompt"):
            row["prompt tokens (mean)"] = np.mean(
                [
                    len(verifier.chat_prompt(e.prompt) if task.chat else verifier.encode(e.prompt))
                    for e in task.examples
                ]
            )
        rows.append(row)
    return pd.DataFrame(rows)


# ---- Gemma ----------------------------------------------------------------------------------------


def planned_rows(configs: Sequence[Config], tasks: Sequence[Task]) -> int:
    """How many rows a complete sweep of `configs` over `tasks` holds: one per configuration and item."""
    return len(configs) * sum(len(task.examples) for task in tasks)


def batch_sweep(pair, tasks: Sequence[Task], name: str, settings: dict, results_dir) -> Sweep:
    """The folder of a profile's batched sweep, as `run_sweep` with the profile's settings writes it."""
    return sweep_of(
        pair,
        tasks,
        name,
        runner="batch",
        seed=settings.get("seed", 0),
        extra_config=run_config(settings),
        root=results_dir,
    )


def finished_rows(
    pair,
    tasks: Sequence[Task],
    configs: Sequence[Config],
    name: str,
    settings: dict,
    *,
    results_dir=None,
) -> tuple:
    """The saved rows of a profile's batched sweep on the tasks it finished, and its progress per task
    (rows saved, rows planned: every configuration on every item, and whether the task is finished). A run
    that stopped early (its tasks run in the profile's order) is redrawn on its finished tasks; a task with
    only some rows saved is left out whole, as its claims would rest on a prefix of its items. The rows'
    `attrs["path"]` is the run's folder, as `run_sweep` gives it."""
    import pandas as pd

    sweep = batch_sweep(pair, tasks, name, settings, results_dir)
    table = sweep.load(example_ids={t.name: {e.id for e in t.examples} for t in tasks}, configs=configs)
    keys = {c.key for c in configs}
    if not table.empty:
        table = table[table["config"].isin(keys)]
    progress = []
    for task in tasks:
        saved = 0 if table.empty else int((table["task"] == task.name).sum())
        planned = len(configs) * len(task.examples)
        progress.append(
            {"task": task.name, "rows_saved": saved, "rows_planned": planned, "finished": saved == planned}
        )
    progress = pd.DataFrame(progress).set_index("task")
    finished = [t for t in tasks if progress.loc[t.name, "finished"]]
    if not finished:
        raise ev.MissingRowsError(
            f"no task of {sweep.path} is finished ({int(progress['rows_saved'].sum())} of "
            f"{int(progress['rows_planned'].sum())} rows saved): run it further "
            "(benchmarks/gemma_rerun.py), or redraw another profile."
        )
    rows = table[table["task"].isin({t.name for t in finished})].reset_index(drop=True)
    rows.attrs["path"] = str(sweep.path)
    return rows, progress


def run_sessions(folder, rows_saved: int) -> Optional[tuple]:
    """The sessions of a long run (`sessions.jsonl` in its folder, written by `benchmarks/gemma_rerun.py`), or
    None where the folder has none. Returns a table, one row per session (its start, the rows it made, its
    hours, its CPU time over wall time, threads, how it ended, its processor) and the run's totals: sessions,
    wall and CPU hours, rows planned, and `rows_unlogged`, the saved rows (of `rows_saved`) that no session's
    line accounts for (a session still running, or one stopped without a signal before sessions wrote
    heartbeats): their hours are not in the totals."""
    import json
    from pathlib import Path

    import pandas as pd

    path = Path(folder) / "sessions.jsonl"
    if not path.exists():
        return None
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        return None
    sessions = pd.DataFrame(lines)
    before, after = sessions["rows_before"].to_numpy(), sessions["rows_after"].to_numpy()
    unlogged = int((before[1:] - after[:-1]).clip(min=0).sum() + max(0, rows_saved - int(after.max())))
    ended = [
        "finished"
        if line.get("finished")
        else ("last heartbeat (no signal)" if line.get("ended_by") else "stopped by a signal")
        for line in lines
    ]
    table = pd.DataFrame(
        {
            "start": sessions["start"],
            "rows made": after - before,
            "hours": sessions["seconds"] / 3600,
            "CPU over wall": sessions["cpu_seconds"] / sessions["seconds"],
            "threads": sessions["threads"],
            "ended": ended,
            "processor": [str(line.get("machine", "not recorded")).split("|")[0] for line in lines],
        }
    )
    totals = {
        "sessions": len(lines),
        "wall_hours": float(sessions["seconds"].sum() / 3600),
        "cpu_hours": float(sessions["cpu_seconds"].sum() / 3600),
        "rows_planned": int(lines[-1]["configurations"] * sum(lines[-1]["items"].values())),
        "rows_unlogged": unlogged,
    }
    return table, totals


def _saved_gemma_run(name: Optional[str], results_dir) -> Optional[tuple]:
    """A related profile's settings and the stand-ins of its saved sweep, or None where there is no such
    profile or its sweep is not saved."""
    if name is None:
        return None
    settings = gemma_profile(name)
    try:
        return settings, saved_pair(f"gemma-{name}", settings, results_dir=results_dir)
    except FileNotFoundError:
        return None


def second_seed_rows(settings: dict, *, results_dir=None) -> Optional["pd.DataFrame"]:
    """The saved rows of the profile's second-seed run (`SECOND_SEED_PROFILES`), whole tasks only (a task
    counts once both of its curves ran every item: a run still under way gives the tasks it finished), or
    None where the profile has none or no task of it is finished (`finished_rows`). Loads no model."""
    name = SECOND_SEED_PROFILES.get(settings["profile"])
    saved = _saved_gemma_run(name, results_dir)
    if saved is None:
        return None
    again, pair = saved
    try:
        rows, _ = finished_rows(
            pair, gemma_tasks(again), gemma_configs(again), f"gemma-{name}", again, results_dir=results_dir
        )
    except ev.MissingRowsError:  # no task finished yet
        return None
    return rows


def earlier_claims(settings: dict, *, results_dir=None) -> Optional[tuple]:
    """The claims of the run this profile's run replaced (`EARLIER_PROFILES`), as that run's notebook saved
    them (`claims.csv` in its folder; a test derives every committed folder's claims from its rows again):
    `(earlier profile, claims table)`, or None where the profile replaced no run or that run's claims are
    not saved. Loads no model."""
    import pandas as pd

    name = EARLIER_PROFILES.get(settings["profile"])
    saved = _saved_gemma_run(name, results_dir)
    if saved is None:
        return None
    earlier, pair = saved
    path = batch_sweep(pair, gemma_tasks(earlier), f"gemma-{name}", earlier, results_dir).path / "claims.csv"
    return (name, pd.read_csv(path)) if path.exists() else None


def gemma_profile(name: str = "headline", **overrides) -> dict:
    """The settings of one Gemma profile; keyword arguments that are not None replace settings."""
    return _profile(GEMMA_PROFILES, name, overrides)


def gemma_tasks(settings: dict) -> List[Task]:
    """The profile's few-shot tasks, each sent as one user message in the chat template."""
    from ..tasks import hub_tasks, tasksets

    tasks = []
    for name in settings["tasks"]:
        shots = (settings.get("shots") or {}).get(name)
        if settings["profile"] == "hub":
            raw = hub_tasks.hub_task(name, settings["n_items"], shots=shots)
        else:
            raw = tasksets.offline_task(name, settings["n_items"], shots=shots)
        limit = (settings.get("max_new_tokens") or {}).get(name)
        task = Task.from_dict(raw, chat=True, postprocess=_postprocessor(raw["name"]))
        if limit:
            task.max_new_tokens = int(limit)
        tasks.append(task)
    return tasks


def gemma_configs(settings: dict) -> List[Config]:
    """The batched sweep: every curve of the profile over its alpha grid, gamma = 1, one token per step
    (at T = 0 only `greedy_curves`, where a profile sets them, at `greedy_alphas` where it sets them)."""
    configs = []
    for temperature in settings["temperatures"]:
        greedy = temperature == 0
        curves = (settings.get("greedy_curves") or settings["curves"]) if greedy else settings["curves"]
        alphas = (settings.get("greedy_alphas") or settings["alphas"]) if greedy else settings["alphas"]
        configs += sweep_configs(
            curves,
            gammas=[1],
            temperatures=[temperature],
            n_alpha=settings["n_alpha"],
            alphas=alphas,
            bonus="none",
        )
    return configs


def latency_configs(settings: dict) -> List[Config]:
    """The batch-size-1 latency runs at the lowest temperature: the drafter and the verifier alone, and
    per gamma each latency curve at the alpha its quality rows use at that temperature (the profile's
    `latency_alphas[temperature][label]` where it picks one of several; else the first of `greedy_alphas`
    at T = 0 where the profile has them, else of `alphas`; the middle of its alpha grid without either;
    gamma = 1 without a bonus token, as in the batched sweep; larger gamma with Algorithm 4's bonus
    token)."""
    from ..maths.targets import alpha_grid

    temperature = min(settings["temperatures"])
    curves = settings["latency_curves"] or settings["curves"]
    configs = sweep_configs(["Drafter", "Verifier"], temperatures=[temperature])
    for gamma in settings["latency_gammas"]:
        for label in curves:
            spec = CURVES[label]
            if spec["method"] != "speculative":
                continue
            rule = spec["rule"]
            # the alpha of the quality rows at this temperature (a profile's own T = 0 placements)
            greedy = settings.get("greedy_alphas") if temperature == 0 else None
            chosen = (greedy or {}).get(label) or (settings.get("alphas") or {}).get(label)
            picked = ((settings.get("latency_alphas") or {}).get(temperature) or {}).get(label)
            if picked is not None:
                if chosen and picked not in chosen:
                    raise ValueError(
                        f"latency_alphas[{temperature!r}][{label!r}] = {picked}: the latency rows take an "
                        f"alpha of the quality rows at T = {temperature:g}; pick one of {chosen}."
                    )
                chosen = [picked]
            alpha = 0.0 if rule in ("spec", None) else float(chosen[0] if chosen else alpha_grid(rule, 3)[1])
            configs += sweep_configs(
                [label],
                gammas=[gamma],
                temperatures=[temperature],
                n_alpha=2,
                alphas={label: [alpha]},
                bonus="none" if gamma == 1 else "verifier",
            )
    return configs


def latency_pair(settings: dict, pair, *, results_dir=None):
    """The pair of a profile's batch-size-1 latency rows. Loaded models are put on the profile's
    `latency_paths` in place (`models.kernel_paths.put_pair_on_paths`: the verifier for blocks of the largest
    latency gamma + 1 rows; the batched sweep, which needs them as loaded, comes first), except a model whose
    loaded weights cannot give its path (`kernel_paths.reachable`: a profile loaded in bf16 has no fp32
    weights to quantise to int8, nor to probe fp32's paths with for "auto"): that one is loaded again in fp32
    and put on its path in a new pair, the loaded one left as it was (the other model, shared by both pairs,
    is put on its path in place). Stand-ins of saved runs (`saved_pair`) are those of the saved
    latency rows. Without `latency_paths`, `pair` itself."""
    paths = settings.get("latency_paths")
    if paths is None:
        return pair
    if not all(hasattr(lm, "start") for lm in pair):
        return saved_models(
            f"gemma-{settings['profile']}-latency",
            root=results_dir,
            extra_config=latency_run_config(settings),
        )
    from ..models.adapter import load_model
    from ..models.language_model import ModelPair
    from ..models.kernel_paths import put_pair_on_paths, reachable
    from ..models.layer_skip import split_layers

    models = list(pair)
    for i, (lm, path, name) in enumerate(zip(pair, paths, (settings["drafter"], settings["verifier"]))):
        if path is None or reachable(lm.model, path):
            continue
        if split_layers(name)[1] is not None:
            raise ValueError(
                f"latency_paths={paths!r}: {name!r} is made from its verifier's layers as loaded "
                f"({lm.dtype}), which cannot give {path!r}; load the profile in float32 (dtype='float32')"
            )
        models[i] = load_model(name, dtype="float32", device=settings["device"])
    if any(new is not old for new, old in zip(models, pair)):
        pair = ModelPair(*models, shared_vocabulary=pair.shared_vocabulary)
    put_pair_on_paths(pair, paths, gamma=max(settings["latency_gammas"]))
    return pair


def _postprocessor(task_name: str):
    from ..tasks import tasksets

    def postprocess(text: str) -> str:
        return tasksets.postprocess(task_name, text)

    postprocess.__name__ = f"postprocess_{task_name}"
    return postprocess


def load_gemma_pair(settings: dict, **placement):
    """The drafter and verifier of a Gemma profile. A drafter named `<verifier>:layers=N` is the
    verifier's first N layers (the smoke profile's cheaper drafter made from SmolLM2-135M).
    `placement` (`device_map`, `max_memory`: one for both, or a pair) goes to `load_pair`."""
    from ..models.adapter import load_model, load_pair
    from ..models.language_model import ModelPair
    from ..models.layer_skip import layer_skip_drafter, split_layers

    drafter, verifier = settings["drafter"], settings["verifier"]
    base, n = split_layers(drafter)
    if n is not None:
        verifier_placement = {k: v[1] if isinstance(v, (tuple, list)) else v for k, v in placement.items()}
        big = load_model(
            verifier if base == verifier else base,
            dtype=settings["dtype"],
            device=settings["device"],
            **verifier_placement,
        )
        return ModelPair(layer_skip_drafter(big, n), big)
    try:
        return load_pair(drafter, verifier, dtype=settings["dtype"], device=settings["device"], **placement)
    except OSError as error:
        if not drafter.startswith("google/gemma"):
            raise
        raise OSError(
            f"{error}\nThe Gemma models are gated: accept their licence on the Hugging Face hub with "
            "your account and set HF_TOKEN to a token of that account before loading them."
        ) from error
