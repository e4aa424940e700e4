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
# # Rerunning the T5 evaluation: quality against latency for every cascade
#
# **Learning goals.** After this notebook you can
# 1. run the paper's T5 comparison (Section 6, the T5 plots and table) as one sweep over
#    method x rule x $\alpha$ x $\gamma$ x $T$, and resume it when it is interrupted;
# 2. price a run's latency from the calls it made (a measured cost model), and say which pricing a
#    figure uses;
# 3. read a quality-latency plot and the paper's table with intervals: (i) the latency reduction at
#    which a method first matches the large model's quality, (ii) the best quality it reaches without
#    being slower;
# 4. compare methods *pairwise* (same sentences, same seeds) and decide whether a claim of the paper
#    holds, does not hold, or needs more sentences;
# 5. say *where* a cascade can beat its verifier: only where the small model is better somewhere.
#
# **The paper's setup.** T5 small (77M) drafts for T5 large (800M) or XL (3B), fine-tuned on WMT
# EN$\to$DE (BLEU), CNN/DM and XSum (ROUGE-2); wall-clock latency at batch size 1; $\gamma \in \{3, 5, 7\}$,
# $T \in \{0, 1\}$. The methods: the two models alone, SeqCascade [Chow] (equation 1: answer with the
# small model unless its sequence probability is below $1 - \alpha$), TokenCascade [Chow]
# (Algorithm 2), SpecDecode (Algorithm 1), its lossy variant with $\beta = 1$ and with a normalising
# $\beta$ (Lossy\*), BiLD and BiLD\*, and the speculative cascades (Algorithm 5) with the Chow, Diff,
# OPT and token-specific rules.
#
# **Profiles** (the `profile` parameter; `tl.sweeps.reruns.T5_PROFILES` holds the settings):
# - `hub`: `google-t5/t5-small` drafting for `google-t5/t5-large` on the validation splits of WMT14
#   EN$\to$DE (`wmt/wmt14`), CNN/DailyMail (`abisee/cnn_dailymail`) and XSum (`EdinburghNLP/xsum`, its
#   Parquet conversion) through `datasets.load_dataset`, with the task prefixes T5 was trained with and
#   inputs cut as the paper cuts them (WMT to 80 tokens, XSum, and here CNN/DM too, to 1,024). It
#   needs a network and a GPU. **These are not the paper's models**: `t5-small` and `t5-large` are the
#   original multi-task T5 checkpoints, not the T5 v1.1 models the paper fine-tuned per task, and
#   XSum was not in their training mix, so expect lower quality there; the shape of the curves is
#   what this profile can check.
# - `offline` (default): an encoder-decoder pair this package trains here, in a few minutes, on a
#   synthetic translation task whose grammar is known, so BLEU is measured against every valid
#   translation. The pair is made so that the larger model is better on average *but not everywhere*.
#   200 held-out sentences, $\gamma = 5$, $T \in \{0, 1\}$; every speculative rule gets up to 5
#   interior $\alpha$ values plus its two ends, placed per temperature from token-level analyses of the
#   pair: at $T = 1$ so that their rejection rates spread evenly along the curve
#   (`tl.sweeps.reruns.T5_OFFLINE_ALPHAS`), at $T = 0$, where the curve is a staircase, one per step
#   (`tl.sweeps.reruns.T5_OFFLINE_ALPHAS_T0`; Lossy and Lossy* are SpecDecode at $T = 0$ and are not run there).
# - `full`: the offline pair with more sentences and the whole $\gamma \times T$ grid.
# - `smoke`: a few sentences and a tiny training budget, for `make test`.
#
# The sweep's rows go to `data/results/t5-<profile>-<hash>/rows.jsonl`, one per (configuration,
# sentence), as they finish: rerunning the notebook reuses every finished row.

# %% tags=["parameters"]
profile = "offline"       # "hub", "offline", "full" or "smoke"
n_examples = None         # sentences per task (None: the profile's)
gammas = None             # draft block sizes, e.g. [3, 5, 7] (None: the profile's)
temperatures = None       # e.g. [0.0, 1.0] (None: the profile's)
n_alpha = None            # alpha values per curve without placed alphas (None: the profile's)
latency = "modelled"      # "modelled": calls priced by the cost model (below);
                          # "wall_time_s": one clock reading per row
runner = "single"         # "single": every row at batch size 1;
                          # "batch": 32 sentences per batch (same rows, faster; see below)
clock_examples = 20       # with the batch runner: sentences per task decoded at batch size 1
                          # for the check against the clock
n_resamples = 2000        # bootstrap resamples of the sentences for every interval (at least 2000)
results_dir = None        # where sweeps are saved (None: the repository's data/results/)
redraw_only = False       # True: redraw from the saved rows of this profile's run,
                          # without training or loading models
train_here = False        # True: train the T5 pair on this machine instead of using the shipped one
                          # (see "The models")
output_dir = "."          # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "profile": "str",
    "n_examples": "int>=1<=20000|None",
    "gammas": "list[int]|None",
    "temperatures": "list[float]|None",
    "n_alpha": "int>=2|None",
    "latency": "str",
    "runner": "str",
    "clock_examples": "int>=1",
    "n_resamples": "int>=1",
    "results_dir": "str|None",
    "redraw_only": "bool",
    "train_here": "bool",
    "output_dir": "str"
})

# %%
import functools
import json
import time
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import torch
from IPython.display import display

import tutorial_lib as tl
from tutorial_lib.stats import analysis, claims, curve_bootstrap, hardware, paired, pricing, report
from tutorial_lib.views import verdicts
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.result_files import write_table

pd.set_option("display.width", 200)
settings = tl.sweeps.reruns.t5_profile(profile, n_examples=n_examples, gammas=gammas,
                                       temperatures=temperatures, n_alpha=n_alpha)
if latency not in ("modelled", "wall_time_s"):
    raise ValueError(f"latency={latency!r}: use 'modelled' (the cost model) or 'wall_time_s' (the clock).")
if runner not in ("single", "batch"):
    raise ValueError(f"runner={runner!r}: use 'single' (batch size 1) or 'batch' (32 sentences per batch).")
if runner == "batch" and latency != "modelled":
    raise ValueError("runner='batch' splits a batch's time among its rows, which is not a latency: use "
                     "latency='modelled' (priced from the counted calls, the same as at batch size 1) "
                     "or runner='single'.")
pd.Series(tl.sweeps.reruns.run_config(settings)["profile"], name="setting").to_frame()

# %% [markdown]
# ## The models
#
# In the offline profile both models are `T5ForConditionalGeneration` networks trained on the
# synthetic task by `tl.models.synthetic_t5.train_t5_pair`, called below. It puts the pair into
# `tl.models.files.cache_dir()` once, so later runs only load it; loading never trains. The drafter is
# the small one.
#
# **Shipped or trained here.** Training is seeded and runs on one thread, so one machine trains the
# same weights every time; but torch's CPU kernels choose their code paths, and so the order of their
# sums, by the processor, so another processor can train other weights (two machines of this project
# did, with the same torch and transformers). The sweep's folder is
# keyed by a hash of the weights, so other weights mean a new sweep of every row. That is why the
# repository ships the default pair that produced the committed rows (`data/models/`, 3.3 MB), and
# `train_t5_pair` copies it into the cache (seconds) instead of training. `train_here = True` trains
# the pair on this machine instead (a few minutes; the smoke profile's "tiny" budget is always trained,
# in seconds), and the sweep then runs again unless this processor trains the shipped weights.
# `redraw_only = True` skips the models altogether and redraws everything below from the saved rows.

# %%
start = time.perf_counter()
if redraw_only:
    pair = tl.sweeps.reruns.saved_pair(f"t5-{settings['profile']}", settings, results_dir=results_dir)
else:
    budget = tl.sweeps.reruns.t5_training_budget(settings)   # None for the hub's pretrained T5s
    if budget is not None:
        folders = tl.models.synthetic_t5.train_t5_pair(budget=budget, shipped=not train_here)
        print(tl.models.synthetic_t5.describe_training(folders))
    pair = tl.sweeps.reruns.load_t5_pair(settings)
load_seconds = time.perf_counter() - start
print(f"put in the cache where missing and loaded in {load_seconds:.0f} s")
tl.sweeps.reruns.describe_pair(pair)

# %% [markdown]
# ## The task
#
# Each example is a source sentence with *every* valid translation as a reference (the offline
# grammar has synonyms and a free word order in places, so several outputs are right). Quality is
# **corpus BLEU** (sacrebleu), as in the paper: the n-gram matches and lengths of all sentences are
# summed before the score is taken, which is not the mean of the sentences' BLEU. Its 95% interval
# comes from resampling the sentences (the bootstrap below). The hub profile's summarisation tasks
# are scored by ROUGE-2 (rouge-score), the mean over examples.

# %%
tasks = tl.sweeps.reruns.t5_tasks(settings)
for task in tasks:
    print(f"{task.name}: {len(task.examples)} examples, metric {task.metric_name}, "
          f"at most {task.max_new_tokens} new tokens")
    for example in task.examples[:3]:
        print("  source:", example.prompt)
        print("  references:", example.references[:3], "..." if len(example.references) > 3 else "")

# %% [markdown]
# ## The sweep
#
# Every curve of the paper over its $\alpha$ grid, for each $\gamma$ and $T$. Plain decoding and the
# two sequential cascades do not depend on $\gamma$, so they run once per $T$. Every method sees the
# same seed on the same sentence, so differences between methods are not differences in luck, and
# they can be compared pairwise.
#
# **Each grid spans its rule's live range** (`tl.LIVE_ALPHA_RANGES`). OPT defers when
# $\max_v q(v) < \max_v p(v) - \alpha\, D_{TV}(p, q)$. At $T = 1$,
# $|\max p - \max q| \le D_{TV}(p, q)$, so OPT never defers for $\alpha \ge 1$ and always defers
# (where $p \ne q$) for $\alpha \le -1$: its live range is $[-1, 1]$, not the whole real line.
#
# **At $T = 0$, OPT($\alpha$) emits exactly Diff($\alpha$)'s tokens.** As in the authors' code, the
# deferral tests read the unscaled ($T = 1$) probabilities, while OPT's $D_{TV}$ term is computed on the
# sampling laws, which greedy decoding makes one-hot: $D_{TV}(p, q) = 1(\arg\max p \ne \arg\max q)$.
# Where the argmaxes agree, $D_{TV} = 0$, and deferring or not emits the same token. Where they
# differ, $D_{TV} = 1$, and OPT's test $\max q < \max p - \alpha\,D_{TV}$ *is* Diff's test
# $\max q < \max p - \alpha$. So at $T = 0$, OPT($\alpha$) and Diff($\alpha$) are the same run: the
# same tokens, rejections and calls, checked in `tests/test_alpha_grids.py`. At $T = 0$ the two rules
# run at the same alphas here (one per step of the shared staircase), and their rows agree exactly
# (the table of distinct runs at the end counts them from the rows). OPT's points at $T = 0$ are Diff's, so OPT can gain nothing
# there; its $D_{TV}$ term matters only at $T > 0$. Token-V1 at $T = 0$ is Diff too: the drafted top
# token $x$ is in its acceptance set exactly when $\max q \ge \max p - \alpha$, Diff's test.
#
#
# **Batched or not.** `runner="single"` decodes every row alone, at batch size 1, as the paper measures
# latency. `runner="batch"` decodes 32 sentences at once per configuration (`tl.generate_batch`: each
# row drafts its own block, one verifier call scores every row's block, rows that keep different numbers
# of drafts continue from their own positions). Each row gets exactly the tokens and counted calls of its
# single run, so its quality and its latency priced from those calls (below) do not change; only its
# `wall_time_s`, now a share of its batch's time, is no latency. The check against the clock then runs
# on `clock_examples` sentences per task decoded alone (their own sweep, `-clock` in its name).

# %%
configs = tl.sweeps.reruns.t5_configs(settings)
print(f"{len(configs)} configurations x {sum(len(t.examples) for t in tasks)} examples, runner={runner!r}")
torch.set_num_threads(1)  # tiny models: one thread is faster and times are steadier
start = time.perf_counter()
rows = ev.run_sweep(pair, tasks, configs, name=f"t5-{settings['profile']}", root=results_dir,
                    extra_config=tl.sweeps.reruns.run_config(settings), runner=runner, batch_size=32)
clock_rows = rows   # rows whose wall times are latencies (batch size 1)
if runner == "batch":
    clock_rows = ev.run_sweep(pair, [task.head(clock_examples) for task in tasks], configs,
                              name=f"t5-{settings['profile']}-clock", root=results_dir,
                              extra_config=tl.sweeps.reruns.run_config(settings))
sweep_seconds = time.perf_counter() - start
sweep_path = rows.attrs["path"]
print(f"{len(rows)} rows in {sweep_path} ({sweep_seconds:.0f} s this run; rows computed earlier are reused)")

# %% [markdown]
# **The committed run** (`data/results/t5-offline-*`, the default profile): {eval}`glued["t5_run_examples"]`
# held-out sentences, $\gamma =$ {eval}`glued["t5_run_gammas"]`, $T$ = {eval}`glued["t5_run_temperatures"]`;
# the curves without placed alphas have {eval}`glued["t5_run_n_alpha"]`-point grids
# ({eval}`glued["t5_run_configurations"]` configurations, {eval}`glued["t5_run_rows:,d"]` rows). The sweep ran
# from an empty results folder in {eval}`glued["t5_run_minutes:.1f"]` min on {eval}`glued["t5_run_finished"]`,
# beside {eval}`glued["t5_run_beside"]`.

# %% [markdown]
# ## Latency from counted calls: the cost model
#
# One wall-clock reading per row measures the machine as much as the method: configurations that
# make exactly the same calls come out at different latencies, depending on what else ran at the
# time. So latency is **priced from the calls each row counted** (`tl.stats.pricing`). A calibration times
# each kind of call of this pair on this machine, interleaved in a shuffled order, at least 5 times
# each, and keeps the median: a drafter step $t_q$, the verifier scoring $k$ tokens $t_p(k)$ for
# every $k = 1..\gamma+1$, the encoder pass of each model, and the engine's overhead per call $o$ and
# per speculative block. A row's modelled latency is
#
# $$L = \sum_{m \in \{q, p\}} \Big[n^{\rm enc}_m\, t^{\rm enc}_m + \sum_{k \ge 1} c_m(k)\,\big(t_m(k) + o\big)\Big]
#       + n_{\rm blocks}\, o_{\rm block},$$
#
# with $c_m(k)$ the row's calls of model $m$ that fed $k$ tokens, and $o_{\rm block}$ priced with the
# row's own rule and $\gamma$ (computing OPT's or a Token rule's target costs more than SpecDecode's:
# `tl.decoding.calibration.rule_block_costs`). Configurations with the same calls
# get the same latency, and a configuration's latency has an interval from its sentences. The
# calibration is stored with the rows (`calibration.json`), so a redraw reuses it.
#
# Two pricings of the same calls, both used below:
# - **measured CPU calibration** (`modelled_latency_s`): the costs as measured here, where scoring
#   $k$ tokens costs several one-token steps;
# - **accelerator pricing** (`modelled_latency_accelerator_s`): every call costs one step of its
#   model, $t_p(k) = t_p(1)$, the regime of an accelerator, where a call is bound by reading the
#   weights. This is what the paper's speculative methods are built for.

# %%
calibration = None
cost, cost_accelerator = "wall_time_s", None
if latency == "modelled":
    rows, calibration, why_not = pricing.price_sweep(pair, rows, settings["gammas"],
                                                     required=runner == "batch")
    if calibration is None:
        print("Latency is NOT modelled for this run, the figures use measured wall time instead:\n"
              f"  {why_not}")
    else:
        clock_rows = rows if runner == "single" else pricing.price_rows(clock_rows, calibration)
        cost, cost_accelerator = pricing.LATENCY_COLUMN, pricing.ACCELERATOR_COLUMN
PRICING_NAMES = {pricing.LATENCY_COLUMN: "modelled latency, measured CPU calibration",
                 pricing.ACCELERATOR_COLUMN: "modelled latency, accelerator pricing (k tokens cost 1 step)",
                 "wall_time_s": "measured wall time (one run per row)"}
PRICING_SHORT = {pricing.LATENCY_COLUMN: "modelled, CPU calibration",
                 pricing.ACCELERATOR_COLUMN: "modelled, accelerator pricing", "wall_time_s": "wall time"}
print("latency axis:", PRICING_NAMES[cost])
(tl.views.tables.page_table(calibration.table(), keys=["kind", "k"], digits=5,
                            blank={"k": "one step", "vs_bound": "no bound: read bandwidth not measured"})
 if calibration is not None else None)

# %% [markdown]
# **The check against the clock.** The measured wall time of each row stays in the rows; per
# configuration, the median absolute relative error $|L - W|/W$ of the modelled latency $L$ against
# the wall time $W$ says how well the calls explain the time (`pricing.model_error`), and per method
# the signed error $(L - W)/W$, median and quartiles (`pricing.signed_error`; negative: the model is
# faster than the clock). An error of a few percent means the model prices what the machine did; a
# larger one, work the model does not count (or a busy machine during the sweep).

# %%
model_error = None
if calibration is not None:
    model_error = pricing.model_error(clock_rows)
    overall_error = pricing.overall_model_error(clock_rows)
    print(f"median |L - W| / W over all rows: {overall_error:.1%}; per configuration: quartiles "
          f"{model_error['median_abs_rel_error'].quantile([0.25, 0.5, 0.75]).round(3).tolist()}")
    display(model_error.sort_values("median_abs_rel_error", ascending=False).head(15).round(4))
    clock_error = pricing.signed_error(clock_rows, by=["label", "temperature"])
    display(clock_error.round(4))

# %% [markdown]
# **The cost model against the clock, per method.** The aim is $|\text{median}| \le$
# {eval}`glued["t5_aim:.0%"]` for every method on a quiet machine: {eval}`glued["t5_aim_met"]` of the
# {eval}`glued["t5_aim_methods"]` methods meet it, and the table below lists those that miss it. Every rule's
# blocks are priced with that rule's own target computation (`calibration.json` holds `target_<rule>@g<gamma>`,
# timed by `tl.decoding.calibration.rule_block_costs` in CPU time, so that other jobs do not inflate them),
# not SpecDecode's. Where the rows were timed beside heavy jobs and the calibration on a quiet machine, the
# clock is slowed by the load and the signed error measures mostly that load, not the model. A positive
# median means the model over-prices that method's rows. Why the misses remain on a quiet machine is not
# measured here: this pair's calls take about a millisecond, so the fixed costs that the calibration times
# apart from the networks (per call, per block) weigh as much as the networks themselves. Read the table as
# the model's error per method on this machine, measured, not tuned.

# %%
if calibration is not None:
    missed = clock_error[clock_error["median"].abs() > report.AIM]
    glued = tl.lessons.notebook.glue_values(t5_aim=report.AIM, t5_aim_met=len(clock_error) - len(missed),
                                            t5_aim_methods=len(clock_error))
    display(missed.round(4))

# %% [markdown]
# ## Where each model wins
#
# A cascade can only beat its verifier if the drafter is better *somewhere*, and a good deferral
# rule finds those places. The offline task has one built in (see `tl.toy.synthetic_mt`): per group of
# sentences, the drafter's and the verifier's greedy BLEU (mean per sentence).

# %%
wins = None
if settings["profile"] != "hub":
    wins = analysis.quality_by_group(rows, tasks[0], group="context")
    # the table of contexts, kept beside the rows (quality_by_group reads the lowest temperature)
    write_table(wins.assign(temperature=float(rows["temperature"].min())),
                f"{sweep_path}/quality_by_context.csv", index=True)
    display(wins)
    fig = tl.views.reruns.where_each_wins_figure(wins)
    tl.savefig(fig, "t5_where_each_wins")
    plt.show()
    glued = tl.lessons.notebook.glue_values(
        t5_drafter_wins=", ".join(wins.index[wins["Drafter"] > wins["Verifier"]]) or "no context")

# %% [markdown]
# The drafter beats the verifier only in these contexts: {eval}`glued["t5_drafter_wins"]`. That is the
# verifier's built-in flaw (its training data lost its negations, `nu ... ka`), so it is better on
# average and much worse in one identifiable context: all a cascade can gain comes from there.

# %% [markdown]
# ## Quality against latency
#
# One figure per task and temperature, one panel per family of methods: the baselines and the
# sequential cascades; the deferral rules (Chow, Diff, OPT); the token-specific rules (V1, V2, V3);
# lossy SpecDecode and BiLD. Each curve runs over its $\alpha$ grid with its 95% interval (corpus
# BLEU over resampled sentences) as a shaded band; the dashed line is the verifier's quality inside
# its own grey band, the dotted line the verifier's latency. Points above the dashed line and left of
# the dotted one beat the large model on both counts. The drafter and SpecDecode are drawn faintly
# in every panel as anchors.
#
# The first figure of each pair prices latency with the **measured CPU calibration**, the second with
# the **accelerator pricing** (same calls). The offline models are tiny, so on this CPU a drafter
# step costs a sizeable share of a verifier step, and scoring a block of $\gamma + 1$ tokens costs
# several steps: methods that draft a lot pay for it in the first figure and much less in the second.

# %%
summary = analysis.summarize(rows, latency=cost, tasks=tasks)
summaries = {cost: summary}
if cost_accelerator is not None:
    summaries[cost_accelerator] = analysis.summarize(rows, latency=cost_accelerator, tasks=tasks)
main_gamma = 5 if 5 in settings["gammas"] else settings["gammas"][0]
figures = []
for task in tasks:
    for temperature in settings["temperatures"]:
        for column, part in summaries.items():
            fig = tl.views.reruns.family_figure(
                part, task=task.name, temperature=temperature, gamma=main_gamma, x="latency",
                x_label=f"latency, verifier = 1 ({PRICING_SHORT[column]})",
                quality_label=(f"corpus {task.metric_name.upper()}"
                               if task.metric_name in tl.tasks.metrics.CORPUS_METRICS
                               else f"{task.metric_name} (mean per example)"),
                title=f"{task.name}, T = {temperature:g}, gamma = {main_gamma}; {PRICING_NAMES[column]}")
            name = f"t5_{task.name}_T{temperature:g}".replace(".", "p")
            name += "_accelerator" if column == pricing.ACCELERATOR_COLUMN else ""
            tl.savefig(fig, name, size=fig.get_size_inches())
            figures.append(name)
            plt.show()

# %% [markdown]
# ## Paired differences to the verifier and to SpecDecode
#
# Every configuration ran on the same sentences with the same random numbers as the verifier, so
# the question "is it better than the verifier?" is about the *difference on the same sentences*,
# whose interval is much narrower than the two curves' intervals side by side. Per configuration: its
# corpus BLEU minus the verifier's, and minus SpecDecode's (same $\gamma$), with a 95% paired
# bootstrap interval (`tl.stats.paired.paired_differences`: the same resample of sentences for both
# configurations, `n_resamples` resamples). A reference against itself, and a configuration whose texts
# equal the reference's on every sentence (at $T = 0$, SpecDecode and the runs that emit its text), differ
# by 0 by construction: they are counted apart (`tl.stats.paired.separated_counts`), and of the pairs left
# about 5% would exclude 0 by chance if nothing differed. Below: the counts per temperature, then the
# configurations whose interval excludes 0.

# %%
differences = paired.paired_differences(rows, tasks, n_resamples=n_resamples)
write_table(differences, f"{sweep_path}/paired_differences.csv")
counts = paired.separated_counts(differences)
display(counts.round(1))
comparable = differences[(differences["config"] != differences["versus_config"]) & ~differences["same_texts"]]
separated = comparable[(comparable["low"] > 0) | (comparable["high"] < 0)]
separated[["temperature", "label", "alpha", "gamma", "versus", "quality", "versus_quality", "difference",
           "low", "high"]].round(3)

# %% [markdown]
# ## The paper's table, with intervals
#
# Per method, from its curve with points sorted by latency and joined by straight lines
# (`tl.stats.curve_bootstrap.curve_table`): (i) `reduction_at_verifier_quality` $= 1 - L^*$, where $L^*$ is
# the smallest latency at which the curve first reaches the verifier's quality ("not reached" if the
# curve on all sentences never does; a negative value means it gets there only by being slower);
# (ii) `best_quality_within_verifier_cost`, the best quality at latency $\le 1$, and its difference
# from the verifier's. Each number has a 95% bootstrap interval over sentences, recomputed with the
# verifier's quality on the same resample; a bound reads "not reached in over 2.5% of resamples" where
# the curve does not reach in more than 2.5% of the resamples (`reached_share`: how often it does).
#
# The first table prices latency with the measured CPU calibration, the second with the accelerator
# pricing.

# %%
table = curve_bootstrap.curve_table(rows, tasks, cost=cost, n_resamples=n_resamples)
write_table(table, f"{sweep_path}/table.csv")
write_table(summary, f"{sweep_path}/summary.csv")
TABLE_COLUMNS = ["temperature", "method", "reduction_at_verifier_quality", "reduction_low", "reduction_high",
                 "reached_share", "best_quality_within_verifier_cost", "best_quality_low",
                 "best_quality_high", "best_minus_verifier", "best_minus_verifier_low",
                 "best_minus_verifier_high"]
not_reached_in_tail = "not reached in over 2.5% of resamples"
no_point_in_tail = "no point within its cost in over 2.5% of resamples"
curve_words = {
    "unbounded": {"reduction_low": not_reached_in_tail, "reduction_high": not_reached_in_tail,
                  **{column: no_point_in_tail
                     for column in ("best_quality_low", "best_quality_high", "best_minus_verifier_low",
                                    "best_minus_verifier_high")}},
    "blank": {"best_minus_verifier": "no point within the verifier's cost", "reached_share": "no resamples"}}
tl.views.tables.page_table(table.loc[table["gamma"] == main_gamma, TABLE_COLUMNS],
                           keys=["temperature", "method"], **curve_words)

# %%
table_accelerator = None
if cost_accelerator is not None:
    table_accelerator = curve_bootstrap.curve_table(rows, tasks, cost=cost_accelerator,
                                                    n_resamples=n_resamples)
    write_table(table_accelerator, f"{sweep_path}/table_accelerator.csv")
    display(tl.views.tables.page_table(table_accelerator.loc[table_accelerator["gamma"] == main_gamma,
                                                             TABLE_COLUMNS],
                                       keys=["temperature", "method"], **curve_words))

# %% [markdown]
# Spec-Bench-style numbers beside quality: tokens per verifier call and speed-up over the verifier
# (on the figures' first pricing), at each method's most verifier-like and most drafter-like ends.

# %%
analysis.speculative_ranges(summary, gamma=main_gamma).round(2)

# %% [markdown]
# ## Did the paper's claims hold?
#
# The paper's T5 claims, each measured as a difference that is positive when the claim holds, on the
# latency of the first figure, with a 95% bootstrap interval over sentences (`tl.stats.claims.t5_claims`).
# The verdict is **holds** when the interval lies above 0, **does not hold** when it lies at or
# below 0, and otherwise **not resolved at this sample size**, with `n_needed`: the number of
# sentences at which a difference of the measured size would be detected (5% test, 80% power; empty
# where no size follows from the measured spread).
#
# A claim about a rule is measured on **that rule's own configurations**: never on the SpecDecode or
# drafter ends of its curve, nor on a configuration whose texts are SpecDecode's. Where a claim takes
# the best of several curves, its interval holds for all of them at once, so the selection is inside
# it. A claim with no number says why: **by construction** (fixed by the design whatever the sentences)
# or **not run** (a compared method was not run at that temperature), with the reason. Beside a claim in
# BLEU, the **noise floor** in BLEU: SpecDecode minus the verifier on the same sentences and seeds (two
# runs with one output law), which at $T = 0$ is 0 by construction (SpecDecode emits the verifier's text)
# and is then not given as a floor; a claim on the latency axis has none beside it (no two runs of one law
# were priced). `against_floor` says whether the estimate lies within the floor. The two claims on
# sequential cascades read the best quality within a latency budget with **the verifier alone open to both
# sides** (what a user on that budget can always run): a side with no configuration within the budget is worth
# the verifier's quality, so no estimate or bound is infinite, and the detail names the verifier where it is
# the better choice. "Sequential cascades are
# best" is measured within the latency of the cheapest speculative cascade point, which the measurement
# column gives as a multiple of the verifier's latency: above 1 where no speculative cascade is faster
# than the verifier, so not a "very low" latency. `report.write_t5_results` writes the claims and the
# run's other result files beside its rows (`tutorial_lib.stats.report`; `claims.csv`, `signed_error.csv`,
# `facts.json`, and the re-pricing over the drafter's cost below).

# %%
results = None
if cost == pricing.LATENCY_COLUMN:
    results = report.write_t5_results(rows, tasks, sweep_path, calibration, n_resamples=n_resamples,
                                      table=table, clock_rows=clock_rows)
    claims_table = results["claims"]
else:   # wall time: no calibration to re-price with
    claims_table = claims.t5_claims(rows, tasks, cost=cost, n_resamples=n_resamples)
    write_table(claims_table, f"{sweep_path}/claims.csv")
tl.views.tables.claims_page(
    claims_table[["claim", "temperature", "gamma", "measurement", "unit", "estimate", "low", "high",
                  "verdict", "n_needed", "noise_floor", "noise_floor_low", "noise_floor_high",
                  "against_floor", "noise_floor_from", "detail", "reason"]],
    keys=["claim", "temperature", "gamma"])

# %% [markdown]
# ### The headline claim in the Gemma-style run's terms
#
# Notebook 07 answers the paper's headline claim, *[Token] matches the large model's quality at a lower
# rejection rate*, with statistics that are always finite (`tl.stats.claims.headline`): on the rejection-rate
# axis, each rule's curve with its drafter end and its SpecDecode end, the quality at a quarter, a half and
# three quarters of SpecDecode's rejection rate, and the rate each group needs to come within a margin of the
# verifier's quality. The same statistics on this run, at its block size $\gamma$ =
# {eval}`glued["t5_headline_gamma"]` and a margin of {eval}`glued["t5_headline_margin"]` BLEU (the same share of
# BLEU's 0-100 scale as 0.02 of a score in [0, 1]), so the two reruns answer it the same way:

# %%
headline_table = (results["headline"] if results is not None else
                  claims.headline_table(rows, tasks, n_resamples=n_resamples,
                                        gamma=claims.headline.run_gamma(rows)))
headline_summary = claims.headline_summary(headline_table)
t5_verdicts = headline_summary.set_index("claim")["verdict"]
quote = functools.partial(claims.headline_cell, headline_table, headline_table["task"].iloc[0],
                          missing="not run in this profile")
glued = tl.lessons.notebook.glue_values(
    t5_headline_gamma=claims.headline.run_gamma(rows),
    t5_headline_margin=claims.headline_curves.margin_for("bleu"),
    t5_headline_others=t5_verdicts.loc[claims.headline_reading.SUMMARY_CLAIMS[0][0]],
    t5_headline_verifier=t5_verdicts.loc[claims.headline_reading.SUMMARY_CLAIMS[1][0]],
    t5_headline_t1_half_others=quote(1.0, claims.headline.VS_OTHERS, fraction=0.5),
    t5_headline_t0_half_others=quote(0.0, claims.headline.VS_OTHERS, fraction=0.5),
    t5_headline_t1_rate_spec=quote(1.0, claims.headline.RATE_VS_SPEC),
)
tl.views.tables.page_table(headline_summary[["claim", "verdict", "holds", "not_resolved", "does_not_hold",
                                             "cells", "numbers"]], keys=["claim"])

# %% [markdown]
# On this run "[Token] gives the best quality at a matched rejection rate" reads
# {eval}`glued["t5_headline_others"]` (at half of SpecDecode's rate, Token minus the best other rule: at
# $T = 1$ {eval}`glued["t5_headline_t1_half_others"]`, at $T = 0$ {eval}`glued["t5_headline_t0_half_others"]`),
# and "[Token] beats the verifier at a matched rejection rate" {eval}`glued["t5_headline_verifier"]`. The Token
# rules do come within the margin at a lower rate than SpecDecode (at $T = 1$:
# {eval}`glued["t5_headline_t1_rate_spec"]`). Notebook 07 sets this beside the Gemma-style run's answer. The
# full table, with each group's chosen curve and the design identities checked at $T = 0$:

# %%
tl.views.tables.page_table(
    headline_table[["temperature", "statistic", "fraction", "estimate", "low", "high", "verdict",
                    "token_curve", "other_curve", "detail"]],
    keys=["temperature", "statistic"], blank={"fraction": "none: a margin, not a fraction"})

# %% [markdown]
# ## The hardware decides the latency verdicts
#
# Every row counted its calls, so the claims can be re-priced for another machine at no cost
# (`tutorial_lib.stats.hardware`): the drafter's cost relative to a verifier step, $c = t_q / t_p(1)$, from 0.02 to
# 1, and the verifier's block-scoring cost as measured here or one step per block (as on an
# accelerator). The dotted line is this machine's $c$; the dash-dotted one the paper's T5-small
# drafting for T5-large, an **estimate** from the ratio of their parameters (about 60M / 770M). Each
# marker's colour is the claim's verdict at that $c$ (fewer resamples than the table above: the
# grid re-runs every claim 22 times). The table lists where each verdict changes.

# %%
if results is not None:
    fig = verdicts.verdict_figure(results["verdicts_by_c"], machine_c=hardware.machine_c(calibration),
                                  paper_c=hardware.PAPER_T5_C, title="T5 claims against the drafter's cost c")
    tl.savefig(fig, f"t5_{settings['profile']}_verdicts_by_c", size=fig.get_size_inches())
    figures.append(f"t5_{settings['profile']}_verdicts_by_c")
    plt.show()
    never_changes = "verdict never changes"
    # at another c a latency reduction can be unreached: no curve at the verifier's quality within budget
    not_finite = "not finite: no compared curve reaches the verifier's quality at that c"
    display(tl.views.tables.page_table(
        results["flip_points"], keys=["claim", "temperature"],
        blank={"c_below": never_changes, "c_above": never_changes},
        unbounded={"estimate_below": not_finite, "estimate_above": not_finite}))

# %% [markdown]
# This machine's $c$ is {eval}`glued["t5_machine_c:.2f"]`; the paper's T5-small $\to$ T5-large pair is at
# about {eval}`glued["t5_paper_c:.3f"]` ({eval}`glued["t5_paper_c_source"]`). The verdicts on the grid use
# {eval}`glued["t5_grid_resamples"]` resamples of the sentences. So the T5 latency claims are decided by the
# pair's cost ratio, not by the rules.
#
# ## What the run says
#
# **The cost of a drafter step.** With this synthetic pair a drafter step costs {eval}`glued["t5_c:.2f"]` of a
# verifier step ({eval}`glued["t5_drafter_ms:.2f"]` ms against {eval}`glued["t5_verifier_ms:.2f"]` ms: calls
# this small are mostly fixed costs), so on the latency axis no speculative method is faster than the
# verifier, whatever its rule: SpecDecode costs {eval}`glued["t5_spec_latency_cold:.2f"]` times the verifier
# at the coldest temperature ({eval}`glued["t5_spec_latency_warm:.2f"]` at the warmest; total modelled latency
# over the verifier's). Every speculative method that reaches the verifier's quality at $T = 0$ does
# so only at {eval}`glued["t5_extra_low:.0%"]`-{eval}`glued["t5_extra_high:.0%"]` *more* latency.
# Configurations that make the same calls on every sentence get the same modelled latency: at $T = 0$,
# {eval}`glued["t5_same_configs"]` configurations in {eval}`glued["t5_same_groups"]` groups, the largest of
# {eval}`glued["t5_same_largest"]` (SpecDecode and the runs whose calls equal its own).
#
# **Quality.** At the coldest temperature the verifier's corpus BLEU is {eval}`glued["t5_verifier_bleu:.1f"]`
# [{eval}`glued["t5_verifier_bleu_low:.1f"]`, {eval}`glued["t5_verifier_bleu_high:.1f"]`] and the drafter's
# {eval}`glued["t5_drafter_bleu:.1f"]` [{eval}`glued["t5_drafter_bleu_low:.1f"]`,
# {eval}`glued["t5_drafter_bleu_high:.1f"]`] on {eval}`glued["t5_sentences"]` sentences. Of the
# {eval}`glued["t5_pairs_cold"]` paired differences there (each configuration against the verifier and against
# SpecDecode), {eval}`glued["t5_self_cold"]` compare a reference with itself and
# {eval}`glued["t5_identical_cold"]` a configuration with its reference's texts (0 by construction); of the
# {eval}`glued["t5_compared_cold"]` left, {eval}`glued["t5_separated_cold"]` exclude 0
# ({eval}`glued["t5_above_cold"]` above, {eval}`glued["t5_below_cold"]` below), where about
# {eval}`glued["t5_by_chance_cold:.0f"]` would by chance if nothing differed. Over both temperatures,
# {eval}`glued["t5_separated_all"]` of {eval}`glued["t5_compared_all"]` compared pairs
# ({eval}`glued["t5_above_all"]` above, {eval}`glued["t5_below_all"]` below; about
# {eval}`glued["t5_by_chance_all:.0f"]` by chance). The configurations above the verifier (the largest
# difference of each method, with the number of its alphas above), then the best point of each speculative
# cascade:

# %%
results_facts = None
if results is not None:
    results_facts = json.loads((Path(sweep_path) / "facts.json").read_text())
    coldest, warmest = min(settings["temperatures"]), max(settings["temperatures"])
    cold_summary = summary[summary["temperature"] == coldest].drop_duplicates("label").set_index("label")
    cold_pairs = comparable[comparable["temperature"] == coldest]
    by_group = counts.set_index("group")
    cold_counts, all_counts = by_group.loc[coldest], by_group.loc["all"]
    above_verifier = cold_pairs[(cold_pairs["versus"] == "Verifier") & (cold_pairs["low"] > 0)]
    largest = above_verifier.loc[above_verifier.groupby("label", sort=False)["difference"].idxmax()]
    display(largest[["label", "alpha", "difference", "low", "high"]]
            .assign(alphas_above=largest["label"].map(above_verifier["label"].value_counts())).round(3))
    cold_rows = summary[(summary["temperature"] == coldest) & summary["label"].str.startswith("SpecCascade")]
    display(cold_rows.loc[cold_rows.groupby("label")["quality"].idxmax(),
                          ["label", "alpha", "quality", "latency"]].round(3))
    run = results_facts.get("run", {})
    same = results_facts["same_calls_T0"]
    glued = tl.lessons.notebook.glue_values(
        t5_run_examples=run.get("examples", len(tasks[0].examples)), t5_run_gammas=str(run.get("gammas", "")),
        t5_run_temperatures=str(run.get("temperatures", "")), t5_run_n_alpha=run.get("n_alpha", 0),
        t5_run_configurations=run.get("configurations", len(configs)), t5_run_rows=run.get("rows", len(rows)),
        t5_run_minutes=run.get("sweep_seconds", float("nan")) / 60,
        t5_run_finished=str(run.get("finished", "")),
        t5_run_beside=str(run.get("beside", "not recorded")),
        t5_machine_c=hardware.machine_c(calibration), t5_paper_c=hardware.PAPER_T5_C,
        t5_paper_c_source=hardware.PAPER_T5_SOURCE, t5_grid_resamples=results_facts["grid_resamples"],
        t5_c=results_facts["c"], t5_drafter_ms=results_facts["drafter_step_ms"],
        t5_verifier_ms=results_facts["verifier_step_ms"],
        t5_spec_latency_cold=results_facts["spec_relative_latency"][str(float(coldest))],
        t5_spec_latency_warm=results_facts["spec_relative_latency"][str(float(warmest))],
        t5_extra_low=results_facts.get("speculative_extra_latency_T0", [float("nan")] * 2)[0],
        t5_extra_high=results_facts.get("speculative_extra_latency_T0", [float("nan")] * 2)[1],
        t5_same_configs=same["configurations"], t5_same_groups=same["groups"],
        t5_same_largest=same["largest"],
        t5_verifier_bleu=cold_summary.loc["Verifier", "quality"],
        t5_verifier_bleu_low=cold_summary.loc["Verifier", "quality_low"],
        t5_verifier_bleu_high=cold_summary.loc["Verifier", "quality_high"],
        t5_drafter_bleu=cold_summary.loc["Drafter", "quality"],
        t5_drafter_bleu_low=cold_summary.loc["Drafter", "quality_low"],
        t5_drafter_bleu_high=cold_summary.loc["Drafter", "quality_high"],
        t5_sentences=int(cold_summary.loc["Verifier", "n"]), t5_pairs_cold=int(cold_counts["pairs"]),
        t5_self_cold=int(cold_counts["self_comparisons"]),
        t5_identical_cold=int(cold_counts["identical_texts"]),
        t5_compared_cold=int(cold_counts["compared"]), t5_separated_cold=int(cold_counts["exclude_0"]),
        t5_above_cold=int(cold_counts["above"]), t5_below_cold=int(cold_counts["below"]),
        t5_by_chance_cold=float(cold_counts["expected_by_chance"]),
        t5_compared_all=int(all_counts["compared"]),
        t5_separated_all=int(all_counts["exclude_0"]), t5_above_all=int(all_counts["above"]),
        t5_below_all=int(all_counts["below"]), t5_by_chance_all=float(all_counts["expected_by_chance"]))

# %% [markdown]
# **Latency.** The methods that reach the verifier's quality at a lower modelled latency at the coldest
# temperature, with the same on the accelerator pricing, the best quality within the verifier's latency, and
# the change of latency at the verifier's quality at the warmest temperature (negative: faster). The first
# of them, {eval}`glued["t5_fastest"]`, reaches the verifier's quality at
# {eval}`glued["t5_fastest_reduction:.1%"]` lower modelled latency [{eval}`glued["t5_fastest_low:.1%"]`,
# {eval}`glued["t5_fastest_high:.1%"]`] (an interval that includes 0 is not resolved at this sample size),
# {eval}`glued["t5_fastest_accelerator:.1%"]` on the accelerator pricing; at the warmest temperature it
# changes the latency by {eval}`glued["t5_fastest_warm:+.1%"]` at the verifier's quality. Every speculative
# method is slower than the verifier at the verifier's quality, or never reaches it (the range is in the
# paragraph above): the T5 run separates the rules on quality, not on speed.

# %%
faster = None
if results is not None:
    reduction = {}   # per (pricing, temperature): each method's reduction at the verifier's quality
    for name, frame in (("cpu", table), ("accelerator", table_accelerator)):
        for temperature in (coldest, warmest):
            part = frame[(frame["temperature"] == temperature)
                         & (frame["gamma"] == main_gamma)].set_index("method")
            reduction[name, temperature] = pd.to_numeric(part["reduction_at_verifier_quality"],
                                                         errors="coerce")
    cold_table = table[(table["temperature"] == coldest) & (table["gamma"] == main_gamma)].set_index("method")
    faster = cold_table.loc[reduction["cpu", coldest] > 0, [
        "reduction_at_verifier_quality", "reduction_low", "reduction_high",
        "best_quality_within_verifier_cost", "best_quality_low", "best_quality_high",
    ]].apply(pd.to_numeric, errors="coerce")
    faster["accelerator_reduction"] = reduction["accelerator", coldest].reindex(faster.index)
    faster["warm_latency_change"] = -reduction["cpu", warmest].reindex(faster.index)
    faster = faster.sort_values("reduction_at_verifier_quality", ascending=False)
    display(faster.round(3))
    first = faster.iloc[0] if len(faster) else pd.Series(dtype=float)
    glued = tl.lessons.notebook.glue_values(
        t5_fastest=faster.index[0] if len(faster) else "no method",
        t5_fastest_reduction=first.get("reduction_at_verifier_quality", float("nan")),
        t5_fastest_low=first.get("reduction_low", float("nan")),
        t5_fastest_high=first.get("reduction_high", float("nan")),
        t5_fastest_accelerator=first.get("accelerator_reduction", float("nan")),
        t5_fastest_warm=first.get("warm_latency_change", float("nan")))

# %% [markdown]
# **Distinct runs at $T = 0$.** Per rule, its configurations (alphas, ends included) and how many of them
# are runs of its own (texts unlike SpecDecode's, the drafter's and each other's on some sentence). Not run at
# $T = 0$: {eval}`glued["t5_not_run_cold"]`; there they are SpecDecode for every alpha below 1 (exact, the
# verifier's greedy text). OPT emits exactly Diff's texts at {eval}`glued["t5_opt_same_as_diff"]` of the
# {eval}`glued["t5_opt_shared"]` alphas they share, Token-V1 at {eval}`glued["t5_v1_same_as_diff"]` of
# {eval}`glued["t5_v1_shared"]`: at $T = 0$ both reduce to Diff's test on the drafted top token. The claims
# drop runs that are not a rule's own (`tl.stats.claims.own_configurations`).

# %%
if results_facts is not None:
    display(pd.DataFrame({"configurations": results_facts["configurations_T0"],
                          "distinct runs": results_facts["distinct_runs_T0"]}))
    opt_as_diff = results_facts["same_as_diff_T0"].get("SpecCascade [OPT]", {"same": 0, "shared_alphas": 0})
    v1_as_diff = results_facts["same_as_diff_T0"].get("SpecCascade [Token-V1]",
                                                      {"same": 0, "shared_alphas": 0})
    glued = tl.lessons.notebook.glue_values(
        t5_not_run_cold=", ".join(results_facts.get("not_run_T0", [])) or "none",
        t5_opt_same_as_diff=opt_as_diff["same"], t5_opt_shared=opt_as_diff["shared_alphas"],
        t5_v1_same_as_diff=v1_as_diff["same"], t5_v1_shared=v1_as_diff["shared_alphas"])

# %% [markdown]
# ## Exercises
#
# The first three are checked by the cell under them (right or wrong, with a hint; the answer is not
# printed); the last two are for discussion.
#
# 1. In the first table, which method reaches the verifier's quality at the largest latency
#    reduction at the coldest temperature (the main $\gamma$)? Store its name (as in the table's
#    `method` column) in `answer_1`.
# 2. **Reading a claim's interval.** The first row of the claims table measures a difference that is
#    positive when the claim holds, with a 95% interval `[low, high]`. From `low` and `high` alone
#    (not the `verdict` column), what does the interval say: `"holds"`, `"does not hold"` or
#    `"not resolved"`? Store the words in `answer_2`.
# 3. **Where a curve crosses the verifier.** Pick a speculative cascade of the first table at the
#    coldest temperature. At which latency (relative to the verifier alone) does its curve first reach
#    the verifier's quality? Read it off the figure, then get it exactly from the table. Store the pair
#    `(method, latency)` in `answer_3`, or `(method, "not reached")`.
# 4. Rerun with `temperatures = [1.0]` and `gammas = [3, 7]`: the finished rows are reused, only the
#    new $\gamma$ values run (and the calibration is measured again for the larger blocks). Does a
#    longer block help the speculative cascades here, on either pricing?
# 5. At $T = 0$, compare the OPT and Diff rows of the paired-differences table at $\alpha = -1$ and
#    $\alpha = 1$, the values both grids share. Why are they identical? Would they stay identical at
#    $T = 1$?
#
# **Solutions:** [notebook 06's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-06-06_t5_evaluation), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # e.g. "SpecCascade [Token-V2]"
answer_2 = None  # "holds", "does not hold" or "not resolved"
answer_3 = None  # e.g. ("SpecCascade [OPT]", your latency)

# %%
coldest = min(settings["temperatures"])
tl.lessons.notebook.check("06-1", answer_1, table=table, temperature=coldest, gamma=main_gamma)
tl.lessons.notebook.check("06-2", answer_2, claims_table=claims_table)
tl.lessons.notebook.check("06-3", answer_3, table=table, temperature=coldest, gamma=main_gamma)

# %%
metrics = {
    "profile": settings["profile"], "n_rows": len(rows), "n_configs": len(configs),
    "sweep_path": sweep_path, "sweep_seconds": sweep_seconds, "load_seconds": load_seconds,
    "figures": figures, "latency_column": cost, "pricings": [PRICING_NAMES[c] for c in summaries],
    "model_error": None if model_error is None else model_error.to_dict(orient="records"),
    "verifier_quality": analysis.qualities(summary, "verifier"),
    "drafter_quality": analysis.qualities(summary, "drafter"),
    "labels": sorted(summary["label"].unique()),
    "where_each_wins": None if wins is None else wins.to_dict(),
    "table": table.to_dict(orient="records"),
    "table_accelerator": None if table_accelerator is None else table_accelerator.to_dict(orient="records"),
    "paired_differences": differences.to_dict(orient="records"),
    "claims": claims_table.to_dict(orient="records"),
}
tl.lessons.notebook.save_metrics("06_t5_evaluation", metrics, output_dir)

# %% [markdown]
# **Read next:** [07 the Gemma-style rerun](07_gemma_evaluation.ipynb): the same rules on real language-model answers, with rejection rate as the cost.
