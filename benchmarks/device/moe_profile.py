"""Where a training step's GPU time goes, by kernel kind: grouped (expert) matmuls, dense matmuls, attention,
routing/index work and the rest (elementwise, norms, casts) — for the MoE and dense shapes of train_measure.py.

    python3 benchmarks/device/moe_profile.py OUTDIR

torch.profiler over 3 steps after 3 warm-ups; kernel names classified by the patterns below. Writes
OUTDIR/moe_profile.json and prints one line per model (milliseconds per step by kind). Changes no GPU setting.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_measure as TM  # noqa: E402

KINDS = [
    ("grouped_mm", re.compile(r"grouped|group_gemm|GroupedGemm|grouped_mm", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa|cudnn.*(mha|attn)", re.I)),
    ("matmul", re.compile(r"gemm|nvjet|xmma|cutlass|cublas|sm90_|sm80_|wgmma", re.I)),
    ("routing_index", re.compile(r"sort|topk|index|scatter|gather|radix|histc|bincount|cumsum|nonzero", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor|foreach", re.I)),
]
MODELS = [
    ("qwen3-30b-a3b-4l", TM.QWEN3_30B_A3B_4L, 4096, 2),
    ("mixtral8x7b-4l", TM.MIXTRAL_8X7B_4L, 4096, 2),
    ("llama-1b", TM.LLAMA_1B, 2048, 8),
]


def kind_of(name: str) -> str:
    for kind, pat in KINDS:
        if pat.search(name):
            return kind
    return "other"


def profile(cfg: dict, seq: int, mb: int) -> dict:
    model, config = TM.build(cfg, "bf16")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def step() -> None:
        ids = torch.randint(0, config.vocab_size, (mb, seq), device="cuda", generator=gen)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    by: dict[str, float] = {}
    top: dict[str, float] = {}
    for ev in prof.key_averages():
        us = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0)
        if not us or ev.key.startswith(("ProfilerStep", "aten::", "autograd::", "Optimizer.")):
            continue
        k = kind_of(ev.key)
        by[k] = by.get(k, 0.0) + us / 3 / 1e3
        top[ev.key[:90]] = us / 3 / 1e3
    return {
        "ms_per_step_by_kind": by,
        "top_kernels_ms": dict(sorted(top.items(), key=lambda kv: -kv[1])[:25]),
        "experts_implementation": getattr(config, "_experts_implementation", None),
    }


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    res = {}
    for name, cfg, seq, mb in MODELS:
        try:
            res[name] = {"seq_len": seq, "micro_batch": mb, **profile(cfg, seq, mb)}
        except Exception as exc:
            res[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        (out / "moe_profile.json").write_text(json.dumps(res, indent=1))
        torch.cuda.empty_cache()
        r = res[name]
        if "error" in r:
            print(name, r["error"], flush=True)
        else:
            kinds = sorted(r["ms_per_step_by_kind"].items(), key=lambda kv: -kv[1])
            parts = ", ".join(f"{k} {v:.1f}" for k, v in kinds)
            print(f"{name}: {sum(r['ms_per_step_by_kind'].values()):.1f} ms/step: {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
