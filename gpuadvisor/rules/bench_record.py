"""GA604-GA606: the benchmark's own record: a straggler GPU, a wrong result, a run that did not finish."""

from __future__ import annotations

from collections import defaultdict

from gpuadvisor.facts import Measurement, Rig
from gpuadvisor.rules.bandwidth import NO_MEASUREMENTS, describe, usable
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list
from gpuadvisor.rules.registry import rule
from gpuadvisor.text import plural


def _same_gpu_runs(rig: Rig, ctx: Context, limit: float):
    """The same GPU's host copies measured in two runs that differ only in how they were run (a numactl
    binding): a slower run is the host side (memory on a NUMA node remote from the GPU), not a slower GPU."""
    runs: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in rig.measurements:
        if m.kind in ("h2d", "d2h") and len(m.gpus) == 1 and usable(m):
            runs[(m.kind, m.memory, bool(m.concurrent), m.backend, tuple(m.gpus))].append(m)
    for (kind, _memory, _c, _b, gpus), ms in sorted(runs.items(), key=lambda kv: str(kv[0])):
        if len({m.method for m in ms}) < 2:
            continue
        fast = max(ms, key=lambda m: float(m.value_gbps or 0.0))
        slow = min(ms, key=lambda m: float(m.value_gbps or 0.0))
        hi, lo = float(fast.value_gbps or 0.0), float(slow.value_gbps or 0.0)
        if hi <= 0 or lo >= limit * hi:
            continue
        how_fast, how_slow = _binding(fast), _binding(slow)
        yield ctx.finding(
            f"{gpu_list(list(gpus))} measured twice: {describe(slow)} {lo:.1f} GB/s {how_slow} against {hi:.1f} GB/s "
            f"{how_fast} ({lo / hi:.0%}): the same GPU, so the host side differs: host memory on a NUMA node "
            "remote from the GPU crosses the socket interconnect",
            gpus=list(gpus),
            subject=gpu_list(list(gpus)),
            observed={"kind": kind, "value_gbps": round(lo, 2), "run": how_slow},
            expected={"same_gpu_gbps": round(hi, 2), "run": how_fast, "ratio_min": limit},
            expected_source="the same GPU's figure in the faster run of the same test",
            fix=f"pin the process and its memory to the GPU's NUMA node ({how_fast.removeprefix('under ')}, or the "
            "node in nvidia-smi topo -m's NUMA Affinity column)",
        )


def _binding(m: Measurement) -> str:
    method = m.method or ""
    return method[method.index("under ") :] if "under " in method else "without a numactl binding"


@rule("GA604", "straggler-gpu", area="bandwidth", severity="warn", thresholds=("straggler_ratio",))
def straggler_gpu(rig: Rig, ctx: Context):
    """One GPU is much slower than its peers in the same measurement.

    What it checks
        Per-GPU measurements of the same kind and method (host-to-device, device-to-host, device-to-device;
        same memory type, alone or concurrent): each GPU against the median of the other GPUs (never against
        itself). The same GPU's host copies measured in two runs bound differently (numactl -m0 -N0, then
        -m1 -N1) are compared with each other: the slower run is remote-NUMA host memory, not a slow GPU.
    Why it matters
        Synchronous data-parallel training runs at the pace of its slowest GPU: one straggler costs the whole
        node (and, multi-node, the whole job) its share. It is often the only visible symptom of a
        degraded link or a throttled card.
    Threshold
        A GPU below straggler_ratio of the median of its peers.
    Source
        Synchronous data parallelism runs at the slowest rank's pace; production straggler
        detection compares a node with its peers (NodeSweep, MLSys 2026, mlsys.org/virtual/2026/poster/3608); tolerance
        as
        bandwidth_warn_ratio.
    How to fix
        Look at that GPU's other findings (PCIe link, clocks, NUMA); swap it with a peer's slot to see whether
        the slowness follows the card or the slot.
    """
    if not rig.measurements:
        yield ctx.not_checked(NO_MEASUREMENTS)
        return
    from statistics import median  # here: a rig without measurements (every plan's) never needs it

    limit = ctx.t("straggler_ratio")
    groups: dict[tuple, list[Measurement]] = defaultdict(list)
    for m in rig.measurements:
        if m.kind in ("h2d", "d2h", "d2d") and len(m.gpus) == 1 and usable(m):
            groups[(m.kind, m.memory, bool(m.concurrent), m.backend, m.method)].append(m)
    yield from _same_gpu_runs(rig, ctx, limit)
    if not any(len({tuple(m.gpus) for m in ms}) >= 2 for ms in groups.values()):
        yield ctx.not_checked(
            "no per-GPU measurement on two or more GPUs to compare (gpuadvisor bench on a multi-GPU rig)"
        )
    for (kind, _memory, _concurrent, _b, _meth), ms in sorted(groups.items(), key=lambda kv: str(kv[0])):
        if len(ms) < 2:
            continue
        for m in ms:
            peers = [float(o.value_gbps or 0.0) for o in ms if o.gpus != m.gpus]  # a GPU is never its own peer
            if not peers:
                continue
            med = median(peers)
            value = float(m.value_gbps or 0.0)
            if med > 0 and value < limit * med:
                yield ctx.finding(
                    f"{gpu_list(m.gpus)} reaches {value:.1f} GB/s in {describe(m)}, "
                    f"{value / med:.0%} of its peers' median {med:.1f} GB/s",
                    gpus=m.gpus,
                    subject=gpu_list(m.gpus),
                    observed={"kind": kind, "value_gbps": round(value, 2)},
                    expected={"peer_median_gbps": round(med, 2), "ratio_min": limit},
                    expected_source=f"median of the same measurement on the other {plural(len(peers), 'GPU')}",
                    fix="check this GPU's PCIe, clocks and NUMA findings; swap slots to see if the slowness follows "
                    "the card",
                )


@rule("GA605", "bench-wrong-result", area="bandwidth", severity="fail")
def bench_wrong_result(rig: Rig, ctx: Context):
    """A benchmark's result check found wrong data.

    What it checks
        The correctness check of every measured size (as nccl-tests -c): rows marked incorrect or with wrong
        elements.
    Why it matters
        A collective or copy that returns wrong data means silent data corruption in training: a faulty GPU,
        link or memory. A number measured on wrong results is no measurement.
    Threshold
        Any wrong element.
    Source
        nccl-tests correctness check (#wrong column, -c 1; github.com/NVIDIA/nccl-tests); DCGM diagnostics
        fail on data corruption in P2P copies (docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/
        plugins/pcie.html).
    How to fix
        Rerun to confirm; run dcgmi diag -r 3 on the node; isolate the GPU or link with pairwise P2P tests and
        take it out of service.
    """
    if not rig.measurements:
        yield ctx.not_checked(NO_MEASUREMENTS)
        return
    for m in rig.measurements:
        bad = [r for r in m.rows if r.correct is False or (r.errors or 0) > 0]
        if bad:
            errors = sum(r.errors or 0 for r in bad)
            counted = f"{errors} wrong elements" if all(r.errors is not None for r in bad) else "out of bounds"
            yield ctx.finding(
                f"{describe(m)} on {gpu_list(m.gpus) if m.gpus else 'the rig'} returned wrong data at "
                f"{plural(len(bad), 'size')} ({counted}; first at {bad[0].size_bytes} bytes)",
                gpus=m.gpus,
                subject=gpu_list(m.gpus) if m.gpus else "rig",
                observed={"kind": m.kind, "wrong_sizes": [r.size_bytes for r in bad], "wrong_elements": errors},
                expected={"wrong_elements": 0},
                expected_source="nccl-tests correctness check",
                fix="rerun to confirm, run dcgmi diag -r 3, isolate the GPU or link and take it out of service",
            )


@rule("GA606", "bench-incomplete", area="bandwidth", severity="warn")
def bench_incomplete(rig: Rig, ctx: Context):
    """A benchmark failed or timed out.

    What it checks
        The status of every measurement: failed or timeout.
    Why it matters
        A collective that hangs or fails on a node hangs or fails training jobs too (NCCL timeouts, Xid
        errors, a lost GPU); and the bandwidth verdicts for that measurement are missing.
    Threshold
        Status failed or timeout.
    Source
        The benchmarker's record (gpuadvisor bench); NCCL hangs as a node fault: Azure HPC NHC fails a node
        whose NCCL all-reduce test errors (customTests/azure_nccl_allreduce.nhc).
    How to fix
        Read the recorded error; rerun `gpuadvisor -v bench`; check `dmesg` for Xid errors and the NCCL
        settings (NCCL_DEBUG=INFO).
    """
    if not rig.measurements:
        yield ctx.not_checked(NO_MEASUREMENTS)
        return
    for m in rig.measurements:
        if m.status in ("failed", "timeout"):
            yield ctx.finding(
                f"{describe(m)} on {gpu_list(m.gpus) if m.gpus else 'the rig'} {m.status}"
                + (f": {m.error}" if m.error else ""),
                gpus=m.gpus,
                subject=gpu_list(m.gpus) if m.gpus else "rig",
                observed={"kind": m.kind, "status": m.status, "error": m.error},
                expected={"status": "ok"},
                expected_source="gpuadvisor bench",
                fix="read the error, rerun gpuadvisor -v bench, check dmesg for Xid errors and NCCL_DEBUG=INFO output",
            )
