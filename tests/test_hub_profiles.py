"""The hub profiles, checked before anyone with a network meets them: ids, schemas, duplicates, input cuts."""

import re

import pytest

from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Task
from tutorial_lib.tasks import hub_tasks
from tutorial_lib.sweeps import reruns

NAMESPACE_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def test_every_hub_id_is_namespace_slash_name():
    ids = [spec.dataset for spec in hub_tasks.HUB_TASKS.values()]
    ids += [spec["path"] for spec in reruns.T5_HUB_DATASETS.values()]
    for profile in (reruns.T5_PROFILES["hub"], reruns.GEMMA_PROFILES["hub"]):
        ids += [profile["drafter"], profile["verifier"]]
    assert ids and all(NAMESPACE_NAME.match(i) for i in ids), [i for i in ids if not NAMESPACE_NAME.match(i)]
    assert reruns.T5_HUB_DATASETS["xsum"]["revision"] == "refs/convert/parquet"


def _trivia_rows(n_questions):
    """TriviaQA rc.nocontext validation as the hub serves it: a question once per evidence file, so
    question ids repeat (the web and Wikipedia files joined)."""
    rows = []
    for i in range(n_questions):
        for _ in range(1 + i % 3):
            rows.append(
                {
                    "question": f"Who is {i}?",
                    "question_id": f"tc_{i}",
                    "question_source": "http://x",
                    "entity_pages": {"doc_source": [], "filename": [], "title": [], "wiki_context": []},
                    "search_results": {
                        "description": [],
                        "filename": [],
                        "rank": [],
                        "title": [],
                        "url": [],
                        "search_context": [],
                    },
                    "answer": {
                        "aliases": [f"Person {i}", f"P{i}"],
                        "normalized_aliases": [f"person {i}"],
                        "matched_wiki_entity_name": "",
                        "normalized_matched_wiki_entity_name": "",
                        "normalized_value": f"person {i}",
                        "type": "WikipediaEntity",
                        "value": f"Person {i}",
                    },
                }
            )
    return rows


@pytest.fixture
def fake_trivia(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split))
        assert (path, name) == ("mandarjoshi/trivia_qa", "rc.nocontext")
        return datasets.Dataset.from_list(_trivia_rows(40 if split == "validation" else 10))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_triviaqa_repeated_question_ids_are_dropped_before_sampling(fake_trivia):
    task = hub_tasks.hub_task("trivia_qa", 30, seed=0, shots=2)
    ids = [e["id"] for e in task["examples"]]
    assert len(ids) == 30 == len(set(ids))  # without the fix a draw of 30 of 79 rows repeats
    assert task["repeated_ids_dropped"] == len(_trivia_rows(40)) - 40
    whole = hub_tasks.hub_task("trivia_qa", None, shots=0)
    assert [e["id"] for e in whole["examples"]] == [
        f"tc_{i}" for i in range(40)
    ]  # the first of each, in order
    # and the harness takes it as a task (it refuses repeated ids)
    task = Task.from_dict(task)
    assert len(task.examples) == 30


def test_sampling_is_unchanged_where_no_id_repeats(monkeypatch):
    datasets = pytest.importorskip("datasets")
    rows = [{"question": f"q{i}", "answer": [f"a{i}"]} for i in range(50)]
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: datasets.Dataset.from_list(rows))
    import random

    expected = random.Random(7).sample(range(50), 5)
    task = hub_tasks.hub_task("nq_open", 5, seed=7, shots=0)
    assert [e["info"]["question"] for e in task["examples"]] == [f"q{i}" for i in expected]
    assert task["repeated_ids_dropped"] == 0


class _WordModel:
    """Just enough of an engine model for `prompt_ids`: one id per word, then end-of-sequence (1)."""

    class tokenizer:
        eos_token_id = 1

    def encode(self, text):
        return [10 + i for i, _ in enumerate(text.split())] + [1]


def test_inputs_are_cut_in_the_models_tokens_keeping_the_end_of_sequence():
    task = Task(
        "t",
        "bleu",
        [{"id": "a", "prompt": "one two three four five", "references": ["x"]}],
        max_input_tokens=4,
    )
    assert ev.prompt_ids(_WordModel(), task, task.examples[0]) == [10, 11, 12, 1]
    whole = Task("t", "bleu", task.examples)
    assert ev.prompt_ids(_WordModel(), whole, task.examples[0]) == [10, 11, 12, 13, 14, 1]
    assert task.fingerprint() != whole.fingerprint() and task.head(1).max_input_tokens == 4
    with pytest.raises(ValueError, match="at least 2"):
        Task("t", "bleu", task.examples, max_input_tokens=1)
    with pytest.raises(ValueError, match="chat prompt"):
        Task("t", "bleu", task.examples, max_input_tokens=8, chat=True)


def test_the_t5_hub_profile_cuts_inputs_as_the_paper(monkeypatch):
    datasets = pytest.importorskip("datasets")
    long = " ".join(["word"] * 2000)
    monkeypatch.setattr(
        datasets,
        "load_dataset",
        lambda path, name=None, **kwargs: datasets.Dataset.from_dict(
            {"document": [long], "summary": ["s"], "id": ["1"]}
        ),
    )
    task = reruns.t5_hub_task("xsum", 1)
    assert task.max_input_tokens == 1024
    assert len(ev.prompt_ids(_WordModel(), task, task.examples[0])) == 1024


def test_a_gated_gemma_says_how_to_get_access(monkeypatch):
    from tutorial_lib.models import adapter

    def refuse(*args, **kwargs):
        raise OSError("401 Client Error: access to model google/gemma-2-9b-it is restricted")

    monkeypatch.setattr(adapter, "load_pair", refuse)  # what reruns.load_gemma_pair calls
    with pytest.raises(OSError, match="HF_TOKEN"):
        reruns.load_gemma_pair(reruns.gemma_profile("hub"))
