"""Model presets, --params, Hugging Face config.json, and the catalog of GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gpuadvisor import catalog
from gpuadvisor.advisor import Workload, workload_options
from gpuadvisor.advisor.architecture import architecture_from_hf_config, architecture_from_spec
from gpuadvisor.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workloads"


@pytest.mark.parametrize("spec", [m for m in catalog.models() if m.params_published], ids=lambda m: m.id)
def test_presets_count_their_published_parameters(spec: catalog.ModelSpec) -> None:
    """The architecture numbers reproduce the parameter count each model page shows, to the parameter."""
    assert architecture_from_spec(spec).counted_params() == spec.params_published


def test_preset_shapes() -> None:
    a = architecture_from_spec(catalog.find_model("llama-3-70b"))
    assert (a.hidden, a.layers, a.heads, a.kv_heads, a.intermediate, a.vocab, a.head_dim) == (
        8192,
        80,
        64,
        8,
        28672,
        128256,
        128,
    )
    g = architecture_from_spec(catalog.find_model("gemma-2-9b"))
    assert g.head_dim == 256 and g.q_dim == 4096 != g.hidden  # Gemma's head_dim is not hidden / heads
    assert catalog.find_model("Meta-Llama/Meta-Llama-3-8B").id == "llama-3-8b"
    assert catalog.find_model("no-such-model") is None


def test_hf_config_files_read_offline() -> None:
    llama = architecture_from_hf_config(EXAMPLES / "meta-llama-3-8b.config.json")
    assert llama.counted_params() == 8_030_261_248
    assert (llama.mlp, llama.norm, llama.tied_embeddings) == ("gated", "rmsnorm", False)
    gpt2 = architecture_from_hf_config(EXAMPLES / "gpt2.config.json")
    assert gpt2.counted_params() == 124_439_808
    assert (gpt2.mlp, gpt2.norm, gpt2.tied_embeddings, gpt2.intermediate) == ("plain", "layernorm", True, 3072)


def test_hf_config_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        architecture_from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        architecture_from_hf_config(bad)
    moe = tmp_path / "moe.json"
    moe.write_text(
        json.dumps(
            {
                "hidden_size": 4096,
                "num_hidden_layers": 32,
                "num_attention_heads": 32,
                "vocab_size": 32000,
                "num_local_experts": 8,
            }
        )
    )
    with pytest.raises(InputError, match="mixture-of-experts"):
        architecture_from_hf_config(moe)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 32000}))
    with pytest.raises(InputError, match="'num_hidden_layers' missing"):
        architecture_from_hf_config(partial)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(
        json.dumps({"hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10})
    )
    with pytest.raises(InputError, match="'hidden_size' is 'big'"):
        architecture_from_hf_config(wrong)
    # A zero size was a ZeroDivisionError ("internal error") before it reached the user.
    for field, value in (
        ("num_attention_heads", 0),
        ("num_key_value_heads", 0),
        ("hidden_size", -1),
        ("vocab_size", 0),
    ):
        zero = tmp_path / f"zero-{field}.json"
        zero.write_text(
            json.dumps(
                {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, field: value}
            )
        )
        with pytest.raises(InputError, match=f"'{field}' is {value}, expected a positive number"):
            Workload.from_options(hf_config=str(zero))


def test_params_option_gives_a_gpt3_family_shape() -> None:
    w = Workload.from_options(params="7e9")
    assert w.params == 7_000_000_000
    assert (w.arch.hidden, w.arch.heads) == (4096, 32)  # GPT-3 6.7B row of Brown et al. table 2.1
    assert abs(w.arch.counted_params() - 7e9) / 7e9 < 0.02
    with pytest.raises(InputError, match="not a number"):
        Workload.from_options(params="seven")


def test_from_options_defaults_and_errors() -> None:
    w = Workload.from_options(model="llama-3-8b", micro_batch=None, precision=None)
    assert (w.precision, w.optimizer, w.micro_batch, w.seq, w.task, w.state_bytes) == (
        "bf16",
        "adamw",
        1,
        4096,
        "train",
        "16",
    )
    assert Workload.from_options(model="gpt2").seq == 1024  # capped at the model's positions
    with pytest.raises(InputError, match="no model given"):
        Workload.from_options()
    with pytest.raises(InputError, match="both given"):
        Workload.from_options(model="gpt2", params="1e9")
    with pytest.raises(InputError, match="not a preset"):
        Workload.from_options(model="llama-9-1000b")
    with pytest.raises(InputError, match="--mfu"):
        Workload.from_options(model="gpt2", mfu=1.5)
    assert Workload.requested(model=None, params=None, hf_config=None) is False
    assert Workload.requested(model="gpt2") is True


def test_lora_counts_adapters_on_every_linear() -> None:
    w = Workload.from_options(model="llama-3-8b", finetune="lora", lora_rank=16)
    a = w.arch
    # per layer: q (4096->4096), k, v (4096->1024), o, gate, up (4096->14336), down: r × (in + out) each
    per_layer = 16 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 2 * (4096 + 14336) + (14336 + 4096))
    assert w.trainable_params() == a.layers * per_layer == 41_943_040


def test_workload_options_decorator_feeds_from_options() -> None:
    seen = {}

    @click.command()
    @workload_options
    def cmd(**kw):  # type: ignore[no-untyped-def]
        seen["w"] = Workload.from_options(**kw)

    r = CliRunner().invoke(
        cmd,
        [
            "--model",
            "mistral-7b",
            "--precision",
            "fp16",
            "--global-batch",
            "64",
            "--no-flash-attention",
            "--state-bytes",
            "18",
            "--nodes",
            "2",
        ],
    )
    assert r.exit_code == 0, r.output
    w = seen["w"]
    assert (w.model_label, w.precision, w.global_batch, w.fused_attention, w.state_bytes, w.nodes) == (
        "mistral-7b",
        "fp16",
        64,
        False,
        "18",
        2,
    )
    assert w.state_convention().per_param(8) == 18


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("Tesla V100-SXM3-32GB", "v100-sxm3-32gb"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA A40", "a40"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA B200", "b200"),
    ],
)
def test_catalog_matches_nvml_names(name: str, gpu_id: str) -> None:
    assert catalog.find_gpu(name).id == gpu_id


def test_catalog_rows_are_dense_and_sourced() -> None:
    for g in catalog.gpus():
        assert g.source and g.memory_source
        assert set(g.tflops) <= set(catalog.PRECISIONS)
        # Tensor-core half precision is never below the plain FP32 rate.
        assert g.tflops.get("fp16", 0) >= g.tflops["fp32"]
    h100 = catalog.gpu_by_id("h100-sxm5-80gb")
    assert h100.tflops["bf16"] == 989.4  # dense; the datasheet's 1,979 is with sparsity
    assert h100.memory_bytes == 81559 * 2**20
    assert catalog.gpu_by_id("a100-sxm4-80gb").peak_tflops("fp8") is None
    assert catalog.find_gpu("Some Unknown GPU") is None
