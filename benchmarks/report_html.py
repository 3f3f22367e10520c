"""Time `gpuadvisor report --html` as separate processes, with and without jinja2's on-disk bytecode cache.

Every run is a new process (as a user or a cron job runs it), so an in-process cache cannot help: without the
bytecode cache each process compiles report.html.j2 and its includes again.

    .venv/bin/python benchmarks/report_html.py          # 5 runs each, dgx-h100
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(n: int, env: dict[str, str], out: Path) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "gpuadvisor", "report", "--simulate", "dgx-h100", "--html", str(out)],
            env=env,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - t)
    return times


def compile_time(env: dict[str, str]) -> float:
    code = (
        "import time; from gpuadvisor.render.html import environment; e = environment(); "
        "t = time.perf_counter(); e.get_template('report.html.j2'); print(time.perf_counter() - t)"
    )
    return float(
        subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    base = {**os.environ}
    base.pop("GPUADVISOR_NO_TEMPLATE_CACHE", None)
    off = {**base, "GPUADVISOR_NO_TEMPLATE_CACHE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.html"
        run(1, base, out)  # fill the cache
        rows = [
            ("no bytecode cache", run(n, off, out), compile_time(off)),
            ("bytecode cache", run(n, base, out), compile_time(base)),
        ]
    print(f"{'':<18} {'report --html (median of ' + str(n) + ') s':>32} {'get_template s':>15}")
    for name, times, ct in rows:
        print(f"{name:<18} {statistics.median(times):>32.3f} {ct:>15.3f}")


if __name__ == "__main__":
    main()
