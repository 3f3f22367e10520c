"""Which outputs come from one machine: outputs that disagree are different machines.

Two outputs disagree when both state a fact and the facts differ: the hostname (nccl-tests rank lines, no
host in common), the driver version (nvidia-smi), the number of GPUs (``topo -m``/``-p2p`` list them all,
``-q`` says "Attached GPUs"; a plain ``nvidia-smi``, ``nvlink -s`` or ``-L`` shows at least as many as it
lists), the GPUs' ids (UUIDs and bus ids with none in common), or one nvidia-smi index given two bus ids or
UUIDs. An output that simply lacks a fact never disagrees. nccl-tests and CUDA samples number devices as CUDA
does (and may run on some GPUs only), so neither their device numbers nor their GPU count is compared.

Without ``--split`` the first disagreement refuses the import (one line naming both outputs and the fact);
with it, :func:`split` puts each output with the machine of the previous output of its file if they agree,
else with one it shares a GPU id, hostname or driver with, else with the only machine it agrees with; an output
that agrees with several machines and shares nothing with them is a machine of its own (no guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuadvisor.importers.errors import ImportParseError

if TYPE_CHECKING:
    from gpuadvisor.importers.merge import Part

_WHOLE = ("topo-m", "topo-p2p")  # list every GPU the driver sees
_SHOWN = (
    "smi-summary",
    "nvlink",
    "smi-list",
    "smi-q",
    "smi-xml",
)  # list the GPUs shown (a -i filter or an elision: fewer)
_INDEXED = ("smi-summary", "nvlink", "smi-list")  # print nvidia-smi's own index beside the id
# print the loaded driver's version (not the installed packages': those may be newer until a reboot)
_LOADED_DRIVER = ("smi-q", "smi-xml", "smi-summary", "smi-version", "proc-version")


@dataclass
class Machine:
    """What the outputs of one machine say about it, each fact with the output that said it first."""

    parts: list[Part] = field(default_factory=list)
    hosts: tuple[set[str], str] | None = None
    driver: tuple[str, str] | None = None
    count: tuple[int, str] | None = None  # exact
    at_least: tuple[int, str] | None = None
    matrix: tuple[list[list[str]], str] | None = None  # topo -m
    ids: dict[str, str] = field(default_factory=dict)  # uuid or bus id -> origin
    by_index: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (uuid or bus id, origin)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(p.file for p in self.parts))


def _attached(part: Part) -> int | None:
    for line in part.text.splitlines():
        m = re.match(r"^\s*(?:Attached GPUs\s*:\s*|<attached_gpus>\s*)(\d+)", line)
        if m:
            return int(m.group(1))
    return None


def facts_of(part: Part) -> Machine:
    """The machine facts one output states."""
    m = Machine(parts=[part])
    o = part.origin
    if part.nccl is not None and part.nccl.hosts:
        m.hosts = (set(part.nccl.hosts), o)
    drv = part.rig.software.driver_version
    if drv and part.kind in _LOADED_DRIVER:
        m.driver = (drv, o)
    n = len(part.rig.gpus)
    if part.kind in _WHOLE and n:
        m.count = (n, o)
    elif part.kind in ("smi-q", "smi-xml"):
        attached = _attached(part)
        if attached is not None:
            m.count = (attached, o)
    if part.kind == "topo-m" and part.rig.topology.matrix:
        m.matrix = (part.rig.topology.matrix, o)
    if part.kind in _SHOWN and n:
        m.at_least = (n, o)
    for g in part.rig.gpus:
        for x in (g.uuid, g.bus_id):
            if x:
                m.ids.setdefault(x, o)
        key = g.uuid or g.bus_id
        if part.kind in _INDEXED and key:
            m.by_index[g.index] = (key, o)
    return m


def disagreement(a: Machine, b: Machine) -> str | None:
    """Why outputs ``b`` cannot be of machine ``a``, or None."""
    if a.hosts and b.hosts and not (a.hosts[0] & b.hosts[0]):
        return f"{a.hosts[1]} ran on {', '.join(sorted(a.hosts[0]))}, {b.hosts[1]} on {', '.join(sorted(b.hosts[0]))}"
    if a.driver and b.driver and a.driver[0] != b.driver[0]:
        return f"{a.driver[1]} shows driver {a.driver[0]}, {b.driver[1]} driver {b.driver[0]}"
    if a.count and b.count and a.count[0] != b.count[0]:
        return f"{a.count[1]} shows {a.count[0]} GPUs, {b.count[1]} {b.count[0]}"
    for exact, low in ((a.count, b.at_least), (b.count, a.at_least)):
        if exact and low and low[0] > exact[0]:
            return f"{exact[1]} shows {exact[0]} GPUs, {low[1]} lists {low[0]}"
    if a.matrix and b.matrix and a.matrix[0] != b.matrix[0]:
        return f"{a.matrix[1]} and {b.matrix[1]} are different GPU topologies"
    uuid = str.startswith  # UUIDs ("GPU-...") are compared with UUIDs, bus ids with bus ids: -L has only UUIDs
    kinds = [
        (ours, theirs)
        for ours, theirs in (
            ({x for x in a.ids if uuid(x, "GPU-")}, {x for x in b.ids if uuid(x, "GPU-")}),
            ({x for x in a.ids if not uuid(x, "GPU-")}, {x for x in b.ids if not uuid(x, "GPU-")}),
        )
        if ours and theirs
    ]
    if kinds and not any(ours & theirs for ours, theirs in kinds):
        ours, theirs = sorted(kinds[0][0]), sorted(kinds[0][1])
        return (
            f"the GPUs of {next(iter(b.ids.values()))} ({', '.join(theirs[:2])}{', ...' if len(theirs) > 2 else ''}) "
            "are none of "
            f"those of {next(iter(a.ids.values()))} ({', '.join(ours[:2])}{', ...' if len(ours) > 2 else ''})"
        )
    for idx, (key, origin) in b.by_index.items():
        if idx in a.by_index and a.by_index[idx][0] != key and _same_kind(key, a.by_index[idx][0]):
            return f"GPU {idx} is {a.by_index[idx][0]} in {a.by_index[idx][1]} but {key} in {origin}"
    return None


def _same_kind(x: str, y: str) -> bool:
    return x.startswith("GPU-") == y.startswith("GPU-")


def _join(m: Machine, f: Machine) -> None:
    m.parts.extend(f.parts)
    m.hosts = m.hosts or f.hosts
    m.driver = m.driver or f.driver
    m.count = m.count or f.count
    m.matrix = m.matrix or f.matrix
    if f.at_least and (not m.at_least or f.at_least[0] > m.at_least[0]):
        m.at_least = f.at_least
    for k, v in f.ids.items():
        m.ids.setdefault(k, v)
    for ki, vi in f.by_index.items():
        m.by_index.setdefault(ki, vi)


def one_machine(parts: list[Part]) -> None:
    """Refuse outputs of several machines, naming the first two that disagree and on what."""
    machine = Machine()
    for part in parts:
        f = facts_of(part)
        why = disagreement(machine, f)
        if why:
            raise ImportParseError(
                part.file,
                part.line,
                f"outputs of different machines: {why}; import each machine on its own, "
                "or pass --split to import each as its own scan",
            )
        _join(machine, f)


def _shares(m: Machine, f: Machine) -> bool:
    return bool(
        (m.ids.keys() & f.ids.keys())
        or (m.hosts and f.hosts and m.hosts[0] & f.hosts[0])
        or (m.driver and f.driver and m.driver[0] == f.driver[0])
    )


def split(parts: list[Part]) -> list[Machine]:
    """The outputs grouped by machine, in the order the machines first appear."""
    machines: list[Machine] = []
    last: dict[str, Machine] = {}  # file -> the machine its previous output went to
    for part in parts:
        f = facts_of(part)
        fits = [m for m in machines if disagreement(m, f) is None]
        same_file = last.get(part.file)
        # Nothing in common with any machine (a topo -m, an lspci fragment): join the only one it agrees with, else
        # stand alone rather than guess.
        pick = (
            (same_file if same_file in fits else None)
            or next((m for m in fits if _shares(m, f)), None)
            or (fits[0] if len(fits) == 1 else None)
        )
        if pick is None:
            machines.append(f)
            pick = f
        else:
            _join(pick, f)
        last[part.file] = pick
    return machines
