"""GA4xx: the host around the GPUs: RAM, CPU cores, NUMA placement, power supply."""

from __future__ import annotations

from collections.abc import Generator

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import GB, missing, parse_cpulist, subject
from gpuadvisor.rules.registry import rule

GiB = 2**30


def _host_ram(rig: Rig, ctx: Context) -> Generator[Finding, None, int | None]:
    """The host's RAM in bytes, for a rig with GPUs; None (and a not-checked note when the scan lacks it)
    otherwise. Use as ``ram = yield from _host_ram(rig, ctx)``."""
    if not rig.gpus:
        return None
    ram = rig.host.memory_total_bytes
    if ram is None:
        yield ctx.not_checked(missing(rig.host, "memory_total_bytes", "system RAM"))
    return ram


@rule("GA401", "host-ram-per-gpu", area="host", severity="warn", thresholds=("ram_per_gpu_gb",))
def host_ram_per_gpu(rig: Rig, ctx: Context):
    """The host has less system RAM than the GPUs need for data loading and checkpoints.

    What it checks
        Total system RAM against ram_per_gpu_gb times the number of GPUs.
    Why it matters
        Every training process keeps a copy of the model on the CPU at load and checkpoint time, plus data
        loader workers and pinned buffers: with too little RAM the node swaps or the OOM killer ends the run.
    Threshold
        ram_per_gpu_gb GB (1e9 bytes) per GPU.
    Source
        "System RAM: at least 16 GB per GPU": a rule of thumb of GPU workstation build guides, not a
        measured limit (shown as such).
    How to fix
        Add RAM, run fewer GPUs per node, or lower data-loader workers and prefetch.
    """
    ram = yield from _host_ram(rig, ctx)
    if ram is None:
        return
    n = len(rig.gpus)
    need = ctx.t("ram_per_gpu_gb") * GB * n
    if ram < need:
        yield ctx.finding(
            # Capacities in GiB, as the scan, free -g and nvidia-smi show them; the guideline is quoted in GB.
            f"the host has {ram / GiB:.1f} GiB of RAM for {n} GPUs ({ram / GiB / n:.1f} GiB per GPU; "
            f"guideline {ctx.t('ram_per_gpu_gb'):g} GB = {ctx.t('ram_per_gpu_gb') * GB / GiB:.1f} GiB per GPU, "
            f"{need / GiB:.1f} GiB in all)",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={"memory_total_gb": round(ram / GB, 1), "per_gpu_gb": round(ram / GB / n, 1)},
            expected={"memory_total_gb": round(need / GB, 1)},
            expected_source="at least 16 GB RAM per GPU (rule of thumb of GPU build guides)",
            fix="add RAM, use fewer GPUs per node, or lower data-loader workers and prefetch",
        )


@rule(
    "GA402",
    "host-ram-per-gpu-memory",
    area="host",
    severity="info",
    thresholds=("ram_per_gpu_memory_ratio", "ram_per_gpu_gb"),
)
def host_ram_per_gpu_memory(rig: Rig, ctx: Context):
    """System RAM is below twice the total GPU memory (heavy data loading, CPU offload).

    What it checks
        Total system RAM against ram_per_gpu_memory_ratio times the GPUs' total memory; only reported when
        the per-GPU guideline (GA401) is met, as a second, stricter guideline.
    Why it matters
        CPU offload (ZeRO-Offload, FSDP CPU offload) keeps optimizer states or parameters in host RAM, and
        heavy data pipelines cache samples there: both want RAM in proportion to GPU memory.
    Threshold
        ram_per_gpu_memory_ratio GB of RAM per GB of GPU memory.
    Source
        "2 GB of RAM per GB of GPU memory for heavy data loading": a rule of thumb of GPU workstation build
        guides, not a measured limit.
    How to fix
        Nothing for plain GPU-resident training; add RAM before planning CPU offload or large in-memory
        datasets.
    """
    ram = yield from _host_ram(rig, ctx)
    if ram is None:
        return
    n = len(rig.gpus)
    if ram < ctx.t("ram_per_gpu_gb") * GB * n:
        return  # GA401 already reports the stronger shortfall
    mem = [g.memory_total_bytes for g in rig.gpus]
    if any(m is None for m in mem):
        g = next(g for g in rig.gpus if g.memory_total_bytes is None)
        yield ctx.not_checked(missing(g, "memory_total_bytes", "GPU memory"), gpus=[g.index])
        return
    gpu_mem = sum(m for m in mem if m is not None)
    need = ctx.t("ram_per_gpu_memory_ratio") * gpu_mem
    if ram < need:
        yield ctx.finding(
            f"the host has {ram / GiB:.1f} GiB of RAM for {gpu_mem / GiB:.1f} GiB of GPU memory "
            f"(guideline {ctx.t('ram_per_gpu_memory_ratio'):g}x = {need / GiB:.1f} GiB for heavy data loading or CPU "
            "offload)",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={"memory_total_gb": round(ram / GB, 1), "gpu_memory_total_gb": round(gpu_mem / GB, 1)},
            expected={"memory_total_gb": round(need / GB, 1)},
            expected_source="2 GB RAM per GB of GPU memory for heavy data loading (rule of thumb of GPU build guides)",
            fix="fine for GPU-resident training; add RAM before using CPU offload or large in-memory datasets",
        )


@rule("GA403", "cpu-cores-per-gpu", area="host", severity="warn", thresholds=("cpu_cores_per_gpu_min",))
def cpu_cores_per_gpu(rig: Rig, ctx: Context):
    """Too few CPU cores per GPU to feed them.

    What it checks
        Physical CPU cores (logical if physical is unknown) divided by the number of GPUs, against
        cpu_cores_per_gpu_min.
    Why it matters
        Each GPU's training process needs a core for itself and more for data-loader workers (decoding,
        augmentation, tokenisation); starved GPUs wait for input.
    Threshold
        cpu_cores_per_gpu_min cores per GPU.
    Source
        "2-4 CPU cores per GPU for data loading": a rule of thumb of GPU workstation build guides.
    How to fix
        Pre-process data offline, use fewer data-loader workers per GPU, or run fewer GPUs per node.
    """
    n = len(rig.gpus)
    if n == 0:
        return
    cores = rig.host.cores_physical
    kind = "physical"
    if cores is None:
        cores, kind = rig.host.cores_logical, "logical"
    if cores is None:
        yield ctx.not_checked(missing(rig.host, "cores_physical", "CPU core count"))
        return
    limit = ctx.t("cpu_cores_per_gpu_min")
    if cores < limit * n:
        yield ctx.finding(
            f"{cores} {kind} CPU cores for {n} GPUs ({cores / n:.1f} per GPU, guideline {limit:g})",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={f"cores_{kind}": cores, "per_gpu": round(cores / n, 2)},
            expected={"per_gpu_min": limit},
            expected_source="2-4 CPU cores per GPU (rule of thumb of GPU build guides)",
            fix="pre-process data offline, lower data-loader workers per GPU, or use fewer GPUs per node",
        )


@rule("GA404", "gpu-numa-affinity", area="topology", severity="warn")
def gpu_numa_affinity(rig: Rig, ctx: Context):
    """A GPU's CPU affinity does not match the NUMA node it is attached to.

    What it checks
        On hosts with more than one NUMA node: each GPU's NUMA node (sysfs/NVML) and the CPUs NVML calls
        local to it (CPU affinity). Warn when the affinity CPUs are not within that node's CPUs; info when the
        GPU's node is unknown (-1), so processes cannot be bound to it.
    Why it matters
        A training process on the far socket copies every batch across the inter-socket link and loses
        host<->device bandwidth; launchers (torchrun --numa-binding, Slurm --gpu-bind) bind by these facts, so
        they must agree.
    Threshold
        Any affinity CPU outside the GPU's NUMA node.
    Source
        PyTorch NUMA binding documentation ("NUMA binding typically results in 1-10% overall performance
        improvements"; docs.pytorch.org/docs/main/elastic/numa.html); nvidia-smi topo -m CPU/NUMA Affinity
        columns.
    How to fix
        Check the BIOS NUMA settings (sub-NUMA clustering, NPS) and the firmware's ACPI tables; launch with
        torchrun --numa-binding=node or numactl --cpunodebind matching the GPU.
    """
    nodes = {n.id: n for n in rig.host.numa_nodes}
    if len(nodes) < 2 or not rig.gpus:
        return  # one NUMA node: every CPU is local
    for g in rig.gpus:
        node = g.numa_node
        aff = parse_cpulist(g.cpu_affinity)
        if node is None:
            yield ctx.not_checked(missing(g, "numa_node", "GPU NUMA node"), gpus=[g.index])
            continue
        if node < 0:
            yield ctx.finding(
                f"{subject(g)} reports no NUMA node on a host with {len(nodes)} NUMA nodes: its processes cannot be "
                "bound to local CPUs",
                gpus=[g.index],
                subject=subject(g),
                observed={"numa_node": node, "cpu_affinity": g.cpu_affinity},
                expected="the NUMA node of the socket the GPU hangs off",
                expected_source="sysfs numa_node / NVML; nvidia-smi topo -m NUMA Affinity",
                fix="check the BIOS NUMA/ACPI settings; bind by the topology (nvidia-smi topo -m) by hand",
                severity="info",
            )
            continue
        if aff is None or node not in nodes or parse_cpulist(nodes[node].cpus) is None:
            yield ctx.not_checked(missing(g, "cpu_affinity", "GPU CPU affinity"), gpus=[g.index])
            continue
        local = parse_cpulist(nodes[node].cpus) or set()
        outside = sorted(aff - local)
        if outside:
            yield ctx.finding(
                f"{subject(g)} is on NUMA node {node} (CPUs {nodes[node].cpus}) but its CPU affinity is "
                f"{g.cpu_affinity}",
                gpus=[g.index],
                subject=subject(g),
                observed={"numa_node": node, "cpu_affinity": g.cpu_affinity},
                expected={"cpu_affinity": nodes[node].cpus},
                expected_source=f"CPUs of NUMA node {node} (/sys/devices/system/node/node{node}/cpulist)",
                fix="check BIOS NUMA settings; launch with torchrun --numa-binding=node or numactl matching the GPU",
            )


@rule("GA405", "psu-undersized", area="host", severity="fail", thresholds=("psu_headroom_w",))
def psu_undersized(rig: Rig, ctx: Context):
    """The power supply's rating is below what the GPUs, the CPUs and the rest of the system draw.

    What it checks
        The PSU rating the user gave (rig spec or --psu-watts) against the GPUs' default power limits + the
        CPUs' TDP (from the CPU catalog) + psu_headroom_w for the rest of the platform; for a GeForce card, also
        NVIDIA's published minimum system power for one card plus the others' board power.
    Why it matters
        GPUs draw their full board power (with short spikes above it) during training: an undersized PSU
        trips, reboots the machine or asserts the GPUs' power brake under load.
    Threshold
        GPU board power + CPU TDP + psu_headroom_w, and NVIDIA's minimum system power (GeForce).
    Source
        Intel's ATX 3.0 sizing example (300 W GPU + 300 W CPU + 150 W for the rest on a 750 W ATX 3.0 unit;
        ATX 3.0 PSUs ride out excursions to 200 % of rating for 100 us); NVIDIA's minimum system power on each
        GeForce card's specifications page; board power from the GPU's datasheet (NVML power limit).
    How to fix
        Fit a larger PSU (or a second one), or lower the GPUs' power limits (nvidia-smi -pl) knowingly.
    """
    from gpuadvisor.power import power_budget, psu_fix

    if not rig.gpus:
        return
    psu = rig.host.psu_watts
    if psu is None:
        yield ctx.not_checked(
            "PSU rating not given (set it in a rig spec or pass --psu-watts)"
        )  # no probe or import reads it
        return
    board = []
    for g in rig.gpus:
        w = g.power_default_limit_w if g.power_default_limit_w is not None else g.power_limit_w
        if w is None:
            yield ctx.not_checked(missing(g, "power_default_limit_w", "GPU board power"), gpus=[g.index])
            return
        board.append(w)
    from gpuadvisor.catalog.platforms import find_cpu, find_gpu_spec

    cpu = find_cpu(rig.host.cpu_model) if rig.host.cpu_model else None
    ids = []
    for g in rig.gpus:
        spec = find_gpu_spec(g.name) if g.name else None
        ids.append(spec.id if spec else None)
    pb = power_budget(board, ids, cpu.tdp_w if cpu else None, rig.host.sockets or 1, ctx.t("psu_headroom_w"))
    if psu < pb.psu_needed_w:
        yield ctx.finding(
            f"the PSU is rated {psu:g} W; {pb.basis}: it needs {pb.psu_needed_w:g} W",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={"psu_watts": psu},
            expected={
                "psu_watts_min": pb.psu_needed_w,
                "gpu_board_power_w": sum(board),
                "cpu_tdp_w": pb.cpu_w,
                "load_w": pb.load_w,
            },
            expected_source="GPU board power + CPU TDP + 150 W (Intel's ATX 3.0 sizing); NVIDIA minimum system power",
            fix=psu_fix(psu, pb.psu_needed_w),
        )
    elif cpu is None:
        yield ctx.not_checked(
            f"the PSU covers the GPUs and the platform ({pb.psu_needed_w:g} W) but the CPU's "
            f"power is not known ({rig.host.cpu_model or 'no CPU model'}): the CPU is not counted"
        )
