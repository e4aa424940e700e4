"""Every picture of a figure says what it shows (`views.static.figure_description`), and a table on a page
has no bare `inf` or `NaN` (`views.tables.page_table`)."""

from __future__ import annotations

import base64
import math

import matplotlib.pyplot as plt
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from tutorial_lib.views import static, tables

PNG = b"\x89PNG"


def _plotly_figure():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("facts, T = 1", "humaneval, T = 1"))
    fig.add_trace(go.Scatter(x=[0, 0.5, 1], y=[0.1, 0.3, 0.4], name="SpecCascade [Token-V2]"), 1, 1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0.1, 0.4], name="SpecDecode"), 1, 2)
    fig.update_layout(title="Quality against <b>rejection rate</b>")
    fig.update_xaxes(title_text="rejection rate")
    fig.update_yaxes(title_text="exact match")
    return fig


def test_a_plotly_figure_is_described_by_its_title_axes_and_lines():
    text = static.figure_description(_plotly_figure())
    assert text == (
        "Figure: Quality against rejection rate. "
        "Panel 1: facts, T = 1; exact match against rejection rate; showing SpecCascade [Token-V2]. "
        "Panel 2: humaneval, T = 1; exact match against rejection rate; showing SpecDecode."
    )


def test_a_matplotlib_figure_is_described_by_its_suptitle_labels_and_legend():
    fig, ax = plt.subplots()
    try:
        ax.plot([0, 1], [1, 0], label="q")
        ax.plot([0, 1], [0, 1], label="p")
        ax.set_xlabel("token")
        ax.set_ylabel("probability")
        ax.legend()
        fig.suptitle("The drafter's and the verifier's distributions")
        text = static.figure_description(fig)
    finally:
        plt.close(fig)
    assert text == (
        "Figure: The drafter's and the verifier's distributions. probability against token; showing q, p."
    )


def test_the_description_lists_a_few_lines_then_counts_the_rest():
    fig = go.Figure([go.Scatter(x=[0], y=[0], name=f"rule {k}") for k in range(11)])
    fig.update_layout(title="Many rules")
    assert static.figure_description(fig).endswith("rule 7 and 3 more.")


def test_the_static_copy_of_a_live_view_carries_the_description_as_its_alt_text():
    fig = _plotly_figure()
    bundle = static.static_bundle(png=static.plotly_to_png(fig), alt=static.figure_description(fig))
    assert 'alt="Figure: Quality against rejection rate. Panel 1:' in bundle["text/html"]
    assert "static copy of the figure" not in bundle["text/html"]
    assert base64.b64decode(bundle["image/png"]).startswith(PNG)
    with pytest.raises(ValueError, match="alt="):
        static.static_bundle(png=static.plotly_to_png(fig))


def test_a_figure_the_views_draw_shows_its_description_as_its_text_form():
    from IPython.core.interactiveshell import InteractiveShell

    from tutorial_lib.views import panels
    from tutorial_lib.views.panels.matplotlib_drawing import DescribedFigure

    shell = InteractiveShell.instance()
    try:
        fig = panels.to_matplotlib(
            [
                panels.Panel(
                    [panels.Trace("SpecDecode", [0, 1], [0.2, 0.4])], "alpha", "rejection rate", "Lemma 3"
                )
            ]
        )
        data, _ = shell.display_formatter.format(fig)
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    assert isinstance(fig, DescribedFigure)
    assert data["text/plain"] == "Figure: Lemma 3; rejection rate against alpha; showing SpecDecode."


def test_a_page_table_says_what_a_missing_or_infinite_cell_means_and_splits_wide_tables():
    frame = pd.DataFrame(
        {
            "task": ["facts", "code"],
            "low": [-math.inf, 0.1],
            "high": [math.inf, 0.2],
            "n_needed": [float("nan"), 40.0],
            **{f"extra_{k}": [1.0, 2.0] for k in range(6)},
        }
    )
    shown = tables.page_table(
        frame,
        keys=["task"],
        unbounded={"low": ("not reached", "unused"), "high": "unbounded"},
        columns_per_part=4,
    )
    page = shown._repr_html_()
    assert page.count("<table") == 3  # 9 columns besides the key, 3 a part
    assert page.count("<th>task</th>") == 3
    assert "not reached" in page and "unbounded" in page and "no value" in page
    assert "the computation left that cell empty" in page  # the column without words of its own
    for bare in ("inf", "nan", "NaN"):
        assert f">{bare}<" not in page and f">-{bare}<" not in page
    assert "0.100" in repr(shown) and "nan" not in repr(shown).lower().replace("no value", "")
