"""GA3xx: the GPUs themselves: models, clock slowdowns, power, persistence, MIG, lost GPUs (GA302-GA307,
memory health, are in gpu_memory)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from gpuadvisor import facts
from gpuadvisor.catalog import brands
from gpuadvisor.facts import Finding, Gpu, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list, missing, norm, subject
from gpuadvisor.rules.registry import rule


@rule("GA301", "mixed-gpu-models", area="gpu", severity="warn")
def mixed_gpu_models(rig: Rig, ctx: Context):
    """The rig mixes GPU models (or memory sizes).

    What it checks
        The product names and total memory of all GPUs.
    Why it matters
        A data-parallel group runs at the pace of its slowest card and is limited by its smallest memory;
        collectives between different generations also lose features (NVLink between models, P2P). Mixed
        models also change CUDA's default device order (fastest first) against nvidia-smi's (PCI order).
    Threshold
        More than one distinct (name, memory) among the GPUs.
    Source
        Synchronous data parallelism: every step waits at the gradient all-reduce for the slowest rank
        (PyTorch DistributedDataParallel documentation; Li et al. 2020, "PyTorch Distributed", VLDB); CUDA
        programming guide, CUDA_DEVICE_ORDER (FASTEST_FIRST default).
    How to fix
        Train on a group of identical GPUs (CUDA_VISIBLE_DEVICES), set CUDA_DEVICE_ORDER=PCI_BUS_ID so the
        numbering matches nvidia-smi, or balance work by device speed.
    """
    if len(rig.gpus) < 2:
        return
    named = [g for g in rig.gpus if g.name is not None]  # a GPU whose name is not shown silences none of the others
    unnamed = [g for g in rig.gpus if g.name is None]

    def key(g: Gpu) -> str:
        mem = f" {g.memory_total_bytes / 2**30:.0f} GiB" if g.memory_total_bytes else ""
        return f"{g.name}{mem}"

    # a GPU whose memory is not shown (a paste cut inside its section) is no evidence of a different size
    sized = {g.name for g in named if g.memory_total_bytes}
    models = Counter(key(g) for g in named if g.memory_total_bytes or g.name not in sized)
    if unnamed and len(models) < 2:
        yield ctx.not_checked(missing(unnamed[0], "name", "GPU name"), gpus=[g.index for g in unnamed])
        return
    if len(models) > 1:
        yield ctx.finding(
            "the rig mixes GPU models: "
            + ", ".join(f"{n}x {m}" for m, n in models.most_common())
            + (f" (and {len(unnamed)} GPU(s) whose name is not shown)" if unnamed else ""),
            gpus=[g.index for g in rig.gpus],
            subject=gpu_list(g.index for g in rig.gpus),
            observed={m: [g.index for g in named if key(g) == m] for m in models},
            expected="one GPU model",
            expected_source="synchronous data parallel: identical GPUs in a group (every step waits for the slowest "
            "rank)",
            fix="train on identical GPUs (CUDA_VISIBLE_DEVICES) and set CUDA_DEVICE_ORDER=PCI_BUS_ID",
        )


def _reasons(g: Gpu) -> set[str]:
    return {norm(r) for r in (g.clocks_event_reasons or [])}


def _has(reasons: set[str], *needles: str) -> bool:
    return any(any(n in r for n in needles) for r in reasons)


def _clock_rule(rig: Rig, ctx: Context, match, what: str, fix: str):
    for g in rig.gpus:
        if g.clocks_event_reasons is None:
            yield ctx.not_checked(missing(g, "clocks_event_reasons", "clocks event reasons"), gpus=[g.index])
            continue
        active = sorted(r for r in g.clocks_event_reasons if match(norm(r)))
        if active:
            yield ctx.finding(
                f"{subject(g)} clocks are held down: {what} ({', '.join(active)})",
                gpus=[g.index],
                subject=subject(g),
                observed={"clocks_event_reasons": list(g.clocks_event_reasons)},
                expected="no slowdown reason active",
                expected_source="NVML nvmlClocksEventReasons",
                fix=fix,
            )


# Clock slowdowns with one NVML reason each: the reason's normalised name, what it is, the fix.
_SLOWDOWNS = {
    "hwthermal": (
        "hardware thermal slowdown",
        "check fans, airflow and inlet temperature; clean filters; service the heatsink",
    ),
    "swthermal": (
        "software thermal slowdown",
        "improve cooling: airflow, fan curve, inlet temperature; space out the cards",
    ),
    "powerbrake": (
        "hardware power brake",
        "check the power supplies and their redundancy, the chassis power policy and the BMC event log",
    ),
}


def _slowdown_rule(rig: Rig, ctx: Context, reason: str):
    """A rule on one of the _SLOWDOWNS reasons."""
    what, fix = _SLOWDOWNS[reason]
    yield from _clock_rule(rig, ctx, lambda r: reason in r, what, fix)


@rule("GA308", "hw-thermal-slowdown", area="health", severity="fail")
def hw_thermal_slowdown(rig: Rig, ctx: Context):
    """The GPU's hardware thermal protection is cutting its clocks.

    What it checks
        NVML's current clocks-event reasons for HW Thermal Slowdown.
    Why it matters
        HW thermal slowdown reduces the core clocks by a factor of two or more: the GPU is overheating
        (blocked airflow, failed fan, bad thermal paste, too warm an inlet) and runs at half speed or less.
    Threshold
        Reason active.
    Source
        NVML API reference, nvmlClocksEventReasons: "HW Thermal Slowdown (reducing the core clocks by a factor
        of 2 or more) is engaged" (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html);
        Azure HPC NHC treats any reason but idle and SW power cap as a problem
        (customTests/azure_gpu_clock_throttling.nhc).
    How to fix
        Check fans, airflow and inlet temperature (nvidia-smi -q -d TEMPERATURE,PERFORMANCE); clean filters;
        have the heatsink serviced.
    """
    yield from _slowdown_rule(rig, ctx, "hwthermal")


@rule("GA309", "sw-thermal-slowdown", area="health", severity="warn")
def sw_thermal_slowdown(rig: Rig, ctx: Context):
    """The driver is lowering the GPU's clocks to keep it under its temperature target.

    What it checks
        NVML's current clocks-event reasons for SW Thermal Slowdown.
    Why it matters
        The GPU or its memory is above the temperature target: clocks drop, and a run gets slower the longer
        it goes. It precedes HW thermal slowdown.
    Threshold
        Reason active.
    Source
        NVML API reference, nvmlClocksEventReasonSwThermalSlowdown
        (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
    How to fix
        Improve cooling (airflow, fan curve, inlet temperature); space out the cards.
    """
    yield from _slowdown_rule(rig, ctx, "swthermal")


@rule("GA310", "power-brake-slowdown", area="health", severity="fail")
def power_brake_slowdown(rig: Rig, ctx: Context):
    """The system asserted the GPU's power brake: clocks are cut by half or more.

    What it checks
        NVML's current clocks-event reasons for HW Power Brake Slowdown.
    Why it matters
        The power brake is asserted by the system (for example its power supply) when it cannot deliver the
        power: every GPU so braked runs at a fraction of its speed. It usually means an undersized or failing
        PSU or a power-capped chassis.
    Threshold
        Reason active.
    Source
        NVML API reference: "HW Power Brake Slowdown (reducing the core clocks by a factor of 2 or more) is
        engaged. This is an indicator of: External Power Brake Assertion being triggered (e.g. by the system
        power supply)" (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html).
    How to fix
        Check the PSUs and their redundancy, the chassis power policy and the BMC event log.
    """
    yield from _slowdown_rule(rig, ctx, "powerbrake")


@rule("GA311", "hw-slowdown", area="health", severity="fail")
def hw_slowdown(rig: Rig, ctx: Context):
    """The GPU reports a generic hardware slowdown (clocks cut by half or more).

    What it checks
        NVML's current clocks-event reasons for HW Slowdown (the generic flag; the thermal and power-brake
        variants are GA308 and GA310).
    Why it matters
        HW slowdown is engaged for temperature, an external power brake or power draw too high for the fast
        trigger protection: the GPU runs at half speed or less.
    Threshold
        Reason active (without a more specific HW thermal or power-brake reason).
    Source
        NVML API reference, nvmlClocksThrottleReasonHwSlowdown
        (docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html); DCGM field docs list its causes.
    How to fix
        Check temperatures and power delivery (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER).
    """

    def generic(r: str) -> bool:
        return r in ("hwslowdown", "clockseventreasonhwslowdown", "clocksthrottlereasonhwslowdown")

    for g in rig.gpus:
        reasons = _reasons(g)
        if g.clocks_event_reasons is not None and _has(reasons, "hwthermal", "powerbrake"):
            continue  # the specific rule explains it
        yield from _clock_rule(
            Rig(gpus=[g]),
            ctx,
            generic,
            "hardware slowdown",
            "check temperatures and power delivery (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER)",
        )


@rule("GA312", "power-limit-below-default", area="gpu", severity="warn", thresholds=("power_limit_min_fraction",))
def power_limit_below_default(rig: Rig, ctx: Context):
    """A GPU's power limit is set below the board's default.

    What it checks
        NVML's current power management limit against the default limit of the board.
    Why it matters
        A lowered power limit caps clocks under load (SW power cap): throughput drops roughly in proportion
        for compute-bound training. Sometimes deliberate (power budget), often a leftover.
    Threshold
        limit < power_limit_min_fraction x default limit.
    Source
        NVML nvmlDeviceGetPowerManagementLimit / nvmlDeviceGetPowerManagementDefaultLimit; nvidia-smi -pl.
    How to fix
        Restore it with `nvidia-smi -i N -pl <default W>` (as root) if the cap was not intended.
    """
    frac = ctx.t("power_limit_min_fraction")
    for g in rig.gpus:
        if g.power_limit_w is None or g.power_default_limit_w is None:
            name = "power_limit_w" if g.power_limit_w is None else "power_default_limit_w"
            yield ctx.not_checked(missing(g, name, "power limit"), gpus=[g.index])
            continue
        if g.power_limit_w < frac * g.power_default_limit_w:
            yield ctx.finding(
                f"{subject(g)} power limit is {g.power_limit_w:g} W, below its default {g.power_default_limit_w:g} W",
                gpus=[g.index],
                subject=subject(g),
                observed={"power_limit_w": g.power_limit_w},
                expected={"power_default_limit_w": g.power_default_limit_w},
                expected_source="NVML default power management limit of the board",
                fix=f"if not intended: nvidia-smi -i {g.index} -pl {g.power_default_limit_w:g} (as root)",
            )


def _flagged(
    ctx: Context,
    rig: Rig,
    state: tuple[str, bool],
    what: str,
    texts: tuple[str, str, str],
    absent_when_unsupported: bool = False,
    severity: Callable[[list[int]], str | None] = lambda gpus: None,
) -> Iterator[Finding]:
    """One finding for the GPUs whose boolean setting ``state`` = (name, wrong value) is wrong; none if no GPU is.
    A GPU that does not report the setting (``what`` in words) is not checked, unless ``absent_when_unsupported``
    and the GPU says it has no such setting. ``texts``: the message (naming the GPUs as ``{gpus}``), the expected
    value's source and the fix."""
    name, wrong = state
    message, source, fix = texts
    gpus = []
    for g in rig.gpus:
        value = getattr(g, name)
        if value is None:
            reason = g.why(name)
            if not (absent_when_unsupported and reason and "not supported" in reason):
                yield ctx.not_checked(missing(g, name, what), gpus=[g.index])
        elif value is wrong:
            gpus.append(g.index)
    if gpus:
        yield ctx.finding(
            message.format(gpus=gpu_list(gpus)),
            gpus=gpus,
            subject=gpu_list(gpus),
            observed={name: wrong},
            expected={name: not wrong},
            expected_source=source,
            fix=fix,
            **({"severity": sev} if (sev := severity(gpus)) else {}),
        )


@rule("GA313", "persistence-mode-off", area="gpu", severity="warn")
def persistence_mode_off(rig: Rig, ctx: Context):
    """Persistence mode is off: the driver tears the GPU down whenever no process uses it.

    What it checks
        NVML's persistence mode of each GPU (Linux).
    Why it matters
        Without persistence every job start re-initialises the GPUs (1-3 s per GPU of ECC scrubbing) and
        non-persistent settings (application clocks, power limits set with nvidia-smi) are lost between jobs.
        Cluster health checks require it on.
    Threshold
        Persistence mode disabled: warn; info where every such GPU is a GeForce or TITAN card by its brand (NVML's
        brand, nvidia-smi -q's Product Brand, or the brand word of a name the table cut short): a desktop, whose
        display server keeps the driver loaded, and which has no ECC to scrub: the cost is a moment at job start.
    Source
        NVIDIA Driver Persistence (docs.nvidia.com/deploy/driver-persistence/): "order of 1-3 second startup
        cost per GPU due to ECC scrubbing", and the driver stays initialised while a client such as the X server
        holds it; Azure HPC NHC check_gpu_persistence (customTests/azure_gpu_persistence.nhc).
    How to fix
        Enable the persistence daemon (systemctl enable --now nvidia-persistenced) or, legacy, nvidia-smi -pm 1.
    """
    texts = (
        "persistence mode is off on {gpus}: every job start re-initialises the GPUs",
        "NVIDIA Driver Persistence documentation",
        "systemctl enable --now nvidia-persistenced (or nvidia-smi -pm 1 as root)",
    )
    by_index = {g.index: g for g in rig.gpus}

    def desktop(gpus: list[int]) -> str | None:
        return "info" if all(brands.desktop(brands.of(by_index[i].brand, by_index[i].name)) for i in gpus) else None

    yield from _flagged(ctx, rig, ("persistence_mode", False), "persistence mode", texts, severity=desktop)


@rule("GA314", "mig-enabled", area="gpu", severity="warn")
def mig_enabled(rig: Rig, ctx: Context):
    """MIG (Multi-Instance GPU) is enabled on a GPU of a training node.

    What it checks
        NVML's current MIG mode of each GPU.
    Why it matters
        A MIG-partitioned GPU is seen as several small GPUs: a training job gets one slice, and MIG instances
        cannot use NVLink or P2P (no CUDA IPC), so multi-GPU training falls back to host memory. Right for
        inference sharing, wrong for training.
    Threshold
        MIG mode enabled.
    Source
        NVIDIA MIG User Guide (docs.nvidia.com/datacenter/tesla/mig-user-guide/); RAPIDS MIG guide: "When
        using MIG, NVLink and NVSwitch are thus completely unavailable" (docs.rapids.ai/deployment/stable/guides/mig).
    How to fix
        Disable MIG for training: nvidia-smi -i N -mig 0 (as root, GPU idle), then reset the GPU.
    """
    texts = (
        "MIG is enabled on {gpus}: training sees small slices without NVLink or P2P",
        "NVIDIA MIG User Guide",
        "nvidia-smi -i N -mig 0 (as root, GPU idle), then reset the GPU",
    )
    # A GPU without MIG cannot have it enabled: not a gap in the facts.
    yield from _flagged(ctx, rig, ("mig_mode", True), "MIG mode", texts, absent_when_unsupported=True)


def _lost(g: Gpu) -> str | None:
    """Why the GPU cannot be read at all: no NVML handle ("*"), or NVML / nvidia-smi / lspci saying it is lost."""
    if "*" in g.unavailable:
        return g.unavailable["*"]
    for obj in (g, g.pcie):
        for reason in obj.unavailable.values():
            if reason.startswith(facts.GPU_LOST):
                return reason
    return None


@rule("GA315", "gpu-lost", area="health", severity="fail")
def gpu_lost(rig: Rig, ctx: Context):
    """A GPU is listed but cannot be read: it fell off the bus, or the driver cannot open it.

    What it checks
        Each GPU's facts for the reason NVML (NVML_ERROR_GPU_IS_LOST, or no device handle at all), nvidia-smi
        ("Unable to determine the device handle for GPU ...") or lspci (config space reads all ones: "rev ff",
        "Unknown header type 7f") gave for not reading them.
    Why it matters
        Such a GPU is unusable: jobs that are given it fail at start, and the other rules cannot check it
        (its facts are "not checked"). It is the state NVIDIA describes for Xid 79, "GPU has fallen off the
        bus", and it does not come back without a GPU reset or a reboot.
    Threshold
        Any GPU with such a reason.
    Source
        NVML API reference, NVML_ERROR_GPU_IS_LOST ("The GPU has fallen off the bus or has otherwise become
        inaccessible"; docs.nvidia.com/deploy/nvml-api/); NVIDIA Xid catalog, Xid 79
        (docs.nvidia.com/deploy/xid-errors/); PCI: a device that does not answer returns all ones on config
        reads (lspci shows "rev ff").
    How to fix
        Drain the node, read the kernel log for Xid 79 / AER errors (dmesg), reset the GPU (nvidia-smi -r -i
        N) or reboot; if it falls off again, reseat it, check its power cables and riser, and RMA it.
    """
    for g in rig.gpus:
        reason = _lost(g)
        if reason is None:
            continue
        yield ctx.finding(
            f"{subject(g)} cannot be read: {reason}",
            gpus=[g.index],
            subject=subject(g),
            observed={"reason": reason},
            expected="a GPU the driver can read",
            expected_source="NVML_ERROR_GPU_IS_LOST / nvidia-smi device handle / PCI config space",
            fix="drain the node, check dmesg for Xid 79 and AER errors, reset the GPU or reboot; reseat or RMA it if "
            "it falls off again",
        )
