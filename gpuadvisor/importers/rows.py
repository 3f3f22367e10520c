"""The rows of a one-table output as its readers walk them: each line stripped, its number in the file, and whether
it is the last line shown with the paste ending on it (no newline after it: cut short, its value not to be read)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from gpuadvisor.importers.section import shown_lines


class Row(NamedTuple):
    text: str  # the line, stripped
    lineno: int  # its line in the file
    cut: bool  # the last line shown, the paste ending on it without a newline


def stripped_rows(text: str, first_line: int) -> list[Row]:
    """The rows of ``text`` (its lines as clean_lines gives them), the first one line ``first_line`` of the file."""
    lines, last = shown_lines(text)
    return [Row(line.strip(), first_line + k, k == last) for k, line in enumerate(lines)]


# a labelled row that gives one field: its pattern, the field's name, and the field's value from the pattern's match
FieldRow = tuple[re.Pattern[str], str, Callable[[re.Match[str]], object]]


def read_row(target: object, s: str, table: Sequence[FieldRow]) -> str | None:
    """Set the field of the first row of ``table`` whose pattern matches ``s`` on ``target`` (its value from the
    match); the field's name, None when no row matches (nothing set). The rows are tried in their order."""
    for pattern, name, value in table:
        if m := pattern.match(s):
            setattr(target, name, value(m))
            return name
    return None
