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
# # Target distributions: what each rule asks the verifier to accept
#
# > **Widgets need a running kernel.** The sliders in this notebook are drawn by the kernel that runs it.
# > Each one also leaves a static picture of its figure at the setting it was last left at, so a saved,
# > reopened or papermill-executed copy shows the figure with a one-line hint; run the cell again
# > (or *Run > Run All Cells*) to move the sliders again.
#
# **Learning goals.** After this notebook you can
# 1. compute the target $\pi = \mathbb{T}(q, p)$ of every rule for one pair of next-token
#    distributions, and say how much of $\pi$ comes from the drafter $q$ and how much from the verifier $p$;
# 2. say what each rule's decision looks at (a max-probability test, a distance, a set of acceptable
#    tokens) and which way `alpha` moves it;
# 3. predict a rule's rejection probability (Lemma 3 for the mixtures) and turn it into the expected
#    number of tokens one verifier call emits.
#
# Every speculative cascade drafts $x \sim q$ and keeps it with probability $\min\{1, \pi(x)/q(x)\}$
# (Algorithm 4). The rules differ only in their target:
#
# $$\text{deferral rules: } \pi = (1-\delta)\,q + \delta\,p, \quad \delta \in \{0, 1\} \qquad
#   \text{token rules: } \pi(v) = q(v)\,1(v \in A) + \Big(1 - \sum_{u \in A} q(u)\Big)\,p(v)$$
#
# $$\text{lossy: } \pi(v) = \max\{\min\{q(v), p(v)/(1-\alpha)\},\ p(v)/\beta\}.$$
#
# A draft is rejected with probability $\rho = \sum_v \max\{0, q(v) - \pi(v)\}$, which for a mixture is
# $\rho = \delta\, D_{TV}(p, q)$ (Lemma 3). If every draft of a block of $\gamma$ is accepted with the
# same probability $a = 1 - \rho$, one verifier call emits on average
#
# $$\frac{1 - a^{\gamma + 1}}{1 - a} \text{ tokens} \quad (\gamma + 1 \text{ when } a = 1).$$
#
# The decision of each rule (Table 1 of the paper) and the range of its `alpha`:
# Chow $\delta = 1(\max q < 1 - \alpha)$, $[0, 1]$; Diff $\delta = 1(\max q < \max p - \alpha)$, $[-1, 1]$;
# OPT $\delta = 1(\max q < \max p - \alpha D_{TV}(p, q))$, unbounded (the slider here spans $[-5, 5]$;
# at $T = 1$ only $[-1, 1]$ matters, since $|\max p - \max q| \le D_{TV}(p, q)$);
# BiLD* $\delta = 1(D_{TV}(p, q) > \alpha)$, $[0, 1]$; Token-V1 $A = \{v: q(v) \ge \max p - \alpha\}$,
# Token-V2 $A = \{v: p(v) \ge \max p - \alpha\}$, both $[-1, 1]$; Token-V3
# $A = \{v: p(v) \ge (1-\alpha)\max p\}$, $[0, 1]$; lossy $[0, 1)$ (the slider stops at 0.99).
# The low end of each range is SpecDecode-like (always defer), the high end drafter-only.

# %% tags=["parameters"]
example = "verifier blind spot"  # one of tl.toy.examples.toy_examples() (listed below)
rule = "token_v3"                # one of tl.RULES
alpha = 0.9                      # inside the rule's range
every_rule_example = "confident drafter, unsure verifier"  # the example of the every-rule view
temperature = 1.0                # 0 means greedy decoding (q and p become one-hot)
gamma = 5                        # draft block size, for the tokens-per-call read-out
lenience = 0.5                   # where every rule's alpha sits along its range in the every-rule view
seed = 0                         # which toy world the toy examples come from
real_pair = None                 # (drafter, verifier) names for tl.models.load_pair, e.g. below
real_dtype = None                # one dtype or (drafter dtype, verifier dtype)
real_prompt = "def fibonacci(n):"  # text, or a list of token ids
timing_pair = None               # (drafter, verifier) of the closing timing cell;
                                 # None: tl.lessons.first_timing.DEFAULT_PAIR
timing_tokens = 24               # tokens per timed run
timing_prompt = "def fibonacci(n):"  # text, or a list of token ids
output_dir = "."                 # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "example": "str",
    "rule": "str",
    "alpha": "float",
    "every_rule_example": "str",
    "temperature": "float>=0",
    "gamma": "int>=1",
    "lenience": "float>=0",
    "seed": "int>=0",
    "real_pair": "pair[str]|None",
    "real_dtype": "any",
    "real_prompt": "any",
    "timing_pair": "pair[str]|None",
    "timing_tokens": "int>=1",
    "timing_prompt": "any",
    "output_dir": "str"
})

# %%
import ipywidgets as widgets
import pandas as pd
from IPython.display import display

import tutorial_lib as tl
from tutorial_lib import views  # plotly figures and ipywidgets wiring

examples = tl.toy.examples.toy_examples(seed)
for name, pair in examples.items():
    print(f"{name:>36}: {pair.description}")

# %% [markdown]
# ## Optional: a real next-token pair
# Set `real_pair` to add the next-token distributions of two real models after `real_prompt` as one
# more example, through the model engine (`tl.models`): for example
# `("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")` where those models are installed, or
# `("smollm2-135m", "smollm2-135m")` with `real_dtype = ("bfloat16", "float32")`, a drafter that is
# the verifier in lower precision (so $q$ and $p$ nearly agree). The views compute on the whole
# vocabulary and draw its most probable tokens.

# %%
if real_pair is not None:
    import tutorial_lib.models  # noqa: F401  (loads transformers; only needed for a real pair)

    loaded = tl.models.load_pair(*real_pair, dtype=real_dtype)
    q_real, p_real = tl.models.next_token_distributions(loaded, real_prompt)
    examples["real pair"] = tl.toy.examples.example_from_distributions(
        "real pair", q_real, p_real, labels=lambda i: repr(loaded.verifier.decode([i])),
        description=f"{real_pair[0]} drafting for {real_pair[1]}, next token after {real_prompt!r}")
    print(examples["real pair"].description)

# %% [markdown]
# ## The examples
# What to look at: `agree` is the easy case (both sure of the same word); in
# `confident drafter, unsure verifier` a cascade would like to keep the drafter, in
# `unsure drafter, confident verifier` to defer. In the `verifier blind spot` the verifier is
# confidently wrong (the black ticks are the true distribution $P$ of the toy world), and in `disjoint`
# no word is allowed by both, so $D_{TV}(p, q) = 1$ and every deferral rejects every draft.

# %%
fig = views.targets.examples_figure(examples, temperature)
tl.savefig(fig, "targets_examples")

# %% [markdown]
# ## One rule, your alpha
# Pick an example, a rule and its `alpha` (the slider follows the rule's range), a temperature and a
# block size `gamma`; `beta` only matters for the lossy rule. What to look at: the green bars are
# $\pi$. Where $\pi$ sits below $q$ a drafted token can be rejected, and the rejection probability is
# exactly the area of $q$ above $\pi$. For Chow, Diff, OPT and BiLD* $\pi$ is either $q$ or $p$, so the
# rejection probability jumps between 0 and $D_{TV}(p, q)$ as `alpha` crosses the decision threshold
# printed in the read-out. Token rules move smoothly: each step of `alpha` adds or removes a token from
# the acceptance set $A$. Set $T = 0$: $q$ and $p$ become one-hot, yet the decisions do not change,
# since they use the temperature-1 probabilities.
#
# The defaults show Token-V3 at `alpha = 0.9` in the verifier's blind spot: it keeps the drafter's mass
# on the three words the verifier gives at least a tenth of its top probability (`<eos>`, `ta` and the
# verifier's wrong favourite `gu`) and takes the rest from $p$. Its target is closer to the truth than
# $p$ (total variation 0.42 against 0.58) and it rejects fewer drafts than SpecDecode (0.47 against 0.59).

# %% tags=["remove-output"]
rule_widget = widgets.Dropdown(options=views.widgets.rule_choices(), value=rule,
                               description="rule")
alpha_widget = widgets.FloatSlider(value=alpha, min=-5.0, max=5.0, step=0.01, description="alpha")
# first, so alpha is in range when the view redraws
views.widgets.link_alpha_slider(rule_widget, alpha_widget)
display(views.widgets.live_view(
    views.targets.target_view,
    dict(example=widgets.Dropdown(options=list(examples), value=example, description="example"),
         rule=rule_widget, alpha=alpha_widget,
         temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.05,
                                         description="temperature T"),
         gamma=widgets.IntSlider(value=gamma, min=1, max=10, description="block size gamma"),
         beta=widgets.Dropdown(options=[("1 (heuristic)", 1.0), ("normalising (Lossy*)", "normalize")],
                               value=1.0, description="lossy beta")),
    describe=views.targets.format_readouts, examples=examples))

# %%
# The same view with its alpha slider drawn in advance at 21 values: plotly moves it without a kernel, so it
# also works on the course book's static page (which shows this figure in place of the widget above).
# At this run's rule, example, temperature and gamma; a rule without alpha has no slider to draw.
if tl.lessons.rejection.alpha_span(rule) is not None:
    slider_alphas = views.slider_steps.slider_values(*tl.lessons.rejection.alpha_span(rule))
    display(views.slider_steps.steps_figure(views.targets.target_view, "alpha", slider_alphas, active=alpha,
                                            example=example, rule=rule, temperature=temperature, gamma=gamma,
                                            examples=examples))

# %% [markdown]
# The same view for the parameters of this run, as a static figure:

# %%
readouts = tl.lessons.rejection.target_readouts(example, rule, alpha, temperature, gamma, examples=examples)
print(views.targets.format_readouts(readouts))
fig = views.targets.target_figure(example, rule, alpha, temperature, gamma, examples=examples)
tl.savefig(fig, "targets_view")

# %% [markdown]
# ## Every rule at once
# Each row is a target $\pi$, with the drafter and verifier on top; every rule sits at the same
# fraction `lenience` of its `alpha` range (0: SpecDecode end, 1: drafter end). What to look at: the
# deferral rules copy either the $q$ row or the $p$ row; the token rules keep $q$ on their acceptance
# set and fill in the rest with a scaled-down $p$; lossy keeps $q$ where $q \le p/(1-\alpha)$. The row
# labels give each rule's rejection probability: compare them with the SpecDecode row. With a confident
# drafter and an unsure verifier the four deferral rules keep $q$ in the middle of their ranges and
# never reject, where SpecDecode rejects half the drafts. Switch to the verifier blind spot: there every
# deferral rule defers, because the verifier *looks* confident.

# %%
display(views.widgets.live_view(
    views.targets.every_rule_view,
    dict(example=widgets.Dropdown(options=list(examples), value=every_rule_example, description="example"),
         lenience=widgets.FloatSlider(value=lenience, min=0.0, max=1.0, step=0.05,
                                      description="lenience (0: SpecDecode end, 1: drafter end)"),
         temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.05,
                                         description="temperature T")),
    examples=examples))

# %%
fig = views.targets.every_rule_figure(every_rule_example, lenience, temperature, examples=examples)
tl.savefig(fig, "targets_every_rule")

# %% [markdown]
# ## The read-outs for every example
# Rejection probability $\rho$ of each rule at the same `lenience` (first table) and the expected tokens
# per verifier call at `gamma` it implies (second table). What to look at: in `agree` every rule is
# cheap; in `disjoint` any deferral rejects every draft, and one call then emits a single token. The
# last column checks Lemma 3 on every mixture rule over a grid of `alpha` across its whole range: the
# largest gap between the rejection probability and $\delta\,D_{TV}(p, q)$.

# %%
rejection = pd.DataFrame(tl.lessons.rejection.rejection_table(examples, lenience, temperature)).T
tokens_per_call = rejection.apply(
    lambda column: column.map(lambda rho: tl.maths.latency.expected_tokens_per_call(1.0 - rho, gamma)))
lemma3_gap = {name: tl.lessons.rejection.lemma3_gap(name, temperature, examples=examples)
              for name in examples}
rejection["max |ρ - δ D_TV|"] = pd.Series(lemma3_gap)
with pd.option_context("display.float_format", "{:.3f}".format, "display.width", 250):
    print("rejection probability")
    display(rejection)
    print(f"expected tokens per verifier call, gamma = {gamma}")
    display(tokens_per_call)

# %%
_, every_rule_numbers = views.targets.every_rule_view(every_rule_example, lenience, temperature,
                                                      examples=examples)
tl.lessons.notebook.save_metrics("01_target_distributions", {
    "parameters": {"example": example, "rule": rule, "alpha": alpha, "temperature": temperature,
                   "gamma": gamma, "every_rule_example": every_rule_example, "lenience": lenience,
                   "real_pair": real_pair},
    "examples": {name: {"tv_distance": float(tl.tv_distance(e.p, e.q)), "max_q": float(e.q.max()),
                        "max_p": float(e.p.max())} for name, e in examples.items()},
    # the read-outs without the distributions
    "view": {k: v for k, v in readouts.items() if k not in ("q", "p", "pi")},
    "every_rule": every_rule_numbers,
    "rejection_table": rejection.to_dict(orient="index"),
    "tokens_per_call_table": tokens_per_call.to_dict(orient="index"),
    "lemma3_max_gap": max(lemma3_gap.values()),
}, output_dir)

# %% [markdown]
# ## Exercises
# 1. On `unsure drafter, confident verifier`, Chow defers for small `alpha` and keeps the drafter for
#    large `alpha`. What is the smallest `alpha` at which it keeps the drafter? Store it in `answer_1`
#    (a formula in `examples[...].q` is the best answer).
# 2. On `confident drafter, unsure verifier` at $T = 1$, Diff with `alpha = -0.6`: does it defer? Store
#    its rejection probability in `answer_2`, computed from Lemma 3 rather than from the view.
# 3. A rule rejects each draft with probability 0.3, independently at every position. How many tokens
#    does one verifier call emit on average with `gamma = 4`? Store it in `answer_3`.
#
# **Solutions:** [notebook 01's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-01-01_target_distributions), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("01-1", answer_1, examples=examples)
tl.lessons.notebook.check("01-2", answer_2, examples=examples)
tl.lessons.notebook.check("01-3", answer_3)

# %% [markdown]
# ## A first clock: plain decoding against speculation
#
# Everything above is about *which* tokens come out. The reason to speculate is time, so here is the clock
# on a small real pair (SmolLM2-135M verifying a drafter made of its own first 16 layers): the verifier
# alone, speculative decoding (`rule="spec"`, lossless: at $T = 0$ all three emit the same tokens) at
# $\gamma = 3$, and with `gamma="auto"`, which picks each block's size from a measured cost model: a drafter
# step $t_q$, a verifier call over $k$ tokens $t_p(k)$, and its running estimate $a$ of the acceptance, taking
# the $\gamma$ that minimises $(\gamma t_q + t_p(\gamma + 1))(1 - a)/(1 - a^{\gamma + 1})$ per token ($\gamma = 0$:
# the verifier alone, when no block pays). On a CPU a verifier call over several tokens costs several
# single steps, so speculation pays less than the textbook promises; notebook 09 measures why, in detail.

# %%
from tutorial_lib.lessons import first_timing

# the cores other processes leave free (notebook 09 says why)
threads_used = tl.decoding.speed_runs.use_free_cores()
clock_pair = tuple(timing_pair or first_timing.DEFAULT_PAIR)
timing = tl.load_pair(*clock_pair, dtype="float32")   # "<model>:layers=N": that model's first N layers
clock = first_timing.time_decoding(timing, timing_prompt, max_new_tokens=timing_tokens, gamma=3, repeats=2)
display(tl.views.tables.page_table(clock.reset_index(), keys=[clock.index.name or "index"], digits=4,
                                   blank={"acceptance": "no drafts"}))
auto_reason = first_timing.auto_reason(timing, float(clock.loc["gamma=3", "acceptance"]))
display(auto_reason.round(3))
chosen = clock.loc["gamma=auto", "gammas_chosen"]
print(f"gamma='auto' chose block sizes {chosen}: with t_q = {auto_reason.attrs['t_q_ms']:.1f} ms and "
      f"t_p(1) = {auto_reason.attrs['t_p1_ms']:.1f} ms (c = {auto_reason.attrs['cost_ratio']:.2f}) "
      "at acceptance "
      f"{clock.loc['gamma=3', 'acceptance']:.2f}, the block-cost model favours gamma = "
      f"{int(auto_reason.index[auto_reason['best']][0])}; measured speed-ups: gamma=3 "
      f"{clock.loc['gamma=3', 'speedup']:.2f}x, auto {clock.loc['gamma=auto', 'speedup']:.2f}x "
      f"(notebook 09 has the whole story; {threads_used} torch thread{'s' if threads_used != 1 else ''}, "
      "the cores other processes left free).")
tl.lessons.notebook.save_metrics("01_target_distributions_timing", {
    "pair": list(clock_pair), "threads": threads_used, "table": clock.reset_index().to_dict(orient="records"),
    "predicted": auto_reason["predicted_speedup"].to_dict(), "costs": dict(auto_reason.attrs)}, output_dir)

# %% [markdown]
# **Read next:** [02 rejection rates](02_rejection_rates.ipynb): the rejection rate against `alpha` over a whole toy world, and Lemma 3 checked by simulation.
