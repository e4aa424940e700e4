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
# # Lemma 2: lossy speculative sampling is Algorithm 4 with one particular target
#
# > **Widgets need a running kernel.** The sliders in this notebook are drawn by the kernel that runs it.
# > Each one also leaves a static picture of its figure at the setting it was last left at, so a saved,
# > reopened or papermill-executed copy shows the figure with a one-line hint; run the cell again
# > (or *Run > Run All Cells*) to move the sliders again.
#
# **Learning goals.** After this notebook you can
# 1. state lossy speculative sampling (Tran-Thien): its acceptance rule and its residual;
# 2. check, token by token, that Algorithm 4 run on the lossy target does exactly the same (Lemma 2);
# 3. say what the parameter $\beta$ changes and what it does not, comparing $\beta = 1$ with the
#    normalising $\beta$ of this package (Lossy*).
#
# **Lossy speculative sampling** with parameters $\alpha \in [0, 1)$ and $\beta \ge 1 - \alpha$ keeps a
# draft $x \sim q$ with probability $\min\{1, \frac{p(x)}{(1 - \alpha)\, q(x)}\}$ and replaces a
# rejected one by a sample of $\mathrm{norm}(\max\{0, \frac{1}{\beta} p - q\})$. $\alpha = 0$ is
# ordinary speculative decoding; larger $\alpha$ accepts more drafts and strays further from $p$.
#
# **Algorithm 4** keeps a draft with probability $\min\{1, \pi(x)/q(x)\}$ and resamples from
# $\mathrm{norm}(\max\{0, \pi - q\})$, for any target $\pi$. **Lemma 2:** with
#
# $$\pi(v) = \max\Big\{\min\Big\{q(v), \frac{p(v)}{1 - \alpha}\Big\}, \frac{p(v)}{\beta}\Big\}$$
#
# the two procedures coincide. *Why:* if $q(x) \le p(x)/(1-\alpha)$ then $\pi(x) \ge q(x)$ and both
# accept surely; otherwise $\pi(x) = p(x)/(1-\alpha)$ (because $p/\beta \le p/(1-\alpha)$), so both accept
# with $p(x)/((1-\alpha) q(x))$. On the first set $\pi - q = \max\{0, p/\beta - q\}$, on the second
# both $\pi - q$ and $p/\beta - q$ are negative: the residuals match too.

# %% tags=["parameters"]
seed = 0                             # which toy world (0 is the package default)
n_words = 14                         # vocabulary size, besides <bos> and <eos>
alpha = 0.5                          # lossy speculative sampling's lenience in the worked example
context_rank = 4                     # worked example, by visits: 0 is the most visited context
n_alpha = 21                         # alpha values in the checks and sweeps
check_temperatures = [1.0, 0.5, 0.0] # temperatures of the token-by-token check (0: greedy)
output_dir = "."                     # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "seed": "int>=0",
    "n_words": "int>=1",
    "alpha": "float",
    "context_rank": "int>=0",
    "n_alpha": "int>=2",
    "check_temperatures": "list[float]",
    "output_dir": "str"
})

# %%
import inspect

import ipywidgets as widgets
import torch

import tutorial_lib as tl
from tutorial_lib import views  # plotly figures and ipywidgets wiring

# The tables are tiny (16 x 16 contexts): one thread avoids waiting on a second, busy core.
torch.set_num_threads(1)
world = tl.ToyWorld(n_words=n_words, seed=seed)
context = tl.toy.examples.context_options(world)[context_rank][1]
print("worked example:", tl.toy.examples.context_options(world)[context_rank][0])

# %% [markdown]
# ## Lossy speculative sampling, from its own definition
# Here is the procedure written straight from its definition. It does not use `targets` or the lossy
# target at all; that is the point of the comparison.

# %%
print(inspect.getsource(tl.lessons.lossy.tran_thien_acceptance))
print(inspect.getsource(tl.lessons.lossy.tran_thien_residual))

# %% [markdown]
# ## One context, token by token
# Bars: lossy speculative sampling. Black dots: Algorithm 4 with `targets.target_distribution("lossy", ...)`.
# **What to look at.** Every dot sits on top of its bar, in the middle panel (the chance each token
# survives if drafted) and in the right one (where a rejected draft is replaced from). Tokens the
# drafter likes more than $p/(1-\alpha)$ allows get acceptance below 1; the residual only puts mass where
# $p/\beta$ exceeds $q$. Try $T = 0$: both models become one-hot, and either they agree (nothing is
# ever rejected) or the draft is always rejected and replaced by the verifier's token.

# %%
print("saved", views.widgets.save(views.lemmas.lossy.lemma2_figure(context, alpha, "normalize", world=world),
                                  "lemma2_token_by_token"))

# %% tags=["remove-output"]
views.widgets.interactive(
    views.lemmas.lossy.lemma2_view,
    context_index=widgets.Dropdown(options=tl.toy.examples.context_options(world), value=context,
                                   description="context"),
    alpha=widgets.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="alpha"),
    beta=widgets.Dropdown(options=[("1", 1.0), ("2", 2.0), ("normalising (Lossy*)", "normalize")],
                          value="normalize", description="beta"),
    temperature=widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="temperature T"),
    world=widgets.fixed(world))

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
slider_alphas = views.slider_steps.slider_values(0.0, 0.99)
views.slider_steps.steps_figure(views.lemmas.lossy.lemma2_view, "alpha", slider_alphas, active=alpha,
                                context_index=context, beta="normalize", world=world)

# %% [markdown]
# ## Every context, every alpha, both betas, three temperatures
# The same comparison over the whole toy world: every token as a draft at every context, and the
# residual wherever a draft can be rejected (positions whose rejection chance is 0, or below $10^{-12}$
# from rounding, never use it). The largest differences should be rounding error. One corner is not
# Lemma 2's fault: with a fixed $\beta = 2$ a few positions reject drafts although $p/\beta - q$ has no
# positive part, so lossy speculative sampling has nothing to resample from (its residual is 0/0;
# `residual_distribution` falls back to $\mathrm{norm}(\pi)$). Those are counted apart, per $\beta$;
# $\beta = 1$ and the normalising $\beta$ never meet it.

# %%
lemma2 = tl.lessons.lossy.lemma2_check(world, tl.alpha_grid("lossy", n_alpha), betas=(1.0, 2.0, "normalize"),
                         temperatures=check_temperatures)
for key, value in lemma2.items():
    print(f"{key:>26}: {value:.3g}" if isinstance(value, float) else f"{key:>26}: {value}")

# %% [markdown]
# ## beta = 1 against the normalising beta
# With $\beta = 1$ (the common heuristic) the lossy target sums to *more* than one, so Algorithm 4 does
# not emit $\pi$ but `accept_reject.output_distribution(pi, q)`. This package's **Lossy\*** picks, per
# position, the $\beta \ge 1 - \alpha$ at which the target sums to exactly one, so the emitted law *is*
# the target. That is our choice of tuning, not the paper's: the paper's Lossy\* tunes $\beta$ with
# Tran-Thien's procedure (accept as much as possible while the output stays within a KL budget of $p$),
# which this package does not copy.
#
# **What to look at.** $\beta$ does not appear in the acceptance rule, so the acceptance rate is the
# same for both (difference 0 up to rounding). So is the total variation distance to $p$: with either
# $\beta$ the emitted law never exceeds $p$ where $q < p$ ($\beta = 1$'s residual refills at most up to
# $p$; Lossy*'s target there is $\max\{q, p/\beta\} \le p$), so $D_{TV}$ only counts the surplus the
# drafter keeps, $\sum_v \max\{0, \min\{q(v), p(v)/(1-\alpha)\} - p(v)\}$, the same for both. What $\beta$
# moves is *where* the rejected mass goes: the KL divergence to $p$ and the quality of the text are
# slightly better with the normalising $\beta$, more so as $\alpha$ grows. A fixed $\beta > 1$ is a
# different matter: its target sums to less than one, its residual overshoots $p$, and the output
# leaves $p$ even at $\alpha = 0$ (printed below for $\beta = 2$).

# %%
sweep = tl.lessons.lossy.beta_sweep(world, tl.alpha_grid("lossy", n_alpha))
one, star = "beta = 1", "Lossy* (normalising beta)"
gaps = {metric: max(abs(a - b) for a, b in zip(sweep[one][metric], sweep[star][metric]))
        for metric in ("acceptance_rate", "tv_to_p", "kl_to_p", "loss")}
print("largest |beta = 1 - Lossy*| over alpha:", {k: f"{v:.2g}" for k, v in gaps.items()})
print(f"mean target mass with beta = 1 at alpha = 0.99: {sweep[one]['target_mass'][-1]:.3f} (Lossy*: "
      f"{sweep[star]['target_mass'][-1]:.3f})")
beta_two = tl.lessons.lossy.beta_sweep(world, [0.0], betas=(2.0,))["beta = 2"]
print(f"a fixed beta = 2 at alpha = 0: D_TV(emitted, p) = {beta_two['tv_to_p'][0]:.3f}, "
      f"target mass {beta_two['target_mass'][0]:.3f}")
print("saved", views.widgets.save(views.lemmas.lossy.beta_figure(sweep), "lemma2_beta"))

# %% tags=["remove-output"]
views.widgets.interactive(
    views.lemmas.lossy.beta_view,
    alpha=widgets.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="alpha"),
    context_index=widgets.Dropdown(options=tl.toy.examples.context_options(world), value=context,
                                   description="context"),
    temperature=widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="temperature T"),
    world=widgets.fixed(world))

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
views.slider_steps.steps_figure(views.lemmas.lossy.beta_view, "alpha", slider_alphas, active=alpha,
                                context_index=context, world=world)

# %%
tl.lessons.notebook.save_metrics("04_lemma2_lossy", {
    "lemma2": lemma2,
    "beta_gaps": gaps,
    "fixed_beta_2_at_alpha_0": beta_two,
    "beta_sweep": sweep,
}, output_dir)

# %% [markdown]
# ## Exercises
# Take $q = (0.6, 0.3, 0.1)$, $p = (0.2, 0.5, 0.3)$ and $\alpha = 0.5$, by hand first.
# 1. With what probability does lossy speculative sampling keep a drafted token 0? Store it in `answer_1`.
# 2. Which $\beta$ makes the lossy target sum to one (the normalising $\beta$)? Hint: $\min\{q, p/(1-\alpha)\}
#    = (0.4, 0.3, 0.1)$; find $s = 1/\beta$ with $\sum_v \max\{\min\{q(v), 2p(v)\}, s\,p(v)\} = 1$. Store $\beta$ in `answer_2`.
# 3. Compute $D_{TV}$ between the emitted law and $p$ for $\beta = 1$ and for your $\beta$ of exercise 2
#    (use `tl.output_distribution`). They are equal; store the value in `answer_3`.
#
# **Solutions:** [notebook 04's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-04-04_lemma2_lossy), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("04-1", answer_1)
tl.lessons.notebook.check("04-2", answer_2)
tl.lessons.notebook.check("04-3", answer_3)

# %% [markdown]
# **Read next:** [05 Lemma 4 and speculative cascades](05_lemma4_spec_cascades.ipynb): the optimal deferral when a deferral costs only where the models disagree, and the exact cost-quality trade-off.
