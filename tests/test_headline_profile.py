"""The headline Gemma-style profile: every rule the claims compare at T = 1 and T = 0 with 3 alphas, its T = 0
alphas placed on the committed bf16 T = 0 token analysis, and its second seed set (no model needed)."""

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch

from tutorial_lib.maths import alpha_grids, targets
from tutorial_lib.stats import token_curves
from tutorial_lib.sweeps.configs import GEMMA_CURVES
from tutorial_lib.sweeps.sweep_folders import sweep_of
from tutorial_lib.sweeps import reruns

RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"
GREEDY_ANALYSIS = RESULTS / "token-analysis-95c2a115e487"
#: the run headline replaced (`reruns.EARLIER_PROFILES`)
OFFLINE_LARGE_RUN = "gemma-offline-large-93f757b9c761"
RULE_LABELS = [label for label in GEMMA_CURVES if label not in ("Drafter", "Verifier", "SpecDecode")]


def test_every_rule_runs_at_three_alphas_or_more_at_both_temperatures():
    settings = reruns.gemma_profile("headline")
    configs = reruns.gemma_configs(settings)
    assert len(configs) == len({c.key for c in configs})
    for temperature in (1.0, 0.0):
        counts = Counter(c.label for c in configs if c.temperature == temperature)
        assert {label: counts[label] for label in ("Drafter", "Verifier", "SpecDecode")} == dict.fromkeys(
            ("Drafter", "Verifier", "SpecDecode"), 1
        )
        assert all(counts[label] >= 3 for label in RULE_LABELS), (temperature, counts)
    # the same 513 items as offline-large, tasks cheapest first
    tasks = reruns.gemma_tasks(settings)
    sizes = [(t.name, len(t.examples)) for t in tasks]
    assert sizes == [("facts", 49), ("humaneval", 164), ("arithmetic-300", 300)]
    large = {t.name: t.fingerprint() for t in reruns.gemma_tasks(reruns.gemma_profile("offline-large"))}
    assert all(t.fingerprint() == large[t.name] for t in tasks)
    # the run's size: every configuration on every item, and each task's share of it
    assert reruns.planned_rows(configs, tasks) == 49 * 513 == 25_137
    assert reruns.planned_rows(configs, tasks[:1]) == 49 * 49 and reruns.planned_rows([], tasks) == 0


def test_the_t0_alphas_are_placed_on_the_committed_t0_analysis():
    result = token_curves.TokenAnalysis.load(GREEDY_ANALYSIS)
    assert result.settings["temperature"] == 0.0
    placed = alpha_grids.placed_alphas(result, 3, curves=("token_v2", "token_v3"))
    # Token-V3's alpha = 0 end accepts the draft exactly when it is the verifier's top token at T = 0:
    # SpecDecode
    placed["SpecCascade [Token-V3]"] = [a for a in placed["SpecCascade [Token-V3]"] if a != 0.0]
    placed["SpecCascade [Chow]"] = alpha_grids.plateau_alphas(result, "chow", 3, ends=False)
    placed["SpecCascade [Diff]"] = alpha_grids.plateau_alphas(result, "diff", 3, ends=False)
    for label, alphas in placed.items():
        assert alphas == pytest.approx(reruns.GEMMA_GREEDY_ALPHAS_3[label], abs=1e-4), label
        assert len(alphas) == 3, label


def test_opt_and_token_v1_emit_diffs_tokens_at_t0_so_they_take_diffs_alphas():
    alphas = reruns.GEMMA_GREEDY_ALPHAS_3
    assert alphas["SpecCascade [OPT]"] == alphas["SpecCascade [Token-V1]"] == alphas["SpecCascade [Diff]"]
    # at T = 0 (one-hot scaled laws, decisions on the temperature-1 laws) the three emit the same token
    generator = torch.Generator().manual_seed(0)
    qu = torch.softmax(3 * torch.randn(400, 12, generator=generator), -1)
    pu = torch.softmax(3 * torch.randn(400, 12, generator=generator), -1)
    q = torch.nn.functional.one_hot(qu.argmax(-1), 12).double()
    p = torch.nn.functional.one_hot(pu.argmax(-1), 12).double()
    for alpha in alphas["SpecCascade [Diff]"]:
        emitted = {
            rule: targets.target_distribution(rule, q, p, alpha, q_unscaled=qu, p_unscaled=pu).argmax(-1)
            for rule in ("diff", "opt", "token_v1")
        }
        assert torch.equal(emitted["diff"], emitted["opt"])
        assert torch.equal(emitted["diff"], emitted["token_v1"])
    # the three alphas are on different steps of Diff's staircase: each defers at different positions
    steps = [
        targets.deferral_decision("diff", q, p, alpha, q_unscaled=qu, p_unscaled=pu).sum().item()
        for alpha in alphas["SpecCascade [Diff]"]
    ]
    assert steps == sorted(steps, reverse=True) and len(set(steps)) == 3


def test_the_headline_floor_is_its_own_law_with_a_second_seed_set():
    headline, again = reruns.gemma_profile("headline"), reruns.gemma_profile("headline-seed2")
    assert reruns.SECOND_SEED_PROFILES["headline"] == "headline-seed2"
    for key in ("drafter", "verifier", "dtype", "device", "tasks", "max_new_tokens", "shots"):
        assert again[key] == headline[key], key
    assert again.get("seed", 0) >= max(len(t.examples) for t in reruns.gemma_tasks(again))  # no seed shared
    assert {c.label for c in reruns.gemma_configs(again)} == {"Verifier", "SpecDecode"}
    assert {c.temperature for c in reruns.gemma_configs(again)} == {1.0}


def test_a_session_of_the_run_records_the_commit_its_code_came_from():
    import re
    import subprocess

    module = _gemma_rerun_script()
    script = Path(module.__file__)
    recorded = module._code_commit()
    try:
        head = subprocess.run(
            ["git", "-C", str(script.parent), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # an unpacked archive, not a clone
        assert recorded == "unknown"
        return
    assert re.fullmatch(r"[0-9a-f]{12}(\+changes)?", recorded) and recorded.startswith(head)


def _gemma_rerun_script():
    import importlib.util

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "gemma_rerun.py"
    spec = importlib.util.spec_from_file_location("gemma_rerun_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _session_log(module, folder, done, *, before: int, items: int, heartbeat_s: float):
    """A session of the script over a stand-in sweep (its folder and saved rows) of one task."""
    import time
    from types import SimpleNamespace

    sweep = SimpleNamespace(path=folder, done=done)
    task = SimpleNamespace(name="facts", examples=[0] * items)
    started = "2026-12-05T00:00:00+00:00"
    return module.SessionLog(
        sweep,
        started,
        time.perf_counter(),
        time.process_time(),
        2,
        before,
        1,
        [task],
        heartbeat_s=heartbeat_s,
    )


def test_a_session_whose_machine_stops_without_a_signal_is_appended_by_the_next_from_its_heartbeat(tmp_path):
    import json
    import time

    module = _gemma_rerun_script()
    saved = {("facts", "c", i) for i in range(3)}
    log = _session_log(module, tmp_path, lambda: set(saved), before=3, items=5, heartbeat_s=0.05)
    log.start_heartbeat()
    saved.add(("facts", "c", 3))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # a heartbeat that has seen the fourth row
        beat = tmp_path / module.OPEN_SESSION
        if beat.exists() and json.loads(beat.read_text())["rows_after"] == 4:
            break
        time.sleep(0.02)
    log.stop_beating.set()  # the machine goes: no line is written, the heartbeat stays
    assert not (tmp_path / "sessions.jsonl").exists()
    recovered = module.recover_unrecorded_session(tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "sessions.jsonl").read_text().splitlines()]
    assert lines == [recovered]
    assert (recovered["rows_before"], recovered["rows_after"], recovered["finished"]) == (3, 4, False)
    assert "unrecorded stop" in recovered["ended_by"]
    assert not (tmp_path / module.OPEN_SESSION).exists()
    assert module.recover_unrecorded_session(tmp_path) is None  # appended once


def test_a_session_that_ends_writes_its_line_once_and_leaves_no_heartbeat(tmp_path):
    import json
    import time

    module = _gemma_rerun_script()
    saved = {("facts", "c", 0), ("facts", "c", 1)}
    log = _session_log(module, tmp_path, lambda: saved, before=0, items=2, heartbeat_s=0.01)
    log.start_heartbeat()
    time.sleep(0.1)
    log.write(finished=True)
    log.write()  # the exit hook after the sweep's own line: nothing more
    time.sleep(0.1)  # a heartbeat thread still running would write here
    lines = [json.loads(x) for x in (tmp_path / "sessions.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["finished"] and lines[0]["rows_after"] == 2
    assert lines[0]["machine"].endswith(f"threads {torch.get_num_threads()}")  # the processor is named
    assert not (tmp_path / module.OPEN_SESSION).exists()


def test_the_progress_of_the_committed_headline_run_counts_every_saved_row_once_per_task():
    import json

    settings = reruns.gemma_profile("headline")
    pair = reruns.saved_pair("gemma-headline", settings)
    tasks, configs = reruns.gemma_tasks(settings), reruns.gemma_configs(settings)
    rows, progress = reruns.finished_rows(pair, tasks, configs, "gemma-headline", settings)
    folder = sweep_of(pair, tasks, "gemma-headline", runner="batch", extra_config=reruns.run_config(settings))
    lines = [json.loads(x) for x in (folder.path / "rows.jsonl").read_text().splitlines() if x.strip()]
    assert list(progress.index) == [t.name for t in tasks]
    assert progress["rows_saved"].sum() == len({(r["task"], r["config"], r["example_id"]) for r in lines})
    assert (progress["rows_planned"] == [len(configs) * len(t.examples) for t in tasks]).all()
    assert (progress["finished"] == (progress["rows_saved"] == progress["rows_planned"])).all()
    assert progress.loc["facts", "finished"]  # the first task of the run, finished in its first sessions
    assert rows.attrs["path"] == str(folder.path)
    finished = set(progress.index[progress["finished"]])
    assert set(rows["task"]) == finished and len(rows) == progress.loc[list(finished), "rows_saved"].sum()


def test_a_runs_sessions_add_up_and_the_rows_no_line_accounts_for_are_counted(tmp_path):
    import json

    def line(before, after, seconds, **extra):
        return {
            "start": "2026-12-05T00:00:00+00:00",
            "seconds": seconds,
            "cpu_seconds": 2 * seconds,
            "threads": 2,
            "rows_before": before,
            "rows_after": after,
            "finished": False,
            "configurations": 49,
            "items": {"facts": 49, "humaneval": 164},
            **extra,
        }

    assert reruns.run_sessions(tmp_path, 0) is None  # a folder the script never ran
    sessions = [
        line(0, 100, 3600),
        line(100, 150, 1800, machine="AMD EPYC|avx512_bf16|torch 2.13.0+cpu|threads 2"),
        # 150 -> 180: a session shut down before heartbeats existed; then one recovered from its heartbeat
        line(180, 200, 900, ended_by="unrecorded stop: end, seconds and rows are its last heartbeat's"),
        line(200, 230, 900, finished=True),
    ]
    (tmp_path / "sessions.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions))
    table, totals = reruns.run_sessions(tmp_path, 240)  # 10 rows after the last line: another unlogged stop
    assert totals == {
        "sessions": 4,
        "wall_hours": 2.0,
        "cpu_hours": 4.0,
        "rows_planned": 49 * 213,
        "rows_unlogged": 30 + 10,
    }
    assert list(table["rows made"]) == [100, 50, 20, 30] and (table["CPU over wall"] == 2).all()
    assert list(table["ended"]) == [
        "stopped by a signal",
        "stopped by a signal",
        "last heartbeat (no signal)",
        "finished",
    ]
    assert list(table["processor"]) == ["not recorded", "AMD EPYC", "not recorded", "not recorded"]


def test_the_committed_headline_run_names_the_rows_its_sessions_do_not_account_for():
    settings = reruns.gemma_profile("headline")
    pair = reruns.saved_pair("gemma-headline", settings)
    tasks, configs = reruns.gemma_tasks(settings), reruns.gemma_configs(settings)
    rows, progress = reruns.finished_rows(pair, tasks, configs, "gemma-headline", settings)
    table, totals = reruns.run_sessions(rows.attrs["path"], int(progress["rows_saved"].sum()))
    made = int(table["rows made"].sum()) + totals["rows_unlogged"]
    assert made == progress["rows_saved"].sum() and totals["rows_planned"] == progress["rows_planned"].sum()


def test_the_headline_run_is_set_beside_offline_large_whose_claims_are_read_from_its_folder(tmp_path):
    earlier_profile, before = reruns.earlier_claims(reruns.gemma_profile("headline"))
    assert earlier_profile == "offline-large"
    assert before.equals(pd.read_csv(RESULTS / OFFLINE_LARGE_RUN / "claims.csv"))
    assert reruns.earlier_claims(reruns.gemma_profile("offline-large"))[0] == "offline-all"
    # a profile that replaced no run, and a results folder without the earlier run: nothing to compare with
    assert reruns.earlier_claims(reruns.gemma_profile("smoke")) is None
    assert reruns.earlier_claims(reruns.gemma_profile("headline"), results_dir=tmp_path) is None
    # the earlier run saved, its claims not
    copy = tmp_path / OFFLINE_LARGE_RUN
    copy.mkdir()
    (copy / "config.json").write_text((RESULTS / OFFLINE_LARGE_RUN / "config.json").read_text())
    (copy / "rows.jsonl").write_text("")
    assert reruns.earlier_claims(reruns.gemma_profile("headline"), results_dir=tmp_path) is None


def test_the_headline_latency_rows_take_the_middle_of_token_v2s_t0_quality_alphas():
    settings = reruns.gemma_profile("headline")
    token = {
        (c.alpha, c.gamma) for c in reruns.latency_configs(settings) if c.label == "SpecCascade [Token-V2]"
    }
    middle = reruns.GEMMA_GREEDY_ALPHAS_3["SpecCascade [Token-V2]"][1]
    assert token == {(middle, 1), (middle, 5)}
    with pytest.raises(ValueError, match="pick one of"):
        reruns.latency_configs({**settings, "latency_alphas": {0.0: {"SpecCascade [Token-V2]": 0.3}}})
    # the pick is the T = 0 rows': a run at T = 1 alone takes its first T = 1 alpha
    warm = reruns.gemma_profile("headline", temperatures=[1.0])
    alphas = {c.alpha for c in reruns.latency_configs(warm) if c.label == "SpecCascade [Token-V2]"}
    assert alphas == {warm["alphas"]["SpecCascade [Token-V2]"][0]}
