"""Prometheus series for the facts beyond the GPU: kernel-log Xid/SXid counts, RDMA port rates and states,
the NVSwitch fabric, GPUs on the bus vs in the driver, GPU memory held, /dev/shm (see render.machine.prometheus)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpuadvisor.facts import KernelEvent, Rig

if TYPE_CHECKING:
    from gpuadvisor.render.machine.prometheus import Exposition


def add_beyond(ex: Exposition, rig: Rig) -> None:
    """The series beyond the GPU: kernel Xid/SXid events, RDMA ports, the NVLink fabric, the node's GPUs on the
    bus, GPU memory held by processes and /dev/shm."""
    _kernel(ex, rig)
    _rdma(ex, rig)
    _fabric(ex, rig)
    _node(ex, rig)


def _weighted(events: list[KernelEvent], key: Callable[[KernelEvent], Any]) -> Counter[Any]:
    """Log lines per key (None: not counted); an event of a long log stands for those counted with it (``more``)."""
    out: Counter[Any] = Counter()
    for e in events:
        k = key(e)
        if k is not None:
            out[k] += 1 + max(e.more, 0)
    return out


def _kernel(ex: Exposition, rig: Rig) -> None:
    events = rig.kernel.events
    if events is not None:
        ex.declare(
            "kernel_xid_events",
            "gauge",
            "NVRM Xid events in the kernel log since boot, per GPU and Xid number (NVIDIA Xid catalog).",
        )
        xids = _weighted(events, lambda e: (e.gpu_index, e.bus_id, e.code) if e.kind == "xid" else None)
        for (gpu, bus, code), n in sorted(xids.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][2])):
            ex.add("kernel_xid_events", n, {"gpu": gpu, "bus_id": bus, "xid": code})
        ex.declare("kernel_sxid_events", "gauge", "NVSwitch SXid events in the kernel log since boot.")
        for (bus, code), n in sorted(
            _weighted(events, lambda e: (e.bus_id, e.code) if e.kind == "sxid" else None).items(),
            key=lambda kv: (kv[0][0] or "", kv[0][1]),
        ):
            ex.add("kernel_sxid_events", n, {"bus_id": bus, "sxid": code})
        signs = _weighted(events, lambda e: None if e.kind in ("xid", "sxid") else (e.gpu_index, e.bus_id, e.kind))
        if signs:  # only when the log holds some: scans without them keep the series they had
            ex.declare(
                "kernel_sign_events",
                "gauge",
                "Kernel-log lines without an Xid: a GPU that failed to initialise, GSP timeouts, PCIe AER errors, "
                "RDMA link flaps; per device and kind.",
            )
            for (gpu, bus, kind), n in sorted(signs.items(), key=lambda kv: (str(kv[0][1]), kv[0][2])):
                ex.add("kernel_sign_events", n, {"gpu": gpu, "bus_id": bus, "kind": kind})


def _rdma(ex: Exposition, rig: Rig) -> None:
    ports = rig.network.rdma_ports
    if ports:
        ex.declare("rdma_port_up", "gauge", "1 when the RDMA port is ACTIVE with its physical link up, else 0.")
        ex.declare(
            "rdma_port_rate_bytes_per_second",
            "gauge",
            "Signalling rate of the RDMA port in bytes per second (ibstat Rate in Gb/s x 1e9 / 8).",
        )
        for p in ports:
            labels = {"device": p.device, "port": p.port, "link_layer": p.link_layer}
            if p.state is not None:
                ex.add("rdma_port_up", 1 if p.state == "ACTIVE" and p.phys_state in (None, "LinkUp") else 0, labels)
            if p.rate_gbps is not None:
                ex.add("rdma_port_rate_bytes_per_second", p.rate_gbps * 1e9 / 8, labels)


def _fabric(ex: Exposition, rig: Rig) -> None:
    fab = rig.fabric
    if fab.manager_state is not None:
        ex.declare("fabric_manager_active", "gauge", "1 when nvidia-fabricmanager is active, else 0.")
        ex.add("fabric_manager_active", 1 if fab.manager_state == "active" else 0, {"state": fab.manager_state})
    if fab.gpus:
        ex.declare(
            "gpu_fabric_registered",
            "gauge",
            "1 when the GPU's NVLink fabric state is completed with status success, else 0.",
        )
        for g in fab.gpus:
            if g.state is not None and g.state != "not-supported":
                ex.add(
                    "gpu_fabric_registered",
                    1 if g.state == "completed" and g.status == "success" else 0,
                    {"index": g.gpu_index, "state": g.state},
                )


def _node(ex: Exposition, rig: Rig) -> None:
    node = rig.node
    if node.nvidia_pci_functions is not None:
        ex.declare("nvidia_pci_gpus", "gauge", "NVIDIA GPUs on the PCI bus (compare gpuadvisor_gpus: what NVML lists).")
        ex.add("nvidia_pci_gpus", len(node.nvidia_pci_functions))
    if node.gpu_processes is not None:
        ex.declare("gpu_process_memory_bytes", "gauge", "GPU memory held by compute processes at scan time.")
        held: Counter[int] = Counter()
        for proc in node.gpu_processes:
            held[proc.gpu_index] += proc.used_bytes or 0
        for g_ in rig.gpus:
            ex.add("gpu_process_memory_bytes", held.get(g_.index, 0), {"index": g_.index})
    if node.shm_bytes is not None:
        ex.declare("dev_shm_size_bytes", "gauge", "Size of /dev/shm (NCCL's shared-memory transport lives there).")
        ex.add("dev_shm_size_bytes", node.shm_bytes)
