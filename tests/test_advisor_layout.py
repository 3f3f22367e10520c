"""advise --layout: a forced layout parsed, checked and evaluated exactly; pipeline memory per stage (1F1B and
interleaved in-flight micro-batches, first and last stage), context parallelism, against published figures."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import benchscripts
import pytest

from gpuadvisor import catalog
from gpuadvisor.advisor import strategies as S
from gpuadvisor.advisor.architecture import architecture_from_spec
from gpuadvisor.advisor.layout import build, parse, pipeline_bubble
from gpuadvisor.advisor.memory import Layout, activations, in_flight, stage_params
from gpuadvisor.advisor.rigview import hypothetical
from gpuadvisor.advisor.workload import Workload

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "gpuadvisor", "advise", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def h100() -> catalog.GpuSpec:
    spec = catalog.gpu_by_id("h100-sxm5-80gb")
    assert spec is not None
    return spec


def workload(model: str, **kw: Any) -> Workload:
    spec = catalog.find_model(model)
    assert spec is not None
    return Workload(arch=architecture_from_spec(spec), model_label=model, **kw)


@pytest.fixture(scope="module")
def acc() -> ModuleType:
    return benchscripts.load("calibration_cases")


@pytest.fixture(scope="module")
def ratios(acc: ModuleType) -> dict[str, float]:
    cases = [c for c in acc.load_cases() if "layout" in c and not c.get("excluded")]
    return {c["id"]: acc.predict(c) / c["measured"] for c in cases}


# -- parsing ---------------------------------------------------------------------------------------------------


def test_parse_megatron_and_torchtitan_spellings() -> None:
    want = {"tp": 4, "pp": 8, "vpp": 5, "cp": 2, "dp": 16, "ep": 8, "zero": 1}
    assert parse("tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1") == want
    assert parse("TP=2, vp=3, pp=4") == {"tp": 2, "vpp": 3, "pp": 4}
    assert parse("fsdp=8,tp=8,pp=8") == {"dp_shard": 8, "tp": 8, "pp": 8}
    assert parse("hsdp=2x8,tp=4") == {"dp_replicate": 2, "dp_shard": 8, "tp": 4}
    assert parse("dp=-1,tp=2") == {"tp": 2}  # torchtitan's -1: the GPUs the others leave


def test_build_the_issue_layout_on_1024_gpus() -> None:
    view = hypothetical(h100(), 8, 128)
    w = workload("qwen3-30b-a3b", nodes=128)
    lay = build("tp=4,pp=8,vpp=5,cp=2,dp=16,ep=8,zero=1", view, w)
    assert (lay.tp, lay.pp, lay.vpp, lay.cp, lay.dp, lay.ep, lay.zero_stage) == (4, 8, 5, 2, 16, 8, 1)
    assert lay.shard_group == 32  # the distributed optimizer shards over dp · cp
    assert lay.forced and lay.pp_across_nodes and lay.dp_spans_nodes
    assert lay.name == "TP 4 × PP 8 × VPP 5 × CP 2 × EP 8 × DP 16 ZeRO-1"


def test_build_torchtitan_fsdp_and_hsdp() -> None:
    view = hypothetical(h100(), 8, 64)
    w = workload("llama-3.1-405b", nodes=64)
    lay = build("fsdp=8,tp=8,pp=8", view, w)
    assert (lay.dp, lay.tp, lay.pp, lay.zero_stage, lay.hybrid, lay.shard_group) == (8, 8, 8, 3, False, 8)
    lay = build("hsdp=2x4,tp=8,pp=8", view, w)
    assert (lay.dp, lay.zero_stage, lay.hybrid, lay.shard_group) == (8, 3, True, 4)
    lay = build("tp=8,pp=8", view, w)  # dp takes the rest; Megatron's default distributed optimizer over it
    assert (lay.dp, lay.zero_stage) == (8, 1)


@pytest.mark.parametrize(
    ("text", "nodes", "model", "says"),
    [
        ("tp=8,pp=3", 4, "llama-3-70b", "tp·pp·cp = 24 does not divide the rig's 32 GPUs"),
        ("tp=8,pp=2,dp=4", 4, "llama-3-70b", "dp·tp·pp·cp = 64, but the rig has 32 GPUs"),
        ("tp=16,pp=2", 4, "llama-3-70b", "tp=16 does not divide the model's 64 attention heads and 8 KV heads"),
        ("tp=1,pp=16,vpp=8", 2, "llama-3-8b", "pp·vpp = 128 stages for 32 layers"),
        ("tp=8,vpp=2", 1, "llama-3-8b", "vpp=2 needs a pipeline"),
        ("tp=8,ep=2", 2, "llama-3-8b", "ep=2, but llama-3-8b is not a mixture-of-experts model"),
        ("tp=1,ep=3", 3, "mixtral-8x7b", "ep=3 does not divide the experts per layer (8)"),
        ("cp=8", 1, "llama-3-8b", "the sequence length 4100 must divide into 2·cp = 16 chunks"),
        ("tp=2,zero=4", 1, "llama-3-8b", "zero=4: choose 0"),
        ("tq=2", 1, "llama-3-8b", "'tq=2' is not one of"),
        ("fsdp=8,zero=1", 1, "llama-3-8b", "fsdp / dp_shard / hsdp shard with FSDP (ZeRO-3)"),
    ],
)
def test_bad_layouts_are_one_line_exit_2(text: str, nodes: int, model: str, says: str) -> None:
    seq = "4100" if "cp=8" in text else "4096"
    r = run("--simulate", "dgx-h100", "--model", model, "--layout", text, "--seq-len", seq, "--nodes", str(nodes))
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert r.stdout == ""


# -- pipeline memory per stage ---------------------------------------------------------------------------------


def test_in_flight_micro_batches_1f1b_and_interleaved() -> None:
    def lay(p: int, v: int = 1) -> Layout:
        return Layout("x", "x", "", 4, dp=1, pp=p, vpp=v)

    assert in_flight(lay(8), 32, "first") == 8 and in_flight(lay(8), 32, "last") == 1
    assert in_flight(lay(8), 3, "first") == 3  # never more than the step's micro-batches
    # Interleaved: v·p + p − 1 chunks of L/(p·v) layers = p·(1 + (p − 1)/(p·v)) micro-batches of the rank's layers
    # (Korthikanti et al. 2022, section 4.2.3): 8 · (1 + 7/16) = 11.5 for p = 8, v = 2.
    assert in_flight(lay(8, 2), 32, "first") == 11.5 == 8 * (1 + 7 / 16)
    assert in_flight(lay(8, 2), 32, "last") == (8 + 1) / 2
    assert in_flight(lay(4, 8), 2, "first") == 2  # capped at m·v chunks


def test_interleaved_bubble() -> None:
    assert pipeline_bubble(8, 5, 64) == pytest.approx(7 / 320)  # (p − 1)/(v·m), Narayanan et al. 2021
    assert pipeline_bubble(8, 1, 64) == pytest.approx(7 / 64)
    assert pipeline_bubble(1, 1, 64) == 0.0


def test_first_stage_holds_the_embedding_last_the_logits() -> None:
    w = workload("llama-3-70b", seq_len=8192)
    lay = Layout("x", "x", "", 4, dp=1, tp=8, pp=4)
    a = w.arch
    first, _ = stage_params(w, lay, "first")
    last, _ = stage_params(w, lay, "last")
    layers = 20 * a.layer_params()
    assert first == pytest.approx((layers + a.embedding_params()) / 8)
    assert last == pytest.approx((layers + a.head_params() + a.hidden) / 8)
    acts_first, logits_first = activations(w, lay, False, 16, "first")
    acts_last, logits_last = activations(w, lay, False, 16, "last")
    assert logits_first == 0 and logits_last > 0
    assert acts_first == pytest.approx(4 * (acts_last - logits_last))  # 4 micro-batches in flight against 1


def test_context_parallel_splits_activations_and_adds_a_ring() -> None:
    view = hypothetical(h100(), 8, 1)
    w = workload("llama-3-8b", seq_len=65536, micro_batch=1, global_batch=4, checkpointing="full")
    one = S.evaluate(view, w, build("fsdp=8", view, w), True)
    two = S.evaluate(view, w, build("fsdp=4,cp=2", view, w), True)
    assert two.memory.activations_bytes == pytest.approx(one.memory.activations_bytes / 2)
    assert two.comm.cp_seconds > 0 and one.comm.cp_seconds == 0
    # The ring hides under the attention: 64k-token attention takes far longer than passing K/V chunks over NVLink.
    assert two.comm.cp_exposed_seconds == 0
    assert two.tokens_per_step == 4 * 65536 and one.tokens_per_step == 8 * 65536  # cp ranks share a sequence


# -- against published runs -------------------------------------------------------------------------------------


def test_pipeline_memory_against_torchtitan_405b(ratios: dict[str, float]) -> None:
    """torchtitan's Llama 3.1 405B on 512 H100 (FSDP 8 × TP 8 × PP 8): 82.5 GiB with 1F1B, 72.7 interleaved. The
    advisor before per-stage pipeline memory predicted 43 GiB (0.52)."""
    assert 0.85 <= ratios["TTP1m"] <= 1.1
    assert 0.9 <= ratios["TTP2m"] <= 1.1


def test_memory_median_with_pipeline_and_context_parallel_cases(ratios: dict[str, float]) -> None:
    mem = [r for k, r in ratios.items() if k.endswith("m")]
    # torchtitan's 7, Megatron-LM's MoE memory test (MMS1m), its 7B interleaved-pipeline memory test (MPP4m),
    # BLOOM 176B (BLM1m) and two Megatron-LM pipeline functional tests held out of every fit (1.222 and 1.242):
    # every pipeline-memory case within 0.8-1.25, the bar for published runs not fitted
    assert len(mem) == 12
    assert 0.9 <= statistics.median(mem) <= 1.1
    assert all(0.8 <= r <= 1.25 for r in mem), ratios
    for k in ("TCP1m", "TCP2m", "TCP4m", "TCP8m"):  # table 2: about 84 GiB at every sequence length
        assert 0.9 <= ratios[k] <= 1.1


def test_time_of_forced_layouts_with_vp_and_cp(ratios: dict[str, float]) -> None:
    """NeMo 405B on 1024 H100 (TP 8 PP 8 CP 2 VP 8: 302 tokens/s/GPU) and torchtitan's 405B pipelines."""
    assert 0.8 <= ratios["NB405"] <= 1.2
    # torchtitan 405B pipelines: 1.21 after the stack-aware refit (compile factor fitted on torchtitan 8B-70B runs)
    assert 0.9 <= ratios["TTP1"] <= 1.25 and 0.9 <= ratios["TTP2"] <= 1.25
    assert 0.67 <= ratios["NB70"] <= 1.5  # Megatron-Core + Transformer Engine: the time model's known slow side


def test_torchtitan_context_parallel_against_table_2(ratios: dict[str, float]) -> None:
    """torchtitan's Llama 3.1 8B on 8 H100 (FSDP + CP, compile, Float8, full AC, local batch 1): 3,890 / 2,540 /
    1,071 / 548 tokens/s/GPU at 32k / 64k / 128k / 256k tokens (CP 1 / 2 / 4 / 8). Each GPU holds 32k tokens in
    every row, so only the attention grows; before PyTorch's ring was modelled the 128k and 256k rows were 1.69 and
    1.83 (excluded). Now each within 0.85-1.25, and the step times grow with the ring's share of the attention:
    the 256k step at least 6x the 32k one (published: 7.1x; the attention alone grows 8x, 4x from 64k)."""
    for k in ("TCP1", "TCP2", "TCP4", "TCP8"):
        assert 0.85 <= ratios[k] <= 1.25, (k, ratios[k])
    published = {
        "TCP1": (32768, 1, 3890),
        "TCP2": (65536, 2, 2540),
        "TCP4": (131072, 4, 1071),
        "TCP8": (262144, 8, 548),
    }
    step = {k: s / (cp * tps * ratios[k]) for k, (s, cp, tps) in published.items()}  # predicted seconds per step
    assert step["TCP8"] / step["TCP1"] >= 6.0
    assert step["TCP8"] / step["TCP4"] >= 1.9 and step["TCP4"] / step["TCP2"] >= 1.9


def test_the_ring_penalty_is_pytorchs_not_megatrons() -> None:
    """The same CP 4 split of a 128k-token Llama 3 8B: torchtitan's spelling (PyTorch's ring attention) is slower
    than Megatron's (Transformer Engine's ring), by the ring's 3/4 of the attention at RING_ATTENTION_FACTOR; the
    linears and memory-bound work are the same."""
    from gpuadvisor.advisor import fitted

    view = hypothetical(h100(), 8, 1)
    w = workload("llama-3-8b", seq_len=131072, micro_batch=1, global_batch=2, checkpointing="full")
    titan = S.evaluate(view, w, build("fsdp=2,cp=4", view, w), True)
    mega = S.evaluate(view, w, build("tp=1,cp=4,dp=2,zero=3", view, w), True)
    assert build("fsdp=2,cp=4", view, w).torch_ring and not build("tp=1,cp=4,dp=2,zero=3", view, w).torch_ring
    assert titan.step_compute is not None and mega.step_compute is not None
    attn_t, attn_m = titan.step_compute.parts["attention"], mega.step_compute.parts["attention"]
    assert attn_t == pytest.approx(attn_m * (1 / 4 + 3 / 4 / fitted.shipped().ring_attention_factor))
    assert titan.step_compute.parts["matmul"] == pytest.approx(mega.step_compute.parts["matmul"])
    assert titan.step_seconds is not None and mega.step_seconds is not None
    assert titan.step_seconds > mega.step_seconds


def test_forced_layout_with_vp_and_cp_from_the_cli() -> None:
    """The NeMo 405B run, typed as its layout on its stack (Megatron-Core + Transformer Engine, whose fused norms
    keep less than eager PyTorch's): one candidate, exactly that layout, 302 tokens/s/GPU published."""
    r = run(
        "--simulate",
        "dgx-h100",
        "--nodes",
        "128",
        "--model",
        "llama-3.1-405b",
        "--layout",
        "tp=8,pp=8,vpp=8,cp=2",
        "--stack",
        "megatron",
        "--precision",
        "fp8",
        "--seq-len",
        "8192",
        "--global-batch",
        "512",
        "--checkpointing",
        "none",
        "--inter-node-gbps",
        "50",
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    (c,) = d["candidates"]
    assert (
        c["tensor_parallel"],
        c["pipeline_parallel"],
        c["virtual_pipeline_stages"],
        c["context_parallel"],
        c["data_parallel"],
        c["forced_layout"],
    ) == (8, 8, 8, 2, 8, True)
    assert c["gradient_accumulation"] == 64
    assert c["pipeline_bubble_fraction"] == pytest.approx(7 / (8 * 64 + 7), abs=1e-4)
    assert c["comm"]["context_parallel_seconds"] > 0
    assert 0.8 <= c["tokens_per_second"] / 1024 / 302 <= 1.2
    assert "--num-layers-per-virtual-pipeline-stage 1" in d["snippet"]["torchrun"]
    assert "--context-parallel-size 2" in d["snippet"]["torchrun"]


def test_forced_hsdp_matches_the_built_in_hybrid_shard_candidate() -> None:
    """hsdp=2x8 on two 8-GPU nodes is the HYBRID_SHARD candidate the advisor enumerates itself: same memory, same
    collectives; hsdp=4x4 shards over half a node and all-reduces across 4 replicas instead."""
    view = hypothetical(h100(), 8, 2)
    w = workload("llama-3-8b", nodes=2, checkpointing="none")
    built_in = next(lay for lay in S.layouts(view, w)[0] if lay.key == "hsdp")
    a = S.evaluate(view, w, built_in, False)
    b = S.evaluate(view, w, build("hsdp=2x8", view, w), False)
    assert b.memory.total_bytes == pytest.approx(a.memory.total_bytes)
    assert b.comm.dp_seconds == pytest.approx(a.comm.dp_seconds)
    c = S.evaluate(view, w, build("hsdp=4x4", view, w), False)
    assert c.memory.params_bytes == pytest.approx(2 * a.memory.params_bytes)  # weights sharded over 4, not 8


def test_torchtitan_tensor_parallel_keeps_the_gathered_inputs() -> None:
    """PyTorch's tensor parallel keeps the all-gathered inputs of the attention and MLP for the backward pass;
    Megatron-LM keeps the sequence-parallel shard: per layer and token 4·h·(t − 1)/t bytes more with torchtitan."""
    view = hypothetical(h100(), 8, 2)
    w = workload("llama-3-70b", nodes=2, seq_len=8192, checkpointing="none")
    titan = build("fsdp=2,tp=8", view, w)
    megatron = build("tp=8,dp=2,zero=3", view, w)
    a_titan, _ = activations(w, titan, False, 1)
    a_meg, _ = activations(w, megatron, False, 1)
    assert a_titan - a_meg == pytest.approx(80 * 4 * 8192 * 8192 * 7 / 8)


def test_torchtitan_layout_launches_torchtitan() -> None:
    """A layout in torchtitan's spelling gets torchtitan's command line, with the published 405B run's local batch
    (32 = 8 micro-batches of 4) and its interleaved schedule."""
    r = run(
        "--simulate",
        "dgx-h100",
        "--nodes",
        "64",
        "--model",
        "llama-3.1-405b",
        "--layout",
        "fsdp=8,tp=8,pp=8,vpp=2",
        "--micro-batch",
        "4",
        "--global-batch",
        "256",
        "--seq-len",
        "8192",
        "--checkpointing",
        "full",
        "--format",
        "json",
    )
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["snippet"]
    assert s["kind"] == "torchtitan" and " -m torchtitan.train " in s["torchrun"]
    for flag in (
        "--training.local_batch_size 32",
        "--parallelism.data_parallel_shard_degree 8",
        "--parallelism.tensor_parallel_degree 8",
        "--parallelism.pipeline_parallel_schedule Interleaved1F1B",
        "--parallelism.pipeline_parallel_layers_per_stage 8",
        "--activation_checkpoint.mode full",
    ):
        assert flag in s["torchrun"]
    assert "pretrain_gpt.py" not in s["torchrun"]
