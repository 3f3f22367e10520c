"""The formulas of PARALLELISM.md against the values their sources publish."""

from __future__ import annotations

import pytest

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import formulas as F
from gpuadvisor.advisor.architecture import Architecture

GB = 1e9


def test_zero_paper_figure_1() -> None:
    """Rajbhandari et al. 2019, figure 1: Ψ = 7.5B, N = 64, K = 12 -> 120, 31.4, 16.6, 1.9 GB per GPU."""
    got = [round(F.zero_model_state_bytes(7.5e9, stage, 64) / GB, 1) for stage in (0, 1, 2, 3)]
    assert got == [120.0, 31.4, 16.6, 1.9]


def test_zero_stages_with_other_k() -> None:
    # SGD with momentum and an fp32 master: K = 8 (PARALLELISM.md): DDP 12 bytes/param.
    assert F.zero_model_state_bytes(1e9, 0, 8, k=8) == 12e9
    # ZeRO-2 on 8 GPUs: 2Ψ + (2 + K)Ψ/N = 2e9 + 14e9/8
    assert F.zero_model_state_bytes(1e9, 2, 8) == 2e9 + 14e9 / 8
    with pytest.raises(ValueError):
        F.zero_model_state_bytes(1e9, 4, 8)


# GPT-3 175B as Korthikanti et al. 2022 configure it in their evaluation: a = 96, h = 12288, s = 2048, t = 8; b = 1.
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H  # 25,165,824


def test_korthikanti_activation_table_for_gpt3() -> None:
    """Each row of the paper's activation table (section 4), evaluated for GPT-3 175B."""
    assert 5 * A * S / H == 80  # the attention-score term dwarfs the 34 of everything else
    assert F.activation_bytes_per_layer(S, B, H, A) == SBH * 114 == 2_868_903_936
    assert F.activation_bytes_per_layer(S, B, H, A, T) == SBH * 23 == 578_813_952  # 10 + 24/8 + 80/8
    assert F.activation_bytes_per_layer(S, B, H, A, T, sequence_parallel=True) == SBH * 114 / 8 == 358_612_992
    assert (
        F.activation_bytes_per_layer(S, B, H, A, T, sequence_parallel=True, recompute="selective")
        == SBH * 34 / 8
        == 106_954_752
    )
    assert F.activation_bytes_per_layer(S, B, H, A, T, recompute="full") == 2 * SBH == 50_331_648
    # Fused attention keeps no score matrices: the same bytes as selective recomputation.
    assert F.activation_bytes_per_layer(S, B, H, A, fused_attention=True) == 34 * SBH
    # Selective recomputation removes 80 of the 114: the 70% cut the paper reports for GPT-3.
    assert round(1 - 34 / 114, 2) == 0.70


def test_logits_bytes() -> None:
    assert F.logits_bytes(4096, 1, 128256) == 4096 * 128256 * 4
    assert F.logits_bytes(4096, 2, 128256, t=8) == 4096 * 2 * 128256 * 4 / 8


@pytest.mark.parametrize(
    ("collective", "n", "factor"),
    [
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_reduce", 16, 1.875),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 8, 1.0),
        ("send_recv", 2, 1.0),
    ],
)
def test_nccl_tests_busbw_factors(collective: str, n: int, factor: float) -> None:
    """nccl-tests doc/PERFORMANCE.md: 2(n-1)/n all-reduce, (n-1)/n all-gather/reduce-scatter, 1 otherwise."""
    assert F.busbw_factor(collective, n) == factor


def test_busbw_factor_reproduces_real_nccl_tests_rows() -> None:
    """Rows of real all_reduce_perf output (shared/samples): busbw = algbw × factor, time = size × factor / busbw."""
    # tinybox 6x RTX 4090: 33554432 B, 2275.1 us, algbw 14.75, busbw 24.58 (nccl-allreduce_tinybox-6x4090-...txt)
    size, time_us, algbw, busbw = 33554432, 2275.1, 14.75, 24.58
    assert size / (time_us * 1e-6) / 1e9 == pytest.approx(algbw, abs=0.01)
    assert algbw * F.busbw_factor("all_reduce", 6) == pytest.approx(busbw, abs=0.01)
    assert F.collective_seconds("all_reduce", size, 6, busbw) == pytest.approx(time_us * 1e-6, rel=1e-3)
    # GCP A3 Mega, 2 nodes x 8 H100 (16 ranks): 8589934592 B, 47535 us, algbw 180.71, busbw 338.82
    algbw = 8589934592 / 47535e-6 / 1e9
    assert algbw == pytest.approx(180.71, abs=0.01)
    assert algbw * F.busbw_factor("all_reduce", 16) == pytest.approx(338.82, abs=0.01)
    assert F.collective_seconds("all_reduce", 8589934592, 16, 338.82) == pytest.approx(47535e-6, rel=1e-3)
    assert F.collective_seconds("all_reduce", 1e9, 1, 100) == 0.0


def test_pipeline_bubble() -> None:
    assert F.pipeline_bubble_fraction(4, 8) == 3 / 11
    assert F.pipeline_bubble_fraction(1, 8) == 0.0


def test_training_flops_match_megatron_equation_3_for_gpt3() -> None:
    """6·Ψ·tokens + the attention term equals Megatron-LM's 72·B·s·L·h²(1 + s/6h + V/12hL) (no recomputation)
    for a GPT-style Ψ = 12·L·h² + V·h; with recomputation eq. 3 (96·...) differs only by the logits' extra forward."""
    L, h, V, s, batch = 96, 12288, 51200, 2048, 1536
    psi = 12 * L * h * h + V * h
    tokens = batch * s
    ours = F.training_flops(psi, tokens) + F.attention_flops(L, s, h, tokens)
    assert ours == pytest.approx(F.megatron_flops_per_iteration(batch, s, L, h, V, recompute=False), rel=1e-12)
    ours_rc = F.training_flops(psi, tokens, recompute=True) + F.attention_flops(L, s, h, tokens, recompute=True)
    eq3 = F.megatron_flops_per_iteration(batch, s, L, h, V)
    assert ours_rc - eq3 == pytest.approx(2 * V * h * tokens, rel=1e-9)
    assert F.training_flops(1e9, 1e6) == 6e15
    assert F.training_flops(1e9, 1e6, frozen=True) == 4e15


def test_compute_seconds() -> None:
    # 6e18 FLOPs on 8 GPUs of 1000 TFLOP/s at 40% MFU: 6e18 / (8 × 1e15 × 0.4) = 1875 s
    assert F.compute_seconds(6e18, 8, 1000.0, 0.4) == pytest.approx(1875.0)


def test_kv_cache_per_token() -> None:
    # Llama 3 8B: 2 × 32 layers × 8 KV heads × 128 × 2 bytes = 128 KiB; 70B: 80 layers -> 320 KiB.
    assert F.kv_cache_bytes_per_token(32, 8, 128, 2) == 131072
    assert F.kv_cache_bytes_per_token(80, 8, 128, 2) == 327680
    assert F.kv_cache_bytes_per_token(80, 8, 128, 1, t=4) == 327680 / 8


def test_byte_conventions_are_16_18_20() -> None:
    adam = C.ADAMW.states
    assert C.MIXED_16BIT_GRADS.per_param(adam) == 16  # ZeRO paper
    assert C.MIXED_FP32_GRADS.per_param(adam) == 18  # Megatron bf16 + fp32 grads; DeepSpeed ZeRO-3 estimator; HF docs
    assert C.MIXED_MAIN_GRADS.per_param(adam) == 20  # Megatron fp16 grads + fp32 main grads
    assert C.FP32_STATES.per_param(adam) == 16
    assert C.MIXED_16BIT_GRADS.master + C.ADAMW.states == 12  # the ZeRO paper's K
    assert C.MIXED_16BIT_GRADS.master + C.ADAM_8BIT.states == 6  # PARALLELISM.md: 8-bit Adam K ≈ 2 + 4
    assert C.MIXED_16BIT_GRADS.master + C.SGD_MOMENTUM.states == 8


def test_target_efficiency_table() -> None:
    assert [C.target_efficiency(n) for n in (1, 2, 4, 8, 64)] == [1.0, 0.9, 0.85, 0.8, 0.8]


def test_architecture_counts_gpt3_shape() -> None:
    a = Architecture(
        name="x",
        hidden=768,
        layers=12,
        heads=12,
        kv_heads=12,
        intermediate=3072,
        vocab=50257,
        head_dim=64,
        max_positions=1024,
        tied_embeddings=True,
        mlp="plain",
        norm="layernorm",
        bias=True,
        learned_positions=True,
    )
    assert a.counted_params() == 124_439_808  # GPT-2 small, as its model page reports
