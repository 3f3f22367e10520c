"""Where a collective's size sweep stopped rising: the figure a bandwidth verdict or a prediction should use.

Bus bandwidth rises with message size until the links are saturated, then stays flat (the plateau). A run that
ends before the plateau (nccl-tests ``-e 128M`` on NVLink, a single size) says nothing about the links' health:
its largest size is still on the rise. The definition, exact so a verdict can be checked by hand:

- the rows are the sweep's sizes with a positive size, ascending;
- the plateau is the longest run of the largest sizes (a suffix of the sweep) whose busbw all lie within
  ``PLATEAU_TOLERANCE`` of the best busbw of that run (min >= (1 - tol) x max);
- the sweep *reached* it when that run spans at least one doubling of the size (its last size is at least
  twice its first: busbw rose less than the tolerance over the last doubling) and the sweep went at least as
  far as the link type needs (``MIN_BYTES``);
- the plateau figure is the median busbw of the plateau rows.

Busbw that peaks at middle sizes and then settles lower (PCIe all-reduce on small protocols, or a link that
degrades under large transfers) is judged at the settled, large-message figure, because the plateau is taken
from the end of the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.facts import SweepRow

MiB, GiB = 2**20, 2**30

# Busbw within 5% over a doubling of the size counts as flat: nccl-tests' own figures scatter by a few percent
# between iterations, and production health checks set their floors 2-4% under typical values (Azure HPC NHC).
PLATEAU_TOLERANCE = 0.05

# How far a sweep must go before its flat tail is believed, by link type.
# NVLink: the NCCL maintainer on 8x H100, "256M is too small to reach peak bandwidth" (github.com/NVIDIA/
# nccl-tests/issues/212), and on A100 "At 512M the bandwidth is still increasing, so you should replace 1G by
# 8G" (github.com/NVIDIA/nccl-tests/issues/149): at least 1 GiB.
# PCIe: nccl-tests' README example sweep ends at 128 MiB (all_reduce_perf -b 8 -e 128M -f 2); published PCIe
# sweeps are flat long before it (2x RTX 2080 Ti from 2 MiB; 4x V100 PCIe from 4 MiB, University of Sheffield
# Bessemer documentation).
MIN_BYTES = {"nvlink": GiB, "pcie": 128 * MiB}
MIN_BYTES_SOURCE = {
    "nvlink": "NVLink needs 1 GiB or more (NCCL maintainer: '256M is too small to reach peak bandwidth', "
    "github.com/NVIDIA/nccl-tests/issues/212; 'at 512M the bandwidth is still increasing', issues/149)",
    "pcie": "PCIe sweeps flatten by a few MiB; nccl-tests' README example runs to 128 MiB (-e 128M)",
    "unknown": "the link type is not in the scan, so the NVLink figure applies "
    "(github.com/NVIDIA/nccl-tests/issues/212)",
}


@dataclass(frozen=True)
class Plateau:
    reached: bool
    gbps: float | None  # the plateau figure (median busbw of its rows) when reached
    first_bytes: int | None  # smallest size of the flat tail
    last_bytes: int | None  # largest size of the sweep
    rows: int  # sizes in the flat tail
    peak_gbps: float | None  # best busbw of the whole sweep
    need_bytes: int  # what the sweep should reach (MIN_BYTES of the link, or twice the last size when still rising)
    why: str  # when not reached: what is missing, in words


def fmt_bytes(n: int) -> str:
    """1073741824 -> '1 GiB', 134217728 -> '128 MiB', 33554432 -> '32 MiB', 1000 -> '1000 B'."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    if n >= GiB:
        return f"{n / GiB:.2f} GiB"
    return f"{n} B"


def find(rows: list[SweepRow], link: str = "unknown", tolerance: float = PLATEAU_TOLERANCE) -> Plateau:
    """The plateau of a sweep (see the module docstring); ``link`` is "nvlink", "pcie" or "unknown"."""
    need = MIN_BYTES.get(link, MIN_BYTES["nvlink"])
    pts = sorted((r.size_bytes, r.busbw_gbps) for r in rows if r.size_bytes > 0)
    if not pts:
        return Plateau(False, None, None, None, 0, None, need, "no sizes measured")
    last = pts[-1][0]
    peak = max(b for _, b in pts)
    k = len(pts) - 1
    hi = lo = pts[k][1]
    while k > 0:
        b = pts[k - 1][1]
        if min(lo, b) < (1 - tolerance) * max(hi, b):
            break
        k -= 1
        hi, lo = max(hi, b), min(lo, b)
    tail = pts[k:]
    first = tail[0][0]
    spans = last >= 2 * first
    if len(pts) == 1:
        why = f"one size only ({fmt_bytes(last)}): a single size cannot show where busbw stops rising"
        return Plateau(False, None, None, last, 1, peak, max(need, 2 * last) if last >= need else need, why)
    if not spans:
        prev = pts[-2]
        rise = pts[-1][1] / prev[1] - 1 if prev[1] > 0 else float("inf")
        what = f"{rise:+.0%}" if rise != float("inf") else "from 0"
        why = (
            f"busbw still rising at the largest size ({pts[-1][1]:g} GB/s at {fmt_bytes(last)}, {what} over "
            f"{fmt_bytes(prev[0])})"
        )
        return Plateau(False, None, None, last, 1, peak, max(need, 2 * last), why)
    if last < need:
        why = f"the sweep ends at {fmt_bytes(last)}, below the {fmt_bytes(need)} this link type needs to reach its peak"
        return Plateau(False, None, first, last, len(tail), peak, need, why)
    # Imported here: this module is on every command's path, statistics (and fractions) only on a sweep's.
    from statistics import median

    return Plateau(True, float(median(b for _, b in tail)), first, last, len(tail), peak, need, "")
