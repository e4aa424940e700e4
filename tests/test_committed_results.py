"""No stale committed result: every results folder's derived files are what the current code derives
from its rows.

Each folder under data/results/ is one of: a Gemma-style sweep with derived files (every file notebook 07
keeps beside its rows is derived again here, from the rows, with the current code, and compared), a T5
sweep (its stamped files carry a hash of the rows, settings and code they were computed from, which must
equal the hash of today's rows and code, and the SHA-256 of each file; its other files are derived again),
a folder of rows only (a latency or second-seed run, read by the sweep it belongs to, or a Gemma-style
run still under way, whose rows are committed as they come and whose derived files come when it completes),
or a token-level analysis (computed from the models, not from rows). A folder of any other kind fails: it
goes, or it gets a rule here.
"""

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from tutorial_lib.stats import report
from tutorial_lib.sweeps.sweep_folders import sweep_of
from tutorial_lib.sweeps import result_files, reruns, rows_file

RESULTS = Path(__file__).resolve().parents[1] / "data" / "results"
#: notebook 07's files beside a Gemma-style sweep's rows, and the function whose output each is
GEMMA_TABLES = ("answer_lengths", "paired_differences", "table", "summary")
GEMMA_RESULTS = ("claims", "noise_floor", "latency_by_task", "signed_error", "verdicts_by_c", "flip_points")


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _profile(folder: Path) -> str:
    return _config(folder)["profile"]["profile"]


def _kind(folder: Path) -> str:
    if folder.is_file():
        return "token analysis" if folder.name.startswith("token-analysis-") else "unknown"
    names = {p.name for p in folder.iterdir()}
    if folder.name.startswith(("token-analysis-", "deferral-features-")) and "meta.json" in names:
        return "token analysis"
    if "config.json" not in names or "rows.jsonl" not in names:
        return "unknown"
    derived = names - {"config.json", "rows.jsonl", "sessions.jsonl", "calibration.json"}
    if not derived:
        return "rows only"
    if folder.name.startswith("t5-") and result_files.RESULTS_STAMP in names:
        return "t5"
    if folder.name.startswith("gemma-") and "claims.csv" in names:
        return "gemma"
    return "unknown"


FOLDERS = sorted(RESULTS.iterdir())


def _under_way(folder: Path) -> bool:
    """A Gemma-style sweep of today's profile settings with fewer rows saved than its configurations times
    its items, or with its batch-size-1 latency rows not all saved: a run still under way
    (`benchmarks/gemma_rerun.py --latency` resumes it, the latency rows after the sweep's last chunk)."""
    profile = _profile(folder)
    if profile not in reruns.GEMMA_PROFILES or not folder.name.startswith(f"gemma-{profile}-"):
        return False
    settings = reruns.gemma_profile(profile)
    if _config(folder)["profile"] != reruns.run_config(settings)["profile"]:
        return False  # rows of an older definition of the profile: they go
    tasks = reruns.gemma_tasks(settings)
    expected = reruns.planned_rows(reruns.gemma_configs(settings), tasks)
    if len(rows_file.read_folder_rows(folder)) < expected:  # the rows a resumed sweep would skip
        return True
    if not settings.get("latency_items") or profile in reruns.SECOND_SEED_PROFILES.values():
        return False  # a second seed set has no latency rows of its own: its quality rows are all it runs
    try:  # the stand-ins of the saved latency rows, as notebook 07 finds them (`reruns.latency_pair`)
        saved = reruns.saved_pair(f"gemma-{profile}", settings, results_dir=RESULTS)
        pair = reruns.latency_pair(settings, saved, results_dir=RESULTS)
    except FileNotFoundError:
        return True  # no latency row saved yet
    latency_tasks = [t.head(settings["latency_items"]) for t in tasks]
    latency = sweep_of(
        pair,
        latency_tasks,
        f"gemma-{profile}-latency",
        runner="single",
        extra_config=reruns.latency_run_config(settings),
        root=RESULTS,
    )
    return len(latency.done()) < reruns.planned_rows(reruns.latency_configs(settings), latency_tasks)


def test_every_results_folder_is_of_a_known_kind():
    kinds = {folder.name: _kind(folder) for folder in FOLDERS}
    assert "gemma" in kinds.values() and "t5" in kinds.values()
    unknown = [name for name, kind in kinds.items() if kind == "unknown"]
    assert not unknown, f"results folders of no known kind (derive them here, or remove them): {unknown}"
    # a folder of rows only belongs to a sweep with derived files (its latency rows or its second seed set)
    # or to a run still under way (its own rows, or the second seed set of a run under way)
    owners = {_profile(RESULTS / n) for n, k in kinds.items() if k in ("gemma", "t5")}
    running = {
        _profile(RESULTS / n) for n, k in kinds.items() if k == "rows only" and _under_way(RESULTS / n)
    }
    for name, kind in kinds.items():
        if kind == "rows only":
            profile = _profile(RESULTS / name)
            assert {profile, profile.removesuffix("-seed2")} & (owners | running), (name, profile)


def _as_read_back(table: pd.DataFrame) -> pd.DataFrame:
    """A derived table as it reads back from its CSV file, so both sides parse alike."""
    buffer = io.StringIO()
    table.to_csv(buffer, index=False)
    buffer.seek(0)
    return pd.read_csv(buffer)


def _same(name: str, committed: pd.DataFrame, derived: pd.DataFrame) -> None:
    assert list(committed.columns) == list(derived.columns), f"{name}: the columns differ"
    assert len(committed) == len(derived), f"{name}: {len(committed)} rows committed, {len(derived)} derived"
    pd.testing.assert_frame_equal(
        committed, derived, check_exact=False, rtol=1e-9, atol=1e-12, check_dtype=False, obj=name
    )


GEMMA = [f for f in FOLDERS if _kind(f) == "gemma"]


@pytest.mark.parametrize("folder", GEMMA, ids=[f.name for f in GEMMA])
def test_a_gemma_style_folder_holds_what_its_rows_give_today(folder):
    run = report.saved_gemma_run(_profile(folder), results_dir=RESULTS)
    assert Path(run["rows"].attrs["path"]) == folder
    tables = report.gemma_tables(run["rows"], run["tasks"], cost="modelled_latency_s")
    results = report.gemma_results(
        run["rows"],
        run["tasks"],
        run["calibration"],
        run["latency_rows"],
        t5_rows=run["t5_rows"],
        t5_tasks=run["t5_tasks"],
        progress=False,
        second_seed=run["second_seed"],
    )
    derived = {**tables, **results}
    present = {p.stem for p in folder.glob("*.csv")}
    assert present == set(GEMMA_TABLES + GEMMA_RESULTS), (
        f"{folder.name}: files {sorted(present ^ set(GEMMA_TABLES + GEMMA_RESULTS))} are committed without "
        "being derived here, or derived without being committed: run notebook 07 on this profile"
    )
    stale = []
    for name in sorted(present):
        try:
            _same(
                f"{folder.name}/{name}.csv", pd.read_csv(folder / f"{name}.csv"), _as_read_back(derived[name])
            )
        except AssertionError as error:
            stale.append(f"{name}.csv: {str(error).splitlines()[0]}")
    facts = json.loads((folder / "facts.json").read_text())
    for key, value in results["facts"].items():
        same = (
            facts.get(key) == value
            if isinstance(value, str)
            else facts.get(key) == pytest.approx(value, rel=1e-9)
        )
        if not same:
            stale.append(f"facts.json: {key} is {facts.get(key)!r}, derived {value!r}")
    assert not stale, (
        f"{folder.name} is stale (run notebook 07 with profile={_profile(folder)!r} and commit "
        "its files):\n  " + "\n  ".join(stale)
    )


T5 = [f for f in FOLDERS if _kind(f) == "t5"]


@pytest.mark.parametrize("folder", T5, ids=[f.name for f in T5])
def test_a_t5_folder_holds_what_its_rows_give_today(folder):
    """Its table and summary are derived again and compared; its claims and re-pricing over c (minutes
    to derive) are read back by `write_t5_results` only when the stamp of today's rows, calibration, table,
    settings and code equals the one recorded beside them, and each file still has its recorded SHA-256:
    both are checked here, so the files are today's derivation."""
    from tutorial_lib.stats import analysis, curve_bootstrap, pricing

    rows, tasks, cost = analysis.saved_t5_run(_profile(folder), results_dir=RESULTS)
    assert Path(rows.attrs["path"]) == folder and cost == pricing.LATENCY_COLUMN
    table = curve_bootstrap.curve_table(rows, tasks, cost=cost, n_resamples=2000)
    _same(f"{folder.name}/table.csv", pd.read_csv(folder / "table.csv"), _as_read_back(table))
    summary = analysis.summarize(rows, latency=cost, tasks=tasks)
    _same(f"{folder.name}/summary.csv", pd.read_csv(folder / "summary.csv"), _as_read_back(summary))
    result_files.check_result_files(folder, report.T5_RESULT_FILES)
    # the committed run decoded every sentence at batch size 1: its own rows are the clock's
    stamp = report.t5_stamp(
        rows, tasks, folder, pricing.load_sweep_calibration(rows), table=table, clock_rows=rows
    )
    kept = json.loads((folder / result_files.RESULTS_STAMP).read_text())
    assert kept["t5_results"] == stamp, (
        f"{folder.name}: its claims and re-pricing were computed from other rows, settings or code than "
        "today's (tutorial_lib/stats, maths or decoding/calibration changed since): run notebook 06 and "
        "commit them"
    )


def test_the_manuals_forward_pass_shares_are_the_headline_runs():
    """book/manual/reruns.md quotes the forward passes' share of each HumanEval chunk's wall time."""
    rows = rows_file.read_folder_rows(RESULTS / "gemma-headline-e2cc8ff38748")
    code = [r for r in rows if r["task"] == "humaneval"]
    chunk = 6 * 49  # 6 items under 49 configurations, in the file's order
    shares = [
        sum(r["drafter_time_s"] + r["verifier_time_s"] for r in code[i : i + chunk])
        / sum(r["wall_time_s"] for r in code[i : i + chunk])
        for i in range(0, len(code), chunk)
    ]
    assert code[17 * chunk - 1]["example_id"] == "humaneval-101"
    before, after = shares[:17], shares[17:]
    quoted = f"{min(before):.0%}-{max(before):.0%}".replace("%-", "-")
    later = f"{min(after):.0%}-{max(after):.0%}".replace("%-", "-")
    text = " ".join((Path(__file__).resolve().parents[1] / "book/manual/reruns.md").read_text().split())
    assert f"took {quoted} of each chunk's wall time" in text and f"in the 11 chunks after, {later}" in text
    assert len(after) == 11
