"""The scan's text section for the facts beyond the GPU: kernel-log events, RDMA ports, GPUDirect settings,
the NVSwitch fabric and the node's limits (lines fitted to the terminal by render.terminal)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from gpuadvisor.facts import Rig


def _why(obj: Any, name: str) -> str:
    return f"unknown ({obj.why(name)})" if obj.why(name) else "not recorded"


def render_beyond(rig: Rig, section: Any) -> list[str]:
    """``section(title)`` makes the heading (render.terminal's style). Nothing when the scan holds none of it."""
    net, fab, node, log = rig.network, rig.fabric, rig.node, rig.kernel
    if all(x is None for x in (log.events, net.rdma_ports, fab.manager_state, fab.gpus, node.shm_bytes)):
        return []
    lines = [section("Beyond the GPU (kernel log, network, fabric)")]
    if log.events is None:
        lines.append(f"  kernel log: {_why(log, 'events')}")
    else:
        counts = Counter((e.kind, e.code, e.gpu_index if e.gpu_index is not None else e.bus_id) for e in log.events)
        shown = ", ".join(f"{'SXid' if k == 'sxid' else 'Xid'} {c} x{n} on "
                          + (f"GPU {w}" if isinstance(w, int) else str(w or "?"))
                          for (k, c, w), n in sorted(counts.items(), key=lambda kv: str(kv[0])))
        lines.append(f"  kernel log ({log.source}, {log.lines_read} lines): " + (shown or "no Xid or SXid event"))
    ports = net.rdma_ports
    if ports is None:
        lines.append(f"  RDMA ports: {_why(net, 'rdma_ports')}")
    elif not ports:
        lines.append("  RDMA ports: none (no InfiniBand/RoCE adapter)")
    else:
        by = Counter((p.state or "?", f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate ?",
                      p.link_layer or "?") for p in ports)
        lines.append(f"  RDMA ports ({len(ports)}): " + "; ".join(f"{n}x {s} {r} {ll}" for (s, r, ll), n in by.items()))
        odd = [f"{p.device}/{p.port} {p.state} {p.phys_state or ''}".strip() for p in ports if p.state != "ACTIVE"]
        if odd:
            lines.append("      not active: " + ", ".join(odd))
    peer = {True: "loaded", False: "not loaded"}.get(net.peermem_loaded, _why(net, "peermem_loaded")) \
        if net.peermem_loaded is not None else _why(net, "peermem_loaded")
    redirect = [a.bus_id or "?" for a in net.acs or [] if a.control.get("ReqRedir") or a.control.get("CmpltRedir")]
    acs = (f"redirect on {len(redirect)} bridge(s)" if redirect else "no redirect") if net.acs is not None \
        else _why(net, "acs")
    lines.append(f"  GPUDirect: nvidia_peermem {peer}; IOMMU {net.iommu_mode or _why(net, 'iommu_mode')}; ACS {acs}")
    if fab.gpus or fab.manager_state or (rig.gpus and fab.why("manager_state")):
        states = Counter(g.state or "unknown" for g in fab.gpus or [])
        reg = ", ".join(f"{n}x {s}" for s, n in sorted(states.items())) or _why(fab, "gpus")
        lines.append(f"  NVSwitch fabric: fabric manager {fab.manager_state or _why(fab, 'manager_state')}; "
                     f"GPU registration {reg}")
    shm = f"{node.shm_bytes / 2**30:.1f} GiB" if node.shm_bytes is not None else _why(node, "shm_bytes")
    memlock = "unlimited" if node.memlock_unlimited else (
        f"{node.memlock_bytes // 1024} KiB" if node.memlock_bytes is not None else _why(node, "memlock_unlimited"))
    funcs = node.nvidia_pci_functions
    bus = f"{len(funcs)} NVIDIA GPU(s) on the PCI bus" if funcs is not None else _why(node, "nvidia_pci_functions")
    held = sum(p.used_bytes or 0 for p in node.gpu_processes or [])
    procs = (f"{len(node.gpu_processes)} GPU process(es) holding {held / 2**30:.1f} GiB"
             if node.gpu_processes else "no GPU process") if node.gpu_processes is not None \
        else f"GPU processes {_why(node, 'gpu_processes')}"
    lines.append(f"  node: /dev/shm {shm}; memlock {memlock}; {bus}; {procs}")
    return lines
