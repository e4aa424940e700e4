r"""The command line that runs (or resumes) a rerun profile's sweep, split over the processes it is
launched as.

`reruns` profiles: `--rerun t5` is notebook 06's sweep (batch size 1), `--rerun gemma` notebook 07's
batched one; the rows go to the folder the notebook reads (`<results>/<rerun>-<profile>-<hash>/`).
Launched by `accelerate launch` (or torchrun) as N processes, each runs its share of the missing rows
(`processes`); run plainly, it is one process::

    python -m tutorial_lib.sweeps.launch --rerun t5 --profile smoke --root /tmp/results
    accelerate launch --multi_gpu --num_processes 2 -m tutorial_lib.sweeps.launch --rerun gemma \
        --profile headline
    accelerate launch --multi_gpu --num_processes 8 -m tutorial_lib.sweeps.launch --rerun gemma \
        --profile hub --device cuda

(`--multi_gpu` is accelerate's torchrun launcher, which starts N processes without GPUs too; its
`--cpu` flag starts a single one.) With `--device cuda`, each of several processes loads its pair on
its own GPU; the run's folder records the device as given, so all processes write to one folder.
A launch that ends with rows of its plan missing (a process stopped early, another writer on the
folder) prints how many and which, and exits with status 3; the same command then computes only those.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from . import evaluation as ev
from . import processes as pr
from . import reruns

__all__ = ["main"]


def _device(device: str, processes: pr.Processes) -> str:
    """The profile's device, and among several GPU processes each its own GPU (one model pair per GPU)."""
    if processes.count > 1 and device.startswith("cuda") and (processes.device or "").startswith("cuda"):
        return processes.device
    return device


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run (or resume) a rerun profile's sweep, split over the processes it was launched as."""
    parser = argparse.ArgumentParser(
        prog="python -m tutorial_lib.sweeps.launch",
        description="Run a rerun profile's sweep, split over the processes of "
        "`accelerate launch` (or one process).",
    )
    parser.add_argument(
        "--rerun",
        choices=["t5", "gemma"],
        required=True,
        help="t5: notebook 06's sweep (batch size 1); gemma: notebook 07's batched sweep",
    )
    parser.add_argument("--profile", required=True, help="a profile of reruns.T5_PROFILES / GEMMA_PROFILES")
    parser.add_argument(
        "--root", default=None, help="results folder (default: $TUTORIAL_LIB_RESULTS or data/results)"
    )
    parser.add_argument("--items", type=int, default=None, help="only the first N items of each task")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads per process (default: torch's)"
    )
    parser.add_argument(
        "--device",
        default=None,
        help="cpu or cuda instead of the profile's device (cuda: among several processes, each its own GPU)",
    )
    parser.add_argument(
        "--device-map",
        default=None,
        help="passed to from_pretrained for both models, e.g. auto: one model over several devices",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    import torch

    profiles = reruns.T5_PROFILES if args.rerun == "t5" else reruns.GEMMA_PROFILES
    if args.profile not in profiles:
        parser.error(
            f"--profile {args.profile!r} is not a {args.rerun} profile; choose one of {', '.join(profiles)}"
        )
    if args.items is not None and args.items < 1:
        parser.error(f"--items {args.items}: pass a whole number >= 1, or leave it out for the profile's own")
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads {args.threads}: pass a whole number >= 1")
        torch.set_num_threads(args.threads)
    processes = pr.current_processes()
    if args.rerun == "t5":
        settings = reruns.t5_profile(args.profile, n_examples=args.items)
    else:
        settings = reruns.gemma_profile(args.profile, n_items=args.items)
    settings["device"] = args.device or settings["device"]
    # recorded as given (the run's folder is keyed by its settings); each process loads on its own device
    where = {**settings, "device": _device(settings["device"], processes)}
    placement = {"device_map": args.device_map} if args.device_map else {}
    if args.rerun == "t5":
        budget = reruns.t5_training_budget(settings)
        if budget is not None:  # trained once, by the first process of each host; the others then load it
            from ..models import synthetic_t5

            if processes.local_index == 0:
                synthetic_t5.train_t5_pair(budget=budget, progress=not args.no_progress)
            processes.wait()
        pair = reruns.load_t5_pair(where, **placement)
        tasks, configs, options = reruns.t5_tasks(settings), reruns.t5_configs(settings), {"runner": "single"}
    else:
        pair = reruns.load_gemma_pair(where, **placement)
        tasks, configs = reruns.gemma_tasks(settings), reruns.gemma_configs(settings)
        options = {"runner": "batch", "batch_size": settings["batch_size"]}
    name = f"{args.rerun}-{settings['profile']}"
    try:
        rows = ev.run_sweep(
            pair,
            tasks,
            configs,
            name=name,
            root=args.root,
            seed=settings.get("seed", 0),
            extra_config=reruns.run_config(settings),
            progress=not args.no_progress,
            processes=processes,
            **options,
        )
    except ev.IncompleteSweepError as error:
        # a launcher reads the exit status, not the table: a partial run must not look finished
        print(f"process {processes.index + 1} of {processes.count}: {error}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    if processes.index == 0:
        print(
            f"{len(rows)} rows of {len(configs)} configurations x "
            f"{sum(len(t.examples) for t in tasks)} items in "
            f"{rows.attrs['path']} ({processes.count} process{'es' if processes.count > 1 else ''})",
            flush=True,
        )


if __name__ == "__main__":
    main()
