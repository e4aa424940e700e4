"""The reruns' figures (one panel per family, interval bands, the verifier's band) and the answer-length
table."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tutorial_lib.stats import analysis as an  # noqa: E402
from tutorial_lib.stats import pricing  # noqa: E402
from tutorial_lib.sweeps.configs import CURVES, Task
from tutorial_lib.views import reruns as rerun_views  # noqa: E402


def _summary(
    labels=(
        "Drafter",
        "SpecDecode",
        "SpecCascade [Chow]",
        "SpecCascade [OPT]",
        "SpecCascade [Token-V2]",
        "BiLD",
    ),
    temperature=1.0,
):
    """A verifier (quality 10 +- 1) and each label as a curve of three points with known intervals."""
    rows = [
        dict(
            task="t",
            label="Verifier",
            method="verifier",
            rule="-",
            alpha=0.0,
            gamma=1,
            temperature=temperature,
            quality=10.0,
            quality_ci=1.0,
            latency=1.0,
            rejection_rate=1.0,
        )
    ]
    for i, label in enumerate(labels):
        method = CURVES[label]["method"]
        points = 1 if method == "drafter" or label == "SpecDecode" else 3
        for j in range(points):
            rows.append(
                dict(
                    task="t",
                    label=label,
                    method=method,
                    rule=CURVES[label].get("rule", "-"),
                    alpha=float(j),
                    gamma=1,
                    temperature=temperature,
                    quality=5.0 + i + j,
                    quality_ci=0.5,
                    latency=0.5 + 0.2 * j,
                    rejection_rate=0.1 * j,
                )
            )
    return pd.DataFrame(rows)


def test_family_figure_has_one_panel_per_family_with_bands_and_the_verifier_band():
    fig = rerun_views.family_figure(
        _summary(),
        task="t",
        temperature=1.0,
        x="rejection_rate",
        quality_label="exact match",
        title="t, T = 1",
    )
    axes = [ax for ax in fig.get_axes() if ax.axison]
    assert [ax.get_title() for ax in axes] == list(rerun_views.FAMILIES)
    legends = {ax.get_title(): [t.get_text() for t in ax.get_legend().get_texts()] for ax in axes}
    assert legends["baselines and sequential cascades"] == ["verifier (95% band)", "Drafter", "SpecDecode"]
    assert legends["deferral rules"] == ["verifier (95% band)", "SpecCascade [Chow]", "SpecCascade [OPT]"]
    assert legends["lossy and BiLD"] == ["verifier (95% band)", "BiLD"]
    chow = axes[1]
    # the verifier's band (an axhspan) spans its interval; each three-point curve has a filled band
    spans = [p for p in chow.patches if p.get_height() > 0]
    assert any(np.isclose(p.get_y(), 9.0) and np.isclose(p.get_height(), 2.0) for p in spans)
    bands = [c for c in chow.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    lows = bands[0].get_paths()[0].vertices[:, 1].min()
    assert lows == pytest.approx(7.0 - 0.5)  # Chow's lowest point (quality 7) minus its half-width
    assert all(ax.get_xlabel() == "rejection rate" for ax in axes[2:])
    assert fig.get_size_inches() == pytest.approx(rerun_views.FAMILY_FIGURE_SIZE)
    plt.close(fig)


def test_family_figure_leaves_out_empty_families_and_refuses_nothing_to_draw():
    fig = rerun_views.family_figure(
        _summary(("Drafter", "SpecDecode", "SpecCascade [Token-V2]")),
        x="latency",
        x_label="latency (modelled)",
        families=None,
    )
    axes = [ax for ax in fig.get_axes() if ax.axison]
    assert [ax.get_title() for ax in axes] == ["baselines and sequential cascades", "token-specific rules"]
    assert {ax.get_xlabel() for ax in axes} == {"latency (modelled)"}
    assert fig.get_size_inches()[1] == pytest.approx(rerun_views.FAMILY_FIGURE_SIZE[1] / 2)  # one row
    plt.close(fig)
    with pytest.raises(ValueError, match="nothing to plot"):
        rerun_views.family_figure(_summary(), task="nope")
    with pytest.raises(ValueError, match="none of the families"):
        rerun_views.family_figure(_summary(), families={"other": ["Lossy*"]})


def test_answer_lengths_count_cuts_and_calls_per_answer():
    tasks = [
        Task(
            "short",
            "qa_em",
            [{"id": f"e{i}", "prompt": "x", "references": ["y"]} for i in range(3)],
            max_new_tokens=4,
        )
    ]
    rows = pd.DataFrame(
        [
            dict(
                task="short",
                temperature=1.0,
                gamma=1,
                label=label,
                alpha=0.0,
                rule=None,
                example_id=f"e{i}",
                n_tokens=n,
                n_verifier_calls=calls,
                modelled_latency_s=0.1 * n,
            )
            for label, lengths, per_token in (("Drafter", (4, 2, 3), 0), ("Verifier", (4, 4, 1), 1))
            for i, n in enumerate(lengths)
            for calls in [n * per_token]
        ]
    )
    table = an.answer_lengths(rows, tasks, cost="modelled_latency_s").set_index("label")
    assert table.loc["Drafter", "cut_rate"] == pytest.approx(1 / 3)
    assert table.loc["Verifier", "cut_rate"] == pytest.approx(2 / 3)
    assert table.loc["Verifier", "answer_tokens"] == pytest.approx(3.0)
    assert table.loc["Verifier", "verifier_calls_per_answer"] == pytest.approx(3.0)
    assert table.loc["Drafter", "verifier_calls_per_answer"] == 0
    assert table.loc["Drafter", "cost_per_answer"] == pytest.approx(0.3)
    assert (table["max_new_tokens"] == 4).all() and (table["n"] == 3).all()
    assert "cost_per_answer" not in an.answer_lengths(rows, tasks)
    with pytest.raises(ValueError, match="no Task given"):
        an.answer_lengths(rows.assign(task="other"), tasks)
    with pytest.raises(ValueError, match="price them first"):
        an.answer_lengths(rows, tasks, cost="modelled_latency_accelerator_s")


def test_counts_calls_tells_priceable_rows():
    counted = pd.DataFrame([dict(drafter_calls_by_k=[3], verifier_calls_by_k=[0, 2])])
    assert pricing.counts_calls(counted)
    assert not pricing.counts_calls(pd.DataFrame([dict(n_tokens=3)]))  # written before the counters
    mixed = pd.concat([counted, pd.DataFrame([dict(n_tokens=3)])], ignore_index=True)
    assert not pricing.counts_calls(mixed)
