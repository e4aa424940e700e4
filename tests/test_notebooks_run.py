"""Every notebook executes under papermill with small parameters, and the numbers it records hold."""
import json
from pathlib import Path

import papermill
from jupyter_client.kernelspec import find_kernel_specs

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"

# Small overrides per notebook: CI runs these; `make tutorial` runs the defaults.
SMALL_PARAMETERS = {
    "00_quickstart": {"n_alpha": 9, "n_simulations": 4000},
}


def kernel_name():
    return "tutorial-lib" if "tutorial-lib" in find_kernel_specs() else "python3"


def run(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_FIGURES", str(tmp_path / "figures"))
    params = dict(SMALL_PARAMETERS[name], output_dir=str(tmp_path))
    papermill.execute_notebook(str(NOTEBOOK_DIR / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb"),
                               parameters=params, kernel_name=kernel_name(), cwd=str(NOTEBOOK_DIR),
                               progress_bar=False)
    return json.loads((tmp_path / f"{name}.metrics.json").read_text())


def test_every_notebook_has_small_parameters():
    assert {p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")} == set(SMALL_PARAMETERS)


def test_quickstart(tmp_path, monkeypatch):
    metrics = run("00_quickstart", tmp_path, monkeypatch)
    assert (tmp_path / "figures" / "quickstart_tradeoff.png").stat().st_size > 10_000
    assert (tmp_path / "figures" / "quickstart_distributions.png").exists()
    assert metrics["verifier_zero_one_loss"] < metrics["drafter_zero_one_loss"]
    # The blind spots let a cascade beat the verifier.
    assert min(metrics["best_zero_one_loss"].values()) < metrics["verifier_zero_one_loss"]
    assert all(abs(z) < 4 for z in metrics["monte_carlo_z"].values())
