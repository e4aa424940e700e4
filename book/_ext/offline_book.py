"""The book's own Sphinx hooks: the library's docstrings with their equations, and solutions closed.

- The docstrings of `tutorial_lib` write maths as Markdown does, `$...$` inline and `$$...$$` on lines of
  their own, and tables as Markdown tables; autodoc reads reStructuredText, so each docstring's maths
  becomes `:math:` roles and `.. math::` blocks, and each table a `list-table`, before autodoc parses it
  (code in backticks is left as it is).
- A package's `__init__` re-exports its modules' names (its `__all__`): each class and function is described
  once, on the page of the module that defines it, and the package's page lists its modules, so no object is
  described twice and no cross-reference has two targets.
- Every `{solution}` of sphinx-exercise is a closed dropdown (sphinx-togglebutton opens it on a click),
  whether or not its page asks for `:class: dropdown`: a reader sees the exercise first.
- Every image of a notebook's output gets the words that describe it as its alt text, where myst-nb would
  write the image's file name: book/build_book.py stages `IMAGE_ALT_FILE`, {image file: description}, the
  description being the figure's text form (`tutorial_lib.views.static.figure_description`).
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

#: {an output image's file name (myst-nb names it by its sha256): its alt text}, in the source folder.
IMAGE_ALT_FILE = "_image_alt.json"

_CODE_OR_MATH = re.compile(r"(``.+?``|`[^`]+`|\$\$.+?\$\$|\$[^$\s](?:[^$]*?[^$\s])?\$)")


def _inline(line: str) -> str:
    """`$x$` (and `$$x$$` inside a sentence) -> :math:`x`, escaped where a word character touches it."""
    parts = _CODE_OR_MATH.split(line)
    out = []
    for k, part in enumerate(parts):
        if part.startswith("`"):
            out.append(part)
            continue
        if k % 2 == 0:  # prose: a bar is |x| or a Markdown table's, never a reST substitution
            out.append(part.replace("|", "\\|"))
            continue
        latex = part.strip("$").replace("`", r"\`")
        before = (
            "\\ " if out and out[-1] and not out[-1][-1].isspace() and out[-1][-1] not in "([{'\"" else ""
        )
        out.append(f"{before}:math:`{latex}`")
        after = parts[k + 1] if k + 1 < len(parts) else ""
        if after and (after[0].isalnum() or after[0] in "_"):
            out.append("\\ ")
    return "".join(out)


_TABLE_RULE = re.compile(r"^\|[\s:|-]+\|$")


def _is_table_start(lines: list[str], k: int) -> bool:
    """A Markdown table: a `| a | b |` line over a `|---|---|` rule."""
    return (
        lines[k].strip().startswith("|")
        and k + 1 < len(lines)
        and _TABLE_RULE.match(lines[k + 1].strip()) is not None
    )


def _table(lines: list[str], k: int, out: list[str]) -> int:
    """The Markdown table at line `k` as a reST list-table appended to `out`; returns the line after it."""
    indent = lines[k][: len(lines[k]) - len(lines[k].lstrip())]
    rows = []
    while k < len(lines) and lines[k].strip().startswith("|"):
        if not _TABLE_RULE.match(lines[k].strip()):
            rows.append([cell.strip() for cell in lines[k].strip().strip("|").split("|")])
        k += 1
    out += ["", f"{indent}.. list-table::", f"{indent}   :header-rows: 1", ""]
    for row in rows:
        for j, cell in enumerate(row):
            out.append(f"{indent}   {'* -' if j == 0 else '  -'} {_inline(cell) if cell else ''}".rstrip())
    out.append("")
    return k


def markdown_math_to_rst(lines: list[str]) -> list[str]:
    """A docstring's lines with Markdown maths turned into reStructuredText maths: a line that starts with
    `$$` opens a `.. math::` block up to the next `$$`; `$...$` elsewhere becomes a `:math:` role."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        stripped = line.strip()
        if _is_table_start(lines, k):
            k = _table(lines, k, out)
            continue
        if not stripped.startswith("$$"):
            out.append(_inline(line))
            k += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        rest, body, tail = stripped[2:], [], ""
        while True:
            end = rest.find("$$")
            if end >= 0:
                body.append(rest[:end])
                tail = rest[end + 2 :].strip()
                break
            body.append(rest)
            k += 1
            if k == len(lines):
                break
            rest = lines[k].strip()
        out += [
            "",
            f"{indent}.. math::",
            "",
            f"{indent}   " + " ".join(b.strip() for b in body if b.strip()),
            "",
        ]
        if tail.strip(".,;:"):
            out.append(indent + _inline(tail))
        k += 1
    return out


def _docstring_maths(app, what, name, obj, options, lines):
    lines[:] = markdown_math_to_rst(lines)


def _close_solutions(app, doctree):
    from sphinx_exercise.nodes import solution_node

    for node in doctree.findall(solution_node):
        if "dropdown" not in node["classes"]:
            node["classes"].append("dropdown")


def _describe_images(app, doctree):
    path = Path(app.srcdir) / IMAGE_ALT_FILE
    if not path.exists():
        return
    alts = json.loads(path.read_text(encoding="utf-8"))
    from docutils import nodes

    for node in doctree.findall(nodes.image):
        alt = alts.get(Path(node["uri"]).name)
        if alt and not node.get("alt"):
            node["alt"] = alt


def _described_where_defined(app, what, name, obj, skip, options):
    """Skip a class or function of the library on a module's page that only imports it from the module
    whose page describes it."""
    here = app.env.temp_data.get("autodoc:module")
    defined = getattr(obj, "__module__", None)
    if what != "module" or skip or not here or not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return None
    if not isinstance(defined, str) or defined.split(".")[0] != "tutorial_lib" or defined == here:
        return None
    # described on its own module's page only where that page lists it (its `__all__`)
    return True if name in getattr(sys.modules.get(defined), "__all__", ()) else None


def setup(app):
    app.connect("autodoc-process-docstring", _docstring_maths)
    app.connect("autodoc-skip-member", _described_where_defined)
    app.connect("doctree-read", _close_solutions)
    app.connect("doctree-read", _describe_images)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
