"""Exercise checks that do not tell the answer: no notebook cell holds an expected value, a wrong answer gets
a hint (not the number), a non-numeric one a message (not a traceback), and teachers can see the solution."""

import ast
import re
from pathlib import Path

import jupytext
import pandas as pd
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.lessons import exercises, notebook

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
SCRIPTS = sorted(NOTEBOOK_DIR.glob("[0-9]*.py"))
CHECK_CALL = re.compile(r"""tl\.lessons\.notebook\.check\(\s*["'](\d\d-\d)["']""")


def _code_cells():
    for script in SCRIPTS:
        for i, cell in enumerate(jupytext.read(script).cells):
            if cell.cell_type == "code":
                yield script.name, i, cell.source


def _standalone_solutions():
    """Expected values the test can compute at the notebooks' defaults without running them."""
    examples = tl.toy.examples.toy_examples(0)
    world = tl.ToyWorld(n_words=14, seed=0)
    objects = {"examples": examples, "world": world}
    out = {}
    for spec in exercises.EXERCISES.values():
        if spec.id == "03-1":
            out[spec.id] = spec.solve(world=world, context=tl.toy.examples.default_context(world))
        elif set(spec.needs) <= set(objects) and spec.kind == "number":
            out[spec.id] = spec.solve(**{name: objects[name] for name in spec.needs})
    return out


def test_every_exercise_is_checked_in_its_notebook_and_every_check_is_an_exercise():
    checked = {}
    for name, _, source in _code_cells():
        for exercise_id in CHECK_CALL.findall(source):
            checked.setdefault(exercise_id, name)
    assert set(checked) == set(exercises.EXERCISES), (
        "a notebook checks an unknown exercise, or one is never checked"
    )
    for exercise_id, name in checked.items():
        assert name.startswith(exercise_id.split("-")[0]), f"{exercise_id} is checked in {name}"


def test_check_cells_hold_no_computation_of_the_answer():
    for name, i, source in _code_cells():
        assert "check_answer" not in source, (
            f"{name} cell {i} still compares with a value computed in the cell"
        )
        if "tl.lessons.notebook.check(" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, (int, float))
                and not isinstance(node.value, bool)
            ):
                assert node.value == 0, f"{name} cell {i}: the number {node.value} sits in a check cell"
            if isinstance(node, ast.BinOp):
                pytest.fail(
                    f"{name} cell {i}: arithmetic in a check cell computes an answer: {ast.unparse(node)}"
                )


def test_no_notebook_holds_an_expected_value():
    solutions = _standalone_solutions()
    assert len(solutions) >= 8, sorted(solutions)  # the scan below must look for something
    text = "\n".join(script.read_text() for script in SCRIPTS)
    for exercise_id, value in solutions.items():
        value = float(value)
        written = {f"{value:.{digits}f}" for digits in (3, 4, 6)} | {f"{value:.4g}", repr(value)}
        written = {w for w in written if len(w.strip("0.-")) >= 3}  # "0.000" would match anything
        found = [w for w in written if re.search(rf"(?<![\d.]){re.escape(w)}(?!\d)", text)]
        assert not found, f"exercise {exercise_id}'s answer {value} is written in a notebook as {found}"


@pytest.mark.parametrize(
    "exercise_id,objects",
    [
        ("04-1", {}),
        ("01-2", {"examples": tl.toy.examples.toy_examples(0)}),
        ("02-3", {}),
    ],
)
def test_number_check_right_wrong_and_not_a_number(capsys, exercise_id, objects):
    right = notebook.solution(exercise_id, **objects)
    capsys.readouterr()
    assert notebook.check(exercise_id, right, **objects) is True
    assert capsys.readouterr().out.strip().endswith("correct.")
    # a tensor or numpy scalar is as good as a float
    assert notebook.check(exercise_id, torch.tensor(float(right), dtype=torch.float64), **objects) is True
    capsys.readouterr()
    wrong = float(right) + 0.25 + 10 * exercises.EXERCISES[exercise_id].tol
    assert notebook.check(exercise_id, wrong, **objects) is False
    said = capsys.readouterr().out
    assert "not quite" in said and exercises.EXERCISES[exercise_id].hint in said
    for shown in {f"{float(right):.3f}", f"{float(right):.4g}", repr(float(right))}:
        assert shown not in said, f"the hint gives the answer away: {said}"
    for odd in ("about a half", [0.1, 0.2], float("nan"), True):
        assert notebook.check(exercise_id, odd, **objects) is None  # a message, not a traceback
        assert "expected a single" in capsys.readouterr().out
    assert notebook.check(exercise_id, None, **objects) is None
    assert "not answered yet" in capsys.readouterr().out


def test_integer_check():
    class Calibration:  # what 09-3 reads: the block-cost model's choice
        def best_gamma(self, acceptance):
            return 4 if acceptance > 0.9 else 1

    assert notebook.check("09-3", 4, calibration=Calibration()) is True
    assert notebook.check("09-3", 3, calibration=Calibration()) is False
    assert notebook.check("09-3", 4.5, calibration=Calibration()) is None


def test_choice_and_method_checks(capsys):
    claims = pd.DataFrame({"low": [-0.1, 0.02], "high": [0.3, 0.2]})
    assert notebook.check("06-2", "not resolved", claims_table=claims) is True
    assert notebook.check("06-2", "holds", claims_table=claims) is False
    assert notebook.check("06-2", "perhaps", claims_table=claims) is None
    assert notebook.check("06-2", 0.5, claims_table=claims) is None
    assert exercises.verdict_of_interval(0.02, 0.2) == "holds"
    assert exercises.verdict_of_interval(-0.3, 0.0) == "does not hold"
    table = pd.DataFrame(
        {
            "task": ["code", "code"],
            "temperature": [0.0, 0.0],
            "gamma": [1, 1],
            "method": ["SpecCascade [OPT]", "Drafter"],
            "reduction_at_verifier_quality": [0.75, "not reached"],
        }
    )
    where = dict(table=table, task="code", temperature=0.0)
    capsys.readouterr()
    assert notebook.check("07-1", ("SpecCascade [OPT]", 0.25), **where) is True
    assert notebook.check("07-1", ("SpecCascade [OPT]", 0.75), **where) is False
    assert notebook.check("07-1", ("Drafter", "not reached"), **where) is True
    assert notebook.check("07-1", ("Drafter", 0.1), **where) is False
    assert notebook.check("07-1", ("Nobody", 0.1), **where) is None  # names the methods there are
    assert "pick one of Drafter, SpecCascade [OPT]" in capsys.readouterr().out
    assert notebook.check("07-1", 0.25, **where) is None
    assert notebook.check("06-1", "SpecCascade [OPT]", table=table, temperature=0.0, gamma=1) is True


def test_bad_calls_name_what_to_pass():
    with pytest.raises(ValueError, match="exercise_id='99-9'.*pass one of 00-1"):
        notebook.check("99-9", 1.0)
    with pytest.raises(ValueError, match=r"needs examples=examples.*missing: examples"):
        notebook.check("01-1", 0.5)
    with pytest.raises(ValueError, match="needs method="):
        notebook.solution("07-1", table=pd.DataFrame(), task="code", temperature=0.0)


def test_solution_says_how(capsys):
    value = notebook.solution("02-3")
    said = capsys.readouterr().out
    assert value == pytest.approx(250000.0) and "How:" in said and "rho (1 - rho)" in said
    assert notebook.exercise_ids("04") == ["04-1", "04-2", "04-3"]


def test_check_glues_the_expected_value_in_a_kernel_and_never_prints_it(capsys, monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display=True: glued.update({name: (value, display)})
    )
    assert notebook.check("01-3", None) is None  # outside a kernel nothing is glued (display would print it)
    assert glued == {}
    monkeypatch.setattr(notebook, "_in_kernel", lambda: True)
    assert notebook.check("01-3", None) is None  # unanswered: the book's solution still gets the value
    assert notebook.check("04-1", 0.1) is False
    assert glued == {"exercise_01_3": ("2.7731", False), "exercise_04_1": ("0.666667", False)}
    said = capsys.readouterr().out
    assert "2.7731" not in said and "0.666667" not in said
    claims = pd.DataFrame({"low": [-0.1], "high": [0.3]})
    notebook.check("06-2", None, claims_table=claims)
    assert glued["exercise_06_2"] == ("not resolved", False)


def test_a_method_exercise_glues_every_methods_value():
    table = pd.DataFrame(
        {
            "task": ["code", "code", "facts"],
            "temperature": [0.0, 0.0, 0.0],
            "method": ["SpecCascade [OPT]", "Drafter", "Verifier"],
            "reduction_at_verifier_quality": [0.75, "not reached", 0.5],
        }
    )
    value = notebook.expected_value("07-1", table=table, task="code", temperature=0.0)
    assert value == {"SpecCascade [OPT]": 0.25, "Drafter": "not reached"}  # Verifier has no row on code
    assert notebook.value_text(value) == "SpecCascade [OPT]: 0.25; Drafter: not reached"
    assert notebook.value_text(torch.tensor([0.125, 2.0])) == "[0.125, 2]"
    assert notebook.value_text(250000.0) == "250000" and notebook.value_text(1 / 3) == "0.333333"
    assert notebook.exercise_glue_name("10-2") == "exercise_10_2"
