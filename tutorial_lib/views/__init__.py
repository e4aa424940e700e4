"""Everything that draws: plotly figures, their matplotlib twins, and ipywidgets wiring.

The only wing that imports matplotlib, seaborn, plotly or ipywidgets (tests/test_structure.py checks it).
Views only draw and wire widgets; every number they show comes from another wing (`lessons`, `maths`,
`decoding.speed_runs`, `stats`) or the example data (`toy.examples`). Importing this package imports none
of its modules: each loads on first use (`tl.views.targets`), so a lesson's view never loads the reruns'
(`reruns`, `verdicts`, `token_analysis` draw the lab's results; tests/test_structure.py checks it).

One idiom draws every figure: a `*_panels(...)` function returns a list of `panels.Panel`s (a figure as
data), which `panels.to_matplotlib` draws as the static `*_figure` (for `tl.savefig`) and
`panels.to_plotly` as the interactive `*_view`; so both show the same numbers. One naming rule:
`*_view` is interactive (plotly, or a widget), `*_figure` static (matplotlib). (The two figures of
notebook 00 keep their first names, `figures.plot_distributions` and `figures.plot_tradeoff`.)

- `panels`  - `Trace` / `Heatmap` / `Panel` (a figure as data: lines, curves, points, bars, reference lines,
  interval bands and asymmetric error bars, notes) and the two renderers `to_plotly` / `to_matplotlib`.
- `figures` - `savefig` (where figures go: `$TUTORIAL_LIB_FIGURES`, else the checkout's `build/figures/`),
  the figure size, and the lessons' static distribution and trade-off figures.
- `reruns`  - the figures of the T5 and Gemma-style reruns (one panel per family of methods, curves with
  bands).
- `toy`     - the engine on the toy world against the exact curves (notebook 05).

- `static`  - static copies of the live views (a PNG drawn from the plotly figure, or the view's HTML, and a
  hint), so a saved or reopened notebook shows each figure, not a broken widget.
- `tables`  - tables as a page shows them (`page_table`): a missing or infinite cell in words, a wide table
  split into parts that fit the page.
- `slider_steps` - a live view's slider drawn in advance as plotly slider steps (`steps_figure`), so it moves
  on a static page (the course book) without a kernel; the notebooks keep the ipywidget beside it.
- `widgets` - the shared helper: `live_view`, `interactive`, `link_alpha_slider`, label style, rule labels,
  `number` for titles; re-exports `panels`' `Trace` / `Panel` / `to_plotly` / `to_matplotlib`.
- `targets` - notebooks 01-02: one pair's `q`, `p`, `pi` with read-outs, every rule at once, rejection
  rate against `alpha` with the chosen `alpha` marked, Lemma 3 by simulation.
- `lemmas`  - notebooks 03-05, a folder of three: `deferral_risks` (Lemma 1 and 4 risk lines, risks summed
  over contexts, miscalibration), `lossy` (Lemma 2 token by token, `beta = 1` against Lossy*), `tradeoff`
  (Figure 1, the cost-quality trade-off).
- `speed`   - notebook 09: t_p(k) / t_p(1), predicted speed-up against gamma beside the textbook with
  measured points, and the a / c sliders (where speculation starts to pay).
- `verdicts` - notebooks 06-07: batch-size-1 latency per task and pooled, and each latency claim's
  verdict against the drafter's relative cost c (`tutorial_lib.stats.hardware`).
- `token_analysis` - notebook 08: every rule's curve against the oracle envelope, the areas above it,
  and one answer token by token shaded by a rule's deferral or rejection probability.
"""

import importlib

__all__ = [
    "figures",
    "lemmas",
    "panels",
    "reruns",
    "slider_steps",
    "speed",
    "static",
    "tables",
    "targets",
    "token_analysis",
    "toy",
    "verdicts",
    "widgets",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use: a lesson's view loads no rerun's view
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
