"""A processor other than the one that made the committed rows finds nothing to compute.

Another processor's vector routines (`np.linspace`, `np.geomspace`, sums) may round the last bit of a
float otherwise. Here every float of the reruns' profiles (their values; a dict's keys are names) and
every grid those routines compute is moved by one unit in the last place, and the T5 and Gemma-style
notebooks' loading of the committed run must still find every row: none missing (that would be rows to
compute), none duplicated, under the keys the committed folders give."""

import copy

import numpy as np
import pytest

from tutorial_lib.stats import analysis, report
from tutorial_lib.sweeps import reruns


def _moved(value):
    """Every float in `value` one unit in the last place higher (0.0 stays: a literal 0 has no last bit
    that a processor rounds, and its neighbour, 5e-324, is no grid's point)."""
    if isinstance(value, float) and value != 0.0:
        return float(np.nextafter(value, np.inf))
    if isinstance(value, dict):
        return {key: _moved(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(item) for item in value)
    return value


@pytest.fixture
def another_processor(monkeypatch):
    for name in ("T5_PROFILES", "GEMMA_PROFILES"):
        monkeypatch.setattr(reruns, name, _moved(copy.deepcopy(getattr(reruns, name))))
    for routine in ("linspace", "geomspace"):
        original = getattr(np, routine)

        def moved(*args, _original=original, **kwargs):
            grid = _original(*args, **kwargs)
            if not (isinstance(grid, np.ndarray) and grid.dtype.kind == "f"):
                return grid  # an integer grid (pandas asks for some) has no last bit to move
            return np.where(grid != 0, np.nextafter(grid, np.inf), grid)

        monkeypatch.setattr(np, routine, moved)
    assert reruns.t5_profile("offline") == _unmoved("t5")  # the profile reads back its exact values


def _unmoved(kind):
    # what the unpatched profile holds, read from the module that defines it
    from tutorial_lib.sweeps import rerun_profiles

    profiles = rerun_profiles.T5_PROFILES if kind == "t5" else rerun_profiles.GEMMA_PROFILES
    return {**copy.deepcopy(profiles["offline"]), "profile": "offline"}


def test_the_t5_run_loads_complete_with_every_float_moved(another_processor):
    rows, tasks, _ = analysis.saved_t5_run("offline")  # MissingRowsError if a row were to compute
    configs = reruns.t5_configs(reruns.t5_profile("offline"))
    assert len(rows) == len(configs) * sum(len(t.examples) for t in tasks)
    assert set(rows["config"]) == {c.key for c in configs}
    assert not rows.duplicated(["task", "config", "example_id"]).any()


def test_the_headline_run_loads_complete_with_every_float_moved(another_processor):
    run = report.saved_gemma_run("headline")
    configs = reruns.gemma_configs(run["settings"])
    tasks = run["tasks"]
    assert len(run["rows"]) == len(configs) * sum(len(t.examples) for t in tasks)
    assert not run["rows"].duplicated(["task", "config", "example_id"]).any()
    latency = reruns.latency_configs(run["settings"])
    assert len(run["latency_rows"]) == len(latency) * len(tasks) * run["settings"]["latency_items"]
    assert run["second_seed"] is not None and len(run["second_seed"])
