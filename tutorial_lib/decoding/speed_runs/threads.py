"""The cores a timing runs on: what other processes keep busy (`busy_cores`), torch's threads set to the
cores they leave free (`use_free_cores`), and a stand-in for a user's busy machine (`start_heavy_job`)."""

from __future__ import annotations

import os
from typing import Optional

import torch

__all__ = ["busy_cores", "use_free_cores", "start_heavy_job"]


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
    """Another process running matrix products on `threads` torch threads until it is terminated (a stand-in
    for a user's busy machine in the benchmarks), returned once it computes: call `.terminate()` and
    `.join()`."""
    import multiprocessing

    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads={threads!r}: the heavy job needs a whole number of threads >= 1.")
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    job = context.Process(target=_burn, args=(threads, ready), daemon=True)
    job.start()
    if not ready.wait(timeout_s):
        job.terminate()
        raise RuntimeError(
            f"the heavy job did not start computing within {timeout_s:.0f} s; raise timeout_s."
        )
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
        raise ValueError(
            f"threads={threads!r}: give a whole number of threads >= 1, or None for the free cores."
        )
    torch.set_num_threads(threads)
    return threads
