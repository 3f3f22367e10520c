"""`gpuadvisor fleet` at scale on real-sized scans: memory per node and CPU per scan at 1k / 10k / 50k nodes.

The scans are tests/fleet_gen.py's: 8-GPU nodes shaped like a real `check --bench --quick` scan (about 200
measured figures, ~120 kB of JSON each), written as files. Each size is measured in a fresh process that loads
(read, parse, check, extract), analyses and renders text and JSON. Printed per size: CPU seconds per scan
(process CPU time of load + analyse + render over the number of scans, start-up excluded) and kB of memory per
node (peak resident set minus the resident set before loading, over the number of nodes). Budgets: 1 ms of CPU
per scan and 40 kB per node.

    .venv/bin/python benchmarks/fleet_scale.py              # 1000 10000 (50000 takes 5.9 GB of scans)
    .venv/bin/python benchmarks/fleet_scale.py 1000 10000 50000
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(d: Path, n: int) -> dict[str, float]:
    from gpuadvisor.fleet.analyse import Options, analyse
    from gpuadvisor.fleet.load import load_nodes
    from gpuadvisor.render.machine.fleet_json import render_json
    from gpuadvisor.render.text.fleet import render_text

    before = _rss_kb()
    c0 = time.process_time()
    t0 = time.perf_counter()
    nodes = load_nodes([str(d)])
    load_s = time.process_time() - c0
    r = analyse(nodes, Options())
    render_text(r)
    render_json(r)
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return {
        "nodes": len(r.nodes),
        "cpu_ms_per_scan": 1000 * cpu / n,
        "load_ms_per_scan": 1000 * load_s / n,
        "kb_per_node": (peak - before) / n,
        "wall_s": time.perf_counter() - t0,
        "findings": len(r.findings),
    }


def one(n: int, root: Path) -> dict[str, float]:
    import fleet_gen as G

    d = root / f"fleet-{n}"
    d.mkdir()
    rng = random.Random(n)
    template = G.node_scan("x", rng, 0.01)  # one scan's shape; each node gets its own noisy figures
    size = 0
    for i in range(n):
        scan = (
            G.node_scan(f"node{i:05d}", rng, 0.01)
            if i < 200
            else dict(template, host=dict(template["host"], hostname=f"node{i:05d}"))
        )
        text = json.dumps(scan)
        size += len(text)
        (d / f"node{i:05d}.json").write_text(text)
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(d), str(n)], check=True, capture_output=True, text=True
    ).stdout
    for p in d.iterdir():
        p.unlink()
    d.rmdir()
    return {**json.loads(out), "scan_kb": size / n / 1024}


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        print(json.dumps(measure(Path(sys.argv[2]), int(sys.argv[3]))))
        return
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    print(f"{'nodes':>6} {'scan kB':>8} {'CPU ms/scan':>12} {'load ms/scan':>13} {'kB/node':>8} {'wall s':>7}")
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-fleet-scale-") as tmp:
        for n in sizes:
            m = one(n, Path(tmp))
            print(
                f"{n:>6} {m['scan_kb']:>8.1f} {m['cpu_ms_per_scan']:>12.3f} {m['load_ms_per_scan']:>13.3f} "
                f"{m['kb_per_node']:>8.1f} {m['wall_s']:>7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
