"""Storage facts of the directories a job names: filesystem, mount options, block devices, NVMe PCIe paths.

Read-only. ``root`` is the parent of ``proc`` and ``sys`` ("/" on a live machine; tests point it at a fake
tree). Files read: ``proc/self/mountinfo`` (which mount holds a path, its type, source and options, the
device number), ``sys/dev/block/MAJ:MIN`` (the device), ``sys/block/NAME/{size,queue/rotational,device/model,
partition,slaves,md/level,dm/uuid}``, ``sys/class/nvme/nvmeN/model`` and ``proc/meminfo`` (page cache).
Sizes and free space come from ``statvfs`` of the path itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadvisor.probes.pcie import BDF_RE, Sysfs

from gpuadvisor.facts import BlockDevice, Storage, StoragePath

# Filesystems whose data lives on another machine: reads and writes cross the network.
NETWORK_FS = (
    "nfs",
    "nfs4",
    "lustre",
    "gpfs",
    "cifs",
    "smb3",
    "smbfs",
    "ceph",
    "glusterfs",
    "beegfs",
    "wekafs",
    "9p",
    "afs",
    "orangefs",
    "pvfs2",
    "virtiofs",
)
# FUSE filesystems that front an object store or a remote host (fuse.<name> in mountinfo).
NETWORK_FUSE = (
    "s3fs",
    "goofys",
    "gcsfuse",
    "mountpoint-s3",
    "rclone",
    "blobfuse",
    "blobfuse2",
    "sshfs",
    "juicefs",
    "geesefs",
    "alluxio-fuse",
    "ossfs",
    "cunofs",
    "lustre",
)
MAX_DEPTH = 4  # md on dm on md ...: deeper stacks are cut (a loop in a fake tree must not hang the probe)


@dataclass(frozen=True)
class Mount:
    mount_point: str
    fs_type: str
    source: str
    options: tuple[str, ...]
    dev: str  # "259:2"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """The lines of /proc/self/mountinfo (proc(5)); malformed lines are skipped."""
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if "-" not in parts:
            continue
        sep = parts.index("-")
        if sep < 6 or len(parts) < sep + 3:
            continue
        opts = parts[5].split(",") + (parts[sep + 3].split(",") if len(parts) > sep + 3 else [])
        seen: list[str] = []
        for o in opts:
            if o and o not in seen:
                seen.append(o)
        mounts.append(Mount(_unescape(parts[4]), parts[sep + 1], _unescape(parts[sep + 2]), tuple(seen), parts[2]))
    return mounts


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path`` (absolute, resolved): the longest mount point above it, the last one mounted."""
    best: Mount | None = None
    for m in mounts:
        mp = m.mount_point.rstrip("/") or "/"
        above = path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/"
        if above and (best is None or len(mp) >= len(best.mount_point.rstrip("/") or "/")):
            best = m
    return best


def is_network(fs_type: str) -> bool:
    if fs_type.startswith("fuse."):
        return fs_type[5:] in NETWORK_FUSE
    return fs_type in NETWORK_FS


class StorageProbe:
    def __init__(self, root: str | os.PathLike[str] = "/", statvfs: Callable[[str], Any] = os.statvfs) -> None:
        self.root = Path(root)
        self.sysfs = Sysfs(root)
        self.statvfs = statvfs

    def meminfo(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in (_read(self.root / "proc" / "meminfo") or "").splitlines():
            m = re.match(r"(\w+):\s+(\d+)\s*kB", line)
            if m:
                out[m.group(1)] = int(m.group(2)) * 1024
        return out

    def device_dir(self, name: str) -> Path | None:
        """The real sysfs directory of a whole disk or volume (partitions resolve to their disk)."""
        link = self.root / "sys" / "class" / "block" / name
        if not link.exists():
            link = self.root / "sys" / "block" / name
        if not link.exists():
            return None
        real = Path(os.path.realpath(link))
        if (real / "partition").exists():
            real = real.parent
        return real

    def block_device(self, name: str, depth: int = 0) -> BlockDevice:
        d = self.device_dir(name)
        dev = BlockDevice(name=name)
        if d is None:
            dev.missing("model", f"no sysfs entry for block device {name}")
            return dev
        dev.name = d.name
        sectors = _read(d / "size")
        if sectors and sectors.isdigit():
            dev.size_bytes = int(sectors) * 512  # always 512-byte units (include/linux/blk_types.h SECTOR_SHIFT)
        else:
            dev.missing("size_bytes", "sysfs size not readable")
        rot = _read(d / "queue" / "rotational")
        dev.rotational = rot == "1" if rot in ("0", "1") else None
        slaves = sorted(p.name for p in (d / "slaves").iterdir()) if (d / "slaves").is_dir() else []
        level = _read(d / "md" / "level")
        dm_uuid = _read(d / "dm" / "uuid")
        if level is not None:
            dev.kind, dev.raid_level = "md", level
        elif dm_uuid is not None or d.name.startswith("dm-"):
            lvm = (dm_uuid or "").startswith("LVM-")
            dev.kind, dev.raid_level = ("lvm", "lvm") if lvm else ("dm", None)
        if slaves and depth < MAX_DEPTH:
            dev.members = [self.block_device(s, depth + 1) for s in slaves]
        if dev.kind in ("md", "lvm", "dm"):
            dev.missing("model", f"{dev.kind} volume: see its member devices")
            return dev
        parts = d.parts
        bdfs = [p for p in parts if BDF_RE.match(p)]
        if d.name.startswith("nvme"):
            dev.kind = "nvme"
            ctrl = next((p for p in parts if re.fullmatch(r"nvme\d+", p)), None)
            model = _read(self.root / "sys" / "class" / "nvme" / ctrl / "model") if ctrl else None
            dev.model = model or _read(d / "device" / "model")
        else:
            dev.model = _read(d / "device" / "model")
            path = "/".join(parts)
            if "/ata" in path:
                dev.kind = "sata"
            elif "virtio" in path:
                dev.kind = "virtio"
            elif d.name.startswith("loop"):
                dev.kind = "loop"
            elif "/host" in path and "target" in path:
                dev.kind = "scsi"
        if dev.model is None:
            dev.missing("model", "no model in sysfs for this device")
        if bdfs:
            dev.pcie_bdf = bdfs[-1]
            hops, _ = self.sysfs.path(dev.pcie_bdf)
            dev.pcie_path = hops
            dev.numa_node = self.sysfs.numa_node(dev.pcie_bdf)
            if dev.numa_node is None:
                dev.unavailable["numa_node"] = "sysfs numa_node is -1 (one NUMA node, or a VM)"
        else:
            dev.unavailable["pcie_bdf"] = "not a PCIe device (or behind a controller sysfs does not show)"
            dev.unavailable["numa_node"] = "no PCIe device to read it from"
        return dev

    def device_of_mount(self, mount: Mount) -> str | None:
        link = self.root / "sys" / "dev" / "block" / mount.dev
        if link.exists():
            return Path(os.path.realpath(link)).name
        if mount.source.startswith("/dev/"):
            name = mount.source[5:]
            if name.startswith("mapper/"):
                return None
            return name
        return None

    def path(self, path: str, role: str, mounts: list[Mount] | None) -> StoragePath:
        real = os.path.realpath(path)
        sp = StoragePath(path=real, role=role)
        try:
            st = self.statvfs(real)
            sp.size_bytes = st.f_blocks * st.f_frsize
            sp.free_bytes = st.f_bavail * st.f_frsize  # what an unprivileged writer may use
        except OSError as e:
            sp.missing("size_bytes", f"statvfs failed: {e.strerror or e}")
            sp.missing("free_bytes", f"statvfs failed: {e.strerror or e}")
        if mounts is None:
            for name in ("mount_point", "fs_type", "fs_source", "network"):
                sp.missing(name, f"{self.root / 'proc/self/mountinfo'} not readable")
            return sp
        m = mount_of(real, mounts)
        if m is None:
            sp.missing("mount_point", "no mount in mountinfo holds this path")
            return sp
        sp.mount_point, sp.fs_type, sp.fs_source, sp.mount_options = m.mount_point, m.fs_type, m.source, list(m.options)
        sp.network = is_network(m.fs_type)
        if sp.network:
            sp.unavailable["devices"] = f"network filesystem ({m.fs_type}): no local block device"
            return sp
        disk = self.device_of_mount(m)
        if disk is None:
            sp.unavailable["devices"] = f"{m.fs_type} on {m.source}: no block device (virtual or in-memory filesystem)"
        else:
            sp.devices = [self.block_device(disk)]
        return sp


def probe_storage(
    paths: list[tuple[str, str]], root: str | os.PathLike[str] = "/", statvfs: Callable[[str], Any] = os.statvfs
) -> Storage:
    """Facts for each (path, role): role is data | checkpoint | working."""
    probe = StorageProbe(root, statvfs)
    text = _read(Path(root) / "proc" / "self" / "mountinfo")
    mounts = parse_mountinfo(text) if text is not None else None
    storage = Storage(paths=[probe.path(p, role, mounts) for p, role in paths])
    mem = probe.meminfo()
    for attr, key in (("page_cache_bytes", "Cached"), ("memory_available_bytes", "MemAvailable")):
        if key in mem:
            setattr(storage, attr, mem[key])
        else:
            storage.missing(attr, f"no {key} line in {Path(root) / 'proc/meminfo'}")
    return storage
