"""The kernel-log events kept from a log of any length: memory bounded, whatever the number of lines.

A node that logs the same Xid every second for a week has a million lines of it. What the on-call engineer and
the rules need of them is how many, where and when the first and the last were, and a few lines as evidence: so
events are kept per group (kind, number, device, and what decides the severity: the catalog's severity class of
the line, the Xid it names as its cause, fatal or not for an SXid), the first ``KEEP_FIRST`` and the last
``KEEP_LAST`` of each; the ones between are counted on the first kept after them (``KernelEvent.more``). At most
``MAX_GROUPS`` groups are kept (a log with more devices or numbers than a node has is not one node's); the
events of any further group are counted in ``unkept``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gpuadvisor.catalog.xids import cause_of, event_severity, recovery_action
from gpuadvisor.facts import KernelEvent

KEEP_FIRST = 5
KEEP_LAST = 5
MAX_GROUPS = 2000


@dataclass
class _Group:
    head: list[tuple[int, KernelEvent]] = field(default_factory=list)
    tail: deque[tuple[int, KernelEvent]] = field(default_factory=lambda: deque(maxlen=KEEP_LAST))
    between: int = 0  # events counted, not kept (between the head and the tail)

    def add(self, seq: int, ev: KernelEvent) -> None:
        if len(self.head) < KEEP_FIRST:
            self.head.append((seq, ev))
            return
        if len(self.tail) == KEEP_LAST:
            self.between += 1 + self.tail[0][1].more  # the oldest of the tail leaves it: counted only
        self.tail.append((seq, ev))

    def kept(self) -> list[tuple[int, KernelEvent]]:
        if self.between:  # the dropped events came before the first of the tail: it carries their count
            self.tail[0][1].more += self.between
            self.between = 0
        return self.head + list(self.tail)


def group_key(ev: KernelEvent) -> tuple[object, ...]:
    """What a kept event stands for: events of one key differ only in what no rule reads for its verdict."""
    if ev.kind == "xid":
        action = recovery_action(ev.text) if ev.code == 154 else None
        return ("xid", ev.code, ev.bus_id, event_severity(ev.code, ev.text), tuple(cause_of(ev.text)), action)
    if ev.kind == "sxid":
        low = ev.text.lower()
        fatal = low.startswith("fatal") or ", fatal" in low
        return ("sxid", ev.code, ev.bus_id, fatal, ev.text.startswith("only its detail line"))
    device = ev.bus_id or ev.text.split(":")[0]  # an IPoIB interface without a PCI address: its name
    return (ev.kind, ev.code, device)


class KeptEvents:
    """Events added in log order; ``events()`` the ones kept, in that order, with the counts of the others."""

    def __init__(self) -> None:
        self._groups: dict[tuple[object, ...], _Group] = {}
        self._seq = 0
        self.unkept = 0  # events of groups past MAX_GROUPS

    def add(self, ev: KernelEvent) -> None:
        key = group_key(ev)
        group = self._groups.get(key)
        if group is None:
            if len(self._groups) >= MAX_GROUPS:
                self.unkept += 1 + ev.more
                return
            group = self._groups[key] = _Group()
        self._seq += 1
        group.add(self._seq, ev)

    def extend(self, events: list[KernelEvent]) -> None:
        for ev in events:
            self.add(ev)

    def events(self) -> list[KernelEvent]:
        kept = [pair for g in self._groups.values() for pair in g.kept()]
        kept.sort(key=lambda pair: pair[0])
        return [ev for _, ev in kept]

    def __len__(self) -> int:
        return sum(len(g.head) + len(g.tail) for g in self._groups.values())
