"""The rows of a one-table output as its readers walk them: each line stripped, its number in the file, and whether
it is the last line shown with the paste ending on it (no newline after it: cut short, its value not to be read)."""

from __future__ import annotations

from typing import NamedTuple

from gpuadvisor.importers.section import clean_lines, last_line_shown


class Row(NamedTuple):
    text: str  # the line, stripped
    lineno: int  # its line in the file
    cut: bool  # the last line shown, the paste ending on it without a newline


def stripped_rows(text: str, first_line: int) -> list[Row]:
    """The rows of ``text`` (its lines as clean_lines gives them), the first one line ``first_line`` of the file."""
    lines = clean_lines(text)
    last = last_line_shown(lines) if not text.endswith("\n") else -1
    return [Row(line.strip(), first_line + k, k == last) for k, line in enumerate(lines)]
