r"""Measured speed-ups of the engine, beside what the block-cost model predicts for them.

`measure_speed` runs plain verifier decoding and speculative decoding at several gamma (and
`gamma="auto"`, and any other timed method, such as transformers' assisted generation) on every
prompt, in a shuffled order per prompt and round, so that a machine slowing down slows every method
alike. `summarise_speed` divides each run's time by the verifier-only time of the same prompt and
round and reports, per method, the median speed-up with its quartiles over (prompt, round) pairs,
the pooled acceptance $a$ (accepted / judged drafts), tokens per verifier call, and the speed-up the
block-cost model predicts from a `calibration.Calibration` at that $a$:

$$\hat S(\gamma) = \frac{P_p + n\, t_p(1)}{P_p + P_q + n\, \tau(\gamma)}, \qquad
  \tau(\gamma) = \bigl(\gamma t_q + t_p(\gamma + 1)\bigr)\frac{1 - a}{1 - a^{\gamma+1}},$$

with $n$ the tokens emitted and $P_q$, $P_p$ the prompt's prefill calls (the calibration's prefill
time scaled to the prompt's length). "measured / expected" near 1 says the model explains the times.

The profiles (`SPEED_PROFILES`) are the settings of notebook 09 (`speed_profile`, `load_speed_pair`).

**Threads** (`use_free_cores`). A timing that runs as many torch threads as there are cores, beside another
process doing the same, runs slower and noisier than with fewer threads (OpenMP threads wait for one another
while the other process holds a core): beside the offline-large rerun (two threads, two cores), notebook 09's
timing workload ran faster with one thread than with two in every round (`benchmarks/timing_threads.py`;
`data/benchmarks/timing_threads_cpu.json`). So the notebooks time with the cores that other processes leave
free, measured over half a second before the timing starts, and say how many they took.

**Batches** (`benchmarks/batch_speed.py`). `calibrate_batch` times one call of each model on $B$ rows
feeding $k$ tokens each, $t_q(B)$, $t_q^{(2)}(B)$ and $t_p(k, B)$, interleaved in a shuffled order;
`measure_batch_speed` decodes $B$ prompts with `batch.generate_batch` (the verifier alone, and
speculation at each $\gamma$), with the peak resident memory of each run (`PeakMemory`); and
`predict_batch_speed` puts beside each measured rate the block-cost model's
$R_B(\gamma) = B\,\mathbb{E}[N_\gamma] / (\gamma t_q(B) + (1 - (1 - a^\gamma)^B) \Delta_q(B) + t_p(\gamma + 1, B))$
at the run's own acceptance $a$ (`latency.batch_tokens_per_second`).
"""
from __future__ import annotations

import os
import random
import statistics
import threading
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import pandas as pd
import torch

from ..maths import latency
from .calibration import Calibration, interleaved_rounds

__all__ = ["PROMPTS", "SPEED_PROFILES", "speed_profile", "load_speed_pair", "engine_method", "measure_speed",
           "summarise_speed", "expected_run_time", "gamma_range", "scaled_calibration", "what_if", "block_costs",
           "PeakMemory", "calibrate_batch", "measure_batch_speed", "predict_batch_speed", "busy_cores", "use_free_cores",
           "start_heavy_job"]

PROMPTS = {
    "code: reverse words": "Write a Python function that reverses the order of the words in a sentence, "
                           "with a docstring and two doctest examples.",
    "code: binary search": "Implement binary search over a sorted list in Python and explain its running time.",
    "maths: train": "A train travels 180 km in 2 hours and then 120 km in 1.5 hours. What is its average "
                    "speed over the whole trip? Show your working.",
    "explain: caching": "Explain to a new programmer what a cache is and why it makes programs faster.",
}

#: A drafter named `perturbed:<noise>` is the verifier with Gaussian noise on its weights (`models.perturbed`):
#: the same cost per step ($c \approx 1$), and drafts the verifier keeps most of the time.
SPEED_PROFILES = {
    # 20 new tokens: the whole lesson at its defaults took 191 s with 32 beside one other job; the Qwen
    # profile and benchmarks/engine_speed.py measure longer answers.
    "default": dict(drafter="perturbed:0.05", verifier="smollm2-135m", dtype="float32", device="cpu",
                    n_prompts=2, max_new_tokens=20, gammas=[1, 3, 5], repeats=2, calibration_repeats=5,
                    max_k=8, context_tokens=64),
    "qwen": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", dtype="float32", device="cpu",
                 n_prompts=2, max_new_tokens=64, gammas=[1, 3, 5], repeats=1, calibration_repeats=5,
                 max_k=8, context_tokens=64),
    # Any pair of one family from the hub, on a GPU (same tokenizer; needs a network the first time).
    "hub": dict(drafter="Qwen/Qwen2.5-0.5B-Instruct", verifier="Qwen/Qwen2.5-1.5B-Instruct", dtype="bfloat16",
                device="cuda", n_prompts=4, max_new_tokens=128, gammas=[1, 3, 5, 7], repeats=2,
                calibration_repeats=10, max_k=12, context_tokens=96),
    # CI: two tiny random transformers, prompts of token ids, seconds.
    "smoke": dict(drafter="perturbed:0.3", verifier="tiny-random-llama:0", dtype="float32", device="cpu",
                  n_prompts=2, max_new_tokens=12, gammas=[1, 3], repeats=1, calibration_repeats=2,
                  max_k=4, context_tokens=16),
}
for _settings in SPEED_PROFILES.values():
    # which kernel computes each model's calls (`models.kernel_paths`): None keeps them as loaded; "auto"
    # or a path name (one for both, or a pair (drafter, verifier)) goes to `load_pair(kernel_paths=...)`
    _settings.setdefault("kernel_paths", None)


def _logical_cpus() -> int:
    import psutil
    return psutil.cpu_count() or os.cpu_count() or 1


def busy_cores(interval_s: float = 0.5) -> float:
    """How many logical CPUs' worth of CPU time the *other* processes used over the next `interval_s` seconds
    (the whole machine's use, less this process's own)."""
    import psutil
    if not interval_s > 0:
        raise ValueError(f"interval_s={interval_s!r}: measure over a positive number of seconds, e.g. 0.5.")
    me = psutil.Process()
    before = me.cpu_times()
    used = psutil.cpu_percent(interval=interval_s) / 100 * _logical_cpus()
    after = me.cpu_times()
    own = (after.user + after.system - before.user - before.system) / interval_s
    return max(0.0, used - own)


def _burn(threads: int, ready) -> None:
    torch.set_num_threads(threads)
    a = torch.randn(512, 512)
    a = torch.tanh(a @ a)
    ready.set()
    while True:
        a = torch.tanh(a @ a)


def start_heavy_job(threads: int = 1, *, timeout_s: float = 120.0):
    """Another process running matrix products on `threads` torch threads until it is terminated (a stand-in for
    a user's busy machine in the benchmarks), returned once it computes: call `.terminate()` and `.join()`."""
    import multiprocessing
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads={threads!r}: the heavy job needs a whole number of threads >= 1.")
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    job = context.Process(target=_burn, args=(threads, ready), daemon=True)
    job.start()
    if not ready.wait(timeout_s):
        job.terminate()
        raise RuntimeError(f"the heavy job did not start computing within {timeout_s:.0f} s; raise timeout_s.")
    return job


def use_free_cores(threads: Optional[int] = None, *, interval_s: float = 0.5) -> int:
    r"""Set torch's thread count for a timing and return it: `threads` where given, else the physical cores
    other processes leave free, $\mathrm{round}(P - b\,P/L)$ for $P$ physical cores, $L$ logical CPUs and $b$
    busy logical CPUs (`busy_cores`; with two hardware threads per core, two busy logical CPUs are one
    busy core), at least 1 and at most torch's default: the physical cores, this process's CPU affinity and
    `OMP_NUM_THREADS` where set."""
    import psutil
    if threads is None:
        logical = _logical_cpus()
        physical = psutil.cpu_count(logical=False) or logical
        cap = physical
        if hasattr(os, "sched_getaffinity"):
            cap = min(cap, len(os.sched_getaffinity(0)))
        if os.environ.get("OMP_NUM_THREADS", "").isdigit() and int(os.environ["OMP_NUM_THREADS"]) > 0:
            cap = min(cap, int(os.environ["OMP_NUM_THREADS"]))
        free = physical - busy_cores(interval_s) * physical / logical
        threads = max(1, min(cap, int(free + 0.5)))
    elif isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads={threads!r}: give a whole number of threads >= 1, or None for the free cores.")
    torch.set_num_threads(threads)
    return threads


def speed_profile(name: str = "default", **overrides) -> dict:
    """The settings of one profile; keyword arguments that are not None replace settings."""
    if name not in SPEED_PROFILES:
        raise ValueError(f"profile={name!r} is unknown; choose one of {', '.join(SPEED_PROFILES)}.")
    settings = dict(SPEED_PROFILES[name], profile=name)
    unknown = set(overrides) - set(settings)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; a profile has {sorted(settings)}.")
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return settings


def load_speed_pair(settings: Mapping):
    """The profile's pair: named models, or a verifier with a perturbed copy of itself as drafter."""
    from ..models.adapter import ModelPair, load_model, load_pair, perturbed
    drafter, verifier = settings["drafter"], settings["verifier"]
    paths, gamma = settings.get("kernel_paths"), max(settings.get("gammas") or [5])
    if drafter.startswith("perturbed:"):
        big = load_model(verifier, dtype=settings["dtype"], device=settings["device"])
        pair = ModelPair(perturbed(big, float(drafter.split(":", 1)[1]), seed=1), big)
        if paths is not None:
            from ..models.kernel_paths import put_on_path
            both = paths if isinstance(paths, (tuple, list)) else (paths, paths)
            for lm, path, rows in zip(pair, both, (0, gamma)):
                if path is not None:
                    put_on_path(lm, path, gamma=rows)
        return pair
    return load_pair(drafter, verifier, dtype=settings["dtype"], device=settings["device"],
                     kernel_paths=paths, gamma=gamma)


def speed_prompts(verifier, n: int) -> Dict[str, List[int]]:
    """The first `n` prompts as token ids: chat-formatted where the verifier has a chat template."""
    if n < 1 or n > len(PROMPTS):
        raise ValueError(f"n_prompts={n}: choose between 1 and {len(PROMPTS)}.")
    out = {}
    for label, text in list(PROMPTS.items())[:n]:
        if verifier.tokenizer is None:      # a tiny random model: a few token ids from the text's length
            out[label] = [(len(text) * (i + 3)) % verifier.vocab_size for i in range(6)]
        elif getattr(verifier.tokenizer, "chat_template", None):
            out[label] = verifier.chat_prompt(text)
        else:
            out[label] = verifier.encode(text)
    return out


def engine_method(pair, gamma, **options) -> Callable[[List[int], int], dict]:
    """A timed method for `measure_speed`: `tl.generate` at T = 0 (`gamma=0` is plain verifier decoding)."""
    from .engine import generate
    drafter, verifier = pair

    def run(prompt: List[int], max_new_tokens: int) -> dict:
        if gamma == 0:
            g = generate(drafter, verifier, prompt, method="verifier", max_new_tokens=max_new_tokens, **options)
        else:
            g = generate(drafter, verifier, prompt, method="speculative", rule="spec", gamma=gamma,
                         max_new_tokens=max_new_tokens, **options)
        gammas = getattr(g, "gammas", None)
        return {"tokens": list(g.tokens), "seconds": g.wall_time_s, "n_verifier_calls": g.n_verifier_calls,
                "n_drafter_calls": g.n_drafter_calls, "n_accepted": g.n_accepted, "n_rejected": g.n_rejected,
                "gammas": list(gammas) if gammas is not None else None,
                "auto_costs": list(getattr(g, "auto_costs", []) or []) or None}
    return run


def measure_speed(methods: Mapping[str, Callable], prompts: Mapping[str, List[int]], *, max_new_tokens: int,
                  repeats: int = 2, reference: str = "verifier", seed: int = 0, warmup: bool = True,
                  progress: bool = True) -> pd.DataFrame:
    """Every method on every prompt, `repeats` rounds, shuffled per (round, prompt); one row per run.

    `methods[name](prompt_ids, max_new_tokens)` returns at least `tokens` and `seconds`; `reference`
    names the method the others are divided by. A warm-up pass runs each method once on 4 tokens.
    """
    if reference not in methods:
        raise ValueError(f"reference={reference!r} is not among the methods {list(methods)}.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats={repeats!r}: run every method at least once (repeats >= 1).")
    from tqdm.auto import tqdm
    first = next(iter(prompts.values()))
    if warmup:
        for fn in methods.values():
            fn(first, 4)
    rng, rows = random.Random(seed), []
    bar = tqdm(total=repeats * len(prompts) * len(methods), desc="timing", disable=not progress)
    for round_ in range(repeats):
        for label, ids in prompts.items():
            order = list(methods)
            rng.shuffle(order)
            for name in order:
                result = dict(methods[name](ids, max_new_tokens))
                rows.append({"round": round_, "prompt": label, "prompt_tokens": len(ids), "method": name, **result})
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def expected_run_time(calibration: Calibration, gamma: int, acceptance: float, n_tokens: int,
                      prompt_tokens: int) -> float:
    """Seconds the block-cost model expects for one run: the prefill call(s), then n tokens at $\\tau(\\gamma)$."""
    scale = prompt_tokens / max(calibration.context_tokens, 1)
    prefill = calibration.price("prefill_verifier") if "prefill_verifier" in calibration.samples else 0.0
    if gamma > 0 and "prefill_drafter" in calibration.samples:
        prefill += calibration.price("prefill_drafter")
    return prefill * scale + n_tokens * calibration.time_per_token(gamma, acceptance)


def _quartiles(values: Sequence[float]):
    values = list(values)
    if len(values) == 1:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def summarise_speed(rows: pd.DataFrame, calibration: Optional[Calibration] = None, *,
                    gammas: Optional[Mapping[str, int]] = None, reference: str = "verifier") -> pd.DataFrame:
    """Per method: median speed-up over the reference with quartiles, acceptance, tokens per call,
    same tokens as the reference, and (fixed gamma, with a calibration) expected and measured / expected.

    `gammas` maps a method to its fixed gamma (0 for the reference); by default names `gamma=<g>` are read.
    """
    keys = ["round", "prompt"]
    ref = rows[rows["method"] == reference].set_index(keys)
    out = []
    for name, runs in rows.groupby("method", sort=False):
        runs = runs.set_index(keys)
        speedups = (ref["seconds"] / runs["seconds"]).dropna()
        q1, q3 = _quartiles(speedups)
        row = {"method": name, "median_seconds": runs["seconds"].median(), "speedup": speedups.median(),
               "speedup_q25": q1, "speedup_q75": q3, "n_runs": len(speedups),
               "same_tokens": int(sum(list(a) == list(b) for a, b in zip(runs["tokens"], ref.loc[runs.index, "tokens"])))}
        if "n_accepted" in runs and runs["n_accepted"].notna().all():
            judged = (runs["n_accepted"] + runs["n_rejected"]).sum()
            row["acceptance"] = runs["n_accepted"].sum() / judged if judged else float("nan")
            n_tokens = runs["tokens"].map(len)
            row["tokens_per_call"] = n_tokens.sum() / runs["n_verifier_calls"].sum()
        gamma = (gammas or {}).get(name)
        if gamma is None and "gamma=" in name:
            tail = name.split("gamma=")[1].split()[0]
            gamma = int(tail) if tail.isdigit() else None
        if name == reference:
            gamma = 0
        if calibration is not None and gamma is not None and "acceptance" in row:
            a = row["acceptance"] if gamma else 0.0
            a = 0.0 if a != a else a  # no drafts judged (gamma = 0)
            expected = statistics.median(
                expected_run_time(calibration, 0, 0.0, len(t), p) / expected_run_time(calibration, gamma, a, len(t), p)
                for t, p in zip(runs["tokens"], runs["prompt_tokens"]))
            row.update(gamma=gamma, expected_speedup=expected, measured_over_expected=row["speedup"] / expected,
                       model_speedup=calibration.speedup(gamma, a),
                       textbook_speedup=latency.textbook_speedup(a, gamma, calibration.cost_ratio))
        out.append(row)
    return pd.DataFrame(out)


def gamma_range(calibration: Calibration, max_gamma: Optional[int]) -> List[int]:
    """gamma = 0 (the verifier alone) up to `max_gamma` (default: the largest the calibration measured)."""
    return list(range(0, (calibration.max_k - 1 if max_gamma is None else max_gamma) + 1))


# ---- what if: another acceptance, another drafter (notebook 09's sliders) --------------------

def scaled_calibration(calibration: Calibration, cost_ratio: float) -> Calibration:
    """The same verifier costs with a drafter step of `cost_ratio` x t_p(1) (overheads folded in)."""
    ks = range(1, calibration.max_k + 1)
    t_p = [calibration.t_p(k) for k in ks]
    return Calibration.synthetic(cost_ratio * t_p[0], t_p, note=f"c = {cost_ratio}")


def what_if(acceptance: float, cost_ratio: float, calibration: Calibration, *, max_gamma: Optional[int] = None,
            grid: int = 41) -> Dict:
    """Numbers of the slider view: speed-up against gamma here and in the textbook at (a, c); the
    break-even acceptance against c for gamma* (here and textbook); the best gamma and its speed-up."""
    a = float(acceptance)
    latency.expected_tokens_per_call(a, 1)                      # checks a
    latency.textbook_speedup(a, 1, cost_ratio)                  # checks c
    here = scaled_calibration(calibration, float(cost_ratio))
    flat = here.textbook()
    gammas = gamma_range(calibration, max_gamma)
    best_here, best_flat = here.best_gamma(a, gammas[-1]), flat.best_gamma(a, gammas[-1])
    cs = [i * 1.0 / (grid - 1) for i in range(grid)]

    def threshold(cal: Calibration) -> List[Optional[float]]:
        # the least acceptance at which some gamma >= 1 beats the verifier alone
        out = []
        for c in cs:
            scaled = scaled_calibration(cal, c)
            found = [latency.break_even_acceptance(g, scaled.t_q(), scaled.t_p) for g in gammas[1:]]
            found = [f for f in found if f is not None]
            out.append(min(found) if found else None)
        return out

    return dict(acceptance=a, cost_ratio=float(cost_ratio), gammas=gammas,
                speedup_here=[here.speedup(g, a) for g in gammas], speedup_textbook=[flat.speedup(g, a) for g in gammas],
                best_gamma_here=best_here, best_speedup_here=here.speedup(best_here, a),
                best_gamma_textbook=best_flat, best_speedup_textbook=flat.speedup(best_flat, a),
                cost_ratios=cs, break_even_here=threshold(calibration), break_even_textbook=threshold(calibration.textbook()))


def block_costs(calibration: Calibration, acceptance: float, max_gamma: Optional[int] = None) -> Dict:
    """Numbers of the measured machine's figure: the verifier's cost of scoring k tokens relative to one
    (`relative_cost`, k = 1..max_k) and the drafter's step (`cost_ratio`, c); the predicted speed-up
    against gamma at `acceptance` here and in the textbook (blocks as cheap as one step), and the best gamma."""
    ks = list(range(1, calibration.max_k + 1))
    t1 = calibration.t_p(1)
    flat = calibration.textbook()
    gammas = gamma_range(calibration, max_gamma)
    return dict(ks=ks, relative_cost=[calibration.t_p(k) / t1 for k in ks], cost_ratio=calibration.cost_ratio,
                gammas=gammas, speedup_here=[calibration.speedup(g, acceptance) for g in gammas],
                speedup_textbook=[flat.speedup(g, acceptance) for g in gammas],
                best_gamma=calibration.best_gamma(acceptance, max_gamma))


# ---- batches ----------------------------------------------------------------------------------

def _rss_mib() -> float:
    """The process's resident set size now, in MiB (Linux `/proc`; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


class PeakMemory:
    """`with PeakMemory() as m:` the process's resident memory at the start (`m.start_mib`) and its largest
    value while the block ran (`m.peak_mib`, sampled every 20 ms), in MiB."""

    def __enter__(self):
        self.start_mib = self.peak_mib = _rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak_mib = max(self.peak_mib, _rss_mib())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_mib = max(self.peak_mib, _rss_mib())


def calibrate_batch(pair, batch_sizes: Sequence[int], *, ks: Sequence[int], repeats: int = 3,
                    context_tokens: int = 64, seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Seconds of one call on $B$ rows feeding $k$ tokens each, after `context_tokens` cached tokens per row:
    the verifier at every `k` of `ks` (all rows' logits kept, as a block is scored), the drafter at k = 1
    and 2 (one row of logits kept). The median over `repeats` rounds after a warm-up round, each round in
    a shuffled order. Columns: model, batch_size, k, seconds (and every sample in `samples`)."""
    from transformers import DynamicCache
    from .shared_prefix import forward_rows
    drafter, verifier = pair
    generator = torch.Generator().manual_seed(seed)
    context = torch.randint(0, verifier.vocab_size, (1, context_tokens), generator=generator)
    extra = torch.randint(0, verifier.vocab_size, (1, max([*ks, 2])), generator=generator)
    caches, measurements = {}, {}
    for which, lm, sizes in (("drafter", drafter, (1, 2)), ("verifier", verifier, tuple(ks))):
        for b in batch_sizes:
            cache = DynamicCache()
            forward_rows(lm, cache, context.repeat(b, 1), torch.ones(b, context_tokens, dtype=torch.long))
            caches[which, b] = cache
            for k in sizes:
                def call(lm=lm, cache=cache, b=b, k=k, keep=(1 if which == "drafter" else k)):
                    mask = torch.ones(b, context_tokens + k, dtype=torch.long)
                    tic = time.perf_counter()
                    forward_rows(lm, cache, extra[:, :k].repeat(b, 1), mask, keep=keep)
                    seconds = time.perf_counter() - tic
                    cache.crop(-k)       # back to the context: every call sees the same cache
                    return seconds
                measurements[which, b, k] = call
    samples = interleaved_rounds(measurements, repeats, seed=seed, progress=progress, desc="calibrating batches")
    table = pd.DataFrame([dict(model=w, batch_size=b, k=k, seconds=statistics.median(v), samples=v)
                          for (w, b, k), v in samples.items()])
    return table.sort_values(["model", "batch_size", "k"]).reset_index(drop=True)


def measure_batch_speed(pair, prompts: Sequence[List[int]], batch_sizes: Sequence[int], gammas: Sequence[int], *,
                        max_new_tokens: int = 32, repeats: int = 1, seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Tokens per second of `batch.generate_batch` on the first $B$ prompts, for every $B$ of `batch_sizes`:
    the verifier alone (`gamma` 0) and speculative decoding (`rule="spec"`, $T = 0$, Algorithm 4's bonus token)
    at every `gammas`. Every (B, gamma) once per round, in a shuffled order; the prompts' prefill is made
    once per batch size, before the clock starts. One row per run: seconds, tokens, tokens_per_s,
    acceptance (kept / judged drafts), the peak and starting resident memory (MiB)."""
    from tqdm.auto import tqdm
    from .batch import generate_batch, prefill_batch
    if max(batch_sizes) > len(prompts):
        raise ValueError(f"{len(prompts)} prompts for batch sizes up to {max(batch_sizes)}; pass at least as many.")
    drafter, verifier = pair
    runs = [(b, g) for b in batch_sizes for g in [0, *gammas]]
    # one prefill per batch size, shared by every run of it (`generate_batch` copies its caches)
    prefills = {b: prefill_batch(drafter, verifier, list(prompts[:b])) for b in batch_sizes}
    rng, rows = random.Random(seed), []
    bar = tqdm(total=len(runs) * repeats, desc="batch speed", disable=not progress)
    for round_ in range(repeats):
        order = list(runs)
        rng.shuffle(order)
        for b, gamma in order:
            batch, prefill = list(prompts[:b]), prefills[b]
            options = (dict(method="verifier") if gamma == 0 else
                       dict(method="speculative", rule="spec", gamma=gamma, bonus="verifier"))
            with PeakMemory() as memory:
                tic = time.perf_counter()
                out = generate_batch(drafter, verifier, batch, prefill=prefill, temperature=0.0,
                                     max_new_tokens=max_new_tokens, eos_token_id=(), **options)
                seconds = time.perf_counter() - tic
            kept, judged = sum(g.n_accepted for g in out), sum(g.n_accepted + g.n_rejected for g in out)
            tokens = sum(len(g.tokens) for g in out)
            rows.append(dict(round=round_, batch_size=b, gamma=gamma, seconds=seconds, tokens=tokens,
                             tokens_per_s=tokens / seconds, acceptance=kept / judged if judged else float("nan"),
                             verifier_calls=max(g.n_verifier_calls for g in out),
                             peak_rss_mib=memory.peak_mib, start_rss_mib=memory.start_mib))
            bar.update(1)
    bar.close()
    return pd.DataFrame(rows)


def predict_batch_speed(speed: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """`speed` (`measure_batch_speed`) with the block-cost model's tokens per second beside each run,
    `latency.batch_tokens_per_second` at the run's acceptance with the `costs` (`calibrate_batch`) of its
    batch size, and measured / predicted."""
    def cost(model, b, k):
        hit = costs[(costs.model == model) & (costs.batch_size == b) & (costs.k == k)]
        if hit.empty:
            raise ValueError(f"no calibrated {model} call for batch size {b} and k = {k}; calibrate it.")
        return float(hit.seconds.iloc[0])

    predicted = []
    for run in speed.itertuples():
        b, gamma = int(run.batch_size), int(run.gamma)
        a = 0.0 if gamma == 0 else float(run.acceptance)
        predicted.append(latency.batch_tokens_per_second(
            gamma, a, cost("drafter", b, 1), lambda k, b=b: cost("verifier", b, k), b, t_q2=cost("drafter", b, 2)))
    out = speed.copy()
    out["predicted_tokens_per_s"] = predicted
    out["measured_over_predicted"] = out.tokens_per_s / out.predicted_tokens_per_s
    return out
