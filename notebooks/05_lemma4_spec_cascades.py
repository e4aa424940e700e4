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
# # Lemma 4: the optimal speculative cascade, and what it buys
#
# > **Widgets need a running kernel.** The sliders in this notebook are drawn by the kernel that runs it.
# > Each one also leaves a static picture of its figure at the setting it was last left at, so a saved,
# > reopened or papermill-executed copy shows the figure with a one-line hint; run the cell again
# > (or *Run > Run All Cells*) to move the sliders again.
#
# **Learning goals.** After this notebook you can
# 1. explain why, in a *speculative* cascade, a deferral costs $\alpha\,D_{TV}(p_t, q_t)$ instead of $\alpha$
#    (equation 8) and find the minimiser (Lemma 4);
# 2. check the closed form against brute force and see where the OPT plug-in departs from it;
# 3. read a cost-quality trade-off two ways (rejection rate and expected latency) and compare
#    SpecDecode, lossy SpecDecode, BiLD\*, Chow, Diff, OPT and the token-specific rules.
#
# In a speculative cascade the verifier scores every draft anyway; deferring at a position only costs
# something when the draft is *rejected*. By Lemma 3 the target $\pi = (1 - r)\,q_t + r\,p_t$ rejects a
# draft with probability $r\,D_{TV}(p_t, q_t)$, so the deferral risk becomes
#
# $$R_{\mathrm{spec}}(r) = \mathbb{E}_{x \sim P}\big[(1 - r)\,\ell(x, q_t) + r\,(\ell(x, p_t) + \alpha\, D_{TV}(p_t, q_t))\big]
#   \qquad \text{(equation 8)},$$
#
# and Lemma 4: $r^* = 1 \iff \mathbb{E}_P[\ell(x, q_t)] > \mathbb{E}_P[\ell(x, p_t)] + \alpha\, D_{TV}(p_t, q_t)$.
# Deferring where the two models agree is almost free. The 0-1 plug-in is **OPT**:
# defer iff $\max_v q_t(v) < \max_v p_t(v) - \alpha\, D_{TV}(p_t, q_t)$.

# %% tags=["parameters"]
seed = 0                          # which toy world (0 is the package default)
n_words = 14                      # vocabulary size, besides <bos> and <eos>
loss = "zero_one"                 # the loss of Lemma 4: "zero_one" or "log"
alpha = 0.3                       # the cost parameter in the worked examples
n_alpha_lemma = 41                # alpha values in the Lemma 4 sweeps
lemma_temperatures = [1.0, 0.5]   # temperatures of the brute-force check
gamma = 5                         # draft block size of the speculative methods
cost_ratio = 0.1                  # cost of one drafter step, in verifier calls
temperature = 1.0                 # sampling temperature of the trade-off
n_alpha = 21                      # alpha values per method in the trade-off
n_engine = 600                    # sequences per method for the engine check
output_dir = "."                  # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "seed": "int>=0",
    "n_words": "int>=1",
    "loss": "str",
    "alpha": "float",
    "n_alpha_lemma": "int>=2",
    "lemma_temperatures": "list[float]",
    "gamma": "int>=1",
    "cost_ratio": "float>=0",
    "temperature": "float>=0",
    "n_alpha": "int>=2",
    "n_engine": "int>=1",
    "output_dir": "str"
})

# %%
import ipywidgets as widgets
import pandas as pd
from IPython.display import display
import torch

import tutorial_lib as tl
from tutorial_lib import views  # plotly figures and ipywidgets wiring

# The tables are tiny (16 x 16 contexts): one thread avoids waiting on a second, busy core.
torch.set_num_threads(1)
world = tl.ToyWorld(n_words=n_words, seed=seed)
context = tl.toy.examples.default_context(world)
metrics = {}  # one key per section; the last cell writes them all
print("worked example: the context", tl.lessons.deferral_risks.context_risks(world, context)["name"])

# %% [markdown]
# ## One context: the deferral line now rises with slope $D_{TV}$
# Same picture as Lemma 1 (notebook 03), except that $R(1) = \mathbb{E}_P[\ell(x, p_t)] + \alpha D_{TV}$,
# so the switch point is $\alpha^* = (\mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]) / D_{TV}$.
# **What to look at.** In the worked example (a verifier blind spot) the optimal rule keeps $q$ for every
# $\alpha \ge 0$, while OPT defers for small $\alpha$: the verifier's confidence fools it as it fools Diff.
# Pick contexts where the models nearly agree: the $R(1)$ line is almost flat, deferring costs almost
# nothing, and the optimal rule defers up to large $\alpha$.

# %%
view4 = tl.lessons.deferral_risks.context_risks(world, context, loss, lemma=4)
view1 = tl.lessons.deferral_risks.context_risks(world, context, loss, lemma=1)
print(f"D_TV(p, q) = {view4['tv']:.4f}; switch points: Lemma 4 {view4['optimal_switch']:.4f}, "
      f"Lemma 1 {view1['optimal_switch']:.4f}, "
      f"OPT plug-in {view4['plugin_switch']['OPT plug-in']:.4f}")
context_risk = views.lemmas.deferral_risks.lemma4_figure(context, alpha, loss, world=world)
print("saved", views.widgets.save(context_risk, "lemma4_context_risk"))

# %% tags=["remove-output"]
views.lemmas.deferral_risks.context_risk_controls(4, context, alpha, loss, world=world)

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
views.lemmas.deferral_risks.context_risk_steps(4, context, alpha, loss, world=world)

# %% [markdown]
# ## Brute force against the closed form, and against OPT
# `lemmas.brute_force_deferral` minimises equation (8) over 101 values of $r \in [0, 1]$ per context;
# Lemma 4's closed form must pick the same $r$ on every context, $\alpha$, loss and temperature. The
# OPT plug-in is then scored by how often it makes the optimal decision (visit-weighted, averaged
# over $\alpha$).

# %%
grids = {name: tl.lessons.deferral_risks.lemma_alpha_grid(4, name, n_alpha_lemma)
         for name in tl.maths.lemmas.LOSSES}
brute = tl.lessons.deferral_risks.brute_force_check(world, 4, grids, temperatures=lemma_temperatures)
agreement = tl.lessons.deferral_risks.plugin_agreement(world, 4, loss, grids[loss])
print(f"checked {brute['points_checked']} (context, alpha, loss, T) points: {brute['mismatches']} mismatches")
print("share of decisions equal to Lemma 4's:", {k: round(v, 4) for k, v in agreement.items()})
metrics["lemma4"] = {"points_checked": brute["points_checked"], "mismatches": brute["mismatches"],
                     "plugin_agreement": agreement,
                     "context": {k: view4[k] for k in ("name", "tv", "loss_q", "loss_p", "optimal_switch",
                                                       "plugin_switch")}}

# %% [markdown]
# ## Summed over contexts
# **What to look at.** Left: the optimal rule (grey) is lowest everywhere; Lemma 1's rule (black dashes),
# which ignores the $D_{TV}$ factor, is close but above it: it refuses cheap deferrals where the models
# agree. Right: OPT's excess risk is largest for mid-range $\alpha$, where its confidence estimates
# decide most; at large $\alpha$ every rule keeps $q$ and they meet.

# %%
totals = tl.lessons.deferral_risks.total_risks(
    world, 4, loss, tl.lessons.deferral_risks.lemma_alpha_grid(4, loss, n_alpha_lemma))
optimal_risk = totals["risk"]["optimal (Lemma 4)"]
worst_gap = min(r - o for risks in totals["risk"].values() for r, o in zip(risks, optimal_risk))
at_alpha = {name: risks[0]
            for name, risks in tl.lessons.deferral_risks.total_risks(world, 4, loss, [alpha])["risk"].items()}
print(f"smallest (rule risk - optimal risk): {worst_gap:.3g} (never negative)")
print(f"per-token speculative risk at alpha = {alpha}:", {k: round(v, 4) for k, v in at_alpha.items()})
metrics["lemma4"].update(min_excess_over_optimal=worst_gap, risk_at_alpha=dict(at_alpha, alpha=alpha))
total_risk = views.lemmas.deferral_risks.total_risk_figure(4, loss, world=world, n_alpha=n_alpha_lemma)
print("saved", views.widgets.save(total_risk, "lemma4_total_risk"))
views.lemmas.deferral_risks.total_risk_view(4, loss, world=world, n_alpha=n_alpha_lemma)

# %% [markdown]
# ## The cost-quality trade-off, exactly
# Now run every method speculatively with block size $\gamma$ (Algorithm 4; bonus tokens from $p$) and
# sweep its $\alpha$. `world.evaluate(rule, alpha, gamma=gamma)` gives, exactly, the per-token 0-1 loss of
# the generated text, the rejection rate and the mean number of tokens per verifier call. A block costs
# $\gamma$ drafter steps of $c$ verifier calls each plus one verifier call, so
#
# $$\text{latency per token, relative to the verifier alone} = \frac{\gamma\, c + 1}{\text{tokens per verifier call}}.$$
#
# **What to look at.** Left (the paper's Gemma plots): every curve runs from few rejections and the
# drafter's quality to SpecDecode's point (the verifier's quality). Rules that keep the drafter where the
# verifier is blind (the token rules, BiLD\*, Diff, OPT) dip *below* the verifier's loss; Chow, which never
# looks at $p$, does not, and neither does lossy SpecDecode, which only ever trades quality for speed
# (though in this world it trades best at mid-range rejection rates: it gives up a little quality on
# every token instead of deferring whole positions). Token rules can reject *more* than SpecDecode: outside the acceptance set they
# scale $p$ down. Right (the paper's T5 plots): the same curves against latency; everything left of the
# dotted line is faster than the verifier alone. Move $\gamma$ and $c$: with free drafts ($c = 0$) longer
# blocks always help, but a draft survives only about 55% of the time here, so already at $c = 0.1$
# SpecDecode is fastest with $\gamma = 2$ (latency 0.72 against 0.84 at $\gamma = 5$), and at $c = 0.3$ blocks
# longer than 2 are slower than the verifier alone.

# %%
tradeoff = tl.lessons.tradeoff.tradeoff_curves(world, gamma, temperature, n_alpha, cost_ratio=cost_ratio)
summary = tl.lessons.tradeoff.tradeoff_summary(tradeoff)
print(f"verifier alone: loss {tradeoff['verifier']['loss']:.4f} at latency 1; "
      f"drafter alone: loss {tradeoff['drafter']['loss']:.4f} at latency {tradeoff['drafter']['latency']:g}")
print(f"summary at this run's parameters (gamma = {gamma}, c = {cost_ratio}, T = {temperature}); "
      "the summary under the sliders below follows them:")
print(pd.DataFrame(summary).T.round(4).to_string())
metrics["tradeoff"] = {"gamma": gamma, "cost_ratio": cost_ratio, "temperature": temperature,
                       "verifier": tradeoff["verifier"], "drafter": tradeoff["drafter"],
                       "curves": tradeoff["curves"], "summary": summary}
tradeoff_figure = views.lemmas.tradeoff.tradeoff_figure(tradeoff, gamma, cost_ratio, temperature)
print("saved", views.widgets.save(tradeoff_figure, "lemma4_tradeoff"))
views.widgets.live_view(
    views.lemmas.tradeoff.tradeoff_live,
    dict(gamma=widgets.IntSlider(value=gamma, min=1, max=8, continuous_update=False,
                                 description="block size gamma"),
         cost_ratio=widgets.FloatSlider(value=cost_ratio, min=0.0, max=1.0, step=0.01,
                                        continuous_update=False,
                                        description="drafter step cost c (verifier calls)"),
         temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.1,
                                         continuous_update=False, description="temperature T"),
         methods=widgets.SelectMultiple(options=list(tl.lessons.tradeoff.TRADEOFF_METHODS),
                                        value=list(tl.lessons.tradeoff.TRADEOFF_METHODS), rows=9,
                                        description="methods")),
    describe=views.lemmas.tradeoff.format_tradeoff_summary, world=world, n_alpha=n_alpha)

# %% [markdown]
# ## The same curves from the real engine
# Everything above is computed exactly by `world.evaluate`, which *assumes* how Algorithm 4 behaves.
# Here the engine itself, `tl.generate(method="speculative")` with its KV caches, blocks of $\gamma$
# drafts, rollbacks and bonus tokens, runs `n_engine` sequences of the toy world's drafter and verifier
# for each method at about two thirds of the way along its $\alpha$ grid (away from $\alpha = 0$, where
# Token-V2's acceptance set sits exactly on a tie that float32 and float64 break differently); the truth
# $P$ scores every emitted token.
#
# **What to look at.** Each point (the engine, with a bar of two standard errors each way) should sit on its
# exact curve; the table gives z-scores, which should be within a few units. A systematic gap would mean the
# engine and the exact calculation disagree about the algorithm.

# %%
checked_alpha = {label: curve["alpha"][round(0.65 * (len(curve["alpha"]) - 1))]
                 for label, curve in tradeoff["curves"].items()}
check = tl.lessons.toycheck.engine_check(world, tl.lessons.tradeoff.TRADEOFF_METHODS, checked_alpha,
                                         gamma=gamma, temperature=temperature, n=n_engine, seed=seed)
z_table = pd.DataFrame({label: {f"z {k}": v for k, v in r["z"].items()} for label, r in check.items()}).T
display(tl.views.tables.page_table(z_table.rename_axis("method").reset_index(), keys=["method"], digits=2,
                                   blank={column: "undefined for this rule" for column in z_table.columns}))
print("saved", views.widgets.save(tl.views.toy.engine_check_figure(check, tradeoff["curves"]),
                                  "lemma4_engine_check"))
metrics["engine_check"] = {"n": n_engine, "results": check,
                           "max_abs_z": max(abs(z) for r in check.values() for z in r["z"].values()
                                            if z == z)}
print(f"largest |z| over every method and metric: {metrics['engine_check']['max_abs_z']:.2f}")

# %% [markdown]
# ## Record the numbers
# Every number shown above is in `metrics`, one key per section; this cell writes them for the tests.

# %%
tl.lessons.notebook.save_metrics("05_lemma4_spec_cascades", metrics, output_dir)

# %% [markdown]
# ## Exercises
# 1. For the most visited context (`tl.toy.examples.context_options(world)[0][1]`), compute Lemma 4's switch point
#    $(\mathbb{E}_P[\ell(x, q_t)] - \mathbb{E}_P[\ell(x, p_t)]) / D_{TV}(p_t, q_t)$ for the 0-1 loss from `world.contexts()`
#    and store it in `answer_1`. Is it larger or smaller than Lemma 1's, and why?
# 2. SpecDecode emits `tradeoff["curves"]["SpecDecode"]["tokens_per_call"][0]` tokens per verifier call.
#    What is its expected latency per token with this run's `gamma` and `cost_ratio`? Store it in `answer_2`.
# 3. What is the lowest loss any method reaches without being slower than the verifier alone? Store it in
#    `answer_3`. Which method is it, and does it beat the verifier's quality?
#
# **Solutions:** [notebook 05's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-05-05_lemma4_spec_cascades), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("05-1", answer_1, world=world)
tl.lessons.notebook.check("05-2", answer_2, tradeoff=tradeoff, gamma=gamma, cost_ratio=cost_ratio)
tl.lessons.notebook.check("05-3", answer_3, summary=summary)

# %% [markdown]
# **Read next:** [09 speed on your hardware](09_speed_on_your_hardware.ipynb) for what a verifier call costs on this machine (minutes, no download), or [06 the T5 rerun](06_t5_evaluation.ipynb) for the paper's translation experiment on a small trained pair.
