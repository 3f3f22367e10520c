"""``nvidia-smi topo -m`` rendered as a markdown pipe table (an HPC centre's docs page, a wiki): read back as the plain
matrix when its rows are unambiguous.

Such a page turns each printed line into cells between ``|`` and puts a ``---|---`` rule under the first. The
header row has no cell for the row labels, so when the page moved the affinity columns first (``CPU Affinity |
NUMA Affinity | GPU0 | GPU1 ...`` over rows ``24-31,56-63 | 3 | GPU0 | X | NV4 ...``), the header is shifted
against its rows. The rows say it all: each holds its label (a GPU or NIC the header names), then one link cell
per column, and its affinity cells around them. A row where that does not hold (a cell missing inside it, a label
not in the header, a cell that is no link code) leaves the table unread. A page that put each printed line whole
into one cell (``GPU0 X PHB SOC SOC 0-9,20-29 | |``, a gist's rendering) is read as the lines inside the cells.
"""

from __future__ import annotations

import re

MATRIX_WORDS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LINK = re.compile(r"^(X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC)$")
_NAME = re.compile(r"^[A-Za-z][\w.-]{0,30}$")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*\|?\s*$")
EXTRA_OK = {  # what an affinity column's cell may hold
    "CPU Affinity": re.compile(r"^(?:\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*|N/A)$"),
    "NUMA Affinity": re.compile(r"^(?:\d+|N/A)$"),
    "GPU NUMA ID": re.compile(r"^(?:\d+|N/A)$"),
}


def _cells(line: str) -> list[str] | None:
    """The cells of a pipe-table line, blank ones at either end dropped; None for a line with no ``|``, or with a
    blank cell between two others (a value missing: which column it was cannot be told)."""
    if "|" not in line or len(line) > 4000:  # a matrix row is short
        return None
    cells = [c.strip() for c in line.strip().split("|")]
    shown = [k for k, c in enumerate(cells) if c]
    cells = cells[shown[0] : shown[-1] + 1] if shown else []
    return None if not cells or "" in cells else cells


def header(line: str) -> tuple[list[str], list[str]] | None:
    """A pipe-table header of topo -m: its GPU and NIC columns, and its affinity columns; None if not one."""
    cells = _cells(line)
    if not cells or "GPU0" not in cells or not all(c in MATRIX_WORDS or _NAME.match(c) for c in cells):
        return None
    columns = [c for c in cells if c not in MATRIX_WORDS]
    return (columns, [c for c in cells if c in MATRIX_WORDS]) if columns and columns[0] == "GPU0" else None


def _row(cells: list[str], columns: list[str], extras: list[str]) -> list[str] | None:
    """The plain row (label, links, affinity values in the header's order), or None when the cells do not fit."""
    at = next((k for k, c in enumerate(cells) if c in columns), None)
    if at is None or len(cells) < at + 1 + len(columns):
        return None
    label, links, around = cells[at], cells[at + 1 : at + 1 + len(columns)], cells[:at] + cells[at + 1 + len(columns) :]
    if not all(_LINK.match(c) for c in links):
        return None
    if around and (
        len(around) != len(extras) or not all(EXTRA_OK[e].match(v) for e, v in zip(extras, around, strict=True))
    ):
        return None
    return [label, *links, *around]


def _whole(line: str) -> str | None:
    """The printed line a one-cell table row holds (``GPU0 GPU1 CPU Affinity | |``), or None."""
    cells = _cells(line)
    return cells[0] if cells and len(cells) == 1 and " " in cells[0] else None


def starts_at(line: str) -> bool:
    """Whether ``line`` is a topo -m header rendered as a table row (cells, or the whole line in one cell)."""
    return header(line) is not None or (_whole(line) or "").startswith("GPU0 ")


SHIFTED = (
    "a markdown pipe table, its header shifted against its rows (no cell for the row labels): each row read as its "
    "label, one link cell per GPU or NIC column after it, and its affinity cells around them"
)
PIPED = "a markdown pipe table: each row read as its label and one link cell per GPU or NIC column"
WHOLE = "a table of one cell per printed line (a web page's rendering): the lines inside the cells read"


def unpiped(lines: list[str]) -> tuple[list[str], int, str] | None:
    """The lines with a pipe-table topo -m turned back into the plain matrix (line for line: its rule a blank
    line), the header's index and how it was rendered; None when the lines hold no such table or a row is
    ambiguous."""
    start = next((k for k, x in enumerate(lines) if starts_at(x)), None)
    if start is None:
        return None
    if header(lines[start]) is None:  # each line whole in one cell: the cells are the lines
        out = [*lines]
        for k in range(start, len(lines)):
            if (inside := _whole(lines[k])) is None and "|" not in lines[k]:
                break
            out[k] = inside if inside is not None else ""
        return out, start, WHOLE
    columns, extras = header(lines[start]) or ([], [])
    out = [*lines]
    out[start] = "\t" + "\t".join([*columns, *extras])
    rows, moved = 0, False  # moved: a row's cells start before its label (the header shifted against it)
    for k in range(start + 1, len(lines)):
        if _RULE.match(lines[k]):
            out[k] = ""
            continue
        cells = _cells(lines[k])
        if cells is None:
            break  # the legend, or prose: the rows have ended
        row = _row(cells, columns, extras)
        if row is None:
            return None
        out[k], rows, moved = "\t".join(row), rows + 1, moved or cells[0] != row[0]
    return (out, start, SHIFTED if moved else PIPED) if rows else None
