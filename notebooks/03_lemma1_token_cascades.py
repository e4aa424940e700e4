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
# # Lemma 1: the optimal token-level cascade, computed exactly
#
# > **Widgets need a running kernel.** The sliders in this notebook are drawn by the kernel that runs it.
# > Each one also leaves a static picture of its figure at the setting it was last left at, so a saved,
# > reopened or papermill-executed copy shows the figure with a one-line hint; run the cell again
# > (or *Run > Run All Cells*) to move the sliders again.
#
# **Learning goals.** After this notebook you can
# 1. write the deferral risk of a token-level cascade (equation 3) and find its minimiser (Lemma 1);
# 2. explain why the Chow and Diff rules are *plug-ins* of that minimiser, and what miscalibration does to them;
# 3. read the paper's Figure 1 (quality against calls to the large model) and say why speculative
#    decoding and cascades sit where they do.
#
# A token-level cascade lets the small model $q$ write each token unless a rule $r(x_{<t}) \in \{0, 1\}$
# sends it to the large model $p$, which costs $\alpha$. For one prefix, the *deferral risk* is
#
# $$R(r) = \mathbb{E}_{x \sim P(\cdot \mid x_{<t})}\big[(1 - r)\,\ell(x, q_t) + r\,(\ell(x, p_t) + \alpha)\big]
#   \qquad \text{(equation 3)}.$$
#
# It is linear in $r$, so the best rule is at an end (Lemma 1):
#
# $$r^*(x_{<t}) = 1 \iff \mathbb{E}_P[\ell(x, q_t)] > \mathbb{E}_P[\ell(x, p_t)] + \alpha .$$
#
# Nobody knows $P$ at inference time, so the paper's rules plug in what the models say about
# themselves. For the 0-1 loss $\ell(x, q) = 1(x \ne \arg\max_v q(v))$:
# **Chow** estimates $\mathbb{E}_P[\ell(x, q_t)]$ by $1 - \max_v q_t(v)$ and the verifier's loss by 0
# (it never looks at $p$): defer iff $\max_v q_t(v) < 1 - \alpha$.
# **Diff** estimates both: defer iff $\max_v q_t(v) < \max_v p_t(v) - \alpha$ (equation 5). For the
# log loss the entropies $H(q_t)$, $H(p_t)$ play the same role. The toy world knows $P$, so here we
# can compute $r^*$ and compare.

# %% tags=["parameters"]
seed = 0                    # which toy world (0 is the package default)
n_words = 14                # vocabulary size, besides <bos> and <eos>
loss = "zero_one"           # the loss of Lemma 1: "zero_one" or "log"
alpha = 0.1                 # the cost of one deferral in the worked examples
n_alpha = 41                # alpha values per sweep
sharpness_values = [0.25, 0.5, 1.0, 2.0, 4.0]  # miscalibration exponents to try (1: as built)
temperature = 1.0           # sampling temperature of Figure 1 (the paper uses 1)
gamma = 5                   # SpecDecode's block size in Figure 1 (the paper's is 5)
prefixes = "generated"      # Figure 1's prefixes: "generated" (the cascade's own text) or "truth"
output_dir = "."            # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "seed": "int>=0",
    "n_words": "int>=1",
    "loss": "str",
    "alpha": "float",
    "n_alpha": "int>=2",
    "sharpness_values": "list[float]",
    "temperature": "float>=0",
    "gamma": "int>=1",
    "prefixes": "str",
    "output_dir": "str"
})

# %%
import ipywidgets as widgets
import torch

import tutorial_lib as tl
from tutorial_lib import views  # plotly figures and ipywidgets wiring

# The tables are tiny (16 x 16 contexts): one thread avoids waiting on a second, busy core.
torch.set_num_threads(1)
world = tl.ToyWorld(n_words=n_words, seed=seed)
table = world.contexts()
context = tl.toy.examples.default_context(world)
print(f"{len(table.contexts)} contexts; "
      f"the verifier is blind after {[world.tokens[b] for b in world.blind_spot_tokens]}")
print("worked example: the context", tl.lessons.deferral_risks.context_risks(world, context)["name"])

# %% [markdown]
# ## One context: two straight lines
# For a fixed prefix, $R(0) = \mathbb{E}_P[\ell(x, q_t)]$ does not depend on $\alpha$ and
# $R(1) = \mathbb{E}_P[\ell(x, p_t)] + \alpha$ rises with slope 1. The optimal rule follows the lower of
# the two (the wide grey line) and switches where they cross, at
# $\alpha^* = \mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]$. A plug-in's risk is the *true*
# risk of the decision it makes from its own estimates, so it follows the same two lines but switches
# at its own point (dashed).
#
# **What to look at.** The worked example is the most visited context in a verifier blind spot. There
# the drafter is *better* than the verifier ($\alpha^* < 0$), so the optimal rule never defers for any
# cost $\alpha \ge 0$. Both plug-ins defer for small $\alpha$ because the verifier *looks* confident:
# they pay $R(1) > R(0)$. Pick other contexts in the menu: in most of them the verifier is better and the
# switch points lie inside the plot.

# %%
view = tl.lessons.deferral_risks.context_risks(world, context, loss, lemma=1)
print(f"E_P[loss of q] = {view['loss_q']:.4f}, E_P[loss of p] = {view['loss_p']:.4f}, "
      f"optimal switch alpha* = {view['optimal_switch']:.4f}")
print("plug-in switch points:", {k: round(v, 4) for k, v in view["plugin_switch"].items()})
context_risk = views.lemmas.deferral_risks.lemma1_figure(context, alpha, loss, world=world)
print("saved", views.widgets.save(context_risk, "lemma1_context_risk"))

# %% tags=["remove-output"]
views.lemmas.deferral_risks.context_risk_controls(1, context, alpha, loss, world=world)

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
views.lemmas.deferral_risks.context_risk_steps(1, context, alpha, loss, world=world)

# %% [markdown]
# ## Brute force against the closed form, everywhere
# Lemma 1 says the minimiser is one of the two ends. `lemmas.brute_force_deferral` tries 101 values of
# $r \in [0, 1]$ (randomised rules included) for every context and keeps the best; the closed form
# compares two numbers. They must agree on every context, every $\alpha$ of the grid and both losses.

# %%
grids = {name: tl.lessons.deferral_risks.lemma_alpha_grid(1, name, n_alpha)
         for name in tl.maths.lemmas.LOSSES}
brute = tl.lessons.deferral_risks.brute_force_check(world, 1, grids)
print(f"checked {brute['points_checked']} (context, alpha, loss) points: {brute['mismatches']} mismatches")

# %% [markdown]
# ## Summed over contexts
# Averaging $R$ over the prefixes $P$ writes (each context weighted by how often $P$ visits it) gives
# the per-token risk of a whole rule. **What to look at.** Left: the optimal rule (grey) is below every
# other rule at every $\alpha$, as it must be; keeping $q$ everywhere is the flat line, deferring
# everywhere the rising one. Right: the plug-ins' excess risk. Chow, which assumes the verifier is
# always right, defers far too often for mid-range $\alpha$; Diff stays close but not on the optimum.

# %%
alphas = tl.lessons.deferral_risks.lemma_alpha_grid(1, loss, n_alpha)
totals = tl.lessons.deferral_risks.total_risks(world, 1, loss, alphas)
optimal_risk = totals["risk"]["optimal (Lemma 1)"]
worst_gap = min(r - o for name, risks in totals["risk"].items() for r, o in zip(risks, optimal_risk))
print(f"smallest (rule risk - optimal risk) over every rule and alpha: {worst_gap:.3g} (never negative)")
at_alpha = {name: risks[0]
            for name, risks in tl.lessons.deferral_risks.total_risks(world, 1, loss, [alpha])["risk"].items()}
print(f"per-token risk at alpha = {alpha}:", {k: round(v, 4) for k, v in at_alpha.items()})
total_risk = views.lemmas.deferral_risks.total_risk_figure(1, loss, world=world, n_alpha=n_alpha)
print("saved", views.widgets.save(total_risk, "lemma1_total_risk"))
views.lemmas.deferral_risks.total_risk_view(1, loss, world=world, n_alpha=n_alpha)

# %% [markdown]
# ## Miscalibration moves the plug-ins, not the optimum
# `ToyWorld(drafter_sharpness=s)` raises the drafter's probabilities to the power $s$ and renormalises:
# $s > 1$ makes it over-confident, $s < 1$ under-confident, and its argmax never changes. (This is a
# temperature of $1/s$ on the model itself; the package's `temperature` argument would not do, since by
# the authors' convention deferral decisions always read the temperature-1 probabilities.)
#
# With the 0-1 loss, $\mathbb{E}_P[\ell(x, q_t)]$ depends on the argmax only, so the optimal rule and
# its risk do not move at all. The plug-ins read $\max_v q_t(v)$ and $\max_v p_t(v)$, which do.
# **What to look at.** The grey line (how far the optimal risk curve moved) stays at 0. Diff is best near
# the models as built and gets worse as the verifier grows over-confident. Chow is a surprise: a
# *sharper* drafter helps it, because a confident drafter defers less, which offsets Chow's own bias of
# treating the verifier as perfect. Two wrongs can make a smaller wrong; they do not make it optimal.
# Move the sliders below to see the whole risk curves (dashed: the plug-ins of the models as built).

# %%
sweep = tl.lessons.deferral_risks.miscalibration_sweep(world, sharpness_values, loss, n_alpha)
for model, rows in sweep.items():
    for s, row in rows.items():
        print(f"{model} sharpness {s:>5}: mean excess risk Chow {row['Chow plug-in']:.4f}, "
              f"Diff {row['Diff plug-in']:.4f}; "
              f"optimal risk moved by {row['optimal_shift']:.2g}")
miscalibration = views.lemmas.deferral_risks.miscalibration_figure(sweep, loss)
print("saved", views.widgets.save(miscalibration, "lemma1_miscalibration"))
views.widgets.interactive(
    views.lemmas.deferral_risks.total_risk_view, lemma=widgets.fixed(1), loss=widgets.fixed(loss),
    drafter_sharpness=widgets.FloatLogSlider(value=1.0, base=2, min=-2, max=2, step=0.25,
                                             continuous_update=False,
                                             description="drafter sharpness (1 = as built)"),
    verifier_sharpness=widgets.FloatLogSlider(value=1.0, base=2, min=-2, max=2, step=0.25,
                                              continuous_update=False,
                                              description="verifier sharpness (1 = as built)"),
    world=widgets.fixed(world), n_alpha=widgets.fixed(n_alpha))

# %% [markdown]
# ## The paper's Figure 1, exactly
# The paper motivates speculative cascades with one plot: quality against the fraction of tokens that
# needed the large model, for a sequential cascade with Chow's rule (Algorithm 2), the oracle Diff
# rule (Algorithm 3) and speculative decoding with $\gamma = 5$. A cascade calls $p$ once per deferred
# token; speculative decoding calls it once per *block*, so its cost is 1 / (tokens per call).
#
# Quality here is `world.evaluate`'s per-token 0-1 loss of sampled text (the chance a token differs
# from a fresh draw of $P$), computed exactly. **Which prefixes?** `"generated"`: the paper's Figure 1
# scores text the cascade writes itself, and in a cascade each position's prefix is its own earlier
# output, so a deferral changes which contexts come next (for example how often the text walks into a
# blind spot). `"truth"` would score every position on a prefix written by $P$ (teacher forcing):
# that is the expectation of the lemmas, printed below for comparison.
#
# **What to look at.** SpecDecode sits on the verifier's quality (dashed line) at about half a verifier
# call per token. The Diff oracle dips *below* the verifier's loss, but only at many more calls.
# Chow runs above Diff all the way: it cannot tell the blind spots apart. That gap between "better
# quality" and "fewer calls" is what speculative cascades close (notebook 05).

# %%
figure1 = tl.lessons.tradeoff.figure1_curves(world, n_alpha, temperature, gamma, prefixes)
teacher = tl.lessons.tradeoff.figure1_curves(world, n_alpha, temperature, gamma, "truth")
rule_names = ("Chow (TokenCascade)", "Diff (oracle)")
spec_name = f"SpecDecode (gamma = {gamma})"
print(f"verifier alone {figure1['verifier']:.4f}, drafter alone {figure1['drafter']:.4f}; "
      f"SpecDecode {figure1[spec_name]['loss'][0]:.4f} "
      f"at {figure1[spec_name]['calls_per_token'][0]:.3f} calls per token")
for name in rule_names:
    best = min(range(len(figure1[name]["loss"])), key=figure1[name]["loss"].__getitem__)
    print(f"{name}: best loss {figure1[name]['loss'][best]:.4f} "
          f"at {figure1[name]['calls_per_token'][best]:.3f} calls per token "
          f"(prefixes from P: best {min(teacher[name]['loss']):.4f}, verifier {teacher['verifier']:.4f})")
print("saved", views.widgets.save(views.lemmas.tradeoff.figure1_figure(figure1, temperature, prefixes),
                                  "lemma1_figure1"))
views.widgets.interactive(
    views.lemmas.tradeoff.figure1_view,
    temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.1, continuous_update=False,
                                    description="temperature T"),
    gamma=widgets.IntSlider(value=gamma, min=1, max=8, continuous_update=False,
                            description="SpecDecode block size gamma"),
    prefixes=widgets.Dropdown(options=["generated", "truth"], value=prefixes, description="prefixes"),
    world=widgets.fixed(world), n_alpha=widgets.fixed(n_alpha))

# %%
tl.lessons.notebook.save_metrics("03_lemma1_token_cascades", {
    "context": {k: view[k] for k in ("name", "loss_q", "loss_p", "optimal_switch", "plugin_switch")},
    "brute_force": {"points_checked": brute["points_checked"], "mismatches": brute["mismatches"]},
    "min_excess_over_optimal": worst_gap,
    "risk_at_alpha": dict(at_alpha, alpha=alpha),
    "miscalibration": sweep,
    "figure1": {"verifier_loss": figure1["verifier"], "drafter_loss": figure1["drafter"],
                "spec_loss": figure1[spec_name]["loss"][0],
                "spec_calls_per_token": figure1[spec_name]["calls_per_token"][0],
                "best_loss": {name: min(figure1[name]["loss"]) for name in rule_names},
                "calls_per_token": {name: figure1[name]["calls_per_token"] for name in rule_names},
                "truth_prefix_best_loss": {name: min(teacher[name]["loss"]) for name in rule_names}},
}, output_dir)

# %% [markdown]
# ## Exercises
# 1. For the worked-example context, compute $\mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]$ for the
#    0-1 loss yourself from `table.P[context]`, `table.q[context]`, `table.p[context]` (the 0-1 loss of a
#    model is $1 - P(\arg\max)$). This is $\alpha^*$; store it in `answer_1`. Why does its sign tell you the
#    optimal rule never defers here?
# 2. How much per-token risk does the Diff plug-in lose against the optimal rule at $\alpha$ = `alpha`,
#    with the loss of this run? Store the difference in `answer_2`.
# 3. Which drafter sharpness in `sharpness_values` gives Chow the smallest mean excess risk? Store it in
#    `answer_3`, then explain in one sentence why sharpening helps Chow.
#
# **Solutions:** [notebook 03's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-03-03_lemma1_token_cascades), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("03-1", answer_1, world=world, context=context)
tl.lessons.notebook.check("03-2", answer_2, world=world, loss=loss, alpha=alpha)
tl.lessons.notebook.check("03-3", answer_3, sweep=sweep)

# %% [markdown]
# **Read next:** [04 Lemma 2 and lossy speculative sampling](04_lemma2_lossy.ipynb): lossy speculative sampling is Algorithm 4 with one particular target.
