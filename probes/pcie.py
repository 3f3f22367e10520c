"""PCIe facts from Linux sysfs: a device's link and every hop on its path to the CPU root port.

``root`` is the sysfs mount point's parent ("/" on a live machine); tests and the simulator point it at a
generated tree. Files read, per device: ``class``, ``vendor``, ``device``, ``current_link_speed``,
``max_link_speed``, ``current_link_width``, ``max_link_width``, ``numa_node``, ``local_cpulist`` and, where
readable, ``config`` (the PCI Express capability's device/port type). Nothing is written.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass

from gpuadvisor import facts
from gpuadvisor.facts import PcieHop
from gpuadvisor.physics.links import gen_from_speed

from .sysread import OS, Files

BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")

# PCI Express Capabilities register, bits 7:4 (PCIe base spec 7.5.3.2).
PORT_TYPES = {
    0: "endpoint",
    1: "endpoint",
    4: "root-port",
    5: "upstream-port",
    6: "downstream-port",
    7: "bridge",
    8: "bridge",
    9: "endpoint",
    10: "endpoint",
}
CLASS_BRIDGE_PCI = "0x0604"


def _read(path: str | os.PathLike[str], files: Files = OS) -> str | None:
    """A small file's text, stripped; None when it cannot be read."""
    try:
        return files.read_text(os.fspath(path)).strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_speed(text: str | None) -> float | None:
    """ "16.0 GT/s PCIe" or "8 GT/s" -> 16.0; "Unknown" or junk -> None."""
    if not text:
        return None
    m = re.match(r"\s*([0-9.]+)\s*GT/s", text)
    return float(m.group(1)) if m else None


def parse_width(text: str | None) -> int | None:
    if not text:
        return None
    text = text.strip().lstrip("x")
    return int(text) if text.isdigit() and int(text) > 0 else None


def parse_aer_total(text: str | None, total_key: str) -> int | None:
    """The TOTAL_ERR_* line of a sysfs aer_dev_* file (or the sum of its counters when the kernel has no total)."""
    if not text:
        return None
    counts: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    if not counts:
        return None
    return counts[total_key] if total_key in counts else sum(counts.values())


def port_type_from_config(config: bytes) -> str | None:
    """Walk the capability list of a config-space dump to the PCI Express capability (ID 0x10)."""
    if len(config) < 0x40 or not config[0x06] & 0x10:
        return None
    ptr = config[0x34] & 0xFC
    seen = set()
    while ptr and ptr + 3 < len(config) and ptr not in seen:
        seen.add(ptr)
        if config[ptr] == 0x10:
            caps = config[ptr + 2] | (config[ptr + 3] << 8)
            return PORT_TYPES.get((caps >> 4) & 0xF, "unknown")
        ptr = config[ptr + 1] & 0xFC
    return None


class Sysfs:
    """Reads PCI and NUMA facts below ``root``/sys, through ``files`` (the live filesystem, or the simulator's tree
    in memory). Directories are absolute path strings."""

    def __init__(self, root: str | os.PathLike[str] = "/", files: Files = OS) -> None:
        self.root = os.fspath(root)
        self.files = files
        self.pci_devices = posixpath.join(self.root, "sys", "bus", "pci", "devices")
        self.devices = posixpath.join(self.root, "sys", "devices")

    def read(self, path: str) -> str | None:
        return _read(path, self.files)

    def exists(self) -> bool:
        return self.files.is_dir(self.pci_devices)

    def device_dir(self, bdf: str) -> str:
        return posixpath.join(self.pci_devices, bdf)

    def chain(self, bdf: str) -> tuple[list[str], str | None, list[str]]:
        """The BDFs from the device up to the top of its hierarchy, its host bridge, and their directories."""
        link = self.device_dir(bdf)
        if not self.files.exists(link):
            return [], None, []
        try:
            target = self.files.realpath(link)
        except OSError:
            return [], None, []
        parts = target.split("/")
        bdfs: list[str] = []
        dirs: list[str] = []
        host_bridge = None
        for k, part in enumerate(parts):
            if HOST_BRIDGE_RE.match(part):
                host_bridge = part
                bdfs, dirs = [], []
            elif BDF_RE.match(part):
                bdfs.append(part)
                dirs.append("/".join(parts[: k + 1]) or "/")
        return list(reversed(bdfs)), host_bridge, list(reversed(dirs))

    def hop(self, directory: str) -> PcieHop:
        read = self.read
        hop = PcieHop(bdf=posixpath.basename(directory))
        hop.class_code = (read(f"{directory}/class") or "")[:6] or None
        hop.vendor_id = read(f"{directory}/vendor")
        hop.device_id = read(f"{directory}/device")
        for attr, fname, parse in (
            ("current_speed_gts", "current_link_speed", parse_speed),
            ("max_speed_gts", "max_link_speed", parse_speed),
            ("current_width", "current_link_width", parse_width),
            ("max_width", "max_link_width", parse_width),
        ):
            raw = read(f"{directory}/{fname}")
            if raw is None:
                hop.missing(attr, "no PCIe link attributes in sysfs for this device")
            else:
                value = parse(raw)
                if value is None:
                    hop.missing(attr, f"sysfs reports {raw!r}")
                else:
                    setattr(hop, attr, value)
        hop.current_gen = gen_from_speed(hop.current_speed_gts)
        hop.max_gen = gen_from_speed(hop.max_speed_gts)
        for name, src in (("current_gen", "current_speed_gts"), ("max_gen", "max_speed_gts")):
            if getattr(hop, name) is None:
                hop.unavailable[name] = hop.unavailable.get(src, "speed not a known PCIe rate")
        for attr, fname, total in (
            ("aer_correctable", "aer_dev_correctable", "TOTAL_ERR_COR"),
            ("aer_nonfatal", "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
            ("aer_fatal", "aer_dev_fatal", "TOTAL_ERR_FATAL"),
        ):
            count = parse_aer_total(read(f"{directory}/{fname}"), total)
            if count is None:
                hop.unavailable[attr] = (
                    "no AER counters in sysfs (kernel without AER, or the port lacks the capability)"
                )
            else:
                setattr(hop, attr, count)
        try:
            config = self.files.read_bytes(f"{directory}/config")[:256]
        except OSError:
            config = b""
        pt = port_type_from_config(config)
        if pt:
            hop.port_type = pt
        return hop

    def path(self, bdf: str) -> tuple[list[PcieHop], str | None]:
        """Hops from the device (first) to its root port (last), with port types, and the host bridge."""
        bdfs, host_bridge, dirs = self.chain(bdf)
        hops = [self.hop(d) for d in dirs]
        _infer_port_types(hops)
        return hops, host_bridge

    def place(self, bdf: str) -> tuple[list[PcieHop], PciPlace | None]:
        """The device's path (as ``path``) and where it sits for topology levels; no place if sysfs lacks it."""
        hops, host_bridge = self.path(bdf)
        if not hops:
            return hops, None
        return hops, PciPlace(
            tuple(h.bdf for h in hops), tuple(h.port_type for h in hops), host_bridge, self.numa_node(bdf)
        )

    def numa_node(self, bdf: str) -> int | None:
        raw = self.read(f"{self.device_dir(bdf)}/numa_node")
        if raw is None or not raw.lstrip("-").isdigit():
            return None
        n = int(raw)
        return n if n >= 0 else None

    def local_cpulist(self, bdf: str) -> str | None:
        return self.read(f"{self.device_dir(bdf)}/local_cpulist") or None

    def list_devices(self) -> list[str]:
        try:
            return sorted(name for name in self.files.listdir(self.pci_devices) if BDF_RE.match(name))
        except OSError:
            return []

    def nics(self) -> list[tuple[str, str]]:
        """(name, bdf) of network controllers (class 0x02xx) that have a kernel name (mlx5_0, eth0)."""
        out: list[tuple[str, str]] = []
        for bdf in self.list_devices():
            cls = self.read(f"{self.device_dir(bdf)}/class") or ""
            if not cls.startswith("0x02"):
                continue
            names: list[str] = []
            for pattern in ("infiniband/*", "net/*", "virtio*/net/*"):
                names = sorted(self._glob(self.device_dir(bdf), pattern.split("/")))
                if names:
                    break
            if names:
                out.append((names[0], bdf))
        return out

    def _glob(self, directory: str, pattern: list[str]) -> list[str]:
        """Names of the entries a glob pattern (split at /) matches below ``directory``, as Path.glob finds them."""
        try:
            names = self.files.listdir(directory)
        except OSError:
            return []
        matched = fnmatch.filter(names, pattern[0])
        if len(pattern) == 1:
            return matched
        inner = [f"{directory}/{n}" for n in matched if self.files.is_dir(f"{directory}/{n}")]
        return [name for d in inner for name in self._glob(d, pattern[1:])]

    def numa_nodes(self) -> list[facts.NumaNode]:
        base = f"{self.devices}/system/node"
        nodes: list[facts.NumaNode] = []
        try:
            entries = sorted(
                (n for n in self.files.listdir(base) if re.match(r"node\d+$", n)), key=lambda n: int(n[4:])
            )
        except OSError:
            return nodes
        for name in entries:
            p = f"{base}/{name}"
            node = facts.NumaNode(id=int(name[4:]), cpus=self.read(f"{p}/cpulist") or None)
            meminfo = self.read(f"{p}/meminfo") or ""
            m = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
            node.memory_total_bytes = int(m.group(1)) * 1024 if m else None
            nodes.append(node)
        return nodes


def _infer_port_types(hops: list[PcieHop]) -> None:
    """Fill port types config space did not give (config is root-only beyond 64 bytes), by position.

    The top bridge under a host bridge is a root port; below it, bridges alternate switch upstream port,
    switch downstream port; the device itself is an endpoint.
    """
    if not hops:
        return
    if hops[0].port_type == "unknown":
        hops[0].port_type = "endpoint"
    bridges = hops[1:]
    expected = "root-port"
    for hop in reversed(bridges):
        if hop.port_type == "unknown" and (hop.class_code or "").startswith(CLASS_BRIDGE_PCI):
            hop.port_type = expected
        expected = {
            "root-port": "upstream-port",
            "upstream-port": "downstream-port",
            "downstream-port": "upstream-port",
        }.get(hop.port_type, "upstream-port")


@dataclass(frozen=True)
class PciPlace:
    """Where a device sits: its path of BDFs (device first), host bridge and NUMA node."""

    bdfs: tuple[str, ...]
    port_types: tuple[str, ...]
    host_bridge: str | None
    numa_node: int | None


def level_between(a: PciPlace, b: PciPlace) -> str:
    """The nvidia-smi topo -m PCIe level between two devices (PIX, PXB, PHB, NODE, SYS).

    PIX: at most one PCIe switch between them; PXB: several switches, no host bridge; PHB: through a host
    bridge; NODE: across host bridges within a NUMA node; SYS: across NUMA nodes (nvidia-smi topo legend).
    """
    if a.host_bridge is None or b.host_bridge is None:
        return "SYS"
    if a.host_bridge != b.host_bridge:
        if a.numa_node is not None and a.numa_node == b.numa_node:
            return "NODE"
        return "SYS" if a.numa_node is not None and b.numa_node is not None else "NODE"
    anc_a = list(a.bdfs[1:])
    anc_b = set(b.bdfs[1:])
    common = next((x for x in anc_a if x in anc_b), None)
    if common is None:
        return "PHB"
    types = dict(zip(a.bdfs, a.port_types, strict=False)) | dict(zip(b.bdfs, b.port_types, strict=False))
    if types.get(common) == "root-port":
        return "PHB"
    # Switches crossed: upstream ports between each device and the common ancestor, plus the ancestor's own.
    crossed = set()
    for place in (a, b):
        for bdf, pt in zip(place.bdfs[1:], place.port_types[1:], strict=False):
            if pt == "upstream-port":
                crossed.add(bdf)
            if bdf == common:
                break
    return "PIX" if len(crossed) <= 1 else "PXB"
