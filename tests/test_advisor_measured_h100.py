"""The advisor against training steps measured on a real H100 80GB HBM3 (benchmarks/device/train_measure.py:
Hugging Face transformers 5.17, eager + SDPA, torch 2.11; tests/fixtures/h100-vm/train-measure-{1,2}.json),
dense Llama shapes and two mixture-of-experts layer shapes (Mixtral 8x7B's and Qwen3-30B-A3B's, 4 layers each).

The calibration cases GH1..GH12 hold these figures; the tests check that the cases are the recorded figures (not
retyped), and that the advisor's memory and time land where the measurements put them."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from types import ModuleType
from typing import Any

import benchscripts
import pytest

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import memory as M
from gpuadvisor.advisor.architecture import architecture_from_hf_config
from gpuadvisor.advisor.memory import Layout
from gpuadvisor.advisor.workload import Workload

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "h100-vm"
GiB = 2**30


def _accuracy() -> ModuleType:
    return benchscripts.load("calibration_cases")


@pytest.fixture(scope="module")
def acc() -> ModuleType:
    return _accuracy()


@pytest.fixture(scope="module")
def records() -> dict[str, dict[str, Any]]:
    out = {}
    for name in ("train-measure-1.json", "train-measure-2.json"):
        data = json.loads((FIX / name).read_text())
        assert data["env"]["gpu"] == "NVIDIA H100 80GB HBM3"
        for r in data["runs"]:
            out[f"{name}:{r['name']}"] = r
    return out


@pytest.fixture(scope="module")
def ratios(acc: ModuleType) -> dict[str, float]:
    cases = [c for c in acc.load_cases() if c["id"].startswith("GH")]
    return {r.id: r.ratio for r in acc.run(cases)}


def test_the_cases_are_the_recorded_measurements(acc: ModuleType, records: dict[str, dict[str, Any]]) -> None:
    cases = {c["id"]: c for c in acc.load_cases() if c["id"].startswith("GH")}
    assert len(cases) == 24
    seen = set()
    for cid, c in cases.items():
        if c["kind"] != "throughput":
            continue
        key = c["run"]
        r = records[key]
        seen.add(key)
        assert c["measured"] == round(r["tokens_per_second"])
        assert cases[cid + "m"]["measured"] == round(r["max_allocated_gib"], 2)
    assert seen == set(records)  # every recorded run is a case, once


def test_dense_memory_within_a_few_percent(ratios: dict[str, float]) -> None:
    """Eager Llama shapes without checkpointing (GH1-3, GH10, GH11): the peak allocated within 6 %."""
    for cid in ("GH1m", "GH2m", "GH3m", "GH10m", "GH11m"):
        assert 0.94 <= ratios[cid] <= 1.06, (cid, ratios[cid])


def test_moe_memory_and_time_against_the_measured_runs(ratios: dict[str, float]) -> None:
    """Mixtral 8x7B's layer (8 experts, top-2) and Qwen3-30B-A3B's (128 experts, top-8) on one H100: memory within
    0.75-1.33 and time within 0.67-1.5. Known and stated: memory is over by 4-22 % (gradients and activations are
    counted together, which overstates the peak when the gradients are large against the activations); time is
    about 1.3x too fast for the 128 small experts (768 wide): the profile (tests/fixtures/h100-vm/step-profile.json)
    puts 68 of its 140 ms in elementwise and routing kernels the time model does not count per expert."""
    moe = ("GH4", "GH5", "GH7", "GH8", "GH9")
    for cid in moe:
        assert 0.75 <= ratios[cid + "m"] <= 1.33, (cid, ratios[cid + "m"])
        assert 0.67 <= ratios[cid] <= 1.5, (cid, ratios[cid])
    assert 1.0 < statistics.median(ratios[c + "m"] for c in moe) < 1.2
    assert ratios["GH9"] > 1.1 * ratios["GH7"]  # the many-small-experts shape is the one predicted too fast


def test_an_upcasting_rmsnorm_keeps_four_bytes_more_per_element() -> None:
    """Hugging Face's LlamaRMSNorm keeps its fp32 input and the 16-bit normalised tensor: 6·h per norm where a
    fused norm keeps 2·h. For the Llama 3.2 1B shape that is 53·h per token and layer, which the measured
    slope of GH10 -> GH11 (8,192 more tokens: 27.09 GiB) gives with the loss's 14 bytes per logit."""
    arch = architecture_from_hf_config(FIX / "train" / "llama-1b.config.json")
    eager = Workload(arch=arch, seq_len=8192, micro_batch=1, checkpointing="none", state_bytes="bf16")
    te = Workload(arch=arch, seq_len=8192, micro_batch=1, checkpointing="none", state_bytes="bf16", stack="megatron")
    lay = Layout("single", "single GPU", "PyTorch", 0, dp=1)
    a_eager, logits = M.activations(eager, lay, False, 1)
    a_te, _ = M.activations(te, lay, False, 1)
    per = (a_eager - logits) / (8192 * arch.layers)
    assert per == pytest.approx(53 * arch.hidden)
    assert a_eager - a_te == arch.layers * 8192 * 2 * C.UPCAST_RMSNORM_EXTRA_BYTES * arch.hidden
    measured_slope = (61.09 - 34.00) * GiB / 8192
    assert per * arch.layers + 14 * arch.vocab == pytest.approx(measured_slope, rel=0.01)


def test_the_optimizer_step_moves_14_bytes_per_bf16_parameter_at_the_measured_rate() -> None:
    """torch's fused AdamW on bf16 parameters and states reads weight, gradient and both moments and writes weight
    and moments: 14 bytes per parameter. At OPTIMIZER_STEP_BANDWIDTH_FRACTION of the copy bandwidth the three
    profiled models' optimizer kernels (7.9, 19.9 and 39.3 ms per step) are reproduced within 3 %."""
    from gpuadvisor import catalog
    from gpuadvisor.advisor import timing as T

    profile = json.loads((FIX / "step-profile.json").read_text())
    spec = catalog.gpu_by_id("h100-sxm5-80gb")
    r = T.rates(spec, "bf16", spec.peak_tflops("bf16"), None)
    for name, cfg in (
        ("llama-1b", "llama-1b"),
        ("qwen3-30b-a3b-4l", "qwen3-30b-a3b-4l"),
        ("mixtral8x7b-4l", "mixtral8x7b-4l"),
    ):
        w = Workload(arch=architecture_from_hf_config(FIX / "train" / f"{cfg}.config.json"), state_bytes="bf16")
        assert w.optimizer_step_bytes() == 14
        predicted = T._optimizer_seconds(w, 1, 1, 1, 0, r, False) * 1e3
        measured = profile[name]["ms_per_step_by_kind"]["optimizer"]
        assert predicted == pytest.approx(measured, rel=0.03), name
