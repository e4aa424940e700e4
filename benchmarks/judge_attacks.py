r"""Each attack on the code judge found against commit `BASELINE_COMMIT` or by a hostile review of its
rewrite, and the correct solutions it failed, run against that commit's `tutorial_lib` ("before") and this
one ("now"); and what judging an honest solution costs on each: the 164 canonical HumanEval solutions, in
rounds that alternate which side goes first, timed per solution.

Each side runs in a child interpreter whose `tutorial_lib` is that side's tree (the baseline's from
`git archive`), so its judge worker and sandbox are its own.

    python benchmarks/judge_attacks.py                  # writes data/benchmarks/judge_attacks_cpu.json
    python benchmarks/judge_attacks.py --rounds 1       # quicker cost figures
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from pathlib import Path

from tqdm.auto import tqdm

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "79db952"

_FRAMES = """
import sys
def _find(key):
    frame = sys._getframe(1)
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                if isinstance(value, dict) and key in value:
                    return value
        frame = frame.f_back
    return None
"""

# name: (what must happen, call, arguments); "fails" for an attack, "passes" for a correct solution
CASES = {
    "HumanEval/32: the reply redefines the prompt's poly and find_zero": (
        "fails",
        "humaneval",
        dict(
            index=32,
            reply="```python\ndef poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n```",
        ),
    ),
    "entry point max, the solution defines none (the builtin answers)": (
        "fails",
        "run_python",
        dict(code="x = 1", tests=["assert max([3, 9, 4]) == 9"], entry_point="max"),
    ),
    "code_pass on a task whose first call is pow, reply `x = 1`": (
        "fails",
        "code_pass",
        dict(reply="```python\nx = 1\n```", tests=["assert pow(2, 3) == 8"]),
    ),
    "the setup found in the caller's frames and run": (
        "fails",
        "run_python",
        dict(
            code=_FRAMES + "def f():\n    payload = _find('setup')\n    scope = {}\n"
            "    exec(payload['setup'], scope) if payload else None\n    return scope.get('EXPECTED')\n",
            tests=["assert f() == EXPECTED"],
            setup="EXPECTED = sorted([5, 3, 9])",
        ),
    ),
    "a forged report through the descriptor named in the payload": (
        "fails",
        "run_python",
        dict(
            code=_FRAMES
            + textwrap.dedent("""
            import json, os
            def f():
                payload = _find('report_fd')
                scope = {}
                if payload and payload.get('setup'):
                    exec(payload['setup'], scope)
                value = ['l', [['i', format(v, 'x')] for v in scope.get('EXPECTED', [])]]
                if 'holes' in payload:
                    report = {'error': None, 'values': [value], 'statements': [], 'rebound': []}
                else:
                    report = {'error': None, 'tests': [{'values': [value]}], 'rebound': []}
                os.write(payload['report_fd'], (json.dumps(report) + '\\n').encode())
                os._exit(0)
            """),
            tests=["assert f() == EXPECTED"],
            setup="EXPECTED = sorted([5, 3, 9])",
        ),
    ),
    "a hole reading CASES[0][0] hands over all of CASES": (
        "fails",
        "run_python",
        dict(
            code="import sys\ndef f(x):\n    cases = sys._getframe(1).f_globals.get('CASES')\n"
            "    return cases[1][1] if cases else x\n",
            tests=["assert f(CASES[0][0]) == CASES[1][1]"],
            setup="CASES = [[1, 2], [3, 4]]",
        ),
    ),
    "a setup value that is not plain data, the answer found through gc": (
        "fails",
        "run_python",
        dict(
            code="import gc\ndef f(box):\n    for o in gc.get_objects():\n"
            "        if isinstance(o, dict) and isinstance(o.get('ANSWER'), str):\n"
            "            return o['ANSWER']\n    return None\n",
            tests=["assert f(BOX) == ANSWER"],
            setup="class Box:\n    pass\n\nBOX = Box()\nANSWER = 'zq81-' + 'marker'\n",
        ),
    ),
    "socket(AF_VSOCK) and bind in the host's port space": (
        "fails",
        "run_python",
        dict(
            code="import socket\ndef f():\n    try:\n"
            "        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
            "        s.bind((socket.VMADDR_CID_ANY, 52001))\n        return 'bound'\n"
            "    except OSError as error:\n        return error.errno\n",
            tests=["assert f() == 'bound'"],
        ),
    ),
    "review: an object equal to anything, compared inside a lambda": (
        "fails",
        "run_python",
        dict(
            code="class Liar:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n\n"
            "def f(x):\n    return Liar()\n",
            tests=["assert (lambda v: v == 3)(f(1))"],
            entry_point="f",
        ),
    ),
    "review: a str subclass whose startswith says yes": (
        "fails",
        "run_python",
        dict(
            code="class S(str):\n    def startswith(self, prefix):\n        return True\n\n"
            "def f(x):\n    return S('zz')\n",
            tests=["assert f('abc').startswith('ab')"],
            entry_point="f",
        ),
    ),
    "review: a table of answers reached through len(CASES)": (
        "fails",
        "run_python",
        dict(
            code="import gc\ndef rotate(s):\n    for o in gc.get_objects():\n"
            "        if isinstance(o, list) and o and o[0] == ('abc', 'cab'):\n"
            "            return dict(o).get(s, s)\n    return s\n",
            tests=[
                "assert rotate(CASES[1][0]) == CASES[1][1]",
                "assert len(CASES) == 2 and rotate(str(len(CASES))) == '2'",
            ],
            setup="CASES = [('abc', 'cab'), ('xyz', 'zxy')]",
            entry_point="rotate",
        ),
    ),
    "review: a handed object that carries the answer": (
        "fails",
        "run_python",
        dict(
            code="def sort_case(c):\n    return c.expected\n",
            tests=["assert sort_case(case1) == case1.expected"],
            setup="class Case:\n    def __init__(self, xs, expected):\n        self.xs = xs\n"
            "        self.expected = expected\n\ncase1 = Case([3, 1, 2], [1, 2, 3])\n",
            entry_point="sort_case",
        ),
    ),
    "correct: import collections.abc": (
        "passes",
        "run_python",
        dict(
            code="import collections.abc\ndef f(x):\n    return isinstance(x, collections.abc.Sized)\n",
            tests=["assert f([1]) is True and collections.Counter('aab')['a'] == 2"],
        ),
    ),
    "correct: f(2000) == math.factorial(2000) (5,736 digits)": (
        "passes",
        "run_python",
        dict(
            code="import math\ndef f(n):\n    return math.factorial(n)\n",
            tests=["assert f(2000) == math.factorial(2000)"],
        ),
    ),
    "correct: list(set(xs)) against list(set([...])), 5 runs": (
        "passes",
        "run_python",
        dict(
            code="def f(xs):\n    return list(set(xs))\n",
            tests=["assert f(['a', 'b', 'c', 'd', 'e']) == list(set(['a', 'b', 'c', 'd', 'e']))"],
            repeat=5,
        ),
    ),
}

# The child: runs the cases (or times the canonical solutions) with its own tree's tutorial_lib.
_CHILD = textwrap.dedent("""
    import json, sys, time
    root, request = sys.argv[1], json.loads(sys.stdin.read())
    sys.path.insert(0, root)
    import tutorial_lib
    assert tutorial_lib.__file__.startswith(root), tutorial_lib.__file__
    from tutorial_lib.tasks import metrics, tasksets
    from tutorial_lib.tasks.sandbox import run_python
    examples = tasksets.offline_task("humaneval")["examples"]
    out = {}
    if request["mode"] == "cases":
        for name, (expect, kind, arguments) in request["cases"].items():
            arguments = dict(arguments)
            passes, reasons = 0, []
            for _ in range(arguments.pop("repeat", 1)):
                if kind == "humaneval":
                    example = examples[arguments["index"]]
                    score, reason = metrics.humaneval_pass(arguments["reply"], example), ""
                elif kind == "code_pass":
                    problem = {"info": {"tests": arguments["tests"], "setup": "",
                                        "entry_point": tasksets.entry_point_of(arguments["tests"])}}
                    score, reason = metrics.code_pass(arguments["reply"], problem), ""
                else:
                    result = run_python(**arguments)
                    score, reason = float(result.passed), result.reason
                passes += score == 1.0
                reasons.append(reason[:200])
            out[name] = {"passes": passes, "runs": len(reasons), "reason": reasons[0]}
    else:
        for index in request["indices"]:
            reply = "```python\\n" + examples[index]["references"][0] + "\\n```"
            started = time.perf_counter()
            score = metrics.humaneval_pass(reply, examples[index])
            out[str(index)] = [time.perf_counter() - started, score]
    print(json.dumps(out))
""")


def _tree(folder: Path, commit: str | None) -> Path:
    """The root of a `tutorial_lib` tree: this repository's, or `commit`'s extracted into `folder`."""
    if commit is None:
        return REPO
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "tutorial_lib"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _child(root: Path, request: dict) -> dict:
    answer = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(answer.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the honest-solution timing")
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "judge_attacks_cpu.json"))
    args = parser.parse_args()
    summary = {"baseline_commit": BASELINE_COMMIT, "cases": {}, "honest": {}}
    with tempfile.TemporaryDirectory() as folder:
        roots = {"before": _tree(Path(folder), BASELINE_COMMIT), "now": _tree(Path(folder), None)}
        for label, root in roots.items():
            outcome = _child(root, {"mode": "cases", "cases": CASES})
            for name, result in outcome.items():
                expect = CASES[name][0]
                good = result["passes"] == (result["runs"] if expect == "passes" else 0)
                summary["cases"].setdefault(name, {"must": expect})[label] = {**result, "as_it_must": good}
        indices = list(range(164))
        times = {"before": [], "now": []}
        for round_index in tqdm(range(args.rounds), desc="honest solutions"):
            order = ("before", "now") if round_index % 2 == 0 else ("now", "before")
            for label in order:
                outcome = _child(roots[label], {"mode": "honest", "indices": indices})
                times[label].append([outcome[str(i)][0] for i in indices])
                summary["honest"].setdefault(f"{label} passed", []).append(
                    sum(outcome[str(i)][1] == 1.0 for i in indices)
                )
    medians = {label: [statistics.median(run) for run in runs] for label, runs in times.items()}
    ratios = [now / before for now, before in zip(medians["now"], medians["before"])]
    summary["honest"].update(
        solutions=len(indices),
        rounds=args.rounds,
        median_s_per_solution=medians,
        ratio_now_over_before={"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
        cpu=_cpu_name(),
    )
    summary["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    for name, case in summary["cases"].items():
        print(
            f"{name}: before {case['before']['passes']}/{case['before']['runs']}, "
            f"now {case['now']['passes']}/{case['now']['runs']} passed (it must: {case['must']})"
        )
    print(json.dumps(summary["honest"], indent=1))
    print(f"wrote {args.out}")


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
