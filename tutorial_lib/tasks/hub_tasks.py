"""The eight benchmarks of the paper's Gemma experiments, loaded from the Hugging Face hub.

`hub_task(name, n, split=..., seed=..., shots=...)` builds one through `datasets.load_dataset`
(needs the hub; `HubUnavailableError` says to use the offline sets when it is out of reach). Each
benchmark is a `HubSpec`: its hub id (`namespace/name`), config, evaluated and shot splits, prompt
blocks, references and metric. Shots come from a split that is never evaluated: train; validation
where the test split is evaluated and train is huge (WMT14's 4.5M pairs, CNN/DM's 287k articles);
MBPP's prompt split.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from .task_prompts import code_answer, code_query, entry_point_of, few_shot_prompt, question_query

__all__ = [
    "HubUnavailableError",
    "HubSpec",
    "HUB_TASKS",
    "HUB_ALIASES",
    "hub_spec",
    "hub_task",
    "first_of_each_id",
]

#: The offline sets, named in the errors that say what to use without the hub (see `tasksets`).
OFFLINE_NAMES = ("arithmetic", "code", "facts")


class HubUnavailableError(RuntimeError):
    """A hub dataset could not be loaded (no network, no hub access, unknown split...)."""


def _unique(texts) -> list[str]:
    seen, result = set(), []
    for text in texts:
        if isinstance(text, str) and text.strip() and text not in seen:
            seen.add(text)
            result.append(text)
    return result


def _gsm8k_final(answer: str) -> str:
    return answer.split("####")[-1].strip().replace(",", "")


def _gsm8k_worked(answer: str) -> str:
    """A GSM8K training answer as a shot: calculator annotations <<...>> removed, "#### N" as
    "The answer is N."."""
    reasoning = re.sub(r"<<[^>]*>>", "", answer.split("####")[0]).strip()
    return " ".join(reasoning.split()) + f" The answer is {_gsm8k_final(answer)}."


def _squad_answers(row: dict) -> list[str]:
    return _unique(row["answers"]["text"])


def _trivia_answers(row: dict) -> list[str]:
    answer = row["answer"]
    return _unique([answer.get("value"), *answer.get("aliases", [])])


@dataclass(frozen=True)
class HubSpec:
    """How one benchmark is loaded and prompted."""

    name: str
    dataset: str  # hub id
    config: str | None
    eval_split: str
    shot_split: str
    default_shots: int
    kind: str  # key of INSTRUCTIONS
    metric: str
    metrics: tuple[str, ...]
    max_new_tokens: int
    query: Callable[[dict], str]  # the item's block, ending in the label the model completes
    shot_answer: Callable[[dict], str]  # what follows the query in a shot block
    references: Callable[[dict], list[str]]
    info: Callable[[dict], dict]
    row_id: Callable[[dict, int], str]
    id_column: str | None = (
        None  # the dataset's own item id, where it has one (rows repeating it are dropped)
    )


def _mbpp_info(row: dict) -> dict:
    tests = list(row["test_list"])
    return {
        "tests": tests,
        "setup": row.get("test_setup_code", "") or "",
        "entry_point": entry_point_of(tests),
        "task_id": row.get("task_id"),
    }


HUB_TASKS: dict[str, HubSpec] = {
    spec.name: spec
    for spec in (
        HubSpec(
            "wmt",
            "wmt/wmt14",
            "de-en",
            "test",
            "validation",
            3,
            "translation",
            "bleu",
            ("bleu",),
            128,
            query=lambda row: f"English: {row['translation']['en'].strip()}\nGerman:",
            shot_answer=lambda row: " " + row["translation"]["de"].strip(),
            references=lambda row: [row["translation"]["de"].strip()],
            info=lambda row: {"source": row["translation"]["en"]},
            row_id=lambda row, index: f"wmt14-{index}",
        ),
        HubSpec(
            "cnn_dm",
            "abisee/cnn_dailymail",
            "3.0.0",
            "test",
            "validation",
            1,
            "summary",
            "rouge2",
            ("rouge2",),
            128,
            query=lambda row: f"Article: {row['article'].strip()}\nSummary:",
            shot_answer=lambda row: " " + " ".join(row["highlights"].split()),
            references=lambda row: [row["highlights"].strip()],
            info=lambda row: {},
            row_id=lambda row, index: str(row.get("id", f"cnn_dm-{index}")),
            id_column="id",
        ),
        HubSpec(
            "gsm8k",
            "openai/gsm8k",
            "main",
            "test",
            "train",
            4,
            "math",
            "gsm8k",
            ("gsm8k",),
            192,
            query=lambda row: question_query(row["question"]),
            shot_answer=lambda row: " " + _gsm8k_worked(row["answer"]),
            references=lambda row: [_gsm8k_final(row["answer"])],
            info=lambda row: {"question": row["question"]},
            row_id=lambda row, index: f"gsm8k-{index}",
        ),
        HubSpec(
            "mbpp",
            "google-research-datasets/mbpp",
            "full",
            "test",
            "prompt",
            3,
            "code",
            "mbpp",
            ("mbpp",),
            192,
            query=lambda row: code_query(row["text"], row["test_list"]),
            shot_answer=lambda row: code_answer(row["code"]),
            references=lambda row: [row["code"]],
            info=_mbpp_info,
            row_id=lambda row, index: f"mbpp-{row.get('task_id', index)}",
            id_column="task_id",
        ),
        HubSpec(
            "squad_v2",
            "rajpurkar/squad_v2",
            None,
            "validation",
            "train",
            2,
            "reading",
            "squad_v2",
            ("squad_v2", "squad_v2_em"),
            24,
            query=lambda row: (
                f"Passage: {row['context'].strip()}\nQuestion: {row['question'].strip()}\nAnswer:"
            ),
            shot_answer=lambda row: " " + (_squad_answers(row) or ["unanswerable"])[0],
            references=_squad_answers,
            info=lambda row: {"no_answer": not _squad_answers(row), "title": row.get("title")},
            row_id=lambda row, index: str(row.get("id", f"squad_v2-{index}")),
            id_column="id",
        ),
        HubSpec(
            "web_questions",
            "stanfordnlp/web_questions",
            None,
            "test",
            "train",
            5,
            "open_qa",
            "qa_em",
            ("qa_em", "qa_f1", "qa_contains"),
            16,
            query=lambda row: question_query(row["question"]),
            shot_answer=lambda row: " " + _unique(row["answers"])[0],
            references=lambda row: _unique(row["answers"]),
            info=lambda row: {"question": row["question"]},
            row_id=lambda row, index: f"web_questions-{index}",
        ),
        HubSpec(
            "nq_open",
            "google-research-datasets/nq_open",
            "nq_open",
            "validation",
            "train",
            5,
            "open_qa",
            "qa_em",
            ("qa_em", "qa_f1", "qa_contains"),
            16,
            query=lambda row: question_query(row["question"].strip().rstrip("?") + "?"),
            shot_answer=lambda row: " " + _unique(row["answer"])[0],
            references=lambda row: _unique(row["answer"]),
            info=lambda row: {"question": row["question"]},
            row_id=lambda row, index: f"nq_open-{index}",
        ),
        HubSpec(
            "trivia_qa",
            "mandarjoshi/trivia_qa",
            "rc.nocontext",
            "validation",
            "train",
            5,
            "open_qa",
            "qa_em",
            ("qa_em", "qa_f1", "qa_contains"),
            16,
            query=lambda row: question_query(row["question"]),
            shot_answer=lambda row: " " + _trivia_answers(row)[0],
            references=_trivia_answers,
            info=lambda row: {"question": row["question"]},
            # rc.nocontext validation joins the web and Wikipedia files: question ids repeat
            row_id=lambda row, index: str(row.get("question_id", f"trivia_qa-{index}")),
            id_column="question_id",
        ),
    )
}

HUB_ALIASES = {
    "wmt14": "wmt",
    "wmt_en_de": "wmt",
    "wmt14_en_de": "wmt",
    "cnn_dailymail": "cnn_dm",
    "cnndm": "cnn_dm",
    "cnn/dm": "cnn_dm",
    "mbpp_full": "mbpp",
    "squad2": "squad_v2",
    "squad_2.0": "squad_v2",
    "squad2.0": "squad_v2",
    "webquestions": "web_questions",
    "webq": "web_questions",
    "naturalqa": "nq_open",
    "natural_questions": "nq_open",
    "nq": "nq_open",
    "naturalquestions": "nq_open",
    "triviaqa": "trivia_qa",
    "tqa": "trivia_qa",
}


def hub_spec(name: str) -> HubSpec:
    """The `HubSpec` of a benchmark name or alias ("wmt14", "cnn_dailymail", "naturalqa", "triviaqa", ...)."""
    if not isinstance(name, str):
        raise ValueError(f"task name must be a str, got {name!r}")
    key = HUB_ALIASES.get(name.lower(), name.lower())
    if key not in HUB_TASKS:
        raise ValueError(
            f"unknown hub task {name!r}; choose one of {sorted(HUB_TASKS)} "
            f"(aliases: {sorted(HUB_ALIASES)}) or an offline task {list(OFFLINE_NAMES)}"
        )
    return HUB_TASKS[key]


def _load_split(spec: HubSpec, split: str):
    try:
        import datasets
    except ImportError as error:
        raise HubUnavailableError(
            "the `datasets` package is not installed; `pip install datasets`, or use the "
            "offline task sets: offline_task('code'|'arithmetic'|'facts')"
        ) from error
    arguments = (spec.dataset,) if spec.config is None else (spec.dataset, spec.config)
    try:
        return datasets.load_dataset(*arguments, split=split)
    except Exception as error:  # noqa: BLE001 - any failure here means "the hub is not usable from here"
        where = spec.dataset + (f" ({spec.config})" if spec.config else "")
        raise HubUnavailableError(
            f"could not load {where}, split {split!r}, from the Hugging Face hub: "
            f"{type(error).__name__}: {error}. "
            "Without network access to the hub use the offline task sets instead: "
            "offline_task('code'), offline_task('arithmetic') or offline_task('facts')."
        ) from error


def _pick_shots(spec: HubSpec, rows, count: int, rng: random.Random, exclude: set[int]) -> list[dict]:
    candidates = [index for index in range(len(rows)) if index not in exclude]
    if count > len(candidates):
        raise ValueError(
            f"{spec.name}: asked for {count} shots but the {spec.shot_split!r} split has "
            f"{len(candidates)} usable rows; ask for fewer shots"
        )
    if spec.name == "mbpp" and spec.shot_split == "prompt":
        # MBPP's own few-shot convention: the prompt split's problems in order (task ids 2, 3, 4 ...).
        chosen = candidates[1 : 1 + count] if len(candidates) > count else candidates[:count]
        return [rows[index] for index in chosen]
    if spec.name == "squad_v2" and count >= 2:
        # Show both kinds of question: half the shots unanswerable.
        answerable, unanswerable = [], []
        for index in rng.sample(candidates, len(candidates)):
            bucket = answerable if _squad_answers(rows[index]) else unanswerable
            bucket.append(index)
            if len(unanswerable) >= count // 2 and len(answerable) >= count - count // 2:
                break
        chosen = unanswerable[: count // 2] + answerable[: count - count // 2]
        if len(chosen) == count:
            rng.shuffle(chosen)
            return [rows[index] for index in chosen]
    return [rows[index] for index in rng.sample(candidates, count)]


def hub_task(
    name: str, n: int | None = 100, *, split: str | None = None, seed: int = 0, shots: int | None = None
) -> dict:
    """A benchmark of the paper's Gemma experiments, loaded with `datasets.load_dataset`.

    `name`: "wmt" (WMT14 EN->DE), "cnn_dm", "gsm8k", "mbpp", "squad_v2", "web_questions", "nq_open"
    (NaturalQA), "trivia_qa" (or an alias). `n`: a seeded random sample of n items of the evaluation
    split (`split`, default the spec's: test, or validation where the test answers are hidden);
    None takes them all, in order. `shots`: few-shot examples per prompt (default per task), drawn
    with `seed` from the shot split, never from the evaluated items. Raises HubUnavailableError,
    naming the offline sets, when the hub cannot be reached."""
    spec = hub_spec(name)
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
        raise ValueError(f"n must be a positive int or None (the whole split), got {n!r}")
    shots = spec.default_shots if shots is None else shots
    if not isinstance(shots, int) or shots < 0:
        raise ValueError(f"shots must be a non-negative int, got {shots!r}")
    split = split or spec.eval_split
    rows = _load_split(spec, split)
    candidates = first_of_each_id(spec, rows)  # before sampling: a sample never repeats an item
    if n is None or n >= len(candidates):
        indices = candidates
    else:
        indices = random.Random(seed).sample(candidates, n)
    shot_rows_source = (
        rows if spec.shot_split == split else (_load_split(spec, spec.shot_split) if shots else [])
    )
    exclude = set(indices) if spec.shot_split == split else set()
    # A separate stream for the shots, so the shots do not change with n.
    shot_rows = (
        _pick_shots(spec, shot_rows_source, shots, random.Random(f"shots-{seed}"), exclude) if shots else []
    )
    shot_blocks = [spec.query(row) + spec.shot_answer(row) for row in shot_rows]
    examples = []
    for index in indices:
        row = rows[index]
        references = spec.references(row)
        info = spec.info(row)
        if not references and not info.get("no_answer"):
            continue  # an item without any answer cannot be scored
        examples.append(
            {
                "id": spec.row_id(row, index),
                "prompt": few_shot_prompt(spec.kind, shot_blocks, spec.query(row)),
                "references": references,
                "info": info,
            }
        )
    source = f"{spec.dataset}" + (f" ({spec.config})" if spec.config else "") + f", {split} split"
    return {
        "name": spec.name,
        "metric": spec.metric,
        "metrics": list(spec.metrics),
        "max_new_tokens": spec.max_new_tokens,
        "source": source,
        "shots": shots,
        "examples": examples,
        "repeated_ids_dropped": len(rows) - len(candidates),
    }


def first_of_each_id(spec: HubSpec, rows) -> list[int]:
    """The indices of `rows` whose item id (`spec.id_column`) has not appeared before: TriviaQA's
    rc.nocontext validation, for one, lists a question once per evidence file."""
    names = getattr(rows, "column_names", None) or []
    if spec.id_column is None or spec.id_column not in names:
        return list(range(len(rows)))
    seen, keep = set(), []
    for index, value in enumerate(rows[spec.id_column]):
        if value not in seen:
            seen.add(value)
            keep.append(index)
    return keep
