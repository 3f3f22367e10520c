"""What the fleet view holds: nodes (one per host), their figures and attributes, groups, findings."""

from __future__ import annotations

import datetime as dt
import gc
from array import array
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpuadvisor import severity
from gpuadvisor.facts import Finding


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cycle collector paused while the fleet reads or analyses: what it makes is acyclic, freed by reference
    counting, and a collection every few thousand allocations would walk every node read so far."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


SEVERITIES = tuple(s for s in severity.ORDER if s in severity.GATES)  # what the fleet gives: fail, warn, info
SEV_RANK = severity.RANK
# what an operator acts on first, at one severity: hardware gone, no scan, the node's own check, slowdowns, config
KIND_ORDER = (
    "lost",
    "slow-port",
    "failed",
    "missing",
    "duplicate",
    "check",
    "outlier",
    "pair",
    "drift",
    "changed",
    "stale",
    "unexpected",
    "alone",
    "multinode",
)
KIND_RANK = {k: i for i, k in enumerate(KIND_ORDER)}


def finding_key(f: FleetFinding) -> tuple[int, int, float]:
    return SEV_RANK[f.severity], KIND_RANK.get(f.kind, len(KIND_ORDER)), -abs(f.deviation or 0.0)


@dataclass(slots=True)
class Figure:
    """One measured number of one node, e.g. key "h2d pinned · GPU 3", family "h2d pinned". Lean (slots, shared
    key and family strings, the evidence built only when asked): a fleet holds about 200 per node."""

    key: str
    family: str
    value: float
    unit: str  # GB/s | us | TFLOPS
    higher_better: bool = True
    src: str = ""  # the scan file's name
    index: int = -1  # measurements[index] of that file
    row: int = -1  # rows[row] of that measurement (a collective's message size), -1: the measurement's headline
    expected: float | None = None  # the node rules' expected value (link physics, datasheet), when the scan has it

    @property
    def evidence(self) -> str:
        if self.row == STORAGE_ROW:
            return f"{self.src}: storage.paths[{self.index}].bench"
        where = f"{self.src}: measurements[{self.index}]" if self.index >= 0 else self.src
        return where + (f".rows[{self.row}]" if self.row >= 0 else "")


STORAGE_ROW = 4094  # the row of a storage figure (above any collective row): its index is the path's in storage.paths
# A figure as a row: key, family, unit, higher_better, value, measurements index, rows index (-1: headline), expected
FigureRow = tuple[str, str, str, bool, float, int, int, float | None]
MAX_KEYS = 1_000_000  # distinct figure keys one process holds (a real fleet has a few hundred)
MAX_LAYOUTS = 1_000  # distinct figure layouts shared (a real fleet has a few); beyond, a table keeps its own


class FigureTable(Mapping[str, Figure]):
    """A node's figures, compact: about 15 bytes a figure (a shared key id, the value, where it was read) instead
    of an object each; a ``Figure`` is made when one is asked for. Keys, families and units live once per
    process in ``FigureTable.META`` (a fleet of 50,000 nodes has a few hundred distinct figure keys), and so do
    the layouts nodes share (which figures, where in the scan each was read, the expected values): a node of a
    fleet holds its values and three references."""

    META: ClassVar[list[tuple[str, str, str, bool]]] = []  # id -> (key, family, unit, higher_better)
    IDS: ClassVar[dict[str, int]] = {}
    # (ids, where) bytes -> (ids, their positions, where); expected items -> expected: shared by every table
    LAYOUTS: ClassVar[dict[bytes, tuple[array[int], dict[int, int], array[int]]]] = {}
    EXPECTED: ClassVar[dict[tuple[tuple[int, float], ...], dict[int, float]]] = {}
    __slots__ = ("_ids", "_at", "_vals", "_where", "_expected", "src")
    _ids: array[int]
    _at: dict[int, int]
    _vals: array[float]
    _where: array[int]
    _expected: dict[int, float]
    src: str

    def __init__(self, rows: Iterable[Figure] = (), src: str = "") -> None:
        self._fill(((f.key, f.family, f.unit, f.higher_better, f.value, f.index, f.row, f.expected) for f in rows), src)

    @classmethod
    def of(cls, rows: Iterable[FigureRow], src: str = "") -> FigureTable:
        """A table from (key, family, unit, higher_better, value, index, row, expected) rows (no Figure each)."""
        table = cls.__new__(cls)
        table._fill(rows, src)
        return table

    def _fill(self, rows: Iterable[FigureRow], src: str) -> None:
        by: dict[int, FigureRow] = {}
        for fig in rows:
            i = self.IDS.get(fig[0])
            if i is None:
                if len(self.META) >= MAX_KEYS:  # hostile scans inventing keys: the node fails, memory stays bounded
                    raise ValueError(f"more than {MAX_KEYS:,} distinct figures across the fleet")
                i = self.IDS[fig[0]] = len(self.META)
                self.META.append(fig[:4])
            by.setdefault(i, fig)
        order = sorted(by)
        ids = array("I", order)
        where = array("l", (by[i][5] * 4096 + by[i][6] + 1 for i in order))
        sig = ids.tobytes() + where.tobytes()
        layout = self.LAYOUTS.get(sig)
        if layout is None:
            layout = (ids, {i: n for n, i in enumerate(order)}, where)
            if len(self.LAYOUTS) < MAX_LAYOUTS:
                self.LAYOUTS[sig] = layout
        self._ids, self._at, self._where = layout
        self._vals = array("d", (by[i][4] for i in order))
        expected = tuple((n, e) for n, i in enumerate(order) if (e := by[i][7]))
        shared = self.EXPECTED.get(expected)
        if shared is None:
            shared = dict(expected)
            if len(self.EXPECTED) < MAX_LAYOUTS:
                self.EXPECTED[expected] = shared
        self._expected = shared
        self.src = src

    def _pos(self, key: str) -> int:
        n = self._at.get(self.IDS.get(key, -1))
        return -1 if n is None else n

    def _fig(self, n: int) -> Figure:
        key, fam, unit, hb = self.META[self._ids[n]]
        index, row = divmod(self._where[n], 4096)
        return Figure(key, fam, self._vals[n], unit, hb, self.src, index, row - 1, self._expected.get(n))

    def __getitem__(self, key: str) -> Figure:
        n = self._pos(key)
        if n < 0:
            raise KeyError(key)
        return self._fig(n)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._pos(key) >= 0

    def __iter__(self) -> Iterator[str]:
        meta = self.META
        return (meta[i][0] for i in self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def items(self) -> Iterator[tuple[str, Figure]]:  # type: ignore[override]
        for n in range(len(self._ids)):
            f = self._fig(n)
            yield f.key, f

    def values(self) -> Iterator[Figure]:  # type: ignore[override]
        return (self._fig(n) for n in range(len(self._ids)))

    def pairs(self) -> Iterator[tuple[str, float]]:
        """(key, value) of every figure, without making a Figure each."""
        meta = self.META
        return zip([meta[i][0] for i in self._ids], self._vals, strict=True)

    def columns(self) -> tuple[dict[int, int], array[float], dict[int, float]]:
        """(key id -> position, values by position, expected by position): for loops over many nodes' figures."""
        return self._at, self._vals, self._expected

    def rows(self, keys: list[str]) -> list[tuple[str, float, bool, float | None]]:
        """(key, value, higher_better, expected) of each of ``keys`` the node has, in their order."""
        at, ids_of, vals, expected, meta = self._at, self.IDS, self._vals, self._expected, self.META
        out = []
        for k in keys:
            n = at.get(ids_of.get(k, -1))
            if n is not None:
                out.append((k, vals[n], meta[self._ids[n]][3], expected.get(n)))
        return out

    def lookup(self, key: str) -> tuple[float, bool, float | None] | None:
        """(value, higher_better, expected) of one figure without making a Figure; None: the node has none."""
        n = self._pos(key)
        return None if n < 0 else (self._vals[n], self.META[self._ids[n]][3], self._expected.get(n))


def figure_pairs(figs: Mapping[str, Figure]) -> Iterator[tuple[str, float]]:
    """(key, value) of a node's figures: a FigureTable's fast path, or any mapping of Figures."""
    if isinstance(figs, FigureTable):
        return figs.pairs()
    return ((k, f.value) for k, f in figs.items())


def shared_columns(tables: list[Mapping[str, Figure]]) -> list[tuple[tuple[str, str, str, bool], array[float]]] | None:
    """Where every table is a FigureTable of one layout (the same figures at the same places: the usual fleet),
    each figure's (key, family, unit, higher_better) and its values in the tables' order, a column at a time;
    None otherwise (then node by node)."""
    if not tables or not all(isinstance(t, FigureTable) for t in tables):
        return None
    ids = tables[0]._ids  # type: ignore[attr-defined]
    if any(t._ids is not ids for t in tables):  # type: ignore[attr-defined]
        return None
    vals = [t._vals for t in tables]  # type: ignore[attr-defined]
    meta = FigureTable.META
    return [(meta[i], array("d", [v[n] for v in vals])) for n, i in enumerate(ids)]


def figure_rows(figs: Mapping[str, Figure], keys: list[str]) -> list[tuple[str, float, bool, float | None]]:
    """(key, value, higher_better, expected) of each of ``keys`` a node has, in their order."""
    if isinstance(figs, FigureTable):
        return figs.rows(keys)
    return [(k, f.value, f.higher_better, f.expected) for k in keys if (f := figs.get(k)) is not None]


@dataclass
class CrossNode:
    """A measurement whose ranks ran on several hosts (a multi-node run, or one node pair of --pairs)."""

    kind: str
    hosts: list[str]
    value_gbps: float
    world_size: int | None
    pair: bool
    evidence: str


@dataclass
class Node:
    name: str
    path: str | None = None
    status: str = "ok"  # ok | failed | missing
    error: str | None = None
    created_at: dt.datetime | None = None
    stale: bool = False
    shape: tuple[Any, ...] | None = None
    shape_label: str | None = None
    group: str | None = None
    gpus: int = 0
    attrs: dict[str, str] = field(default_factory=dict)
    figures: Mapping[str, Figure] = field(default_factory=dict)  # a FigureTable when read from a scan
    cross: list[CrossNode] = field(default_factory=list)
    failing_checks: list[str] = field(default_factory=list)  # codes of the node's own fail findings
    notes: list[str] = field(default_factory=list)
    duplicate: bool = False  # another file claims the same host name
    checks: list[Finding] = field(default_factory=list)  # the node's own fail/warn findings (load)
    hw: dict[str, Any] = field(default_factory=dict)  # what the scan shows: GPU indexes, NVLinks, NICs (groups.counts)

    @property
    def judged(self) -> bool:
        """Its figures and attributes enter the group statistics (a fresh, readable scan with facts)."""
        return self.status == "ok" and not self.stale and self.shape is not None


@dataclass
class FleetFinding(Finding):
    """A finding of the fleet view: the facts model's ``Finding`` (severity fail | warn | info, subject, message,
    observed, expected) about a node, a group or the whole fleet, with what the fleet adds. Written as JSON with
    ``FLEET_FIELDS`` only (the node rules' code, name, area, GPUs and fix are not the fleet's)."""

    node: str | None = None  # None: a finding about a group or the whole fleet
    kind: str = ""  # outlier | drift | failed | missing | stale | check | changed | pair | alone | unexpected | ...
    group: str | None = None
    deviation: float | None = None  # relative: -0.05 = 5% worse than the group
    evidence: str | None = None
    figure: str | None = None

    def fleet_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FLEET_FIELDS}


def about(n: Node, kind: str, severity: str, subject: str, message: str, **more: Any) -> FleetFinding:
    """A finding about one node, read from its scan file (the evidence unless ``more`` names another)."""
    return FleetFinding(
        **{"evidence": n.path, **more}, node=n.name, kind=kind, severity=severity, subject=subject, message=message
    )


FLEET_FIELDS = (
    "node",
    "kind",
    "severity",
    "subject",
    "message",
    "group",
    "observed",
    "expected",
    "deviation",
    "evidence",
    "figure",
)


@dataclass
class FigureStats:
    """One figure over a group's judged nodes. Its values are held compact (8 bytes each, the node names a tuple
    shared by every figure all the nodes have): ``values`` makes the node -> value dict when asked."""

    key: str
    family: str
    unit: str
    higher_better: bool
    n: int
    median: float
    mad: float
    lo: float
    hi: float
    names: tuple[str, ...] = ()
    vals: array = field(default_factory=lambda: array("d"))

    @property
    def values(self) -> dict[str, float]:
        """node -> value, in the group's order."""
        return dict(zip(self.names, self.vals, strict=True))


@dataclass
class Group:
    id: str
    label: str
    shape: tuple[Any, ...]
    nodes: list[str] = field(default_factory=list)  # every node of this shape (judged ones enter the stats)
    judged: list[str] = field(default_factory=list)
    stats: dict[str, FigureStats] = field(default_factory=dict)


@dataclass
class Cost:
    group: str
    family: str
    nodes: int
    slowest: str
    slowest_ratio: float  # its pace as a fraction of the group median
    excluded: list[str]
    kept_slowest: str
    kept_ratio: float
    speedup: float  # 0.09 = 9% faster without the excluded nodes


@dataclass
class FleetReport:
    nodes: dict[str, Node]
    groups: list[Group]
    findings: list[FleetFinding]
    costs: list[Cost]
    thresholds: dict[str, Any]
    generated_at: str
    inputs: list[str]
    notes: list[str] = field(default_factory=list)
    baseline: str | None = None
    fail_on: str = "fail"
    noise: list[Any] = field(default_factory=list)  # noise.FamilyNoise per group and family

    def node_findings(self) -> dict[str, list[FleetFinding]]:
        out: dict[str, list[FleetFinding]] = {n: [] for n in self.nodes}
        for f in self.findings:
            if f.node is not None:
                out.setdefault(f.node, []).append(f)
        return out

    def ranked(self) -> list[tuple[Node, list[FleetFinding]]]:
        """Nodes worst first: worst severity, then what the worst finding is (lost hardware and failed scans before
        the node's own findings, before slowdowns), then the largest slowdown, then name."""
        per = self.node_findings()

        def key(name: str) -> tuple[int, int, float, str]:
            fs = sorted(per.get(name, []), key=finding_key)
            if not fs:
                return len(severity.ORDER), len(KIND_ORDER), 0.0, name
            return (
                SEV_RANK[fs[0].severity],
                KIND_RANK.get(fs[0].kind, len(KIND_ORDER)),
                -max((abs(f.deviation) for f in fs if f.deviation is not None), default=0.0),
                name,
            )

        return [(self.nodes[n], sorted(per.get(n, []), key=finding_key)) for n in sorted(self.nodes, key=key)]

    def drain(self) -> list[tuple[Node, list[FleetFinding]]]:
        """The nodes with a finding that fails the gate, worst first: what to take out of service."""
        return [(n, fs) for n, fs in self.ranked() if any(SEV_RANK[f.severity] <= SEV_RANK[self.fail_on] for f in fs)]

    def counts(self) -> dict[str, int]:
        c = {s: 0 for s in SEVERITIES}
        for f in self.findings:
            c[f.severity] += 1
        return c

    def failing(self) -> list[FleetFinding]:
        lim = SEV_RANK[self.fail_on]
        return [f for f in self.findings if SEV_RANK[f.severity] <= lim]
