"""The HTML report's network section: RDMA ports and which GPU each serves, GPUDirect and PCIe peer-traffic
settings, the NVSwitch fabric, and the kernel log's NVIDIA events (the facts beyond the GPU)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuadvisor.catalog.xids import XIDS
from gpuadvisor.facts import Rig
from gpuadvisor.text import plural

ORDER = ["PIX", "PXB", "PHB", "NODE", "SYS"]


# a sign without an Xid number, by its kind (the kernel log's other events)
_SIGN_NAMES = {"unjudged": "error line not judged (GA828)"}


def _why(obj: Any, name: str) -> str:
    return f"— ({obj.why(name)})" if obj.why(name) else "—"


def network_view(rig: Rig) -> dict[str, Any] | None:
    net, fab, node, log = rig.network, rig.fabric, rig.node, rig.kernel
    if (
        net.rdma_ports is None
        and log.events is None
        and fab.manager_state is None
        and not fab.gpus
        and node.shm_bytes is None
    ):
        return None
    ports = []
    best = max((p.rate_gbps or 0 for p in net.rdma_ports or [] if p.state == "ACTIVE"), default=0)
    for p in net.rdma_ports or []:
        down = p.state is not None and (p.state != "ACTIVE" or p.phys_state not in (None, "LinkUp"))
        slow = not down and p.rate_gbps is not None and p.rate_gbps < best
        ports.append(
            {
                "name": p.named() or "—",
                "state": p.state or "—",
                "phys": p.phys_state or "—",
                "rate": f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "—",
                "layer": p.link_layer or "—",
                "model": p.ca_type or "—",
                "fw": p.firmware or "—",
                "css": "fail" if down else "warn" if slow else "",
            }
        )
    topo = rig.topology
    active = {p.device for p in net.rdma_ports or [] if p.state == "ACTIVE"}
    near = []
    for i, g in enumerate(rig.gpus):
        row = topo.nic_matrix[i] if i < len(topo.nic_matrix) else []
        cands = [
            (ORDER.index(lv), topo.nics[k])
            for k, lv in enumerate(row)
            if lv in ORDER and k < len(topo.nics) and (not active or topo.nics[k] in active)
        ]
        if cands:
            rank, nic = min(cands)
            near.append({"gpu": g.index, "nic": nic, "level": ORDER[rank], "css": "" if rank <= 1 else "warn"})
    redirect = [a for a in net.acs or [] if a.control.get("ReqRedir") or a.control.get("CmpltRedir")]
    settings = [
        (
            "GPUDirect RDMA module (nvidia_peermem)",
            "loaded"
            if net.peermem_loaded
            else ("not loaded" if net.peermem_loaded is False else _why(net, "peermem_loaded")),
        ),
        ("IOMMU", net.iommu_mode or _why(net, "iommu_mode")),
        (
            "PCIe bridges with ACS redirect",
            (f"{len(redirect)}: " + ", ".join(a.bus_id or "?" for a in redirect[:6]))
            if redirect
            else ("none" if net.acs is not None else _why(net, "acs")),
        ),
        ("/dev/shm", f"{node.shm_bytes / 2**30:.1f} GiB" if node.shm_bytes is not None else _why(node, "shm_bytes")),
        (
            "locked-memory limit (ulimit -l)",
            "unlimited"
            if node.memlock_unlimited
            else (
                f"{node.memlock_bytes // 1024} KiB"
                if node.memlock_bytes is not None
                else _why(node, "memlock_unlimited")
            ),
        ),
        ("fabric manager", fab.manager_state or _why(fab, "manager_state")),
    ]
    states = Counter(g.state or "unknown" for g in fab.gpus or [])
    if fab.gpus:
        settings.append(("GPU fabric state", ", ".join(f"{n}× {s}" for s, n in sorted(states.items()))))
    events = []
    for (gpu, bus, kind, code), n in sorted(
        Counter((e.gpu_index, e.bus_id, e.kind, e.code) for e in log.events or []).items(),
        key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][3]),
    ):
        x = XIDS.get(code) if kind == "xid" else None
        events.append(
            {
                "where": f"GPU {gpu}" if gpu is not None else (bus or "bus id elided"),
                "what": {"xid": f"Xid {code}", "sxid": f"SXid {code}"}.get(kind, _SIGN_NAMES.get(kind, kind)),
                "count": n,
                "meaning": x.description if x else "—",
                "action": x.immediate if x else "—",
                "css": "fail" if x and x.severity == "fail" else "",
            }
        )
    return {
        "ports": ports,
        "near": near,
        "settings": settings,
        "events": events,
        "events_note": (
            f"{plural(log.lines_read or 0, 'line')} of {log.source}" if log.events is not None else _why(log, "events")
        ),
    }
