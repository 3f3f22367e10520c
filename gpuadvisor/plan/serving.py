"""Serving throughput of the advisor's vLLM pick: a roofline of the decode step.

Decoding one token for every running sequence reads the weights once and each sequence's KV cache once, so
on every current GPU the step is bound by memory bandwidth, not FLOPs (Pope et al. 2022, "Efficiently Scaling
Transformer Inference", section 3; vLLM's own docs: decode is memory-bound). Prefill is not counted. No
published serving run calibrates these figures: they are an estimate, and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Assumptions, each shown beside the figure it makes.
HBM_EFFICIENCY = 0.75  # fraction of datasheet memory bandwidth a decode step's kernels reach (assumed)
COMPUTE_EFFICIENCY = 0.5  # fraction of dense peak for the decode GEMMs when they are compute-bound (assumed)
TP_ALLREDUCE_US = {"nvlink": 10.0, "pcie": 30.0}  # latency of one small all-reduce per TP group (assumed)
AVERAGE_FILL = 0.5  # a sequence's KV cache is on average half its context over its life (prompt + output)

ASSUMPTIONS = (
    f"serving: decode only, a roofline of the step (weights + KV cache read once per step at {HBM_EFFICIENCY:.0%} of "
    "the "
    f"datasheet memory bandwidth; KV caches on average {AVERAGE_FILL:.0%} full; 2 all-reduces per layer under tensor "
    f"parallelism at {TP_ALLREDUCE_US['nvlink']:.0f} µs over NVLink, {TP_ALLREDUCE_US['pcie']:.0f} µs over PCIe); "
    "prefill not counted; "
    "not calibrated against published serving runs: treat it as an upper bound"
)


@dataclass
class Serving:
    replicas: int
    tensor_parallel: int
    sequences_per_replica: float
    step_ms: float
    bound: str  # memory | compute
    name: str
    tokens_per_second: float  # output tokens/s of the whole build
    per_sequence_tokens_per_second: float

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def serving_throughput(
    advice: dict[str, Any],
    *,
    gpus: int,
    memory_bandwidth_gbps: float,
    peak_tflops: float,
    params: int,
    layers: int,
    context: int,
    concurrency: int,
) -> Serving | None:
    """The fastest way to serve ``concurrency`` sequences on the build: over every tensor-parallel size the advisor
    found to fit (its pick is the smallest; a larger one reads the weights fewer times per token), replicas of it
    on the remaining GPUs."""
    if not advice.get("fits"):
        return None
    options = [c for c in advice.get("candidates", []) if c.get("fits") and "kv_bytes_per_token" in c]
    best = None
    for c in options:
        s = _one(
            c,
            gpus=gpus,
            memory_bandwidth_gbps=memory_bandwidth_gbps,
            peak_tflops=peak_tflops,
            params=params,
            layers=layers,
            context=context,
            concurrency=concurrency,
        )
        if s is not None and (best is None or s.tokens_per_second > best.tokens_per_second * 1.001):
            best = s
    return best


def _one(
    pick: dict[str, Any],
    *,
    gpus: int,
    memory_bandwidth_gbps: float,
    peak_tflops: float,
    params: int,
    layers: int,
    context: int,
    concurrency: int,
) -> Serving | None:
    tp = int(pick.get("tensor_parallel_size", 1)) * int(pick.get("pipeline_parallel_size", 1))
    if tp > gpus:
        return None
    replicas = max(1, min(gpus // tp, concurrency))
    seqs = concurrency / replicas
    kv_read = seqs * context * AVERAGE_FILL * float(pick["kv_bytes_per_token"])
    t_mem = (float(pick["weights_bytes"]) + kv_read) / (memory_bandwidth_gbps * 1e9 * HBM_EFFICIENCY)
    t_compute = 2.0 * params * seqs / tp / (peak_tflops * 1e12 * COMPUTE_EFFICIENCY)
    t_comm = 0.0
    if tp > 1:
        t_comm = 2 * layers * TP_ALLREDUCE_US["nvlink" if pick.get("nvlink") else "pcie"] * 1e-6
    step = max(t_mem, t_compute) + t_comm
    return Serving(
        replicas,
        tp,
        seqs,
        step * 1e3,
        "memory" if t_mem >= t_compute else "compute",
        str(pick.get("name")),
        replicas * seqs / step,
        1.0 / step,
    )
