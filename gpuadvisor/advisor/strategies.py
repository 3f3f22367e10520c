"""Training candidates: enumerate the layouts a rig allows, predict memory, communication and time, pick one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.layout import pipeline_bubble, ring_attention_seconds, split_context, uses_torch_ring
from gpuadvisor.advisor.memory import (
    Layout,
    MemoryBreakdown,
    breakdown,
    model_states,
    recompute_mode,
    stage_params,
    state_split,
)
from gpuadvisor.advisor.moe import all_to_all
from gpuadvisor.advisor.rigview import Bandwidth, RigView
from gpuadvisor.advisor.workload import Workload


@dataclass
class Comm:
    """Communication of one optimizer step on one GPU."""

    dp_bytes: float = 0.0  # data-parallel collectives' buffer sizes, summed
    dp_seconds: float = 0.0
    dp_exposed_seconds: float = 0.0  # what the overlap with compute does not hide
    tp_seconds: float = 0.0
    pp_seconds: float = 0.0
    offload_seconds: float = 0.0
    offload_exposed_seconds: float = 0.0  # what the prefetch under compute does not hide
    cp_seconds: float = 0.0  # context parallel's K/V ring (advisor.layout)
    cp_exposed_seconds: float = 0.0
    ep_seconds: float = 0.0  # MoE token all-to-alls (advisor.moe)
    busbw: Bandwidth | None = None
    tp_busbw: Bandwidth | None = None
    detail: list[str] = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return (
            self.dp_seconds
            + self.tp_seconds
            + self.pp_seconds
            + self.offload_seconds
            + self.cp_seconds
            + self.ep_seconds
        )

    @property
    def exposed_seconds(self) -> float:
        return (
            self.dp_exposed_seconds
            + self.tp_seconds
            + self.pp_seconds
            + self.offload_exposed_seconds
            + self.cp_exposed_seconds
            + self.ep_seconds
        )


@dataclass
class Candidate:
    layout: Layout
    recompute: bool
    memory: MemoryBreakdown
    capacity_bytes: int
    accumulation: int
    global_batch: int
    tokens_per_step: int
    comm: Comm
    compute_seconds: float | None
    bubble_fraction: float
    step_seconds: float | None
    step_no_overlap_seconds: float | None
    ideal_seconds: float | None
    host_capacity_bytes: float | None
    status: str = "candidate"  # pick | rejected
    reason: str = ""
    step_compute: T.StepCompute | None = None
    rates: T.Rates | None = None
    recompute_mode: str = "none"
    band: dict[str, Any] | None = None  # error band of tokens/s and memory (advisor.calibration)

    @property
    def mfu(self) -> float | None:
        """Model FLOPs utilisation the prediction implies (advisor.timing's definition)."""
        if self.step_compute is None or self.rates is None or not self.step_seconds:
            return None
        return T.mfu(self.step_compute.model_flops, self.step_seconds, self.rates.peak_tflops)

    @property
    def name(self) -> str:
        return self.layout.name + (" + act. ckpt" if self.recompute else "")

    @property
    def fits(self) -> bool:
        if self.memory.total_bytes > self.capacity_bytes:
            return False
        return not (
            self.layout.offload != "none"
            and (self.host_capacity_bytes is None or self.memory.host_bytes > self.host_capacity_bytes)
        )

    @property
    def headroom_fraction(self) -> float:
        return (self.capacity_bytes - self.memory.total_bytes) / self.capacity_bytes

    @property
    def with_margin(self) -> bool:
        return self.fits and self.headroom_fraction >= C.MARGIN_FRACTION

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens_per_step / self.step_seconds if self.step_seconds else None

    @property
    def efficiency(self) -> float | None:
        """Fraction of the ideal speed (compute alone at the MFU, no recomputation, no communication): what the
        pick compares, so activation checkpointing's extra forward counts against a candidate."""
        return self.ideal_seconds / self.step_seconds if self.step_seconds and self.ideal_seconds else None

    @property
    def recompute_cap(self) -> float | None:
        """The efficiency this candidate would have with no communication at all: what recomputation leaves."""
        return self.ideal_seconds / self.compute_seconds if self.compute_seconds and self.ideal_seconds else None

    def misfit(self) -> str:
        """Why it does not fit, in one phrase (empty when it fits)."""
        gib = C.GiB
        if self.memory.total_bytes > self.capacity_bytes:
            return f"needs {self.memory.total_bytes / gib:.1f} GiB per GPU > {self.capacity_bytes / gib:.1f} GiB"
        if self.layout.offload != "none":
            if self.host_capacity_bytes is None:
                return "host RAM unknown: cannot check the CPU offload"
            if self.memory.host_bytes > self.host_capacity_bytes:
                return (
                    f"CPU offload needs {self.memory.host_bytes / gib:.0f} GiB of host RAM per node > "
                    f"{self.host_capacity_bytes / gib:.0f} GiB usable ({C.HOST_RAM_USABLE_FRACTION:.0%} of the host's)"
                )
        return ""

    def to_dict(self) -> dict[str, Any]:
        lay = self.layout
        return {
            "name": self.name,
            "key": lay.key + ("+ckpt" if self.recompute else ""),
            "framework": lay.framework,
            "data_parallel": lay.dp,
            "tensor_parallel": lay.tp,
            "pipeline_parallel": lay.pp,
            "virtual_pipeline_stages": lay.vpp,
            "context_parallel": lay.cp,
            "expert_parallel": lay.ep,
            "forced_layout": lay.forced,
            "zero_stage": lay.zero_stage,
            "hybrid_shard": lay.hybrid,
            "cpu_offload": lay.offload,
            "activation_checkpointing": self.recompute,
            "memory": self.memory.to_dict(),
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
            "headroom_fraction": round(self.headroom_fraction, 4),
            "gradient_accumulation": self.accumulation,
            "global_batch": self.global_batch,
            "tokens_per_step": self.tokens_per_step,
            "comm": {
                "data_parallel_bytes": round(self.comm.dp_bytes),
                "data_parallel_seconds": _r(self.comm.dp_seconds),
                "data_parallel_exposed_seconds": _r(self.comm.dp_exposed_seconds),
                "tensor_parallel_seconds": _r(self.comm.tp_seconds),
                "pipeline_seconds": _r(self.comm.pp_seconds),
                "offload_seconds": _r(self.comm.offload_seconds),
                "offload_exposed_seconds": _r(self.comm.offload_exposed_seconds),
                "context_parallel_seconds": _r(self.comm.cp_seconds),
                "context_parallel_exposed_seconds": _r(self.comm.cp_exposed_seconds),
                "expert_all_to_all_seconds": _r(self.comm.ep_seconds),
                "total_seconds": _r(self.comm.total_seconds),
                "busbw_gbps": _r(self.comm.busbw.gbps) if self.comm.busbw else None,
                "busbw_source": self.comm.busbw.source if self.comm.busbw else None,
                "busbw_measured": self.comm.busbw.measured if self.comm.busbw else None,
                "tp_busbw_gbps": _r(self.comm.tp_busbw.gbps) if self.comm.tp_busbw else None,
                "detail": self.comm.detail,
            },
            "compute_seconds": _r(self.compute_seconds),
            "compute_parts_seconds": {k: _r(v) for k, v in self.step_compute.parts.items() if k != "forward_fraction"}
            if self.step_compute
            else None,
            "compute_floor_bound": self.step_compute.floor_bound if self.step_compute else None,
            "recompute": self.recompute_mode,
            "mfu": round(self.mfu, 4) if self.mfu is not None else None,
            "band": self.band,
            "pipeline_bubble_fraction": round(self.bubble_fraction, 4),
            "step_seconds": _r(self.step_seconds),
            "step_seconds_no_overlap": _r(self.step_no_overlap_seconds),
            "tokens_per_second": _r(self.tokens_per_second),
            # The one efficiency figure, everywhere (table, reasons, pick, HTML): Candidate.efficiency.
            "ideal_speed_fraction": round(self.efficiency, 4) if self.efficiency is not None else None,
            "status": self.status,
            "reason": self.reason,
        }


# Tensor parallel off NVLink, one rule for every size: evaluated, picked only when nothing else fits (its four
# all-reduces per layer sit on the critical path; Megatron-LM keeps tensor parallel inside an NVLink node,
# Narayanan et al. 2021).
TP_OFF_NVLINK_RULE = (
    "tensor parallel across PCIe (4 all-reduces per layer on the critical path): picked only when nothing else fits"
)


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


# -- enumeration -------------------------------------------------------------------------------------------


def _divides_heads(w: Workload, t: int) -> bool:
    return w.arch.heads % t == 0 and w.arch.kv_heads % t == 0


def layouts(view: RigView, w: Workload) -> tuple[list[Layout], list[dict[str, str]]]:
    """Every layout worth predicting on this rig, and the ones left out with their reason."""
    n, m = view.gpus_per_node, view.nodes
    world = n * m
    out: list[Layout] = []
    excluded: list[dict[str, str]] = []
    host_known = view.host_memory_bytes is not None
    if world == 1:
        out.append(Layout("single", "single GPU", "PyTorch (no parallelism)", 0, dp=1))
    else:
        out += [
            Layout("ddp", "DDP", "PyTorch DDP", 0, dp=world, dp_spans_nodes=m > 1),
            Layout(
                "zero1",
                "ZeRO-1",
                "DeepSpeed ZeRO stage 1",
                1,
                dp=world,
                zero_stage=1,
                shard_group=world,
                dp_spans_nodes=m > 1,
            ),
            Layout(
                "zero2",
                "ZeRO-2 / FSDP SHARD_GRAD_OP",
                "FSDP SHARD_GRAD_OP or DeepSpeed ZeRO stage 2",
                2,
                dp=world,
                zero_stage=2,
                shard_group=world,
                dp_spans_nodes=m > 1,
            ),
            Layout(
                "zero3",
                "ZeRO-3 / FSDP FULL_SHARD",
                "FSDP FULL_SHARD or DeepSpeed ZeRO stage 3",
                3,
                dp=world,
                zero_stage=3,
                shard_group=world,
                dp_spans_nodes=m > 1,
            ),
        ]
        if m > 1:
            out.append(
                Layout(
                    "hsdp",
                    "FSDP HYBRID_SHARD",
                    "FSDP HYBRID_SHARD (shard in the node, replicate across)",
                    3,
                    dp=world,
                    zero_stage=3,
                    hybrid=True,
                    shard_group=n,
                    dp_spans_nodes=True,
                )
            )
    # CPU offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity), when the host's RAM is known.
    if host_known and not view.hypothetical:
        # A memory escape hatch, not a speed-up: picked only when nothing fits on the GPUs alone (DeepSpeed's
        # ZeRO-Offload/Infinity papers use it to fit models that do not fit otherwise; its transfers and CPU
        # optimizer step are modelled without latency, so its predicted speed is optimistic).
        out.append(
            Layout(
                "zero2-offload",
                "ZeRO-2 + CPU offload",
                "DeepSpeed ZeRO stage 2, offload_optimizer cpu",
                6,
                dp=world,
                zero_stage=2,
                shard_group=world,
                offload="optimizer",
                dp_spans_nodes=m > 1,
                last_resort=True,
            )
        )
        out.append(
            Layout(
                "zero3-offload",
                "ZeRO-3 + CPU offload",
                "DeepSpeed ZeRO stage 3, offload_optimizer + offload_param cpu",
                7,
                dp=world,
                zero_stage=3,
                shard_group=world,
                offload="optimizer+params",
                dp_spans_nodes=m > 1,
                last_resort=True,
            )
        )
    elif not view.hypothetical:
        excluded.append(
            {"strategy": "CPU offload", "reason": "the scan has no host RAM figure, so offload cannot be sized"}
        )
    if w.finetune != "full":
        # Megatron-LM's pretrain_gpt.py trains every weight: no LoRA adapters, no 4-bit base. Adapter training
        # runs under PEFT, whose models DDP, FSDP and DeepSpeed shard (Hugging Face PEFT/accelerate docs).
        excluded.append(
            {
                "strategy": "tensor / pipeline parallel",
                "reason": f"{w.finetune.upper() if w.finetune == 'qlora' else 'LoRA'} runs under PEFT (DDP, FSDP or "
                "DeepSpeed); "
                "Megatron-LM's pretrain_gpt.py, which the TP/PP snippets launch, trains every weight",
            }
        )
        return out, excluded
    # Tensor parallel inside an NVLink domain; across PCIe a last resort (TP_OFF_NVLINK_RULE), whatever its size.
    domain = view.nvlink_domain()
    t = 2
    while t <= n:
        if not _divides_heads(w, t):
            excluded.append(
                {
                    "strategy": f"TP={t}",
                    "reason": f"{w.arch.heads} heads / {w.arch.kv_heads} KV heads do not divide by {t}",
                }
            )
        elif t <= domain:
            out.append(
                Layout(
                    f"tp{t}",
                    f"TP={t} + ZeRO-1 DP={world // t}" if world > t else f"TP={t}",
                    "Megatron-LM (tensor parallel + sequence parallel, distributed optimizer)",
                    4,
                    dp=world // t,
                    tp=t,
                    zero_stage=1 if world > t else 0,
                    shard_group=world // t,
                    dp_spans_nodes=m > 1,
                )
            )
        else:  # crosses PCIe: TP_OFF_NVLINK_RULE, the same for every size
            out.append(
                Layout(
                    f"tp{t}",
                    f"TP={t} (PCIe) + ZeRO-1 DP={world // t}" if world > t else f"TP={t} (PCIe)",
                    "Megatron-LM (tensor parallel + sequence parallel, distributed optimizer)",
                    5,
                    dp=world // t,
                    tp=t,
                    zero_stage=1 if world > t else 0,
                    shard_group=world // t,
                    dp_spans_nodes=m > 1,
                    last_resort=True,
                )
            )
        t *= 2
    # Pipeline parallel: across nodes, or across the slow links of a node without NVLink.
    if m > 1 and m <= w.arch.layers:
        # Megatron-LM PTD-P layouts (Narayanan et al. 2021): tensor parallel inside the node, pipeline stages across
        # nodes, data parallel over the rest. The pipeline depth is not tied to the node count: every depth from 2
        # that divides the GPUs left after TP (powers of two, and the node count) up to the layer count.
        tps = sorted({1, domain if _divides_heads(w, domain) else 1})
        for tp in tps:
            rest = world // tp
            depths = sorted({p for p in (2**k for k in range(1, 12)) if rest % p == 0} | {m})
            for pp in depths:
                if pp > w.arch.layers or rest % pp:
                    continue
                dp = rest // pp
                name = (
                    f"PP={pp}"
                    + (" (across nodes)" if pp == m else "")
                    + (f" × TP={tp}" if tp > 1 else "")
                    + (f" + ZeRO-1 DP={dp}" if dp > 1 else "")
                )
                out.append(
                    Layout(
                        f"pp{pp}" + (f"-tp{tp}" if tp > 1 else ""),
                        name,
                        "Megatron-LM (pipeline 1F1B across nodes)",
                        5 + (tp > 1),
                        dp=dp,
                        tp=tp,
                        pp=pp,
                        zero_stage=1 if dp > 1 else 0,
                        shard_group=dp,
                        pp_across_nodes=True,
                        dp_spans_nodes=tp * dp > n,
                    )
                )
    elif n > 1 and not view.nvlink_ring():
        p = 2
        while p <= n and p <= w.arch.layers:
            dp = world // p
            out.append(
                Layout(
                    f"pp{p}",
                    f"PP={p} (PCIe)" + (f" + ZeRO-1 DP={dp}" if dp > 1 else ""),
                    "Megatron-LM or DeepSpeed pipeline (1F1B)",
                    5,
                    dp=dp,
                    pp=p,
                    zero_stage=1 if dp > 1 else 0,
                    shard_group=dp,
                    dp_spans_nodes=m > 1,
                )
            )
            p *= 2
    elif n > 1:
        excluded.append(
            {
                "strategy": "pipeline parallel",
                "reason": "NVLink joins every GPU of this node: pipeline stages belong across slow links or nodes "
                "(pass --nodes for several)",
            }
        )
    return out, excluded


# -- prediction ----------------------------------------------------------------------------------------------


def default_global_batch(w: Workload, world: int) -> int:
    per_step = w.micro_batch * world
    want = math.ceil(C.DEFAULT_GLOBAL_BATCH_TOKENS / w.seq)
    return max(per_step, math.ceil(want / per_step) * per_step)


def _batch(w: Workload, dp: int, world: int) -> tuple[int, int]:
    """(gradient accumulation steps, global batch in sequences) for a data-parallel size.

    Every candidate trains the same global batch, so their step times compare like for like: --global-batch,
    or DEFAULT_GLOBAL_BATCH_TOKENS worth of sequences (at least one micro-batch per GPU).
    """
    per_step = w.micro_batch * dp
    target = w.global_batch if w.global_batch is not None else default_global_batch(w, world)
    acc = max(1, math.ceil(target / per_step))
    return acc, acc * per_step


def default_rates(view: RigView, w: Workload, measurements: list | None = None) -> T.Rates | None:
    """The GPU's sustained rates for the workload's precision (fp8: the 16-bit peak, linears at the FP8 rate)."""
    prec = "bf16" if w.precision == "fp8" else w.compute_precision()
    peak, _ = view.peak_tflops(prec)
    if peak is None:
        return None
    return T.rates(view.spec, w.precision, peak, measurements, attention_kernel=w.attention_kernel)


def evaluate(view: RigView, w: Workload, lay: Layout, recompute: bool, rates: T.Rates | None = None) -> Candidate:
    acc, gbatch = _batch(w, lay.dp, view.total_gpus)
    mem = breakdown(w, lay, recompute, acc, view.gpus_per_node, view.nodes)
    tokens = gbatch * w.seq
    r = rates if rates is not None else default_rates(view, w)
    mode = recompute_mode(w, recompute)
    sc = ideal_sc = None
    if r is not None:
        kw: dict[str, Any] = dict(
            tp=lay.tp,
            pp=lay.pp,
            accumulation=acc,
            dp=lay.dp,
            shard_group=lay.shard_group,
            zero_stage=lay.zero_stage,
            r=r,
            offload=lay.offload != "none",
        )
        sc = T.step_compute(w, recompute=mode, **kw)
        ideal_sc = T.step_compute(w, recompute="none", **kw)
        if lay.cp > 1:
            ring = uses_torch_ring(lay, w)
            sc, ideal_sc = split_context(sc, lay.cp, ring), split_context(ideal_sc, lay.cp, ring)
    compute = sc.seconds if sc else None
    ideal = ideal_sc.seconds if ideal_sc else None
    idle = pipeline_bubble(lay.pp, lay.vpp, acc)
    bubble = idle / (1 + idle)
    comm = communication(view, w, lay, recompute, acc, compute, sc)
    comm.cp_seconds, ring_line = ring_attention_seconds(view, w, lay, recompute, acc)
    if ring_line:
        attention = sc.parts.get("attention", 0.0) if sc else 0.0
        comm.cp_exposed_seconds = max(0.0, comm.cp_seconds - attention)
        comm.detail.append(ring_line)
    comm.ep_seconds, a2a_line = all_to_all(view, w, lay, recompute, acc)
    if a2a_line:
        comm.detail.append(a2a_line)
    paging, paging_line = paged_state_seconds(view, w, lay, mem)
    if paging_line:
        comm.offload_seconds += paging
        comm.offload_exposed_seconds += paging
        comm.detail.append(paging_line)
    host_cap = view.host_memory_bytes * C.HOST_RAM_USABLE_FRACTION if view.host_memory_bytes else None
    step = step_no = None
    if compute is not None:
        busy = compute * (1 + idle)
        step = busy + comm.exposed_seconds
        step_no = busy + comm.total_seconds
    # Capacity is what CUDA gives torch: NVML's total less the driver's reservation (the CUDA context, NCCL
    # buffers and the allocator's reserve are in the breakdown's overhead).
    c = Candidate(
        lay,
        recompute,
        mem,
        view.cuda_memory_bytes,
        acc,
        gbatch,
        tokens,
        comm,
        compute,
        bubble,
        step,
        step_no,
        ideal,
        host_cap,
    )
    c.step_compute = sc
    c.rates = r
    c.recompute_mode = mode
    return c


def paged_state_seconds(view: RigView, w: Workload, lay: Layout, mem: MemoryBreakdown) -> tuple[float, str]:
    """A paged optimizer's states (bitsandbytes' paged optimizers: CUDA unified memory) that the GPU has no room for
    are evicted to host RAM and faulted back when the step reads them: what does not fit comes in and goes out once a
    step, on the two directions of the full-duplex PCIe link at once, the kernels waiting on the faults (Dettmers et
    al. 2023, QLoRA, section 3, "paged optimizers"). None where the states fit, or the optimizer is not paged."""
    if not w.optimizer_bytes().paged or lay.offload != "none":
        return 0.0, ""
    _, _, states = model_states(w, lay)
    free = view.cuda_memory_bytes - mem.total_bytes  # the breakdown counts a paged optimizer's states on the host
    paged = max(0.0, states - max(0.0, free))
    if paged <= 0:
        return 0.0, ""
    pcie = (view.pcie_gbps or 1.0) * C.PCIE_BUSBW_EFFICIENCY
    secs = paged / (pcie * 1e9)
    return secs, (
        f"paged optimizer: {paged / 1e9:.1f} GB of its {states / 1e9:.1f} GB of states do not fit beside the rest: "
        f"paged in and out every step over PCIe ({pcie:.1f} GB/s each way), the step waiting on the page faults"
    )


def _overlapped(comm: float, window: float, overlap: float | None = None) -> float:
    """Exposed seconds of a collective prefetched under ``window`` seconds of compute: what outlasts the compute, plus
    the part of the shorter of the two that contention keeps from overlapping (constants.SHARDED_OVERLAP, or the
    stack's own: timing.sharded_overlap)."""
    ov = C.SHARDED_OVERLAP if overlap is None else overlap
    return max(0.0, comm - window) + (1 - ov) * min(comm, window)


def communication(
    view: RigView,
    w: Workload,
    lay: Layout,
    recompute: bool,
    acc: int,
    compute: float | None,
    sc: T.StepCompute | None = None,
) -> Comm:
    """Bytes and seconds of one step's collectives (ring algorithms, nccl-tests busbw, NCCL's latency per ring step;
    nccl-tests doc/PERFORMANCE.md, NCCL's tuning.cc)."""
    c = Comm()
    sp = state_split(w)
    mp = lay.tp * lay.pp
    trainable = (w.params if w.finetune == "full" else w.trainable_params()) / mp
    if w.finetune == "full" and w.arch.is_moe:
        trainable = sum(stage_params(w, lay))  # the experts split over ep, the rest over tp · pp
    grad_bytes = trainable * min(sp.grads, 4)
    if w.finetune == "full":
        param_bytes = trainable * sp.weights  # the 16-bit weights ZeRO all-gathers
        gather_bytes = param_bytes
    else:
        param_bytes = trainable * sp.weights
        gather_bytes = w.params / mp * max(sp.frozen_weight_bytes, 0.5) + param_bytes
    dp = lay.dp * lay.cp  # the data-parallel collectives run over the context-parallel ranks too
    per_node = max(1, view.gpus_per_node // mp) if not lay.pp_across_nodes else max(1, view.gpus_per_node // lay.tp)
    fwd_frac = (
        sc.forward_fraction
        if sc is not None
        else (2 / (8 if recompute else 6) if w.finetune == "full" else 2 / (6 if recompute else 4))
    )
    busy = (compute - (sc.parts.get("optimizer", 0.0) if sc else 0.0)) if compute else 0.0
    fwd = busy * fwd_frac
    bwd = busy - fwd
    units = w.arch.layers + 2  # FSDP units: each layer, the embedding and the output layer
    if dp > 1:
        if lay.hybrid:
            shard = view.gpus_per_node
            if lay.forced:  # --layout hsdp=RxS: its own shard group (S · cp GPUs), the rest replicas
                shard = max(1, min(lay.shard_group, view.gpus_per_node))
            bw_in = view.intra_busbw(shard, nvlink=view.nvlink_ring())
            lat = units * F.ring_latency_seconds("all_gather", shard, spans_nodes=False)
            ag = F.collective_seconds("all_gather", gather_bytes, shard, bw_in.gbps) + lat
            rs = F.collective_seconds("reduce_scatter", grad_bytes, shard, bw_in.gbps) + lat
            replicas = max(1, dp // shard) if lay.forced else view.nodes
            cross = F.collective_seconds("all_reduce", grad_bytes / shard, replicas, view.inter_node.gbps)
            c.busbw = bw_in
            c.dp_bytes = acc * (2 * gather_bytes + grad_bytes) + grad_bytes / shard
            c.dp_seconds = acc * (2 * ag + rs) + cross
            c.dp_exposed_seconds = _overlapped(acc * ag, fwd) + _overlapped(acc * (ag + rs) + cross, bwd) + ag / units
            c.detail.append(
                f"per micro-batch: 2 all-gathers of {gather_bytes / 1e9:.2f} GB + reduce-scatter of "
                f"{grad_bytes / 1e9:.2f} GB "
                f"inside the node ({bw_in.gbps:.0f} GB/s); per step: all-reduce of the {grad_bytes / shard / 1e9:.2f} "
                "GB shard across "
                f"{view.nodes} nodes ({view.inter_node.gbps:g} GB/s)"
            )
        else:
            bw = view.dp_busbw(per_node, lay.dp_spans_nodes)
            c.busbw = bw
            last_bucket = F.collective_seconds("all_reduce", min(C.DDP_BUCKET_BYTES, grad_bytes), dp, bw.gbps)
            # DDP under no_sync and ZeRO-1 reduce the accumulated gradients once per step, during the last
            # micro-batch's backward pass: only that pass can hide them.
            bwd_last = bwd / acc
            if lay.zero_stage == 0:
                t = F.collective_seconds("all_reduce", grad_bytes, dp, bw.gbps)
                c.dp_bytes, c.dp_seconds = grad_bytes, t
                c.dp_exposed_seconds = max(t - bwd_last, last_bucket)
                c.detail.append(
                    f"per step: all-reduce of {grad_bytes / 1e9:.2f} GB of gradients over {dp} GPUs, overlapped with "
                    "the last "
                    "micro-batch's backward pass (25 MB buckets)"
                )
            elif lay.zero_stage == 1:
                rs = F.collective_seconds("reduce_scatter", grad_bytes, dp, bw.gbps)
                ag = F.collective_seconds("all_gather", param_bytes, dp, bw.gbps)
                c.dp_bytes, c.dp_seconds = grad_bytes + param_bytes, rs + ag
                c.dp_exposed_seconds = max(rs - bwd_last, last_bucket) + ag
                c.detail.append(
                    f"per step: reduce-scatter of {grad_bytes / 1e9:.2f} GB of gradients + all-gather of "
                    f"{param_bytes / 1e9:.2f} GB of updated weights"
                )
            elif lay.zero_stage == 2:
                rs = F.collective_seconds("reduce_scatter", grad_bytes, dp, bw.gbps)
                ag = F.collective_seconds("all_gather", param_bytes, dp, bw.gbps)
                c.dp_bytes, c.dp_seconds = acc * grad_bytes + param_bytes, acc * rs + ag
                c.dp_exposed_seconds = max(acc * rs - bwd, last_bucket) + ag
                c.detail.append(
                    f"per micro-batch: reduce-scatter of {grad_bytes / 1e9:.2f} GB; per step: all-gather of "
                    f"{param_bytes / 1e9:.2f} GB"
                )
            else:
                lat = units * F.ring_latency_seconds("all_gather", dp, spans_nodes=lay.dp_spans_nodes)
                slow = T.sharded_comm_factor(w)  # DeepSpeed ZeRO-3's collectives: fitted on its published runs
                ag = F.collective_seconds("all_gather", gather_bytes, dp, bw.gbps) * slow + lat
                rs = F.collective_seconds("reduce_scatter", grad_bytes, dp, bw.gbps) * slow + lat
                c.dp_bytes, c.dp_seconds = acc * (2 * gather_bytes + grad_bytes), acc * (2 * ag + rs)
                ov = T.sharded_overlap(w)
                c.dp_exposed_seconds = (
                    _overlapped(acc * ag, fwd, ov) + _overlapped(acc * (ag + rs), bwd, ov) + ag / units
                )
                c.detail.append(
                    f"per micro-batch: all-gather forward + all-gather backward of {gather_bytes / 1e9:.2f} GB + "
                    "reduce-scatter of "
                    f"{grad_bytes / 1e9:.2f} GB (1.5x DDP), one per FSDP unit ({units}, {lat * 1e3:.1f} ms of NCCL "
                    "latency each way), "
                    f"prefetched under compute with {C.SHARDED_OVERLAP:.0%} of the shorter overlapping"
                )
    if lay.tp > 1:
        tbw = view.intra_busbw(lay.tp, nvlink=view.nvlink_groups_of(lay.tp))
        c.tp_busbw = tbw
        msg = w.seq * w.micro_batch * w.arch.hidden * 2 / lay.cp
        per_layer = 6 if recompute else 4
        layers = math.ceil(w.arch.layers / lay.pp)
        c.tp_seconds = acc * layers * per_layer * F.collective_seconds("all_reduce", msg, lay.tp, tbw.gbps)
        c.detail.append(
            f"tensor parallel: {per_layer} all-reduces of {msg / 1e6:.1f} MB per layer and micro-batch over {lay.tp} "
            "GPUs "
            f"({tbw.gbps:.0f} GB/s), on the critical path"
        )
    if lay.pp > 1:
        msg = w.seq * w.micro_batch * w.arch.hidden * 2 / lay.tp / lay.cp
        if lay.pp_across_nodes:
            pp_gbps = view.inter_node.gbps
            where = f"across nodes ({pp_gbps:g} GB/s)"
        else:
            pp_gbps = (view.pcie_gbps or 1.0) * C.PCIE_BUSBW_EFFICIENCY * (1 if view.p2p_ok else C.NO_P2P_FACTOR)
            where = f"over PCIe ({pp_gbps:.1f} GB/s)"
        c.pp_seconds = 2 * acc * msg / (pp_gbps * 1e9)
        c.detail.append(f"pipeline: {msg / 1e6:.1f} MB forward and backward per micro-batch and stage boundary {where}")
    if lay.offload != "none":
        pcie = (view.pcie_gbps or 1.0) * C.PCIE_BUSBW_EFFICIENCY
        host_shard = trainable / lay.dp
        moved_bytes = host_shard * (
            2 + (2 if w.pure_bf16 else 4)
        )  # 16-bit weights up, fp32 (pure bf16: bf16) gradients down
        fetch_bytes = 0.0
        if lay.offload == "optimizer+params":
            # Every rank fetches its host_shard of all the weights (a LoRA model's frozen base included) from the host
            # for the forward and again for the backward of every micro-batch, then all-gathers it.
            fetch_bytes = acc * 2 * gather_bytes / lay.dp
            moved_bytes += fetch_bytes
        gpus_per_host = view.gpus_per_node
        # The CPU optimizer step moves the bytes its states need: 30 per parameter for mixed-precision AdamW
        # (DeepSpeed's CPU-Adam count), about half with the states in bf16 (Workload.optimizer_step_bytes).
        cpu_adam = host_shard * gpus_per_host * w.optimizer_step_bytes() / (C.HOST_MEMORY_GBPS * 1e9)
        c.offload_seconds = moved_bytes / (pcie * 1e9) + cpu_adam
        # The weight fetches run on the same prefetching stream as the all-gathers they feed, one unit ahead of the
        # compute (FSDP's CPUOffload, ZeRO-3's offload_param): hidden under what compute the PCIe link has left after
        # the collectives. The step's own transfers and the CPU optimizer step are not.
        fetch = fetch_bytes / (pcie * 1e9)
        window = max(0.0, (busy or 0.0) - c.dp_seconds)
        c.offload_exposed_seconds = c.offload_seconds - fetch + _overlapped(fetch, window, T.sharded_overlap(w))
        c.detail.append(
            f"CPU offload: {moved_bytes / 1e9:.2f} GB over PCIe ({pcie:.1f} GB/s) per GPU and step + CPU Adam over "
            f"{host_shard * gpus_per_host / 1e9:.2f}B parameters per node at {C.HOST_MEMORY_GBPS:g} GB/s host memory "
            "bandwidth (assumed)" + (f"; the weight fetches ({fetch:.1f} s) prefetched under compute" if fetch else "")
        )
    return c


def candidates(
    view: RigView, w: Workload, rates: T.Rates | None = None
) -> tuple[list[Candidate], list[dict[str, str]]]:
    """Every layout, with activation checkpointing as the workload asks (auto: only where needed to fit)."""
    if w.layout:
        from gpuadvisor.advisor.layout import build

        lays = [build(w.layout, view, w)]
        excluded = [{"strategy": "every other layout", "reason": f"--layout {w.layout} asked for this one"}]
    else:
        lays, excluded = layouts(view, w)
    out = []
    for lay in lays:
        if w.checkpointing == "full":
            out.append(evaluate(view, w, lay, True, rates))
            continue
        plain = evaluate(view, w, lay, False, rates)
        if w.checkpointing == "auto" and not plain.with_margin and not plain.misfit().startswith(("CPU", "host")):
            ckpt = evaluate(view, w, lay, True, rates)
            better = (
                ckpt.with_margin
                or (ckpt.fits and not plain.fits)
                or (not plain.fits and ckpt.memory.total_bytes < plain.memory.total_bytes)
            )
            out.append(ckpt if better else plain)
        else:
            out.append(plain)
    return out, excluded


# -- the pick ---------------------------------------------------------------------------------------------------


def pick(cands: list[Candidate], world: int) -> Candidate | None:
    """The simplest candidate that fits with margin and keeps its speed close to the ideal.

    Among candidates that fit with ``MARGIN_FRACTION`` of memory to spare (any that fit, if none does), those
    whose fraction of the ideal speed (``Candidate.efficiency``: communication, pipeline bubble and
    recomputation all count against it) reaches the practitioners' scaling target for this many GPUs
    (``constants``), or is within ``EFFICIENCY_TOLERANCE`` of the best candidate's, are acceptable; the simplest
    acceptable one wins (DDP, then ZeRO-1/2/3 sharding, then tensor parallel, pipeline, CPU offload), the faster
    on a tie. Tensor parallel over PCIe and CPU offload are picked only when nothing else fits (Megatron-LM,
    Narayanan et al. 2021: keep t inside an NVLink domain; on PCIe-only machines t > 2 rarely pays; offload is a memory
    escape hatch).
    """
    fitting = [c for c in cands if c.with_margin] or [c for c in cands if c.fits]
    if not fitting:
        return None
    fitting = [c for c in fitting if not c.layout.last_resort] or fitting
    effs = [c.efficiency for c in fitting if c.efficiency is not None]
    if effs:
        bar = min(C.target_efficiency(world), max(effs) - C.EFFICIENCY_TOLERANCE)
        acceptable = [c for c in fitting if c.efficiency is not None and c.efficiency >= bar]
    else:
        acceptable = fitting
    return min(
        acceptable, key=lambda c: (c.layout.rank, c.recompute, -(c.tokens_per_second or 0), c.memory.total_bytes)
    )


def _offload_reason(c: Candidate, chosen: Candidate) -> str:
    """Why a CPU-offload candidate is not the pick, said in its row even when its predicted speed beats the pick's."""
    base = "CPU offload: picked only when nothing fits on the GPUs alone"
    tps, ctps = c.tokens_per_second, chosen.tokens_per_second
    if not (tps and ctps and tps > ctps * (1 + C.EFFICIENCY_TOLERANCE)):
        return base
    why = ", as it skips activation checkpointing" if chosen.recompute and not c.recompute else ""
    spare = f"; and it leaves only {c.headroom_fraction:.0%} of memory to spare" if not c.with_margin else ""
    return (
        f"{base}: its {tps:,.0f} tokens/s (vs the pick's {ctps:,.0f}{why}) model the host transfers and the CPU Adam "
        f"step at full bandwidth with no latency or CPU contention, an upper bound{spare}"
    )


def explain(cands: list[Candidate], chosen: Candidate | None, world: int) -> str:
    """Mark each candidate picked or rejected with its reason; return the one-sentence reason for the pick."""
    gib = C.GiB
    target = C.target_efficiency(world)
    for c in cands:
        eff = c.efficiency
        if c is chosen:
            c.status = "pick"
            continue
        c.status = "rejected"
        miss = c.misfit()
        if miss:
            c.reason = f"does not fit: {miss}"
        elif c.layout.last_resort and chosen is not None and not chosen.layout.last_resort:
            c.reason = _offload_reason(c, chosen) if c.layout.offload != "none" else TP_OFF_NVLINK_RULE
        elif not c.with_margin and chosen is not None and chosen.with_margin:
            c.reason = f"fits with only {c.headroom_fraction:.0%} of memory to spare"
        elif (
            eff is not None
            and chosen is not None
            and chosen.efficiency is not None
            and eff < chosen.efficiency - C.EFFICIENCY_TOLERANCE
        ):
            c.reason = f"runs at {eff:.0%} of the ideal speed, the pick at {chosen.efficiency:.0%}" + (
                " (activation checkpointing recomputes the forward pass)"
                if c.recompute and not chosen.recompute
                else ""
            )
        elif chosen is not None and c.layout.rank > chosen.layout.rank:
            c.reason = f"fits, but {chosen.name} is simpler and about as fast"
        elif chosen is not None and c.recompute and not chosen.recompute:
            c.reason = "needs activation checkpointing (+33% compute); the pick does not"
        elif chosen is not None:
            tps, ctps = c.tokens_per_second, chosen.tokens_per_second
            c.reason = (
                f"slower than the pick ({tps:,.0f} vs {ctps:,.0f} tokens/s)"
                if tps and ctps
                else "the pick is preferred"
            )
    if chosen is None:
        return ""
    used = chosen.memory.total_bytes / gib
    cap = chosen.capacity_bytes / gib
    sc = chosen.efficiency
    eff_txt = f" and runs at {sc:.0%} of the ideal speed" if sc is not None and world > 1 else ""
    simpler = [c for c in cands if c.layout.rank < chosen.layout.rank and c is not chosen]
    misfits = [c for c in simpler if not c.fits]
    if chosen.layout.rank == 0:
        why = f"{chosen.name} fits ({used:.1f} of {cap:.1f} GiB per GPU){eff_txt}: nothing is simpler."
    elif misfits and len(misfits) == len(simpler):
        worst = max(misfits, key=lambda c: c.layout.rank)
        why = (
            f"{chosen.name} is the simplest strategy that fits ({used:.1f} of {cap:.1f} GiB per GPU){eff_txt}; "
            f"{worst.name} {worst.misfit()}."
        )
    else:
        lower = [c for c in simpler if c.fits]
        slow = ", ".join(f"{c.name} {c.efficiency:.0%}" for c in lower if c.efficiency is not None)
        why = f"{chosen.name} fits ({used:.1f} of {cap:.1f} GiB per GPU){eff_txt}" + (
            f"; at {chosen.efficiency:.0%} of the ideal speed it is faster than the simpler ones that fit ({slow})."
            if slow and chosen.efficiency is not None
            else "."
        )
    if world > 1 and sc is not None and sc < target:
        fitting = [c.efficiency or 0.0 for c in cands if c.fits]
        cap_ = chosen.recompute_cap
        cause = (
            f" (activation checkpointing's recomputation alone caps it at {cap_:.0%})"
            if chosen.recompute and cap_ is not None and cap_ < target
            else ""
        )
        why += (
            f" No candidate that fits reaches the {target:.0%} of the ideal speed the advisor aims for on {world} "
            f"GPUs{cause}."
            if max(fitting, default=0.0) < target
            else f" That is below the {target:.0%} the advisor aims for on {world} GPUs{cause}."
        )
    return why
