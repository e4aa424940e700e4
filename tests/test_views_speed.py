"""Notebook 09's views: the numbers they draw come from the block-cost model; the slider callback is a plain
function."""

import plotly.graph_objects as go
import pytest
import tutorial_lib as tl

from tutorial_lib.maths import latency
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.views import speed

CPU_LIKE = Calibration.synthetic(0.02, lambda k: 0.1 * (1 + 0.6 * (k - 1)), max_k=8)


def test_block_cost_panels_show_the_model_and_the_textbook():
    costs, speedup = speed.block_cost_panels(CPU_LIKE, 0.85, measured={1: 0.8, 3: 0.6}, auto=(0.0, 1.0))
    ratio = next(t for t in costs.traces if t.name.startswith("t_p(k)"))
    assert ratio.y == pytest.approx([1 + 0.6 * (k - 1) for k in range(1, 9)])
    here = next(t for t in speedup.traces if t.name == speed.HERE)
    book = next(t for t in speedup.traces if t.name == speed.TEXTBOOK)
    assert here.y == pytest.approx([CPU_LIKE.speedup(g, 0.85) for g in range(8)])
    c = CPU_LIKE.cost_ratio
    assert book.y == pytest.approx([latency.textbook_speedup(0.85, g, c) for g in range(8)])
    measured = next(t for t in speedup.traces if t.name == speed.MEASURED)
    assert list(measured.x) == [1, 3] and list(measured.y) == [0.8, 0.6]
    assert speedup.vlines == [(CPU_LIKE.best_gamma(0.85), f"best gamma = {CPU_LIKE.best_gamma(0.85)}")]
    assert isinstance(speed.block_cost_view(CPU_LIKE, 0.85), go.Figure)


def test_what_if_callback():
    fig, numbers = speed.what_if_view(0.8, 0.1, calibration=CPU_LIKE)
    assert isinstance(fig, go.Figure)
    hypothetical = tl.decoding.speed_runs.scaled_calibration(CPU_LIKE, 0.1)
    assert numbers["best_gamma_here"] == hypothetical.best_gamma(0.8)
    assert numbers["best_gamma_textbook"] == hypothetical.textbook().best_gamma(0.8)
    assert numbers["speedup_textbook"][3] == pytest.approx(latency.textbook_speedup(0.8, 3, 0.1))
    # textbook: the smallest break-even acceptance over gamma is gamma = 1's, a = c
    for c, a in zip(numbers["cost_ratios"], numbers["break_even_textbook"]):
        assert a is None or a == pytest.approx(c, abs=1e-6)
    # blocks that cost more than one step need a higher acceptance, or never pay
    assert all(
        h is None or h >= t - 1e-12
        for h, t in zip(numbers["break_even_here"], numbers["break_even_textbook"])
    )
    assert "on this machine" in speed.describe_what_if(numbers)


@pytest.mark.parametrize("acceptance,cost_ratio", [(1.5, 0.1), (0.5, -0.2)])
def test_what_if_refuses_nonsense(acceptance, cost_ratio):
    with pytest.raises(ValueError):
        speed.what_if_view(acceptance, cost_ratio, calibration=CPU_LIKE)
