"""The judge's own work on the values of a solution's runs, under a budget: at most `JUDGE_CPU_SECONDS`
of CPU and `JUDGE_MEMORY_BYTES` of memory beyond what the judge needs to start.

Every value a solution's run reports is chosen by the solution, and judging them means building the
values they stand for and applying the test's comparison to them (`judge.verdicts.judge_report`). Bounds
on sizes catch what they name, but not everything that is costly: 110,000 integers that all hash to 0
make one `set` cost a minute of CPU, and a `%` format whose width the solution chose asks for hundreds of
megabytes. So the judgement runs in a worker process (`JudgeWorker`, one per sweep process, started on
first use) whose address space is capped and whose CPU time per request is timed by the kernel
(`ITIMER_PROF`: its signal, left at its default action, ends the worker). A judgement over budget is a
failed test with a reason that says so; the worker is started again for the next one, and the sweep
goes on.

The request (the parent's own objects: the test plans and the tagged values it parsed from the reports,
bounded by `judge.verdicts.parse_report`) goes to the worker as a pickle; the verdict comes back as JSON,
so nothing the worker sends can run code in the parent.
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading

from .isolation.container import HASH_SEED
from .judge.verdicts import judge_report

__all__ = [
    "JUDGE_CPU_SECONDS",
    "JUDGE_MEMORY_BYTES",
    "serve",
    "JudgeOverBudget",
    "JudgeWorker",
    "judge_in_worker",
]

JUDGE_CPU_SECONDS = 1.0
JUDGE_MEMORY_BYTES = 64 * 1024 * 1024
_WALL_BACKSTOP_S = 60.0  # a worker that neither answers nor uses CPU (a stopped machine) is ended too
_HEADER = struct.Struct("!Q")


def _read_exact(stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError("the judge worker ended")
        data += chunk
    return data


def _address_space_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def serve() -> None:
    """The worker's loop: read a request, judge it within budget, answer; stdin/stdout are the pipe."""
    import resource

    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing printed by accident can corrupt the answers
    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # the CPU budget: the kernel ends the worker
    limit = _address_space_bytes() + JUDGE_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            size = _HEADER.unpack(_read_exact(requests, _HEADER.size))[0]
            request = _read_exact(requests, size)
        except EOFError:
            return
        signal.setitimer(signal.ITIMER_PROF, JUDGE_CPU_SECONDS)
        try:
            answer = {"ok": True, "verdict": list(judge_report(**pickle.loads(request)))}
        except MemoryError:
            answer = {
                "ok": False,
                "budget": True,
                "why": f"memory: judging the report needed more than {JUDGE_MEMORY_BYTES // 2**20} MiB",
            }
        except Exception as error:  # noqa: BLE001 - a judge bug is a failed test, reported, not a dead sweep
            answer = {"ok": False, "budget": False, "why": f"{type(error).__name__}: {str(error)[:200]}"}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        data = json.dumps(answer).encode("utf-8")
        answers.write(_HEADER.pack(len(data)) + data)
        answers.flush()


class JudgeOverBudget(RuntimeError):
    """The judgement of one report went over its CPU or memory budget (or the worker failed)."""


class JudgeWorker:
    """The parent's handle on its worker: `judge(**arguments)` returns `judge_report`'s verdict or
    raises JudgeOverBudget. Thread-safe; a forked child starts its own worker."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._owner = None

    def _start(self) -> subprocess.Popen:
        environment = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": HASH_SEED,  # the sandboxed runs' seed: sets iterate in the same order
        }
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, [package_root, environment.get("PYTHONPATH")])
        )
        return subprocess.Popen(
            [sys.executable, "-c", "from tutorial_lib.tasks.judge_worker import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            start_new_session=True,
        )

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def judge(self, **arguments):
        request = pickle.dumps(arguments, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._owner != os.getpid() or self._process is None or self._process.poll() is not None:
                self._process, self._owner = self._start(), os.getpid()
            process = self._process
            timer = threading.Timer(_WALL_BACKSTOP_S, process.kill)
            timer.start()
            try:
                process.stdin.write(_HEADER.pack(len(request)) + request)
                process.stdin.flush()
                size = _HEADER.unpack(_read_exact(process.stdout, _HEADER.size))[0]
                answer = json.loads(_read_exact(process.stdout, size).decode("utf-8"))
            except (OSError, EOFError, ValueError):
                process.kill()
                process.wait()
                self._process = None
                reasons = {
                    -signal.SIGPROF: f"CPU: judging the report took more than {JUDGE_CPU_SECONDS:g} s of CPU",
                    -signal.SIGKILL: f"time: the judge gave no verdict within {_WALL_BACKSTOP_S:g} s",
                }
                raise JudgeOverBudget(
                    reasons.get(process.returncode, f"the judge worker ended (status {process.returncode})")
                ) from None
            finally:
                timer.cancel()
        if not answer.get("ok"):
            if answer.get("budget"):
                raise JudgeOverBudget(str(answer.get("why"))[:300])
            raise RuntimeError(f"the judge failed: {str(answer.get('why'))[:300]}")
        return answer["verdict"]


_worker = JudgeWorker()
atexit.register(_worker.close)


def judge_in_worker(**arguments):
    """`judge.verdicts.judge_report(**arguments)` in the budgeted worker."""
    return _worker.judge(**arguments)
