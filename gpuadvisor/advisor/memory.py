"""Memory per GPU of one training layout: model states, activations, the gathered unit, overhead."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor.workload import Workload


@dataclass
class Layout:
    """How the model is split: data-parallel sharding, tensor and pipeline parallel sizes, offload."""

    key: str
    name: str
    framework: str
    rank: int  # complexity: lower is simpler
    dp: int
    tp: int = 1
    pp: int = 1
    zero_stage: int = 0  # 0 DDP, 1, 2, 3
    hybrid: bool = False  # HSDP: shard within a node, replicate across nodes
    shard_group: int = 1  # GPUs a ZeRO stage shards over
    offload: str = "none"  # none | optimizer | optimizer+params
    dp_spans_nodes: bool = False
    pp_across_nodes: bool = False
    last_resort: bool = False  # shown, but picked only when nothing else fits (tensor parallel over PCIe, CPU offload)
    vpp: int = 1  # virtual pipeline stages per rank (interleaved 1F1B, Narayanan et al. 2021)
    cp: int = 1  # context parallel: each sequence split over cp GPUs (ring attention)
    torch_ring: bool = False  # the context parallel of torchtitan (PyTorch's ring attention), not Megatron-Core's
    ep: int = 1  # expert parallel: a MoE layer's experts split over ep GPUs
    forced: bool = False  # given with advise --layout: evaluated exactly as written


@dataclass
class MemoryBreakdown:
    """Per GPU. ``allocated_bytes``: torch's peak allocated (torch.cuda.max_memory_allocated); ``total_bytes``: what
    nvidia-smi shows (allocated + the caching allocator's reserve + CUDA context + NCCL buffers), the fit check's
    figure."""

    params_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float  # the layers' stored activations and the loss's logits
    gathered_bytes: float
    overhead_bytes: float  # allocator reserve + CUDA context + NCCL buffers
    host_bytes: float  # per node, CPU offload only
    loss_bytes: float = 0.0  # the part of activations_bytes that is the loss's logits
    buffers_bytes: float = 0.0  # communication buckets the printed launch config allocates (config_memory)

    @property
    def allocated_bytes(self) -> float:
        return (
            self.params_bytes
            + self.grads_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.gathered_bytes
            + self.buffers_bytes
        )

    @property
    def total_bytes(self) -> float:
        return self.allocated_bytes + self.overhead_bytes

    def to_dict(self) -> dict[str, float]:
        d = {k: round(v) for k, v in asdict(self).items()}
        d["total_bytes"] = round(self.total_bytes)
        d["torch_peak_allocated_bytes"] = round(self.allocated_bytes)
        d["nvidia_smi_bytes"] = round(self.total_bytes)
        return d


@dataclass(frozen=True)
class StateSplit:
    """Bytes per parameter of each state for this workload: frozen base + trainable part."""

    frozen_weight_bytes: float  # per frozen parameter (LoRA base), 0 for full training
    weights: float
    grads: float
    optimizer: float  # master + optimizer states
    per_tensor: float  # optimizer bytes per trainable parameter tensor (torch's step counter)


def state_split(w: Workload) -> StateSplit:
    """Bytes per parameter of weights, gradients and optimizer states, from the named constants."""
    opt = w.optimizer_bytes()
    states = opt.states * (0.5 if w.pure_bf16 and opt.key not in ("adam8bit", "paged-adam8bit") else 1.0)
    if w.finetune == "full":
        conv = w.state_convention()
        return StateSplit(0.0, conv.weights, conv.grads, conv.master + states, opt.per_tensor)
    if w.finetune == "qlora":
        frozen = C.QLORA_BITS_PER_PARAM / 8
    else:
        frozen = float(C.DTYPE_BYTES["fp16" if w.precision == "fp8" else w.precision])
    a = C.LORA_ADAPTER_BYTES
    return StateSplit(frozen, a.weights, a.grads, a.master + states, opt.per_tensor)


def stage_layers(w: Workload, lay: Layout) -> int:
    """Transformer layers on one GPU: ceil(L/p), or with v virtual stages v chunks of ceil(L/(p·v)) layers
    (Narayanan et al. 2021, section 2.2.2: each device holds v model chunks)."""
    if lay.pp <= 1:
        return w.arch.layers
    return math.ceil(w.arch.layers / (lay.pp * lay.vpp)) * lay.vpp


def stage_params(w: Workload, lay: Layout, stage: str = "first") -> tuple[float, float]:
    """(non-expert, expert) parameters on one GPU of the ``first`` or ``last`` pipeline stage, before ZeRO sharding.

    The first stage holds the input embedding, the last the final norm and the output layer (both, with tied
    embeddings, as Megatron-LM keeps a copy of the embedding on the last stage); each its own transformer layers.
    Non-expert parameters are split over tensor parallel, the routed experts over expert parallel
    (advisor.moe.expert_split). Without a pipeline: every parameter, as before.
    """
    a = w.arch
    experts = float(a.expert_params())
    if lay.pp <= 1:
        return (w.params - experts) / lay.tp, experts / lay.ep
    scale = w.params / a.counted_params()  # --params: the count given wins over the shape's
    share = stage_layers(w, lay) / a.layers
    layer_part = (a.layers * a.layer_params() - experts) * share
    ends = a.embedding_params() if stage == "first" else a.head_params() + a._norm_params()
    if stage == "last" and a.tied_embeddings:
        ends += a.embedding_params()
    return (layer_part + ends) * scale / lay.tp, experts * share * scale / lay.ep


def model_states(w: Workload, lay: Layout, stage: str = "first") -> tuple[float, float, float]:
    """(params, grads, optimizer) bytes per GPU, before offload.

    Full training: the ZeRO paper's per-component sharding (stage 1 optimizer, 2 + gradients, 3 + weights),
    after dividing by tensor × pipeline parallel size (Rajbhandari et al. 2020, section 5; Shoeybi et al. 2019).
    LoRA/QLoRA: the frozen base weights (16-bit, or NF4 for QLoRA: embeddings and norms stay 16-bit) plus
    the adapters' weights, gradients and optimizer states.
    """
    sp = state_split(w)
    mp = lay.tp * lay.pp
    n = lay.shard_group if lay.zero_stage else 1
    tensors = w.arch.param_tensors()
    if w.finetune == "full" and (lay.pp > 1 or w.arch.is_moe):
        from gpuadvisor.advisor.moe import expert_shard_group

        dense, expert = stage_params(w, lay, stage)
        m = expert_shard_group(lay) if lay.zero_stage else 1
        parts = [(dense, n), (expert, m)]

        def sharded(per: float, stage_from: int) -> float:
            return sum(per * psi / (k if lay.zero_stage >= stage_from else 1) for psi, k in parts)

        weights, grads = sharded(sp.weights, 3), sharded(sp.grads, 2)
        optim = sharded(sp.optimizer, 1) + sp.per_tensor * tensors / mp / (n if lay.zero_stage else 1)
        return weights, grads, optim
    if w.finetune == "full":
        psi = w.params / mp
        weights = sp.weights * psi
        grads = sp.grads * psi
        optim = sp.optimizer * psi + sp.per_tensor * tensors / mp
    else:
        trainable = w.trainable_params() / mp
        if w.finetune == "qlora":
            linear = w.arch.layers * w.arch.layer_linear_params()
            other = w.params - linear
            base = (linear * sp.frozen_weight_bytes + other * C.DTYPE_BYTES["bf16"]) / mp
        else:
            base = w.params * sp.frozen_weight_bytes / mp
        weights = base + sp.weights * trainable
        grads = sp.grads * trainable
        adapter_tensors = w.arch.layers * len(w.arch.linear_shapes()) * 2
        optim = sp.optimizer * trainable + sp.per_tensor * adapter_tensors / mp
    if lay.zero_stage >= 1:
        optim /= n
    if lay.zero_stage >= 2:
        grads /= n
    if lay.zero_stage >= 3:
        weights /= n
    if w.optimizer_in_backward:
        # The step runs per parameter as soon as its gradient is ready and frees it: at most the largest
        # tensor's gradient lives (torchtune optimizer_in_bwd; PyTorch "How to save memory by fusing the
        # optimizer step into the backward pass").
        largest = max(w.arch.vocab * w.arch.hidden, max(k * n for k, n in w.arch.linear_shapes()))
        grads = min(grads, largest * sp.grads / mp)
    return weights, grads, optim


def recompute_mode(w: Workload, recompute: bool) -> str:
    """full when the candidate checkpoints every layer; selective when asked for; none otherwise."""
    if recompute:
        return "full"
    return "selective" if w.checkpointing == "selective" else "none"


def loss_bytes(w: Workload, t: int = 1) -> float:
    """What the cross-entropy holds at its peak: s·b·V logits × LOSS_LOGIT_BYTES of the recipe (full: bf16 logits +
    fp32 upcast + fp32 gradient = 10 bytes; chunked: 3), split over t with a vocab-parallel output layer."""
    return w.seq * w.micro_batch * w.arch.vocab * C.LOSS_LOGIT_BYTES[w.loss] / t


def in_flight(lay: Layout, accumulation: int, stage: str = "first") -> float:
    """Layers' worth of one micro-batch's activations a pipeline rank holds at its peak, per layer it owns.

    1F1B (Narayanan et al. 2021, section 2.2.1; PyTorch's Schedule1F1B): rank i runs p − i warm-up forwards before
    its first backward, so the first stage holds min(p, m) micro-batches of its layers, the last one.
    Interleaved 1F1B with v chunks per rank (Megatron-LM's schedules.py, PyTorch's ScheduleInterleaved1F1B):
    rank i's warm-up is 2·(p − 1 − i) + (v − 1)·p chunk forwards, so the first rank holds v·p + p − 1 chunks of
    L/(p·v) layers: its L/p layers × (1 + (p − 1)/(p·v)) micro-batches, as Korthikanti et al. 2022 (section
    4.2.3) count it; the last rank (v − 1)·p + 1 chunks. Never more than the m micro-batches of the step.
    Returned as a multiple of the rank's layers (1 = one micro-batch of every layer it owns).
    """
    p, v, m = lay.pp, lay.vpp, max(1, accumulation)
    if p <= 1:
        return 1.0
    if v <= 1:
        return float(min(p, m)) if stage == "first" else 1.0
    chunks = v * p + p - 1 if stage == "first" else (v - 1) * p + 1
    return min(chunks, m * v) / v


def activations(
    w: Workload, lay: Layout, recompute: bool, accumulation: int, stage: str | None = None
) -> tuple[float, float]:
    """(activation bytes on the busiest GPU, of which the loss's logits).

    Per layer and token, Architecture.activation_bytes_per_token_layer (Korthikanti et al. 2022's count for any
    attention/MLP shape, fused attention; selective recomputation keeps less). Tensor-parallel layouts use
    sequence parallelism (all split over t); context parallelism splits each sequence over cp GPUs (ring
    attention: each keeps the activations of its s/cp tokens). With a pipeline each rank keeps its layers'
    activations for the micro-batches in flight (``in_flight``); the last also holds the logits. Full
    recomputation keeps each layer's input (2 bytes × hidden per token) and rebuilds one layer's activations at a
    time. Without fused attention the score matrices (5·a·s/h per token and layer, Korthikanti) are kept too.
    ``stage``: first or last pipeline stage; None: whichever holds more.
    """
    a = w.arch
    s, b, t, p = w.seq, w.micro_batch, lay.tp, lay.pp
    mode = recompute_mode(w, recompute)
    tokens = s * b / lay.cp
    kept = mode if mode == "selective" else ("pointwise" if w.compiled else "none")
    per_token = a.activation_bytes_per_token_layer(kept)
    if kept == "none" and a.norm == "rmsnorm" and w.stack in C.UPCAST_RMSNORM_STACKS:
        # An eager RMSNorm written as PyTorch ops (Hugging Face transformers' LlamaRMSNorm, torchtune's RMSNorm,
        # torch.nn.RMSNorm's composite kernel before PyTorch 2.8) upcasts its input to fp32 and autograd keeps
        # that fp32 copy (4h) and the 16-bit normalised tensor the weight multiplies (2h): 4h more per norm
        # than the 16-bit input Korthikanti et al. count. Fused norms (Transformer Engine, XLA, torch.compile)
        # keep the input and one statistic per token.
        per_token += a.norms_per_layer * C.UPCAST_RMSNORM_EXTRA_BYTES * a.hidden
    if not w.fused_attention:
        per_token += C.KORTHIKANTI_ATTENTION * a.heads * s
    if t > 1 and lay.framework.startswith("torchtitan"):
        # PyTorch's tensor parallel (DTensor SequenceParallel → ColwiseParallel) all-gathers the normed input of
        # the attention and of the MLP and autograd keeps that gathered copy for the weight gradients; Megatron-LM
        # keeps the sequence-parallel shard and all-gathers it again in the backward pass (Korthikanti et al.
        # 2022, section 4.2.2). Two 16-bit h-wide tensors per token stay whole: (t − 1)/t of them on top.
        per_token += 2 * 2 * a.hidden * (t - 1)
    full_layer = per_token * tokens / t
    stored = C.FULL_RECOMPUTE_PER_LAYER * a.hidden * tokens / t if mode == "full" else full_layer
    if t > 1 and w.stack in C.NO_SEQUENCE_PARALLEL_STACKS:
        # Tensor parallel without sequence parallelism (Megatron-DeepSpeed): the layer norms' and dropouts' tensors
        # stay whole on every rank, sbh·(10 + 24/t) per layer (Korthikanti et al. 2022, eq. 2), and the layer
        # input a full recomputation keeps is not split either.
        whole = C.KORTHIKANTI_UNSPLIT_BYTES * a.hidden * tokens
        full_layer += whole * (t - 1) / t
        if mode == "full":
            stored *= t
    layers = stage_layers(w, lay)
    rebuilt = full_layer if mode == "full" else 0
    first = layers * in_flight(lay, accumulation, "first") * stored + rebuilt
    logits = loss_bytes(w, t) / lay.cp
    last = layers * in_flight(lay, accumulation, "last") * stored + rebuilt + logits
    if p > 1:
        if stage == "first":
            return first, 0.0
        if stage == "last":
            return last, logits
        return (max(first, last), logits if last >= first else 0.0)
    return first + logits, logits


def pipeline_gathered(w: Workload, lay: Layout, accumulation: int, stage: str = "first") -> float:
    """FSDP (ZeRO-3) inside a pipeline stage: the stage's 16-bit weights stay gathered from the first
    micro-batch's forward to the last one's backward (torchtitan: "For PP, do not reshard after forward to avoid
    per-microbatch all-gathers"), and with several micro-batches the gradients accumulate unsharded in the reduce
    precision (FSDP2 without gradient sync until the last micro-batch; fp32 reduce in torchtitan's recipes)
    before one reduce-scatter."""
    if lay.zero_stage < 3 or lay.pp <= 1 or w.finetune != "full":
        return 0.0
    dense, expert = stage_params(w, lay, stage)
    sp = state_split(w)
    grads = C.DTYPE_BYTES["fp32"] if accumulation > 1 else 0.0
    return (dense + expert) * (sp.weights + grads)


def gathered_unit(w: Workload, lay: Layout) -> float:
    """ZeRO-3/FSDP: bytes of the largest unit gathered unsharded while it computes.

    Each transformer layer is its own FSDP unit, and so are the embedding and the untied output head (the
    usual wrapping; FSDP's root unit would otherwise hold both). GATHERED_UNITS_IN_FLIGHT units of 16-bit
    weights (the current and the prefetched one) plus the unit's unsharded gradient before its
    reduce-scatter (torch FSDP docs, backward_prefetch; Zhao et al. 2023, PyTorch FSDP).
    """
    if lay.zero_stage < 3 or (lay.pp > 1 and w.finetune == "full"):  # in a pipeline: pipeline_gathered
        return 0.0
    sp = state_split(w)
    unit = max(w.arch.layer_params(), w.arch.embedding_params(), w.arch.head_params())
    if w.finetune == "full":
        return unit * (C.GATHERED_UNITS_IN_FLIGHT * sp.weights + sp.grads)
    if w.finetune == "qlora":
        # FSDP gathers the NF4 tensors as they are stored; each linear is dequantised to bf16 just before its matmul.
        largest = max(k * n for k, n in w.arch.linear_shapes())
        return unit * C.GATHERED_UNITS_IN_FLIGHT * sp.frozen_weight_bytes + largest * C.DTYPE_BYTES["bf16"] / lay.tp
    return unit * C.GATHERED_UNITS_IN_FLIGHT * sp.frozen_weight_bytes


def offload_host_bytes(w: Workload, lay: Layout, gpus_per_node: int, nodes: int) -> float:
    """Host RAM per node a DeepSpeed CPU-offload plan needs.

    Source: DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs:
    cpu = Ψ·max(4·GPUs, 16)·1.5 with offload, taken per node as Ψ·max(4·GPUs per node, 16/nodes)·1.5;
    stage3.py estimate_zero3_model_states_mem_needs with zero_init: cpu = 18·Ψ/nodes·1.5 with parameters
    offloaded, 16·Ψ/nodes·1.5 with the optimizer only), for the trainable parameters.
    """
    psi = w.trainable_params() if w.finetune != "full" else w.params
    if lay.offload == "none":
        return 0.0
    if lay.zero_stage <= 2:
        return psi * max(4 * gpus_per_node, 16 / nodes) * C.OFFLOAD_HOST_BUFFER_FACTOR
    per = 18 if lay.offload == "optimizer+params" else 16
    return psi * per / nodes * C.OFFLOAD_HOST_BUFFER_FACTOR


def breakdown(
    w: Workload, lay: Layout, recompute: bool, accumulation: int, gpus_per_node: int, nodes: int
) -> MemoryBreakdown:
    """Memory per GPU; with a pipeline, of the rank that needs the most (the first stage: embedding and the most
    micro-batches in flight; or the last: output layer and logits), as published peaks are the maximum over
    ranks (torchtitan's benchmark notes: "Different PP ranks can have different peak memory usages. We take the
    maximum across all GPUs")."""
    if lay.pp > 1:
        first = _stage_breakdown(w, lay, recompute, accumulation, gpus_per_node, nodes, "first")
        last = _stage_breakdown(w, lay, recompute, accumulation, gpus_per_node, nodes, "last")
        return first if first.total_bytes >= last.total_bytes else last
    return _stage_breakdown(w, lay, recompute, accumulation, gpus_per_node, nodes, None)


def _stage_breakdown(
    w: Workload, lay: Layout, recompute: bool, accumulation: int, gpus_per_node: int, nodes: int, stage: str | None
) -> MemoryBreakdown:
    params, grads, optim = model_states(w, lay, stage or "first")
    if lay.offload != "none":
        # ZeRO-Offload keeps the 16-bit weights on the GPU and moves fp32 master, optimizer states and fp32
        # gradients to the host (DeepSpeed ZeRO-2 estimator: gpu = 2·Ψ); ZeRO-Infinity also moves the weights
        # (ZeRO-3 estimator: gpu = the largest layer, 4 bytes per its parameter).
        optim = 0.0
        grads = 0.0
        if lay.offload == "optimizer+params":
            params = 0.0
    acts, logits = activations(w, lay, recompute, accumulation, stage)
    gathered = gathered_unit(w, lay) + pipeline_gathered(w, lay, accumulation, stage or "first")
    host = offload_host_bytes(w, lay, gpus_per_node, nodes)
    if w.optimizer_bytes().paged and lay.offload == "none":
        # Paged optimizer states can all be evicted to host RAM: counted there (per node), not on the GPU. What stays
        # resident depends on the free memory at run time; the paging traffic is timed (strategies.paged_state_seconds).
        host += optim * gpus_per_node
        optim = 0.0
    from gpuadvisor.advisor.config_memory import deepspeed_buffer_bytes  # imports Layout from here

    # Gradients and activations are counted together: backward frees activations as it creates gradients, but the
    # published peaks (torchtune's Llama 3.2 3B rows: 60.0 GiB measured, 56.5 summed, 50.5 with the larger of the
    # two) show the sum is the closer account of the peak.
    mb = MemoryBreakdown(params, grads, optim, acts, gathered, 0.0, host, logits, deepspeed_buffer_bytes(w, lay))
    world = gpus_per_node * nodes
    mb.overhead_bytes = (
        C.ALLOCATOR_RESERVE_FRACTION * mb.allocated_bytes
        + C.CUDA_CONTEXT_BYTES
        + (C.NCCL_BUFFER_BYTES if world > 1 else 0)
    )
    return mb
