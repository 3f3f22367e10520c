"""Numbers on the command line: finite and in range, or a one-line usage error (exit 2).

``Finite(min, max, min_open=False)`` is a click ParamType for real numbers: NaN, infinity, and values outside
[min, max] (or (min, max] with ``min_open``) are refused with what was given and what is allowed. ``Count(min,
max)`` is the integer counterpart (click.IntRange, always with an upper bound). Every numeric option of every
command uses one of them, so no NaN reaches a rule, a deadline or a JSON file.
"""

from __future__ import annotations

import math
from typing import Any

import click


def _fmt(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 or x != int(x) else f"{x:.0e}".replace("e+", "e")


# Durations as people write them (--since 24h, --max-age 7d, --checkpoint-every 30m): seconds per unit.
SECONDS_PER = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

# Counts as people write them: 7B parameters, 20B tokens, 1.5T, 300k (SI: k 1e3, M 1e6, B and G 1e9, T 1e12).
_SUFFIX = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


class Finite(click.ParamType):
    name = "number"

    def __init__(
        self, min: float | None = None, max: float | None = None, *, min_open: bool = False, unit: str = ""
    ) -> None:
        self.min, self.max, self.min_open, self.unit = min, max, min_open, unit

    def _range(self) -> str:
        lo = "" if self.min is None else (f"> {_fmt(self.min)}" if self.min_open else f">= {_fmt(self.min)}")
        hi = "" if self.max is None else f"<= {_fmt(self.max)}"
        return " and ".join(x for x in (lo, hi) if x) + (f" {self.unit}" if self.unit else "")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float | int) and not isinstance(value, bool):
            v = float(value)
        else:
            text = str(value).strip().replace("_", "").replace(",", "")
            scale = _SUFFIX.get(text[-1:].upper(), 1.0) if text[:-1] else 1.0
            try:
                v = float(text[:-1] if scale != 1.0 else text) * scale
            except (TypeError, ValueError, OverflowError):
                self.fail(f"{str(value)[:40]!r} is not a number (write 7e9, 7B, 300 or 0.5)", param, ctx)
        if not math.isfinite(v):
            self.fail(f"{str(value)[:40]!r} is not a finite number; give a value {self._range()}", param, ctx)
        if (self.min is not None and (v < self.min or (self.min_open and v == self.min))) or (
            self.max is not None and v > self.max
        ):
            self.fail(f"{str(value)[:40]} is out of range; give a value {self._range()}", param, ctx)
        return v

    def __repr__(self) -> str:
        return f"Finite({self._range()})"


def Count(min: int = 1, max: int = 2**31) -> click.IntRange:  # noqa: N802 - reads as a type, like click.IntRange
    """An integer option in [min, max]."""
    return click.IntRange(min, max)


PositiveFloat = Finite(0, None, min_open=True)
Fraction = Finite(0, 1, min_open=True)
