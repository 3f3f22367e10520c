"""bench --compute: FLOP counting, the CPU code path end to end, the Measurement contract, GA607, rendering."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpuadvisor.bench import compute, compute_results, run_benchmarks
from gpuadvisor.facts import Gpu, Measurement, Rig, from_dict
from gpuadvisor.render.text.bench import render_compute
from gpuadvisor.rules import evaluate

H100 = "NVIDIA H100 80GB HBM3"  # catalog row h100-sxm5-80gb: bf16 989.4, fp8 1978.9 TFLOP/s dense, 3350 GB/s


def test_flops_are_two_m_n_k_per_product():
    assert compute.matmul_flops(8192, 8192, 8192) == 2 * 8192**3 == 1_099_511_627_776
    assert compute.matmul_flops(3, 5, 7) == 210
    assert compute.matmul_flops(16384, 16384, 4096) == 2 * 16384 * 16384 * 4096
    assert compute.tflops(1000, 1000, 1000, 1e-3) == pytest.approx(2.0)  # 2e9 FLOP in 1 ms
    assert compute.shape_text(16384, 16384, 4096) == "16384x16384x4096"


def test_matmul_figure_is_flops_over_the_median_run(monkeypatch):
    """The worker's TFLOP/s for one product is exactly 2·M·N·K / median(run time per product)."""
    import torch

    monkeypatch.setattr(compute, "time_op", lambda *a, **k: ([0.5, 0.25, 1.0, 0.125, 2.0], 7))
    res = compute._matmul(torch, torch.device("cpu"), "cpu", "fp32", "square", (64, 32, 16))
    assert res["status"] == "ok" and res["shape"] == "64x32x16" and res["iters"] == 7
    assert res["value_tflops"] == 2 * 64 * 32 * 16 / 0.5 / 1e12
    assert res["spread_tflops"] == [2 * 64 * 32 * 16 / 2.0 / 1e12, 2 * 64 * 32 * 16 / 0.125 / 1e12]
    assert "2·M·N·K FLOPs per product" in res["method"]


def test_fp8_is_skipped_with_its_reason_on_a_cpu():
    import torch

    res = compute._matmul(torch, torch.device("cpu"), "cpu", "fp8", "square", (16, 16, 16))
    assert (res["status"], res["error"]) == ("skipped", "fp8 matmul needs a GPU")


def test_plan_per_device():
    assert [(k, d, s and compute.shape_text(*s)) for k, d, _, s in compute.plan("cuda")] == [
        ("matmul", "bf16", "8192x8192x8192"),
        ("matmul", "bf16", "16384x16384x4096"),
        ("matmul", "fp16", "8192x8192x8192"),
        ("matmul", "fp16", "16384x16384x4096"),
        ("matmul", "tf32", "8192x8192x8192"),
        ("matmul", "tf32", "16384x16384x4096"),
        ("matmul", "fp8", "8192x8192x8192"),
        ("matmul", "fp8", "16384x16384x4096"),
        ("memory_bandwidth", None, None),
    ]
    assert [d for k, d, _, _ in compute.plan("cpu") if k == "matmul"] == ["fp32", "fp32", "bf16", "bf16"]


@pytest.fixture(scope="module")
def cpu_run():
    env_keep = {v: os.environ.pop(v) for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR") if v in os.environ}
    try:
        rig = Rig()
        ms = run_benchmarks(rig, only="compute", budget_s=120)
    finally:
        os.environ.update(env_keep)
    return rig, ms


def test_cpu_compute_fills_the_measurement_contract(cpu_run):
    rig, ms = cpu_run
    mm = [m for m in ms if m.kind == "matmul"]
    assert [(m.dtype, m.shape) for m in mm] == [
        ("fp32", "512x512x512"),
        ("fp32", "1024x1024x256"),
        ("bf16", "512x512x512"),
        ("bf16", "1024x1024x256"),
    ]
    for m in mm:
        assert (m.backend, m.gpus, m.status) == ("cpu", [], "ok")
        assert m.value_tflops is not None and m.value_tflops > 0
        assert m.expected_tflops is None and m.ratio is None and m.expected_source is None
        assert m.unavailable["expected_tflops"] == compute_results.CPU_NO_PEAK
        assert "time.perf_counter" in m.method and "2·M·N·K" in m.method
        assert m.iters >= 1 and m.warmup_iters == 1
    (bw,) = [m for m in ms if m.kind == "memory_bandwidth"]
    assert (bw.backend, bw.status, bw.dtype, bw.shape) == ("cpu", "ok", None, None)
    assert bw.value_gbps is not None and bw.value_gbps > 0 and bw.expected_gbps is None
    assert "bytes read + bytes written" in bw.method
    assert rig.provenance["measurements"] == "measured"


def test_compute_measurements_round_trip_through_a_saved_scan(cpu_run):
    rig, _ = cpu_run
    again = from_dict(json.loads(rig.to_json()))
    assert again.to_json() == rig.to_json()
    m = next(m for m in again.measurements if m.kind == "matmul")
    assert isinstance(m.value_tflops, float) and m.dtype == "fp32"


def test_cpu_results_are_not_judged_against_gpu_peaks(cpu_run):
    rig, _ = cpu_run
    (f,) = [f for f in evaluate(rig) if f.code == "GA607"]
    assert f.severity == "not-checked"
    assert f.message.startswith("compute was measured on the CPU only")


def _gpu_rig(
    value_tflops: float, *, reasons: list[str] | None = None, limit: float | None = None, gbps: float = 2900.0
) -> Rig:
    rig = Rig(
        gpus=[
            Gpu(
                index=0,
                name=H100,
                bus_id="0000:41:00.0",
                clocks_event_reasons=reasons,
                power_limit_w=limit,
                power_default_limit_w=700.0 if limit else None,
            )
        ]
    )
    devices = {0: {"ordinal": 0, "bus_id": "0000:41:00.0", "name": H100}}
    base = {"backend": "cuda", "ordinal": 0, "status": "ok", "method": "m", "iters": 10, "warmup_iters": 3}
    rig.measurements = [
        compute_results.measurement(
            rig,
            {**base, "kind": "matmul", "dtype": "bf16", "shape": "8192x8192x8192", "value_tflops": value_tflops},
            devices,
        ),
        compute_results.measurement(rig, {**base, "kind": "memory_bandwidth", "value_gbps": gbps}, devices),
    ]
    return rig


def test_gpu_measurement_carries_the_datasheet_peak():
    rig = _gpu_rig(700.0)
    mm, bw = rig.measurements
    assert (mm.gpus, mm.expected_tflops, mm.ratio) == ([0], 989.4, round(700.0 / 989.4, 4))
    assert mm.expected_source.startswith(
        "NVIDIA H100 SXM5 80GB datasheet dense bf16 peak 989.4 TFLOP/s: NVIDIA H100 "
        "Tensor Core GPU Architecture whitepaper"
    )
    assert (bw.expected_gbps, bw.ratio) == (3350.0, round(2900.0 / 3350.0, 4))


def test_rule_fires_on_a_planted_low_value_and_names_the_evidence():
    rig = _gpu_rig(400.0, reasons=["sw_power_cap"], limit=450.0)
    (f,) = [f for f in evaluate(rig) if f.code == "GA607"]
    assert (f.severity, f.gpus) == ("warn", [0])
    assert "bf16 matmul 8192x8192x8192 400.0 TFLOP/s = 40% of the 989.4 dense peak" in f.message
    assert "clocks held down by sw_power_cap" in f.message
    assert "power limit 450 W, below the default 700 W" in f.message
    assert f.observed["clocks_event_reasons"] == ["sw_power_cap"]


def test_rule_fires_on_low_memory_bandwidth_without_evidence():
    rig = _gpu_rig(750.0, gbps=1500.0)
    (f,) = [f for f in evaluate(rig) if f.code == "GA607"]
    assert "memory copy 1500 GB/s = 45% of the 3350 GB/s datasheet bandwidth" in f.message
    assert "likely a power cap, thermal or hardware slowdown, or locked clocks" in f.message


def test_rule_is_quiet_on_a_healthy_gpu():
    rig = _gpu_rig(750.0)  # 0.76 of peak: what a healthy H100 SXM reaches
    assert [f for f in evaluate(rig) if f.code == "GA607"] == []


def test_rule_threshold_is_at_half_the_peak():
    assert [f.severity for f in evaluate(_gpu_rig(0.49 * 989.4)) if f.code == "GA607"] == ["warn"]
    assert [f.severity for f in evaluate(_gpu_rig(0.51 * 989.4)) if f.code == "GA607"] == []


def test_no_compute_measurement_is_not_checked():
    rig = Rig(measurements=[Measurement(kind="all_reduce", backend="gloo", world_size=2)])
    (f,) = [f for f in evaluate(rig) if f.code == "GA607"]
    assert (f.severity, f.message) == (
        "not-checked",
        "no compute measurement in this scan (run gpuadvisor bench --compute)",
    )


def test_render_compute_table():
    text = render_compute(_gpu_rig(712.34).measurements)
    lines = text.splitlines()
    assert lines[1] == "device  kind    dtype  shape (MxNxK)         measured      peak  ratio  status"
    assert lines[2] == "GPU 0   matmul  bf16   8192x8192x8192           712.3     989.4   0.72  ok"
    assert lines[3] == "GPU 0   memory  -      -                       2900.0    3350.0   0.87  ok"


def test_cli_bench_compute_on_cpu(tmp_path):
    out = tmp_path / "scan.json"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR")}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "bench", "--compute", "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Compute: dense matmul TFLOP/s" in p.stdout and "cpu     matmul  fp32   512x512x512" in p.stdout
    saved = json.loads(out.read_text())
    kinds = [(m["kind"], m["dtype"]) for m in saved["measurements"]]
    assert kinds == [
        ("matmul", "fp32"),
        ("matmul", "fp32"),
        ("matmul", "bf16"),
        ("matmul", "bf16"),
        ("memory_bandwidth", None),
    ]


def test_advisor_does_not_take_a_cpu_figure_for_a_gpu_rate(cpu_run):
    """A scan from bench --compute on a CPU-only machine carries bf16 matmul figures with backend "cpu"; the
    advisor's measured-rate lookup must not use them as a GPU's TFLOP/s."""
    from gpuadvisor import catalog
    from gpuadvisor.advisor.timing import rates

    _, ms = cpu_run
    spec = catalog.find_gpu(H100)
    assert any(m.kind == "matmul" and m.dtype == "bf16" and m.backend == "cpu" for m in ms)
    r = rates(spec, "bf16", spec.peak_tflops("bf16"), ms)
    assert r.matmul_measured is False and r.memory_measured is False
