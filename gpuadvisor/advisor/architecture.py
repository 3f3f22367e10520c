"""A model's shape, from a preset (catalog/models.toml), a parameter count (``--params 7e9``: a GPT-3-family shape of
that size) or a Hugging Face ``config.json`` read offline: the layers, widths and heads the memory and time models
count with.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from gpuadvisor import catalog
from gpuadvisor.errors import InputError


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer's shape, enough to count its parameters and activations exactly."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    head_dim: int
    max_positions: int | None = None
    tied_embeddings: bool = False
    mlp: str = "gated"  # gated (3 projections) | plain (2)
    norm: str = "rmsnorm"  # rmsnorm (weight) | layernorm (weight + bias)
    norms_per_layer: int = 2
    attention_bias: bool = False  # q, k, v biases (Qwen2)
    bias: bool = False  # every linear has a bias (GPT-2)
    learned_positions: bool = False
    source: str = ""
    params_override: int | None = None  # --params: the count the user gave wins over the shape's
    model_type: str = ""  # config.json's model_type (llama, mistral, qwen2, gemma2, gpt2, ...), when read from one
    # Mixture-of-experts (advisor.moe): routed experts per MoE layer, how many a token is sent to, each expert's MLP
    # width; shared experts every token goes through; how many layers are MoE (the rest are dense of `intermediate`).
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_experts: int = 0
    shared_intermediate: int = 0
    moe_layers: int = 0
    expert_bias: bool = False  # the experts' linears have biases (GPT-OSS)
    capacity_factor: float | None = None  # None: dropless (every routed token computed: Megatron-Core's default)
    attention_shapes: tuple[tuple[int, int], ...] = ()  # (in, out) of the attention's linears where not q/k/v/o (MLA)

    # -- counts -------------------------------------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def _norm_params(self) -> int:
        return self.hidden * (2 if self.norm == "layernorm" else 1)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0 and self.moe_layers > 0

    def mlp_width(self, padded: bool = True) -> int:
        """The MLP width a token goes through, averaged over the layers: `intermediate` for a dense model; for a
        MoE model its top-k routed experts (times the capacity factor when tokens are padded to capacity) and its
        shared experts in the MoE layers, `intermediate` in the dense ones. Active parameters, FLOPs and
        activations follow from it (``padded=False``: without the capacity padding, the parameters' width)."""
        if not self.is_moe:
            return self.intermediate
        cf = (self.capacity_factor or 1.0) if padded else 1.0
        moe = cf * self.experts_per_token * self.expert_intermediate + self.shared_experts * self.shared_intermediate
        dense = self.layers - self.moe_layers
        return round((self.moe_layers * moe + dense * self.intermediate) / self.layers)

    def _mlp_matrices(self) -> int:
        return 3 if self.mlp == "gated" else 2

    def expert_params(self) -> int:
        """Parameters of every routed expert of every MoE layer (what expert parallelism splits)."""
        if not self.is_moe:
            return 0
        per = self._mlp_matrices() * self.hidden * self.expert_intermediate
        if self.expert_bias:
            per += (self._mlp_matrices() - 1) * self.expert_intermediate + self.hidden
        return self.moe_layers * self.experts * per

    def _inactive_params(self) -> int:
        """Parameters a token does not go through: the routed experts it is not sent to, and the routers'."""
        if not self.is_moe:
            return 0
        k = self.experts_per_token
        return round(self.expert_params() * (1 - k / self.experts)) + self.moe_layers * self.hidden * self.experts

    def _padding_params(self) -> int:
        """What the capacity padding adds to the per-layer linear shapes: compute, not parameters."""
        return self._mlp_matrices() * self.hidden * (self.mlp_width() - self.mlp_width(padded=False))

    def active_params(self) -> int:
        """Parameters one token is multiplied by in a MoE model (all of them for a dense one)."""
        return self.params - self._inactive_params() if self.is_moe else self.params

    def linear_shapes(self) -> list[tuple[int, int]]:
        """(in, out) of each linear layer in one transformer layer (a MoE layer: the ones a token goes through)."""
        h, i = self.hidden, self.mlp_width()
        if self.attention_shapes:
            shapes = list(self.attention_shapes)
            return shapes + ([(h, i), (h, i), (i, h)] if self.mlp == "gated" else [(h, i), (i, h)])
        shapes = [(h, self.q_dim), (h, self.kv_dim), (h, self.kv_dim), (self.q_dim, h)]
        shapes += [(h, i), (h, i), (i, h)] if self.mlp == "gated" else [(h, i), (i, h)]
        return shapes

    def layer_params(self) -> int:
        """Parameters of one transformer layer: attention, MLP, norms, biases."""
        return self._layer_params

    @cached_property
    def _layer_params(self) -> int:  # counted once per shape (the advisor asks thousands of times per plan)
        n = sum(a * b for a, b in self.linear_shapes())
        if self.bias:
            n += sum(b for _, b in self.linear_shapes())
        elif self.attention_bias:
            n += self.q_dim + 2 * self.kv_dim
        n += self.norms_per_layer * self._norm_params()
        return n + self._inactive_params() // self.layers - self._padding_params()

    def layer_linear_params(self) -> int:
        return self._layer_linear_params

    @cached_property
    def _layer_linear_params(self) -> int:
        return sum(a * b for a, b in self.linear_shapes())

    def matmul_outputs_per_token(self) -> int:
        """Elements one token's pass writes out of the layer's linear layers (q, k, v, o, the MLP's)."""
        return sum(n for _, n in self.linear_shapes())

    def activation_bytes_per_token_layer(self, mode: str = "none") -> float:
        """16-bit bytes one layer keeps per token for the backward pass, counted from its shape (fused attention:
        no score matrices). Korthikanti et al. 2022 (section 4.1) count the GPT layer as 34·h: the same tensors
        here, for any attention (GQA) and MLP (gated: gate, up, their activation and product) shape:
          norms' inputs 2·2h; attention: its input 2h, Q, K, V 2q + 4kv, the attention output 2q;
          MLP: its input 2h, gated 4 tensors of i (2·4i) or plain 2 (2·2i); no dropout (Llama, Mistral, MPT).
        ``pointwise``: what torch.compile's partitioner keeps (it recomputes the norms' outputs and the MLP's
        activation/product instead of saving them): less 4h and 4i (gated) or 2i (plain).
        ``selective``: torchtitan's default selective (op-level) checkpointing, which saves the attention output
        and every other matmul's output and recomputes the rest: the layer input 2h, the attention output 2q and
        half the matmul outputs (2 bytes × half of them)."""
        if mode not in self._activation_bytes:
            self._activation_bytes[mode] = self._count_activation_bytes(mode)
        return self._activation_bytes[mode]

    @cached_property
    def _activation_bytes(self) -> dict[str, float]:  # per checkpointing mode, counted once per shape
        return {}

    def _count_activation_bytes(self, mode: str) -> float:
        h, q, kv, i = self.hidden, self.q_dim, self.kv_dim, self.mlp_width()
        mlp = (8 if self.mlp == "gated" else 4) * i
        full = 4 * h + 2 * h + 2 * q + 4 * kv + 2 * q + 2 * h + mlp
        if self.is_moe:
            # Each token's input is permuted to its k experts and their outputs unpermuted (Megatron-Core's token
            # dispatcher keeps both for the backward pass): 2 · 2h · k more per MoE layer, averaged over the layers.
            full += round(4 * h * self.experts_per_token * self.moe_layers / self.layers)
        if mode == "pointwise":
            return full - 4 * h - (4 if self.mlp == "gated" else 2) * i
        if mode == "selective":
            return 2 * h + 2 * q + self.matmul_outputs_per_token()
        return full

    def embedding_params(self) -> int:
        n = self.vocab * self.hidden
        if self.learned_positions and self.max_positions:
            n += self.max_positions * self.hidden
        return n

    def head_params(self) -> int:
        """The output projection (lm_head), 0 when tied to the embedding."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    def flop_params(self) -> int:
        """Parameters a token is multiplied by: all but lookup tables (the untied input embedding, a learned
        position table). The 6·N of Kaplan et al. 2020 counts non-embedding parameters; Megatron-LM eq. 3 counts
        the logit layer's V·h only; torchtitan's MFU subtracts tok_embeddings. A tied embedding is the lm_head's
        matmul, so it stays."""
        lookup = 0 if self.tied_embeddings else self.vocab * self.hidden
        if self.learned_positions and self.max_positions:
            lookup += self.max_positions * self.hidden
        return max(1, self.active_params() - lookup)

    def counted_params(self) -> int:
        """Parameters from the shape: embeddings + layers + final norm + untied head."""
        return self._counted_params

    @cached_property
    def _counted_params(self) -> int:
        return self.embedding_params() + self.layers * self.layer_params() + self._norm_params() + self.head_params()

    @property
    def params(self) -> int:
        return self.params_override if self.params_override is not None else self.counted_params()

    def param_tensors(self) -> int:
        """How many parameter tensors the model has (torch's AdamW keeps a 'step' tensor for each)."""
        per_layer = len(self.linear_shapes()) + self.norms_per_layer * (2 if self.norm == "layernorm" else 1)
        if self.bias:
            per_layer += len(self.linear_shapes())
        elif self.attention_bias:
            per_layer += 3
        n = 1 + (1 if self.learned_positions and self.max_positions else 0)
        n += self.layers * per_layer + (2 if self.norm == "layernorm" else 1) + (0 if self.tied_embeddings else 1)
        if self.is_moe:  # each expert's matrices (the count above has one MLP's) and the router
            n += self.moe_layers * (self.experts * self._mlp_matrices() + 1)
        return n

    def root_unit_params(self) -> int:
        """What FSDP's root unit holds when each transformer layer is its own unit: embeddings, final norm, head."""
        return self.embedding_params() + self._norm_params() + self.head_params()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params
        d["counted_params"] = self.counted_params()
        d["attention_shapes"] = [list(x) for x in self.attention_shapes]  # JSON has lists, not tuples
        if self.is_moe:
            d["active_params"] = self.active_params()
            d["expert_params"] = self.expert_params()
        return d


def architecture_from_spec(spec: catalog.ModelSpec) -> Architecture:
    return Architecture(
        name=spec.id,
        hidden=spec.hidden_size,
        layers=spec.num_hidden_layers,
        heads=spec.num_attention_heads,
        kv_heads=spec.num_key_value_heads,
        intermediate=spec.intermediate_size,
        vocab=spec.vocab_size,
        head_dim=spec.head_dim or spec.hidden_size // spec.num_attention_heads,
        max_positions=spec.max_position_embeddings,
        tied_embeddings=spec.tie_word_embeddings,
        mlp=spec.mlp,
        norm=spec.norm,
        norms_per_layer=spec.norms_per_layer,
        attention_bias=spec.attention_bias,
        bias=spec.bias,
        learned_positions=spec.learned_positions,
        source=spec.source,
        experts=spec.num_local_experts,
        experts_per_token=spec.num_experts_per_tok,
        expert_intermediate=spec.moe_intermediate_size,
        shared_experts=spec.n_shared_experts,
        shared_intermediate=spec.shared_intermediate_size,
        moe_layers=0
        if not spec.num_local_experts
        else (spec.num_hidden_layers if spec.moe_layers is None else spec.moe_layers),
        expert_bias=spec.expert_bias,
    )


# The smallest --params a GPT-3-family shape can hold: one layer of d_model 768 and its 50,257-token embedding.
MIN_PARAMS = 50257 * 768 + 12 * 768 * 768 + 13 * 768
# GPT-3 paper (Brown et al. 2020), table 2.1: (parameters, layers, d_model, heads) of its eight models.
GPT3_FAMILY: tuple[tuple[float, int, int, int], ...] = (
    (125e6, 12, 768, 12),
    (350e6, 24, 1024, 16),
    (760e6, 24, 1536, 16),
    (1.3e9, 24, 2048, 24),
    (2.7e9, 32, 2560, 32),
    (6.7e9, 32, 4096, 32),
    (13e9, 40, 5140, 40),
    (175e9, 96, 12288, 96),
)
GPT3_VOCAB = 50257


def architecture_from_params(params: float) -> Architecture:
    """A shape for a bare parameter count: the GPT-3-family row nearest in size (Brown et al. 2020, table 2.1).

    The hidden size and heads come from that row, the MLP is 4h, and the layer count is scaled so the shape
    holds about ``params`` parameters; the count the user gave is the one used for model states and FLOPs.
    """
    if not params or params <= 0 or not math.isfinite(params):
        raise InputError(f"--params {params}: give a positive parameter count such as 7e9")
    if params < MIN_PARAMS:
        raise InputError(
            f"--params {params:g}: below {MIN_PARAMS / 1e6:.1f}M, the smallest GPT-3-family shape (one layer of "
            "d_model 768 "
            "and its 50,257-token embedding); give --hf-config for a smaller model"
        )
    row = min(GPT3_FAMILY, key=lambda r: abs(math.log(r[0] / params)))
    _, _, h, a = row
    per_layer = 12 * h * h + 13 * h  # 4h² attention + 8h² MLP, biases and 2 layer norms
    layers = max(1, round((params - GPT3_VOCAB * h) / per_layer))
    return Architecture(
        name=f"{params / 1e9:g}B (GPT-3-family shape)",
        hidden=h,
        layers=layers,
        heads=a,
        kv_heads=a,
        intermediate=4 * h,
        vocab=GPT3_VOCAB,
        head_dim=h // a,
        max_positions=2048,
        tied_embeddings=True,
        mlp="plain",
        norm="layernorm",
        bias=True,
        source="shape: Brown et al. 2020 (GPT-3), table 2.1, nearest size; layers scaled to the count given",
        params_override=int(params),
    )


GATED_TYPES = {
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi3",
    "granite",
    "olmo2",
    "internlm2",
    "yi",
    "deepseek",
}
# Mixture-of-experts families: gated (SwiGLU) experts.
GATED_TYPES |= {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "llama4_text"}


def architecture_from_hf_config(path: str | Path) -> Architecture:
    """Read a Hugging Face config.json offline: hidden_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, intermediate_size, vocab_size (GPT-2 names n_embd, n_layer, n_head, n_inner too)."""
    from gpuadvisor.inputs import CONFIG_LIMIT, loads_json, read_text

    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise InputError(f"{p}: no such file (give the path of a Hugging Face config.json)")
    data = loads_json(read_text(p, "a Hugging Face config.json", CONFIG_LIMIT), str(p), "a Hugging Face config.json")
    if not isinstance(data, dict):
        raise InputError(f"{p}: not a Hugging Face config.json (top level is not an object)")
    if "text_config" in data and "hidden_size" not in data and isinstance(data["text_config"], dict):
        data = {**data["text_config"], "model_type": data["text_config"].get("model_type", data.get("model_type"))}
    moe: dict[str, Any] = {}
    if any(data.get(k) for k in ("num_local_experts", "num_experts", "n_routed_experts")):
        from gpuadvisor.advisor.moe import moe_fields

        moe = moe_fields(data, p)

    def get(*names: str, default: Any = None, required: bool = True) -> Any:
        for n in names:
            if data.get(n) is not None:
                value = data[n]
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise InputError(f"{p}: field '{n}' is {value!r}, expected a number")
                if not value > 0:
                    raise InputError(f"{p}: field '{n}' is {value!r}, expected a positive number")
                return value
        if required and default is None:
            raise InputError(f"{p}: field '{names[0]}' missing (needed to size the model)")
        return default

    model_type = str(data.get("model_type", ""))
    hidden = int(get("hidden_size", "n_embd", "d_model"))
    heads = int(get("num_attention_heads", "n_head"))
    gpt2_like = model_type in ("gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon") or "n_embd" in data
    mlp = "gated" if (model_type in GATED_TYPES or (not gpt2_like and "intermediate_size" in data)) else "plain"
    head_dim = int(data.get("head_dim") or hidden // heads)
    if moe.get("head_dim"):
        head_dim = moe.pop("head_dim")
    intermediate = int(get("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden, required=False) or 4 * hidden)
    intermediate = moe.pop("intermediate", intermediate)
    attention_bias = moe.pop("attention_bias", bool(data.get("attention_bias", model_type == "qwen2")))
    return Architecture(
        name=str(data.get("_name_or_path") or (f"{p.stem} ({model_type})" if model_type else p.name)),
        model_type=model_type,
        hidden=hidden,
        layers=int(get("num_hidden_layers", "n_layer", "num_layers")),
        heads=heads,
        kv_heads=int(get("num_key_value_heads", "num_kv_heads", default=heads)),
        intermediate=intermediate,
        vocab=int(get("vocab_size")),
        head_dim=head_dim,
        max_positions=get("max_position_embeddings", "n_positions", "n_ctx", required=False),
        tied_embeddings=bool(data.get("tie_word_embeddings", gpt2_like)),
        mlp=mlp,
        norm="layernorm" if gpt2_like else "rmsnorm",
        norms_per_layer=4 if model_type in ("gemma2", "gemma3_text") else 2,
        attention_bias=attention_bias,
        bias=gpt2_like,
        learned_positions=model_type == "gpt2",
        source=f"Hugging Face config.json read from {p}",
        **moe,
    )
