"""Time `gpuadvisor fleet` on generated node scans: 10 to 10,000 simulated 8-GPU nodes (dgx-h100 preset, 89
measured figures each: h2d/d2h/d2d per GPU, P2P per pair, all-reduce), every scan a JSON file as `check --json`
writes it. Prints, per fleet size: load (read + parse + extract), analyse (groups, statistics, outliers, drift,
costs), text, JSON and HTML rendering, total wall time, CPU time of the measuring process (its start-up and
imports included; less sensitive than wall time to other processes sharing the CPUs), peak resident memory of the
process that reads and renders (ru_maxrss) and seconds per 1,000 nodes.

    .venv/bin/python benchmarks/fleet_scale.py                  # 10 100 1000 10000
    .venv/bin/python benchmarks/fleet_scale.py 10 100 1000
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuadvisor.fleet import synth  # noqa: E402
from gpuadvisor.fleet.analyse import Options, analyse  # noqa: E402
from gpuadvisor.fleet.load import load_nodes  # noqa: E402
from gpuadvisor.fleet.render_html import render_html  # noqa: E402
from gpuadvisor.fleet.render_json import render_json  # noqa: E402
from gpuadvisor.fleet.render_text import render_text  # noqa: E402


def measure(d: Path, n: int) -> dict[str, float]:
    """In a fresh process (see main): times of each phase, and the process's peak resident memory."""
    import resource

    names = [f"node{i:05d}" for i in range(n)]
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    nodes = load_nodes([str(d)])
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = analyse(nodes, Options(expect=names))
    t["analyse"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    render_text(r)
    t["text"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    render_json(r)
    t["json"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    html = render_html(r)
    t["html"] = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    t["peak_mib"] = ru.ru_maxrss / 1024
    t["cpu"] = ru.ru_utime + ru.ru_stime
    t["html_mib"] = len(html.encode()) / 2**20
    t["findings"] = len(r.findings)
    return t


def one(n: int, root: Path) -> dict[str, float]:
    import json
    import subprocess

    d = root / f"fleet-{n}"
    names = [f"node{i:05d}" for i in range(n)]
    plants = {names[n // 3]: synth.Plant(x8_gpu=1), names[n // 2]: synth.Plant(driver="535.104.05")} if n >= 10 else {}
    synth.write_fleet(d, names, seed=n, plants=plants)
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(d), str(n)], check=True, capture_output=True, text=True
    ).stdout
    for p in d.iterdir():
        p.unlink()
    d.rmdir()
    return json.loads(out)


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        import json

        print(json.dumps(measure(Path(sys.argv[2]), int(sys.argv[3]))))
        return
    sizes = [int(a) for a in sys.argv[1:]] or [10, 100, 1000, 10000]
    print(
        f"{'nodes':>6} {'load s':>7} {'analyse s':>9} {'text s':>7} {'json s':>7} {'html s':>7} {'total s':>8} "
        f"{'s/1000':>7} {'CPU s':>6} {'peak MiB':>9} {'html MiB':>9} {'findings':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            t = one(n, Path(tmp))
            total = sum(t[k] for k in ("load", "analyse", "text", "json", "html"))
            print(
                f"{n:>6} {t['load']:>7.2f} {t['analyse']:>9.2f} {t['text']:>7.2f} {t['json']:>7.2f} {t['html']:>7.2f} "
                f"{total:>8.2f} {total / n * 1000:>7.2f} {t['cpu']:>6.2f} {t['peak_mib']:>9.0f} {t['html_mib']:>9.1f} "
                f"{int(t['findings']):>8}",
                flush=True,
            )


if __name__ == "__main__":
    main()
