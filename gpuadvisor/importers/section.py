"""One command output found in a pasted text (a :class:`Section`), and the text cleaning every parser uses."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuadvisor.importers.values import strip_ansi


@dataclass
class Section:
    kind: str
    start: int  # 1-based line number of its first line in the file
    lines: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)  # up to 8 lines before it (prompts, commands)
    cut: bool = False  # the file ends inside its last line (no newline after it): that line may be cut short

    @property
    def text(self) -> str:
        """Its lines, ending with a newline unless the file ended mid-line (parsers read that as a possible cut)."""
        return "\n".join(self.lines) + ("" if self.cut else "\n")


def clean_lines(text: str) -> list[str]:
    """Lines without terminal escapes, carriage returns, a byte-order mark, or the quote marker every line of a
    quoted paste carries (``> `` of a mail or markdown quote, ``% ``): see :func:`unquoted`."""
    text = text.lstrip("\ufeff")
    return unquoted([strip_ansi(line).rstrip("\r") for line in text.splitlines()])


_FENCE = re.compile(r"^\s*(?:```|~~~)")
# a shell prompt and its command above a quoted output: "user@node01:~$ sudo dmesg", "$ dmesg", "root@n1:~# dmesg"
_PROMPT = re.compile(r"^\s*(?:\[[^\]]*\][$#]|[\w@.:~/-]*\$|[\w@.:~/-]+#)\s+\S")
QUOTE_DEPTH = 4  # a quote of a quote ("> > "), each level its marker


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
        mark = next((m for m in (">", "%") if quoted and all(x.lstrip().startswith(m) for x in quoted)), None)
        if mark is None:
            break
        lines = [_unquote(x, mark) if x.lstrip().startswith(mark) else x for x in lines]
    return lines


def _unquote(line: str, mark: str) -> str:
    body = line.lstrip()[1:] if line.strip() else line
    return body[1:] if body.startswith(" ") else body


# Does an output of a kind start at line i (of all the text's lines), the section being read so far being current?
Detector = Callable[[list[str], int, "Section | None"], bool]


def outside_log(current: Section | None) -> bool:
    """Not inside a kernel log: a log runs to the next GPU output, taking in the other lines of a dump with it."""
    return current is None or current.kind != "kernel-log"
