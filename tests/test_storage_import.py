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


# -- hostile storage outputs: one line and exit 2, or read with the bad value left out; never an internal error ----

LSBLK_JSON = (FIX / "lsblk-vm.json").read_text()
FIO_JSON = (FIX / "fio-seqread-vm.json").read_text()
NVME_TEXT = (FIX / "nvme-list-2x.txt").read_text()
HOSTILE = {  # name: (content, refused?)
    "lsblk-truncated": (LSBLK_JSON[: len(LSBLK_JSON) // 2], True),
    "lsblk-size-1.2.3G": (LSBLK_JSON.replace('"size": 274877906944', '"size": "1.2.3G"', 1), False),
    "lsblk-size-400-digits": (LSBLK_JSON.replace('"size": 274877906944', '"size": "' + "9" * 400 + '"', 1), False),
    "lsblk-size-negative": (LSBLK_JSON.replace('"size": 274877906944', '"size": "-5G"', 1), False),
    "lsblk-no-name": (LSBLK_JSON.replace('"name": "vda",', "", 1), False),
    "lsblk-name-surrogate": (LSBLK_JSON.replace('"name": "vda"', '"name": "vd\\udc80"', 1), True),
    "lsblk-name-control": (LSBLK_JSON.replace('"name": "vda"', '"name": "vd\\u001b[31m"', 1), False),
    "fio-truncated": (FIO_JSON[: len(FIO_JSON) // 2], True),
    "fio-negative-bw": (FIO_JSON.replace('"bw_bytes" : 1677721600', '"bw_bytes" : -1677721600', 1), False),
    "fio-negative-everything": (FIO_JSON.replace(": 1677721600", ": -1677721600").replace('"bw" : ', '"bw" : -'), True),
    "fio-text-1.2.3": ("seqread: (groupid=0, jobs=1): err= 0\n  read: IOPS=1.2.3k, BW=4MiB/s (4.2MB/s)\n", True),
    "nvme-json-truncated": ('{\n  "Devices" : [\n    {\n      "DevicePath" : "/dev/nvme0n1",\n', True),
    "nvme-size-1.2.3": (NVME_TEXT.replace(" GB /", " GB / 1.2.3 ", 1), False),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("how", ["--storage", "by content"])
def test_hostile_storage_output_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, how: str) -> None:
    """Through ``import --storage`` and plain ``import``: a document that cannot be read is one line and exit 2;
    one with a bad value is read without it (no negative, unbounded or unreadable figure), and the scan written
    reads back with ``scan --from``."""
    from gpuadvisor.cli import main

    content, refused = HOSTILE[name]
    src = tmp_path / "out.txt"
    src.write_text(content, encoding="utf-8")
    scan = tmp_path / "scan.json"
    args = ["import", *(["--storage"] if how == "--storage" else []), str(src), "--json", str(scan)]
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    if refused:
        assert e.value.code == 2 and err.count("\n") == 1 and not scan.exists(), err
        return
    assert e.value.code in (0, None), err
    with pytest.raises(SystemExit) as back:
        main(["scan", "--from", str(scan), "--format", "json"])
    assert back.value.code in (0, None)
    doc = capsys.readouterr().out
    import json

    for sp in json.loads(doc)["storage"]["paths"]:
        bench = sp.get("bench") or {}
        assert all(bench.get(k) is None or bench[k] >= 0 for k in ("seq_read_gbps", "seq_write_gbps", "rand_read_iops"))
        for d in sp["devices"]:
            assert d["name"] and d["name"].isprintable()
            assert d["size_bytes"] is None or 0 <= d["size_bytes"] <= 2**64


def test_safe_numbers() -> None:
    from gpuadvisor.importers.numbers import name, quantity, scaled

    assert [quantity(x) for x in ("1.5", "-1", "1.2.3", "9" * 40, "nan", "inf", float("inf"), -2, True)] == [
        1.5,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    assert scaled("3.5", 2**40) == 3848290697216 and scaled("1" + "0" * 25, 2**50) is None
    assert name("vd\udc80") == "vd\ufffd" and name("a\x1bb") == "a\ufffdb" and name("") is None
