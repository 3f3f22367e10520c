"""The measured numbers of one node, read from its scan's measurements (the same JSON ``scan --json`` and
``check --json`` save), one ``Figure`` per GPU, GPU pair or collective.

Families (figures of one kind a job can be bound by): ``h2d pinned`` / ``d2h pageable`` ... per GPU (``all at
once`` when every GPU copied together), ``p2p_unidir`` / ``p2p_bidir`` per GPU pair with P2P on,
``p2p_latency`` per pair (lower is better), ``<collective> busbw`` per node (the largest size measured, as
nccl-tests' headline), and, where the benchmarker measured compute, ``matmul <dtype>`` (TFLOPS) and
``memory_bandwidth`` (GB/s) per GPU; ``storage read`` / ``storage write`` (GB/s, sequential) per directory the
storage benchmark measured (``bench --storage`` or an imported fio run: ``storage.paths[].bench``).
Only measurements with status "ok" count. A measurement whose ranks ran
on several hosts is a ``CrossNode`` record instead (a multi-node run, or a node pair of ``bench --pairs``).
"""

from __future__ import annotations

from typing import Any

from gpuadvisor.facts import COLLECTIVES, COPIES, P2P_BW, Measurement, Storage
from gpuadvisor.fleet.model import STORAGE_ROW, CrossNode, FigureRow, FigureTable

_KEYS: dict[tuple[Any, ...], tuple[str, str]] = {}  # (kind, ...) -> (key, family), shared by every node's figures
_KEYS_MAX = 200_000


def _key(t: tuple[Any, ...], key: str, fam: str) -> tuple[str, str]:
    if len(_KEYS) < _KEYS_MAX:
        _KEYS[t] = (key, fam)
    return key, fam


STORAGE = (("seq_read_gbps", "storage read"), ("seq_write_gbps", "storage write"))


def extract(
    measurements: list[Measurement], where: str, storage: Storage | None = None
) -> tuple[FigureTable, list[CrossNode]]:
    figs, cross = _extract(measurements, where)
    if storage is not None:
        for row in storage_rows(storage):
            figs.setdefault(row[0], row)
    return FigureTable.of(figs.values(), where), cross


def storage_rows(storage: Storage) -> list[FigureRow]:
    """Sequential read and write GB/s of each benchmarked directory, one figure each (``row`` STORAGE_ROW marks
    a storage figure: its ``index`` is the path's in ``storage.paths``)."""
    out: list[FigureRow] = []
    for i, p in enumerate(storage.paths):
        b = p.bench
        if b is None or not p.path:
            continue
        for attr, fam in STORAGE:
            v = getattr(b, attr)
            if isinstance(v, int | float) and v > 0:
                out.append((f"{fam} · {p.path}", fam, "GB/s", True, float(v), i, STORAGE_ROW, None))
    return out


def _cross(m: Measurement, i: int, where: str) -> CrossNode | None:
    """A measurement whose ranks ran on several hosts, as a CrossNode (None: no headline to compare)."""
    distinct = list(dict.fromkeys(m.hosts))
    if m.value_gbps is None or len(distinct) < 2:
        return None
    return CrossNode(
        kind=m.kind,
        hosts=distinct,
        value_gbps=float(m.value_gbps),
        world_size=m.world_size,
        pair=len(distinct) == 2 and "node pair" in " ".join(m.notes),
        evidence=f"{where}: measurements[{i}] ({m.kind}, {len(m.hosts)} ranks on {len(distinct)} hosts)",
    )


def _extract(measurements: list[Measurement], where: str) -> tuple[dict[str, FigureRow], list[CrossNode]]:
    figs: dict[str, FigureRow] = {}
    cross: list[CrossNode] = []
    keys = _KEYS
    for i, m in enumerate(measurements):
        if m.status != "ok":
            continue
        kind, gpus = m.kind, m.gpus
        if len(m.hosts) > 1 and len(set(m.hosts)) > 1:
            c = _cross(m, i, where)
            if c is not None:
                cross.append(c)
            continue
        value = None if m.value_gbps is None else float(m.value_gbps)
        ng = len(gpus)
        unit, hb, v = "GB/s", True, value
        if kind in P2P_BW:
            if ng != 2 or m.p2p_enabled is False or value is None:
                continue
            t: tuple[Any, ...] = (kind, gpus[0], gpus[1])
            found: tuple[str, str] | None
            kf = keys.get(t) or _key(t, f"{kind} · GPU {gpus[0]}→{gpus[1]}", kind)
        elif kind in COPIES:
            if ng != 1 or value is None:
                continue
            t = (kind, m.memory, bool(m.concurrent), gpus[0])
            found = keys.get(t)
            if found is None:
                fam = f"{kind} {m.memory or ''}".strip() + (" all at once" if m.concurrent else "")
                found = _key(t, f"{fam} · GPU {gpus[0]}", fam)
            kf = found
        elif kind == "p2p_latency":
            v = None if m.latency_us is None else float(m.latency_us)
            if ng != 2 or m.p2p_enabled is False or v is None:
                continue
            unit, hb = "us", False
            t = (kind, gpus[0], gpus[1])
            kf = keys.get(t) or _key(t, f"p2p_latency · GPU {gpus[0]}→{gpus[1]}", "p2p_latency")
        elif kind in COLLECTIVES:
            ws = m.world_size
            if value is None or ws is None or ws < 2:
                continue
            t = (kind, ws, m.backend or "?")
            kf = keys.get(t) or _key(t, f"{kind} busbw · {ws} ranks, {m.backend or '?'}", f"{kind} busbw")
            _rows(figs, kf[1], kf[0], m, where, i)
        elif kind == "matmul":
            v = None if m.value_tflops is None else float(m.value_tflops)
            if ng != 1 or v is None:
                continue
            unit = "TFLOPS"
            t = (kind, m.dtype or "", gpus[0])
            found = keys.get(t)
            if found is None:
                fam = f"matmul {m.dtype or ''}".strip()
                found = _key(t, f"{fam} · GPU {gpus[0]}", fam)
            kf = found
        elif kind == "memory_bandwidth" and ng == 1 and value is not None:
            t = (kind, gpus[0])
            kf = keys.get(t) or _key(t, f"memory_bandwidth · GPU {gpus[0]}", "memory_bandwidth")
        else:
            continue
        if kf[0] in figs or v is None:
            continue
        exp = m.expected_gbps if unit == "GB/s" else None
        figs[kf[0]] = (kf[0], kf[1], unit, hb, v, i, -1, float(exp) if exp else None)
    return figs, cross


ROW_MIN_BYTES = 1 << 20  # collective sizes from 1 MiB (the quick sizes): each its own timing of the collective


def _rows(figs: dict[str, FigureRow], fam: str, key: str, m: Measurement, where: str, i: int) -> None:
    """The collective's other bandwidth-bound message sizes, one figure each (the headline is the largest)."""
    top = max((r.size_bytes for r in m.rows), default=None)
    for j, r in enumerate(m.rows):
        size, bw = r.size_bytes, r.busbw_gbps
        if ROW_MIN_BYTES <= size != top and bw > 0:
            t = ("row", key, size)
            k = (_KEYS.get(t) or _key(t, f"{key} · {size >> 20} MiB", fam))[0]
            if k not in figs:
                figs[k] = (k, fam, "GB/s", True, float(bw), i, j, None)
