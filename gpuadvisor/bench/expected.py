"""What a measurement should reach, from the rig's link facts (one function: ``expected_bandwidth``)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from gpuadvisor import links
from gpuadvisor.facts import Gpu, Rig

_NV = re.compile(r"^NV(\d+)$")


@dataclass(frozen=True)
class Expected:
    gbps: float | None
    source: str  # how the figure was derived, or why there is none


def _positions(rig: Rig, gpus: list[int]) -> list[int] | None:
    pos = {g.index: i for i, g in enumerate(rig.gpus)}
    if not gpus or any(g not in pos for g in gpus):
        return None
    return [pos[g] for g in gpus]


def _nvlink_total(gpu: Gpu) -> tuple[float, str] | None:
    active = gpu.active_nvlinks()
    if not active:
        return None
    total = 0.0
    versions = set()
    for link in active:
        bw = links.nvlink_gbps(link.version, 1)
        if bw is None:
            return None
        total += bw
        versions.add(link.version)
    v = "/".join(str(x) for x in sorted(versions))
    return total, f"{len(active)} active NVLink {v} links × {links.NVLINK_LINK_GBPS[min(versions)]:g} GB/s"


def _pcie(gpu: Gpu) -> links.PathLimit | None:
    return links.path_limit(gpu, at_max=True)


def _narrowest_pcie(rig: Rig, positions: list[int]) -> Expected:
    limits = [(rig.gpus[p], _pcie(rig.gpus[p])) for p in positions]
    missing = [g.label for g, lim in limits if lim is None]
    if missing:
        return Expected(None, f"no PCIe link facts for {', '.join(missing)}")
    gpu, lim = min(limits, key=lambda x: x[1].gbps)  # type: ignore[union-attr]
    assert lim is not None
    eff = links.PCIE_COPY_EFFICIENCY
    return Expected(lim.gbps * eff, f"{gpu.label}: {lim.describe()} × {eff} copy efficiency ({links.PCIE_SOURCE})")


def _nv_count(code: str) -> int | None:
    m = _NV.match(code or "")
    return int(m.group(1)) if m else None


def expected_bandwidth(
    rig: Rig,
    kind: str,
    gpus: list[int],
    *,
    backend: str | None,
    world_size: int | None = None,
    memory: str | None = None,
    p2p_enabled: bool | None = None,
    spans_nodes: bool = False,
) -> Expected:
    """The figure a measurement is judged against, and where it comes from.

    ``gpus`` are ``Gpu.index`` values of ``rig``. Link figures come from ``gpuadvisor.links`` (per direction,
    before protocol overhead; PCIe at the maximum generation and width the hardware allows, so a downgraded
    hop shows as a low ratio). The whole table:

    =============================  ==================  ====================================================
    kind                           condition           expected figure
    =============================  ==================  ====================================================
    all_reduce, all_gather,        world size 1        none: no link is crossed (busbw factor is 0 or 1 of
    reduce_scatter, broadcast                          a local copy)
    (compared with busbw)          gloo on CPUs        none: CPU loopback is not in the link facts
                                   ranks on several    none: the network is not in the link facts
                                   hosts
                                   every pair NV#      smallest per-GPU NVLink total among the GPUs: active
                                                       links × GB/s per link
                                   otherwise           narrowest PCIe path among the GPUs ×
                                                       links.PCIE_COPY_EFFICIENCY
    h2d, d2h                       pinned              links.expected_copy_gbps(gpu): narrowest hop × eff.
                                   pageable            none: staged through a driver buffer, host-bound
    d2d                                                none: device memory bandwidth is not in the facts
    p2p_unidir                     P2P on, pair NV#k   k × GB/s per link of the GPU's NVLink version
                                   P2P on, PCIe        narrowest PCIe path of the two GPUs × efficiency
                                   P2P off             the same PCIe figure (the driver stages the copy
                                                       through host memory: both GPUs' links are crossed)
    p2p_bidir                      as p2p_unidir       2 × the p2p_unidir figure (both directions summed)
    p2p_latency                                        none
    =============================  ==================  ====================================================
    """
    if kind in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
        if world_size == 1:
            return Expected(None, "world size 1: no link is crossed")
        if backend == "gloo":
            return Expected(None, "gloo on CPUs: loopback and shared-memory bandwidth are not in the link facts")
        if spans_nodes:
            return Expected(None, "ranks on several hosts: the network is not in the link facts")
        positions = _positions(rig, gpus)
        if positions is None:
            return Expected(None, f"no link facts for GPUs {gpus} in this scan")
        codes = [rig.topology.matrix[a][b] for a in positions for b in positions
                 if a != b and a < len(rig.topology.matrix) and b < len(rig.topology.matrix[a])]
        if codes and len(codes) == len(positions) * (len(positions) - 1) and all(_nv_count(c) for c in codes):
            totals = [(rig.gpus[p], _nvlink_total(rig.gpus[p])) for p in positions]
            missing = [g.label for g, t in totals if t is None]
            if missing:
                return Expected(None, f"every pair is NVLink but {', '.join(missing)} has no NVLink link facts")
            gpu, (gbps, how) = min(totals, key=lambda x: x[1][0])  # type: ignore[index]
            return Expected(gbps, f"{gpu.label}: {how} per direction ({links.NVLINK_SOURCE})")
        return _narrowest_pcie(rig, positions)

    if kind in ("h2d", "d2h"):
        if memory == "pageable":
            return Expected(None, "pageable memory: staged through a driver buffer, limited by the host")
        positions = _positions(rig, gpus)
        if positions is None:
            return Expected(None, f"no link facts for GPUs {gpus} in this scan")
        got = links.expected_copy_gbps(rig.gpus[positions[0]], at_max=True)
        if got is None:
            return Expected(None, f"no PCIe link facts for {rig.gpus[positions[0]].label}")
        return Expected(got[0], got[1])

    if kind == "d2d":
        return Expected(None, "device memory bandwidth is not in the rig facts")

    if kind in ("p2p_unidir", "p2p_bidir"):
        positions = _positions(rig, gpus)
        if positions is None or len(positions) != 2:
            return Expected(None, f"no link facts for GPU pair {gpus} in this scan")
        a, b = positions
        mult = 2.0 if kind == "p2p_bidir" else 1.0
        both = " × 2 directions" if kind == "p2p_bidir" else ""
        matrix = rig.topology.matrix
        code = matrix[a][b] if a < len(matrix) and b < len(matrix[a]) else ""
        k = _nv_count(code)
        if p2p_enabled and k:
            active = rig.gpus[a].active_nvlinks() or rig.gpus[b].active_nvlinks()
            version = next((link.version for link in active if link.version is not None), None)
            bw = links.nvlink_gbps(version, k)
            if bw is None:
                return Expected(None, f"{code} between the pair but no NVLink version in the link facts")
            return Expected(bw * mult, f"{code}: {k} × {links.NVLINK_LINK_GBPS[version]:g} GB/s NVLink {version}"  # type: ignore[index]
                            f"{both} ({links.NVLINK_SOURCE})")
        e = _narrowest_pcie(rig, positions)
        if e.gbps is None:
            return e
        how = "staged through host memory: " if not p2p_enabled else ""
        return Expected(e.gbps * mult, f"{how}{e.source}{both}")

    if kind == "p2p_latency":
        return Expected(None, "no latency figure in the link facts")
    return Expected(None, f"no expectation for kind {kind!r}")
