"""Communication of one training step: data-parallel collectives (DDP, ZeRO, FSDP, HYBRID_SHARD), tensor and
pipeline parallel traffic, CPU offload and paged optimizer states over PCIe."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce
from typing import ClassVar

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import fitted
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor import network as N
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.memory import Layout, MemoryBreakdown, model_states, stage_params, state_split
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

    # Each part of the step's communication: (its time, the part of it the step waits for). Tensor parallel,
    # pipeline and expert all-to-alls are never hidden under compute.
    PARTS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("dp_seconds", "dp_exposed_seconds"),
        ("tp_seconds", "tp_seconds"),
        ("pp_seconds", "pp_seconds"),
        ("offload_seconds", "offload_exposed_seconds"),
        ("cp_seconds", "cp_exposed_seconds"),
        ("ep_seconds", "ep_seconds"),
    )

    def _added(self, names: Iterable[str]) -> float:
        # Left to right, as written out before (sum() compensates on Python 3.12+: the last digit could move).
        return reduce(operator.add, (getattr(self, n) for n in names))

    @property
    def total_seconds(self) -> float:
        return self._added(total for total, _ in self.PARTS)

    @property
    def exposed_seconds(self) -> float:
        return self._added(exposed for _, exposed in self.PARTS)


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
    the part of the shorter of the two that contention keeps from overlapping (the fitted parameters'
    sharded_overlap, or the stack's own: timing.sharded_overlap)."""
    ov = fitted.current().sharded_overlap if overlap is None else overlap
    return max(0.0, comm - window) + (1 - ov) * min(comm, window)


def _hierarchical_busbw(view: RigView, size: float, per_node: int, dp: int) -> Bandwidth:
    """The busbw (nccl-tests' definition, over all ``dp`` ranks) of a hierarchical all-reduce of ``size`` bytes: the
    node's ``per_node`` GPUs over NVLink, the shard across dp / per_node nodes over each GPU's rail share, with the
    network's latency per 25 MB bucket and its scale term (advisor.network)."""
    intra = view.intra_busbw(per_node, nvlink=view.nvlink_ring() and per_node > 1)
    nodes = max(1, dp // max(1, per_node))
    fabric = view.network.kind if view.network else None
    buckets = max(1, math.ceil(size / C.DDP_BUCKET_BYTES))
    t = N.hierarchical_all_reduce(size, per_node, intra.gbps, nodes, view.inter_node.gbps, fabric=fabric)
    t += (buckets - 1) * N.latency("all_reduce", nodes, fabric)
    gbps = size * F.busbw_factor("all_reduce", dp) / (t * 1e9) if t > 0 else intra.gbps
    return Bandwidth(
        gbps,
        f"hierarchical: {intra.gbps:.0f} GB/s inside the node, {view.inter_node.gbps:.1f} GB/s per GPU across "
        f"{nodes} nodes ({view.inter_node.source}) = {gbps:.0f} GB/s busbw over {dp} GPUs",
    )


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
            fabric = view.network.kind if view.network else None
            xla = w.stack == "jax"  # XLA: a few combined all-reduces once the gradients are complete
            cross = N.cross_seconds(
                "all_reduce",
                grad_bytes / shard,
                replicas,
                view.inter_node.gbps,
                buckets=1 if xla else units,
                fabric=fabric,
            )
            c.busbw = bw_in
            c.dp_bytes = acc * (2 * gather_bytes + grad_bytes) + grad_bytes / shard
            c.dp_seconds = acc * (2 * ag + rs) + cross
            pooled = 0.0 if xla else cross
            c.dp_exposed_seconds = _overlapped(acc * ag, fwd) + _overlapped(acc * (ag + rs) + pooled, bwd) + ag / units
            if xla:
                c.dp_exposed_seconds += N.xla_cross_exposed(cross, bwd / acc)
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
            # ZeRO-3 across nodes keeps the flat ring at the per-GPU rate its fitted overlaps were fitted with
            across = lay.dp_spans_nodes and view.nodes > 1 and dp > per_node and lay.zero_stage < 3
            if across:  # hierarchical: inside the node over NVLink, the 1/per_node shard across the nodes
                bw = _hierarchical_busbw(view, grad_bytes, per_node, dp)
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
                    f"prefetched under compute with {fitted.current().sharded_overlap:.0%} of the shorter overlapping"
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
        hop = N.latency("send", 2, view.network.kind if view.network else None) if lay.pp_across_nodes else 0.0
        c.pp_seconds = 2 * acc * (msg / (pp_gbps * 1e9) + hop)
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
