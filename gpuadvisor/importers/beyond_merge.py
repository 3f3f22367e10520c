"""Merging the facts beyond the GPU that each imported output gave (kernel events, RDMA ports, the fabric, the node)
into one Rig, and what the merged Rig is left without: the last step of an import (split out of
:mod:`gpuadvisor.importers.beyond`, which reads the outputs)."""

from __future__ import annotations

import dataclasses

from gpuadvisor import facts
from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.facts.beyond import IMEX_FIELDS
from gpuadvisor.importers import error_codes
from gpuadvisor.importers.ibdev2netdev import interface_only
from gpuadvisor.probes.kmsg import map_gpus
from gpuadvisor.probes.kmsg_unjudged import settle
from gpuadvisor.text import plural


def merge_into(target: Rig, part: Rig, gpu_map: dict[int, int], origin: str) -> None:
    """Add one output's beyond-the-GPU facts to the merged Rig (the first output to give a fact keeps it;
    kernel events and RDMA ports from several outputs add up). ``gpu_map``: fragment GPU index -> merged."""
    target.partial_gpu_list = target.partial_gpu_list or part.partial_gpu_list
    if part.kernel.events is not None:
        k = target.kernel
        k.events = (k.events or []) + part.kernel.events
        k.lines_read = (k.lines_read or 0) + (part.kernel.lines_read or 0)
        k.source = part.kernel.source if k.source in (None, part.kernel.source) else "imported"
        k.unavailable.pop("events", None)
        k.unavailable.setdefault("uptime_s", part.kernel.unavailable.get("uptime_s", facts.NOT_IN_SOURCE))
        target.origins.setdefault("kernel.events", origin)
    if part.network.rdma_ports is not None:
        have = {(p.device, p.port) for p in target.network.rdma_ports or []}
        new = [p for p in part.network.rdma_ports if (p.device, p.port) not in have]
        if have and all(interface_only(p) for p in new):
            new = []  # beside a port lister (ibstat, ibv_devinfo, ...), ibdev2netdev adds no stateless port
        target.network.rdma_ports = _numbered_over_unnumbered(target.network.rdma_ports or [], new)
        if "rdma_ports" in part.network.unavailable:
            target.network.unavailable["rdma_ports"] = part.network.unavailable["rdma_ports"]
        target.origins.setdefault("network.rdma_ports", origin)
    _merge_network_extras(target, part, origin)
    if part.network.gpu_kernel_module and target.network.gpu_kernel_module is None:
        target.network.gpu_kernel_module = part.network.gpu_kernel_module
        target.network.unavailable.pop("gpu_kernel_module", None)
    if part.network.acs is not None and target.network.acs is None:
        target.network.acs = part.network.acs
        target.origins["network.acs"] = origin
    if part.fabric.gpus is not None and target.fabric.gpus is None:
        for g in part.fabric.gpus:
            g.gpu_index = gpu_map.get(g.gpu_index, g.gpu_index)
        target.fabric.gpus = part.fabric.gpus
        target.origins["fabric.gpus"] = origin
    if part.node.nvidia_pci_functions is not None:
        have_funcs = target.node.nvidia_pci_functions or []
        target.node.nvidia_pci_functions = have_funcs + [
            f for f in part.node.nvidia_pci_functions if f not in have_funcs
        ]
        target.node.unavailable.pop("nvidia_pci_functions", None)
        target.origins.setdefault("node.nvidia_pci_functions", origin)
    if part.node.memlock_message is not None and target.node.memlock_message is None:  # an RDMA library's message
        for name in ("memlock_bytes", "memlock_unlimited", "memlock_message"):
            setattr(target.node, name, getattr(part.node, name))
            target.node.unavailable.pop(name, None)
            target.origins.setdefault(f"node.{name}", part.origins.get(f"node.{name}", origin))
    if part.node.gpu_processes is not None and target.node.gpu_processes is None:
        for proc in part.node.gpu_processes:
            proc.gpu_index = gpu_map.get(proc.gpu_index, proc.gpu_index)
        target.node.gpu_processes = part.node.gpu_processes
        target.node.unavailable.pop("gpu_processes", None)
        target.origins["node.gpu_processes"] = origin
    if part.fabric.imex_state is not None and target.fabric.imex_state is None:
        target.fabric.imex_state, target.fabric.imex_detail = part.fabric.imex_state, part.fabric.imex_detail
        for name in IMEX_FIELDS:
            target.fabric.unavailable.pop(name, None)
        target.origins.setdefault("fabric.imex_state", origin)
    if target.fabric.manager_state is None and (part.fabric.manager_state or part.fabric.why("manager_state")):
        target.fabric.manager_state = part.fabric.manager_state
        target.fabric.manager_detail = part.fabric.manager_detail
        target.fabric.nvswitches = part.fabric.nvswitches
        if part.fabric.manager_state is None:
            target.fabric.unavailable["manager_state"] = part.fabric.unavailable["manager_state"]


def _numbered_over_unnumbered(have: list[RdmaPort], new: list[RdmaPort]) -> list[RdmaPort]:
    """The ports of two outputs together, where an adapter one output names without its port number (ibv_devices,
    rdma res, lshca) gives way to the numbered ports another output reads of the same adapter (ibstat, sysfs)."""
    numbered_had = {p.device for p in have if p.port is not None and p.device}
    numbered_new = {p.device for p in new if p.port is not None and p.device}
    kept = [p for p in have if p.port is not None or p.device not in numbered_new]
    return kept + [p for p in new if p.port is not None or p.device not in numbered_had]


def _merge_network_extras(target: Rig, part: Rig, origin: str) -> None:
    """Loaded modules and peer memory (lsmod), and what a NCCL debug log said: the first output to give each."""
    net, got = target.network, part.network
    if got.modules is not None:
        net.modules = sorted(set(net.modules or []) | set(got.modules))
        target.origins.setdefault("network.modules", origin)
    if got.peermem_loaded is not None and net.peermem_loaded is not True:
        net.peermem_loaded = got.peermem_loaded
        net.unavailable.pop("peermem_loaded", None)
    elif got.peermem_loaded is None and "peermem_loaded" in got.unavailable and net.peermem_loaded is None:
        net.unavailable["peermem_loaded"] = got.unavailable["peermem_loaded"]
    for name in ("nccl_nics", "nccl_gdr_disabled", "nccl_transports", "nccl_shm_full"):
        if getattr(got, name) is not None and getattr(net, name) is None:
            setattr(net, name, getattr(got, name))
            net.unavailable.pop(name, None)


def _bus_without_driver(rig: Rig) -> None:
    """lspci's NVIDIA GPUs are held against the driver's only when an output of the driver (nvidia-smi) lists GPUs:
    GPUs that only lspci lists are the same GPUs, nothing to compare."""
    said = rig.origins.get("node.nvidia_pci_functions", "")
    if "(lspci" not in said or rig.node.nvidia_pci_functions is None:
        return
    n = len(rig.node.nvidia_pci_functions)
    driver = any(k.startswith("gpus[") and "(lspci" not in v for k, v in rig.origins.items())
    # nvidia-smi -q -i N (one GPU asked for), a -q whose "Attached GPUs" is more than it shows, a paste cut short
    one = rig.partial_gpu_list
    if not driver or one:
        rig.node.nvidia_pci_functions = None
        del rig.origins["node.nvidia_pci_functions"]
        rig.node.unavailable["nvidia_pci_functions"] = f"lspci lists {plural(n, 'NVIDIA GPU')}; " + (
            "nvidia-smi's output holds only some of its GPUs (-i, or cut short)"
            if one
            else "no nvidia-smi output to hold them against"
        )


def finish(rig: Rig) -> None:
    """After merging: map Xid events to GPUs by bus id, and say which facts the outputs did not hold."""
    if rig.kernel.events is not None:
        map_gpus(rig.kernel.events, rig.gpus)
        settle(rig.kernel.events)
        error_codes.judge_unjudged(rig.kernel.events)  # an error line printing a code of the table: the table's sign
    else:
        rig.kernel.unavailable.setdefault("events", "no kernel log (dmesg, journalctl -k) among the imported outputs")
    if rig.network.rdma_ports is None:
        rig.network.unavailable.setdefault("rdma_ports", "no ibstat, ibv_devinfo or ibstatus output imported")
    if rig.network.acs is None:
        rig.network.unavailable.setdefault("acs", "no lspci -vvv output with ACSCtl lines imported")
    if rig.fabric.manager_state is None:
        rig.fabric.unavailable.setdefault("manager_state", "no systemctl status nvidia-fabricmanager output imported")
    _bus_without_driver(rig)
    for section in ("kernel", "network", "fabric", "node"):
        obj = getattr(rig, section)
        for f in dataclasses.fields(obj):
            if f.name in IMEX_FIELDS:
                continue  # written only when an IMEX log gave them
            if f.name != "unavailable" and getattr(obj, f.name) is None and f.name not in obj.unavailable:
                obj.unavailable[f.name] = facts.NOT_IN_SOURCE
        if any(k.startswith(section + ".") for k in rig.origins):
            rig.provenance[section] = "imported"
