r"""Each attack on the sandbox and its judge, run against the sandbox of `BASELINE_COMMIT` ("before": its
`tutorial_lib/tasks/` sandbox modules read from git and loaded as a package beside this one) and against
`tutorial_lib.tasks.sandbox` ("now"), with what each outcome was: a false pass, what the code reached on
the host, and what judging it cost the parent.

Every solution here is wrong for its tests, or harmful; the harmful ones only read a kernel setting and
write back the value it already has.

    python benchmarks/sandbox_attacks.py             # both, writes data/benchmarks/sandbox_attacks_cpu.json
    python benchmarks/sandbox_attacks.py --only now  # the current sandbox alone
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tqdm.auto import tqdm

REPO = Path(__file__).resolve().parents[1]
BASELINE_COMMIT = "46936a8"
MODULES = ("sandbox.py", "sandbox_child.py", "judge.py", "isolation.py")

_PROBE = textwrap.dedent("""
    import ctypes, errno, os
    def _errno(error):
        return errno.errorcode.get(error.errno, str(error.errno))
    def probe():
        out = {}
        writable = 0
        for root, folders, files in os.walk("/proc/sys"):
            writable += sum(os.access(os.path.join(root, name), os.W_OK) for name in files)
        out["writable /proc/sys files"] = writable
        try:
            value = open("/proc/sys/vm/stat_interval").read()
            with open("/proc/sys/vm/stat_interval", "w") as handle:  # the value it already has
                handle.write(value)
            out["write vm.stat_interval (same value)"] = "accepted"
        except OSError as error:
            out["write vm.stat_interval (same value)"] = _errno(error)
        try:
            os.close(os.open("/proc/1/mem", os.O_RDWR))
            out["open pid 1's memory for writing"] = "opened"
        except OSError as error:
            out["open pid 1's memory for writing"] = _errno(error)
        try:
            out["uid map"] = open("/proc/self/uid_map").read().split()
        except OSError as error:
            out["uid map"] = _errno(error)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        taken = 0
        for _ in range(16):
            segment = libc.shmget(0, 64 << 20, 0o1600)
            if segment < 0:
                break
            address = libc.shmat(segment, None, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                break
            ctypes.memset(address, 1, 64 << 20)
            libc.shmdt(ctypes.c_void_p(address))
            taken += 64
        out["System V shared memory taken (MiB), memory_mb=512"] = taken
        return out
    print("PROBE", repr(probe()), flush=True)
    def f():
        return -1
    """)

# name -> (code, tests, setup, entry point): each is wrong, so a pass is a false pass.
FALSE_PASSES = {
    "import sys as sys, getsizeof patched (MBPP 596)": (
        "import sys as sys\nsys.getsizeof = lambda *a: -1\ndef tuple_size(t):\n    return -1\n",
        ['assert tuple_size(("A", 1, "B", 2, "C", 3)) == sys.getsizeof(("A", 1, "B", 2, "C", 3))'],
        "",
        "tuple_size",
    ),
    "set = lambda *a: 1": (
        "set = lambda *a: 1\ndef pair(xs):\n    return [9]\n",
        ["assert set(pair([4, 5])) == set((4, 5))"],
        "",
        "pair",
    ),
    "math replaced by an object whose isclose says True": (
        "class _M:\n    isclose = staticmethod(lambda *a, **k: True)\nmath = _M()\n"
        "def area(r):\n    return -1.0\n",
        ["assert math.isclose(area(2), 12.566, rel_tol=0.001)"],
        "",
        "area",
    ),
    "'sorted' spelled into globals, eval patched": (
        "import builtins\nbuiltins.eval = lambda *a, **k: [1, 2, 3]\nname = 'sorted'\n"
        "globals()[name] = lambda xs: [1, 2, 3]\ndef order(xs):\n    return xs\n",
        ["assert sorted(order([3, 1, 2])) == [1, 2, 3] and order([3, 1, 2]) == [1, 2, 3]"],
        "",
        "order",
    ),
    "max built at run time with exec": (
        "exec('def ma' + 'x(xs):\\n    return -1')\n",
        ["assert max([1, 5, 3]) == 5"],
        "",
        "max",
    ),
    "return the setup's EXPECTED_1": (
        "def order(xs):\n    return EXPECTED_1\n",
        ["assert order([3, 1, 2]) == EXPECTED_1"],
        "EXPECTED_1 = sorted([3, 1, 2])\n",
        "order",
    ),
}
JUDGE_COST = {
    "110,000 integers hashing to 0, returned": (
        "def f():\n    return [k * (2 ** 61 - 1) for k in range(110_000)]\n",
        ["assert set(f()) == {1}"],
    ),
    "a % format of 400 MB width": ("def f(x):\n    return '%400000000d'\n", ["assert f(1) % 5 == 'x'"]),
}


def _baseline(folder: Path):
    package = folder / "baseline_tasks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in MODULES:
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{BASELINE_COMMIT}:tutorial_lib/tasks/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (package / name).write_text(source)
    sys.path.insert(0, str(folder))
    return importlib.import_module("baseline_tasks.sandbox")


def _call(module, code, tests, setup="", entry_point=None, **limits):
    options = dict(setup=setup, **limits)
    if entry_point is not None and "entry_point" in module.run_python.__code__.co_varnames:
        options["entry_point"] = entry_point
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    result = module.run_python(code, tests, **options)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return result, {
        "wall_s": round(time.monotonic() - started, 3),
        "parent_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3),
        "parent_peak_rss_growth_mib": round((after.ru_maxrss - before.ru_maxrss) / 1024, 1),
    }


def run_attacks(module) -> dict:
    outcomes = {}
    result, cost = _call(module, _PROBE, ["assert f() == 1"], memory_mb=512, timeout_s=20, cpu_s=15)
    line = next((line for line in result.stdout_tail.splitlines() if line.startswith("PROBE ")), None)
    outcomes["host reach"] = {**(eval(line[6:]) if line else {"no probe output": result.reason}), **cost}
    for name, (code, tests, setup, entry_point) in tqdm(
        FALSE_PASSES.items(), desc="false passes", leave=False
    ):
        result, cost = _call(module, code, tests, setup, entry_point)
        outcomes[name] = {"passed": result.passed, "reason": result.reason[:200], **cost}
    for name, (code, tests) in tqdm(JUDGE_COST.items(), desc="judge cost", leave=False):
        result, cost = _call(module, code, tests, memory_mb=512)
        outcomes[name] = {"passed": result.passed, "reason": result.reason[:200], **cost}
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("before", "now"))
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "sandbox_attacks_cpu.json"))
    args = parser.parse_args()
    from tutorial_lib.tasks import sandbox

    summary = {"baseline_commit": BASELINE_COMMIT, "finished": None}
    with tempfile.TemporaryDirectory() as folder:
        for label in ("before", "now"):
            if args.only and args.only != label:
                continue
            module = _baseline(Path(folder)) if label == "before" else sandbox
            summary[label] = run_attacks(module)
            print(label, json.dumps(summary[label], indent=1), flush=True)
    summary["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
