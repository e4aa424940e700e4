"""The package's architecture, checked: wings import only downward, no circles, no private reaches,
only `views/` draws, notebooks hold no definitions, modules and folders stay small, and a light import."""

import ast
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tutorial_lib

ROOT = Path(tutorial_lib.__file__).resolve().parent
REPO = ROOT.parent
#: A wing may import from a wing of lower rank (and from itself); `checks` and `paths` are the floor.
RANK = {
    "": 0,
    "maths": 1,
    "toy": 2,
    "models": 3,
    "decoding": 4,
    "tasks": 4,
    "lessons": 5,
    "sweeps": 5,
    "stats": 6,
    "views": 7,
}
DRAWING = ("matplotlib", "seaborn", "plotly", "ipywidgets")
HEAVY = ("matplotlib", "pandas", "scipy", "transformers", "plotly", "ipywidgets")
#: The lab: the reruns' harness (tasks, sweeps), the sweep statistics and the views of the reruns' results.
LAB = ("tasks", "sweeps", "stats", "views.reruns", "views.verdicts", "views.token_analysis")
#: What lessons 00-05, 09 and 10 load: the maths, the toy worlds, the lessons' maths and the
#: views they draw with.
LESSON_VIEWS = (
    "figures",
    "panels",
    "static",
    "widgets",
    "targets",
    "lemmas.deferral_risks",
    "lemmas.lossy",
    "lemmas.tradeoff",
    "toy",
    "speed",
)
LESSON = ("maths", "toy", "lessons", *(f"views.{view}" for view in LESSON_VIEWS))


def _modules():
    """{dotted name under tutorial_lib: path}; a package is named by its folder."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _wing(module: str) -> str:
    head = module.split(".")[0]
    return head if head in RANK else ""


def _imports(module: str, path: Path):
    """(target module, imported names, line) of every tutorial_lib import in `module`, at any depth."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = [p for p in package if p]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "tutorial_lib":
                target = node.module.partition(".")[2]
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                if sub in MODULES:  # a module imported from its package
                    yield sub, [], node.lineno
                else:
                    yield target, [alias.name], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tutorial_lib":
                    yield alias.name.partition(".")[2], [], node.lineno


def _third_party(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name.split(".")[0], node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0], node.lineno


def test_wings_import_only_downward():
    upward = []
    for module, path in MODULES.items():
        if module == "":
            continue
        for target, _, line in _imports(module, path):
            source_wing, target_wing = _wing(module), _wing(target)
            if target == "" or (source_wing != target_wing and RANK[target_wing] >= RANK[source_wing]):
                upward.append(f"{path.relative_to(REPO)}:{line} imports tutorial_lib.{target}")
    assert not upward, "imports that go up or sideways between wings:\n" + "\n".join(upward)


def test_no_import_circle():
    graph = {m: {t for t, _, _ in _imports(m, p) if t in MODULES and t != m} for m, p in MODULES.items()}
    state, stack, circles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not circles, "import circles:\n" + "\n".join(circles)


def _top_level_names(path: Path):
    """Names a module binds at its top level (defs, classes, assignments, imports) and, where a module
    `__getattr__` loads them lazily, its `__all__`; None where that `__all__` is not a literal."""
    names, lazy, exported = set(), False, None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                exported = set(ast.literal_eval(node.value))
            except ValueError:  # built by code: cannot be read here
                pass
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lazy |= node.name == "__getattr__"
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try)):
            names.update(
                n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
            names.update(n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
            names.update(
                (a.asname or a.name).split(".")[0]
                for n in ast.walk(node)
                if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names
            )
    if lazy:  # a wing's index page loads the modules of its `__all__` on first use
        return None if exported is None else names | exported
    return names


def test_every_import_names_a_module_or_name_that_exists():
    # An import inside a function runs only when the function does: a moved module there fails late,
    # in a user's notebook (stats.analysis once imported `pricing` from `sweeps`).
    missing = []
    for module, path in MODULES.items():
        for target, names, line in _imports(module, path):
            where = f"{path.relative_to(REPO)}:{line}"
            if target not in MODULES:
                missing.append(f"{where} imports tutorial_lib.{target}, which is no module")
                continue
            bound = _top_level_names(MODULES[target])
            missing += [
                f"{where} imports {name} from tutorial_lib.{target}, which does not bind it"
                for name in names
                if bound is not None and name not in bound and name != "*"
            ]
    assert not missing, "\n".join(missing)


def test_no_private_name_imported_from_another_module():
    reaches = [
        f"{path.relative_to(REPO)}:{line} imports {name} from tutorial_lib.{target}"
        for module, path in MODULES.items()
        for target, names, line in _imports(module, path)
        for name in names
        if name.startswith("_") and not name.startswith("__") and target != module
    ]
    assert not reaches, "\n".join(reaches)


def test_only_views_import_a_plotting_library():
    outside = [
        f"{path.relative_to(REPO)}:{line} imports {lib}"
        for module, path in MODULES.items()
        if _wing(module) != "views"
        for lib, line in _third_party(path)
        if lib in DRAWING
    ]
    assert not outside, "\n".join(outside)


def test_modules_and_folders_stay_small():
    long = [
        f"{p.relative_to(REPO)}: {n} lines"
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    ]
    assert not long, "modules over 600 lines:\n" + "\n".join(long)
    crowded = [
        f"{folder.relative_to(REPO)}: {n} modules"
        for folder in [ROOT, *ROOT.iterdir()]
        if folder.is_dir()
        if (n := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > 12
    ]
    assert not crowded, "folders with more than 12 modules:\n" + "\n".join(crowded)


def test_every_wing_has_an_index_page():
    for wing in tutorial_lib.WINGS:
        init = ROOT / wing / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        modules = sorted(p.stem for p in (ROOT / wing).glob("*.py") if p.name != "__init__.py")
        missing = [m for m in modules if f"`{m}`" not in doc]
        assert not missing, f"tutorial_lib/{wing}/__init__.py's docstring does not list {missing}"


@pytest.mark.parametrize("notebook", sorted((REPO / "notebooks").glob("*.py")), ids=lambda p: p.name)
def test_notebooks_define_no_function_or_class(notebook):
    tree = ast.parse(notebook.read_text(encoding="utf-8"))
    defined = [
        f"line {n.lineno}: {n.name}"
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    assert not defined, f"{notebook.name} defines {defined}: define it in the library and call it"


def test_the_package_imports_light():
    """`import tutorial_lib` loads no wing and none of the heavy libraries, and leaves matplotlib's backend
    alone."""
    code = (
        "import sys, tutorial_lib as tl; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules)); "
        "print(','.join(m for m in sys.modules if m.startswith('tutorial_lib.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"MPLBACKEND": "", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    ).stdout.splitlines()
    assert out == ["", ""], f"loaded by `import tutorial_lib`: {out}"


def _docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
    ]
    return "\n".join(doc for n in nodes if (doc := ast.get_docstring(n)))


#: Where a reader meets a dotted path to copy: the notebooks, the READMEs, the benchmarks, the book, the
#: docstrings.
PROSE = sorted(
    [
        *REPO.glob("*.md"),
        *(REPO / "data").rglob("README.md"),
        *(REPO / "notebooks").glob("*.py"),
        *(REPO / "benchmarks").glob("*.py"),
        *(REPO / "book").rglob("*.md"),
        *MODULES.values(),
    ]
)
DOTTED = re.compile(
    r"(?<![\w.])(tl|tutorial_lib)((?:\.[A-Za-z_][A-Za-z_0-9]*)+)(?![\w{])"
)  # not an f-string's template


def _resolves(head: str, parts) -> bool:
    """Whether `tutorial_lib.<parts>` names a module or an attribute reached through modules (past the last
    module, a method or a field is not followed); `tl.<parts>` is the same path
    (`import tutorial_lib as tl`)."""
    obj = importlib.import_module("tutorial_lib")
    for depth, part in enumerate(parts):
        if not isinstance(obj, types.ModuleType):
            return True
        try:
            obj = getattr(obj, part)
        except AttributeError:
            name = ".".join(["tutorial_lib", *parts[: depth + 1]])
            try:  # a module its package does not load (a wing's __getattr__ does; a plain package may not)
                obj = importlib.import_module(name)
            except ImportError:
                return False
    return True


@pytest.mark.parametrize("path", PROSE, ids=lambda p: str(p.relative_to(REPO)))
def test_every_dotted_path_a_reader_meets_imports(path):
    """`tl.stats.intervals`, `tutorial_lib.sweeps.evaluation.run_sweep`, ... named in prose, a notebook, a
    benchmark or a docstring is what a reader copies: each one must import (a stale or flat name fails)."""
    text = _docstrings(path) if path.is_relative_to(ROOT) else path.read_text(encoding="utf-8")
    broken = sorted(
        {m.group(0) for m in DOTTED.finditer(text) if not _resolves(m.group(1), m.group(2).split(".")[1:])}
    )
    assert not broken, f"{path.relative_to(REPO)} names paths that do not import: {', '.join(broken)}"


def _in(module: str, parts) -> bool:
    return any(module == part or module.startswith(part + ".") for part in parts)


def test_no_lesson_module_reaches_the_lab():
    """A lesson's module never imports the lab, directly or through another module (imports inside
    functions count: they run when the lesson calls them)."""
    graph = {m: {t for t, _, _ in _imports(m, p) if t in MODULES and t != m} for m, p in MODULES.items()}
    reached = []
    for module in sorted(m for m in MODULES if _in(m, LESSON)):
        seen, todo = set(), [module]
        while todo:
            for nxt in sorted(graph[todo.pop()] - seen):
                seen.add(nxt)
                todo.append(nxt)
        reached += [
            f"tutorial_lib.{module} reaches tutorial_lib.{lab}" for lab in sorted(seen) if _in(lab, LAB)
        ]
    assert not reached, "lessons that load the lab:\n" + "\n".join(reached)


#: Most modules a lesson view may load cold (all of Python's own and its libraries' included; before the lab
#: was set apart every view loaded 2,498, seaborn, scipy and pandas with them). Timing belongs in benchmarks:
#: this counts modules, which a slower machine does not change.
COLD_IMPORT_CAPS = {
    "figures": 700,
    "panels": 700,
    "static": 700,
    "widgets": 800,
    "targets": 1700,
    "lemmas.deferral_risks": 1700,
    "lemmas.lossy": 1700,
    "lemmas.tradeoff": 1700,
    "toy": 2300,
    "speed": 2100,
}
#: Libraries no lesson view loads cold (seaborn only for a heatmap or more than ten colours, when drawn).
NOT_FOR_LESSONS = ("seaborn", "transformers", "datasets", "sklearn")
#: The views that only draw (no lesson's maths): they load no torch either (`tl.savefig` is one of them).
DRAWING_ONLY = ("figures", "panels", "static", "widgets")


@pytest.mark.parametrize("view", sorted(COLD_IMPORT_CAPS))
def test_a_lesson_view_loads_cold_without_the_lab(view):
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import tutorial_lib.views.{view}"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg", "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = [
        line.rpartition("|")[2].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and not line.rstrip().endswith("imported package")
    ]
    lab = [m for m in loaded if _in(m.removeprefix("tutorial_lib."), LAB) and m.startswith("tutorial_lib.")]
    heavy = [m for m in loaded if m in NOT_FOR_LESSONS or (view in DRAWING_ONLY and m == "torch")]
    assert not lab and not heavy, f"tutorial_lib.views.{view} loads {lab + heavy}"
    assert len(loaded) <= COLD_IMPORT_CAPS[view], (
        f"tutorial_lib.views.{view} loads {len(loaded)} modules cold (cap {COLD_IMPORT_CAPS[view]})"
    )
