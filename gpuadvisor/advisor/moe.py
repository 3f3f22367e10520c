"""Mixture-of-experts: reading the MoE fields of a Hugging Face config, expert parallelism's share of the weights,
and the all-to-all that sends each token to its experts and back.

The shapes follow the configs' own fields as the transformers modelling code reads them (MixtralConfig,
Qwen2MoeConfig / Qwen3MoeConfig, DeepseekV3Config, GptOssConfig, Llama4TextConfig). The all-to-all follows
Megatron-Core's MoE token dispatcher (docs: "Megatron Core MoE"): per MoE layer and micro-batch, a dispatch and a
combine in the forward pass and the same two in the backward pass, each moving the tokens' hidden states
(k copies per token) between the ranks of the expert-parallel group.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadvisor.errors import InputError

if TYPE_CHECKING:
    from gpuadvisor.advisor.architecture import Architecture
    from gpuadvisor.advisor.memory import Layout
    from gpuadvisor.advisor.rigview import RigView
    from gpuadvisor.advisor.workload import Workload

ALL_TO_ALLS_PER_LAYER = 4  # dispatch + combine, forward and backward (Megatron-Core MoE token dispatcher)


def _int(data: dict[str, Any], p: Path, *names: str, default: int | None = None) -> int:
    for n in names:
        v = data.get(n)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"{p}: field '{n}' is {v!r}, expected a non-negative whole number")
            return v
    if default is None:
        raise InputError(f"{p}: a mixture-of-experts config without '{names[0]}' (needed to size its experts)")
    return default


def _sparse_layers(data: dict[str, Any], p: Path, layers: int) -> int:
    """How many layers are MoE: every one, but for the dense ones the config names."""
    mt = str(data.get("model_type", ""))
    if mt in ("deepseek_v2", "deepseek_v3"):
        dense = _int(data, p, "first_k_dense_replace", default=0)
        freq = _int(data, p, "moe_layer_freq", default=1) or 1
        return sum(1 for i in range(dense, layers) if i % freq == 0)
    if mt in ("qwen2_moe", "qwen3_moe"):
        step = _int(data, p, "decoder_sparse_step", default=1) or 1
        only = data.get("mlp_only_layers") or []
        return sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)
    if mt == "llama4_text":
        listed = data.get("moe_layers")
        if isinstance(listed, list):
            return len(listed)
        step = _int(data, p, "interleave_moe_layer_step", default=1) or 1
        return sum(1 for i in range(layers) if (i + 1) % step == 0)
    return layers


def moe_fields(data: dict[str, Any], p: Path) -> dict[str, Any]:
    """The Architecture fields of a MoE config (experts, top-k, expert width, shared experts, MoE layers; MLA's
    attention shapes for DeepSeek-V2/V3)."""
    mt = str(data.get("model_type", ""))
    layers = _int(data, p, "num_hidden_layers")
    hidden = _int(data, p, "hidden_size")
    out: dict[str, Any] = {
        "experts": _int(data, p, "num_local_experts", "num_experts", "n_routed_experts"),
        "experts_per_token": _int(data, p, "num_experts_per_tok", "experts_per_token"),
        "moe_layers": _sparse_layers(data, p, layers),
    }
    if out["experts_per_token"] < 1 or out["experts_per_token"] > out["experts"]:
        raise InputError(f"{p}: {out['experts_per_token']} experts per token of {out['experts']}: not a MoE routing")
    if mt in ("deepseek_v2", "deepseek_v3"):
        width = _int(data, p, "moe_intermediate_size")
        shared = _int(data, p, "n_shared_experts", default=0)
        out.update(expert_intermediate=width, shared_experts=shared, shared_intermediate=width)
        heads = _int(data, p, "num_attention_heads")
        nope, rope = _int(data, p, "qk_nope_head_dim"), _int(data, p, "qk_rope_head_dim")
        v, kv_rank = _int(data, p, "v_head_dim"), _int(data, p, "kv_lora_rank")
        q_rank = data.get("q_lora_rank")
        q = heads * (nope + rope)
        shapes = [(hidden, q_rank), (q_rank, q)] if isinstance(q_rank, int) and q_rank > 0 else [(hidden, q)]
        # Multi-head latent attention (DeepSeek-V2 paper, section 2.1): Q through a low-rank pair, K and V from a
        # shared latent of kv_lora_rank plus the decoupled RoPE key, the output projection from heads × v_head_dim.
        shapes += [(hidden, kv_rank + rope), (kv_rank, heads * (nope + v)), (heads * v, hidden)]
        out.update(attention_shapes=tuple(shapes), head_dim=nope + rope)
    elif mt in ("qwen2_moe", "qwen3_moe"):
        out["expert_intermediate"] = _int(data, p, "moe_intermediate_size")
        shared = _int(data, p, "shared_expert_intermediate_size", default=0)
        out.update(shared_experts=1 if shared else 0, shared_intermediate=shared)
    elif mt == "llama4_text":
        width = _int(data, p, "intermediate_size")
        out.update(
            expert_intermediate=width,
            shared_experts=1,
            shared_intermediate=width,
            intermediate=_int(data, p, "intermediate_size_mlp", default=width),
        )
    elif mt == "gpt_oss":
        out.update(expert_intermediate=_int(data, p, "intermediate_size"), expert_bias=True, attention_bias=True)
    else:  # Mixtral and configs of its shape: every layer MoE, the experts intermediate_size wide
        out["expert_intermediate"] = _int(data, p, "moe_intermediate_size", "intermediate_size")
    return out


def expert_split(a: Architecture, lay: Layout) -> tuple[float, float]:
    """(non-expert, expert) parameters on one GPU before ZeRO sharding: the non-expert ones split over tensor ×
    pipeline parallel, the routed experts over expert × pipeline parallel (Megatron-Core's default expert tensor
    parallel size 1: each expert whole on its rank)."""
    experts = a.expert_params()
    return (a.params - experts) / (lay.tp * lay.pp), experts / (lay.ep * lay.pp)


def expert_shard_group(lay: Layout) -> int:
    """The expert-data-parallel group a distributed optimizer shards the experts' states over: the GPUs of one
    pipeline stage (tp · cp · dp) divided by the expert-parallel size."""
    return max(1, lay.tp * lay.cp * lay.dp // lay.ep)


def all_to_all(view: RigView, w: Workload, lay: Layout, recompute: bool, accumulation: int) -> tuple[float, str]:
    """Seconds per step of the MoE token all-to-alls on one GPU, and a line saying what they move where.

    Each GPU holds s·b/(tp·cp) tokens of a micro-batch (sequence parallel splits them over tp) and sends each to
    k experts: k·h 16-bit values per token (× the capacity factor when padded), (ep − 1)/ep of them off the GPU.
    Inside an NVLink domain at its all-to-all bus bandwidth, else at the inter-node bandwidth. Not overlapped
    with compute (Megatron-Core overlaps it only with its optional EP-A2A overlap; DeepSeek-V3's DualPipe hides it).
    """
    a = w.arch
    if not a.is_moe or lay.ep <= 1:
        return 0.0, ""
    tokens = w.seq * w.micro_batch / (lay.tp * lay.cp)
    cf = a.capacity_factor or 1.0
    msg = tokens * a.experts_per_token * cf * a.hidden * 2 * (lay.ep - 1) / lay.ep
    group = lay.ep * lay.tp
    inside = group <= view.gpus_per_node and view.nvlink_groups_of(min(group, view.gpus_per_node))
    if inside:
        bw = view.intra_busbw(min(group, view.gpus_per_node), nvlink=True).gbps
        where = f"inside the NVLink domain ({bw:.0f} GB/s)"
    else:
        bw = (
            view.inter_node.gbps
            if view.nodes > 1 or group > view.gpus_per_node
            else view.intra_busbw(min(group, view.gpus_per_node), nvlink=False).gbps
        )
        where = f"across {'nodes' if group > view.gpus_per_node else 'PCIe'} ({bw:g} GB/s)"
    layers = -(-a.moe_layers // lay.pp)
    count = ALL_TO_ALLS_PER_LAYER + (2 if recompute else 0)
    seconds = accumulation * layers * count * msg / (bw * 1e9)
    line = (
        f"expert parallel: {count} all-to-alls of {msg / 1e6:.1f} MB per MoE layer and micro-batch over "
        f"{lay.ep} GPUs "
        f"{where}, not overlapped"
    )
    return seconds, line
