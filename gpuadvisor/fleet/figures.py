"""The measured numbers of one node, read from its scan's measurements (the same JSON ``scan --json`` and
``check --json`` save), one ``Figure`` per GPU, GPU pair or collective.

Families (figures of one kind a job can be bound by): ``h2d pinned`` / ``d2h pageable`` ... per GPU (``all at
once`` when every GPU copied together), ``p2p_unidir`` / ``p2p_bidir`` per GPU pair with P2P on,
``p2p_latency`` per pair (lower is better), ``<collective> busbw`` per node (the largest size measured, as
nccl-tests' headline), and, where the benchmarker measured compute, ``matmul <dtype>`` (TFLOPS) and
``memory_bandwidth`` (GB/s) per GPU. Only measurements with status "ok" count. A measurement whose ranks ran
on several hosts is a ``CrossNode`` record instead (a multi-node run, or a node pair of ``bench --pairs``).
"""

from __future__ import annotations

from typing import Any

from gpuadvisor.facts import COLLECTIVES, COPIES, P2P_BW
from gpuadvisor.fleet.model import CrossNode, Figure, FigureTable

_KEYS: dict[tuple[Any, ...], tuple[str, str]] = {}  # (kind, ...) -> (key, family), shared by every node's figures
_KEYS_MAX = 200_000


def _key(t: tuple[Any, ...], key: str, fam: str) -> tuple[str, str]:
    if len(_KEYS) < _KEYS_MAX:
        _KEYS[t] = (key, fam)
    return key, fam


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v - v == 0 else None


def _gpu(g: Any) -> Any:
    return g if type(g) is int else str(g)


def extract(measurements: Any, where: str) -> tuple[FigureTable, list[CrossNode]]:
    figs, cross = _extract(measurements, where)
    return FigureTable(figs.values(), where), cross


def _extract(measurements: Any, where: str) -> tuple[dict[str, Figure], list[CrossNode]]:
    figs: dict[str, Figure] = {}
    cross: list[CrossNode] = []
    if not isinstance(measurements, list):
        return figs, cross
    keys = _KEYS
    for i, m in enumerate(measurements):
        if type(m) is not dict or m.get("status", "ok") != "ok":
            continue
        kind = m.get("kind")
        gpus = m.get("gpus")
        if type(gpus) is not list:
            gpus = []
        hosts = m.get("hosts")
        value = m.get("value_gbps")
        if type(value) is not float or value - value != 0:
            value = _num(value)
        if hosts and type(hosts) is list and len(set(map(str, hosts))) > 1:
            distinct = list(dict.fromkeys(h for h in hosts if isinstance(h, str)))
            if value is not None and len(distinct) > 1:
                notes = m.get("notes")
                note = " ".join(n for n in notes if isinstance(n, str)) if type(notes) is list else ""
                cross.append(
                    CrossNode(
                        kind=str(kind),
                        hosts=distinct,
                        value_gbps=value,
                        world_size=m.get("world_size"),
                        pair=len(distinct) == 2 and "node pair" in note,
                        evidence=f"{where}: measurements[{i}] ({kind}, {len(hosts)} ranks on {len(distinct)} hosts)",
                    )
                )
            continue
        ng = len(gpus)
        unit, hb, v = "GB/s", True, value
        if kind in P2P_BW:
            if ng != 2 or m.get("p2p_enabled") is False or value is None:
                continue
            t: tuple[Any, ...] = (kind, _gpu(gpus[0]), _gpu(gpus[1]))
            found: tuple[str, str] | None
            kf = keys.get(t) or _key(t, f"{kind} · GPU {gpus[0]}→{gpus[1]}", str(kind))
        elif kind in COPIES:
            if ng != 1 or value is None:
                continue
            t = (kind, m.get("memory"), bool(m.get("concurrent")), _gpu(gpus[0]))
            found = keys.get(t)
            if found is None:
                fam = f"{kind} {m.get('memory') or ''}".strip() + (" all at once" if m.get("concurrent") else "")
                found = _key(t, f"{fam} · GPU {gpus[0]}", fam)
            kf = found
        elif kind == "p2p_latency":
            v = _num(m.get("latency_us"))
            if ng != 2 or m.get("p2p_enabled") is False or v is None:
                continue
            unit, hb = "us", False
            t = (kind, _gpu(gpus[0]), _gpu(gpus[1]))
            kf = keys.get(t) or _key(t, f"p2p_latency · GPU {gpus[0]}→{gpus[1]}", "p2p_latency")
        elif kind in COLLECTIVES:
            ws = m.get("world_size")
            if value is None or type(ws) is not int or ws < 2:
                continue
            t = (kind, ws, str(m.get("backend") or "?"))
            kf = keys.get(t) or _key(t, f"{kind} busbw · {ws} ranks, {m.get('backend') or '?'}", f"{kind} busbw")
            _rows(figs, kf[1], kf[0], m, where, i)
        elif kind == "matmul":
            v = _num(m.get("value_tflops"))
            if ng != 1 or v is None:
                continue
            unit = "TFLOPS"
            t = (kind, str(m.get("dtype") or ""), _gpu(gpus[0]))
            found = keys.get(t)
            if found is None:
                fam = f"matmul {m.get('dtype') or ''}".strip()
                found = _key(t, f"{fam} · GPU {gpus[0]}", fam)
            kf = found
        elif kind == "memory_bandwidth" and ng == 1 and value is not None:
            t = (kind, _gpu(gpus[0]))
            kf = keys.get(t) or _key(t, f"memory_bandwidth · GPU {gpus[0]}", "memory_bandwidth")
        else:
            continue
        if kf[0] in figs or v is None:
            continue
        exp = _num(m.get("expected_gbps")) if unit == "GB/s" else None
        figs[kf[0]] = Figure(kf[0], kf[1], v, unit, hb, where, i, -1, exp or None)
    return figs, cross


ROW_MIN_BYTES = 1 << 20  # collective sizes from 1 MiB (the quick sizes): each its own timing of the collective


def _rows(figs: dict[str, Figure], fam: str, key: str, m: dict[str, Any], where: str, i: int) -> None:
    """The collective's other bandwidth-bound message sizes, one figure each (the headline is the largest)."""
    rows = m.get("rows")
    if type(rows) is not list:
        return
    sizes = [r.get("size_bytes") for r in rows if type(r) is dict]
    top = max((s for s in sizes if type(s) is int), default=None)
    for j, r in enumerate(rows):
        if type(r) is not dict:
            continue
        size, bw = r.get("size_bytes"), _num(r.get("busbw_gbps"))
        if type(size) is int and ROW_MIN_BYTES <= size != top and bw and bw > 0:
            t = ("row", key, size)
            k = (_KEYS.get(t) or _key(t, f"{key} · {size >> 20} MiB", fam))[0]
            if k not in figs:
                figs[k] = Figure(k, fam, bw, "GB/s", True, where, i, j)
