"""`gpuadvisor fleet` at scale on real-sized scans: CPU and memory per node at 1k / 10k / 50k nodes.

The scans are written here, each node its own: tests/fleet_gen.py's 8-GPU `check --bench --quick` scan (from a
real H100 scan: copies, P2P bandwidths and latencies, four collectives over 7 sizes) plus per GPU a matmul and a
memory-bandwidth figure (224 figures), 8 RDMA ports (ConnectX-7 NDR, 400 Gb/s, one node in 500 with a port at
200), the real scan's storage, fabric, kernel and node sections (tests/fixtures/h100-vm/scan-v4-storage.json)
with a storage benchmark result on its data path, and the real scan's advice and findings: about 186 kB of JSON
a node. Each size is measured in a fresh process that loads (read, parse, check, extract), analyses and renders
text and JSON. Printed per size: CPU ms per node (process CPU time, its reading processes' included, of load +
analyse + render over the nodes; start-up excluded), of which loading, and kB of memory per node (peak resident
set minus the resident set before loading, over the nodes; the parent's only). Budgets: 2 ms of CPU and 40 kB
per node, 10,000 nodes in under 30 s of CPU. ``--stages`` prints instead the CPU per node of each stage (read,
parse and check, the lean facts, the node's figures and attributes, freeing the parsed scan, analyse, render).

Measured on a 2-core machine (CPU time follows its load): with the typed decoder (facts.lean_fast), at load average
0.6-0.9, 10,000 nodes 2.43 ms and 25.8 kB per node (24.3 s), 1,000 nodes 2.68 ms and 26.9 kB; by stage at 2,000
nodes: read 0.06, decode and check 0.56, facts 0.54, node 0.35, free 0.11, analyse 0.78, render 0.03 ms. Before it,
at the same load: 2.78 ms (2,000 nodes, of which orjson's parse and the check 0.70) and 3.0 ms (10,000); at load
average 5-6, 10,000 nodes 5.4 ms and 26 kB, 50,000 nodes 8.0 ms and 26.1 kB (402 s CPU).

    .venv/bin/python benchmarks/fleet_scale.py                  # 1000 10000 (50000 takes 9 GB of scans)
    .venv/bin/python benchmarks/fleet_scale.py 2000 5000 --jobs 2
    .venv/bin/python benchmarks/fleet_scale.py 2000 --stages   # CPU per node of each stage: where the time goes
"""

from __future__ import annotations

import copy
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
REAL = ROOT / "tests" / "fixtures" / "h100-vm" / "scan-v4-storage.json"
PORTS = 8


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(d: Path, n: int, jobs: int) -> dict[str, float]:
    from gpuadvisor.fleet.analyse import Options, analyse
    from gpuadvisor.fleet.load import load_nodes
    from gpuadvisor.render.machine.fleet_json import render_json
    from gpuadvisor.render.text.fleet import render_text

    before = _rss_kb()
    c0 = _cpu()
    t0 = time.perf_counter()
    nodes = load_nodes([str(d)], jobs=jobs)
    load_s = _cpu() - c0
    r = analyse(nodes, Options())
    render_text(r)
    render_json(r)
    cpu = _cpu() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return {
        "nodes": len(r.nodes),
        "cpu_ms_per_node": 1000 * cpu / n,
        "load_ms_per_node": 1000 * load_s / n,
        "cpu_s": cpu,
        "kb_per_node": (peak - before) / n,
        "wall_s": time.perf_counter() - t0,
        "findings": len(r.findings),
    }


STAGES = ("read", "decode and check", "facts (lean Rig)", "node (figures, shape, attributes)", "free")


def stages(d: Path, n: int) -> dict[str, float]:
    """CPU ms per node of each stage of reading (as fleet.load.read_node does it, one stage at a time), then of
    the analysis and of rendering: where the time goes."""
    from gpuadvisor import inputs
    from gpuadvisor.facts import Rig, lean, lean_fast
    from gpuadvisor.fleet import load
    from gpuadvisor.fleet.analyse import Options, analyse
    from gpuadvisor.fleet.model import gc_paused
    from gpuadvisor.render.machine.fleet_json import render_json
    from gpuadvisor.render.text.fleet import render_text

    spent = dict.fromkeys(STAGES, 0.0)
    nodes: dict[str, Any] = {}
    with gc_paused():
        for p in sorted(d.glob("*.json")):
            t0 = _cpu()
            data = inputs.read_bytes(p, "a gpuadvisor scan (JSON)", inputs.SCAN_LIMIT, regular_only=True)
            t1 = _cpu()
            parsed: Any = lean.fast_decode(data)  # the fast road (a well-formed scan), else the standard one
            if parsed is None:
                parsed = lean.parse_bytes(data, p)
            t2 = _cpu()
            rig = lean.fast_facts(parsed) if isinstance(parsed, lean_fast.Scan) else lean.from_json(parsed, p)
            t3 = _cpu()
            node = load.scan_node(p, rig) if isinstance(rig, Rig) else load.node_from(p, parsed)
            t4 = _cpu()
            del data, parsed, rig
            t5 = _cpu()
            nodes[node.name] = node
            for k, dt in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
                spent[k] += dt
        t0 = _cpu()
        r = analyse(nodes, Options())
        t1 = _cpu()
    render_text(r)
    render_json(r)
    t2 = _cpu()
    out = {k: 1000 * v / n for k, v in spent.items()}
    out["analyse"], out["render"] = 1000 * (t1 - t0) / n, 1000 * (t2 - t1) / n
    return out


def _extra(real: dict[str, Any]) -> dict[str, Any]:
    """The sections a real scan has beyond fleet_gen's, with a storage benchmark result on the data path."""
    out = {k: copy.deepcopy(real[k]) for k in ("storage", "fabric", "kernel", "node", "verdict", "provenance")}
    out["storage"]["paths"][0]["bench"] = {
        "unavailable": {},
        "provenance": "measured",
        "method": "gpuadvisor (python, O_DIRECT)",
        "direct": True,
        "file_bytes": 1 << 30,
        "block_bytes": 1 << 20,
        "iodepth": 32,
        "seq_read_gbps": 6.5,
        "seq_write_gbps": 3.1,
        "rand_read_iops": 410000.0,
        "rand_read_latency_us": 78.0,
        "notes": [],
    }
    out["findings"], out["advice"] = real["findings"], real["advice"]
    out["kernel"] = dict(out["kernel"], source="/dev/kmsg", lines_read=4096, uptime_s=864000.0, events=_events(EVENTS))
    return out


EVENTS = 165  # kernel events per scan: brings a scan to the 186 kB of the real scans the scale budget is for


def _events(n: int) -> list[dict[str, Any]]:
    """NVIDIA driver events in the form the kernel-log reader saves (an application's Xid 13 and 31 faults)."""
    return [
        {
            "kind": "xid",
            "code": 13 if i % 2 else 31,
            "bus_id": f"0000:{0x18 + 0x10 * (i % 8):02x}:00",
            "gpu_index": i % 8,
            "uptime_s": 1843.308145 + 600 * i,
            "time": None,
            "pid": 41000 + i,
            "process": "python3",
            "text": "Graphics SM Warp Exception on (GPC 4, TPC 1, SM 0): Out Of Range Address"
            if i % 2
            else "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2a_4b600000",
            "line": 100 + i,
        }
        for i in range(n)
    ]


def _port(i: int, rate: float) -> dict[str, Any]:
    return {
        "unavailable": {},
        "device": f"mlx5_{i}",
        "port": 1,
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "rate_gbps": rate,
        "link_layer": "InfiniBand",
        "firmware": "28.39.1002",
        "ca_type": "MT4129",
        "bus_id": f"0000:{0x19 + 0x10 * i:02x}:00.0",
    }


def node(i: int, rng: random.Random, extra: dict[str, Any]) -> dict[str, Any]:
    import fleet_gen as G

    scan = G.node_scan(f"node{i:05d}", rng, 0.01)
    for g in range(G.GPUS):
        scan["measurements"].append(
            G._meas("matmul", [g], value_tflops=700.0 * (1 + rng.gauss(0, 0.01)), dtype="bfloat16", value_gbps=None)
        )
        scan["measurements"].append(
            G._meas("memory_bandwidth", [g], value_gbps=3000.0 * (1 + rng.gauss(0, 0.01)), expected_gbps=3350.0)
        )
    network = {
        "unavailable": {},
        "rdma_ports": [_port(p, 200.0 if i % 500 == 7 and p == 3 else 400.0) for p in range(PORTS)],
    }
    return {**scan, **extra, "findings": extra["findings"], "network": network}


def one(n: int, root: Path, jobs: int) -> dict[str, float]:
    d = root / f"fleet-{n}"
    d.mkdir()
    rng = random.Random(n)
    extra = _extra(json.loads(REAL.read_text(encoding="utf-8")))
    size = 0
    for i in range(n):
        text = json.dumps(node(i, rng, extra))
        size += len(text)
        (d / f"node{i:05d}.json").write_text(text)
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(d), str(n), str(jobs)], check=True, capture_output=True, text=True
    ).stdout
    for p in d.iterdir():
        p.unlink()
    d.rmdir()
    return {**json.loads(out), "scan_kb": size / n / 1000}


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        d, n, jobs = Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(stages(d, n) if jobs == 0 else measure(d, n, jobs)))
        return
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return
    jobs = 1
    if "--jobs" in args:
        k = args.index("--jobs")
        jobs = int(args[k + 1])
        del args[k : k + 2]
    by_stage = "--stages" in args
    args = [a for a in args if a != "--stages"]
    sizes = [int(a) for a in args] or [1000, 10000]
    import msgspec

    from gpuadvisor.facts import lean

    fast = lean._orjson
    parser = f"orjson {fast.__version__}" if fast is not None else "Python's json (orjson not installed)"
    print(f"jobs {jobs}, decoder msgspec {msgspec.__version__} (other files: {parser})")
    if by_stage:
        _by_stage(sizes)
        return
    print(
        f"{'nodes':>6} {'scan kB':>8} {'CPU ms/node':>12} {'load ms/node':>13} {'CPU s':>7} {'kB/node':>8} "
        f"{'wall s':>7}"
    )
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-fleet-scale-") as tmp:
        for n in sizes:
            m = one(n, Path(tmp), jobs)
            print(
                f"{n:>6} {m['scan_kb']:>8.1f} {m['cpu_ms_per_node']:>12.3f} {m['load_ms_per_node']:>13.3f} "
                f"{m['cpu_s']:>7.1f} {m['kb_per_node']:>8.1f} {m['wall_s']:>7.1f}",
                flush=True,
            )


def _by_stage(sizes: list[int]) -> None:
    cols = (*STAGES, "analyse", "render")
    print("CPU ms per node, by stage:", " | ".join(cols))
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-fleet-scale-") as tmp:
        for n in sizes:
            m = one(n, Path(tmp), 0)
            print(f"{n:>6} " + " ".join(f"{m[c]:>7.3f}" for c in cols) + f"  total {sum(m[c] for c in cols):.3f}")


if __name__ == "__main__":
    main()
