r"""The evaluation harness: tasks, the methods on every curve, a resumable sweep, curves and the paper's table.

A **sweep** runs every configuration $c$ = (method, rule, $\alpha$, $\beta$, $\gamma$, $T$) on every
example $x$ of a task and records one row per $(c, x)$: the quality of the output against the
references (a metric from its standard package, `tutorial_lib.metrics`), the `Generation` counters
(drafted, accepted, rejected, calls of each model) and the wall time. Rows are appended to
`rows.jsonl` as they finish, in a folder named after a hash of the run's configuration, so an
interrupted sweep resumes where it stopped and a rerun reuses every finished row.

A **curve** is one method's configurations over its $\alpha$ grid. Each point has

$$\bar{Q}(c) = \frac{1}{n}\sum_x Q(c, x) \pm 1.96\,\frac{s_Q}{\sqrt n},\qquad
  L(c) = \frac{\sum_x \mathrm{time}(c, x)}{\sum_x \mathrm{time}(\text{verifier}, x)},\qquad
  r(c) = \frac{\sum_x \#\mathrm{rejected}(c, x)}{\sum_x \#\mathrm{judged}(c, x)},$$

the mean quality with a normal-approximation 95% interval, the latency relative to the verifier
alone (the T5 plots) and the rejection rate (the Gemma plots; the drafter alone has $r = 0$, the
verifier alone $r = 1$: every token is its own).

**The paper's table**, per method, computed from the measured curve by one documented rule: sort the
curve's points by latency and join neighbours by straight lines (linear interpolation).

- (i) *latency reduction at the verifier's quality*: the smallest latency $L^*$ at which the
  interpolated curve first reaches the verifier's quality $Q_p$; reported as $1 - L^*/L_p$ (the
  verifier's latency $L_p = 1$). "not reached" when no point reaches $Q_p$.
- (ii) *best quality within the verifier's latency*: the largest quality of the interpolated curve
  over $L \le L_p$ (a segment that crosses $L_p$ contributes its value at $L_p$); "not reached"
  when every point is slower than the verifier.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from . import targets

__all__ = ["Example", "Task", "Config", "CURVES", "T5_CURVES", "GEMMA_CURVES", "sweep_configs", "opt_grid", "bild_thresholds", "results_dir",
           "Sweep", "run_sweep", "summarize", "paper_table", "crossing_latency", "best_quality_within",
           "plot_curves", "quality_by_group", "with_rule_ends", "NOT_REACHED"]

NOT_REACHED = "not reached"


# ---- tasks ----------------------------------------------------------------------------------------

@dataclass
class Example:
    id: str
    prompt: str
    references: List[str]
    info: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, item: Union["Example", dict]) -> "Example":
        if isinstance(item, Example):
            return item
        return cls(str(item["id"]), item["prompt"], list(item.get("references", [])), dict(item.get("info", {})))


@dataclass
class Task:
    """Prompts with references and a metric: a name from `tutorial_lib.metrics.METRICS`, or a function
    `(prediction, example_dict) -> float`.

    `chat=True` sends each prompt as one user message in the model's chat template (instruction-tuned
    decoder-only models); otherwise the prompt text is encoded as it is (T5's task prefixes).
    """
    name: str
    metric: Union[str, Callable[[str, dict], float]]
    examples: List[Example]
    max_new_tokens: int = 64
    chat: bool = False
    postprocess: Optional[Callable[[str], str]] = None

    def __post_init__(self):
        self.examples = [Example.from_dict(e) for e in self.examples]
        if not self.examples:
            raise ValueError(f"task {self.name!r} has no examples; give at least one.")
        ids = [e.id for e in self.examples]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task {self.name!r} has repeated example ids; make them unique.")

    @classmethod
    def from_dict(cls, task: Union["Task", dict], **overrides) -> "Task":
        if isinstance(task, Task):
            return task
        fields = {k: task[k] for k in ("name", "metric", "examples", "max_new_tokens", "chat", "postprocess")
                  if k in task}
        fields.update(overrides)
        return cls(**fields)

    def head(self, n: Optional[int]) -> "Task":
        """The first `n` examples (all of them for `None`)."""
        return self if n is None else Task(self.name, self.metric, self.examples[:n], self.max_new_tokens,
                                           self.chat, self.postprocess)

    def score(self, text: str, example: Example) -> float:
        prediction = self.postprocess(text) if self.postprocess is not None else text
        if callable(self.metric):
            return float(self.metric(prediction, asdict(example)))
        from .metrics import METRICS
        if self.metric not in METRICS:
            raise ValueError(f"metric {self.metric!r} is unknown; choose one of {', '.join(METRICS)}.")
        return float(METRICS[self.metric](prediction, asdict(example)))

    @property
    def metric_name(self) -> str:
        return self.metric if isinstance(self.metric, str) else getattr(self.metric, "__name__", "metric")

    def fingerprint(self) -> str:
        payload = [self.name, self.metric_name, self.max_new_tokens, self.chat,
                   [(e.id, e.prompt, e.references) for e in self.examples]]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


# ---- methods and configurations -------------------------------------------------------------------

#: Every curve of the paper's plots: label -> engine options. `alpha` comes from the grid of `rule`
#: (or of `grid` where given); `None` for the two single points.
CURVES: Dict[str, dict] = {
    "Drafter": dict(method="drafter"),
    "Verifier": dict(method="verifier"),
    "SpecDecode": dict(method="speculative", rule="spec"),
    "SeqCascade [Chow]": dict(method="seq_cascade", grid="chow"),
    "TokenCascade [Chow]": dict(method="token_cascade", grid="chow"),
    "SpecDecode [Lossy]": dict(method="speculative", rule="lossy", beta=1.0),
    "Lossy*": dict(method="speculative", rule="lossy", beta="normalize"),
    "BiLD": dict(method="bild", grid="bild_threshold"),
    "BiLD*": dict(method="speculative", rule="bild"),
    "SpecCascade [Chow]": dict(method="speculative", rule="chow"),
    "SpecCascade [Diff]": dict(method="speculative", rule="diff"),
    "SpecCascade [OPT]": dict(method="speculative", rule="opt"),
    "SpecCascade [Token-V1]": dict(method="speculative", rule="token_v1"),
    "SpecCascade [Token-V2]": dict(method="speculative", rule="token_v2"),
    "SpecCascade [Token-V3]": dict(method="speculative", rule="token_v3"),
}
T5_CURVES = list(CURVES)
#: The Gemma plots: speculative execution only (all of it runs batched at gamma = 1).
GEMMA_CURVES = ["Drafter", "Verifier", "SpecDecode", "SpecDecode [Lossy]", "SpecCascade [Chow]",
                "SpecCascade [Diff]", "SpecCascade [OPT]", "SpecCascade [Token-V1]", "SpecCascade [Token-V2]",
                "SpecCascade [Token-V3]"]


def opt_grid(n: int) -> np.ndarray:
    """OPT's alphas for a sweep: sinh-spaced over [-2, 2], dense near 0. Its range is unbounded, but
    OPT defers iff max q < max p - alpha D_TV with every term in [0, 1], so |alpha| > 2 rarely
    changes a decision (`targets.alpha_grid("opt", n)` spans [-50, 50] for the exact curves)."""
    edge = np.arcsinh(2.0)
    return np.sinh(np.linspace(-edge, edge, n))


def bild_thresholds(n: int) -> np.ndarray:
    """BiLD's rollback thresholds on $-\\log p(x)$: geometric from 0.25 (roll back often) to 8 (almost never)."""
    return np.geomspace(0.25, 8.0, n)


@dataclass(frozen=True)
class Config:
    label: str
    method: str
    rule: Optional[str] = None
    alpha: float = 0.0
    beta: Union[float, str] = 1.0
    gamma: int = 5
    temperature: float = 0.0
    bonus: str = "verifier"   # after a fully accepted block; "none" at gamma = 1 is the authors' colab

    @property
    def key(self) -> str:
        key = (f"{self.label}|{self.method}|{self.rule}|{self.alpha:.6g}|{self.beta}|g{self.gamma}"
               f"|T{self.temperature:g}")
        return key if self.bonus == "verifier" else f"{key}|bonus={self.bonus}"

    def engine_options(self) -> dict:
        options = dict(method=self.method, gamma=self.gamma, temperature=self.temperature, alpha=self.alpha)
        if self.method == "speculative":
            options.update(rule=self.rule, beta=self.beta, bonus=self.bonus)
        return options


def sweep_configs(curves: Sequence[str] = T5_CURVES, *, gammas: Sequence[int] = (5,),
                  temperatures: Sequence[float] = (0.0,), n_alpha: int = 5,
                  alphas: Optional[Dict[str, Sequence[float]]] = None, bonus: str = "verifier") -> List[Config]:
    """Every (curve, alpha, gamma, T) to run. `alphas` overrides a curve's grid by label; `bonus`
    is the speculative methods' bonus token (`"none"`: one token per step, for the batched runs)."""
    if n_alpha < 2:
        raise ValueError(f"n_alpha={n_alpha}: a curve needs at least its two ends.")
    unknown = [c for c in curves if c not in CURVES]
    if unknown:
        raise ValueError(f"unknown curves {unknown}; choose from {list(CURVES)}.")
    configs = []
    for temperature in temperatures:
        if temperature < 0:
            raise ValueError(f"temperature={temperature} is negative; use 0 (greedy) or a positive value.")
        for gamma in gammas:
            if gamma < 1:
                raise ValueError(f"gamma={gamma}: the draft block needs at least one token.")
            for label in curves:
                spec = CURVES[label]
                grid_name = spec.get("grid", spec.get("rule"))
                if alphas and label in alphas:
                    grid = list(alphas[label])
                elif spec["method"] in ("drafter", "verifier") or grid_name in ("spec", None):
                    grid = [0.0]
                elif grid_name == "bild_threshold":
                    grid = bild_thresholds(n_alpha).tolist()
                elif grid_name == "opt":
                    grid = opt_grid(n_alpha).tolist()
                else:
                    grid = targets.alpha_grid(grid_name, n_alpha).tolist()
                # gamma does not change plain decoding or the one-call-per-token cascades: run them once
                plain = spec["method"] in ("drafter", "verifier", "token_cascade", "seq_cascade")
                if plain and gamma != gammas[0]:
                    continue
                for alpha in grid:
                    configs.append(Config(label, spec["method"], spec.get("rule"), float(alpha),
                                          spec.get("beta", 1.0), gammas[0] if plain else gamma, float(temperature),
                                          bonus if spec["method"] == "speculative" else "verifier"))
    return configs


# ---- the sweep --------------------------------------------------------------------------------------

def results_dir() -> Path:
    """Where sweeps are saved: `$TUTORIAL_LIB_RESULTS`, else the repository's `data/results/`."""
    if os.environ.get("TUTORIAL_LIB_RESULTS"):
        return Path(os.environ["TUTORIAL_LIB_RESULTS"])
    repo = Path(__file__).resolve().parent.parent
    return (repo if (repo / "pyproject.toml").exists() else Path.cwd()) / "data" / "results"


def _model_id(lm) -> dict:
    """What identifies a model in a sweep's hash: its name, dtype and, for models small enough to
    hash quickly, its weights (so rows of a retrained checkpoint are never mixed with older ones)."""
    ident = {"name": lm.name, "dtype": str(lm.dtype).replace("torch.", "")}
    if not lm.is_toy:
        parameters = list(lm.model.parameters())
        if sum(w.numel() for w in parameters) <= 20_000_000:
            digest = hashlib.sha256()
            for w in parameters:
                digest.update(w.detach().float().cpu().numpy().tobytes())
            ident["weights"] = digest.hexdigest()[:16]
    return ident


@dataclass
class Sweep:
    """Where one run's rows live: `<results>/<name>-<hash>/{config.json, rows.jsonl}`."""
    name: str
    config: dict
    root: Optional[Path] = None

    def __post_init__(self):
        blob = json.dumps(self.config, sort_keys=True, default=str).encode()
        self.hash = hashlib.sha256(blob).hexdigest()[:12]
        self.path = Path(self.root or results_dir()) / f"{self.name}-{self.hash}"

    @property
    def rows_path(self) -> Path:
        return self.path / "rows.jsonl"

    def load(self) -> pd.DataFrame:
        if not self.rows_path.exists():
            return pd.DataFrame()
        rows = []
        for line in self.rows_path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by an interruption: that row is redone
                continue
        return pd.DataFrame(rows).drop_duplicates(["config", "example_id"], keep="last") if rows else pd.DataFrame()

    def done(self) -> set:
        table = self.load()
        return set() if table.empty else set(zip(table["config"], table["example_id"]))

    def _cut_short(self) -> bool:
        """Whether the rows file ends inside a row: only its last byte is read (appends are a hot path)."""
        if not self.rows_path.exists() or self.rows_path.stat().st_size == 0:
            return False
        with open(self.rows_path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"

    def append(self, rows: Iterable[dict]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        config_file = self.path / "config.json"
        if not config_file.exists():
            config_file.write_text(json.dumps({"name": self.name, "hash": self.hash, **self.config},
                                              indent=2, sort_keys=True, default=str))
        if self._cut_short():  # drop a row cut short by an interruption, so appends start on a new line
            data = self.rows_path.read_bytes()
            self.rows_path.write_bytes(data[: data.rfind(b"\n") + 1])
        with open(self.rows_path, "a") as handle:
            for row in rows:
                handle.write(json.dumps(row, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def _row(task: Task, example: Example, config: Config, generation, seed: int) -> dict:
    n_tokens = len(generation.tokens)
    return {
        "task": task.name, "example_id": example.id, "config": config.key, "label": config.label,
        "method": config.method, "rule": config.rule, "alpha": config.alpha, "beta": str(config.beta),
        "gamma": config.gamma, "temperature": config.temperature, "seed": seed,
        "quality": task.score(generation.text, example), "text": generation.text, "n_tokens": n_tokens,
        "n_verifier_calls": generation.n_verifier_calls, "n_drafter_calls": generation.n_drafter_calls,
        "n_drafted": generation.n_drafted, "n_accepted": generation.n_accepted,
        "n_rejected": generation.n_rejected, "deferral_rate": generation.deferral_rate,
        "wall_time_s": generation.wall_time_s, "drafter_time_s": generation.drafter_time_s,
        "verifier_time_s": generation.verifier_time_s,
    }


def _prompt_ids(lm, task: Task, example: Example) -> List[int]:
    return lm.chat_prompt(example.prompt) if task.chat else lm.encode(example.prompt)


def run_sweep(pair, tasks: Union[Task, Sequence[Task]], configs: Sequence[Config], *, name: str,
              seed: int = 0, runner: str = "single", batch_size: int = 16, root: Optional[os.PathLike] = None,
              progress: bool = True, extra_config: Optional[dict] = None, max_rows: Optional[int] = None,
              eos_token_id=None) -> pd.DataFrame:
    """Run every configuration on every example of every task; returns the sweep's whole table.

    `runner="single"` runs `engine.generate` one example at a time (batch size 1: the wall times
    are latencies); `runner="batch"` runs `batch.generate_batch` at `gamma = 1` over `batch_size`
    examples at once, reusing one prefill per chunk for every configuration (the wall time of a row
    is then its share of the batch's time, not a latency). Finished rows are skipped; `max_rows`
    stops after that many new rows (as an interruption would). Example `i` of a task uses seed
    `seed + i` in every configuration (common random numbers across methods).
    """
    from tqdm.auto import tqdm
    tasks = [tasks] if isinstance(tasks, (Task, dict)) else list(tasks)
    tasks = [Task.from_dict(t) for t in tasks]
    if runner not in ("single", "batch"):
        raise ValueError(f"runner={runner!r}; use 'single' (latency at batch size 1) or 'batch' (gamma = 1).")
    drafter, verifier = pair
    sweep = Sweep(name, {"drafter": _model_id(drafter), "verifier": _model_id(verifier), "seed": seed,
                         "runner": runner, "tasks": {t.name: t.fingerprint() for t in tasks},
                         **(extra_config or {})}, root)
    done = sweep.done()
    todo = [(t, c) for t in tasks for c in configs]
    total = sum(len(t.examples) for t, _ in todo)
    bar = tqdm(total=total, desc=name, disable=not progress, unit="example")
    bar.update(sum(1 for t, c in todo for e in t.examples if (c.key, e.id) in done))
    new_rows = 0
    if runner == "single":
        from .engine import generate
        for task, config in todo:
            bar.set_postfix_str(f"{task.name}: {config.label} a={config.alpha:.3g}", refresh=False)
            for i, example in enumerate(task.examples):
                if (config.key, example.id) in done:
                    continue
                if max_rows is not None and new_rows >= max_rows:
                    bar.close()
                    return _requested(sweep, tasks, configs)
                generation = generate(drafter, verifier, _prompt_ids(verifier, task, example),
                                      max_new_tokens=task.max_new_tokens, seed=seed + i,
                                      eos_token_id=eos_token_id, **config.engine_options())
                sweep.append([_row(task, example, config, generation, seed + i)])
                new_rows += 1
                bar.update(1)
    else:
        from .batch import generate_batch, prefill_batch
        prefills: Dict[Tuple[str, int], object] = {}
        for task, config in todo:
            if config.gamma != 1 or config.method not in ("drafter", "verifier", "speculative"):
                raise ValueError(f"runner='batch' runs speculative execution at gamma = 1; {config.key} needs "
                                 "runner='single'.")
            bar.set_postfix_str(f"{task.name}: {config.label} a={config.alpha:.3g}", refresh=False)
            for start in range(0, len(task.examples), batch_size):
                chunk = task.examples[start:start + batch_size]
                if all((config.key, e.id) in done for e in chunk):
                    continue
                if max_rows is not None and new_rows >= max_rows:
                    bar.close()
                    return _requested(sweep, tasks, configs)
                if (task.name, start) not in prefills:
                    prompts = [_prompt_ids(verifier, task, e) for e in chunk]
                    prefills[(task.name, start)] = (prompts, prefill_batch(drafter, verifier, prompts))
                prompts, prefill = prefills[(task.name, start)]
                seeds = [seed + start + j for j in range(len(chunk))]
                if config.method == "speculative" and config.bonus != "none":
                    raise ValueError(f"runner='batch' emits one token per step (bonus='none'); {config.key} asks "
                                     "for a bonus token: build the configurations with bonus='none'.")
                options = config.engine_options()
                options.pop("gamma")
                options.pop("bonus", None)
                generations = generate_batch(drafter, verifier, prompts, prefill=prefill,
                                             seeds=seeds, max_new_tokens=task.max_new_tokens,
                                             eos_token_id=eos_token_id, **options)
                rows = [_row(task, e, config, g, s) for e, g, s in zip(chunk, generations, seeds)
                        if (config.key, e.id) not in done]
                sweep.append(rows)
                new_rows += len(rows)
                bar.update(len(rows))
    bar.close()
    return _requested(sweep, tasks, configs)


def _requested(sweep: Sweep, tasks: Sequence[Task], configs: Sequence[Config]) -> pd.DataFrame:
    """The sweep's rows of these tasks and configurations (a folder may also hold rows of others)."""
    table = sweep.load()
    if not table.empty:
        keys = {c.key for c in configs}
        names = {t.name for t in tasks}
        table = table[table["config"].isin(keys) & table["task"].isin(names)].reset_index(drop=True)
    table.attrs["path"] = str(sweep.path)
    return table


# ---- curves -------------------------------------------------------------------------------------

_GROUP = ["task", "label", "method", "rule", "alpha", "beta", "gamma", "temperature"]


def summarize(rows: pd.DataFrame, *, latency: str = "wall_time_s", cost_ratio: Optional[float] = None) -> pd.DataFrame:
    r"""One point per (task, configuration): mean quality with its 95% interval, relative latency,
    rejection rate, tokens per verifier call and the counters, from a sweep's rows.

    `latency` is the row column to price a configuration with (`wall_time_s`, or `model_time_s`:
    the models' forward passes only, without the engine's own bookkeeping). Latency is relative to
    the verifier alone at the same temperature on the same task.

    With `cost_ratio` $c$, `latency_calls` prices a run by its calls instead of a clock,
    $(\#\text{verifier calls} + c\,\#\text{drafter calls})$ relative to the verifier alone: what the
    same runs would cost where a drafter step costs $c$ verifier calls (notebook 05's cost model).
    """
    if rows.empty:
        raise ValueError("no rows to summarize; run a sweep first.")
    rows = rows.copy()
    rows["model_time_s"] = rows["drafter_time_s"] + rows["verifier_time_s"]
    rows["rule"] = rows["rule"].fillna("-")
    grouped = rows.groupby(_GROUP, dropna=False, sort=False)
    out = grouped.agg(n=("quality", "size"), quality=("quality", "mean"), quality_sd=("quality", "std"),
                      time_s=(latency, "sum"), n_tokens=("n_tokens", "sum"),
                      n_verifier_calls=("n_verifier_calls", "sum"), n_drafter_calls=("n_drafter_calls", "sum"),
                      n_accepted=("n_accepted", "sum"), n_rejected=("n_rejected", "sum"),
                      deferral_rate=("deferral_rate", "mean")).reset_index()
    out["quality_ci"] = 1.96 * out["quality_sd"].fillna(0.0) / np.sqrt(out["n"])
    judged = out["n_accepted"] + out["n_rejected"]
    out["rejection_rate"] = np.where(judged > 0, out["n_rejected"] / judged.where(judged > 0, 1), np.nan)
    out.loc[out["method"] == "drafter", "rejection_rate"] = 0.0
    out.loc[out["method"] == "verifier", "rejection_rate"] = 1.0
    out["tokens_per_call"] = out["n_tokens"] / out["n_verifier_calls"].where(out["n_verifier_calls"] > 0)
    verifier = out[out["method"] == "verifier"].set_index(["task", "temperature"])
    reference_time = verifier["time_s"].groupby(level=[0, 1]).mean()
    reference_quality = verifier["quality"].groupby(level=[0, 1]).mean()
    keys = list(zip(out["task"], out["temperature"]))
    out["verifier_quality"] = [reference_quality.get(k, np.nan) for k in keys]
    out["latency"] = out["time_s"] / np.array([reference_time.get(k, np.nan) for k in keys])
    out["speedup"] = 1.0 / out["latency"]
    if cost_ratio is not None:
        if not cost_ratio >= 0:
            raise ValueError(f"cost_ratio={cost_ratio}: a drafter step costs a non-negative share of a verifier call.")
        calls = out["n_verifier_calls"] + cost_ratio * out["n_drafter_calls"]
        reference_calls = (out[out["method"] == "verifier"].assign(c=calls).groupby(["task", "temperature"])["c"]
                           .mean())
        out["latency_calls"] = calls / np.array([reference_calls.get(k, np.nan) for k in keys])
    return out


def quality_by_group(rows: pd.DataFrame, task: Task, *, group: str = "context",
                     labels: Sequence[str] = ("Drafter", "Verifier"), temperature: Optional[float] = None) -> pd.DataFrame:
    """Mean quality per group of examples (`example.info[group]`) for the given curves' rows: where
    each model wins. Curves with several alphas contribute their best alpha per group. `temperature`
    defaults to the lowest one in the rows."""
    rows = rows[rows["task"] == task.name]
    if rows.empty:
        raise ValueError(f"no rows of task {task.name!r}.")
    temperature = rows["temperature"].min() if temperature is None else temperature
    groups = {e.id: e.info.get(group, "-") for e in task.examples}
    part = rows[(rows["temperature"] == temperature) & rows["label"].isin(labels)].copy()
    part["group"] = part["example_id"].map(groups)
    means = part.groupby(["group", "label", "alpha"])["quality"].mean().groupby(["group", "label"]).max()
    table = means.unstack("label").reindex(columns=[l for l in labels if l in set(part["label"])])
    table["n"] = part.groupby("group")["example_id"].nunique()
    return table


#: Rules whose target at one end of alpha's range is p itself (SpecDecode); every rule's other end is q.
_SPEC_END = {"lossy", "chow", "diff", "opt", "bild", "token_v1", "token_v2"}


def with_rule_ends(summary: pd.DataFrame) -> pd.DataFrame:
    """Each speculative rule's curve extended to the ends of its alpha range, from measured points.

    At the drafter end of every rule the target is $q$ and at the other end (all rules but
    Token-V3, whose $\alpha = 0$ keeps $p$'s argmax) it is $p$. With one token per step
    (`gamma = 1`, no bonus token) those runs *are* the drafter alone and SpecDecode, in
    distribution, so their measured points are added to each rule's curve (`end` = "drafter" /
    "spec"; interior points have `end` = ""). Not for blocks with a bonus token from $p$, where the
    drafter end still takes every (gamma+1)-th token from the verifier.
    """
    summary = summary.copy()
    summary["end"] = ""
    extra = []
    keys = ["task", "temperature", "gamma"]
    for key, part in summary.groupby(keys, sort=False):
        drafter = summary[(summary["method"] == "drafter") & (summary["task"] == key[0])
                          & (summary["temperature"] == key[1])]
        spec = part[part["label"] == "SpecDecode"]
        for label in part.loc[(part["method"] == "speculative") & (part["rule"] != "spec"), "label"].unique():
            rule = part.loc[part["label"] == label, "rule"].iloc[0]
            for end, rows in (("drafter", drafter), ("spec", spec if rule in _SPEC_END else spec.iloc[0:0])):
                if len(rows):
                    row = rows.iloc[0].copy()
                    row["label"], row["rule"], row["gamma"], row["end"] = label, rule, key[2], end
                    extra.append(row)
    return pd.concat([summary, pd.DataFrame(extra)], ignore_index=True) if extra else summary


def _curve(points: pd.DataFrame, x: str) -> Tuple[np.ndarray, np.ndarray]:
    points = points.sort_values([x, "quality"])
    return points[x].to_numpy(float), points["quality"].to_numpy(float)


def crossing_latency(latency: Sequence[float], quality: Sequence[float], target: float) -> Optional[float]:
    """The smallest latency at which the curve (sorted by latency, linearly interpolated) reaches `target`."""
    order = np.argsort(np.asarray(latency, float), kind="stable")
    xs, ys = np.asarray(latency, float)[order], np.asarray(quality, float)[order]
    if len(xs) == 0:
        return None
    if ys[0] >= target:
        return float(xs[0])
    for (x0, y0), (x1, y1) in zip(zip(xs[:-1], ys[:-1]), zip(xs[1:], ys[1:])):
        if y0 < target <= y1:
            return float(x0 + (target - y0) / (y1 - y0) * (x1 - x0))
    return None


def best_quality_within(latency: Sequence[float], quality: Sequence[float], budget: float) -> Optional[float]:
    """The best quality of the interpolated curve at latencies up to `budget` (None if all are slower)."""
    order = np.argsort(np.asarray(latency, float), kind="stable")
    xs, ys = np.asarray(latency, float)[order], np.asarray(quality, float)[order]
    inside = ys[xs <= budget]
    if len(inside) == 0:
        return None
    best = float(inside.max())
    for (x0, y0), (x1, y1) in zip(zip(xs[:-1], ys[:-1]), zip(xs[1:], ys[1:])):
        if x0 <= budget < x1:  # the segment that crosses the budget contributes its value there
            best = max(best, float(y0 + (budget - x0) / (x1 - x0) * (y1 - y0)))
    return best


def paper_table(summary: pd.DataFrame, *, x: str = "latency", reference: float = 1.0) -> pd.DataFrame:
    """The paper's table per (task, T, gamma, method): (i) the reduction of `x` at which the method
    first matches the verifier's quality, (ii) the best quality it reaches with `x <= reference`.

    Rows are the methods' curves; `x` is `latency` (T5) or `rejection_rate` (Gemma).
    """
    rows = []
    for (task, temperature), part in summary.groupby(["task", "temperature"], sort=False):
        verifier = part[part["method"] == "verifier"]
        if verifier.empty:
            raise ValueError(f"task {task!r} at T={temperature} has no verifier-only rows; include 'Verifier'.")
        target = float(verifier["quality"].mean())
        for (label, gamma), curve in part.groupby(["label", "gamma"], sort=False):
            if label == "Verifier":
                continue
            xs, ys = _curve(curve, x)
            crossing = crossing_latency(xs, ys, target)
            best = best_quality_within(xs, ys, reference)
            rows.append({"task": task, "temperature": temperature, "gamma": gamma, "method": label,
                         "verifier_quality": target,
                         f"{x}_reduction_at_verifier_quality": (NOT_REACHED if crossing is None
                                                                 else 1.0 - crossing / reference),
                         f"best_quality_at_{x}<=verifier": NOT_REACHED if best is None else best,
                         "best_minus_verifier": np.nan if best is None else best - target})
    return pd.DataFrame(rows)


# ---- plots ----------------------------------------------------------------------------------------

def plot_curves(summary: pd.DataFrame, *, x: str = "latency", task: Optional[str] = None,
                temperature: Optional[float] = None, gamma: Optional[int] = None, ax=None,
                quality_label: str = "quality", labels: Optional[Sequence[str]] = None):
    """Quality against `x` (`latency` relative to the verifier, or `rejection_rate`), one line per
    method over its alpha grid, 95% intervals as error bars, the verifier's quality dashed."""
    import matplotlib.pyplot as plt
    import seaborn as sns
    from .plotting import FIGURE_SIZE
    part = summary
    if task is not None:
        part = part[part["task"] == task]
    if temperature is not None:
        part = part[part["temperature"] == temperature]
    if gamma is not None:  # plain decoding and the sequential cascades were run once, at the first gamma
        part = part[(part["gamma"] == gamma) | part["method"].isin(["drafter", "verifier", "token_cascade",
                                                                      "seq_cascade"])]
    if part.empty:
        raise ValueError("nothing to plot for that task / temperature / gamma.")
    if ax is None:
        _, ax = plt.subplots(figsize=FIGURE_SIZE)
    order = [l for l in (labels or CURVES) if l in set(part["label"])]
    colors = dict(zip(order, sns.color_palette("tab20", len(order))))
    markers = "os^vD<>phX*P+x1"
    for i, label in enumerate(order):
        curve = part[part["label"] == label].sort_values(x)
        style = dict(color=colors[label], marker=markers[i % len(markers)], markersize=4, linewidth=1.2,
                     label=label, capsize=2, elinewidth=0.6)
        if label.startswith("SpecCascade [Token"):
            style["linewidth"] = 2.0
        ax.errorbar(curve[x], curve["quality"], yerr=curve["quality_ci"], **style)
    reference = part.loc[part["method"] == "verifier", "quality"].mean()
    ax.axhline(reference, color="black", linestyle="--", linewidth=1, label="verifier quality")
    if x.startswith("latency"):
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel({"latency": "latency (verifier = 1)", "rejection_rate": "rejection rate",
                   "latency_calls": "cost in calls (verifier = 1)"}.get(x, x), fontsize=8)
    ax.set_ylabel(quality_label)
    ax.legend(fontsize=6, ncol=2, loc="best")
    return ax
