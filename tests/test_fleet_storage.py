"""Storage as a fleet family: the sequential read and write rates each scan's storage benchmark measured
(``storage.paths[].bench``, from ``bench --storage`` or an imported fio run) are figures, so a node reading
0.6 GB/s where its siblings read 6.5 is named, as one reading to re-measure (storage is noisy by nature).

The scans are loaded with the full loader (facts.scanfile) and their figures extracted with the storage; the
fleet's own loader keeps the same Rig fields (then `fleet` does this end to end)."""

from __future__ import annotations

import random
from pathlib import Path

import fleet_gen as G
import pytest

from gpuadvisor.facts import scanfile
from gpuadvisor.fleet import figures
from gpuadvisor.fleet.analyse import Options, analyse
from gpuadvisor.fleet.load import node_from

# a local NVMe data directory, read and written through O_DIRECT (the shape bench --storage writes)
READ, WRITE = 6.5, 3.1


def _bench(read: float, write: float) -> dict:
    return {
        "provenance": "measured",
        "method": "gpuadvisor (python, O_DIRECT)",
        "direct": True,
        "file_bytes": 1 << 30,
        "block_bytes": 1 << 20,
        "iodepth": 1,
        "seq_read_gbps": read,
        "seq_write_gbps": write,
    }


def _fleet(n: int, slow: dict[str, float], seed: int = 5):
    rng = random.Random(seed)
    scans = G.fleet_scans([f"n{i:02d}" for i in range(n)], seed=seed, sigma=0.01)
    nodes = {}
    for name, d in scans.items():
        f = slow.get(name, 1.0)
        r, w = READ * f * (1 + 0.05 * rng.gauss(0, 1)), WRITE * f * (1 + 0.05 * rng.gauss(0, 1))
        d["storage"] = {
            "paths": [
                {"path": "/data", "role": "data", "mount_point": "/data", "fs_type": "xfs", "bench": _bench(r, w)}
            ]
        }
        node = node_from(Path(f"{name}.json"), d)
        d["topology"] = {"nics": d["topology"]["nics"]}  # the generator's null matrices: absent for the full loader
        rig = scanfile.from_dict(d, f"{name}.json")
        node.figures, node.cross = figures.extract(rig.measurements, f"{name}.json", rig.storage)
        nodes[name] = node
    return nodes


def test_storage_rates_are_figures_with_their_evidence():
    nodes = _fleet(5, {})
    fig = nodes["n00"].figures["storage read · /data"]
    assert fig.family == "storage read" and fig.unit == "GB/s" and fig.higher_better
    assert fig.value == pytest.approx(READ, rel=0.25)
    assert fig.evidence == "n00.json: storage.paths[0].bench"
    assert "storage write · /data" in nodes["n00"].figures


def test_a_slow_data_directory_is_named_as_a_reading_to_remeasure():
    r = analyse(_fleet(20, {"n07": 0.6 / 6.5}), Options())
    hits = [f for f in r.findings if f.node == "n07" and (f.subject or "").startswith("storage")]
    assert {f.subject for f in hits} == {"storage read", "storage write"}
    read = next(f for f in hits if f.subject == "storage read")
    assert read.severity == "warn" and "re-measure" in read.message and read.figure == "storage read · /data"
    assert read.observed == pytest.approx(0.6, rel=0.15)
    assert not [f for f in r.findings if f.node != "n07" and f.severity != "info"]
    by = {x.family: x for x in r.noise}
    assert by["storage read"].floor == 0.15


def test_fleet_names_the_slow_directory_end_to_end(tmp_path, capsys):
    """Through `fleet` itself: the lean loader keeps the scan's storage and hands it to figures.extract."""
    import json

    from gpuadvisor.cli import main
    from gpuadvisor.fleet.load import load_nodes

    d = tmp_path / "scans"
    G.write_fleet(d, [f"n{i:02d}" for i in range(12)], seed=6, sigma=0.01)
    for i, p in enumerate(sorted(d.glob("*.json"))):
        doc = json.loads(p.read_text())
        read = 0.6 if i == 7 else READ * (1 + 0.03 * ((i % 5) - 2))
        doc["storage"] = {"paths": [{"path": "/data", "role": "data", "bench": _bench(read, WRITE)}]}
        p.write_text(json.dumps(doc))
    assert any("storage read · /data" in n.figures for n in load_nodes([str(d)]).values())
    with pytest.raises(SystemExit):
        main(["fleet", str(d), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    found = [(x["node"], x["subject"], x["severity"]) for n in doc["nodes"] for x in n["findings"]]
    assert ("n07", "storage read", "warn") in found
