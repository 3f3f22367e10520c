"""Simulated node scans for the fleet tests and benchmarks: a preset's simulated scan, made N times with
host names, measurement noise and planted problems. Every scan says ``source.kind = "simulated"``.

Nominal figures (per GPU of the dgx-h100 preset; the shape of real results, not a claim about any machine):
h2d/d2h pinned 53 GB/s, d2d 2600 GB/s, P2P 370 GB/s per pair, all_reduce busbw 480 GB/s, and, where the
scan model has compute fields, matmul bf16 700 TFLOPS. Noise: each figure times (1 + e), e normal with
sigma ``noise / 2`` clipped to +-``noise`` (so "+-2%" bounds it), or uniform in +-``noise``.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOMINAL = {"h2d": 53.0, "d2h": 53.0, "d2d": 2600.0, "p2p_unidir": 370.0, "all_reduce": 480.0, "matmul": 700.0}


@functools.cache
def base_scan(preset: str = "dgx-h100") -> str:
    from gpuadvisor.collect import simulate

    rig = simulate(preset)
    rig.problems = []
    return rig.to_json()


def _has_compute() -> bool:
    from gpuadvisor.facts import Measurement

    return "value_tflops" in Measurement.__dataclass_fields__ and "dtype" in Measurement.__dataclass_fields__


@dataclass
class Plant:
    slow_gpu: int | None = None  # GPU memory / compute slow: d2d (and matmul) x slow_factor
    slow_factor: float = 0.85
    driver: str | None = None
    x8_gpu: int | None = None  # link trained at x8: width 8, h2d/d2h halved
    nvlink_down_gpu: int | None = None  # one NVLink inactive on this GPU: its P2P at 17/18
    factor: float = 1.0  # every figure of the node times this (a node "5% below" = 0.95)
    extra: dict[str, Any] = field(default_factory=dict)


def _meas(kind: str, gpus: list[int], value: float, **kw: Any) -> dict[str, Any]:
    m = {
        "kind": kind,
        "backend": kw.pop("backend", "cuda"),
        "method": kw.pop("method", f"simulated {kind}"),
        "provenance": "measured",
        "gpus": gpus,
        "value_gbps": round(value, 3),
        "status": "ok",
    }
    m.update(kw)
    return m


def node_scan(
    name: str,
    rng: random.Random,
    *,
    noise: float = 0.02,
    uniform: bool = False,
    plant: Plant | None = None,
    created_at: dt.datetime | None = None,
    preset: str = "dgx-h100",
    p2p: bool = True,
) -> dict[str, Any]:
    d = json.loads(base_scan(preset))
    plant = plant or Plant()

    def jitter(v: float) -> float:
        e = rng.uniform(-noise, noise) if uniform else max(-noise, min(noise, rng.gauss(0, noise / 2)))
        return v * (1 + e) * plant.factor

    d["host"]["hostname"] = name
    when = (created_at or dt.datetime.now(dt.UTC)).replace(microsecond=0)
    d["source"]["created_at"] = when.isoformat().replace("+00:00", "Z")
    if plant.driver:
        d["software"]["driver_version"] = plant.driver
    n = len(d["gpus"])
    if plant.x8_gpu is not None:
        d["gpus"][plant.x8_gpu]["pcie"]["current_width"] = 8
    if plant.nvlink_down_gpu is not None:
        d["gpus"][plant.nvlink_down_gpu]["nvlinks"][0]["active"] = False
    ms = []
    for g in range(n):
        for kind in ("h2d", "d2h"):
            v = jitter(NOMINAL[kind]) * (0.5 if g == plant.x8_gpu else 1.0)
            ms.append(_meas(kind, [g], v, memory="pinned", concurrent=False))
        ms.append(_meas("d2d", [g], jitter(NOMINAL["d2d"]) * (plant.slow_factor if g == plant.slow_gpu else 1.0)))
        if _has_compute():
            tf = jitter(NOMINAL["matmul"]) * (plant.slow_factor if g == plant.slow_gpu else 1.0)
            m = _meas("matmul", [g], 0.0, dtype="bf16", value_tflops=round(tf, 3))  # bench --compute dtype names
            m["value_gbps"] = None
            ms.append(m)
    if p2p and n > 1:
        for a in range(n):
            for b in range(n):
                if a != b:
                    slow = 17 / 18 if plant.nvlink_down_gpu in (a, b) else 1.0
                    ms.append(_meas("p2p_unidir", [a, b], jitter(NOMINAL["p2p_unidir"]) * slow, p2p_enabled=True))
    ms.append(
        _meas(
            "all_reduce",
            list(range(n)),
            jitter(NOMINAL["all_reduce"]),
            backend="nccl",
            world_size=n,
            method="simulated all_reduce",
        )
    )
    d["measurements"] = ms
    d["provenance"]["measurements"] = "simulated"
    for k, v in plant.extra.items():
        d[k] = v
    return d


def write_fleet(
    directory: str | Path,
    names: list[str],
    *,
    seed: int = 0,
    noise: float = 0.02,
    uniform: bool = False,
    plants: dict[str, Plant] | None = None,
    created_at: dt.datetime | None = None,
    preset: str = "dgx-h100",
    p2p: bool = True,
) -> list[Path]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    paths = []
    for name in names:
        d = node_scan(
            name,
            rng,
            noise=noise,
            uniform=uniform,
            plant=(plants or {}).get(name),
            created_at=created_at,
            preset=preset,
            p2p=p2p,
        )
        p = out / f"{name}.json"
        p.write_text(json.dumps(d, indent=2) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def copy_scan(d: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(d)
