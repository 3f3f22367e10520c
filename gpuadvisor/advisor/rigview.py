"""What the advisor needs to know about a rig, from a scan (facts) or from the catalog (a planned rig).

GPU memory, the datasheet peak, the NVLink domain (GPUs whose every pair is joined by NVLink, from the
topology matrix's NV# codes), and the all-reduce bus bandwidth: measured when the scan has an all_reduce
measurement, expected from the link facts (gpuadvisor.physics.links) otherwise; each figure says which.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from gpuadvisor import catalog
from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import network
from gpuadvisor.advisor import scan_links as L
from gpuadvisor.advisor.network import Network
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Gpu, Measurement, Rig
from gpuadvisor.physics import links, plateau
from gpuadvisor.text import plural

P2P_OK = {"OK", "X"}
# What a precision the GPU lacks runs at: FP8 falls back to BF16 (Transformer Engine off); BF16 on Volta is
# emulated at roughly the FP32 rate.
PEAK_FALLBACK = {"fp8": ("bf16", "fp16", "fp32"), "bf16": ("fp32",), "fp16": ("fp32",), "tf32": ("fp32",)}


@dataclass(frozen=True)
class Bandwidth:
    gbps: float
    source: str
    measured: bool = False


@dataclass
class RigView:
    label: str
    gpu_name: str
    spec: catalog.GpuSpec | None
    gpus_per_node: int
    nodes: int
    memory_bytes: int  # per GPU (the smallest, if they differ)
    memory_source: str
    host_memory_bytes: int | None  # per node
    nv_matrix: list[list[int]]  # NVLink links between GPU i and j (0: none)
    nvlink_pair_gbps: float | None  # per direction, one NV link bundle between a pair (smallest)
    nvlink_source: str
    pcie_gbps: float | None  # per direction, slowest GPU's PCIe path (max generation, current width)
    pcie_source: str
    p2p_ok: bool
    measured_all_reduce: Measurement | None
    inter_node: Bandwidth
    hypothetical: bool = False
    network: Network | None = None  # the fabric and rails across nodes, where given or read (advisor.network)
    notes: list[str] = field(default_factory=list)

    # -- sizes ----------------------------------------------------------------------------------------
    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def nvlink_groups_of(self, t: int) -> bool:
        """Whether the node's GPUs split into groups of t whose every pair is joined by NVLink."""
        n = self.gpus_per_node
        if t == 1:
            return True
        if n % t:
            return False
        return _partition_cliques(list(range(n)), t, self.nv_matrix)

    def nvlink_domain(self) -> int:
        """The largest power-of-two group size the node splits into all-NVLink groups of (1: no NVLink)."""
        best = 1
        t = 2
        while t <= self.gpus_per_node:
            if self.nvlink_groups_of(t):
                best = t
            t *= 2
        return best

    def all_nvlink(self) -> bool:
        n = self.gpus_per_node
        return n > 1 and all(self.nv_matrix[i][j] > 0 for i in range(n) for j in range(n) if i != j)

    def nvlink_ring(self) -> bool:
        """NCCL can ring all the node's GPUs over NVLink: every pair joined, or a connected NVLink graph in
        which every GPU has at least two NVLink neighbours (a hybrid cube mesh)."""
        n = self.gpus_per_node
        if n < 2:
            return False
        if self.all_nvlink():
            return True
        if n == 2:
            return self.nv_matrix[0][1] > 0
        degree_ok = all(sum(1 for j in range(n) if j != i and self.nv_matrix[i][j] > 0) >= 2 for i in range(n))
        return degree_ok and _connected(n, self.nv_matrix)

    @property
    def reserved_bytes(self) -> int:
        """Framebuffer the driver keeps from CUDA (nvidia-smi -q "Reserved"): the catalog's figure for this GPU
        where a real output gives it, else constants.DRIVER_RESERVED_BYTES."""
        if self.spec is not None and self.spec.reserved_mib:
            return self.spec.reserved_mib * 2**20
        return C.DRIVER_RESERVED_BYTES

    @property
    def cuda_memory_bytes(self) -> int:
        """What torch.cuda.mem_get_info() reports as total: NVML's total less the driver's reservation."""
        return self.memory_bytes - self.reserved_bytes

    # -- compute --------------------------------------------------------------------------------------
    def peak_tflops(self, precision: str) -> tuple[float | None, str]:
        """Dense datasheet peak for the precision, and where it comes from (None when unknown)."""
        if self.spec is None:
            return None, f"{self.gpu_name} is not in the GPU catalog: no datasheet peak, so no time predictions"
        value = self.spec.peak_tflops(precision)
        if value is not None:
            return (
                value,
                f"{self.spec.name} datasheet dense {precision.upper()} peak {value:g} TFLOP/s ({self.spec.source})",
            )
        for fallback in PEAK_FALLBACK.get(precision, ("fp32",)):
            value = self.spec.peak_tflops(fallback)
            if value is not None:
                return value, (
                    f"{self.spec.name} has no {precision.upper()} support in its datasheet: compute timed at its "
                    f"{fallback.upper()} peak {value:g} TFLOP/s ({self.spec.source})"
                )
        return None, f"{self.spec.name}: no datasheet peak for {precision.upper()}"

    # -- bandwidth ------------------------------------------------------------------------------------
    def intra_busbw(self, n: int, nvlink: bool) -> Bandwidth:
        """All-reduce busbw for a group of n GPUs inside one node: measured, or expected from the links."""
        m = self.measured_all_reduce
        if m is not None and m.value_gbps:
            ws = m.world_size or len(m.gpus) or self.gpus_per_node
            note = "" if ws == n else f" (measured over {ws} GPUs, used for groups of {n})"
            p = plateau.find(m.rows, "nvlink" if nvlink else "pcie")
            if p.reached and p.gbps:
                return Bandwidth(
                    p.gbps,
                    f"measured all_reduce busbw {p.gbps:.1f} GB/s ({m.backend or 'nccl'}; its plateau, "
                    f"{plateau.fmt_bytes(p.first_bytes or 0)} to {plateau.fmt_bytes(p.last_bytes or 0)}){note}",
                    True,
                )
            return Bandwidth(
                m.value_gbps,
                f"measured all_reduce busbw {m.value_gbps:.1f} GB/s ({m.backend or 'nccl'}) at its largest "
                f"size, before its plateau ({p.why}): a lower bound{note}",
                True,
            )
        if nvlink and self.nvlink_pair_gbps:
            bw = self.nvlink_pair_gbps * C.NVLINK_BUSBW_EFFICIENCY
            return Bandwidth(
                bw,
                f"expected: {self.nvlink_source} × {C.NVLINK_BUSBW_EFFICIENCY:g} NCCL efficiency (370/450, "
                f"nccl-tests#212) = {bw:.0f} GB/s busbw",
            )
        if self.pcie_gbps:
            # a copy measured in this scan already went the way it goes (staged or not)
            staged = not self.p2p_ok and not self.pcie_source.startswith("measured")
            bw = self.pcie_gbps * C.PCIE_BUSBW_EFFICIENCY * (C.NO_P2P_FACTOR if staged else 1)
            p2p = f" × {C.NO_P2P_FACTOR} (no peer-to-peer: staged through host memory, assumed)" if staged else ""
            lead = "from a copy measured in this scan" if self.pcie_source.startswith("measured") else "expected"
            link = self.pcie_source.removeprefix("measured: ")
            return Bandwidth(
                bw,
                f"{lead}: {link} × {C.PCIE_BUSBW_EFFICIENCY:.2f} "
                f"(nccl-tests busbw/link on 6x RTX 4090 PCIe 4.0){p2p} = {bw:.1f} GB/s busbw",
            )
        return Bandwidth(1.0, "unknown: no link facts and no measurement; 1 GB/s assumed")

    def dp_busbw(self, dp_per_node: int, spans_nodes: bool) -> Bandwidth:
        """Busbw of the data-parallel group: inside the node (NVLink ring if it exists), capped by the
        inter-node figure when the group spans nodes."""
        intra = self.intra_busbw(dp_per_node, nvlink=self.nvlink_ring() and dp_per_node > 1)
        if not spans_nodes:
            return intra
        if dp_per_node <= 1 or self.inter_node.gbps < intra.gbps:
            return self.inter_node
        return intra


def _connected(n: int, nv: list[list[int]]) -> bool:
    seen = {0}
    stack = [0]
    while stack:
        i = stack.pop()
        for j in range(n):
            if j not in seen and nv[i][j] > 0:
                seen.add(j)
                stack.append(j)
    return len(seen) == n


def _partition_cliques(remaining: list[int], t: int, nv: list[list[int]]) -> bool:
    if not remaining:
        return True
    first, rest = remaining[0], remaining[1:]
    for others in itertools.combinations(rest, t - 1):
        group = (first, *others)
        if all(nv[a][b] > 0 for a, b in itertools.combinations(group, 2)):
            left = [g for g in rest if g not in others]
            if _partition_cliques(left, t, nv):
                return True
    return False


def inter_node_bandwidth(
    gbps: float | None, rig: Rig | None = None, gpus_per_node: int = 0, network: Network | None = None
) -> Bandwidth:
    if gbps:
        return Bandwidth(gbps, f"given: {gbps:g} GB/s all-reduce busbw across nodes (--inter-node-gbps)")
    if network is not None and gpus_per_node > 0:
        return Bandwidth(network.per_gpu_busbw(gpus_per_node), network.describe(gpus_per_node))
    read = _port_bandwidth(rig, gpus_per_node) if rig is not None else None
    if read is not None:
        return read
    return Bandwidth(
        C.DEFAULT_INTER_NODE_GBPS,
        f"assumed: {C.DEFAULT_INTER_NODE_GBPS:g} GB/s busbw across nodes (one 200 Gb/s port per GPU); pass "
        "--network or --inter-node-gbps",
    )


def port_network(rig: Rig) -> Network | None:
    """The network of the scan's active RDMA ports (their rates and link layer), or None without any."""
    ports = [p for p in rig.network.rdma_ports or [] if p.state == "ACTIVE" and p.rate_gbps]
    if not ports:
        return None
    how = "read" if rig.source.kind in ("live", "imported", "saved") else rig.source.kind
    return network.from_ports(
        [p.rate_gbps or 0.0 for p in ports], ports[0].link_layer, f"{how}: {len(ports)} active RDMA port(s)"
    )


def _port_bandwidth(rig: Rig, gpus_per_node: int) -> Bandwidth | None:
    """Across nodes from the RDMA ports the scan read: the active ports' rates over the node's GPUs, on the same
    footing as the default (one 200 Gb/s port per GPU = 25 GB/s)."""
    ports = [p for p in rig.network.rdma_ports or [] if p.state == "ACTIVE" and p.rate_gbps]
    if not ports or gpus_per_node <= 0:
        return None
    total = sum(p.rate_gbps or 0.0 for p in ports)
    per_gpu = total / 8 / gpus_per_node
    how = "read" if rig.source.kind in ("live", "imported", "saved") else rig.source.kind
    return Bandwidth(
        per_gpu,
        f"{how}: {len(ports)} active RDMA port(s), {total:g} Gb/s per node = "
        f"{total / 8:g} GB/s, {per_gpu:.1f} GB/s per GPU of {gpus_per_node} (port rates "
        "of this scan); pass --inter-node-gbps with a measured figure",
    )


def from_rig(
    rig: Rig, *, nodes: int = 1, inter_node_gbps: float | None = None, network: Network | None = None
) -> RigView:
    """The advisor's view of a scanned (or simulated, or imported) rig; ``nodes`` copies of it."""
    gpus = [g for g in rig.gpus if g.memory_total_bytes or g.name]
    if rig.gpus and not gpus:
        raise InputError(
            f"the scan has {plural(len(rig.gpus), 'GPU')} but neither their model nor their memory "
            f"({L.source_words(rig)}): add nvidia-smi or nvidia-smi -q output of the same machine to the import, "
            "or plan with --simulate"
        )
    if not gpus:
        raise InputError(
            "the rig has no GPUs to advise on (this machine shows none): try --simulate dgx-h100, or --from a saved "
            "scan"
        )
    mig = [g for g in gpus if g.mig_mode]
    names = sorted({g.name or "unknown GPU" for g in gpus})
    notes: list[str] = []
    if len(names) > 1:
        notes.append(
            f"mixed GPUs ({', '.join(names)}): a data-parallel group runs at the slowest card's pace; sized for the "
            "smallest"
        )
    specs = [catalog.find_gpu(g.name) for g in gpus]
    known = [s for s in specs if s is not None]
    spec = min(known, key=lambda s: s.tflops.get("bf16") or s.tflops.get("fp32") or 0) if known else None
    mems = [g.memory_total_bytes for g in gpus if g.memory_total_bytes]
    if mig:
        return _mig_view(rig, gpus, mig, names, spec, nodes, inter_node_gbps)
    if mems:
        memory = min(mems)
        memory_source = "NVML memory total of the scanned GPUs" + (" (the smallest)" if len(set(mems)) > 1 else "")
    elif spec:
        memory = spec.memory_bytes
        memory_source = f"from the catalog: {spec.name}, {spec.memory_source}"
        notes.append(
            f"assumed: GPU memory is not in the scan; {spec.memory_mib} MiB per GPU from the catalog's {spec.name} "
            f"(the scan names the GPU '{names[0]}')"
        )
    else:
        raise InputError(
            f"the scan has no memory size for its GPUs ({', '.join(names)}) and they are not in the catalog: cannot "
            "size anything"
        )
    nv = L.nv_matrix(rig)
    measured = L.measured_all_reduce(rig)
    nv_assumed = None
    if len(gpus) > 1 and not any(any(row) for row in nv) and L.matrix_absent(rig):
        nv, nv_assumed = L.nv_without_topology(rig, gpus, spec, measured)
    version = L.nvlink_version(gpus, spec)
    pair_links = [nv[i][j] for i in range(len(nv)) for j in range(len(nv)) if i != j and nv[i][j] > 0]
    nvlink_pair = None
    nvlink_source = "no NVLink between the GPUs (topology matrix shows no NV#)"
    if pair_links:
        fewest = min(pair_links)
        raw = links.nvlink_gbps(version, fewest)
        if raw is not None:
            nvlink_pair = raw
            nvlink_source = (
                f"NV{fewest} × {links.NVLINK_LINK_GBPS.get(version or 0, raw / fewest):g} GB/s (NVLink {version}) = "
                f"{raw:g} GB/s per direction"
            )
            if spec and spec.nvlink_gbps_per_direction and spec.nvlink_gbps_per_direction < raw:
                nvlink_pair = spec.nvlink_gbps_per_direction
                nvlink_source = (
                    f"NV{fewest}, capped at the {spec.name}'s datasheet {spec.nvlink_gbps_per_direction:g} GB/s per "
                    "direction "
                    f"(NVLink {version}'s per-link rate would give {raw:g})"
                )
        else:
            nvlink_source = f"NV{fewest} links of unknown NVLink version"
        if nv_assumed:
            nvlink_source = f"{nv_assumed}; {nvlink_source}"
            notes.append(nv_assumed)
    pcie_bw, pcie_src = L.pcie_path(gpus, spec)
    measured_p2p = L.measured_p2p(rig, nv)
    if measured_p2p is not None:  # a GPU-to-GPU copy measured in the same scan beats a figure from the links
        pcie_bw, pcie_src = measured_p2p
    p2p = rig.topology.p2p_read
    p2p_ok = True
    if p2p:
        p2p_ok = (
            all(str(c) in P2P_OK for i, row in enumerate(p2p) for j, c in enumerate(row) if i != j and nv[i][j] == 0)
            if nv
            else True
        )
    if len(gpus) > 1 and not rig.topology.matrix and not nv_assumed:
        notes.append("the scan has no GPU topology matrix: no NVLink assumed, so no tensor parallelism is proposed")
    host_mem = rig.host.memory_total_bytes
    label = f"{len(gpus)}x {names[0] if len(names) == 1 else 'mixed GPUs'}"
    if rig.source.preset:
        label += f" ({rig.source.preset}, {rig.source.kind})"
    if nodes > 1:
        label = f"{nodes} nodes of {label}"
    return RigView(
        label=label,
        gpu_name=names[0],
        spec=spec,
        gpus_per_node=len(gpus),
        nodes=nodes,
        memory_bytes=memory,
        memory_source=memory_source,
        host_memory_bytes=host_mem,
        nv_matrix=nv,
        nvlink_pair_gbps=nvlink_pair,
        nvlink_source=nvlink_source,
        pcie_gbps=pcie_bw,
        pcie_source=pcie_src,
        p2p_ok=p2p_ok,
        measured_all_reduce=measured,
        inter_node=inter_node_bandwidth(inter_node_gbps, rig, len(gpus), network),
        notes=notes,
        network=network or port_network(rig),
    )


def _mig_view(
    rig: Rig,
    gpus: list[Gpu],
    mig: list[Gpu],
    names: list[str],
    spec: catalog.GpuSpec | None,
    nodes: int,
    inter_node_gbps: float | None,
) -> RigView:
    """A rig whose GPUs run MIG: each MIG instance is what a process gets (its own memory slice, no NVLink or
    peer-to-peer between instances), so that is what is sized; unknown instance memory is refused, never
    replaced by the whole GPU's."""
    sizes = [s for g in mig for s in (g.mig_instances_memory_bytes or [])]
    unknown = [g for g in mig if not g.mig_instances_memory_bytes]
    if unknown or not sizes:
        g = (unknown or mig)[0]
        why = g.why("mig_instances_memory_bytes") or "not recorded in this scan"
        raise InputError(
            f"{g.label} has MIG enabled: a process gets one MIG instance, not the whole GPU, and this scan does not "
            "give the "
            f"instances' memory ({why}); import nvidia-smi -q -x of the machine (it lists mig_devices), or disable MIG "
            "(nvidia-smi -i N -mig 0) for training"
        )
    memory = min(sizes)
    notes = [
        f"MIG is enabled on {', '.join(g.label for g in mig)}: sized per MIG instance "
        f"({plural(len(sizes), 'instance')}, the "
        "smallest "
        f"{memory / 2**30:.1f} GiB from nvidia-smi's MIG device memory), not as whole GPUs; MIG instances have no "
        "NVLink or "
        "peer-to-peer between them (NVIDIA MIG User Guide)"
    ]
    if spec is not None:
        notes.append(
            f"assumed: compute timed at the whole {spec.name}'s datasheet peak; a MIG instance has a fraction of its "
            "SMs, "
            "so real step times are longer in proportion"
        )
    n = len(sizes)
    label = f"{n}x MIG instance of {names[0]}"
    return RigView(
        label=label,
        gpu_name=names[0],
        spec=spec,
        gpus_per_node=n,
        nodes=nodes,
        memory_bytes=memory,
        memory_source="nvidia-smi MIG device memory (the smallest instance)",
        host_memory_bytes=rig.host.memory_total_bytes,
        nv_matrix=[[0] * n for _ in range(n)],
        nvlink_pair_gbps=None,
        nvlink_source="no NVLink between MIG instances (NVIDIA MIG User Guide)",
        pcie_gbps=None,
        pcie_source="MIG instances: no peer-to-peer",
        p2p_ok=False,
        measured_all_reduce=None,
        inter_node=inter_node_bandwidth(inter_node_gbps),
        notes=notes,
    )


def hypothetical(
    spec: catalog.GpuSpec,
    gpus_per_node: int,
    nodes: int = 1,
    inter_node_gbps: float | None = None,
    *,
    nvlink: bool = True,
    network: Network | None = None,
) -> RigView:
    """A planned rig of catalog GPUs: NVLink joins groups of the product's usual domain size (none with
    ``nvlink=False``: cards that can take a bridge but have none)."""
    n = gpus_per_node
    domain = min(spec.nvlink_domain, n) if nvlink else 1
    nv = [[0] * n for _ in range(n)]
    if domain > 1 and spec.nvlink_links:
        for i in range(n):
            for j in range(n):
                if i != j and i // domain == j // domain:
                    nv[i][j] = spec.nvlink_links
    pcie = links.pcie_gbps(spec.pcie_gen, 16) if spec.pcie_gen else None
    label = f"{n}x {spec.name}" + (f" × {nodes} nodes" if nodes > 1 else "")
    return RigView(
        label=label,
        gpu_name=spec.name,
        spec=spec,
        gpus_per_node=n,
        nodes=nodes,
        memory_bytes=spec.memory_bytes,
        memory_source=f"catalog: {spec.memory_source}",
        host_memory_bytes=None,
        nv_matrix=nv,
        nvlink_pair_gbps=spec.nvlink_gbps_per_direction if domain > 1 else None,
        nvlink_source=f"{spec.name} datasheet NVLink {spec.nvlink_gbps_per_direction:g} GB/s per direction"
        if domain > 1
        else "no NVLink",
        pcie_gbps=pcie,
        pcie_source=f"PCIe Gen{spec.pcie_gen} x16 (catalog)" if pcie else "unknown",
        p2p_ok=True,
        measured_all_reduce=None,
        inter_node=inter_node_bandwidth(inter_node_gbps, None, n, network),
        hypothetical=True,
        network=network,
    )
