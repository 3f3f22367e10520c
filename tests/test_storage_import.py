"""Importers of storage outputs: fio JSON/text, lsblk (tree and -J), nvme list (1.x and 2.x). Sources of the
fixtures: tests/fixtures/storage/SOURCES.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.importers.blockdev import BlockDevError, parse_lsblk, parse_nvme_list
from gpuadvisor.importers.fio import FioError, parse

FIX = Path(__file__).parent / "fixtures" / "storage"


def test_fio_json_sequential_read() -> None:
    b = parse((FIX / "fio-seqread-vm.json").read_text(), "f")
    assert (b.method, b.provenance, b.direct) == ("fio-3.33", "imported", True)
    assert b.seq_read_gbps == 1.678  # bw_bytes 1677721600
    assert b.seq_write_gbps is None and b.rand_read_iops is None


def test_fio_text_random_read() -> None:
    b = parse((FIX / "fio-randread-vm.txt").read_text(), "f")
    assert b.method == "fio-3.33"
    assert b.rand_read_iops == pytest.approx(10.4e3)  # "read: IOPS=10.4k, BW=40.6MiB/s (42.5MB/s)"
    assert (b.block_bytes, b.iodepth) == (4096, 1)
    assert b.seq_read_gbps is None  # a 4 KiB random job is not a bandwidth figure


def test_fio_garbage_is_one_line() -> None:
    with pytest.raises(FioError, match="f: no fio job results"):
        parse("hello\n", "f")
    with pytest.raises(FioError, match="no 'jobs' list"):
        parse('{"fio version": "fio-3.33"}', "f")


def test_nvme_list_both_formats() -> None:
    old = parse_nvme_list((FIX / "nvme-list-1x.txt").read_text())
    assert [(d.name, d.model, d.size_bytes) for d in old] == [
        ("nvme0n1", "Linux", 1_070_000_000),
        ("nvme11n12", "Linux", 3_220_000_000),
    ]
    (new,) = parse_nvme_list((FIX / "nvme-list-2x.txt").read_text())
    assert (new.name, new.kind, new.size_bytes, new.model) == ("nvme2n1", "nvme", 2_200_000_000_000, None)
    assert "not in this nvme list" in new.why("model")
    with pytest.raises(BlockDevError):
        parse_nvme_list("Node\nnothing here\n")


def test_lsblk_tree_and_json_of_the_same_machine() -> None:
    tree = parse_lsblk((FIX / "lsblk-vm.txt").read_text())
    js = parse_lsblk((FIX / "lsblk-vm.json").read_text())
    assert [(d.name, d.kind, d.size_bytes) for d in tree] == [("zram0", "unknown", 0), ("vda", "virtio", 256 * 2**30)]
    assert [(d.name, d.size_bytes, d.rotational) for d in js] == [("zram0", 0, False), ("vda", 274877906944, True)]


# lsblk's default tree for two NVMe drives in an md RAID 0 (the shape lsblk draws; hand-written here).
RAID_TREE = """\
NAME        MAJ:MIN RM   SIZE RO TYPE  MOUNTPOINTS
nvme0n1     259:0    0   3.5T  0 disk
└─md0         9:0    0     7T  0 raid0 /data
nvme1n1     259:1    0   3.5T  0 disk
└─md0         9:0    0     7T  0 raid0 /data
"""


def test_lsblk_raid_members_under_the_volume() -> None:
    (md,) = parse_lsblk(RAID_TREE)
    assert (md.name, md.kind, md.raid_level, md.size_bytes) == ("md0", "md", "raid0", 7 * 2**40)
    assert [m.name for m in md.members] == ["nvme0n1", "nvme1n1"]
    assert all(m.kind == "nvme" and m.size_bytes == int(3.5 * 2**40) for m in md.members)


def test_import_command(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuadvisor",
            "import",
            "--storage",
            str(FIX / "lsblk-vm.json"),
            "--storage",
            str(FIX / "fio-seqread-vm.json"),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    from gpuadvisor.facts import load

    rig = load(out)
    (sp,) = rig.storage.paths
    assert sp.bench.seq_read_gbps == 1.678 and [d.name for d in sp.devices] == ["zram0", "vda"]
    assert rig.provenance["storage"] == "imported"
    bad = tmp_path / "x.txt"
    bad.write_text("nothing\n")
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "import", "--storage", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not fio, lsblk or nvme list" in p.stderr
