"""Peak memory and CPU time of ``gpuadvisor import`` on a big kernel log, and of a big ibstat paste.

Run: .venv/bin/python benchmarks/log_memory.py [--lines 100000 1000000 3000000] [--ibstat-lines 1000000]

Each log is built from real lines: the dmesg of wilicc/gpu-burn#1 (PCIe AER errors, then Xid 79, a GPU fallen
off the bus: tests/corpus/kernel-log/dmesg_aer-surprise-down-then-xid79_priyankasingh.txt) and the dmesg -T of
gpud's Xid 119 test data (a GSP RPC timeout with its RPC history:
tests/corpus/kernel-log/dmesg-T_xid119-gsp-rpc-timeout-xe9680_gpud.txt), repeated with their uptimes moved on,
so that every Xid and AER line repeats thousands of times. Each import runs in its own process; its peak
resident memory (ru_maxrss) and CPU time (user + system) are printed, with the events kept in the scan.
Memory that does not grow from 1M to 3M lines is what "bounded" means here.

For the ibstat paste it also prints the CPU time of cutting the text into outputs in this process, with the
section splitter's pre-filter (importers/sift.py) and with every row's detector tried on every line as before it:
the two splits are checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
LOGS = (
    CORPUS / "kernel-log" / "dmesg_aer-surprise-down-then-xid79_priyankasingh.txt",
    CORPUS / "kernel-log" / "dmesg-T_xid119-gsp-rpc-timeout-xe9680_gpud.txt",
)
IBSTAT = CORPUS / "rdma"
_UPTIME = re.compile(r"^\[\s*(\d+\.\d+)\]")


def real_lines() -> list[str]:
    return [x for p in LOGS for x in p.read_text().splitlines() if x.strip()]


def write_log(path: Path, lines: int) -> None:
    """``lines`` lines: the real lines over and over, dmesg uptimes moved on by an hour each round."""
    base = real_lines()
    with path.open("w") as f:
        n, rnd = 0, 0
        while n < lines:
            for x in base[: lines - n]:
                m = _UPTIME.match(x)
                f.write(f"[{float(m.group(1)) + rnd * 3600:12.6f}]{x[m.end() :]}\n" if m else x + "\n")
            n += min(len(base), lines - n)
            rnd += 1


def write_ibstat(path: Path, lines: int) -> None:
    """An ibstat paste of about ``lines`` lines: the first real ibstat of the corpus, its CAs renamed over and over."""
    sample = next(p for p in sorted(IBSTAT.glob("*ibstat*.txt")) if "CA '" in p.read_text())
    text = sample.read_text()
    with path.open("w") as f:
        n, k = 0, 0
        while n < lines:
            block = re.sub(r"CA '(\w+?)(\d*)'", rf"CA '\g<1>{k}_\g<2>'", text)
            f.write(block if block.endswith("\n") else block + "\n")
            n += block.count("\n") + 1
            k += 1


def split_cost(path: Path) -> tuple[float, float]:
    """CPU seconds of splitting ``path`` into outputs: (sifted, every detector on every line); the splits equal."""
    from gpuadvisor.importers import sections
    from gpuadvisor.importers.registry import FORMATS
    from gpuadvisor.importers.sift import Sift

    class EveryRow(Sift):
        def rows(self, line: str) -> tuple:
            return FORMATS

    text = path.read_text()
    t0 = time.process_time()
    sifted = [(s.kind, s.start, len(s.lines)) for s in sections.split_sections(text)]
    t1 = time.process_time()
    real, sections.sift = sections.sift, lambda _text: EveryRow(())  # type: ignore[assignment]
    try:
        every = [(s.kind, s.start, len(s.lines)) for s in sections.split_sections(text)]
    finally:
        sections.sift = real
    t2 = time.process_time()
    if every != sifted:
        raise SystemExit(f"{path.name}: the sifted split differs from the split by every detector")
    return t1 - t0, t2 - t1


def measure(path: Path, out: Path) -> tuple[float, float, int]:
    """(peak RSS MiB, CPU s, exit status) of one import in its own process."""
    cmd = [sys.executable, "-m", "gpuadvisor", "import", str(path), "--json", str(out), "--no-rules"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        print(f"  exit {proc.returncode}: {err.strip()[:200]}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, nargs="*", default=[100_000, 1_000_000, 3_000_000])
    ap.add_argument("--ibstat-lines", type=int, nargs="*", default=[1_000_000])
    ap.add_argument("--split", action="store_true", help="also time the split alone, sifted and not (slow)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scan.json"
        for n in args.lines:
            log = Path(tmp) / f"dmesg-{n}.log"
            write_log(log, n)
            rss, cpu, rc = measure(log, out)
            kernel = json.loads(out.read_text())["kernel"] if rc in (0, 1) else {}
            kept = len(kernel.get("events") or [])
            counted = sum(1 + e.get("more", 0) for e in kernel.get("events") or [])
            print(
                f"kernel log {n:>9,} lines {log.stat().st_size / 2**20:7.1f} MiB: peak RSS {rss:6.0f} MiB, "
                f"CPU {cpu:5.1f} s, {kept} events kept standing for {counted:,}"
            )
            log.unlink()
        for n in args.ibstat_lines:
            paste = Path(tmp) / f"ibstat-{n}.txt"
            write_ibstat(paste, n)
            rss, cpu, rc = measure(paste, out)
            print(
                f"ibstat     {n:>9,} lines {paste.stat().st_size / 2**20:7.1f} MiB: peak RSS {rss:6.0f} MiB, "
                f"CPU {cpu:5.1f} s, exit {rc}"
            )
            if args.split:
                sifted, every = split_cost(paste)
                print(f"  split into outputs: {sifted:5.1f} s CPU sifted, {every:5.1f} s trying every detector")
    return 0


if __name__ == "__main__":
    sys.exit(main())
