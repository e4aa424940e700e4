"""The judge's contract (`tutorial_lib.tasks.judge`, clauses 1-7), one test or group per clause, and the
attacks found against earlier versions as reproductions: no false pass, no escape from the sandbox, no
false fail of a correct solution. Tests that run code need bubblewrap; the planning ones do not."""

import ast
import copy
import json
import platform
import textwrap
from collections import OrderedDict

import pytest

from tutorial_lib.tasks import humaneval, metrics, tasksets
from tutorial_lib.tasks.isolation import sandbox_available
from tutorial_lib.tasks.judge import (
    EXPECTED,
    HOLE_PREFIX,
    SOLUTION,
    SAFE_FUNCTIONS,
    judge_test,
    plan_tests,
)
from tutorial_lib.tasks.plain_data import NotPlainData, decode_value, encode_value
from tutorial_lib.tasks.sandbox import run_python, runner
from tutorial_lib.tasks.task_prompts import entry_point_of

needs_bwrap = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")

LIMITS = dict(timeout_s=5.0, cpu_s=2.0, memory_mb=256)


def run(code, tests, **options):
    return run_python(code, tests, **LIMITS, **options)


@pytest.fixture
def payloads(monkeypatch):
    """Every payload `run_python` hands to a sandboxed run, as sent (copied before `run_child` adds the
    report descriptor). The expected side's cache is emptied so that its runs are recorded too."""
    recorded = []
    original = runner.run_child

    def recording(mode, payload, *args, **kwargs):
        recorded.append(copy.deepcopy(payload))
        return original(mode, payload, *args, **kwargs)

    monkeypatch.setattr(runner, "run_child", recording)
    monkeypatch.setattr(runner, "_expected_cache", OrderedDict())
    return recorded


def carries(payload, value):
    """Whether `value` (text, or a tagged value) travels in `payload`, as its JSON spells it."""
    fragment = json.dumps(value)
    return (fragment[1:-1] if isinstance(value, str) else fragment) in json.dumps(payload)


def ast_names(tree):
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def solution_runs(recorded):
    # Only the solution's run carries "watch" (the names it must not rebind).
    return [payload for payload in recorded if "watch" in payload]


def expected_runs(recorded):
    return [payload for payload in recorded if "watch" not in payload]


# A secret only the setup holds. The solutions below build its prefix at run time ("".join), so that no
# string of their own source, and so none of their code objects' constants, matches what they look for.
SECRET_SETUP = "ANSWER = 'zq81-marker'\n"
SECRET_TESTS = ["assert f() == ANSWER"]

STRINGS_IN_FRAMES_AND_GC = textwrap.dedent("""
    import gc, re, sys

    PATTERN = "".join(["zq", "81-"]) + "[a-z]+"

    def _strings(value, depth=0):
        if isinstance(value, str):
            yield value
        elif depth < 4 and isinstance(value, dict):
            for key, item in list(value.items()):
                yield from _strings(key, depth + 1)
                yield from _strings(item, depth + 1)
        elif depth < 4 and isinstance(value, (list, tuple, set, frozenset)):
            for item in list(value):
                yield from _strings(item, depth + 1)

    def _search():
        containers, frame = [], sys._getframe()
        while frame is not None:
            containers += [frame.f_locals, frame.f_globals]
            frame = frame.f_back
        for container in containers + gc.get_objects():
            for text in _strings(container):
                found = re.search(PATTERN, text)
                if found:
                    return found.group(0)
        return None

    def f(*args):
        return _search() or "not found"
    """)

EXEC_THE_SETUP_FROM_A_FRAME = textwrap.dedent("""
    import gc, sys

    def f():
        containers, frame = [], sys._getframe()
        while frame is not None:
            containers += [frame.f_locals, frame.f_globals, *frame.f_locals.values()]
            frame = frame.f_back
        for container in containers + gc.get_objects():
            if isinstance(container, dict) and isinstance(container.get("setup"), str):
                scope = {}
                try:
                    exec(container["setup"], scope)
                except Exception:
                    continue
                if "ANSWER" in scope:
                    return scope["ANSWER"]
        return "not found"
    """)


def forged_report(value_tag, value):
    """A solution that writes its own report, claiming `value` for its one hole, and exits before the
    real one: it finds the descriptor in its callers' payload, or any pipe from 3 to 255."""
    report = json.dumps({"error": None, "values": [[value_tag, value]], "statements": [], "rebound": []})
    return textwrap.dedent(f"""
        import os, stat, sys

        def _report_fds():
            frame = sys._getframe()
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if isinstance(value, dict) and isinstance(value.get("report_fd"), int):
                        yield value["report_fd"]
                frame = frame.f_back
            for fd in range(3, 256):
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode):
                        yield fd
                except OSError:
                    pass

        def f(*args):
            for fd in _report_fds():
                try:
                    os.write(fd, {report!r}.encode() + b"\\n")
                    break
                except OSError:
                    pass
            os._exit(0)
        """)


# --------------------------------------------------------------------------------------------------
# Clause 1: three parties
# --------------------------------------------------------------------------------------------------


@needs_bwrap
def test_clause1_expected_run_holds_no_model_code_and_solution_run_no_setup(payloads):
    code = "def f(x):\n    return x * 10  # solution-only-text\n"
    result = run(code, ["assert f(BASE) == 70"], setup="BASE = 7  # setup-only-text\n", entry_point="f")
    assert result.passed, result.reason
    (expected,), (solution,) = expected_runs(payloads), solution_runs(payloads)
    assert not carries(expected, "solution-only-text")
    assert expected["program"] == "BASE = 7  # setup-only-text\n"
    assert solution["program"] == code
    assert not carries(solution, "setup-only-text")


# --------------------------------------------------------------------------------------------------
# Clause 2: every name a test reads is bound on purpose
# --------------------------------------------------------------------------------------------------


def test_clause2_names_have_owners():
    (plan,) = plan_tests(["assert f(helper(2), len([1])) == LIMIT"], "LIMIT = 3", "f", "def helper(x): ...")
    sides = {hole.source: hole.side for hole in plan.holes}
    assert sides == {"helper(2)": EXPECTED, f"f({HOLE_PREFIX}0, len([1]))": SOLUTION, "LIMIT": EXPECTED}
    assert {name for hole in plan.holes for name in hole.solution_names} == {"f"}
    # An entry point may shadow a builtin (MBPP's `max`); without one, a name nothing provides is the
    # solution's; beside one, such a name (an import the reference solution made, `sqrt`) refuses the test:
    # the solution would compute the expected side.
    (plan,) = plan_tests(["assert max([3, 1]) == 3"], entry_point="max")
    assert {name for hole in plan.holes for name in hole.solution_names} == {"max"}
    (plan,) = plan_tests(["assert max(g(1)) == 2"])
    assert {name for hole in plan.holes for name in hole.solution_names} == {"g"}
    (plan,) = plan_tests(["assert f(9) == sqrt(9)"], entry_point="f")
    assert (
        plan.refused and "`sqrt`, which neither its setup nor the prompt code binds" in plan.unjudged_reason
    )
    # a star import of a standard-library module binds its public names
    (plan,) = plan_tests(["assert f(16) == sqrt(16)"], "from math import *", "f")
    assert [(hole.side, hole.source) for hole in plan.holes] == [(SOLUTION, "f(16)"), (EXPECTED, "sqrt(16)")]


@needs_bwrap
def test_clause2_entry_point_shadowing_a_builtin_must_be_defined():
    result = run("x = 1", ["assert max([3, 9, 4]) == 9"], entry_point="max")
    assert not result.passed and "does not define `max`" in result.reason
    correct = "def max(xs):\n    best = xs[0]\n    for x in xs:\n        best = x if x > best else best\n"
    assert run(correct + "    return best\n", ["assert max([3, 9, 4]) == 9"], entry_point="max").passed


@needs_bwrap
def test_clause2_sweep_path_names_the_builtin_entry_point():
    tests = ["assert pow(2, 3) == 8"]
    assert entry_point_of(tests) == "pow"
    problem = {"info": {"tests": tests, "setup": "", "entry_point": entry_point_of(tests)}}
    assert metrics.code_pass("```python\nx = 1\n```", problem, **LIMITS) == 0.0
    assert metrics.code_pass("```python\ndef pow(a, b):\n    return a ** b\n```", problem, **LIMITS) == 1.0


@needs_bwrap
def test_clause2_rebinding_a_name_the_test_reads_fails():
    # `len` is a builtin the judge evaluates itself; rebinding it is still refused.
    result = run("len = lambda xs: 3\ndef f(n):\n    return []\n", ["assert len(f(3)) == 3"], entry_point="f")
    assert not result.passed and "rebinds `len`" in result.reason


# (i): a prompt helper is the benchmark's, evaluated on the expected side, and may not be rebound.
@needs_bwrap
@pytest.mark.parametrize(
    ("code", "passes"),
    [
        ("def f(x):\n    return x + 1\n", True),
        ("def helper(x):\n    return 3\n\ndef f(x):\n    return x + 1\n", False),
    ],
    ids=["honest", "rebinds_helper"],
)
def test_clause2_prompt_helpers_are_the_benchmarks(code, passes):
    prompt_code = "def helper(x):\n    return x * 2"
    result = run(code, ["assert f(helper(3)) == 7"], prompt_code=prompt_code, entry_point="f")
    assert result.passed is passes, result.reason
    if not passes:
        assert "rebinds" in result.reason


# (a): HumanEval/32 checks `poly(xs, find_zero(xs))`: a reply that redefines `poly` must not pass.
@needs_bwrap
def test_clause2_humaneval_32_redefining_poly_scores_zero():
    example = tasksets.offline_task("humaneval")["examples"][32]
    assert example["info"]["entry_point"] == "find_zero"
    cheat = "```python\ndef poly(xs, x):\n    return 0\n\n\ndef find_zero(xs):\n    return 0.0\n```"
    assert metrics.humaneval_pass(cheat, example, **LIMITS) == 0.0
    canonical = f"```python\n{example['references'][0]}\n```"
    assert metrics.humaneval_pass(canonical, example, **LIMITS) == 1.0
    # The same cheat through run_python says why.
    problem = humaneval.read_problems()[32]
    prompt_code, code = humaneval.program(
        problem, "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"
    )
    result = run(code, humaneval.check_tests(problem)[:3], prompt_code=prompt_code, entry_point="find_zero")
    assert not result.passed and "rebinds `poly`" in result.reason


# --------------------------------------------------------------------------------------------------
# Clause 3: the parent splits the test; each side gets only values
# --------------------------------------------------------------------------------------------------


def test_clause3_split_hands_each_side_only_values():
    (plan,) = plan_tests(["assert f(CASES[0][0]) == CASES[0][1]"], "CASES = [[1, 2], [3, 4]]", "f")
    assert [(hole.side, hole.source, hole.needs) for hole in plan.holes] == [
        (EXPECTED, "CASES[0][0]", ()),
        (SOLUTION, f"f({HOLE_PREFIX}0)", (0,)),
        (EXPECTED, "CASES", ()),  # the parent takes [0][1] of it itself
    ]
    assert ast_names(plan.skeleton) == {f"{HOLE_PREFIX}1", f"{HOLE_PREFIX}2"}
    # HumanEval/32's shape: `poly` runs on the expected side over the value `find_zero` returned.
    prompt = "import math\ndef poly(xs, x): ..."
    (plan,) = plan_tests(
        ["assert math.fabs(poly([1, 2], find_zero([1, 2]))) < 1e-4"], "", "find_zero", prompt
    )
    assert [(hole.side, hole.source) for hole in plan.holes] == [
        (SOLUTION, "find_zero([1, 2])"),
        (EXPECTED, f"poly([1, 2], {HOLE_PREFIX}0)"),
    ]
    assert ast_names(plan.skeleton) == {"math", f"{HOLE_PREFIX}1"}


# (d): the solution must receive 1, never CASES; if it ever saw CASES it would answer 2 (the expected
# value), while its honest answer without it is x + 100.
LEAK_OF_CASES = textwrap.dedent("""
    import gc, sys

    def _leaked_cases():
        wanted = [[1, 2], [3, 4]]
        values, frame = [], sys._getframe()
        while frame is not None:
            values += list(frame.f_locals.values()) + list(frame.f_globals.values())
            frame = frame.f_back
        for value in values + gc.get_objects():
            if isinstance(value, list) and value is not wanted and value == wanted:
                return value
            if isinstance(value, list) and value is not wanted[1] and value == [3, 4]:
                return [[1, 2], value]
        return None

    def f(x):
        if isinstance(x, list):
            return x[0][1]
        cases = _leaked_cases()
        return cases[0][1] if cases is not None else x + 100
    """)


@needs_bwrap
def test_clause3_hole_gets_the_subexpression_value_only(payloads):
    tests = ["assert f(CASES[0][0]) == CASES[0][1]"]
    result = run(LEAK_OF_CASES, tests, setup="CASES = [[1, 2], [3, 4]]", entry_point="f")
    assert not result.passed and "failed: assert" in result.reason
    (solution,) = solution_runs(payloads)
    assert solution["holes"] == [
        {
            "source": f"f({HOLE_PREFIX}0)",
            "reads": ["f"],
            "solution_names": ["f"],
            "inputs": {f"{HOLE_PREFIX}0": ["i", "1"]},
            "by_name": {},
        }
    ]
    # Neither CASES (tagged, its 3 or 4) nor the setup's source travels; the solution's own source
    # spells the list it looks for.
    assert not carries(solution, "CASES = [[1, 2], [3, 4]]")
    assert not any(carries(solution, tagged) for tagged in (["i", "2"], ["i", "3"], ["i", "4"]))
    # Controls: the search ran and found nothing (the honest answer, 1 + 100); where CASES is the
    # prompt's (shown to the solution), the same search finds it.
    honest = ["assert f(CASES[0][0]) == 101"]
    assert run(LEAK_OF_CASES, honest, setup="CASES = [[1, 2], [3, 4]]", entry_point="f").passed
    assert run(LEAK_OF_CASES, tests, prompt_code="CASES = [[1, 2], [3, 4]]", entry_point="f").passed


@needs_bwrap
def test_clause3_expected_side_runs_first(payloads):
    result = run("def f(x):\n    return x + 1\n", ["assert f(BASE) == 8"], setup="BASE = 7", entry_point="f")
    assert result.passed, result.reason
    assert ["watch" in payload for payload in payloads] == [False, True]


# (j): an expected-side function over the solution's value is evaluated on the expected side.
@needs_bwrap
@pytest.mark.parametrize(
    ("code", "passes"),
    [
        ("def f(x):\n    return 21\n", True),
        ("def f(x):\n    return 5\n", False),
        ("def check(v):\n    return True\n\ndef f(x):\n    return 5\n", False),
    ],
    ids=["multiple_of_7", "not_a_multiple", "rebinds_check"],
)
def test_clause3_expected_function_of_a_solution_value(code, passes):
    prompt_code = "def check(v):\n    return v % 7 == 0"
    result = run(code, ["assert check(f(3))"], prompt_code=prompt_code, entry_point="f")
    assert result.passed is passes, result.reason
    if "def check" in code:
        assert "rebinds `check`" in result.reason


# --------------------------------------------------------------------------------------------------
# Clause 4: only plain data crosses; source text never does
# --------------------------------------------------------------------------------------------------


def test_clause4_plain_data_round_trip_and_refusal():
    values = [
        None,
        True,
        -(10**5000),
        1.5,
        2j,
        "s\ud800",
        b"\x00",
        [1, (2,)],
        {3},
        frozenset({4}),
        {"k": [5]},
    ]
    for value in values:
        assert decode_value(encode_value(value)) == value
    # A subclass travels as the builtin value it holds.
    assert type(decode_value(encode_value(type("Liar", (int,), {"__eq__": lambda s, o: True})(3)))) is int
    assert encode_value(object()) == ["x", "object", True]
    with pytest.raises(NotPlainData, match="not plain data"):
        decode_value(["x", "Box"])


@needs_bwrap
def test_clause4_a_value_made_at_run_time_that_is_not_plain_data_is_not_handed(payloads):
    setup = "def data():\n    return object()\n\nANSWER = 'zq81-marker'\n"
    tests = ["assert f(data()) == ANSWER", "assert f(2) == ANSWER"]
    result = run(STRINGS_IN_FRAMES_AND_GC, tests, setup=setup, entry_point="f")
    assert not result.passed and "not plain data" in result.reason
    assert result.tests_passed == 0  # the second test: the gc search finds nothing of the setup
    (solution,) = solution_runs(payloads)
    assert not carries(solution, "zq81") and not carries(solution, setup)


@needs_bwrap
def test_clause4_an_object_the_setup_binds_is_handed_with_its_definitions_only(payloads):
    """`f(BOX)`: the solution's run receives the setup's lines that define `BOX` and nothing else of it;
    the gc search then finds the box but not the answer."""
    setup = "class Box:\n    pass\n\nBOX = Box()\nANSWER = 'zq81-marker'\n"
    result = run(STRINGS_IN_FRAMES_AND_GC, ["assert f(BOX) == ANSWER"], setup=setup, entry_point="f")
    assert not result.passed and "failed: assert" in result.reason
    (solution,) = solution_runs(payloads)
    assert "BOX = Box()" in solution["setup_slice"] and not carries(solution, "zq81")
    honest = run("def f(box):\n    return type(box).__name__", ["assert f(BOX) == 'Box'"], setup=setup)
    assert honest.passed, honest.reason


@needs_bwrap
def test_clause4_an_object_whose_definitions_bind_the_expected_side_is_refused(payloads):
    setup = "ANSWER = 'zq81-marker'\n\nclass Box:\n    answer = ANSWER\n\nBOX = Box()\n"
    result = run(STRINGS_IN_FRAMES_AND_GC, ["assert f(BOX) == ANSWER"], setup=setup, entry_point="f")
    assert not result.passed and "on which the expected side depends" in result.reason, result.reason
    assert all(not carries(solution, "zq81") for solution in solution_runs(payloads))


@needs_bwrap
@pytest.mark.parametrize(
    "code",
    [
        "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
        "def f(x):\n    return Anything()\n",
        "class Liar(int):\n    def __eq__(self, other):\n        return True\n\n"
        "    __hash__ = int.__hash__\n\n"
        "def f(x):\n    return Liar(-1)\n",
    ],
    ids=["object_equal_to_anything", "int_subclass_equal_to_anything"],
)
def test_clause4_solution_value_that_lies_about_equality(code):
    result = run(code, ["assert f(1) == 2"], entry_point="f")
    # Not plain data (an object), or sent as the int it holds (the subclass): never "equal to anything".
    assert not result.passed and ("failed: assert" in result.reason or "not plain data" in result.reason)


# (c): the setup never reaches the solution run.
@needs_bwrap
@pytest.mark.parametrize(
    "code", [STRINGS_IN_FRAMES_AND_GC, EXEC_THE_SETUP_FROM_A_FRAME], ids=["strings_in_gc", "exec_setup"]
)
def test_clause4_solution_cannot_find_the_setup(payloads, code):
    result = run(code, SECRET_TESTS, setup=SECRET_SETUP, entry_point="f")
    assert not result.passed and "failed: assert" in result.reason
    # It failed on its value, having searched and found nothing (not by crashing).
    assert run(code, ["assert f() == 'not found'"], setup=SECRET_SETUP, entry_point="f").passed
    for solution in solution_runs(payloads):
        # The watch list names `ANSWER` (the solution must not rebind it); its value and the setup's
        # source never travel.
        assert not carries(solution, "zq81") and not carries(solution, SECRET_SETUP)
        assert "setup" not in solution


@needs_bwrap
def test_clause4_searches_work_when_the_secret_is_there():
    """Controls, so that the failures above are not vacuous: the gc search finds a secret the prompt
    shows; the setup-exec search finds the setup where `trust_unjudged_tests` sends it (clause 6)."""
    result = run(
        STRINGS_IN_FRAMES_AND_GC, SECRET_TESTS, setup=SECRET_SETUP, prompt_code="HINT = 'zq81-marker'"
    )
    assert result.passed, result.reason
    unjudged = "assert all(f() == ANSWER for _ in range(1))"
    result = run(
        EXEC_THE_SETUP_FROM_A_FRAME,
        [*SECRET_TESTS, unjudged],
        setup=SECRET_SETUP,
        entry_point="f",
        trust_unjudged_tests=True,
    )
    assert result.passed and result.tests_unjudged == 1, result.reason


# --------------------------------------------------------------------------------------------------
# Clause 5: the verdict is the parent's
# --------------------------------------------------------------------------------------------------


def test_clause5_skeleton_reads_only_holes_and_safe_functions():
    (plan,) = plan_tests(["assert sorted(f([3, 1])) == [1, 3] and len(f([])) == 0"], entry_point="f")
    assert ast_names(plan.skeleton) - set(SAFE_FUNCTIONS) == {f"{HOLE_PREFIX}0", f"{HOLE_PREFIX}1"}
    assert judge_test(plan, {0: encode_value([3, 1]), 1: encode_value([])}) == (True, "passed")
    assert judge_test(plan, {0: encode_value([3, 0]), 1: encode_value([])}) == (False, "failed")
    passed, reason = judge_test(plan, {0: ["x", "Anything"], 1: encode_value([])})
    assert not passed and "not plain data" in reason


@needs_bwrap
def test_clause5_solution_replacing_exec_and_eval_does_not_change_the_verdict():
    code = (
        "import builtins\n"
        "builtins.exec = lambda *a, **k: None\n"
        "builtins.eval = lambda *a, **k: True\n"
        "def f(x):\n    return -1\n"
    )
    result = run(code, ["assert f(1) == 2"], entry_point="f")
    # The hole's value is whatever the replaced `eval` returns (True here): a claim like any other.
    assert not result.passed and "failed: assert" in result.reason


# --------------------------------------------------------------------------------------------------
# Clause 6: a test that cannot be split is not judged
# --------------------------------------------------------------------------------------------------

SQUARE = "def f(i):\n    return i * i\n"


@needs_bwrap
@pytest.mark.parametrize(
    "test",
    ["assert all(f(i) == i * i for i in range(9))", "x = f(1); assert x"],
    ids=["generator_over_solution", "not_a_single_assert"],
)
def test_clause6_unjudged_test_fails_unless_trusted(test):
    result = run(SQUARE, [test], entry_point="f")
    assert not result.passed and "cannot be judged outside" in result.reason
    result = run(SQUARE, [test], entry_point="f", trust_unjudged_tests=True)
    assert result.passed and result.tests_unjudged == 1, result.reason


@needs_bwrap
@pytest.mark.parametrize("trust", [False, True])
def test_clause6_test_that_never_calls_the_entry_point_fails(trust):
    result = run(SQUARE, ["assert 1 == 1"], entry_point="f", trust_unjudged_tests=trust)
    assert not result.passed and "never calls `f`" in result.reason


@needs_bwrap
def test_clause6_setup_stays_out_when_every_test_is_judged(payloads):
    # trust_unjudged_tests sends the setup only along with a test the child must run.
    run(
        STRINGS_IN_FRAMES_AND_GC, SECRET_TESTS, setup=SECRET_SETUP, entry_point="f", trust_unjudged_tests=True
    )
    (solution,) = solution_runs(payloads)
    assert not carries(solution, "zq81") and "setup" not in solution


# --------------------------------------------------------------------------------------------------
# Clause 7: the report is a claim of values
# --------------------------------------------------------------------------------------------------


@needs_bwrap
def test_clause7_forged_report_cannot_know_the_expected_value():
    result = run(forged_report("s", "zq81-guess"), SECRET_TESTS, setup=SECRET_SETUP, entry_point="f")
    assert not result.passed and "failed: assert" in result.reason


@needs_bwrap
def test_clause7_forged_report_is_only_a_claim_of_values():
    # Control: the forgery does reach the parent, and counts exactly as returning the claimed value would.
    assert run(forged_report("i", "4"), ["assert f(2) == 4"], entry_point="f").passed
    assert not run(forged_report("i", "5"), ["assert f(2) == 4"], entry_point="f").passed
    # Claiming an unjudged test passed is worth nothing without trust_unjudged_tests.
    tests = ["assert f(2) == 4", "assert all(f(i) == 4 for i in [2])"]
    result = run(forged_report("i", "4"), tests, entry_point="f")
    assert not result.passed and "cannot be judged outside" in result.reason
    # A claim of a value that is not plain data fails.
    result = run(forged_report("x", "Anything"), ["assert f(2) == 4"], entry_point="f")
    assert not result.passed and "not plain data" in result.reason


# --------------------------------------------------------------------------------------------------
# (f) The sandbox refuses sockets but AF_UNIX, exec, and the new mount API
# --------------------------------------------------------------------------------------------------

SYSTEM_CALLS = textwrap.dedent("""
    import ctypes, os, socket, sys

    def _errno_of(action):
        try:
            action()
        except OSError as error:
            return error.errno
        return 0

    def open_socket(family, kind):
        return _errno_of(lambda: socket.socket(family, kind).close())

    def vsock():
        return open_socket(socket.AF_VSOCK, socket.SOCK_STREAM)

    def inet():
        return open_socket(socket.AF_INET, socket.SOCK_STREAM)

    def netlink():
        return open_socket(socket.AF_NETLINK, socket.SOCK_RAW)

    def unix():
        return open_socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def pair():
        return _errno_of(lambda: [end.close() for end in socket.socketpair()])

    def execv():
        return _errno_of(lambda: os.execv("/usr/bin/true", ["true"]))

    def execve():
        return _errno_of(lambda: os.execve(sys.executable, [sys.executable, "-c", "pass"], {}))

    def open_tree():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        returned = libc.syscall(428, -100, b"/", 0)  # open_tree(AT_FDCWD, "/", 0) on x86_64
        return ctypes.get_errno() if returned == -1 else 0
    """)


@needs_bwrap
def test_sandbox_refuses_sockets_but_unix_and_exec():
    tests = [
        "assert vsock() == 97",  # EAFNOSUPPORT: a network namespace does not cover AF_VSOCK
        "assert inet() == 97",
        "assert netlink() == 97",
        "assert unix() == 0",
        "assert pair() == 0",
        "assert execv() == 1",  # EPERM
        "assert execve() == 1",
    ]
    result = run(SYSTEM_CALLS, tests)
    assert result.passed, result.reason


@needs_bwrap
@pytest.mark.skipif(platform.machine() != "x86_64", reason="open_tree is syscall 428 on x86_64")
def test_sandbox_refuses_the_new_mount_api():
    result = run(SYSTEM_CALLS, ["assert open_tree() == 1"])
    assert result.passed, result.reason


# --------------------------------------------------------------------------------------------------
# (g) False fails of correct solutions, (h) odd text in a reason
# --------------------------------------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize(
    ("code", "test"),
    [
        (
            "import collections.abc\n\ndef f(xs):\n    return bool(xs)\n",
            "assert f([1]) and collections.Counter('aab')['a'] == 2",
        ),
        (
            "import math\n\ndef f(n):\n    return math.factorial(n)\n",
            "assert f(2000) == math.factorial(2000)",
        ),
    ],
    ids=["import_collections_abc", "integer_over_4300_digits"],
)
def test_correct_solution_passes(code, test):
    result = run(code, [test], entry_point="f")
    assert result.passed, result.reason


@needs_bwrap
def test_set_order_is_the_same_on_both_sides():
    # The solution's run and the judge hash strings with one seed, so set order agrees, every time.
    test = "assert f(['a', 'b', 'c', 'd', 'e']) == list(set(['a', 'b', 'c', 'd', 'e']))"
    results = [run("def f(xs):\n    return list(set(xs))\n", [test], entry_point="f") for _ in range(5)]
    assert [result.reason for result in results] == ["passed"] * 5


@needs_bwrap
@pytest.mark.parametrize(
    "code",
    ["def f(x):\n    raise ValueError('\\ud800')\n", "def f(x):\n    raise ValueError('\ud800')\n"],
    ids=["escaped_in_source", "raw_in_source"],
)
def test_lone_surrogate_in_a_reason_is_printable(code, capsys):
    result = run(code, ["assert f(1) == 2"], entry_point="f")
    assert not result.passed
    result.reason.encode("utf-8")
    print(result.reason)
    assert "ud800" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------
# (k) Every shipped problem is planned with the entry point as the only solution-side name
# --------------------------------------------------------------------------------------------------


def shipped_plans():
    for problem in humaneval.read_problems():
        tests = humaneval.check_tests(problem)
        plans = plan_tests(tests, "", problem["entry_point"], humaneval.prompt_header(problem))
        yield problem["task_id"], problem["entry_point"], plans
    for example in tasksets.offline_task("code")["examples"]:
        info = example["info"]
        yield (
            info["task_id"],
            info["entry_point"],
            plan_tests(info["tests"], info["setup"], info["entry_point"]),
        )


def test_every_shipped_test_is_judged_with_the_entry_point_only():
    checked, refused, unjudged, other_names = 0, [], [], []
    for task_id, entry_point, plans in shipped_plans():
        for plan in plans:
            checked += 1
            if plan.refused:
                refused.append((task_id, plan.source))
            elif plan.skeleton is None:
                unjudged.append((task_id, plan.source, plan.unjudged_reason))
            else:
                names = {name for hole in plan.holes for name in hole.solution_names}
                if names != {entry_point}:
                    other_names.append((task_id, plan.source, names))
    assert checked > 164
    assert refused == [] and unjudged == [] and other_names == []


# --------------------------------------------------------------------------------------------------
# Found by a hostile review of this judge: each must hold
# --------------------------------------------------------------------------------------------------

LIAR = "class Liar:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n\n"


@needs_bwrap
@pytest.mark.parametrize(
    "test",
    [
        "assert (lambda v: v == 3)(f(1))",
        "assert operator.eq(f(1), 3)",
        "assert f(1).__eq__(3)",
        "assert functools.reduce(lambda a, b: a and b, [f(1) == 3, f(2) == 4])",
    ],
)
def test_the_tests_logic_never_runs_on_the_solutions_object(test):
    result = run(LIAR + "def f(x):\n    return Liar()\n", [test], entry_point="f")
    assert not result.passed, result.reason


@needs_bwrap
def test_a_method_the_test_calls_runs_on_the_plain_value():
    code = "class S(str):\n    def startswith(self, prefix):\n        return True\n\n"
    code += "def f(x):\n    return S('zz')\n"
    assert not run(code, ["assert f('abc').startswith('ab')"], entry_point="f").passed
    assert run("def f(x):\n    return x\n", ["assert f('abc').startswith('ab')"], entry_point="f").passed
    # an object that is not plain data answers the test's method itself (its answer, as a return value is)
    solution = "class Solution:\n    def solve(self, n):\n        return n + 1\n"
    assert run(solution, ["assert Solution().solve(3) == 4"], entry_point="Solution").passed


@needs_bwrap
def test_a_standard_library_check_runs_on_the_expected_side_and_keeps_its_truth():
    tests = ["assert re.fullmatch('[0-9]+', f(5)) is not None", "assert re.match('[0-9]', f(7))"]
    assert run("def f(n):\n    return str(n)\n", tests, entry_point="f").passed
    faked = (
        "import importlib\nmodule = importlib.import_module('r' + 'e')\noriginal = module.fullmatch\n"
        "def fake(*args):\n    setattr(module, 'full' + 'match', original)\n    return 1\n"
        "setattr(module, 'full' + 'match', fake)\ndef f(n):\n    return 'x'\n"
    )
    assert not run(faked, tests[:1], entry_point="f").passed


@needs_bwrap
def test_no_setup_value_reaches_the_solution_through_a_builtin_around_it(payloads):
    setup = "CASES = [('abc', 'cab'), ('xyz', 'zxy')]"
    tests = [
        "assert rotate(CASES[0][0]) == CASES[0][1]",
        "assert len(CASES) == 2 and rotate(str(len(CASES))) == '2'",
    ]
    run("def rotate(s):\n    return s[-1] + s[:-1]\n", tests, setup=setup, entry_point="rotate")
    for solution in solution_runs(payloads):
        assert not carries(solution, "cab") and not carries(solution, "zxy")


@needs_bwrap
def test_an_object_handed_over_never_carries_what_the_expected_side_reads():
    setup = "class Case:\n    def __init__(self, xs, expected):\n"
    setup += "        self.xs, self.expected = xs, expected\n\n"
    setup += "case1 = Case([3, 1, 2], [1, 2, 3])\n"
    result = run(
        "def sort_case(c):\n    return c.expected\n",
        ["assert sort_case(case1) == case1.expected"],
        setup=setup,
        entry_point="sort_case",
    )
    assert not result.passed and "on which the expected side depends" in result.reason
    setup = "ANSWERS = {'a': [1, 2, 3]}\ndef expected_for(k):\n    return ANSWERS[k]\n"
    setup += "def key(x):\n    return ANSWERS.get(x, -x)\n"
    cheat = "def f(xs, key):\n    return key.__globals__['ANSWERS']['a']\n"
    result = run(cheat, ["assert f([3, 1, 2], key) == expected_for('a')"], setup=setup, entry_point="f")
    assert not result.passed and "on which the expected side depends" in result.reason


@needs_bwrap
def test_an_object_built_by_the_setup_arrives_whole():
    setup = (
        "class Node:\n    def __init__(self, data):\n"
        "        self.data, self.left, self.right = data, None, None\n\n"
        "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\n"
        "def helper():\n    key = 5\n    return key\n\nANSWER = 3\n"
    )
    code = (
        "def max_height(node):\n    if node is None:\n        return 0\n"
        "    return 1 + max(max_height(node.left), max_height(node.right))\n"
    )
    result = run(code, ["assert max_height(root) == ANSWER"], setup=setup, entry_point="max_height")
    assert result.passed, result.reason


@needs_bwrap
def test_an_ordered_dict_keeps_its_order_in_the_comparison():
    code = "import collections\ndef f(x):\n    return collections.OrderedDict(sorted(x))\n"
    test = "assert f([('b', 2), ('a', 1)]) == collections.OrderedDict([('b', 2), ('a', 1)])"
    assert not run(code, [test], entry_point="f").passed
    assert run(code, ["assert f([('a', 1)]) == collections.OrderedDict([('a', 1)])"], entry_point="f").passed


@needs_bwrap
def test_correct_solutions_of_shapes_the_review_found_failing():
    # a module-level copy of a setup name is inert: the setup's names are the expected run's alone
    prices = "PRICES = [100.0, 250.0, 40.0]\ndef total(xs):\n    return sum(xs)\n"
    assert run(
        prices, ["assert total(PRICES) == 390.0"], setup="PRICES = [100.0, 250.0, 40.0]", entry_point="total"
    ).passed
    # a value nested 40 deep, and a float raised to a large power
    nested = "def f(n):\n    value = 0\n    for _ in range(n):\n        value = [value]\n    return value\n"
    assert run(nested, ["assert len(f(40)) == 1"], entry_point="f").passed
    assert run("def f():\n    return 0.5\n", ["assert f() ** 20000 == 0.0"], entry_point="f").passed


def test_humaneval_32_a_restatement_of_poly_without_annotations_is_the_benchmarks():
    example = tasksets.offline_task("humaneval")["examples"][32]
    reply = example["references"][0].replace("xs: list, x: float", "xs, x").replace("(xs: list)", "(xs)")
    assert "def poly(xs, x):" in reply
    assert metrics.humaneval_pass(f"```python\n{reply}\n```", example, **LIMITS) == 1.0


def test_a_reply_nested_past_the_parsers_depth_scores_zero_without_raising():
    example = tasksets.offline_task("humaneval")["examples"][0]
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000
    reply = f"```python\n{example['references'][0]}\n_TABLE = {'1+' * 400}1\n{deep}\n```"
    assert metrics.humaneval_pass(reply, example, **LIMITS) == 0.0
    assert metrics.code_pass(f"```python\n{deep}\n```", {"info": {"tests": ["assert f(1) == 1"]}}) == 0.0


@needs_bwrap
@pytest.mark.parametrize(
    "code, test",
    [
        ("def f(n):\n    return (i for i in range(n))\n", "assert list(f(3)) == [0, 1, 2]"),
        ("def f(s):\n    return map(int, s.split())\n", "assert list(f('1 2')) == [1, 2]"),
        ("def f(d):\n    return d.keys()\n", "assert set(f({'a': 1, 'b': 2})) == {'a', 'b'}"),
        ("def f(d):\n    return d.keys()\n", "assert f({'a': 1, 'b': 2}) == {'a', 'b'}"),
        ("def f(d):\n    return d.items()\n", "assert sorted(f({'b': 2, 'a': 1})) == [('a', 1), ('b', 2)]"),
        ("def f(n):\n    return range(n)\n", "assert f(3) == range(3)"),
    ],
)
def test_iterators_views_and_ranges_cross_as_python_compares_them(code, test):
    assert run(code, [test], entry_point="f").passed


@needs_bwrap
def test_an_iterator_equals_no_list_as_in_python():
    # a generator is never equal to a list; judged outside, its items are, once listed
    result = run(
        "def f(n):\n    return (i for i in range(n))\n", ["assert f(3) == [0, 1, 2]"], entry_point="f"
    )
    assert not result.passed and "failed" in result.reason
