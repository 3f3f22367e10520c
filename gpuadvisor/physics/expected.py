"""What a measurement should reach, from the rig's link facts (one function: ``expected_bandwidth``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.physics import links

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


def _link_rate(gpu: Gpu, version: int | None) -> float | None:
    """Per-direction GB/s of one NVLink link of this GPU (GA102 bridge links run slower than SXM ones)."""
    return links.nvlink_gbps(version, 1, gpu.name)


def _rate_text(gpu: Gpu, rate: float) -> str:
    """'25 GB/s per direction (source)': the per-link rate and where it comes from."""
    if gpu.name is not None and any(n in gpu.name for n in links.GA102_NAMES):
        return (
            f"{rate:g} GB/s per direction (GA102 NVLink bridge links: RTX A6000 datasheet, 112.5 GB/s both ways "
            "over 4 links; nvidia-smi nvlink -s)"
        )
    return f"{rate:g} GB/s per direction ({links.NVLINK_SOURCE})"


def _nvlink_share(rig: Rig, p: int, positions: list[int]) -> tuple[float, str] | None:
    """What GPU ``p`` can send to the other participants per direction: its active NVLink links that lead to
    them (the NV# counts of the matrix, capped at its active links, so an NVSwitch GPU counts each link once)."""
    gpu = rig.gpus[p]
    active = gpu.active_nvlinks()
    if not active:
        return None
    rates = [_link_rate(gpu, link.version) for link in active]
    if any(r is None for r in rates):
        return None
    rate = sum(r for r in rates if r is not None) / len(active)
    to_peers = sum(_nv_count(rig.topology.matrix[p][q]) or 0 for q in positions if q != p)
    used = min(len(active), to_peers)
    v = "/".join(str(x) for x in sorted({link.version for link in active if link.version is not None}))
    if used == len(active):
        how = f"{used} active NVLink {v} links × {_rate_text(gpu, rate)}"
    else:
        how = (
            f"{used} NVLink {v} links to the other {len(positions) - 1} GPU(s) (of its {len(active)} active) "
            f"× {_rate_text(gpu, rate)}"
        )
    return used * rate, how


def _pcie(gpu: Gpu) -> links.PathLimit | None:
    return links.path_limit(gpu, at_max=True)


def _narrowest_pcie(rig: Rig, positions: list[int], *, line_rate: bool = False) -> Expected:
    """The narrowest PCIe path among the GPUs: × the copy efficiency, or its raw line rate (collectives,
    which the bandwidth rules scale by NCCL's efficiency, as they do NVLink's)."""
    limits = [(rig.gpus[p], _pcie(rig.gpus[p])) for p in positions]
    missing = [g.label for g, lim in limits if lim is None]
    if missing:
        return Expected(None, f"no PCIe link facts for {', '.join(missing)}")
    gpu, lim = min(limits, key=lambda x: x[1].gbps)  # type: ignore[union-attr]
    assert lim is not None
    if line_rate:
        return Expected(lim.gbps, f"{gpu.label}: {lim.describe()} ({links.PCIE_SOURCE})")
    eff = links.PCIE_COPY_EFFICIENCY
    return Expected(lim.gbps * eff, f"{gpu.label}: {lim.describe()} × {eff} copy efficiency ({links.PCIE_SOURCE})")


_LINK_HOPS = ("upstream-port", "endpoint", "bridge", "unknown")  # hops that name the link above them (links.py)


def _max_links(gpu: Gpu) -> list[tuple[str, int, int, float]]:
    """(where, gen, width, GB/s) of each link from the GPU up to its root port, at the maximum the hardware
    allows: the GPU's own link, then each switch or bridge hop (as ``links.path_limit(at_max=True)``)."""
    p = gpu.pcie
    raw = [("GPU link", p.max_gen, p.max_width)]
    raw += [(h.bdf, h.max_gen, h.max_width) for h in p.path[1:] if h.port_type in _LINK_HOPS]
    out = []
    for where, gen, width in raw:
        bw = links.pcie_gbps(gen, width)
        if bw is not None and gen is not None and width is not None:
            out.append((where, gen, width, bw))
    return out


def _shared_pcie(rig: Rig, p: int, together: list[int]) -> Expected:
    """A host<->device copy on GPU ``p`` while every GPU at ``together`` copies too: a link above several of
    them (a switch uplink) gives each its share."""
    gpu = rig.gpus[p]
    own = _max_links(gpu)
    if not own:
        return Expected(None, f"no PCIe link facts for {gpu.label}")
    users: dict[str, list[str]] = {}
    for q in together:
        for where, *_ in _max_links(rig.gpus[q]):
            if where != "GPU link":
                users.setdefault(where, []).append(rig.gpus[q].label)
    best = None
    for where, gen, width, bw in own:
        n = len(users.get(where, [])) if where != "GPU link" else 1
        share = bw / max(1, n)
        if best is None or share < best[0]:
            best = (share, where, gen, width, bw, n)
    assert best is not None
    share, where, gen, width, bw, n = best
    eff = links.PCIE_COPY_EFFICIENCY
    text = f"{gpu.label}: PCIe Gen{gen} x{width} at {where} = {bw:.1f} GB/s per direction"
    if n > 1:
        text += f", shared by the {n} GPUs copying at once behind it ({', '.join(users[where])}): {share:.1f} GB/s each"
    return Expected(share * eff, f"{text} × {eff} copy efficiency ({links.PCIE_SOURCE})")


def _p2p_pcie(rig: Rig, a: int, b: int) -> Expected:
    """A peer copy over PCIe crosses each GPU's links up to the first switch both sit under, not above it."""
    la, lb = _max_links(rig.gpus[a]), _max_links(rig.gpus[b])
    if not la or not lb:
        missing = [rig.gpus[x].label for x, lx in ((a, la), (b, lb)) if not lx]
        return Expected(None, f"no PCIe link facts for {', '.join(missing)}")
    common = {w for w, *_ in la if w != "GPU link"} & {w for w, *_ in lb if w != "GPU link"}
    hops = [(rig.gpus[x], h) for x, lx in ((a, la), (b, lb)) for h in lx if h[0] not in common]
    gpu, (where, gen, width, bw) = min(hops, key=lambda gh: gh[1][3])
    eff = links.PCIE_COPY_EFFICIENCY
    return Expected(
        bw * eff,
        f"{gpu.label}: PCIe Gen{gen} x{width} at {where} = {bw:.1f} GB/s per direction × {eff} "
        f"copy efficiency ({links.PCIE_SOURCE})",
    )


def _p2p_note(rig: Rig, positions: list[int]) -> str:
    """Why a PCIe collective may fall well short of the link figure: no P2P between some of its GPUs."""
    p2p = rig.topology.p2p_read
    if not p2p:
        return ""
    bad = sorted(
        {
            p2p[a][b]
            for a in positions
            for b in positions
            if a != b and a < len(p2p) and b < len(p2p[a]) and p2p[a][b] not in ("OK", "X")
        }
    )
    if not bad:
        return ""
    return (
        f"; P2P reads {'/'.join(bad)} between some of these GPUs (nvidia-smi topo -p2p r): NCCL relays through "
        "host memory, so the PCIe figure is a ceiling it rarely reaches"
    )


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
    together: list[int] | None = None,
) -> Expected:
    """The figure a measurement is judged against, and where it comes from.

    ``gpus`` are ``Gpu.index`` values of ``rig``; ``together`` the GPUs of a host<->device copy run on every GPU
    at once. Link figures come from ``links`` beside this module (per direction, before protocol overhead; PCIe at
    the maximum generation and width the hardware allows, so a downgraded hop shows as a low ratio; NVLink per
    link by version, GA102 bridge links at their own rate). The whole table:

    =============================  ==================  ====================================================
    kind                           condition           expected figure
    =============================  ==================  ====================================================
    all_reduce, all_gather,        world size 1        none: no link is crossed (busbw factor is 0 or 1 of
    reduce_scatter, broadcast                          a local copy)
    (compared with busbw)          gloo on CPUs        none: CPU loopback is not in the link facts
                                   ranks on several    none: the network is not in the link facts
                                   hosts
                                   every pair NV#      smallest per-GPU NVLink figure among the GPUs: its
                                                       links to the other participants (sum of NV#, at most
                                                       its active links) × GB/s per link
                                   otherwise           narrowest PCIe path among the GPUs, line rate
                                                       (noted when P2P is off); the rules scale collectives
                                                       by NCCL's efficiency (links.NCCL_*), as the advisor
    h2d, d2h                       pinned, alone       links.expected_copy_gbps(gpu): narrowest hop × eff.
                                   pinned, all at      narrowest share: a link above k of the GPUs copying
                                   once                at once gives each 1/k; × eff.
                                   pageable            none: staged through a driver buffer, host-bound
    d2d                                                none: device memory bandwidth is not in the facts
    p2p_unidir                     P2P on, pair NV#k   k × GB/s per link of the GPU's NVLink version
                                   P2P on, PCIe        narrowest PCIe link of the two GPUs below the first
                                                       switch they share × efficiency
                                   P2P off             the same PCIe figure (the driver stages the copy
                                                       through host memory: both GPUs' links are crossed)
    p2p_bidir                      as p2p_unidir       2 × the p2p_unidir figure (both directions summed)
    p2p_latency                                        none
    =============================  ==================  ====================================================

    Collective figures are line rates: the bandwidth rules and the advisor scale them by what NCCL reaches
    (``links.NCCL_NVLINK_EFFICIENCY``, ``links.NCCL_PCIE_EFFICIENCY``, ``links.NCCL_NO_P2P_FACTOR``).
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
        codes = [
            rig.topology.matrix[a][b]
            for a in positions
            for b in positions
            if a != b and a < len(rig.topology.matrix) and b < len(rig.topology.matrix[a])
        ]
        if codes and len(codes) == len(positions) * (len(positions) - 1) and all(_nv_count(c) for c in codes):
            totals = [(rig.gpus[p], _nvlink_share(rig, p, positions)) for p in positions]
            missing = [g.label for g, t in totals if t is None]
            if missing:
                return Expected(None, f"every pair is NVLink but {', '.join(missing)} has no NVLink link facts")
            known = [(g, t) for g, t in totals if t is not None]
            gpu, (gbps, how) = min(known, key=lambda x: x[1][0])
            return Expected(gbps, f"{gpu.label}: {how}")
        e = _narrowest_pcie(rig, positions, line_rate=True)
        return Expected(e.gbps, e.source + _p2p_note(rig, positions)) if e.gbps is not None else e

    if kind in ("h2d", "d2h"):
        if memory == "pageable":
            return Expected(None, "pageable memory: staged through a driver buffer, limited by the host")
        positions = _positions(rig, gpus)
        if positions is None:
            return Expected(None, f"no link facts for GPUs {gpus} in this scan")
        if together and len(together) > 1:
            group = _positions(rig, sorted(set(together) | set(gpus)))
            if group is not None:
                return _shared_pcie(rig, positions[0], group)
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
            gpu = rig.gpus[a] if rig.gpus[a].active_nvlinks() else rig.gpus[b]
            version = next((link.version for link in gpu.active_nvlinks() if link.version is not None), None)
            rate = _link_rate(gpu, version)
            if rate is None:
                return Expected(None, f"{code} between the pair but no NVLink version in the link facts")
            return Expected(k * rate * mult, f"{code}: {k} NVLink {version} links{both} × {_rate_text(gpu, rate)}")
        e = _p2p_pcie(rig, a, b) if p2p_enabled else _narrowest_pcie(rig, positions)
        if e.gbps is None:
            return e
        how = "staged through host memory: " if not p2p_enabled else ""
        return Expected(e.gbps * mult, f"{how}{e.source}{both}")

    if kind == "p2p_latency":
        return Expected(None, "no latency figure in the link facts")
    return Expected(None, f"no expectation for kind {kind!r}")
