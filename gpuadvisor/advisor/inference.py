"""Serving: weights and KV cache per GPU for each tensor-parallel size, the smallest that fits, vLLM's command."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor.rigview import RigView
from gpuadvisor.advisor.workload import Workload


@dataclass
class ServingOption:
    tp: int
    pp: int
    weights_bytes: float
    activation_bytes: float
    runtime_bytes: float
    kv_budget_bytes: float  # what is left for the KV cache on each GPU
    kv_per_token_bytes: float
    kv_needed_bytes: float
    capacity_bytes: int
    nvlink: bool
    status: str = "candidate"
    reason: str = ""

    @property
    def kv_capacity_tokens(self) -> int:
        if self.kv_budget_bytes <= 0:
            return 0
        blocks = int(self.kv_budget_bytes // (self.kv_per_token_bytes * C.VLLM_BLOCK_TOKENS))
        return blocks * C.VLLM_BLOCK_TOKENS

    @property
    def fits(self) -> bool:
        return self.kv_budget_bytes > 0 and self.kv_budget_bytes >= self.kv_needed_bytes

    def max_sequences(self, context: int) -> int:
        return self.kv_capacity_tokens // context

    @property
    def name(self) -> str:
        return f"TP={self.tp}" + (f" × PP={self.pp}" if self.pp > 1 else "")

    def to_dict(self, context: int) -> dict[str, Any]:
        total = self.weights_bytes + self.activation_bytes + self.runtime_bytes + min(max(self.kv_budget_bytes, 0), self.kv_needed_bytes)
        return {
            "name": self.name,
            "tensor_parallel_size": self.tp,
            "pipeline_parallel_size": self.pp,
            "weights_bytes": round(self.weights_bytes),
            "activation_peak_bytes": round(self.activation_bytes),
            "runtime_bytes": round(self.runtime_bytes),
            "kv_cache_budget_bytes": round(max(self.kv_budget_bytes, 0)),
            "kv_cache_needed_bytes": round(self.kv_needed_bytes),
            "kv_bytes_per_token": round(self.kv_per_token_bytes),
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "max_sequences_at_context": self.max_sequences(context),
            "memory_used_bytes": round(total),
            "capacity_bytes": self.capacity_bytes,
            "nvlink": self.nvlink,
            "fits": self.fits,
            "status": self.status,
            "reason": self.reason,
        }


def serving_options(view: RigView, w: Workload) -> tuple[list[ServingOption], list[dict[str, str]]]:
    """One option per tensor_parallel_size that divides the attention and KV heads (vLLM shards KV heads)."""
    a = w.arch
    out: list[ServingOption] = []
    excluded = []
    tps = [t for t in (1, 2, 4, 8, 16) if t <= view.gpus_per_node]
    pps = [1] if view.nodes == 1 else [1, view.nodes]
    for pp in pps:
        for t in tps:
            if a.kv_heads % t or a.heads % t:
                if pp == 1:
                    excluded.append({"strategy": f"TP={t}", "reason": f"{a.kv_heads} KV heads / {a.heads} heads do not divide by {t}"})
                continue
            out.append(option(view, w, t, pp))
    return out, excluded


def option(view: RigView, w: Workload, t: int, pp: int) -> ServingOption:
    """Per GPU: weights/(t·p), vLLM's profiled activation peak, its runtime allowance, and what is left of
    gpu_memory_utilization × memory for the KV cache (vLLM's own accounting: vllm/worker profile_run)."""
    a = w.arch
    weights = w.params * w.weight_bytes_inference() / (t * pp)
    tokens = C.VLLM_PROFILE_TOKENS
    # The profiled forward pass: the MLP's gate+up output and a few hidden-size buffers per token (16-bit),
    # and fp32 logits for the last position of each of max_num_seqs sequences.
    act = tokens * (2 * a.intermediate + 4 * a.hidden) * C.DTYPE_BYTES["bf16"] / t
    act += C.VLLM_PROFILE_SEQS * a.vocab * 4 / t
    kv_tok = F.kv_cache_bytes_per_token(math.ceil(a.layers / pp), a.kv_heads, a.head_dim, w.kv_bytes(), t)
    budget = C.VLLM_GPU_MEMORY_UTILIZATION * view.memory_bytes - weights - act - C.VLLM_RUNTIME_BYTES
    need = w.ctx * w.concurrency * kv_tok
    nvlink = t == 1 or view.nvlink_groups_of(t)
    return ServingOption(t, pp, weights, act, C.VLLM_RUNTIME_BYTES, budget, kv_tok, need, view.memory_bytes, nvlink)


def pick_serving(opts: list[ServingOption]) -> ServingOption | None:
    """The fewest GPUs that fit the context × concurrency; inside an NVLink domain when one of that size fits."""
    fitting = [o for o in opts if o.fits]
    if not fitting:
        return None
    return min(fitting, key=lambda o: (o.tp * o.pp, not o.nvlink))


def explain_serving(opts: list[ServingOption], chosen: ServingOption | None, w: Workload) -> str:
    gib = C.GiB
    for o in opts:
        if o is chosen:
            o.status = "pick"
            continue
        o.status = "rejected"
        if o.kv_budget_bytes <= 0:
            o.reason = f"weights alone ({o.weights_bytes / gib:.1f} GiB per GPU) leave no room for a KV cache in {C.VLLM_GPU_MEMORY_UTILIZATION:.0%} of {o.capacity_bytes / gib:.1f} GiB"
        elif not o.fits:
            o.reason = (f"KV cache for {w.concurrency} × {w.ctx} tokens needs {o.kv_needed_bytes / gib:.1f} GiB per GPU, "
                        f"{o.kv_budget_bytes / gib:.1f} GiB left (room for {o.max_sequences(w.ctx)} sequences)")
        elif chosen is not None:
            o.reason = f"fits, but uses more GPUs than {chosen.name}"
    if chosen is None:
        return ""
    return (f"{chosen.name} is the smallest tensor-parallel size that holds the weights ({chosen.weights_bytes / gib:.1f} GiB per GPU) and "
            f"{w.concurrency} sequence(s) of {w.ctx} tokens; its KV cache holds {chosen.kv_capacity_tokens:,} tokens "
            f"({chosen.max_sequences(w.ctx)} sequences at that context).")


def vllm_command(w: Workload, o: ServingOption, model_id: str) -> str:
    parts = ["vllm serve", model_id, f"--tensor-parallel-size {o.tp}"]
    if o.pp > 1:
        parts.append(f"--pipeline-parallel-size {o.pp}")
    parts += [f"--max-model-len {w.ctx}", f"--max-num-seqs {max(w.concurrency, 1)}",
              f"--gpu-memory-utilization {C.VLLM_GPU_MEMORY_UTILIZATION:.2f}",
              f"--dtype {'bfloat16' if w.precision in ('bf16', 'fp8') else {'fp16': 'float16', 'fp32': 'float32'}[w.precision]}"]
    if w.precision == "fp8":
        parts.append("--quantization fp8")
    if w.kv_cache_dtype == "fp8":
        parts.append("--kv-cache-dtype fp8")
    return " ".join(parts)
