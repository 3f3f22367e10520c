"""Timers for the collective sweep: one interface, CUDA events on GPUs, perf_counter on CPUs.

Both follow nccl-tests' definition of the time of one operation: after a barrier, the elapsed time of the
whole timed loop of ``iters`` back-to-back operations divided by ``iters`` (nccl-tests src/common.cu,
``deltaSec / iters``). The sweep then takes the slowest rank (max over ranks; nccl-tests ``-a 3``, where its
default averages the ranks).

An earlier version took the median of the per-iteration gaps between completions. Per-iteration times of a
collective are skewed to the right (a few slow iterations: a descheduled rank, a TCP retransmit), so their
median sits below their mean and the bandwidth read 14-19% above the textbook figure at 16 MiB on gloo. The
total / iters figure counts every iteration, slow ones included, as a training step does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

METHOD = (
    "after a barrier, total time of {iters} back-to-back operations / {iters} (nccl-tests' definition), slowest rank"
)


def cpu_loop_seconds(op: Callable[[], None], iters: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``iters`` back-to-back calls, by the host clock."""
    start = clock()
    for _ in range(iters):
        op()
    return (clock() - start) / iters


def cuda_loop_seconds(torch: Any, op: Callable[[], None], iters: int) -> float:
    """Seconds per call of ``iters`` back-to-back calls, by CUDA events around the loop (the stream's own time)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        op()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def _start_together(dist: Any, iters: int) -> None:
    """Check the loop's length, then wait for every rank: the timed loops begin together."""
    if iters < 1:
        raise ValueError("iters must be at least 1")
    dist.barrier()


class CpuTimer:
    method = "perf_counter " + METHOD.format(iters="n")

    def __init__(self, dist: Any, clock: Callable[[], float] = time.perf_counter) -> None:
        self.dist = dist
        self.clock = clock

    def run(self, op: Callable[[], None], iters: int) -> float:
        """Seconds per operation: elapsed time of the timed loop / iters."""
        _start_together(self.dist, iters)
        return cpu_loop_seconds(op, iters, self.clock)


class CudaTimer:
    method = "CUDA events " + METHOD.format(iters="n")

    def __init__(self, dist: Any, torch: Any) -> None:
        self.dist = dist
        self.torch = torch

    def run(self, op: Callable[[], None], iters: int) -> float:
        _start_together(self.dist, iters)
        self.torch.cuda.synchronize()
        return cuda_loop_seconds(self.torch, op, iters)


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
