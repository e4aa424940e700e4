# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -user_expressions
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python (tutorial_lib)
#     language: python
#     name: tutorial-lib
# ---

# %% [markdown]
# # Rejection rates: how often the verifier overrules the drafter, and Lemma 3 by simulation
#
# > **Widgets need a running kernel.** The sliders in this notebook are drawn by the kernel that runs it.
# > Each one also leaves a static picture of its figure at the setting it was last left at, so a saved,
# > reopened or papermill-executed copy shows the figure with a one-line hint; run the cell again
# > (or *Run > Run All Cells*) to move the sliders again.
#
# **Learning goals.** After this notebook you can
# 1. read each rule's rejection rate against its `alpha`, and say why a deferral rule's curve is a
#    step on one pair of distributions but smooth on average over many contexts;
# 2. check Lemma 3 by simulating Algorithm 4's accept/reject step, and judge the agreement with
#    binomial standard errors;
# 3. say where the lossy and token-specific rules differ from the mixtures (the token rules can reject
#    more often than SpecDecode; the lossy $\beta$ does not change how often a draft is rejected).
#
# Algorithm 4 keeps a draft $x \sim q$ with probability $\min\{1, \pi(x)/q(x)\}$, so a draft is
# rejected with probability
#
# $$\rho(\pi, q) = \sum_x q(x)\Big(1 - \min\Big\{1, \frac{\pi(x)}{q(x)}\Big\}\Big)
#   = \sum_v \max\{0,\, q(v) - \pi(v)\}.$$
#
# **Lemma 3.** For a mixture $\pi = (1 - r)\,q + r\,p$ with $r \in [0, 1]$,
# $\rho = r\, D_{TV}(p, q)$ where $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$.
# (Proof: $q - \pi = r\,(q - p)$.) A deferral rule is the case $r = \delta \in \{0, 1\}$, so it rejects
# either never or exactly as often as SpecDecode.
#
# The simulation draws $n$ drafts and counts the rejections $k$; $k$ is binomial, so the estimate
# $\hat\rho = k/n$ has standard error $\mathrm{se} = \sqrt{\rho(1 - \rho)/n}$ and
# $z = (\hat\rho - \rho)/\mathrm{se}$ should mostly lie within $\pm 2$, and all but never beyond $\pm 4$.

# %% tags=["parameters"]
example = "verifier blind spot"   # the single pair of the second figure (see tl.toy.examples.toy_examples())
temperature = 1.0                 # sampling temperature (0 means greedy)
alpha = 0.3                       # the alpha marked on every curve, with its rejection rate
n_alpha = 41                      # alpha values per curve
r_values = [0.0, 0.25, 0.5, 0.75, 1.0]  # mixture weights r of the Lemma 3 check
n_draws = 20000                   # simulated drafts per (example, r)
lenience = 0.5                    # where lossy and token rules sit in their alpha range for their check
seed = 0                          # toy world, and the simulation's torch.Generator
output_dir = "."                  # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "example": "str",
    "temperature": "float>=0",
    "alpha": "float",
    "n_alpha": "int>=2",
    "r_values": "list[float]",
    "n_draws": "int>=1",
    "lenience": "float>=0",
    "seed": "int>=0",
    "output_dir": "str"
})

# %%
import ipywidgets as widgets
import pandas as pd
from IPython.display import display

import tutorial_lib as tl
from tutorial_lib import views  # plotly figures and ipywidgets wiring

examples = tl.toy.examples.toy_examples(seed)
toy_world = tl.toy.examples.toy_world_inputs(seed)
print(toy_world.description)

# %% [markdown]
# ## Rejection rate against alpha, over the whole toy world
# Every context of the toy world, weighted by how often the true language visits it, so each curve is
# the per-token rejection rate on text written by $P$. One panel per rule, each over its own `alpha`
# range (OPT over $[-5, 5]$ of its unbounded range, lossy up to 0.99); the dashed line is SpecDecode.
# What to look at:
# - each deferral rule (BiLD\*, Chow, Diff, OPT) falls from SpecDecode's rate at its low end to 0 at its
#   high end: it is Lemma 3 averaged over contexts, the weight of the contexts where $\delta = 1$ times
#   their $D_{TV}$; OPT moves only inside $[-1, 1]$ at $T = 1$, because $|\max p - \max q| \le D_{TV}(p, q)$;
# - the two lossy curves are the same curve: $\min\{1, \pi(x)/q(x)\} = \min\{1, p(x)/((1-\alpha)q(x))\}$
#   whatever $\beta \ge 1 - \alpha$ is, so $\beta$ only changes the residual a rejected draft is
#   replaced from; lossy never reaches 0 as $\alpha < 1$;
# - Token-V2 and Token-V3 climb *above* SpecDecode's line for small `alpha`: outside the acceptance set
#   their target is $(1 - q(A))\,p$, smaller than $p$, so drafts that SpecDecode would keep are
#   rejected. Token-V3 at `alpha = 0` is not SpecDecode: its acceptance set is the verifier's top token.
#
# Move `alpha`: a ring marks it on every curve whose range contains it, and each panel's title and the
# read-out under the figure give the rejection rate there. Pick another input or temperature (each such
# change recomputes every curve, so the temperature slider updates on release).

# %% tags=["remove-output"]
inputs = [(toy_world.name, toy_world)] + [(name, e) for name, e in examples.items()]
display(views.widgets.live_view(
    views.targets.rejection_curves_view,
    dict(example=widgets.Dropdown(options=inputs, value=toy_world, description="inputs"),
         temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.05,
                                         description="temperature T", continuous_update=False),
         alpha=widgets.FloatSlider(value=alpha, min=-1.0, max=1.0, step=0.05,
                                   description="alpha (marked on every curve)")),
    describe=views.targets.format_rejection_at, n_alpha=n_alpha))

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
slider_alphas = views.slider_steps.slider_values(-1.0, 1.0)
views.slider_steps.steps_figure(views.targets.rejection_curves_view, "alpha", slider_alphas, active=alpha,
                                label="alpha (marked on every curve)", example=toy_world,
                                temperature=temperature, n_alpha=n_alpha)

# %%
_, curves = views.targets.rejection_curves_view(toy_world, temperature, alpha, n_alpha)
fig = views.targets.rejection_curves_figure(curves)
tl.savefig(fig, "rejection_vs_alpha")
print(f"SpecDecode rejects {curves['spec']:.4f} of the drafts")
print(views.targets.format_rejection_at(curves))
ends = {label: (c["rejection"][0], c["rejection"][-1]) for label, c in curves["curves"].items()}
peaks = {label: max(c["rejection"]) for label, c in curves["curves"].items()}
lossy_beta_gap = max(abs(a - b) for a, b in zip(curves["curves"]["Lossy (β=1)"]["rejection"],
                                                 curves["curves"]["Lossy* (β normalises)"]["rejection"]))
display(pd.DataFrame({"at the low end": {k: v[0] for k, v in ends.items()},
                      "at the high end": {k: v[1] for k, v in ends.items()},
                      "highest": peaks}).round(4))
print(f"largest gap between the two lossy curves: {lossy_beta_gap:.2e}")

# %% [markdown]
# ## The same curves for one pair
# For a single pair $(q, p)$ a deferral rule's curve is a step between $D_{TV}(p, q)$ and 0, at the
# `alpha` where its decision flips (Lemma 3 with $r = \delta$). The token rules step once for every
# word that enters the acceptance set. In the default blind spot Chow, Diff and OPT keep deferring
# over most of their range: the verifier is confident there, though wrong.

# %%
pair_curves = tl.lessons.rejection.rejection_curves(example, temperature, n_alpha, examples=examples)
fig = views.targets.rejection_curves_figure(pair_curves)
tl.savefig(fig, "rejection_vs_alpha_example")
print(f"D_TV(p, q) = {pair_curves['spec']:.4f} for {example!r}")

# %% [markdown]
# ## Lemma 3 by simulation
# For every example and each $r$ in `r_values`, `n_draws` drafts $x \sim q$ go through
# `tl.maths.verification.verify_draft` (Algorithm 4's accept/reject step) with the target
# $\pi = (1 - r)\,q + r\,p$, and the fraction rejected is compared with $r\,D_{TV}(p, q)$. What to look
# at: on the left every point sits on the diagonal; on the right the differences are a few thousandths,
# inside their error bars of $\pm 2$ standard errors. At $r = 0$ nothing is ever rejected ($\pi = q$),
# and in `disjoint` at $r = 1$ everything is (no drafted word is possible under $p$): there the
# standard error is 0 and the check is exact.

# %%
lemma3_rows = tl.lessons.rejection.lemma3_check(examples, r_values, n_draws, temperature, seed)
lemma3 = pd.DataFrame(lemma3_rows)
with pd.option_context("display.float_format", "{:.4f}".format, "display.width", 200):
    display(lemma3)
views.targets.lemma3_view(lemma3_rows).show()
fig = views.targets.lemma3_figure(lemma3_rows)
tl.savefig(fig, "rejection_lemma3")
print(f"largest |z| over {len(lemma3_rows)} checks: {lemma3['z'].abs().max():.2f}")

# %% [markdown]
# ## Targets that are not mixtures
# Lemma 3 is about mixtures. For the lossy and token-specific targets the rejection probability is
# still $\sum_v \max\{0, q(v) - \pi(v)\}$; the same simulation checks it, with each rule at `lenience`
# of its `alpha` range. Note again that the two lossy variants reject equally often.

# %%
rule_rows = tl.lessons.rejection.rule_rejection_check(examples, lenience, n_draws, temperature, seed + 1)
rule_check = pd.DataFrame(rule_rows)
with pd.option_context("display.float_format", "{:.4f}".format, "display.width", 200):
    display(rule_check)
print(f"largest |z| over {len(rule_rows)} checks: {rule_check['z'].abs().max():.2f}")

# %%
tl.lessons.notebook.save_metrics("02_rejection_rates", {
    "parameters": {"example": example, "temperature": temperature, "n_alpha": n_alpha, "r_values": r_values,
                   "n_draws": n_draws, "lenience": lenience, "seed": seed, "alpha": alpha},
    "spec_rejection": curves["spec"],
    "rejection_at_alpha": curves["at_alpha"],
    "curve_ends": ends,
    "curve_peaks": peaks,
    "lossy_beta_gap": lossy_beta_gap,
    "example_spec_rejection": pair_curves["spec"],
    "example_curve_ends": {label: (c["rejection"][0], c["rejection"][-1])
                           for label, c in pair_curves["curves"].items()},
    "lemma3": lemma3_rows,
    "lemma3_z": [row["z"] for row in lemma3_rows],
    "rule_check": rule_rows,
    "rule_z": [row["z"] for row in rule_rows],
}, output_dir)

# %% [markdown]
# ## Exercises
# 1. Without simulating, what fraction of drafts does the target $\pi = 0.3\,q + 0.7\,p$ reject on the
#    `verifier blind spot` example (at temperature 1)? Store it in `answer_1`.
# 2. Over the whole toy world (the first figure), by how much does Token-V3's rejection rate at
#    `alpha = 0` exceed SpecDecode's? Store the difference in `answer_2` (use `curves`).
# 3. How many simulated drafts make the standard error of $\hat\rho$ equal to 0.001 when the true
#    rejection probability is 0.5? Store it in `answer_3`.
#
# **Solutions:** [notebook 02's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-02-02_rejection_rates), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("02-1", answer_1, examples=examples)
tl.lessons.notebook.check("02-2", answer_2, curves=curves)
tl.lessons.notebook.check("02-3", answer_3)

# %% [markdown]
# **Read next:** [03 Lemma 1 and token cascades](03_lemma1_token_cascades.ipynb): which deferral is optimal when a deferral has a fixed cost.
