"""GA603's latency half: a GPU-to-GPU copy latency (p2pBandwidthLatencyTest's GPU latency table) far beyond what
any working path takes.

A peer write takes a few microseconds (2.8-3.4 us over NVLink on 8x A100 SXM4 in a published
p2pBandwidthLatencyTest output); a copy staged through host memory, where the GPUs cannot reach each other, some
tens (21-24 us on the same host). A latency of milliseconds is neither: the peer traffic is redirected and stalls
(the IOMMU translating or PCIe ACS forwarding every peer request up to the root complex), which is what makes
NCCL and DeepSpeed hang on such hosts (NCCL User Guide, Troubleshooting: PCI Access Control Services, IOMMU).
"""

from __future__ import annotations

from collections.abc import Iterator
from statistics import median

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list
from gpuadvisor.rules.thresholds import THRESHOLDS

LATENCY_THRESHOLD = "p2p_latency_fail_us"


def _label(method: str | None) -> str:
    """ "P2P=Enabled Latency (P2P Writes)": the matrix a measurement came from."""
    return (method or "").rpartition(": ")[2] or "latency"


def p2p_latency_stalled(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """One failure per latency matrix with GPU pairs above the threshold: the pairs, their typical latency."""
    limit = ctx.t(LATENCY_THRESHOLD)
    slow: dict[str, list[tuple[list[int], float]]] = {}
    for m in rig.measurements:
        lat = m.latency_us
        if m.kind == "p2p_latency" and m.status in ("ok", "partial") and lat is not None and lat > limit:
            slow.setdefault(_label(m.method), []).append((list(m.gpus), float(lat)))
    for label, pairs in sorted(slow.items()):
        gpus = sorted({g for p, _ in pairs for g in p})
        values = [v for _, v in pairs]
        typical = median(values)
        yield ctx.finding(
            f"GPU-to-GPU copy latency {typical / 1000:.1f} ms (median; up to {max(values) / 1000:.1f} ms) between "
            f"{len(pairs)} GPU pair{'s' if len(pairs) != 1 else ''} ({label}, p2pBandwidthLatencyTest): a working "
            "peer path takes a few microseconds, a copy through host memory tens: peer traffic stalls on this "
            "host, so NCCL and multi-GPU jobs hang or crawl",
            gpus=gpus,
            subject=gpu_list(gpus),
            severity="fail",
            observed={"pairs": len(pairs), "median_latency_us": round(typical, 2), "max_latency_us": max(values)},
            expected={"latency_max_us": limit},
            expected_source=THRESHOLDS[LATENCY_THRESHOLD].source,
            fix="check the IOMMU (kernel command line: iommu=pt, or intel_iommu=off / amd_iommu=off, or off in the "
            "BIOS) and PCIe ACS on the bridges above the GPUs (lspci -vvv | grep ACSCtl: every flag '-'; disable "
            "ACS in the BIOS), per NCCL's troubleshooting guide, then rerun p2pBandwidthLatencyTest; until then "
            "NCCL_P2P_DISABLE=1 avoids the hang at a bandwidth cost",
        )
