"""`speed_runs.use_free_cores`: a timing takes the cores other processes leave free, or the threads asked
for."""

import psutil
import pytest
import torch

from tutorial_lib.decoding import speed_runs


@pytest.fixture(autouse=True)
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    "busy, n_logical, physical, expected",
    [
        (0.05, 2, 2, 2),  # quiet: every core
        (1.9, 2, 2, 1),  # a two-thread job beside it: one thread, never zero
        (1.0, 4, 4, 3),
        (3.6, 4, 4, 1),
        (0.0, 8, 4, 4),  # at most the physical cores, torch's default
        (4.0, 8, 4, 2),  # two hardware threads per core: four busy logical CPUs are two busy cores
    ],
)
def test_free_cores_are_the_cores_others_leave(monkeypatch, busy, n_logical, physical, expected):
    monkeypatch.setattr(speed_runs.threads, "busy_cores", lambda interval_s=0.5: busy)
    monkeypatch.setattr(
        speed_runs.threads.os, "sched_getaffinity", lambda pid: set(range(n_logical)), raising=False
    )
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: n_logical if logical else physical)
    assert speed_runs.use_free_cores() == expected
    assert torch.get_num_threads() == expected


def test_threads_asked_for_are_used_without_measuring(monkeypatch):
    monkeypatch.setattr(speed_runs.threads, "busy_cores", lambda interval_s=0.5: pytest.fail("measured"))
    assert speed_runs.use_free_cores(1) == 1 and torch.get_num_threads() == 1


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(threads):
    with pytest.raises(ValueError, match="whole number of threads"):
        speed_runs.use_free_cores(threads)


def test_free_cores_respect_affinity_and_omp_num_threads(monkeypatch):
    monkeypatch.setattr(speed_runs.threads, "busy_cores", lambda interval_s=0.5: 0.0)
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8)
    monkeypatch.setattr(speed_runs.threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert speed_runs.use_free_cores() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert speed_runs.use_free_cores() == 2


def test_the_heavy_job_computes_once_started_and_busy_cores_sees_it():
    job = speed_runs.start_heavy_job(1)  # returns once the job has computed
    try:
        child = psutil.Process(job.pid)
        before = sum(child.cpu_times()[:2])
        busy = speed_runs.busy_cores(1.0)
        used = sum(child.cpu_times()[:2]) - before
        assert used >= 0.5, f"the heavy job used {used:.2f} s of CPU in about 1 s"
        assert busy >= 0.8 * used  # what it used is part of what the others used
    finally:
        job.terminate()
        job.join(5)
    with pytest.raises(ValueError, match="positive number of seconds"):
        speed_runs.busy_cores(0)
    with pytest.raises(ValueError, match="whole number of threads"):
        speed_runs.start_heavy_job(0)
