"""Launch snippets that run: Python that parses and names only what it imports, FSDP/DDP keywords that torch
accepts, DeepSpeed code that ZeRO-Offload and ZeRO-3 accept, Megatron flags that build the named model."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from gpuadvisor.advisor import Workload, advise
from gpuadvisor.advisor.rigview import from_rig
from gpuadvisor.advisor.snippets import megatron_args, training_snippet
from gpuadvisor.advisor.strategies import layouts


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _lays(rig, w):  # type: ignore[no-untyped-def]
    return {lay.key: lay for lay in layouts(from_rig(rig, nodes=w.nodes), w)[0]}


@pytest.mark.parametrize("model", ["llama-3-8b", "qwen2.5-7b", "gemma-2-9b", "gpt2"])
def test_fsdp_code_parses_and_imports_its_layer_class(preset, model: str) -> None:  # type: ignore[no-untyped-def]
    w = Workload.from_options(model=model, precision="fp16")
    s = training_snippet(w, _lays(preset("4x4090-pcie"), w)["zero3"], 1, 4, True, 4, 1)
    tree = ast.parse(s["code"])
    layer = s["fsdp"]["auto_wrap_policy"].split("{")[1].rstrip("})")
    assert layer in _imported_names(tree)  # the class the wrap policy names is imported, not left undefined
    assert "ShardedGradScaler" in _imported_names(tree)  # fp16 FSDP needs the sharded scaler


def test_fsdp_and_ddp_keywords_exist_in_torch(preset) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.nn.parallel import DistributedDataParallel

    w = Workload.from_options(model="llama-3-8b", nodes=2)
    rig = preset("dgx-h100")
    lays = _lays(rig, w)
    for key, cls in (
        ("zero3", FullyShardedDataParallel),
        ("hsdp", FullyShardedDataParallel),
        ("ddp", DistributedDataParallel),
    ):
        s = training_snippet(w, lays[key], 2, 32, key == "ddp", 8, 2)
        tree = ast.parse(s["code"])
        accepted = set(inspect.signature(cls.__init__).parameters)
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ("FSDP", "DDP")]
        assert calls and {k.arg for k in calls[0].keywords} <= accepted
        for node in ast.walk(tree):  # every torch import in the snippet resolves in this torch
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("torch"):
                mod = importlib.import_module(node.module)
                assert all(hasattr(mod, a.name) for a in node.names), node.module
        if key == "ddp":
            assert "gradient_checkpointing_enable" in s["code"]
    assert torch.distributed.fsdp.ShardingStrategy.HYBRID_SHARD


def test_offload_snippet_uses_deepspeed_cpu_adam_and_zero_init(preset) -> None:  # type: ignore[no-untyped-def]
    """DeepSpeed refuses ZeRO-Offload with a torch optimizer (zero_force_ds_cpu_optimizer defaults to true); a
    70B ZeRO-3 model must be built inside deepspeed.zero.Init (accelerate: zero3_init_flag)."""
    a = advise(preset("dgx-h100"), Workload.from_options(model="llama-3-70b"))
    assert a.pick["cpu_offload"] == "optimizer+params" and a.pick["activation_checkpointing"]
    code = a.snippet["code"]
    ast.parse(code)
    assert "DeepSpeedCPUAdam(" in code and "deepspeed.zero.Init(" in code and "gradient_checkpointing_enable()" in code
    assert "zero3_init_flag: true" in a.snippet["accelerate_config"]
    zero = a.snippet["deepspeed_config"]["zero_optimization"]
    assert zero["stage"] == 3 and "allgather_bucket_size" not in zero and "stage3_prefetch_bucket_size" in zero
    # a 7B model whose pick is ZeRO-1 without activation checkpointing (Llama 3 8B's 128k vocabulary and
    # eager RMSNorm activations no longer fit ZeRO-1 at 4,096 tokens: its pick is ZeRO-2)
    z1 = advise(preset("dgx-h100"), Workload.from_options(model="mistral-7b"))
    assert (
        z1.pick["zero_stage"] == 1
        and "DeepSpeedCPUAdam" not in z1.snippet["code"]
        and "zero.Init" not in z1.snippet["code"]
    )


def test_megatron_flags_describe_the_model(preset) -> None:  # type: ignore[no-untyped-def]
    """Megatron's GPT defaults are GPT-2's: a Llama needs RMSNorm, RoPE, an untied head and no biases, or
    pretrain_gpt.py builds a different model."""
    rig = preset("dgx-h100")
    llama = Workload.from_options(model="llama-3-8b")
    args = megatron_args(llama, _lays(rig, llama)["tp2"], 128, False).split(" --")
    for flag in (
        "normalization RMSNorm",
        "position-embedding-type rope",
        "untie-embeddings-and-output-weights",
        "disable-bias-linear",
        "swiglu",
        "group-query-attention",
        "num-query-groups 8",
    ):
        assert any(a.lstrip("-") == flag for a in args), flag
    assert not any(a.startswith("kv-channels") for a in args)
    qwen = Workload.from_options(model="qwen2.5-7b")
    assert "--add-qkv-bias" in megatron_args(qwen, _lays(rig, qwen)["tp2"], 128, False)
    gemma = Workload.from_options(model="gemma-2-9b")
    g = megatron_args(gemma, _lays(rig, gemma)["tp2"], 128, False)
    assert "--kv-channels 256" in g and "--untie-embeddings-and-output-weights" not in g
    gpt2 = Workload.from_options(model="gpt2")
    g2 = megatron_args(gpt2, _lays(rig, gpt2)["tp2"], 128, False)
    assert "RMSNorm" not in g2 and "rope" not in g2 and "disable-bias-linear" not in g2 and "swiglu" not in g2


def test_lora_and_qlora_launch_peft_under_ddp_fsdp_or_deepspeed(preset) -> None:  # type: ignore[no-untyped-def]
    """Megatron's pretrain_gpt.py trains every weight: adapter fine-tuning gets no TP/PP layout; the snippet
    wraps the model with PEFT (QLoRA: NF4 base, double quantization, storage dtype for sharding), and never
    calls .to() on a bitsandbytes 4-bit model (transformers refuses it)."""
    q = advise(preset("4x4090-pcie"), Workload.from_options(model="mistral-7b", finetune="qlora"))
    assert all(c["tensor_parallel"] == 1 and c["pipeline_parallel"] == 1 for c in q.candidates)
    assert any(e["strategy"] == "tensor / pipeline parallel" and "PEFT" in e["reason"] for e in q.excluded)
    # 8.6 GiB with DDP and checkpointing: plain DDP, not a DeepSpeed ZeRO-3 CPU-offload plan.
    assert q.pick["key"] == "ddp+ckpt" and q.snippet["kind"] == "ddp"
    code = q.snippet["code"]
    tree = ast.parse(code)
    assert {"BitsAndBytesConfig", "LoraConfig", "get_peft_model", "DDP"} <= _imported_names(tree)
    assert "bnb_4bit_quant_type='nf4'" in code and "bnb_4bit_use_double_quant=True" in code and "r=16" in code
    assert ".to(" not in code
    lora = advise(preset("dgx-h100"), Workload.from_options(model="llama-3-70b", finetune="lora", lora_rank=64))
    assert lora.pick["zero_stage"] == 3 and lora.snippet["kind"] == "fsdp"
    assert "get_peft_model" in lora.snippet["code"] and "r=64" in lora.snippet["code"]
    ast.parse(lora.snippet["code"])
    full = advise(preset("dgx-h100"), Workload.from_options(model="llama-3-8b"))
    assert "peft" not in full.snippet["code"]
    single = advise(preset("h100-pcie"), Workload.from_options(model="llama-3-8b", finetune="qlora"))
    assert single.snippet["kind"] == "single" and ".to(" not in single.snippet["code"]
    ast.parse(single.snippet["code"])


def test_a_config_json_names_its_layer_class_by_model_type(preset) -> None:  # type: ignore[no-untyped-def]
    """--hf-config examples/workloads/meta-llama-3-8b.config.json (model_type llama) wraps LlamaDecoderLayer,
    not a placeholder, and is named after the file, not its folder."""
    from pathlib import Path

    cfg = Path(__file__).resolve().parents[1] / "examples" / "workloads" / "meta-llama-3-8b.config.json"
    w = Workload.from_options(hf_config=str(cfg))
    assert w.arch.name == "meta-llama-3-8b.config (llama)"
    s = training_snippet(w, _lays(preset("4x4090-pcie"), w)["zero3"], 1, 4, False, 4, 1)
    assert s["fsdp"]["auto_wrap_policy"].endswith("{LlamaDecoderLayer})")
    assert "from transformers.models.llama.modeling_llama import LlamaDecoderLayer" in s["code"]
