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
# # Quick start: speculative cascades in a world whose truth we know
#
# **Learning goals.** After this notebook you can
# 1. say what the drafter $q$, the verifier $p$ and a *target distribution* $\pi = \mathbb{T}(q, p)$ are;
# 2. compute a deferral rule's target and its rejection probability with `tutorial_lib`;
# 3. read a quality-versus-cost curve and see why a cascade can beat the large model.
#
# A speculative cascade drafts tokens with the small model $q$ and lets the large model $p$ check
# them all in one parallel call. Each rule of the paper picks a target $\pi$; the draft $x \sim q$ is
# kept with probability $\min\{1, \pi(x)/q(x)\}$ and otherwise replaced from
# $\mathrm{norm}(\max\{0, \pi - q\})$ (Algorithm 4). For a *deferral rule* $\delta(q, p) \in \{0, 1\}$
#
# $$\pi = (1 - \delta)\, q + \delta\, p, \qquad
#   \Pr[\text{draft rejected}] = \delta \cdot D_{TV}(p, q) \quad \text{(Lemma 3)}.$$
#
# So quality comes from choosing *where* to defer, and cost from *how often a deferral meets a
# disagreement*. The toy world below knows the true next-token distribution $P$, so every number
# here is exact, not estimated.

# %% tags=["parameters"]
seed = 0               # which toy world (0 is the package default)
n_words = 14           # vocabulary size, besides <bos> and <eos>
n_alpha = 41           # alpha values per rule in the sweep
n_simulations = 20000  # sequences for the Monte Carlo check
output_dir = "."       # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "seed": "int>=0",
    "n_words": "int>=1",
    "n_alpha": "int>=2",
    "n_simulations": "int>=1",
    "output_dir": "str"
})

# %%
import tutorial_lib as tl

world = tl.ToyWorld(n_words=n_words, seed=seed)
print("vocabulary:", " ".join(world.tokens))
print("the verifier's blind spots come after:", [world.tokens[b] for b in world.blind_spot_tokens])
for sequence in world.sample(5, seed=seed):
    print("  ", world.decode(sequence))

# %% [markdown]
# ## The three models
# `model_losses` gives each model's exact expected loss under $P$ (0-1 loss of its argmax, and log
# loss). The verifier is better on average; in its blind spots the drafter is better. That is the
# situation the paper's cascades exploit.

# %%
for where in ("all", "blind", "elsewhere"):
    losses = world.model_losses(where)
    print(f"{where:>9}: "
          + ", ".join(f"{m} 0-1 {v['zero_one']:.3f} / log {v['log']:.3f}" for m, v in losses.items()))

# %% [markdown]
# ## One context, every view
# Take the most visited context in a blind spot. What to look at: the verifier $p$ puts most of its
# mass on a wrong word, while the drafter $q$ stays close to the truth $P$. The rules only see $q$
# and $p$, not $P$: here the verifier *looks* more confident, so Chow, Diff and OPT defer to it, and
# Token-V3 keeps almost nothing of the drafter. The optimal rule of Lemma 4, which knows $P$, would
# not defer. Confidence is no guard against a confidently wrong verifier; the rules gain elsewhere.

# %%
table = world.contexts()
blind_rows = table.blind.nonzero().flatten()
row = int(blind_rows[table.weight[blind_rows].argmax()])
P_c, q_c, p_c = table.P[row], table.q[row], table.p[row]
alpha = 0.3
rows = {
    "truth P": P_c,
    "drafter q": q_c,
    "verifier p": p_c,
    f"OPT pi (alpha={alpha})": tl.target_distribution("opt", q_c, p_c, alpha),
    f"Token-V3 pi (alpha={alpha})": tl.target_distribution("token_v3", q_c, p_c, alpha),
}
a, b = table.contexts[row]
fig = tl.views.figures.plot_distributions(rows, world.tokens,
                                          title=f"next token after '{world.tokens[a]} {world.tokens[b]}'")
tl.savefig(fig, "quickstart_distributions")
print("D_TV(p, q) =", round(float(tl.tv_distance(p_c, q_c)), 4))
print("Lemma 4's optimal rule (knows P) defers:",
      bool(tl.maths.lemmas.optimal_speculative_deferral(P_c, q_c, p_c, alpha)))
for rule in ("chow", "diff", "opt", "token_v3"):
    pi = tl.target_distribution(rule, q_c, p_c, alpha)
    print(f"{rule:>8}: weight on p {float(tl.deferral_weight(rule, q_c, p_c, alpha)):.3f}, "
          f"rejection probability {float(tl.rejection_probability(pi, q_c)):.3f}")

# %% [markdown]
# ## Quality against cost, exactly
# Sweep `alpha` over each rule's range and compute, exactly, the per-token 0-1 loss of the generated
# text (the chance a token differs from a fresh draw of the truth) and the rejection rate (the cost
# axis of the paper's Gemma plots). What to look at: every curve runs from the drafter
# (no rejections) towards the verifier; the better rules dip *below* the verifier's loss, because
# they keep the drafter where the verifier is blind. Token-V3 goes furthest: it keeps a drafted
# token whenever the verifier finds it plausible, instead of making one decision for the whole
# prefix. Chow, which never looks at the verifier, gains least.

# %%
methods = {"Chow": "chow", "BiLD*": "bild", "OPT": "opt", "Token-V3": "token_v3"}
curves = {}
for label, rule in methods.items():
    points = [world.evaluate(rule, float(a)) for a in tl.alpha_grid(rule, n_alpha)]
    curves[label] = {"rejection": [m.rejection_rate for m in points],
                     "loss": [m.zero_one_loss for m in points]}
spec, drafter = world.evaluate("spec"), world.evaluate("drafter")
fig = tl.views.figures.plot_tradeoff(curves, "rejection", "loss", xlabel="rejection rate",
                                ylabel="per-token 0-1 loss (lower is better)",
                                title="Toy world: quality against rejection rate (exact)",
                                reference={"verifier (SpecDecode)": spec.zero_one_loss,
                                           "drafter": drafter.zero_one_loss})
tl.savefig(fig, "quickstart_tradeoff")
best = {label: min(c["loss"]) for label, c in curves.items()}
print(f"verifier loss {spec.zero_one_loss:.4f}, drafter loss {drafter.zero_one_loss:.4f}")
print("best loss per rule:", {k: round(v, 4) for k, v in best.items()})

# %% [markdown]
# ## Checking the exact numbers by simulation
# `simulate` runs the accept/reject step of Algorithm 4 on sampled sequences. Its estimates should
# sit within a few standard errors of `evaluate`.

# %%
exact = world.evaluate("opt", alpha)
estimate = world.simulate("opt", alpha, n=n_simulations, seed=seed)
z_scores = {}
for key in ("zero_one_loss", "rejection_rate", "deferral_rate"):
    e, s, se = getattr(exact, key), getattr(estimate, key), estimate.stderr[key]
    z_scores[key] = (s - e) / se
    print(f"{key:>15}: exact {e:.4f}  simulated {s:.4f} +- {se:.4f}  (z = {z_scores[key]:+.2f})")

# %%
tl.lessons.notebook.save_metrics("00_quickstart", {
    "verifier_zero_one_loss": spec.zero_one_loss,
    "drafter_zero_one_loss": drafter.zero_one_loss,
    "best_zero_one_loss": best,
    "monte_carlo_z": z_scores,
    "n_simulations": n_simulations,
}, output_dir)

# %% [markdown]
# ## Exercises
# 1. Lemma 3 says the OPT target above rejects a draft with probability $\delta \cdot D_{TV}(p, q)$.
#    Compute that product for the blind-spot context (`q_c`, `p_c`, `alpha`) and store it in `answer_1`.
# 2. Which `alpha` of Chow on the grid `tl.alpha_grid("chow", n_alpha)` gives the lowest loss?
#    Store it in `answer_2`.
#
# **Solutions:** [notebook 00's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-00-00_quickstart), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here

# %%
tl.lessons.notebook.check("00-1", answer_1, q=q_c, p=p_c, alpha=alpha)
tl.lessons.notebook.check("00-2", answer_2, curves=curves, n_alpha=n_alpha)

# %% [markdown]
# **Read next:** [01 target distributions](01_target_distributions.ipynb): what each rule's target $\pi$ looks like for one pair, and how `alpha` moves it.
