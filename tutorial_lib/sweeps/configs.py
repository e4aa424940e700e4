r"""What a sweep runs: tasks (examples, a metric, a prompt format) and configurations (a curve's method, rule,
$\alpha$, $\beta$, $\gamma$, $T$), with the curves of the paper's two evaluations (`CURVES`, `T5_CURVES`,
`GEMMA_CURVES`) and `sweep_configs`, which lays a curve over its alpha grid. Every argument is checked when
a `Task` or `Config` is built, so a bad one fails before any row is computed. `evaluation` runs them.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ..maths import rules, targets
from .identity import alpha_text, beta_text
from ..checks import check_gamma, check_real, check_temperature, check_whole_number

__all__ = [
    "Example",
    "Task",
    "Config",
    "CURVES",
    "T5_CURVES",
    "GEMMA_CURVES",
    "sweep_configs",
    "opt_grid",
    "bild_thresholds",
    "check_run_name",
    "RUN_NAME",
    "sequence_argument",
]


# ---- tasks ----------------------------------------------------------------------------------------


@dataclass
class Example:
    """One item of a task. `prompt` is text with something besides white space, or a non-empty list of
    token ids; `references` a list of strings (a bare string would be read as its characters)."""

    id: str
    prompt: str
    references: List[str]
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        where = f"example {self.id!r}"
        if isinstance(self.prompt, str):
            if not self.prompt.strip():
                raise ValueError(
                    f"{where} has an empty prompt ({self.prompt!r}); give it some text, or "
                    "leave the example out (a model cannot answer nothing)."
                )
        elif (
            isinstance(self.prompt, (bytes, dict, set))
            or self.prompt is None
            or not isinstance(self.prompt, (list, tuple, np.ndarray))
        ):
            raise TypeError(
                f"{where} has prompt={self.prompt!r:.60}; pass text, or a list of token ids "
                "such as [3, 5, 7]."
            )
        else:
            if len(self.prompt) == 0:
                raise ValueError(
                    f"{where} has an empty list of token ids as its prompt; give at least one "
                    "id, or a text prompt."
                )
            for token in self.prompt:
                try:
                    check_whole_number(token, f"{where}: prompt token id", 0, "token ids start at 0")
                except (TypeError, ValueError) as error:
                    raise type(error)(f"{error} (a prompt given as ids holds whole numbers >= 0)") from None
        if isinstance(self.references, (str, bytes)):
            raise TypeError(
                f"{where} has references={self.references!r:.60}, a string, which would be read "
                f"as its characters; pass a list, e.g. references=[{self.references!r:.40}]."
            )

    @classmethod
    def from_dict(cls, item: Union["Example", dict]) -> "Example":
        if isinstance(item, Example):
            return item
        if not isinstance(item, dict) or "id" not in item or "prompt" not in item:
            raise TypeError(
                f"an example is an Example or a dict with 'id' and 'prompt'; got {str(item)[:80]}."
            )
        if isinstance(item["id"], bool) or not isinstance(item["id"], (str, int, np.integer)):
            raise TypeError(
                f"example id={item['id']!r} is a {type(item['id']).__name__}; pass a string (or an int, "
                "which is written as its decimal string)."
            )
        references = item.get("references", [])
        if not isinstance(references, (str, bytes)):  # (a string: refused by Example, not split into letters)
            references = list(references)
        return cls(str(item["id"]), item["prompt"], references, dict(item.get("info", {})))


@dataclass
class Task:
    """Prompts with references and a metric: a name from `tutorial_lib.tasks.metrics.METRICS`, or a function
    `(prediction, example_dict) -> float`.

    `chat=True` sends each prompt as one user message in the model's chat template (instruction-tuned
    decoder-only models); otherwise the prompt text is encoded as it is (T5's task prefixes).
    `max_input_tokens` cuts a plain prompt to its first tokens in the model's own tokenizer (the
    final end-of-sequence token kept), as the paper cuts T5's inputs; None keeps it whole.
    """

    name: str
    metric: Union[str, Callable[[str, dict], float]]
    examples: List[Example]
    max_new_tokens: int = 64
    chat: bool = False
    postprocess: Optional[Callable[[str], str]] = None
    max_input_tokens: Optional[int] = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Task name={self.name!r}: give a non-empty string.")
        if isinstance(self.metric, str):
            from ..tasks.metrics import METRICS

            if self.metric not in METRICS:
                raise ValueError(
                    f"Task metric={self.metric!r} is unknown; choose one of {', '.join(METRICS)} or pass "
                    "a function (prediction, example_dict) -> float."
                )
        elif not callable(self.metric):
            raise TypeError(
                f"Task metric={self.metric!r}: give a name from tutorial_lib.tasks.metrics.METRICS or a "
                "function (prediction, example_dict) -> float."
            )
        self.max_new_tokens = check_whole_number(
            self.max_new_tokens, "max_new_tokens", 1, "a task asks for at least one new token"
        )
        if not isinstance(self.chat, (bool, np.bool_)):
            raise TypeError(f"Task chat={self.chat!r}: pass True or False.")
        self.chat = bool(self.chat)
        if self.postprocess is not None and not callable(self.postprocess):
            raise TypeError(f"Task postprocess={self.postprocess!r}: pass a function str -> str, or None.")
        if isinstance(self.examples, (str, bytes, dict)):
            raise TypeError(
                "Task examples: give a list of examples (dicts or Example), "
                f"not a {type(self.examples).__name__}."
            )
        if self.max_input_tokens is not None and not isinstance(self.max_input_tokens, bool):
            try:
                self.max_input_tokens = check_whole_number(self.max_input_tokens, "max_input_tokens")
            except (TypeError, ValueError):
                pass  # named just below, with what to pass
        if self.max_input_tokens is not None:
            if (
                isinstance(self.max_input_tokens, bool)
                or not isinstance(self.max_input_tokens, int)
                or self.max_input_tokens < 2
            ):
                raise ValueError(
                    f"max_input_tokens={self.max_input_tokens!r}: give an int of at least 2, or None."
                )
            if self.chat:
                raise ValueError(
                    "max_input_tokens cuts plain prompts; a chat prompt would lose its template's end. "
                    "Shorten the messages instead."
                )
        self.examples = [Example.from_dict(e) for e in self.examples]
        if not self.examples:
            raise ValueError(f"task {self.name!r} has no examples; give at least one.")
        if self.chat:
            ids = [e.id for e in self.examples if not isinstance(e.prompt, str)]
            if ids:
                raise TypeError(
                    f"task {self.name!r} has chat=True but example {ids[0]!r} gives token ids; a "
                    "chat prompt is the user's message as text (or pass chat=False to send the "
                    "ids)."
                )
        ids = [e.id for e in self.examples]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task {self.name!r} has repeated example ids; make them unique.")

    @classmethod
    def from_dict(cls, task: Union["Task", dict], **overrides) -> "Task":
        if isinstance(task, Task):
            return task
        fields = {
            k: task[k]
            for k in (
                "name",
                "metric",
                "examples",
                "max_new_tokens",
                "chat",
                "postprocess",
                "max_input_tokens",
            )
            if k in task
        }
        fields.update(overrides)
        return cls(**fields)

    def head(self, n: Optional[int]) -> "Task":
        """The first `n` examples (all of them for `None`)."""
        if n is not None:  # a negative n would silently drop the last examples (a slice)
            n = check_whole_number(n, "n", 1, "a task keeps at least one example; None keeps all")
        return (
            self
            if n is None
            else Task(
                self.name,
                self.metric,
                self.examples[:n],
                self.max_new_tokens,
                self.chat,
                self.postprocess,
                self.max_input_tokens,
            )
        )

    def score(self, text: str, example: Example) -> float:
        """The metric's score of `text` for `example`: a finite number, or ValueError naming the metric."""
        prediction = self.postprocess(text) if self.postprocess is not None else text
        if callable(self.metric):
            value = self.metric(prediction, asdict(example))
        else:
            from ..tasks.metrics import METRICS

            if self.metric not in METRICS:
                raise ValueError(f"metric {self.metric!r} is unknown; choose one of {', '.join(METRICS)}.")
            value = METRICS[self.metric](prediction, asdict(example))
        try:
            quality = check_real(value, "quality", finite=True)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"the metric {self.metric_name!r} of task {self.name!r} returned {value!r} for example "
                f"{example.id!r}; a metric returns a finite number (use 0.0 for a failure)."
            ) from error
        return quality

    @property
    def metric_name(self) -> str:
        return self.metric if isinstance(self.metric, str) else getattr(self.metric, "__name__", "metric")

    def fingerprint(self) -> str:
        payload = [
            self.name,
            self.metric_name,
            self.max_new_tokens,
            self.chat,
            [(e.id, e.prompt, e.references) for e in self.examples],
        ]
        if (
            self.max_input_tokens is not None
        ):  # only where set: the fingerprints of saved runs stay as they were
            payload.append({"max_input_tokens": self.max_input_tokens})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


# ---- methods and configurations -------------------------------------------------------------------

#: The curves that are not a rule's own: the sequential cascades, Lossy* and the original BiLD.
_OTHER_CURVES: Dict[str, dict] = {
    "SeqCascade [Chow]": dict(method="seq_cascade", grid="chow"),
    "TokenCascade [Chow]": dict(method="token_cascade", grid="chow"),
    "Lossy*": dict(method="speculative", rule="lossy", beta="normalize"),
    "BiLD": dict(method="bild", grid="bild_threshold"),
}


def _curves() -> Dict[str, dict]:
    """label -> engine options: each rule's curve in `rules.RULE_TABLE` (the drafter and the verifier alone,
    SpecDecode and every speculative rule, registered ones included), then `_OTHER_CURVES`."""
    out = {}
    for record in rules.RULE_TABLE.values():
        if record.curve is None:
            continue
        if record.name in ("drafter", "verifier"):
            out[record.curve] = dict(method=record.name)
        else:
            out[record.curve] = dict(method="speculative", rule=record.name)
    return {**out, **_OTHER_CURVES}


#: Every curve of the paper's plots: label -> engine options. `alpha` comes from the grid of `rule`
#: (or of `grid` where given); `None` for the two single points.
#: A live view of the rule table: a rule registered later is a curve too.
CURVES = rules.TableMapping(_curves)
#: The T5 plots: every curve of the paper's Figure 2, in the order the T5 run lays them out.
T5_CURVES = [
    "Drafter",
    "Verifier",
    "SpecDecode",
    "SeqCascade [Chow]",
    "TokenCascade [Chow]",
    "SpecDecode [Lossy]",
    "Lossy*",
    "BiLD",
    "BiLD*",
    "SpecCascade [Chow]",
    "SpecCascade [Diff]",
    "SpecCascade [OPT]",
    "SpecCascade [Token-V1]",
    "SpecCascade [Token-V2]",
    "SpecCascade [Token-V3]",
]
#: The Gemma plots: speculative execution only (all of it runs batched at gamma = 1).
GEMMA_CURVES = [
    "Drafter",
    "Verifier",
    "SpecDecode",
    "SpecDecode [Lossy]",
    "SpecCascade [Chow]",
    "SpecCascade [Diff]",
    "SpecCascade [OPT]",
    "SpecCascade [Token-V1]",
    "SpecCascade [Token-V2]",
    "SpecCascade [Token-V3]",
]


#: The gamma that lets the engine choose each block's size (`decoding.gamma_policy`).
AUTO_GAMMA = "auto"


def opt_grid(n: int, temperature: float = 1.0) -> np.ndarray:
    """OPT's alphas for a sweep: `n` evenly spaced over its live range, [-1, 1] at T = 1 (where
    |max p - max q| <= D_TV(p, q), so OPT never defers for alpha >= 1 and always, where p != q, for
    alpha < -1) and at T = 0 (its TV term is on one-hot laws, so OPT(alpha) emits Diff(alpha)'s
    tokens). At other T the range depends on the laws: ValueError (see `alpha_grids.opt_live_range`)."""
    from ..maths.alpha_grids import live_alpha_grid

    return live_alpha_grid("opt", n, temperature)


def bild_thresholds(n: int) -> np.ndarray:
    """BiLD's rollback thresholds on $-\\log p(x)$: geometric from 0.25 (roll back often) to 8 (almost
    never)."""
    return np.geomspace(0.25, 8.0, n)


@dataclass(frozen=True)
class Config:
    r"""One point of a curve. `alpha` is the curve's parameter: the rule's alpha, except for
    `method="bild"` (the original BiLD), where it is the rollback threshold on $-\log p$, passed to
    the engine as `bild_threshold` (the rows keep it in their `alpha` column, so one column orders
    every curve)."""

    label: str
    method: str
    rule: Optional[str] = None
    alpha: float = 0.0
    beta: Union[float, str] = 1.0
    gamma: Union[int, str] = 5  # or "auto": the engine picks each block's size (method="speculative")
    temperature: float = 0.0
    bonus: str = "verifier"  # after a fully accepted block; "none" at gamma = 1 is the authors' colab

    def __post_init__(self):
        from ..decoding.options import BONUS_OPTIONS, check_generate_options

        if not isinstance(self.label, str) or not self.label or "|" in self.label:
            raise ValueError(
                f"Config label={self.label!r}: give a non-empty string without '|' (it is part of the "
                "row key), e.g. a name from configs.CURVES."
            )
        object.__setattr__(self, "alpha", check_real(self.alpha, "alpha", finite=True))
        if isinstance(self.beta, str):
            if self.beta != "normalize":
                raise ValueError(
                    f"Config beta={self.beta!r}: pass a number (>= 1 - alpha for rule='lossy') or "
                    "'normalize' (Lossy*)."
                )
        else:
            object.__setattr__(self, "beta", check_real(self.beta, "beta", finite=True))
        auto = isinstance(self.gamma, str) and self.gamma == AUTO_GAMMA
        if not auto:
            object.__setattr__(self, "gamma", check_gamma(self.gamma))
        object.__setattr__(self, "temperature", check_temperature(self.temperature))
        if self.bonus not in BONUS_OPTIONS:
            raise ValueError(
                f"Config bonus={self.bonus!r} is unknown; use one of {', '.join(BONUS_OPTIONS)}."
            )
        if auto and self.method != "speculative":
            raise ValueError(
                f"Config gamma='auto' with method={self.method!r}: 'auto' chooses the block "
                "size of method='speculative' only; pass a whole number gamma."
            )
        if auto and self.bonus != "verifier":
            raise ValueError(
                f"Config gamma='auto' with bonus={self.bonus!r}: 'auto' prices blocks that end "
                "with the verifier's bonus token; pass bonus='verifier' or a whole number "
                "gamma."
            )
        if (
            self.method != "speculative"
            and self.rule is not None
            and not (self.method in ("token_cascade", "seq_cascade") and self.rule == "chow")
        ):
            raise ValueError(
                f"Config rule={self.rule!r} with method={self.method!r}: only method='speculative' runs "
                "a rule here; pass rule=None."
            )
        options = {k: v for k, v in self.engine_options().items() if k != "beta"}  # beta: checked above
        if auto:
            options["gamma"] = 1  # the rest of the options are checked as for any block size
        check_generate_options(**options, max_new_tokens=1)  # method, rule and alpha, named there
        if (
            self.method == "speculative"
            and self.rule == "lossy"
            and not isinstance(self.beta, str)
            and not (self.beta >= 1.0 - self.alpha - 1e-12 and self.beta > 0)
        ):
            raise ValueError(
                f"Config beta={self.beta} is below 1 - alpha = {1 - self.alpha:.6g} for rule='lossy'; "
                "pass beta >= 1 - alpha, or beta='normalize'."
            )

    @property
    def key(self) -> str:
        """The configuration's key in its rows: its label, method, rule, alpha and beta (each named by its
        `exact_value`: 6 significant digits where those are exact, else the rounded float's digits),
        gamma, temperature and bonus. Alphas that differ within 10 significant digits are one
        configuration; any other two alphas never share a key."""
        key = (
            f"{self.label}|{self.method}|{self.rule}|{alpha_text(self.alpha)}|{beta_text(self.beta)}"
            f"|g{self.gamma}|T{self.temperature:g}"
        )
        return key if self.bonus == "verifier" else f"{key}|bonus={self.bonus}"

    def engine_options(self) -> dict:
        options = dict(method=self.method, gamma=self.gamma, temperature=self.temperature)
        if self.method == "bild":
            options["bild_threshold"] = self.alpha
        else:
            options["alpha"] = self.alpha
        if self.method == "speculative":
            options.update(rule=self.rule, beta=self.beta, bonus=self.bonus)
        return options


def sweep_configs(
    curves: Sequence[str] = T5_CURVES,
    *,
    gammas: Sequence[int] = (5,),
    temperatures: Sequence[float] = (0.0,),
    n_alpha: int = 5,
    alphas: Optional[Dict[str, Sequence[float]]] = None,
    bonus: str = "verifier",
) -> List[Config]:
    """Every (curve, alpha, gamma, T) to run. A rule's grid is `n_alpha` evenly spaced alphas over its
    live range, both ends included (`targets.alpha_grid`; OPT's `opt_grid` at each T); `alphas`
    overrides a curve's grid by label (e.g. alphas placed along a pilot curve by
    `alpha_grids.placed_alphas`), for every temperature (a list) or per temperature (`{0.0: [...],
    1.0: [...]}`; an empty list leaves the curve out at that temperature, where its runs would only
    repeat another curve's, e.g. Lossy at T = 0 is SpecDecode); `bonus` is the speculative methods' bonus
    token (`"none"`: one token per step, for the batched runs).

    A gamma of `"auto"` (as `Config` and `generate` take it) runs the speculative curves with the block size
    the engine picks before each block (`gamma_policy`; needs the paper's bonus token, `bonus="verifier"`);
    the curves it does not size (BiLD's fixed blocks; plain decoding and the cascades, which ignore gamma)
    run at the whole-number gammas, or at `Config`'s default gamma (5) where `gammas` holds only "auto".
    The speculative rows record `gamma="auto"`."""
    curves = sequence_argument(curves, "curves", "['Drafter', 'Verifier']")
    gammas = sequence_argument(gammas, "gammas", "[5]")
    temperatures = sequence_argument(temperatures, "temperatures", "[0.0, 1.0]")
    n_alpha = check_whole_number(n_alpha, "n_alpha", 2, "a curve needs at least its two ends")
    if bonus not in ("verifier", "target", "none"):
        raise ValueError(f"bonus={bonus!r} is unknown; use 'verifier' (the paper), 'target' or 'none'.")
    if alphas is not None:
        if not isinstance(alphas, dict):
            raise TypeError(
                f"alphas={alphas!r}: pass a dict from a curve's label to its alphas, e.g. "
                "{'SpecCascade [Chow]': [0.1, 0.5]}."
            )
        alphas = {label: _alphas_by_temperature(grid, label) for label, grid in alphas.items()}
        unknown = [label for label in alphas if label not in CURVES]
        if unknown:
            raise ValueError(f"alphas names unknown curves {unknown}; choose from {list(CURVES)}.")
    unknown = [c for c in curves if c not in CURVES]
    if unknown:
        raise ValueError(f"unknown curves {unknown}; choose from {list(CURVES)}.")
    for values, name in ((curves, "curves"), (gammas, "gammas"), (temperatures, "temperatures")):
        if not values:  # an empty list would give an empty sweep, which runs nothing and says nothing
            raise ValueError(
                f"{name}=[]: pass at least one, e.g. {name}="
                f"{dict(curves=['Drafter'], gammas=[5], temperatures=[0.0])[name]}."
            )
    gammas = [
        gamma if isinstance(gamma, str) and gamma == AUTO_GAMMA else check_gamma(gamma) for gamma in gammas
    ]
    fixed = [gamma for gamma in gammas if gamma != AUTO_GAMMA]
    # where gammas holds only "auto": Config's own default block for the curves "auto" does not size
    fallback = fixed[0] if fixed else Config.__dataclass_fields__["gamma"].default
    configs = []
    for temperature in map(check_temperature, temperatures):
        for gamma in gammas:
            for label in curves:
                spec = CURVES[label]
                grid_name = spec.get("grid", spec.get("rule"))
                if alphas and label in alphas and (None in alphas[label] or temperature in alphas[label]):
                    # an empty list: the curve is not run at this temperature (its runs would repeat
                    # another's)
                    grid = list(alphas[label].get(temperature, alphas[label].get(None)))
                elif spec["method"] in ("drafter", "verifier") or grid_name in ("spec", None):
                    grid = [0.0]
                elif grid_name == "bild_threshold":
                    grid = bild_thresholds(n_alpha).tolist()
                elif grid_name == "opt":
                    grid = opt_grid(n_alpha, temperature).tolist()
                else:
                    grid = targets.alpha_grid(grid_name, n_alpha).tolist()
                # gamma does not change plain decoding or the one-call-per-token cascades: run them once
                plain = spec["method"] in ("drafter", "verifier", "token_cascade", "seq_cascade")
                if plain and gamma != gammas[0]:
                    continue
                if gamma == AUTO_GAMMA and spec["method"] != "speculative" and not plain:
                    if fixed:
                        continue  # a fixed-block curve (BiLD) runs at the whole-number gammas
                    block = fallback
                else:
                    block = fallback if plain else gamma  # (plain decoding ignores it)
                for alpha in grid:
                    configs.append(
                        Config(
                            label,
                            spec["method"],
                            spec.get("rule"),
                            float(alpha),
                            spec.get("beta", 1.0),
                            block,
                            float(temperature),
                            bonus if spec["method"] == "speculative" else "verifier",
                        )
                    )
    return configs


def _alphas_by_temperature(grid, label: str) -> Dict[Optional[float], List[float]]:
    """One curve's `alphas`: a list (every temperature, key None) or `{temperature: list}` (a temperature
    not named falls back to the curve's default grid)."""
    where = f"alphas[{label!r}]"
    if isinstance(grid, dict):
        return {
            check_temperature(float(t)): [
                check_real(a, f"{where}[{t!r}]", finite=True)
                for a in sequence_argument(g, f"{where}[{t!r}]", "[0.1, 0.5]")
            ]
            for t, g in grid.items()
        }
    return {None: [check_real(a, where, finite=True) for a in sequence_argument(grid, where, "[0.1, 0.5]")]}


def sequence_argument(value, name: str, example: str) -> list:
    """`value` as a list: a list, tuple, range or 1-d array; a string (e.g. papermill's `-p` text) is refused
    with the form to pass instead."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name}={value!r} is a string; pass a list, e.g. {name}={example}.")
    if isinstance(value, np.ndarray) and value.ndim == 1 or isinstance(value, (list, tuple, range)):
        return list(value)
    raise TypeError(f"{name}={value!r} is a {type(value).__name__}; pass a list, e.g. {name}={example}.")


#: What a run's name may hold: it names a folder inside the results folder, never a path out of it.
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_run_name(name) -> str:
    """A sweep's name: letters, digits, '.', '_' and '-', starting with a letter or digit (so it stays a
    folder inside the results folder)."""
    if not isinstance(name, str) or not RUN_NAME.fullmatch(name):
        raise ValueError(
            f"name={name!r} is not a run name; use letters, digits, '.', '_' and '-' only, starting "
            "with a letter or digit (e.g. name='t5-offline'): the run's folder must stay inside the "
            "results folder."
        )
    return name
