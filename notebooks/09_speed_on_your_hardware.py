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
# # When does speculation pay? Measuring your own hardware
#
# > **Widgets need a running kernel.** The sliders at the end are drawn by the kernel that runs this
# > notebook. They also leave a static picture of their figure at the last setting, so a reopened copy
# > shows it with a one-line hint; run the cell again (*Run > Run All Cells*) to move them again.
#
# **Learning goals.** After this notebook you can
# 1. measure what a drafter step ($t_q$) and a verifier call scoring $k$ tokens ($t_p(k)$) cost on the
#    machine in front of you, and say whether it is in the "blocks are cheap" regime of an accelerator
#    or the "blocks cost several steps" regime of a CPU;
# 2. predict the speed-up of speculative decoding at any block size $\gamma$ from these costs and the
#    acceptance rate $a$ (the block-cost model), and check the prediction against measured runs;
# 3. explain why the textbook speed-up $\frac{1 - a^{\gamma+1}}{(1 - a)(\gamma c + 1)}$ (Leviathan et
#    al.) can promise 1.5x where the clock shows a slow-down, and what `gamma="auto"` does about it.
#
# **The model.** A block drafts $\gamma$ tokens ($\gamma$ drafter steps) and scores them with one verifier
# call over $\gamma + 1$ tokens. If each draft is kept with probability $a$, a block emits
# $\mathbb{E}[N_\gamma] = (1 - a^{\gamma+1}) / (1 - a)$ tokens, so a token costs
#
# $$\tau(\gamma) = \bigl(\gamma\, t_q + t_p(\gamma + 1)\bigr)\,\frac{1 - a}{1 - a^{\gamma + 1}},
#   \qquad \tau(0) = t_p(1) \text{ (the verifier alone)},$$
#
# and the predicted speed-up is $S(\gamma) = t_p(1) / \tau(\gamma)$. The textbook formula is the special case
# $t_p(k) = t_p(1)$: on an accelerator, scoring a few tokens costs about as much as scoring one (the time
# goes into reading the weights); on a CPU the arithmetic grows with $k$. `tl.latency` implements it,
# `tl.calibration` measures the costs.
#
# **Profiles.** `default`: SmolLM2-135M verifying a perturbed copy of itself (noise on the weights): runs
# anywhere in a few minutes; the drafter costs as much as the verifier ($c \approx 1$), so speculation can
# only lose time here, and the sliders show what a cheaper drafter would change. `qwen`: Qwen2.5-Coder
# 0.5B drafting for 1.5B (`make models-qwen` first; about 10 minutes on a CPU). `hub`: a hub pair on a
# GPU. `smoke`: two tiny random models, for CI.
#
# **Threads.** A laptop is rarely idle. Beside another busy process, as many torch threads as there are
# cores wait for one another and the timings come out slower and noisier than with fewer threads, so this
# notebook times with the cores other processes leave free (`tl.speed_runs.use_free_cores`,
# measured over half a second when it starts; `threads` overrides it) and prints how many it took. The
# calibration is stored per thread count.

# %% tags=["parameters"]
profile = "default"        # "default" (SmolLM2), "qwen", "hub" (GPU) or "smoke" (CI)
device = None              # None: a GPU if there is one, else the profile's device
dtype = None               # None: the profile's dtype ("float32" on a CPU, "bfloat16" for "hub")
gammas = None              # block sizes to run, e.g. [1, 3, 5]; None: the profile's
n_prompts = None           # how many of the four chat prompts; None: the profile's
max_new_tokens = None      # tokens per run; None: the profile's
repeats = None             # rounds over prompts and methods (interleaved); None: the profile's
threads = None             # torch threads; None: the cores other processes leave free (tl.speed_runs.use_free_cores)
full_calibration = False   # True: the finer calibration of tl.calibrate (minutes) instead of the quick one of gamma "auto"
output_dir = "."           # where the metrics JSON and the calibration are written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.notebook.check_parameters(globals(), {
    "profile": "str",
    "device": "str|None",
    "dtype": "str|None",
    "gammas": "list[int]|None",
    "n_prompts": "int>=1|None",
    "max_new_tokens": "int>=1|None",
    "repeats": "int>=1|None",
    "threads": "int>=1|None",
    "full_calibration": "bool",
    "output_dir": "str"
})

# %%
import json
from pathlib import Path

import ipywidgets as widgets
from IPython.display import display
import pandas as pd
import torch

import tutorial_lib as tl
from tutorial_lib import speed_runs
from tutorial_lib.decoding.engine import calibrate
from tutorial_lib.decoding.gamma_policy import AutoGamma
from tutorial_lib.views import speed as speed_view
from tutorial_lib.views.widgets import live_view

threads_used = speed_runs.use_free_cores(threads)   # beside a busy process, fewer threads run faster and steadier
if device is None:
    device = "cuda" if torch.cuda.is_available() else None
settings = speed_runs.speed_profile(profile, device=device, dtype=dtype, gammas=gammas, n_prompts=n_prompts,
                                       max_new_tokens=max_new_tokens, repeats=repeats)
if settings["device"] == "cuda" and not torch.cuda.is_available():
    raise RuntimeError(f"profile {profile!r} runs on a GPU and none is visible; choose profile='default' or 'qwen'.")
pair = speed_runs.load_speed_pair(settings)
drafter, verifier = pair
prompts = speed_runs.speed_prompts(verifier, settings["n_prompts"])
metrics = {"settings": settings, "threads": threads_used}
print(f"{drafter.name} drafting for {verifier.name} on {verifier.device} ({verifier.dtype}), "
      f"{threads_used} torch thread{'s' if threads_used != 1 else ''} ({'as asked' if threads else 'the cores other processes left free'}); {len(prompts)} prompts of {[len(p) for p in prompts.values()]} tokens")

# %% [markdown]
# ## 1. What does each call cost here? The calibration `gamma="auto"` starts from
# The first time `gamma="auto"` meets a pair it measures a **quick calibration** (one drafter step; one
# verifier call scoring $k = 1..6$ tokens; a fresh prompt's prefill; each on top of the same cached
# context, twice, in a shuffled order: seconds) and stores it in the cache, keyed by the two models, their
# dtypes, the device and the thread count, so the next process starts from it at once
# (`tl.gamma_policy.calibration_for`). It is only a starting point: while it decodes, `gamma="auto"`
# times every block it runs and corrects these costs (section 4). The column `vs_t_p(1)` is each time
# relative to scoring one token. (`full_calibration = True` measures the longer, finer calibration of
# `tl.calibrate` instead: more rounds, larger $k$, the engine's own overheads.)

# %%
if full_calibration:
    calibration = calibrate(pair, max_k=settings["max_k"], repeats=settings["calibration_repeats"],
                            context_tokens=settings["context_tokens"])
else:
    calibration = tl.gamma_policy.calibration_for(drafter, verifier)
calibration.save(tl.notebook.output_folder(output_dir) / "09_calibration.json")  # beside the metrics, never notebooks/
table = calibration.table()
metrics["calibration"] = {"t_q": calibration.t_q(), "t_p": {k: calibration.t_p(k) for k in range(1, calibration.max_k + 1)},
                          "cost_ratio": calibration.cost_ratio, "overhead_s": calibration.overhead_s,
                          "kind": "full" if full_calibration else "quick (gamma='auto')"}
table

# %% [markdown]
# ## 2. Run the engine at a few $\gamma$, and with `gamma="auto"`
# Every method runs on every prompt, in a shuffled order per prompt and round; each run's time is
# divided by the verifier-only time of the same prompt and round (greedy, $T = 0$: speculative decoding
# must give the verifier's own tokens, `same_tokens` counts the runs that did).

# %%
policy = AutoGamma(calibration)
methods = {"verifier": speed_runs.engine_method(pair, 0, eos_token_id=())}
methods.update({f"gamma={g}": speed_runs.engine_method(pair, g, eos_token_id=()) for g in settings["gammas"]})
methods["gamma=auto"] = speed_runs.engine_method(pair, policy, eos_token_id=())
rows = speed_runs.measure_speed(methods, prompts, max_new_tokens=settings["max_new_tokens"],
                                   repeats=settings["repeats"])
summary = speed_runs.summarise_speed(rows, calibration)
fixed = summary[summary["gamma"].notna() & (summary["gamma"] > 0)]
acceptance = float((rows.loc[rows["method"].isin(fixed["method"]), "n_accepted"].sum()) /
                   (rows.loc[rows["method"].isin(fixed["method"]), ["n_accepted", "n_rejected"]].sum().sum()))
auto_runs = rows[rows["method"] == "gamma=auto"]
auto_gammas = [g for gs in auto_runs["gammas"] for g in gs]
auto_row = summary.set_index("method").loc["gamma=auto"]
print(f"acceptance a = {acceptance:.3f} (accepted / judged drafts, every fixed gamma pooled)")
summary.round(3)

# %% [markdown]
# ## 3. Predicted against measured
# Left: the verifier's cost of scoring $k$ tokens, relative to one (the textbook assumes the dashed line).
# Right: the speed-up the block-cost model predicts at the measured $a$ on this machine, the textbook curve
# for the same $a$ and $c$, and the measured points (the median over prompts and rounds). **What to look
# at.** Where the measured $t_p(k)/t_p(1)$ climbs, the two curves part; the measured points should sit on
# the block-cost curve, not the textbook one. `gamma="auto"` sits at the mean block size it chose.

# %%
measured = {int(r.gamma): float(r.speedup) for r in fixed.itertuples()}
auto_point = (sum(auto_gammas) / max(len(auto_gammas), 1), float(auto_row["speedup"]))
speed_view.block_cost_view(calibration, acceptance, measured=measured, auto=auto_point)

# %%
tl.views.widgets.save(speed_view.block_cost_figure(calibration, acceptance, measured=measured, auto=auto_point),
                      "speed_block_cost")
metrics["acceptance"] = acceptance
metrics["predicted_speedup"] = {g: calibration.speedup(g, acceptance) for g in range(calibration.max_k)}
metrics["textbook_speedup"] = {g: calibration.textbook().speedup(g, acceptance) for g in range(calibration.max_k)}
metrics["measured"] = summary.to_dict(orient="records")
metrics["n_runs"] = len(rows)

# %% [markdown]
# ## 4. What `gamma="auto"` decided, and what it measured while it decoded
# Before each block, `gamma="auto"` asks the block-cost model which $\gamma$ is fastest at an optimistic
# reading of its estimate of $a$ (a prior of 0.7 worth 4 drafts, then the counts): 0 means one plain
# verifier step. It does not trust the calibration blindly: the engine times every block, and the policy
# keeps, per block size, the seconds it measured; its estimate of a block's cost moves from the
# calibration's towards the measured mean as blocks are timed, and a block size it never ran is scaled by
# how much slower or faster this run is than the calibration said. It drafts before it settles on plain
# steps, and while it takes plain steps it runs one block now and then (after 8, 16, 32, ... plain steps)
# to measure again. It stays exact whatever it picks: every block still follows Algorithm 4, and at
# $T = 0$ the text is the verifier's own.
#
# The table is what the policy knew at the end of its last run: per block size, the calibration's
# seconds, the blocks it timed, their mean, and the estimate it decided with.

# %%
decisions = pd.Series(auto_gammas).value_counts().sort_index()
learned = pd.DataFrame(auto_runs.iloc[-1]["auto_costs"]).set_index("gamma")
print("blocks per chosen gamma:", decisions.to_dict())
print(f"the model's best gamma at the measured a = {acceptance:.2f}: {calibration.best_gamma(acceptance)}; "
      f"gamma='auto' ran at {auto_row['speedup']:.2f}x the verifier alone "
      f"(best fixed gamma: {fixed['speedup'].max():.2f}x), same tokens as the verifier in "
      f"{int(auto_row['same_tokens'])} of {int(auto_row['n_runs'])} runs")
display(learned.round(4))
metrics["auto"] = {"gammas": decisions.to_dict(), "speedup": float(auto_row["speedup"]),
                   "same_tokens": int(auto_row["same_tokens"]), "n_runs": int(auto_row["n_runs"]),
                   "best_gamma_at_measured_a": calibration.best_gamma(acceptance),
                   "best_fixed_speedup": float(fixed["speedup"].max()),
                   "learned_costs": learned.reset_index().to_dict(orient="records")}

# %% [markdown]
# ## 5. Where does speculation start to pay?
# Keep this machine's verifier costs and move the acceptance $a$ and the drafter's cost $c = t_q / t_p(1)$.
# Left: the predicted speed-up against $\gamma$, here and in the textbook. Right: the acceptance above which
# some block size beats the verifier alone, against $c$: speculation pays above the line. **Try** $c$ near 0
# (a much smaller drafter): how high must $a$ be on this machine, and in the textbook?

# %%
acceptance_slider = widgets.FloatSlider(value=round(min(max(acceptance, 0.0), 0.99), 2), min=0.0, max=0.99,
                                        step=0.01, description="acceptance a")
cost_slider = widgets.FloatSlider(value=round(min(calibration.cost_ratio, 1.0), 2), min=0.0, max=1.0, step=0.01,
                                  description="cost ratio c")
live_view(speed_view.what_if_view, {"acceptance": acceptance_slider, "cost_ratio": cost_slider},
          describe=speed_view.describe_what_if, calibration=calibration)

# %%
what_if = tl.speed_runs.what_if(0.8, 0.1, calibration)
tl.views.widgets.save(speed_view.what_if_figure(0.8, 0.1, calibration), "speed_what_if")
print(speed_view.describe_what_if(what_if))
metrics["what_if_a0.8_c0.1"] = {k: what_if[k] for k in ("best_gamma_here", "best_speedup_here", "best_gamma_textbook",
                                                       "best_speedup_textbook")}

# %% [markdown]
# ## 6. Batches: where speculation stops paying
# Decoding $B$ prompts together (`tl.generate_batch`), each call of a model serves every row, so the costs
# above become those of one call on $B$ rows, $t_q(B)$ and $t_p(k, B)$. Each row still keeps its own drafts
# (a block emits $\mathbb{E}[N_\gamma]$ tokens per row), so the batch decodes
#
# $$R_B(\gamma) = \frac{B\,\mathbb{E}[N_\gamma]}{\gamma\, t_q(B) + t_p(\gamma + 1, B)}, \qquad
#   R_B(0) = \frac{B}{t_p(1, B)}$$
#
# tokens per second (`tl.latency.batch_tokens_per_second`). Scoring $\gamma + 1$ tokens per row multiplies
# the verifier's arithmetic by about $\gamma + 1$; a small batch leaves that arithmetic idle (the call reads
# the weights either way), a large one does not, and speculation's advantage shrinks as $B$ grows.
# `benchmarks/batch_speed.py` measures it, beside the model's prediction from calls timed on $B$ rows, and
# commits its numbers in `data/benchmarks/batch_speed_<profile>_cpu.json`: below, the Qwen pair's where they
# are there, else the `default` profile's (run the script to measure your machine), and at which batch sizes
# each $\gamma$ still beats the verifier alone, measured and by the model
# (`tl.decoding.speed_text.where_speculation_pays`).

# %%
batch_files = [tl.paths.DATA_DIR / "benchmarks" / f"batch_speed_{name}_cpu.json" for name in ("qwen", "default")]
batch_file = next((path for path in batch_files if path.exists()), batch_files[0])
if batch_file.exists():
    batch_speed = json.loads(batch_file.read_text())
    batch_runs = pd.DataFrame(batch_speed["runs"])
    tl.views.widgets.save(speed_view.batch_speed_figure(
        batch_runs, f"{batch_speed['drafter']} -> {batch_speed['verifier']}: measured against the block-cost model"),
        "speed_batch_sizes")
    batch_table = tl.decoding.speed_text.by_batch_and_gamma(batch_runs).round(3)
    display(batch_table)
    pays = tl.decoding.speed_text.where_speculation_pays(batch_runs)
    for row in pays.itertuples():
        print(f"gamma = {row.gamma} beats the verifier alone at B = {row.measured or 'none'} (medians over rounds), "
              f"in every round at B = {row.every_round or 'none'}; the block-cost model says B = {row.predicted or 'none'}")
    metrics["batch_speed"] = {"pair": f"{batch_speed['drafter']} -> {batch_speed['verifier']}",
                              "table": batch_table.to_dict(orient="records"),
                              "pays_at": pays.to_dict(orient="records")}
else:
    print(f"no {batch_file.name}: run benchmarks/batch_speed.py to measure it.")

# %% [markdown]
# ## Record the numbers

# %%
tl.notebook.save_metrics("09_speed_on_your_hardware", metrics, output_dir)

# %% [markdown]
# ## Exercises
# 1. From the calibration alone (`calibration.t_q()`, `calibration.t_p(k)`), compute the predicted speed-up of
#    $\gamma = 3$ at the measured acceptance and store it in `answer_1`.
# 2. How many tokens must one block of $\gamma = 3$ emit on average to be exactly as fast as the verifier
#    alone on this machine? Store it in `answer_2`. Compare it with $\gamma + 1 = 4$: can it ever pay here?
# 3. Which $\gamma$ does the block-cost model pick on this machine at $a = 0.95$ (at most `calibration.max_k - 1`)?
#    Store it in `answer_3`, then try the textbook twin `calibration.textbook()`.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.notebook.check("09-1", answer_1, calibration=calibration, acceptance=acceptance)
tl.notebook.check("09-2", answer_2, calibration=calibration)
tl.notebook.check("09-3", answer_3, calibration=calibration)

# %% [markdown]
# **Read next:** that is the end of the path. The README's *For teachers* section lists the notebooks, their times and suggested paths; [05](05_lemma4_spec_cascades.ipynb) and [08](08_real_pair_token_analysis.ipynb) are the ones to revisit with this machine's costs in mind.
