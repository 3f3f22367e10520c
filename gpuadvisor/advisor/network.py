"""The network between nodes, and what the collectives that cross it cost and expose.

A network is a fabric (InfiniBand, RoCE, Ethernet), a number of rails (NICs per node) and a rate per rail:
``--network ib:8x400`` (eight 400 Gb/s InfiniBand rails), read from the scan's RDMA ports, or the assumed default
(one 200 Gb/s port per GPU). Each GPU drives its share of the node's rails (NCCL maps one channel to one NIC).

A collective across nodes runs hierarchically, as NCCL's rings and trees do: the GPUs of a node reduce-scatter over
NVLink, each GPU then all-reduces its 1/g shard with its counterparts on the other nodes over its own rail share,
and the node all-gathers the result. Its time is the bytes over the rail bandwidth (the fabric's NCCL efficiency,
lowered by a scale term that grows with the number of nodes: switch hops, ECMP collisions and the slowest of more
links, fitted as FitParams.network_scale), plus a latency per bucket and ring step (NCCL's tuning model; the
fabric's per-hop latency).

What a step sees of it: a collective split into k buckets, released evenly through the backward pass and run one
after the other, ends max(c / k, c − backward · (k − 1) / k) after the backward (the last bucket, or what outlasts
the backward); more buckets hide more but pay their latency each. XLA's data-parallel all-reduce across nodes
(MaxText's dcn_data_parallelism) runs as a few large combined collectives after the gradients are complete:
FitParams.xla_cross_node_overlap is the share of it that its latency-hiding scheduler overlaps (fitted on MaxText's
published multi-node runs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpuadvisor.advisor import constants as C
from gpuadvisor.advisor import fitted
from gpuadvisor.advisor import formulas as F
from gpuadvisor.errors import InputError


@dataclass(frozen=True)
class Fabric:
    name: str
    efficiency: float  # NCCL busbw over the raw rail rate
    hop_latency_s: float  # per ring step across the network
    source: str


FABRICS = {
    "ib": Fabric(
        "InfiniBand",
        0.92,
        C.NCCL_STEP_LATENCY_S["net"],
        "NCCL busbw about 92 % of the rail rate over InfiniBand (assumed, nccl-tests on NDR); 6.6 µs per ring step "
        "(NCCL's tuning.cc)",
    ),
    "roce": Fabric(
        "RoCE",
        0.85,
        10e-6,
        "RoCE: 85 % of the rail rate and 10 µs per ring step (assumed: lossless Ethernet with PFC/ECN)",
    ),
    "ethernet": Fabric(
        "Ethernet (TCP, GPUDirect-TCPX)",
        0.70,
        30e-6,
        "Ethernet without RDMA: 70 % of the rail rate and 30 µs per ring step (assumed: NCCL's socket or TCPX "
        "transport)",
    ),
}
ALIASES = {"infiniband": "ib", "eth": "ethernet", "tcp": "ethernet", "tcpx": "ethernet"}
_SPEC = re.compile(r"^(?P<fabric>[a-z]+):(?:(?P<rails>\d+)x)?(?P<gbps>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class Network:
    """The network between nodes: ``rails`` NICs of ``gbps`` Gb/s each per node, on one fabric."""

    fabric: str  # a key of FABRICS
    rails: int
    gbps: float  # per rail, Gb/s
    source: str

    @property
    def kind(self) -> Fabric:
        return FABRICS[self.fabric]

    def per_gpu_busbw(self, gpus_per_node: int) -> float:
        """GB/s of busbw each GPU gets across nodes: its share of the node's rails at the fabric's efficiency."""
        return self.rails * self.gbps / 8 / max(1, gpus_per_node) * self.kind.efficiency

    def describe(self, gpus_per_node: int) -> str:
        return (
            f"{self.kind.name} {self.rails}x {self.gbps:g} Gb/s per node ({self.source}) = "
            f"{self.per_gpu_busbw(gpus_per_node):.1f} GB/s busbw per GPU of {gpus_per_node} ({self.kind.source})"
        )


def parse(text: str) -> Network:
    """``ib:8x400`` | ``roce:4x200`` | ``ethernet:2x100`` | ``ib:400`` (one rail); bad input: InputError."""
    m = _SPEC.match(text.strip().lower())
    fabric = ALIASES.get(m.group("fabric"), m.group("fabric")) if m else ""
    if m is None or fabric not in FABRICS or float(m.group("gbps")) <= 0 or int(m.group("rails") or 1) < 1:
        raise InputError(
            f"--network {text!r}: give FABRIC:RAILSxGBPS, the fabric one of ib, roce, ethernet (e.g. ib:8x400 for "
            "eight 400 Gb/s InfiniBand rails per node)"
        )
    return Network(fabric, int(m.group("rails") or 1), float(m.group("gbps")), "given: --network")


def from_ports(rates_gbps: list[float], link_layer: str | None, source: str) -> Network:
    """The network of a scan's active RDMA ports: InfiniBand or RoCE by their link layer."""
    fabric = "roce" if (link_layer or "").lower() == "ethernet" else "ib"
    mean = sum(rates_gbps) / len(rates_gbps)
    return Network(fabric, len(rates_gbps), mean, source)


def scale(nodes: int) -> float:
    """The share of the fabric's busbw a collective over ``nodes`` keeps (1 on one or two nodes' single hop)."""
    if nodes <= 2:
        return 1.0
    return 1 / (1 + fitted.current().network_scale * math.log2(nodes / 2))


def latency(collective: str, n: int, fabric: Fabric | None) -> float:
    """One collective's latency over ``n`` nodes: NCCL's base latency plus its ring steps at the fabric's hop."""
    if n <= 1:
        return 0.0
    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    hop = fabric.hop_latency_s if fabric else C.NCCL_STEP_LATENCY_S["net"]
    return C.NCCL_BASE_LATENCY_S + steps * hop


def cross_seconds(
    collective: str, size_bytes: float, nodes: int, gbps: float, *, buckets: int = 1, fabric: Fabric | None = None
) -> float:
    """Seconds of a collective of ``size_bytes`` per GPU across ``nodes``, over each GPU's rail share (``gbps`` of
    busbw), in ``buckets`` pieces, each paying the latency."""
    if nodes <= 1 or size_bytes <= 0:
        return 0.0
    return F.collective_seconds(collective, size_bytes, nodes, gbps * scale(nodes)) + buckets * latency(
        collective, nodes, fabric
    )


def hierarchical_all_reduce(
    size_bytes: float, per_node: int, intra_gbps: float, nodes: int, gbps: float, *, fabric: Fabric | None = None
) -> float:
    """A data-parallel all-reduce of ``size_bytes`` over ``per_node`` GPUs in each of ``nodes`` nodes: reduce-scatter
    and all-gather inside the node, all-reduce of the 1/per_node shard across the nodes."""
    intra = 0.0
    if per_node > 1:
        intra = F.collective_seconds("reduce_scatter", size_bytes, per_node, intra_gbps) + F.collective_seconds(
            "all_gather", size_bytes, per_node, intra_gbps
        )
    return intra + cross_seconds("all_reduce", size_bytes / max(1, per_node), nodes, gbps, fabric=fabric)


def bucket_exposed(comm: float, window: float, buckets: int) -> float:
    """Exposed seconds of ``comm`` split in ``buckets`` released evenly through ``window`` seconds of backward and run
    one after another: the last bucket, or what outlasts the backward."""
    k = max(1, buckets)
    return max(comm / k, comm - window * (k - 1) / k, 0.0)


def xla_cross_exposed(comm: float, window: float) -> float:
    """XLA's cross-node data-parallel all-reduce: the share its scheduler does not overlap, plus what outlasts the
    backward."""
    ov = fitted.current().xla_cross_node_overlap
    return max(0.0, comm - window) + (1 - ov) * min(comm, window)
