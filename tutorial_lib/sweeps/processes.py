r"""A sweep split over processes: which process runs which pending row, each into its own rows file.

`accelerate launch --num_processes N script.py` (or `torchrun`) starts N copies of one script; each
finds its place (`current_processes`: accelerate's `PartialState`, read only when the launcher's
`WORLD_SIZE` says there are several) and `evaluation.run_sweep` then runs only its share:

1. process 0 takes the folder (an `flock`; another launch on it waits), they wait for one another,
   every process reads the rows already saved in the run's folder, and they wait again (so all see
   the same pending work: none has written yet);
2. the pending work, in the sweep's own order, is dealt out like cards (`share`): process $k$ of
   $N$ takes units $k, k + N, k + 2N, \dots$ (a unit is one example of one configuration with
   `runner="single"`, one chunk of examples under every configuration it misses with `runner="batch"`);
3. process $k$ appends its rows to its own file, `rows.process-<k>.jsonl` (`rows_file.process_rows_name`);
4. they wait for one another again and each returns the whole table, read from every rows file of
   the folder (`rows_file.folder_rows_paths`), so the folder reads as one run.

Every pending unit goes to exactly one process, so a finished run holds every row once, whatever
$N$. A process that dies loses only the unit it was computing (its rows file is appended row by row,
or chunk by chunk); `torchrun` then stops the others, and the same command, with any $N$ (one process
too), deals out what is still missing. A line cut by the kill is moved aside (`rows_file`) by the next
append to its file, or, in a file no process of the new run appends to, by the new run's process 0.

Two launches on one folder would each deal out the pending work as its processes saw it while the
other wrote, leaving rows to each other that neither runs; so process 0 holds an `flock` on the folder
while its launch computes rows (another launch waits), and `run_sweep` raises `IncompleteSweepError`
rather than return a table that lacks rows of its plan.

Why dealt out and not `PartialState.split_between_processes` (contiguous blocks): neighbouring units
cost alike (one task, one configuration), so blocks would hand one process all the long answers of
one task; dealing mixes them. The result is the same set of rows either way.

Only rows are split: each process loads its own copy of both models, so N processes need N times
the memory and go about N times as fast; on GPUs, one model pair per GPU (`Processes.device`).

`sweeps.launch` is the command line that runs a rerun profile's sweep so:
`accelerate launch --multi_gpu --num_processes 2 -m tutorial_lib.sweeps.launch --rerun t5 --profile smoke`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable, List, Optional, Sequence, TypeVar

from . import rows_file

__all__ = ["Processes", "current_processes", "launched_processes", "share"]

T = TypeVar("T")
#: How long a process waits for the others at a barrier: a share may run for hours, and torch's
#: default (30 min) would end a finished process while the others still work.
BARRIER_TIMEOUT = timedelta(days=7)
#: Where launchers say how many processes they started (torchrun / accelerate, MPI).
_WORLD_SIZE_VARIABLES = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def share(units: Sequence[T], index: int, count: int) -> List[T]:
    """Process `index` of `count`'s part of `units`: every `count`-th unit from its `index`-th (the
    parts of all processes hold every unit exactly once)."""
    for value, label in ((index, "index"), (count, "count")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{label}={value!r}: pass a whole number.")
    if count < 1 or not 0 <= index < count:
        raise ValueError(
            f"index={index}, count={count}: a process index runs from 0 to count - 1, and count >= 1."
        )
    return list(units)[index::count]


@dataclass
class Processes:
    """This process's place among the processes that run one sweep: `index` of `count`
    (`local_index` on its host); `wait()` returns once every process has called it; `device` is the
    accelerator this process should use (None: whatever the caller chooses)."""

    index: int = 0
    count: int = 1
    local_index: int = 0
    device: Optional[str] = None
    barrier: Optional[Callable[[], None]] = field(default=None, repr=False)

    def __post_init__(self):
        share([], self.index, self.count)  # checks index and count
        if self.count > 1 and self.barrier is None:
            raise ValueError(
                "several processes need a barrier (a function that returns once every process has "
                "called it), e.g. accelerate's PartialState().wait_for_everyone; use current_processes()."
            )

    def wait(self) -> None:
        if self.barrier is not None:
            self.barrier()

    def share(self, units: Sequence[T]) -> List[T]:
        return share(units, self.index, self.count)

    @property
    def rows_name(self) -> str:
        """The rows file this process appends to: `rows.jsonl` alone, `rows.process-<index>.jsonl` among
        several."""
        return rows_file.ROWS_NAME if self.count == 1 else rows_file.process_rows_name(self.index)

    @property
    def rows_names(self) -> List[str]:
        """The rows files the processes of this run append to."""
        return (
            [rows_file.ROWS_NAME]
            if self.count == 1
            else [rows_file.process_rows_name(k) for k in range(self.count)]
        )


def launched_processes() -> int:
    """How many processes the launcher says it started (`WORLD_SIZE` and the MPI equivalents; 1 when
    none is set, as in a plain script or a notebook)."""
    for name in _WORLD_SIZE_VARIABLES:
        value = os.environ.get(name)
        if value:
            if not value.strip().isdigit() or int(value) < 1:
                raise ValueError(
                    f"the environment variable {name}={value!r} is not a number of processes; unset it "
                    "or launch with accelerate launch / torchrun, which set it."
                )
            return int(value)
    return 1


def current_processes() -> Processes:
    """This process's place: one process of one, unless launched as several (`launched_processes`),
    when accelerate's `PartialState` gives the rank, the barrier and the device: one GPU per process
    (NCCL), or, with fewer GPUs than processes on a host, the GPUs shared in turn (the processes then
    talk over gloo, as CPU processes do where no GPU is visible or `ACCELERATE_USE_CPU` is set)."""
    if launched_processes() == 1:
        return Processes()
    try:
        import torch
        from accelerate import PartialState
    except ImportError as error:
        raise ImportError(
            f"this process was launched as one of {launched_processes()}, and splitting a sweep between "
            f"them needs accelerate ({error}); pip install accelerate, or run one process."
        ) from error
    cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true") or not torch.cuda.is_available()
    gpus = 0 if cpu else torch.cuda.device_count()
    shared = 0 < gpus < int(os.environ.get("LOCAL_WORLD_SIZE", launched_processes()))
    state = PartialState(cpu=cpu or shared, timeout=BARRIER_TIMEOUT)
    if state.num_processes != launched_processes():
        raise RuntimeError(
            f"the launcher started {launched_processes()} processes but accelerate sees "
            f"{state.num_processes}; launch with `accelerate launch --multi_gpu --num_processes N` "
            "(its --cpu flag starts one process) or torchrun --nproc_per_node N."
        )
    device = f"cuda:{state.local_process_index % gpus}" if shared else str(state.device)
    # Over gloo the barrier names no device: accelerate before 1.16 passes `device_ids=[local rank]` there
    # too, which torch runs on cuda:<local rank>, a GPU that processes sharing fewer GPUs do not have.
    barrier = gloo_barrier if cpu or shared else state.wait_for_everyone
    return Processes(state.process_index, state.num_processes, state.local_process_index, device, barrier)


def gloo_barrier() -> None:
    """Wait for every process of the default (gloo) process group, on no device."""
    import torch.distributed

    torch.distributed.barrier()
