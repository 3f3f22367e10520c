"""Which training layouts a rig allows: data parallel and ZeRO/FSDP sharding, tensor parallel inside an NVLink domain,
pipelines across slow links or nodes, CPU offload; and the ones left out, with their reason."""

from __future__ import annotations

from gpuadvisor.advice_model import Excluded
from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.rigview import RigView
from gpuadvisor.advisor.workload import Workload

# The CPU-offload layouts: (key, name, framework, priority, ZeRO stage, what is offloaded).
_OFFLOADS = (
    ("zero2-offload", "ZeRO-2 + CPU offload", "DeepSpeed ZeRO stage 2, offload_optimizer cpu", 6, 2, "optimizer"),
    (
        "zero3-offload",
        "ZeRO-3 + CPU offload",
        "DeepSpeed ZeRO stage 3, offload_optimizer + offload_param cpu",
        7,
        3,
        "optimizer+params",
    ),
)


def _divides_heads(w: Workload, t: int) -> bool:
    return w.arch.heads % t == 0 and w.arch.kv_heads % t == 0


def layouts(view: RigView, w: Workload) -> tuple[list[Layout], list[Excluded]]:
    """Every layout worth predicting on this rig, and the ones left out with their reason."""
    n, m = view.gpus_per_node, view.nodes
    world = n * m
    out: list[Layout] = []
    excluded: list[Excluded] = []
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
        for key, name, framework, priority, stage, offload in _OFFLOADS:
            out.append(
                Layout(
                    key,
                    name,
                    framework,
                    priority,
                    dp=world,
                    zero_stage=stage,
                    shard_group=world,
                    offload=offload,
                    dp_spans_nodes=m > 1,
                    last_resort=True,
                )
            )
    elif not view.hypothetical:
        excluded.append(
            Excluded(strategy="CPU offload", reason="the scan has no host RAM figure, so offload cannot be sized")
        )
    if w.finetune != "full":
        # Megatron-LM's pretrain_gpt.py trains every weight: no LoRA adapters, no 4-bit base. Adapter training
        # runs under PEFT, whose models DDP, FSDP and DeepSpeed shard (Hugging Face PEFT/accelerate docs).
        excluded.append(
            Excluded(
                strategy="tensor / pipeline parallel",
                reason=f"{w.finetune.upper() if w.finetune == 'qlora' else 'LoRA'} runs under PEFT (DDP, FSDP or "
                "DeepSpeed); "
                "Megatron-LM's pretrain_gpt.py, which the TP/PP snippets launch, trains every weight",
            )
        )
        return out, excluded
    # Tensor parallel inside an NVLink domain; across PCIe a last resort (TP_OFF_NVLINK_RULE), whatever its size.
    domain = view.nvlink_domain()
    t = 2
    while t <= n:
        if not _divides_heads(w, t):
            excluded.append(
                Excluded(
                    strategy=f"TP={t}",
                    reason=f"{w.arch.heads} heads / {w.arch.kv_heads} KV heads do not divide by {t}",
                )
            )
        else:
            pcie = t > domain  # crosses PCIe: TP_OFF_NVLINK_RULE, the same for every size
            label = f"TP={t} (PCIe)" if pcie else f"TP={t}"
            out.append(
                Layout(
                    f"tp{t}",
                    f"{label} + ZeRO-1 DP={world // t}" if world > t else label,
                    "Megatron-LM (tensor parallel + sequence parallel, distributed optimizer)",
                    5 if pcie else 4,
                    dp=world // t,
                    tp=t,
                    zero_stage=1 if world > t else 0,
                    shard_group=world // t,
                    dp_spans_nodes=m > 1,
                    last_resort=pcie,
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
            Excluded(
                strategy="pipeline parallel",
                reason="NVLink joins every GPU of this node: pipeline stages belong across slow links or nodes "
                "(pass --nodes for several)",
            )
        )
    return out, excluded
