"""The offline-large Gemma-style profile: its tasks, its configurations, its T = 0 alphas (no model
needed)."""

from collections import Counter
from pathlib import Path

import pytest

from tutorial_lib.maths import alpha_grids

from tutorial_lib.sweeps import reruns

from tutorial_lib.stats import token_curves
from tutorial_lib.sweeps.configs import GEMMA_CURVES

RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"
GREEDY_ANALYSIS = RESULTS / "token-analysis-467910ba0826"
TOKEN_LABELS = ["SpecCascade [Token-V1]", "SpecCascade [Token-V2]", "SpecCascade [Token-V3]"]


def test_the_profile_reads_the_three_large_task_sets_without_a_model():
    settings = reruns.gemma_profile("offline-large")
    tasks = reruns.gemma_tasks(settings)
    assert [(t.name, len(t.examples), t.max_new_tokens, t.metric_name) for t in tasks] == [
        ("humaneval", 164, settings["max_new_tokens"]["humaneval"], "humaneval"),
        ("arithmetic-300", 300, settings["max_new_tokens"]["arithmetic-300"], "gsm8k"),
        ("facts", 49, settings["max_new_tokens"]["facts"], "qa_em"),
    ]
    assert all(t.chat for t in tasks)
    # the arithmetic prompts of offline-all's 60 items are the first 60 here (same shots, same order)
    old = {t.name: t for t in reruns.gemma_tasks(reruns.gemma_profile("offline-all"))}
    assert [e.prompt for e in tasks[1].examples[:60]] == [e.prompt for e in old["arithmetic"].examples]
    assert tasks[2].fingerprint() == old["facts"].fingerprint()


def test_t1_runs_every_curve_once_and_t0_only_what_can_differ():
    configs = reruns.gemma_configs(reruns.gemma_profile("offline-large"))
    ones = [c for c in configs if c.temperature == 1.0]
    assert Counter(c.label for c in ones) == {label: 1 for label in GEMMA_CURVES}
    # the T = 1 configurations are offline-all's middle ones: the same keys, comparable row for row
    old_keys = {c.key for c in reruns.gemma_configs(reruns.gemma_profile("offline-all"))}
    assert {c.key for c in ones} <= old_keys
    greedy = [c for c in configs if c.temperature == 0.0]
    assert Counter(c.label for c in greedy) == {
        "Verifier": 1,
        "SpecDecode": 1,
        **{label: 1 for label in TOKEN_LABELS},
    }
    assert len(configs) == len({c.key for c in configs}) == 15
    for config in greedy:
        if config.label in TOKEN_LABELS:
            rule = config.rule
            low, high = alpha_grids.live_range(rule)
            assert low < config.alpha < high, config  # interior: never an end that another run stands for


def test_the_t1_alphas_are_placed_halfway_on_the_committed_t1_analysis():
    result = token_curves.TokenAnalysis.load(RESULTS / "token-analysis-4368c63a9810")
    placed = alpha_grids.placed_alphas(result, 1)
    placed["SpecCascade [Token-V3]"] = [a for a in placed["SpecCascade [Token-V3]"] if a != 0.0]
    assert placed.keys() == reruns.GEMMA_MIDDLE_ALPHAS.keys()
    for label, alphas in placed.items():
        assert alphas == pytest.approx(reruns.GEMMA_MIDDLE_ALPHAS[label], abs=1e-4), label
        assert alphas[0] in reruns.GEMMA_OFFLINE_ALPHAS[label]


def test_the_offline_all_profile_is_unchanged_so_its_committed_run_still_loads():
    settings = reruns.gemma_profile("offline-all")
    assert "greedy_alphas" not in settings and settings["tasks"] == ["code", "arithmetic", "facts"]
    assert len(reruns.gemma_configs(settings)) == 31


def test_the_greedy_alphas_are_placed_from_the_committed_t0_token_analysis():
    result = token_curves.TokenAnalysis.load(GREEDY_ANALYSIS)
    assert result.settings["temperature"] == 0.0
    placed = alpha_grids.placed_alphas(result, 1, curves=("token_v1", "token_v2", "token_v3"))
    placed["SpecCascade [Token-V3]"] = [
        a for a in placed["SpecCascade [Token-V3]"] if a != 0.0
    ]  # = SpecDecode at T = 0
    assert placed.keys() == reruns.GEMMA_GREEDY_ALPHAS.keys()
    for label, alphas in placed.items():
        assert alphas == pytest.approx(reruns.GEMMA_GREEDY_ALPHAS[label], abs=1e-4), label
