"""How fast the commands start: `gpuadvisor --help`, a simulated scan, and a scan of this machine.

Run: .venv/bin/python benchmarks/startup.py [--runs N]
Prints the median and min wall time of each over N runs (fresh processes), and which heavy modules
(torch, jinja2, pynvml) `--help` imported. The target from the foundation issue: --help well under 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "--help": ["--help"],
    "scan (this machine)": ["scan"],
    "scan --simulate dgx-h100": ["scan", "--simulate", "dgx-h100"],
    "scan --simulate dgx2-v100 (16 GPUs)": ["scan", "--simulate", "dgx2-v100"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"{'command':40} {'median s':>9} {'min s':>7}")
    for name, argv in CASES.items():
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gpuadvisor", *argv], capture_output=True, check=True)
            times.append(time.perf_counter() - t)
        print(f"{name:40} {statistics.median(times):9.3f} {min(times):7.3f}")
    probe = (
        "import sys; from gpuadvisor.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    "
        "pass\nprint([m for m in ('torch','jinja2','pynvml') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    print(f"heavy modules imported by --help: {out}")


if __name__ == "__main__":
    main()
