"""The old nccl-tests layout's correctness check: its ``error`` column and ``Out of bounds values : N FAILED``.

Before the ``#wrong`` column (a count of wrong elements), nccl-tests printed ``error``: the largest difference from
the expected result in each half of a row (``%5.0le``; float sums differ by rounding, so a small nonzero value is
no failure), and after the table ``Out of bounds values : N FAILED`` (or ``0 OK``): how many halves' differences
exceed the bound of their type.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import SweepRow

_DELTA = re.compile(r"\d(?:\.\d+)?e[+-]\d+")


def keep_deltas(
    columns: list[str],
    tokens: list[str],
    halves: tuple[SweepRow, SweepRow | None],
    deltas: list[tuple[float, SweepRow]],
) -> None:
    """The row's ``error`` cells, each with its half of the row, added to ``deltas``."""
    cells = [tokens[i] for i, c in enumerate(columns) if c == "error" and i < len(tokens)]
    for cell, row in zip(cells, halves, strict=False):
        if row is not None and _DELTA.fullmatch(cell):
            deltas.append((float(cell), row))


def out_of_bounds(verdict: str | None, deltas: list[tuple[float, SweepRow]]) -> None:
    """``N FAILED``: the check failed in N halves, those whose ``error`` exceeds the type's bound, i.e. the N largest
    nonzero errors (one bound per type): those rows are marked wrong."""
    m = re.match(r"(\d+) FAILED", verdict or "")
    if m is None:
        return
    worst = sorted((d for d in deltas if d[0] > 0), key=lambda d: d[0], reverse=True)[: int(m.group(1))]
    for _delta, row in worst:
        row.correct = False
