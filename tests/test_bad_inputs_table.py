"""The bad inputs found by trying the public functions, each with the error it now gives, as one table.

Each row: what the issue saw (`silent`, `late`: failed only after rows were computed, `crash`: deep or
unclear, `mislead`: a wrong message), the call, and the message it must now raise early, naming the
argument, the value and what to pass. The test fails if any call stops raising (becomes silent again)
or its message loses what it names. `test_the_table_prints` shows every message (`pytest -s`)."""

import math

import numpy as np
import pytest

import tutorial_lib as tl
from tutorial_lib.decoding import calibration
from tutorial_lib import checks
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Config, Task, sweep_configs
from tutorial_lib.sweeps.sweep_folders import Sweep
from tutorial_lib.decoding.options import stop_tokens
from tutorial_lib.tasks.sandbox import run_python

pytestmark = pytest.mark.usefixtures("one_thread")

TOY = tl.load_pair("toy-drafter", "toy-verifier")
EXAMPLES = [{"id": "a", "prompt": "mi", "references": ["x"]}]


def _task(**overrides):
    return Task(**{"name": "t", "metric": "qa_em", "examples": EXAMPLES, "max_new_tokens": 2, **overrides})


def _config(**overrides):
    return Config(**{"label": "Drafter", "method": "drafter", **overrides})


def _sweep(tmp_path, **overrides):
    options = {"name": "bad-input", "root": tmp_path, "progress": False, **overrides}
    return ev.run_sweep(TOY, [_task()], [_config()], **options)


def _nan_metric(prediction, example):
    return math.nan


# (was, case, call(tmp_path), exception types, regex the message must match)
TABLE = [
    (
        "silent",
        "BiLD's decision with a distance that gives NaN",
        lambda t: tl.deferral_decision(
            "bild",
            *[tl.probabilities(np.array([1.0, 0.0])) for _ in (0, 1)],
            0.1,
            distance=lambda q, p: math.nan,
        ),
        ValueError,
        r"the distance gave NaN",
    ),
    (
        "silent",
        "calibrate(context_tokens=10**6)",
        lambda t: tl.calibrate(TOY, context_tokens=10**6, progress=False),
        ValueError,
        r"context_tokens=1000000: .* use at most 4096",
    ),
    (
        "silent",
        "run_python with no tests",
        lambda t: run_python("x = 1", []),
        ValueError,
        r"tests=\[\]: with no test nothing is judged",
    ),
    (
        "silent",
        "eos_token_id=-1",
        lambda t: stop_tokens(-1, TOY.verifier),
        ValueError,
        r"eos_token_id=-1 is below 0",
    ),
    (
        "silent",
        "eos_token_id=999 (beyond the vocabulary)",
        lambda t: stop_tokens(999, TOY.verifier),
        ValueError,
        r"eos_token_id=999 is not a token of the verifier",
    ),
    (
        "silent",
        "run_sweep(eos_token_id=999)",
        lambda t: _sweep(t, eos_token_id=999),
        ValueError,
        r"eos_token_id=999 is not a token of the verifier",
    ),
    (
        "silent",
        "rule='nonsense' with method='drafter' (Config)",
        lambda t: _config(rule="nonsense"),
        ValueError,
        r"rule='nonsense' with method='drafter'.*pass rule=None",
    ),
    (
        "silent",
        "rule='nonsense' with method='drafter' (generate)",
        lambda t: tl.generate(*TOY, [0, 5], method="drafter", rule="nonsense", max_new_tokens=2),
        ValueError,
        r"rule='nonsense' with method='drafter'.*pass rule=None",
    ),
    (
        "silent",
        "run_sweep(name='../../escape')",
        lambda t: _sweep(t, name="../../escape"),
        ValueError,
        r"name='\.\./\.\./escape' is not a run name.*inside the results folder",
    ),
    (
        "silent",
        "Sweep(name='/tmp/x')",
        lambda t: Sweep("/tmp/x", {}, t),
        ValueError,
        r"name='/tmp/x' is not a run name",
    ),
    (
        "silent",
        "run_sweep(max_rows=-1)",
        lambda t: _sweep(t, max_rows=-1),
        ValueError,
        r"max_rows=-1 is below 0",
    ),
    (
        "silent",
        "a metric returning NaN",
        lambda t: _task(metric=_nan_metric).score("x", _task().examples[0]),
        ValueError,
        r"metric '_nan_metric' of task 't' returned nan for example 'a'",
    ),
    (
        "late",
        "Config(rule='nope')",
        lambda t: Config("SpecDecode", "speculative", rule="nope"),
        ValueError,
        r"rule='nope' is unknown; choose one of",
    ),
    (
        "late",
        "Config(alpha=nan)",
        lambda t: _config(alpha=math.nan),
        ValueError,
        r"alpha is NaN; pass a number",
    ),
    ("late", "Config(gamma=0)", lambda t: _config(gamma=0), ValueError, r"gamma=0 is below 1"),
    (
        "late",
        "Config(temperature=-1)",
        lambda t: _config(temperature=-1.0),
        ValueError,
        r"temperature=-1.0 is invalid",
    ),
    (
        "late",
        "Config(bonus='sometimes')",
        lambda t: _config(bonus="sometimes"),
        ValueError,
        r"bonus='sometimes' is unknown",
    ),
    (
        "late",
        "Task(max_new_tokens=0)",
        lambda t: _task(max_new_tokens=0),
        ValueError,
        r"max_new_tokens=0 is below 1",
    ),
    ("late", "Task(metric='nope')", lambda t: _task(metric="nope"), ValueError, r"metric='nope' is unknown"),
    (
        "crash",
        "load_pair('tiny-random-llama:abc')",
        lambda t: tl.load_pair("tiny-random-llama:abc", "tiny-random-llama"),
        ValueError,
        r"seed, a whole number >= 0; got 'abc'",
    ),
    (
        "crash",
        "load_pair(dtype=('bfloat16',))",
        lambda t: tl.load_pair("toy-drafter", "toy-verifier", dtype=("bfloat16",)),
        ValueError,
        r"dtype=\('bfloat16',\): pass one dtype for both models, or a pair",
    ),
    (
        "crash",
        "seed=2**70",
        lambda t: tl.generate(*TOY, [0, 5], method="drafter", max_new_tokens=2, seed=2**70),
        ValueError,
        r"seed=1180591620717411303424 is larger than torch's largest seed",
    ),
    (
        "crash",
        "run_sweep(seed=2**70)",
        lambda t: _sweep(t, seed=2**70),
        ValueError,
        r"seed=1180591620717411303424 is larger than torch's largest seed",
    ),
    (
        "crash",
        "Config(alpha='0.3')",
        lambda t: _config(alpha="0.3"),
        TypeError,
        r"alpha='0.3' is not a number; pass a float such as alpha=0.3 \(not a string\)",
    ),
    (
        "crash",
        "run_sweep(batch_size=0)",
        lambda t: _sweep(t, runner="batch", batch_size=0),
        ValueError,
        r"batch_size=0 is below 1",
    ),
    (
        "crash",
        "example id of another type",
        lambda t: _task(examples=[{"id": 1.5, "prompt": "mi"}]),
        TypeError,
        r"example id=1.5 is a float; pass a string",
    ),
    (
        "mislead",
        "alpha=inf",
        lambda t: tl.target_distribution("opt", *tl.models.next_token_distributions(TOY, [0, 5]), math.inf),
        ValueError,
        r"alpha=inf is infinite; pass a finite number",
    ),
    (
        "mislead",
        "Config(alpha=inf)",
        lambda t: Config("SpecCascade [OPT]", "speculative", "opt", math.inf),
        ValueError,
        r"alpha=inf is infinite",
    ),
    (
        "mislead",
        "beta=nan",
        lambda t: Config("SpecDecode [Lossy]", "speculative", "lossy", 0.2, math.nan),
        ValueError,
        r"beta is NaN; pass a number",
    ),
    (
        "mislead",
        "calibrate(max_k=2.5)",
        lambda t: calibration.calibrate(TOY, max_k=2.5),
        ValueError,
        r"max_k=2.5 is not a whole number",
    ),
    (
        "mislead",
        "sweep_configs(temperatures='[1.0]')",
        lambda t: sweep_configs(["Drafter"], temperatures="[1.0]"),
        TypeError,
        r"temperatures='\[1.0\]' is a string; pass a list, e.g. temperatures=\[0.0, 1.0\]",
    ),
    (
        "mislead",
        "sweep_configs(curves='Drafter')",
        lambda t: sweep_configs("Drafter"),
        TypeError,
        r"curves='Drafter' is a string; pass a list",
    ),
    (
        "mislead",
        "sweep_configs(n_alpha=1)",
        lambda t: sweep_configs(["Drafter"], n_alpha=1),
        ValueError,
        r"n_alpha=1 is below 2",
    ),
]

# Whole numbers given as numpy integers or whole floats are accepted where an integer is meant.
ACCEPTED = [
    ("Config(gamma=np.int64(4))", lambda: _config(gamma=np.int64(4)).gamma, 4),
    ("Config(gamma=2.0)", lambda: _config(gamma=2.0).gamma, 2),
    ("Task(max_new_tokens=np.int32(3))", lambda: _task(max_new_tokens=np.int32(3)).max_new_tokens, 3),
    (
        "sweep_configs(n_alpha=np.int64(3), gammas=[2.0])",
        lambda: len(sweep_configs(["SpecCascade [Chow]"], n_alpha=np.int64(3), gammas=[2.0])),
        3,
    ),
    ("Config(alpha=np.float32(0.5))", lambda: _config(alpha=np.float32(0.5)).alpha, 0.5),
    ("check_seed(np.uint64(7))", lambda: checks.check_seed(np.uint64(7)), 7),
    (
        "Calibration.synthetic(max_k=np.int64(4))",
        lambda: calibration.Calibration.synthetic(0.1, lambda k: 0.2 * k, max_k=np.int64(4)).max_k,
        4,
    ),
]


@pytest.mark.parametrize("was, case, call, kinds, message", TABLE, ids=[row[1] for row in TABLE])
def test_every_bad_input_is_named_early(tmp_path, was, case, call, kinds, message):
    with pytest.raises(kinds, match=message):
        call(tmp_path)
    assert list(tmp_path.iterdir()) == [], f"{case}: something was written before the error"


@pytest.mark.parametrize("case, call, expected", ACCEPTED, ids=[row[0] for row in ACCEPTED])
def test_whole_numbers_of_other_types_are_accepted(case, call, expected):
    value = call()
    assert value == expected and type(value) in (int, float)


def test_the_table_prints(tmp_path, capsys):
    lines = ["| was | input | error |", "|---|---|---|"]
    for was, case, call, kinds, _ in TABLE:
        try:
            call(tmp_path)
            text = "NO ERROR"
        except kinds as error:
            text = f"{type(error).__name__}: {error}"
        lines.append(f"| {was} | `{case}` | {text.replace('|', '/')} |")
    print("\n".join(lines))
    assert "NO ERROR" not in "\n".join(lines)


def test_alpha_given_to_a_method_without_a_rule_is_a_no_op_with_a_warning():
    prompt = TOY.verifier.encode("mi")
    with pytest.warns(UserWarning, match=r"alpha=5 has no effect with method='drafter'"):
        warned = tl.generate(TOY.drafter, TOY.verifier, prompt, method="drafter", alpha=5, max_new_tokens=3)
    plain = tl.generate(TOY.drafter, TOY.verifier, prompt, method="drafter", max_new_tokens=3)
    assert warned.tokens == plain.tokens


def test_the_text_none_of_an_optional_parameter_is_none():
    from tutorial_lib.lessons.parameters import check_parameters

    namespace = {"results_dir": "None"}  # papermill -p results_dir None
    assert check_parameters(namespace, {"results_dir": "str|None"}) == {"results_dir": None}
    assert namespace["results_dir"] is None
