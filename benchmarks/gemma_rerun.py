r"""Run (or resume) a Gemma-style offline rerun's batched sweep, as notebook 07 runs it, from the command
line.

The rows go to `<results>/gemma-<profile>-<hash>/rows.jsonl` with the hash notebook 07 computes for
the same profile (`reruns.run_config`), so the notebook redraws from them without recomputing a row.
`run_sweep` skips every row already saved: the same command, run again after a stop, resumes (at
most the chunk being decoded when it stopped is lost). Each session appends its start, end and rows
to `sessions.jsonl` beside the rows, so the run's compute time can be added up afterwards; a session whose
machine was shut down is appended by the next one from its last heartbeat (`session.open.json`).

`--latency` also runs the profile's batch-size-1 latency rows (`reruns.latency_configs`, folder
`gemma-<profile>-latency-<hash>`) after the sweep, calibrating the pair (`calibration.json` beside the sweep's
rows) just before them, so the cost model and the clock it is checked against are measured in one sitting.
`--n-items N --root DIR` is a pilot: the first N items of each task into DIR; it prints rows per minute per
task and the verifier's cut rate.

    nohup nice -n 10 env PYTHONPATH=$PWD python benchmarks/gemma_rerun.py --profile headline \
        > rerun.log 2>&1 &
    python benchmarks/gemma_rerun.py --profile headline --n-items 6 --root /tmp/pilot      # a pilot
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from tutorial_lib.models import kernel_paths
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.sweep_folders import sweep_of
from tutorial_lib.sweeps import reruns


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _code_commit() -> str:
    """The commit this checkout is at, with "+changes" when its package differs from it; "unknown"
    outside git."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(root), "diff", "--quiet", "HEAD", "--", "tutorial_lib", "benchmarks"]
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


def pilot_report(rows, tasks) -> list[dict]:
    """Per task: rows, seconds (summed batch shares) and rows per minute, and the verifier's cut rate."""
    report = []
    for task in tasks:
        part = rows[rows["task"] == task.name]
        seconds = float(part["wall_time_s"].sum())
        verifier = part[part["method"] == "verifier"]
        report.append(
            {
                "task": task.name,
                "rows": len(part),
                "seconds": round(seconds, 1),
                "rows_per_minute": round(60 * len(part) / seconds, 1) if seconds else None,
                "verifier_cut_rate": float((verifier["n_tokens"] >= task.max_new_tokens).mean()),
                "verifier_tokens_max": int(verifier["n_tokens"].max()),
                "max_new_tokens": task.max_new_tokens,
            }
        )
    return report


OPEN_SESSION = "session.open.json"  # the running session's latest heartbeat; never committed


def recover_unrecorded_session(folder: Path) -> dict | None:
    """A session whose machine was shut down (no signal, so no line) leaves its last heartbeat in
    `session.open.json`: append it to `sessions.jsonl`, marked, so its rows and hours still count (to its
    last heartbeat: the minutes after it are lost). Returns the line, or None when there was none."""
    heartbeat = folder / OPEN_SESSION
    if not heartbeat.exists():
        return None
    session = json.loads(heartbeat.read_text(encoding="utf-8"))
    session["ended_by"] = "unrecorded stop: end, seconds and rows are its last heartbeat's"
    with open(folder / "sessions.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(session) + "\n")
    heartbeat.unlink()
    print(f"recovered a session that ended without its line: {json.dumps(session)}", flush=True)
    return session


class SessionLog:
    """This session's start, end, seconds and rows, appended to `sessions.jsonl` once, when the sweep ends
    *or* the process is stopped (SIGTERM, SIGINT, SIGHUP: the end of a working session kills long runs), so
    the run's compute time adds up over sessions. A machine shut down sends no signal: every `heartbeat_s`
    the session so far is written to `session.open.json`, which the next session appends
    (`recover_unrecorded_session`)."""

    def __init__(
        self,
        sweep,
        started: str,
        wall: float,
        cpu: float,
        threads: int,
        before: int,
        n_configs: int,
        tasks,
        heartbeat_s: float = 120.0,
    ):
        self.sweep, self.started, self.wall, self.cpu = sweep, started, wall, cpu
        self.threads, self.before, self.n_configs, self.tasks = threads, before, n_configs, tasks
        self.heartbeat_s, self.heartbeat = heartbeat_s, sweep.path / OPEN_SESSION
        # re-entrant: a signal that lands while the main thread writes its line finds it written and returns
        self.written, self.lock, self.stop_beating = False, threading.RLock(), threading.Event()

    def line(self, finished: bool) -> dict:
        # CPU seconds of all threads: on a shared machine, the wall time overstates what a quiet run takes
        return {
            "start": self.started,
            "end": _now(),
            "seconds": round(time.perf_counter() - self.wall, 1),
            "cpu_seconds": round(time.process_time() - self.cpu, 1),
            "threads": self.threads,
            "rows_before": self.before,
            "rows_after": len(self.sweep.done()),
            "finished": finished,
            "configurations": self.n_configs,
            "items": {t.name: len(t.examples) for t in self.tasks},
            "code": _code_commit(),  # the rows' law is the profile's; how fast they came, the code's
            # and the processor's: its kernels (AMX or AVX-512 bf16 units) set the speed and the rounding
            "machine": kernel_paths.machine_key(),
        }

    def write(self, finished: bool = False) -> None:
        self.stop_beating.set()
        with self.lock:  # a heartbeat being written finishes first, and is then removed
            if self.written:
                return
            self.written = True
            line = self.line(finished)
            with open(self.sweep.path / "sessions.jsonl", "a", encoding="utf-8") as log:
                log.write(json.dumps(line) + "\n")
            self.heartbeat.unlink(missing_ok=True)
        print(json.dumps(line), flush=True)

    def beat_once(self) -> None:
        with self.lock:
            if self.written:
                return
            temporary = self.heartbeat.with_suffix(".tmp")
            temporary.write_text(json.dumps(self.line(False)), encoding="utf-8")
            os.replace(temporary, self.heartbeat)  # whole or not at all: a shutdown mid-write keeps the last

    def start_heartbeat(self) -> None:
        def beat() -> None:
            while not self.stop_beating.wait(self.heartbeat_s):
                self.beat_once()

        threading.Thread(target=beat, name="session-heartbeat", daemon=True).start()

    def write_when_stopped(self) -> None:
        def stopped(signum, frame):
            self.write()
            raise SystemExit(128 + signum)

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, stopped)
        atexit.register(self.write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="headline", choices=sorted(reruns.GEMMA_PROFILES))
    parser.add_argument(
        "--root", default=None, help="results folder (default: the repository's data/results)"
    )
    parser.add_argument("--n-items", type=int, default=None, help="a pilot: the first N items of each task")
    parser.add_argument("--latency", action="store_true", help="also the batch-size-1 latency rows")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (this machine has 2 cores)")
    args = parser.parse_args()
    if args.n_items is not None and args.root is None:
        parser.error("--n-items makes a pilot: give it its own --root, so the run's folder is not touched")
    torch.set_num_threads(args.threads)
    settings = reruns.gemma_profile(args.profile, n_items=args.n_items)
    name = f"gemma-{settings['profile']}"
    started, wall, cpu = _now(), time.perf_counter(), time.process_time()
    pair = reruns.load_gemma_pair(settings)
    tasks = reruns.gemma_tasks(settings)
    configs = reruns.gemma_configs(settings)
    print(
        f"{name}: {len(configs)} configurations x {sum(len(t.examples) for t in tasks)} items "
        f"({', '.join(f'{t.name} {len(t.examples)}' for t in tasks)}), chunks of {settings['batch_size']}; "
        f"models loaded in {time.perf_counter() - wall:.0f} s",
        flush=True,
    )
    seed = settings.get("seed", 0)  # a profile without one draws item i with seed i
    sweep = reruns.batch_sweep(pair, tasks, name, settings, Path(args.root) if args.root else None)
    before = len(sweep.done())
    total = reruns.planned_rows(configs, tasks)
    print(f"rows in {sweep.path}: {before} of {total} saved before this session", flush=True)
    sweep.path.mkdir(parents=True, exist_ok=True)
    recover_unrecorded_session(sweep.path)
    # a session that finds the sweep complete decodes nothing: it is not a session of the run's compute time
    log_session = None
    if before < total:
        log_session = SessionLog(sweep, started, wall, cpu, args.threads, before, len(configs), tasks)
        log_session.write_when_stopped()
        log_session.start_heartbeat()
    rows = ev.run_sweep(
        pair,
        tasks,
        configs,
        name=name,
        root=args.root,
        runner="batch",
        seed=seed,
        batch_size=settings["batch_size"],
        extra_config=reruns.run_config(settings),
    )
    if rows.attrs["path"] != str(sweep.path):
        raise RuntimeError(
            f"run_sweep wrote to {rows.attrs['path']}, not {sweep.path}: the folder hash moved"
        )
    if log_session is not None:
        log_session.write(finished=True)
    if args.n_items is not None:
        print(json.dumps(pilot_report(rows, tasks), indent=1), flush=True)
    if args.latency:
        run_latency(pair, settings, tasks, sweep, name, args.root)


def run_latency(pair, settings: dict, tasks, sweep, name: str, root) -> None:
    """The batch-size-1 latency rows, and the calibration that prices them measured just before them in the
    same process: the cost model's signed error against the clock compares two measurements of one sitting
    (a calibration from another day can differ by more than the model's error: the machine's speed moves).
    With every latency row saved already, neither is measured again."""
    from tutorial_lib.stats import pricing

    latency_tasks = [t.head(settings["latency_items"]) for t in tasks]
    latency_configs = reruns.latency_configs(settings)
    pair = reruns.latency_pair(settings, pair)  # the profile's latency_paths, where it names them
    latency = sweep_of(
        pair,
        latency_tasks,
        f"{name}-latency",
        runner="single",
        extra_config=reruns.latency_run_config(settings),
        root=Path(root) if root else None,
    )
    expected = reruns.planned_rows(latency_configs, latency_tasks)
    saved = len(latency.done())
    start = time.perf_counter()
    if saved < expected:
        print(
            f"calibrating {sweep.path.name} before its latency rows ({saved} of {expected} saved)", flush=True
        )
        pricing.calibrate_for_sweep(pair, sweep.path, gammas=settings["latency_gammas"], recalibrate=True)
        print(f"calibrated in {time.perf_counter() - start:.0f} s", flush=True)
    latency_rows = ev.run_sweep(
        pair,
        latency_tasks,
        latency_configs,
        name=f"{name}-latency",
        root=root,
        runner="single",
        extra_config=reruns.latency_run_config(settings),
    )
    if latency_rows.attrs["path"] != str(latency.path):
        raise RuntimeError(
            f"run_sweep wrote to {latency_rows.attrs['path']}, not {latency.path}: the folder hash moved"
        )
    print(
        f"{len(latency_rows)} latency rows in {latency_rows.attrs['path']} "
        f"({time.perf_counter() - start:.0f} s this session)",
        flush=True,
    )
    calibration = pricing.calibrate_for_sweep(pair, sweep.path, gammas=settings["latency_gammas"])
    errors = pricing.signed_error(pricing.price_rows(latency_rows, calibration), by=["label", "gamma"])
    print(
        "the cost model's signed error against the clock, per method:\n" + errors.round(3).to_string(),
        flush=True,
    )


if __name__ == "__main__":
    main()
