"""Micro-benchmarks: collectives over torch.distributed (NCCL on GPUs, gloo on CPUs), peer-to-peer and
host<->device copies, each a ``gpuadvisor.facts.Measurement`` beside what the rig's links should give.

Public API (stable; ``gpuadvisor scan --bench`` calls it):

- ``run_benchmarks(rig, *, preset="default", backend=None, nproc=None, budget_s=None, only=None,
  progress=None) -> list[Measurement]``

torch is imported only inside the functions that run benchmarks.
"""

from __future__ import annotations

from gpuadvisor.bench.presets import PRESETS, Preset
from gpuadvisor.bench.runner import ALL_KINDS, run_benchmarks

__all__ = ["ALL_KINDS", "PRESETS", "Preset", "run_benchmarks"]
