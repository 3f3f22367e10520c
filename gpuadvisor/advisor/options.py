"""The workload options as one click decorator, shared by ``gpuadvisor advise`` and ``gpuadvisor scan --model``.

The keyword arguments it adds are exactly those ``Workload.from_options(**kw)`` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuadvisor import completion
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor.workload import (
    ATTENTION_KERNEL_CHOICES,
    CHECKPOINTING_CHOICES,
    ENGINE_CHOICES,
    FINETUNE_CHOICES,
    KV_DTYPE_CHOICES,
    LOSS_CHOICES,
    OPTIMIZER_CHOICES,
    OPTION_FIELDS,
    PRECISION_CHOICES,
    QUANTIZATION_CHOICES,
    STACK_CHOICES,
    STATE_BYTES_CHOICES,
    VLLM_VERSION_CHOICES,
)
from gpuadvisor.numbers import Count, Finite, Fraction

F = TypeVar("F", bound=Callable[..., Any])

# Every workload option: those read apart by Workload.from_options, then the ones that set a field as given.
WORKLOAD_OPTION_NAMES = (
    "model",
    "params",
    "hf_config",
    "flash_attention",
    "compile",
    "optimizer_in_backward",
    "capacity_factor",
    *OPTION_FIELDS,
)


def workload_options(f: F) -> F:
    """Add the model and job options (every one optional; None means the advisor's default)."""
    opts = [
        click.option(
            "--model",
            metavar="NAME",
            shell_complete=completion.models,
            help="A model preset (llama-3-8b, llama-3-70b, mistral-7b, qwen2.5-7b, gemma-2-9b, gpt2, ...) or a "
            "config.json path.",
        ),
        click.option(
            "--params",
            metavar="N",
            type=Finite(1e6, 1e15),
            help="A parameter count instead of a preset, e.g. 7e9 (GPT-3-family shape of that size).",
        ),
        click.option(
            "--hf-config",
            "hf_config",
            metavar="config.json",
            type=click.Path(dir_okay=False),
            help="A Hugging Face config.json, read offline.",
        ),
        click.option(
            "--task",
            type=click.Choice(["train", "inference", "full", "lora", "qlora"]),
            help="Train (default) or serve with vLLM; full, lora and qlora train with that --finetune.",
        ),
        click.option("--precision", type=click.Choice(PRECISION_CHOICES), help="Compute precision (default bf16)."),
        click.option(
            "--optimizer",
            type=click.Choice(OPTIMIZER_CHOICES),
            help="Optimizer (default adamw; adam8bit = bitsandbytes).",
        ),
        click.option(
            "--seq-len",
            "seq_len",
            type=Count(1, 2**24),
            help="Training sequence length (default min(4096, the model's maximum)).",
        ),
        click.option(
            "--micro-batch", "micro_batch", type=Count(1, 2**20), help="Sequences per GPU per forward pass (default 1)."
        ),
        click.option(
            "--global-batch",
            "global_batch",
            type=Count(1, 2**30),
            help="Sequences per optimizer step; gradient accumulation makes up the rest.",
        ),
        click.option(
            "--checkpointing",
            type=click.Choice(CHECKPOINTING_CHOICES),
            help="Activation checkpointing: auto (where needed to fit), none, selective (recompute norms and "
            "activations: torchtitan's and Megatron's default), full.",
        ),
        click.option(
            "--finetune",
            type=click.Choice(FINETUNE_CHOICES),
            help="full training (default), LoRA, or QLoRA (4-bit base).",
        ),
        click.option(
            "--lora-rank",
            "lora_rank",
            type=Count(1, 2**16),
            help=f"LoRA rank on every linear layer (default {C.LORA_DEFAULT_RANK}).",
        ),
        click.option(
            "--trainable-fraction",
            "trainable_fraction",
            type=Fraction,
            help="LoRA: the fraction of parameters trained, instead of counting from the rank.",
        ),
        click.option(
            "--flash-attention/--no-flash-attention",
            "flash_attention",
            default=None,
            help="Fused attention (default on): attention scores are not stored.",
        ),
        click.option(
            "--attention-kernel",
            "attention_kernel",
            type=click.Choice(ATTENTION_KERNEL_CHOICES),
            help="The fused attention kernel: flash2 (default: FlashAttention-2, torch SDPA, cuDNN, Transformer "
            "Engine) or flash1 (FlashAttention-1 and its Triton port, as MPT / llm-foundry use: about half the rate, "
            "Dao 2023).",
        ),
        click.option(
            "--state-bytes",
            "state_bytes",
            type=click.Choice(STATE_BYTES_CHOICES),
            help="Model-state accounting with Adam: 16 (ZeRO paper, default), 18 (fp32 grads: Megatron bf16, HF docs), "
            "20 (16-bit + fp32 grads: "
            "Megatron fp16, DeepSpeed ZeRO-2's estimator since 0.14.3), bf16 (pure bf16, no fp32 master: torchtune).",
        ),
        click.option(
            "--context",
            type=Count(1, 2**24),
            help="Inference: tokens per sequence, prompt + output (default min(8192, the model's maximum)).",
        ),
        click.option("--concurrency", type=Count(1, 2**20), help="Inference: sequences served at once (default 1)."),
        click.option(
            "--kv-cache-dtype",
            "kv_cache_dtype",
            type=click.Choice(KV_DTYPE_CHOICES),
            help="Inference: KV-cache precision (auto = the weights').",
        ),
        click.option(
            "--mfu",
            type=Fraction,
            help="Model FLOPs utilisation (6N + 12·L·s·d_attn FLOPs per token over the datasheet peak, as PaLM and "
            "Megatron-LM count it) of the run without recomputation; checkpointing's extra FLOPs cost time on top. "
            "Default: predicted per component.",
        ),
        click.option(
            "--compile/--no-compile",
            "compile",
            default=None,
            help="torch.compile (fuses memory-bound ops; default off).",
        ),
        click.option(
            "--stack",
            type=click.Choice(STACK_CHOICES),
            help="Training stack the time model assumes (default pytorch; --framework megatron/deepspeed/jax "
            "implies it): its fused kernels set the memory-bound share of a step.",
        ),
        click.option(
            "--loss",
            type=click.Choice(LOSS_CHOICES),
            help="Cross-entropy: full logits (default: HF, torchtitan) or chunked (torchtune's "
            "CEWithChunkedOutputLoss).",
        ),
        click.option(
            "--optimizer-in-backward/--no-optimizer-in-backward",
            "optimizer_in_backward",
            default=None,
            help="Optimizer step fused into backward (torchtune optimizer_in_bwd): gradients freed as soon as used.",
        ),
        click.option(
            "--vllm-version",
            "vllm_version",
            type=click.Choice(VLLM_VERSION_CHOICES),
            help="Inference: the vLLM engine the KV budget follows: v1 (default: V1, or V0 since the Dec-2024 "
            "profiler), v0 (V0 up to 0.6.4: no sampler warm-up), "
            "0.21 (CUDA-graph memory subtracted from the budget).",
        ),
        click.option(
            "--max-num-seqs",
            "max_num_seqs",
            type=Count(1, 2**20),
            help="Inference: vLLM --max-num-seqs (default: vLLM's for the GPU, 256 or 1024).",
        ),
        click.option(
            "--gpu-memory-utilization",
            "gpu_memory_utilization",
            type=Fraction,
            help="Inference: vLLM --gpu-memory-utilization, the share of each GPU's memory for weights, "
            "activations and KV cache (default 0.90, vLLM's).",
        ),
        click.option(
            "--input-len",
            "input_len",
            type=Count(1, 2**24),
            help="Inference: prompt tokens per request (default: --context less the output).",
        ),
        click.option(
            "--output-len",
            "output_len",
            type=Count(1, 2**24),
            help="Inference: generated tokens per request (default min(512, context / 2)).",
        ),
        click.option(
            "--quantization",
            type=click.Choice(QUANTIZATION_CHOICES),
            help="Inference: weight quantisation (fp8, int8 W8A8, 4-bit AWQ or GPTQ; GGUF q4_0, q4_k_m, q5_k_m, "
            "q6_k, q8_0 with llama.cpp/Ollama; default fp8 with --precision fp8, q4_k_m on llama.cpp/Ollama, "
            "else none).",
        ),
        click.option(
            "--engine",
            type=click.Choice(ENGINE_CHOICES),
            help="Inference: the serving engine: its per-step overhead, batch cap and launch line "
            "(default vllm; trtllm: TensorRT-LLM's trtllm-serve; nim: NVIDIA NIM).",
        ),
        click.option(
            "--offline",
            is_flag=True,
            default=None,
            help="Inference: a batch run (trtllm-bench throughput, vLLM's offline generate): --concurrency "
            "requests submitted at once, the engine runs what fits and queues the rest.",
        ),
        click.option(
            "--layout",
            metavar="SIZES",
            help="Evaluate exactly this layout: Megatron sizes tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1, "
            "or torchtitan's fsdp=8,tp=8,pp=8 / hsdp=2x8 (dp takes the GPUs left).",
        ),
        click.option(
            "--capacity-factor",
            "capacity_factor",
            type=Finite(1, 64),
            help="MoE: pad each expert's tokens to this capacity factor (Megatron-Core's "
            "--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity); default dropless.",
        ),
        click.option(
            "--nodes",
            type=Count(1, 2**20),
            help="Nodes like this one (default 1): enables HYBRID_SHARD and pipeline across nodes.",
        ),
        click.option(
            "--inter-node-gbps",
            "inter_node_gbps",
            type=Finite(0, 1e5, min_open=True),
            help=f"All-reduce busbw across nodes in GB/s (default: {C.DEFAULT_INTER_NODE_GBPS:g}, assumed).",
        ),
        click.option(
            "--network",
            metavar="FABRIC:RAILSxGBPS",
            help="The network between nodes: ib, roce or ethernet, NICs per node and Gb/s each, e.g. ib:8x400 "
            "(default: the scan's RDMA ports, else one 200 Gb/s port per GPU, assumed).",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def workload_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """The workload options out of a command's keyword arguments. ``--task lora`` (as `plan` takes it) is
    ``--task train --finetune lora``; with a different --finetune it is a contradiction, said in one line."""
    out = {k: kw.get(k) for k in WORKLOAD_OPTION_NAMES}
    if out.get("task") in ("full", "lora", "qlora"):
        if out.get("finetune") not in (None, out["task"]):
            raise click.UsageError(f"--task {out['task']} and --finetune {out['finetune']} disagree; give one of them")
        out["task"], out["finetune"] = "train", out["task"]
    return out


def framework_option(f: F) -> F:
    """--framework: print the pick's launch lines for one framework instead of the default snippet."""
    from gpuadvisor.advisor.frameworks import SERVE_FRAMEWORKS, TRAIN_FRAMEWORKS

    return click.option(
        "--framework",
        type=click.Choice(TRAIN_FRAMEWORKS + SERVE_FRAMEWORKS),
        default=None,
        help="Launch lines for this framework: "
        + ", ".join(TRAIN_FRAMEWORKS)
        + " (training); "
        + ", ".join(SERVE_FRAMEWORKS)
        + " (serving). Default: the snippet the pick calls for.",
    )(f)
