"""The quality metrics of tutorial_lib.tasks.metrics on hand-made cases."""

import pytest

from tutorial_lib.tasks import metrics as m

# --------------------------------------------------------------------------------------------------
# BLEU and ROUGE-2
# --------------------------------------------------------------------------------------------------


def test_bleu_identical_is_100_and_disjoint_is_near_0():
    sentence = "the quick brown fox jumps over the lazy dog"
    assert m.sentence_bleu(sentence, [sentence]) == pytest.approx(100.0)
    assert m.bleu(
        [sentence, "a cat sat on the mat today"], [[sentence], ["a cat sat on the mat today"]]
    ) == pytest.approx(100.0)
    assert m.sentence_bleu("zebra xylophone quantum", ["the quick brown fox jumps over the lazy dog"]) < 1.0
    assert m.bleu(["zebra xylophone quantum"], ["the quick brown fox jumps over the lazy dog"]) < 1.0


def test_bleu_takes_the_best_of_several_references():
    hypothesis = "the cat is on the mat"
    single = m.sentence_bleu(hypothesis, ["there is a cat on the mat"])
    both = m.sentence_bleu(hypothesis, ["there is a cat on the mat", "the cat is on the mat"])
    assert both == pytest.approx(100.0) and single < both
    # corpus BLEU with a different number of references per item
    score = m.bleu(
        [hypothesis, "a dog barks loudly"],
        [["there is a cat on the mat", hypothesis], ["a dog barks loudly"]],
    )
    assert score == pytest.approx(100.0)


def test_bleu_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one reference entry per hypothesis"):
        m.bleu(["a b c"], [["a b c"], ["d e f"]])
    with pytest.raises(ValueError, match="list of str"):
        m.bleu("a b c", ["a b c"])


def test_rouge2():
    reference = "police arrest two men after the robbery in the city centre"
    assert m.rouge2(reference, reference) == pytest.approx(1.0)
    assert m.rouge2("apples and oranges grow", reference) == 0.0
    # 2 shared bigrams of 3 in the hypothesis ("police arrest", "arrest two"); stemming makes
    # "arrests" match "arrest"
    partial = m.rouge2("police arrest two", "police arrests two women")
    assert 0.0 < partial < 1.0
    assert m.rouge2("police arrest two", ["something else entirely", "police arrest two"]) == pytest.approx(
        1.0
    )


# --------------------------------------------------------------------------------------------------
# GSM8K
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Natalia sold 48 clips... #### 1,234", 1234.0),
        ("So the total is 5 - 3 = 2.\nThe answer is $-3.50.", -3.5),
        ("The answer is: **-$1,000**", -1000.0),
        ("First 12 apples, then 7 more, so 19 apples.", 19.0),
        ("He had 3 cats. The answer is 42.", 42.0),
        ("The answer is 7 (not 8).", 7.0),
        ("10-3 is it", 3.0),  # the minus of a subtraction is not a sign
        ("It dropped to -4 degrees", -4.0),
        ("#### 72\nThe answer is 5", 72.0),  # "####" is preferred over "The answer is"
        ("no number here", None),
    ],
)
def test_extract_number(text, expected):
    assert m.extract_number(text) == expected


def test_numeric_match():
    assert m.numeric_match("so she has 1234 left. The answer is 1,234.", "1234")
    assert m.numeric_match("The answer is 3.50", 3.5)
    assert m.numeric_match("#### 72", "#### 72")
    assert not m.numeric_match("The answer is 71.", "72")
    assert not m.numeric_match("I do not know", "72")
    with pytest.raises(ValueError, match="holds no number"):
        m.numeric_match("42", "forty-two")


# --------------------------------------------------------------------------------------------------
# SQuAD 2.0 and open QA
# --------------------------------------------------------------------------------------------------


def test_normalize_answer_is_squads():
    assert m.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert m.normalize_answer("  An apple, a day ") == "apple day"
    assert m.normalize_answer("Theatre") == "theatre"  # "the" only as a whole word


def test_squad_answerable():
    assert m.squad_em("the Eiffel Tower", ["Eiffel Tower", "the tower"]) == 1.0
    assert m.squad_em("Eiffel Tower in Paris", ["Eiffel Tower"]) == 0.0
    # tokens: pred {eiffel, tower, in, paris}, gold {eiffel, tower}: P = 1/2, R = 1, F1 = 2/3
    assert m.squad_f1("Eiffel Tower in Paris", ["The Eiffel Tower"]) == pytest.approx(2 / 3)
    assert m.squad_f1("Eiffel Tower in Paris", ["Paris", "The Eiffel Tower"]) == pytest.approx(
        2 / 3
    )  # max over golds
    assert m.squad_f1("unanswerable", ["Paris"]) == 0.0
    assert m.squad_f1("", ["Paris"]) == 0.0


def test_squad_no_answer_both_ways():
    for abstention in ("", "unanswerable", "Unanswerable.", "No answer", "N/A"):
        assert m.squad_em(abstention, []) == 1.0
        assert m.squad_f1(abstention, []) == 1.0
    assert m.squad_em("Paris", []) == 0.0
    assert m.squad_f1("Paris", []) == 0.0
    assert (
        m.squad_f1("Paris", ["", "  "]) == 0.0
    )  # golds that normalise to nothing mean no answer, as in the script


def test_open_qa_with_aliases():
    answers = ["William Shakespeare", "Shakespeare"]
    assert m.qa_exact_match("Shakespeare.", answers) == 1.0
    assert m.qa_exact_match("william shakespeare", answers) == 1.0
    assert m.qa_exact_match("It was Shakespeare", answers) == 0.0  # EM is strict
    assert m.qa_contains("It was Shakespeare", answers) == 1.0  # the lenient variant
    assert m.qa_contains("Shakespearean drama", answers) == 0.0  # whole words only
    assert m.qa_contains("Buenos Aires, Argentina", ["Buenos Aires"]) == 1.0
    # F1: "william shakespeare wrote" against "william shakespeare": P = 2/3, R = 1 -> 0.8
    assert m.qa_f1("William Shakespeare wrote", answers) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="at least one"):
        m.qa_exact_match("x", [])


def test_reply_cleaning():
    assert m.first_answer_line("\n  Answer: **Paris**\nQuestion: next") == "Paris"
    assert m.cut_at_next_item("Rome\n\nQuestion: What is next?\nAnswer: x") == "Rome"
    assert m.cut_at_next_item("Answer: one line\nmore") == "Answer: one line\nmore"


# --------------------------------------------------------------------------------------------------
# MBPP
# --------------------------------------------------------------------------------------------------

PROBLEM = {
    "info": {
        "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(0, 0) == 0"],
        "setup": "",
        "entry_point": "add",
    }
}


def test_extract_code():
    reply = "Here you go:\n```python\ndef add(a, b):\n    return a + b\n```\nHope it helps."
    assert m.extract_code(reply) == "def add(a, b):\n    return a + b"
    two_blocks = "```python\nprint(add(1, 2))\n```\nand\n```python\ndef add(a, b):\n    return a + b\n```"
    assert m.extract_code(two_blocks, "add").startswith("def add")
    assert m.extract_code(two_blocks).startswith(
        "def add"
    )  # without the entry point: the block that defines something
    assert (
        m.extract_code("```python\ndef add(a, b):\n    return a + b") == "def add(a, b):\n    return a + b"
    )  # unclosed
    assert m.extract_code("Sure.\ndef add(a, b):\n    return a + b\n").startswith("def add")
    assert m.extract_code("[BEGIN]\ndef add(a, b):\n    return a + b\n[DONE]").startswith("def add")


def _needs_bwrap():
    from tutorial_lib.tasks import isolation, sandbox

    if not isolation.sandbox_available():
        pytest.skip(
            f"bubblewrap cannot run here ({isolation.bwrap_problem()}); {sandbox.INSTALL_HINT} "
            "(CI installs it)"
        )


@pytest.mark.parametrize(
    "cheat",
    [
        "import builtins\nbuiltins.exec = lambda *a, **k: None\n",
        "class T:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return T()\n",
        "import sys\nf = sys._getframe(1)\nwhile f:\n"
        "    [v['tests'].clear() for v in f.f_locals.values() if isinstance(v, dict) and 'tests' in v]\n"
        "    f = f.f_back\n",
    ],
)
def test_pass_at_1_is_judged_outside_the_solution(cheat):
    _needs_bwrap()
    reply = "```python\ndef add(a, b):\n    return a - b\n" + cheat + "```"
    assert m.METRICS["mbpp"](reply, PROBLEM) == 0.0


def test_code_pass_correct_and_wrong():
    _needs_bwrap()
    assert m.code_pass("```python\ndef add(a, b):\n    return a + b\n```", PROBLEM) == 1.0
    assert m.code_pass("```python\ndef add(a, b):\n    return a - b\n```", PROBLEM) == 0.0
    assert m.code_pass("I cannot write code.", PROBLEM) == 0.0
    # a raw MBPP row works too
    row = {"test_list": PROBLEM["info"]["tests"], "test_setup_code": ""}
    assert m.code_pass("def add(a, b):\n    return a + b", row) == 1.0
    with pytest.raises(ValueError, match="no tests"):
        m.code_pass("def f(): pass", {"info": {"tests": []}})


# --------------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------------


def test_metrics_registry_scores_raw_replies():
    assert set(m.METRICS) >= {"bleu", "rouge2", "gsm8k", "mbpp", "squad_v2", "qa_em", "qa_f1"}
    assert m.METRICS["bleu"]("German: Das ist gut.\n", {"references": ["Das ist gut."]}) == pytest.approx(
        100.0
    )
    assert m.METRICS["rouge2"](
        "Summary: police arrest two men", {"references": ["police arrest two men"]}
    ) == pytest.approx(1.0)
    assert (
        m.METRICS["gsm8k"]("4 * 6 = 24. The answer is 24.\n\nQuestion: next one 99", {"references": ["24"]})
        == 1.0
    )
    assert m.METRICS["mbpp"]("```python\ndef add(a, b):\n    return a + b\n```", PROBLEM) == 1.0
    unanswerable = {"references": [], "info": {"no_answer": True}}
    assert m.METRICS["squad_v2"]("unanswerable", unanswerable) == 1.0
    assert (
        m.METRICS["squad_v2"](
            "Answer: the Eiffel Tower", {"references": ["Eiffel Tower"], "info": {"no_answer": False}}
        )
        == 1.0
    )
    facts = {"references": ["Paris"], "info": {}}
    assert m.METRICS["qa_em"]("Paris\nQuestion: more", facts) == 1.0
    assert m.METRICS["qa_em"]("The capital is Paris.", facts) == 0.0
    assert m.METRICS["qa_contains"]("The capital is Paris.", facts) == 1.0
    assert m.METRICS["qa_f1"]("Paris, France", facts) == pytest.approx(2 / 3)
    assert m.score("qa_em", "Paris", facts) == 1.0
    with pytest.raises(ValueError, match="unknown metric"):
        m.score("accuracy", "Paris", facts)
    assert m.METRIC_MAX["bleu"] == 100.0 and m.METRIC_MAX["qa_em"] == 1.0
