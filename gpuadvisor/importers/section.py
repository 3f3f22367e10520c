"""One command output found in a pasted text (a :class:`Section`), and the text cleaning every parser uses."""

from __future__ import annotations

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
    quoted paste carries (``> `` of a mail or markdown quote, ``% ``)."""
    text = text.lstrip("\ufeff")
    lines = [strip_ansi(line).rstrip("\r") for line in text.splitlines()]
    for mark in (">", "%"):
        shown = [x for x in lines if x.strip()]
        if shown and all(x.lstrip().startswith(mark) for x in shown):
            lines = [_unquote(x, mark) for x in lines]
    return lines


def _unquote(line: str, mark: str) -> str:
    body = line.lstrip()[1:] if line.strip() else line
    return body[1:] if body.startswith(" ") else body


# Does an output of a kind start at line i (of all the text's lines), the section being read so far being current?
Detector = Callable[[list[str], int, "Section | None"], bool]


def outside_log(current: Section | None) -> bool:
    """Not inside a kernel log: a log runs to the next GPU output, taking in the other lines of a dump with it."""
    return current is None or current.kind != "kernel-log"
