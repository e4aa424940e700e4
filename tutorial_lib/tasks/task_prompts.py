"""The few-shot prompts shared by the hub benchmarks and the offline task sets.

A prompt is one user message: the kind's instruction, the shot blocks (query and answer), then the
evaluated item's query, ending in the label the model completes ("Answer:", "German:", "Solution:").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "INSTRUCTIONS",
    "few_shot_prompt",
    "code_query",
    "code_answer",
    "question_query",
    "entry_point_of",
    "completion_query",
]

INSTRUCTIONS = {
    "translation": "Translate the English sentence into German. Reply with the German translation only.",
    "summary": "Summarize the news article in a few short highlight sentences.",
    "math": (
        'Solve the math word problem. Show brief working, then end with "The answer is N." '
        "where N is the final number."
    ),
    "code": (
        "You are an expert Python programmer. Write a Python function for the task. Your code "
        "should pass the tests shown. Reply with the code in a single ```python block."
    ),
    "reading": (
        "Answer the question with a short span copied from the passage. If the passage does "
        'not contain the answer, reply "unanswerable".'
    ),
    "open_qa": "Answer the question with a short answer of a few words, nothing else.",
    # HumanEval: the prompt is the function's signature and docstring, to be completed. The whole function
    # comes back (a chat model restates it anyway), but without the docstring and without an explanation:
    # restated docstrings average 190 tokens per function (tokens of prompt + canonical solution), the
    # bodies 54, and every token of a reply is decoded under every configuration of a sweep.
    "code_completion": (
        "You are an expert Python programmer. Complete the Python function below. Reply with the "
        "complete function (its imports, signature and body; leave out the docstring) in a "
        "single ```python block, with no explanation."
    ),
}


def few_shot_prompt(kind: str, shot_blocks: Sequence[str], query: str) -> str:
    """The instruction of `kind` (a key of INSTRUCTIONS), the shot blocks and the query, blank-line
    separated."""
    return "\n\n".join([INSTRUCTIONS[kind], *shot_blocks, query])


def code_query(text: str, tests: Sequence[str]) -> str:
    return f"Task: {text.strip()}\nYour code should pass these tests:\n" + "\n".join(tests) + "\nSolution:"


def code_answer(code: str) -> str:
    return "\n```python\n" + code.strip("\n").replace("\r\n", "\n") + "\n```"


def completion_query(prompt: str) -> str:
    """A code prompt to complete (HumanEval's signature and docstring), as a fenced block."""
    return "```python\n" + prompt.strip("\n") + "\n```"


def question_query(question: str) -> str:
    return f"Question: {question.strip()}\nAnswer:"


_NOT_ENTRY_POINTS = {
    "assert",
    "not",
    "set",
    "sorted",
    "list",
    "tuple",
    "dict",
    "str",
    "int",
    "float",
    "abs",
    "round",
    "len",
    "sum",
    "max",
    "min",
    "isinstance",
    "type",
    "frozenset",
    "bool",
    "all",
    "any",
}


def entry_point_of(tests: Sequence[str]) -> str | None:
    """The function a problem's tests call (the first call that is not a builtin or a module attribute)."""
    for test in tests:
        for name in re.findall(r"([A-Za-z_][\w.]*)\s*\(", test):
            if "." not in name and name not in _NOT_ENTRY_POINTS:
                return name
    return None
