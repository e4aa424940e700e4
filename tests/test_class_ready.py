"""Ready for a class: static copies of the live views, the display fixes, and where a student's run writes."""

import matplotlib

matplotlib.use("Agg")

import base64  # noqa: E402
from pathlib import Path  # noqa: E402

import ipywidgets  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib import paths, views  # noqa: E402
from tutorial_lib.lessons import notebook  # noqa: E402
from tutorial_lib.tasks.metrics import METRICS  # noqa: E402
from tutorial_lib.views import panels, reruns, static, widgets  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
PYPROJECT = '[project]\nname = "tutorial_lib"\nversion = "0.1.0"\n'


@pytest.fixture(scope="module")
def world():
    return tl.ToyWorld(n_words=14, seed=0)


def test_static_png_of_curves_bars_lines_and_a_heatmap(world):
    examples = tl.toy.examples.toy_examples(0)
    figures = {
        "bars": views.targets.target_view("verifier blind spot", "token_v3", 0.9, 1.0, 5, examples=examples)[
            0
        ],
        "heatmap": views.targets.every_rule_view("agree", 0.5, 1.0, examples=examples)[0],
        "lines and reference lines": views.lemmas.deferral_risks.lemma1_view(
            tl.toy.examples.default_context(world), 0.1, world=world
        ),
    }
    for name, fig in figures.items():
        png = static.plotly_to_png(fig)
        assert png.startswith(PNG) and len(png) > 10_000, name


def test_live_view_leaves_a_static_copy_of_its_current_setting(world):
    alpha = ipywidgets.FloatSlider(value=0.1, min=0.0, max=1.0, step=0.05)
    box = widgets.interactive(
        views.lemmas.deferral_risks.lemma1_view,
        alpha=alpha,
        context_index=ipywidgets.fixed(tl.toy.examples.default_context(world)),
        world=ipywidgets.fixed(world),
    )
    assert isinstance(box, widgets.LiveBox)
    plain = box._repr_mimebundle_()["text/plain"]
    assert plain == static.WIDGET_TEXT and "VBox(" not in plain
    before = box.static_copy()
    assert static.HINT in before["text/html"] and static.STATIC_CLASS in before["text/html"]
    assert base64.b64decode(before["image/png"]).startswith(PNG)
    assert before["text/plain"].startswith(static.HINT)
    alpha.value = 0.9  # the copy follows the slider
    assert box.static_copy()["image/png"] != before["image/png"]


def test_a_view_that_fails_leaves_its_message_not_a_picture():
    def broken(alpha):
        raise ValueError(f"alpha={alpha}: out of range")

    box = widgets.live_view(lambda alpha: broken(alpha), {"alpha": ipywidgets.FloatSlider(value=0.5)})
    copy = box.static_copy()
    assert "image/png" not in copy and "out of range" in copy["text/html"]


def test_static_bundle_needs_one_body():
    with pytest.raises(ValueError, match="exactly one of png="):
        static.static_bundle()
    assert "<b>x</b>" in static.static_bundle(html_body="<b>x</b>")["text/html"]


def test_long_titles_are_wrapped_to_fit():
    title = (
        "Lemma 1, context ' ne' (blind spot), 0-1 loss: at alpha = 0.10 the optimal rule keeps q; "
        "Chow plug-in defers, Diff plug-in defers"
    )
    lines = panels.wrap(title, panels.TITLE_WIDTH).split("\n")
    assert len(lines) >= 2 and all(len(line) <= panels.TITLE_WIDTH for line in lines)
    assert " ".join(lines) == title
    fig = panels.to_plotly([panels.Panel([panels.Trace("a", [0, 1], [0, 1])], "x", "y")], title)
    assert "<br>" in fig.layout.title.text


def test_token_view_has_a_colour_key():
    for color_by in ("deferral", "rejection"):
        key = views.token_analysis.colour_key(color_by)
        assert "colour key" in key and key.count("background:") == 5
    with pytest.raises(ValueError, match="color_by='green'"):
        views.token_analysis.colour_key("green")


def test_every_metric_has_words_and_shares_stay_inside_0_and_1():
    assert set(METRICS) <= set(reruns.METRIC_WORDS)
    rows = [
        dict(
            task="t",
            label="Verifier",
            method="verifier",
            rule="-",
            alpha=0.0,
            gamma=1,
            temperature=1.0,
            quality=0.05,
            quality_ci=0.1,
            latency=1.0,
            rejection_rate=1.0,
        )
    ]
    rows += [
        dict(
            task="t",
            label="SpecCascade [OPT]",
            method="speculative",
            rule="opt",
            alpha=float(j),
            gamma=1,
            temperature=1.0,
            quality=q,
            quality_ci=0.2,
            latency=1.0,
            rejection_rate=0.1 * j,
        )
        for j, q in enumerate([0.02, 0.5, 0.95])
    ]
    fig = reruns.family_figure(
        pd.DataFrame(rows), task="t", temperature=1.0, x="rejection_rate", quality_label="mbpp"
    )
    ax = [a for a in fig.get_axes() if a.axison][0]
    assert ax.get_ylabel() == reruns.METRIC_WORDS["mbpp"][0]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert bands
    for band in bands:
        ys = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
        assert ys.min() >= 0.0 and ys.max() <= 1.0
    verifier_band = [p for p in ax.patches if p.get_alpha() == 0.15]  # axhspan around the verifier's line
    assert verifier_band
    for patch in verifier_band:
        ys = patch.get_transform().transform(patch.get_path().vertices)[:, 1]
        assert ys.min() >= ax.transData.transform((0, 0.0))[1] - 1e-6


def test_latency_figure_has_a_title():
    from tutorial_lib.stats.analysis import POOLED

    rows = [
        {
            "task": task,
            "label": label,
            "gamma": gamma,
            "latency": latency,
            "latency_low": latency - 0.05,
            "latency_high": latency + 0.05,
            "quality": 0.5,
            "quality_metric": "mbpp",
        }
        for task in ("code", POOLED)
        for label, gamma, latency in (("Verifier", 1, 1.0), ("SpecDecode", 3, 0.8))
    ]
    fig = reruns.latency_figure(pd.DataFrame(rows))
    assert fig._suptitle.get_text().startswith("Wall-clock latency at batch size 1")


def test_tradeoff_summary_follows_the_sliders(world):
    fig, numbers = views.lemmas.tradeoff.tradeoff_live(2, 0.3, 1.0, world=world, n_alpha=3)
    text = views.lemmas.tradeoff.format_tradeoff_summary(numbers)
    assert text.startswith("summary at gamma = 2, c = 0.3, T = 1:") and "Token-V3" in text


# ---- where a run writes -------------------------------------------------------------------------


def _checkout(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def test_a_run_in_a_checkout_writes_to_its_build_folder(tmp_path, monkeypatch):
    for name in ("TUTORIAL_LIB_OUTPUT", "TUTORIAL_LIB_RESULTS", "TUTORIAL_LIB_FIGURES"):
        monkeypatch.delenv(name, raising=False)
    here = _checkout(tmp_path / "clone")
    monkeypatch.chdir(here / "notebooks")
    assert notebook.output_folder(".") == here.resolve() / "build" / "outputs"
    assert notebook.results_folder(None) == here.resolve() / "build" / "results"
    assert views.figures.figures_dir() == here.resolve() / "build" / "figures"
    written = notebook.save_metrics("00_quickstart", {"x": 1.0}, ".")
    assert written.parent == here.resolve() / "build" / "outputs"
    assert not list((here / "notebooks").iterdir())  # nothing beside the committed notebooks


def test_outside_a_checkout_beside_the_notebook_and_settings_win(tmp_path, monkeypatch):
    for name in ("TUTORIAL_LIB_OUTPUT", "TUTORIAL_LIB_RESULTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    assert notebook.output_folder(".") == tmp_path
    assert notebook.results_folder() == tmp_path.resolve() / "results"
    assert notebook.output_folder(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.setenv("TUTORIAL_LIB_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("TUTORIAL_LIB_RESULTS", str(tmp_path / "res"))
    assert notebook.output_folder(".") == tmp_path / "out"
    assert notebook.results_folder() == tmp_path / "res"
    assert notebook.results_folder(tmp_path / "given") == tmp_path / "given"
    with pytest.raises(ValueError, match="kind='a/b'"):
        paths.student_folder("a/b")


def test_a_figure_whose_curves_all_coincide_says_so():
    rows = [
        dict(
            task="t",
            label=label,
            method=method,
            rule="-",
            alpha=float(j),
            gamma=1,
            temperature=0.0,
            quality=0.56,
            quality_ci=0.25,
            latency=1.0,
            rejection_rate=0.01 * j,
            n=25,
        )
        for label, method, points in (
            ("Verifier", "verifier", 1),
            ("Drafter", "drafter", 1),
            ("SpecDecode", "speculative", 1),
        )
        for j in range(points)
    ]
    fig = reruns.family_figure(
        pd.DataFrame(rows), task="t", temperature=0.0, x="rejection_rate", quality_label="mbpp"
    )
    texts = [t.get_text() for ax in fig.get_axes() for t in ax.texts]
    assert any("every method here scores 0.56 on these 25 items" in t for t in texts), texts
