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


TOKENS = Count(1, 2**24)  # a length in tokens
SEQUENCES = Count(1, 2**20)  # a number of sequences or requests


def _option(decl: str, type: Any, help: str, **extra: Any) -> Callable[[F], F]:
    """One workload option: its declaration (click names the keyword after it), type and help. A switch (a bare
    flag or --x/--no-x) stays None unless given, like every other option, so the advisor's default holds."""
    if "/" in decl or extra.get("is_flag"):
        extra["default"] = None
    return click.option(decl, type=type, help=help, **extra)


def _workload_option_list() -> list[Callable[[F], F]]:
    """Every workload option, in the order --help lists them (every one optional; None means the default)."""
    return [
        _option(
            "--model",
            None,
            "A model preset (llama-3-8b, llama-3-70b, mistral-7b, qwen2.5-7b, gemma-2-9b, gpt2, ...) or a "
            "config.json path.",
            metavar="NAME",
            shell_complete=completion.models,
        ),
        _option(
            "--params",
            Finite(1e6, 1e15),
            "A parameter count instead of a preset, e.g. 7e9 (GPT-3-family shape of that size).",
            metavar="N",
        ),
        _option(
            "--hf-config",
            click.Path(dir_okay=False),
            "A Hugging Face config.json, read offline.",
            metavar="config.json",
        ),
        _option(
            "--task",
            click.Choice(["train", "inference", "full", "lora", "qlora"]),
            "Train (default) or serve with vLLM; full, lora and qlora train with that --finetune.",
        ),
        _option("--precision", click.Choice(PRECISION_CHOICES), "Compute precision (default bf16)."),
        _option("--optimizer", click.Choice(OPTIMIZER_CHOICES), "Optimizer (default adamw; adam8bit = bitsandbytes)."),
        _option("--seq-len", TOKENS, "Training sequence length (default min(4096, the model's maximum))."),
        _option("--micro-batch", SEQUENCES, "Sequences per GPU per forward pass (default 1)."),
        _option(
            "--global-batch",
            Count(1, 2**30),
            "Sequences per optimizer step; gradient accumulation makes up the rest.",
        ),
        _option(
            "--checkpointing",
            click.Choice(CHECKPOINTING_CHOICES),
            "Activation checkpointing: auto (where needed to fit), none, selective (recompute norms and "
            "activations: torchtitan's and Megatron's default), full.",
        ),
        _option("--finetune", click.Choice(FINETUNE_CHOICES), "full training (default), LoRA, or QLoRA (4-bit base)."),
        _option(
            "--lora-rank",
            Count(1, 2**16),
            f"LoRA rank on every linear layer (default {C.LORA_DEFAULT_RANK}).",
        ),
        _option(
            "--trainable-fraction",
            Fraction,
            "LoRA: the fraction of parameters trained, instead of counting from the rank.",
        ),
        _option(
            "--flash-attention/--no-flash-attention",
            None,
            "Fused attention (default on): attention scores are not stored.",
        ),
        _option(
            "--attention-kernel",
            click.Choice(ATTENTION_KERNEL_CHOICES),
            "The fused attention kernel: flash2 (default: FlashAttention-2, torch SDPA, cuDNN, Transformer "
            "Engine) or flash1 (FlashAttention-1 and its Triton port, as MPT / llm-foundry use: about half the rate, "
            "Dao 2023).",
        ),
        _option(
            "--state-bytes",
            click.Choice(STATE_BYTES_CHOICES),
            "Model-state accounting with Adam: 16 (ZeRO paper, default), 18 (fp32 grads: Megatron bf16, HF docs), "
            "20 (16-bit + fp32 grads: "
            "Megatron fp16, DeepSpeed ZeRO-2's estimator since 0.14.3), bf16 (pure bf16, no fp32 master: torchtune).",
        ),
        _option(
            "--context",
            TOKENS,
            "Inference: tokens per sequence, prompt + output (default min(8192, the model's maximum)).",
        ),
        _option("--concurrency", SEQUENCES, "Inference: sequences served at once (default 1)."),
        _option(
            "--kv-cache-dtype",
            click.Choice(KV_DTYPE_CHOICES),
            "Inference: KV-cache precision (auto = the weights').",
        ),
        _option(
            "--mfu",
            Fraction,
            "Model FLOPs utilisation (6N + 12·L·s·d_attn FLOPs per token over the datasheet peak, as PaLM and "
            "Megatron-LM count it) of the run without recomputation; checkpointing's extra FLOPs cost time on top. "
            "Default: predicted per component.",
        ),
        _option("--compile/--no-compile", None, "torch.compile (fuses memory-bound ops; default off)."),
        _option(
            "--stack",
            click.Choice(STACK_CHOICES),
            "Training stack the time model assumes (default pytorch; --framework megatron/deepspeed/jax "
            "implies it): its fused kernels set the memory-bound share of a step.",
        ),
        _option(
            "--loss",
            click.Choice(LOSS_CHOICES),
            "Cross-entropy: full logits (default: HF, torchtitan) or chunked (torchtune's CEWithChunkedOutputLoss).",
        ),
        _option(
            "--optimizer-in-backward/--no-optimizer-in-backward",
            None,
            "Optimizer step fused into backward (torchtune optimizer_in_bwd): gradients freed as soon as used.",
        ),
        _option(
            "--vllm-version",
            click.Choice(VLLM_VERSION_CHOICES),
            "Inference: the vLLM engine the KV budget follows: v1 (default: V1, or V0 since the Dec-2024 "
            "profiler), v0 (V0 up to 0.6.4: no sampler warm-up), "
            "0.21 (CUDA-graph memory subtracted from the budget).",
        ),
        _option(
            "--max-num-seqs",
            SEQUENCES,
            "Inference: vLLM --max-num-seqs (default: vLLM's for the GPU, 256 or 1024).",
        ),
        _option(
            "--gpu-memory-utilization",
            Fraction,
            "Inference: vLLM --gpu-memory-utilization, the share of each GPU's memory for weights, "
            "activations and KV cache (default 0.90, vLLM's).",
        ),
        _option("--input-len", TOKENS, "Inference: prompt tokens per request (default: --context less the output)."),
        _option("--output-len", TOKENS, "Inference: generated tokens per request (default min(512, context / 2))."),
        _option(
            "--quantization",
            click.Choice(QUANTIZATION_CHOICES),
            "Inference: weight quantisation (fp8, int8 W8A8, 4-bit AWQ or GPTQ; GGUF q4_0, q4_k_m, q5_k_m, "
            "q6_k, q8_0 with llama.cpp/Ollama; default fp8 with --precision fp8, q4_k_m on llama.cpp/Ollama, "
            "else none).",
        ),
        _option(
            "--engine",
            click.Choice(ENGINE_CHOICES),
            "Inference: the serving engine: its per-step overhead, batch cap and launch line "
            "(default vllm; trtllm: TensorRT-LLM's trtllm-serve; nim: NVIDIA NIM).",
        ),
        _option(
            "--offline",
            None,
            "Inference: a batch run (trtllm-bench throughput, vLLM's offline generate): --concurrency "
            "requests submitted at once, the engine runs what fits and queues the rest.",
            is_flag=True,
        ),
        _option(
            "--layout",
            None,
            "Evaluate exactly this layout: Megatron sizes tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1, "
            "or torchtitan's fsdp=8,tp=8,pp=8 / hsdp=2x8 (dp takes the GPUs left).",
            metavar="SIZES",
        ),
        _option(
            "--capacity-factor",
            Finite(1, 64),
            "MoE: pad each expert's tokens to this capacity factor (Megatron-Core's "
            "--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity); default dropless.",
        ),
        _option(
            "--nodes",
            Count(1, 2**20),
            "Nodes like this one (default 1): enables HYBRID_SHARD and pipeline across nodes.",
        ),
        _option(
            "--inter-node-gbps",
            Finite(0, 1e5, min_open=True),
            f"All-reduce busbw across nodes in GB/s (default: {C.DEFAULT_INTER_NODE_GBPS:g}, assumed).",
        ),
        _option(
            "--network",
            None,
            "The network between nodes: ib, roce or ethernet, NICs per node and Gb/s each, e.g. ib:8x400 "
            "(default: the scan's RDMA ports, else one 200 Gb/s port per GPU, assumed).",
            metavar="FABRIC:RAILSxGBPS",
        ),
    ]


def workload_options(f: F) -> F:
    """Add the model and job options (every one optional; None means the advisor's default)."""
    for opt in reversed(_workload_option_list()):
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
