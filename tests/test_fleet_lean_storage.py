"""The lean load (the fleet's) keeps a scan's storage benchmark results in the same facts the full loader fills,
so the fleet can compare storage figures across nodes; a negative physical amount refuses the scan in both.

The scan is a real one (tests/fixtures/h100-vm/scan-v4-storage.json: two paths on a virtio disk, no benchmark
run); the benchmark results are written here by hand in the fields ``bench --storage`` saves (GB/s is 1e9 bytes/s,
IOPS 4 KiB random reads), with fio's figures of tests/test_storage_import.py's job (bw_bytes 1677721600).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gpuadvisor.facts import lean, scanfile

SCAN = Path(__file__).parent / "fixtures" / "h100-vm" / "scan-v4-storage.json"
BENCH = {
    "unavailable": {},
    "provenance": "imported",
    "method": "fio 3.36",
    "direct": True,
    "file_bytes": 1 << 30,
    "block_bytes": 1 << 20,
    "iodepth": 32,
    "seq_read_gbps": 1.678,
    "seq_write_gbps": 0.914,
    "rand_read_iops": 51234.0,
    "rand_read_latency_us": 611.5,
    "notes": [],
}


def _scan(**bench: object) -> dict:
    doc = json.loads(SCAN.read_text(encoding="utf-8"))
    doc["storage"]["paths"][0]["bench"] = dict(copy.deepcopy(BENCH), **bench)
    return doc


def test_storage_results_load_to_the_same_facts_lean_and_full():
    doc = _scan()
    full = scanfile.from_dict(copy.deepcopy(doc), "scan")
    rig = lean.from_json(doc, SCAN)
    assert not isinstance(rig, lean.NodeRecord)
    assert rig.storage.paths == [p for p in full.storage.paths if p.bench is not None]
    (p,) = rig.storage.paths
    assert (p.path, p.role, p.fs_type, p.network) == ("/work/main", "data", "ext4", False)
    assert p.bench is not None and (p.bench.seq_read_gbps, p.bench.seq_write_gbps) == (1.678, 0.914)
    assert (p.bench.rand_read_iops, p.bench.rand_read_latency_us, p.bench.method) == (51234.0, 611.5, "fio 3.36")


def test_a_scan_without_storage_results_keeps_none():
    doc = json.loads(SCAN.read_text(encoding="utf-8"))
    rig = lean.from_json(doc, SCAN)
    assert not isinstance(rig, lean.NodeRecord) and rig.storage.paths == []


@pytest.mark.parametrize("field", ["seq_read_gbps", "rand_read_iops", "file_bytes"])
def test_a_negative_storage_figure_is_refused_by_both_loaders(field):
    doc = _scan(**{field: -1})
    with pytest.raises(scanfile.Unphysical, match=f"storage.paths\\[0\\].bench.{field}: -1 is negative"):
        scanfile.from_dict(copy.deepcopy(doc), "scan")
    with pytest.raises(lean.Refused, match=f"{field}: -1 is negative"):
        lean.from_json(doc, SCAN)


def test_a_storage_path_of_the_wrong_shape_is_not_recorded_not_a_failed_node():
    doc = _scan(seq_read_gbps="fast")
    rig = lean.from_json(doc, SCAN)
    assert not isinstance(rig, lean.NodeRecord) and rig.storage.paths == []
