"""The storage probe on a fake /proc and /sys: filesystems, mount options, NVMe/SATA/md/LVM, PCIe links."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from gpuadvisor.probes.fakesysfs import CLASS_BRIDGE, TreeWriter
from gpuadvisor.probes.storage import mount_of, parse_mountinfo, probe_storage

from gpuadvisor.facts import from_dict

# Lines in the format of proc(5) /proc/[pid]/mountinfo; the NFS and Lustre lines as the kernel prints them.
MOUNTINFO = """\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
30 22 9:0 / /data rw,noatime shared:5 - xfs /dev/md0 rw,attr2,inode64,logbufs=8,sunit=1024,swidth=2048,noquota
31 22 253:0 / /ckpt rw,relatime shared:6 - ext4 /dev/mapper/vg0-ckpt rw
32 22 0:55 / /mnt/nfs rw,relatime shared:7 - nfs4 10.0.0.5:/export rw,vers=4.2,rsize=1048576,wsize=1048576,hard
33 22 0:60 / /lustre rw,relatime shared:8 - lustre 10.0.0.9@o2ib:/fs rw,flock,lazystatfs
34 22 0:61 / /mnt/s3 rw,nosuid,nodev,relatime shared:9 - fuse.s3fs s3fs rw,user_id=0,group_id=0
35 22 8:1 / /scratch rw,relatime shared:10 - ext4 /dev/sda1 rw
36 22 0:30 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw,size=65536k
37 22 0:62 / /mnt/with\\040space rw shared:11 - ext4 /dev/sda1 rw
"""

TiB = 2**40


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


def _disk(
    root: Path,
    devdir: Path,
    name: str,
    sectors: int,
    rotational: int,
    majmin: str,
    model: str | None = None,
    partitions: dict[str, str] | None = None,
) -> Path:
    d = devdir / name
    (d / "queue").mkdir(parents=True)
    (d / "size").write_text(f"{sectors}\n")
    (d / "queue" / "rotational").write_text(f"{rotational}\n")
    if model is not None:
        (d / "device").mkdir()
        (d / "device" / "model").write_text(model + "\n")
    _link(root / "sys/class/block" / name, d)
    _link(root / "sys/dev/block" / majmin, d)
    for pname, pmm in (partitions or {}).items():
        (d / pname).mkdir()
        (d / pname / "partition").write_text("1\n")
        (d / pname / "size").write_text("1000\n")
        _link(root / "sys/class/block" / pname, d / pname)
        _link(root / "sys/dev/block" / pmm, d / pname)
    return d


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path)


def build_tree(tmp_path: Path) -> Path:
    """A machine with nvme0 (root filesystem, its link at x2 of x4), md0 = RAID 0 of nvme1 and nvme2 (/data),
    an LVM volume on nvme0 (/ckpt), NFS, Lustre and s3fs mounts, a SATA HDD (/scratch) and tmpfs."""
    root = tmp_path / "root"
    w = TreeWriter(root)
    host = root / "sys/devices/pci0000:00"
    # nvme0 on a Gen4 x4 root port, linked at Gen4 x2 (half its lanes); nvme1, nvme2 at full Gen4 x4.
    rp = host / "0000:00:01.1"
    w.device(rp, port_type="root-port", cls=CLASS_BRIDGE, gen=4, max_gen=4, width=2, max_width=4, numa=0, cpus="0-7")
    ep = rp / "0000:01:00.0"
    w.device(
        ep,
        port_type="endpoint",
        cls="0x010802",
        gen=4,
        max_gen=4,
        width=2,
        max_width=4,
        numa=0,
        cpus="0-7",
        vendor="0x144d",
    )
    nv0 = ep / "nvme/nvme0"
    nv0.mkdir(parents=True)
    (root / "sys/class/nvme").mkdir(parents=True)
    _link(root / "sys/class/nvme/nvme0", nv0)
    (nv0 / "model").write_text("SAMSUNG MZQL27T6HBLA-00A07  \n")
    _disk(root, nv0, "nvme0n1", 7501476528 * 2, 0, "259:0", partitions={"nvme0n1p2": "259:2"})
    for k, bdf in ((1, "0000:02:00.0"), (2, "0000:03:00.0")):
        rpk = host / f"0000:00:0{k + 1}.1"
        w.device(
            rpk, port_type="root-port", cls=CLASS_BRIDGE, gen=4, max_gen=4, width=4, max_width=4, numa=1, cpus="8-15"
        )
        epk = rpk / bdf
        w.device(epk, port_type="endpoint", cls="0x010802", gen=4, max_gen=4, width=4, max_width=4, numa=1, cpus="8-15")
        nvk = epk / f"nvme/nvme{k}"
        nvk.mkdir(parents=True)
        _link(root / f"sys/class/nvme/nvme{k}", nvk)
        (nvk / "model").write_text("Micron_7450_MTFDKCC3T8TFR\n")
        _disk(root, nvk, f"nvme{k}n1", 3750748848 * 2, 0, f"259:{10 + k}")
    virt = root / "sys/devices/virtual/block"
    md = _disk(root, virt, "md0", 2 * 3750748848 * 2, 0, "9:0")
    (md / "md").mkdir()
    (md / "md/level").write_text("raid0\n")
    (md / "slaves").mkdir()
    for k in (1, 2):
        _link(md / "slaves" / f"nvme{k}n1", root / f"sys/class/block/nvme{k}n1")
    dm = _disk(root, virt, "dm-0", 2 * 10**9, 0, "253:0")
    (dm / "dm").mkdir()
    (dm / "dm/uuid").write_text("LVM-abcdefABCDEF\n")
    (dm / "dm/name").write_text("vg0-ckpt\n")
    (dm / "slaves").mkdir()
    _link(dm / "slaves/nvme0n1p2", root / "sys/class/block/nvme0n1p2")
    ata = root / "sys/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block"
    w.device(
        root / "sys/devices/pci0000:00/0000:00:17.0",
        port_type="endpoint",
        cls="0x010601",
        gen=None,
        max_gen=None,
        width=None,
        max_width=None,
        numa=None,
        cpus=None,
        vendor="0x8086",
    )
    _disk(root, ata, "sda", 1953525168, 1, "8:0", model="ST1000DM010-2EP1", partitions={"sda1": "8:1"})
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(MOUNTINFO)
    (root / "proc/meminfo").write_text(
        "MemTotal:       2113407748 kB\nMemFree:        10000000 kB\n"
        "MemAvailable:   1900000000 kB\nBuffers:          123456 kB\n"
        "Cached:         1500000000 kB\n"
    )
    return root


def fake_statvfs(path: str) -> SimpleNamespace:
    return SimpleNamespace(f_blocks=1000, f_bavail=250, f_frsize=4096, f_flag=0)


def probe(tree: Path, *paths: str) -> list:
    return probe_storage([(p, "data") for p in paths], root=tree, statvfs=fake_statvfs).paths


def test_parse_mountinfo_options_and_escapes() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 9
    nfs = mounts[3]
    assert (nfs.mount_point, nfs.fs_type, nfs.source, nfs.dev) == ("/mnt/nfs", "nfs4", "10.0.0.5:/export", "0:55")
    assert "rsize=1048576" in nfs.options and nfs.options[0] == "rw"
    assert mounts[8].mount_point == "/mnt/with space"
    assert mount_of("/data/imagenet/train", mounts).mount_point == "/data"
    assert mount_of("/datasets", mounts).mount_point == "/"  # a prefix of the string is not a parent directory


def test_nvme_partition_resolves_to_disk_with_pcie_link(tree: Path) -> None:
    (sp,) = probe(tree, "/home/user/run")
    assert (sp.mount_point, sp.fs_type, sp.fs_source, sp.network) == ("/", "ext4", "/dev/nvme0n1p2", False)
    (dev,) = sp.devices
    assert (dev.name, dev.kind, dev.model) == ("nvme0n1", "nvme", "SAMSUNG MZQL27T6HBLA-00A07")
    assert dev.size_bytes == 7501476528 * 2 * 512 and dev.rotational is False
    assert dev.pcie_bdf == "0000:01:00.0" and dev.numa_node == 0
    assert [h.bdf for h in dev.pcie_path] == ["0000:01:00.0", "0000:00:01.1"]
    assert (dev.pcie_path[0].current_width, dev.pcie_path[0].max_width, dev.pcie_path[0].current_gen) == (2, 4, 4)
    assert sp.size_bytes == 4096000 and sp.free_bytes == 1024000


def test_md_raid0_of_two_nvme(tree: Path) -> None:
    (sp,) = probe(tree, "/data/imagenet")
    (md,) = sp.devices
    assert (md.name, md.kind, md.raid_level) == ("md0", "md", "raid0")
    assert [m.name for m in md.members] == ["nvme1n1", "nvme2n1"]
    assert all(m.kind == "nvme" and m.numa_node == 1 and m.pcie_path[0].current_width == 4 for m in md.members)
    assert md.model is None and "md volume" in md.why("model")
    assert "sunit=1024" in sp.mount_options


def test_lvm_volume_on_an_nvme_partition(tree: Path) -> None:
    (sp,) = probe(tree, "/ckpt")
    (lv,) = sp.devices
    assert (lv.kind, lv.raid_level) == ("lvm", "lvm")
    assert [m.name for m in lv.members] == ["nvme0n1"]


@pytest.mark.parametrize(
    "path,fs", [("/mnt/nfs/x", "nfs4"), ("/lustre/proj", "lustre"), ("/mnt/s3/bucket", "fuse.s3fs")]
)
def test_network_filesystems(tree: Path, path: str, fs: str) -> None:
    (sp,) = probe(tree, path)
    assert sp.fs_type == fs and sp.network is True and sp.devices == []
    assert "network filesystem" in sp.why("devices")


def test_sata_disk_and_tmpfs(tree: Path) -> None:
    sata, shm = probe(tree, "/scratch", "/dev/shm/x")
    (sda,) = sata.devices
    assert (sda.name, sda.kind, sda.model, sda.rotational) == ("sda", "sata", "ST1000DM010-2EP1", True)
    assert shm.fs_type == "tmpfs" and shm.network is False and shm.devices == []
    assert "no block device" in shm.why("devices")


def test_page_cache_and_round_trip(tree: Path) -> None:
    st = probe_storage([("/data", "data"), ("/ckpt", "checkpoint")], root=tree, statvfs=fake_statvfs)
    assert st.page_cache_bytes == 1500000000 * 1024 and st.memory_available_bytes == 1900000000 * 1024
    from gpuadvisor.facts import Rig

    rig = Rig(storage=st)
    again = from_dict(rig.to_dict())
    assert again.to_json() == rig.to_json()
    assert again.storage.paths[1].role == "checkpoint"


def test_missing_proc_is_a_reason_not_a_guess(tmp_path: Path) -> None:
    st = probe_storage([("/", "working")], root=tmp_path, statvfs=fake_statvfs)
    assert st.page_cache_bytes is None and "meminfo" in st.why("page_cache_bytes")
    assert st.paths[0].fs_type is None and "mountinfo" in st.paths[0].why("fs_type")
