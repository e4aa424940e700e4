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
# # When does speculation pay? Measuring your own hardware
#
# > **Widgets need a running kernel.** The sliders at the end are drawn by the kernel that runs this
# > notebook. They also leave a static picture of their figure at the last setting, so a reopened copy
# > shows it with a one-line hint; run the cell again (*Run > Run All Cells*) to move them again.
#
# **Learning goals.** After this notebook you can
# 1. say what bounds a decoder's call on your machine: the bytes of weights it reads (over the memory's read
#    bandwidth $B$) or the arithmetic it does (over the processor's peak FLOP/s), and where a block of $k$
#    tokens crosses from one to the other (the roofline's ridge);
# 2. tell a kernel that falls short of that bound from the physics, and choose the kernel path that reaches it
#    (`tl.models.kernel_paths`);
# 3. predict the speed-up of speculative decoding at any block size $\gamma$ from the measured costs and the
#    acceptance rate $a$ (the block-cost model), check it against measured runs, and see what `gamma="auto"` does.
#
# **The physics.** A decoder with $N$ parameters stored in $b$ bytes each reads $W = N b$ bytes of weights on
# every call and does $2 N k$ floating-point operations for $k$ new tokens (one multiply-add per parameter
# and token). Reading takes at least $W / B$; the arithmetic at least $2 N k / F$ at peak $F$. A call costs
# at least the larger:
#
# $$t_p(k) \ \ge\ \max\Bigl(\frac{W}{B},\ \frac{2 N k}{F}\Bigr), \qquad
#   k^* = \frac{F\, b}{2 B} \text{ rows at the ridge.}$$
#
# A processor core streams a few GB/s and computes tens of GFLOP/s, so $k^*$ is around ten rows on a CPU as on
# a GPU: **a block of a few drafted tokens is memory-bound and should cost what one token costs**, which is the
# textbook's assumption, on a laptop too. Where a measured block costs more, it is the kernel: a matrix
# product tuned for large batches, computing few rows with a schedule that reads the weights more than once.
#
# **The model.** A block drafts $\gamma$ tokens ($\gamma$ drafter steps) and scores them with one verifier
# call over $\gamma + 1$ tokens. If each draft is kept with probability $a$, a block emits
# $\mathbb{E}[N_\gamma] = (1 - a^{\gamma+1}) / (1 - a)$ tokens, so a token costs
#
# $$\tau(\gamma) = \bigl(\gamma\, t_q + t_p(\gamma + 1)\bigr)\,\frac{1 - a}{1 - a^{\gamma + 1}},
#   \qquad \tau(0) = t_p(1) \text{ (the verifier alone)},$$
#
# and the predicted speed-up is $S(\gamma) = t_p(1) / \tau(\gamma)$. The textbook formula
# $\frac{1 - a^{\gamma+1}}{(1 - a)(\gamma c + 1)}$ (Leviathan et al.) is the special case $t_p(k) = t_p(1)$:
# the memory-bound block. `tl.maths.latency` implements it, `tl.decoding.calibration` measures the costs.
#
# **Profiles.** `default`: SmolLM2-135M verifying a perturbed copy of itself (noise on the weights) as an int8
# drafter: runs anywhere in about a minute. `qwen`: Qwen2.5-Coder 0.5B drafting for 1.5B (`make models-qwen`
# first; about 10 minutes on a CPU). `hub`: a hub pair on a GPU. `smoke`: two tiny random models, for CI.
#
# **Threads.** A laptop is rarely idle. Beside another busy process, as many torch threads as there are
# cores wait for one another and the timings come out slower and noisier than with fewer threads, so this
# notebook times with the cores other processes leave free (`tl.decoding.speed_runs.use_free_cores`,
# measured over half a second when it starts; `threads` overrides it) and prints how many it took. The
# calibration is stored per thread count.

# %% tags=["parameters"]
profile = "default"        # "default" (SmolLM2), "qwen", "hub" (GPU) or "smoke" (CI)
device = None              # None: a GPU if there is one, else the profile's device
dtype = None               # None: the profile's dtype ("float32" on a CPU, "bfloat16" for "hub")
verifier_path = "auto"     # the verifier's kernel path: "auto" (the probe's choice), "fp32",
                           # "fp32-packed", ...; None: as loaded
drafter_path = "auto"      # the drafter's kernel path: "auto" (the one whose generation costs least
                           # here, as load_pair(..., dtype="auto") chooses), "int8-dynamic", "bf16", ...;
                           # None: as loaded
gammas = None              # block sizes to run, e.g. [1, 3, 5]; None: the profile's
n_prompts = None           # how many of the four chat prompts; None: the profile's
max_new_tokens = None      # tokens per run; None: the profile's
repeats = None             # rounds over prompts and methods (interleaved); None: the profile's
threads = None             # torch threads; None: the cores other processes leave free
                           # (tl.decoding.speed_runs.use_free_cores)
full_calibration = False   # True: the finer calibration of tl.calibrate (minutes) instead of the quick one
                           # of gamma "auto"
output_dir = "."           # where the metrics JSON and the calibration are written

# %%
# The parameters, checked before anything runs. papermill's `-p` passes every value as text: it is read
# as a literal where that gives the right kind, else refused with the `-y` form to use.
import tutorial_lib as tl

checked_parameters = tl.lessons.parameters.check_parameters(globals(), {
    "profile": "str",
    "device": "str|None",
    "dtype": "str|None",
    "verifier_path": "str|None",
    "drafter_path": "str|None",
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

import ipywidgets as widgets
from IPython.display import display
import pandas as pd
import torch

import tutorial_lib as tl
import tutorial_lib.paths
from tutorial_lib.decoding import speed_runs, speed_tables
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.engine import calibrate
from tutorial_lib.decoding.gamma_policy import AutoGamma, calibration_for
from tutorial_lib.models import kernel_paths
from tutorial_lib.views import speed as speed_view
from tutorial_lib.views import widgets as view_widgets
from tutorial_lib.views.widgets import live_view

# beside a busy process, fewer threads run faster and steadier
threads_used = speed_runs.use_free_cores(threads)
if device is None:
    device = "cuda" if torch.cuda.is_available() else None
settings = speed_runs.speed_profile(profile, device=device, dtype=dtype, gammas=gammas, n_prompts=n_prompts,
                                    max_new_tokens=max_new_tokens, repeats=repeats)
if settings["device"] == "cuda" and not torch.cuda.is_available():
    raise RuntimeError(f"profile {profile!r} runs on a GPU and none is visible; "
                       "choose profile='default' or 'qwen'.")
on_cpu = settings["device"] == "cpu"
if on_cpu and drafter_path is not None:
    settings["kernel_paths"] = (drafter_path, None)   # the verifier's path is chosen in section 1
pair = speed_runs.load_speed_pair(settings)
drafter, verifier = pair
prompts = speed_runs.speed_prompts(verifier, settings["n_prompts"])
metrics = {"settings": settings, "threads": threads_used}
print(f"{drafter.name} drafting for {verifier.name} on {verifier.device} ({verifier.dtype}), "
      f"{threads_used} torch thread{'s' if threads_used != 1 else ''} "
      f"({'as asked' if threads else 'the cores other processes left free'}); "
      f"{len(prompts)} prompts of {[len(p) for p in prompts.values()]} tokens")

# %% [markdown]
# ## 1. Bytes against arithmetic: this machine's two floors
# Two numbers decide the physics: how fast this machine reads memory (a sum over 512 MiB of fp32, far more
# than any cache holds) and how fast it multiplies (a large fp32 matrix product, which uses each weight many
# times). Then every kernel path this machine offers (`kernel_paths.VERIFIER_PATHS`) computes the same
# copies of a sample of the verifier's linear layers (its first two decoder blocks and its output head) for
# calls of $k$ rows, interleaved in a shuffled order: the probe `load_pair(..., kernel_paths="auto")` makes
# before it chooses. The verifier is then put on the path this probe finds cheapest for the largest block
# (`verifier_path="auto"`), or on the one you named. **What to look at.** Left: the dashed floor is reading the weights, the dotted one their
# arithmetic; below the ridge a path that follows the dashed floor is at the limit. Right: $t(k)/t(1)$; a
# path whose line climbs well above 1 at small $k$ is a kernel artefact, not the physics.

# %%
if on_cpu:
    bandwidth = kernel_paths.measure_read_bandwidth(megabytes=512)
    peak = kernel_paths.measure_peak_flops()
    probe = kernel_paths.choose_path(
        kernel_paths.probe_paths(verifier.model, ks=(1, 2, 3, 4, 6, 8, 12, 16), rounds=3),
        gamma=max(settings["gammas"]))
    if verifier_path is not None:   # "auto": the path this probe found cheapest for the largest block
        kernel_paths.put_on_path(verifier, probe.chosen if verifier_path == "auto" else verifier_path,
                                 verbose=False)
    sample_bytes = probe.sample_bytes["fp32"]
    roofline = kernel_paths.roofline_seconds(sample_bytes, sample_bytes / 4, bandwidth, peak,
                                             sorted(probe.seconds["fp32"]))
    measured_paths = {path: costs for path, costs in probe.seconds.items()}
    title = (f"{verifier.name}'s sampled layers ({sample_bytes / 1e6:.0f} MB fp32): read bandwidth "
             f"{bandwidth / 1e9:.1f} GB/s, peak {peak / 1e9:.0f} GFLOP/s, "
             f"bf16 units: {'yes' if probe.bf16_units else 'no'}")
    display(speed_view.roofline_view(roofline, measured_paths, title, chosen=probe.chosen))
    view_widgets.save(speed_view.roofline_figure(roofline, measured_paths, title, chosen=probe.chosen),
                      "speed_roofline")
    probe_table = pd.DataFrame(probe.table()).set_index("path")
    probe_table["t(1) / bound"] = [probe.seconds[p][1] / (probe.sample_bytes[p] / bandwidth)
                                   for p in probe_table.index]
    display(probe_table.round(2))
    print(f"read bandwidth {bandwidth / 1e9:.1f} GB/s; peak {peak / 1e9:.0f} GFLOP/s; the ridge at "
          f"k* = {roofline['ridge_k']:.1f} rows; {probe.describe()}")
    metrics["physics"] = {"read_bandwidth": bandwidth, "peak_flops": peak, "ridge_k": roofline["ridge_k"],
                          "probe": probe.to_dict()}
else:
    print("on a GPU the kernels are the vendor's: see the calibration's vs_bound column below")

# %% [markdown]
# ## 2. What does each call cost here, on the chosen paths? The calibration `gamma="auto"` starts from
# The pair runs on the paths printed below: the verifier on the one section 1's probe found cheapest for its
# block (or the one you named), the drafter as `drafter_path` says: for `"auto"` the path whose whole
# generation (a prompt's prefill and one-row steps) measured cheapest on a sample of the drafter's layers
# (`tl.models.drafter_paths`; `int8-dynamic`, for one, quantises its linear layers to int8: a quarter of the
# bytes, so a quarter of the reading). A drafter's path may change the drafter's law; the drafter only
# proposes, and the verifier's law decides every token, so the output stays the verifier's. The first time `gamma="auto"`
# meets a pair it measures a **quick calibration** (one drafter step; one verifier call scoring $k = 1..6$
# tokens; a fresh prompt's prefill; each on top of the same cached context, twice, in a shuffled order:
# seconds) and stores it in the cache, keyed by the two models, their paths, the device and the thread
# count (`tl.decoding.gamma_policy.calibration_for`). It is only a starting point: while it decodes,
# `gamma="auto"` times every block and corrects these costs (section 5). `vs_t_p(1)` is each time relative
# to scoring one token; `vs_bound` relative to the call's floor, its model's bytes over the read bandwidth
# (near 1: at the limit). (`full_calibration = True` measures the finer calibration of `tl.calibrate`.)

# %%
if full_calibration:
    calibration = calibrate(pair, max_k=settings["max_k"], repeats=settings["calibration_repeats"],
                            context_tokens=settings["context_tokens"])
else:
    calibration = calibration_for(drafter, verifier)
# beside the metrics, never notebooks/
calibration.save(tl.lessons.notebook.output_folder(output_dir) / "09_calibration.json")
table = calibration.table()
print(f"kernel paths: {calibration.kernel_paths}; "
      f"t_p(1) = {calibration.t_p(1, with_overhead=False) * 1e3:.1f} ms "
      f"= {calibration.call_over_bound('verifier'):.2f} x its bound; "
      f"c = t_q / t_p(1) = {calibration.cost_ratio:.3f}")
metrics["calibration"] = {"t_q": calibration.t_q(),
                          "t_p": {k: calibration.t_p(k) for k in range(1, calibration.max_k + 1)},
                          "cost_ratio": calibration.cost_ratio, "overhead_s": calibration.overhead_s,
                          "kernel_paths": calibration.kernel_paths,
                          "verifier_over_bound": calibration.call_over_bound("verifier"),
                          "kind": "full" if full_calibration else "quick (gamma='auto')"}
tl.views.tables.page_table(table, keys=["kind", "k"], digits=5,
                           blank={"k": "one step", "vs_bound": "no bound for this kind of call"})

# %% [markdown]
# ## 3. Run the engine at a few $\gamma$, and with `gamma="auto"`
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
no_fixed_gamma = "no fixed gamma to model"
tl.views.tables.page_table(summary, keys=["method"], blank={
    "acceptance": "no drafts", "gamma": "chosen per block",
    **{column: no_fixed_gamma for column in ("expected_speedup", "measured_over_expected", "model_speedup",
                                             "textbook_speedup")}})

# %% [markdown]
# ## 4. Predicted against measured
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
view_widgets.save(speed_view.block_cost_figure(calibration, acceptance, measured=measured, auto=auto_point),
                      "speed_block_cost")
metrics["acceptance"] = acceptance
metrics["predicted_speedup"] = {g: calibration.speedup(g, acceptance) for g in range(calibration.max_k)}
metrics["textbook_speedup"] = {g: calibration.textbook().speedup(g, acceptance)
                               for g in range(calibration.max_k)}
metrics["measured"] = summary.to_dict(orient="records")
metrics["n_runs"] = len(rows)

# %% [markdown]
# ## 5. What `gamma="auto"` decided, and what it measured while it decoded
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
display(tl.views.tables.page_table(learned.reset_index(), keys=["gamma"], digits=4,
                                   blank={"measured_mean_s": "no block timed"}))
metrics["auto"] = {"gammas": decisions.to_dict(), "speedup": float(auto_row["speedup"]),
                   "same_tokens": int(auto_row["same_tokens"]), "n_runs": int(auto_row["n_runs"]),
                   "best_gamma_at_measured_a": calibration.best_gamma(acceptance),
                   "best_fixed_speedup": float(fixed["speedup"].max()),
                   "learned_costs": learned.reset_index().to_dict(orient="records")}

# %% [markdown]
# ## 6. Where does speculation start to pay?
# Keep this machine's verifier costs and move the acceptance $a$ and the drafter's cost $c = t_q / t_p(1)$.
# Left: the predicted speed-up against $\gamma$, here and in the textbook. Right: the acceptance above which
# some block size beats the verifier alone, against $c$: speculation pays above the line. **Try** $c$ near 0
# (a much smaller drafter): how high must $a$ be on this machine, and in the textbook?

# %%
acceptance_slider = widgets.FloatSlider(value=round(min(max(acceptance, 0.0), 0.99), 2), min=0.0, max=0.99,
                                        step=0.01, description="acceptance a")
cost_slider = widgets.FloatSlider(value=round(min(calibration.cost_ratio, 1.0), 2), min=0.0, max=1.0,
                                  step=0.01, description="cost ratio c")
live_view(speed_view.what_if_view, {"acceptance": acceptance_slider, "cost_ratio": cost_slider},
          describe=speed_view.describe_what_if, calibration=calibration)

# %%
what_if = speed_runs.what_if(0.8, 0.1, calibration)
view_widgets.save(speed_view.what_if_figure(0.8, 0.1, calibration), "speed_what_if")
print(speed_view.describe_what_if(what_if))
metrics["what_if_a0.8_c0.1"] = {k: what_if[k] for k in ("best_gamma_here", "best_speedup_here",
                                                       "best_gamma_textbook", "best_speedup_textbook")}

# %% [markdown]
# ## 7. Batches: where speculation stops paying
# Decoding $B$ prompts together (`tl.decoding.batch.generate_batch`), each call of a model serves every row, so the costs
# above become those of one call on $B$ rows, $t_q(B)$ and $t_p(k, B)$. Each row still keeps its own drafts
# (a block emits $\mathbb{E}[N_\gamma]$ tokens per row), so the batch decodes
#
# $$R_B(\gamma) = \frac{B\,\mathbb{E}[N_\gamma]}{\gamma\, t_q(B) + t_p(\gamma + 1, B)}, \qquad
#   R_B(0) = \frac{B}{t_p(1, B)}$$
#
# tokens per second (`tl.maths.latency.batch_tokens_per_second`). Scoring $\gamma + 1$ tokens per row multiplies
# the verifier's arithmetic by about $\gamma + 1$; a small batch leaves that arithmetic idle (the call reads
# the weights either way), a large one does not, and speculation's advantage shrinks as $B$ grows.
# `benchmarks/batch_speed.py` measures it, beside the model's prediction from calls timed on $B$ rows, and
# commits its numbers in `data/benchmarks/batch_speed_<profile>_cpu.json`: below, the Qwen pair's where they
# are there, else the `default` profile's (run the script to measure your machine), and at which batch sizes
# each $\gamma$ still beats the verifier alone, measured and by the model
# (`speed_tables.where_speculation_pays`).

# %%
batch_files = [tutorial_lib.paths.DATA_DIR / "benchmarks" / f"batch_speed_{name}_cpu.json"
               for name in ("qwen", "default")]
batch_file = next((path for path in batch_files if path.exists()), batch_files[0])
if batch_file.exists():
    batch_speed = json.loads(batch_file.read_text())
    batch_runs = pd.DataFrame(batch_speed["runs"])
    view_widgets.save(speed_view.batch_speed_figure(
        batch_runs,
        f"{batch_speed['drafter']} -> {batch_speed['verifier']}: measured against the block-cost model"),
        "speed_batch_sizes")
    batch_table = speed_tables.by_batch_and_gamma(batch_runs).round(3)
    display(tl.views.tables.page_table(batch_table, keys=["batch_size", "gamma"],
                                       blank={"acceptance": "no drafts (gamma 0)"}))
    pays = speed_tables.where_speculation_pays(batch_runs)
    for row in pays.itertuples():
        print(f"gamma = {row.gamma} beats the verifier alone at B = {row.measured or 'none'} "
              f"(medians over rounds), in every round at B = {row.every_round or 'none'}; "
              f"the block-cost model says B = {row.predicted or 'none'}")
    metrics["batch_speed"] = {"pair": f"{batch_speed['drafter']} -> {batch_speed['verifier']}",
                              "table": batch_table.to_dict(orient="records"),
                              "pays_at": pays.to_dict(orient="records")}
else:
    print(f"no {batch_file.name}: run benchmarks/batch_speed.py to measure it.")

# %% [markdown]
# ## 8. The Qwen pair on this project's machine: the committed benchmark
# `benchmarks/engine_speed.py` runs the Qwen pair (0.5B drafting for 1.5B) on the paths this machine measures
# fastest, interleaved and repeated, against transformers' greedy and assisted generation on the same weights
# and paths, and against transformers' greedy on the verifier as `from_pretrained` loads it (what a user runs
# first). Which path wins depends on the processor's class (`tl.models.processor_class`: AVX2 only, AVX-512
# without bf16 units, AMX with them), so `data/benchmarks/` keeps one run per class,
# `engine_speed_cpu_<class>.json` (`_busy`: beside a heavy job; `_capped`: a wider processor with torch's
# kernels held to that class, `tl.models.processor_class.isa_cap`). The first table lists the committed runs
# with this machine's class, detected now, marked (`speed_tables.processor_classes`); then each run: the methods
# (speed-ups over our verifier alone, medians [quartiles] over prompt and round), each aim of
# `tl.decoding.speed_tables.AIMS` with its verdict computed here from the numbers, and for each aim missed what
# stops it (`speed_tables.aim_limits`). `benchmarks/kernel_paths.py` times the whole verifier on every path
# against its bound, per class: without bf16 units (AVX-512 only: bf16 is emulated, so slower than fp32) and
# with them (AVX-512 bf16 and AMX: bf16 reads half the bytes and its block stays flat). Last, what share of a call is fixed whatever
# the call computes (`speed_tables.fixed_call_costs`): for the synthetic T5 pair of notebook 06, whose calls
# last a millisecond (`benchmarks/t5_call_overhead.py`), and for this notebook's pair (section 2's calibration).

# %%
benchmarks = tutorial_lib.paths.DATA_DIR / "benchmarks"
this_class = tl.models.processor_class.processor_class()
print(f"this machine: {this_class['model']}, class {this_class['class']} "
      f"(bf16 units: {'yes' if this_class['bf16_units'] else 'no'})")
classes = speed_tables.processor_classes(benchmarks, this_class["class"])
display(tl.views.tables.page_table(classes, keys=["class", "file"],
                                   blank={column: "not run" for column in classes.columns}))
metrics["processor_classes"] = {"this_class": this_class, "committed": classes.to_dict(orient="records")}
for name in classes["file"].dropna():
    run = json.loads((benchmarks / name).read_text())
    print(f"{name}: {run['device']}; beside it: {run['beside']}; "
          f"{run['args']['prompts']} prompts x {run['args']['rounds']} rounds x "
          f"{run['args']['max_new_tokens']} tokens")
    not_counted = "not counted for this method"
    no_model = "no model for this method"
    modelled = ("expected_speedup", "textbook_speedup", "measured_over_expected")
    display(tl.views.tables.page_table(
        speed_tables.engine_speed_methods(run), keys=["dtype", "method"],
        blank={"tokens_per_call": not_counted, "acceptance": "no drafts, or not counted",
               **{column: no_model for column in modelled}}))
    aims = speed_tables.engine_speed_aims(run)
    display(tl.views.tables.page_table(aims, keys=["dtype", "aim"],
                                       blank={column: "not run" for column in ("median", "q25", "q75")}))
    for sentence in speed_tables.aim_limits(run):
        print(f"  missed: {sentence}")
    metrics.setdefault("committed_benchmark", {})[name] = aims.to_dict(orient="records")
for kernel_file in sorted(benchmarks.glob("kernel_paths_cpu_*.json")):
    kernel_run = json.loads(kernel_file.read_text())
    whole_model = pd.DataFrame([
        {"model path": name, "t(1) ms": 1e3 * r["t_s"]["1"], "t(1) / bound": r["t1_over_bound"],
         **{f"t({k})/t(1)": v for k, v in r["t_over_t1"].items() if k != "1"}}
        for name, r in kernel_run["paths"].items()]).set_index("model path")
    print(f"{kernel_file.name}: read bandwidth {kernel_run['read_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s; "
          f"{kernel_run['machine'].split('|')[0]}; bf16 units: {kernel_run['bf16_units']}")
    display(tl.views.tables.page_table(whole_model.reset_index(), keys=["model path"], digits=2,
                                       blank={column: "not measured" for column in whole_model.columns}))
t5_file = benchmarks / "t5_call_overhead_cpu.json"
if t5_file.exists():
    t5_run = json.loads(t5_file.read_text())
    print(f"{t5_file.name}: {' -> '.join(t5_run['pair'])}, {t5_run['threads']} thread, milliseconds")
    t5_fixed = speed_tables.fixed_call_costs(Calibration.from_dict(t5_run["calibration"]))
    display(tl.views.tables.page_table(t5_fixed.reset_index(), keys=[t5_fixed.index.name or "index"],
                                       blank={column: "not measured" for column in t5_fixed.columns}))
    share = "fixed share beyond the weights' read"
    glued = tl.lessons.notebook.glue_values(t5_fixed_verifier=100 * t5_fixed.loc["verifier", share],
                                            t5_fixed_drafter=100 * t5_fixed.loc["drafter", share],
                                            t5_verifier_ms=t5_fixed.loc["verifier", "t(1) ms"])
    metrics["t5_fixed_call_share"] = t5_fixed[share].to_dict()
print(f"this notebook's pair ({drafter.name} -> {verifier.name}), section 2's calibration, milliseconds")
fixed_costs = speed_tables.fixed_call_costs(calibration)
tl.views.tables.page_table(fixed_costs.reset_index(), keys=[fixed_costs.index.name or "index"],
                           blank={column: "not measured" for column in fixed_costs.columns})

# %% [markdown]
# `same_tokens` counts the runs whose tokens equal our verifier-only run's on the same prompt (greedy, so
# speculative decoding must reproduce them). On the bf16 path some runs miss: on the processor with bf16 units,
# $\gamma = 5$, $7$ and `"auto"` differ from the verifier alone on one prompt from its fourth token, in every
# round, while $\gamma = 3$ does not. That is a property of bf16 arithmetic, not of the method: a bf16 call's
# logits depend, in their last bits, on how many rows the call holds (a block of 6-8 rows is summed in another
# order than one row), and a near tie between two tokens can flip. Each emitted token is still the verifier's
# choice on the logits of the call that scored it. The fp32 paths, whose sums differ far less, gave the verifier's
# tokens in every run on the processor without bf16 units; where exact agreement matters more than speed, force
# `verifier_path="fp32-packed"`.

# %% [markdown]
# On the synthetic T5 pair a verifier call takes {eval}`glued["t5_verifier_ms:.2f"]` ms, and
# {eval}`glued["t5_fixed_verifier:.0f"]`% of it (of the drafter's, {eval}`glued["t5_fixed_drafter:.0f"]`%) is
# paid whatever the call computes, beyond reading its few megabytes of weights: the framework's operators,
# Python and the engine's bookkeeping. Such calls are bound by overhead, not by memory or arithmetic: a faster
# kernel or fewer bytes cannot make them much cheaper, only fewer calls can.

# %% [markdown]
# ### llama.cpp on the same weights
# What does a production engine reach on the same pair? `benchmarks/llama_cpp_peer.py` (`make bench-llama-cpp`)
# builds llama.cpp from source for this processor's vector units and runs its greedy decoding and its speculative
# decoding (the 0.5B drafting for the 1.5B, its default draft of 3 tokens) on the very GGUF files our engine
# converts from, at their own precision, on the engine benchmark's prompts, interleaved and repeated on a quiet
# machine. The table is read from the committed `data/benchmarks/llama_cpp_<class>.json`
# (`tl.decoding.peer_tables.llama_cpp_table`): tokens per second include the prefill, as ours do, and the
# bound reads the verifier's GGUF bytes once per token at the bandwidth measured in the same run.

# %%
# the quiet run first; each file names its processor and the load around its runs
peer_files = sorted(benchmarks.glob("llama_cpp_*.json"))
peer_files = [path for path in peer_files if not path.stem.endswith("_busy")] or peer_files
if peer_files:
    peer_run = json.loads(peer_files[0].read_text())
    peer_numbers = tl.decoding.peer_tables.llama_cpp_glue(peer_run)
    print(f"{peer_files[0].name}: {peer_run['machine']['model']} (class {peer_run['machine']['class']}), "
          f"{peer_run['args']['threads']} threads; verifier {peer_run['models']['verifier']['file_type']}; "
          f"1-minute load {peer_run['load']['before'][0]:.2f} before, "
          f"{peer_run['load']['after'][0]:.2f} after")
    peer_table = tl.decoding.peer_tables.llama_cpp_table(peer_run)
    display(tl.views.tables.page_table(peer_table, keys=["engine", "method"],
                                       blank={column: "not measured" for column in peer_table.columns}))
    glued = tl.lessons.notebook.glue_values(
        llama_greedy_tok_s=peer_numbers["llama_greedy_tok_s"],
        llama_speedup=peer_numbers["llama_speedup"],
        llama_acceptance=peer_numbers["llama_acceptance"],
        ours_alone_tok_s=peer_numbers["ours_alone_tok_s"],
        verifier_bits_per_weight=peer_numbers["verifier_bits_per_weight"],
        llama_greedy_of_bound=peer_numbers["llama_greedy_of_bound"],
        llama_verify_call_ratio=peer_numbers["llama_verify_call_ratio"],
        ours_verifier_bits_per_weight=peer_numbers["ours_verifier_bits_per_weight"],
    )
    metrics["llama_cpp"] = peer_numbers
else:
    print("no data/benchmarks/llama_cpp_*.json: run `make bench-llama-cpp` to measure it")

# %% [markdown]
# llama.cpp decodes the 1.5B greedily at {eval}`glued["llama_greedy_tok_s:.1f"]` tokens per second, where our
# verifier alone reaches {eval}`glued["ours_alone_tok_s:.2f"]`. Most of the gap is bytes per weight: it reads the
# GGUF file's {eval}`glued["verifier_bits_per_weight:.1f"]` bits per weight as they are, while our verifier's path
# reads the converted weights at {eval}`glued["ours_verifier_bits_per_weight:.0f"]` bits; its AVX-512 kernels
# unpack the 4-bit blocks on the fly, with no Python between tokens, and its greedy decode runs at
# {eval}`glued["llama_greedy_of_bound:.2f"]` of the bound's rate. The same kernels are why its speculative
# decoding does not pay here (a speed-up of {eval}`glued["llama_speedup:.2f"]` at an acceptance of
# {eval}`glued["llama_acceptance:.2f"]`): unpacking is arithmetic, so on two cores one call verifying a block
# costs {eval}`glued["llama_verify_call_ratio:.1f"]` one-token calls, where speculation needs it to cost little
# more than one.

# %% [markdown]
# ## 9. How to tell what decides on your machine
# Read three numbers off sections 1 and 2, in this order.
# 1. **The verifier's one-token call against its bound** (`vs_bound` of `verifier` at $k = 1$). Near 1, the
#    call reads its weights at the memory's speed, and only fewer bytes make it faster (bf16 where the
#    processor has bf16 units, int8 for a drafter). Well above 1, the kernel wastes time: try another path.
# 2. **$t_p(k)/t_p(1)$ for $k$ up to $\gamma + 1$, below the ridge.** Near 1, a block costs what a token costs
#    and the textbook's formula holds. Well above 1 while $k < k^*$, it is the kernel's schedule, not the
#    physics: section 1 shows whether another path stays flat (`verifier_path="fp32-packed"`, say).
# 3. **$c = t_q / t_p(1)$ and the acceptance $a$.** With a flat block, speculation pays when
#    $a$ is high enough for the drafter's cost (section 6's right panel); a drafter in int8 lowers $c$ by
#    reading a quarter of the bytes, at the acceptance it keeps (section 3's table).
# On a GPU the same three numbers apply; its ridge sits at a similar $k^*$, and its bound is the HBM's bandwidth.

# %% [markdown]
# ## Record the numbers

# %%
tl.lessons.notebook.save_metrics("09_speed_on_your_hardware", metrics, output_dir)

# %% [markdown]
# ## Exercises
# 1. From the calibration alone (`calibration.t_q()`, `calibration.t_p(k)`), compute the predicted speed-up of
#    $\gamma = 3$ at the measured acceptance and store it in `answer_1`.
# 2. How many tokens must one block of $\gamma = 3$ emit on average to be exactly as fast as the verifier
#    alone on this machine? Store it in `answer_2`. Compare it with $\gamma + 1 = 4$: can it ever pay here?
# 3. Which $\gamma$ does the block-cost model pick on this machine at $a = 0.95$ (at most `calibration.max_k - 1`)?
#    Store it in `answer_3`, then try the textbook twin `calibration.textbook()`.
#
# **Solutions:** [notebook 09's exercises on the course book's exercises page](../book/teaching/exercises.md#notebook-09-09_speed_on_your_hardware), each with the value this notebook computed when it was executed.

# %%
answer_1 = None  # your code here
answer_2 = None  # your code here
answer_3 = None  # your code here

# %%
tl.lessons.notebook.check("09-1", answer_1, calibration=calibration, acceptance=acceptance)
tl.lessons.notebook.check("09-2", answer_2, calibration=calibration)
tl.lessons.notebook.check("09-3", answer_3, calibration=calibration)

# %% [markdown]
# **Read next:** that is the end of the path. The book's *Teaching with it* chapter lists the notebooks, their times and suggested paths; [05](05_lemma4_spec_cascades.ipynb) and [08](08_real_pair_token_analysis.ipynb) are the ones to revisit with this machine's costs in mind.
