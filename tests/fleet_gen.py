"""Fleets of 8-GPU node scans shaped like real ``check --bench --quick`` output, for the fleet tests.

Written from a reading of two real scans of one H100 80GB HBM3 (tests/fixtures/h100-vm/scan-bench.json and
scan-v2-bench.json, 49 minutes apart), not from gpuadvisor's simulator: the host, software and GPU sections
are the real scan's, copied per GPU; the measurements are built here with the same fields the benchmarker
writes (kind, memory, gpus, value_gbps / latency_us, expected_gbps, ratio, rows, status "ok").

What the real scans show, and what the generator does with it:

- pinned host copies: h2d 55.00 / 54.70 GB/s, d2h 54.99 / 55.16 GB/s in the two runs (0.5 % apart), expected
  53.557 GB/s (PCIe Gen5 x16 x 0.85): noise sigma;
- pageable copies: h2d 10.42 / 8.19 GB/s (21 % apart), d2h 12.71 / 12.52: noise 5 sigma;
- device-to-device: 1404.7 / 1488.0 GB/s (5.9 % apart): noise 2 sigma;
- P2P (NVLink, 8 GPUs on NVSwitch): unidirectional and bidirectional bandwidth per ordered / unordered pair,
  noise sigma; P2P latency per ordered pair (microseconds, lower is better), noise 3 sigma;
- the four collectives over 8 ranks with rows at 1-64 MiB (the quick sizes of the real scan); each row its own
  timing, noise sigma each; the headline value_gbps is the 64 MiB row's busbw.

About 200 figures per node (40 copies, 56 + 28 P2P bandwidths, 56 latencies, 4 x 4 collective sizes). Noise is
multiplicative, unclipped (a value is kept above 5 % of nominal: a bandwidth is never negative), independent per
figure: Gaussian (``noise="gauss"``, sigma ``sigma``), or heavy-tailed, Student's t with 3, 5 or 10 degrees of
freedom scaled by ``sigma`` (``noise="t3"`` ...). Heavy tails are what benchmarks show: an nccl-tests row on
16 H100 nodes that "sometimes can reach a normal value like 150GB/s, but it is much lower for majority of runs"
(https://github.com/NVIDIA/nccl/issues/1469), and the real scans above, where a pageable copy is 21 % lower 49
minutes later while the pinned copies agree to 0.5 %: at t3 a reading four scales out is 40 times as likely as
a Gaussian one (t3 P(|t| > 4) = 2.8 %).
"""

from __future__ import annotations

import copy
import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "h100-vm" / "scan-bench.json"
GPUS = 8
NVLINKS = 18  # H100 SXM5: 18 NVLink 4 links per GPU
NICS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "eth0"]
# (nominal value, noise multiple of sigma, expected_gbps or None) per family
COPIES = {
    ("h2d", "pinned"): (55.0, 1, 53.557),
    ("d2h", "pinned"): (55.0, 1, 53.557),
    ("h2d", "pageable"): (10.4, 5, None),
    ("d2h", "pageable"): (12.7, 5, None),
    ("d2d", None): (1405.0, 2, None),
}
P2P_UNI, P2P_BI, P2P_LAT_US = 370.0, 700.0, 2.6
LAT_NOISE = 3
COLL_SIZES = [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20]
COLL_BUSBW = {"all_reduce": 300.0, "all_gather": 280.0, "reduce_scatter": 280.0, "broadcast": 250.0}  # at 64 MiB


@functools.cache
def _template() -> str:
    return FIXTURE.read_text(encoding="utf-8")


@dataclass
class Plant:
    factor: dict[str, float] = field(default_factory=dict)  # family -> multiplier of its bandwidths ("all_reduce")
    lost_gpu: bool = False  # the node shows 7 of its 8 GPUs
    lost_nic: bool = False  # one RDMA NIC gone from the scan
    lost_nvlink: int | None = None  # this GPU has one NVLink inactive; its P2P bandwidths at 17/18
    driver: str | None = None
    nccl: str | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)  # the node's own findings
    one: dict[str, float] = field(default_factory=dict)  # family -> multiplier of its first figure only (GPU 0, 0→1)


def _meas(kind: str, gpus: list[int], **kw: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "unavailable": {},
        "kind": kind,
        "backend": "cuda",
        "method": "generated",
        "provenance": "measured",
        "world_size": 1,
        "gpus": gpus,
        "memory": None,
        "concurrent": None,
        "p2p_enabled": None,
        "warmup_iters": 1,
        "iters": 4,
        "rows": [],
        "value_gbps": None,
        "latency_us": None,
        "expected_gbps": None,
        "expected_source": None,
        "ratio": None,
        "status": "ok",
        "error": None,
        "notes": [],
    }
    m.update(kw)
    if m["expected_gbps"] and m["value_gbps"]:
        m["ratio"] = round(m["value_gbps"] / m["expected_gbps"], 3)
    return m


NOISE_DOF = {"gauss": 0, "t3": 3, "t5": 5, "t10": 10}


def draw(rng: random.Random, noise: str) -> float:
    """One noise variate: standard normal, or Student's t (a normal over the root of a chi-square / dof)."""
    dof = NOISE_DOF[noise]
    z = rng.gauss(0, 1)
    return z if not dof else z / (rng.gammavariate(dof / 2, 2) / dof) ** 0.5


def node_scan(
    name: str,
    rng: random.Random,
    sigma: float,
    plant: Plant | None = None,
    created_at: str = "2026-11-22T18:12:45Z",
    noise: str = "gauss",
    sizes: list[int] | None = None,
) -> dict[str, Any]:
    """One node's scan; ``sizes``: the collectives' message sizes (default the quick 1-64 MiB; ``[64 << 20]``: the
    headline only, one figure per collective)."""
    d = json.loads(_template())
    p = plant or Plant()

    def noisy(v: float, mult: float = 1.0) -> float:
        return v * max(0.05, 1 + sigma * mult * draw(rng, noise))

    d["host"]["hostname"] = name
    d["source"]["created_at"] = created_at
    if p.driver:
        d["software"]["driver_version"] = p.driver
    if p.nccl:
        d["software"]["nccl_version"] = p.nccl
    g0 = d["gpus"][0]
    gpus = []
    for i in range(GPUS):
        g = copy.deepcopy(g0)
        g.update(index=i, uuid=f"GPU-{name}-{i}", serial=f"{name}-{i}", bus_id=f"0000:{0x18 + 0x10 * i:02x}:00.0")
        g["nvlinks"] = [
            {"link": j, "active": not (p.lost_nvlink == i and j == 0), "remote_device_type": "switch", "version": 4}
            for j in range(NVLINKS)
        ]
        gpus.append(g)
    shown = list(range(GPUS - 1)) if p.lost_gpu else list(range(GPUS))
    d["gpus"] = [gpus[i] for i in shown]
    nics = [n for n in NICS if not (p.lost_nic and n == "mlx5_3")]
    d["topology"] = {
        "unavailable": {},
        "matrix": None,
        "pcie_matrix": None,
        "p2p_read": None,
        "p2p_write": None,
        "nics": nics,
        "nic_matrix": None,
    }
    ms: list[dict[str, Any]] = []
    for g in shown:
        for (kind, mem), (v, mult, exp) in COPIES.items():
            fam = kind if mem is None else f"{kind} {mem}"
            val = noisy(v, mult) * p.factor.get(fam, 1.0) * (p.one.get(fam, 1.0) if g == 0 else 1.0)
            ms.append(
                _meas(kind, [g], memory=mem, concurrent=False if mem else None, value_gbps=val, expected_gbps=exp)
            )
    for a in shown:
        for b in shown:
            if a == b:
                continue
            slow = (NVLINKS - 1) / NVLINKS if p.lost_nvlink in (a, b) else 1.0
            ms.append(
                _meas(
                    "p2p_unidir",
                    [a, b],
                    p2p_enabled=True,
                    value_gbps=noisy(P2P_UNI) * slow * p.factor.get("p2p_unidir", 1.0),
                )
            )
            if a < b:
                ms.append(
                    _meas(
                        "p2p_bidir",
                        [a, b],
                        p2p_enabled=True,
                        value_gbps=noisy(P2P_BI) * slow * p.factor.get("p2p_bidir", 1.0),
                    )
                )
            lat = noisy(P2P_LAT_US, LAT_NOISE) * (p.one.get("p2p_latency", 1.0) if (a, b) == (0, 1) else 1.0)
            ms.append(_meas("p2p_latency", [a, b], p2p_enabled=True, latency_us=lat))
    ws = len(shown)
    for kind, top in COLL_BUSBW.items():
        f = p.factor.get(kind, 1.0)
        rows = []
        for s in sizes or COLL_SIZES:
            bw = noisy(top * (s / COLL_SIZES[-1]) ** 0.25) * f
            rows.append(
                {
                    "size_bytes": s,
                    "count": s // 4,
                    "dtype": "float32",
                    "time_us": s / bw / 1e3,
                    "algbw_gbps": bw * ws / (2 * (ws - 1)),
                    "busbw_gbps": bw,
                    "correct": True,
                    "errors": 0,
                }
            )
        ms.append(
            _meas(
                kind,
                shown,
                backend="nccl",
                world_size=ws,
                rows=rows,
                value_gbps=rows[-1]["busbw_gbps"],
                expected_gbps=top,
            )
        )
    d["measurements"] = ms
    d["findings"] = list(p.findings)
    d["problems"] = []
    return d


def write_fleet(
    directory: Path,
    names: list[str],
    *,
    seed: int,
    sigma: float,
    plants: dict[str, Plant] | None = None,
    created_at: str = "2026-11-22T18:12:45Z",
) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    out = []
    for n in names:
        path = directory / f"{n}.json"
        path.write_text(json.dumps(node_scan(n, rng, sigma, (plants or {}).get(n), created_at)), encoding="utf-8")
        out.append(path)
    return out


def fleet_scans(
    names: list[str],
    *,
    seed: int,
    sigma: float,
    plants: dict[str, Plant] | None = None,
    noise: str = "gauss",
    sizes: list[int] | None = None,
) -> dict[str, dict[str, Any]]:
    """The scans in memory (name -> scan), for sweeps over many seeds without the file system."""
    rng = random.Random(seed)
    return {n: node_scan(n, rng, sigma, (plants or {}).get(n), noise=noise, sizes=sizes) for n in names}
