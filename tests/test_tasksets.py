"""The offline task sets are right, and the hub task builders make the right prompts (fake datasets)."""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tutorial_lib.tasks import arithmetic_problems, hub_tasks, metrics, task_prompts, tasksets
from tutorial_lib.tasks.sandbox import run_python

# --------------------------------------------------------------------------------------------------
# Offline sets
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(tasksets.OFFLINE_FILES))  # humaneval: tests/test_humaneval.py
def test_offline_sets_have_enough_unique_items_and_separate_shots(name):
    records = tasksets.read_offline_records(name)
    shots = [r for r in records if r["split"] == "shot"]
    evaluated = [r for r in records if r["split"] == "test"]
    assert len(shots) + len(evaluated) == len(records)
    assert len(evaluated) >= 40 and len(shots) >= 3
    task = tasksets.offline_task(name)
    assert task["name"] == name and task["metric"] in metrics.METRICS and task["max_new_tokens"] > 0
    ids = [example["id"] for example in task["examples"]]
    assert len(ids) == len(set(ids)) == len(evaluated)
    # the text each shot contributes appears in every prompt, and no shot is an evaluated item
    question_key = {
        "code": "text",
        "arithmetic": "question",
        "arithmetic-300": "question",
        "facts": "question",
    }[name]
    shot_texts = {r[question_key] for r in shots}
    assert not shot_texts & {r[question_key] for r in evaluated}
    for example in task["examples"]:
        assert all(text in example["prompt"] for text in shot_texts)
        assert example["references"] and all(
            isinstance(ref, str) and ref.strip() for ref in example["references"]
        )
    assert len(tasksets.offline_task(name, 5)["examples"]) == 5
    assert tasksets.offline_task(name, 1, shots=0)["examples"][0]["prompt"].count("Answer:") <= 1


def test_every_reference_solution_passes_its_own_tests():
    problems = [r for r in tasksets.read_offline_records("code")]
    assert len({r["task_id"] for r in problems}) == len(problems)

    def check(record):
        assert len(record["test_list"]) == 3 and all(t.startswith("assert ") for t in record["test_list"])
        return record["task_id"], run_python(
            record["code"], record["test_list"], setup=record["test_setup_code"]
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = {
            task_id: result.reason for task_id, result in pool.map(check, problems) if not result.passed
        }
    assert failures == {}


def test_code_examples_carry_what_the_metric_needs():
    task = tasksets.offline_task("code")
    example = task["examples"][0]
    assert set(example["info"]) >= {"tests", "setup", "entry_point"}
    assert example["prompt"].endswith("Solution:") and example["info"]["entry_point"] in example["prompt"]
    assert metrics.METRICS["mbpp"]("```python\n" + example["references"][0] + "\n```", example) == 1.0
    assert metrics.METRICS["mbpp"]("```python\ndef nothing():\n    pass\n```", example) == 0.0


# The answer of each template, recomputed from its drawn numbers independently of the generator.
FORMULAS = {
    "packs": lambda v: v["packs"] * v["per_pack"] - v["given"],
    "savings": lambda v: v["weekly"] * v["weeks"] - v["spent"],
    "sharing": lambda v: v["total"] // v["friends"] + v["extra"],
    "bakery": lambda v: v["trays"] * v["per_tray"] - v["morning"] - v["afternoon"],
    "train": lambda v: v["speed"] * v["hours"] + v["extra"],
    "change": lambda v: v["bill"] - v["count"] * v["price"],
    "ages": lambda v: (v["age"] + v["older"]) * v["times"],
    "garden": lambda v: (v["rows"] * v["per_row"] - v["died"]) // v["boxes"],
    "reading": lambda v: v["pages"] - v["per_day"] * v["days"],
    "marbles": lambda v: 3 * v["red"] - v["lost"],
    "tickets": lambda v: v["adults"] * v["adult"] + v["children"] * v["child"],
    "temperature": lambda v: v["noon"] - v["evening_drop"] - v["night_drop"],
    "wages": lambda v: (v["monday"] + v["tuesday"]) * v["wage"],
}


def test_every_arithmetic_answer_is_right():
    assert set(FORMULAS) == set(arithmetic_problems.ARITHMETIC_TEMPLATES)
    records = tasksets.read_offline_records("arithmetic-300")  # holds arithmetic.jsonl's records too
    assert {r["template"] for r in records} == set(FORMULAS)  # every template is used
    for record in records:
        values, answer = record["values"], record["answer"]
        assert FORMULAS[record["template"]](values) == answer, record["id"]
        assert (
            arithmetic_problems.evaluate_integer_expression(record["expression"]) == answer
        )  # exact: no rounding of "/"
        for expression, value in record["steps"]:
            assert arithmetic_problems.evaluate_integer_expression(expression) == value, (
                record["id"],
                expression,
            )
        assert record["steps"][-1][1] == answer
        assert metrics.extract_number(record["solution"]) == answer
        assert record["solution"].endswith(f"The answer is {answer}.")
        assert all(str(number) in record["question"] for number in values.values())
        if record["template"] == "sharing":  # the divisions are exact
            assert values["total"] % values["friends"] == 0
        if record["template"] == "garden":
            assert (values["rows"] * values["per_row"] - values["died"]) % values["boxes"] == 0


def test_committed_arithmetic_files_are_what_the_generator_writes(tmp_path):
    committed = (tasksets.TASKS_DIR / "arithmetic.jsonl").read_text(encoding="utf-8")
    assert committed == arithmetic_problems.arithmetic_jsonl_text()
    large = (tasksets.TASKS_DIR / "arithmetic_300.jsonl").read_text(encoding="utf-8")
    assert large == arithmetic_problems.arithmetic_jsonl_text(arithmetic_problems.ARITHMETIC_LARGE_COUNT)
    written = tasksets.write_offline_tasks(tmp_path)
    assert [path.read_text(encoding="utf-8") for path in written] == [committed, large]


def test_the_large_arithmetic_set_extends_the_committed_one_line_for_line():
    # the runs of arithmetic.jsonl keep their 60 items; arithmetic-300 starts with the same shots and items
    small = (tasksets.TASKS_DIR / "arithmetic.jsonl").read_text(encoding="utf-8").splitlines()
    large = (tasksets.TASKS_DIR / "arithmetic_300.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(small) == arithmetic_problems.ARITHMETIC_SHOTS + arithmetic_problems.ARITHMETIC_COUNT
    assert len(large) == arithmetic_problems.ARITHMETIC_SHOTS + 300
    assert large[: len(small)] == small
    assert len(tasksets.offline_task("arithmetic")["examples"]) == 60
    assert len(tasksets.offline_task("arithmetic-300")["examples"]) == 300
    large_prompts = [e["prompt"] for e in tasksets.offline_task("arithmetic-300")["examples"]]
    assert large_prompts[:60] == [e["prompt"] for e in tasksets.offline_task("arithmetic")["examples"]]
    assert len(set(large_prompts)) == 300


def test_arithmetic_generator_is_seeded_and_distinct():
    first = arithmetic_problems.make_arithmetic_problems(30, seed=7)
    assert first == arithmetic_problems.make_arithmetic_problems(30, seed=7)
    assert first != arithmetic_problems.make_arithmetic_problems(30, seed=8)
    assert len({p["question"] for p in first}) == 30
    with pytest.raises(ValueError):
        arithmetic_problems.make_arithmetic_problems(-1, seed=0)


def test_arithmetic_and_facts_scoring_round_trip():
    arithmetic = tasksets.offline_task("arithmetic", 3)
    for example in arithmetic["examples"]:
        assert metrics.METRICS["gsm8k"](example["info"]["solution"], example) == 1.0
    facts = tasksets.offline_task("facts")
    for example in facts["examples"]:
        assert metrics.METRICS["qa_em"](example["references"][0], example) == 1.0
        assert all(metrics.normalize_answer(answer) for answer in example["references"])


def test_bad_names_and_sizes_raise():
    with pytest.raises(ValueError, match="unknown offline task"):
        tasksets.offline_task("poems")
    with pytest.raises(ValueError, match="unknown hub task"):
        hub_tasks.hub_task("imagenet", 3)
    with pytest.raises(ValueError, match="shots must be between"):
        tasksets.offline_task("facts", shots=99)
    with pytest.raises(ValueError, match="positive int"):
        tasksets.offline_task("facts", 0)


def test_postprocess():
    assert tasksets.postprocess("facts", "Answer: Paris\nQuestion: next") == "Paris"
    assert tasksets.postprocess("trivia_qa", "  **Rome**  ") == "Rome"
    assert (
        tasksets.postprocess("arithmetic", "2 + 2 = 4. The answer is 4.\n\nQuestion: more")
        == "2 + 2 = 4. The answer is 4."
    )
    assert tasksets.postprocess("code", "```python\nx = 1\n```") == "x = 1"
    assert tasksets.postprocess("wmt14", "German: Hallo Welt\nEnglish: x") == "Hallo Welt"
    assert tasksets.postprocess("cnn_dailymail", "Summary: One.\nTwo.\n\nArticle: next") == "One.\nTwo."


@pytest.mark.parametrize(
    "task_name, metric, reply, example",
    [
        ("facts", "qa_em", "Answer: **Paris**\nQuestion: next", {"references": ["Paris"], "info": {}}),
        ("trivia_qa", "qa_f1", "the Paris.\n\nQuestion: x", {"references": ["Paris"], "info": {}}),
        (
            "squad_v2",
            "squad_v2",
            "Unanswerable.\n\nPassage: x",
            {"references": [], "info": {"no_answer": True}},
        ),
        (
            "wmt",
            "bleu",
            "German: Das Haus ist klein.\nEnglish: more",
            {"references": ["Das Haus ist klein."], "info": {}},
        ),
        (
            "cnn_dm",
            "rouge2",
            "Summary: police arrest two men\n\nArticle: x",
            {"references": ["police arrest two men"], "info": {}},
        ),
        (
            "arithmetic",
            "gsm8k",
            "3 * 4 = 12. The answer is 12.\n\nQuestion: 99",
            {"references": ["12"], "info": {}},
        ),
        (
            "code",
            "mbpp",
            "Use it like this:\n```python\nprint(add(1, 2))\n```\n"
            "```python\ndef add(a, b):\n    return a + b\n```",
            {
                "references": [""],
                "info": {"tests": ["assert add(1, 2) == 3"], "setup": "", "entry_point": "add"},
            },
        ),
    ],
)
def test_postprocessing_before_scoring_changes_nothing(task_name, metric, reply, example):
    """A harness may post-process replies before scoring; the scorers clean them the same way."""
    raw = metrics.METRICS[metric](reply, example)
    assert raw == metrics.METRICS[metric](tasksets.postprocess(task_name, reply), example)
    assert raw == pytest.approx(metrics.METRIC_MAX[metric])


# --------------------------------------------------------------------------------------------------
# Hub tasks, with `datasets.load_dataset` replaced by small in-memory datasets
# --------------------------------------------------------------------------------------------------

FAKE_ROWS = {
    "wmt/wmt14": lambda i: {"translation": {"en": f"English sentence {i}.", "de": f"Deutscher Satz {i}."}},
    "abisee/cnn_dailymail": lambda i: {
        "article": f"Article body {i}. More text.",
        "highlights": f"Point {i}.\nSecond point {i}.",
        "id": f"cnn{i}",
    },
    "openai/gsm8k": lambda i: {
        "question": f"Question number {i}?",
        "answer": f"Half of {2 * i} is <<{2 * i}/2={i}>>{i}.\n#### {i},000",
    },
    "google-research-datasets/mbpp": lambda i: {
        "task_id": i,
        "text": f"Write a function to return {i}.",
        "code": f"def give_{i}():\n    return {i}\n",
        "test_list": [
            f"assert give_{i}() == {i}",
            f"assert give_{i}() + 1 == {i + 1}",
            f"assert isinstance(give_{i}(), int)",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    "rajpurkar/squad_v2": lambda i: {
        "id": f"sq{i}",
        "title": "T",
        "context": f"Context {i} says the value is v{i}.",
        "question": f"What is value {i}?",
        "answers": {"text": [f"v{i}", f"v{i}"] if i % 2 else [], "answer_start": [0, 0] if i % 2 else []},
    },
    "stanfordnlp/web_questions": lambda i: {
        "url": "u",
        "question": f"webq {i}?",
        "answers": [f"answer {i}", f"alias {i}"],
    },
    "google-research-datasets/nq_open": lambda i: {
        "question": f"nq question {i}",
        "answer": [f"nq answer {i}"],
    },
    "mandarjoshi/trivia_qa": lambda i: {
        "question": f"trivia {i}?",
        "question_id": f"tq{i}",
        "answer": {
            "value": f"Value {i}",
            "aliases": [f"Value {i}", f"Other {i}"],
            "normalized_aliases": [],
            "normalized_value": "",
        },
    },
}
SPLIT_OFFSET = {"train": 1000, "test": 0, "validation": 0, "prompt": 500}
# WMT and CNN/DM evaluate test and take shots from validation: number those rows apart too.
VALIDATION_AS_SHOTS = {"wmt/wmt14", "abisee/cnn_dailymail"}


@pytest.fixture
def fake_hub(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        make = FAKE_ROWS[path]
        offset = 2000 if (path in VALIDATION_AS_SHOTS and split == "validation") else SPLIT_OFFSET[split]
        return datasets.Dataset.from_list([make(offset + i) for i in range(8)])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("name", sorted(hub_tasks.HUB_TASKS))
def test_hub_task_builds_prompts_from_the_dataset(fake_hub, name):
    spec = hub_tasks.HUB_TASKS[name]
    task = hub_tasks.hub_task(name, 3, seed=1, shots=2)
    assert (
        task["name"] == name
        and task["metric"] == spec.metric
        and task["max_new_tokens"] == spec.max_new_tokens
    )
    assert (spec.dataset, spec.config, spec.eval_split) in fake_hub
    assert (spec.dataset, spec.config, spec.shot_split) in fake_hub
    examples = task["examples"]
    assert 1 <= len(examples) <= 3 and len({e["id"] for e in examples}) == len(examples)
    for example in examples:
        prompt = example["prompt"]
        assert prompt.startswith(task_prompts.INSTRUCTIONS[spec.kind])
        blocks = prompt.split("\n\n")
        assert len(blocks) >= 4  # instruction, two shots, the query
        query = blocks[-1]
        assert query.endswith(("German:", "Summary:", "Answer:", "Solution:"))
        # shots come from the shot split (rows numbered from 1000 or 2000, or 500 for MBPP's prompt split)
        shot_text = "\n\n".join(blocks[1:-1])
        assert any(str(number) in shot_text for number in range(500, 2010))


def test_hub_prompt_contents(fake_hub):
    wmt = hub_tasks.hub_task("wmt14", 2, shots=1)
    example = wmt["examples"][0]
    assert example["prompt"].splitlines()[-1] == "German:"
    source = example["info"]["source"]
    assert f"English: {source}\nGerman:" in example["prompt"] and example["references"] == [
        source.replace("English sentence", "Deutscher Satz")
    ]

    gsm = hub_tasks.hub_task("gsm8k", 2, shots=1)
    assert "<<" not in gsm["examples"][0]["prompt"]  # calculator annotations removed from the shots
    assert re.search(
        r"Answer: Half of \d+ is 10\d\d\. The answer is 10\d\d000\.\n", gsm["examples"][0]["prompt"]
    )
    assert all(e["references"][0].endswith("000") and "," not in e["references"][0] for e in gsm["examples"])

    mbpp = hub_tasks.hub_task("mbpp", 2, shots=3)
    example = mbpp["examples"][0]
    assert example["info"]["entry_point"].startswith("give_") and len(example["info"]["tests"]) == 3
    assert example["prompt"].count("Solution:\n```python") == 3  # MBPP's prompt split supplies the shots
    assert "give_501" in example["prompt"]  # the second prompt-split problem first, as in MBPP's convention
    assert metrics.METRICS["mbpp"]("```python\n" + example["references"][0] + "```", example) == 1.0

    squad = hub_tasks.hub_task("squad_v2", None, shots=2)
    assert len(squad["examples"]) == 8
    no_answer = [e for e in squad["examples"] if e["info"]["no_answer"]]
    assert no_answer and all(e["references"] == [] for e in no_answer)
    assert all(
        len(e["references"]) == 1 for e in squad["examples"] if not e["info"]["no_answer"]
    )  # deduplicated
    assert "Answer: unanswerable" in squad["examples"][0]["prompt"]  # one shot of each kind
    assert metrics.METRICS["squad_v2"]("unanswerable", no_answer[0]) == 1.0

    trivia = hub_tasks.hub_task("triviaqa", 2, shots=1)
    assert (
        trivia["examples"][0]["references"][0].startswith("Value")
        and len(trivia["examples"][0]["references"]) == 2
    )

    nq = hub_tasks.hub_task("naturalqa", 2, shots=0)
    assert nq["examples"][0]["prompt"].endswith("?\nAnswer:") and nq["shots"] == 0


def test_hub_sampling_is_seeded(fake_hub):
    first = [e["id"] for e in hub_tasks.hub_task("web_questions", 4, seed=3)["examples"]]
    assert first == [e["id"] for e in hub_tasks.hub_task("web_questions", 4, seed=3)["examples"]]
    assert first != [e["id"] for e in hub_tasks.hub_task("web_questions", 4, seed=4)["examples"]]


def test_hub_shots_never_come_from_evaluated_items(fake_hub):
    task = hub_tasks.hub_task("web_questions", 4, split="train", shots=3)  # evaluating the shot split itself
    for example in task["examples"]:
        question = example["info"]["question"]
        assert example["prompt"].count(question) == 1


def test_unreachable_hub_names_the_offline_sets(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(hub_tasks.HubUnavailableError, match="offline_task"):
        hub_tasks.hub_task("gsm8k", 5)


def test_load_task_dispatches(fake_hub):
    assert tasksets.load_task("facts", 2)["name"] == "facts"
    assert tasksets.load_task("gsm8k", 2, shots=1)["name"] == "gsm8k"
