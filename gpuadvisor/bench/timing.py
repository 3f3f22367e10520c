"""Timers for the collective sweep: one interface, CUDA events on GPUs, perf_counter on CPUs.

Both start after a barrier and return the time of each iteration: the gap between the completion of
successive operations, so nothing but the operations sits inside the timed window. The sweep takes the
median per rank, then the slowest rank (max over ranks), as ../shared/DESIGN.md ("Benchmarks") asks.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class CpuTimer:
    method = "perf_counter after a barrier, per-iteration time between completions, median per rank, slowest rank"

    def __init__(self, dist: Any) -> None:
        self.dist = dist

    def run(self, op: Callable[[], None], iters: int) -> list[float]:
        self.dist.barrier()
        stamps = [time.perf_counter()]
        for _ in range(iters):
            op()
            stamps.append(time.perf_counter())
        return [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


class CudaTimer:
    method = "CUDA events after a barrier, per-iteration time between completions, median per rank, slowest rank"

    def __init__(self, dist: Any, torch: Any) -> None:
        self.dist = dist
        self.torch = torch

    def run(self, op: Callable[[], None], iters: int) -> list[float]:
        cuda = self.torch.cuda
        self.dist.barrier()
        cuda.synchronize()
        events = [cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        events[0].record()
        for i in range(iters):
            op()
            events[i + 1].record()
        events[-1].synchronize()
        return [a.elapsed_time(b) / 1e3 for a, b in zip(events, events[1:], strict=False)]


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if n == 0:
        raise ValueError("median of no values")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
