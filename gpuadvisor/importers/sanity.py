"""Numbers no GPU tool can print: a value beyond 64 bits, or not finite, in a paste is a damaged or edited
value, not a fact. NVML keeps every counter, size and clock in at most 64 bits (``unsigned long long``), so a
larger number cannot have come from nvidia-smi; it becomes null with its reason, never a crash later when it is
divided or printed."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from gpuadvisor.facts import Rig, Unavailable

LIMIT = 2**64  # NVML's widest field: unsigned long long
MAX_DIGITS = 20  # 2**64 has 20 digits: a longer run of digits is never a value nvidia-smi printed
TOO_LARGE = "the paste shows a number beyond 64 bits (no nvidia-smi field holds one): not a real value"


def too_long(text: str | None) -> bool:
    """A run of more digits than any 64-bit value has (Python refuses to read very long ones at all)."""
    return text is not None and re.search(rf"\d{{{MAX_DIGITS + 1},}}", text) is not None


def plausible(value: Any) -> bool:
    """False for an int beyond 64 bits or a float that is not finite or beyond 2**64."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return abs(value) < LIMIT


def _clean(obj: Any, where: str, problems: list[str]) -> None:
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            _clean(value, f"{where}.{f.name}", problems)
        elif isinstance(value, list):
            kept = []
            for i, item in enumerate(value):
                if not (dataclasses.is_dataclass(item) and not isinstance(item, type)):
                    kept.append(item)
                elif isinstance(item, Unavailable):
                    _clean(item, f"{where}.{f.name}[{i}]", problems)
                    kept.append(item)
                elif all(plausible(getattr(item, x.name)) for x in dataclasses.fields(item)):
                    kept.append(item)
                else:  # a row without a place for a reason (a sweep row): left out whole
                    problems.append(f"{where}.{f.name}[{i}]: {TOO_LARGE}; the row is left out")
            value[:] = kept
        elif isinstance(value, dict) and f.name != "unavailable":
            for key in [k for k, x in value.items() if not plausible(x)]:
                del value[key]
                problems.append(f"{where}.{f.name}[{key}]: {TOO_LARGE}; left out")
        elif not plausible(value) and isinstance(obj, Unavailable):
            obj.missing(f.name, TOO_LARGE)
            problems.append(f"{where}.{f.name}: {TOO_LARGE}; left out")


def drop_implausible(rig: Rig) -> None:
    """Every number in ``rig`` beyond 64 bits, or not finite, made null with its reason (and a problem)."""
    problems: list[str] = []
    for name in ("gpus", "measurements"):
        for i, item in enumerate(getattr(rig, name)):
            _clean(item, f"{name}[{i}]", problems)
    for name in ("host", "software", "topology"):
        _clean(getattr(rig, name), name, problems)
    rig.problems.extend(problems)
