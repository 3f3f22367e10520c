"""GA3xx: the GPUs themselves: models, memory errors, clock slowdowns, power, persistence, MIG."""

from __future__ import annotations

from collections import Counter

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import gpu_list, missing, norm, subject
from gpuadvisor.rules.registry import rule

MEMORY_RETIREMENT = "memory retirement (retired pages, remapped rows)"


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
    if any(g.name is None for g in rig.gpus):
        g = next(g for g in rig.gpus if g.name is None)
        yield ctx.not_checked(missing(g, "name", "GPU name"), gpus=[g.index])
        return

    def key(g: Gpu) -> str:
        mem = f" {g.memory_total_bytes / 2**30:.0f} GiB" if g.memory_total_bytes else ""
        return f"{g.name}{mem}"

    models = Counter(key(g) for g in rig.gpus)
    if len(models) > 1:
        yield ctx.finding(
            "the rig mixes GPU models: " + ", ".join(f"{n}x {m}" for m, n in models.most_common()),
            gpus=[g.index for g in rig.gpus],
            subject=gpu_list(g.index for g in rig.gpus),
            observed={m: [g.index for g in rig.gpus if key(g) == m] for m in models},
            expected="one GPU model",
            expected_source="synchronous data parallel: identical GPUs in a group (every step waits for the slowest "
            "rank)",
            fix="train on identical GPUs (CUDA_VISIBLE_DEVICES) and set CUDA_DEVICE_ORDER=PCI_BUS_ID",
        )


def _ecc_missing(g: Gpu, *fields: str) -> str | None:
    if all(getattr(g, f) is None for f in fields):
        return missing(g, fields[0], "ECC error counters")
    return None


@rule("GA302", "ecc-uncorrectable-errors", area="health", severity="fail")
def ecc_uncorrectable_errors(rig: Rig, ctx: Context):
    """A GPU has uncorrectable (double-bit) ECC memory errors.

    What it checks
        NVML's uncorrected ECC error counters, volatile (since the driver loaded) and aggregate (lifetime).
    Why it matters
        An uncorrectable error kills the process that touched the memory (Xid 48/94/95) and may have
        corrupted data silently before. One is enough to treat the GPU as suspect.
    Threshold
        Any uncorrected error (volatile or aggregate > 0).
    Source
        Azure HPC NHC fails a node on any uncorrectable SRAM ECC error (github.com/Azure/azurehpc-health-checks
        customTests/azure_gpu_ecc.nhc); NVIDIA GPU memory error management
        (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/).
    How to fix
        Drain the GPU, reset it (nvidia-smi -r) so pending remaps/retirements take effect, run DCGM diagnostics
        (dcgmi diag -r 3); if errors recur, RMA the GPU.
    """
    for g in rig.gpus:
        reason = _ecc_missing(g, "ecc_errors_uncorrected_volatile", "ecc_errors_uncorrected_aggregate")
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
            continue
        vol = g.ecc_errors_uncorrected_volatile or 0
        agg = g.ecc_errors_uncorrected_aggregate or 0
        if vol > 0 or agg > 0:
            yield ctx.finding(
                f"{subject(g)} has uncorrectable ECC errors (volatile={vol}, aggregate={agg})",
                gpus=[g.index],
                subject=subject(g),
                observed={"uncorrected_volatile": vol, "uncorrected_aggregate": agg},
                expected={"uncorrected": 0},
                expected_source="Azure HPC NHC: any uncorrectable ECC error fails the node",
                fix="drain the GPU, reset it (nvidia-smi -r), run dcgmi diag -r 3; RMA if errors recur",
            )


@rule(
    "GA303",
    "ecc-corrected-errors-high",
    area="health",
    severity="warn",
    thresholds=("ecc_corrected_max", "ecc_dram_corrected_max"),
)
def ecc_corrected_errors_high(rig: Rig, ctx: Context):
    """A GPU has corrected many single-bit ECC memory errors.

    What it checks
        The corrected SRAM ECC errors (on-chip memory: register files, caches; volatile and aggregate, where
        the scan splits them, as nvidia-smi -q does from Ampere on) against ecc_corrected_max, and the
        corrected errors in total (NVML's count, DRAM and SRAM together) against ecc_dram_corrected_max.
    Why it matters
        Corrected errors are harmless one by one, but a high count points at degrading memory cells that
        precede uncorrectable errors and row remapping. SRAM errors matter at far lower counts than DRAM
        errors: HBM/GDDR correct and remap single cells routinely.
    Threshold
        ecc_corrected_max corrected SRAM errors; ecc_dram_corrected_max corrected errors in all.
    Source
        Azure HPC NHC check_gpu_ecc (github.com/Azure/azurehpc-health-checks customTests/azure_gpu_ecc.nhc;
        conf/nd96isr_h100_v5.conf 'check_gpu_ecc 20000000 10000': 20,000,000 for DRAM counts, 10,000 for
        SRAM correctable counts).
    How to fix
        Watch the trend; run dcgmi diag -r 3 and the memory test; plan an RMA if the count keeps rising.
    """
    sram_limit = ctx.t("ecc_corrected_max")
    total_limit = ctx.t("ecc_dram_corrected_max")
    for g in rig.gpus:
        reason = _ecc_missing(g, "ecc_errors_corrected_aggregate", "ecc_errors_corrected_volatile")
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
            continue
        srams = [
            n for n in (g.ecc_errors_corrected_sram_volatile, g.ecc_errors_corrected_sram_aggregate) if n is not None
        ]
        totals = [n for n in (g.ecc_errors_corrected_volatile, g.ecc_errors_corrected_aggregate) if n is not None]
        if srams and max(srams) > sram_limit:
            n = max(srams)
            yield ctx.finding(
                f"{subject(g)} has corrected {n} SRAM ECC errors (above {sram_limit:.0f}): its on-chip memory is "
                "degrading",
                gpus=[g.index],
                subject=subject(g),
                observed={"sram_corrected": n},
                expected={"sram_corrected_max": sram_limit},
                expected_source="Azure HPC NHC check_gpu_ecc SRAM correctable threshold 10000",
                fix="watch the trend, run dcgmi diag -r 3; plan an RMA if it keeps rising",
            )
        elif totals and max(totals) > total_limit:
            n = max(totals)
            yield ctx.finding(
                f"{subject(g)} has corrected {n} ECC errors (above {total_limit:.0f})",
                gpus=[g.index],
                subject=subject(g),
                observed={"corrected": n},
                expected={"corrected_max": total_limit},
                expected_source="Azure HPC NHC check_gpu_ecc DRAM threshold 20000000",
                fix="watch the trend, run dcgmi diag -r 3; plan an RMA if it keeps rising",
            )


def _retirement_applies(g: Gpu) -> tuple[bool, str | None]:
    """Page retirement is the pre-Ampere scheme; on GPUs with row remapping it does not apply."""
    have_retired = (
        g.retired_pages_pending is not None
        or g.retired_pages_single_bit is not None
        or g.retired_pages_double_bit is not None
    )
    have_remap = g.remapped_rows_pending is not None or g.remapped_rows_uncorrectable is not None
    if have_retired:
        return True, None
    if have_remap:
        return False, None
    return False, missing(g, "retired_pages_pending", MEMORY_RETIREMENT)


@rule("GA304", "retired-pages-pending", area="health", severity="warn")
def retired_pages_pending(rig: Rig, ctx: Context):
    """A GPU has memory pages waiting to be retired (pre-Ampere page retirement).

    What it checks
        NVML's retired-pages pending flag (V100 and older; Ampere and later use row remapping, GA306).
    Why it matters
        A page marked for retirement is still in use until the driver reloads: the GPU keeps hitting the bad
        cells until it is reset or the node reboots.
    Threshold
        Pending flag set.
    Source
        NVIDIA Dynamic Page Retirement (docs.nvidia.com/deploy/topics/topic_2_1_1.html); Azure HPC NHC
        (customTests/azure_gpu_ecc.nhc) and azhpc-diagnostics: pending retirement is fixed by a reboot.
    How to fix
        Drain the node and reboot it (or reload the driver / reset the GPU) so the pages are retired.
    """
    for g in rig.gpus:
        applies, reason = _retirement_applies(g)
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
        if not applies:
            continue
        if g.retired_pages_pending:
            yield ctx.finding(
                f"{subject(g)} has memory pages pending retirement: reset the GPU or reboot to retire them",
                gpus=[g.index],
                subject=subject(g),
                observed={"retired_pages_pending": True},
                expected={"retired_pages_pending": False},
                expected_source="NVIDIA Dynamic Page Retirement",
                fix="drain the node and reboot (or reset the GPU) so the pending pages are retired",
            )


@rule("GA305", "retired-pages-near-limit", area="health", severity="fail", thresholds=("retired_pages_max",))
def retired_pages_near_limit(rig: Rig, ctx: Context):
    """A GPU has retired almost as many memory pages as it can (pre-Ampere page retirement).

    What it checks
        Retired pages (single-bit plus double-bit causes) against retired_pages_max.
    Why it matters
        Page retirement can retire at most 64 pages per frame buffer; a GPU near that limit cannot protect
        itself from further failing cells and is an RMA candidate.
    Threshold
        retired_pages_max pages.
    Source
        NVIDIA GPU memory error management: "Supported a maximum of 64 retirements for the frame buffer"
        (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html); Azure HPC NHC fails a V100 at 62
        retired pages with a pending retirement (customTests/azure_gpu_ecc.nhc).
    How to fix
        Run dcgmi diag -r 3 and the NVIDIA field diagnostic; RMA the GPU.
    """
    limit = ctx.t("retired_pages_max")
    for g in rig.gpus:
        applies, reason = _retirement_applies(g)
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
        if not applies:
            continue
        total = (g.retired_pages_single_bit or 0) + (g.retired_pages_double_bit or 0)
        if total >= limit:
            yield ctx.finding(
                f"{subject(g)} has {total} retired memory pages (limit 64; reported from {limit:g})",
                gpus=[g.index],
                subject=subject(g),
                observed={
                    "retired_pages": total,
                    "single_bit": g.retired_pages_single_bit,
                    "double_bit": g.retired_pages_double_bit,
                },
                expected={"retired_pages_below": limit},
                expected_source="NVIDIA: at most 64 page retirements per frame buffer",
                fix="run dcgmi diag -r 3 and the NVIDIA field diagnostic; RMA the GPU",
            )


def _remap_applies(g: Gpu) -> tuple[bool, str | None]:
    have_remap = (
        g.remapped_rows_pending is not None
        or g.remapped_rows_failure is not None
        or g.remapped_rows_uncorrectable is not None
    )
    if have_remap:
        return True, None
    if g.retired_pages_pending is not None or g.retired_pages_single_bit is not None:
        return False, None  # a pre-Ampere GPU: page retirement instead (GA304/GA305)
    return False, missing(g, "remapped_rows_pending", MEMORY_RETIREMENT)


@rule("GA306", "row-remap-pending", area="health", severity="warn")
def row_remap_pending(rig: Rig, ctx: Context):
    """A GPU has memory rows waiting to be remapped (Ampere and later).

    What it checks
        NVML's remapped-rows pending flag.
    Why it matters
        The row remapper replaces a failing memory row with a spare one only at the next GPU reset; until
        then the GPU runs with the row blocked by error containment. Production health checks drain such
        nodes.
    Threshold
        Pending flag set.
    Source
        NVIDIA GPU memory error management, row remapping ("requires a GPU reset to take effect";
        docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html); Azure HPC NHC fails on a pending
        remap (customTests/azure_gpu_ecc.nhc); Meta GCM row_remap check (CRITICAL on pending).
    How to fix
        Drain the GPU and reset it (nvidia-smi -r -i N) or reboot the node.
    """
    for g in rig.gpus:
        applies, reason = _remap_applies(g)
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
        if applies and g.remapped_rows_pending:
            yield ctx.finding(
                f"{subject(g)} has a row remapping pending: reset the GPU to apply it",
                gpus=[g.index],
                subject=subject(g),
                observed={"remapped_rows_pending": True},
                expected={"remapped_rows_pending": False},
                expected_source="NVIDIA row remapping: a GPU reset applies pending remaps",
                fix=f"drain the GPU and reset it (nvidia-smi -r -i {g.index}) or reboot the node",
            )


@rule("GA307", "row-remap-failure", area="health", severity="fail", thresholds=("row_remap_uncorrectable_max",))
def row_remap_failure(rig: Rig, ctx: Context):
    """A GPU's row remapper has failed or is exhausted (Ampere and later).

    What it checks
        NVML's row-remapping failure flag, and the rows remapped for uncorrectable errors against
        row_remap_uncorrectable_max.
    Why it matters
        A failed remapping means a bad memory row could not be replaced: the GPU can no longer contain that
        memory fault. NVIDIA's RMA criteria are met.
    Threshold
        Failure flag set, or row_remap_uncorrectable_max uncorrectable remaps.
    Source
        NVIDIA RMA policy for row remapping (failure flag; 512 uncorrectable remaps;
        docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html).
    How to fix
        Take the GPU out of service, run the NVIDIA field diagnostic and RMA it.
    """
    limit = ctx.t("row_remap_uncorrectable_max")
    for g in rig.gpus:
        applies, reason = _remap_applies(g)
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
        if not applies:
            continue
        unc = g.remapped_rows_uncorrectable or 0
        if g.remapped_rows_failure or unc >= limit:
            yield ctx.finding(
                f"{subject(g)} row remapping failed (failure flag={bool(g.remapped_rows_failure)}, "
                f"uncorrectable remaps={unc}): the GPU meets NVIDIA's RMA criteria",
                gpus=[g.index],
                subject=subject(g),
                observed={"remapped_rows_failure": bool(g.remapped_rows_failure), "remapped_rows_uncorrectable": unc},
                expected={"remapped_rows_failure": False, "remapped_rows_uncorrectable_below": limit},
                expected_source="NVIDIA RMA policy for row remapping",
                fix="take the GPU out of service, run the NVIDIA field diagnostic and RMA it",
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
    yield from _clock_rule(
        rig,
        ctx,
        lambda r: "hwthermal" in r,
        "hardware thermal slowdown",
        "check fans, airflow and inlet temperature; clean filters; service the heatsink",
    )


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
    yield from _clock_rule(
        rig,
        ctx,
        lambda r: "swthermal" in r,
        "software thermal slowdown",
        "improve cooling: airflow, fan curve, inlet temperature; space out the cards",
    )


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
    yield from _clock_rule(
        rig,
        ctx,
        lambda r: "powerbrake" in r,
        "hardware power brake",
        "check the power supplies and their redundancy, the chassis power policy and the BMC event log",
    )


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
        Persistence mode disabled.
    Source
        NVIDIA Driver Persistence (docs.nvidia.com/deploy/driver-persistence/): "order of 1-3 second startup
        cost per GPU due to ECC scrubbing"; Azure HPC NHC check_gpu_persistence
        (customTests/azure_gpu_persistence.nhc).
    How to fix
        Enable the persistence daemon (systemctl enable --now nvidia-persistenced) or, legacy, nvidia-smi -pm 1.
    """
    off = []
    for g in rig.gpus:
        if g.persistence_mode is None:
            yield ctx.not_checked(missing(g, "persistence_mode", "persistence mode"), gpus=[g.index])
        elif g.persistence_mode is False:
            off.append(g.index)
    if off:
        yield ctx.finding(
            f"persistence mode is off on {gpu_list(off)}: every job start re-initialises the GPUs",
            gpus=off,
            subject=gpu_list(off),
            observed={"persistence_mode": False},
            expected={"persistence_mode": True},
            expected_source="NVIDIA Driver Persistence documentation",
            fix="systemctl enable --now nvidia-persistenced (or nvidia-smi -pm 1 as root)",
        )


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
    on = []
    for g in rig.gpus:
        if g.mig_mode is None:
            reason = g.why("mig_mode")
            if reason and "not supported" in reason:
                continue  # a GPU without MIG cannot have it enabled
            yield ctx.not_checked(missing(g, "mig_mode", "MIG mode"), gpus=[g.index])
        elif g.mig_mode:
            on.append(g.index)
    if on:
        yield ctx.finding(
            f"MIG is enabled on {gpu_list(on)}: training sees small slices without NVLink or P2P",
            gpus=on,
            subject=gpu_list(on),
            observed={"mig_mode": True},
            expected={"mig_mode": False},
            expected_source="NVIDIA MIG User Guide",
            fix="nvidia-smi -i N -mig 0 (as root, GPU idle), then reset the GPU",
        )


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
