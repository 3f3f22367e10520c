"""The one safe reader for the JSON and numbers the storage importers ingest (fio, lsblk, nvme list).

JSON goes through :func:`gpuadvisor.inputs.loads_json` (finite numbers, integers within 2**64, shallow nesting,
no lone surrogate: a truncated or hostile document is one line, never an internal error). A number read from a
paste is a decimal of at most 30 characters, finite, non-negative where it is a physical quantity, and within
``LIMIT``; anything else is unreadable (``None``), never a value and never an exception. Strings are kept
surrogate-free and bounded.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gpuadvisor.errors import InputError

LIMIT = 2.0**64  # sizes, rates and counts: nothing physical is larger
MAX_DIGITS = 30
MAX_NAME = 200
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def json_data(text: str, origin: str, what: str, error: type[InputError] = InputError) -> Any:
    """``text`` parsed as JSON by the project's safe reader; one line (``error``) when it is not."""
    from gpuadvisor.inputs import loads_json

    return loads_json(text, origin, what, error)


def quantity(value: Any) -> float | None:
    """A non-negative, finite number at most ``LIMIT`` from a JSON number or a decimal string; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= LIMIT else None
    if isinstance(value, float):
        return value if math.isfinite(value) and 0 <= value <= LIMIT else None
    if isinstance(value, str):
        s = value.strip()
        if len(s) > MAX_DIGITS or not _DECIMAL.fullmatch(s):
            return None
        v = float(s)
        return v if v <= LIMIT else None
    return None


def scaled(number: str, factor: float) -> int | None:
    """``number`` (a decimal string) times ``factor``, as a whole non-negative count within ``LIMIT``; else None."""
    v = quantity(number)
    if v is None or not math.isfinite(v * factor) or v * factor > LIMIT:
        return None
    return int(v * factor)


def name(value: Any) -> str | None:
    """A device or model name: a string without lone surrogates or control characters, at most ``MAX_NAME``."""
    if value is None:
        return None
    s = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in str(value))
    s = "".join(c if c.isprintable() else "\ufffd" for c in s).strip()
    return s[:MAX_NAME] or None
