"""Ready launch snippets for a chosen layout: the torchrun line, FSDP settings, DeepSpeed JSON, accelerate YAML."""

from __future__ import annotations

from typing import Any

from gpuadvisor.advice_model import TrainingSnippet
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor.config_memory import bucket_bytes, bucket_sizes
from gpuadvisor.advisor.layout import megatron_layout_args, torchtitan_args
from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.workload import Workload

# config.json model_type -> Hugging Face Transformers' decoder-layer class of that family, which the module
# transformers.models.<model_type>.modeling_<model_type> defines.
LAYER_CLASSES = {
    "llama": "LlamaDecoderLayer",
    "mistral": "MistralDecoderLayer",
    "qwen2": "Qwen2DecoderLayer",
    "gemma2": "Gemma2DecoderLayer",
    "gemma": "GemmaDecoderLayer",
    "gpt2": "GPT2Block",
}
FSDP_STRATEGY = {2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}
UNKNOWN_LAYER = "YourDecoderLayer"


# config.json model_type -> how the names of its family's models start (read where the config names no type).
MODEL_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen",
    "gemma2": "gemma-2",
    "gemma": "gemma",
    "gpt2": "gpt2",
}


def _layer(w: Workload) -> tuple[str, str | None]:
    model_type = w.arch.model_type if w.arch.model_type in LAYER_CLASSES else None
    if model_type is None:
        name = (w.model_label or w.arch.name).lower()
        model_type = next((t for t, prefix in MODEL_TYPES.items() if name.startswith(prefix)), None)
    if model_type is None:
        return UNKNOWN_LAYER, None
    return LAYER_CLASSES[model_type], f"transformers.models.{model_type}.modeling_{model_type}"


def layer_class(w: Workload) -> str:
    return _layer(w)[0]


def layer_import(w: Workload) -> str:
    """The import line that makes layer_class(w) a name the snippet's code can use."""
    cls, module = _layer(w)
    if module is None:
        return f"from your_model import {cls}  # the class of one transformer block of your model\n"
    return f"from {module} import {cls}\n"


def torchrun_line(gpus_per_node: int, nodes: int, script: str = "train.py", args: str = "") -> str:
    """torchrun with --nnodes and --nproc_per_node (torch.distributed.run); c10d rendezvous across nodes."""
    tail = f" {args}" if args else ""
    if nodes == 1:
        return f"torchrun --standalone --nnodes=1 --nproc_per_node={gpus_per_node} {script}{tail}"
    return (
        f"torchrun --nnodes={nodes} --nproc_per_node={gpus_per_node} --rdzv_id=job --rdzv_backend=c10d "
        f"--rdzv_endpoint=$MASTER_ADDR:29500 {script}{tail}"
    )


def deepspeed_config(w: Workload, lay: Layout, accumulation: int, global_batch: int, recompute: bool) -> dict[str, Any]:
    """A DeepSpeed config (https://www.deepspeed.ai/docs/config-json/): batch sizes that satisfy
    train_batch_size = micro × accumulation × data-parallel size, precision, and the ZeRO stage."""
    # Bucket sizes for the model (config_memory.bucket_sizes); the memory breakdown counts what they allocate.
    zero: dict[str, Any] = {"stage": lay.zero_stage, **bucket_sizes(w, lay)}
    if lay.offload != "none":
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if lay.offload == "optimizer+params":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg: dict[str, Any] = {
        "train_batch_size": global_batch,
        "train_micro_batch_size_per_gpu": w.micro_batch,
        "gradient_accumulation_steps": accumulation,
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
    }
    if w.precision in ("bf16", "fp8"):
        cfg["bf16"] = {"enabled": True}
    elif w.precision == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    if recompute:
        cfg["activation_checkpointing"] = {"partition_activations": False, "contiguous_memory_optimization": False}
    return cfg


def model_id(w: Workload) -> str:
    from gpuadvisor import catalog

    spec = catalog.find_model(w.model_label) if w.model_label else None
    return spec.hf_id if spec and spec.hf_id else "<model path or Hugging Face id>"


def peft_code(w: Workload, single: bool = False) -> str:
    """LoRA/QLoRA: the adapters the memory model counts (rank r on every linear layer of the transformer blocks:
    PEFT target_modules='all-linear', which leaves the lm_head out); QLoRA loads the base in NF4 with double
    quantization (Dettmers et al. 2023), its storage dtype the compute dtype so FSDP/ZeRO-3 can shard it
    (Hugging Face PEFT docs, 'FSDP + QLoRA'). Empty for full training."""
    if w.finetune == "full":
        return ""
    lines = []
    if w.finetune == "qlora":
        dt = C.TORCH_DTYPE[w.precision]
        lines += [
            "import os, torch",
            "from transformers import AutoModelForCausalLM, BitsAndBytesConfig",
            "bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4', bnb_4bit_use_double_quant=True,",
            f"                         bnb_4bit_compute_dtype=torch.{dt}, bnb_4bit_quant_storage=torch.{dt})",
            f"model = AutoModelForCausalLM.from_pretrained('{model_id(w)}', quantization_config=bnb, "
            f"torch_dtype=torch.{dt},",
            "                                             device_map={'': "
            + ("0" if single else "int(os.environ['LOCAL_RANK'])")
            + "})",
        ]
    lines += [
        "from peft import LoraConfig, get_peft_model",
        f"model = get_peft_model(model, LoraConfig(r={w.lora_rank}, target_modules='all-linear', "
        "task_type='CAUSAL_LM'))",
    ]
    return "\n".join(lines) + "\n"


def deepspeed_code(lay: Layout, recompute: bool) -> str:
    """deepspeed.initialize for the layout. ZeRO-Offload refuses a torch optimizer unless told otherwise
    (zero_force_ds_cpu_optimizer, default true): it gets DeepSpeed's CPU Adam. ZeRO-3 builds the model inside
    deepspeed.zero.Init so no rank ever holds all of it (the host-RAM sizing assumes so). The DeepSpeed
    config's activation_checkpointing section only configures deepspeed.checkpointing: the model turns it on."""
    lines = ["import deepspeed"]
    if lay.zero_stage == 3:
        lines += [
            "with deepspeed.zero.Init(config_dict_or_path='ds_config.json'):",
            "    model = build_model()  # or from_pretrained(...) under HfDeepSpeedConfig('ds_config.json')",
        ]
    if recompute:
        lines.append(
            "model.gradient_checkpointing_enable()  # Hugging Face models; or torch.utils.checkpoint per layer"
        )
    if lay.offload != "none":
        lines += [
            "from deepspeed.ops.adam import DeepSpeedCPUAdam",
            "optimizer = DeepSpeedCPUAdam(model.parameters(), lr=lr)  # ZeRO-Offload steps on the CPU",
        ]
    lines.append(
        "engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config='ds_config.json')"
    )
    return "\n".join(lines)


def fsdp_settings(w: Workload, lay: Layout, recompute: bool, gpus_per_node: int, nodes: int) -> dict[str, Any]:
    dt = C.TORCH_DTYPE[w.precision]
    s: dict[str, Any] = {
        "sharding_strategy": "HYBRID_SHARD" if lay.hybrid else FSDP_STRATEGY[lay.zero_stage],
        "mixed_precision": {"param_dtype": dt, "reduce_dtype": dt, "buffer_dtype": dt}
        if w.precision != "fp32"
        else None,
        "auto_wrap_policy": f"transformer_auto_wrap_policy(transformer_layer_cls={{{layer_class(w)}}})",
        "backward_prefetch": "BACKWARD_PRE",
        "limit_all_gathers": True,
        "use_orig_params": True,
        "cpu_offload": False,
        "activation_checkpointing": recompute,
    }
    if lay.hybrid:
        s["device_mesh"] = [nodes, gpus_per_node]
    return s


def fsdp_code(w: Workload, settings: dict[str, Any]) -> str:
    dt = C.TORCH_DTYPE[w.precision]
    mp = (
        f"    mixed_precision=MixedPrecision(param_dtype=torch.{dt}, reduce_dtype=torch.{dt}, "
        f"buffer_dtype=torch.{dt}),\n"
        if settings["mixed_precision"]
        else ""
    )
    mesh = ""
    mesh_arg = ""
    if "device_mesh" in settings:
        n, g = settings["device_mesh"]
        mesh = f"mesh = init_device_mesh('cuda', ({n}, {g}), mesh_dim_names=('replicate', 'shard'))\n"
        mesh_arg = "    device_mesh=mesh,\n"
    ckpt = ""
    if settings["activation_checkpointing"]:
        ckpt = f"apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, {layer_class(w)}))\n"
    return (
        "import functools, torch\n"
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, MixedPrecision, "
        "BackwardPrefetch\n"
        "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
        + layer_import(w)
        + ("from torch.distributed.device_mesh import init_device_mesh\n" if mesh else "")
        + (
            "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing\n"
            if ckpt
            else ""
        )
        + mesh
        + "model = FSDP(\n"
        "    model,\n"
        f"    sharding_strategy=ShardingStrategy.{settings['sharding_strategy']},\n"
        + mp
        + "    auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, "
        f"transformer_layer_cls={{{layer_class(w)}}}),\n"
        "    backward_prefetch=BackwardPrefetch.BACKWARD_PRE,\n"
        "    limit_all_gathers=True,\n"
        "    use_orig_params=True,\n" + mesh_arg + "    device_id=torch.cuda.current_device(),\n"
        ")\n"
        + ckpt
        + (
            "# fp16 needs loss scaling that knows the shards:\n"
            "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\nscaler = ShardedGradScaler()\n"
            if w.precision == "fp16"
            else ""
        )
    )


def accelerate_yaml(w: Workload, lay: Layout, recompute: bool, gpus_per_node: int, nodes: int) -> str:
    """An accelerate config file (accelerate launch --config_file accelerate.yaml train.py).

    With DeepSpeed the precision, batch and ZeRO settings live in ds_config.json alone: accelerate refuses a
    config file that also sets mixed_precision (or zero_stage, gradient_accumulation_steps...) beside
    deepspeed_config_file ("the following accelerate config variables will be ignored", accelerate's
    DeepSpeedPlugin). Per-node values (machine rank, the main node's address) go on the command line
    (accelerate_launch_line), where the shell expands them: YAML does not.
    """
    world = gpus_per_node * nodes
    mp = {"bf16": "bf16", "fp16": "fp16", "fp32": "'no'", "fp8": "fp8"}[w.precision]  # bare no is YAML's false
    lines = ["compute_environment: LOCAL_MACHINE"]
    deepspeed = False
    if lay.zero_stage == 0:
        lines.append("distributed_type: MULTI_GPU")
    elif lay.zero_stage == 1 or lay.offload != "none":
        deepspeed = True
        lines += ["distributed_type: DEEPSPEED", "deepspeed_config:", "  deepspeed_config_file: ds_config.json"]
        if lay.zero_stage == 3:
            lines.append("  zero3_init_flag: true")
        if nodes > 1:  # torchrun on every node, as the torchrun line does (accelerate's default is pdsh + a hostfile)
            lines.append("  deepspeed_multinode_launcher: standard")
    else:
        strategy = "HYBRID_SHARD" if lay.hybrid else FSDP_STRATEGY[lay.zero_stage]
        lines += [
            "distributed_type: FSDP",
            "fsdp_config:",
            f"  fsdp_sharding_strategy: {strategy}",
            "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP",
            f"  fsdp_transformer_layer_cls_to_wrap: {layer_class(w)}",
            "  fsdp_backward_prefetch: BACKWARD_PRE",
            "  fsdp_state_dict_type: SHARDED_STATE_DICT",
            "  fsdp_use_orig_params: true",
            "  fsdp_offload_params: false",
            f"  fsdp_activation_checkpointing: {'true' if recompute else 'false'}",
        ]
    if not deepspeed:
        lines.append(f"mixed_precision: {mp}")
    lines += [f"num_machines: {nodes}", f"num_processes: {world}", "machine_rank: 0"]
    return "\n".join(lines) + "\n"


def accelerate_launch_line(nodes: int, script: str = "train.py") -> str:
    """accelerate launch with the config file; across nodes, each node passes its rank and the main node's address."""
    if nodes == 1:
        return f"accelerate launch --config_file accelerate.yaml {script}"
    return (
        "accelerate launch --config_file accelerate.yaml --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR "
        f"--main_process_port 29500 {script}"
    )


def megatron_args(w: Workload, lay: Layout, global_batch: int, recompute: bool) -> str:
    a = w.arch
    args = [
        f"--tensor-model-parallel-size {lay.tp}",
        f"--pipeline-model-parallel-size {lay.pp}",
        f"--num-layers {a.layers}",
        f"--hidden-size {a.hidden}",
        f"--num-attention-heads {a.heads}",
        f"--ffn-hidden-size {a.intermediate}",
        f"--seq-length {w.seq}",
        f"--max-position-embeddings {a.max_positions or w.seq}",
        f"--micro-batch-size {w.micro_batch}",
        f"--global-batch-size {global_batch}",
    ]
    args += megatron_layout_args(w, lay)
    if a.head_dim * a.heads != a.hidden:
        args.append(f"--kv-channels {a.head_dim}")
    if a.kv_heads != a.heads:
        args.append(f"--group-query-attention --num-query-groups {a.kv_heads}")
    if a.mlp == "gated":
        args.append("--swiglu")
    # Megatron's GPT defaults are GPT-2's (LayerNorm, learned positions, tied embeddings, biases everywhere):
    # say where this model differs (megatron/training/arguments.py).
    if a.norm == "rmsnorm":
        args.append("--normalization RMSNorm")
    if not a.learned_positions:
        args.append("--position-embedding-type rope")
    if not a.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if not a.bias:
        args.append("--disable-bias-linear")
        if a.attention_bias:
            args.append("--add-qkv-bias")
    if lay.tp > 1:
        args.append("--sequence-parallel")
    if lay.zero_stage >= 1:
        args.append("--use-distributed-optimizer")
    if w.precision in ("bf16", "fp8"):
        args.append("--bf16")
    elif w.precision == "fp16":
        args.append("--fp16")
    if w.precision == "fp8":
        args.append("--fp8-format hybrid")
    if recompute:
        args.append("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
    return " ".join(args)


def training_snippet(
    w: Workload, lay: Layout, accumulation: int, global_batch: int, recompute: bool, gpus_per_node: int, nodes: int
) -> TrainingSnippet:
    """The launch snippet for a layout (the renderers print it)."""
    out = TrainingSnippet(nproc_per_node=gpus_per_node, nnodes=nodes)
    if lay.forced and lay.framework.startswith("torchtitan"):  # advise --layout in torchtitan's spelling
        out.kind = "torchtitan"
        out.torchrun = torchrun_line(
            gpus_per_node, nodes, "-m torchtitan.train", torchtitan_args(w, lay, accumulation, recompute)
        )
        return out
    if lay.tp > 1 or lay.pp > 1 or lay.cp > 1 or lay.ep > 1:
        out.kind = "megatron"
        out.torchrun = torchrun_line(
            gpus_per_node, nodes, "pretrain_gpt.py", megatron_args(w, lay, global_batch, recompute)
        )
        return out
    qlora = w.finetune == "qlora"  # bitsandbytes 4-bit models are loaded onto their GPU and refuse .to()
    if lay.key == "single":
        out.kind = "single"
        out.torchrun = torchrun_line(1, 1)
        code = "import torch\n" + ("" if qlora else "model.to('cuda')\n")
        if w.precision != "fp32":
            code += (
                f"with torch.autocast('cuda', dtype=torch.{C.TORCH_DTYPE[w.precision]}):\n    loss = "
                "model(**batch).loss\n"
            )
        if recompute:
            code += (
                "model.gradient_checkpointing_enable()  # Hugging Face models; or torch.utils.checkpoint per layer\n"
            )
        out.code = peft_code(w, single=True) + code.rstrip("\n")
        return out
    if lay.zero_stage == 0:
        out.kind = "ddp"
        out.torchrun = torchrun_line(gpus_per_node, nodes)
        ddp = (
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            f"model = DDP({'model' if qlora else 'model.to(local_rank)'}, device_ids=[local_rank], "
            "gradient_as_bucket_view=True, bucket_cap_mb=25)\n"
            f"# gradient accumulation: {accumulation} micro-batches per step, all but the last under `with "
            "model.no_sync():`"
        )
        if recompute:
            ddp = (
                "model.gradient_checkpointing_enable()  # Hugging Face models; or torch.utils.checkpoint per layer\n"
                + ddp
            )
        out.code = peft_code(w) + ddp
        out.accelerate_config = accelerate_yaml(w, lay, recompute, gpus_per_node, nodes)
        out.accelerate_launch = accelerate_launch_line(nodes)
        return out
    ds = deepspeed_config(w, lay, accumulation, global_batch, recompute)
    if lay.zero_stage == 1 or lay.offload != "none":
        out.kind = "deepspeed"
        out.deepspeed_config = ds
        out.torchrun = torchrun_line(gpus_per_node, nodes, "train.py", "--deepspeed ds_config.json")
        out.code = peft_code(w) + deepspeed_code(lay, recompute)
        out.accelerate_config = accelerate_yaml(w, lay, recompute, gpus_per_node, nodes)
        out.accelerate_launch = accelerate_launch_line(nodes)
        return out
    out.kind = "fsdp"
    settings = fsdp_settings(w, lay, recompute, gpus_per_node, nodes)
    out.fsdp = settings
    out.torchrun = torchrun_line(gpus_per_node, nodes)
    out.code = peft_code(w) + fsdp_code(w, settings)
    out.accelerate_config = accelerate_yaml(w, lay, recompute, gpus_per_node, nodes)
    out.accelerate_launch = accelerate_launch_line(nodes)
    if not lay.hybrid:
        out.deepspeed_config = ds  # the same stage in DeepSpeed, for those who use it
        out.deepspeed_config_note = (
            f"the same ZeRO stage in DeepSpeed, instead of FSDP: its communication buckets add "
            f"{bucket_bytes(w, lay) / 2**30:.2f} GiB per GPU to the memory above"
        )
    return out
