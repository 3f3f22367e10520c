"""Write a sysfs tree (PCI devices, their links, NUMA nodes) for a rig description.

The simulator writes one into memory (``probes.sysread.MemFiles``) and runs the real sysfs probe
(``probes.pcie.Sysfs``) on it, so a simulated rig's PCIe path goes through the same code as a live one. Tests
use it to build trees with faults in them on disk (the default ``files``).
"""

from __future__ import annotations

import os
import posixpath

from gpuadvisor.physics.links import PCIE_GT_S

from .nvml import format_cpulist, parse_cpulist
from .rigdesc import RigDesc
from .sysread import OS, Files

PORT_TYPE_CODES = {"endpoint": 0, "root-port": 4, "upstream-port": 5, "downstream-port": 6}
CLASS_BRIDGE = "0x060400"
CLASS_GPU = "0x030200"  # 3D controller (data-centre GPUs)
CLASS_VGA = "0x030000"  # VGA controller (GeForce and workstation cards)
CLASS_NIC = {"infiniband": "0x020700", "ethernet": "0x020000"}


def config_bytes(port_type: str) -> bytes:
    """64 bytes of config space with a capability list holding a PCI Express capability of ``port_type``."""
    cfg = bytearray(0x48)
    cfg[0x06] = 0x10  # status: capabilities list
    cfg[0x34] = 0x40
    cfg[0x40] = 0x10  # PCI Express capability ID
    cfg[0x41] = 0x00  # last capability
    caps = 0x2 | (PORT_TYPE_CODES[port_type] << 4)
    cfg[0x42] = caps & 0xFF
    cfg[0x43] = caps >> 8
    return bytes(cfg)


def speed_text(gen: int | None) -> str:
    return "Unknown" if gen is None else f"{PCIE_GT_S[gen]:.1f} GT/s PCIe"


class TreeWriter:
    """Writes PCI device directories below ``root`` through ``files`` (the disk, or a tree in memory)."""

    def __init__(self, root: str | os.PathLike[str], files: Files = OS) -> None:
        self.root = os.fspath(root)
        self.files = files
        self.devices = posixpath.join(self.root, "sys", "devices")
        self.bus = posixpath.join(self.root, "sys", "bus", "pci", "devices")
        files.mkdir(self.bus)

    def device(
        self,
        path: str | os.PathLike[str],
        *,
        port_type: str,
        cls: str,
        gen: int | None,
        max_gen: int | None,
        width: int | None,
        max_width: int | None,
        numa: int | None,
        cpus: str | None,
        vendor: str = "0x10de",
        device: str = "0x0000",
        aer_correctable: int = 0,
    ) -> None:
        d = os.fspath(path)
        self.files.mkdir(d)
        files = {
            "class": cls,
            "vendor": vendor,
            "device": device,
            "current_link_speed": speed_text(gen),
            "max_link_speed": speed_text(max_gen),
            "current_link_width": str(width if width is not None else 0),
            "max_link_width": str(max_width if max_width is not None else 0),
            "numa_node": str(-1 if numa is None else numa),
            "local_cpulist": cpus or "",
        }
        files |= {
            "aer_dev_correctable": f"RxErr 0\nBadTLP {aer_correctable}\nBadDLLP 0\nRollover 0\nTimeout "
            "0\nTOTAL_ERR_COR "
            f"{aer_correctable}",
            "aer_dev_nonfatal": "Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_NONFATAL 0",
            "aer_dev_fatal": "Undefined 0\nDLP 0\nTLP 0\nTOTAL_ERR_FATAL 0",
        }
        write = self.files.write
        for k, v in files.items():
            write(f"{d}/{k}", (v + "\n").encode())
        write(f"{d}/config", config_bytes(port_type))
        link = f"{self.bus}/{posixpath.basename(d)}"
        if not self.files.exists(link):
            self.files.symlink(d, link)


def write_tree(desc: RigDesc, root: str | os.PathLike[str], files: Files = OS) -> None:
    """Write the PCI devices of ``desc`` (root ports, switches, GPUs, NICs) and its NUMA nodes under ``root``."""
    w = TreeWriter(root, files)
    numa_cpus = {n["id"]: n.get("cpus") for n in desc.numa}
    port_dirs: dict[str, str] = {}
    downstream_count: dict[str, int] = {}

    # Children of each port, to mirror link state on root and downstream ports.
    def child_link(port_id: str) -> tuple[int | None, int | None, int | None, int | None]:
        """(gen, width, max gen, max width) of the one link below a root port."""
        for p in desc.ports.values():
            if p.parent == port_id and p.kind == "switch":
                return p.gen, p.width, p.max_gen or p.gen, p.max_width or p.width
        for g in desc.gpus:
            if g.parent == port_id:
                pr = g.props
                return (
                    pr["pcie_gen"],
                    pr["pcie_width"],
                    pr["pcie_max_gen"],
                    pr["slot_max_width"] or pr["pcie_max_width"],
                )
        for n in desc.nics:
            if n.parent == port_id:
                return n.gen, n.width, n.max_gen, n.max_width
        return None, None, None, None

    def ensure(port_id: str) -> str:
        if port_id in port_dirs:
            return port_dirs[port_id]
        p = desc.ports[port_id]
        numa = desc.numa_of_port(port_id)
        cpus = numa_cpus.get(numa) if numa is not None else None
        if p.kind == "root-port":
            gen, width, child_max_gen, child_max_width = child_link(port_id)
            path = f"{w.devices}/{p.host_bridge or 'pci0000:00'}/{p.bdf}"
            w.device(
                path,
                port_type="root-port",
                cls=CLASS_BRIDGE,
                gen=gen,
                max_gen=p.max_gen or child_max_gen,
                width=width,
                max_width=p.max_width or child_max_width,
                numa=numa,
                cpus=cpus,
                vendor="0x8086",
                device="0x0000",
            )
        else:
            assert p.parent is not None
            parent_dir = attach_point(p.parent, p.gen, p.max_gen, p.width, p.max_width)
            path = f"{parent_dir}/{p.bdf}"
            w.device(
                path,
                port_type="upstream-port",
                cls=CLASS_BRIDGE,
                gen=p.gen,
                max_gen=p.max_gen or p.gen,
                width=p.width,
                max_width=p.max_width or p.width,
                numa=numa,
                cpus=cpus,
                vendor="0x1000",
                device="0xc030",
            )
        port_dirs[port_id] = path
        return path

    def attach_point(
        port_id: str,
        gen: int | None,
        max_gen: int | None,
        width: int | None,
        max_width: int | None,
        slot_width: int | None = None,
    ) -> str:
        """The directory a child of ``port_id`` goes in: the root port itself, or a new downstream port of a switch
        (wired for ``slot_width`` lanes when given, else for as many as the child or the switch has)."""
        p = desc.ports[port_id]
        parent = ensure(port_id)
        if p.kind == "root-port":
            return parent
        k = downstream_count.get(port_id, 0)
        downstream_count[port_id] = k + 1
        domain, bus, _ = p.bdf.split(":")
        dsp = f"{parent}/{domain}:{int(bus, 16) + 1:02x}:{k:02x}.0"
        numa = desc.numa_of_port(port_id)
        w.device(
            dsp,
            port_type="downstream-port",
            cls=CLASS_BRIDGE,
            gen=gen,
            max_gen=max(filter(None, [max_gen, p.max_gen, gen]), default=None),
            width=width,
            max_width=slot_width or max(filter(None, [max_width, p.max_width, width]), default=None),
            numa=numa,
            cpus=numa_cpus.get(numa) if numa is not None else None,
            vendor="0x1000",
            device="0xc030",
        )
        return dsp

    for g in desc.gpus:
        pr = g.props
        d = attach_point(
            g.parent, pr["pcie_gen"], pr["pcie_max_gen"], pr["pcie_width"], pr["pcie_max_width"], pr["slot_max_width"]
        )
        numa = g.numa_node if g.numa_node is not None else desc.numa_of_port(g.parent)
        cls = CLASS_GPU if pr["name"].startswith(("NVIDIA H", "NVIDIA A1", "NVIDIA B", "Tesla")) else CLASS_VGA
        w.device(
            f"{d}/{g.bus_id}",
            port_type="endpoint",
            cls=cls,
            aer_correctable=int(pr["pcie_aer_correctable"]),
            gen=pr["pcie_gen"],
            max_gen=pr["pcie_max_gen"],
            width=pr["pcie_width"],
            max_width=pr["pcie_max_width"],
            numa=numa,
            cpus=numa_cpus.get(numa) if numa is not None else None,
            device="0x2330",
        )
    for n in desc.nics:
        d = attach_point(n.parent, n.gen, n.max_gen, n.width, n.max_width)
        numa = desc.numa_of_port(n.parent)
        path = f"{d}/{n.bdf}"
        w.device(
            path,
            port_type="endpoint",
            cls=CLASS_NIC[n.kind],
            gen=n.gen,
            max_gen=n.max_gen,
            width=n.width,
            max_width=n.max_width,
            numa=numa,
            cpus=numa_cpus.get(numa) if numa is not None else None,
            vendor="0x15b3",
            device="0x1021",
        )
        files.mkdir(f"{path}/{'infiniband' if n.kind == 'infiniband' else 'net'}/{n.name}")

    for numa_node in desc.numa:
        nd = f"{w.devices}/system/node/node{numa_node['id']}"
        files.mkdir(nd)
        cpus = numa_node.get("cpus", "")
        files.write(f"{nd}/cpulist", (format_cpulist(parse_cpulist(cpus)) + "\n").encode())
        kb = int(numa_node.get("memory_gib", 0) * 1024 * 1024)
        nid = numa_node["id"]
        meminfo = f"Node {nid} MemTotal:       {kb} kB\nNode {nid} MemFree:        {kb} kB\n"
        files.write(f"{nd}/meminfo", meminfo.encode())
