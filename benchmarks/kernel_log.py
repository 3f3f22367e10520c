"""How fast the kernel-log reader parses a big log: 1 million lines, 1 in 1000 an NVRM Xid or SXid line.

Run: .venv/bin/python benchmarks/kernel_log.py [lines] [--runs N]
Prints the median and min parse time of N runs, the lines per second and the events found, for the dmesg form
and the /dev/kmsg record form; exits 1 when the median is not under the 1 s the kernel-log reader must meet. Then
the time to list the failure lines no sign judges (GA828) in a log read whole and in one read for its driver lines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from gpuadvisor.probes.kmsg import parse_log
from gpuadvisor.probes.kmsg_unjudged import WHOLE_UP_TO, unjudged

NOISE = [
    "mlx5_core 0000:{b:02x}:00.0 mlx5_{n}: Port: 1 Link ACTIVE",
    "EXT4-fs (md127p3): re-mounted. Quota mode: none.",
    'audit: type=1400 audit({t}:{n}): apparmor="STATUS" operation="profile_load" name="docker-default"',
    "IPv6: ADDRCONF(NETDEV_CHANGE): ib{n}: link becomes ready",
]
EVENTS = [
    "NVRM: Xid (PCI:0000:{b:02x}:00): 13, pid={n}, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)",
    "NVRM: Xid (PCI:0000:{b:02x}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "nvidia-nvswitch2: SXid (PCI:0000:{b:02x}:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
]


def make_log(lines: int, kmsg: bool) -> str:
    out = []
    for i in range(lines):
        t = i * 0.001
        msg = (EVENTS[(i // 1000) % 3] if i % 1000 == 999 else NOISE[i % 4]).format(b=0x18 + i % 8, n=i % 97, t=t)
        out.append(f"6,{i},{int(t * 1e6)},-;{msg}" if kmsg else f"[{t:12.6f}] {msg}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("lines", nargs="?", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    worst = 0.0
    for form in ("dmesg", "kmsg"):
        text = make_log(args.lines, form == "kmsg")
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            events, n = parse_log(text)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        worst = max(worst, med)
        print(
            f"{form:6} {n:>9} lines {len(text) / 1e6:6.1f} MB  median {med:.3f} s  min {min(times):.3f} s  "
            f"{n / med / 1e6:.1f} M lines/s  {len(events)} events"
        )
    # the failure lines no sign judges (GA828), as import reads them: the whole text up to WHOLE_UP_TO, the NVIDIA
    # driver's lines of a longer one (not part of the 1 s bar, which is the reader's; printed to watch its growth)
    for lines in (WHOLE_UP_TO // 80, args.lines):
        text = make_log(lines, False)
        t0 = time.perf_counter()
        found = unjudged(text, 1, set())
        took = time.perf_counter() - t0
        print(f"unjudged {lines:>9} lines {len(text) / 1e6:6.1f} MB  {took:.3f} s  {len(found)} kept")
    return 0 if worst < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
