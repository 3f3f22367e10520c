"""The parallelism formulas, one function each, with its paper or documentation in the docstring.

Pure arithmetic on numbers: no rig, no workload objects. Tests reproduce the published values.
"""

from __future__ import annotations

from gpuadvisor.advisor import constants as C

# -- model states -----------------------------------------------------------------------------------------


def zero_model_state_bytes(
    psi: float, stage: int, n: int, k: float = 12.0, weight_bytes: float = 2.0, grad_bytes: float = 2.0
) -> float:
    """Model-state bytes per GPU for ZeRO stage 0 (DDP), 1, 2 or 3 over ``n`` data-parallel GPUs.

    Source: Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
    section 3 and figure 1: DDP (2 + 2 + K)Ψ; P_os 2Ψ + 2Ψ + KΨ/N; P_os+g 2Ψ + (2 + K)Ψ/N; P_os+g+p
    (2 + 2 + K)Ψ/N. K = 12 for mixed-precision Adam. Figure 1 (Ψ = 7.5e9, N = 64): 120, 31.4, 16.6, 1.9 GB.
    """
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0..3, got {stage}")
    w = weight_bytes * psi
    g = grad_bytes * psi
    o = k * psi
    if stage == 0:
        return w + g + o
    if stage == 1:
        return w + g + o / n
    if stage == 2:
        return w + (g + o) / n
    return (w + g + o) / n


# -- activations --------------------------------------------------------------------------------------------


def activation_bytes_per_layer(
    s: int,
    b: int,
    h: int,
    a: int,
    t: int = 1,
    *,
    sequence_parallel: bool = False,
    fused_attention: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes one transformer layer keeps for the backward pass (16-bit activations).

    Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    section 4 (eq. 1-6), per parallelism:
      no parallelism                 s·b·h·(34 + 5·a·s/h)
      tensor parallel t              s·b·h·(10 + 24/t + 5·a·s/(h·t))
      tensor + sequence parallel     s·b·h·(34 + 5·a·s/h)/t
      selective recomputation + SP   34·s·b·h/t
      full recomputation             2·s·b·h (the layer input only)
    ``fused_attention`` drops the 5·a·s/h term (FlashAttention / SDPA never store the score matrices), which is
    what selective recomputation achieves. ``recompute``: none | selective | full.
    """
    sbh = s * b * h
    if recompute == "full":
        return C.FULL_RECOMPUTE_PER_LAYER * sbh
    attention = 0.0 if (fused_attention or recompute == "selective") else C.KORTHIKANTI_ATTENTION * a * s / h
    if t == 1 or sequence_parallel:
        return sbh * (C.KORTHIKANTI_BASE + attention) / t
    return sbh * (C.KORTHIKANTI_TP_REPLICATED + C.KORTHIKANTI_TP_SPLIT / t + attention / t)


def logits_bytes(s: int, b: int, vocab: int, t: int = 1) -> float:
    """fp32 logits kept for the cross-entropy loss: s·b·V·4 bytes, split over t with a vocab-parallel head.

    Source: Korthikanti et al. 2022 section 4.3 (output layer: the embedding output and the logits, s·b·V·4 bytes
    for an fp32 loss).
    """
    return s * b * vocab * C.LOGITS_BYTES / t


# -- compute ------------------------------------------------------------------------------------------------


def training_flops(psi: float, tokens: float, *, recompute: bool = False, frozen: bool = False) -> float:
    """Training FLOPs for ``tokens`` tokens: 6·Ψ·tokens (8·Ψ·tokens with full recomputation).

    Source: Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1 (C ≈ 6N per token:
    forward 2N, backward 4N); Narayanan et al. 2021 (Megatron-LM) for the extra forward of recomputation.
    ``frozen`` (LoRA/QLoRA): the frozen weights need input gradients (2N) but no weight gradients, so 4N
    (6N with recomputation): derived from the same forward/backward split.
    """
    per = C.FLOPS_PER_PARAM_TOKEN_FROZEN if frozen else C.FLOPS_PER_PARAM_TOKEN
    if recompute:
        per += 2
    return per * psi * tokens


def attention_flops(layers: int, seq: int, d_attn: int, tokens: float, *, recompute: bool = False) -> float:
    """The attention-score FLOPs that 6·Ψ·tokens leaves out: 12·L·s·d_attn per token in training.

    Source: Narayanan et al. 2021 (Megatron-LM), section 5.1: each layer's forward pass spends 4·B·s²·h on
    QKᵀ and on attention × V, i.e. 4·s·h per token; training is 3 passes (4 with recomputation). The same
    term as PaLM's MFU accounting (Chowdhery et al. 2022, appendix B: 6N + 12·L·H·Q·T).
    """
    per_token_fwd = 4 * layers * seq * d_attn
    return per_token_fwd * (4 if recompute else 3) * tokens


def megatron_flops_per_iteration(
    batch: int, s: int, layers: int, h: int, vocab: int, *, recompute: bool = True
) -> float:
    """FLOPs of one iteration of B sequences, attention and logits included.

    Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters using
    Megatron-LM", equation 3 (with full recomputation): 96·B·s·L·h²·(1 + s/(6h) + V/(16·h·L)). Without
    recomputation the layers run 3 passes instead of 4: 72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)) (the form
    the paper's accounting gives).
    """
    if recompute:
        return 96 * batch * s * layers * h**2 * (1 + s / (6 * h) + vocab / (16 * h * layers))
    return 72 * batch * s * layers * h**2 * (1 + s / (6 * h) + vocab / (12 * h * layers))


def compute_seconds(flops: float, gpus: int, peak_tflops: float, mfu: float) -> float:
    """Time = FLOPs / (GPUs × peak dense FLOP/s × MFU).

    Source: MFU as defined by Chowdhery et al. 2022 (PaLM), appendix B.
    """
    return flops / (gpus * peak_tflops * 1e12 * mfu)


# -- communication ------------------------------------------------------------------------------------------

BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor: busbw = algbw × factor.

    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md: all-reduce 2(n−1)/n; all-gather and reduce-scatter
    (n−1)/n; broadcast, reduce and send/recv 1.
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    return BUSBW_FACTORS[collective](n)


def collective_seconds(collective: str, size_bytes: float, n: int, busbw_gbps: float) -> float:
    """Time of one collective on ``size_bytes`` (the full buffer, as nccl-tests' size) over n ranks.

    Source: nccl-tests doc/PERFORMANCE.md: algbw = S/t and busbw = algbw × factor, so t = S × factor / busbw.
    One rank alone moves nothing: 0 s.
    """
    if n <= 1 or size_bytes <= 0:
        return 0.0
    return size_bytes * busbw_factor(collective, n) / (busbw_gbps * 1e9)


def ring_latency_seconds(collective: str, n: int, *, spans_nodes: bool) -> float:
    """Latency (alpha) of one ring collective over n ranks: NCCL's tuning model (src/graph/tuning.cc, ring, Simple
    protocol): 8.4 µs base + a per-step latency (5.7 µs over NVLink/PCIe, 6.6 µs over the network) × n − 1 steps
    (2(n − 1) for all-reduce). Small messages are latency-bound: this is what they cost beyond S × factor / busbw."""
    if n <= 1:
        return 0.0
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    step = C.NCCL_STEP_LATENCY_S["net" if spans_nodes else "intra"]
    return C.NCCL_BASE_LATENCY_S + steps * step


def deepspeed_zero2_estimate_bytes(total_params: float, gpus: int, version: str, *, cpu_offload: bool = False) -> float:
    """GPU bytes DeepSpeed's ``estimate_zero2_model_states_mem_needs`` prints, by DeepSpeed version.

    Source: deepspeed/runtime/zero/stage_1_and_2.py. Up to 0.14.2: 4·P + 16·P/N (the ZeRO paper's 16 bytes with
    the 16-bit weights and gradients unsharded); from 0.14.3 (checked in 0.14.3, 0.14.4, 0.15.x, 0.16.0, 0.19.8):
    2·P + 18·P/N ("2 = params_16bit, 18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states").
    With CPU offload: 2·P in every version.
    """
    if cpu_offload:
        return 2 * total_params
    parts = tuple(int(x) for x in version.split(".")[:3])
    if parts >= (0, 14, 3):
        return 2 * total_params + int(18 * total_params / gpus)
    return 4 * total_params + int(16 * total_params / gpus)


def deepspeed_zero3_estimate_bytes(
    total_params: float,
    largest_layer_params: float,
    gpus: int,
    *,
    cpu_offload: bool = False,
    cpu_offload_params: bool = False,
) -> float:
    """GPU bytes DeepSpeed's ``estimate_zero3_model_states_mem_needs`` prints (deepspeed/runtime/zero/stage3.py,
    unchanged from 0.10 to 0.19.8): the largest layer at 4 bytes/param + 18·P/N; with optimizer offload
    + 2·P/N; with parameters offloaded too, the largest layer alone."""
    largest = 4 * largest_layer_params
    if cpu_offload and cpu_offload_params:
        return largest
    if cpu_offload:
        return largest + int(2 * total_params / gpus)
    return largest + int(18 * total_params / gpus)


def pipeline_bubble_fraction(p: int, m: int) -> float:
    """Idle fraction of a 1F1B or GPipe pipeline step: (p − 1)/(m + p − 1).

    Source: Narayanan et al. 2021 (Megatron-LM), section 2.2; Huang et al. 2019 (GPipe).
    """
    if p <= 1:
        return 0.0
    return (p - 1) / (m + p - 1)


# -- inference ------------------------------------------------------------------------------------------------


def kv_cache_bytes_per_token(layers: int, kv_heads: float, head_dim: int, dtype_bytes: float, t: int = 1) -> float:
    """KV-cache bytes one token takes on each GPU: 2 (K and V) × L × kv_heads/t × head_dim × bytes.

    Source: the attention cache of every decoder layer (Pope et al. 2022, "Efficiently Scaling Transformer
    Inference", section 2.1: 2·L·n_kv·d_head per token); vLLM shards KV heads over the tensor-parallel ranks.
    """
    return 2 * layers * (kv_heads / t) * head_dim * dtype_bytes
