"""Numbers beside the cells that computed them: every glued name a results page's prose quotes is glued by
that notebook's own cells (a static check of the `.py` pairs), the table functions compute what the pages
show, and the book's hand-written pages (manual, teaching, reference) hold together."""

import ast
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tutorial_lib.lessons import notebook
from tutorial_lib.lessons.exercises import EXERCISES
from tutorial_lib.stats import report
from tutorial_lib.sweeps import result_files

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
#: `{glue:text}`name:.3f`` (and the other glue roles) in a markdown cell
# the prose's glued numbers: {eval}`glued["name:format"]` (JupyterLab evaluates it, the book renders it as the
# glue role it stands for: book/build_book.py's EVAL_GLUED)
GLUE_ROLE = re.compile(r'\{eval\}`glued\["([^"`]+)"\]`')
#: The results pages whose findings prose quotes its numbers by glue.
GLUED_PAGES = (
    "06_t5_evaluation",
    "07_gemma_evaluation",
    "08_real_pair_token_analysis",
    "10_rules_in_engines",
)


def _cells(path: Path):
    """(kind, source) per cell of a py:percent notebook; markdown lines lose their leading `# `."""
    cells, kind, lines = [], None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %%"):
            if kind is not None:
                cells.append((kind, "\n".join(lines)))
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind == "markdown":
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        elif kind == "code":
            lines.append(line)
    if kind is not None:
        cells.append((kind, "\n".join(lines)))
    return cells


def quoted_names(path: Path) -> set:
    """The glued names the notebook's markdown quotes (`{eval}`glued["name:fmt"]``: the name before the
    format)."""
    return {
        role.split(":")[0]
        for kind, source in _cells(path)
        if kind == "markdown"
        for role in GLUE_ROLE.findall(source)
    }


def glued_names(path: Path) -> set:
    """The names the notebook's code cells glue: the keywords of `glue_values(...)` and the first argument of
    `glue("name", ...)`. A name the source does not spell (`**values`, a computed name) is refused."""
    names = set()
    for kind, source in _cells(path):
        if kind != "code":
            continue
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            called = (
                node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            )
            if called == "glue_values":
                assert all(k.arg for k in node.keywords), (
                    f"{path.name}: glue_values(**...) hides the glued names from this check; name each one"
                )
                names.update(k.arg for k in node.keywords)
            elif called == "glue":
                assert node.args and isinstance(node.args[0], ast.Constant), (
                    f"{path.name}: glue(...) with a computed name; spell the name"
                )
                names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glued_name_the_prose_quotes_is_glued_by_the_notebooks_cells(path):
    quoted, glued = quoted_names(path), glued_names(path)
    assert not quoted - glued, f"{path.name} quotes names no cell glues: {sorted(quoted - glued)}"
    assert not glued - quoted, f"{path.name} glues names its prose never quotes: {sorted(glued - quoted)}"


def test_the_results_pages_quote_their_numbers_by_glue():
    for stem in GLUED_PAGES:
        assert len(quoted_names(ROOT / "notebooks" / f"{stem}.py")) >= 10, stem


def test_the_static_check_sees_a_quoted_name_nothing_glues(tmp_path):
    page = tmp_path / "x.py"
    page.write_text(
        '# %% [markdown]\n# The verifier scores {eval}`glued["bleu:.1f"]` and {eval}`glued["gap"]`.\n\n'
        "# %%\nglued = tl.lessons.notebook.glue_values(bleu=86.5)\n"
    )
    assert quoted_names(page) == {"bleu", "gap"} and glued_names(page) == {"bleu"}
    page.write_text('# %%\nvalues = {"a": 1}\ntl.lessons.notebook.glue_values(**values)\n')
    with pytest.raises(AssertionError, match="hides the glued names"):
        glued_names(page)


def test_glue_values_glues_plain_numbers_and_refuses_a_table(monkeypatch):
    import myst_nb

    seen = {}
    monkeypatch.setattr(
        myst_nb, "glue", lambda name, value, display=True: seen.update({name: (value, display)})
    )
    notebook.glue_values(bleu=np.float64(86.5), n=np.int64(200), method="TokenCascade [Chow]")
    assert seen == {"bleu": (86.5, False), "n": (200, False), "method": ("TokenCascade [Chow]", False)}
    assert type(seen["bleu"][0]) is float and type(seen["n"][0]) is int  # a format spec applies to them
    with pytest.raises(TypeError, match="show a table with its own cell"):
        notebook.glue_values(table=pd.DataFrame({"a": [1]}))


def test_notebook_times_takes_each_notebooks_newest_run(tmp_path):
    path = tmp_path / "notebook_times.jsonl"
    path.write_text(
        '{"notebook": "00_quickstart", "seconds": 30, "load": "1.0 1.0 1.0", "finished": "2026-12-01 10:00", '
        '"beside": ""}\n'
        '{"notebook": "09_speed", "seconds": 200, "slowest_cell_s": 151.0, "load": "1 1 1", '
        '"finished": "x"}\n'
        '{"notebook": "00_quickstart", "seconds": 12, "load": "0.5 0.6 0.7", "finished": "2026-12-02 10:00", '
        '"beside": "make test"}\n'
    )
    table = notebook.notebook_times(path)
    assert list(table.columns) == list(notebook.NOTEBOOK_TIME_COLUMNS)
    assert table["notebook"].tolist() == ["00_quickstart", "09_speed"]
    first = table.iloc[0]
    assert (first["seconds"], first["needs"], first["load"], first["beside"]) == (
        12,
        "nothing",
        "0.5 0.6 0.7",
        "make test",
    )
    assert pd.isna(first["slowest_cell_s"]) and table.iloc[1]["slowest_cell_s"] == 151.0
    assert table.iloc[1]["needs"] == "SmolLM2-135M"
    with path.open("a") as f:
        f.write('{"seconds": 3}\n')
    with pytest.raises(ValueError, match="line 4: not a notebook's time"):
        notebook.notebook_times(path)


# ---- the book's pages ---------------------------------------------------------------------------

PAGES = sorted(
    p
    for folder in ("manual", "teaching", "reference")
    for p in (ROOT / "book" / folder).glob("*.md")
    if (folder, p.name) != ("reference", "api.md")
)
MOVED_PAGES = [
    ROOT / "book" / "manual" / "index.md",
    ROOT / "book" / "teaching" / "index.md",
    ROOT / "book" / "teaching" / "exercises.md",
    ROOT / "book" / "reference" / "equations.md",
]


def test_the_moved_pages_exist():
    assert all(page.exists() for page in MOVED_PAGES)
    assert len(list((ROOT / "book" / "manual").glob("*.md"))) >= 8


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if p in MOVED_PAGES or p.parent.name == "manual"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_each_page_has_one_title_and_its_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# ") and not text.startswith("# ", 1)
    outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
    assert len(re.findall(r"^# ", outside_code, flags=re.M)) == 1, "one `# Title` line per page"
    assert "<!-- results:" not in text, (
        "generated README regions are gone: show the numbers on a results page"
    )
    for target in re.findall(r"\]\(([^)#:]+\.(?:md|ipynb))(?:#[^)]*)?\)", text):
        path = (page.parent / target).resolve()
        if path.suffix == ".ipynb":  # a lesson or results page: the executed copy of a committed notebook
            assert (ROOT / "notebooks" / f"{path.stem}.py").exists(), f"{page.name} links to {target}"
            assert path.parent.name in ("lessons", "reruns"), f"{page.name} links to {target}"
        else:
            assert path.exists(), f"{page.name} links to {target}, which is not a page"


def test_the_exercises_page_lists_every_exercise_with_a_solution_hidden_until_opened():
    text = (ROOT / "book" / "teaching" / "exercises.md").read_text(encoding="utf-8")
    listed = re.findall(r"^```\{exercise\} (\d\d-\d+): (.*)$", text, flags=re.M)
    assert [i for i, _ in listed] == list(EXERCISES), "regenerate the page from lessons/exercises.py"
    for exercise_id, question in listed:
        spec = EXERCISES[exercise_id]
        assert question == spec.question
        solution = re.search(
            rf"```\{{solution\}} exercise-{exercise_id}\n:class: dropdown\n(.*?)```", text, flags=re.S
        )
        assert solution, f"{exercise_id}: no solution in a dropdown"
        assert spec.hint in solution.group(1) and spec.explain in solution.group(1)


def test_the_readme_is_one_screen_and_links_into_the_book():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for command in ("make install", "make tutorial", "make test", "make book"):
        assert f"`{command}`" in text
    for target in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (ROOT / target).exists(), f"README links to {target}"
    assert "book/manual/index.md" in text and "book/teaching/index.md" in text


# ---- result files are checked against their stamp before they are shown ---------------------------


def _stamped_t5_copy(tmp_path: Path, monkeypatch) -> Path:
    """The committed T5 run's result files and stamp in tmp_path, with the stamp of their inputs taken as
    matching (the rows are not copied) and the computation barred: a read-back is all that may happen."""
    committed = ROOT / "data" / "results" / report.T5_RUN
    folder = tmp_path / report.T5_RUN
    folder.mkdir()
    for name in (*report.T5_RESULT_FILES, report.RESULTS_STAMP):
        shutil.copy(committed / name, folder / name)
    kept = json.loads((committed / report.RESULTS_STAMP).read_text())["t5_results"]
    monkeypatch.setattr(report, "results_stamp", lambda *args, **kwargs: kept)
    from tutorial_lib.stats import claims

    def barred(*args, **kwargs):
        raise AssertionError("the result files were computed again")

    monkeypatch.setattr(claims, "t5_claims", barred)
    return folder


def _write_t5(folder, **options):
    from types import SimpleNamespace

    return report.write_t5_results(
        pd.DataFrame({"wall_time_s": [0.0]}), [], folder, SimpleNamespace(to_dict=dict), **options
    )


def test_the_committed_t5_stamp_records_the_hashes_of_its_result_files():
    folder = ROOT / "data" / "results" / report.T5_RUN
    stamp = json.loads((folder / report.RESULTS_STAMP).read_text())
    assert set(stamp["files"]) == set(report.T5_RESULT_FILES) and stamp["t5_results"]
    result_files.check_result_files(folder, report.T5_RESULT_FILES)


def test_a_flipped_verdict_in_claims_csv_is_refused_on_read_back(tmp_path, monkeypatch):
    folder = _stamped_t5_copy(tmp_path, monkeypatch)
    committed = pd.read_csv(ROOT / "data" / "results" / report.T5_RUN / "claims.csv")
    pd.testing.assert_frame_equal(_write_t5(folder)["claims"], committed)  # untouched: read back
    text = (folder / "claims.csv").read_text()
    assert ",does not hold," in text
    (folder / "claims.csv").write_text(text.replace(",does not hold,", ",holds,", 1))
    with pytest.raises(result_files.ResultFilesChanged) as refused:
        _write_t5(folder)
    message = str(refused.value)
    assert "claims.csv: recorded sha256" in message and "recompute=True" in message
    assert "git checkout" in message
    for name in report.T5_RESULT_FILES[1:]:
        assert f"{name}:" not in message  # only the changed file is named
    assert ",holds," in (folder / "claims.csv").read_text()  # refused, not recomputed over


def test_missing_result_files_or_hashes_are_refused_not_recomputed(tmp_path, monkeypatch):
    folder = _stamped_t5_copy(tmp_path, monkeypatch)
    (folder / "flip_points.csv").unlink()
    with pytest.raises(result_files.ResultFilesChanged, match=r"flip_points.csv: missing"):
        _write_t5(folder)
    stamp = json.loads((folder / report.RESULTS_STAMP).read_text())
    (folder / report.RESULTS_STAMP).write_text(json.dumps({"t5_results": stamp["t5_results"]}))
    with pytest.raises(result_files.ResultFilesChanged, match="records no hashes"):
        _write_t5(folder)


def test_written_t5_results_are_stamped_with_hashes_and_recomputed_only_when_asked(tmp_path, monkeypatch):
    from tutorial_lib.stats import claims, hardware, pricing

    calls = []

    def table(name):
        def computed(*args, **kwargs):
            calls.append(name)
            return pd.DataFrame({"claim": ["A"], "verdict": ["holds"]})

        return computed

    monkeypatch.setattr(claims, "t5_claims", table("claims"))
    monkeypatch.setattr(claims, "headline_table", table("headline"))
    monkeypatch.setattr(pricing, "signed_error", table("signed_error"))
    monkeypatch.setattr(hardware, "machine_c", lambda calibration: 0.5)
    monkeypatch.setattr(hardware, "verdict_grid", table("grid"))
    monkeypatch.setattr(hardware, "flip_points", table("flips"))
    monkeypatch.setattr(
        report,
        "write_t5_facts",
        lambda rows, folder, *args, **kwargs: (folder / "facts.json").write_text("{}"),
    )
    monkeypatch.setattr(report, "results_stamp", lambda *args, **kwargs: "inputs")
    _write_t5(tmp_path)
    assert calls == ["claims", "headline", "signed_error", "grid", "flips"]
    stamp = json.loads((tmp_path / report.RESULTS_STAMP).read_text())
    assert stamp["t5_results"] == "inputs" and set(stamp["files"]) == set(report.T5_RESULT_FILES)
    assert _write_t5(tmp_path)["claims"]["verdict"].tolist() == ["holds"] and len(calls) == 5  # read back
    (tmp_path / "facts.json").write_text('{"c": 0.01}')
    with pytest.raises(result_files.ResultFilesChanged, match=r"facts.json: recorded sha256"):
        _write_t5(tmp_path)
    _write_t5(tmp_path, recompute=True)
    assert len(calls) == 10 and (tmp_path / "facts.json").read_text() == "{}"
    result_files.check_result_files(tmp_path, report.T5_RESULT_FILES)


def test_the_manual_quotes_the_committed_draws_benchmark():
    import json
    import statistics

    root = Path(__file__).resolve().parent.parent
    result = json.loads((root / "data" / "benchmarks" / "config_batch_draws_cpu.json").read_text())
    manual = " ".join((root / "book" / "manual" / "reruns.md").read_text().split())
    ratios = result["ratio_baseline_over_now"]
    assert result["same_tokens"] and result["same_traces"]
    quoted = (
        f"{statistics.median(ratios):.2f} times as long as now (median of {len(ratios)} rounds; range "
        f"{min(ratios):.2f}-{max(ratios):.2f})"
    )
    assert quoted in manual
    for side in ("baseline", "now"):
        seconds = [r["seconds"] for r in result["rounds"] if r["side"] == side]
        assert f"{min(seconds):.1f}-{max(seconds):.1f} s" in manual
