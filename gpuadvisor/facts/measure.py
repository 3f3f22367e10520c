"""Measured results and verdicts in the facts model: one benchmark ``Measurement`` (a sweep of ``SweepRow``s),
the measurement kinds named once, and one rule's ``Finding``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.facts.model import Unavailable

COLLECTIVES: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
P2P_BW: tuple[str, ...] = ("p2p_unidir", "p2p_bidir")  # GPU-to-GPU copies, bandwidth
P2P: tuple[str, ...] = (*P2P_BW, "p2p_latency")
HOST_COPIES: tuple[str, ...] = ("h2d", "d2h")  # host <-> device
COPIES: tuple[str, ...] = (*HOST_COPIES, "d2d")
COMPUTE: tuple[str, ...] = ("matmul", "memory_bandwidth")
MEASUREMENT_KINDS: tuple[str, ...] = (*COLLECTIVES, *P2P, *COPIES, *COMPUTE)  # every Measurement.kind


@dataclass
class SweepRow:
    """One message size of a collective or copy sweep, nccl-tests style."""

    size_bytes: int = 0
    count: int = 0  # elements
    dtype: str = "float32"
    time_us: float = 0.0  # slowest rank's time per iteration
    algbw_gbps: float = 0.0
    busbw_gbps: float = 0.0
    correct: bool | None = None  # None: not checked
    errors: int | None = None  # wrong elements seen by the check


@dataclass
class Measurement(Unavailable):
    """One benchmark result (or an imported one) with its method and what the links should give.

    kind: all_reduce | all_gather | reduce_scatter | broadcast | p2p_unidir | p2p_bidir | p2p_latency | h2d |
    d2h | d2d | matmul | memory_bandwidth. ``value_gbps`` is the headline (largest-size busbw for collectives,
    bandwidth for copies and memory_bandwidth); matmul's is ``value_tflops`` (dense matmul TFLOP/s, 1e12 FLOP/s,
    2·M·N·K per product) of ``dtype`` (bf16 | fp16 | tf32 | fp8 | fp32) at ``shape`` ("MxNxK"), beside
    ``expected_tflops``, the datasheet dense peak (None on CPUs). backend "cuda" or "cpu" for these two.
    """

    kind: str = ""
    backend: str | None = None  # nccl | gloo | cuda | imported
    method: str | None = None
    provenance: str = "measured"  # measured | imported
    world_size: int | None = None
    gpus: list[int] = field(default_factory=list)
    hosts: list[str] = field(
        default_factory=list
    )  # collectives: each rank's host name, in rank order (multi-node runs)
    memory: str | None = None  # pinned | pageable (copies)
    concurrent: bool | None = None  # copies: all GPUs at once
    p2p_enabled: bool | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    rows: list[SweepRow] = field(default_factory=list)
    value_gbps: float | None = None
    latency_us: float | None = None
    dtype: str | None = None  # matmul: bf16 | fp16 | tf32 | fp8 | fp32
    shape: str | None = None  # matmul: "MxNxK" (A is MxK, B is KxN)
    value_tflops: float | None = None  # matmul: measured dense TFLOP/s
    expected_tflops: float | None = None  # matmul: datasheet dense peak of that dtype
    expected_gbps: float | None = None
    expected_source: str | None = None
    ratio: float | None = None
    status: str = "ok"  # ok | partial | failed | timeout | skipped
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Finding:
    """One rule's verdict on one subject."""

    code: str = ""
    name: str = ""
    area: str = ""
    severity: str = "info"  # info | warn | fail | error (rule crashed) | not-checked
    message: str = ""
    gpus: list[int] = field(default_factory=list)
    subject: str | None = None  # "GPU 2 0000:41:00.0", "link 0000:40:01.1 -> 0000:41:00.0", "host"
    observed: Any = None
    expected: Any = None
    expected_source: str | None = None
    fix: str | None = None
