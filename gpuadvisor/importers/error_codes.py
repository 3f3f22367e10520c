"""Lines of a log that print a code of :mod:`gpuadvisor.catalog.error_codes`' table, read as events: the table
(what each code means, the rule that judges it, the verdict) is the catalog's; reading a program's lines for its codes
is the importers'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpuadvisor.catalog.error_codes import (  # the table and its line lookups, for the readers that use them
    APP_FAULT,
    BY_NAME,
    CODES,
    DRIVER_STACK,
    ErrorCode,
    alternation,
    find,
    lookup,
    names_library,
    numbers,
    nvml_sign,
)
from gpuadvisor.facts import KernelEvent
from gpuadvisor.importers.fragments import PCI_BUS_ID_NO_FUNCTION, PCI_FUNCTION
from gpuadvisor.probes.kmsg import normalise_bus_id

__all__ = [
    "APP_FAULT",
    "BY_NAME",
    "CODES",
    "DRIVER_STACK",
    "ErrorCode",
    "alternation",
    "coded_lines",
    "event",
    "find",
    "first_events",
    "judge_unjudged",
    "lookup",
    "names_library",
    "numbers",
    "nvml_sign",
]

# the device a line names: a PCI bus id as NVML or lspci prints it; a CUDA ordinal ("GPU 0", "cuda:1") is the job's
# numbering under its CUDA_VISIBLE_DEVICES, not the machine's; a GPU UUID stays in the text (mapped after the merge)
_BUS = re.compile(rf"\b{PCI_BUS_ID_NO_FUNCTION}(?:{PCI_FUNCTION})\b")


def event(line: str, lineno: int | None) -> KernelEvent | None:
    """The line's code as an event of the kind the table gives it, the line its evidence, its device the PCI bus id
    the line names; None when it prints no code of the table."""
    e = find(line)
    if e is None or e.kind is None:
        return None
    bus = _BUS.search(line)
    return KernelEvent(kind=e.kind, code=e.code, bus_id=normalise_bus_id(bus.group(0)) if bus else None,
                       text=line.strip(), line=lineno)  # fmt: skip


def judge_unjudged(events: list[KernelEvent]) -> None:
    """Once an import is merged: each error line no sign judged that prints a code of the table becomes the table's
    event for it (one path for every entry, whichever reader kept the line); the last line kept, which counts the
    lines not kept, stays as it is."""
    for k, ev in enumerate(events):
        if ev.kind == "unjudged" and not ev.more and (found := event(ev.text, ev.line)) is not None:
            events[k] = found


def first_events(lines: list[str], first: int, but: tuple[str, ...] = ()) -> list[KernelEvent]:
    """The first line printing each code of the table (of a kind not in ``but``) as its event, and how many more
    lines print it (a log repeats its error)."""
    return _first_of_each(((first + n, line) for n, line in enumerate(lines)), but)


def _first_of_each(numbered: Iterable[tuple[int, str]], but: tuple[str, ...] = ()) -> list[KernelEvent]:
    found: dict[tuple[str, int], KernelEvent] = {}
    for number, line in numbered:
        ev = event(line, number)  # None for a line longer than an error message (find's bound)
        if ev is None or ev.kind in but:
            continue
        key = (ev.kind, ev.code)
        if key in found:
            found[key].more += 1
        else:
            found[key] = ev
    return list(found.values())


# a line that may print a code of the table: its library named, a code's name, or a tool's message for one (a cheap
# test before the table is looked up, so a long log is read in one pass)
MAY_PRINT = re.compile(r"(?i:cuda|nvml)|ERROR_|\bcu[A-Z]|couldn't communicate|FATAL: Module|load the NVIDIA kernel")


def coded_lines(text: str, first: int, kept: set[int]) -> list[KernelEvent]:
    """A program's lines that print a code of the table in words of its own, which no failure word marks (a miner's
    "CUDA: Device: 1 Thread exited with code: 46") and no event stands for yet (``kept``: their line numbers): the
    first line of each code as its event, the lines repeating it counted."""
    lines = text.splitlines()
    return _first_of_each((first + n, x) for n, x in enumerate(lines) if first + n not in kept and MAY_PRINT.search(x))
