"""bench --storage's built-in engine against fio on the same directory, same jobs, optionally under CPU load.

Run: .venv/bin/python benchmarks/storage_vs_fio.py [DIR] [--pairs N] [--hogs K] [--fresh]

Interleaved pairs (the order swapped every pair), 256 MiB file, 0.6 s per job. ``--fresh`` runs each in a process
of its own, as ``gpuadvisor bench --storage`` runs (by default the built-in engine runs in this process). ``--hogs K``
starts K busy-loop processes for the run (killed at the end), as another job on the cores would. Prints each
engine's figures and the ratio of the medians; exits 1 when a median is off fio's by more than 15 % plus the two
methods' own run-to-run spreads (a shared VM's disk moves single runs by 20-50 %). A timed comparison: it lives
here, not in the tests, whose verdicts must not depend on how busy the machine is.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from types import SimpleNamespace

from gpuadvisor.bench.storage import MiB, run_storage_bench

FIELDS = ("seq_write_gbps", "seq_read_gbps", "rand_read_iops")


def _one_run(directory: str, engine: str) -> SimpleNamespace:
    """One run of ``engine`` in a process of its own, as ``gpuadvisor bench --storage`` runs (fio too is a fresh
    process): the measuring process is not this long-lived one, which has waited on every earlier run."""
    code = (
        "import json, sys; from dataclasses import asdict; from gpuadvisor.bench.storage import run_storage_bench; "
        "print(json.dumps(asdict(run_storage_bench(sys.argv[1], file_bytes=int(sys.argv[2]), seconds=0.6, "
        "engine=sys.argv[3]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, directory, str(256 * MiB), engine], capture_output=True, text=True, check=True
    ).stdout
    return SimpleNamespace(**json.loads(out))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="each run in a process of its own (as the command runs)")
    args = ap.parse_args()
    if not shutil.which("fio"):
        print("fio not installed (apt-get install fio)")
        return 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.hogs)]
    runs: dict[str, list] = {"python": [], "fio": []}
    try:
        with tempfile.TemporaryDirectory(dir=args.dir) as d:
            for i in range(args.pairs):
                for engine in ("python", "fio") if i % 2 == 0 else ("fio", "python"):
                    if args.fresh:
                        runs[engine].append(_one_run(d, engine))
                    else:
                        runs[engine].append(run_storage_bench(d, file_bytes=256 * MiB, seconds=0.6, engine=engine))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"{args.hogs} CPU hogs; {runs['python'][0].method} vs {runs['fio'][0].method}")
    bad = 0
    for field in FIELDS:
        ours = [getattr(b, field) for b in runs["python"]]
        fio = [getattr(b, field) for b in runs["fio"]]
        ratio = statistics.median(ours) / statistics.median(fio)
        spread = (max(fio) - min(fio)) / statistics.median(fio) + (max(ours) - min(ours)) / statistics.median(ours)
        ok = abs(ratio - 1) <= 0.15 + spread
        bad += not ok
        verdict = "ok" if ok else "FAIL"
        print(f"{field:15} gpuadvisor {ours}  fio {fio}  ratio {ratio:.2f} (spreads {spread:.0%}) {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
