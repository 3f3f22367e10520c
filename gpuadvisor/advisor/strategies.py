"""Training candidates: enumerate the layouts a rig allows, predict memory, communication and time, pick one."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gpuadvisor.advice_model import CandidateBands, CommFigures, Excluded, MemoryFigures, TrainCandidate
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.communication import Comm, communication, paged_state_seconds
from gpuadvisor.advisor.enumeration import layouts
from gpuadvisor.advisor.layout import pipeline_bubble, ring_attention_seconds, split_context, uses_torch_ring
from gpuadvisor.advisor.memory import Layout, MemoryBreakdown, breakdown, recompute_mode
from gpuadvisor.advisor.moe import all_to_all
from gpuadvisor.advisor.rigview import RigView
from gpuadvisor.advisor.workload import Workload


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
    band: CandidateBands | None = None  # error band of tokens/s and memory (advisor.calibration)

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

    def to_model(self) -> TrainCandidate:
        """The candidate as the advice carries it (figures rounded as the JSON has them)."""
        lay, k = self.layout, self.comm
        return TrainCandidate(
            name=self.name,
            key=lay.key + ("+ckpt" if self.recompute else ""),
            framework=lay.framework,
            data_parallel=lay.dp,
            tensor_parallel=lay.tp,
            pipeline_parallel=lay.pp,
            virtual_pipeline_stages=lay.vpp,
            context_parallel=lay.cp,
            expert_parallel=lay.ep,
            forced_layout=lay.forced,
            zero_stage=lay.zero_stage,
            hybrid_shard=lay.hybrid,
            cpu_offload=lay.offload,
            activation_checkpointing=self.recompute,
            memory=MemoryFigures.from_json_dict(self.memory.to_dict(), "memory"),
            capacity_bytes=self.capacity_bytes,
            fits=self.fits,
            headroom_fraction=round(self.headroom_fraction, 4),
            gradient_accumulation=self.accumulation,
            global_batch=self.global_batch,
            tokens_per_step=self.tokens_per_step,
            comm=CommFigures(
                data_parallel_bytes=round(k.dp_bytes),
                data_parallel_seconds=_r(k.dp_seconds),
                data_parallel_exposed_seconds=_r(k.dp_exposed_seconds),
                tensor_parallel_seconds=_r(k.tp_seconds),
                pipeline_seconds=_r(k.pp_seconds),
                offload_seconds=_r(k.offload_seconds),
                offload_exposed_seconds=_r(k.offload_exposed_seconds),
                context_parallel_seconds=_r(k.cp_seconds),
                context_parallel_exposed_seconds=_r(k.cp_exposed_seconds),
                expert_all_to_all_seconds=_r(k.ep_seconds),
                total_seconds=_r(k.total_seconds),
                busbw_gbps=_r(k.busbw.gbps) if k.busbw else None,
                busbw_source=k.busbw.source if k.busbw else None,
                busbw_measured=k.busbw.measured if k.busbw else None,
                tp_busbw_gbps=_r(k.tp_busbw.gbps) if k.tp_busbw else None,
                detail=k.detail,
            ),
            compute_seconds=_r(self.compute_seconds),
            compute_parts_seconds={k: _r(v) for k, v in self.step_compute.parts.items() if k != "forward_fraction"}
            if self.step_compute
            else None,
            compute_floor_bound=self.step_compute.floor_bound if self.step_compute else None,
            recompute=self.recompute_mode,
            mfu=round(self.mfu, 4) if self.mfu is not None else None,
            band=self.band,
            pipeline_bubble_fraction=round(self.bubble_fraction, 4),
            step_seconds=_r(self.step_seconds),
            step_seconds_no_overlap=_r(self.step_no_overlap_seconds),
            tokens_per_second=_r(self.tokens_per_second),
            # The one efficiency figure, everywhere (table, reasons, pick, HTML): Candidate.efficiency.
            ideal_speed_fraction=round(self.efficiency, 4) if self.efficiency is not None else None,
            status=self.status,
            reason=self.reason,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_model().to_json_dict()


# Tensor parallel off NVLink, one rule for every size: evaluated, picked only when nothing else fits (its four
# all-reduces per layer sit on the critical path; Megatron-LM keeps tensor parallel inside an NVLink node,
# Narayanan et al. 2021).
TP_OFF_NVLINK_RULE = (
    "tensor parallel across PCIe (4 all-reduces per layer on the critical path): picked only when nothing else fits"
)


def _r(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


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


def engine_stack(w: Workload, lay: Layout) -> tuple[Workload, str]:
    """The workload as the layout's own engine runs it, and a note where --stack overrides that engine: a layout
    only DeepSpeed runs (ZeRO-1, ZeRO-Offload; launched with its ds_config.json) is timed as DeepSpeed unless a
    stack was given. Without --state-bytes, the stack's own model-state accounting (state_bytes_of)."""
    note = ""
    if lay.framework.startswith("DeepSpeed") and w.stack != "deepspeed":
        if not w.stack_given:
            w = replace(w, stack="deepspeed")
        else:
            note = (
                f"timed as {T.STACK_NAMES.get(w.stack, w.stack)} (--stack), not as DeepSpeed, the engine this "
                "layout's launch lines run"
            )
    if not w.state_bytes_given:
        own = state_bytes_of(w, lay)
        if own != w.state_bytes:
            w = replace(w, state_bytes=own)
    return w, note


def state_bytes_of(w: Workload, lay: Layout) -> str:
    """The model-state accounting a stack keeps in mixed precision: Megatron-DeepSpeed's tensor or pipeline parallel
    runs in bf16 (DeepSpeed's BF16 optimizer, BLOOM's recipe) accumulate fp32 gradients beside the bf16 ones (20
    bytes per parameter: its fp32_groups_gradients); else as given (default the ZeRO paper's 16; Megatron-Core's
    gradient buffer is fp32 or bf16 by the recipe's grad_reduce_in_fp32, so --state-bytes says which)."""
    if w.precision == "fp32" or w.state_bytes != "16":
        return w.state_bytes
    if w.stack == "deepspeed" and (lay.tp > 1 or lay.pp > 1):
        return "20"
    return w.state_bytes


def evaluate(view: RigView, w: Workload, lay: Layout, recompute: bool, rates: T.Rates | None = None) -> Candidate:
    w, stack_note = engine_stack(w, lay)
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
    if stack_note:
        comm.detail.append(stack_note)
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


def candidates(view: RigView, w: Workload, rates: T.Rates | None = None) -> tuple[list[Candidate], list[Excluded]]:
    """Every layout, with activation checkpointing as the workload asks (auto: only where needed to fit)."""
    if w.layout:
        from gpuadvisor.advisor.layout import build

        lays = [build(w.layout, view, w)]
        excluded = [Excluded(strategy="every other layout", reason=f"--layout {w.layout} asked for this one")]
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
