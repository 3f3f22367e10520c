"""The advisor's predictions against published measurements of real systems."""

from __future__ import annotations

import pytest

from gpuadvisor.advisor import Workload, advise
from gpuadvisor.advisor import constants as C

GiB = 2**30


def _serving(preset, model: str, **kw):  # type: ignore[no-untyped-def]
    a = advise(preset("dgx-h100"), Workload.from_options(model=model, task="inference", **kw))
    return a, {o["tensor_parallel_size"]: o for o in a.candidates}


def test_vllm_kv_cache_on_h100_matches_vllm_logs(preset) -> None:  # type: ignore[no-untyped-def]
    """vLLM's own log lines on an H100 80GB (llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md,
    gpu-memory-utilization 0.9 of 79.18 GiB): Llama-3.1-8B TP=1 weights 14.99 GiB, peak activation 4.76 GiB,
    non-torch 0.13 GiB, KV cache 51.38 GiB; Llama-3.3-70B-FP8 TP=2 weights 33.88 GiB, activation 4.84 GiB,
    non-torch 0.55 GiB, KV cache 32.0 GiB. (Llama 3.1/3.3 share the Llama 3 shapes.)"""
    _, by_tp = _serving(preset, "llama-3-8b")
    one = by_tp[1]
    # The H100's 81559 MiB less the 480 MiB the driver reserves is the 79.18 GiB vLLM sees.
    assert (81559 * 2**20 - C.DRIVER_RESERVED_BYTES) / GiB == pytest.approx(79.18, abs=0.005)
    assert one["profile_tokens"] == 8192 and one["profile_sequences"] == 1024  # vllm serve defaults on an H100
    assert one["weights_bytes"] / GiB == pytest.approx(14.99, abs=0.05)
    assert one["activation_peak_bytes"] / GiB == pytest.approx(4.76, abs=0.02)
    assert one["kv_cache_budget_bytes"] / GiB == pytest.approx(51.38, abs=0.1)
    assert one["kv_capacity_tokens"] == int(one["kv_cache_budget_bytes"] // (131072 * 16)) * 16

    _, fp8 = _serving(preset, "llama-3-70b", precision="fp8")
    two = fp8[2]
    # FP8 linear layers, 16-bit embeddings and lm_head: (68.45e9 × 1 + 2.10e9 × 2) / 2.
    assert two["weights_bytes"] / GiB == pytest.approx(33.88, abs=0.1)
    assert two["activation_peak_bytes"] / GiB == pytest.approx(4.84, abs=0.02)
    assert two["runtime_bytes"] / GiB == pytest.approx(0.55, abs=0.005)
    assert two["kv_cache_budget_bytes"] / GiB == pytest.approx(32.0, abs=0.15)


def test_70b_bf16_serving_needs_four_h100s(preset) -> None:  # type: ignore[no-untyped-def]
    """65.7 GiB of bf16 weights per GPU at TP=2 leave 0.9 × 79.18 − 65.7 − 4.84 − 0.55 ≈ 0.2 GiB: about 1,000
    tokens of KV cache, not one 8192-token sequence, so TP=4 is the smallest that serves Llama-3-70B in bf16."""
    a, by_tp = _serving(preset, "llama-3-70b")
    assert not by_tp[2]["fits"] and by_tp[2]["kv_capacity_tokens"] < 8192
    # TP=4 is the smallest that fits; the pick is the fastest that fits (at one request, the largest group)
    assert min(t for t, o in by_tp.items() if o["fits"]) == 4 and a.pick["tensor_parallel_size"] >= 4


def test_vllm_defaults_on_smaller_gpus_and_a100(preset) -> None:  # type: ignore[no-untyped-def]
    """vLLM's get_batch_defaults: A100s and GPUs under 70 GiB profile 2048 tokens and 256 sequences."""
    for name in ("dgx-a100", "4x4090-pcie"):
        a = advise(preset(name), Workload.from_options(model="llama-3-8b", task="inference"))
        one = next(o for o in a.candidates if o["tensor_parallel_size"] == 1)
        assert (one["profile_tokens"], one["profile_sequences"]) == (2048, 256)
        assert one["activation_peak_bytes"] == round(256 * 128256 * C.VLLM_SAMPLER_BYTES_PER_LOGIT + 2048 * 4096 * 2)


def test_vllm_command_caps_sequences_only_when_asked(preset) -> None:  # type: ignore[no-untyped-def]
    a, _ = _serving(preset, "llama-3-8b")
    assert "--max-num-seqs" not in a.snippet["command"]
    b, by_tp = _serving(preset, "llama-3-8b", concurrency=64)
    # the cap is each replica's share of the 64 requests (--data-parallel-size copies behind one endpoint)
    share = 64 // b.pick["replicas"]
    assert f"--max-num-seqs {share}" in b.snippet["command"]
    assert b.pick["replicas"] == 1 or f"--data-parallel-size {b.pick['replicas']}" in b.snippet["command"]
    assert by_tp[1]["profile_sequences"] == 64 // by_tp[1]["replicas"]


def test_tp_beyond_the_kv_heads_replicates_them(preset) -> None:  # type: ignore[no-untyped-def]
    """Llama-3-70B has 8 KV heads: vLLM runs it at TP=16 with each KV head on two GPUs (one KV head per GPU)."""
    a = advise(preset("dgx2-v100"), Workload.from_options(model="llama-3-70b", task="inference", precision="fp16"))
    by_tp = {o["tensor_parallel_size"]: o for o in a.candidates}
    assert 16 in by_tp and by_tp[16]["kv_heads_per_gpu"] == 1
    assert by_tp[16]["kv_bytes_per_token"] == 2 * 80 * 1 * 128 * 2
    assert by_tp[8]["kv_bytes_per_token"] == 2 * 80 * 1 * 128 * 2


def test_long_context_beyond_the_model_is_flagged(preset) -> None:  # type: ignore[no-untyped-def]
    a = advise(preset("dgx-h100"), Workload.from_options(model="llama-3-8b", task="inference", context=32768))
    assert any("max_position_embeddings (8192)" in n for n in a.notes)


@pytest.mark.parametrize(
    ("gpu_id", "mib"),
    [
        # nvidia-smi's memory.total for each product (public nvidia-smi tables; shared/samples for H100, A100, A40, L4,
        # 3090).
        ("b200", 183359),
        ("h200-sxm", 143771),
        ("h100-nvl", 95830),
        ("h100-sxm5-80gb", 81559),
        ("h100-pcie", 81559),
        ("a100-sxm4-80gb", 81920),
        ("a100-sxm4-40gb", 40960),
        ("l40s", 46068),
        ("a40", 46068),
        ("rtx-6000-ada", 49140),
        ("rtx-a6000", 49140),
        ("a10", 23028),
        ("l4", 23034),
        ("rtx-3090", 24576),
        ("rtx-4090", 24564),
        ("v100-sxm3-32gb", 32510),
        ("v100-sxm2", 32510),
        ("v100-pcie", 32510),
    ],
)
def test_catalog_memory_is_what_nvidia_smi_reports(gpu_id: str, mib: int) -> None:
    """A planned rig is sized like a scanned one: by the total nvidia-smi reports, not the marketed GB (an
    H200's "141 GB" is 143771 MiB, 7% more than 141e9 bytes)."""
    from gpuadvisor import catalog

    assert catalog.gpu_by_id(gpu_id).memory_mib == mib


def test_b200_dense_peaks_are_half_the_hgx_datasheet_sparse_figures() -> None:
    """HGX B200 datasheet, 8 GPUs with sparsity: FP8 72 PF, FP16/BF16 36 PF, TF32 18 PF; FP32 600 TF (dense)."""
    from gpuadvisor import catalog

    b200 = catalog.gpu_by_id("b200")
    assert b200.tflops == {
        "fp8": 72e3 / 8 / 2,
        "bf16": 36e3 / 8 / 2,
        "fp16": 36e3 / 8 / 2,
        "tf32": 18e3 / 8 / 2,
        "fp32": 600 / 8,
    }


def test_training_flops_leave_out_the_input_embedding_lookup(preset) -> None:  # type: ignore[no-untyped-def]
    """6·N·tokens counts multiply-adds: the untied input embedding is a lookup, so N excludes it (Kaplan et al. 2020
    count non-embedding parameters; Megatron-LM eq. 3 counts only the logit layer's V·h; torchtitan's MFU uses
    num_params minus tok_embeddings). Llama-3-8B: 8,030,261,248 − 128,256 × 4096 = 7,504,924,672."""
    from gpuadvisor.advisor.workload import Workload as W

    llama = W.from_options(model="llama-3-8b")
    assert llama.arch.flop_params() == 8_030_261_248 - 128_256 * 4096
    gpt2 = W.from_options(model="gpt2")  # tied: wte is the lm_head's matmul; wpe (1024 × 768) is a lookup
    assert gpt2.arch.flop_params() == 124_439_808 - 1024 * 768
    # --mfu 0.4 means exactly that: the model FLOPs (6N + 12·L·s·d_attn per token) at 0.4 of the datasheet peak.
    a = advise(preset("dgx-h100"), W.from_options(model="llama-3-8b", checkpointing="none", mfu=0.4))
    z1 = next(c for c in a.candidates if c["key"] == "zero1")
    per_token = 6 * (8_030_261_248 - 128_256 * 4096) + 12 * 32 * 4096 * 4096
    assert z1["compute_parts_seconds"]["compute"] == pytest.approx(
        per_token * z1["tokens_per_step"] / (8 * 989.4e12 * 0.4), rel=1e-5
    )
    # The reported MFU is that 0.4, less what the optimizer step and exposed communication add to the step.
    assert 0.36 < z1["mfu"] < 0.4


def test_ddp_communication_hides_only_under_the_last_micro_batch(preset) -> None:  # type: ignore[no-untyped-def]
    """With gradient accumulation DDP (under no_sync) and ZeRO-1 reduce gradients once per step, during the last
    micro-batch's backward: only that backward can hide the all-reduce, not the whole step's."""
    big = advise(preset("4x4090-pcie"), Workload.from_options(params="1.3e9", seq_len=1024, global_batch=64, mfu=0.4))
    d = next(c for c in big.candidates if c["key"].startswith("ddp"))
    acc, comm = d["gradient_accumulation"], d["comm"]["data_parallel_seconds"]
    per_pass = 8 if d["activation_checkpointing"] else 6
    # With --mfu the backward is (per_pass - 2)/per_pass of the micro-batches' compute (the optimizer step apart).
    window = d["compute_parts_seconds"]["compute"] * (per_pass - 2) / per_pass / acc
    assert comm > window  # the all-reduce outlasts the last micro-batch's backward here
    assert d["comm"]["data_parallel_exposed_seconds"] == pytest.approx(comm - window, rel=1e-3)


def test_one_gpu_says_nothing_about_scaling(preset) -> None:  # type: ignore[no-untyped-def]
    a = advise(preset("h100-pcie"), Workload.from_options(model="llama-3-8b"))
    assert a.pick is not None
    assert "scaling efficiency" not in a.reason and "practitioners" not in a.reason and "1 GPUs" not in a.reason


def test_default_precision_follows_the_gpu(preset) -> None:  # type: ignore[no-untyped-def]
    """Without --precision, a GPU that lacks BF16 (Volta) trains and serves in fp16, and says so; an explicit
    --precision bf16 is kept and flagged."""
    a = advise(preset("dgx2-v100"), Workload.from_options(model="llama-3-8b"))
    assert a.workload["precision"] == "fp16" and a.rig["peak_tflops"] == 125.0
    assert any("--precision not given: fp16" in n for n in a.notes)
    assert "--bf16" not in (a.snippet.get("torchrun") or "") and "bfloat16" not in (a.snippet.get("code") or "")
    s = advise(preset("dgx2-v100"), Workload.from_options(model="llama-3-8b", task="inference"))
    assert "--dtype float16" in s.snippet["command"]
    h = advise(preset("dgx-h100"), Workload.from_options(model="llama-3-8b"))
    assert h.workload["precision"] == "bf16" and not any("--precision not given" in n for n in h.notes)
    explicit = advise(preset("dgx2-v100"), Workload.from_options(model="gpt2", precision="bf16"))
    assert explicit.workload["precision"] == "bf16" and any("no BF16 support" in n for n in explicit.notes)


def test_one_efficiency_figure_in_the_table_the_rows_and_the_pick(preset) -> None:  # type: ignore[no-untyped-def]
    """One definition everywhere: the fraction of the ideal speed (compute alone at the MFU, no recomputation,
    communication or bubble). The old output showed the pick's column at 0.96 (compute / step) while another
    row said "the pick at 72%" (ideal / step) on 4x RTX 4090 with Llama 3 8B."""
    import re

    from gpuadvisor.render.text.advice import render_advice

    a = advise(preset("4x4090-pcie"), Workload.from_options(model="llama-3-8b", mfu=0.4))
    d = a.pick
    assert "scaling_efficiency" not in d and d["activation_checkpointing"]
    eff = d["ideal_speed_fraction"]
    assert eff < d["compute_seconds"] / d["step_seconds"]  # recomputation counts against it
    text = render_advice(a, explain=True, width=400)
    pick_row = next(line for line in text.splitlines() if line.startswith(d["name"]) and line.rstrip().endswith("PICK"))
    assert f"{eff:.0%}" in pick_row.split()
    quoted = {m for c in a.candidates for m in re.findall(r"the pick at (\d+)%", c["reason"])}
    assert quoted <= {f"{eff * 100:.0f}"}
    assert f"runs at {eff:.0%} of the ideal speed" in a.reason
    # What caps it is said: with no communication at all, recomputation leaves ideal / compute.
    cap = eff * d["step_seconds"] / d["compute_seconds"]
    assert f"activation checkpointing's recomputation alone caps it at {cap:.0%}" in a.reason
    q = advise(preset("4x4090-pcie"), Workload.from_options(model="mistral-7b", finetune="qlora", mfu=0.4))
    qd = q.pick
    assert qd["activation_checkpointing"]
    # LoRA: 4·N per token + the attention term over 3 passes; recomputation adds the layers' forward (2 per linear
    # weight, not the output layer's) and the attention forward.
    n, attn = 7_241_732_096 - 32000 * 4096, 4 * 32 * 4096 * 4096
    lin = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    adapters = 32 * 16 * (8192 + 5120 + 5120 + 8192 + 3 * (4096 + 14336))
    model = 4 * n + 6 * adapters + 3 * attn
    scaling = qd["compute_seconds"] / qd["step_seconds"]
    assert qd["ideal_speed_fraction"] == pytest.approx(scaling * model / (model + 2 * lin + attn), abs=1e-3)


def test_offloading_a_lora_model_moves_its_frozen_base(preset) -> None:  # type: ignore[no-untyped-def]
    """ZeRO-3 parameter offload fetches every weight's shard from the host for the forward and the backward
    of each micro-batch, the frozen base included, not only the adapters."""
    a = advise(preset("4x4090-pcie"), Workload.from_options(model="mistral-7b", finetune="lora", checkpointing="full"))
    z3 = next(c for c in a.candidates if c["key"].startswith("zero3-offload"))
    moved = (
        float(next(d for d in z3["comm"]["detail"] if d.startswith("CPU offload")).split(" GB")[0].split()[-1]) * 1e9
    )
    base_shard = 7_241_732_096 * 2 / 4
    assert moved >= z3["gradient_accumulation"] * 2 * base_shard * 0.99


def test_a100_serving_subtracts_its_own_driver_reservation(preset) -> None:  # type: ignore[no-untyped-def]
    """An A100 SXM4 80GB reserves 763 MiB (shared/samples/smi-q_a100sxmx4_thamada.txt), not the H100's 480:
    Llama-3-70B in fp8 at TP=1 then has 0.9 × (81920 − 763) MiB − 67.67 − 1.20 − 0.13 GiB ≈ 2.3 GiB of KV cache,
    under one 8192-token sequence (160 KiB per token), so vLLM would refuse it; and vLLM serves fp8 on Ampere
    as weight-only FP8 (Marlin), which the note says instead of 'would fail'."""
    a = advise(preset("dgx-a100"), Workload.from_options(model="llama-3-70b", task="inference", precision="fp8"))
    one = next(o for o in a.candidates if o["tensor_parallel_size"] == 1)
    assert one["driver_reserved_bytes"] == 763 * 2**20
    assert one["kv_cache_budget_bytes"] / GiB == pytest.approx(
        0.9 * (81920 - 763) / 1024 - 67.667 - 1.204 - 0.13, abs=0.02
    )
    two = next(o for o in a.candidates if o["tensor_parallel_size"] == 2)
    assert not one["fits"] and two["fits"] and a.pick["tensor_parallel_size"] >= 2
    assert any("weight-only FP8" in n for n in a.notes) and not any("would fail" in n for n in a.notes)


def test_training_capacity_is_what_cuda_gives_torch(preset) -> None:  # type: ignore[no-untyped-def]
    """torch allocates from CUDA's total (torch.cuda.mem_get_info), NVML's less the driver's reservation: 81559 − 480
    MiB on an H100 (tests/fixtures/h100-vm), 81920 − 763 MiB on an A100 SXM4 80GB."""
    for name, mib in (("dgx-h100", 81559 - 480), ("dgx-a100", 81920 - 763)):
        a = advise(preset(name), Workload.from_options(model="llama-3-8b"))
        assert {c["capacity_bytes"] for c in a.candidates} == {mib * 2**20}
        assert (
            a.rig["memory_per_gpu_bytes"] - a.rig["cuda_memory_per_gpu_bytes"]
            == a.rig["memory_per_gpu_bytes"] - mib * 2**20
        )


def test_megatron_stack_predicts_nemo_llama2_7b_fp8(preset) -> None:  # type: ignore[no-untyped-def]
    """NVIDIA NeMo 24.07 performance summary: Llama 2 7B, FP8, 8x H100 (DGX-H100), seq 4096, GBS 128, TP 1 PP 1:
    16,847 tokens/s per GPU. With --stack megatron (Transformer Engine's fused kernels) the pick is within the
    advisor's goal (0.67-1.5) of it and its band contains it; eager PyTorch's kernels predict a slower run."""
    kw = dict(
        model="llama-2-7b", precision="fp8", seq_len=4096, global_batch=128, state_bytes="18", checkpointing="none"
    )
    mega = advise(preset("dgx-h100"), Workload.from_options(stack="megatron", **kw))
    eager = advise(preset("dgx-h100"), Workload.from_options(**kw))
    per_gpu = mega.pick["tokens_per_second"] / 8
    assert 0.67 <= per_gpu / 16847 <= 1.5
    band = mega.pick["band"]["tokens_per_second"]
    assert band["low"] / 8 <= 16847 <= band["high"] / 8
    assert eager.pick["tokens_per_second"] < 0.85 * mega.pick["tokens_per_second"]
    assert any("Megatron-Core + Transformer Engine (--stack)" in a for a in mega.assumptions)


def test_framework_option_sets_the_stack_from_the_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`advise --framework megatron` predicts with Megatron's fused kernels (its launch lines alone did before)."""
    import json

    from click.testing import CliRunner

    from gpuadvisor.cli import cli

    args = ["advise", "--simulate", "dgx-h100", "--model", "llama-2-7b", "--precision", "fp8", "--format", "json"]
    runner = CliRunner()
    plain = json.loads(runner.invoke(cli, args).output)
    mega = json.loads(runner.invoke(cli, [*args, "--framework", "megatron"]).output)
    explicit = json.loads(runner.invoke(cli, [*args, "--stack", "megatron"]).output)
    assert mega["pick_detail"]["tokens_per_second"] == explicit["pick_detail"]["tokens_per_second"]
    assert mega["pick_detail"]["tokens_per_second"] > plain["pick_detail"]["tokens_per_second"]
    assert mega["workload"]["stack"] == "megatron" and plain["workload"]["stack"] == "pytorch"
