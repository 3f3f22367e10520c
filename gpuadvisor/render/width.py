"""Text that fits the terminal: its width, tables split into column groups, long lines wrapped.

The width is ``COLUMNS`` when set (shells export it; tests set it), else the terminal's own width, else 80 when
the output is not a terminal (a pipe, a file, CI logs): 80 columns read everywhere, and a reader who wants wider
output sets ``COLUMNS``. Nothing printed is wider than that: a table too wide is split into several tables
that repeat its first column, a long cell wraps inside its column, and a long sentence wraps with an indent.
"""
from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from gpuadvisor.streams import sanitise

MIN_WIDTH = 40
DEFAULT_WIDTH = 80
_ANSI = re.compile(r"\033\[[0-9;]*m")


def term_width() -> int:
    """COLUMNS, else the terminal's width, else 80 (never below 40)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def fit_line(line: str, width: int, hang: int = 4) -> list[str]:
    """One line as it fits ``width``: itself, or wrapped at spaces with its indent plus ``hang`` on later lines.

    Control characters from the data are made visible first (gpuadvisor.streams.sanitise), so the layout measures
    and wraps what the terminal will show, and a CR or ESC is never taken for white space and lost."""
    line = sanitise(line, allow_colour=True)
    if visible_len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    if indent + hang >= width - 10:
        indent, hang = 0, 2
    return textwrap.wrap(line.strip(), width=width, initial_indent=" " * indent, subsequent_indent=" " * (indent + hang),
                         break_on_hyphens=False, break_long_words=True) or [line[:width]]


def fit_lines(lines: Iterable[str], width: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        out += fit_line(line, width)
    return out


def fit_text(text: str, width: int | None = None) -> str:
    """Every line of ``text`` fitted to ``width`` (default: the terminal's)."""
    width = width or term_width()
    end = "\n" if text.endswith("\n") else ""
    return "\n".join(fit_lines(text.splitlines(), width)) + end


def plain_table(rows: Sequence[Sequence[str]], headers: Sequence[str], pad: int = 2) -> str:
    """tabulate(tablefmt="plain", stralign="left", disable_numparse=True) for plain ASCII text cells, in time linear
    in the cells: a 256-GPU matrix has 65,536 of them, and tabulate's per-cell type sniffing took most of a second.
    ``pad``: tabulate's MIN_PADDING (a column is at least its header + pad wide)."""
    table = [headers, *rows]
    ncol = max(len(r) for r in table)
    table = [list(r) + [""] * (ncol - len(r)) for r in table]
    rows = table[1:]
    widths = [max(max(len(r[c]) for r in rows) if rows else 0, len(table[0][c]) + pad) for c in range(ncol)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table)


def _table(rows: Sequence[Sequence[Any]], headers: Sequence[str], cols: Sequence[int], tablefmt: str,
           maxcol: int | None = None) -> list[str]:
    cells = [[sanitise(str(r[i]), allow_colour=True) for i in cols] for r in rows]
    headers = [sanitise(str(h), allow_colour=True) for h in headers]
    # Large matrices: linear, no per-cell type sniffing (plain_table counts characters, so not with colours).
    if tablefmt == "plain" and maxcol is None and not any("\033" in c for r in cells for c in r):
        return plain_table(cells, [headers[i] for i in cols], pad=0).splitlines()
    import tabulate as tb

    kw: dict[str, Any] = {}
    if maxcol is not None:
        kw["maxcolwidths"] = [None] * (len(cols) - 1) + [maxcol]
    padding = tb.MIN_PADDING
    tb.MIN_PADDING = 0  # columns as wide as their widest cell or header, not 2 more: narrow terminals need it
    try:
        return tb.tabulate(cells, headers=[headers[i] for i in cols], tablefmt=tablefmt,
                           disable_numparse=True, stralign="left", **kw).splitlines()
    finally:
        tb.MIN_PADDING = padding


def _wide(lines: list[str]) -> int:
    return max((visible_len(ln) for ln in lines), default=0)


def fit_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], width: int, *, indent: str = "  ", keep: int = 1,
              tablefmt: str = "simple") -> list[str]:
    """The table, indented, as one table if it fits ``width``; else split into tables of consecutive columns,
    each repeating the first ``keep`` columns, and a last column too wide for any split wrapped inside it.

    Column widths are measured once (a cell's visible length; columns are as wide as their widest cell or header
    and two spaces apart), so the split costs one pass over the cells, not one rendering per column tried."""
    room = width - len(indent)
    n = len(headers)
    col_w = [visible_len(sanitise(str(h), allow_colour=True)) for h in headers]
    for r in rows:
        for i in range(min(n, len(r))):
            w = visible_len(sanitise(str(r[i]), allow_colour=True))
            if w > col_w[i]:
                col_w[i] = w

    def span(cols: Sequence[int]) -> int:
        return sum(col_w[c] for c in cols) + 2 * (len(cols) - 1)

    if span(range(n)) <= room or n <= keep:
        return [indent + ln for ln in _table(rows, headers, range(n), tablefmt)]
    base = list(range(keep))
    chunks: list[list[int]] = []
    cur: list[int] = []
    for c in range(keep, n):
        if cur and span(base + cur + [c]) > room:
            chunks.append(cur)
            cur = []
        cur.append(c)
    chunks.append(cur)
    out: list[str] = []
    for k, chunk in enumerate(chunks):
        cols = base + chunk
        maxcol = None
        if span(cols) > room:  # the last column alone is too wide: wrap its cells
            maxcol = max(12, room - (span(cols[:-1]) if len(cols) > 1 else 0) - 2)
        lines = _table(rows, headers, cols, tablefmt, maxcol=maxcol)
        if k:
            out.append("")
        out += [indent + ln for ln in lines]
    return out
