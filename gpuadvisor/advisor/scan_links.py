"""What a scan says of its GPUs' links, for the advisor's view of the rig (rigview.from_rig): the NVLink matrix
(the topology matrix's NV# codes, or what a measurement or the catalog establishes without one), the NVLink version,
the slowest GPU's PCIe path, and the measured all-reduce and peer-to-peer copies."""

from __future__ import annotations

import re

from gpuadvisor import catalog
from gpuadvisor.facts import Gpu, Measurement, Rig
from gpuadvisor.physics import links

NV_RE = re.compile(r"^NV(\d+)$")


def nv_matrix(rig: Rig) -> list[list[int]]:
    n = len(rig.gpus)
    mat = rig.topology.matrix
    out = [[0] * n for _ in range(n)]
    if mat and len(mat) == n:
        for i in range(n):
            for j in range(n):
                m = NV_RE.match(str(mat[i][j]) if j < len(mat[i]) else "")
                if m and i != j:
                    out[i][j] = int(m.group(1))
    return out


def nvlink_version(gpus: list[Gpu], spec: catalog.GpuSpec | None) -> int | None:
    for g in gpus:
        for link in g.nvlinks:
            if link.active and link.version:
                return link.version
    return spec.nvlink_version if spec else None


def pcie_path(gpus: list[Gpu], spec: catalog.GpuSpec | None) -> tuple[float | None, str]:
    """Slowest GPU's PCIe path per direction: maximum generation (idle GPUs drop their generation to save
    power) and current width (a card trained at x8 stays at x8 under load)."""
    worst: tuple[float, str] | None = None
    for g in gpus:
        cur = links.path_limit(g)
        mx = links.path_limit(g, at_max=True)
        if cur is None and mx is None:
            continue
        gen = (mx or cur).gen  # type: ignore[union-attr]
        width = min(x.width for x in (cur, mx) if x is not None)
        bw = links.pcie_gbps(gen, width)
        if bw is None:
            continue
        where = (cur if cur and cur.width == width else mx).where  # type: ignore[union-attr]
        desc = f"PCIe Gen{gen} x{width} ({g.label}, {where}) = {bw:.1f} GB/s per direction"
        if worst is None or bw < worst[0]:
            worst = (bw, desc)
    if worst:
        return worst
    if spec and spec.pcie_gen:
        bw = links.pcie_gbps(spec.pcie_gen, 16)
        return (
            bw,
            f"PCIe Gen{spec.pcie_gen} x16 from the catalog (no PCIe facts in the scan) = {bw:.1f} GB/s per direction",
        )
    return None, "no PCIe facts"


def measured_all_reduce(rig: Rig) -> Measurement | None:
    best: Measurement | None = None
    for m in rig.measurements:
        if m.kind != "all_reduce" or m.status not in ("ok", "partial") or not m.value_gbps:
            continue
        if m.backend == "gloo":
            continue  # a CPU run says nothing about the GPUs' links
        if best is None or (m.world_size or 0) > (best.world_size or 0):
            best = m
    return best


def measured_p2p(rig: Rig, nv: list[list[int]]) -> tuple[float, str] | None:
    """The slowest GPU pair's measured one-way copy (the better of P2P on and off: what the pair gets) over
    PCIe (pairs without NVLink), when the scan holds one (p2pBandwidthLatencyTest, gpuadvisor bench)."""
    pos = {g.index: i for i, g in enumerate(rig.gpus)}
    best: dict[tuple[int, int], Measurement] = {}
    for m in rig.measurements:
        if m.kind != "p2p_unidir" or len(m.gpus) != 2 or not m.value_gbps or m.status not in ("ok", "partial"):
            continue
        a, b = (pos.get(x) for x in m.gpus)
        if a is None or b is None or (nv and nv[a][b] > 0):
            continue
        key = (min(a, b), max(a, b))
        if key not in best or m.value_gbps > (best[key].value_gbps or 0.0):
            best[key] = m
    if not best:
        return None
    m = min(best.values(), key=lambda x: x.value_gbps or 0.0)
    return m.value_gbps or 0.0, (
        f"measured: GPU {m.gpus[0]} -> GPU {m.gpus[1]} copy {m.value_gbps:.1f} GB/s "
        f"per direction ({m.method or m.backend}; the slowest pair) over PCIe"
    )


def source_words(rig: Rig) -> str:
    files = ", ".join(rig.source.files[:3]) if rig.source.files else rig.source.kind
    return f"the scan was made from {files}, which names no GPU model: a topology matrix alone, say"


def matrix_absent(rig: Rig) -> bool:
    n = len(rig.gpus)
    m = rig.topology.matrix
    return len(m) < n or any(len(row) < n for row in m)


def nv_without_topology(
    rig: Rig, gpus: list[Gpu], spec: catalog.GpuSpec | None, measured: Measurement | None
) -> tuple[list[list[int]], str | None]:
    """An NVLink matrix for a scan without a topology matrix, from what is known: a measured all-reduce whose
    busbw no PCIe link could carry (NVLink between the measured GPUs), else the catalog (an SXM part is wired to
    its NVLink fabric: groups of its usual NVLink domain). Bridged PCIe cards may or may not have their bridges:
    nothing is assumed for them. Returns the matrix and the words saying what it rests on."""
    n = len(rig.gpus)
    nv = [[0] * n for _ in range(n)]
    per_pair = spec.nvlink_links if spec and spec.nvlink_links else 1
    if measured is not None and measured.value_gbps:
        gen = spec.pcie_gen if spec and spec.pcie_gen else 5
        pcie_max = links.pcie_gbps(gen, 16) or 0.0
        pos = {g.index: i for i, g in enumerate(rig.gpus)}
        mg = [pos[i] for i in measured.gpus if i in pos]
        if measured.value_gbps > pcie_max and len(mg) > 1:
            for a in mg:
                for b in mg:
                    if a != b:
                        nv[a][b] = per_pair
            return nv, (
                f"NVLink established by measurement: all-reduce busbw {measured.value_gbps:g} GB/s over "
                f"{measured.world_size or len(mg)} ranks is more "
                f"than PCIe Gen{gen} x16 carries ({pcie_max:.1f} GB/s per direction), so these GPUs are joined by "
                "NVLink (the scan has no topology matrix)"
            )
    if spec is not None and spec.form_factor == "sxm" and spec.nvlink_links and spec.nvlink_domain > 1:
        d = min(spec.nvlink_domain, n)
        for a in range(n):
            for b in range(n):
                if a != b and a // d == b // d:
                    nv[a][b] = spec.nvlink_links
        return nv, (
            f"assumed from the catalog: the {spec.name} is an SXM part wired to NVLink ({spec.nvlink_links} links; "
            f"{spec.nvlink_links_source or spec.source}), NVLink groups of {d} as in its usual system "
            "(the scan has no topology matrix)"
        )
    return nv, None
