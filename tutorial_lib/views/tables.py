"""Tables as a page shows them: every cell readable, every table as wide as the page.

`page_table(frame, blank=..., unbounded=..., keys=...)` returns a table that a notebook displays (HTML, and
plain text for places without HTML) in place of a pandas DataFrame's own display, which prints a missing
value as `NaN`, an infinite one as `inf` and cuts a wide table's middle columns and long texts to `...`:

- a missing cell reads as what it means for its column (`blank`: {column: words}), an infinite one as what
  an infinity means there (`unbounded`: {column: words}, or {column: (words for -inf, words for +inf)}); a
  column that has such a cell and no words for it gets `MISSING` or `NO_FINITE_VALUE`, and the table a
  line under itself that says so;
- an infinity written inside a text (`"not reached [-inf, inf]"`, an interval a library wrote into a
  sentence) reads as `infinite_in_text` where that is given (`"unbounded"`);
- a table of more than `columns_per_part` columns is split into parts of at most that many, each
  repeating the `keys` columns (which say what a row is), and long texts wrap in their cells;
- numbers are rounded to `digits` decimals.
"""

from __future__ import annotations

import html
import math
import re
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

__all__ = ["MISSING", "NO_FINITE_VALUE", "PageTable", "page_table", "CLAIM_BLANKS", "claims_page"]

#: What a missing cell reads where its column has no words of its own.
MISSING = "no value"
#: What an infinite cell reads where its column has no words of its own.
NO_FINITE_VALUE = "no finite value"

_STYLE = (
    "<style>.tl-page-table{border-collapse:collapse;font-size:0.8em;margin:0.3em 0 0.8em 0;"
    "table-layout:auto;max-width:100%}"
    ".tl-page-table th,.tl-page-table td{border:1px solid #ddd;padding:2px 5px;white-space:normal;"
    "overflow-wrap:anywhere;vertical-align:top;text-align:right}"
    ".tl-page-table td.tl-text,.tl-page-table th{text-align:left}"
    ".tl-page-table td.tl-explained{font-style:italic;color:#555;text-align:left}"
    ".tl-page-table-note{font-size:0.8em;color:#555;margin:0 0 1em 0}</style>"
)

Words = Union[str, Tuple[str, str]]
#: An infinity as a text writes it: `inf`, `-inf` or `+inf` as a word of its own.
_INFINITY_IN_TEXT = re.compile(r"(?<![\w.])[-+]?inf(?![\w(])")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_missing(value) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict)) else False
    except (TypeError, ValueError):
        return False


class PageTable:
    """A table displayed in parts that fit the page, each cell as `page_table` writes it."""

    def __init__(self, parts, note: str, plain: str):
        self.parts = parts  # [(header, rows, explained cells)]
        self.note = note
        self.plain = plain

    def _repr_html_(self) -> str:
        out = [_STYLE]
        for header, rows, explained in self.parts:
            head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
            body = []
            for r, row in enumerate(rows):
                cells = []
                for c, text in enumerate(row):
                    kind = (
                        ' class="tl-explained"'
                        if (r, c) in explained
                        else ""
                        if _looks_numeric(text)
                        else ' class="tl-text"'
                    )
                    cells.append(f"<td{kind}>{html.escape(text)}</td>")
                body.append("<tr>" + "".join(cells) + "</tr>")
            out.append(
                f'<table class="tl-page-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table>"
            )
        if self.note:
            out.append(f'<p class="tl-page-table-note">{html.escape(self.note)}</p>')
        return "".join(out)

    def __repr__(self) -> str:
        return self.plain


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _cell(
    value, column: str, digits: int, blank: Mapping[str, str], unbounded: Mapping[str, Words], used, in_text
):
    """(text, whether it is words standing for a value that is not there)."""
    if _is_number(value) and math.isinf(value):
        words = unbounded.get(column)
        if words is None:
            used.add(NO_FINITE_VALUE)
            return NO_FINITE_VALUE, True
        if isinstance(words, tuple):
            return (words[0] if value < 0 else words[1]), True
        return words, True
    if _is_missing(value):
        if column not in blank:
            used.add(MISSING)
        return blank.get(column, MISSING), True
    if _is_number(value):
        return (f"{value:.{digits}f}" if isinstance(value, float) else str(value)), False
    text = str(value)
    return (_INFINITY_IN_TEXT.sub(in_text, text) if in_text else text), False


def page_table(
    frame,
    *,
    blank: Optional[Mapping[str, str]] = None,
    unbounded: Optional[Mapping[str, Words]] = None,
    keys: Sequence[str] = (),
    columns_per_part: int = 7,
    digits: int = 3,
    infinite_in_text: Optional[str] = None,
) -> PageTable:
    """`frame` (a pandas DataFrame; its index is left out) as a `PageTable`: see the module's docstring.
    `blank`: {column: what a missing cell of it means}; `unbounded`: {column: what an infinite cell
    means, or (words for -inf, words for +inf)}; `keys`: the columns every part repeats;
    `infinite_in_text`: what an `inf` inside a text cell reads as (None: left as it is)."""
    blank, unbounded = dict(blank or {}), dict(unbounded or {})
    columns = [str(c) for c in frame.columns]
    keys = [k for k in keys if k in columns]
    rest = [c for c in columns if c not in keys]
    width = max(1, columns_per_part - len(keys))
    groups = [rest[k : k + width] for k in range(0, len(rest), width)] or [[]]
    fallback: set = set()
    cells: Dict[str, list] = {}
    for column, original in zip(columns, frame.columns):
        values = frame[original].tolist()
        cells[column] = [
            _cell(v, column, digits, blank, unbounded, fallback, infinite_in_text) for v in values
        ]
    parts = []
    for group in groups:
        header = keys + group
        rows, explained = [], set()
        for r in range(len(frame)):
            row = []
            for c, column in enumerate(header):
                text, is_words = cells[column][r]
                row.append(text)
                if is_words:
                    explained.add((r, c))
            rows.append(row)
        parts.append((header, rows, explained))
    notes = []
    if MISSING in fallback:
        notes.append(f"'{MISSING}': the computation left that cell empty")
    if NO_FINITE_VALUE in fallback:
        notes.append(f"'{NO_FINITE_VALUE}': the computation gave an infinite value there")
    note = ("; ".join(notes) + ".") if notes else ""
    plain = "\n\n".join(
        "\n".join(" | ".join(line) for line in [header] + rows) for header, rows, _ in parts
    ) + (f"\n{note}" if note else "")
    return PageTable(parts, note, plain)


#: What an empty cell of a claims table (`stats.claims`) means, by column: a claim with no estimate is by
#: construction or not run (its verdict and reason say which), a resolved claim needs no more items.
CLAIM_BLANKS = {
    **{column: "none (see verdict)" for column in ("estimate", "low", "high", "n")},
    "verdict": "claim not in that run",
    "n_needed": "none: resolved, or by design",
    "noise_floor": "none (see noise_floor_from)",
    "noise_floor_low": "none",
    "noise_floor_high": "none",
    "against_floor": "no floor",
}


def claims_page(frame, keys: Sequence[str], *, suffixes: Sequence[str] = ()) -> PageTable:
    """A claims table (`stats.claims`; every estimate and bound finite) as a `PageTable` whose empty cells say
    why (`CLAIM_BLANKS`). `suffixes`: a table of claims side by side (`claims.compare_claims`), whose columns
    are named `{column}_{suffix}` ("before", "after")."""
    blank = dict(CLAIM_BLANKS)
    blank.update({f"{c}_{suffix}": words for c, words in CLAIM_BLANKS.items() for suffix in suffixes})
    return page_table(frame, keys=keys, blank=blank)
