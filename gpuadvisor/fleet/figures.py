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

from gpuadvisor.fleet.model import CrossNode, Figure

COPIES = ("h2d", "d2h", "d2d")
P2P_BW = ("p2p_unidir", "p2p_bidir")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else None


def extract(measurements: Any, where: str) -> tuple[dict[str, Figure], list[CrossNode]]:
    figs: dict[str, Figure] = {}
    cross: list[CrossNode] = []
    if not isinstance(measurements, list):
        return figs, cross
    for i, m in enumerate(measurements):
        if type(m) is not dict or m.get("status", "ok") != "ok":
            continue
        kind = m.get("kind")
        gpus = m.get("gpus")
        if type(gpus) is not list:
            gpus = []
        hosts = m.get("hosts")
        value = m.get("value_gbps")
        if type(value) is not float:
            value = _num(value)
        if hosts and type(hosts) is list and len(set(hosts)) > 1:
            distinct = list(dict.fromkeys(h for h in hosts if isinstance(h, str)))
            if value is not None and len(distinct) > 1:
                notes = m.get("notes")
                note = " ".join(n for n in notes if isinstance(n, str)) if type(notes) is list else ""
                cross.append(CrossNode(kind=str(kind), hosts=distinct, value_gbps=value, world_size=m.get("world_size"),
                                       pair=len(distinct) == 2 and "node pair" in note,
                                       evidence=f"{where}: measurements[{i}] ({kind}, {len(hosts)} ranks on {len(distinct)} hosts)"))
            continue
        fig: Figure | None = None
        if kind in P2P_BW:
            if len(gpus) == 2 and m.get("p2p_enabled") is not False and value is not None:
                fig = Figure(f"{kind} · GPU {gpus[0]}→{gpus[1]}", kind, value, "GB/s")
        elif kind in COPIES:
            if len(gpus) == 1 and value is not None:
                fam = f"{kind} {m.get('memory') or ''}".strip() + (" all at once" if m.get("concurrent") else "")
                fig = Figure(f"{fam} · GPU {gpus[0]}", fam, value, "GB/s")
        elif kind == "p2p_latency":
            lat = _num(m.get("latency_us"))
            if len(gpus) == 2 and m.get("p2p_enabled") is not False and lat is not None:
                fig = Figure(f"p2p_latency · GPU {gpus[0]}→{gpus[1]}", "p2p_latency", lat, "us", higher_better=False)
        elif kind in COLLECTIVES:
            ws = m.get("world_size")
            if value is not None and isinstance(ws, int) and ws > 1:
                fam = f"{kind} busbw"
                fig = Figure(f"{fam} · {ws} ranks, {m.get('backend') or '?'}", fam, value, "GB/s")
                _rows(figs, fam, fig.key, m, where, i, value)
        elif kind == "matmul":
            tf = _num(m.get("value_tflops"))
            if len(gpus) == 1 and tf is not None:
                fam = f"matmul {m.get('dtype') or ''}".strip()
                fig = Figure(f"{fam} · GPU {gpus[0]}", fam, tf, "TFLOPS")
        elif kind == "memory_bandwidth" and len(gpus) == 1 and value is not None:
            fig = Figure(f"memory_bandwidth · GPU {gpus[0]}", "memory_bandwidth", value, "GB/s")
        if fig is not None and fig.key not in figs:
            fig.evidence = f"{where}: measurements[{i}]"
            exp = _num(m.get("expected_gbps"))
            fig.expected = exp if exp and fig.unit == "GB/s" else None
            figs[fig.key] = fig
    return figs, cross


ROW_MIN_BYTES = 1 << 20  # collective sizes from 1 MiB (the quick sizes): each its own timing of the collective


def _rows(figs: dict[str, Figure], fam: str, key: str, m: dict[str, Any], where: str, i: int, value: float) -> None:
    """The collective's other bandwidth-bound message sizes, one figure each (the headline is the largest)."""
    rows = m.get("rows")
    if type(rows) is not list:
        return
    sizes = [r.get("size_bytes") for r in rows if type(r) is dict]
    top = max((s for s in sizes if isinstance(s, int)), default=None)
    for j, r in enumerate(rows):
        if type(r) is not dict:
            continue
        size, bw = r.get("size_bytes"), _num(r.get("busbw_gbps"))
        if isinstance(size, int) and size >= ROW_MIN_BYTES and size != top and bw and bw > 0:
            k = f"{key} · {size >> 20} MiB"
            if k not in figs:
                figs[k] = Figure(k, fam, bw, "GB/s", evidence=f"{where}: measurements[{i}].rows[{j}]")
