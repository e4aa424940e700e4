"""Numbers in prose come from the results: every README region re-rendered from the committed result
files must equal the README's text, and a changed result must make the check fail."""
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tutorial_lib import report

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILES = ("claims.csv", "signed_error.csv", "latency_by_task.csv", "flip_points.csv", "facts.json",
                "answer_lengths.csv", "paired_differences.csv")


def test_the_readme_quotes_the_committed_results():
    text = (ROOT / "README.md").read_text()
    rendered = report.render(ROOT)
    assert report.rewrite(text, rendered) == text, (
        "README.md's result regions differ from the committed results: run python -m tutorial_lib.stats.report --write")
    # every region is filled (an empty region would match an empty rendering)
    assert all(body.strip() for body in rendered.values())


def _copy_results(tmp_path: Path) -> Path:
    for run in (report.T5_RUN, report.GEMMA_RUN):
        target = tmp_path / "data" / "results" / run
        target.mkdir(parents=True)
        for name in RESULT_FILES:
            source = ROOT / "data" / "results" / run / name
            if source.exists():
                shutil.copy(source, target / name)
    shutil.copytree(ROOT / "data" / "benchmarks", tmp_path / "data" / "benchmarks")  # the benchmark regions
    return tmp_path


def test_a_changed_result_no_longer_matches_the_readme(tmp_path):
    root = _copy_results(tmp_path)
    text = (ROOT / "README.md").read_text()
    assert report.rewrite(text, report.render(root)) == text
    claims_path = root / "data" / "results" / report.GEMMA_RUN / "claims.csv"
    claims = pd.read_csv(claims_path)
    finite = claims["estimate"].abs() < float("inf")
    claims.loc[finite.idxmax(), "estimate"] += 0.0123
    claims.to_csv(claims_path, index=False)
    assert report.rewrite(text, report.render(root)) != text


def test_regions_and_renderers_must_match():
    with pytest.raises(ValueError, match="have no renderer"):
        report.rewrite("<!-- results:nowhere -->\nx\n<!-- /results:nowhere -->\n", {})
    with pytest.raises(ValueError, match="are not in the README"):
        report.rewrite("no regions here", {"t5-claims": "text"})


def testnotebook_times_table_takes_each_notebooks_newest_run(tmp_path):
    from tutorial_lib.stats import report
    path = tmp_path / "notebook_times.jsonl"
    path.write_text('{"notebook": "00_quickstart", "seconds": 30, "load": "1.0 1.0 1.0", "finished": "2026-12-01 10:00", "beside": ""}\n'
                    '{"notebook": "00_quickstart", "seconds": 12, "load": "0.5 0.6 0.7", "finished": "2026-12-02 10:00", "beside": "make test"}\n')
    table = report.notebook_times_table(path)
    assert "| 00_quickstart | nothing | 12 | 0.5 0.6 0.7 | 2026-12-02 10:00 |" in table and "| 30 |" not in table
    assert "Beside: make test." in table
    assert "No timed run" in report.notebook_times_table(tmp_path / "missing.jsonl")
