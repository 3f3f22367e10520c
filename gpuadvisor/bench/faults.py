"""Test hooks that make a worker misbehave on purpose, set through ``GPUADVISOR_BENCH_FAULT``.

Comma-separated items ``ACTION:RANK:KIND``: ``corrupt`` adds 1 to the first element of that rank's result
before the correctness check (the check must then fail the measurement), ``hang`` sleeps forever when that
rank reaches KIND, ``die`` exits the process with status 3 there, ``raise`` raises a RuntimeError there,
``kill`` sends the process SIGKILL there (as the kernel's OOM killer does). Used by the test suite only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV = "GPUADVISOR_BENCH_FAULT"
ACTIONS = ("corrupt", "hang", "die", "raise", "kill")


@dataclass(frozen=True)
class Fault:
    action: str
    rank: int
    kind: str


def parse(text: str | None = None) -> list[Fault]:
    text = os.environ.get(ENV, "") if text is None else text
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.split(":")
        if len(parts) != 3 or parts[0] not in ACTIONS or not parts[1].isdigit():
            raise ValueError(f"{ENV}: bad item {item!r} (expected ACTION:RANK:KIND, ACTION one of {'|'.join(ACTIONS)})")
        out.append(Fault(parts[0], int(parts[1]), parts[2]))
    return out


def active(faults: list[Fault], action: str, rank: int, kind: str) -> bool:
    return any(f.action == action and f.rank == rank and f.kind == kind for f in faults)
