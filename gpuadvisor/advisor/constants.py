"""Every multiplier and assumption the advisor uses, each with where it comes from.

Units: bytes; GB = 1e9 bytes, GiB = 2**30 bytes (the advisor reports memory in GiB, as nvidia-smi's MiB
does, and bandwidth in GB/s as nccl-tests does).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.physics import links

GB = 1e9
GiB = 2**30

# -- bytes per parameter of the model states ------------------------------------------------------------


@dataclass(frozen=True)
class StateBytes:
    """How many bytes per parameter each model-state component takes, and who counts that way.

    weights: the copy the model computes with; grads: its gradient; master: the fp32 master copy the
    optimizer updates (counted with the optimizer states, as the ZeRO paper's K does); the optimizer's own
    states come from ``OptimizerBytes``.
    """

    key: str
    weights: float
    grads: float
    master: float
    source: str

    def per_param(self, optimizer_states: float) -> float:
        return self.weights + self.grads + self.master + optimizer_states


# The ZeRO paper's mixed-precision accounting: 2 (fp16/bf16 weights) + 2 (16-bit grads) + K (fp32 master 4 +
# Adam momentum 4 + variance 4 = 12) = 16 bytes/param. The sharding formulas of PARALLELISM.md are written
# in it; DeepSpeed's ZeRO-2 estimator (estimate_zero2_model_states_mem_needs: 4 + 16/N) counts the same way.
MIXED_16BIT_GRADS = StateBytes(
    "16",
    weights=2,
    grads=2,
    master=4,
    source="Rajbhandari et al. 2019 (ZeRO), section 3.1 and figure 1: 2Ψ + 2Ψ + 12Ψ = 16Ψ; DeepSpeed ZeRO-2 estimator",
)
# 18 bytes/param: gradients kept (or accumulated) in fp32. Megatron-LM's distributed-optimizer table lists
# "float16 param, fp32 grads: 18"; DeepSpeed's ZeRO-3 estimator uses 18/N; the Hugging Face Transformers
# "GPU memory usage" page counts 6 (fp32 + fp16 weights) + 4 (fp32 grads) + 8 (Adam) = 18.
MIXED_FP32_GRADS = StateBytes(
    "18",
    weights=2,
    grads=4,
    master=4,
    source="Megatron-LM docs, distributed optimizer table ('float16 param, fp32 grads: 18'); DeepSpeed "
    "estimate_zero3_model_states_mem_needs (18 bytes/param); Hugging Face Transformers 'GPU memory usage' (6 + 4 + 8)",
)
# 20 bytes/param: 16-bit grads plus an fp32 "main grad" copy the optimizer reads.
MIXED_MAIN_GRADS = StateBytes(
    "20",
    weights=2,
    grads=6,
    master=4,
    source="Megatron-LM docs, distributed optimizer table ('float16 param, float16 grads: 20': 16-bit grads plus fp32 "
    "main grads)",
)
# Plain fp32 training: what torch allocates for an fp32 model and torch.optim.AdamW, measured to the byte in
# tests/test_advisor_torch.py (4 weights + 4 grads + 8 Adam states; Megatron-LM's table: "fp32 param, fp32 grads: 16").
FP32_STATES = StateBytes(
    "fp32",
    weights=4,
    grads=4,
    master=0,
    source="torch fp32 model + torch.optim.AdamW, counted from the tensors torch allocates (4 B weights + 4 B grads + "
    "8 B exp_avg/exp_avg_sq); Megatron-LM table 'fp32 param, fp32 grads: 16'",
)
# Pure bf16 training: weights and gradients in bf16, no fp32 master; torch optimizers keep their states in the
# parameters' dtype, so AdamW's two moments take 2 + 2 bytes (torchtune's full_finetune_single_device with
# dtype: bf16; how an 8B model's full fine-tuning fits one 24 GB card with 8-bit/paged AdamW and the optimizer
# step fused into backward).
PURE_BF16 = StateBytes(
    "bf16",
    weights=2,
    grads=2,
    master=0,
    source="pure bf16 (torchtune dtype=bf16): bf16 weights and grads, optimizer states in the parameters' dtype "
    "(torch.optim keeps "
    "exp_avg/exp_avg_sq like the parameter); 8-bit optimizers 1 byte per state (bitsandbytes)",
)
STATE_CONVENTIONS = {s.key: s for s in (MIXED_16BIT_GRADS, MIXED_FP32_GRADS, MIXED_MAIN_GRADS, PURE_BF16)}


@dataclass(frozen=True)
class OptimizerBytes:
    """Optimizer states per parameter, not counting the fp32 master copy."""

    key: str
    states: float
    per_tensor: float  # extra bytes per parameter tensor (torch's "step" counter)
    source: str
    paged: bool = False  # states in CUDA unified memory, evicted to host RAM under memory pressure


ADAMW = OptimizerBytes(
    "adamw",
    states=8,
    per_tensor=4,
    source="Adam/AdamW momentum + variance in fp32 (Kingma & Ba 2015; ZeRO paper K = 12 with the fp32 master); "
    "torch.optim.AdamW also keeps a 0-dim fp32 'step' tensor per parameter tensor (torch/optim/adamw.py)",
)
SGD_MOMENTUM = OptimizerBytes(
    "sgd",
    states=4,
    per_tensor=0,
    source="SGD with momentum: one fp32 momentum buffer (ZeRO's K = 4 + 4 with the fp32 master, Rajbhandari et al. "
    "2019, section 3.1)",
)
ADAM_8BIT = OptimizerBytes(
    "adam8bit",
    states=2,
    per_tensor=0,
    source="bitsandbytes 8-bit Adam: both states in 8 bits (Dettmers et al. 2022, '8-bit Optimizers via Block-wise "
    "Quantization'); with the fp32 master K ≈ 2 + 4 (ZeRO's notation, Rajbhandari et al. 2019). Block-wise scale "
    "constants not counted",
)
PAGED_ADAM_8BIT = OptimizerBytes(
    "paged-adam8bit",
    states=2,
    per_tensor=0,
    paged=True,
    source="bitsandbytes PagedAdamW8bit: 8-bit states in CUDA unified memory, paged out to host RAM when the GPU runs "
    "short "
    "(Dettmers et al. 2023, QLoRA, section 3 'paged optimizers'); torchtune's 8B full fine-tune on one 24 GB card uses "
    "it",
)
OPTIMIZERS = {o.key: o for o in (ADAMW, SGD_MOMENTUM, ADAM_8BIT, PAGED_ADAM_8BIT)}
OPTIMIZER_ALIASES = {
    "adam": "adamw",
    "adamw": "adamw",
    "sgd": "sgd",
    "adam8bit": "adam8bit",
    "adamw8bit": "adam8bit",
    "8bit-adam": "adam8bit",
    "paged-adam8bit": "paged-adam8bit",
    "paged-adamw8bit": "paged-adam8bit",
}

# Bytes per element of each precision.
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
# The torch dtype the launch lines and configs name for each --precision (fp8 runs its fp8 GEMMs inside bfloat16:
# the weights, autocast and the servers' --dtype stay bfloat16).
TORCH_DTYPE = {"bf16": "bfloat16", "fp8": "bfloat16", "fp16": "float16", "fp32": "float32"}

# LoRA adapters: PEFT casts 16-bit adapter weights to fp32 by default (LoraConfig / get_peft_model
# autocast_adapter_dtype=True), so each trainable parameter has fp32 weight 4 + fp32 grad 4 + Adam 8 = 16.
LORA_ADAPTER_BYTES = StateBytes(
    "lora",
    weights=4,
    grads=4,
    master=0,
    source="PEFT: adapter weights autocast to fp32 (autocast_adapter_dtype=True); fp32 grads; optimizer states as "
    "chosen",
)
LORA_DEFAULT_RANK = (
    16  # QLoRA paper's LLaMA runs use r = 64; 16 is the PEFT examples' common value: stated as a default
)
# QLoRA: NF4 base weights, 4 bits per parameter plus double-quantized block constants of 0.127 bits per
# parameter (Dettmers et al. 2023, "QLoRA", section 3: double quantization cuts constants from 0.5 to 0.127 bits).
QLORA_BITS_PER_PARAM = 4 + 0.127

# -- activations ----------------------------------------------------------------------------------------

# Korthikanti et al. 2022, section 4: per layer, 16-bit activations, bytes = s·b·h·(34 + 5·a·s/h); the
# 5·a·s/h term is the attention score matrices, which fused attention (FlashAttention, PyTorch SDPA) never
# stores. The advisor assumes fused attention unless told otherwise.
KORTHIKANTI_BASE = 34
KORTHIKANTI_ATTENTION = 5
KORTHIKANTI_TP_REPLICATED = 10  # the part of the 34 that tensor parallelism alone does not split
KORTHIKANTI_TP_SPLIT = 24
FULL_RECOMPUTE_PER_LAYER = 2  # full recomputation keeps the layer input: 2·s·b·h bytes
LOGITS_BYTES = 4  # fp32 logits for the loss: s·b·V·4 (the loss upcasts the logits to fp32)
# What the loss holds per logit (token × vocabulary entry) at its peak, by recipe:
#  full: the bf16 logits (2), their fp32 upcast for the cross-entropy (4) and its fp32 gradient (4) live together:
#    about 10 bytes (HF Transformers, torchtitan); torchtune's table (Llama 3.2 3B, bs 2, seq 4096, compiled)
#    measures 8.1 GiB saved by chunking 1.05e9 logits: 8.28 bytes more than chunked's 3, so 11.3 (FITTED there).
#  chunked (torchtune CEWithChunkedOutputLoss, 8 chunks): the bf16 logits of every chunk (2) + one chunk's fp32
#    upcast and gradient (8/8 = 1): 3 bytes.
# Eager RMSNorm written as PyTorch ops (x.float() * rsqrt(mean(x²) + eps), cast back, times the weight: Hugging Face
# transformers' LlamaRMSNorm, torchtune's RMSNorm): autograd saves the fp32 input (4 bytes per element) and the
# 16-bit normalised tensor (2) where a fused norm keeps the 16-bit input (2): 4 bytes more per element of h.
# Counted from the saved tensors of the autograd graph; measured on an H100 with transformers 5.17 (Llama 3.2 1B
# shape: 53·h per token and layer kept, as this count gives).
UPCAST_RMSNORM_EXTRA_BYTES = 4
UPCAST_RMSNORM_STACKS = ("pytorch", "deepspeed")

LOSS_LOGIT_BYTES = {"full": 11.3, "chunked": 3.0}

# -- overheads ------------------------------------------------------------------------------------------

# Two memory figures are predicted per GPU:
#  - torch's peak allocated (torch.cuda.max_memory_allocated: what torchtune logs as peak memory active/alloc):
#    the model states, activations, loss buffers and gathered units, nothing else;
#  - what nvidia-smi shows: torch's reserved pool (the caching allocator keeps freed blocks: ALLOCATOR_RESERVE_FRACTION
#    above the allocated peak, assumed) + the CUDA context of the process (CUDA_CONTEXT_BYTES, assumed: a torch 2.x
#    process with CUDA 12's lazy module loading) + NCCL's buffers when several GPUs talk (NCCL_BUFFER_BYTES:
#    NCCL_BUFFSIZE 4 MiB per channel, peer and protocol, assumed). The fit check uses the nvidia-smi figure
#    against what CUDA reports (NVML's total less the driver's reservation, DRIVER_RESERVED_BYTES).
CUDA_CONTEXT_BYTES = int(0.5 * GiB)
NCCL_BUFFER_BYTES = int(0.5 * GiB)
ALLOCATOR_RESERVE_FRACTION = 0.05
# A candidate "fits with margin" when at least this fraction of the GPU's memory is left after all of the
# above: the advisor prefers those.
MARGIN_FRACTION = 0.05

# FSDP keeps the unit it computes with and the next one it prefetches (backward_prefetch=BACKWARD_PRE
# "increases memory usage by up to one extra unit", torch.distributed.fsdp docs), plus the unsharded
# gradient of the unit before its reduce-scatter.
GATHERED_UNITS_IN_FLIGHT = 2

# -- compute --------------------------------------------------------------------------------------------

# MFU is defined in advisor.timing (PaLM appendix B: 6N + 12·L·s·d_attn per token over the datasheet peak);
# without --mfu the step time is predicted from the components below, and the MFU it implies is reported.
# Per GPU generation, in gpuadvisor/catalog/generations.toml, each with its source: the MFU published runs reach
# (published_mfu, for reference in the output); the sustained dense matmul rate as a fraction of the datasheet peak,
# "maximum achievable matmul FLOPS" (gemm, fp8_gemm: S. Bekman's MAMF table; assumed where none is published); the
# FlashAttention-2 class kernels' fraction of peak (attention: Dao 2023, Shah et al. 2024). A card with its own
# measured rate in the catalog (GpuSpec.mamf_tflops, with its source) runs at that figure instead, its attention
# kernels likewise (timing.rates). A scan with `bench --compute` uses the GPU's own measured matmul TFLOP/s instead
# of either.
#
# Board power caps the sustained tensor rate: a card whose datasheet peak needs more than its power limit runs its
# GEMMs at lower clocks (the H100 at 500 W of Meta's Grand Teton, the 300 W RTX 6000 Ada). The capped rate is the
# generation's fitted TFLOP/s per watt (FitParams.tflops_per_watt) × watts ** POWER_CAP_EXPONENT. The exponent is 1
# (a fixed energy per FLOP): the published figures allow no less than about 0.8, since with 1/2 the rate Grand
# Teton's 500 W H100s sustain would cap the 700 W H100 SXM below its published 794.5 TFLOP/s MAMF (Bekman,
# ml-engineering); cards far below the fitted ones (L4 at 72 W) are then predicted on the slow side. The coefficient
# is FITTED by benchmarks/fit_advisor.py on the generation's runs held below its top board power (into
# gpuadvisor/advisor/fitted.toml, with the lowest board power among them, FitParams.power_cap_min_watts: below it the
# cap is not extrapolated, as for the 72 W L4); a generation without such runs has no cap. A card with its own
# measured rate (GpuSpec.mamf_tflops, at its datasheet power) follows the same law through that point instead: its
# figure × watts / datasheet watts below its datasheet power. A scan's measured matmul rate (bench --compute)
# replaces all of this.
POWER_CAP_EXPONENT = 1.0
FLASH_BACKWARD_PASSES = (
    2.5  # FlashAttention's backward: 5 matmuls (QKᵀ recomputed) to the forward's 2 (Dao 2023, section 3.1)
)
# FlashAttention-1 class kernels (Workload.attention_kernel "flash1": FlashAttention-1, and Tri Dao's Triton
# FlashAttention, flash_attn/flash_attn_triton.py, which llm-foundry's MPT benchmarks run: attn_impl "triton", the
# default of scripts/train/benchmarking/submit_benchmarks.py): their forward + backward rate as a fraction of
# FlashAttention-2's. Dao 2023 ("FlashAttention-2", section 4.1): FlashAttention-2 is 1.7-3.0x faster than
# FlashAttention and 1.3-2.5x faster than FlashAttention in Triton, the Triton port's own notes: its forward +
# backward "slightly slower" than FlashAttention-1's CUDA. Prior 0.5 (the paper's "2x"); FITTED by
# benchmarks/fit_advisor.py on the runs that use such a kernel, into gpuadvisor/advisor/fitted.toml. The MPT tables
# show why it matters: from 8k to 65k tokens the step time per token grows linearly with the sequence (the
# attention), at a slope of 100 TFLOP/s of causal attention on A100 and 184 on H100 (4.5 forward passes with
# recomputation), about 0.55 of FlashAttention-2's 172 / 346.
#
# Ring attention (context parallelism, Liu et al. 2023) as PyTorch runs it (torch.distributed.tensor.experimental
# context_parallel, which torchtitan uses): every one of the cp - 1 off-diagonal steps of each attention call is a
# separate SDPA call on a half block (the round-robin load balance), its output merged into the running one in fp32
# by eager elementwise kernels (the log-sum-exp merge; in the backward the dK / dV accumulated in fp32, copied and
# passed around the ring by all-to-all), and torchtitan's Llama repeats K and V to every query head before it.
# FitParams.ring_attention_factor: the rate of those off-diagonal steps as a fraction of the fused kernel's on the local
# (diagonal) block. Prior 1 (no loss); FITTED by benchmarks/fit_advisor.py on the published PyTorch context-parallel
# runs (torchtitan's Llama 3.1 8B at 64k-256k tokens, whose step grows 4.5 s from 32k to 64k tokens but 17.7 s from
# 64k to 128k and 29.2 s to 256k: the ring's share of the attention grows from 1/2 at cp 2 to 7/8 at cp 8). It
# fits to about 1/2: each off-diagonal step costs a full (s/cp)² block rather than the balanced half block, what the
# slowest rank of a ring without the load balance computes (the counted alternatives, the K/V exchange unhidden and
# the fp32 merge traffic, each add under a tenth of the attention). Megatron-Core's context parallel (Transformer
# Engine) is not affected.
# Memory bandwidth a device-to-device copy reaches of the datasheet: our own H100 (tests/fixtures/h100-vm,
# bench-compare.txt): 1,490.8 GB/s copied = 2,982 GB/s read + write of the 3,350 GB/s datasheet: 0.89.
MEMORY_BANDWIDTH_EFFICIENCY = 0.89
# The optimizer step (torch's fused AdamW: multi_tensor_apply over the parameter list) reaches less of it than a
# large copy: on our H100 80GB HBM3 (tests/fixtures/h100-vm/step-profile.json, torch 2.11, bf16 parameters and
# states, 14 bytes per parameter) the kernel moved 2.19, 2.16 and 2.19 TB/s for 1.2, 3.1 and 6.1 B parameters:
# 0.73 of the 2.98 TB/s the copy reaches. Applied to the achievable (or measured) copy bandwidth.
OPTIMIZER_STEP_BANDWIDTH_FRACTION = 0.73
UNKNOWN_MEMORY_GBPS = 1000.0
# Memory-bound work per training step (norms, activation functions, residual adds, rotary embeddings, dtype
# casts, dropout where present, transposes around attention): bytes moved per byte of activation a layer stores
# (Architecture.activation_bytes_per_token_layer), for forward + backward in eager PyTorch. FITTED by
# benchmarks/fit_advisor.py (one constant for every GPU, on the eager PyTorch runs of the calibration cases) into
# gpuadvisor/advisor/fitted.toml. About 24 counted: every elementwise op reads and writes its tensors, norms in fp32.
MEMORY_BOUND_PASSES = 3.0  # the forward + backward those bytes are for (backward ≈ 2 forwards)
# Unfused attention (Megatron-LM before FlashAttention): the a·s score elements per token and layer go through
# memory in fused softmax/dropout kernels: forward writes the scores (2), the softmax reads them and writes the
# probabilities and the dropout mask (2 + 2 + 1), A·V reads them (2); backward about 13 more: 22 bytes per
# score element for forward + backward (counted, not fitted).
UNFUSED_ATTENTION_BYTES_PER_SCORE = 22.0
# torchtitan's selective (op-level) checkpointing saves every other matmul output: half the forward matmuls and
# the forward's memory-bound ops are recomputed.
SELECTIVE_RECOMPUTE_MATMUL_PASSES = 0.5
# Fused kernels: the fraction of that memory-bound traffic (and of fp8's casts) a stack leaves, per training stack
# (Workload.stack, --stack): eager PyTorch 1 (the definition); torch.compile (Inductor fuses pointwise ops and the
# casts into their neighbours) FitParams.compile_memory_bound_factor, fitted on the compiled PyTorch runs
# (torchtitan, torchtune); Megatron-Core + Transformer Engine (fused LayerNorm+cast+linear, fused SwiGLU, RoPE,
# bias-dropout-add and cross-entropy kernels) FitParams.megatron_memory_bound_factor, fitted on NVIDIA's NeMo /
# Megatron-Bridge performance tables; DeepSpeed runs the model's own eager PyTorch kernels (1, as eager); JAX/XLA
# fuses elementwise ops as Inductor does: the compile factor, ASSUMED (no published JAX GPU run in the calibration).
# Both fitted by benchmarks/fit_advisor.py into gpuadvisor/advisor/fitted.toml.
EAGER_MEMORY_BOUND_FACTOR = 1.0
# The loss's memory traffic per logit: bf16 logits written and read, the fp32 upcast written, softmax read and
# written, its gradient written and cast back: ~24 bytes (counted from the ops; not fitted).
LOSS_BYTES_PER_LOGIT = 24.0
# fp8 linears (torchao float8 / Transformer Engine, dynamic scaling): each linear's input and grad_output is read
# in 16-bit and written in fp8 every pass: 3 bytes per element (counted; amax reductions fused by compile).
FP8_CAST_BYTES_PER_ELEMENT = 3.0
# QLoRA: every frozen NF4 weight is dequantised to bf16 before each matmul (bitsandbytes / torchao NF4Tensor):
# bytes moved per parameter and pass. FITTED by benchmarks/fit_advisor.py on the QLoRA runs (torchtune, Answer.AI
# fsdp_qlora) into gpuadvisor/advisor/fitted.toml. The bytes of a pure bandwidth-bound dequantisation would be
# 0.5 read + 2 written + 2 read again by the matmul = 4.5.
# Floor per micro-batch: eager PyTorch launches about 90 kernels per transformer layer (forward ~30, backward ~60)
# and the host spends ~10 µs on each (dispatcher + launch; He 2022, "Making Deep Learning Go Brrrr From First
# Principles": overhead-bound below a few hundred µs per op): assumed, it matters only for tiny micro-batches.
OPS_PER_LAYER = 90
# LoRA adapters in eager PyTorch (PEFT's LoRA layer over a bitsandbytes Linear4bit, peft/tuners/lora/bnb.py
# Linear4bit.forward): besides the rank-r GEMMs' own reads and writes (2 bytes per input and per output element in
# each pass, counted in advisor.timing), each adapted linear clones the base output ("for 4bit, we need to
# defensively clone here"), applies dropout to its input (bf16 in and out, a 1-byte mask), scales the adapter
# output and adds it to the base output; backward runs the scale, the dropout mask and the sum of the two input
# gradients as separate kernels. Bytes per element of the linear's (input, output) row beyond the GEMMs,
# counted from those ops (bf16 2 bytes):
#  forward: input: dropout read 2 + write 2 + mask 1 = 5; output: clone 2 + 2, scale 2 + 2, add 2 + 2 + 2 = 14;
#  backward: input: dropout grad 2 + mask 1 + 2, the second input gradient written 2 and summed 2 + 2 + 2 = 11;
#  output: the scale's gradient 2 + 2 = 4.
# torch.compile fuses these elementwise ops into their neighbours (not counted on a compiled stack).
LORA_FORWARD_BYTES = (5.0, 14.0)
LORA_BACKWARD_BYTES = (11.0, 4.0)
OP_LAUNCH_SECONDS = 10e-6
# Global batch when the user gives none: 0.5M tokens per optimizer step, the smallest batch of the GPT-3
# family (Brown et al. 2020, table 2.1: 0.5M tokens for 125M-1.3B models, up to 3.2M for 175B), rounded to
# 2**19 tokens; never fewer sequences than one micro-batch per GPU.
DEFAULT_GLOBAL_BATCH_TOKENS = 2**19
FLOPS_PER_PARAM_TOKEN = 6  # Kaplan et al. 2020: forward 2, backward 4
FLOPS_PER_PARAM_TOKEN_RECOMPUTE = 8  # plus one more forward with full activation recomputation
FLOPS_PER_PARAM_TOKEN_FROZEN = 4  # LoRA/QLoRA: forward 2 + input gradients 2; frozen weights get no weight gradient

# -- communication --------------------------------------------------------------------------------------

# What an NCCL all-reduce's busbw reaches as a fraction of the raw per-direction link bandwidth, when the
# rig has no measurement: one set of figures for the advisor and the bandwidth rules, with their sources, in
# gpuadvisor.physics.links (NVLink 370/450 from nccl-tests#212; PCIe 0.78 from the 6x RTX 4090 nccl-tests sample;
# no P2P halves it, assumed).
PCIE_BUSBW_EFFICIENCY = links.NCCL_PCIE_EFFICIENCY
NVLINK_BUSBW_EFFICIENCY = links.NCCL_NVLINK_EFFICIENCY
NO_P2P_FACTOR = links.NCCL_NO_P2P_FACTOR
# Bandwidth across nodes when the user does not give it: 25 GB/s busbw per GPU (one 200 Gb/s InfiniBand HDR
# or Ethernet port per GPU). An assumption the output states; pass --inter-node-gbps with your measurement.
DEFAULT_INTER_NODE_GBPS = 25.0
# Collective latency (alpha): NCCL's own tuning model (src/graph/tuning.cc, ring algorithm, Simple protocol):
# a base latency of 8.4 µs per collective plus a per-step latency of 5.7 µs over NVLink/PCIe and 6.6 µs over
# the network; a ring collective over n ranks takes n - 1 steps (all-reduce 2(n - 1)).
NCCL_BASE_LATENCY_S = 8.4e-6
NCCL_STEP_LATENCY_S = {"intra": 5.7e-6, "net": 6.6e-6}
# FSDP / ZeRO-3 prefetches each unit's all-gather under the previous unit's compute, but the collectives and the
# compute share the GPU (NCCL's kernels take SMs and memory bandwidth): of the shorter of the two, this fraction
# overlaps (FitParams.sharded_overlap). FITTED by benchmarks/fit_advisor.py on the sharded (FSDP / ZeRO-3) runs.
# DeepSpeed's ZeRO-3 gathers and reduce-scatters parameters in buckets (stage3_prefetch_bucket_size) launched from
# Python module hooks, not as one flat FSDP unit per layer: its collectives take
# FitParams.deepspeed_sharded_comm_factor times NCCL's ring time over the same bytes, and
# FitParams.deepspeed_sharded_overlap of the shorter of them and the compute overlaps. Both FITTED by
# benchmarks/fit_advisor.py on the DeepSpeed ZeRO-3 runs.
# PyTorch DDP buckets gradients (bucket_cap_mb=25 by default) and overlaps each bucket's all-reduce with the
# rest of the backward pass; the last bucket cannot be hidden.
DDP_BUCKET_BYTES = 25 * 2**20
# Stacks whose tensor parallelism has no sequence parallelism (Megatron-DeepSpeed, the BLOOM-era fork): per layer and
# token KORTHIKANTI_UNSPLIT_BYTES·h of the activations stay whole on every tensor-parallel rank (Korthikanti et al.
# 2022, eq. 2: sbh·(10 + 24/t + 5as/(ht)); the 10 are the layer norms' inputs, the dropout masks and outputs).
NO_SEQUENCE_PARALLEL_STACKS = ("deepspeed",)
KORTHIKANTI_UNSPLIT_BYTES = 10
# Host RAM a CPU-offload plan may use, as a fraction of the rig's total: the rest for the OS, the data
# loader's workers and the page cache (an allowance). DeepSpeed's estimators already pad the offloaded states
# by 1.5 ("additional_buffer_factor", their default) for pinned staging buffers.
HOST_RAM_USABLE_FRACTION = 0.9
OFFLOAD_HOST_BUFFER_FACTOR = 1.5
# DeepSpeed CPU-Adam is memory-bound: it reads and writes fp32 master, momentum and variance (12 B each way)
# and reads the fp32 gradient and writes the 16-bit weight: ~30 bytes per parameter per step. Host memory
# bandwidth assumed 100 GB/s (a few DDR4/DDR5 channels): an assumption, stated in the output.
CPU_ADAM_BYTES_PER_PARAM = 30
HOST_MEMORY_GBPS = 100.0

# Data-parallel scaling efficiency practitioners accept (PARALLELISM.md): ≥ 0.9 on 2 GPUs, ≥ 0.85 on 4,
# ≥ 0.8 on 8 and beyond.
TARGET_EFFICIENCY = {1: 1.0, 2: 0.90, 4: 0.85, 8: 0.80}
# A simpler strategy is preferred when its efficiency is within this much of the best candidate's.
EFFICIENCY_TOLERANCE = 0.05


def target_efficiency(gpus: int) -> float:
    best = 1.0
    for n, eff in sorted(TARGET_EFFICIENCY.items()):
        if gpus >= n:
            best = eff
    return best


# -- inference (vLLM) -----------------------------------------------------------------------------------

# vLLM's --gpu-memory-utilization default: the fraction of each GPU's memory vLLM may take. vLLM applies it to
# the total CUDA reports (torch.cuda.mem_get_info), which is NVML's total less the memory the driver reserves.
VLLM_GPU_MEMORY_UTILIZATION = 0.90
# Driver-reserved framebuffer that CUDA never sees: nvidia-smi -q "FB Memory Usage / Reserved" is 480 MiB on
# the H100 of tests/fixtures/h100-vm (81559 MiB total, 81079 MiB free = the 79.18 GiB vLLM logs on an H100),
# 454 MiB on 8x H100 SXM, 763 on A100 SXM4 80GB, 665 on A40, 556 on L4, 422 on RTX 3090, 303 on RTX 4060 Ti
# (shared/samples/smi-q_*): the H100 fixture's figure, the median of these, is used for every GPU.
DRIVER_RESERVED_BYTES = 480 * 2**20
# vLLM sizes its profile pass by its scheduler defaults for `vllm serve` (vllm/engine/arg_utils.py
# get_batch_defaults): GPUs with at least 70 GiB that are not A100s get max_num_batched_tokens 8192 and
# max_num_seqs 1024; the others 2048 and 256. (tokens, sequences):
VLLM_LARGE_GPU_BYTES = 70 * GiB
VLLM_PROFILE_LARGE = (8192, 1024)
VLLM_PROFILE_DEFAULT = (2048, 256)
# The profile run ends with a dummy sampler pass over the last position of max_num_seqs sequences
# (vllm/v1/worker/gpu_model_runner.py profile_run / _dummy_sampler_run): full-vocabulary logits in fp32, their
# softmax, sort and top-k/top-p buffers. Its peak, fitted on vLLM's own "peak activation memory" log lines on an
# H100 (1024 sequences; llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md): Llama-3.1-8B
# 4.76 GiB, Llama-3.3-70B-FP8 TP=2 4.84, Qwen3-0.6B 5.56, Qwen3-32B 5.64, gpt-oss-20b 7.38 GiB, each
# = max_num_seqs × vocab × 38.3-38.5 bytes + the profile's hidden states (tokens × hidden × 2). Every TP rank
# samples the whole vocabulary (the 70B TP=2 figure is not halved).
VLLM_SAMPLER_BYTES_PER_LOGIT = 38.4
# Memory vLLM counts outside torch's allocator (CUDA context, NCCL and custom all-reduce buffers), from the same
# logs: 0.13 GiB with one GPU, 0.55 GiB per GPU at TP=2. CUDA graphs are captured after the KV cache is
# allocated, in the (1 - gpu_memory_utilization) slack, so they are not subtracted.
VLLM_NON_TORCH_BYTES_SINGLE = int(0.13 * GiB)
VLLM_NON_TORCH_BYTES_PARALLEL = int(0.55 * GiB)
VLLM_BLOCK_TOKENS = 16  # vLLM's default KV-cache block size
# --vllm-version 0.21: CUDA graphs are captured before the KV cache is sized and their memory is subtracted from the
# budget. Their size is an ASSUMPTION (no calibration case yet): about 0.5 GiB for a 7-8B model at vLLM's default
# capture sizes (vLLM logs "Graph capturing finished in N secs, took X GiB"; commonly 0.3-1 GiB).
VLLM_CUDA_GRAPH_BYTES = int(0.5 * GiB)
