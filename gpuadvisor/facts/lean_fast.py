"""The lean load's fast road: a scan decoded by msgspec straight into the few sections the fleet reads.

A scan is about 186 kB of JSON, most of it sections the fleet never reads (advice, kernel events, each figure's
method, provenance and unavailable reasons). ``decode`` reads the file's bytes against a typed schema of only
the read sections, so the rest is skipped in C, never built as Python objects and never freed; each
measurement's values are type-checked by the decoder, not one by one in Python.

It gives exactly what the standard road (``facts.lean.read_json`` then ``from_json``) gives, or ``None``, and the
caller takes the standard road. ``None`` is every case the standard road words or treats leniently: a value of
another type than the scans this gpuadvisor writes hold (the standard road leaves it unset), a section of the
wrong shape (refused there), a file that is not a scan of this schema version (a failure record, a check report,
or refused), JSON that is not valid (refused there, with its line), an integer that might be beyond 64 bits
anywhere in the file, and a float beyond the double range in a section read here.

The one difference, by design of a lean load: a float beyond the double range (``1e400``, which no JSON writer
produces) in a section the fleet does not read is not looked for, so such a scan is read for what the fleet
compares; every command that reads that section refuses the file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from gpuadvisor.facts.measure import COLLECTIVES, COPIES, P2P_BW, Measurement, SweepRow
from gpuadvisor.facts.model import KIND, SCHEMA_VERSION
from gpuadvisor.facts.scanfile import Unphysical

NUM, _BOOL, _STR = frozenset({int, float}), frozenset({bool}), frozenset({str})
BANDWIDTH = (("value_gbps", NUM), ("expected_gbps", NUM))
# What each kind of measurement is (facts.Measurement's docstring), beyond kind, status, world size, GPUs and hosts;
# another kind: its bandwidth.
KIND_FIELDS: dict[str, tuple[tuple[str, frozenset[type]], ...]] = {
    **dict.fromkeys(COPIES, (*BANDWIDTH, ("memory", _STR), ("concurrent", _BOOL))),
    **dict.fromkeys(P2P_BW, (*BANDWIDTH, ("p2p_enabled", _BOOL))),
    "p2p_latency": (("latency_us", NUM), ("p2p_enabled", _BOOL)),
    **dict.fromkeys(COLLECTIVES, (*BANDWIDTH, ("backend", _STR))),
    "matmul": (("value_tflops", NUM), ("dtype", _STR)),
    "memory_bandwidth": BANDWIDTH,
}

Num = int | float | None | UnsetType
Str = str | None | UnsetType
Bool = bool | None | UnsetType


class _Row(msgspec.Struct):
    size_bytes: int | None | UnsetType = UNSET
    busbw_gbps: Num = UNSET


class _Figure(msgspec.Struct):
    """The fields of a measurement the lean load reads (facts.lean._KIND_FIELDS names the values per kind)."""

    kind: str | UnsetType = UNSET
    status: str = "ok"
    world_size: int | None | UnsetType = UNSET
    gpus: list[int] | None | UnsetType = UNSET
    hosts: list[str] | None | UnsetType = UNSET
    notes: list[str] | None | UnsetType = UNSET
    rows: list[_Row] | None | UnsetType = UNSET
    value_gbps: Num = UNSET
    expected_gbps: Num = UNSET
    latency_us: Num = UNSET
    value_tflops: Num = UNSET
    memory: Str = UNSET
    backend: Str = UNSET
    dtype: Str = UNSET
    concurrent: Bool = UNSET
    p2p_enabled: Bool = UNSET


# The sections the fleet reads, each with the type it must have for this road (another type: the standard road
# refuses the file naming the section, or reads the value leniently); any other key of the file is skipped unread.
_OBJECT, _OBJECTS = dict[str, Any] | None, list[dict[str, Any]] | None
Scan = msgspec.defstruct(
    "Scan",
    [
        *((name, Any, None) for name in ("kind", "schema_version", "network", "storage")),
        *((name, _OBJECT, None) for name in ("host", "source", "software", "topology")),
        *((name, _OBJECTS, None) for name in ("gpus", "findings")),
        ("measurements", list[_Figure] | None, None),
    ],
)


assert {n for f in KIND_FIELDS.values() for n, _ in f} <= set(_Figure.__struct_fields__)  # every value read
_DECODER = msgspec.json.Decoder(Scan)


def decode(raw: bytes, suspect: Callable[[bytes], bool]) -> msgspec.Struct | None:
    """The read sections of a scan of this schema version, or None: the standard road reads the file."""
    if suspect(raw):
        return None
    try:
        scan = _DECODER.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError):
        return None
    section = scan.__getattribute__  # a defstruct's fields, by name
    version = section("schema_version")
    if section("kind") != KIND or type(version) is not int or version != SCHEMA_VERSION:
        return None
    return scan


_new = object.__new__


def measurement(m: _Figure) -> Measurement:
    """A decoded figure as facts.lean._measurement makes it from the parsed JSON (the values' types checked)."""
    kind = m.kind
    hosts = m.hosts or []
    d: dict[str, Any] = {
        "unavailable": {},
        "status": m.status,
        "gpus": m.gpus or [],
        "hosts": hosts,
        "notes": (m.notes or []) if hosts else [],
    }
    if kind is not UNSET:
        d["kind"] = kind
    if type(m.world_size) is int:
        d["world_size"] = m.world_size
    for name, allowed in BANDWIDTH if kind is UNSET else KIND_FIELDS.get(kind, BANDWIDTH):
        v = getattr(m, name)
        if type(v) in allowed:
            if type(v) is not bool and type(v) is not str and v < 0:
                raise Unphysical(f"measurements: {name} {v} is negative; a {name} cannot be")
            d[name] = v
    rows = m.rows
    d["rows"] = [_row(r) for r in rows] if rows and kind in COLLECTIVES else []
    obj: Measurement = _new(Measurement)
    obj.__dict__ = d
    return obj


def _row(r: _Row) -> SweepRow:
    size, bw = r.size_bytes, r.busbw_gbps
    if type(bw) is float or type(bw) is int:
        if bw < 0:
            raise Unphysical(f"measurements: rows busbw_gbps {bw} is negative; a busbw_gbps cannot be")
    else:
        bw = 0.0
    obj: SweepRow = _new(SweepRow)
    obj.__dict__ = {"size_bytes": size if type(size) is int else 0, "busbw_gbps": bw}
    return obj
