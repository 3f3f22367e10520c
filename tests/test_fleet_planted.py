"""Fleets of simulated nodes with planted problems: `fleet` finds each of them and nothing else."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys

import fleet_synth as synth
import pytest

from gpuadvisor.fleet.analyse import Options, analyse
from gpuadvisor.fleet.load import load_nodes

NAMES = [f"node{i:02d}" for i in range(1, 41)]
PLANTS = {
    "node07": synth.Plant(slow_gpu=3),  # d2d of GPU 3 at 85%
    "node12": synth.Plant(driver="535.104.05"),
    "node19": synth.Plant(x8_gpu=5),
    "node33": synth.Plant(nvlink_down_gpu=2),
}
MISSING = "node25"


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    synth.write_fleet(d, [n for n in NAMES if n != MISSING], seed=11, plants=PLANTS)
    return d


def test_each_planted_problem_is_found_and_nothing_else(fleet_dir):
    r = analyse(load_nodes([str(fleet_dir)]), Options(expect=NAMES))
    by_node: dict[str, set[tuple[str, str]]] = {}
    for f in r.findings:
        by_node.setdefault(f.node, set()).add((f.kind, f.figure if f.kind == "outlier" else f.subject))
    assert set(by_node) == {"node07", "node12", "node19", "node33", MISSING}
    # a slow GPU: its memory copy, and its matmul too once the scan model carries compute (bench --compute)
    slow = {("outlier", "d2d · GPU 3")} | ({("outlier", "matmul bf16 · GPU 3")} if synth._has_compute() else set())
    assert by_node["node07"] == slow
    assert by_node["node12"] == {("drift", "driver")}
    assert by_node["node19"] == {
        ("drift", "GPU 5 PCIe width"),
        ("outlier", "h2d pinned · GPU 5"),
        ("outlier", "d2h pinned · GPU 5"),
    }
    kinds33 = {k for k, _ in by_node["node33"]}
    assert kinds33 <= {"lost", "outlier"}
    assert ("lost", "NVLinks") in by_node["node33"]  # a lost NVLink fails (was a drift warning)
    # the outliers on node33 are P2P figures to or from GPU 2 only (17 of 18 links: 5.6% slower)
    p2p = [s for k, s in by_node["node33"] if k == "outlier"]
    assert all(s.startswith("p2p_unidir · GPU ") and "2" in s.split("GPU ")[1].split("→") for s in p2p)
    assert by_node[MISSING] == {("missing", "scan")}
    msgs = {f.node: f.message for f in r.findings if f.kind == "drift"}
    assert msgs["node12"] == "driver 535.104.05 where 38 of 39 nodes in its group have 565.57.01"
    assert msgs["node19"] == "GPU 5 PCIe width x8 where 38 of 39 nodes in its group have x16"
    lost = next(f for f in r.findings if f.kind == "lost")
    assert (lost.node, lost.severity, lost.observed, lost.expected) == ("node33", "fail", {"GPU 2": 17}, 18)
    sev = {(f.node, f.figure or f.subject): f.severity for f in r.findings}
    assert sev[("node19", "h2d pinned · GPU 5")] == "fail"  # half the bandwidth: 50% below
    assert sev[("node07", "d2d · GPU 3")] == "warn"  # 15% below
    assert sev[(MISSING, "scan")] == "fail"


def test_straggler_cost_follows_the_slowest_rank_model(fleet_dir):
    r = analyse(load_nodes([str(fleet_dir)]), Options(expect=NAMES))
    costs = {c.family: c for c in r.costs}
    c = costs["h2d pinned"]
    assert (c.slowest, c.excluded, c.nodes) == ("node19", ["node19"], 39)
    g = r.groups[0]
    med = g.stats["h2d pinned · GPU 5"].median
    node19 = r.nodes["node19"].figures["h2d pinned · GPU 5"].value
    assert c.slowest_ratio == pytest.approx(node19 / med)
    # speed-up = pace of the slowest kept node / pace of the slowest node - 1
    assert c.speedup == pytest.approx(c.kept_ratio / c.slowest_ratio - 1)
    assert 0.9 < c.speedup < 1.1  # an x8 link halves h2d: draining it roughly doubles an h2d-bound job


def test_no_planted_problem_means_no_finding(tmp_path):
    synth.write_fleet(tmp_path, NAMES[:24], seed=5)
    r = analyse(load_nodes([str(tmp_path)]), Options(expect=NAMES[:24]))
    assert r.findings == [] and r.costs == []


def test_failed_stale_and_unexpected_nodes(tmp_path):
    now = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
    synth.write_fleet(tmp_path, [f"n{i}" for i in range(8)], seed=3, created_at=now - dt.timedelta(hours=1))
    synth.write_fleet(tmp_path, ["n8"], seed=4, created_at=now - dt.timedelta(days=9))
    (tmp_path / "n9.json").write_text(
        json.dumps(
            {
                "kind": "gpuadvisor-node-error",
                "hostname": "n9",
                "error": "no GPU to check on n9: no NVIDIA driver loaded",
            }
        )
    )
    (tmp_path / "n10.json").write_text("{truncated")
    r = analyse(
        load_nodes([str(tmp_path)]), Options(expect=[f"n{i}" for i in range(10)], now=now, max_age=dt.timedelta(days=7))
    )
    got = {(f.node, f.kind, f.severity) for f in r.findings}
    assert got == {
        ("n8", "stale", "fail"),  # a node that stopped reporting fails (it was a warning: exit 0, never drained)
        ("n9", "failed", "fail"),
        ("n10", "failed", "fail"),
        ("n10", "unexpected", "info"),
    }
    assert r.nodes["n8"].stale and not r.nodes["n8"].judged
    stale = next(f.message for f in r.findings if f.kind == "stale")
    assert stale.startswith("scan 9 d old (2025-05-23T12:00:00+00:00), over --max-age 7d; not compared")
    assert "no NVIDIA driver loaded" in next(f.message for f in r.findings if f.node == "n9")


def test_baseline_says_what_changed(tmp_path):
    before, now = tmp_path / "before", tmp_path / "now"
    names = [f"n{i:02d}" for i in range(10)]
    synth.write_fleet(before, names, seed=6)
    synth.write_fleet(now, names, seed=6, plants={"n03": synth.Plant(driver="570.86.10", x8_gpu=1)})
    r = analyse(load_nodes([str(now)]), Options(baseline=load_nodes([str(before)]), baseline_label=str(before)))
    changed = {(f.node, f.figure or f.subject, f.severity) for f in r.findings if f.kind == "changed"}
    assert changed == {
        ("n03", "driver", "info"),
        ("n03", "GPU 1 PCIe width", "info"),
        ("n03", "h2d pinned · GPU 1", "warn"),
        ("n03", "d2h pinned · GPU 1", "warn"),
    }
    msg = next(f.message for f in r.findings if f.kind == "changed" and f.subject == "driver")
    assert msg == "driver changed: 565.57.01 -> 570.86.10"


def test_cli_formats_and_exit_codes(fleet_dir, tmp_path):
    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gpuadvisor", "fleet", str(fleet_dir), *a],
            capture_output=True,
            text=True,
            timeout=120,
        )

    p = run("--expect", "node[01-40]")
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    drain = [ln.split()[1] for ln in lines if re.match(r"^ *\d+\. ", ln)]
    # the drain list first: lost hardware, then the missing scan, then the 50% slow link
    assert drain == ["node33", MISSING, "node19"]
    assert lines.index("Drain list (3 nodes, worst first):") < lines.index("Below the gate (2 nodes):")
    assert all(len(ln) <= 80 for ln in lines)
    doc = json.loads(run("--format", "json", "--expect", "node[01-40]").stdout)
    assert doc["kind"] == "gpuadvisor-fleet" and doc["exit_code"] == 1
    assert doc["nodes"][0]["name"] == "node33"
    prom = run("--format", "prom").stdout
    assert 'gpuadvisor_fleet_node_outliers{node="node19",group="g1"} 2' in prom
    assert 'gpuadvisor_fleet_node_up{node="node01",group="g1",status="ok"} 1' in prom
    junit = run("--format", "junit", "--fail-on", "warn").stdout
    assert junit.count("<testcase ") == 39 and junit.count("<failure ") == 4
    out = tmp_path / "fleet.json"
    p = run("--format", "json", "-o", str(out), "--fail-on", "fail")
    assert p.returncode == 1 and p.stdout == "" and json.loads(out.read_text())["kind"] == "gpuadvisor-fleet"
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    p = run("--html", str(link))
    assert p.returncode == 2 and "symbolic link" in p.stderr and not (tmp_path / "elsewhere.html").exists()
    p = run("--format", "json", "-o", str(fleet_dir / "node01.json"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert json.loads((fleet_dir / "node01.json").read_text())["kind"] == "gpuadvisor-scan"
    p = run("--max-age", "soon")
    assert p.returncode == 2 and "--max-age 'soon'" in p.stderr
