"""The scan's text section for the facts beyond the GPU: kernel-log events, RDMA ports, GPUDirect settings,
the NVSwitch fabric and the node's limits (lines fitted to the terminal by render.text.rig)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuadvisor.facts import Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.rules.summary import log_name
from gpuadvisor.text import plural


def _why(obj: Any, name: str) -> str:
    return f"unknown ({obj.why(name)})" if obj.why(name) else "not recorded"


def _known(items: list[tuple[str, str | None, str | None]]) -> str:
    """ "a x; b y; unknown: c, d (reason)": the facts read, then those not, grouped by their reason."""
    shown = [f"{label} {value}" for label, value, _ in items if value is not None]
    why: dict[str, list[str]] = {}
    for label, value, reason in items:
        if value is None:
            why.setdefault(reason or "not recorded", []).append(label)
    shown += [f"{', '.join(labels)} unknown ({reason})" for reason, labels in why.items()]
    return "; ".join(shown)


def render_beyond(rig: Rig, section: Any) -> list[str]:
    """``section(title)`` makes the heading (render.text.rig's style). Nothing when the scan holds none of it."""
    net, fab, node, log = rig.network, rig.fabric, rig.node, rig.kernel
    if all(x is None for x in (log.events, net.rdma_ports, fab.manager_state, fab.gpus, node.shm_bytes)):
        return []
    lines = [section("Beyond the GPU (kernel log, network, fabric)")]
    if log.events is None:
        lines.append(f"  kernel log: {_why(log, 'events')}")
    else:
        counts = Counter(
            (e.kind, e.code, e.gpu_index if e.gpu_index is not None else e.bus_id)
            for e in log.events
            if e.kind != "unjudged"
        )
        shown = ", ".join(
            ({"sxid": f"SXid {c}", "xid": f"Xid {c}"}.get(k, k))
            + f" x{n} on "
            + (f"GPU {w}" if isinstance(w, int) else str(w or "?"))
            for (k, c, w), n in sorted(counts.items(), key=lambda kv: str(kv[0]))
        )
        unjudged = sum(1 + e.more for e in log.events if e.kind == "unjudged")
        if unjudged:  # error lines no sign of the catalog judges (GA828): lines, not events of a device
            shown += (", " if shown else "") + f"{plural(unjudged, 'error line')} not judged (GA828)"
        read = plural(log.lines_read or 0, "line")
        said = f"{log_name(log.source)} ({read})" if log.source == SERVICE_LOG else f"kernel log ({log.source}, {read})"
        lines.append(f"  {said}: " + (shown or "no Xid or SXid event"))
    ports = net.rdma_ports
    if ports is None:
        lines.append(f"  RDMA ports: {_why(net, 'rdma_ports')}")
    elif not ports:
        lines.append("  RDMA ports: none (no InfiniBand/RoCE adapter)")
    else:
        by = Counter(
            (p.state or "?", f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate ?", p.link_layer or "?")
            for p in ports
        )
        lines.append(f"  RDMA ports ({len(ports)}): " + "; ".join(f"{n}x {s} {r} {ll}" for (s, r, ll), n in by.items()))
        odd = [  # a port whose state is unknown is not listed as not active
            f"{p.named()} {p.state} {p.phys_state or ''}".strip() for p in ports if p.state not in ("ACTIVE", None)
        ]
        if odd:
            lines.append("      not active: " + ", ".join(odd))
    redirect = [a.bus_id or "?" for a in net.acs or [] if a.control.get("ReqRedir") or a.control.get("CmpltRedir")]
    lines.append(
        "  GPUDirect: "
        + _known(
            [
                (
                    "nvidia_peermem",
                    None if net.peermem_loaded is None else ("loaded" if net.peermem_loaded else "not loaded"),
                    net.why("peermem_loaded"),
                ),
                ("IOMMU", net.iommu_mode, net.why("iommu_mode")),
                (
                    "ACS",
                    None
                    if net.acs is None
                    else (f"redirect on {len(redirect)} bridge(s)" if redirect else "no redirect"),
                    net.why("acs"),
                ),
            ]
        )
    )
    if fab.gpus or fab.manager_state or (rig.gpus and fab.why("manager_state")):
        states = Counter(g.state or "unknown" for g in fab.gpus or [])
        reg = ", ".join(f"{n}x {s}" for s, n in sorted(states.items())) or _why(fab, "gpus")
        lines.append(
            f"  NVSwitch fabric: fabric manager {fab.manager_state or _why(fab, 'manager_state')}; "
            f"GPU registration {reg}"
        )
    held = sum(p.used_bytes or 0 for p in node.gpu_processes or [])
    funcs = node.nvidia_pci_functions
    memlock = (
        "unlimited"
        if node.memlock_unlimited
        else (f"{node.memlock_bytes // 1024} KiB" if node.memlock_bytes is not None else None)
    )
    lines.append(
        "  node: "
        + _known(
            [
                (
                    "/dev/shm",
                    f"{node.shm_bytes / 2**30:.1f} GiB" if node.shm_bytes is not None else None,
                    node.why("shm_bytes"),
                ),
                ("memlock", memlock, node.why("memlock_unlimited")),
                (
                    "NVIDIA GPUs on the PCI bus",
                    None if funcs is None else str(len(funcs)),
                    node.why("nvidia_pci_functions"),
                ),
                (
                    "GPU processes",
                    None
                    if node.gpu_processes is None
                    else (
                        f"{len(node.gpu_processes)} holding {held / 2**30:.1f} GiB" if node.gpu_processes else "none"
                    ),
                    node.why("gpu_processes"),
                ),
            ]
        )
    )
    return lines
