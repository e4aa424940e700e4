"""A sweep split over processes (`sweeps.processes`, `sweeps.launch`): the split, the rows
files, real launches.

The launched tests run the command line (`python -m tutorial_lib.sweeps.launch`) on the T5 rerun's
smoke profile (the tiny trained T5 pair, 81 rows) as 2 CPU processes under `accelerate launch`
(its torchrun launcher, `--multi_gpu`, which starts N processes without GPUs too): the 2-process run
equals the 1-process run row for row, and a process killed mid-sweep loses no finished row (the rerun,
here with 1 process, ends with every row exactly once). About 2 minutes on a busy 2-core machine.
With TUTORIAL_LIB_TEST_DEVICE=cuda each process decodes on a GPU (its own, or one shared in turn).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

import tutorial_lib as tl
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Task, sweep_configs
from tutorial_lib.sweeps.sweep_folders import ModelRecord, model_identity, saved_models
from tutorial_lib.sweeps import processes as pr
from tutorial_lib.sweeps import rows_file

REPO = Path(__file__).resolve().parents[1]
TIMINGS = {"wall_time_s", "drafter_time_s", "verifier_time_s"}
#: TUTORIAL_LIB_TEST_DEVICE=cuda (benchmarks/accelerator_check.sh) runs the launched sweeps on the GPUs
DEVICE = os.environ.get("TUTORIAL_LIB_TEST_DEVICE", "cpu")
CLI = [
    "-m",
    "tutorial_lib.sweeps.launch",
    "--rerun",
    "t5",
    "--profile",
    "smoke",
    "--threads",
    "1",
    "--no-progress",
    "--device",
    DEVICE,
]


# ---- the split, in one process ----------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_shares_hold_every_unit_exactly_once(count):
    units = list(range(17))
    shares = [pr.share(units, k, count) for k in range(count)]
    assert sorted(u for part in shares for u in part) == units
    assert max(map(len, shares)) - min(map(len, shares)) <= 1  # dealt out: at most one unit apart
    assert shares[0][:2] == ([0, count] if count < 17 else [0])


@pytest.mark.parametrize("gpus", [0, 1, 2])
def test_processes_sharing_fewer_gpus_wait_on_no_device(monkeypatch, gpus):
    """Two processes on a host with `gpus` GPUs: with fewer GPUs than processes (or none) they talk over
    gloo, and their barrier must name no device (accelerate 1.15's names cuda:<local rank>, which a lent
    one-GPU machine lacks: "invalid device ordinal"); with a GPU each they keep accelerate's NCCL barrier."""
    import accelerate
    import torch

    calls = []

    class FakeState:
        def __init__(self, cpu, timeout):
            self.cpu, self.num_processes, self.process_index, self.local_process_index = cpu, 2, 1, 1
            self.device = torch.device("cpu" if cpu else "cuda:1")

        def wait_for_everyone(self):
            calls.append("accelerate")

    monkeypatch.setattr(accelerate, "PartialState", FakeState)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.distributed, "barrier", lambda **options: calls.append(("gloo", options)))
    monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    processes = pr.current_processes()
    processes.wait()
    assert (processes.index, processes.count) == (1, 2)
    if gpus == 2:
        assert calls == ["accelerate"] and processes.device == "cuda:1"
    else:
        assert calls == [("gloo", {})]
        assert processes.device == ("cuda:0" if gpus == 1 else "cpu")


def test_bad_process_settings_say_what_to_change(monkeypatch):
    with pytest.raises(ValueError, match="from 0 to count - 1"):
        pr.share([1], 2, 2)
    with pytest.raises(TypeError, match="whole number"):
        pr.share([1], 0, 2.0)
    with pytest.raises(ValueError, match="need a barrier"):
        pr.Processes(0, 2)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE='two' is not a number of processes"):
        pr.launched_processes()
    monkeypatch.delenv("WORLD_SIZE")
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert (
        pr.launched_processes() == 1 and pr.current_processes() == pr.Processes()
    )  # a plain script: one of one
    assert (
        pr.Processes().rows_name == "rows.jsonl"
        and pr.Processes(1, 3, barrier=lambda: None).rows_name == "rows.process-1.jsonl"
    )
    with pytest.raises(TypeError, match="pass a processes.Processes"):
        ev.run_sweep(
            tl.load_pair("toy-drafter", "toy-verifier"),
            _toy_task(),
            sweep_configs(["Drafter"]),
            name="bad",
            processes=(0, 2),
            progress=False,
        )


def _toy_task(n=5):
    examples = [
        {"id": f"ex{i}", "prompt": "ka lo" if i % 2 else "mi", "references": ["ka"]} for i in range(n)
    ]
    return Task("toy", "qa_em", examples, max_new_tokens=5)


def _as_processes(count, run, **options):
    """`run(processes)` in `count` threads standing for processes, with a real barrier between them;
    the tables they return, in order."""
    barrier, results, errors = threading.Barrier(count, timeout=120), [None] * count, []

    def one(k):
        try:
            results[k] = run(pr.Processes(k, count, barrier=barrier.wait))
        except BaseException as error:  # noqa: BLE001 - raised again below
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def _results(table):
    columns = [
        "task",
        "config",
        "example_id",
        "text",
        "quality",
        "n_accepted",
        "n_rejected",
        "n_verifier_calls",
    ]
    return table[columns].sort_values(["task", "config", "example_id"]).reset_index(drop=True)


def test_shares_run_one_after_another_make_the_single_process_run(tmp_path, one_thread):
    """Two processes' shares give one process's rows, each in its own file, and both return the whole
    table; an interrupted run resumed with another count of processes runs only what is missing."""
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(
        ["Drafter", "Verifier", "SpecDecode", "SpecCascade [Chow]"],
        n_alpha=2,
        temperatures=(1.0,),
        gammas=(3,),
    )
    single = ev.run_sweep(pair, _toy_task(), configs, name="toy", root=tmp_path / "one", progress=False)
    tables = _as_processes(
        2,
        lambda processes: ev.run_sweep(
            pair, _toy_task(), configs, name="toy", root=tmp_path / "two", progress=False, processes=processes
        ),
    )
    folder = next((tmp_path / "two").iterdir())
    sizes = [len(rows_file.read_rows(folder / f"rows.process-{k}.jsonl")) for k in range(2)]
    assert (
        sizes == [len(single) - len(single) // 2, len(single) // 2] and not (folder / "rows.jsonl").exists()
    )
    for table in tables:  # each process returns the whole table
        pd.testing.assert_frame_equal(_results(table), _results(single))
    # an interrupted 3-process run (2 rows each), resumed by 2 processes: every row once
    _as_processes(
        3,
        lambda processes: ev.run_sweep(
            pair,
            _toy_task(),
            configs,
            name="toy",
            root=tmp_path / "three",
            progress=False,
            max_rows=2,
            processes=processes,
        ),
    )
    table, _ = _as_processes(
        2,
        lambda processes: ev.run_sweep(
            pair,
            _toy_task(),
            configs,
            name="toy",
            root=tmp_path / "three",
            progress=False,
            processes=processes,
        ),
    )
    folder = next((tmp_path / "three").iterdir())
    assert [len(rows_file.read_rows(path)) for path in rows_file.folder_rows_paths(folder)][1:] == [
        2 + (len(single) - 6 + 1) // 2,
        2 + (len(single) - 6) // 2,
        2,
    ]
    _assert_every_row_once(folder, len(single))
    pd.testing.assert_frame_equal(_results(table), _results(single))
    # and the folder reloads without the models, from all its rows files
    records = tuple(ModelRecord(**model_identity(m)) for m in pair)
    pd.testing.assert_frame_equal(
        _results(
            ev.run_sweep(records, _toy_task(), configs, name="toy", root=tmp_path / "three", progress=False)
        ),
        _results(single),
    )
    assert saved_models("toy", root=tmp_path / "three")[1].name == "toy-verifier"


def test_a_line_cut_in_a_file_no_process_appends_to_is_set_aside(tmp_path, one_thread):
    """A process of a 2-process run died mid-write; the run resumed by one process (which appends to
    rows.jsonl) moves the cut line aside, so the folder reads cleanly afterwards."""
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = sweep_configs(["Drafter", "Verifier"], temperatures=(1.0,))
    _as_processes(
        2,
        lambda processes: ev.run_sweep(
            pair,
            _toy_task(),
            configs,
            name="cut",
            root=tmp_path,
            progress=False,
            max_rows=2,
            processes=processes,
        ),
    )
    folder = next(tmp_path.iterdir())
    path = folder / "rows.process-1.jsonl"
    text = path.read_text()
    path.write_text(text[:-20])  # killed in the middle of its second row
    with pytest.warns(UserWarning, match="cut short"):
        table = ev.run_sweep(pair, _toy_task(), configs, name="cut", root=tmp_path, progress=False)
    assert len(table) == 10
    assert rows_file.corrupt_path(path).read_text() == text.splitlines()[-1][:-19] + "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing cut left to warn about
        _assert_every_row_once(folder, 10)


def test_a_batched_sweep_is_split_by_chunks(tmp_path, one_thread):
    pair = tl.load_pair("tiny-random-llama:0", "tiny-random-llama:1", shared_vocabulary=True)
    task = Task(
        "ids",
        "qa_em",
        [{"id": f"i{i}", "prompt": [2, 3 + i, 4], "references": ["x"]} for i in range(5)],
        max_new_tokens=4,
    )
    configs = sweep_configs(
        ["Drafter", "Verifier", "SpecDecode"], temperatures=(1.0,), gammas=(1,), bonus="none"
    )
    single = ev.run_sweep(
        pair,
        task,
        configs,
        name="ids",
        root=tmp_path / "one",
        runner="batch",
        batch_size=2,
        progress=False,
        eos_token_id=(),
    )
    split, _ = _as_processes(
        2,
        lambda processes: ev.run_sweep(
            pair,
            task,
            configs,
            name="ids",
            root=tmp_path / "two",
            runner="batch",
            batch_size=2,
            progress=False,
            eos_token_id=(),
            processes=processes,
        ),
    )
    folder = next((tmp_path / "two").iterdir())
    # chunks (items 0-1, 2-3, 4): process 0 the first and the last, process 1 the middle one
    assert sorted({r["example_id"] for r in rows_file.read_rows(folder / "rows.process-1.jsonl")}) == [
        "i2",
        "i3",
    ]
    pd.testing.assert_frame_equal(_results(split), _results(single))


def _incomplete_configs():
    return sweep_configs(
        ["Drafter", "Verifier", "SpecDecode", "SpecCascade [Chow]"],
        n_alpha=2,
        temperatures=(1.0,),
        gammas=(3,),
    )


def test_a_launch_beside_another_on_the_same_folder_returns_every_row(tmp_path, one_thread):
    """A 2-process launch whose processes read the folder while another launch writes to it: they
    saw different pending work, dealt it out differently, and left rows to each other that neither
    ran. The launch must wait for the other one (or say what is missing), never return a partial table."""
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs, task = _incomplete_configs(), _toy_task(8)
    planned = len(configs) * 8
    barrier, tables, errors = threading.Barrier(2, timeout=120), [None, None, None], []

    def launch(k, processes, **options):
        try:
            tables[k] = ev.run_sweep(
                pair, task, configs, name="two", root=tmp_path, progress=False, processes=processes, **options
            )
        except BaseException as error:  # noqa: BLE001 - raised again below
            errors.append(error)
            barrier.abort()

    with pytest.warns(UserWarning, match="another launch is computing rows of this sweep.*waiting for it"):
        first = threading.Thread(target=launch, args=(0, pr.Processes(0, 2, barrier=barrier.wait)))
        first.start()
        deadline = time.monotonic() + 60
        while barrier.n_waiting < 1 and first.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        # the other launch (one process) would save some rows now, between this launch's two reads
        other = threading.Thread(target=launch, args=(2, pr.Processes()), kwargs={"max_rows": 5})
        other.start()
        other.join(timeout=5)
        second = threading.Thread(target=launch, args=(1, pr.Processes(1, 2, barrier=barrier.wait)))
        second.start()
        for thread in (first, second, other):
            thread.join(timeout=120)
    if errors:
        raise errors[0]
    assert [len(table) for table in tables] == [planned] * 3, "a launch returned an incomplete table"
    _assert_every_row_once(next(tmp_path.iterdir()), planned)


def test_a_process_that_stops_early_makes_the_others_say_what_is_missing(tmp_path, one_thread):
    """Process 1 of 2 ends without its share (here max_rows=0, as a worker that died quietly would):
    process 0 must not return the half table as the sweep's result."""
    pair = tl.load_pair("toy-drafter", "toy-verifier")
    configs = _incomplete_configs()
    options = [{}, {"max_rows": 0}]
    with pytest.raises(
        ev.IncompleteSweepError,
        match=r"(?s)12 of the 25 rows this sweep plans are missing.*"
        r"SpecCascade \[Chow\].*stopped before its share",
    ):
        _as_processes(
            2,
            lambda processes: ev.run_sweep(
                pair,
                _toy_task(),
                configs,
                name="half",
                root=tmp_path,
                progress=False,
                processes=processes,
                **options[processes.index],
            ),
        )
    # the same call, run again with nothing else on the folder, completes it
    table = ev.run_sweep(pair, _toy_task(), configs, name="half", root=tmp_path, progress=False)
    assert len(table) == 25


def test_the_command_line_exits_non_zero_when_rows_are_missing(tmp_path, monkeypatch, capsys, one_thread):
    """Process 2 of 2 whose partner never ran: its own share alone is in the folder, so the command
    must fail (a launcher reads the exit status) and say what is missing."""
    from tutorial_lib.sweeps import launch, reruns

    pair = tl.load_pair("toy-drafter", "toy-verifier")
    monkeypatch.setattr(reruns, "t5_training_budget", lambda settings: None)
    monkeypatch.setattr(reruns, "load_t5_pair", lambda settings, **placement: pair)
    monkeypatch.setattr(reruns, "t5_tasks", lambda settings: [_toy_task()])
    monkeypatch.setattr(reruns, "t5_configs", lambda settings: _incomplete_configs())
    monkeypatch.setattr(pr, "current_processes", lambda: pr.Processes(1, 2, barrier=lambda: None))
    with pytest.raises(SystemExit) as stopped:
        launch.main(["--rerun", "t5", "--profile", "smoke", "--root", str(tmp_path), "--no-progress"])
    assert stopped.value.code == 3
    assert "process 2 of 2: 13 of the 25 rows this sweep plans are missing" in capsys.readouterr().err


# ---- launched as processes ----------------------------------------------------------------------------


def _assert_every_row_once(folder, expected):
    keys = [
        (r["task"], r["config"], r["example_id"])
        for path in rows_file.folder_rows_paths(folder)
        for r in rows_file.read_rows(path)
    ]
    assert len(keys) == len(set(keys)) == expected, "a row is missing or written twice"


def _run_rows(folder):
    return {
        (r["task"], r["config"], r["example_id"]): {k: v for k, v in r.items() if k not in TIMINGS}
        for r in rows_file.read_folder_rows(folder)
    }


def _environment(root):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OMP_NUM_THREADS": "1",
        "TUTORIAL_LIB_RESULTS": str(root),
    }
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "ACCELERATE_USE_CPU"):
        env.pop(name, None)
    return env


def _accelerate(n):
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable)) or shutil.which("accelerate")
    if launcher is None:
        pytest.skip("accelerate's launcher is not installed")
    return [
        launcher,
        "launch",
        "--multi_gpu",
        "--num_processes",
        str(n),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
    ]


@pytest.fixture(scope="module")
def one_process_run(tmp_path_factory):
    from tutorial_lib.models import synthetic_t5

    synthetic_t5.train_t5_pair(budget="tiny", progress=False)  # cached after the first time (seconds)
    root = tmp_path_factory.mktemp("one")
    start = time.perf_counter()
    subprocess.run([sys.executable, *CLI], env=_environment(root), check=True, timeout=300, cwd=REPO)
    print(f"1 process: {time.perf_counter() - start:.0f} s")
    (folder,) = root.iterdir()
    return folder


def test_two_processes_give_the_one_process_rows(tmp_path, one_process_run):
    start = time.perf_counter()
    done = subprocess.run(
        [*_accelerate(2), *CLI],
        env=_environment(tmp_path),
        timeout=300,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"2 processes: {time.perf_counter() - start:.0f} s")
    (folder,) = tmp_path.iterdir()
    assert folder.name == one_process_run.name  # the same run: the same folder
    assert sorted(p.name for p in folder.glob("rows*.jsonl")) == [
        "rows.process-0.jsonl",
        "rows.process-1.jsonl",
    ]
    assert "81 rows of 27 configurations x 3 items" in done.stdout and "(2 processes)" in done.stdout
    _assert_every_row_once(folder, 81)
    assert all(len(rows_file.read_rows(p)) >= 40 for p in folder.glob("rows.process-*.jsonl"))
    assert _run_rows(folder) == _run_rows(one_process_run)  # row for row, but for the clock


def _worker(launcher_pid, rank):
    """The pid of the worker of `rank` that `accelerate launch` started (its environment says RANK)."""
    for pid in _all_descendants(launcher_pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if (
            f"RANK={rank}".encode() in environ
            and b"tutorial_lib.sweeps.launch" in command
            and b"accelerate" not in command
        ):
            return pid
    return None


def _all_descendants(pid):
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finds the worker to kill through /proc")
def test_a_killed_process_loses_no_finished_row(tmp_path, one_process_run):
    start = time.perf_counter()
    launcher = subprocess.Popen(
        [*_accelerate(2), *CLI],
        env=_environment(tmp_path),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        victim = None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and launcher.poll() is None:
            rows = list(tmp_path.glob("*/rows.process-1.jsonl"))
            if rows and rows[0].read_bytes().count(b"\n") >= 20:  # mid-sweep: 20 of its 40 rows written
                victim = _worker(launcher.pid, 1)
                if victim is not None:
                    os.kill(victim, signal.SIGKILL)
                    break
            time.sleep(0.05)
        assert victim is not None, "process 1 finished (or never started) before it could be killed"
        launcher.wait(timeout=120)  # torchrun stops the other process too
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert launcher.returncode != 0
    (folder,) = tmp_path.iterdir()
    finished = {path.name: path.read_bytes() for path in folder.glob("rows*.jsonl")}
    saved = _run_rows(folder)
    assert 20 <= len(saved) < 81  # killed mid-sweep
    # resumed, here by one process: only the missing rows run, the finished ones stay as they were
    subprocess.run([sys.executable, *CLI], env=_environment(tmp_path), check=True, timeout=300, cwd=REPO)
    print(f"killed at {len(saved)} rows, resumed: {time.perf_counter() - start:.0f} s")
    for name, content in finished.items():
        kept = (folder / name).read_bytes()
        whole = content[: content.rfind(b"\n") + 1]  # a line the kill cut is no row
        assert kept.startswith(whole), f"{name} lost a finished row"
    _assert_every_row_once(folder, 81)
    final = _run_rows(folder)
    assert {key: final[key] for key in saved} == saved
    assert final == _run_rows(one_process_run)
    assert json.loads((folder / "config.json").read_text())["name"] == "t5-smoke"
