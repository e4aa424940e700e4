"""Notebook parameters are checked in the cell after the `parameters` cell, where a
string from papermill's `-p` is parsed, or refused with a message that shows the `-y` form.

Every notebook is checked from its paired `.py` file: the cell right after `parameters` calls
`tl.lessons.parameters.check_parameters` with every parameter the `parameters` cell sets, and running
those two cells with a wrong-kind value for any checked parameter raises (it never passes silently)."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from tutorial_lib.lessons.parameters import NotebookParameterError, check_parameters

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.py"))
WRONG_TEXT = {
    "int": "three",
    "float": "fast",
    "bool": "maybe",
    "list[int]": "1 2 3",
    "list[float]": "[1.0, 'x']",
    "list[str]": "[1, 2]",
    "pair[str]": "('a',)",
}


def _parameters_and_check(path: Path):
    text = path.read_text()
    cells = re.split(r"^(# %%.*)$", text, flags=re.MULTILINE)
    headers = cells[1::2]
    bodies = cells[2::2]
    index = next(i for i, header in enumerate(headers) if 'tags=["parameters"]' in header)
    return bodies[index], bodies[index + 1]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_the_cell_after_parameters_checks_every_parameter(path):
    parameters, check = _parameters_and_check(path)
    names = [node.targets[0].id for node in ast.parse(parameters).body if isinstance(node, ast.Assign)]
    assert "check_parameters(globals()" in check, (
        f"{path.name}: the cell after `parameters` does not check them"
    )
    call = next(
        node
        for node in ast.walk(ast.parse(check))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "check_parameters"
    )
    kinds = ast.literal_eval(call.args[1])
    assert list(kinds) == names, f"{path.name}: checks {list(kinds)}, the parameters cell sets {names}"
    namespace = {}
    exec(compile(parameters, f"{path.name}:parameters", "exec"), namespace)
    check_parameters(dict(namespace), kinds)  # the defaults pass
    for name, kind in kinds.items():
        base = kind.split("|")[0].split(">")[0]
        if base in WRONG_TEXT:
            with pytest.raises(NotebookParameterError, match=rf"parameter {name}=.*-y '{name}: "):
                check_parameters({**namespace, name: WRONG_TEXT[base]}, kinds)


def test_text_from_papermill_p_is_parsed_where_it_has_the_right_kind():
    namespace = {
        "seed": "3",
        "gammas": "[1, 3, 5]",
        "temperatures": "None",
        "flag": "true",
        "alpha": "0.25",
        "name": "offline",
        "pair": "['a', 'b']",
    }
    cleaned = check_parameters(
        namespace,
        {
            "seed": "int>=0",
            "gammas": "list[int]|None",
            "temperatures": "list[float]|None",
            "flag": "bool",
            "alpha": "float",
            "name": "str",
            "pair": "pair[str]|None",
        },
    )
    assert cleaned == {
        "seed": 3,
        "gammas": [1, 3, 5],
        "temperatures": None,
        "flag": True,
        "alpha": 0.25,
        "name": "offline",
        "pair": ("a", "b"),
    }
    assert namespace["gammas"] == [1, 3, 5]  # written back where the notebook reads it


def test_numpy_integers_and_whole_floats_are_ints():
    cleaned = check_parameters(
        {"n": np.int64(4), "m": 2.0, "xs": np.array([1, 2])}, {"n": "int>=1", "m": "int", "xs": "list[int]"}
    )
    assert cleaned == {"n": 4, "m": 2, "xs": [1, 2]} and type(cleaned["n"]) is int


@pytest.mark.parametrize(
    "value, kind, message",
    [
        (
            "abc",
            "int>=0",
            r"parameter n='abc' \(text, as papermill's -p passes every value\) is not an int >= 0; pass it "
            r"with its type through papermill's -y, e.g. -y 'n: 3'",
        ),
        ("-1", "int>=0", r"is not an int >= 0"),
        (2.5, "int", r"parameter n=2.5 is not an int"),
        (True, "int", r"parameter n=True is not an int"),
        ("[1.0]", "float", r"parameter n='\[1.0\]' .* is not a float"),
        (None, "int", r"parameter n=None is not an int"),
        ("0.5, x", "list[float]", r"is not a list\[float\]; .* -y 'n: \[0.0, 1.0\]'"),
        (float("nan"), "float", r"is not a float"),
    ],
)
def test_a_wrong_kind_is_refused_with_the_y_form(value, kind, message):
    with pytest.raises(NotebookParameterError, match=message):
        check_parameters({"n": value}, {"n": kind})


def test_a_kind_that_is_not_one_is_named():
    with pytest.raises(ValueError, match=r"kinds\['n'\]='integer' is not a kind"):
        check_parameters({"n": 1}, {"n": "integer"})
    with pytest.raises(NotebookParameterError, match="parameter 'm' is not set"):
        check_parameters({"n": 1}, {"m": "int"})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_papermill_lists_every_parameter(path):
    """`papermill --help-notebook` drops a parameter whose line holds two '=' (a comment saying `x="y"`, or a
    value such as the model spec `name:layers=16`), and warns on every run that passes it: a default that
    needs one is `None`, resolved in a later cell (notebook 01's `timing_pair`)."""
    import papermill

    parameters, _ = _parameters_and_check(path)
    assigned = {node.targets[0].id for node in ast.parse(parameters).body if isinstance(node, ast.Assign)}
    listed = set(papermill.inspect_notebook(str(path.with_suffix(".ipynb"))))
    assert assigned - listed == set(), (
        f"{path.name}: papermill cannot read {sorted(assigned - listed)}: take '=' out of the line"
    )


# ---- sizes and ranges, refused before anything is read ----------------------------------------------


def _kinds_of(stem):
    path = next(path for path in NOTEBOOKS if path.stem == stem)
    parameters, check = _parameters_and_check(path)
    call = next(
        node
        for node in ast.walk(ast.parse(check))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "check_parameters"
    )
    namespace = {}
    exec(compile(parameters, f"{path.name}:parameters", "exec"), namespace)
    return {k: v for k, v in namespace.items() if not k.startswith("__")}, ast.literal_eval(call.args[1])


@pytest.mark.parametrize("as_text", [True, False], ids=["papermill -p text", "a list"])
def test_a_two_million_item_list_is_refused_at_once_and_cheaply(as_text):
    import time
    import tracemalloc

    defaults, kinds = _kinds_of("06_t5_evaluation")
    huge = "[" + ", ".join(["5"] * 2_000_000) + "]" if as_text else [5] * 2_000_000
    tracemalloc.start()
    start = time.perf_counter()
    refused = r"parameter gammas (is 6,000,000 characters|holds 2,000,000)"
    with pytest.raises(NotebookParameterError, match=refused):
        check_parameters({**defaults, "gammas": huge}, kinds)
    seconds, (_, peak) = time.perf_counter() - start, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 0.5 and peak < 1 << 20, f"{seconds:.2f} s, {peak / 2**20:.1f} MiB to refuse it"


def test_a_list_over_the_item_bound_is_refused_also_when_given_as_short_text():
    with pytest.raises(NotebookParameterError, match=r"gammas holds 300 items; a list parameter holds"):
        check_parameters({"gammas": str([1] * 300)}, {"gammas": "list[int]|None"})
    assert check_parameters({"gammas": [1] * 256}, {"gammas": "list[int]|None"})["gammas"] == [1] * 256


@pytest.mark.parametrize(
    "stem, name",
    [
        ("06_t5_evaluation", "n_examples"),
        ("07_gemma_evaluation", "n_items"),
        ("08_real_pair_token_analysis", "n_items"),
    ],
)
def test_items_per_task_beyond_the_documented_bound_are_refused_with_the_range(stem, name):
    defaults, kinds = _kinds_of(stem)
    for value in (10**12, "1000000000000", 20_001):
        with pytest.raises(
            NotebookParameterError, match=rf"parameter {name}=.* is not an int >= 1 and <= 20000 or None"
        ):
            check_parameters({**defaults, name: value}, kinds)
    assert check_parameters({**defaults, name: 20_000}, kinds)[name] == 20_000


@pytest.mark.parametrize("value", ["out\x00put", "a\nb", "tab\there", "del\x7f"])
def test_control_characters_in_text_parameters_are_refused(value):
    defaults, kinds = _kinds_of("06_t5_evaluation")
    with pytest.raises(NotebookParameterError, match=r"parameter output_dir=.* holds the control character"):
        check_parameters({**defaults, "output_dir": value}, kinds)


def test_text_over_the_length_bound_is_refused_before_it_is_read():
    with pytest.raises(NotebookParameterError, match=r"parameter name is 5,000 characters of text; .* 4,096"):
        check_parameters({"name": "x" * 5000}, {"name": "str"})


def test_an_upper_bound_holds_for_floats_and_every_item_of_a_list():
    kinds = {"t": "float>=0<=2", "xs": "list[int]>=1<=7"}
    assert check_parameters({"t": 2, "xs": [1, 7]}, kinds) == {"t": 2.0, "xs": [1, 7]}
    with pytest.raises(NotebookParameterError, match=r"parameter t=2.5 is not a float >= 0 and <= 2"):
        check_parameters({"t": 2.5, "xs": [1]}, kinds)
    with pytest.raises(NotebookParameterError, match=r"parameter xs=\[1, 8\] is not a list\[int\] >= 1 and"):
        check_parameters({"t": 1, "xs": [1, 8]}, kinds)
