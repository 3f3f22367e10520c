"""Write what the beyond-the-GPU probes read, for a rig description, into the simulator's tree.

Beside the PCI tree of ``probes.fakesysfs``: a kernel log (dev/kmsg, as /dev/kmsg records) with the planted
``[[kernel_events]]``, proc/uptime, proc/modules, proc/cmdline, sys/kernel/iommu_groups, the RDMA ports under
sys/class/infiniband, ACS capabilities in the bridges' extended config space, and NVIDIA PCI functions NVML
does not list (``node.lost_gpus``). The live probes then read them like on a real machine.
"""

from __future__ import annotations

import os

from gpuadvisor.facts import Rig

from .fakesysfs import CLASS_GPU, TreeWriter
from .pcie_acs import ACS_BITS, ACS_CAP_ID
from .rdma import ERROR_COUNTERS
from .rigdesc import RigDesc
from .sysread import OS, Files

GiB = 2**30
DEFAULT_UPTIME_S = 86400.0 * 3


def _acs_config(config: bytes, flags: list[str]) -> bytes:
    cfg = bytearray(config.ljust(0x200, b"\0"))
    ctl = sum(1 << ACS_BITS.index(f) for f in flags)
    cfg[0x100:0x104] = (ACS_CAP_ID | 1 << 16).to_bytes(4, "little")  # ACS capability, version 1, last in list
    cfg[0x104:0x106] = (0x7F).to_bytes(2, "little")  # capability: every bit supported
    cfg[0x106:0x108] = ctl.to_bytes(2, "little")
    return bytes(cfg)


def _kmsg_line(ev: dict, bus: str, seq: int) -> str:
    us = int(float(ev.get("uptime_s", 3600.0)) * 1e6)
    kind = "SXid" if ev.get("kind", "xid").lower() == "sxid" else "Xid"
    text = ev.get("text", "")
    if kind == "SXid":
        return f"3,{seq},{us},-;nvidia-nvswitch0: SXid (PCI:{bus}): {ev['code']}, {text}"
    who = f"pid={ev['pid']}, name={ev.get('process', 'python')}, " if "pid" in ev else ""
    return f"4,{seq},{us},-;NVRM: Xid (PCI:{bus}): {ev['code']}, {who}{text}"


def uses_nvswitch(desc: RigDesc) -> bool:
    return any(g.props["nvlink_fabric"] == "nvswitch" for g in desc.gpus)


def write_beyond(
    desc: RigDesc, root: str | os.PathLike[str], files: Files = OS, kernel_files: Files | None = None
) -> None:
    """Write the beyond-the-GPU files of ``desc`` below ``root`` through ``files``, beside the PCI tree
    ``write_tree`` wrote there; the kernel log and proc/uptime through ``kernel_files`` when given (the kernel-log
    probe reads the disk itself)."""
    node = desc.node
    r = os.fspath(root)
    log_files = kernel_files or files
    log_files.mkdir(f"{r}/dev")
    log_files.mkdir(f"{r}/proc")
    lines = ["6,1,0,-;Linux version 5.15.0-105-generic (simulated)"]
    seq = 2
    for ev in desc.kernel_events:
        if "bus_id" in ev:
            bus = str(ev["bus_id"])
        else:
            g = desc.gpus[int(ev.get("gpu", 0))].bus_id
            bus = g.rsplit(".", 1)[0] if ev.get("kind", "xid").lower() != "sxid" else g
        for _ in range(int(ev.get("repeat", 1))):
            lines.append(_kmsg_line(ev, bus, seq))
            seq += 1
    log_files.write(f"{r}/dev/kmsg", ("\n".join(lines) + "\n").encode())
    log_files.write(f"{r}/proc/uptime", f"{float(node.get('uptime_s', DEFAULT_UPTIME_S)):.2f} 0.00\n".encode())
    _write_host(desc, r, files)
    _write_rdma(desc, r, files)
    _write_acs(desc, r, files)
    w = TreeWriter(r, files)
    for k, bdf in enumerate(node.get("lost_gpus", [])):
        w.device(
            f"{w.devices}/pci0000:{0xF0 + k:02x}/{bdf}",
            port_type="endpoint",
            cls=CLASS_GPU,
            gen=None,
            max_gen=None,
            width=None,
            max_width=None,
            numa=None,
            cpus=None,
            device="0x2330",
        )


def _write_host(desc: RigDesc, r: str, files: Files) -> None:
    """proc/modules, the driver's version file, the kernel command line and the IOMMU groups."""
    node = desc.node
    ib = [n for n in desc.nics if n.kind == "infiniband"]
    peermem = node.get("peermem", bool(ib))
    modules = ["nvidia", "nvidia_uvm"] + (["nvidia_peermem"] if peermem else [])
    if desc.nics:
        modules += ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs"]
    files.mkdir(f"{r}/proc/driver/nvidia")
    files.write(f"{r}/proc/modules", "".join(f"{m} 16384 0 - Live 0x0000000000000000\n" for m in modules).encode())
    driver = str(desc.software.get("driver_version", "550.54.15"))
    flavour = "Open Kernel Module" if node.get("open_kernel_module", True) else "Kernel Module"
    files.write(
        f"{r}/proc/driver/nvidia/version",
        f"NVRM version: NVIDIA UNIX {flavour} for x86_64  {driver}  Release Build  (simulated)\n".encode(),
    )
    iommu = node.get("iommu", "off")
    cmdline = "BOOT_IMAGE=/vmlinuz ro quiet" + {
        "off": "",
        "passthrough": " intel_iommu=on iommu=pt",
        "translated": " intel_iommu=on",
    }.get(iommu, "")
    files.write(f"{r}/proc/cmdline", (cmdline + "\n").encode())
    groups = f"{r}/sys/kernel/iommu_groups"
    files.mkdir(groups)
    if iommu != "off":
        for k in range(max(1, len(desc.gpus))):
            files.mkdir(f"{groups}/{k}")
            files.write(f"{groups}/{k}/type", b"identity\n" if iommu == "passthrough" else b"DMA-FQ\n")


def _write_rdma(desc: RigDesc, r: str, files: Files) -> None:
    """Each NIC's RDMA device under sys/class/infiniband: firmware, adapter type, its PCI link and port 1."""
    pci = f"{r}/sys/bus/pci/devices"
    codes = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
    phys = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5, "LinkErrorRecovery": 6}
    for n in desc.nics:
        d = f"{r}/sys/class/infiniband/{n.name}"
        port = f"{d}/ports/1"
        files.mkdir(port)
        files.write(f"{d}/fw_ver", (n.firmware + "\n").encode())
        files.write(f"{d}/hca_type", (n.ca_type + "\n").encode())
        files.symlink(files.realpath(f"{pci}/{n.bdf}"), f"{d}/device")
        layer = n.link_layer or ("InfiniBand" if n.kind == "infiniband" else "Ethernet")
        files.write(f"{port}/state", f"{codes.get(n.state, 0)}: {n.state}\n".encode())
        files.write(f"{port}/phys_state", f"{phys.get(n.phys_state, 0)}: {n.phys_state}\n".encode())
        files.write(f"{port}/rate", f"{n.rate_gbps:g} Gb/sec (4X)\n".encode())
        files.write(f"{port}/link_layer", (layer + "\n").encode())
        files.mkdir(f"{port}/counters")  # a healthy port's error counters: all zero
        for name in ERROR_COUNTERS:
            files.write(f"{port}/counters/{name}", b"0\n")


def _write_acs(desc: RigDesc, r: str, files: Files) -> None:
    """ACS: every bridge gets the capability (a PCIe switch port or root port has one); bits from [[ports]] acs,
    applied to a root port itself, or to a switch's upstream port and each of its downstream ports."""
    pci = f"{r}/sys/bus/pci/devices"
    for p in desc.ports.values():
        flags = p.acs or []
        top = files.realpath(f"{pci}/{p.bdf}")
        dirs = [top]
        if p.kind == "switch":
            children = (f"{top}/{c}" for c in files.listdir(top))
            dirs += [c for c in children if files.is_dir(c) and files.read_text(f"{c}/class").startswith("0x0604")]
        for d in dirs:
            files.write(f"{d}/config", _acs_config(files.read_bytes(f"{d}/config")[:0x48], flags))


def apply_description(desc: RigDesc, rig: Rig) -> None:
    """What the simulated tree cannot carry: the fabric manager's state and the container limits."""
    node = desc.node
    fm = node.get("fabric_manager", "active" if uses_nvswitch(desc) else "not-installed")
    rig.fabric.manager_state = str(fm)
    rig.fabric.unavailable.pop("manager_state", None)
    shm_gib = node.get("shm_gib")
    if shm_gib is None and "memory_total_gib" in desc.host:
        shm_gib = desc.host["memory_total_gib"] / 2  # tmpfs default: half the RAM
    rig.node.unavailable.pop("shm_bytes", None)
    if shm_gib is None:
        rig.node.missing("shm_bytes", "not in the rig description")
    else:
        rig.node.shm_bytes = int(float(shm_gib) * GiB)
    memlock = node.get("memlock_kib", "unlimited")
    rig.node.unavailable.pop("memlock_bytes", None)
    rig.node.unavailable.pop("memlock_unlimited", None)
    rig.node.memlock_unlimited = memlock == "unlimited"
    rig.node.memlock_bytes = None if rig.node.memlock_unlimited else int(memlock) * 1024
    names = {(int(p.get("gpu", 0)), int(p.get("pid", 0))): p.get("name") for p in node.get("processes", [])}
    for proc in rig.node.gpu_processes or []:
        proc.name = names.get((proc.gpu_index, proc.pid))
