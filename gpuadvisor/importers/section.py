"""One command output found in a pasted text (a :class:`Section`), and the text cleaning every parser uses."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuadvisor.importers.values import strip_ansi

# said of an output whose fence never closes (the merger and the GA810 comparison in beyond_merge.py look for it)
OPEN_END = "the paste ends inside the fence around this output (it never closes): rows may follow that it does not show"


@dataclass
class Section:
    kind: str
    start: int  # 1-based line number of its first line in the file
    lines: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # up to 8 lines before it (prompts, commands)
    cut: bool = False  # the file ends inside its last line (no newline after it): that line may be cut short
    open_end: bool = False  # the paste ends inside the markdown fence around it: rows may follow that it does not show

    @property
    def text(self) -> str:
        """Its lines, ending with a newline unless the file ended mid-line (parsers read that as a possible cut)."""
        return "\n".join(self.lines) + ("" if self.cut else "\n")


def last_line_shown(lines: list[str]) -> int:
    """The index of the paste's last line that is not blank (where a paste cut short is cut), -1 for none."""
    return max((i for i, x in enumerate(lines) if x.strip()), default=-1)


def shown_lines(text: str) -> tuple[list[str], int]:
    """The text's lines (as :func:`clean_lines` gives them), and the index of the one a paste cut short may have cut:
    its last line shown, when the text ends without a newline (-1: none)."""
    lines = clean_lines(text)
    return lines, (last_line_shown(lines) if not text.endswith(("\n", "\r")) else -1)


def clean_lines(text: str) -> list[str]:
    """Lines without terminal escapes, carriage returns, a byte-order mark, or the quote marker every line of a
    quoted paste carries (``> `` of a mail or markdown quote, ``% ``): of the whole text (see :func:`unquoted`), or
    of a quoted block in it (two quoted lines or more, blank and fence lines between them) under a prompt line or inside
    a fence, unless they are a shell's ``> `` continuation prompts; a quote in a quote (``> > ``, ``% > ``) loses
    both."""
    text = text.lstrip("\ufeff")
    lines = unquoted(html_unescaped(_literal_eol([strip_ansi(line).rstrip("\r") for line in text.splitlines()])))
    for _level in range(QUOTE_DEPTH):
        before = lines
        for mark in (">", "%"):
            lines = _unquote_blocks(lines, mark)
        if lines == before:
            break
    return lines


_LITERAL_EOL = "\\r\\n"  # the two escapes as text: a console API's lines copied out of a JSON string


def _literal_eol(lines: list[str]) -> list[str]:
    """The lines without the literal backslash-r-backslash-n each ends in when every line that holds text (a fence's
    aside; the last, perhaps cut) does: a serial console's output copied from the API's JSON string. A paste where
    only some lines end so is left whole (the text may mean it)."""
    shown = [x.rstrip() for x in lines if x.strip() and not x.lstrip().startswith(("```", "~~~"))]
    ended = shown[:-1]  # the last line: the paste may be cut inside it
    if len(ended) < 2 or not all(x.endswith(_LITERAL_EOL) for x in ended):
        return lines
    return [x.rstrip()[: -len(_LITERAL_EOL)] if x.rstrip().endswith(_LITERAL_EOL) else x for x in lines]


# a paste that went through a rich-text editor or a web page's source: "&lt;gpu&gt;", indents as "&nbsp; " runs
_ENTITY = re.compile(r"&(?:gt|lt|amp|nbsp|quot|apos|#\d{1,5});")


def html_unescaped(lines: list[str]) -> list[str]:
    """The lines with their HTML entities decoded (``&gt;`` as ``>``, ``&nbsp;`` as a space) when half the paste's
    lines or more carry one: the whole paste was escaped, not a line that merely quotes an entity."""
    shown = [x for x in lines if x.strip()]
    if not shown or 2 * sum(1 for x in shown if _ENTITY.search(x)) < len(shown):
        return lines
    return [html.unescape(x).replace("\xa0", " ") if "&" in x else x for x in lines]


_FENCE = re.compile(r"^\s*(?:```|~~~)")


def shell_prompt(marks: str = "$#", bare: str = "$", then: str = r"\s+\S") -> re.Pattern[str]:
    """The one grammar of a shell prompt at a line's start, as each reader needs it: an optional ``(venv) `` or
    ``(base) `` (an active Python or conda environment), then the prompt's ``[user@host dir]`` or
    ``user@host:~/dir`` (no space in it; one space may end it: ``user@host:~ $``), then one of ``marks`` (``$``,
    root's ``#``; ``%`` of zsh and csh, ``>``); a mark of ``bare`` may stand with nothing before it
    (``$ nvidia-smi``), the others only after the prompt's text (``root@n1:~# dmesg``: with ``#`` not bare, a
    ``# comment`` or an nccl-tests ``#`` row is no prompt). ``then``: what follows the mark (a command by default;
    a group in it is the command)."""
    head = r"(?:\([^)]{0,40}\)\s*)?"
    text = r"(?:\[[^\]]*\]|[\w@.:~/\[\]-]+) ?"
    alone = f"|[{re.escape(bare)}]" if bare else ""
    return re.compile(rf"^\s*{head}(?:{text}[{re.escape(marks)}]{alone}){then}")


# a shell prompt and its command above a quoted output: "user@node01:~$ sudo dmesg", "$ dmesg", "root@n1:~# dmesg"
_PROMPT = shell_prompt()
QUOTE_DEPTH = 4  # a quote of a quote ("> > "), each level its marker
# a command the shell continues on its "> " (PS2) prompts: a trailing backslash, pipe, "&&", or an open do/then/{
_CONTINUED = re.compile(r"(?:\\|\||&&|\b(?:do|then|else)|[{(])\s*$")


def unquoted(lines: list[str]) -> list[str]:
    """The lines without the quote marker (``>``, ``%``) that every line of the paste carries, level by level (a
    quoted reply quoted again): markdown fence lines around the quote, and the shell prompts with their command
    above it, carry none and are kept as they are."""
    for _ in range(QUOTE_DEPTH):
        shown = [x for x in lines if x.strip() and not _FENCE.match(x)]
        lead = 0
        while lead < len(shown) - 1 and _PROMPT.match(shown[lead]):
            lead += 1
        quoted = shown[lead:]
        if lead and _CONTINUED.search(shown[lead - 1]):
            break  # the "> " lines are the shell's continuation prompts, not a quote
        mark = next((m for m in (">", "%") if quoted and all(x.lstrip().startswith(m) for x in quoted)), None)
        if mark is None:
            break
        lines = [_unquote(x, mark) if x.lstrip().startswith(mark) else x for x in lines]
    return lines


def _unquote_blocks(lines: list[str], mark: str) -> list[str]:
    """``lines`` with ``mark`` taken off each line of every quoted block (see :func:`clean_lines`)."""
    quoted = [bool(x.strip()) and x.lstrip().startswith(mark) for x in lines]
    if not any(quoted):
        return lines
    shown = sum(1 for x in lines if x.strip() and not _FENCE_LINE.match(x))
    out = list(lines)
    k = 0
    while k < len(lines):
        if not quoted[k]:
            k += 1
            continue
        end = k
        while end < len(lines) and (quoted[end] or not lines[end].strip() or _FENCE_LINE.match(lines[end])):
            end += 1
        n = sum(quoted[k:end])
        if n == shown or n >= 2 and not _continued(lines, k, end):
            out[k:end] = [_unquote(x, mark) if q else x for x, q in zip(lines[k:end], quoted[k:end], strict=True)]
        k = end
    return out


_FENCE_LINE = re.compile(r"^\s*`{3,}\w*\s*$")
# a command line the shell continues on its next line, each after a '> ' (PS2) prompt: 'mpirun \', 'for ...; do'
_UNFINISHED = re.compile(r"(?:\\|\bdo|\bthen|\{|\||&&)\s*$")


def _continued(lines: list[str], start: int, end: int) -> bool:
    """Whether the quoted block ``lines[start:end]`` is a shell's continuation prompts, not a quote: a command
    line above it or in it left unfinished."""
    above = next((x for x in reversed(lines[:start]) if x.strip()), "")
    return bool(_UNFINISHED.search(above)) or any(_UNFINISHED.search(x) for x in lines[start : end - 1])


def _unquote(line: str, mark: str) -> str:
    body = line.lstrip()[1:] if line.strip() else line
    return body[1:] if body.startswith(" ") else body


# Does an output of a kind start at line i (of all the text's lines), the section being read so far being current?
Detector = Callable[[list[str], int, "Section | None"], bool]


def outside(kind: str, *, log: bool = False) -> Callable[[Detector], Detector]:
    """The detector, tried only outside an output of ``kind`` (its own): inside one, every line is that output's;
    with ``log``, only outside a kernel log too (see :func:`outside_log`)."""

    def wrap(starts: Detector) -> Detector:
        @functools.wraps(starts)
        def detector(lines: list[str], i: int, current: Section | None) -> bool:
            mine = current is not None and current.kind == kind
            return not mine and (not log or outside_log(current)) and starts(lines, i, current)

        return detector

    return wrap


def outside_log(current: Section | None) -> bool:
    """Not inside a kernel log: a log runs to the next GPU output, taking in the other lines of a dump with it."""
    return current is None or current.kind != "kernel-log"
