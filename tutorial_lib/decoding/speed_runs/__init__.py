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

$$R_B(\gamma) = B\,\mathbb{E}[N_\gamma] /
  (\gamma t_q(B) + (1 - (1 - a^\gamma)^B) \Delta_q(B) + t_p(\gamma + 1, B))$$

at the run's own acceptance $a$ (`latency.batch_tokens_per_second`).

Its parts: `profiles` (the settings, pairs and prompts), `threads` (the cores a timing takes), `timing`
(timed runs and their speed-ups), `predictions` (the model's numbers for notebook 09's views) and
`batches` (batch sizes).
"""

from .batches import PeakMemory, calibrate_batch, measure_batch_speed, predict_batch_speed
from .predictions import block_costs, gamma_range, scaled_calibration, what_if
from .profiles import PROMPTS, SPEED_PROFILES, load_speed_pair, speed_profile
from .profiles import speed_prompts as speed_prompts  # outside `__all__`; notebook 09 and benchmarks call it
from .threads import busy_cores, start_heavy_job, use_free_cores
from .timing import engine_method, expected_run_time, measure_speed, summarise_speed

__all__ = [
    "PROMPTS",
    "SPEED_PROFILES",
    "speed_profile",
    "load_speed_pair",
    "engine_method",
    "measure_speed",
    "summarise_speed",
    "expected_run_time",
    "gamma_range",
    "scaled_calibration",
    "what_if",
    "block_costs",
    "PeakMemory",
    "calibrate_batch",
    "measure_batch_speed",
    "predict_batch_speed",
    "busy_cores",
    "use_free_cores",
    "start_heavy_job",
]
