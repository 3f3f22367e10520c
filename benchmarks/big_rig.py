"""Time a scan (probe, rules, terminal text, HTML) of one simulated rig with many GPUs.

A rig description with N GPUs is generated on the fly: N/8 PCIe 5.0 switches, eight GPUs under each, two
root ports per NUMA node, every GPU with 18 NVLink 4 links into NVSwitch chips (a DGX-H100-like fabric made
N wide). Each phase is timed separately (wall clock) so the part that grows with N² shows; "CPU s" is the
process's CPU time over all phases, less sensitive to other processes sharing the machine.

    .venv/bin/python benchmarks/big_rig.py            # 8, 64, 128, 256 GPUs
    .venv/bin/python benchmarks/big_rig.py 256
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def description(n: int) -> str:
    out = [
        f'name = "big-{n}"',
        f'title = "{n} simulated GPUs behind {max(1, n // 8)} PCIe switches"',
        "",
        "[software]",
        'driver_version = "565.57.01"',
        'cuda_driver_version = "12.7"',
        "",
        "[host]",
        f'hostname = "big-{n}"',
        "sockets = 2",
        "memory_total_gib = 2048",
        "",
        "[[numa]]",
        "id = 0",
        'cpus = "0-55"',
        "memory_gib = 1024",
        "",
        "[[numa]]",
        "id = 1",
        'cpus = "56-111"',
        "memory_gib = 1024",
        "",
        "[gpu]",
        'name = "NVIDIA H100 80GB HBM3"',
        "memory_total_mib = 81559",
        "power_limit_w = 700.0",
        "power_default_limit_w = 700.0",
        "pcie_gen = 5",
        "pcie_max_gen = 5",
        "nvlinks = 18",
        "nvlink_version = 4",
        'nvlink_fabric = "nvswitch"',
        "nvswitches = 4",
        "",
    ]
    switches = max(1, (n + 7) // 8)
    for s in range(switches):
        bus = 0x10 + s * 4  # 4 buses per switch: port, switch, GPUs below
        dom = s // 60  # keep bus numbers below 0x100 by moving to the next PCI domain
        bus = 0x10 + (s % 60) * 4
        out += [
            "[[ports]]",
            f'id = "rp{s}"',
            'kind = "root-port"',
            f'bdf = "{dom:04x}:{bus:02x}:01.0"',
            f'host_bridge = "pci{dom:04x}:{bus:02x}"',
            f"numa_node = {0 if s < switches / 2 else 1}",
            "",
            "[[ports]]",
            f'id = "sw{s}"',
            'kind = "switch"',
            f'parent = "rp{s}"',
            f'bdf = "{dom:04x}:{bus + 1:02x}:00.0"',
            "gen = 5",
            "width = 16",
            "",
        ]
    for g in range(n):
        s = g // 8
        dom, bus = s // 60, 0x10 + (s % 60) * 4 + 2
        out += ["[[gpus]]", f'bus_id = "{dom:04x}:{bus:02x}:{g % 8:02x}.0"', f'parent = "sw{s}"', ""]
    return "\n".join(out) + "\n"


def run(n: int) -> dict[str, float]:
    from gpuadvisor.collect import simulate
    from gpuadvisor.render.html import render_html
    from gpuadvisor.render.text.rig import render_scan
    from gpuadvisor.rules import evaluate

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"big-{n}.toml"
        p.write_text(description(n), encoding="utf-8")
        t = {}
        c0 = time.process_time()
        t0 = time.perf_counter()
        rig = simulate(str(p))
        t["probe"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rig.findings = evaluate(rig)
        t["rules"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        render_scan(rig)
        t["terminal"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        render_html(rig)
        t["html"] = time.perf_counter() - t0
        t["cpu"] = time.process_time() - c0
    return t


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [8, 64, 128, 256]
    print(f"{'GPUs':>5} {'probe s':>8} {'rules s':>8} {'terminal s':>10} {'html s':>8} {'total s':>8} {'CPU s':>6}")
    for n in sizes:
        t = run(n)
        print(
            f"{n:>5} {t['probe']:>8.3f} {t['rules']:>8.3f} {t['terminal']:>10.3f} {t['html']:>8.3f} "
            f"{sum(v for k, v in t.items() if k != 'cpu'):>8.3f} {t['cpu']:>6.2f}"
        )


if __name__ == "__main__":
    main()
