"""The book's reference pages: the equations page names functions that exist and writes its formulas as
maths, and the glossary defines every symbol and rule the lessons use, in the table of contents and linked
from the landing page."""

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "book" / "reference"


def _table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the page's Markdown tables."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    rows = [line.strip().strip("|").split(" | ") for line in lines]
    return [[cell.strip() for cell in row] for row in rows if not re.fullmatch(r"[\s|:-]+", "|".join(row))][
        1:
    ]


def _resolve(dotted: str):
    """`maths.laws.tv_distance` (relative to `tutorial_lib`, or `tl.`) as the object it names."""
    parts = dotted.split(".")
    parts = parts[1:] if parts[0] == "tl" else parts
    obj, module = importlib.import_module("tutorial_lib"), "tutorial_lib"
    for part in parts:
        module += "." + part
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(module)
    return obj


def test_every_function_the_equations_page_names_exists():
    rows = _table_rows((REFERENCE / "equations.md").read_text(encoding="utf-8"))
    assert len(rows) >= 35 and all(len(row) == 3 for row in rows)
    named = [name for row in rows for name in re.findall(r"`([^`]+)`", row[2])]
    checked = 0
    for name in named:
        base = re.sub(r"\(.*$", "", name)
        if "/" in base:
            assert (REPO / base).exists(), base
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", base):
            _resolve(base)
            checked += 1
    assert checked >= 90


def test_the_equations_page_writes_its_formulas_as_maths():
    text = (REFERENCE / "equations.md").read_text(encoding="utf-8")
    rows = _table_rows(text)
    for row in rows:
        for cell in row[:2]:  # the paper's item and what it is: code only for names, never a formula
            spans = re.findall(r"`([^`]+)`", cell)
            assert all(" " not in span for span in spans), f"a formula in code, not maths: {spans}"
    assert text.count("$") >= 100 and text.count("$") % 2 == 0
    for formula in (
        r"D_{TV}(p, q) = \sum_v",
        r"\dfrac{1 - a^{\gamma+1}}{(1 - a)(\gamma c + 1)}",
        r"\tau(\gamma)",
    ):
        assert formula in text
    no_code = re.sub(r"`[^`]*`", "", text)
    assert "|" not in "".join(re.findall(r"\$[^$]*\$", no_code)), "a bar inside maths splits a table cell"


GLOSSARY_SYMBOLS = [
    "$q$",
    "$p$",
    r"$\pi",
    r"$\alpha$",
    r"$\beta$",
    r"$\gamma$",
    "$c$",
    "$T$",
    "$D_{TV}(p, q)$",
]
GLOSSARY_RULES = {
    "SpecDecode": '`rule="spec"`',
    "Lossy": '`rule="lossy"`, `beta=1`',
    r"Lossy\*": '`beta="normalize"`',
    "BiLD": '`method="bild"`',
    r"BiLD\*": '`rule="bild"`',
    "Chow": '`rule="chow"`',
    "Diff": '`rule="diff"`',
    "OPT": '`rule="opt"`',
    "Token-V1": '`rule="token_v1"`',
    "Token-V2": '`rule="token_v2"`',
    "Token-V3": '`rule="token_v3"`',
    "Mixture": '`rule="mixture"`',
    "SeqCascade [Chow]": '`method="seq_cascade"`',
    "TokenCascade [Chow]": '`method="token_cascade"`',
}


def test_the_glossary_defines_every_symbol_and_rule():
    text = (REFERENCE / "glossary.md").read_text(encoding="utf-8")
    assert text.startswith("# ") and len(re.findall(r"^# ", text, flags=re.M)) == 1
    rows = {row[0]: row for row in _table_rows(text)}
    for symbol in GLOSSARY_SYMBOLS:
        assert any(name.startswith(symbol) or f", {symbol}" in name for name in rows), symbol
    assert "drafter's cost relative to the verifier" in rows["$c$"][1]
    assert "**Rejection rate.**" in text and "**Deferral rate.**" in text
    from tutorial_lib.decoding.options import METHODS
    from tutorial_lib.maths.rules import RULE_TABLE

    for name, ids in GLOSSARY_RULES.items():
        assert name in rows and ids in rows[name][1], name
        for kind, value in re.findall(r'`(rule|method)="(\w+)"`', rows[name][1]):
            assert value in (RULE_TABLE if kind == "rule" else METHODS), value


@pytest.mark.parametrize("page", ["intro.md", "lessons/index.md", "reference/index.md"])
def test_the_glossary_is_in_the_book_and_linked_from_the_start(page):
    toc = (REPO / "book" / "_toc.yml").read_text()
    assert "file: reference/glossary" in toc
    text = (REPO / "book" / page).read_text()
    target = re.search(r"\]\(([^)]*glossary\.md)\)", text)
    assert target and ((REPO / "book" / page).parent / target.group(1)).resolve() == REFERENCE / "glossary.md"
