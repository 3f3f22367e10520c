"""advise(rig, workload) -> Advice: every candidate, the pick with its reason and launch snippet."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuadvisor.advice_model import (
    Advice,
    Batch,
    CandidateBands,
    RigSummary,
    SmallestRig,
    StateBytes,
    StateConvention,
    WorkloadSummary,
)
from gpuadvisor.advisor import calibration as K
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import engines as E
from gpuadvisor.advisor import fitted, rigview
from gpuadvisor.advisor import inference as I
from gpuadvisor.advisor import strategies as S
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.search import smallest_rig
from gpuadvisor.advisor.snippets import training_snippet
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.catalog import generations
from gpuadvisor.facts import Rig


def _rig_summary(view: rigview.RigView, w: Workload) -> RigSummary:
    peak, peak_src = view.peak_tflops(w.compute_precision())
    dp_bw = view.dp_busbw(view.gpus_per_node, view.nodes > 1) if view.total_gpus > 1 else None
    return RigSummary(
        label=view.label,
        gpu=view.gpu_name,
        catalog_id=view.spec.id if view.spec else None,
        gpus_per_node=view.gpus_per_node,
        nodes=view.nodes,
        memory_per_gpu_bytes=view.memory_bytes,
        cuda_memory_per_gpu_bytes=view.cuda_memory_bytes,
        memory_source=view.memory_source,
        host_memory_bytes=view.host_memory_bytes,
        nvlink_domain=view.nvlink_domain(),
        nvlink=view.nvlink_source,
        pcie=view.pcie_source,
        p2p=view.p2p_ok,
        peak_tflops=peak,
        peak_source=peak_src,
        busbw_gbps=round(dp_bw.gbps, 2) if dp_bw else None,
        busbw_source=dp_bw.source if dp_bw else None,
        busbw_measured=dp_bw.measured if dp_bw else None,
        inter_node_gbps=view.inter_node.gbps if view.nodes > 1 else None,
        inter_node_source=view.inter_node.source if view.nodes > 1 else None,
    )


# The summary depends on the workload alone: `plan` asks the advisor about every build for one workload, so it is
# kept per workload (its repr names every field); nothing changes a summary once made.
_SUMMARIES: dict[str, WorkloadSummary] = {}


def _workload_summary(w: Workload) -> WorkloadSummary:
    key = repr(w)
    summary = _SUMMARIES.get(key)
    if summary is None:
        if len(_SUMMARIES) > 32:
            _SUMMARIES.clear()
        summary = _SUMMARIES[key] = WorkloadSummary.from_json_dict(w.to_dict(), "workload")
    return summary


def _state_bytes(w: Workload) -> StateBytes:
    conv = w.state_convention()
    opt = w.optimizer_bytes()
    return StateBytes(
        used_per_param=conv.per_param(opt.states),
        weights=conv.weights,
        grads=conv.grads,
        master=conv.master,
        optimizer_states=opt.states,
        convention=conv.key,
        source=conv.source,
        optimizer_source=opt.source,
        conventions=[
            StateConvention(bytes_per_param_with_adam=s.per_param(C.ADAMW.states), key=s.key, source=s.source)
            for s in (C.MIXED_16BIT_GRADS, C.MIXED_FP32_GRADS, C.MIXED_MAIN_GRADS, C.FP32_STATES)
        ],
    )


def _compute_assumptions(w: Workload, view: rigview.RigView, rates: Any) -> list[str]:
    if w.task != "train":
        return []
    if w.mfu_given:
        return [
            f"compute: MFU {w.mfu:.2f} as given (--mfu: model FLOPs 6N + 12·L·s·d_attn per token over the datasheet "
            "dense peak, "
            "PaLM appendix B); activation checkpointing's recomputed FLOPs cost time on top at the same rate"
        ]
    out = [
        "compute predicted per component (matmuls, attention, memory-bound ops, optimizer step, a launch floor per "
        "micro-batch); "
        "MFU = model FLOPs 6N + 12·L·s·d_attn per token / (step time × datasheet dense peak), as PaLM (appendix B) and "
        "Megatron-LM count it; recomputation is time on top"
    ]
    if rates is not None:
        out += [f"  {s}" for s in rates.sources]
        if not rates.matmul_measured:
            out.append(
                "  no matmul measurement in this scan: run gpuadvisor bench --compute to time this GPU's own matmuls "
                "(a power cap or low clocks show there)"
            )
    factor, why = T.memory_bound_factor(w)
    out.append(
        f"  training stack {T.STACK_NAMES[T.stack_key(w)]} (--stack): memory-bound work "
        + ("as eager PyTorch's" if factor == 1 else f"at {factor:.0%} of eager PyTorch's bytes")
        + f" ({why})"
    )
    arch = view.spec.architecture if view.spec else None
    gen = generations.get(arch)
    pub = gen.published_mfu if gen else None
    if pub:
        out.append(f"  published MFU on this generation: {pub.low:.0%}-{pub.high:.0%} ({pub.source})")
    return out


def _assumptions(w: Workload, view: rigview.RigView, rates: Any = None) -> list[str]:
    out = _compute_assumptions(w, view, rates)
    if w.task == "train" and w.precision == "fp8":
        out.append(
            "fp8 training (Transformer Engine / Megatron --fp8-format): matmuls at the FP8 peak, model states and "
            "activations "
            "counted as for bf16 mixed precision (FP8 keeps a higher-precision master copy)"
        )
    if w.task == "train" and w.precision == "fp32":
        out.append(
            "fp32 training timed at the FP32 (not TF32) peak: PyTorch leaves TF32 matmuls off by default "
            "(torch.backends.cuda.matmul.allow_tf32)"
        )
    if w.task == "train":
        conv = w.state_convention()
        out += [
            f"model states at {conv.per_param(w.optimizer_bytes().states):g} bytes/param ({conv.source})"
            if w.finetune == "full"
            else f"{w.finetune}: frozen base weights + adapters at 16 bytes per trainable parameter "
            f"({C.LORA_ADAPTER_BYTES.source})",
            "activations: Korthikanti et al. 2022 per-layer formula (GPT architecture), "
            + (
                "fused attention (FlashAttention/SDPA) so the 5as/h score term is dropped"
                if w.fused_attention
                else "attention scores stored (5as/h term kept)"
            ),
            "tensor-parallel layouts use sequence parallelism; pipelines use 1F1B",
            "memory: torch's peak allocated is predicted (states, activations, the loss's logits at "
            f"{C.LOSS_LOGIT_BYTES[w.loss]:g} bytes each "
            f"for a {w.loss} cross-entropy, gathered units); what nvidia-smi shows adds the caching allocator's "
            "reserve "
            f"({C.ALLOCATOR_RESERVE_FRACTION:.0%}, assumed), the CUDA context ({C.CUDA_CONTEXT_BYTES / C.GiB:g} GiB, "
            "assumed) and NCCL buffers "
            f"({C.NCCL_BUFFER_BYTES / C.GiB:g} GiB with several GPUs, assumed): the fit check uses that figure",
            f"fits with margin: at least {C.MARGIN_FRACTION:.0%} of GPU memory left",
            "data-parallel communication overlaps the backward pass (DDP 25 MB buckets: the last is exposed); FSDP "
            "prefetches all-gathers "
            f"under compute, {fitted.current().sharded_overlap:.0%} of the shorter overlapping "
            "(fitted on published ZeRO-3 runs), "
            "with NCCL's latency per ring step; "
            "tensor-parallel, pipeline and offload traffic is not overlapped",
        ]
    elif E.engine(w.engine).layer_split:
        out += [E.split_assumption(E.engine(w.engine).label)]
    else:
        out += [
            f"vLLM takes {w.gpu_memory_utilization:.0%} (--gpu-memory-utilization) of the memory CUDA sees "
            "(NVML total less "
            f"{view.reserved_bytes / 2**20:g} MiB the driver reserves); less the weights, the non-torch memory "
            f"({C.VLLM_NON_TORCH_BYTES_SINGLE / C.GiB:.2f} GiB on one GPU, "
            f"{C.VLLM_NON_TORCH_BYTES_PARALLEL / C.GiB:.2f} GiB with TP) and the peak of "
            f"vLLM's profile pass (its default max_num_batched_tokens and max_num_seqs for the GPU; the sampler takes "
            f"{C.VLLM_SAMPLER_BYTES_PER_LOGIT:g} bytes per sequence and vocabulary entry, fitted on vLLM's logs): the "
            "rest is KV cache; "
            "CUDA graphs live in the remaining slack",
            f"KV cache: 2·L·kv_heads/t·head_dim·{w.kv_bytes():g} bytes per token, in {C.VLLM_BLOCK_TOKENS}-token "
            "blocks",
        ]
    return out


def _answer(
    task: str, view: rigview.RigView, w: Workload, options: list[Any], models: list[Any], chosen: Any, **rest: Any
) -> Advice:
    """The ``Advice`` of a task: ``models`` are the ``options``' records, the pick the record of ``chosen``."""
    pick = next((m for o, m in zip(options, models, strict=True) if o is chosen), None)
    return Advice(
        task=task,
        fits=pick is not None,
        pick_name=pick.name if pick else None,
        workload=_workload_summary(w),
        rig=_rig_summary(view, w),
        candidates=list(models),
        pick=pick,
        **rest,
    )


def advise(rig: Rig, workload: Workload) -> Advice:
    """Predict every candidate strategy for ``workload`` on ``rig``, pick one, and store the result in
    ``rig.advice``."""
    view = rigview.from_rig(
        rig, nodes=workload.nodes, inter_node_gbps=workload.inter_node_gbps, network=workload.network_spec()
    )
    advice = advise_view(view, workload, measurements=list(rig.measurements))
    rig.advice = advice
    return advice


def fitting_pick(rig: Rig, workload: Workload) -> str | None:
    """The name of the strategy ``advise`` would pick (None: nothing fits), for a training workload without the rest
    of its answer (bands, snippets, candidate models): for callers that only ask whether and how it fits."""
    view = rigview.from_rig(
        rig, nodes=workload.nodes, inter_node_gbps=workload.inter_node_gbps, network=workload.network_spec()
    )
    w, _ = default_precision(view, workload)
    if w.task == "inference":
        return advise_view(view, workload, measurements=list(rig.measurements)).pick_name
    cands, _ = S.candidates(view, w, S.default_rates(view, w, list(rig.measurements)))
    chosen = S.pick(cands, view.total_gpus)
    return chosen.name if chosen is not None else None


def default_precision(view: rigview.RigView, w: Workload) -> tuple[Workload, str | None]:
    """--precision left out: bf16, or fp16 on a GPU whose datasheet has no BF16 (Volta, Turing), with a note."""
    if (
        w.precision_given
        or w.precision != "bf16"
        or view.spec is None
        or "bf16" in view.spec.tflops
        or "fp16" not in view.spec.tflops
    ):
        return w, None
    return replace(w, precision="fp16"), (
        f"--precision not given: fp16, as {view.spec.name} has no BF16 "
        "(fp16 training needs loss scaling: the snippets turn it on)"
    )


def _attach_bands(cands: list[S.Candidate], view: rigview.RigView, rates: Any) -> None:
    """Each candidate's tokens/s and memory get the band of the calibration cases (narrower when this GPU's matmul rate
    and, with several GPUs, its all-reduce busbw are measured in the scan)."""
    compute_measured = bool(rates is not None and rates.matmul_measured)
    comm_measured = view.total_gpus == 1 or view.measured_all_reduce is not None
    for c in cands:
        tput = K.band("throughput", c.tokens_per_second, measured=compute_measured and comm_measured)
        mem = K.band("memory", c.memory.allocated_bytes)
        c.band = CandidateBands(tokens_per_second=tput, torch_peak_allocated_bytes=mem) if (tput or mem) else None


def advise_view(view: rigview.RigView, w: Workload, measurements: list | None = None) -> Advice:
    w, precision_note = default_precision(view, w)
    notes = list(view.notes) + list(w.notes) + ([precision_note] if precision_note else [])
    if view.measured_all_reduce is None and view.total_gpus > 1:
        notes.append(
            "no all_reduce measurement in this scan: bandwidth is the links' expected figure (run gpuadvisor bench to "
            "measure)"
        )
    peak, peak_src = view.peak_tflops(w.compute_precision())
    if peak is None:
        notes.append(peak_src)
    elif (
        w.task == "inference"
        and w.precision == "fp8"
        and view.spec is not None
        and "fp8" not in view.spec.tflops
        and view.spec.architecture == "ampere"
    ):
        notes.append(
            f"{view.spec.name} has no FP8 tensor cores: vLLM serves --quantization fp8 on Ampere as weight-only FP8 "
            "(FP8 Marlin, W8A16): the memory figures hold, compute stays 16-bit"
        )
    elif view.spec is not None and w.compute_precision() not in view.spec.tflops:
        better = next((p for p in ("bf16", "fp16") if p in view.spec.tflops), "fp32")
        notes.append(
            f"{view.spec.name} has no {w.precision.upper()} support: run with --precision {better} "
            f"(the launch snippet's precision flags would fail on this GPU); {peak_src}"
        )
    if w.task == "inference":
        return _advise_inference(view, w, notes)
    rates = S.default_rates(view, w, measurements)
    cands, excluded = S.candidates(view, w, rates)
    _attach_bands(cands, view, rates)
    chosen = S.pick(cands, view.total_gpus)
    reason = S.explain(cands, chosen, view.total_gpus)
    snippet = batch = None
    smallest = None
    if chosen is not None:
        lay = chosen.layout
        snippet = training_snippet(
            w, lay, chosen.accumulation, chosen.global_batch, chosen.recompute, view.gpus_per_node, view.nodes
        )
        batch = Batch(
            micro_batch=w.micro_batch,
            gradient_accumulation=chosen.accumulation,
            data_parallel=lay.dp,
            global_batch=chosen.global_batch,
            tokens_per_step=chosen.tokens_per_step,
            requested_global_batch=w.global_batch,
            lr_note=lr_note(w, chosen),
        )
        if w.global_batch is None:
            notes.append(
                f"no --global-batch given: {chosen.global_batch} sequences ({chosen.tokens_per_step:,} tokens) per "
                "step assumed, "
                "about the smallest GPT-3 batch (0.5M tokens, Brown et al. 2020); pass yours"
            )
        elif chosen.global_batch != w.global_batch:
            notes.append(
                f"global batch {w.global_batch} is not a multiple of micro-batch × data-parallel ({w.micro_batch} × "
                f"{lay.dp}): "
                f"{chosen.accumulation} accumulation steps give {chosen.global_batch}"
            )
    else:
        smallest = smallest_rig(w, view.spec)
        reason = nothing_fits_reason(w, view, cands, smallest)
    models = [c.to_model() for c in cands]
    return _answer(
        "train",
        view,
        w,
        cands,
        models,
        chosen,
        excluded=excluded,
        reason=reason,
        snippet=snippet,
        batch=batch,
        smallest_rig=smallest,
        assumptions=_assumptions(w, view, rates),
        state_bytes=_state_bytes(w),
        notes=notes,
    )


def lr_note(w: Workload, c: S.Candidate) -> str:
    """Linear scaling with warm-up (Goyal et al. 2017); square-root scaling for Adam (Malladi et al. 2022)."""
    return (
        f"global batch {c.global_batch} sequences = {w.micro_batch} per GPU × {c.accumulation} accumulation × "
        f"{c.layout.dp} data-parallel "
        f"({c.tokens_per_step:,} tokens). If your learning rate was tuned at another global batch B0, scale it by "
        f"{c.global_batch}/B0 (linear rule, Goyal et al. 2017) or by its square root for Adam-type optimizers "
        "(Malladi et al. 2022), with a warm-up."
    )


def nothing_fits_reason(
    w: Workload, view: rigview.RigView, cands: list[S.Candidate], smallest: SmallestRig | None
) -> str:
    best = min(cands, key=lambda c: c.memory.total_bytes) if cands else None
    head = f"Nothing fits: {w.describe()} on {view.label}"
    if best is not None:
        head += f"; the leanest candidate, {best.name}, {best.misfit()}"
    if smallest:
        s = smallest.smallest
        head += f". Smallest rig that would: {s.description} with {s.strategy}"
        same = smallest.same_gpu
        if same and same is not s:
            head += f"; with this GPU: {same.description} ({same.strategy})"
        head += "."
    else:
        head += ". No rig of up to 512 catalog GPUs fits it without CPU offload."
    if w.finetune == "full" and w.task == "train":
        head += " LoRA or QLoRA (--finetune lora|qlora) needs far less."
    return head


def _advise_inference(view: rigview.RigView, w: Workload, notes: list[str]) -> Advice:
    if w.arch.max_positions and w.ctx > w.arch.max_positions:
        notes.append(
            f"--context {w.ctx} is longer than the model's max_position_embeddings ({w.arch.max_positions}): vLLM "
            "refuses "
            "such a --max-model-len unless the model's RoPE scaling allows it (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to "
            "force)"
        )
    opts, excluded = I.serving_options(view, w)
    perf = [I.serving_performance(view, w, o) if o.kv_budget_bytes > 0 else None for o in opts]
    chosen = I.pick_serving(opts)
    reason = I.explain_serving(opts, chosen, w)
    snippet = None
    smallest = None
    if chosen is not None:
        snippet = I.serving_snippet(w, chosen, _hf_id(w), view)
        if not chosen.nvlink:
            notes.append(
                f"TP={chosen.tp} crosses PCIe (no NVLink group of {chosen.tp}): every layer's all-reduce goes over "
                "PCIe, so decoding is slower than the memory math suggests"
            )
    else:
        smallest = smallest_rig(w, view.spec)
        reason = f"Nothing fits: {w.describe()} on {view.label}"
        if opts:
            most = max(opts, key=lambda o: o.kv_budget_bytes)
            reason += f"; with {most.group}, {most.reason or 'the KV cache does not fit'}"
        reason += I.what_fits_here(view, w) + I.batch_hint(opts, w)
        if smallest:
            reason += f". Smallest rig that would: {smallest.smallest.description} ({smallest.smallest.strategy})."
    cands = [o.to_model(w.ctx, p) for o, p in zip(opts, perf, strict=True)]
    assumptions = _assumptions(w, view) + I.serving_assumptions(w, view)
    return _answer(
        "inference",
        view,
        w,
        opts,
        cands,
        chosen,
        excluded=excluded,
        reason=reason,
        snippet=snippet,
        batch=None,
        smallest_rig=smallest,
        assumptions=assumptions,
        state_bytes=None,
        notes=notes,
    )


def _hf_id(w: Workload) -> str:
    from gpuadvisor import catalog

    spec = catalog.find_model(w.model_label) if w.model_label else None
    return spec.hf_id if spec and spec.hf_id else ""
