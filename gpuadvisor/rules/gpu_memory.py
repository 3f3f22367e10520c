"""GA302-GA307: a GPU's memory health: ECC errors, retired pages, row remapping."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpuadvisor.facts import Finding, Gpu, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import missing, subject
from gpuadvisor.rules.registry import rule

MEMORY_RETIREMENT = "memory retirement (retired pages, remapped rows)"


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
        An application's log saying CUDA returned cudaErrorECCUncorrectable ("CUDA error: uncorrectable ECC
        error encountered", PyTorch's error or its NCCL watchdog's) is the same fault met by the job: the GPU's
        memory failed under it; the GPU is the one the line names by bus id, else unknown (find it by its
        counters).
    Threshold
        Any uncorrected error (volatile or aggregate > 0); any such CUDA error in a log.
    Source
        Azure HPC NHC fails a node on any uncorrectable SRAM ECC error (github.com/Azure/azurehpc-health-checks
        customTests/azure_gpu_ecc.nhc); NVIDIA GPU memory error management
        (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/); CUDA Runtime API, cudaErrorECCUncorrectable (214).
    How to fix
        Drain the GPU, reset it (nvidia-smi -r) so pending remaps/retirements take effect, run DCGM diagnostics
        (dcgmi diag -r 3); if errors recur, RMA the GPU.
    """
    yield from _ecc_in_log(rig, ctx)
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


CUDA_ECC_DOC = (
    "CUDA Runtime API, cudaErrorECCUncorrectable (214): 'an uncorrectable ECC error was detected during execution'; "
    "NVIDIA GPU memory error management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/)"
)


def _ecc_in_log(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """CUDA's uncorrectable-ECC error an application's log shows: the GPU's memory failed under the job (fail), on
    the GPU the line names (its bus id), else on a GPU to be found."""
    for ev in (e for e in rig.kernel.events or [] if e.kind == "cuda-ecc-uncorrectable"):
        g = next((x for x in rig.gpus if ev.gpu_index is not None and x.index == ev.gpu_index), None)
        who = subject(g) if g else f"GPU {ev.bus_id}" if ev.bus_id else "a GPU of this node (the log names none)"
        yield ctx.finding(
            f"{who}: the job hit an uncorrectable ECC error (line {ev.line}: {ev.text}): the GPU's memory failed "
            "under it",
            gpus=[g.index] if g else [],
            subject=who,
            observed={"evidence": ev.text, "line": ev.line},
            expected={"uncorrected": 0},
            expected_source=CUDA_ECC_DOC,
            fix="drain the node; find the GPU by its counters (nvidia-smi -q -d ECC,ROW_REMAPPER: uncorrectable "
            "volatile errors, pending remaps), reset it (nvidia-smi -r) and run dcgmi diag -r 3; RMA it if the "
            "errors recur",
        )


# GA303's corrected-error counts, SRAM first (the first one over its limit is reported): (the scan's fields,
# observed key, message naming {subject}, {n} and {limit}, expected source). Limits: ecc_corrected_max, then
# ecc_dram_corrected_max.
_CORRECTED = (
    (
        ("ecc_errors_corrected_sram_volatile", "ecc_errors_corrected_sram_aggregate"),
        "sram_corrected",
        "{subject} has corrected {n} SRAM ECC errors (above {limit:.0f}): its on-chip memory is degrading",
        "Azure HPC NHC check_gpu_ecc SRAM correctable threshold 10000",
    ),
    (
        ("ecc_errors_corrected_volatile", "ecc_errors_corrected_aggregate"),
        "corrected",
        "{subject} has corrected {n} ECC errors (above {limit:.0f})",
        "Azure HPC NHC check_gpu_ecc DRAM threshold 20000000",
    ),
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
    limits = (ctx.t("ecc_corrected_max"), ctx.t("ecc_dram_corrected_max"))
    for g in rig.gpus:
        reason = _ecc_missing(g, "ecc_errors_corrected_aggregate", "ecc_errors_corrected_volatile")
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
            continue
        for (fields, key, text, source), limit in zip(_CORRECTED, limits, strict=True):
            counts = [n for n in (getattr(g, f) for f in fields) if n is not None]
            if counts and max(counts) > limit:
                n = max(counts)
                yield ctx.finding(
                    text.format(subject=subject(g), n=n, limit=limit),
                    gpus=[g.index],
                    subject=subject(g),
                    observed={key: n},
                    expected={f"{key}_max": limit},
                    expected_source=source,
                    fix="watch the trend, run dcgmi diag -r 3; plan an RMA if it keeps rising",
                )
                break  # the SRAM count, when it is over, is the one reported


def _per_gpu(
    rig: Rig, ctx: Context, applies: Callable[[Gpu], tuple[bool, str | None]], check: Callable[[Gpu], Iterator[Finding]]
) -> Iterator[Finding]:
    """``check`` on each GPU the memory scheme applies to; a GPU whose counters are missing is not checked."""
    for g in rig.gpus:
        ok, reason = applies(g)
        if reason:
            yield ctx.not_checked(reason, gpus=[g.index])
        if ok:
            yield from check(g)


# GA304 and GA306: a GPU flag that says memory repair waits for a reset -> (message, expected source, fix);
# the message may name {subject}, the fix {index}.
_PENDING = {
    "retired_pages_pending": (
        "{subject} has memory pages pending retirement: reset the GPU or reboot to retire them",
        "NVIDIA Dynamic Page Retirement",
        "drain the node and reboot (or reset the GPU) so the pending pages are retired",
    ),
    "remapped_rows_pending": (
        "{subject} has a row remapping pending: reset the GPU to apply it",
        "NVIDIA row remapping: a GPU reset applies pending remaps",
        "drain the GPU and reset it (nvidia-smi -r -i {index}) or reboot the node",
    ),
}


def _pending(ctx: Context, flag: str) -> Callable[[Gpu], Iterator[Finding]]:
    """A check for a GPU whose boolean ``flag`` (a key of ``_PENDING``) is set."""
    message, source, fix = _PENDING[flag]

    def check(g: Gpu) -> Iterator[Finding]:
        if getattr(g, flag):
            yield ctx.finding(
                message.format(subject=subject(g)),
                gpus=[g.index],
                subject=subject(g),
                observed={flag: True},
                expected={flag: False},
                expected_source=source,
                fix=fix.format(index=g.index),
            )

    return check


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

    yield from _per_gpu(rig, ctx, _retirement_applies, _pending(ctx, "retired_pages_pending"))


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

    def check(g: Gpu) -> Iterator[Finding]:
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

    yield from _per_gpu(rig, ctx, _retirement_applies, check)


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

    yield from _per_gpu(rig, ctx, _remap_applies, _pending(ctx, "remapped_rows_pending"))


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

    def check(g: Gpu) -> Iterator[Finding]:
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

    yield from _per_gpu(rig, ctx, _remap_applies, check)
