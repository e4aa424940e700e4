"""Quality metrics of the eight Gemma benchmarks of the paper, and of the three offline task sets.

Where a standard package exists it computes the number; nothing here re-implements it:

- BLEU (WMT EN->DE): `sacrebleu` (Post 2018, "A Call for Clarity in Reporting BLEU Scores"), with its
  defaults: 13a tokenisation, `BLEU = BP * exp(sum_n 1/4 log p_n)` over n = 1..4 with brevity
  penalty `BP = min(1, exp(1 - r/c))`. `bleu` is corpus BLEU (`sacrebleu.corpus_bleu`, several
  references per item allowed); `sentence_bleu` is `sacrebleu.sentence_bleu` (exponential smoothing),
  the per-example score. Scale 0-100, as sacrebleu reports it. A set of items is scored by corpus
  BLEU, never the mean of sentence BLEU: `bleu_statistics` keeps each item's n-gram counts (sacrebleu's
  own sufficient statistics), so a resampled set is rescored by `bleu_from_statistics` without
  re-tokenising (`paired`).
- ROUGE-2 (CNN/DM): `rouge_score.rouge_scorer` (Google's reimplementation of Lin 2004), bigram
  F-measure `F = 2PR / (P + R)` with Porter stemming, as the summarisation papers report it; with
  several references, the best one. Scale 0-1.
- Everything else is 0 or 1 per example (F1 in [0, 1]), and is short enough to write out:

  - GSM8K answer extraction (`extract_number`): the number after "####" (the dataset's own answer
    format), else after "The answer is" (the format of the chain-of-thought prompts of Wei et al.
    2022, which our few-shot prompts teach), else the last number in the text.
    `numeric_match` compares it with the reference: `abs(x - y) <= 1e-6`.
  - SQuAD 2.0 (`squad_em`, `squad_f1`): the official evaluation script, "Official evaluation script
    for SQuAD version 2.0" (`evaluate-v2.0.py`, Rajpurkar et al. 2018); `normalize_answer`,
    `_token_f1` and the no-answer rule follow it line by line. Normalisation: lower-case, drop
    punctuation, drop the articles a/an/the, collapse whitespace. Token F1 over the bag of
    normalised tokens, `F1 = 2PR / (P + R)`, 1 when both are empty; the maximum over gold answers.
    A question without an answer has the single gold answer "", so a prediction scores 1 exactly
    when it normalises to "". Because an instruct model says "unanswerable" rather than nothing,
    a prediction that normalises to one of `NO_ANSWER_PHRASES` counts as "" (our addition; the
    prompts ask for "unanswerable").
  - Open QA (WebQuestions, NaturalQA, TriviaQA, offline facts): the same normalisation, maximum over
    the accepted answers (aliases). `qa_exact_match` is strict normalised equality, the standard
    EM of open-domain QA (Lee et al. 2019, DPR, ...). `qa_contains` is the lenient variant some
    papers use: a match when an accepted answer's tokens appear as a contiguous whole-word span of
    the prediction (so "Paris" matches "It is Paris", not "Parisian"). It rewards verbose answers,
    which is why EM is the default; it is reported beside it because small instruct models often
    answer with a sentence. `qa_f1` is SQuAD's token F1, maximum over aliases.
  - MBPP (`code_pass`): the code is taken from the reply's fenced block marked `python` (or the raw text) and
    run by `tutorial_lib.tasks.sandbox.run_python` under bubblewrap; the sandboxed child only evaluates the
    calls of the problem's tests, and the verdict is reached in this process from the returned plain
    values (`tutorial_lib.tasks.judge`), so a solution cannot pass by rewriting the tests or the report.
    1 when every test passes: pass@1 with one sample (Austin et al. 2021; Chen et al. 2021).

`METRICS[name](prediction, example)` scores one raw model reply against one example of
`tutorial_lib.tasks.tasksets` (`{"id", "prompt", "references", "info"}`); each scorer first cleans the
reply the way its prompts expect (first line for short answers, code block for code, ...).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import sacrebleu

from . import humaneval

# --------------------------------------------------------------------------------------------------
# Cleaning a reply
# --------------------------------------------------------------------------------------------------

# Labels of our few-shot prompts; a model that keeps going after its answer starts the next item with one.
PROMPT_LABELS = ("Question:", "Q:", "Passage:", "Article:", "English:", "Task:", "Problem:", "Tests:")
_ANSWER_PREFIX = re.compile(
    r"^\s*(?:\*\*)?(?:final answer|short answer|answer|a|german|translation|summary)"
    r"\s*(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)


def cut_at_next_item(text: str) -> str:
    """`text` up to the first line that starts a new few-shot item ("Question:", "Article:", ...)."""
    if not isinstance(text, str):
        raise ValueError(f"a model reply must be a str, got {type(text).__name__}")
    earliest = len(text)
    for label in PROMPT_LABELS:
        match = re.search(r"(?m)^[ \t]*" + re.escape(label), text)
        if match and match.start() > 0:  # a label on the very first line is the answer's own prefix
            earliest = min(earliest, match.start())
    return text[:earliest].strip()


def first_answer_line(text: str) -> str:
    """The first non-empty line of a reply, without an "Answer:"-style prefix: what a short-answer
    prompt (QA, translation) asks for."""
    if not isinstance(text, str):
        raise ValueError(f"a model reply must be a str, got {type(text).__name__}")
    for line in text.strip().splitlines():
        line = (
            _ANSWER_PREFIX.sub("", line).strip().strip("*_`").strip()
        )  # markdown emphasis around the answer
        if line:
            return line
    return ""


def clean_summary(text: str) -> str:
    """A summary reply up to a next few-shot item, without a "Summary:" prefix (newlines kept)."""
    return _ANSWER_PREFIX.sub("", cut_at_next_item(text)).strip()


# --------------------------------------------------------------------------------------------------
# BLEU and ROUGE-2 (packages)
# --------------------------------------------------------------------------------------------------


def _as_reference_list(references: str | Sequence[str]) -> list[str]:
    if isinstance(references, str):
        return [references]
    references = [reference for reference in references if reference is not None]
    if not references or not all(isinstance(reference, str) for reference in references):
        raise ValueError("references must be a str or a non-empty list of str")
    return references


def bleu(hypotheses: Sequence[str], references_list: Sequence[str | Sequence[str]]) -> float:
    """Corpus BLEU (0-100) of `hypotheses[i]` against `references_list[i]`, a str or a list of str
    (items may have different numbers of references); `sacrebleu.corpus_bleu` with its defaults."""
    if isinstance(hypotheses, str):
        raise ValueError("hypotheses must be a list of str, one per item; for one sentence use sentence_bleu")
    hypotheses = list(hypotheses)
    per_item = [_as_reference_list(references) for references in references_list]
    if len(hypotheses) != len(per_item) or not hypotheses:
        raise ValueError(
            f"need one reference entry per hypothesis and at least one item; got "
            f"{len(hypotheses)} hypotheses and {len(per_item)} reference entries"
        )
    if not all(isinstance(hypothesis, str) for hypothesis in hypotheses):
        raise ValueError("every hypothesis must be a str")
    return float(sacrebleu.corpus_bleu(hypotheses, _reference_streams(per_item)).score)


def _reference_streams(references_list: Sequence[str | Sequence[str]]) -> list:
    # sacrebleu takes reference *streams* (stream k holds every item's k-th reference); None marks
    # "this item has fewer references", which sacrebleu skips.
    per_item = [_as_reference_list(references) for references in references_list]
    width = max(map(len, per_item))
    return [[references[k] if k < len(references) else None for references in per_item] for k in range(width)]


@lru_cache(maxsize=1)
def _bleu_metric():
    from sacrebleu.metrics import BLEU

    return BLEU()  # corpus_bleu's defaults: 13a tokenisation, no smoothing, n = 1..4


def bleu_statistics(hypotheses: Sequence[str], references_list: Sequence[str | Sequence[str]]):
    """Per-item sufficient statistics of corpus BLEU, shape `(n, 2 + 2*4)`: hypothesis and reference
    lengths, then matched and total n-grams for n = 1..4, as sacrebleu's `BLEU` extracts them
    (`_extract_corpus_statistics`, what `sacrebleu.corpus_bleu` sums and its paired bootstrap resamples).
    Corpus BLEU of any multiset of items is `bleu_from_statistics` of their rows."""
    import numpy as np

    if isinstance(hypotheses, str):
        raise ValueError("hypotheses must be a list of str, one per item")
    hypotheses = list(hypotheses)
    if len(hypotheses) != len(references_list) or not hypotheses:
        raise ValueError(
            f"need one reference entry per hypothesis and at least one item; got "
            f"{len(hypotheses)} hypotheses and {len(references_list)} reference entries"
        )
    if not all(isinstance(hypothesis, str) for hypothesis in hypotheses):
        raise ValueError("every hypothesis must be a str")
    stats = _bleu_metric()._extract_corpus_statistics(hypotheses, _reference_streams(references_list))
    return np.asarray(stats, dtype=np.int64)


def bleu_from_statistics(stats) -> float:
    """Corpus BLEU (0-100) from `bleu_statistics` rows (summed over items; one summed row also works),
    by sacrebleu's own `BLEU._compute_score_from_stats`."""
    import numpy as np

    stats = np.asarray(stats)
    total = stats.sum(0) if stats.ndim == 2 else stats
    return float(_bleu_metric()._compute_score_from_stats(total.tolist()).score)


def bleu_hypothesis(prediction: str) -> str:
    """What BLEU scores of a reply (sentence and corpus alike): its first answer line."""
    return first_answer_line(prediction)


def sentence_bleu(hypothesis: str, references: str | Sequence[str]) -> float:
    """Sentence BLEU (0-100), `sacrebleu.sentence_bleu` (exponential smoothing); best use of several
    references."""
    if not isinstance(hypothesis, str):
        raise ValueError(f"hypothesis must be a str, got {type(hypothesis).__name__}")
    return float(sacrebleu.sentence_bleu(hypothesis, _as_reference_list(references)).score)


@lru_cache(maxsize=1)
def _rouge2_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)


def rouge2(hypothesis: str, references: str | Sequence[str]) -> float:
    """ROUGE-2 F-measure (0-1) with Porter stemming, `rouge_score`; the best of several references."""
    if not isinstance(hypothesis, str):
        raise ValueError(f"hypothesis must be a str, got {type(hypothesis).__name__}")
    scorer = _rouge2_scorer()
    return max(
        scorer.score(reference, hypothesis)["rouge2"].fmeasure for reference in _as_reference_list(references)
    )


# --------------------------------------------------------------------------------------------------
# GSM8K: the final number
# --------------------------------------------------------------------------------------------------

# A number: optional minus (not right after a word character, so "5-3" is not "-3"), optional "$",
# digits with thousands commas ("1,234") or plain digits, optional decimals. A trailing "." is not
# part of it ("is 42." -> 42).
_NUMBER = (
    r"(?:(?P<sign>(?<![\w.])-)\s?)?(?:\$\s?(?P<sign2>-)?)?"  # "-3", "-$3", "$-3"; not the "-" of "5-3"
    r"(?P<digits>(?<![\d.,])(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|(?<![\d.])\.\d+)"
)
_NUMBER_RE = re.compile(_NUMBER)
_HASHES_RE = re.compile(r"####\s*" + _NUMBER)
_ANSWER_IS_RE = re.compile(r"answer\s+is\s*[:=]?[\s*]*" + _NUMBER, re.IGNORECASE)


def _number_from(match: re.Match) -> float:
    value = float(match.group("digits").replace(",", ""))
    negative = bool(match.group("sign")) != bool(match.group("sign2"))
    return -value if negative else value


def extract_number(text: str) -> float | None:
    """The final numeric answer of a GSM8K-style solution, or None when there is no number.

    In order of preference: the number after the last "####", after the last "The answer is", the
    last number in the text. Handles "1,234", "$-3.50", "-$3.50", "3.5" and a trailing period."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    for pattern in (_HASHES_RE, _ANSWER_IS_RE, _NUMBER_RE):
        matches = list(pattern.finditer(text))
        if matches:
            return _number_from(matches[-1])
    return None


def numeric_match(text: str, answer: str | int | float) -> bool:
    """Whether the number extracted from `text` equals `answer` (a number or a str such as "1,234" or
    "#### 72")."""
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise ValueError(f"answer must be a number or a str holding one, got {answer!r}")
    gold = float(answer) if not isinstance(answer, str) else extract_number(answer)
    if gold is None:
        raise ValueError(f"the reference answer {answer!r} holds no number")
    predicted = extract_number(text)
    return predicted is not None and math.isclose(predicted, gold, rel_tol=0.0, abs_tol=1e-6)


# --------------------------------------------------------------------------------------------------
# SQuAD 2.0 and open QA: official normalisation and token F1
# --------------------------------------------------------------------------------------------------

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation (official v2.0 script): lower-case, remove punctuation, remove the
    articles a/an/the, collapse whitespace. Applied in that order, as the script does."""
    if not isinstance(text, str):
        raise ValueError(f"an answer must be a str, got {type(text).__name__}")
    text = text.lower()
    text = "".join(character for character in text if character not in _PUNCTUATION)
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


# Normalised replies that mean "the passage does not answer this" (SQuAD 2.0). Ours, not the script's.
NO_ANSWER_PHRASES = frozenset(
    normalize_answer(phrase)
    for phrase in (
        "",
        "unanswerable",
        "no answer",
        "not answerable",
        "cannot be answered",
        "can't be answered",
        "cannot answer",
        "unknown",
        "n/a",
        "none",
        "no answer found",
        "not enough information",
        "not mentioned",
        "not in the passage",
        "not stated",
        "the question is unanswerable",
        "it is unanswerable",
        "this question is unanswerable",
        "unanswerable question",
        "the passage does not say",
        "the passage does not contain the answer",
    )
)


def is_no_answer(prediction: str) -> bool:
    """Whether a reply says "no answer" (empty, "unanswerable", "N/A", ...)."""
    return normalize_answer(prediction) in NO_ANSWER_PHRASES


def _token_f1(gold: str, prediction: str) -> float:
    """`compute_f1` of the official script: token-bag F1 of the normalised strings, 1 when both are empty."""
    gold_tokens = normalize_answer(gold).split()
    predicted_tokens = normalize_answer(prediction).split()
    if not gold_tokens or not predicted_tokens:
        return float(gold_tokens == predicted_tokens)
    shared = sum((Counter(gold_tokens) & Counter(predicted_tokens)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted_tokens), shared / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _squad_golds(gold_answers: Sequence[str]) -> list[str]:
    if isinstance(gold_answers, str):
        raise ValueError("gold_answers must be a list of str (empty for an unanswerable question), not a str")
    # As the official script: gold answers that normalise to nothing are dropped; none left = no answer.
    golds = [answer for answer in gold_answers if normalize_answer(answer)]
    return golds or [""]


def squad_em(prediction: str, gold_answers: Sequence[str]) -> float:
    """SQuAD 2.0 exact match: 1 when the normalised prediction equals a normalised gold answer.
    `gold_answers` empty means unanswerable: then 1 exactly when the prediction says "no answer"."""
    prediction = "" if is_no_answer(prediction) else prediction
    return max(
        float(normalize_answer(gold) == normalize_answer(prediction)) for gold in _squad_golds(gold_answers)
    )


def squad_f1(prediction: str, gold_answers: Sequence[str]) -> float:
    """SQuAD 2.0 token F1, maximum over gold answers; unanswerable questions as in `squad_em`."""
    prediction = "" if is_no_answer(prediction) else prediction
    return max(_token_f1(gold, prediction) for gold in _squad_golds(gold_answers))


def _accepted(answers: Sequence[str]) -> list[str]:
    if isinstance(answers, str):
        answers = [answers]
    answers = [answer for answer in answers if isinstance(answer, str) and normalize_answer(answer)]
    if not answers:
        raise ValueError("open-QA scoring needs at least one non-empty accepted answer")
    return answers


def qa_exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """Open-QA exact match: 1 when the normalised prediction equals a normalised accepted answer."""
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(answer) for answer in _accepted(answers)))


def qa_contains(prediction: str, answers: str | Sequence[str]) -> float:
    """Lenient open-QA match: 1 when an accepted answer's normalised tokens occur as a contiguous
    run of whole tokens of the normalised prediction ("It is Paris." matches "Paris")."""
    predicted = normalize_answer(prediction).split()
    for answer in _accepted(answers):
        wanted = normalize_answer(answer).split()
        if any(
            predicted[start : start + len(wanted)] == wanted
            for start in range(len(predicted) - len(wanted) + 1)
        ):
            return 1.0
    return 0.0


def qa_f1(prediction: str, answers: str | Sequence[str]) -> float:
    """Open-QA token F1 (SQuAD's), maximum over the accepted answers."""
    return max(_token_f1(answer, prediction) for answer in _accepted(answers))


# --------------------------------------------------------------------------------------------------
# MBPP: run the code
# --------------------------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_MBPP_BLOCK_RE = re.compile(r"\[BEGIN\](.*?)(?:\[DONE\]|\Z)", re.DOTALL)
_PYTHON_LANGUAGES = {"", "python", "python3", "py", "py3"}
_CODE_START_RE = re.compile(r"(?m)^(?:def |class |import |from |@)")


def _compiles(source: str) -> bool:
    try:
        compile(source, "<reply>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a reply nested past the parser's depth
        return False
    return True


def extract_code(text: str, entry_point: str | None = None) -> str:
    """The Python program in a model reply.

    The first fenced block marked `python` (or unlabelled) that defines `entry_point` (or, without it,
    any function or class), else the first block;
    an unclosed fence (the reply hit its token limit) runs to the end. Without a fence: the text
    between MBPP's [BEGIN] and [DONE], else the raw text cut before a next few-shot item, and when
    that is not valid Python, from its first `def`/`import`/`class` line on."""
    if not isinstance(text, str):
        raise ValueError(f"a model reply must be a str, got {type(text).__name__}")
    blocks = [body for language, body in _FENCE_RE.findall(text) if language.lower() in _PYTHON_LANGUAGES]
    if blocks:
        # A reply may show usage in one block and the function in another: take the block that
        # defines the entry point, else the first that defines anything, else the first.
        pattern = rf"\bdef\s+{re.escape(entry_point)}\s*\(" if entry_point else r"(?m)^\s*(?:def|class)\s"
        defining = [block for block in blocks if re.search(pattern, block)]
        if not defining and entry_point:
            defining = [block for block in blocks if re.search(r"(?m)^\s*(?:def|class)\s", block)]
        return (defining or blocks)[0].strip("\n")
    mbpp = _MBPP_BLOCK_RE.search(text)
    if mbpp:
        return mbpp.group(1).strip("\n")
    raw = cut_at_next_item(text)
    if _compiles(raw):
        return raw
    start = _CODE_START_RE.search(raw)
    return raw[start.start() :] if start else raw


def _code_problem_fields(problem: dict) -> tuple[list[str], str, str | None]:
    """(tests, setup, entry_point) of a task example (`info` holds them) or of a raw MBPP row."""
    if not isinstance(problem, dict):
        raise ValueError(
            f"problem must be a dict (a task example or an MBPP row), got {type(problem).__name__}"
        )
    info = problem.get("info", problem)
    tests = info.get("tests", info.get("test_list"))
    if not tests or isinstance(tests, str):
        raise ValueError(
            "the problem has no tests: give info['tests'] (or MBPP's 'test_list') as a list of asserts"
        )
    setup = info.get("setup", info.get("test_setup_code", "")) or ""
    return list(tests), setup, info.get("entry_point")


def code_pass(solution_text: str, problem: dict, **sandbox_options) -> float:
    """1.0 when the code of `solution_text` passes every test of `problem` in the sandbox, else 0.0.
    `sandbox_options` go to `tutorial_lib.tasks.sandbox.run_python` (timeout_s, memory_mb, ...). Raises
    `tutorial_lib.tasks.sandbox.SandboxUnavailableError` where bwrap cannot run (rather than scoring every
    solution 0), unless running unsandboxed was asked for (`TUTORIAL_LIB_UNSANDBOXED=1`)."""
    from .sandbox import run_python

    tests, setup, entry_point = _code_problem_fields(problem)
    return float(
        run_python(
            extract_code(solution_text, entry_point),
            tests,
            setup=setup,
            entry_point=entry_point,
            **sandbox_options,
        ).passed
    )


# --------------------------------------------------------------------------------------------------
# Per-example scorers: METRICS[name](raw reply, task example) -> float
# --------------------------------------------------------------------------------------------------


def _references(example: dict) -> list[str]:
    if not isinstance(example, dict) or "references" not in example:
        raise ValueError("example must be a task example dict with a 'references' list")
    references = example["references"]
    if isinstance(references, str):
        raise ValueError("example['references'] must be a list of str, not a str")
    return list(references)


def _score_bleu(prediction: str, example: dict) -> float:
    return sentence_bleu(bleu_hypothesis(prediction), _references(example))


def _score_rouge2(prediction: str, example: dict) -> float:
    return rouge2(clean_summary(prediction), _references(example))


def _score_gsm8k(prediction: str, example: dict) -> float:
    references = _references(example)
    if len(references) != 1:
        raise ValueError(f"a GSM8K-style example has exactly one reference (the number), got {references!r}")
    return float(numeric_match(cut_at_next_item(prediction), references[0]))


def _score_mbpp(prediction: str, example: dict) -> float:
    return code_pass(prediction, example)


def humaneval_pass(reply: str, example: dict, **sandbox_options) -> float:
    """1.0 when the code of `reply` passes every test of the example's problem in the sandbox, else 0.0.
    `example`: a task example of `tasksets.offline_task("humaneval")` (problems: `humaneval`) (its `info`
    holds the problem's `prompt`, `entry_point`, `task_id` and `tests`). `sandbox_options` go to
    `sandbox.run_python`."""
    from .sandbox import run_python

    info = example.get("info") if isinstance(example, dict) else None
    if not isinstance(info, dict) or not all(
        k in info for k in ("prompt", "entry_point", "task_id", "tests")
    ):
        raise ValueError(
            "example must be a humaneval task example whose info has prompt, entry_point, task_id "
            f"and tests (tasksets.offline_task('humaneval')), got {str(example)[:80]!r}"
        )
    problem = {
        "task_id": info["task_id"],
        "prompt": info["prompt"],
        "entry_point": info["entry_point"],
        "test": "",
    }
    code = extract_code(reply, info["entry_point"])
    if not humaneval.defines(code, info["entry_point"]) and "```" not in reply:
        # a bare completion of the prompt: keep its first line's indentation (extract_code strips it)
        code = reply
    prompt_code, solution_code = humaneval.program(problem, code)
    return float(
        run_python(
            solution_code,
            list(info["tests"]),
            prompt_code=prompt_code,
            entry_point=info["entry_point"],
            **sandbox_options,
        ).passed
    )


def _score_humaneval(prediction: str, example: dict) -> float:
    return humaneval_pass(prediction, example)


def _squad_golds_of(example: dict) -> list[str]:
    info = example.get("info", {})
    return [] if info.get("no_answer") else _references(example)


def _score_squad_f1(prediction: str, example: dict) -> float:
    return squad_f1(first_answer_line(prediction), _squad_golds_of(example))


def _score_squad_em(prediction: str, example: dict) -> float:
    return squad_em(first_answer_line(prediction), _squad_golds_of(example))


def _score_qa_em(prediction: str, example: dict) -> float:
    return qa_exact_match(first_answer_line(prediction), _references(example))


def _score_qa_contains(prediction: str, example: dict) -> float:
    return qa_contains(first_answer_line(prediction), _references(example))


def _score_qa_f1(prediction: str, example: dict) -> float:
    return qa_f1(first_answer_line(prediction), _references(example))


METRICS: dict[str, Callable[[str, dict], float]] = {
    "bleu": _score_bleu,  # sentence BLEU, 0-100 (corpus BLEU: `bleu` over the whole set)
    "rouge2": _score_rouge2,  # 0-1
    "gsm8k": _score_gsm8k,  # 0/1
    "mbpp": _score_mbpp,  # 0/1
    # 0/1, check() turned into asserts judged outside the sandbox (`humaneval`)
    "humaneval": _score_humaneval,
    "squad_v2": _score_squad_f1,  # SQuAD 2.0 F1, 0-1 (the headline number of the official script)
    "squad_v2_em": _score_squad_em,  # 0/1
    "qa_em": _score_qa_em,  # 0/1
    "qa_contains": _score_qa_contains,  # 0/1
    "qa_f1": _score_qa_f1,  # 0-1
}

#: Metrics whose set-level score is not the mean of the per-example scores: BLEU is corpus BLEU
#: (`bleu_statistics` / `bleu_from_statistics`); every other metric's set-level score is the mean.
CORPUS_METRICS = ("bleu",)

# The largest value of each metric: BLEU keeps sacrebleu's 0-100, the rest are fractions.
METRIC_MAX = {name: (100.0 if name == "bleu" else 1.0) for name in METRICS}


def score(metric: str, prediction: str, example: dict) -> float:
    """`METRICS[metric](prediction, example)`, with a ValueError naming the metrics on a typo."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {sorted(METRICS)}")
    return METRICS[metric](prediction, example)
