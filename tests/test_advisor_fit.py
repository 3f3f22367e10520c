"""benchmarks/fit_advisor.py: the time model's constants are its output (fitted on the published runs of
benchmarks/calibration_cases.toml), a refit without each GPU generation predicts that generation, and the shipped
throughput band is the spread of those held-out predictions with the coverage it states."""

from __future__ import annotations

import statistics
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import benchscripts
import pytest

from gpuadvisor.advisor import calibration as K
from gpuadvisor.advisor import fitted
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.workload import Workload

FITTED = fitted.shipped()
ROOT = Path(__file__).resolve().parent.parent


def _load(name: str) -> ModuleType:
    return benchscripts.load(name)


@pytest.fixture(scope="module")
def fit() -> ModuleType:
    return _load("fit_advisor")


@pytest.fixture(scope="module")
def report(fit: ModuleType) -> Any:
    return fit.run()


def test_the_constants_in_the_code_are_the_fit_output(fit: ModuleType, report: Any) -> None:
    """gpuadvisor/advisor/fitted.toml is exactly what the script writes from the cases file (no hand-typed values)."""
    assert fitted.FITTED_FILE.read_text(encoding="utf-8") == fit.fitted_toml(report)
    for f in fit.FITS:
        assert FITTED.value(f.name) == report.values[f.name]
        assert report.used[f.name], f.name  # every constant has published runs to be fitted on


def test_each_constant_is_fitted_on_the_runs_it_moves(report: Any) -> None:
    """Selected by stack / fine-tuning / layout, never by id: the Megatron factor on the Megatron-Core runs only
    (NeMo, Megatron-Bridge, Megatron-LM's Mixtral), the QLoRA dequantisation on QLoRA runs only, the eager bytes on
    no compiled or Megatron run."""
    used = report.used
    megatron = {f"NM{i}" for i in range(1, 10)} | {"MB1", "MB2", "MB3", "NB70", "NB405", "MX1"}
    assert set(used["megatron_memory_bound_factor"]) == megatron
    assert not megatron & set(used["memory_bound_bytes"])
    assert {"TU2", "TB7", "AQ1", "AQ11"} <= set(used["qlora_dequant_bytes_per_param"])
    assert not {"TT2", "NM1", "TU2"} & set(used["memory_bound_bytes"])
    # Fused kernels leave less memory-bound traffic than eager PyTorch; Transformer Engine's the least.
    assert FITTED.megatron_memory_bound_factor < FITTED.compile_memory_bound_factor < 1.0


def test_leave_one_generation_out_predicts_the_held_out_generation(report: Any) -> None:
    """Refitted without Ampere / Hopper (the generations with enough runs), each one's median is within 0.85-1.15."""
    for gen in ("ampere", "hopper"):
        h = report.logo[gen]
        assert len(h["ratios"]) >= 20
        assert 0.85 <= statistics.median(h["ratios"]) <= 1.15, (gen, statistics.median(h["ratios"]))


def test_band_holds_on_generations_it_was_not_made_from(fit: ModuleType, report: Any) -> None:
    """At least 70 % of the held-out runs fall inside the band made from the other generations' held-out runs."""
    assert report.nested_share >= fit.HELD_OUT_GOAL
    assert sum(n["cases"] for n in report.nested.values()) == report.cases


def test_shipped_band_is_the_held_out_band_with_its_measured_coverage(fit: ModuleType, report: Any) -> None:
    shipped = tomllib.loads(K.BANDS_FILE.read_text(encoding="utf-8"))["bands"]["throughput"]
    assert "measured" not in shipped  # no calibration run used measured rates
    assert shipped["datasheet"] == fit.band_entry(report)
    lo, hi = shipped["datasheet"]["ratio_low"], shipped["datasheet"]["ratio_high"]
    shares = []
    for groups in (report.logo, report.loso):  # held out by GPU generation, and by publication
        held = [r for h in groups.values() for r in h["ratios"]]
        assert len(held) == report.cases
        shares.append(sum(lo <= r <= hi for r in held) / len(held))
    # The band is the wider of the two held-out spreads; the coverage it prints is the lower measured one.
    assert min(shares) == pytest.approx(shipped["datasheet"]["coverage_measured"], abs=0.015)
    assert shares[0] == pytest.approx(shipped["datasheet"]["coverage_by_generation"], abs=0.015)
    assert shares[1] == pytest.approx(shipped["datasheet"]["coverage_by_publication"], abs=0.015)
    assert 0.7 <= min(shares) <= 0.9
    assert "coverage_stated" not in shipped["datasheet"]  # no coverage claimed that was not measured


def test_sibling_tables_of_one_publication_are_held_out_together(fit: ModuleType) -> None:
    """torchtitan's docs/performance.md tables and its benchmarks/ files are one source; so are Megatron-Bridge's
    25.09 and 25.11 tables, and MaxText's A3 runs on 1 to 16 VMs."""
    by_id = {c["id"]: c for c in fit.throughput_cases()}
    for group in (("TT1", "TA1", "TCP2", "TTP1", "TT70"), ("MB1", "NB70", "NB405"), ("MXA1", "MXA16")):
        assert len({fit.source_of(by_id[i]) for i in group}) == 1, group
    assert fit.source_of(by_id["MX1"]) != fit.source_of(by_id["MXA1"])


def test_each_fitted_constant_is_pinned_by_its_runs(fit: ModuleType, report: Any) -> None:
    """Every fitted constant is where its own runs put it: moved by 10 % either way, its runs' squared log error
    rises on at least one side, and on neither side falls by more than 1 % (coordinate descent leaves constants that
    share runs, as the network's scale term and XLA's overlap on MaxText's runs, a little short of the joint
    minimum)."""
    cases = fit.throughput_cases()
    for f in fit.FITS:
        mine = [c for c in cases if f.selects(c)]
        value = report.values[f.name]
        base = fit._loss(mine, report.values)
        moved = []
        for factor in (0.9, 1.1):
            x = min(f.high, max(f.low, value * factor))
            if x != value:  # at the end of its range (no power cap, full overlap): nothing to move that way
                moved.append(fit._loss(mine, {**report.values, f.name: x}))
        assert moved and max(moved) > base, f.name
        assert min(moved) > 0.99 * base, (f.name, min(moved), base)


def test_golden_section_finds_a_known_minimum(fit: ModuleType) -> None:
    assert fit._golden(lambda x: (x - 0.3) ** 2, 0.0, 1.0, 40) == pytest.approx(0.3, abs=1e-4)
    assert fit._golden(lambda x: (x - 22.0) ** 2, 4.0, 80.0, 40) == pytest.approx(22.0, rel=1e-3)


def test_the_stack_changes_the_prediction() -> None:
    """--stack (or --framework megatron / deepspeed / jax) picks the fused-kernel factor of that stack."""
    base = Workload.from_options(model="llama-3-8b")
    facts = {
        s: T.memory_bound_factor(Workload.from_options(model="llama-3-8b", stack=s))[0]
        for s in ("pytorch", "megatron", "deepspeed", "jax")
    }
    assert facts == {
        "pytorch": 1.0,
        "megatron": FITTED.megatron_memory_bound_factor,
        "deepspeed": 1.0,
        "jax": FITTED.compile_memory_bound_factor,
    }
    assert T.stack_key(Workload.from_options(model="llama-3-8b", compile=True)) == "compile"
    assert T.stack_key(base) == "pytorch"


def test_board_power_caps_the_matmul_rate() -> None:
    """The capped rate grows with the board power below the generation's top board power, where it is fitted; at
    700 W it does not apply to the H100 SXM (its published 794.5 TFLOP/s MAMF stands) while at Grand Teton's 500 W
    it binds; the 300 W RTX 6000 Ada, 2.2x the RTX 4090's
    datasheet peak, sustains less than the 450 W RTX 4090 (Answer.AI's fsdp_qlora runs: 179 vs 238 tokens/s per
    GPU)."""
    from gpuadvisor import catalog

    h100 = catalog.gpu_by_id("h100-sxm5-80gb")
    at500, _ = T.power_capped_tflops(h100, 500)
    at700, why = T.power_capped_tflops(h100, 700)
    assert at500 is not None and at700 is None and "top board power" in why  # fitted below it, not applied at it
    assert at500 == pytest.approx(FITTED.tflops_per_watt["hopper"] * 500**T.C.POWER_CAP_EXPONENT)
    peak = h100.peak_tflops("bf16")
    assert peak is not None
    assert T.rates(h100, "bf16", peak).matmul_tflops == pytest.approx(794.5, rel=0.001)  # not capped at 700 W
    assert T.rates(h100, "bf16", peak, power_w=500).matmul_tflops == pytest.approx(at500) and at500 < 794.5
    ada6000, rtx4090 = catalog.gpu_by_id("rtx-6000-ada"), catalog.gpu_by_id("rtx-4090")
    assert ada6000 is not None and rtx4090 is not None
    p6000, p4090 = ada6000.peak_tflops("bf16"), rtx4090.peak_tflops("bf16")
    assert p6000 is not None and p4090 is not None and p6000 > 2 * p4090
    r6000 = T.rates(ada6000, "bf16", p6000)
    r4090 = T.rates(rtx4090, "bf16", p4090)
    assert r6000.matmul_tflops < r4090.matmul_tflops
    assert any("power-limited" in s for s in r6000.sources)
    # A generation without a fitted coefficient (Ampere) has no cap; below the published power range (the 72 W L4,
    # the 350 W H100 PCIe) the cap is not extrapolated, and the rates say so.
    assert T.power_capped_tflops(catalog.gpu_by_id("a100-sxm4-80gb"))[0] is None
    l4 = catalog.gpu_by_id("l4")
    assert l4 is not None and l4.tdp_w == 72 and FITTED.power_cap_min_watts["ada"] == 300.0
    cap, why = T.power_capped_tflops(l4)
    assert cap is None and "below the lowest board power" in why
    l4_peak = l4.peak_tflops("bf16")
    assert l4_peak is not None
    assert any("not capped by its 72 W" in s for s in T.rates(l4, "bf16", l4_peak).sources)


def test_answer_ai_fsdp_qlora_table() -> None:
    """Llama 2 70B QLoRA (Answer.AI fsdp_qlora: 2x RTX 3090, 2x RTX 4090, 2x/4x/8x RTX A5000, 2x/4x RTX 6000 Ada,
    2x/4x/8x A100 40GB, 4x H100): every row predicted within 0.75-1.33 of its published tokens/s (the 4x H100
    included: PEFT's eager adapter ops grow with the tokens at the memory bandwidth, not with the H100's matmul rate).
    The builds of the RTX 3090, RTX 4090, RTX 6000 Ada, A100 and H100 come in the published order, exactly. The RTX
    A5000 rows, whose rate no one has published (assumed from the RTX A6000's), keep the published order among
    themselves and with every other row but one: the 4x A5000 (434 tokens/s) and the 2x RTX 4090 with CPU offload
    (477), 9.8 % apart, are predicted the other way round, within 8 % of each other (every RTX 4090 run but
    torchtune's paged-optimizer one is predicted at 0.84-0.92 of its measurement: a gap the model does not explain
    yet)."""
    acc = _load("calibration_cases")
    cases = [c for c in acc.load_cases() if c["id"].startswith("AQ")]
    assert len(cases) == 11
    pred = {c["id"]: acc.predict(c) for c in cases}
    for c in cases:
        assert 0.75 <= pred[c["id"]] / c["measured"] <= 1.33, (c["id"], pred[c["id"]] / c["measured"])
    by_measured = [c["id"] for c in sorted(cases, key=lambda c: c["measured"])]
    assert by_measured == ["AQ1", "AQ3", "AQ6", "AQ4", "AQ2", "AQ8", "AQ7", "AQ5", "AQ9", "AQ10", "AQ11"]
    a5000 = {"AQ3", "AQ4", "AQ5"}
    named = [i for i in by_measured if i not in a5000]
    assert sorted(named, key=lambda i: pred[i]) == named, {i: round(pred[i]) for i in named}
    swapped = [{"AQ4": "AQ2", "AQ2": "AQ4"}.get(i, i) for i in by_measured]
    assert sorted(by_measured, key=lambda i: pred[i]) == swapped, {i: round(pred[i]) for i in by_measured}
    assert pred["AQ4"] / pred["AQ2"] < 1.08


def test_cards_with_their_own_measured_matmul_rate() -> None:
    """A GeForce card's FP32-accumulate tensor figure is half its tensor cores' rate and its clocks run past the
    rated boost: measured, the RTX 4090 and 3090 exceed their datasheet figures, where no generation fraction of
    the peak would put them. A pro card at 300 W runs below (RTX A6000 79.7 %). Each such card carries its own
    figure with its source; below its board power (Answer.AI's 3090s at 280 W) the figure scales with the power;
    attention kernels follow the matmul rate."""
    from gpuadvisor import catalog

    rated = {g.id: g for g in catalog.gpus() if g.mamf_tflops}
    assert set(rated) == {"rtx-4090", "rtx-3090", "rtx-a6000", "rtx-a5000"}
    for g in rated.values():
        assert g.mamf_source and ("assumed" in g.mamf_source or "TFLOP/s" in g.mamf_source), g.id
    assert "assumed" in rated["rtx-a5000"].mamf_source  # no published measurement of the A5000: said so
    r4090 = T.rates(rated["rtx-4090"], "bf16", 165.2)
    assert r4090.matmul_tflops == pytest.approx(178.5)
    assert r4090.attention_tflops == pytest.approx(165.2 * 0.55 * 178.5 / (165.2 * 271.2 / 312), rel=1e-6)
    r3090 = T.rates(rated["rtx-3090"], "bf16", 71.0, power_w=280)
    assert r3090.matmul_tflops == pytest.approx(76.6 * 280 / 350)
    assert any("280 / 350 W" in s for s in r3090.sources)
    assert T.rates(rated["rtx-3090"], "bf16", 71.0).matmul_tflops == pytest.approx(76.6)
    # A scan's own bench --compute figure still wins.
    from types import SimpleNamespace

    bench = SimpleNamespace(kind="matmul", status="ok", backend="cuda", dtype="bf16", value_tflops=150.0)
    assert T.rates(rated["rtx-4090"], "bf16", 165.2, [bench]).matmul_tflops == 150.0


def test_offloaded_weights_are_fetched_under_compute() -> None:
    """FSDP's CPU offload fetches each unit's weights on the prefetching stream, like the all-gather they feed:
    Answer.AI's dual RTX 4090 runs of Llama 2 7B LoRA took 481 s without offload at batch 6 and 482 s with it at
    batch 10 (AL2, AL3); predicted within 1 % of each other (each within 0.75-1.33 of its measurement), where
    counting the fetches on the critical path made the offloaded run 6 % slower."""
    acc = _load("calibration_cases")
    cases = {c["id"]: c for c in acc.load_cases() if c["id"] in ("AL2", "AL3")}
    al2, al3 = acc.predict(cases["AL2"]), acc.predict(cases["AL3"])
    assert al3 / al2 == pytest.approx(1.0, abs=0.01)
    for cid, p in (("AL2", al2), ("AL3", al3)):
        assert 0.75 <= p / cases[cid]["measured"] <= 1.33
    # What the JSON and the candidates table show: the fetches counted in the traffic, not in the exposed time.
    from gpuadvisor.advisor import strategies as S

    c = cases["AL3"]
    w, view = acc.workload(c), acc.view_for(c)
    cand = S.evaluate(view, w, acc.layout(c, view), True, acc.rates_for(c, view, w))
    assert cand.comm.offload_seconds > 2 * cand.comm.offload_exposed_seconds > 0
    assert cand.comm.exposed_seconds < cand.comm.total_seconds
    comm = cand.to_dict()["comm"]
    assert comm["offload_exposed_seconds"] == pytest.approx(cand.comm.offload_exposed_seconds, abs=1e-3)


def test_paged_optimizer_states_that_do_not_fit_are_paged_every_step() -> None:
    """torchtune's Llama 3.1 8B full fine-tune on one RTX 4090 (PagedAdamW8bit, 1,650 tokens/s): its 16 GB of 8-bit
    states do not fit beside the 16 GB of bf16 weights on a 24 GB card, so most of them page over PCIe every step.
    Untimed, the run was predicted 1.25x too fast; timed, within 5 %. The same run on a 48 GB card pages nothing."""
    from gpuadvisor.advisor import strategies as S

    acc = _load("calibration_cases")
    case = next(c for c in acc.load_cases() if c["id"] == "TU3")
    assert case["optimizer"] == "paged-adam8bit"
    assert acc.predict(case) / case["measured"] == pytest.approx(1.0, abs=0.05)
    w, view = acc.workload(case), acc.view_for(case)
    cand = S.evaluate(view, w, acc.layout(case, view), True, acc.rates_for(case, view, w))
    paging, line = S.paged_state_seconds(view, w, cand.layout, cand.memory)
    assert paging > 0.2 and "paged in and out every step" in line
    assert cand.comm.offload_exposed_seconds == pytest.approx(paging)
    big = {**case, "gpu": "rtx-a6000"}
    w2, view2 = acc.workload(big), acc.view_for(big)
    cand2 = S.evaluate(view2, w2, acc.layout(big, view2), True, acc.rates_for(big, view2, w2))
    assert S.paged_state_seconds(view2, w2, cand2.layout, cand2.memory) == (0.0, "")


def test_attention_constants_are_fitted_on_their_kernels_runs(report: Any) -> None:
    """The FlashAttention-1 factor on the llm-foundry MPT rows (Triton FlashAttention) only, the ring factor on
    torchtitan's context-parallel rows only (not NeMo's CP 2 run, Transformer Engine's ring); the fitted
    FlashAttention-1 rate inside what Dao 2023 publishes (FlashAttention-2 1.3-3.0x faster: 0.33-0.77), the ring
    slower than the fused kernel alone."""
    used = report.used
    assert set(used["flash1_attention_factor"]) == (
        {f"FA{i}" for i in range(1, 10)} | {f"FH{i}" for i in range(1, 9)} | {"FB1"}
    )
    assert set(used["ring_attention_factor"]) == {"TCP2", "TCP4", "TCP8"}
    assert 1 / 3.0 <= FITTED.flash1_attention_factor <= 1 / 1.3
    assert 0.3 <= FITTED.ring_attention_factor < 1.0


def test_long_sequence_mpt_rows_against_the_published_tables() -> None:
    """MPT-7B at 32k tokens on 8 H100 (3,318 tokens/s/GPU) and 65k on 8 A100 (1,013): 1.37 and 1.38 before the
    Triton kernel's rate was modelled; within 0.85-1.15 with it, and the kernel is what moved them: the same rows
    with a FlashAttention-2 class kernel are predicted at least 25 % faster (their attention is 50-65 % of the step),
    the 2k-token rows under 5 % faster."""
    import dataclasses

    acc = _load("calibration_cases")
    cases = {c["id"]: c for c in acc.load_cases()}
    for cid, measured in (("FH6", 3318), ("FA8", 1013)):
        c = cases[cid]
        assert c["measured"] == measured and c["attention_kernel"] == "flash1"
        assert 0.85 <= acc.predict(c) / measured <= 1.15, cid
    for cid, least, most in (("FH6", 1.25, 2.0), ("FA8", 1.25, 2.0), ("FH1", 1.0, 1.05), ("FA1", 1.0, 1.05)):
        flash2 = acc.predict({**cases[cid], "attention_kernel": "flash2"})
        assert least <= flash2 / acc.predict(cases[cid]) <= most, cid
    w = acc.workload(cases["FH6"])
    assert dataclasses.replace(w, attention_kernel="flash2").attention_kernel == "flash2"
