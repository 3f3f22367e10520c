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
_URL = re.compile(r"^\(?(https?://|www\.|[a-z0-9-]+\.(com|org|io|ai|net|dev)/|docs\.)")
# Lines a user copies (shell commands, code, config files) carry one of these private-use marks from the renderer
# to fit_line, which prints them verbatim, never wrapped: a shell command too wide is continued with " \\" (bash
# reads the same words), a Python line too wide has its trailing comment moved above it; anything else (JSON,
# YAML, a code line without a comment) is printed whole even where it is wider than the terminal.
SHELL_MARK, CODE_MARK, TEXT_MARK = "\ue000", "\ue001", "\ue002"
_MARKS = (SHELL_MARK, CODE_MARK, TEXT_MARK)


def term_width() -> int:
    """COLUMNS, else the terminal's width, else 80 (never below 40)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def verbatim(lines: Iterable[str], kind: str = "text", indent: str = "  ") -> list[str]:
    """``lines`` marked to be printed as they are (``kind``: "shell", "python" or "text"), each with ``indent``."""
    mark = {"shell": SHELL_MARK, "python": CODE_MARK}.get(kind, TEXT_MARK)
    return [mark + indent + ln for ln in lines]


def _shell_fit(line: str, width: int) -> list[str]:
    """A shell command continued with `` \\`` at spaces between words so that each line fits ``width``: the words
    bash reads are the same. A quoted word is never split (spaces inside quotes do not break)."""
    indent = line[: len(line) - len(line.lstrip(" "))]
    words, cur, quote = [], "", ""
    for ch in line.strip():
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if cur:
                words.append(cur)
            cur = ""
            continue
        cur += ch
    if cur:
        words.append(cur)
    out: list[str] = []
    current = indent
    for w in words:
        lead = indent if not out else indent + "    "
        if current.strip() and len(current) + 1 + len(w) + 2 > width:
            out.append(current + " \\")
            current = indent + "    " + w
        else:
            current = (current + " " + w) if current.strip() else lead + w
    out.append(current)
    return out


def _python_fit(line: str, width: int) -> list[str]:
    """A Python line too wide with a trailing ``# comment``: the comment goes on its own lines above it, at the
    line's indent (the code is unchanged). A ``#`` inside a string is left alone."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")))
    if line.lstrip().startswith("#"):  # a comment line wraps as comment lines (Python and shell alike)
        text = line.lstrip()[1:].strip()
        return [f"{indent}# {c}" for c in textwrap.wrap(text, max(20, width - len(indent) - 2), break_on_hyphens=False)]
    quote, cut = "", -1
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            cut = i
            break
    if cut <= 0 or not line[:cut].strip():
        return _python_args(line, width, indent)
    code, comment = line[:cut].rstrip(), line[cut + 1 :].strip()
    room = max(20, width - len(indent) - 2)
    return [f"{indent}# {c}" for c in textwrap.wrap(comment, room, break_on_hyphens=False)] + _python_args(
        code, width, indent
    )


def _structure(body: str) -> tuple[list[tuple[int, str]], bool]:
    """The brackets and commas of a line of Python outside its string quotes, each with its position; and whether
    a quote is still open at the end (then the line is not broken)."""
    quote, marks = "", []
    for i, ch in enumerate(body):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "()[]{},":
            marks.append((i, ch))
    return marks, bool(quote)


def _python_args(line: str, width: int, indent: str) -> list[str]:
    """A call too wide, ``f(a, b, c)`` (or ``with f(a):``, or a call whose arguments go on to the next line),
    broken after its opening parenthesis with the arguments on continuation lines (Python joins lines inside
    brackets); else the line whole."""
    if len(line) <= width:
        return [line]
    body = line.rstrip()
    m = re.fullmatch(r"(\s*from\s+\S+\s+import\s+)([\w\s,]+)", body)
    if m:  # from x import a, b  ->  from x import (a, b): the same statement, bracketed so it can break
        body = f"{m.group(1)}({m.group(2).strip()})"
    marks, open_quote = _structure(body)
    if open_quote:
        return [line]
    depth, start, parts, last, closed_at = 0, -1, [], 0, -1
    for i, ch in marks:
        if ch in "([{":
            depth += 1
            if depth == 1 and start < 0 and ch == "(":
                start, last = i, i + 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and start >= 0 and closed_at < 0:
                closed_at = i
        elif depth == 1 and start >= 0 and closed_at < 0:  # a comma
            parts.append(body[last : i + 1].strip())
            last = i + 1
    if start < 0:
        return _python_inner(body, width, indent)
    if closed_at >= 0:  # the call closes on this line: only its own tail (")" or "):") may follow
        tail = body[closed_at:]
        if tail.strip(")]}:,") or depth > 0:  # only closing brackets (of this call and outer ones) may follow
            return [line]
        parts.append(body[last:closed_at].strip())
    else:  # the call goes on to the next line
        tail = ""
        parts.append(body[last:].strip())
    if not any(parts):
        return [line]
    inner = indent + "    "
    out = [body[: start + 1], *_pack(parts, inner, width)]
    out[-1] += tail
    # An argument that is itself a call too wide is broken the same way (it is inside brackets).
    return [x for ln in out for x in (_python_args(ln, width, inner) if len(ln) > width and ln != line else [ln])]


def _python_inner(body: str, width: int, indent: str) -> list[str]:
    """A line that closes brackets opened on an earlier line (more closing than opening brackets: it is inside
    them, where Python joins lines) broken after its top-level commas, at the same indent."""
    marks, open_quote = _structure(body)
    depth, parts, last, low = 0, [], 0, 0
    for i, ch in marks:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            low = min(low, depth)
        elif depth == 0:  # a comma
            parts.append(body[last : i + 1].strip())
            last = i + 1
    if low >= 0 or open_quote:
        return [body]
    parts.append(body[last:].strip())
    if len(indent) > 8:  # inside brackets indentation is free: an alignment to a far parenthesis is dropped
        indent = " " * 6
    return _pack(parts, indent, width)


def _pack(parts: list[str], indent: str, width: int) -> list[str]:
    """The non-empty ``parts`` joined by spaces into as few lines as fit ``width``, each line at ``indent``."""
    out, cur = [], ""
    for part in filter(None, parts):
        if cur and len(indent) + len(cur) + 1 + len(part) > width:
            out.append(indent + cur)
            cur = part
        else:
            cur = f"{cur} {part}" if cur else part
    return out + [indent + cur]


def fit_line(line: str, width: int, hang: int = 4) -> list[str]:
    """One line as it fits ``width``: itself, or wrapped at spaces with its indent plus ``hang`` on later lines.

    Control characters from the data are made visible first (gpuadvisor.streams.sanitise), so the layout measures
    and wraps what the terminal will show, and a CR or ESC is never taken for white space and lost. A line marked
    by ``verbatim`` is never wrapped (see the marks above)."""
    line = sanitise(line, allow_colour=True)
    if line[:1] in _MARKS:
        mark, line = line[0], line[1:]
        if len(line) <= width or mark == TEXT_MARK:
            return [line]
        return _shell_fit(line, width) if mark == SHELL_MARK else _python_fit(line, width)
    if visible_len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    if indent + hang >= width - 10:
        indent, hang = 0, 2
    # A web address longer than the room is kept whole on its own line (a broken one cannot be followed);
    # any other over-long word is broken.
    room = width - indent - hang
    keep_words = all(len(w) <= room or _URL.search(w) for w in line.split())
    return textwrap.wrap(
        line.strip(),
        width=width,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_on_hyphens=False,
        break_long_words=not keep_words,
    ) or [line[:width]]


def paragraphs(text: str) -> list[str]:
    """A hard-wrapped text's paragraphs (separated by blank lines), each joined into one line: prose is wrapped
    once, by ``fit_line`` at the reader's width, never first at the source's width and then again."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]


def fit_prose(text: str, width: int, indent: int = 0, hang: int = 0) -> list[str]:
    """``text``'s paragraphs wrapped at ``width`` with ``indent`` (later lines ``hang`` further), a blank line
    between paragraphs."""
    out: list[str] = []
    for i, para in enumerate(paragraphs(text)):
        out += ([""] if i else []) + fit_line(" " * indent + para, width, hang)
    return out


def fit_lines(lines: Iterable[str], width: int, keep_marks: bool = False) -> list[str]:
    """Every line fitted to ``width``. ``keep_marks``: verbatim lines keep their mark, for a caller that fits the
    text again inside a larger view (the mark is what stops that second pass from wrapping them)."""
    out: list[str] = []
    for line in lines:
        if keep_marks and line[:1] in _MARKS:
            mark = line[0]
            out += [mark + ln for ln in fit_line(line, width)]
        else:
            out += fit_line(line, width)
    return out


def _columns(table: Sequence[Sequence[str]], widths: Sequence[int]) -> list[str]:
    """Each row's cells left-aligned to ``widths``, two spaces apart, trailing spaces dropped."""
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]


def plain_table(rows: Sequence[Sequence[str]], headers: Sequence[str], pad: int = 2) -> str:
    """tabulate(tablefmt="plain", stralign="left", disable_numparse=True) for plain ASCII text cells, in time linear
    in the cells: a 256-GPU matrix has 65,536 of them, and tabulate's per-cell type sniffing took most of a second.
    ``pad``: tabulate's MIN_PADDING (a column is at least its header + pad wide)."""
    table = [headers, *rows]
    ncol = max(len(r) for r in table)
    table = [list(r) + [""] * (ncol - len(r)) for r in table]
    rows = table[1:]
    widths = [max(max(len(r[c]) for r in rows) if rows else 0, len(table[0][c]) + pad) for c in range(ncol)]
    return "\n".join(_columns(table, widths))


def simple_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """tabulate(tablefmt="simple", stralign="left", disable_numparse=True) with MIN_PADDING 0, for rectangular
    rows of cells one column per character (see _NOT_NARROW; tabulate measures others its own way): the headers, a row
    of dashes, the rows; each cell stripped of surrounding spaces, columns as wide as their widest cell or header.
    Importing tabulate costs more than a whole plan's table (and tabulate sniffs every cell's type)."""
    cells = [[c.strip() for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[c]) for r in cells]) for c, h in enumerate(headers)]
    return "\n".join(_columns([headers, ["-" * w for w in widths], *cells], widths))


# Characters one column wide by every measure tabulate may use (len, or wcwidth where it is installed), that no
# str.strip or str.splitlines takes for white space or a line end: printable ASCII; Latin-1 and Latin Extended-A/B
# without the no-break space and the soft hyphen; the Greek capital and small letters; general punctuation without
# its spaces, zero-width and line separators (dashes, quotes, bullet, ellipsis, per mille, primes); arrows and
# mathematical operators (x, <=, ~=, ->). Anything else (wide or combining characters, colour codes, control
# characters) is left to tabulate.
_NOT_NARROW = re.compile(
    r"[^\x20-\x7e\xa1-\xac\xae-\u024f\u0391-\u03a1\u03a3-\u03c9\u2010-\u2027\u2030-\u205e\u2190-\u22ff]"
)


def _narrow_text(cells: Sequence[Sequence[str]], headers: Sequence[str]) -> bool:
    """Every cell and header is one column per character, nothing tabulate measures or strips its own way."""
    return _NOT_NARROW.search("".join(headers) + "".join("".join(r) for r in cells)) is None


def _table(
    rows: Sequence[Sequence[Any]], headers: Sequence[str], cols: Sequence[int], tablefmt: str, maxcol: int | None = None
) -> list[str]:
    cells = [[sanitise(str(r[i]), allow_colour=True) for i in cols] for r in rows]
    headers = [sanitise(str(h), allow_colour=True) for h in headers]
    # Large matrices: linear, no per-cell type sniffing (plain_table counts characters, so not with colours).
    if tablefmt == "plain" and maxcol is None and not any("\033" in c for r in cells for c in r):
        return plain_table(cells, [headers[i] for i in cols], pad=0).splitlines()
    if tablefmt == "simple" and maxcol is None and cols and _narrow_text(cells, [headers[i] for i in cols]):
        return simple_table(cells, [headers[i] for i in cols]).splitlines()
    import tabulate as tb

    kw: dict[str, Any] = {}
    if maxcol is not None:
        kw["maxcolwidths"] = [None] * (len(cols) - 1) + [maxcol]
    padding = tb.MIN_PADDING
    tb.MIN_PADDING = 0  # columns as wide as their widest cell or header, not 2 more: narrow terminals need it
    try:
        return tb.tabulate(
            cells, headers=[headers[i] for i in cols], tablefmt=tablefmt, disable_numparse=True, stralign="left", **kw
        ).splitlines()
    finally:
        tb.MIN_PADDING = padding


def fit_table(
    rows: Sequence[Sequence[Any]],
    headers: Sequence[str],
    width: int,
    *,
    indent: str = "  ",
    keep: int = 1,
    tablefmt: str = "simple",
) -> list[str]:
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
