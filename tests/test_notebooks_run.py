"""Every notebook executes under papermill with small parameters, as a student runs it from a shared,
read-only install, and the numbers it records hold.

Each notebook runs once here (the book's browser test builds the book from these runs). The package and its
data are copied into a temporary "site" folder and made read-only (as a shared install on a teaching server
would be); each notebook is executed with `PYTHONPATH` pointing at that copy, from a fresh student folder
outside any checkout, with no `TUTORIAL_LIB_*` folder set. The run must succeed (a write into the install
would fail on the read-only files), leave its metrics, figures and caches in the student's folder, and leave
this repository's `git status` as it found it (no figures/, data/results/ or notebooks/*.metrics.json
written). Run as root, the permission bits stop nothing, so the site's file listing is compared before and
after as well.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import papermill
import pytest
from jupyter_client.kernelspec import find_kernel_specs
import tutorial_lib as tl
from conftest import EXECUTED_FOR_BOOK
from test_results_pages import GLUE_ROLE  # the static check's reading of a glue role
from tutorial_lib.sweeps.configs import CURVES, GEMMA_CURVES

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO / "notebooks"
FOLDER_SETTINGS = ("TUTORIAL_LIB_FIGURES", "TUTORIAL_LIB_RESULTS", "TUTORIAL_LIB_OUTPUT")
#: Where a notebook run from the student's folder may write (besides its own executed copy).
STUDENT_FOLDERS = ("out/", "figures/", "results/", "data/results/")

# Small overrides per notebook: CI runs these; `make tutorial` runs the defaults.
SMALL_PARAMETERS = {
    "00_quickstart": {"n_alpha": 9, "n_simulations": 4000},
    # T = 0 and a real (tiny random) model pair, the paths the defaults do not take.
    "01_target_distributions": {
        "rule": "chow",
        "alpha": 0.5,
        "temperature": 0.0,
        "gamma": 3,
        "real_pair": ["tiny-random-llama:0", "tiny-random-llama:1"],
        "real_prompt": [1, 2, 3],
        "timing_pair": ["tiny-random-llama:0", "tiny-random-llama:1"],
        "timing_tokens": 8,
        "timing_prompt": [1, 2, 3],
    },
    "02_rejection_rates": {"n_alpha": 9, "n_draws": 3000, "r_values": [0.0, 0.5, 1.0]},
    "03_lemma1_token_cascades": {"n_alpha": 9, "sharpness_values": [0.5, 1.0, 3.0]},
    "04_lemma2_lossy": {"n_alpha": 6, "check_temperatures": [1.0, 0.0]},
    "05_lemma4_spec_cascades": {
        "n_alpha_lemma": 9,
        "lemma_temperatures": [1.0, 0.5],
        "n_alpha": 5,
        "n_engine": 200,
    },
    # The reruns' smoke profiles: tiny trained T5 pair; SmolLM2-135M with a drafter of its first layers.
    "06_t5_evaluation": {"profile": "smoke"},
    "07_gemma_evaluation": {"profile": "smoke"},
    # Two tiny random transformers: calibration, fixed gamma, gamma="auto", the sliders' callbacks.
    # SmolLM2-135M and a drafter of its first 16 layers, two answers per task; the toy-world check smaller.
    "08_real_pair_token_analysis": {
        "profile": "smoke",
        "n_alpha": 11,
        "n_resamples": 200,
        "toy_sequences": 1000,
    },
    "09_speed_on_your_hardware": {"profile": "smoke"},
    # SmolLM2-135M and its first 16 layers, fewer draws; the learned rule on the committed Qwen data.
    "10_rules_in_engines": {"profile": "smoke"},
}


def kernel_name():
    return "tutorial-lib" if "tutorial-lib" in find_kernel_specs() else "python3"


def unglued_references(executed: Path) -> list:
    """Keys the markdown cells of an executed notebook quote that none of its outputs glued: the book
    would print a warning and leave a hole in the sentence."""
    cells = json.loads(executed.read_text())["cells"]
    glued = {
        output["metadata"]["scrapbook"]["name"]
        for cell in cells
        for output in cell.get("outputs", [])
        if "scrapbook" in output.get("metadata", {})
    }
    quoted = {
        role.split(":")[0]
        for cell in cells
        if cell["cell_type"] == "markdown"
        for role in GLUE_ROLE.findall("".join(cell["source"]))
    }
    return sorted(quoted - glued)


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _listing(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def readonly_site(tmp_path_factory):
    """`<tmp>/site` holding a read-only copy of `tutorial_lib/` and `data/` (no pyproject: not a checkout)."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(
        REPO / "tutorial_lib", site / "tutorial_lib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copytree(REPO / "data", site / "data", ignore=shutil.ignore_patterns("cache"))
    for path in [site, *site.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    imported = subprocess.run(
        [sys.executable, "-c", "import tutorial_lib; print(tutorial_lib.__file__)"],
        cwd=tmp_path_factory.getbasetemp(),
        env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert imported.strip() == str(site / "tutorial_lib" / "__init__.py")
    before = _listing(site)
    yield site
    assert _listing(site) == before, "a notebook changed the read-only install"
    for path in [site, *site.rglob("*")]:  # let pytest clean it up
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def student(readonly_site, tmp_path, monkeypatch):
    """A student's folder (`tmp_path`) whose notebooks import the read-only install and set no folders."""
    for setting in FOLDER_SETTINGS:
        monkeypatch.delenv(setting, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(readonly_site))
    return tmp_path


def run(name, folder, **extra):
    """Execute notebook `name` in the student's `folder` (its outputs in `out/`); return its metrics."""
    params = dict(SMALL_PARAMETERS[name], output_dir=str(folder / "out"), **extra)
    status_before = _git_status()
    papermill.execute_notebook(
        str(NOTEBOOK_DIR / f"{name}.ipynb"),
        str(folder / f"{name}.ipynb"),
        parameters=params,
        kernel_name=kernel_name(),
        cwd=str(folder),
        progress_bar=False,
        execution_timeout=600,
    )  # a hung cell fails, not CI
    if set(extra) <= {"results_dir"}:  # a plain run (not a redraw or another runner): the book's copy
        book_copies = folder.parent / EXECUTED_FOR_BOOK  # the folder is one of the session's base folder
        book_copies.mkdir(exist_ok=True)
        shutil.copy(folder / f"{name}.ipynb", book_copies / f"{name}.ipynb")
    # (a checkout edited while the suite runs changes its status too: run the suite on a clean clone)
    assert _git_status() == status_before, f"{name} wrote into the repository"
    outside = [p for p in _listing(folder) if not p.startswith(STUDENT_FOLDERS) and p != f"{name}.ipynb"]
    assert not outside, f"{name} wrote outside its output folders: {outside}"
    missing = unglued_references(folder / f"{name}.ipynb")
    assert not missing, f"{name}: its prose quotes values no cell glued at these parameters: {missing}"
    return json.loads((folder / "out" / f"{name}.metrics.json").read_text())


def test_every_notebook_has_small_parameters():
    assert {p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")} == set(SMALL_PARAMETERS)


def test_quickstart(student):
    metrics = run("00_quickstart", student)
    assert (student / "figures" / "quickstart_tradeoff.png").stat().st_size > 10_000
    assert (student / "figures" / "quickstart_distributions.png").exists()
    assert metrics["verifier_zero_one_loss"] < metrics["drafter_zero_one_loss"]
    # The blind spots let a cascade beat the verifier.
    assert min(metrics["best_zero_one_loss"].values()) < metrics["verifier_zero_one_loss"]
    assert all(abs(z) < 4 for z in metrics["monte_carlo_z"].values())


def test_target_distributions(student):
    metrics = run("01_target_distributions", student)
    for figure in ("targets_examples", "targets_view", "targets_every_rule"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    assert "real pair" in metrics["examples"]
    # Lemma 3 on every mixture rule, every example, a grid over each alpha range.
    assert metrics["lemma3_max_gap"] < 1e-9
    view = metrics["view"]
    assert (view["rule"], view["temperature"], view["gamma"]) == ("chow", 0.0, 3)
    assert abs(view["rejection_probability"] - view["lemma3_rejection"]) < 1e-9
    for name, row in metrics["rejection_table"].items():
        for label, rho in row.items():
            if label.startswith("max"):
                continue
            a = 1.0 - rho
            expected = 4.0 if a >= 1.0 else (1 - a**4) / (1 - a)  # gamma = 3
            assert abs(metrics["tokens_per_call_table"][name][label] - expected) < 1e-9, (name, label)
    # The timing cell: the verifier alone, a fixed gamma and gamma="auto" on the tiny pair.
    timing = json.loads((student / "out" / "01_target_distributions_timing.metrics.json").read_text())
    rows = {row["way"]: row for row in timing["table"]}
    assert set(rows) == {"verifier", "gamma=3", "gamma=auto"}
    assert all(row["same_tokens_as_verifier"] for row in rows.values())  # lossless at T = 0
    assert (
        rows["verifier"]["speedup"] == 1.0 and rows["gamma=3"]["tokens_per_verifier_call"] >= 1
    )  # random pair: few drafts kept
    assert timing["predicted"]["0"] == 1.0 and timing["costs"]["t_q_ms"] > 0


def test_rejection_rates(student):
    metrics = run("02_rejection_rates", student)
    for figure in ("rejection_vs_alpha", "rejection_vs_alpha_example", "rejection_lemma3"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    # Lemma 3 by simulation: 6 examples x 3 mixture weights, each within 4 standard errors.
    assert len(metrics["lemma3_z"]) == 18
    assert all(abs(float(z)) < 4 for z in metrics["lemma3_z"])
    assert all(abs(float(z)) < 4 for z in metrics["rule_z"])
    spec, ends = metrics["spec_rejection"], metrics["curve_ends"]
    assert abs(ends["Chow"][0] - spec) < 1e-9 and ends["Chow"][1] == 0.0
    assert ends["Token-V3"][0] > spec  # at alpha = 0 Token-V3 is not SpecDecode
    assert metrics["lossy_beta_gap"] < 1e-9  # beta changes the residual, not the acceptance
    # The alpha slider's marks at its default (0.3): a rate for every rule whose range holds 0.3.
    at = metrics["rejection_at_alpha"]
    assert set(at) == set(ends) and all(0 <= r <= 1 for r in at.values())
    assert at["Chow"] <= spec + 1e-12


def test_lemma1_token_cascades(student):
    metrics = run("03_lemma1_token_cascades", student)
    for figure in ("lemma1_context_risk", "lemma1_total_risk", "lemma1_miscalibration", "lemma1_figure1"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    # Lemma 1: brute force equals the closed form on every context, alpha and loss.
    assert metrics["brute_force"]["points_checked"] > 0
    assert metrics["brute_force"]["mismatches"] == 0
    assert metrics["min_excess_over_optimal"] >= -1e-12  # no rule beats the optimal one
    risk = metrics["risk_at_alpha"]
    assert risk["optimal (Lemma 1)"] <= min(risk["Chow plug-in"], risk["Diff plug-in"]) + 1e-12
    # 0-1 loss reads the argmax only: miscalibration never moves the optimal rule's risk.
    assert all(
        row["optimal_shift"] == 0 for rows in metrics["miscalibration"].values() for row in rows.values()
    )
    figure1 = metrics["figure1"]
    assert figure1["verifier_loss"] < figure1["drafter_loss"]
    assert abs(figure1["spec_loss"] - figure1["verifier_loss"]) < 1e-9  # SpecDecode is lossless
    assert 0 < figure1["spec_calls_per_token"] < 1
    assert all(0 <= c <= 1 for calls in figure1["calls_per_token"].values() for c in calls)
    assert (
        figure1["best_loss"]["Diff (oracle)"] < figure1["verifier_loss"]
    )  # the oracle beats the large model


def test_lemma2_lossy(student):
    metrics = run("04_lemma2_lossy", student)
    for figure in ("lemma2_token_by_token", "lemma2_beta"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    # Lemma 2: same acceptance for every token, same residual wherever a draft can be rejected.
    lemma2 = metrics["lemma2"]
    assert lemma2["tokens_compared"] > 0 and lemma2["positions_compared"] > 0
    assert lemma2["acceptance_max_abs_diff"] < 1e-9
    assert lemma2["residual_max_abs_diff"] < 1e-9
    assert lemma2["residual_undefined"]["beta = 1"] == 0
    assert lemma2["residual_undefined"]["Lossy* (normalising beta)"] == 0
    # beta moves where rejected mass goes, not how often drafts are kept nor the TV distance to p.
    gaps = metrics["beta_gaps"]
    assert gaps["acceptance_rate"] < 1e-9 and gaps["tv_to_p"] < 1e-9 and gaps["kl_to_p"] > 0
    sweep = metrics["beta_sweep"]
    assert all(abs(m - 1) < 1e-9 for m in sweep["Lossy* (normalising beta)"]["target_mass"])
    assert all(m >= 1 - 1e-12 for m in sweep["beta = 1"]["target_mass"])


def test_lemma4_spec_cascades(student):
    metrics = run("05_lemma4_spec_cascades", student)
    for figure in ("lemma4_context_risk", "lemma4_total_risk", "lemma4_tradeoff"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    # Lemma 4: brute force equals the closed form on every context, alpha, loss and temperature.
    lemma4 = metrics["lemma4"]
    assert lemma4["points_checked"] > 0 and lemma4["mismatches"] == 0
    assert lemma4["min_excess_over_optimal"] >= -1e-12
    assert 0 < lemma4["plugin_agreement"]["OPT plug-in"] <= 1
    tradeoff = metrics["tradeoff"]
    assert tradeoff["verifier"]["latency"] == 1.0
    curves = tradeoff["curves"]
    assert set(curves) == {
        "SpecDecode",
        "Lossy (beta = 1)",
        "BiLD*",
        "Chow",
        "Diff",
        "OPT",
        "Token-V1",
        "Token-V2",
        "Token-V3",
    }
    gamma = tradeoff["gamma"]
    for label, c in curves.items():
        assert all(0 <= r <= 1 for r in c["rejection"]), label
        assert all(1 <= n <= gamma + 1 + 1e-9 for n in c["tokens_per_call"]), label
        assert all(
            abs(lat - (gamma * tradeoff["cost_ratio"] + 1) / n) < 1e-12
            for lat, n in zip(c["latency"], c["tokens_per_call"])
        ), label
    assert abs(curves["SpecDecode"]["loss"][0] - tradeoff["verifier"]["loss"]) < 1e-9
    assert curves["SpecDecode"]["latency"][0] < 1  # speculation pays at c = 0.1
    assert min(s["best_loss"] for s in tradeoff["summary"].values()) < tradeoff["verifier"]["loss"]
    # The engine's own runs on the toy world's models agree with the exact curves.
    check = metrics["engine_check"]["results"]
    assert set(check) == set(curves)
    for label, result in check.items():
        finite = [z for z in result["z"].values() if isinstance(z, float) and z == z]  # NaN is "nan" in JSON
        assert len(finite) >= 3 and all(abs(z) < 4 for z in finite), (label, result["z"])
    assert (student / "figures" / "lemma4_engine_check.png").stat().st_size > 10_000


def test_t5_evaluation_smoke(student):
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    results = student / "results"
    metrics = run("06_t5_evaluation", student, results_dir=str(results))

    assert set(metrics["labels"]) == set(CURVES)  # every method of the paper on the curves
    assert metrics["n_rows"] == metrics["n_configs"] * 3  # every configuration on every sentence
    for figure in metrics["figures"] + ["t5_where_each_wins"]:
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    sweep = results / metrics["sweep_path"].split("/")[-1]
    assert (
        (sweep / "rows.jsonl").exists()
        and (sweep / "table.csv").exists()
        and (sweep / "config.json").exists()
    )
    methods = {row["method"] for row in metrics["table"]}
    assert set(CURVES) - methods == {"Verifier"}
    assert set(metrics["where_each_wins"]) >= {"Drafter", "Verifier"}
    # Latency from the cost model, both pricings, each with its figure; the calibration stored with the rows.
    assert metrics["latency_column"] == "modelled_latency_s" and (sweep / "calibration.json").exists()
    assert len(metrics["pricings"]) == 2 and any(f.endswith("_accelerator") for f in metrics["figures"])
    assert {row["config"] for row in metrics["model_error"]} == {
        row["config"] for row in metrics["paired_differences"]
    }
    assert all(row["median_abs_rel_error"] >= 0 for row in metrics["model_error"])
    # Paired differences to the verifier and SpecDecode for every configuration; the claims with a verdict.
    assert {row["versus"] for row in metrics["paired_differences"]} == {"Verifier", "SpecDecode"}
    assert len(metrics["paired_differences"]) == 2 * metrics["n_configs"]
    from tutorial_lib.stats.claims import VERDICTS

    assert metrics["claims"] and {row["verdict"] for row in metrics["claims"]} <= set(VERDICTS)
    assert any(f.endswith("_verdicts_by_c") for f in metrics["figures"])  # the claims re-priced over c
    # Redrawn from the saved rows (and calibration) without training or loading a model: the same tables,
    # the result files read back, not computed again (their stamp says what they were computed from).
    assert json.loads((sweep / "results_stamp.json").read_text())["t5_results"]
    computed = {name: (sweep / name).stat().st_mtime_ns for name in ("claims.csv", "verdicts_by_c.csv")}
    redrawn = run("06_t5_evaluation", student, results_dir=str(results), redraw_only=True)
    assert {name: (sweep / name).stat().st_mtime_ns for name in computed} == computed
    for key in (
        "n_rows",
        "table",
        "table_accelerator",
        "claims",
        "paired_differences",
        "model_error",
        "verifier_quality",
        "where_each_wins",
    ):
        assert json.dumps(redrawn[key], sort_keys=True) == json.dumps(metrics[key], sort_keys=True), key


def test_t5_evaluation_smoke_batched(student):
    """runner="batch": the same rows as at batch size 1 (quality, counted calls), latency priced from the
    calls, the check against the clock on sentences decoded alone."""
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    results = student / "results"
    metrics = run("06_t5_evaluation", student, results_dir=str(results), runner="batch", clock_examples=2)
    assert metrics["n_rows"] == metrics["n_configs"] * 3 and metrics["latency_column"] == "modelled_latency_s"
    assert {row["config"] for row in metrics["model_error"]} == {
        row["config"] for row in metrics["paired_differences"]
    }
    clock = [path for path in results.iterdir() if path.name.startswith("t5-smoke-clock-")]
    assert (
        len(clock) == 1
        and len((clock[0] / "rows.jsonl").read_text().splitlines()) == metrics["n_configs"] * 2
    )


def test_gemma_evaluation_smoke(student):
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    results = student / "results"
    metrics = run("07_gemma_evaluation", student, results_dir=str(results))

    assert set(metrics["labels"]) == set(GEMMA_CURVES)
    assert set(metrics["tasks"]) == {"code", "arithmetic", "facts"}
    assert metrics["n_rows"] == metrics["n_configs"] * 2 * 3
    for figure in metrics["figures"]:
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    # one figure per task and temperature, the latency figure and the verdicts over the drafter's cost c
    assert len(metrics["figures"]) == 3 * len({row["temperature"] for row in metrics["table"]}) + 2
    from tutorial_lib.stats.claims import VERDICTS

    assert metrics["claims"] and {row["verdict"] for row in metrics["claims"]} <= set(VERDICTS)
    assert {row["versus"] for row in metrics["paired_differences"]} == {"Verifier", "SpecDecode"}
    # per configuration: answer length, verifier calls per answer, cut rate, modelled latency per answer
    lengths = metrics["answer_lengths"]
    assert len(lengths) == metrics["n_configs"] * 3
    assert all(0 <= row["cut_rate"] <= 1 and row["cost_per_answer"] > 0 for row in lengths)
    assert all(row["verifier_calls_per_answer"] == 0 for row in lengths if row["label"] == "Drafter")
    gammas = {row["gamma"] for row in metrics["latency"]}
    assert gammas == {1, 5}
    assert {row["task"] for row in metrics["latency"]} == {
        "code",
        "arithmetic",
        "facts",
        "all tasks (pooled)",
    }
    assert metrics["latency_column"] == "modelled_latency_s" and metrics["latency_model_error"]
    # Redrawn from the saved rows without loading a model (as without the Qwen pair): the same tables.
    redrawn = run("07_gemma_evaluation", student, results_dir=str(results), redraw_only=True)
    for key in (
        "n_rows",
        "table",
        "claims",
        "paired_differences",
        "answer_lengths",
        "latency",
        "latency_model_error",
        "verifier_quality",
        "drafter_quality",
    ):
        assert json.dumps(redrawn[key], sort_keys=True) == json.dumps(metrics[key], sort_keys=True), key
    # A run stopped early, as a long run is between sessions: one row of its last task saved, and no
    # latency rows yet. Redrawn on the tasks it finished, with the same claims there; the rest "not run yet".

    rows_path = Path(metrics["sweep_path"]) / "rows.jsonl"
    lines = rows_path.read_text().splitlines()
    last = [line for line in lines if json.loads(line)["task"] == "facts"]
    rows_path.write_text("\n".join([line for line in lines if line not in last] + last[:1]) + "\n")
    for folder in results.glob("gemma-smoke-latency-*"):
        shutil.rmtree(folder)
    partial = run("07_gemma_evaluation", student, results_dir=str(results), redraw_only=True)
    assert partial["tasks"] == ["code", "arithmetic"] and partial["latency"] is None
    assert partial["n_rows"] == metrics["n_configs"] * 2 * 2
    assert {row["task"] for row in partial["claims"]} == {"code", "arithmetic"}
    before = {json.dumps(row, sort_keys=True) for row in metrics["claims"]}
    assert all(json.dumps(row, sort_keys=True) in before for row in partial["claims"])


def test_real_pair_token_analysis_smoke(student):
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    metrics = run("08_real_pair_token_analysis", student)  # its cache: the default ./results
    for figure in ("token_analysis_curves", "token_analysis_gaps", "token_analysis_greedy_references"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    assert metrics["items"] == 6 and metrics["points"] == 9 * 11 + 3
    # the deferral rules never beat the oracle envelope; the drafter and verifier are the curves' ends
    for curve in ("bild", "chow", "diff", "opt"):
        assert metrics["areas"][curve][0] >= -1e-12, curve
    assert metrics["means"]["chow@1"] == metrics["means"]["drafter@0"]
    assert metrics["greedy_reference"]["verifier_greedy_loss"] == 0.0
    assert metrics["toy_max_abs_z"] < 5 and metrics["toy_numbers"] > 100
    assert metrics["timing"]["positions"] > 0 and metrics["per_point_ms_from_sums"] < 5


def test_speed_on_your_hardware_smoke(student):
    metrics = run("09_speed_on_your_hardware", student)
    for figure in ("speed_block_cost", "speed_what_if"):
        assert (student / "figures" / f"{figure}.png").stat().st_size > 10_000, figure
    assert (student / "out" / "09_calibration.json").exists()
    calibration = metrics["calibration"]
    # the quick calibration gamma="auto" starts from times blocks of 1..QUICK_CALIBRATION["max_k"] tokens
    max_k = tl.decoding.gamma_policy.QUICK_CALIBRATION["max_k"]
    assert calibration["kind"].startswith("quick")
    assert calibration["t_q"] > 0 and set(calibration["t_p"]) == {str(k) for k in range(1, max_k + 1)}
    assert metrics["predicted_speedup"]["0"] == 1.0 and 0 <= metrics["acceptance"] <= 1
    rows = {row["method"]: row for row in metrics["measured"]}
    assert set(rows) == {"verifier", "gamma=1", "gamma=3", "gamma=auto"}
    assert all(row["same_tokens"] == row["n_runs"] for row in rows.values())  # lossless at T = 0
    auto = metrics["auto"]
    assert auto["same_tokens"] == auto["n_runs"] and sum(auto["gammas"].values()) > 0
    assert metrics["what_if_a0.8_c0.1"]["best_gamma_textbook"] >= 1
    # one committed benchmark per processor class, the reader's class (detected at run time) marked
    classes = metrics["processor_classes"]
    committed = {row["class"]: row for row in classes["committed"]}
    assert {"avx2", "avx512", "amx"} <= set(committed)
    assert committed[classes["this_class"]["class"]]["yours"].startswith("<- yours")


def test_rules_in_engines_smoke(student):
    from test_model_files import use_shared_model_cache

    use_shared_model_cache()
    metrics = run("10_rules_in_engines", student)
    assert (student / "figures" / "learned_rule_curves.png").stat().st_size > 10_000
    for row in metrics["ensemble"]:
        assert abs(row["z"]) < 4.5, row  # acceptance 1 - w D_TV within sampling error
        assert row["chi2 p vs mixture"] > 1e-4, row  # both engines follow w p + (1 - w) q
    assert (
        metrics["relaxed_all_identical"] and metrics["relaxed_checks"] == 16
    )  # 2 laws x 2 engines x 2 drafts x 2 caps
    learned = metrics["learned"]
    assert learned["train_items"] > 0 and learned["held_out_items"] > 0
    assert set(learned["versus"]) >= {"token_v2", "opt", "mixture"}
    # a mixture never beats the oracle envelope (its area above it is >= 0)
    assert learned["areas"]["learned"][0] >= -1e-12 and learned["areas"]["mixture"][0] >= -1e-12
    for row in metrics["learned_engine"]:
        assert row["chi2 p vs its target"] > 1e-4, row
