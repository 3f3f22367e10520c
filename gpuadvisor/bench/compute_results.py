"""Compute results (``compute`` worker events) as Measurements, beside the catalog's datasheet peaks.

matmul: ``expected_tflops`` is the datasheet dense peak of that dtype for the GPU's catalog row (no 2:4
sparsity figure), ``ratio`` = measured / peak. memory_bandwidth: ``expected_gbps`` is the datasheet memory
bandwidth. CPU results get no expected figure: GPU datasheet peaks do not apply to a CPU, and the catalog has
no CPU peaks; the reason sits in ``unavailable``.
"""

from __future__ import annotations

from typing import Any

from gpuadvisor import catalog
from gpuadvisor.bench.results import _bus_key, from_event
from gpuadvisor.facts import Measurement, Rig

CPU_NO_PEAK = "CPU run: the catalog holds GPU datasheet peaks only, so a CPU figure is not compared with a peak"


def _gpu_index(rig: Rig, dev: dict[str, Any] | None, ordinal: int | None, notes: list[str]) -> int | None:
    by_bus = {k: g.index for g in rig.gpus if (k := _bus_key(g.bus_id)) is not None}
    key = _bus_key((dev or {}).get("bus_id"))
    if key is not None and key in by_bus:
        return by_bus[key]
    if ordinal is not None:
        notes.append("GPU numbers are CUDA ordinals: no GPU with that PCI bus id in this scan's facts")
    return ordinal


def _spec(rig: Rig, index: int | None, dev: dict[str, Any] | None) -> tuple[catalog.GpuSpec | None, str | None]:
    name = None
    if index is not None and any(g.index == index for g in rig.gpus):
        name = rig.gpu(index).name
    name = name or (dev or {}).get("name")
    return catalog.find_gpu(name), name


def measurement(rig: Rig, ev: dict[str, Any], devices: dict[int, dict[str, Any]]) -> Measurement:
    notes: list[str] = []
    backend = ev.get("backend") or "cpu"
    ordinal = ev.get("ordinal")
    dev = devices.get(ordinal) if ordinal is not None else None
    gpus: list[int] = []
    if backend == "cuda":
        idx = _gpu_index(rig, dev, ordinal, notes)
        gpus = [idx] if idx is not None else []
    given = ("method", "dtype", "shape", "warmup_iters", "iters", "error")
    m = from_event(ev, given, backend=backend, gpus=gpus, status=ev.get("status") or "failed", notes=notes)
    if m.kind == "matmul":
        m.value_tflops = round(ev["value_tflops"], 3) if ev.get("value_tflops") is not None else None
        if ev.get("shape_name"):
            notes.append(f"shape: {ev['shape_name']} (M x N x K; A is M x K, B is K x N)")
        if ev.get("spread_tflops"):
            lo, hi = ev["spread_tflops"]
            notes.append(f"runs ranged {lo:.3g}-{hi:.3g} TFLOP/s over {ev.get('runs')} runs")
    else:
        m.value_gbps = round(ev["value_gbps"], 3) if ev.get("value_gbps") is not None else None
        if ev.get("spread_gbps"):
            lo, hi = ev["spread_gbps"]
            notes.append(f"runs ranged {lo:.4g}-{hi:.4g} GB/s over {ev.get('runs')} runs")
    if backend == "cpu":
        if ev.get("threads"):
            notes.append(f"{ev['threads']} CPU threads (torch.get_num_threads)")
        m.unavailable["expected_tflops" if m.kind == "matmul" else "expected_gbps"] = CPU_NO_PEAK
        return m
    spec, name = _spec(rig, gpus[0] if gpus else None, dev)
    field = "expected_tflops" if m.kind == "matmul" else "expected_gbps"
    if spec is None:
        m.unavailable[field] = f"GPU model {name!r} is not in gpuadvisor's GPU catalog"
        return m
    if m.kind == "matmul":
        peak = spec.peak_tflops(m.dtype or "")
        if peak is None:
            m.unavailable[field] = f"the {spec.name} datasheet gives no dense {m.dtype} figure"
            return m
        m.expected_tflops = peak
        m.expected_source = f"{spec.name} datasheet dense {m.dtype} peak {peak:g} TFLOP/s: {spec.source}"
        if m.value_tflops is not None:
            m.ratio = round(m.value_tflops / peak, 4)
    else:
        m.expected_gbps = float(spec.memory_bandwidth_gbps)
        m.expected_source = f"{spec.name} datasheet memory bandwidth {spec.memory_bandwidth_gbps:g} GB/s: {spec.source}"
        if m.value_gbps is not None:
            m.ratio = round(m.value_gbps / m.expected_gbps, 4)
    return m


def measurements(rig: Rig, events: list[dict[str, Any]]) -> list[Measurement]:
    devices: dict[int, dict[str, Any]] = {}
    out = []
    for ev in events:
        if ev.get("ev") == "devices":
            devices = {d["ordinal"]: d for d in ev["devices"]}
        elif ev.get("ev") == "result":
            out.append(measurement(rig, ev, devices))
    return out
