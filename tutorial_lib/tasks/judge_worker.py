"""The judge's own work on a report, under a budget: at most `JUDGE_CPU_SECONDS` of CPU and
`JUDGE_MEMORY_BYTES` of memory beyond what the judge needs to start.

Everything in a report is chosen by the solution, and judging it means parsing it, building the values
it stands for and applying the test's comparison to them. Bounds on sizes catch what they name, but not
everything that is costly: 110,000 integers that all hash to 0 make one `set` cost a minute of CPU, and
a `%` format whose width the solution chose asks for hundreds of megabytes. So the judgement runs in a
worker process (`JudgeWorker`, one per sweep process, started on first use) whose address space is
capped and whose CPU time per report is timed by the kernel (`ITIMER_PROF`: its signal, left at its
default action, ends the worker). A report over budget is a failed test with a reason that says so; the
worker is started again for the next report, and the sweep goes on.

The request (the parent's own objects: the report bytes and the test plans) goes to the worker as a
pickle; the verdict comes back as JSON, so nothing the worker sends can run code in the parent.
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

from .judge import SOLUTION, MalformedReport, judge_test, parse_report

JUDGE_CPU_SECONDS = 1.0
JUDGE_MEMORY_BYTES = 64 * 1024 * 1024
_WALL_BACKSTOP_S = 60.0  # a worker that neither answers nor uses CPU (a stopped machine) is ended too
_HEADER = struct.Struct("!Q")


# --------------------------------------------------------------------------------------------------
# The verdict on one report (what the worker computes)
# --------------------------------------------------------------------------------------------------


def judge_report(
    report_bytes: bytes,
    report_over_limit: bool,
    plans,
    known,
    expected,
    trust_unjudged_tests: bool,
    statically_rebound,
) -> tuple[bool, str, int, int]:
    """(passed, reason, tests passed, tests counted on the child's word), reached from the values in the
    child's report (see `tutorial_lib.tasks.judge`). Everything in the report is bounded before it is
    parsed (`parse_report`) and every field is type-checked before use. It runs in the budgeted worker
    (`judge_worker`): whatever the child wrote, the verdict costs at most a second of CPU."""

    def fail(reason, tests_passed=0, tests_unjudged=0):
        return False, reason, tests_passed, tests_unjudged

    lines = report_bytes.split(b"\n")
    if report_over_limit or len(lines) != 2 or lines[1] != b"":
        return fail("no valid report: the child wrote none, several, or one too large (exited early?)")
    try:
        report = parse_report(lines[0])
    except MalformedReport as error:
        return fail(f"no valid report: {error}")
    if not isinstance(report, dict) or not isinstance(report.get("tests"), list):
        return fail("no valid report: not a report object")
    if report.get("error") is not None:
        error = report["error"]
        return fail(error[:1000] if isinstance(error, str) else "no valid report: its error is not text")
    entries = report["tests"]
    if len(entries) != len(plans):
        return fail(f"no valid report: {len(entries)} test entries for {len(plans)} tests")
    rebound = report.get("rebound")
    rebound = {name for name in rebound if isinstance(name, str)} if isinstance(rebound, list) else set()
    passed = unjudged = 0
    first_failure = None
    for index, (plan, entry, expected_values, static) in enumerate(
        zip(plans, entries, expected, statically_rebound), start=1
    ):
        watched = (
            set(plan.judge_names)
            | {f"builtins.{name}" for name in plan.judge_names}
            | {f"{module}.{attribute}" for module, attribute in plan.judge_attributes}
        )
        rebinds = sorted(set(static) | (rebound & watched))
        if plan.refused:
            ok, why = False, plan.unjudged_reason
        elif rebinds:
            ok, why = (
                False,
                (
                    f"the solution rebinds {', '.join(f'`{name}`' for name in rebinds)}, which the test "
                    "reads; a test's own names are the judge's, not the solution's"
                ),
            )
        elif not isinstance(entry, dict):
            ok, why = False, "malformed entry"
        elif plan.skeleton is None:
            if trust_unjudged_tests and entry.get("ok") is True:
                ok, why = True, "passed on the child's word"
                unjudged += 1
            elif trust_unjudged_tests:
                ok, why = False, _text(entry.get("error"), "failed")
            else:
                ok, why = (
                    False,
                    (
                        f"cannot be judged outside the sandbox ({plan.unjudged_reason}); pass "
                        "trust_unjudged_tests=True to count the child's word for it"
                    ),
                )
        elif "error" in entry:
            ok, why = False, _text(entry["error"], "failed")
        elif isinstance(expected_values, str):
            ok, why = False, expected_values
        else:
            ok, why = judge_test(plan, _merge(plan, entry.get("values"), expected_values), known)
        passed += ok
        if not ok and first_failure is None:
            first_failure = (
                f"test {index} {why if why.startswith(('failed', 'raised')) else 'failed: ' + why}: "
                f"{plan.source.strip()[:300]}"
            )
    if first_failure:
        return fail(first_failure, passed, unjudged)
    return True, "passed", passed, unjudged


def _text(value, default: str) -> str:
    return value[:300] if isinstance(value, str) else default


def _merge(plan, solution_values, expected_values):
    """The tagged values of every hole in order: the solution's from its run, the expected side's from
    the setup-only run. None (a failed test) when the solution's report holds the wrong number."""
    solution_count = plan.sides.count(SOLUTION)
    if not isinstance(solution_values, list) or len(solution_values) != solution_count:
        return None
    solution_values, expected_values = iter(solution_values), iter(expected_values or [])
    return [next(solution_values) if side == SOLUTION else next(expected_values) for side in plan.sides]


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
    """`judge_report(**arguments)` in the budgeted worker."""
    return _worker.judge(**arguments)
