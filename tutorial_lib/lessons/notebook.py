"""Small helpers notebooks share: where a run writes, recording the numbers it shows, and exercise checks.

Where a run writes (a student's run writes only to the student's folders):

- `output_folder(output_dir)`: the metrics JSON of a notebook. An explicit `output_dir` wins; the
  default "." means `$TUTORIAL_LIB_OUTPUT`, else (in a checkout) its git-ignored `build/outputs/`, else
  the folder beside the notebook (`paths.student_folder`).
- `results_folder(results_dir)`: a notebook's results cache (notebook 08): `results_dir`, else
  `$TUTORIAL_LIB_RESULTS`, else `build/results/` of a checkout, else `./results`. The shipped results
  in the package's `data/results/` are still read; nothing is written there.
- figures: `tl.savefig` (`views.figures.figures_dir`, `$TUTORIAL_LIB_FIGURES`).

Exercises (`exercises.EXERCISES`): `check("03-2", answer_2, world=world, ...)` computes the expected
value from the objects the notebook passes, so no notebook cell holds it; a wrong answer gets a hint
about the idea, a non-numeric one a message, never a traceback. In a kernel, `check` also glues the
expected value, as text (`value_text`), under `exercise_glue_name("03-2")` ("exercise_03_2") without
displaying it: the course book's exercises page pastes it into the solution, so each solution shows the
value its executed notebook computed. `solution(...)`, for teachers, gives the value and the way to it;
`expected_value(...)` returns it (for a (method, number) exercise, every method's); `exercise_ids("03")`
lists a notebook's exercises.

The numbers a results page's prose quotes: `glued = glue_values(name=value, ...)` glues each value for the
course book (myst-nb's `glue`) and keeps its text in `glued` (`GLUED`, one per kernel); the prose quotes it
as {eval}`glued["name:.3f"]` (the `name:format` of myst-nb's `{glue:text}` role). JupyterLab with
jupyterlab-myst (`make lab`) evaluates that role in the running kernel and shows the formatted text;
book/build_book.py writes it as {glue:text}`name:.3f` for the book, which formats the same glued value the
same way. `notebook_times(path)` reads the notebooks' measured times as a table.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from pathlib import Path
from typing import Any, List, Mapping, Optional

import numpy as np

from .. import paths
from .exercises import EXERCISES, Exercise, exercise

__all__ = [
    "save_metrics",
    "load_metrics",
    "check_answer",
    "check",
    "solution",
    "exercise_ids",
    "exercise_glue_name",
    "expected_value",
    "value_text",
    "output_folder",
    "results_folder",
    "NOTEBOOK_NEEDS",
    "NOTEBOOK_TIME_COLUMNS",
    "notebook_times",
    "glue_values",
    "Glued",
    "GluedText",
    "GLUED",
    "NotComputedYet",
]


def output_folder(output_dir: Optional[os.PathLike] = ".") -> Path:
    """Where a notebook writes its metrics JSON: `output_dir`, or for the default "." (or None)
    `$TUTORIAL_LIB_OUTPUT`, else `build/outputs/` of the checkout the current directory lies in, else
    the current directory (beside the notebook). Never a checkout's `notebooks/` folder by default."""
    if output_dir is not None and str(output_dir) not in ("", "."):
        return Path(output_dir)
    if os.environ.get("TUTORIAL_LIB_OUTPUT"):
        return Path(os.environ["TUTORIAL_LIB_OUTPUT"])
    checkout = paths.checkout_of(Path.cwd())
    return checkout / "build" / "outputs" if checkout is not None else Path.cwd()


def results_folder(results_dir: Optional[os.PathLike] = None) -> Path:
    """Where a notebook caches results it computes: `results_dir`, else `$TUTORIAL_LIB_RESULTS`, else the
    git-ignored `build/results/` of the checkout the current directory lies in, else `./results` beside
    the notebook; never the installed package."""
    if results_dir is not None and str(results_dir) != "":
        return Path(results_dir)
    if os.environ.get("TUTORIAL_LIB_RESULTS"):
        return Path(os.environ["TUTORIAL_LIB_RESULTS"])
    return paths.student_folder("results")


def _plain(value: Any) -> Any:
    """JSON-friendly copy: tensors and numpy scalars become floats or lists, inf/NaN become strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def save_metrics(name: str, metrics: Mapping[str, Any], output_dir: str = ".") -> Path:
    """Write `<output_folder(output_dir)>/<name>.metrics.json` so tests and CI can assert what a notebook
    showed."""
    out = output_folder(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.metrics.json"
    path.write_text(json.dumps(_plain(dict(metrics)), indent=2, sort_keys=True))
    return path


def load_metrics(name: str, output_dir: str = ".") -> dict:
    return json.loads((output_folder(output_dir) / f"{name}.metrics.json").read_text())


def check_answer(
    answer: Optional[float], expected: float, *, tol: float = 1e-6, label: str = "answer"
) -> Optional[bool]:
    """Print whether an exercise `answer` is within `tol` of `expected`; `None` means not tried yet."""
    if answer is None:
        print(f"{label}: not answered yet - replace None with your value and run this cell again.")
        return None
    ok = abs(float(answer) - float(expected)) <= tol
    print(f"{label}: {'correct' if ok else 'not quite'} (you gave {float(answer):.6g}).")
    return ok


# --------------------------------------------------------------------------------------------
# Exercises: checks that do not tell the answer
# --------------------------------------------------------------------------------------------


def exercise_ids(notebook: Optional[str] = None) -> List[str]:
    """The exercises' ids ("03-2"), of one notebook ("03") or of all."""
    return [i for i in EXERCISES if notebook is None or i.split("-")[0] == str(notebook)]


def _objects(spec: Exercise, objects: Mapping[str, Any], function: str) -> dict:
    missing = [name for name in spec.needs if name not in objects]
    extra = [name for name in objects if name not in spec.needs]
    if missing or extra:
        wanted = ", ".join(f"{n}={n}" for n in spec.needs) or "nothing more"
        raise ValueError(
            f"{function}({spec.id!r}, ...) needs {wanted}; got {', '.join(objects) or 'none'} "
            f"(missing: {', '.join(missing) or '-'}; not used: {', '.join(extra) or '-'})."
        )
    return dict(objects)


def _number(answer: Any) -> Optional[float]:
    """`answer` as a float if it is a single number (a Python, numpy or torch scalar), else None."""
    if isinstance(answer, bool):
        return None
    if hasattr(answer, "numel") and getattr(answer, "numel")() == 1:  # a one-element tensor
        answer = answer.item()
    elif (
        hasattr(answer, "ndim") and getattr(answer, "ndim") == 0 and hasattr(answer, "item")
    ):  # a numpy scalar
        answer = answer.item()
    if isinstance(answer, numbers.Real) and not isinstance(answer, bool):
        value = float(answer)
        return value if math.isfinite(value) else None
    return None


def _close(answer: float, expected: float, tol: float) -> bool:
    return math.isclose(answer, float(expected), rel_tol=1e-9, abs_tol=tol)


def exercise_glue_name(exercise_id: str) -> str:
    """The name `check` glues exercise `exercise_id`'s expected value under: "03-2" -> "exercise_03_2"."""
    return "exercise_" + exercise(exercise_id).id.replace("-", "_")


def expected_value(exercise_id: str, **objects) -> Any:
    """The expected answer of `exercise_id`, computed from the notebook's `objects` as `check` does. For a
    (method, number) exercise, whose value depends on the method the student picks, {method: value} for
    every method of `objects["table"]` that has a row where the exercise looks."""
    spec = exercise(exercise_id)
    given = _objects(spec, objects, "expected_value")
    if spec.kind != "method_and_number":
        return spec.solve(**given)
    values = {}
    for method in dict.fromkeys(given["table"]["method"]):
        try:
            values[str(method)] = spec.solve(**given, method=method)
        except ValueError:  # no row of this method at the exercise's temperature, task or gamma
            continue
    return values


def value_text(value: Any) -> str:
    """`value` as a solution shows it: a number with six significant digits (a whole one as a whole
    number), a list or array as `[a, b, c]`, a mapping as `key: value; key: value`, None as "none"."""
    if isinstance(value, Mapping):
        return "; ".join(f"{key}: {value_text(item)}" for key, item in value.items())
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    number = _number(value)
    if number is not None:
        return str(int(number)) if number.is_integer() and abs(number) < 1e12 else f"{number:.6g}"
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    return "none" if value is None else str(value)


def _in_kernel() -> bool:
    """True in a Jupyter kernel (a notebook, papermill), where a glued value goes into the cell's outputs;
    elsewhere IPython's `display` would print it, and give the answer away."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def _glue_expected(spec: Exercise, given: Mapping[str, Any]) -> None:
    if _in_kernel():
        glue_values(**{exercise_glue_name(spec.id): value_text(expected_value(spec.id, **given))})


def check(exercise_id: str, answer: Any, **objects) -> Optional[bool]:
    """Say whether `answer` to exercise `exercise_id` is right, without showing the expected value.

    `objects` are what the exercise is about (`exercises.EXERCISES[exercise_id].needs`), passed by the
    notebook's check cell; the expected value is computed from them here. Prints one line: not answered
    yet (None), correct, not quite with a hint about the idea, or what kind of answer is expected when
    `answer` is not one (a word, a list, NaN). Returns True, False, or None when there is nothing to judge.
    In a kernel the expected value is glued, not displayed, for the book's solution (`value_text`).
    """
    spec = exercise(exercise_id)
    given = _objects(spec, objects, "check")
    _glue_expected(spec, given)
    label = f"exercise {spec.id}"
    if answer is None:
        print(f"{label}: not answered yet - replace None with your answer and run this cell again.")
        return None
    if spec.kind == "method_and_number":
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2 and isinstance(answer[0], str)):
            print(
                f'{label}: expected a pair (method name, number), e.g. ("SpecCascade [OPT]", 0.42), or '
                f'(name, "not reached"); you gave {answer!r}.'
            )
            return None
        method, value = answer
        try:
            expected = spec.solve(**given, method=method)
        except ValueError as error:
            print(f"{label}: {error}")
            return None
        if expected == "not reached" or value == "not reached":
            ok = value == expected
        else:
            number = _number(value)
            if number is None:
                print(f'{label}: the second part should be a number or "not reached"; you gave {value!r}.')
                return None
            ok = _close(number, expected, spec.tol)
    elif spec.kind == "choice":
        if not isinstance(answer, str):
            print(f"{label}: expected a name (text in quotes); you gave {type(answer).__name__} {answer!r}.")
            return None
        if spec.choices and answer.strip().lower() not in spec.choices:
            print(
                f"{label}: answer with one of {', '.join(repr(c) for c in spec.choices)}; "
                f"you gave {answer!r}."
            )
            return None
        ok = answer.strip().lower() == str(spec.solve(**given)).strip().lower()
    else:
        number = _number(answer)
        if number is None:
            whole = " whole" if spec.kind == "integer" else ""
            print(
                f"{label}: expected a single{whole} number (such as 0.25 or float(...) of your result); "
                f"you gave {type(answer).__name__} {answer!r}."
            )
            return None
        if spec.kind == "integer" and number != int(number):
            print(f"{label}: expected a whole number; you gave {number:g}.")
            return None
        ok = _close(number, spec.solve(**given), spec.tol)
    print(f"{label}: correct." if ok else f"{label}: not quite. Hint: {spec.hint}")
    return ok


def solution(exercise_id: str, **objects) -> Any:
    """For teachers: the expected answer of `exercise_id` (computed from the same `objects` as `check`),
    printed with the way to it. For a (method, number) exercise pass `method=` as well."""
    spec = exercise(exercise_id)
    method = objects.pop("method", None)
    given = _objects(spec, objects, "solution")
    if spec.kind == "method_and_number":
        if method is None:
            raise ValueError(f"solution({spec.id!r}, ...) needs method='<a method of the table>' as well.")
        value = spec.solve(**given, method=method)
    else:
        value = spec.solve(**given)
    print(f"exercise {spec.id} ({spec.question}): {value!r}. How: {spec.explain}")
    return value


#: What each notebook needs beyond the package (the course book's time table).
NOTEBOOK_NEEDS = {
    "00": "nothing",
    "01": "nothing",
    "02": "nothing",
    "03": "nothing",
    "04": "nothing",
    "05": "nothing",
    "06": "the shipped T5 pair (`data/models/`)",
    "07": "the Qwen pair (`make models-qwen`), or `redraw_only=True`",
    "08": "the Qwen pair",
    "09": "SmolLM2-135M",
    "10": "SmolLM2-135M; the committed Qwen features",
}
#: The columns of `notebook_times`, in order.
NOTEBOOK_TIME_COLUMNS = ("notebook", "needs", "seconds", "slowest_cell_s", "load", "finished", "beside")


def notebook_times(path: Path):
    """The time of each notebook at its defaults: the newest run of each in `path` (JSON lines of `make
    run-notebooks`: notebook, seconds, slowest cell, load average at its end, when it finished, what else
    the machine was doing), one row per notebook in name order, with what it needs (`NOTEBOOK_NEEDS`)."""
    import pandas as pd

    runs = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            entry = json.loads(line)
            if not isinstance(entry, dict) or "notebook" not in entry or "seconds" not in entry:
                raise ValueError(
                    f"{path}, line {number}: not a notebook's time (a JSON object with `notebook` and "
                    "`seconds`, as `make run-notebooks` appends); delete or fix that line."
                )
            runs[entry["notebook"]] = entry  # a later line is a later run
    rows = [
        {
            "notebook": name,
            "needs": NOTEBOOK_NEEDS.get(name[:2], ""),
            "seconds": runs[name]["seconds"],
            "slowest_cell_s": runs[name].get("slowest_cell_s"),
            "load": runs[name].get("load", ""),
            "finished": runs[name].get("finished", ""),
            "beside": runs[name].get("beside", ""),
        }
        for name in sorted(runs)
    ]
    return pd.DataFrame(rows, columns=list(NOTEBOOK_TIME_COLUMNS))


class GluedText:
    """A glued value as the prose shows it: its repr is the formatted text itself (no quotes), so that
    jupyterlab-myst's `{eval}` role, which shows the text/plain repr of what it evaluates, prints `86.5`
    where a `str` would print `'86.5'`."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's text/plain
        printer.text(self.text)

    def __eq__(self, other) -> bool:
        return self.text == (other.text if isinstance(other, GluedText) else other)

    def __hash__(self) -> int:
        return hash(self.text)


class NotComputedYet(LookupError):
    """A name the prose quotes that no cell of this kernel has glued yet (a cell further down computes it)."""


def _name_and_format(role: str) -> tuple[str, str]:
    """`"name:.3f"` -> ("name", ".3f"); `"name"` -> ("name", "s"): the split of myst-nb's `{glue:text}`."""
    if not isinstance(role, str) or "::" in role:
        raise KeyError(
            f'glued[{role!r}]: quote a value of this notebook as glued["name"] or glued["name:format"]'
        )
    name, _, spec = role.rpartition(":") if ":" in role else (role, "", "s")
    return name, spec


class Glued:
    """The texts a notebook's prose quotes, one per glued name: `glued["name:.3f"]` is the value glued as
    `name` (`glue_values`) formatted with `.3f`, as a `GluedText`; `glued["name"]` is its plain text.

    The text is the one the book shows for {glue:text}`name:.3f`: myst-nb's own formatting
    (`myst_nb.core.variables.format_plain_text`) of the value's text/plain repr, which is what its glue
    records. A name no cell has glued yet raises `NotComputedYet`, naming the cell to run."""

    def __init__(self) -> None:
        self._plain: dict = {}

    def keep(self, name: str, value) -> None:
        """Keep `value`'s text/plain repr under `name` (as myst-nb's glue records it)."""
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:  # a kernel: its own formatter, as myst-nb's glue uses
            plain = shell.display_formatter.formatters["text/plain"](value)
        else:
            from IPython.lib.pretty import pretty

            plain = pretty(value)
        self._plain[name] = plain

    def __getitem__(self, role: str) -> GluedText:
        from myst_nb.core.variables import format_plain_text

        name, spec = _name_and_format(role)
        if name not in self._plain:
            raise NotComputedYet(
                f"{name} is computed by a cell further down: run that cell (Run All runs every cell), "
                "then this text cell again"
            )
        return GluedText(format_plain_text(self._plain[name], spec))

    def __contains__(self, name) -> bool:
        return name in self._plain

    def names(self) -> list:
        """The glued names, in the order they were first glued."""
        return list(self._plain)

    def __repr__(self) -> str:
        shown = ", ".join(self.names()[:8]) + (", ..." if len(self._plain) > 8 else "")
        return f'<glued: {len(self._plain)} values ({shown}); quote one as glued["name:.3f"]>'


#: The glued texts of this kernel (`glue_values` returns it): a notebook binds it as `glued`, and its
#: prose quotes {eval}`glued["name:format"]`.
GLUED = Glued()


def glue_values(**values) -> Glued:
    """Glue each value under its name for the course book (myst-nb's `glue`, not displayed) and keep its
    text in `GLUED`, which is returned: a cell binds it, `glued = glue_values(bleu=bleu, ...)`, and the prose
    quotes {eval}`glued["bleu:.1f"]`. JupyterLab with jupyterlab-myst shows the formatted number there; the
    book (book/build_book.py) renders the role as myst-nb's {glue:text}`bleu:.1f`, the same text. So a
    number in the prose is the number this run computed. numpy scalars are glued as Python numbers, so that
    a format spec applies to them."""
    from myst_nb import glue

    for name, value in values.items():
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (str, numbers.Number)):
            raise TypeError(
                f"glue_values({name}=...) got a {type(value).__name__}; glue a number or a string "
                "(show a table with its own cell)."
            )
        glue(name, value, display=False)
        GLUED.keep(name, value)
    return GLUED
