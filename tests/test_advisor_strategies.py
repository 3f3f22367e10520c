"""The advisor on the simulated rigs: the picks, the rejections, the snippets, serving, nothing-fits."""

from __future__ import annotations

import json
import shlex

import pytest

from gpuadvisor import facts
from gpuadvisor.advisor import Workload, advise
from gpuadvisor.advisor import constants as C
from gpuadvisor.collect import simulate
from gpuadvisor.facts import Gpu, Host, Measurement, Rig
from gpuadvisor.render.text.advice import render_advice

GiB = 2**30


@pytest.fixture(scope="module")
def dgx_h100() -> Rig:
    return simulate("dgx-h100")


@pytest.fixture(scope="module")
def rtx4090x4() -> Rig:
    return simulate("4x4090-pcie")


def _copy(rig: Rig) -> Rig:
    return facts.from_dict(rig.to_dict())


def _by_key(advice, key):  # type: ignore[no-untyped-def]
    return next(c for c in advice.candidates if c["key"].split("+")[0] == key)


def _flag(args: str, name: str) -> str:
    for tok in shlex.split(args):
        if tok.startswith(f"--{name}="):
            return tok.split("=", 1)[1]
    raise AssertionError(f"--{name} missing from {args}")


def test_8b_on_dgx_h100_gets_ddp_or_zero_1_2(dgx_h100: Rig) -> None:
    rig = _copy(dgx_h100)
    a = advise(rig, Workload.from_options(model="llama-3-8b"))
    assert a.pick["zero_stage"] in (0, 1, 2) and a.pick["tensor_parallel"] == 1 and a.pick["cpu_offload"] == "none"
    assert a.pick["fits"]
    # DDP needs 16 bytes/param on every GPU: 8.03e9 × 16 = 128 GB > 80 GB, and says so.
    ddp = _by_key(a, "ddp")
    assert not ddp["fits"] and ddp["reason"].startswith("does not fit: needs")
    assert ddp["memory"]["params_bytes"] + ddp["memory"]["grads_bytes"] == 4 * 8_030_261_248
    # ZeRO-2: 2Ψ weights, gradients 2Ψ/8, optimizer (12Ψ + 4 bytes per tensor)/8 (the ZeRO paper's sharding).
    z2 = _by_key(a, "zero2")["memory"]
    psi, tensors = 8_030_261_248, 32 * 9 + 3
    assert z2["params_bytes"] == 2 * psi
    assert z2["grads_bytes"] == round(2 * psi / 8)
    assert z2["optimizer_bytes"] == round((12 * psi + 4 * tensors) / 8)
    # Every rejected candidate carries its reason; the pick says why in one sentence.
    assert all(c["reason"] for c in a.candidates if c["status"] == "rejected")
    assert a.reason.count(". ") <= 1 and a.pick["name"] in a.reason
    assert rig.advice == a.to_dict()


def test_70b_on_dgx_h100_gets_a_sharded_strategy_that_fits(dgx_h100: Rig) -> None:
    a = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-70b"))
    p = a.pick
    assert p is not None and p["fits"]
    assert p["zero_stage"] >= 2 or p["tensor_parallel"] > 1 or p["hybrid_shard"]
    # Full training of 70.6B params needs ~1.13 TB of model states: more than 8 x 80 GB, so nothing fits on
    # the GPUs alone; the host's 2 TiB holds ZeRO-3's offloaded states.
    on_gpu = [c for c in a.candidates if c["cpu_offload"] == "none"]
    assert not any(c["fits"] for c in on_gpu)
    assert (
        p["cpu_offload"] == "optimizer+params" and p["memory"]["host_bytes"] <= 2048 * GiB * C.HOST_RAM_USABLE_FRACTION
    )
    # With LoRA the base model shards or splits over NVLink with no offload.
    lora = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-70b", finetune="lora")).pick
    assert lora["cpu_offload"] == "none" and (lora["zero_stage"] == 3 or lora["tensor_parallel"] > 1)


def test_tp_across_pcie_is_one_rule_for_every_size_on_4x4090(rtx4090x4: Rig) -> None:
    """Tensor parallel off NVLink: TP=2 and TP=4 are both evaluated and both a last resort, with the same reason;
    neither is 'not considered' (the old rule evaluated TP=2 but excluded TP=4 for having no NVLink)."""
    from gpuadvisor.advisor.strategies import TP_OFF_NVLINK_RULE

    for model in ("llama-3-8b", "mistral-7b", "gpt2"):
        a = advise(_copy(rtx4090x4), Workload.from_options(model=model))
        assert not any(e["strategy"].startswith("TP=") for e in a.excluded)
        tps = {c["tensor_parallel"]: c for c in a.candidates if c["tensor_parallel"] > 1}
        assert sorted(tps) == [2, 4]
        for c in tps.values():
            assert c["status"] == "rejected" and c["framework"].startswith("Megatron") and "(PCIe)" in c["name"]
        fitting = [c for c in tps.values() if c["fits"]]
        assert all(c["reason"] == TP_OFF_NVLINK_RULE for c in fitting)
        assert all(c["reason"].startswith("does not fit") for c in tps.values() if not c["fits"])
    # The expected bandwidth comes from the slowest path (GPU 2 trained at x8) and the missing P2P.
    rig = a.rig
    assert rig["nvlink_domain"] == 1 and rig["p2p"] is False
    assert "Gen4 x8" in rig["busbw_source"] and rig["busbw_measured"] is False
    assert rig["busbw_gbps"] == pytest.approx(1.969 * 8 * C.PCIE_BUSBW_EFFICIENCY * C.NO_P2P_FACTOR, rel=1e-3)


def test_small_model_on_4x4090_is_plain_ddp(rtx4090x4: Rig) -> None:
    a = advise(_copy(rtx4090x4), Workload.from_options(model="gpt2"))
    assert a.pick["key"] == "ddp"
    assert "nothing is simpler" in a.reason


def test_70b_on_one_24gb_gpu_does_not_fit_and_names_a_rig() -> None:
    rig = Rig(
        gpus=[Gpu(index=0, name="NVIDIA GeForce RTX 4090", memory_total_bytes=24564 * 2**20)],
        host=Host(memory_total_bytes=64 * GiB),
    )
    a = advise(rig, Workload.from_options(model="llama-3-70b"))
    assert a.pick is None and not a.fits and rig.advice["fits"] is False
    assert a.reason.startswith("Nothing fits")
    sr = a.smallest_rig
    assert sr["smallest"]["gpus"] >= 8
    assert sr["same_gpu"]["gpu_id"] == "rtx-4090" and sr["same_gpu"]["gpus"] > sr["smallest"]["gpus"]
    assert sr["smallest"]["description"] in a.reason and sr["same_gpu"]["description"] in a.reason
    text = render_advice(a)
    assert "Smallest rig that would" in text


def test_measured_busbw_is_used_and_said(dgx_h100: Rig) -> None:
    rig = _copy(dgx_h100)
    rig.measurements.append(
        Measurement(kind="all_reduce", backend="nccl", world_size=8, gpus=list(range(8)), value_gbps=100.0)
    )
    a = advise(rig, Workload.from_options(model="llama-3-8b"))
    assert a.rig["busbw_measured"] is True and a.rig["busbw_gbps"] == 100.0
    assert a.rig["busbw_source"].startswith("measured")
    ddp_like = _by_key(a, "zero1")["comm"]
    psi = 8_030_261_248
    # ZeRO-1: reduce-scatter of 2Ψ bytes + all-gather of 2Ψ, each (n-1)/n × S / busbw.
    assert ddp_like["data_parallel_seconds"] == pytest.approx(2 * (2 * psi * 7 / 8) / 100e9, rel=1e-5)
    expected = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b"))
    assert expected.rig["busbw_measured"] is False and expected.rig["busbw_source"].startswith("expected")
    assert expected.rig["busbw_gbps"] == pytest.approx(450 * C.NVLINK_BUSBW_EFFICIENCY)


def test_gloo_measurements_do_not_stand_for_gpu_links(dgx_h100: Rig) -> None:
    rig = _copy(dgx_h100)
    rig.measurements.append(Measurement(kind="all_reduce", backend="gloo", world_size=4, value_gbps=2.0))
    assert advise(rig, Workload.from_options(model="gpt2")).rig["busbw_measured"] is False


def test_deepspeed_and_torchrun_snippets(dgx_h100: Rig) -> None:
    w = Workload.from_options(model="llama-3-8b", global_batch=256, micro_batch=2)
    a = advise(_copy(dgx_h100), w)
    s = a.snippet
    assert _flag(s["torchrun"], "nproc_per_node") == "8" and _flag(s["torchrun"], "nnodes") == "1"
    if s["deepspeed_config"]:
        ds = json.loads(json.dumps(s["deepspeed_config"]))
        assert ds["zero_optimization"]["stage"] == a.pick["zero_stage"]
        assert (
            ds["train_batch_size"]
            == ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] * a.pick["data_parallel"]
            == 256
        )
    assert a.batch["gradient_accumulation"] == 256 // (2 * a.pick["data_parallel"])
    assert "Goyal" in a.batch["lr_note"]
    # Two nodes: torchrun names both, with a rendezvous endpoint.
    two = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b", nodes=2))
    assert _flag(two.snippet["torchrun"], "nnodes") == "2" and _flag(two.snippet["torchrun"], "nproc_per_node") == "8"
    assert "--rdzv_endpoint" in two.snippet["torchrun"]


@pytest.mark.parametrize(
    ("model", "kw"),
    [
        ("llama-3-70b", {}),
        ("llama-3-8b", {"precision": "fp16"}),
        ("qwen2.5-7b", {"optimizer": "adam8bit"}),
        ("mistral-7b", {"finetune": "qlora"}),
    ],
)
def test_every_deepspeed_config_names_its_stage(dgx_h100: Rig, model: str, kw: dict) -> None:
    from gpuadvisor.advisor.rigview import from_rig
    from gpuadvisor.advisor.snippets import deepspeed_config
    from gpuadvisor.advisor.strategies import candidates

    w = Workload.from_options(model=model, **kw)
    cands, _ = candidates(from_rig(dgx_h100), w)
    for c in cands:
        if c.layout.tp == 1 and c.layout.pp == 1 and c.layout.zero_stage:
            cfg = json.loads(json.dumps(deepspeed_config(w, c.layout, c.accumulation, c.global_batch, c.recompute)))
            assert cfg["zero_optimization"]["stage"] == c.layout.zero_stage
            assert cfg["train_batch_size"] == w.micro_batch * c.accumulation * c.layout.dp
            if c.layout.offload != "none":
                assert cfg["zero_optimization"]["offload_optimizer"]["device"] == "cpu"


def test_fsdp_snippet_settings(rtx4090x4: Rig) -> None:
    from gpuadvisor.advisor.rigview import from_rig
    from gpuadvisor.advisor.snippets import training_snippet
    from gpuadvisor.advisor.strategies import layouts

    w = Workload.from_options(model="llama-3-8b")
    lays = {lay.key: lay for lay in layouts(from_rig(rtx4090x4), w)[0]}
    s = training_snippet(w, lays["zero3"], 1, 4, True, 4, 1)
    assert s["kind"] == "fsdp" and s["fsdp"]["sharding_strategy"] == "FULL_SHARD"
    assert "ShardingStrategy.FULL_SHARD" in s["code"] and "LlamaDecoderLayer" in s["code"]
    assert "apply_activation_checkpointing" in s["code"]
    assert (
        "fsdp_sharding_strategy: FULL_SHARD" in s["accelerate_config"] and "num_processes: 4" in s["accelerate_config"]
    )
    s2 = training_snippet(w, lays["zero2"], 1, 4, False, 4, 1)
    assert (
        s2["fsdp"]["sharding_strategy"] == "SHARD_GRAD_OP" and s2["deepspeed_config"]["zero_optimization"]["stage"] == 2
    )


def test_multi_node_candidates(dgx_h100: Rig) -> None:
    a = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-70b", nodes=4, inter_node_gbps=50))
    keys = {c["key"].split("+")[0] for c in a.candidates}
    assert {"hsdp", "pp4", "pp4-tp8"} <= keys
    assert all(c["tensor_parallel"] <= 8 for c in a.candidates)
    assert a.rig["inter_node_gbps"] == 50
    hsdp = _by_key(a, "hsdp")
    assert hsdp["hybrid_shard"] and "across 4 nodes" in " ".join(hsdp["comm"]["detail"])


def test_pipeline_only_across_slow_links(dgx_h100: Rig, rtx4090x4: Rig) -> None:
    nv = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b"))
    assert all(c["pipeline_parallel"] == 1 for c in nv.candidates)
    assert any(e["strategy"] == "pipeline parallel" for e in nv.excluded)
    pcie = advise(_copy(rtx4090x4), Workload.from_options(model="llama-3-8b"))
    assert any(c["pipeline_parallel"] > 1 for c in pcie.candidates)


def test_inference_tensor_parallel_size(dgx_h100: Rig) -> None:
    a = advise(
        _copy(dgx_h100), Workload.from_options(model="llama-3-70b", task="inference", context=8192, concurrency=32)
    )
    by_tp = {o["tensor_parallel_size"]: o for o in a.candidates}
    assert set(by_tp) == {1, 2, 4, 8}
    # the smallest tensor-parallel size that fits is 4; the pick (replicas over the rig's 8 GPUs) may be larger
    assert min(tp for tp, o in by_tp.items() if o["fits"]) == 4 and a.pick["tensor_parallel_size"] in (4, 8)
    # 70B in bf16 is 141 GB: it does not fit one 80 GB GPU.
    assert not by_tp[1]["fits"] and "leave no room" in by_tp[1]["reason"]
    four = by_tp[4]
    assert four["weights_bytes"] == round(70_553_706_496 * 2 / 4)
    assert four["kv_bytes_per_token"] == 327680 // 4
    assert four["replicas"] == 2  # two replicas of TP=4 over 8 GPUs, 16 of the 32 sequences each
    assert four["kv_cache_needed_bytes"] == 8192 * (32 // 2) * 327680 // 4
    assert four["kv_capacity_tokens"] == int(four["kv_cache_budget_bytes"] // (81920 * 16)) * 16
    assert four["max_sequences_at_context"] == four["kv_capacity_tokens"] // 8192
    tp = a.pick["tensor_parallel_size"]
    command = a.snippet["command"]
    assert f"--tensor-parallel-size {tp}" in command and "meta-llama/Meta-Llama-3-70B" in command
    fp8 = advise(
        _copy(dgx_h100),
        Workload.from_options(
            model="llama-3-70b", task="inference", context=8192, concurrency=32, kv_cache_dtype="fp8"
        ),
    )
    assert {o["tensor_parallel_size"]: o for o in fp8.candidates}[4]["kv_bytes_per_token"] == 327680 // 8
    assert "--kv-cache-dtype fp8" in fp8.snippet["command"]


def test_inference_tp_sizes_divide_the_kv_heads(dgx_h100: Rig) -> None:
    a = advise(_copy(dgx_h100), Workload.from_options(model="qwen2.5-7b", task="inference"))  # 4 KV heads
    assert {o["tensor_parallel_size"] for o in a.candidates} == {1, 2, 4}
    assert any(e["strategy"] == "TP=8" for e in a.excluded)
    fits = {o["tensor_parallel_size"] for o in a.candidates if o["fits"]}
    assert 1 in fits and a.pick["tensor_parallel_size"] in fits  # TP=8 (8 KV heads needed) is never picked


def test_inference_nothing_fits() -> None:
    rig = Rig(gpus=[Gpu(index=0, name="NVIDIA GeForce RTX 4090", memory_total_bytes=24564 * 2**20)])
    a = advise(rig, Workload.from_options(model="llama-3-70b", task="inference"))
    assert a.pick is None and a.reason.startswith("Nothing fits")
    # 141 GB of bf16 weights: one 180 GB B200 holds them; RTX 4090s need tensor parallel over several.
    sr = a.smallest_rig
    assert sr["smallest"]["gpu_id"] == "b200" and sr["smallest"]["gpus"] == 1
    assert sr["same_gpu"]["gpus"] >= 8 and sr["smallest"]["description"] in a.reason


def test_advice_round_trips_through_the_scan_json(dgx_h100: Rig) -> None:
    rig = _copy(dgx_h100)
    advise(rig, Workload.from_options(model="mistral-7b"))
    again = facts.from_dict(json.loads(rig.to_json()))
    assert again.advice == rig.advice and again.advice["kind"] == "gpuadvisor-advice"
    assert render_advice(again.advice) == render_advice(rig.advice)


def test_text_rendering_shows_every_candidate_and_the_breakdown(dgx_h100: Rig) -> None:
    a = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b"))
    text = render_advice(a, explain=True, width=200)
    for c in a.candidates:
        assert c["name"] in text
    for col in (
        "comm/step",
        "compute",
        "tokens/s",
        "eff.",
        "params",
        "grads",
        "optimizer",
        "activations",
        "gathered",
        "buckets",
        "overhead",
    ):
        assert col in text
    assert "GiB (2^30 bytes)" in text and "16 B/param" in text and "18 B/param" in text and "20 B/param" in text


def test_unknown_gpu_still_sizes_memory() -> None:
    rig = Rig(gpus=[Gpu(index=i, name="Mystery Accelerator", memory_total_bytes=48 * GiB) for i in range(2)])
    a = advise(rig, Workload.from_options(model="gpt2"))
    assert a.pick is not None and a.pick["step_seconds"] is None
    assert any("not in the GPU catalog" in n for n in a.notes)


def test_precision_the_gpu_lacks_is_flagged() -> None:
    # An explicit --precision bf16 is kept and flagged (left out, the advisor picks fp16: test_advisor_published).
    a = advise(simulate("dgx2-v100"), Workload.from_options(model="gpt2", precision="bf16"))
    assert any("no BF16 support: run with --precision fp16" in n for n in a.notes)
    assert a.rig["peak_tflops"] == 15.7  # Volta emulates bf16: timed at the FP32 peak
    fp16 = advise(simulate("dgx2-v100"), Workload.from_options(model="gpt2", precision="fp16"))
    assert fp16.rig["peak_tflops"] == 125.0 and not any("support" in n for n in fp16.notes)


def test_checkpointing_choice(dgx_h100: Rig) -> None:
    auto = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b"))
    assert auto.pick["activation_checkpointing"] is False  # ZeRO-1 fits without it
    assert _by_key(auto, "ddp")["activation_checkpointing"] is True  # tried, to see whether DDP could fit
    full = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b", checkpointing="full", mfu=0.4))
    assert all(c["activation_checkpointing"] for c in full.candidates)
    none = advise(_copy(dgx_h100), Workload.from_options(model="llama-3-8b", checkpointing="none", mfu=0.4))
    assert not any(c["activation_checkpointing"] for c in none.candidates)
    # Full recomputation keeps 2·s·b·h per layer plus one layer's working set, and recomputes the layers' forward
    # (2 FLOPs per linear weight of the 32 layers, not the output layer, + the attention forward 4·L·s·d) on top
    # of the model FLOPs 6N + 12·L·s·d, at the same --mfu rate.
    z1 = next(c for c in full.candidates if c["key"] == "zero1+ckpt")
    z1n = _by_key(none, "zero1")
    assert z1["memory"]["activations_bytes"] < z1n["memory"]["activations_bytes"] / 3
    n = 8_030_261_248 - 128_256 * 4096
    lin = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    attn = 4 * 32 * 4096 * 4096
    assert z1["compute_parts_seconds"]["compute"] / z1n["compute_parts_seconds"]["compute"] == pytest.approx(
        (6 * n + 3 * attn + 2 * lin + attn) / (6 * n + 3 * attn), rel=1e-5
    )


def test_no_gpus_is_one_line_error() -> None:
    from gpuadvisor.errors import InputError

    with pytest.raises(InputError, match="no GPUs"):
        advise(Rig(), Workload.from_options(model="gpt2"))


def test_qlora_offload_row_says_why_its_faster_prediction_is_not_the_pick(rtx4090x4: Rig) -> None:
    """QLoRA on 4x RTX 4090: a CPU-offload candidate predicted faster than the pick (here because it skips
    activation checkpointing) says so in its row, and why that speed is not taken (an upper bound: transfers
    and CPU Adam without latency), instead of a bare policy line."""
    from gpuadvisor.advisor.rigview import from_rig
    from gpuadvisor.advisor.strategies import evaluate, explain, layouts

    w = Workload.from_options(model="mistral-7b", finetune="qlora", seq_len=1024)
    view = from_rig(_copy(rtx4090x4), nodes=1)
    lays = {lay.key: lay for lay in layouts(view, w)[0]}
    pick = evaluate(view, w, lays["ddp"], True)
    off = evaluate(view, w, lays["zero2-offload"], False)
    slow_off = evaluate(view, w, lays["zero3-offload"], True)
    assert pick.fits and off.fits and off.tokens_per_second > pick.tokens_per_second * 1.2
    explain([pick, off, slow_off], pick, 4)
    r = off.reason
    assert f"{off.tokens_per_second:,.0f} tokens/s" in r and f"{pick.tokens_per_second:,.0f}" in r
    assert "skips activation checkpointing" in r and "upper bound" in r
    # A slower offload row keeps the short policy line.
    assert slow_off.tokens_per_second < pick.tokens_per_second
    assert slow_off.reason == "CPU offload: picked only when nothing fits on the GPUs alone"
    # In a whole advice, every offload row faster than the pick carries the explanation.
    for model, ft, seq in (("mistral-7b", "qlora", None), ("gemma-2-9b", "lora", 1024), ("llama-3-8b", "qlora", 1024)):
        a = advise(_copy(rtx4090x4), Workload.from_options(model=model, finetune=ft, seq_len=seq))
        for c in a.candidates:
            if (
                c["cpu_offload"] != "none"
                and c["fits"]
                and c["status"] != "pick"
                and c["tokens_per_second"] > a.pick["tokens_per_second"] * 1.06
            ):
                assert "upper bound" in c["reason"], (model, c["name"], c["reason"])
