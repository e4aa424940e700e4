r"""What the sandbox's limits cost a correct solution's run time.

"Before" is the sandbox of commit `BASELINE_COMMIT` (its `tutorial_lib/tasks/` sandbox modules, read
from git and loaded as a package beside this one): bwrap run as root (the sandbox's user mapped to the
host's root), a fresh `/proc`, a pids cgroup, the report judged in the parent's own process. "Now" is
`tutorial_lib.tasks.sandbox`: a launcher that joins a pids and a memory cgroup, sets the limits of the
whole sandbox and drops to an unprivileged user before bwrap, no `/proc`, the setup's values handed to
the solution's run as plain data, and the verdict reached in the budgeted judge worker.

Each round runs the same correct solution once on each path, alternating which goes first; per
round the ratio now / before of the wall time of `run_python` is taken, and the median and range
of the ratios over rounds are reported, with the median seconds of each path. Two workloads: a
solution judged on plain tests (MBPP style), and one whose tests have an expected side
(`sys.getsizeof(...)`, MBPP task 596), where "now" runs a second, setup-only sandbox the first
time and reuses its values after.

    python benchmarks/sandbox_limits_cost.py                  # 40 rounds
    python benchmarks/sandbox_limits_cost.py --rounds 4 --out /tmp/limits   # checks the script
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm.auto import tqdm

from tutorial_lib.tasks import isolation, sandbox

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "46936a8"
WORKLOADS = {
    "plain tests": (
        "def sum_of_squares(xs):\n    return sum(x * x for x in xs)\n",
        [
            "assert sum_of_squares([1, 2, 3]) == 14",
            "assert sum_of_squares([]) == 0",
            "assert sum_of_squares([-2, 5]) == 29",
        ],
    ),
    "expected side (getsizeof)": (
        "import sys\ndef tuple_size(t):\n    return sys.getsizeof(t)\n",
        [
            'assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))',
            "assert tuple_size((1, 2, 3)) == sys.getsizeof((1, 2, 3))",
        ],
    ),
}


def _baseline_sandbox(folder: Path):
    """`tutorial_lib.tasks.sandbox` as it was at BASELINE_COMMIT, importable as `baseline_sandbox.sandbox`."""
    package = folder / "baseline_sandbox"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("sandbox.py", "sandbox_child.py", "judge.py", "isolation.py"):
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{BASELINE_COMMIT}:tutorial_lib/tasks/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (package / name).write_text(source)
    sys.path.insert(0, str(folder))
    return importlib.import_module("baseline_sandbox.sandbox")


def _timed(module, code, tests) -> float:
    start = time.perf_counter()
    result = module.run_python(code, tests)
    seconds = time.perf_counter() - start
    if not result.passed:
        raise RuntimeError(f"{module.__name__}: a correct solution failed: {result.reason}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "sandbox_limits_cost_cpu"))
    args = parser.parse_args()
    if not isolation.sandbox_available():
        raise SystemExit(f"bubblewrap cannot run here ({isolation.bwrap_problem()}); {sandbox.INSTALL_HINT}")
    with tempfile.TemporaryDirectory() as folder:
        before = _baseline_sandbox(Path(folder))
        summary = {
            "baseline_commit": BASELINE_COMMIT,
            "rounds": args.rounds,
            "process_limit": isolation.process_limit(),
            "workloads": {},
        }
        for name, (code, tests) in WORKLOADS.items():
            (
                _timed(before, code, tests),
                _timed(sandbox, code, tests),
            )  # warm both (and the expected-side cache)
            rounds = []
            for r in tqdm(range(args.rounds), desc=name):
                if r % 2 == 0:
                    old, new = _timed(before, code, tests), _timed(sandbox, code, tests)
                else:
                    new, old = _timed(sandbox, code, tests), _timed(before, code, tests)
                rounds.append({"before_s": old, "now_s": new, "ratio": new / old})
            ratios = [r["ratio"] for r in rounds]
            quartiles = statistics.quantiles(ratios, n=4)
            result = {
                "before_s_median": statistics.median(r["before_s"] for r in rounds),
                "now_s_median": statistics.median(r["now_s"] for r in rounds),
                "ratio_median": statistics.median(ratios),
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "ratio_quartiles": [quartiles[0], quartiles[2]],
                "rounds": rounds,
            }
            summary["workloads"][name] = result
            print(
                f"{name}: before {1000 * result['before_s_median']:.0f} ms, "
                f"now {1000 * result['now_s_median']:.0f} ms"
                f" (medians); now / before {result['ratio_median']:.3f}, quartiles [{quartiles[0]:.3f}, "
                f"{quartiles[2]:.3f}], range [{min(ratios):.3f}, {max(ratios):.3f}] "
                f"over {args.rounds} rounds",
                flush=True,
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
