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
# # Every rule, every alpha, no sampling noise: an exact token-level analysis of a real model pair
#
# **Learning goals.** After this notebook you can
# 1. explain why teacher forcing turns every point of a rule's quality-rejection curve into a
#    closed-form average: two forward passes per answer, then milliseconds per $(\text{rule}, \alpha)$;
# 2. read each rule's curve against the **oracle envelope**, the best any deferral rule could do if it
#    knew the answer, and say how far each rule is from it;
# 3. see, token by token, which tokens of a real answer a rule hands to the verifier and why;
# 4. say where the paper's ranking of the rules (Token > OPT > Diff/Chow) holds on this pair and
#    where it does not, and what changes when the reference is the verifier's own greedy answer.
#
# **Teacher forcing.** Take a prompt $x$ and a reference answer $y = (y_1, \dots, y_n)$. One forward
# pass of the drafter over $x\,y$ gives $q_t = q(\cdot \mid x, y_{<t})$ at every position, one of the
# verifier gives $p_t$. For any rule, its target $\pi_t = \mathbb{T}(q_t, p_t)$ (notebook 01) is then
# known exactly, and so is everything the paper measures at $\gamma = 1$:
#
# $$R_t = \sum_v \max\{0, q_t(v) - \pi_t(v)\} \quad \text{(the chance a draft is rejected, Lemma 3's } r\,D_{TV})$$
# $$\ell^{01}_t = 1 - \pi_t(y_t), \qquad \ell^{\rm greedy}_t = 1(\arg\max_v \pi_t(v) \ne y_t), \qquad \ell^{\log}_t = -\log \pi_t(y_t)$$
#
# and the deferral weight $w_t$ (how much of $\pi_t$ comes from $p_t$). The expected 0-1 loss is the
# loss of Lemmas 1 and 4 with the reference standing in for a draw from the true $P$. Averaged over
# the positions of many answers, this gives each rule's whole curve, with no sampling at all.
# (For `lossy` with $\beta = 1$ the target does not sum to one; the emitted law
# $\min\{q, \pi\} + R\,\mathrm{norm}(\max\{0, \pi - q\})$ stands in for $\pi$ in the losses.)
#
# **The oracle envelope.** Knowing $y$, Lemma 4's rule with the true loss defers where
# $\ell(y_t, q_t) > \ell(y_t, p_t) + \alpha\,D_{TV}(p_t, q_t)$ - at $\alpha = 0$, for the expected
# 0-1 loss, exactly where $p_t(y_t) > q_t(y_t)$. Sweeping $\alpha$ from $\infty$ down to 0 defers
# positions in decreasing order of *loss saved per unit of rejection*, which is the solution of
# "lowest mean loss at a given mean rejection rate" over every deferral $\pi_t = (1-r_t) q_t + r_t p_t$
# (a fractional knapsack). No deferral rule (Chow, Diff, OPT, BiLD) can go below it. Token rules and
# Lossy are not mixtures of $q_t$ and $p_t$, so the envelope is not a theorem for them: we measure.
#
# **Everything over the full vocabulary** (151,936 ids for Qwen2.5), computed as the logits arrive,
# in chunks of positions: `tl.maths.token_analysis` sorts the ratios $q(v)/p(v)$ once per position, after
# which every sum the rules need is a prefix sum (see its docstring); the shared few-shot prefix of a
# task's items runs once per model and its KV cache is cropped back after each answer.
#
# **Profiles.**
# - `qwen` (default): Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct (`make
#   models-qwen`), fp32, on every item of the three offline task sets (53 code problems, 60
#   arithmetic problems, 49 questions: 162 answers) with their gold answers, and the verifier's greedy
#   answers to the first 16 of each (decoded 16 at a time). The results ship in `data/results/`, so the
#   default run loads the pair to check it and redraws; from an empty results folder it recomputes
#   everything (the timings it prints are those of the run that made the results).
# - `smoke`: SmolLM2-135M with a drafter made of its first 16 layers, two items per task (CI).

# %% tags=["parameters"]
profile = "qwen"          # "qwen" or "smoke"
n_items = None            # items per task (None: the profile's)
n_alpha = 41              # alpha values per rule, over each rule's live range
temperature = 1.0
n_resamples = 1000        # bootstrap resamples (items)
toy_sequences = 2000      # references drawn from the toy world's P for the exact check
results_dir = None        # where results are cached (None: $TUTORIAL_LIB_RESULTS, else build/results;
                          # shipped ones are read)
output_dir = "."          # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "profile": "str",
    "n_items": "int>=1<=20000|None",
    "n_alpha": "int>=2",
    "temperature": "float>=0",
    "n_resamples": "int>=1",
    "toy_sequences": "int>=1",
    "results_dir": "str|None",
    "output_dir": "str"
})

# %%
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import HTML, display

import tutorial_lib as tl
from tutorial_lib.maths import token_analysis as ta
from tutorial_lib.stats import token_curves as tc
from tutorial_lib.stats import token_report as report
from tutorial_lib.views import token_analysis as view

torch.set_num_threads(2)
settings = report.token_profile(profile, n_items)

start = time.perf_counter()
pair = report.load_profile_pair(settings)
print(f"pair: {pair.drafter.name} -> {pair.verifier.name}, vocabulary {pair.verifier.vocab_size}, "
      f"loaded in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# ## One pass per model per answer
#
# `tc.analyse` runs both models along every reference and keeps, per answer, the sums over positions
# of every statistic at every grid point (and the oracle's per-position losses). The alpha grid spans
# each rule's live range with `n_alpha` points; OPT's is $[-1, 1]$ because
# $|\max p - \max q| \le D_{TV}(p, q)$ at $T = 1$, so outside it OPT never changes its mind.
# If the results of these exact settings are on disk, they are loaded instead.

# %%
items = tc.offline_items(n=settings["n_items"])
grid = ta.default_grid(n_alpha, temperature)
cache = tl.lessons.notebook.results_folder(results_dir)  # yours; the shipped results are read, never written
result = tc.analyse(pair, items, grid=grid, temperature=temperature, cache=cache)
timing = result.timing
print(f"{len(items)} answers, {timing['positions']} tokens, {len(grid.points)} (rule, alpha) points; "
      f"results in {result.path}")
print(f"forward passes: drafter {timing['drafter_forward_s']:.0f} s, "
      f"verifier {timing['verifier_forward_s']:.0f} s; "
      f"statistics {timing['statistics_s']:.0f} s = {timing['statistics_ms_per_point']:.0f} ms "
      "per (rule, alpha) point")

# %% [markdown]
# Once the per-answer sums exist, a point of a curve is one division: timing the whole table of
# means (every point, every statistic) from the stored sums:

# %%
start = time.perf_counter()
for _ in range(20):
    means = result.sums.sum(0) / result.counts.sum()
per_point_ms = 1e3 * (time.perf_counter() - start) / 20 / len(grid.points)
print(f"{per_point_ms:.4f} ms per (rule, alpha) point from the stored sums")

# %% [markdown]
# ## Every rule against the oracle envelope
#
# Each line is a rule's mean expected 0-1 loss against its mean rejection probability as $\alpha$
# sweeps its range; the shaded bands are 95% bootstrap intervals over answers. Black: the envelope.
# Every curve runs from the drafter alone (rejection 0, circle) to SpecDecode (the verifier's loss, square).

# %%
tasks = list(dict.fromkeys(result.tasks))
summaries = {task: tc.summarise(result, task, n_resamples=n_resamples) for task in tasks}
summaries["all"] = tc.summarise(result, None, losses=("expected_01", "greedy_01", "log_loss"),
                                n_resamples=n_resamples)
fig = view.curves_figure(summaries)
tl.savefig(fig, "token_analysis_curves")

# %% [markdown]
# ## How far is each rule from the best possible deferral?
#
# The table gives, for all answers pooled, each rule's **area between its curve and the envelope**
# (over the rule's own range of rejection rates; 0 would be the oracle) and its expected 0-1 loss at
# **matched rejection rates**: the loss the rule reaches when it rejects that fraction of drafts. No
# rule rejects more than SpecDecode, so rates of 0.1, 0.2 and 0.3 are matched only when SpecDecode
# rejects more than that; for a close pair the table uses 20%, 40% and 60% of SpecDecode's rate.
# Brackets: 95% bootstrap intervals over answers.

# %%
rates = [0.1, 0.2, 0.3]
r_spec = float(summaries["all"]["mean"][grid.points.index(("verifier", 0.0)), 0])
if r_spec < max(rates):  # a close pair rejects little: match fractions of SpecDecode's rate instead
    rates = [round(f * r_spec, 4) for f in (0.2, 0.4, 0.6)]
summaries["all"] = tc.summarise(result, None, losses=("expected_01", "greedy_01", "log_loss"), rates=rates,
                                n_resamples=n_resamples)
table = pd.DataFrame(tc.table_rows(summaries["all"])).set_index("curve")
print(f"SpecDecode rejects {r_spec:.3f} of drafts; matched rates: {rates}")
display(table)
fig = view.gap_figure({task: summaries[task] for task in tasks} | {"all": summaries["all"]})
tl.savefig(fig, "token_analysis_gaps")

# %%
for name, summary in summaries.items():
    print(f"{name:>10}: closest to the envelope first: {', '.join(report.ranking(summary))}")
for name, summary in summaries.items():
    print(f"{name:>10}: grid points below the deferral envelope: {report.below_envelope(summary) or 'none'}")
for loss in ("greedy_01", "log_loss"):
    print(f"ranking by {loss}: {', '.join(report.ranking(summaries['all'], loss))}")
display(pd.DataFrame({name: report.ranking(summary) for name, summary in summaries.items()},
                     index=pd.RangeIndex(1, len(summaries["all"]["expected_01"]["curves"]) + 1, name="rank")))

# %%
pooled_curves = summaries["all"]["expected_01"]["curves"]
areas = pd.DataFrame({curve: [float(np.atleast_1d(values["area"][k])[0]) for k in ("mean", "low", "high")]
                      for curve, values in pooled_curves.items()},
                     index=["area", "low", "high"]).T.sort_values("area")
best_rule = areas.index[0]
i_d, i_v = grid.points.index(("drafter", 0.0)), grid.points.index(("verifier", 0.0))
glued = tl.lessons.notebook.glue_values(
    tok_items=len(items), tok_positions=timing["positions"], tok_points=len(grid.points), tok_n_alpha=n_alpha,
    tok_spec_rejection=r_spec, tok_drafter_loss=summaries["all"]["mean"][i_d, 2],
    tok_verifier_loss=summaries["all"]["mean"][i_v, 2], tok_ranking=", ".join(areas.index),
    tok_greedy_ranking=", ".join(report.ranking(summaries["all"], "greedy_01")),
    tok_log_ranking=", ".join(report.ranking(summaries["all"], "log_loss")),
    tok_best=best_rule, tok_best_area=areas.loc[best_rule, "area"], tok_best_low=areas.loc[best_rule, "low"],
    tok_best_high=areas.loc[best_rule, "high"],
    tok_best_overlaps=int((areas["low"].drop(best_rule) <= areas.loc[best_rule, "high"]).sum()),
    tok_last_rate=rates[-1],
    tok_best_loss_last=np.atleast_1d(pooled_curves[best_rule]["at_rates"]["mean"])[-1],
    tok_envelope_loss_last=np.atleast_1d(summaries["all"]["expected_01"]["oracle_at_rates"]["mean"])[-1],
    tok_below_gold=sum(report.below_envelope(summaries["all"]).values()))
if {"opt", "diff", "chow"} <= set(areas.index):
    glued = tl.lessons.notebook.glue_values(
        tok_opt_area=areas.loc["opt", "area"], tok_opt_low=areas.loc["opt", "low"],
        tok_opt_high=areas.loc["opt", "high"],
        tok_diff_area=areas.loc["diff", "area"], tok_diff_low=areas.loc["diff", "low"],
        tok_diff_high=areas.loc["diff", "high"], tok_chow_area=areas.loc["chow", "area"],
        tok_chow_low=areas.loc["chow", "low"], tok_chow_high=areas.loc["chow", "high"],
        tok_opt_diff=("overlap: not resolved" if areas.loc["diff", "low"] <= areas.loc["opt", "high"]
                      else "do not overlap: OPT is closer"),
        tok_opt_below_diff=1 - areas.loc["opt", "area"] / areas.loc["diff", "area"],
        tok_opt_below_chow=1 - areas.loc["opt", "area"] / areas.loc["chow", "area"])

# %% [markdown]
# ## One answer, token by token
#
# Choose a rule and an $\alpha$: each token of the gold answer is shaded by the rule's **deferral
# weight** (orange: how much of the target at that position comes from the verifier) or by the
# **rejection probability** of a draft there (blue). Hover a token for its numbers. The slider snaps
# to the grid the statistics were computed on. The colour key is above the answer.
#
# > **The controls need a running kernel.** They leave a static copy of the shaded answer at their last
# > setting, so a reopened or papermill-executed copy shows it with a one-line hint: run the cell again to
# > move them. Below the widget, two fixed settings as plain HTML.

# %%
display(view.token_view(result))
first = next(iter(result.showcase))
display(HTML(view.token_html(result, first, "opt", 0.0, color_by="deferral")))
display(HTML(view.token_html(result, first, "token_v2", 0.0, color_by="rejection")))

# %% [markdown]
# ## The verifier's own greedy answers as references
#
# Where no gold answer exists, the verifier's greedy answer is the natural reference: then
# $\ell^{\rm greedy}$ of the verifier is 0 by construction and the losses measure *disagreement with
# the verifier* rather than error. We generate the verifier's greedy answers to the first items of each
# task (cached on disk like the results) and run the same analysis.

# %%
greedy_items = tc.greedy_references(pair, tc.offline_items(n=settings["greedy_items"]),
                                    max_new_tokens=report.GREEDY_LIMITS, cache=cache)
greedy_result = tc.analyse(pair, greedy_items, grid=grid, temperature=temperature, cache=cache)
greedy_summary = tc.summarise(greedy_result, None, losses=("expected_01", "greedy_01"), rates=rates,
                              n_resamples=n_resamples)
fig = view.curves_figure({"gold answers": summaries["all"], "verifier's greedy answers": greedy_summary})
tl.savefig(fig, "token_analysis_greedy_references")
display(pd.DataFrame(tc.table_rows(greedy_summary)).set_index("curve"))
i_d, i_v = grid.points.index(("drafter", 0.0)), grid.points.index(("verifier", 0.0))
for name, s in (("gold", summaries["all"]), ("verifier greedy", greedy_summary)):
    print(f"{name:>16}: drafter 1 - q(y) {s['mean'][i_d, 2]:.3f}, verifier 1 - p(y) {s['mean'][i_v, 2]:.3f}, "
          f"SpecDecode rejection {s['mean'][i_v, 0]:.3f}; "
          f"closest to the envelope: {', '.join(report.ranking(s)[:3])}; "
          f"points below it: {report.below_envelope(s) or 'none'}")
greedy_areas = {curve: [float(np.atleast_1d(values["area"][k])[0]) for k in ("mean", "low", "high")]
                for curve, values in greedy_summary["expected_01"]["curves"].items()}
greedy_best = min(greedy_areas, key=lambda curve: greedy_areas[curve][0])
display(pd.DataFrame({name: report.below_envelope(s) for name, s in summaries.items()}).fillna(0).astype(int))
glued = tl.lessons.notebook.glue_values(
    tok_greedy_items=len(greedy_items), tok_greedy_per_task=settings["greedy_items"],
    tok_greedy_best=greedy_best,
    tok_greedy_best_area=greedy_areas[greedy_best][0], tok_greedy_best_low=greedy_areas[greedy_best][1],
    tok_greedy_best_high=greedy_areas[greedy_best][2])

# %% [markdown]
# **What changes.** With its own greedy answer as the reference, the verifier is right at every
# position in the greedy sense (its greedy 0-1 loss is 0), so the losses now measure *disagreement with
# the verifier* rather than error, and the drafter looks better than on gold answers where it agrees
# with the verifier. What matters most for the comparison of rules: the reference is now the
# verifier's argmax, which is exactly the token a token-specific rule protects. Token-V2 keeps the
# drafter's mass on every token the verifier rates within $\alpha$ of its top token and moves the rest
# to $p$; no mixture of $q_t$ and $p_t$ can do that. So with these references a token rule can go
# *below the oracle envelope of deferral rules* and beat every possible deferral, not only OPT; pooled
# over gold answers, where the verifier's argmax is often wrong, that is much rarer. The printed lines
# above, the table of grid points below the envelope and "What we found" below give this run's numbers.

# %% [markdown]
# ## Check: the toy world's exact expectations
#
# The toy world of notebooks 00-05 knows its true $P$ and computes every rule's teacher-forced
# expectations exactly (`ToyWorld.evaluate(prefixes="truth")`). With references *drawn from* $P$,
# the means of this notebook's module must agree with them within sampling error, for every rule
# and every alpha: a check of the whole pipeline (sessions, chunking, statistics) on a case with a
# known answer. All the numbers come from one sample of references, so their errors move together:
# when the sample's verifier loss is off by two standard errors, every rule that defers to it is too.

# %%
toy_pair = tl.models.toy_pair()
world = toy_pair.drafter.world
toy_items = [tc.Item(f"toy-{i}", "toy", [0], r) for i, r in enumerate(world.sample(toy_sequences, seed=1))]
toy_grid = ta.default_grid(5)
toy = tc.analyse(toy_pair, toy_items, grid=toy_grid, cache=False, progress=False)
toy_table = report.toy_world_check(world, toy)
z_scores = toy_table["z"].to_numpy()
print(f"{len(z_scores)} numbers; largest |z| = {np.max(np.abs(z_scores)):.2f}; "
      f"share with |z| > 2: {np.mean(np.abs(z_scores) > 2):.3f}")
verifier_z = toy_table.query("curve == 'verifier' and statistic == 'expected_01'")["z"].iloc[0]
print(f"the verifier's own expected 0-1 loss in this sample: z = {verifier_z:+.2f}")
glued = tl.lessons.notebook.glue_values(tok_toy_numbers=len(z_scores), tok_toy_max_z=np.max(np.abs(z_scores)),
                                        tok_drafter_forward_s=timing["drafter_forward_s"],
                                        tok_verifier_forward_s=timing["verifier_forward_s"],
                                        tok_statistics_s=timing["statistics_s"],
                                        tok_statistics_ms_per_point=timing["statistics_ms_per_point"],
                                        tok_per_point_ms=per_point_ms)

# %% [markdown]
# ## What we found
#
# On the pair of this run, {eval}`glued["tok_items"]` answers ({eval}`glued["tok_positions:,d"]` answer
# tokens), {eval}`glued["tok_n_alpha"]` $\alpha$ values per rule ({eval}`glued["tok_points"]` rule-$\alpha$
# points), SpecDecode rejects {eval}`glued["tok_spec_rejection:.1%"]` of drafts; the drafter alone has
# expected 0-1 loss {eval}`glued["tok_drafter_loss:.3f"]` and the verifier alone
# {eval}`glued["tok_verifier_loss:.3f"]`.
#
# - **On the expected 0-1 loss, by area above the envelope:** {eval}`glued["tok_ranking"]`. The closest,
#   {eval}`glued["tok_best"]`, has area {eval}`glued["tok_best_area:.4f"]` [{eval}`glued["tok_best_low:.4f"]`,
#   {eval}`glued["tok_best_high:.4f"]`]; the intervals of {eval}`glued["tok_best_overlaps"]` other curves
#   overlap its interval (0: separated from every other rule). These are marginal intervals, so "separated" is
#   the conservative reading. The per-task table above ranks the curves on each task alone.
# - **OPT against Chow and Diff.** OPT's area is {eval}`glued["tok_opt_area:.4f"]`
#   [{eval}`glued["tok_opt_low:.4f"]`, {eval}`glued["tok_opt_high:.4f"]`], Diff's
#   {eval}`glued["tok_diff_area:.4f"]` [{eval}`glued["tok_diff_low:.4f"]`, {eval}`glued["tok_diff_high:.4f"]`]
#   (the two intervals {eval}`glued["tok_opt_diff"]`), Chow's {eval}`glued["tok_chow_area:.4f"]`
#   [{eval}`glued["tok_chow_low:.4f"]`, {eval}`glued["tok_chow_high:.4f"]`]: OPT's gap to the envelope is
#   {eval}`glued["tok_opt_below_diff:.0%"]` smaller than Diff's and {eval}`glued["tok_opt_below_chow:.0%"]`
#   smaller than Chow's. A small gain over Diff agrees with the paper's Gemma finding that OPT helps less than
#   with T5.
# - **Everyone is far from the oracle.** At the highest matched rejection rate,
#   {eval}`glued["tok_last_rate:.4f"]`, {eval}`glued["tok_best"]` loses
#   {eval}`glued["tok_best_loss_last:.3f"]` per token and the envelope
#   {eval}`glued["tok_envelope_loss_last:.3f"]`. The envelope gets below the verifier's own loss with fewer
#   rejections than SpecDecode, because it hands the verifier only the positions where the verifier is right.
# - **The ranking depends on the loss.** With the greedy 0-1 loss: {eval}`glued["tok_greedy_ranking"]`. With
#   the log loss: {eval}`glued["tok_log_ranking"]` (token rules move probability off the reference whenever it
#   lies outside the accepted set, which the log loss punishes). The paper's claim is about the quality of
#   sampled text, which the expected 0-1 loss measures.
# - **With the verifier's own greedy answers as references** ({eval}`glued["tok_greedy_per_task"]` per task,
#   {eval}`glued["tok_greedy_items"]` answers), the closest curve, {eval}`glued["tok_greedy_best"]`, has area
#   {eval}`glued["tok_greedy_best_area:.4f"]` [{eval}`glued["tok_greedy_best_low:.4f"]`,
#   {eval}`glued["tok_greedy_best_high:.4f"]`]: a negative area is below the deferral envelope, beating every
#   possible deferral. Pooled over the gold answers, {eval}`glued["tok_below_gold"]` grid points lie below it;
#   the table of points below the envelope above gives them per task.
# - **Check against known truth.** In the toy world with references drawn from its true $P$, the module's
#   {eval}`glued["tok_toy_numbers"]` numbers agree with `ToyWorld.evaluate`'s exact teacher-forced
#   expectations within {eval}`glued["tok_toy_max_z:.2f"]` standard errors (the errors are correlated: all the
#   numbers share one sample).
#
# **Cost**, as recorded when these results were computed (`timing` of the cached analysis; the committed
# cache was made beside other jobs): forward passes of {eval}`glued["tok_drafter_forward_s:.0f"]` s (drafter)
# and {eval}`glued["tok_verifier_forward_s:.0f"]` s (verifier), and {eval}`glued["tok_statistics_s:.0f"]` s of
# exact statistics for every point ({eval}`glued["tok_statistics_ms_per_point:.0f"]` ms per point, most of it
# one sort of the vocabulary's ratios per position). Once the per-answer sums exist, one point of a curve
# costs {eval}`glued["tok_per_point_ms:.4f"]` ms.
# display(toy_table.sort_values("z", key=np.abs, ascending=False).head(8))

# %%
pooled = summaries["all"]
tl.lessons.notebook.save_metrics("08_real_pair_token_analysis", {
    "profile": profile, "drafter": pair.drafter.name, "verifier": pair.verifier.name,
    "items": len(items), "positions": timing["positions"], "points": len(grid.points),
    "timing": timing, "per_point_ms_from_sums": per_point_ms,
    "spec_rejection": r_spec, "rates": rates,
    "means": {f"{c}@{a:.4g}": pooled["mean"][j].tolist() for j, (c, a) in enumerate(grid.points)},
    "areas": {c: [float(v["area"][k][0]) for k in ("mean", "low", "high")]
              for c, v in pooled["expected_01"]["curves"].items()},
    "at_rates": {c: {k: np.asarray(v["at_rates"][k]).tolist() for k in ("mean", "low", "high")}
                 for c, v in pooled["expected_01"]["curves"].items()},
    "oracle_at_rates": {k: np.asarray(pooled["expected_01"]["oracle_at_rates"][k]).tolist()
                        for k in ("mean", "low", "high")},
    "ranking": {name: report.ranking(s) for name, s in summaries.items()},
    "below_envelope": report.below_envelope(pooled),
    "greedy_reference": {"items": len(greedy_items), "ranking": report.ranking(greedy_summary),
                         "verifier_greedy_loss": float(greedy_summary["mean"][i_v, 3]),
                         "drafter_expected_01": float(greedy_summary["mean"][i_d, 2])},
    "toy_max_abs_z": float(np.max(np.abs(z_scores))), "toy_numbers": len(z_scores),
}, output_dir)

# %% [markdown]
# ## Exercises
# 1. SpecDecode ($\pi = p$) rejects a draft with probability $D_{TV}(p_t, q_t)$ at each position
#    (Lemma 3 with $r = 1$). `result.oracle[:, 0]` holds that number for every token of every answer.
#    Compute SpecDecode's mean rejection probability per token and store it in `answer_1` (compare it
#    with the verifier's point on the curves).
# 2. From `summaries["all"]`, take OPT's expected 0-1 loss at the first matched rejection rate
#    (`summaries["all"]["expected_01"]["curves"]["opt"]["at_rates"]["mean"][0]`) and the oracle's
#    (`...["oracle_at_rates"]["mean"][0]`). How much loss per token would a perfect deferral save over
#    OPT at that rate? Store the difference (OPT minus oracle) in `answer_2`.
#
# **Solutions:** [notebook 08's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-08-08_real_pair_token_analysis), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here

# %%
tl.lessons.notebook.check("08-1", answer_1, result=result)
tl.lessons.notebook.check("08-2", answer_2, summaries=summaries)

# %% [markdown]
# **Read next:** [09 speed on your hardware](09_speed_on_your_hardware.ipynb): whether the rejection rates you saw here turn into a speed-up on this machine.
