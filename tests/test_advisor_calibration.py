"""The advisor's predictions against published runs (benchmarks/calibration_cases.toml), the error bands shipped
with it, and the model features those cases exercise (measured compute, fp8 per component, LoRA/QLoRA, memory
figures, input checks, the micro-batch floor, PTD-P depths, vLLM versions)."""

from __future__ import annotations

from pathlib import Path

import benchscripts
import pytest

from gpuadvisor import catalog
from gpuadvisor.advisor import Workload, advise, fitted
from gpuadvisor.advisor import calibration as K
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor import inference as I
from gpuadvisor.advisor import strategies as S
from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.rigview import hypothetical
from gpuadvisor.catalog import generations
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Measurement

ROOT = Path(__file__).resolve().parent.parent
GiB = 2**30


@pytest.fixture(scope="module")
def acc():  # type: ignore[no-untyped-def]
    return benchscripts.load("advisor_accuracy")


@pytest.fixture(scope="module")
def results(acc):  # type: ignore[no-untyped-def]
    return acc.run()


# -- the accuracy goals ---------------------------------------------------------------------------------------------


def test_every_reference_case_is_run_with_its_source(acc, results) -> None:  # type: ignore[no-untyped-def]
    """Every case of ../shared/calibration/REFERENCES.md (S1-S9, A1-A4, M1-M4, K1-K5, T1-T19) has a row, and at
    least 40 measured (non-formula) cases in all, each with a source and a setting."""
    ids = {r.id for r in results}
    for ref in (
        "S1",
        "S2",
        "S3",
        "S4",
        "S5",
        "S6",
        "S7",
        "S8",
        "S9",
        "A1",
        "A2",
        "A3",
        "A4",
        "K1",
        "K2",
        "K3",
        "K4",
        "K5",
    ):
        assert ref in ids
    # REFERENCES' M and T rows under this file's ids: T1 TT1, T3 TA2, T5 FH2, T7 FA2, T9 FB1, T11 L2, T13 NA3,
    # T15 NZ1-3, T17 TU6, T19 TU2; M1 TU1m, M2 TU2m, M3 TU7m, M4 TU6m.
    for ref in (
        "TT1",
        "TA2",
        "FH2",
        "FA2",
        "FB1",
        "L2",
        "NA3",
        "NZ1",
        "NZ2",
        "NZ3",
        "TU6",
        "TU2",
        "TU1m",
        "TU2m",
        "TU7m",
        "TU6m",
    ):
        assert ref in ids
    assert len([r for r in results if r.kind != "formula"]) >= 40
    assert all(r.source and r.setting for r in results)


def test_accuracy_goals_hold(acc, results) -> None:  # type: ignore[no-untyped-def]
    """Throughput median 0.9-1.1 and every case 0.67-1.5; measured memory median 0.9-1.1 and every case 0.75-1.33;
    KV cache 0.95-1.05; the formula cases exact."""
    summary = acc.summary(results)
    for kind in ("throughput", "memory", "kv_cache", "formula"):
        assert summary[kind]["ok"], (kind, summary[kind])
    assert summary["throughput"]["n"] >= 40 and summary["memory"]["n"] >= 10


def test_throughput_goals_hold_per_training_stack(acc, results) -> None:  # type: ignore[no-untyped-def]
    """Each training stack's published runs: median 0.9-1.1 and every run 0.67-1.5 (eager PyTorch, torch.compile,
    Megatron-Core + Transformer Engine, DeepSpeed, JAX); the Megatron stack has NVIDIA's NeMo and Megatron-Bridge rows;
    the JAX run (MaxText on H100) is predicted with torch.compile's fitted factor, never fitted on."""
    stacks = acc.per_stack(results)
    assert {"pytorch", "compile", "megatron", "deepspeed", "jax"} <= set(stacks)
    assert stacks["megatron"]["n"] >= 12
    for stack, s in stacks.items():
        assert s["ok"], (stack, s)


def test_zero3_scaling_trend_of_narayanan_2021(results) -> None:  # type: ignore[no-untyped-def]
    """144 -> 88 -> 44 TFLOP/s per GPU at 384 / 768 / 1536 A100 (ZeRO-3, GPT-3 175B, batch 1536): the predicted
    drop from 384 to 1536 GPUs is the measured one within 10 %."""
    by = {r.id: r for r in results}
    measured = by["NZ1"].measured / by["NZ3"].measured
    predicted = by["NZ1"].predicted / by["NZ3"].predicted
    assert predicted == pytest.approx(measured, rel=0.10)
    assert by["NZ1"].predicted > by["NZ2"].predicted > by["NZ3"].predicted


def test_a_band_brackets_the_prediction() -> None:
    b = K.band("throughput", 5800.0)
    assert b["low"] < 5800 < b["high"]
    assert b["low"] == pytest.approx(5800 / K.bands()["throughput"]["datasheet"]["ratio_high"])
    # No calibration run was predicted from measured rates: a measured scan gets the same band, and is told so.
    m = K.band("throughput", 5800.0, measured=True)
    assert (m["low"], m["high"], m["basis"]) == (b["low"], b["high"], "datasheet")
    assert "no published run" in m["narrowed_by"] and "narrowed_by" not in b


# -- formulas pinned exactly ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "gpus", "gib"),
    [
        (6_738_415_616, 8, 26.67),
        (8_030_261_248, 4, 48.61),
        (70_553_706_496, 8, 279.26),
        (175e9, 64, 371.80),
    ],
)
def test_deepspeed_zero2_estimator_since_0_14_3(params: float, gpus: int, gib: float) -> None:
    """DeepSpeed 0.19.8 estimate_zero2_model_states_mem_needs (2P + 18P/N, since 0.14.3), REFERENCES S5-S8."""
    assert round(F.deepspeed_zero2_estimate_bytes(params, gpus, "0.19.8") / GiB, 2) == gib
    assert F.deepspeed_zero2_estimate_bytes(params, gpus, "0.14.3") == F.deepspeed_zero2_estimate_bytes(
        params, gpus, "0.19.8"
    )


def test_deepspeed_zero2_estimator_before_0_14_3_and_with_offload() -> None:
    """Up to 0.14.2: 4P + 16P/N (the ZeRO paper's 16 bytes with 16-bit weights and grads whole); offload: 2P (S9)."""
    p = 6_738_415_616
    assert F.deepspeed_zero2_estimate_bytes(p, 8, "0.14.2") == 4 * p + int(16 * p / 8)
    assert F.deepspeed_zero2_estimate_bytes(p, 8, "0.10.0") == 4 * p + int(16 * p / 8)
    for params, gib in ((6_738_415_616, 12.55), (8_030_261_248, 14.96), (70_553_706_496, 131.42), (175e9, 325.96)):
        assert round(F.deepspeed_zero2_estimate_bytes(params, 8, "0.19.8", cpu_offload=True) / GiB, 2) == gib


def test_deepspeed_zero3_estimator() -> None:
    """estimate_zero3_model_states_mem_needs: largest layer × 4 + 18P/N; + 2P/N with optimizer offload; the largest
    layer alone with parameters offloaded too."""
    p, layer = 70_553_706_496, 128_256 * 8192
    assert F.deepspeed_zero3_estimate_bytes(p, layer, 8) == 4 * layer + int(18 * p / 8)
    assert F.deepspeed_zero3_estimate_bytes(p, layer, 8, cpu_offload=True) == 4 * layer + int(2 * p / 8)
    assert F.deepspeed_zero3_estimate_bytes(p, layer, 8, cpu_offload=True, cpu_offload_params=True) == 4 * layer


@pytest.mark.parametrize(("seq", "gib"), [(1024, 4.25), (4096, 17.0), (16384, 68.0)])
def test_playbook_activation_chart(seq: int, gib: float) -> None:
    """HF Ultra-Scale Playbook, Llama-3-8B, batch 1, no recomputation: 32 layers × 34·s·h bytes (fused attention)."""
    assert 32 * F.activation_bytes_per_layer(seq, 1, 4096, 32, fused_attention=True) / GiB == pytest.approx(
        gib, abs=0.005
    )


def test_ring_latency_follows_nccl_tuning() -> None:
    """NCCL src/graph/tuning.cc ring/Simple: 8.4 µs base + 6.6 µs per network step, n - 1 steps (2(n - 1)
    all-reduce)."""
    assert F.ring_latency_seconds("all_gather", 1536, spans_nodes=True) == pytest.approx(8.4e-6 + 1535 * 6.6e-6)
    assert F.ring_latency_seconds("all_reduce", 8, spans_nodes=False) == pytest.approx(8.4e-6 + 14 * 5.7e-6)
    assert F.ring_latency_seconds("all_gather", 1, spans_nodes=False) == 0.0


# -- the time model -------------------------------------------------------------------------------------------------


def _single(gpu: str, w: Workload, rates=None):  # type: ignore[no-untyped-def]
    view = hypothetical(catalog.gpu_by_id(gpu), 1)
    return S.evaluate(view, w, Layout("single", "single GPU", "PyTorch", 0, dp=1), w.checkpointing == "full", rates)


def test_fp8_speeds_up_only_the_linear_layers() -> None:
    """torchtitan (H100, Llama 3.1 8B, compiled): Float8 gives 1.28x (6,667 -> 8,532 tokens/s), not the FP8 peak's 2x:
    attention, norms and the output layer stay 16-bit. Predicted within 1.15-1.45x, and the output layer's matmul
    runs at the same speed in both."""
    kw = dict(model="llama-3-8b", seq_len=8192, micro_batch=1, checkpointing="none")
    bf = _single("h100-sxm5-80gb", Workload.from_options(**kw, compile=True))
    f8 = _single("h100-sxm5-80gb", Workload.from_options(**kw, compile=True, precision="fp8"))
    speedup = f8.tokens_per_second / bf.tokens_per_second
    assert 1.15 < speedup < 1.45
    assert f8.step_compute.parts["attention"] == bf.step_compute.parts["attention"]


def test_lora_skips_the_weight_gradients_and_qlora_pays_for_dequantisation() -> None:
    kw = dict(model="llama-3-8b", seq_len=2048, micro_batch=2, checkpointing="none")
    full = _single("a100-sxm4-80gb", Workload.from_options(**kw))
    lora = _single("a100-sxm4-80gb", Workload.from_options(**kw, finetune="lora"))
    qlora = _single("a100-sxm4-80gb", Workload.from_options(**kw, finetune="qlora"))
    # Frozen base: forward + input gradient, no weight gradient: 2/3 of the linear matmul time.
    assert lora.step_compute.parts["matmul"] == pytest.approx(full.step_compute.parts["matmul"] * 2 / 3, rel=0.02)
    assert qlora.step_compute.parts["dequantize"] > 0 and lora.step_compute.parts["dequantize"] == 0
    assert qlora.tokens_per_second < lora.tokens_per_second


def test_eager_lora_adapters_pay_for_their_elementwise_ops() -> None:
    """PEFT's LoRA layer over a 4-bit linear clones the base output, applies dropout, scales and adds (and runs their
    backward) as separate kernels: Llama 2 70B's seven linears (inputs 6 x 8192 + 28672 = 77,824, outputs 83,968
    elements per token) move 5 x 77,824 + 14 x 83,968 bytes per forward and 11 x 77,824 + 4 x 83,968 in backward;
    with full recomputation the forward twice. torch.compile fuses them away; full fine-tuning has no adapters."""
    from gpuadvisor.advisor import timing as T

    kw = dict(model="llama-2-70b", seq_len=2048, micro_batch=1, checkpointing="full")
    eager = Workload.from_options(**kw, finetune="qlora")
    assert T.lora_elementwise_bytes(eager, 1.0) == 2 * (5 * 77824 + 14 * 83968) + 11 * 77824 + 4 * 83968
    assert T.lora_elementwise_bytes(eager, 0.0) == 5 * 77824 + 14 * 83968 + 11 * 77824 + 4 * 83968
    assert T.lora_elementwise_bytes(Workload.from_options(**kw, finetune="qlora", compile=True), 1.0) == 0.0
    assert T.lora_elementwise_bytes(Workload.from_options(**kw), 1.0) == 0.0


def test_measured_matmul_rate_replaces_the_datasheet() -> None:
    """A `matmul` measurement (bench --compute) is used in place of datasheet peak × the generation's fraction, and
    the assumptions say so; the dtype field is read whether or not facts.Measurement has it yet."""
    from gpuadvisor.collect import simulate

    def scan(tflops: float | None):  # type: ignore[no-untyped-def]
        rig = simulate("h100-pcie")
        if tflops is not None:
            m = Measurement(kind="matmul", gpus=[0], status="ok")
            object.__setattr__(m, "dtype", "bf16")
            object.__setattr__(m, "value_tflops", tflops)
            object.__setattr__(m, "expected_tflops", None)
            rig.measurements.append(m)
        return advise(rig, Workload.from_options(model="llama-3-8b", seq_len=2048))

    plain, slow = scan(None), scan(300.0)
    assert any("no matmul measurement" in a for a in plain.assumptions)
    assert any("300 TFLOP/s BF16 measured on this GPU" in a for a in slow.assumptions)
    p0, p1 = plain.pick["compute_parts_seconds"]["matmul"], slow.pick["compute_parts_seconds"]["matmul"]
    # Unmeasured, the 350 W H100 PCIe (below the published Hopper runs' power range: no power cap) runs at its
    # datasheet peak × Hopper's published matmul fraction.
    assert fitted.shipped().power_cap_min_watts["hopper"] > 350
    assert p1 / p0 == pytest.approx(756.5 * generations.gemm_efficiency("hopper").value / 300.0, rel=1e-3)
    # No calibration run used measured rates: the band is not narrowed, and says so.
    assert slow.pick["band"]["tokens_per_second"]["basis"] == "datasheet"
    assert slow.pick["band"]["tokens_per_second"]["narrowed_by"] == K.NOT_NARROWED
    assert "narrowed_by" not in plain.pick["band"]["tokens_per_second"]


def test_a_micro_batch_never_takes_less_than_its_kernel_launches() -> None:
    """gpt2 at --seq-len 2 would otherwise predict hundreds of thousands of tokens/s per GPU: 12 layers × 90 kernels
    × 10 µs is the floor of every micro-batch."""
    c = _single("h100-sxm5-80gb", Workload.from_options(model="gpt2", seq_len=2, micro_batch=1, global_batch=64))
    assert c.step_compute.floor_bound
    assert c.step_compute.per_micro_batch_seconds == pytest.approx(12 * C.OPS_PER_LAYER * C.OP_LAUNCH_SECONDS)
    assert c.tokens_per_second < 2 / (12 * C.OPS_PER_LAYER * C.OP_LAUNCH_SECONDS)


def test_mfu_is_model_flops_over_step_time_and_peak() -> None:
    c = _single(
        "a100-sxm4-80gb", Workload.from_options(model="llama-3-8b", seq_len=4096, micro_batch=1, checkpointing="full")
    )
    per_token = 6 * (8_030_261_248 - 128_256 * 4096) + 12 * 32 * 4096 * 4096
    assert c.mfu == pytest.approx(per_token * c.tokens_per_step / (c.step_seconds * 312e12), rel=1e-9)
    assert 0.3 < c.mfu < 0.65  # published A100 runs: 0.50-0.64 (recomputation costs on top here)


# -- inputs ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"params": "1"}, "--params 1: below 45.7M"),
        ({"model": "gpt2", "seq_len": 1}, "--seq-len 1: a training sequence needs at least 2 tokens"),
        ({"model": "gpt2", "mfu": 1.0}, "--mfu 1.0"),
    ],
)
def test_nonsense_inputs_are_refused(kw: dict, msg: str) -> None:
    with pytest.raises(InputError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        Workload.from_options(**kw)


# -- memory ---------------------------------------------------------------------------------------------------------


def test_torch_allocated_and_nvidia_smi_are_both_predicted() -> None:
    c = _single(
        "a100-sxm4-80gb", Workload.from_options(model="llama-3.2-3b", seq_len=4096, micro_batch=2, checkpointing="none")
    )
    d = c.memory.to_dict()
    assert d["nvidia_smi_bytes"] - d["torch_peak_allocated_bytes"] == pytest.approx(
        C.ALLOCATOR_RESERVE_FRACTION * c.memory.allocated_bytes + C.CUDA_CONTEXT_BYTES, abs=2
    )


def test_chunked_cross_entropy_never_holds_the_full_fp32_logits() -> None:
    """torchtune (Llama 3.2 3B, bs 2, seq 4096): chunking saves 8.1 GiB; the model's two loss recipes differ by
    8.3 bytes per logit on its 1.05e9 logits."""
    kw = dict(model="llama-3.2-3b", seq_len=4096, micro_batch=2, checkpointing="none", compile=True)
    full = _single("a100-sxm4-80gb", Workload.from_options(**kw))
    chunked = _single("a100-sxm4-80gb", Workload.from_options(**kw, loss="chunked"))
    saved = (full.memory.allocated_bytes - chunked.memory.allocated_bytes) / GiB
    assert saved == pytest.approx(8.1, abs=0.3)


def test_eight_billion_full_fine_tune_fits_one_24gb_card() -> None:
    """torchtune's recipe: pure bf16, paged 8-bit AdamW, optimizer step in backward, full checkpointing,
    chunked loss."""
    w = Workload.from_options(
        model="llama-3-8b",
        seq_len=2048,
        micro_batch=2,
        state_bytes="bf16",
        optimizer="paged-adam8bit",
        optimizer_in_backward=True,
        checkpointing="full",
        loss="chunked",
    )
    c = _single("rtx-4090", w)
    assert c.fits
    assert c.memory.optimizer_bytes == 0 and c.memory.host_bytes == pytest.approx(2 * 8_030_261_248, rel=0.01)
    assert c.memory.grads_bytes == 128_256 * 4096 * 2  # only the largest tensor's gradient lives
    plain = _single(
        "rtx-4090", Workload.from_options(model="llama-3-8b", seq_len=2048, micro_batch=2, checkpointing="full")
    )
    assert not plain.fits


def test_selective_checkpointing_sits_between_none_and_full() -> None:
    kw = dict(model="llama-3-8b", seq_len=8192, micro_batch=1)
    none, sel, full = (
        _single("h100-sxm5-80gb", Workload.from_options(**kw, checkpointing=m)) for m in ("none", "selective", "full")
    )
    assert full.memory.activations_bytes < sel.memory.activations_bytes < none.memory.activations_bytes
    assert none.step_seconds < sel.step_seconds < full.step_seconds


# -- layouts and serving --------------------------------------------------------------------------------------------


def test_pipeline_depth_is_not_tied_to_the_node_count() -> None:
    """Megatron-LM PTD-P layouts: with 4 nodes of 8, pipelines of 2, 4 (the nodes), 8, 16 and 32 stages are offered."""
    view = hypothetical(catalog.gpu_by_id("h100-sxm5-80gb"), 8, 4)
    lays, _ = S.layouts(view, Workload.from_options(model="llama-3-70b", nodes=4))
    depths = {(lay.tp, lay.pp) for lay in lays if lay.pp > 1}
    assert {(8, 2), (8, 4), (1, 8), (1, 16), (1, 32)} <= depths


def test_vllm_max_num_seqs_and_engine_versions() -> None:
    view = hypothetical(catalog.gpu_by_id("h100-sxm5-80gb"), 1)
    base = I.option(view, Workload.from_options(model="llama-3-8b", task="inference"), 1, 1)
    capped = I.option(view, Workload.from_options(model="llama-3-8b", task="inference", max_num_seqs=64), 1, 1)
    assert capped.profile_seqs == 64 and capped.kv_budget_bytes > base.kv_budget_bytes
    v0 = I.option(view, Workload.from_options(model="llama-3-8b", task="inference", vllm_version="v0"), 1, 1)
    assert v0.kv_budget_bytes > base.kv_budget_bytes  # no sampler warm-up before the Dec-2024 profiler
    v21 = I.option(view, Workload.from_options(model="llama-3-8b", task="inference", vllm_version="0.21"), 1, 1)
    assert base.kv_budget_bytes - v21.kv_budget_bytes == C.VLLM_CUDA_GRAPH_BYTES
    cmd = I.vllm_command(Workload.from_options(model="llama-3-8b", task="inference", max_num_seqs=64), capped, "m")
    assert "--max-num-seqs 64" in cmd


def test_one_script_judges_every_bar(acc, results) -> None:  # type: ignore[no-untyped-def]
    """advisor_accuracy.py prints the serving goals per engine, llama.cpp's decode and the share of every case inside
    the printed band, and each is met with the shipped constants."""
    lines, ok = acc.serving_and_bands(results)
    text = "\n".join(lines)
    assert ok, text
    for engine in ("vllm", "sglang", "nim", "trtllm", "llamacpp"):
        assert f"  {engine} " in text
    assert "llama.cpp decode" in text and "inside the printed band" in text and "held out by publication" in text
