"""Beyond the GPU: run the kernel-log, RDMA, IOMMU/ACS, fabric and node probes into a Rig.

The live scan and the simulator call the same function; the simulator points ``root`` at its generated tree
(which holds /sys/class/infiniband, /proc/modules, /proc/cmdline, a kernel log and extended config space) and
passes its simulated NVML.
"""

from __future__ import annotations

import os
from typing import Any

from gpuadvisor.facts import Rig

from .fabric import collect_fabric, probe_processes
from .kmsg import read_kernel_log
from .nodestate import probe_network_host, probe_node
from .nvml import Nvml
from .pcie import Sysfs
from .pcie_acs import probe_acs
from .rdma import read_ports
from .sysread import OS, Files


def collect_beyond(
    rig: Rig,
    root: str | os.PathLike[str],
    nv: Nvml | None,
    handles: list[Any],
    *,
    live: bool,
    nvml_reason: str | None = None,
    files: Files = OS,
) -> None:
    """Everything beyond the GPU into ``rig``; ``nvml_reason``: why there is no NVML (``nv`` None). The sysfs and
    /proc files are read through ``files`` (the simulator's tree in memory); the kernel log from ``root`` itself."""
    sysfs = Sysfs(root, files)
    gpus = [(g.index, g.bus_id) for g in rig.gpus if g.bus_id]
    rig.kernel = read_kernel_log(root, rig.gpus)
    if not live and rig.kernel.source:
        rig.kernel.source = "simulated kernel log"
    ports, reason = read_ports(root, files)
    net = rig.network
    if ports is None:
        net.missing("rdma_ports", reason or "")
    else:
        net.rdma_ports = ports
    probe_network_host(root, net, [b for _, b in gpus], files)
    for name in ("nccl_nics", "nccl_gdr_disabled", "nccl_transports", "nccl_shm_full"):
        net.missing(name, "read from a pasted NCCL debug log only (NCCL_DEBUG=INFO); a scan runs no NCCL job")
    nic_bdfs = sorted({(p.device, p.bus_id) for p in ports or [] if p.bus_id})
    probe_acs(sysfs, gpus, nic_bdfs, net)
    indices = [g.index for g in rig.gpus]
    rig.fabric = collect_fabric(nv, handles, indices, live=live, nvml_reason=nvml_reason)
    rig.node = probe_node(root, live=live, files=files)
    if nv is None:
        rig.node.missing("gpu_processes", nvml_reason or "no NVML")
    else:
        probe_processes(nv, handles, indices, rig.node)
    for section in ("kernel", "network", "fabric", "node"):
        rig.provenance.setdefault(section, "read" if live else "simulated")
