"""GA601-GA603: measured bandwidth against the rig's own links and published references (GA604-GA606, the
benchmark's own record, are in bench_record)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gpuadvisor import catalog
from gpuadvisor.facts import COLLECTIVES, P2P_BW, Measurement, Rig
from gpuadvisor.facts import HOST_COPIES as COPIES
from gpuadvisor.physics import plateau
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import cell, gpu_list, is_nvlink
from gpuadvisor.rules.p2p_latency import LATENCY_THRESHOLD, p2p_latency_stalled
from gpuadvisor.rules.references import REFERENCES, Reference, find_reference
from gpuadvisor.rules.registry import rule

NO_MEASUREMENTS = "no bandwidth measurements in this scan (run gpuadvisor bench, or gpuadvisor scan --bench)"
BW_THRESHOLDS = (
    "bandwidth_warn_ratio",
    "bandwidth_fail_ratio",
    "nccl_nvlink_efficiency",
    "nccl_pcie_efficiency",
    "nccl_no_p2p_factor",
)
P2P_THRESHOLDS = (*BW_THRESHOLDS, LATENCY_THRESHOLD)


def usable(m: Measurement) -> bool:
    """A measurement that finished (ok or partial) with a figure."""
    return m.status in ("ok", "partial") and m.value_gbps is not None


def _positions(rig: Rig, gpus: list[int]) -> list[int] | None:
    pos = {g.index: i for i, g in enumerate(rig.gpus)}
    if not gpus or any(g not in pos for g in gpus):
        return None
    return [pos[g] for g in gpus]


def _all_nvlink(rig: Rig, gpus: list[int]) -> bool:
    p = _positions(rig, gpus)
    if p is None or len(p) < 2:
        return False
    return all(is_nvlink(cell(rig.topology.matrix, a, b)) for a in p for b in p if a != b)


def _links_expected(rig: Rig, m: Measurement) -> tuple[float, str] | None:
    """The link figure for a measurement that carries none (an imported one): the benchmarker's own function,
    so an imported nccl-tests row is judged exactly as a measured one."""
    from gpuadvisor.physics.expected import expected_bandwidth

    e = expected_bandwidth(
        rig,
        m.kind,
        m.gpus,
        backend=m.backend,
        world_size=m.world_size,
        memory=m.memory,
        p2p_enabled=m.p2p_enabled,
        together=m.gpus if m.concurrent else None,
    )
    return (e.gbps, e.source) if e.gbps else None


def _p2p_ok(rig: Rig, gpus: list[int]) -> bool:
    """True unless the topology says some pair of these GPUs cannot do peer-to-peer (unknown counts as able)."""
    p = _positions(rig, gpus)
    t = rig.topology.p2p_read
    if p is None or not t:
        return True
    return all((cell(t, a, b) or "OK").upper() in ("OK", "X", "U") for a in p for b in p if a != b)


def _nccl_factor(rig: Rig, ctx: Context, m: Measurement) -> tuple[float, str]:
    """What NCCL reaches of the line rate on this measurement's links (the advisor predicts with the same)."""
    if _all_nvlink(rig, m.gpus):
        eff = ctx.t("nccl_nvlink_efficiency")
        return eff, f" x {eff:g} NCCL efficiency on NVLink"
    eff = ctx.t("nccl_pcie_efficiency")
    if _p2p_ok(rig, m.gpus):
        return eff, f" x {eff:g} NCCL efficiency on PCIe"
    no_p2p = ctx.t("nccl_no_p2p_factor")
    return (
        eff * no_p2p,
        f" x {eff:g} NCCL efficiency on PCIe x {no_p2p:g} without peer-to-peer (staged through host memory)",
    )


def describe(m: Measurement) -> str:
    """ "all-reduce (8 ranks, nccl)": what a measurement measured, for a finding."""
    what = m.kind.replace("_", "-")
    extra = []
    if m.memory:
        extra.append(m.memory)
    if m.concurrent:
        extra.append("all GPUs at once")
    if m.kind in COLLECTIVES:
        extra.append(f"{m.world_size or len(m.gpus)} ranks" + (f", {m.backend}" if m.backend else ""))
    return f"{what} ({', '.join(extra)})" if extra else what


def _link_type(rig: Rig, m: Measurement) -> str:
    """ "nvlink" or "pcie" for the links a collective crossed, from the topology matrix, else from what the GPU
    model is (the catalog: SXM parts are always NVLink-connected, parts without NVLink never); "unknown" when
    neither tells (bridged PCIe cards without a topology, GPUs not in the catalog)."""
    p = _positions(rig, m.gpus)
    if p is not None and len(p) > 1:
        if _all_nvlink(rig, m.gpus):
            return "nvlink"
        if all(cell(rig.topology.matrix, a, b) for a in p for b in p if a != b):
            return "pcie"
    names = [rig.gpu(i).name for i in m.gpus if any(g.index == i for g in rig.gpus)]
    specs = [catalog.find_gpu(n) for n in names]
    if specs and all(s is not None for s in specs):
        if all(s.form_factor == "sxm" and s.nvlink_links for s in specs):  # type: ignore[union-attr]
            return "nvlink"
        if all(not s.nvlink_links for s in specs):  # type: ignore[union-attr]
            return "pcie"
    return "unknown"


def _judge(
    rig: Rig,
    ctx: Context,
    m: Measurement,
    *,
    link_factor: float,
    factor_note: str,
    value: float | None = None,
    observed_extra: dict | None = None,
) -> Iterator:
    """Findings (or a not-checked) for one measurement against its link figure and any published reference;
    ``value`` overrides the measurement's headline (a collective's plateau figure)."""
    warn_r, fail_r = ctx.t("bandwidth_warn_ratio"), ctx.t("bandwidth_fail_ratio")
    value = float(m.value_gbps or 0.0) if value is None else value
    names = [rig.gpu(i).name for i in m.gpus if any(g.index == i for g in rig.gpus)]
    ref: Reference | None = find_reference(names, m.kind, m.world_size or len(m.gpus)) if names else None
    verdicts: list[tuple[str, str]] = []  # (severity, text)
    expected: dict[str, object] = {}
    sources: list[str] = []

    base, base_source = m.expected_gbps, m.expected_source
    if not base:
        fallback = _links_expected(rig, m)
        if fallback is not None:
            base, base_source = fallback
    if base:
        exp = base * link_factor
        ratio = value / exp
        expected["links_gbps"] = round(exp, 2)
        expected["ratio_to_links"] = round(ratio, 3)
        sources.append((base_source or "the rig's link facts") + factor_note)
        if ratio < fail_r:
            verdicts.append(
                ("fail", f"{ratio:.0%} of the {exp:.1f} GB/s its links should give (fails below {fail_r:.0%})")
            )
        elif ratio < warn_r:
            verdicts.append(
                ("warn", f"{ratio:.0%} of the {exp:.1f} GB/s its links should give (warns below {warn_r:.0%})")
            )
    if ref is not None:
        expected[f"reference_{ref.role}_gbps"] = ref.value_gbps
        sources.append(f"{ref.model}: {ref.value_gbps:g} GB/s ({ref.role}); {ref.source}")
        r = value / ref.value_gbps
        if ref.role == "typical":
            if r < fail_r:
                verdicts.append(("fail", f"{r:.0%} of the {ref.value_gbps:g} GB/s healthy {ref.model} measure"))
            elif r < warn_r:
                verdicts.append(("warn", f"{r:.0%} of the {ref.value_gbps:g} GB/s healthy {ref.model} measure"))
        elif value < ref.value_gbps:
            verdicts.append(
                ("warn", f"below the {ref.value_gbps:g} GB/s a production health check requires of {ref.model}")
            )
    if not base and ref is None:
        if not names:
            no_ref = "and no GPU to compare with a reference"
        elif any(
            r.world_size is not None and all(r.matches(n, m.kind, r.world_size) for n in names) for r in REFERENCES
        ):
            no_ref = f"and no published reference for {m.world_size or len(m.gpus)} ranks of this GPU model"
        else:
            no_ref = "and no published reference for this GPU model"
        yield ctx.not_checked(
            f"{describe(m)}: no expected figure ({m.why('expected_gbps') or 'not derivable from the link facts'}) "
            f"{no_ref}",
            gpus=m.gpus,
        )
        return
    if not verdicts:
        return
    sev = "fail" if any(s == "fail" for s, _ in verdicts) else "warn"
    who = gpu_list(m.gpus) if m.gpus else "the rig"
    yield ctx.finding(
        f"{describe(m)} on {who} measured {value:.1f} GB/s: " + "; ".join(t for _, t in verdicts),
        gpus=m.gpus,
        subject=who,
        observed={
            "kind": m.kind,
            "value_gbps": round(value, 2),
            "memory": m.memory,
            "world_size": m.world_size,
            **(observed_extra or {}),
        },
        expected=expected,
        expected_source=" | ".join(sources),
        fix=_FIX[m.kind] if m.kind in _FIX else _FIX["collective"],
        severity=sev,
    )


_FIX = {
    "h2d": "check the PCIe path (GA101/GA102), NUMA binding of the benchmark (GA404) and the IOMMU/ACS BIOS settings",
    "d2h": "check the PCIe path (GA101/GA102), NUMA binding of the benchmark (GA404) and the IOMMU/ACS BIOS settings",
    "p2p_unidir": "check NVLink state (GA204/GA205), P2P support (GA206) and NCCL_P2P_* settings (GA503)",
    "p2p_bidir": "check NVLink state (GA204/GA205), P2P support (GA206) and NCCL_P2P_* settings (GA503)",
    "collective": "check NVLink (GA204/GA205), P2P (GA206, GA503), fabric manager on NVSwitch systems, and run "
    "nccl-tests to compare",
}


def _measurements(rig: Rig, ctx: Context, kinds: tuple[str, ...]) -> list[Measurement] | None:
    if not rig.measurements:
        return None
    return [m for m in rig.measurements if m.kind in kinds and usable(m)]


@rule("GA601", "host-device-bandwidth-low", area="bandwidth", severity="fail", thresholds=BW_THRESHOLDS)
def host_device_bandwidth_low(rig: Rig, ctx: Context):
    """Measured host<->device copy bandwidth is below what the GPU's PCIe path should give.

    What it checks
        Each pinned host-to-device and device-to-host measurement against the benchmarker's expected figure
        (narrowest PCIe hop at its maximum generation and width x copy efficiency, PCI-SIG per-lane rates) and,
        for GPU models that have one, a published production health-check floor.
    Why it matters
        Data loading, checkpointing, CPU offload and every host-staged transfer go over this path. A copy far
        below the link's figure means a downgraded or shared link, a cross-socket placement, or an IOMMU/ACS
        setting in the way.
    Threshold
        Warn below bandwidth_warn_ratio of the link figure, fail below bandwidth_fail_ratio; warn below a
        published floor for the model.
    Source
        Link figures: PCI-SIG per-lane rates, of which large pinned copies reach 80-90% (85% taken);
        ratios: DCGM diagnostics' 75% pass marks (github.com/NVIDIA/DCGM testing/gen_validation.sh)
        and production health checks at ~85-95% (Azure HPC NHC); floors: Azure HPC NHC check_cuda_bw
        (ND H100 v5, ND A100 v4).
    How to fix
        Check the PCIe path findings (GA101, GA102), bind the process to the GPU's NUMA node (GA404), check
        IOMMU/ACS BIOS settings; compare with nvbandwidth host_to_device_memcpy_ce.
    """
    ms = _measurements(rig, ctx, COPIES)
    if ms is None:
        yield ctx.not_checked(NO_MEASUREMENTS)
        return
    ms = [m for m in ms if m.memory != "pageable"]  # pageable: staged through a driver buffer, host-bound
    if not ms:
        yield ctx.not_checked(
            "no pinned host<->device copy measured in this scan (gpuadvisor bench on a GPU measures them)"
        )
    for m in ms:
        if _faster_run(rig, m) is None:  # the same GPU run faster another way: the link is judged on that run
            yield from _judge(rig, ctx, m, link_factor=1.0, factor_note="")


def _faster_run(rig: Rig, m: Measurement) -> Measurement | None:
    """A faster usable run of the same copy on the same GPU, run another way (a numactl binding), if any: the
    link gave that much, so a slower run is the host side (GA604 says so), not the link."""
    for o in rig.measurements:
        if (
            o is not m
            and o.kind == m.kind
            and o.gpus == m.gpus
            and o.memory == m.memory
            and o.method != m.method
            and usable(o)
            and float(o.value_gbps or 0.0) > float(m.value_gbps or 0.0)
        ):
            return o
    return None


@rule("GA602", "collective-bandwidth-low", area="bandwidth", severity="fail", thresholds=BW_THRESHOLDS)
def collective_bandwidth_low(rig: Rig, ctx: Context):
    """Measured collective bus bandwidth (all-reduce, all-gather, ...) is below what the rig should give.

    What it checks
        The plateau busbw of each collective measurement (the plateau: the largest sizes whose busbw
        lie within 5% of each other over at least one doubling, the sweep having gone to 1 GiB on NVLink or
        128 MiB on PCIe; a sweep that stops while busbw still rises is not judged) against the benchmarker's link figure
        (the
        slowest GPU's NVLink total, or the narrowest PCIe path's line rate) scaled by the share of it NCCL
        reaches: nccl_nvlink_efficiency on NVLink, nccl_pcie_efficiency on PCIe, times nccl_no_p2p_factor
        when the GPUs cannot do peer-to-peer (the advisor predicts with the same figures); and, for 8x H100
        SXM and 8x A100 SXM all-reduce, the published healthy figure.
    Why it matters
        Gradient all-reduce (DDP) and all-gather/reduce-scatter (FSDP, ZeRO) are on every training step's
        critical path: a node at 60% of normal busbw slows the whole job, and in a multi-node job every node.
    Threshold
        Warn below bandwidth_warn_ratio, fail below bandwidth_fail_ratio of either figure.
    Source
        busbw definition and factors: nccl-tests doc/PERFORMANCE.md; NVLink efficiency and 8x H100 reference:
        github.com/NVIDIA/nccl-tests/issues/212; PCIe efficiency: 6x RTX 4090 all_reduce_perf 24.5 GB/s on PCIe 4.0 x16
        (github.com/tinygrad/open-gpu-kernel-modules README); 8x A100 reference:
        github.com/NVIDIA/nccl-tests/issues/175;
        ratios: DCGM (75%) and Azure HPC NHC (~85-95%); sizes needed to
        reach the plateau: github.com/NVIDIA/nccl-tests/issues/212 and /149 (NVLink: 256 MiB too small, still
        rising at 512 MiB).
    How to fix
        Check NVLink findings (GA204, GA205), P2P (GA206, GA503), that nvidia-fabricmanager runs on NVSwitch
        systems, and compare with nccl-tests all_reduce_perf -b 8 -e 8G -f 2 -g <n>.
    """
    ms = _measurements(rig, ctx, COLLECTIVES)
    if ms is None:
        yield ctx.not_checked(NO_MEASUREMENTS)
        return
    if not ms:
        if any(m.kind in COLLECTIVES and m.world_size == 1 for m in rig.measurements):
            yield ctx.not_checked(
                "collectives ran on one rank only: no link is crossed, so there is no bus bandwidth to judge (needs 2+ "
                "GPUs)"
            )
        else:
            yield ctx.not_checked("no collective measured in this scan (gpuadvisor bench --only collectives)")
    for m in ms:
        if not m.gpus and m.backend == "gloo":  # processes on the CPU: no GPU link to hold the figure against
            yield ctx.not_checked(f"{describe(m)}: ran on the CPU, so no GPU link is measured")
            continue
        link = _link_type(rig, m)
        p = plateau.find(m.rows, link)
        if not p.reached:
            cut = " (the output stops before the last size asked for)" if m.status == "partial" else ""
            yield ctx.not_checked(
                f"{describe(m)}: not judged: {p.why}{cut}; run to at least {plateau.fmt_bytes(p.need_bytes)} "
                f"({m.kind}_perf -b 8 -e {_e_arg(p.need_bytes)} -f 2) so busbw reaches its plateau: "
                f"{plateau.MIN_BYTES_SOURCE[link]}",
                gpus=m.gpus,
            )
            continue
        factor, note = _nccl_factor(rig, ctx, m)
        on = (
            f"plateau {plateau.fmt_bytes(p.first_bytes or 0)} to {plateau.fmt_bytes(p.last_bytes or 0)}, "
            f"median of {p.rows} sizes"
        )
        yield from _judge(
            rig, ctx, m, link_factor=factor, factor_note=note, value=p.gbps, observed_extra={"plateau": on}
        )


def _e_arg(n: int) -> str:
    """nccl-tests -e argument for n bytes: 1G, 128M, 2G."""
    for unit, size in (("G", plateau.GiB), ("M", plateau.MiB), ("K", 1024)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


# A direct peer copy skips the staging copy through host memory that P2P-disabled transfers make; where P2P
# works it runs near the link's rate, well above the staged figure (NVIDIA cuda-samples p2pBandwidthLatencyTest
# prints both for this comparison). Less than this gain: the direct path is no faster than host staging.
P2P_GAIN_MIN = 1.2


def _p2p_no_gain(rig: Rig, ctx: Context, ms: list[Measurement]):
    """P2P enabled that gives (about) what P2P disabled gives on the same pair, same test: P2P does not help."""
    off: dict[tuple, Measurement] = {}
    for m in ms:
        if m.p2p_enabled is False and m.value_gbps and "P2P=Disabled" in (m.method or ""):
            off[(m.kind, tuple(sorted(m.gpus)))] = m
    flat: dict[tuple[float, float], list[str]] = defaultdict(list)
    gpus: set[int] = set()
    for m in ms:
        base = off.get((m.kind, tuple(sorted(m.gpus))))
        if not m.p2p_enabled or base is None or not m.value_gbps or m.kind != "p2p_unidir":
            continue
        if m.value_gbps < P2P_GAIN_MIN * float(base.value_gbps or 0.0):
            flat[(round(m.value_gbps, 1), round(float(base.value_gbps or 0.0), 1))].append("->".join(map(str, m.gpus)))
            gpus.update(m.gpus)
    if not flat:
        return
    shown = "; ".join(
        f"{', '.join(pairs)}: {on:g} GB/s enabled vs {offv:g} GB/s disabled"
        for (on, offv), pairs in sorted(flat.items())
    )
    yield ctx.finding(
        f"P2P enabled does not help: {shown} (less than {P2P_GAIN_MIN:g}x the host-staged copy): the direct "
        "path is no faster than going through host memory",
        gpus=sorted(gpus),
        subject=gpu_list(sorted(gpus)),
        severity="warn",
        observed={"pairs": sum(len(v) for v in flat.values())},
        expected={"gain_min": P2P_GAIN_MIN},
        expected_source="the same pair's P2P=Disabled figure in the same p2pBandwidthLatencyTest run",
        fix="check the BIOS (ACS, IOMMU off, Resizable BAR on) and, for GeForce cards, whether the driver "
        "really allows P2P; otherwise plan for host-staged GPU-to-GPU transfers",
    )


@rule("GA603", "p2p-bandwidth-low", area="bandwidth", severity="fail", thresholds=P2P_THRESHOLDS)
def p2p_bandwidth_low(rig: Rig, ctx: Context):
    """Measured GPU-to-GPU (peer-to-peer) bandwidth is below what the pair's link should give.

    What it checks
        Each peer-to-peer measurement made with P2P access enabled against the benchmarker's figure for the
        pair (NV# x per-link NVLink rate, or the narrowest PCIe path x copy efficiency); on NVLink scaled by
        nccl_nvlink_efficiency. Measurements with P2P off are a baseline, not judged. GPU-to-GPU copy
        latencies (p2pBandwidthLatencyTest's GPU latency tables) above p2p_latency_fail_us: a peer path
        that stalls.
    Why it matters
        One slow pair slows every ring or tree that uses it: a link down, a bridge unseated or P2P routed
        through the CPU shows up here first.
    Threshold
        Warn below bandwidth_warn_ratio, fail below bandwidth_fail_ratio; fail above p2p_latency_fail_us.
    Source
        NVLink and PCIe per-direction figures: PCI-SIG per-lane rates, NVIDIA NVLink generations;
        protocol overhead
        on NVLink: github.com/NVIDIA/nccl-tests/issues/212; ratios: DCGM (75%) and Azure HPC NHC (~85-95%);
        latency: published p2pBandwidthLatencyTest outputs (a few us peer-to-peer, tens through host memory)
        and NCCL's troubleshooting guide (IOMMU, PCIe ACS).
    How to fix
        Check the pair's NVLink (GA204, GA205) and P2P (GA206) findings; compare with nvbandwidth
        device_to_device_memcpy_read_ce or CUDA's p2pBandwidthLatencyTest. A stalled peer path: the IOMMU
        (iommu=pt) and PCIe ACS on the GPUs' bridges.
    """
    stalled = list(p2p_latency_stalled(rig, ctx))
    yield from stalled
    ms = _measurements(rig, ctx, P2P_BW)
    if ms is None:
        if not stalled:
            yield ctx.not_checked(NO_MEASUREMENTS)
        return
    yield from _p2p_no_gain(rig, ctx, ms)
    ms = [m for m in ms if m.p2p_enabled]  # P2P off: a host-staged baseline, not a health signal
    if not ms and not stalled:
        yield ctx.not_checked("no peer-to-peer copy with P2P enabled measured in this scan (needs 2+ GPUs)")
    eff = ctx.t("nccl_nvlink_efficiency")
    for m in ms:
        nv = _all_nvlink(rig, m.gpus)
        yield from _judge(
            rig,
            ctx,
            m,
            link_factor=eff if nv else 1.0,
            factor_note=f" x {eff:g} protocol efficiency on NVLink" if nv else "",
        )
