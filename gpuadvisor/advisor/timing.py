"""How long one training step takes on one GPU: matmuls, attention, memory-bound work, optimizer, launch floor.

MFU (model FLOPs utilisation) is defined once, as PaLM (Chowdhery et al. 2022, appendix B) and Megatron-LM
(Narayanan et al. 2021) count it: model FLOPs per token = 6·N + 12·L·s·d_attn (N the parameters a token is
multiplied by: ``Architecture.flop_params``; forward 2, backward 4; the attention scores QKᵀ and A·V counted
without the causal half), divided by the step time × GPUs × the datasheet dense peak of the compute precision.
Recomputation (activation checkpointing) is hardware work on top: it lowers MFU, not the FLOPs counted.

Without ``--mfu`` the step time is predicted from what the hardware does, per component:
  - matmuls of the linear layers (forward, input gradient, weight gradient; the recomputed forward with full
    checkpointing; no weight gradient for LoRA's frozen base) at the sustained matmul rate: the GPU's measured
    matmul TFLOP/s when the scan has one (``gpuadvisor bench --compute``), else the datasheet peak × the maximum
    achievable matmul fraction its generation reaches in published measurements (generations.toml: gemm);
    with fp8 only the transformer layers' linears run at the FP8 rate (Transformer Engine / torchao float8
    convert nn.Linear; attention, norms and the output layer stay 16-bit), plus the casts to fp8;
  - attention (causal: half of the 4·s·d_attn per token of the MFU count, FlashAttention's backward recomputing
    the scores: 2.5 forwards) at the attention kernel's fraction of peak (generations.toml: FlashAttention-2;
    FitParams.flash1_attention_factor of it for FlashAttention-1 class kernels, Dao 2023);
  - memory-bound work (norms, activations, residuals, rotary, casts, the loss) as bytes moved at the memory
    bandwidth: FitParams.memory_bound_bytes per byte of stored activation (fitted, see constants), times the fraction
    the training stack's fused kernels leave (memory_bound_factor: torch.compile, Megatron-Core + Transformer Engine);
  - LoRA's adapters: their rank-r GEMMs' reads and writes, and in eager PyTorch the elementwise ops around them
    (PEFT's clone, dropout, scale and add, and their backward: constants.LORA_FORWARD_BYTES), at the memory
    bandwidth; these grow with the tokens, not with the matmul rate, so a faster tensor core gains less;
  - QLoRA's NF4 → bf16 dequantisation of every frozen weight in every pass;
  - the optimizer step (memory-bound: the bytes its states read and write);
  - a floor per micro-batch: the host launches about OPS_PER_LAYER kernels per layer at OP_LAUNCH_SECONDS each.
With ``--mfu X`` the compute time is the model FLOPs at X of the datasheet peak, with recomputation's extra
FLOPs on top at the same rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import fitted
from gpuadvisor.advisor.fitted import FitParams
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.catalog import generations


@dataclass(frozen=True)
class Rates:
    """What one GPU sustains: matmul TFLOP/s per precision, attention TFLOP/s, memory GB/s; and where from."""

    peak_tflops: float  # datasheet dense peak of the compute precision (what MFU divides by)
    matmul_tflops: float  # sustained large-matmul rate, compute precision
    fp8_matmul_tflops: float | None
    attention_tflops: float  # the fused attention kernel's rate (a FlashAttention-1 class one at its factor)
    memory_gbps: float
    matmul_measured: bool = False
    memory_measured: bool = False
    sources: tuple[str, ...] = ()


def _measured(measurements: list[Any] | None, kind: str, dtype: str | None = None) -> Any | None:
    best = None
    for m in measurements or []:
        if getattr(m, "kind", None) != kind or getattr(m, "status", "ok") not in ("ok", "partial"):
            continue
        if getattr(m, "backend", None) == "cpu":  # bench --compute on a machine without GPUs: not a GPU's rate
            continue
        if dtype is not None and getattr(m, "dtype", None) != dtype:
            continue
        value = getattr(m, "value_tflops", None) if kind == "matmul" else getattr(m, "value_gbps", None)
        if value and (
            best is None or value > (getattr(best, "value_tflops", None) or getattr(best, "value_gbps", 0) or 0)
        ):
            best = m
    return best


def card_mamf(spec: Any, precision: str) -> float | None:
    """The card's own measured maximum achievable matmul TFLOP/s for ``precision`` at its datasheet board power
    (catalog mamf_tflops; FP16 runs at the BF16 rate on every tensor-core GPU the catalog lists), or None where the
    catalog has none for it."""
    table = getattr(spec, "mamf_tflops", None) or {}
    value = table.get(precision) or (table.get("bf16") if precision == "fp16" else None)
    return float(value) if value else None


def card_rate_words(spec: Any) -> str:
    """What the catalog's matmul rate of a card is: "measured" only where someone measured that card (its
    mamf_source says "assumed" where the figure is carried over from a sibling card)."""
    source = (getattr(spec, "mamf_source", None) or "").lower()
    return "assumed rate" if source.startswith("assumed") else "measured rate"


def power_capped_tflops(
    spec: Any, power_w: float | None = None, *, fit: FitParams | None = None
) -> tuple[float | None, str]:
    """The 16-bit matmul TFLOP/s the board power sustains (None where nothing caps it): a GEMM at full tensor rate
    draws more than a low-power card's limit, so its clocks drop: the rate grows with the power
    (constants.POWER_CAP_EXPONENT) times the generation's fitted coefficient (FitParams.tflops_per_watt);
    for a card with its own measured rate (catalog mamf_tflops, at its datasheet power), through that point, below
    its datasheet power only."""
    arch = getattr(spec, "architecture", None) or "unknown"
    watts = power_w or getattr(spec, "tdp_w", None)
    mamf, tdp = card_mamf(spec, "bf16"), getattr(spec, "tdp_w", None)
    if mamf is not None and tdp and watts:
        # The card's own figure was measured at its datasheet power: below it, the same law through that point.
        if watts >= tdp:
            return None, ""
        cap = mamf * (watts / tdp) ** C.POWER_CAP_EXPONENT
        return cap, (
            f"{mamf:g} TFLOP/s (this card's {card_rate_words(spec)} at {tdp:g} W) × {watts:g} / {tdp:g} W = "
            f"{cap:.0f} TFLOP/s"
        )
    p = fit or fitted.current()
    coeff = p.tflops_per_watt.get(arch)
    if not watts or not coeff:
        return None, ""
    top = generations.top_board_power(arch)
    if top and watts >= top:  # the generation's full board power: the cap is fitted on runs held below it
        return None, f"not capped at {watts:g} W, the {arch} generation's top board power"
    lowest = p.power_cap_min_watts.get(arch, 0.0)
    if watts < lowest:  # no published run of the generation this far down: not extrapolated
        return None, (
            f"not capped by its {watts:g} W: below the lowest board power of the published {arch} runs the "
            f"cap is fitted on ({lowest:g} W)"
        )
    cap = coeff * watts**C.POWER_CAP_EXPONENT
    law = (
        f"{watts:g} W × {coeff:g} TFLOP/s per W"
        if C.POWER_CAP_EXPONENT == 1
        else f"{coeff:g} × ({watts:g} W)^{C.POWER_CAP_EXPONENT:g}"
    )
    return cap, f"{law} = {cap:.0f} TFLOP/s ({arch}: fitted on published runs of power-limited cards)"


def rates(
    spec: Any,
    precision: str,
    peak: float,
    measurements: list[Any] | None = None,
    *,
    memory_gbps: float | None = None,
    power_w: float | None = None,
    attention_kernel: str = "flash2",
    fit: FitParams | None = None,
) -> Rates:
    """The GPU's sustained rates for ``precision``: measured where the scan has ``matmul`` / ``memory_bandwidth``
    measurements (gpuadvisor bench --compute), else datasheet × the generation's published fractions, at most what
    the board power (``power_w``, default the datasheet's) sustains. ``fit``: the fitted parameters (default: those in
    force, fitted.current())."""
    p = fit or fitted.current()
    arch = getattr(spec, "architecture", None) or "unknown"
    gen = generations.gemm_efficiency(arch)
    gen_frac, gemm_src = gen.value, gen.source
    gemm_frac = gen_frac
    mamf = card_mamf(spec, "fp16" if precision == "fp8" else precision)
    sheet = spec.peak_tflops("bf16" if precision == "fp8" else precision) if spec is not None else None
    if mamf is not None and sheet:
        gemm_frac = mamf / sheet
        kind = "own measured rate" if card_rate_words(spec) == "measured rate" else "assumed rate"
        gemm_src = f"this card's {kind}, {mamf:g} of {sheet:g} TFLOP/s: {spec.mamf_source}"
    card_scale = gemm_frac / gen_frac  # a card faster or slower than its generation at matmuls is so at attention
    attn = generations.attention_efficiency(arch)
    attn_frac, attn_src = attn.value, attn.source
    sources = []
    matmul = peak * gemm_frac
    cap, cap_src = power_capped_tflops(spec, power_w, fit=p) if precision in ("bf16", "fp16", "fp8") else (None, "")
    if cap is not None and cap < matmul:
        gemm_frac, gemm_src = cap / peak, f"power-limited: {cap_src}"
        matmul = cap
    elif cap is None and cap_src:
        sources.append(f"matmul {cap_src}")
    measured_mm = _measured(measurements, "matmul", "tf32" if precision == "fp32" else precision)
    matmul_measured = False
    scale = card_scale
    if measured_mm is not None:
        matmul = float(measured_mm.value_tflops)
        matmul_measured = True
        scale = card_scale * matmul / (peak * gemm_frac)  # a power-capped or throttled GPU is slower at attention too
        sources.append(
            f"matmul {matmul:.0f} TFLOP/s {precision.upper()} measured on this GPU (bench --compute), in place of "
            f"the datasheet {peak:g} × {gemm_frac:.3f}"
        )
    else:
        sources.append(
            f"matmul at {gemm_frac:.1%} of the datasheet {precision.upper()} peak {peak:g} TFLOP/s ({gemm_src})"
        )
    fp8 = None
    fp8_peak = spec.peak_tflops("fp8") if spec is not None else None
    if precision == "fp8" and fp8_peak:
        m8 = _measured(measurements, "matmul", "fp8")
        own = generations.known(arch).fp8_gemm
        fp8_frac, fp8_src = (own.value, own.source) if own else (gemm_frac, gemm_src)
        fp8 = float(m8.value_tflops) if m8 is not None else fp8_peak * fp8_frac
        if m8 is None and cap is not None and fp8 > 2 * cap:  # an FP8 FLOP moves half the bits: twice the 16-bit cap
            fp8, fp8_src = 2 * cap, f"power-limited: twice the 16-bit {cap_src}"
            fp8_frac = fp8 / fp8_peak
        sources.append(
            f"fp8 linears at {fp8:.0f} TFLOP/s"
            + (" measured" if m8 is not None else f" ({fp8_frac:.1%} of the FP8 peak: {fp8_src})")
        )
    bw = memory_gbps or float(getattr(spec, "memory_bandwidth_gbps", 0) or 0) or C.UNKNOWN_MEMORY_GBPS
    measured_bw = _measured(measurements, "memory_bandwidth")
    memory_measured = False
    if measured_bw is not None:
        bw_eff = float(measured_bw.value_gbps)
        memory_measured = True
        sources.append(f"memory bandwidth {bw_eff:.0f} GB/s measured on this GPU")
    else:
        bw_eff = bw * C.MEMORY_BANDWIDTH_EFFICIENCY
        sources.append(
            f"memory bandwidth {bw:g} GB/s datasheet × {C.MEMORY_BANDWIDTH_EFFICIENCY:g} achievable (assumed)"
        )
    attention = peak * attn_frac * scale
    if attention_kernel == "flash1":
        attention *= p.flash1_attention_factor  # FlashAttention-1 / its Triton port: about half FA-2's rate
    sources.append(
        f"attention kernels at {attn_frac:.0%} of peak ({attn_src})"
        + (f", × {scale:.2f} as this GPU's matmuls run" if abs(scale - 1) > 0.005 else "")
    )
    if attention_kernel == "flash1":
        sources.append(
            f"FlashAttention-1 class kernel: {p.flash1_attention_factor:.2f} of that rate (FlashAttention-2 about 2x "
            "faster, Dao 2023; fitted on llm-foundry's MPT runs)"
        )
    return Rates(peak, matmul, fp8, attention, bw_eff, matmul_measured, memory_measured, tuple(sources))


@dataclass
class StepCompute:
    """Compute of one optimizer step on the busiest GPU (one pipeline stage), communication excluded."""

    seconds: float
    per_micro_batch_seconds: float
    model_flops: float  # per GPU per step, MFU's numerator
    hardware_flops: float  # with recomputation
    parts: dict[str, float] = field(default_factory=dict)  # seconds per step by component
    floor_bound: bool = False
    mode: str = "model"  # model | mfu

    @property
    def forward_fraction(self) -> float:
        """Fraction of a micro-batch that is forward work (what FSDP's forward all-gathers can hide under)."""
        return self.parts.get("forward_fraction", 1 / 3)


def model_flops_per_token(w: Workload) -> float:
    """MFU's numerator per token: 6·N + 12·L·s·d_attn (PaLM appendix B; Megatron-LM eq. 3 without recomputation).
    LoRA/QLoRA: the frozen weights get no weight gradient, so 4·N (+ 6 per adapter parameter); attention's
    backward still computes every input gradient (12·L·s·d_attn)."""
    a = w.arch
    attention = 12 * a.layers * w.seq * a.q_dim
    if w.finetune != "full":
        return 4 * a.flop_params() + 6 * w.trainable_params() + attention
    return 6 * a.flop_params() + attention


def lora_elementwise_bytes(w: Workload, recompute_passes: float) -> float:
    """Bytes per token and layer of an eager LoRA adapter's elementwise ops (PEFT: clone, dropout, scale, add; their
    backward), beyond its GEMMs: constants.LORA_FORWARD_BYTES per forward (recomputed ones included) and
    LORA_BACKWARD_BYTES once, per element of each linear's input and output. None under torch.compile, Megatron or
    XLA, which fuse them into their neighbours."""
    if w.finetune == "full" or stack_key(w) not in ("pytorch", "deepspeed"):
        return 0.0
    shapes = w.arch.linear_shapes()
    fwd = sum(C.LORA_FORWARD_BYTES[0] * k + C.LORA_FORWARD_BYTES[1] * n for k, n in shapes)
    bwd = sum(C.LORA_BACKWARD_BYTES[0] * k + C.LORA_BACKWARD_BYTES[1] * n for k, n in shapes)
    return fwd * (1 + recompute_passes) + bwd


def _recompute_passes(mode: str) -> float:
    """Forward matmul passes recomputed: full checkpointing redoes the forward; torchtitan's selective (op-level)
    policy saves every other matmul's output, so half of them are recomputed."""
    return {"full": 1.0, "selective": C.SELECTIVE_RECOMPUTE_MATMUL_PASSES}.get(mode, 0.0)


def step_compute(
    w: Workload,
    *,
    tp: int,
    pp: int,
    accumulation: int,
    recompute: str,
    dp: int,  # noqa: ARG001
    shard_group: int,
    zero_stage: int,
    r: Rates,
    offload: bool = False,
    fit: FitParams | None = None,
) -> StepCompute:
    """Seconds of compute per optimizer step on one GPU (the first pipeline stage), by component. ``fit``: the fitted
    parameters (default: those in force, fitted.current())."""
    p = fit or fitted.current()
    a = w.arch
    tokens = w.seq * w.micro_batch  # per micro-batch, per data-parallel rank
    layers = math.ceil(a.layers / pp)
    layer_share = layers / a.layers
    model_per_token = model_flops_per_token(w)
    model_flops = model_per_token * tokens * accumulation / tp * layer_share
    frozen = w.finetune != "full"
    extra = _recompute_passes(recompute)
    # Linear layers: forward 2 FLOPs per weight and token, input gradient 2, weight gradient 2 (none when frozen).
    lin_params_layers = a.layers * a.layer_linear_params()
    head = a.vocab * a.hidden
    lin_passes = 1 + 1 + (0 if frozen else 1) + extra
    head_passes = 1 + 1 + (0 if frozen else 1)
    attn_fwd = 2 * a.layers * w.seq * a.q_dim  # causal: half of the 4·s·d_attn per token MFU counts
    attn_extra = 1.0 if recompute == "full" else 0.0  # selective keeps the attention output
    attn_passes = 1 + C.FLASH_BACKWARD_PASSES + attn_extra
    if not w.fused_attention:
        # Unfused attention (before FlashAttention, 2022): QKᵀ and A·V as batched matmuls over the whole square,
        # forward + 2 backward, at the matmul rate; the score matrices go through memory (counted below).
        attn_fwd = 4 * a.layers * w.seq * a.q_dim
        attn_passes = 3 + attn_extra
    hw_per_token = 2 * lin_params_layers * lin_passes + 2 * head * head_passes + attn_fwd * attn_passes
    if frozen:
        adapters = w.trainable_params()
        hw_per_token += 6 * adapters
    hardware_flops = hw_per_token * tokens * accumulation / tp * layer_share
    if w.mfu_given:
        # --mfu: the model FLOPs at that fraction of the datasheet peak; recomputation's FLOPs on top.
        hw_model = (
            (model_per_token + 2 * lin_params_layers * extra + 4 * a.layers * w.seq * a.q_dim * attn_extra)
            * tokens
            / tp
            * layer_share
        )
        per_mb = hw_model / (r.peak_tflops * 1e12 * (w.mfu or 1.0))  # mfu_given: w.mfu is set
        opt = _optimizer_seconds(w, tp, pp, shard_group, zero_stage, r, offload)
        secs = per_mb * accumulation + opt
        return StepCompute(
            secs,
            per_mb,
            model_flops,
            hardware_flops,
            {"compute": per_mb * accumulation, "optimizer": opt, "forward_fraction": 1 / (3 + extra)},
            mode="mfu",
        )
    # -- matmuls ---------------------------------------------------------------------------------------
    mm = r.matmul_tflops * 1e12
    lin_flops = 2 * lin_params_layers * lin_passes * tokens / tp * layer_share
    lin_rate = mm
    cast_bytes = 0.0
    if w.precision == "fp8" and r.fp8_matmul_tflops:  # the layers' linears only: the output layer stays 16-bit
        lin_rate = r.fp8_matmul_tflops * 1e12
        # torchao / Transformer Engine dynamic scaling: every linear's input and grad_output is read (16-bit) and
        # written in fp8 in each pass, plus the amax reduction's read.
        io = sum(k + n for k, n in a.linear_shapes())
        cast_bytes = C.FP8_CAST_BYTES_PER_ELEMENT * io * (1 + 1 + extra) * tokens * layers / tp
    # The output layer (and the loss) live on the last pipeline stage, counted with it: the busiest stage.
    head_flops = 2 * head * head_passes * tokens / tp
    t_lin = lin_flops / lin_rate
    t_head = head_flops / mm
    # -- attention -------------------------------------------------------------------------------------
    attn_rate = r.attention_tflops if w.fused_attention else r.matmul_tflops  # its kernel's rate (rates())
    t_attn = attn_fwd * attn_passes * tokens / tp * layer_share / (attn_rate * 1e12)
    # -- memory-bound work ----------------------------------------------------------------------------
    act = a.activation_bytes_per_token_layer()
    scores = C.UNFUSED_ATTENTION_BYTES_PER_SCORE * a.heads * w.seq if not w.fused_attention else 0.0
    passes = C.MEMORY_BOUND_PASSES + (1.0 if recompute in ("full", "selective") else 0.0)
    fused, _ = memory_bound_factor(w, p)
    factor = p.memory_bound_bytes * fused
    cast_bytes *= fused  # the casts to fp8 fuse into the norm / activation kernels before them (TE, Inductor)
    mem_bytes = (factor * act + scores) * passes / C.MEMORY_BOUND_PASSES * tokens * layers / tp
    loss_bytes = C.LOSS_BYTES_PER_LOGIT * a.vocab * tokens / tp
    lora_bytes = 0.0
    if frozen:
        # Each adapter reads its linear's input again and writes its output: memory-bound GEMMs of rank r.
        lora_bytes = 2 * sum(k + n for k, n in a.linear_shapes()) * (3 + extra) * tokens * layers / tp
        lora_bytes += lora_elementwise_bytes(w, extra) * tokens * layers / tp
    t_mem = (mem_bytes + loss_bytes + cast_bytes + lora_bytes) / (r.memory_gbps * 1e9)
    # -- QLoRA dequantisation ---------------------------------------------------------------------------
    t_deq = 0.0
    if w.finetune == "qlora":
        params = a.layer_linear_params() * layers / tp
        t_deq = p.qlora_dequant_bytes_per_param * params * (2 + extra) / (r.memory_gbps * 1e9)
    gpu = t_lin + t_head + t_attn + t_mem + t_deq
    floor = C.OPS_PER_LAYER * layers * C.OP_LAUNCH_SECONDS * (1 + extra / 3)
    per_mb = max(gpu, floor)
    opt = _optimizer_seconds(w, tp, pp, shard_group, zero_stage, r, offload)
    secs = per_mb * accumulation + opt
    fwd = (t_lin / lin_passes + t_attn / attn_passes + t_mem / passes + t_deq / (2 + extra)) / gpu if gpu else 1 / 3
    parts = {
        "matmul": (t_lin + t_head) * accumulation,
        "attention": t_attn * accumulation,
        "memory_bound": t_mem * accumulation,
        "dequantize": t_deq * accumulation,
        "optimizer": opt,
        "forward_fraction": fwd,
    }
    return StepCompute(secs, per_mb, model_flops, hardware_flops, parts, floor_bound=floor > gpu)


STACK_NAMES = {
    "pytorch": "eager PyTorch",
    "compile": "PyTorch with torch.compile",
    "megatron": "Megatron-Core + Transformer Engine",
    "deepspeed": "DeepSpeed (eager PyTorch kernels)",
    "jax": "JAX/XLA",
}


def stack_key(w: Workload) -> str:
    """The stack whose fused kernels the time model applies: torch.compile counts as its own stack (also under
    DeepSpeed, which runs the model's PyTorch code)."""
    if w.stack in ("pytorch", "deepspeed") and w.compiled:
        return "compile"
    return w.stack


def memory_bound_factor(w: Workload, fit: FitParams | None = None) -> tuple[float, str]:
    """The fraction of eager PyTorch's memory-bound traffic the workload's stack leaves, and where it comes from."""
    p = fit or fitted.current()
    key = stack_key(w)
    if key == "compile":
        return p.compile_memory_bound_factor, "fitted on published torch.compile runs (torchtitan, torchtune)"
    if key == "megatron":
        return p.megatron_memory_bound_factor, "fitted on NVIDIA's NeMo / Megatron-Bridge performance tables"
    if key == "jax":
        return p.compile_memory_bound_factor, (
            "assumed as torch.compile's (XLA fuses elementwise ops likewise; no published JAX GPU run calibrated)"
        )
    return C.EAGER_MEMORY_BOUND_FACTOR, "eager kernels: every elementwise op reads and writes its tensors"


def sharded_comm_factor(w: Workload, fit: FitParams | None = None) -> float:
    """How much longer a ZeRO-3 all-gather / reduce-scatter takes in the workload's stack than NCCL's ring over the
    same bytes: DeepSpeed's ZeRO-3 gathers parameters in prefetch buckets from Python hooks (fitted on its published
    runs, FitParams.deepspeed_sharded_comm_factor); PyTorch FSDP and Megatron's gather whole flat units (1)."""
    return (fit or fitted.current()).deepspeed_sharded_comm_factor if w.stack == "deepspeed" else 1.0


def sharded_overlap(w: Workload, fit: FitParams | None = None) -> float:
    """The share of the shorter of ZeRO-3's collectives and the compute they hide under that overlaps: DeepSpeed's
    own (fitted on its published runs), else PyTorch FSDP's (FitParams.sharded_overlap)."""
    p = fit or fitted.current()
    return p.deepspeed_sharded_overlap if w.stack == "deepspeed" else p.sharded_overlap


def _optimizer_seconds(
    w: Workload, tp: int, pp: int, shard_group: int, zero_stage: int, r: Rates, offload: bool
) -> float:
    """The optimizer step: memory-bound, the bytes its states are read and written, on this GPU's shard, at the
    fraction of the copy bandwidth a multi-tensor optimizer kernel reaches (OPTIMIZER_STEP_BANDWIDTH_FRACTION)."""
    if offload:
        return 0.0  # on the CPU: timed with the offload traffic
    trainable = (w.params if w.finetune == "full" else w.trainable_params()) / (tp * pp)
    if zero_stage >= 1:
        trainable /= max(1, shard_group)
    per_param = w.optimizer_step_bytes()
    return trainable * per_param / (r.memory_gbps * C.OPTIMIZER_STEP_BANDWIDTH_FRACTION * 1e9)


def mfu(model_flops: float, seconds: float, peak_tflops: float) -> float | None:
    """Model FLOPs utilisation of one GPU: its model FLOPs per step / (step seconds × datasheet peak)."""
    if not seconds or not peak_tflops:
        return None
    return model_flops / (seconds * peak_tflops * 1e12)
