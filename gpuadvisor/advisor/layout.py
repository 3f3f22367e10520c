"""A parallel layout written out by the user (``advise --layout``), checked against the rig and the model.

Two spellings, as the frameworks write them:
  - Megatron-LM / NeMo: ``tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1`` (tensor, pipeline, virtual pipeline stages per
    rank, context, data, expert parallel sizes; ``zero=1`` is the distributed optimizer, 0 plain data parallel,
    2 and 3 DeepSpeed's stages); ``vp`` is accepted for ``vpp``.
  - torchtitan: ``fsdp=8,tp=8,pp=8`` (``fsdp`` / ``dp_shard``: FSDP over that many GPUs, ZeRO-3), HSDP as
    ``dp_replicate=2,dp_shard=8`` or ``hsdp=2x8`` (replicas × shard group).
A size left out is 1, but the data-parallel size, which takes the GPUs the others leave (torchtitan's -1).
"""

from __future__ import annotations

import math
import re

from gpuadvisor.advisor import fitted
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.fitted import FitParams
from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.rigview import RigView
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.errors import InputError

KEYS = ("tp", "pp", "vpp", "vp", "cp", "dp", "ep", "zero", "fsdp", "dp_shard", "dp_replicate", "hsdp")
EXAMPLE = "tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1 or fsdp=8,tp=8,pp=8"


def parse(text: str) -> dict[str, int]:
    """The sizes a layout string names (no checks against a rig); hsdp=RxS as dp_replicate=R, dp_shard=S."""
    where = f"--layout {text!r}"
    out: dict[str, int] = {}
    parts = [p.strip() for p in text.replace(" ", "").split(",") if p.strip()]
    if not parts:
        raise InputError(f"{where}: empty; write sizes like {EXAMPLE}")
    for part in parts:
        key, sep, value = part.partition("=")
        key = key.lower().replace("-", "_")
        if not sep or key not in KEYS:
            raise InputError(f"{where}: '{part}' is not one of {', '.join(KEYS)} = a size; write sizes like {EXAMPLE}")
        key = "vpp" if key == "vp" else ("dp_shard" if key == "fsdp" else key)
        if key in out or (key == "hsdp" and ("dp_shard" in out or "dp_replicate" in out)):
            raise InputError(f"{where}: {key} given twice")
        if key == "hsdp":
            m = re.fullmatch(r"(\d+)[x*](\d+)", value)
            if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
                raise InputError(f"{where}: hsdp={value}: write replicas x shard group, e.g. hsdp=2x8")
            out["dp_replicate"], out["dp_shard"] = int(m.group(1)), int(m.group(2))
            continue
        if not re.fullmatch(r"-?\d+", value):
            raise InputError(f"{where}: {key}={value} is not a whole number")
        n = int(value)
        if key == "dp" and n == -1:
            continue  # torchtitan's "the rest"
        if key == "zero" and not 0 <= n <= 3:
            raise InputError(f"{where}: zero={n}: choose 0 (DDP), 1 (distributed optimizer), 2 or 3")
        if key != "zero" and n < 1:
            raise InputError(f"{where}: {key}={n}: a parallel size is at least 1")
        out[key] = n
    return out


def _dividing(what: str, a: int, b: int, where: str, why: str) -> None:
    if b % a:
        raise InputError(f"{where}: {what}={a} does not divide {why} ({b})")


def build(text: str, view: RigView, w: Workload) -> Layout:
    """The Layout the string names on this rig, or an InputError saying what does not fit and why."""
    where = f"--layout {text}"
    sizes = parse(text)
    a = w.arch
    world = view.total_gpus
    tp, pp, cp, ep, vpp = (sizes.get(k, 1) for k in ("tp", "pp", "cp", "ep", "vpp"))
    zero = sizes.get("zero")
    shard, replicate = sizes.get("dp_shard", 0), sizes.get("dp_replicate", 1)
    hybrid = replicate > 1 and shard > 1
    torchtitan = bool(shard) or "dp_replicate" in sizes
    if torchtitan and zero is not None and zero != 3:
        raise InputError(f"{where}: fsdp / dp_shard / hsdp shard with FSDP (ZeRO-3): leave zero out or give zero=3")
    rest, left = divmod(world, tp * pp * cp)
    if left or rest == 0:
        raise InputError(
            f"{where}: tp·pp·cp = {tp * pp * cp} does not divide the rig's {world} GPUs"
            + (" (pass --nodes for more)" if tp * pp * cp > world else "")
        )
    if torchtitan:
        if not shard:
            shard = rest // replicate
        dp = replicate * shard
    else:
        dp = sizes.get("dp", rest)
    if dp * tp * pp * cp != world:
        raise InputError(
            f"{where}: dp·tp·pp·cp = {dp * tp * pp * cp}, but the rig has {world} GPUs"
            f" ({view.nodes} node{'s' if view.nodes > 1 else ''} of {view.gpus_per_node};"
            " --nodes sets how many)"
        )
    if tp > 1 and (a.heads % tp or a.kv_heads % tp):
        raise InputError(
            f"{where}: tp={tp} does not divide the model's {a.heads} attention heads and {a.kv_heads} KV heads"
        )
    if vpp > 1 and pp == 1:
        raise InputError(f"{where}: vpp={vpp} needs a pipeline (pp > 1): virtual stages interleave a pipeline's ranks")
    if pp * vpp > a.layers:
        raise InputError(f"{where}: pp·vpp = {pp * vpp} stages for {a.layers} layers: each stage needs a layer")
    if cp > 1 and w.seq % (2 * cp):
        raise InputError(
            f"{where}: cp={cp}: the sequence length {w.seq} must divide into 2·cp = {2 * cp} chunks "
            "(load-balanced ring attention)"
        )
    if ep > 1:
        if not a.is_moe:
            raise InputError(f"{where}: ep={ep}, but {a.name} is not a mixture-of-experts model")
        _dividing("ep", ep, a.experts, where, "the experts per layer")
        _dividing("ep", ep, dp * cp * tp, where, "the GPUs of a pipeline stage (dp·cp·tp)")
    if w.finetune != "full" and (tp > 1 or pp > 1):
        raise InputError(
            f"{where}: tensor / pipeline parallel with --finetune {w.finetune}: adapter training runs "
            "under PEFT with DDP, FSDP or DeepSpeed (use dp / fsdp sizes)"
        )
    stage = 3 if torchtitan else (zero if zero is not None else (1 if dp > 1 else 0))
    if dp == 1:
        stage = 0 if not torchtitan else stage
    group = (shard if hybrid else dp) * cp
    name = _name(tp, pp, vpp, cp, dp, ep, stage, torchtitan, hybrid, replicate, shard)
    n = view.gpus_per_node
    framework = "torchtitan (FSDP2, TP, PP, CP)" if torchtitan else "Megatron-LM / NeMo (Megatron-Core)"
    return Layout(
        key="layout",
        name=name,
        framework=framework,
        rank=4,
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=stage,
        hybrid=hybrid,
        # Megatron-LM's rank order (tp, cp, dp innermost to pp outermost): the data-parallel group leaves the node
        # once tp·cp·dp GPUs exceed it; pipeline stages sit on different nodes when the rig has several.
        shard_group=max(1, group),
        dp_spans_nodes=tp * cp * dp > n,
        pp_across_nodes=pp > 1 and world > n,
        vpp=vpp,
        cp=cp,
        torch_ring=torchtitan and cp > 1,
        ep=ep,
        forced=True,
    )


def _name(
    tp: int,
    pp: int,
    vpp: int,
    cp: int,
    dp: int,
    ep: int,
    stage: int,
    torchtitan: bool,
    hybrid: bool,
    replicate: int,
    shard: int,
) -> str:
    bits = []
    if torchtitan:
        bits.append(f"HSDP {replicate}x{shard}" if hybrid else f"FSDP {dp}")
    for label, n in (("TP", tp), ("PP", pp), ("VPP", vpp), ("CP", cp), ("EP", ep)):
        if n > 1:
            bits.append(f"{label} {n}")
    if not torchtitan:
        bits.append(f"DP {dp}" + (f" ZeRO-{stage}" if stage else ""))
    return " × ".join(bits)


def pipeline_bubble(pp: int, vpp: int, m: int) -> float:
    """Idle fraction of the step relative to the busy time: (p − 1)/(v·m) for interleaved 1F1B with v chunks per
    rank, (p − 1)/m for 1F1B (Narayanan et al. 2021, sections 2.2.1-2.2.2)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / (max(1, vpp) * max(1, m))


def uses_torch_ring(lay: Layout, w: Workload) -> bool:
    """PyTorch's ring attention (torchtitan's context parallel) run by the eager PyTorch stack: the layouts whose
    off-diagonal ring steps run at FitParams.ring_attention_factor (split_context, ring_attention_seconds)."""
    return lay.torch_ring and lay.cp > 1 and w.stack == "pytorch"


def split_context(
    sc: T.StepCompute, cp: int, torch_ring: bool = False, *, fit: FitParams | None = None
) -> T.StepCompute:
    """One GPU's compute with each sequence split over cp GPUs: its s/cp tokens' linears and memory-bound work, and
    1/cp of the causal attention (the load-balanced split, Megatron-Core and torchtitan: each GPU takes chunks i and
    2·cp − 1 − i so every one does the same attention work); the optimizer step as it was.

    PyTorch's ring attention (``torch_ring``: ``torch.distributed.tensor.experimental.context_parallel``, which
    torchtitan's layouts use) runs the cp − 1 off-diagonal steps of each attention call, (cp − 1)/cp of its work,
    at FitParams.ring_attention_factor of the fused kernel's rate (separate half-block SDPA calls, merged in fp32 by
    eager kernels: constants.py); ``fit`` default: the fitted parameters in force."""
    opt = sc.parts.get("optimizer", 0.0)
    parts = {k: (v if k in ("optimizer", "forward_fraction") else v / cp) for k, v in sc.parts.items()}
    seconds, per_mb = opt + (sc.seconds - opt) / cp, sc.per_micro_batch_seconds / cp
    if torch_ring and parts.get("attention"):
        ring = parts["attention"] * (cp - 1) / cp
        extra = ring * (1 / (fit or fitted.current()).ring_attention_factor - 1)
        micro_batches = (seconds - opt) / per_mb if per_mb else 1.0
        parts["attention"] += extra
        seconds += extra
        per_mb += extra / micro_batches
    return T.StepCompute(
        seconds,
        per_mb,
        sc.model_flops / cp,
        sc.hardware_flops / cp,
        parts,
        sc.floor_bound,
        sc.mode,
    )


def ring_attention_seconds(
    view: RigView, w: Workload, lay: Layout, recompute: bool, accumulation: int
) -> tuple[float, str]:
    """(seconds, detail) per step of context parallelism's ring on one GPU.

    Ring attention (Liu et al. 2023; Megatron-Core's and torchtitan's context parallel): each of the cp − 1
    ring steps passes the current K and V chunk (s/cp tokens × 2 · kv_dim / tp, 16-bit) to the next GPU in the
    forward pass; the backward pass passes K, V and their gradients (twice as much). The transfers overlap the
    attention of the chunk in hand, as both frameworks do; what the attention time does not cover is exposed.
    Within the NVLink domain when the cp group fits in a node (after tp), else across nodes.
    """
    if lay.cp <= 1:
        return 0.0, ""
    a = w.arch
    chunk = w.seq / lay.cp * w.micro_batch * 2 * a.kv_dim / lay.tp * 2
    passes = 3 + (1 if recompute else 0)  # forward K,V; backward K,V + dK,dV; recompute repeats the forward
    layers = math.ceil(a.layers / lay.pp)
    moved = accumulation * layers * passes * (lay.cp - 1) * chunk
    if lay.tp * lay.cp <= view.gpus_per_node:
        bw = view.intra_busbw(lay.cp, nvlink=view.nvlink_groups_of(lay.tp * lay.cp)).gbps
        where = f"inside the node ({bw:.0f} GB/s)"
    else:
        bw = view.inter_node.gbps
        where = f"across nodes ({bw:g} GB/s)"
    seconds = moved / (bw * 1e9)
    ring = ""
    if uses_torch_ring(lay, w):
        ring = (
            f"; PyTorch's ring runs its {lay.cp - 1} off-diagonal steps ({lay.cp - 1}/{lay.cp} of the attention) at "
            f"{fitted.current().ring_attention_factor:.2f} of the fused kernel's rate (fitted on torchtitan's "
            "published context-parallel runs)"
        )
    return seconds, (
        f"context parallel: K/V chunks of {chunk / 1e6:.1f} MB around a ring of {lay.cp} GPUs {where}, "
        f"{passes} passes per layer and micro-batch, overlapped with the attention{ring}"
    )


def megatron_layout_args(w: Workload, lay: Layout) -> list[str]:
    """Megatron-LM arguments for the virtual pipeline, context and expert parallel sizes and a MoE model's
    experts (megatron/training/arguments.py: --num-layers-per-virtual-pipeline-stage, --context-parallel-size,
    --expert-model-parallel-size, --num-experts, --moe-router-topk, --moe-ffn-hidden-size)."""
    a = w.arch
    args = []
    if lay.vpp > 1:
        args.append(f"--num-layers-per-virtual-pipeline-stage {a.layers // (lay.pp * lay.vpp)}")
    if lay.cp > 1:
        args.append(f"--context-parallel-size {lay.cp}")
    if a.is_moe:
        args += [
            f"--num-experts {a.experts}",
            f"--moe-router-topk {a.experts_per_token}",
            f"--moe-ffn-hidden-size {a.expert_intermediate}",
        ]
        if lay.ep > 1:
            args.append(f"--expert-model-parallel-size {lay.ep}")
        if a.capacity_factor:
            args += [f"--moe-expert-capacity-factor {a.capacity_factor:g}", "--moe-pad-expert-input-to-capacity"]
    return args


def torchtitan_args(w: Workload, lay: Layout, accumulation: int, recompute: bool) -> str:
    """torchtitan's command-line overrides for a layout given in its spelling (torchtitan/config/job_config.py,
    2025: [parallelism] data_parallel_shard_degree, data_parallel_replicate_degree, tensor_parallel_degree,
    pipeline_parallel_degree, pipeline_parallel_schedule, pipeline_parallel_microbatch_size,
    pipeline_parallel_layers_per_stage, context_parallel_degree, expert_parallel_degree; [training] local_batch_size,
    seq_len; [activation_checkpoint] mode)."""
    replicate = lay.dp // max(1, lay.shard_group // lay.cp) if lay.hybrid else 1
    args = [
        "--job.config_file train.toml",
        f"--training.seq_len {w.seq}",
        f"--training.local_batch_size {w.micro_batch * accumulation}",
        f"--parallelism.data_parallel_shard_degree {lay.dp // replicate}",
    ]
    if replicate > 1:
        args.append(f"--parallelism.data_parallel_replicate_degree {replicate}")
    for name, n in (("tensor_parallel", lay.tp), ("context_parallel", lay.cp), ("expert_parallel", lay.ep)):
        if n > 1:
            args.append(f"--parallelism.{name}_degree {n}")
    if lay.pp > 1:
        args += [
            f"--parallelism.pipeline_parallel_degree {lay.pp}",
            f"--parallelism.pipeline_parallel_schedule {'Interleaved1F1B' if lay.vpp > 1 else '1F1B'}",
            f"--parallelism.pipeline_parallel_microbatch_size {w.micro_batch}",
        ]
        if lay.vpp > 1:
            per_stage = math.ceil(w.arch.layers / (lay.pp * lay.vpp))
            args.append(f"--parallelism.pipeline_parallel_layers_per_stage {per_stage}")
    mode = "full" if recompute else ("selective" if w.checkpointing == "selective" else "none")
    args.append(f"--activation_checkpoint.mode {mode}")
    return " ".join(args)
