"""fleet compares the RDMA ports the scans read across a group: a node whose port trained at 200 Gb/s where the
same port runs at 400 on its siblings is named, with the port; a port that is down is the node's own finding
(GA803) and a healthy fleet raises nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def base_scan(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("base") / "s.json"
    r = subprocess.run([sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "dgx-h100", "--json", str(path)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(path.read_text())


def _fleet(base: dict, tmp: Path, slow: dict[str, float]) -> dict:
    scans = tmp / "scans"
    scans.mkdir()
    for i in range(6):
        doc = json.loads(json.dumps(base))
        doc["host"]["hostname"] = f"node{i}"
        for p in doc["network"]["rdma_ports"]:
            if i == 3 and p["device"] in slow:
                p["rate_gbps"] = slow[p["device"]]
        (scans / f"node{i}.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "gpuadvisor", "fleet", str(scans), "--format", "json"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _slow_ports(report: dict) -> list[dict]:
    return [dict(f, node=n["name"]) for n in report["nodes"] for f in n["findings"] if f["kind"] == "slow-port"]


def test_a_port_trained_at_half_rate_is_named(base_scan, tmp_path):
    assert {p["rate_gbps"] for p in base_scan["network"]["rdma_ports"]} == {400.0}
    found = _slow_ports(_fleet(base_scan, tmp_path, {"mlx5_3": 200.0}))
    assert len(found) == 1
    f = found[0]
    assert f["node"] == "node3" and f["severity"] == "warn"
    assert f["observed"] == {"mlx5_3/1": 200.0} and f["expected"] == 400.0
    assert "mlx5_3/1 at 200 Gb/s" in f["message"]


def test_a_healthy_fleet_has_no_slow_port(base_scan, tmp_path):
    assert _slow_ports(_fleet(base_scan, tmp_path, {})) == []
