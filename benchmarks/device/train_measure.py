"""Measure real training steps on a GPU: tokens/s and peak memory, to check the advisor's predictions against.

    python3 benchmarks/device/train_measure.py OUTDIR [BUDGET_SECONDS]

Each run builds a Hugging Face transformers model from a config (random weights, on the GPU, no download),
trains it on random tokens with torch.optim.AdamW(fused=True) and the model's own causal-LM loss (logits
upcast to fp32, as transformers does), and records:

- tokens/s: the median of the timed steps (CUDA events around forward + backward + optimizer step + zero_grad),
  after warm-up steps;
- torch.cuda.max_memory_allocated and max_memory_reserved over the whole run (model built inside it), GiB;
- the parameter count torch reports and the config as saved (config.json, readable by ``--hf-config``).

Precision: "bf16" = pure bf16 (weights, gradients and AdamW states in bf16: the advisor's ``--state-bytes bf16``);
"amp" = fp32 weights, gradients and states with torch.autocast(bf16) (the 4 + 4 + 8 bytes of fp32 AdamW plus
the autocast copies). Activation checkpointing off; attention through torch's SDPA.

Writes OUTDIR/train.json (one record per run, errors included) and prints a table. Nothing here changes a GPU
setting.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

LLAMA_1B = {  # Llama 3.2 1B's shape (meta-llama/Llama-3.2-1B config.json)
    "model_type": "llama",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "rms_norm_eps": 1e-5,
}
LLAMA_3B = {  # Llama 3.2 3B's shape
    **LLAMA_1B,
    "hidden_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 24,
}
MIXTRAL_SMALL = {  # a Mixtral-shaped MoE (8 experts, top-2), scaled down to train on one 80 GB GPU
    "model_type": "mixtral",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-5,
    "router_aux_loss_coef": 0.02,
    "output_router_logits": False,
}
QWEN3_MOE_SMALL = {  # a Qwen3-MoE-shaped model (many small experts, top-8), scaled down
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "norm_topk_prob": True,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6,
    "output_router_logits": False,
}

MIXTRAL_8X7B_4L = {  # Mixtral 8x7B's layer shape (mistralai/Mixtral-8x7B-v0.1 config.json), 4 of its 32 layers
    **MIXTRAL_SMALL,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
}
QWEN3_30B_A3B_4L = {  # Qwen3-30B-A3B's layer shape (Qwen/Qwen3-30B-A3B config.json), 4 of its 48 layers
    **QWEN3_MOE_SMALL,
    "num_hidden_layers": 4,
    "num_experts": 128,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
}
LLAMA_8B = {  # Llama 3 8B's shape
    **LLAMA_1B,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "tie_word_embeddings": False,
}

RUNS_2 = [
    # name, config, seq_len, micro_batch, precision, compile (+ "-ac": Hugging Face gradient checkpointing)
    ("mixtral8x7b-4l-bf16-s4096-b1", MIXTRAL_8X7B_4L, 4096, 1, "bf16", False),
    ("mixtral8x7b-4l-bf16-s4096-b2", MIXTRAL_8X7B_4L, 4096, 2, "bf16", False),
    ("qwen3-30b-a3b-4l-bf16-s4096-b2", QWEN3_30B_A3B_4L, 4096, 2, "bf16", False),
    ("llama-1b-bf16-s8192-b1", LLAMA_1B, 8192, 1, "bf16", False),
    ("llama-1b-bf16-s8192-b2", LLAMA_1B, 8192, 2, "bf16", False),
    ("llama-8b-bf16-s4096-b1-ac", LLAMA_8B, 4096, 1, "bf16", False),
]

RUNS = [
    # name, config, seq_len, micro_batch, precision, compile
    ("llama-1b-bf16-s2048-b8", LLAMA_1B, 2048, 8, "bf16", False),
    ("llama-1b-amp-s2048-b4", LLAMA_1B, 2048, 4, "amp", False),
    ("llama-3b-bf16-s4096-b2", LLAMA_3B, 4096, 2, "bf16", False),
    ("mixtral-small-bf16-s2048-b4", MIXTRAL_SMALL, 2048, 4, "bf16", False),
    ("qwen3moe-small-bf16-s2048-b4", QWEN3_MOE_SMALL, 2048, 4, "bf16", False),
    ("llama-1b-bf16-s2048-b8-compile", LLAMA_1B, 2048, 8, "bf16", True),
]
GIB = 1024**3
# TRAIN_SMOKE=1: the same code on the CPU with the configs shrunk (a check of the transformers API before a GPU run).
SMOKE = os.environ.get("TRAIN_SMOKE") == "1"
DEV = "cpu" if SMOKE else "cuda"


def build(cfg: dict, precision: str):
    import transformers

    kind = cfg["model_type"]
    cls = {
        "llama": transformers.LlamaConfig,
        "mixtral": transformers.MixtralConfig,
        "qwen3_moe": transformers.Qwen3MoeConfig,
    }[kind]
    kw = {k: v for k, v in cfg.items() if k != "model_type"}
    if SMOKE:
        kw.update(hidden_size=128, intermediate_size=256, num_hidden_layers=2, vocab_size=1000)
        if "moe_intermediate_size" in kw:
            kw.update(
                moe_intermediate_size=64, num_experts=8, num_experts_per_tok=2, head_dim=16, num_attention_heads=8
            )
        elif "num_attention_heads" in kw:
            kw.update(num_attention_heads=8)
    config = cls(**kw)
    config._attn_implementation = "sdpa"
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    torch.set_default_dtype(dtype)
    try:
        with torch.device(DEV):
            model = transformers.AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(torch.float32)
    model.to(dtype)
    model.train()
    return model, config


class Timer:
    """CUDA events around a step on the GPU; perf_counter on the CPU (smoke)."""

    def __enter__(self):
        if SMOKE:
            self.t = time.perf_counter()
        else:
            self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.start.record()
        return self

    def __exit__(self, *exc):
        if SMOKE:
            self.seconds = time.perf_counter() - self.t
        else:
            self.end.record()
            self.end.synchronize()
            self.seconds = self.start.elapsed_time(self.end) / 1e3


def one_run(name, cfg, seq, mb, precision, compiled, warmup, steps):
    if SMOKE:
        seq, mb = 64, 2
    else:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    base = 0 if SMOKE else torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    model, config = build(cfg, precision)
    params = sum(p.numel() for p in model.parameters())
    if name.endswith("-ac"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=not SMOKE)
    fwd = torch.compile(model) if compiled else model
    vocab = config.vocab_size
    gen = torch.Generator(device=DEV).manual_seed(0)
    times = []
    losses = []
    for i in range(warmup + steps):
        ids = torch.randint(0, vocab, (mb, seq), device=DEV, generator=gen)
        with Timer() as timer:
            if precision == "amp":
                with torch.autocast(DEV, dtype=torch.bfloat16):
                    out = fwd(input_ids=ids, labels=ids)
            else:
                out = fwd(input_ids=ids, labels=ids)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        losses.append(float(out.loss.detach()))
        del out
        if i >= warmup:
            times.append(timer.seconds)
    step = statistics.median(times)
    rec = {
        "name": name,
        "model_type": cfg["model_type"],
        "config": config.to_dict(),
        "params": params,
        "seq_len": seq,
        "micro_batch": mb,
        "precision": precision,
        "compile": compiled,
        "activation_checkpointing": name.endswith("-ac"),
        "experts_implementation": getattr(config, "_experts_implementation", None),
        "attn_implementation": getattr(config, "_attn_implementation", None),
        "warmup_steps": warmup,
        "timed_steps": steps,
        "step_seconds_median": step,
        "step_seconds_all": times,
        "tokens_per_second": mb * seq / step,
        "max_allocated_gib": None if SMOKE else (torch.cuda.max_memory_allocated() - base) / GIB,
        "max_reserved_gib": None if SMOKE else torch.cuda.max_memory_reserved() / GIB,
        "loss_first_last": [losses[0], losses[-1]],
        "wall_seconds": time.perf_counter() - t0,
    }
    del model, opt, fwd
    return rec


def main() -> int:
    out = Path(sys.argv[1])
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 240.0
    out.mkdir(parents=True, exist_ok=True)
    import transformers

    env = {"smoke": SMOKE}
    if not SMOKE:
        props = torch.cuda.get_device_properties(0)
        env.update(
            gpu=torch.cuda.get_device_name(0), memory_gib=props.total_memory / GIB, sms=props.multi_processor_count
        )
    env.update(
        {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
        }
    )
    print(json.dumps(env))
    records = []
    t0 = time.perf_counter()
    runs = RUNS_2 if os.environ.get("TRAIN_SET") == "2" else RUNS
    for name, cfg, seq, mb, prec, comp in runs:
        left = budget - (time.perf_counter() - t0)
        if left < (90 if comp else 25):
            records.append({"name": name, "skipped": f"budget: {left:.0f} s left"})
            continue
        try:
            rec = one_run(name, cfg, seq, mb, prec, comp, warmup=3 if not comp else 4, steps=10)
        except Exception as exc:  # an OOM or an API difference: record it, go on
            rec = {"name": name, "error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        records.append(rec)
        if not SMOKE:
            torch.cuda.empty_cache()
        (out / "train.json").write_text(json.dumps({"env": env, "runs": records}, indent=1))
        if "error" in rec:
            print(f"{name}: {rec['error']}", flush=True)
        else:
            print(
                f"{name}: {rec['params'] / 1e9:.3f} B params, {rec['tokens_per_second']:,.0f} tok/s, "
                f"step {rec['step_seconds_median'] * 1e3:.1f} ms, alloc {rec['max_allocated_gib'] or 0:.2f} GiB, "
                f"reserved {rec['max_reserved_gib'] or 0:.2f} GiB, loss {rec['loss_first_last']}, "
                f"wall {rec['wall_seconds']:.0f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
