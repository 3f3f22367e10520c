"""Sourced data: GPU specifications (gpus.toml) and model architectures (models.toml).

Every row carries its source. Read with importlib.resources so an installed wheel finds them.
"""

from __future__ import annotations

import difflib
import functools
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

PRECISIONS = ("bf16", "fp16", "tf32", "fp32", "fp8")
T = TypeVar("T")


class Matched:
    """A catalog row found by a product name as a tool or a user writes it: its ``match`` patterns (regular
    expressions, case-insensitive). A mixin, not a dataclass: the row's fields keep their order."""

    match: tuple[str, ...]

    def matches(self, name: str) -> bool:
        return any(re.search(p, name, re.IGNORECASE) for p in self.match)


@dataclass(frozen=True)
class GpuSpec(Matched):
    """One GPU product from gpus.toml. TFLOP/s are dense datasheet peaks (no sparsity)."""

    id: str
    name: str
    match: tuple[str, ...]
    architecture: str
    form_factor: str
    memory_gb: float
    memory_mib: int
    memory_source: str
    memory_bandwidth_gbps: float
    tflops: dict[str, float]
    nvlink_domain: int
    source: str
    nvlink_version: int | None = None
    nvlink_links: int | None = None  # NVLink links the product has (bridged PCIe cards: with every bridge fitted)
    nvlink_links_source: str | None = None
    nvlink_gbps_per_direction: float | None = None
    pcie_gen: int | None = None
    tdp_w: float | None = None
    compute_capability: str | None = None  # where the part's is not its generation's (generations.toml)
    reserved_mib: int | None = None  # framebuffer the driver reserves (nvidia-smi -q "Reserved"), CUDA never sees it
    # This card's own measured matmul TFLOP/s at its datasheet board power, by precision (mamf-finder's best over a
    # sweep of shapes, or the best of a set of large square products), where its generation's fraction of the
    # datasheet peak does not carry over; mamf_source says where from, or that it is assumed and why.
    mamf_tflops: dict[str, float] = field(default_factory=dict)
    mamf_source: str | None = None

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * 2**20

    def peak_tflops(self, precision: str) -> float | None:
        return self.tflops.get(precision)


@dataclass(frozen=True)
class ModelSpec:
    """One model's architecture, as its Hugging Face config.json gives it."""

    id: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    source: str
    max_position_embeddings: int | None = None
    head_dim: int | None = None
    tie_word_embeddings: bool = False
    mlp: str = "gated"
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    attention_bias: bool = False
    bias: bool = False
    learned_positions: bool = False
    hf_id: str | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
    params_published: int | None = None
    # Mixture-of-experts (config.json names): routed experts, experts per token, each expert's width, shared
    # experts and their width, how many layers are MoE (None: all), the experts' linears carry biases.
    num_local_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    n_shared_experts: int = 0
    shared_intermediate_size: int = 0
    moe_layers: int | None = None
    expert_bias: bool = False
    params_active_published: int | None = None


def _read(name: str) -> dict[str, Any]:
    text = resources.files("gpuadvisor.catalog").joinpath(name).read_text(encoding="utf-8")
    return tomllib.loads(text)


def rows(cls: Callable[..., T], name: str, table: str, tuples: tuple[str, ...] = ("match",)) -> tuple[T, ...]:
    """Every row of one table of a shipped catalog file as ``cls``, in file order; the TOML arrays named in
    ``tuples`` become tuples (the rows are frozen)."""
    return tuple(cls(**{k: tuple(v) if k in tuples else v for k, v in row.items()}) for row in _read(name)[table])


@functools.cache
def gpus() -> tuple[GpuSpec, ...]:
    """Every GPU in the catalog, in file order (most specific match patterns first)."""
    return rows(GpuSpec, "gpus.toml", "gpu")


@functools.cache
def models() -> tuple[ModelSpec, ...]:
    return rows(ModelSpec, "models.toml", "model", tuples=("aliases",))


@functools.cache
def find_gpu(product_name: str | None) -> GpuSpec | None:
    """The catalog row for an NVML product name ("NVIDIA H100 80GB HBM3"), or None if none matches (remembered: a
    plan asks for the same few names hundreds of times, each a walk over every row's patterns)."""
    if not product_name:
        return None
    for spec in gpus():
        if spec.matches(product_name):
            return spec
    return None


def gpu_by_id(gpu_id: str) -> GpuSpec | None:
    return next((g for g in gpus() if g.id == gpu_id), None)


# What a name may carry beside the architecture: an organisation ("meta-llama/"), Meta's brand before the family
# ("Meta-Llama-3-70B"), and the fine-tune's suffix ("-Instruct", "-chat", "-it", "-hf": the same weights' shapes).
_SUFFIX = re.compile(r"(-(instruct|chat|it|hf|base))+$")


def model_key(name: str) -> str:
    """A model name as compared: lower case, without organisation, brand prefix or fine-tune suffix, and with
    "llama3" spelt "llama-3" (``meta-llama/Meta-Llama-3-8B-Instruct`` and ``llama3-8b`` are ``llama-3-8b``)."""
    key = name.strip().lower().rsplit("/", 1)[-1].replace("_", "-")
    key = _SUFFIX.sub("", key.removeprefix("meta-"))
    return re.sub(r"^llama(\d)", r"llama-\1", key)


@functools.cache
def _model_keys() -> dict[str, ModelSpec]:
    keys: dict[str, ModelSpec] = {}
    for m in models():
        for name in (m.id, *m.aliases, *([m.hf_id] if m.hf_id else [])):
            keys.setdefault(model_key(name), m)
    return keys


def find_model(name: str) -> ModelSpec | None:
    """A model preset by id, alias or Hugging Face id: case-insensitive, with or without the organisation, with or
    without an -Instruct/-chat suffix (the same architecture)."""
    return _model_keys().get(model_key(name))


def model_suggestion(name: str) -> str:
    """'; did you mean A, B?' for a model name close to a preset's (empty when none is)."""
    close = difflib.get_close_matches(model_key(name), list(_model_keys()), n=6, cutoff=0.6)
    ids = list(dict.fromkeys(_model_keys()[k].id for k in close))[:3]
    return f"; did you mean {', '.join(ids)}?" if ids else ""


def model_names() -> list[str]:
    return [m.id for m in models()]
