"""The network between nodes (advisor.network): --network, hierarchical collectives, bucket overlap, the scale term;
and the published multi-node runs it is judged on (MaxText's Llama 2 7B on 1 to 16 A3 VMs, fitted; NeMo Megatron's
GPT 5B and 175B on 1 to 128 DGX A100 nodes, held out of every fit), the pipeline memory of
published runs no memory constant was chosen on (BLOOM 176B, Megatron-LM's 7B interleaved-pipeline memory test),
and the stack that times a pick (its own engine's, unless --stack says otherwise)."""

from __future__ import annotations

import dataclasses

import benchscripts
import pytest

from gpuadvisor import catalog
from gpuadvisor.advisor import Workload, fitted
from gpuadvisor.advisor import network as N
from gpuadvisor.advisor import strategies as S
from gpuadvisor.advisor.enumeration import layouts
from gpuadvisor.advisor.rigview import hypothetical
from gpuadvisor.errors import InputError

P = benchscripts.load("calibration_cases")
CASES = {c["id"]: c for c in P.load_cases()}
# MaxText configs/gpu/a3/llama_2_7b/README.md: TFLOP/sec/chip on 1, 2, 4, 8, 16 A3 VMs.
MAXTEXT_A3 = {1: 492, 2: 422, 4: 407, 8: 409, 16: 375}


def _predict(case_id: str, **params: float) -> float:
    fit = fitted.shipped().replace(params) if params else None
    return float(P.predict(CASES[case_id], fit))


def test_network_spec_is_parsed_with_its_fabric() -> None:
    ib = N.parse("ib:8x400")
    assert (ib.fabric, ib.rails, ib.gbps) == ("ib", 8, 400.0)
    # 8 rails of 400 Gb/s over 8 GPUs: 50 GB/s each, at InfiniBand's 92 %
    assert ib.per_gpu_busbw(8) == pytest.approx(46.0)
    tcpx = N.parse("ethernet:4x200")  # Google Cloud A3: four 200 Gb/s NICs for eight GPUs
    assert tcpx.per_gpu_busbw(8) == pytest.approx(12.5 * 0.70)
    assert N.parse("RoCE:400").rails == 1 and N.parse("tcpx:2x100").fabric == "ethernet"
    for bad in ("ib", "ib:0", "myrinet:8x400", "ib:8x", "ib:x400"):
        with pytest.raises(InputError, match="--network"):
            N.parse(bad)


def test_network_sets_the_bandwidth_across_nodes() -> None:
    spec = catalog.gpu_by_id("h100-sxm5-80gb")
    assert spec is not None
    view = hypothetical(spec, 8, 4, network=N.parse("ib:8x400"))
    assert view.inter_node.gbps == pytest.approx(46.0) and "InfiniBand" in view.inter_node.source
    assert hypothetical(spec, 8, 4, 30.0, network=N.parse("ib:8x400")).inter_node.gbps == 30.0  # measured wins
    w = Workload.from_options(model="llama-3-8b", nodes=4, network="roce:8x200")
    assert w.network_spec() == N.Network("roce", 8, 200.0, "given: --network")
    with pytest.raises(InputError, match="--network"):
        Workload.from_options(model="llama-3-8b", nodes=4, network="ib:eight")


def test_buckets_hide_all_but_the_last_unless_the_backward_is_short() -> None:
    assert N.bucket_exposed(1.0, 2.0, 4) == pytest.approx(0.25)  # the last of four buckets
    assert N.bucket_exposed(1.0, 2.0, 1) == pytest.approx(1.0)  # one bucket after the backward: all of it
    assert N.bucket_exposed(3.0, 2.0, 4) == pytest.approx(1.5)  # what outlasts the backward, plus a bucket's wait
    # Each bucket pays the network's latency: more buckets cost more on a slow-hop fabric.
    eth = N.FABRICS["ethernet"]
    one = N.cross_seconds("all_reduce", 1e9, 16, 10.0, buckets=1, fabric=eth)
    many = N.cross_seconds("all_reduce", 1e9, 16, 10.0, buckets=100, fabric=eth)
    assert many - one == pytest.approx(99 * N.latency("all_reduce", 16, eth))


def test_hierarchical_all_reduce_moves_one_shard_per_gpu_across_nodes() -> None:
    """Over 2 nodes of 8 GPUs, each GPU sends its 1/8 shard across: 8x less than a flat ring at the rail rate."""
    size, nv, rail = 8e9, 300.0, 25.0
    t = N.hierarchical_all_reduce(size, 8, nv, 2, rail)
    across = 2 * (1 / 2) * (size / 8) / (rail * 1e9)
    inside = 2 * (7 / 8) * size / (nv * 1e9)
    assert t == pytest.approx(across + inside + N.latency("all_reduce", 2, None))


def test_scale_term_only_beyond_two_nodes() -> None:
    k = fitted.shipped().network_scale
    assert k > 0
    assert N.scale(1) == N.scale(2) == 1.0
    assert N.scale(16) == pytest.approx(1 / (1 + k * 3))


def test_maxtext_a3_per_gpu_rate_falls_as_published() -> None:
    """MaxText Llama 2 7B, FSDP 8 in the VM and data parallel across 1 to 16 A3 VMs (GPUDirect-TCPX): the
    per-GPU rate falls from 1 to 2 VMs and on to 16, by between half and 1.5 times what was published (492 -> 375:
    24 % less per GPU), and every point is within 0.9-1.15 of its published figure."""
    pred = {n: _predict(f"MXA{n}") for n in MAXTEXT_A3}
    for n, published in MAXTEXT_A3.items():
        assert 0.9 <= pred[n] / published <= 1.15, (n, pred[n])
    assert pred[16] < pred[8] < pred[4] < pred[2] < pred[1]
    fall, published_fall = 1 - pred[16] / pred[1], 1 - 375 / 492
    assert 0.5 * published_fall <= fall <= 1.5 * published_fall, fall


@pytest.mark.parametrize("key", ["xla_cross_node_overlap", "network_scale"])
def test_moving_a_network_constant_by_ten_percent_moves_the_scaling(key: str) -> None:
    """The 16-VM point is pinned tighter than a 10 % change of either network constant moves it."""
    shipped = fitted.shipped().value(key)
    base = _predict("MXA16")
    assert base / MAXTEXT_A3[16] == pytest.approx(1.0, abs=0.1)
    moved = [_predict("MXA16", **{key: shipped * f}) for f in (0.9, 1.1)]
    assert max(abs(m / base - 1) for m in moved) > 0.004, (key, moved, base)


# NeMo-Megatron-Launcher README, 7.1.2 Training Performance Results (DGX A100 80GB nodes, aggregate tokens/s).
NEMO_5B = {1: 40345, 2: 79815, 4: 161754, 8: 312774, 16: 659481, 32: 1159288}
NEMO_175B = {8: 7500, 16: 14950, 32: 29537, 64: 58211, 128: 109684}


def test_nemo_megatron_scaling_is_held_out_of_every_fit() -> None:
    """The second multi-node publication is never fitted on: the fit's cases leave it out."""
    fit = benchscripts.load("fit_advisor")
    fitted_ids = {c["id"] for c in fit.throughput_cases()}
    nemo = {f"NL5B{n}" for n in NEMO_5B} | {f"NL175B{n}" for n in NEMO_175B}
    assert nemo <= set(CASES) and not fitted_ids & nemo
    assert all(CASES[f"NL175B{n}"]["held_out"] for n in NEMO_175B)


@pytest.mark.parametrize(
    ("series", "published", "low", "high"),
    [("NL5B", NEMO_5B, 1.05, 1.2), ("NL175B", NEMO_175B, 1.3, 1.42)],
)
def test_nemo_megatron_per_gpu_rate_falls_as_published(
    series: str, published: dict[int, int], low: float, high: float
) -> None:
    """GPT 5B (data parallel, 1 to 32 nodes) and GPT 175B (TP 8 x PP 8, 8 to 128 nodes) at a global batch of 2,048:
    every point within 0.67-1.5 (the goal; here within its own narrower range), and the per-GPU rate at the largest
    scale falls from the smallest by within 0.5-1.5 times the published fall (5B: 10 %, from fewer micro-batches per
    gradient sync; 175B: 8.6 %, the 1F1B bubble growing from 7/1024 to 7/64 of a step)."""
    pred = {n: _predict(f"{series}{n}") for n in published}
    for n, meas in published.items():
        assert low <= pred[n] / meas <= high, (n, pred[n] / meas)
    first, last = min(published), max(published)
    fall = 1 - (pred[last] / last) / (pred[first] / first)
    published_fall = 1 - (published[last] / last) / (published[first] / first)
    assert 0.5 * published_fall <= fall <= 1.5 * published_fall, (fall, published_fall)


@pytest.mark.parametrize(
    ("case_id", "low", "high"),
    [("BLM1m", 0.85, 1.1), ("MPP4m", 0.95, 1.15), ("MPP4v3m", 1.15, 1.25), ("MPP2t2m", 1.2, 1.25)],
)
def test_pipeline_memory_of_published_runs_not_fitted_on(case_id: str, low: float, high: float) -> None:
    """BLOOM 176B (TP 4 x PP 12 x DP 8, Megatron-DeepSpeed without sequence parallelism: the first stage holds 12
    micro-batches of its layers' whole inputs) at 60 GB, Megatron-LM's 7B interleaved pipeline (8 chunks per
    rank) at 56.6 GiB, and two of Megatron-LM's small-GPT functional tests (PP 4 with 3 chunks per rank and
    unfused attention at 3.88 GiB; TP 2 x PP 2 at 1.33 GiB, the last stage's logits a large share of both): each
    within its range of the published figure (0.8-1.25 is the goal)."""
    case = CASES[case_id]
    assert "fitted" not in case
    ratio = _predict(case_id) / case["measured"]
    assert low <= ratio <= high, ratio


def test_bloom_first_stage_holds_a_micro_batch_per_stage_of_whole_layer_inputs() -> None:
    """Without sequence parallelism the layer input a full recomputation keeps is whole on each of the 4 TP ranks:
    6 layers x 12 micro-batches x 2·s·b·h bytes on the first stage."""
    from gpuadvisor.advisor import memory as M

    case = CASES["BLM1m"]
    w, view = P.workload(case), P.view_for(case)
    lay = P.layout(case, view)
    acts, _ = M.activations(w, lay, True, 128, "first")
    kept = 6 * 12 * 2 * 2048 * 2 * 14336
    assert kept < acts < kept * 1.15


def test_a_deepspeed_pick_is_timed_as_deepspeed_unless_a_stack_is_given() -> None:
    """ZeRO-3 + CPU offload runs only in DeepSpeed (its launch lines are DeepSpeed's): timed as DeepSpeed whether or
    not --framework deepspeed is given; --stack pytorch overrides it and says so."""
    spec = catalog.gpu_by_id("h100-sxm5-80gb")
    assert spec is not None
    # a scanned rig (its host RAM known): the CPU-offload layouts are offered
    view = dataclasses.replace(hypothetical(spec, 8), hypothetical=False, host_memory_bytes=2 * 2**40)
    plain = Workload.from_options(model="llama-3-8b")
    named = Workload.from_options(model="llama-3-8b", stack="deepspeed")
    forced = Workload.from_options(model="llama-3-8b", stack="pytorch")
    lay = next(lay for lay in layouts(view, plain)[0] if lay.key == "zero3-offload")
    a, b, c = (S.evaluate(view, w, lay, False) for w in (plain, named, forced))
    assert a.step_seconds == pytest.approx(b.step_seconds)
    assert c.step_seconds != pytest.approx(a.step_seconds)
    assert any("--stack" in d for d in c.comm.detail) and not any("--stack" in d for d in a.comm.detail)
    # A layout PyTorch runs (FSDP FULL_SHARD, printed as FSDP code) keeps the eager PyTorch timing.
    fsdp = next(lay for lay in layouts(view, plain)[0] if lay.key == "zero3")
    assert S.evaluate(view, plain, fsdp, False).step_seconds == pytest.approx(
        S.evaluate(view, forced, fsdp, False).step_seconds
    )


def test_measured_is_said_only_of_a_measured_rate() -> None:
    """The RTX A5000's matmul rate is carried over from the RTX A6000's measurement (no one has published its own):
    its rates say "assumed", the RTX 3090's (measured on three machines) "measured"."""
    from gpuadvisor.advisor import timing as T

    a5000, rtx3090 = catalog.gpu_by_id("rtx-a5000"), catalog.gpu_by_id("rtx-3090")
    assert a5000 is not None and rtx3090 is not None
    a_peak, b_peak = a5000.peak_tflops("bf16"), rtx3090.peak_tflops("bf16")
    assert a_peak is not None and b_peak is not None
    a = " ".join(T.rates(a5000, "bf16", a_peak).sources)
    b = " ".join(T.rates(rtx3090, "bf16", b_peak).sources)
    assert "this card's assumed rate" in a and "measured rate" not in a
    assert "this card's own measured rate" in b
    assert "assumed rate at" in T.power_capped_tflops(a5000, 150)[1]


def test_megatron_deepspeed_keeps_fp32_gradients_beside_the_bf16_ones() -> None:
    """Without --state-bytes, a tensor- or pipeline-parallel layout on the DeepSpeed stack (Megatron-DeepSpeed's
    BF16 optimizer, BLOOM's recipe) counts 2 + 4 bytes of gradients per parameter; given, the value given holds."""
    from gpuadvisor.advisor.layout import build

    spec = catalog.gpu_by_id("a100-sxm4-80gb")
    assert spec is not None
    view = hypothetical(spec, 8, 2)
    w = Workload.from_options(model="llama-2-13b", stack="deepspeed", layout="tp=4,pp=2,zero=1")
    given = Workload.from_options(model="llama-2-13b", stack="deepspeed", layout="tp=4,pp=2,zero=1", state_bytes="16")
    lay = build(w.layout or "", view, w)
    own, sixteen = S.evaluate(view, w, lay, True), S.evaluate(view, given, lay, True)
    assert own.memory.grads_bytes == pytest.approx(3 * sixteen.memory.grads_bytes)
