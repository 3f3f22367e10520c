"""GPU memory that the printed DeepSpeed config allocates beyond the model states: its communication buckets.

The bucket sizes are chosen here, for the model, and the same numbers are printed in ds_config.json
(snippets.deepspeed_config) and counted in the memory breakdown (memory.breakdown), so the config never
allocates what the memory model leaves out.

Sizes: the values Hugging Face Transformers fills in for DeepSpeed's "auto" (Transformers docs, "DeepSpeed",
ZeRO-3 config: reduce_bucket_size = hidden_size², stage3_prefetch_bucket_size = 0.9·hidden_size²,
stage3_param_persistence_threshold = 10·hidden_size); stages 1-2 use hidden_size² for allgather_bucket_size
too, instead of DeepSpeed's 5e8 default (https://www.deepspeed.ai/docs/config-json/).

Bytes, in the dtype DeepSpeed's buckets use (the engine casts the model's parameters to the bf16/fp16 of the
config, so gradients and buckets are 16-bit; fp32 training: 4 bytes):
  - stages 1-2 with overlap_comm: 4.5 × (allgather_bucket_size + reduce_bucket_size) × bytes per element.
    Transformers docs, "DeepSpeed", ZeRO-2: overlap_comm "uses 4.5x the allgather_bucket_size and
    reduce_bucket_size values. So if they are set to 5e8, this requires a 9GB footprint (5e8 x 2Bytes x 2 x 4.5)".
    That covers the two contiguous reduce buffers overlap_comm double-buffers (deepspeed/runtime/zero/
    stage_1_and_2.py setup_buckets: one reduce_bucket_size buffer, a second one with overlap_comm).
  - stage 3: one contiguous reduce_bucket_size buffer (deepspeed/runtime/zero/stage3.py, the IPG buffer with
    contiguous_gradients). The prefetched parameters (stage3_prefetch_bucket_size = 0.9·h², less than one
    transformer layer's 12·h²) are inside the two gathered units memory.gathered_unit already counts.
"""

from __future__ import annotations

from typing import Any

from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.workload import Workload

OVERLAP_COMM_FACTOR = 4.5  # Transformers docs, DeepSpeed ZeRO-2 overlap_comm footprint
PREFETCH_FRACTION = 0.9  # stage3_prefetch_bucket_size = 0.9 · hidden² (Transformers "auto")
PERSISTENCE_PER_HIDDEN = 10  # stage3_param_persistence_threshold = 10 · hidden (Transformers "auto")
ALIGN = 8  # elements: DeepSpeed asserts allgather_bucket_size is a multiple of its NCCL alignment (2)


def prints_deepspeed_config(lay: Layout) -> bool:
    """Whether the advisor prints a DeepSpeed config for this layout (ZeRO, no Megatron TP/PP, not HSDP)."""
    return lay.zero_stage >= 1 and lay.tp == 1 and lay.pp == 1 and not lay.hybrid


def launches_deepspeed(lay: Layout) -> bool:
    """Whether the layout is launched with DeepSpeed (ZeRO-1, CPU offload): then its buckets are on every GPU.
    ZeRO-2/3 launch with FSDP and print the DeepSpeed config as an alternative (the snippet says what its
    buckets add); layouts built elsewhere (published FSDP runs) have no DeepSpeed framework and no buckets."""
    return prints_deepspeed_config(lay) and lay.framework.startswith("DeepSpeed")


def _align(n: float) -> int:
    return max(ALIGN, int(n) // ALIGN * ALIGN)


def bucket_sizes(w: Workload, lay: Layout) -> dict[str, Any]:
    """The zero_optimization bucket settings printed in ds_config.json for this layout (elements)."""
    h2 = w.arch.hidden * w.arch.hidden
    out: dict[str, Any] = {"overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": _align(h2)}
    if lay.zero_stage in (1, 2):
        out["allgather_bucket_size"] = _align(h2)
    if lay.zero_stage == 3:
        out["stage3_prefetch_bucket_size"] = _align(PREFETCH_FRACTION * h2)
        out["stage3_param_persistence_threshold"] = PERSISTENCE_PER_HIDDEN * w.arch.hidden
    return out


def bucket_element_bytes(w: Workload) -> int:
    return 4 if w.precision == "fp32" else 2


def bucket_bytes(w: Workload, lay: Layout) -> float:
    """GPU bytes the printed DeepSpeed config's buckets take on each GPU when it is the launch."""
    if not prints_deepspeed_config(lay):
        return 0.0
    z = bucket_sizes(w, lay)
    e = bucket_element_bytes(w)
    if lay.zero_stage in (1, 2):
        factor = OVERLAP_COMM_FACTOR if z["overlap_comm"] else 1.0
        return factor * (z["allgather_bucket_size"] + z["reduce_bucket_size"]) * e
    return float(z["reduce_bucket_size"] * e)


def deepspeed_buffer_bytes(w: Workload, lay: Layout) -> float:
    """What the memory breakdown counts: the buckets of a DeepSpeed launch, 0 for any other."""
    return bucket_bytes(w, lay) if launches_deepspeed(lay) else 0.0
