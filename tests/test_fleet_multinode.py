"""Multi-node measurements: bench under torchrun as two "nodes" of two processes on 127.0.0.1 (gloo), host
names per rank, node pairs; and fleet's reading of pair rounds (which node, or which link, is slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpuadvisor.bench.pairs import rounds
from gpuadvisor.facts import load
from gpuadvisor.fleet.analyse import analyse
from gpuadvisor.fleet.model import CrossNode, Node


def test_round_robin_meets_every_pair_once():
    for n in range(2, 12):
        nodes = [f"n{i}" for i in range(n)]
        sched = rounds(nodes)
        seen = [p for r in sched for p in r]
        assert len(seen) == len(set(seen)) == n * (n - 1) // 2
        assert len(sched) == (n - 1 if n % 2 == 0 else n)
        for r in sched:
            flat = [h for p in r for h in p]
            assert len(flat) == len(set(flat))  # no node twice in a round


@pytest.mark.slow
def test_two_torchrun_nodes_record_host_names_and_fleet_reads_them(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK", "GPUADVISOR_BENCH_FAULT")
    }
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = []
    for node in (0, 1):
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "2",
            "--node-rank",
            str(node),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            port,
            "-m",
            "gpuadvisor",
            "bench",
            "--backend",
            "gloo",
            "--only",
            "all_reduce",
            "-b",
            "4K",
            "-e",
            "16K",
            "-n",
            "3",
            "-w",
            "1",
            "--budget",
            "60",
            "--pairs",
            "--json",
            str(tmp_path / "scans" / f"node-{node}.json"),
        ]
        procs.append(
            subprocess.Popen(
                cmd,
                env={**env, "GPUADVISOR_HOSTNAME": f"rack1-node{node}"},
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    (tmp_path / "scans").mkdir()
    outs = [p.communicate(timeout=150) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-1500:] for o in outs]
    rig = load(tmp_path / "scans" / "node-0.json")  # rank 0 (on node 0) saves
    assert not (tmp_path / "scans" / "node-1.json").exists()
    assert rig.host.hostname == "rack1-node0"
    sweep, pair = rig.measurements
    hosts = ["rack1-node0", "rack1-node0", "rack1-node1", "rack1-node1"]
    assert (sweep.kind, sweep.world_size, sweep.hosts, sweep.status) == ("all_reduce", 4, hosts, "ok")
    assert (pair.kind, pair.world_size, pair.hosts, pair.status) == ("all_reduce", 4, hosts, "ok")
    assert [r.size_bytes for r in pair.rows] == [16384] and pair.value_gbps > 0
    assert any(n.startswith("node pair rack1-node0 + rack1-node1") for n in pair.notes)
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "fleet", str(tmp_path / "scans"), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(p.stdout)
    across = {f["kind"]: f["message"] for f in doc["fleet_findings"]}
    assert across["multinode"].startswith("all_reduce across 2 hosts (rack1-node0, rack1-node1), 4 ranks")
    assert across["pair"].startswith("all_reduce between rack1-node0 and rack1-node1: busbw")


def test_pairs_outside_a_job_is_one_line_error():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "--backend", "gloo", "--pairs"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 2 and "--pairs measures node pairs of a multi-node job" in p.stderr


def _pair_fleet(values: dict[tuple[str, str], float]) -> dict[str, Node]:
    nodes = {h: Node(name=h) for pair in values for h in pair}
    for (a, b), v in values.items():
        nodes[a].cross.append(
            CrossNode(
                kind="all_reduce",
                hosts=[a, b],
                value_gbps=v,
                world_size=16,
                pair=True,
                evidence=f"{a}.json: measurements[0]",
            )
        )
    return nodes


def test_fleet_names_the_node_all_of_whose_pairs_are_slow():
    hosts = [f"n{i}" for i in range(8)]
    values = {}
    for r in rounds(hosts):
        for a, b in r:
            values[(a, b)] = 40.0 if "n5" in (a, b) else 95.0 + (int(a[1:]) + int(b[1:])) % 5 / 10
    report = analyse(_pair_fleet(values))
    pairs = [f for f in report.findings if f.kind == "pair"]
    assert [(f.node, f.severity) for f in pairs] == [("n5", "warn")]
    assert pairs[0].message.startswith("slow in 7 of its 7 node pairs")


def test_fleet_names_the_slow_link_between_two_good_nodes():
    hosts = [f"n{i}" for i in range(8)]
    values = {p: 95.0 for r in rounds(hosts) for p in r}
    values[("n2", "n6")] = 50.0
    report = analyse(_pair_fleet(values))
    pairs = [f for f in report.findings if f.kind == "pair"]
    assert [(f.node, f.subject) for f in pairs] == [(None, "pair n2 + n6")]
    assert "the path between them" in pairs[0].message
