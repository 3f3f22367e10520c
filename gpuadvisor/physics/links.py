"""Link physics: what a PCIe or NVLink link should carry, and a GPU path's narrowest hop.

Figures are per direction, before protocol overhead, in GB/s (1e9 bytes/s), from the PCI-SIG base specifications
(transfer rate × encoding efficiency) and
NVIDIA's NVLink generation tables. Rules, the benchmarker and the advisor all take their expected figures
from here, so the whole tool agrees on what a link should give.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.facts import Gpu, PcieHop

PCIE_SOURCE = "PCI-SIG base spec: transfer rate × encoding (8b/10b to Gen2, 128b/130b Gen3–5, FLIT Gen6)"
NVLINK_SOURCE = "NVIDIA NVLink generations: 25 GB/s per link per direction (NVLink 2–4), 50 GB/s (NVLink 5)"

# Transfer rate in GT/s by PCIe generation.
PCIE_GT_S: dict[int, float] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

# GB/s per lane per direction by generation (PARALLELISM.md "Links").
PCIE_LANE_GBPS: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.5}

# GB/s per link per direction by NVLink version.
NVLINK_LINK_GBPS: dict[int, float] = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}

# Large pinned host<->device copies reach roughly this fraction of the raw PCIe figure (TLP/DLLP overhead).
# Source: PARALLELISM.md "Links" (80–90% for large pinned copies); we take the middle, 0.85. Measurements on
# real machines refine it: the H100 PCIe 5.0 x16 of this project's fixture measured in benchmarks/device/.
PCIE_COPY_EFFICIENCY = 0.85


# What NCCL collectives reach as busbw, as a fraction of the raw per-direction link figure. One set of numbers
# for the whole tool: the advisor predicts with them, the bandwidth rules judge measurements with them.
# NVLink: NCCL maintainer S. Jeaugey, github.com/NVIDIA/nccl-tests/issues/212: "450GB/s is the line rate. With
# the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s" (370/450 = 0.82).
NCCL_NVLINK_EFFICIENCY = 0.82  # 370 / 450, as quoted
# PCIe with P2P: 24.54 GB/s busbw measured on 6x RTX 4090 over PCIe 4.0 x16 (31.5 GB/s) = 0.78
# (shared/samples/nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt).
NCCL_PCIE_EFFICIENCY = 0.78  # 24.54 / 31.5 = 0.779
# Without peer-to-peer (nvidia-smi topo -p2p NS/CNS/...), NCCL stages every transfer through host memory (SHM
# transport): each byte crosses the root complex twice. Assumed to halve busbw; a measurement refines it.
NCCL_NO_P2P_FACTOR = 0.5


def gen_from_speed(gts: float | None) -> int | None:
    """PCIe generation from a sysfs link speed in GT/s (2.5 -> 1 ... 64 -> 6)."""
    if gts is None:
        return None
    for gen, rate in PCIE_GT_S.items():
        if abs(rate - gts) < 0.01:
            return gen
    return None


def pcie_gbps(gen: int | None, width: int | None) -> float | None:
    """Raw per-direction bandwidth of a PCIe link, GB/s; None if either is unknown."""
    if gen is None or width is None or gen not in PCIE_LANE_GBPS:
        return None
    return PCIE_LANE_GBPS[gen] * width


# GA102 boards (RTX 3090, RTX A6000, A40) run their NVLink 3 bridge links at 14.0625 GB/s per direction
# (112.5 GB/s both ways over 4 links): NVIDIA RTX A6000 datasheet; `nvidia-smi nvlink -s` prints
# "14.062 GB/s" per link (shared/samples/nvlink-s_3xa6000-one-unbridged_siboehm.txt).
GA102_NVLINK_LINK_GBPS = 14.0625
GA102_NAMES = ("RTX 3090", "RTX A6000", "A40", "RTX 3080 Ti")


def nvlink_gbps(version: int | None, links: int, gpu_name: str | None = None) -> float | None:
    """Per-direction NVLink bandwidth of ``links`` links; GA102 bridge links are slower than SXM ones."""
    if gpu_name and any(n in gpu_name for n in GA102_NAMES):
        return GA102_NVLINK_LINK_GBPS * links
    if version is None or version not in NVLINK_LINK_GBPS:
        return None
    return NVLINK_LINK_GBPS[version] * links


@dataclass(frozen=True)
class PathLimit:
    """The narrowest hop on a GPU's way to the CPU."""

    gbps: float
    gen: int
    width: int
    where: str  # the hop's BDF, or "GPU link"
    source: str

    def describe(self) -> str:
        return f"PCIe Gen{self.gen} x{self.width} at {self.where} = {self.gbps:.1f} GB/s per direction"


UPWARD_LINK_TYPES = ("endpoint", "upstream-port", "bridge", "unknown")  # their link register is the link above them


def link_facts(child: PcieHop | None, port: PcieHop | None) -> PcieHop:
    """One link as both ends see it: current state from the child (else the port), maximum = the lower of the two
    ends' maxima (an x16 card in a slot wired x8 can only ever train x8: that is not a downgrade)."""

    def first(*vals: int | None) -> int | None:
        return next((v for v in vals if v is not None), None)

    def lowest(*vals: int | None) -> int | None:
        known = [v for v in vals if v is not None]
        return min(known) if known else None

    c = child or PcieHop()
    p = port or PcieHop()
    return PcieHop(
        bdf=c.bdf or p.bdf,
        port_type=c.port_type,
        current_gen=first(c.current_gen, p.current_gen),
        current_width=first(c.current_width, p.current_width),
        max_gen=lowest(c.max_gen, p.max_gen),
        max_width=lowest(c.max_width, p.max_width),
    )


def link_at(path: list[PcieHop], k: int) -> PcieHop:
    """The link a hop's registers describe, merged with the other end: above it for an endpoint or a switch
    upstream port, below it (its child, ``path[k - 1]``) for a root port or a switch downstream port."""
    hop = path[k]
    if hop.port_type in UPWARD_LINK_TYPES:
        return link_facts(hop, path[k + 1] if k + 1 < len(path) else None)
    return link_facts(path[k - 1] if k > 0 else None, hop)


def nvml_hop(gpu: Gpu) -> PcieHop:
    """The GPU's link as NVML reports it (current and maximum generation and width), as a hop of its own."""
    p = gpu.pcie
    return PcieHop(
        bdf=gpu.bus_id or "",
        port_type="endpoint",
        current_gen=p.current_gen,
        max_gen=p.max_gen,
        current_width=p.current_width,
        max_width=p.max_width,
    )


def gpu_link(gpu: Gpu) -> PcieHop:
    """The GPU's own link: sysfs (``path[0]``) completed by NVML, merged with the port above it."""
    p = gpu.pcie
    nvml = nvml_hop(gpu)
    own = link_facts(nvml, p.path[0] if p.path else None) if p.path else nvml
    own.bdf = "GPU link"
    return link_facts(own, p.path[1] if len(p.path) > 1 else None)


def path_links(gpu: Gpu) -> list[PcieHop]:
    """Each distinct link from the GPU up to its root port (the GPU's own first), as both ends see it."""
    out = [gpu_link(gpu)]
    path = gpu.pcie.path
    out += [
        link_at(path, k) for k in range(1, len(path)) if path[k].port_type in ("upstream-port", "bridge", "unknown")
    ]
    return out


def path_limit(gpu: Gpu, *, at_max: bool = False) -> PathLimit | None:
    """The narrowest hop of the GPU's path (current link state, or the maximum the hardware allows).

    ``at_max`` uses the maximum generation and width of each link (the lower of its two ends): what the path
    would give if nothing were downgraded. Generation drops at idle (power saving) make current figures low
    on an idle GPU; callers that judge a benchmark should use the current state measured under load.
    """
    best: PathLimit | None = None
    for link in path_links(gpu):
        gen, width = (link.max_gen, link.max_width) if at_max else (link.current_gen, link.current_width)
        bw = pcie_gbps(gen, width)
        if bw is None or gen is None or width is None:
            continue
        if best is None or bw < best.gbps:
            best = PathLimit(gbps=bw, gen=gen, width=width, where=link.bdf, source=PCIE_SOURCE)
    return best


def expected_copy_gbps(gpu: Gpu, *, at_max: bool = True) -> tuple[float, str] | None:
    """What a large pinned host<->device copy should reach on this GPU's path, and how that was derived."""
    lim = path_limit(gpu, at_max=at_max)
    if lim is None:
        return None
    return (
        lim.gbps * PCIE_COPY_EFFICIENCY,
        f"{lim.describe()} × {PCIE_COPY_EFFICIENCY} copy efficiency ({PCIE_SOURCE})",
    )


def hop_is_downgraded(hop: PcieHop) -> tuple[bool, bool]:
    """(width below max, generation below max) for one hop; unknowns count as not downgraded."""
    width = hop.current_width is not None and hop.max_width is not None and hop.current_width < hop.max_width
    gen = hop.current_gen is not None and hop.max_gen is not None and hop.current_gen < hop.max_gen
    return width, gen
