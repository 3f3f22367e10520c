"""GA828: error lines about the GPU stack in a log given to the tool that no sign of its catalog judges."""

from __future__ import annotations

from collections.abc import Iterator

from gpuadvisor.catalog import error_codes
from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.kernel import tally
from gpuadvisor.rules.registry import rule

SHOWN = 3  # lines quoted in the finding's message (all kept ones are in its evidence)


@rule("GA828", "log-lines-not-judged", area="health", severity="info")
def log_lines_not_judged(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """A log holds GPU-stack error lines no sign of the catalog judges, or an application's own CUDA error (not the
    node's fault).

    What it checks
        Each line of a kernel or service log that reports a failure (error, failed, fatal, timed out,
        lost, fell off, exceeded, ...) about the GPU stack (a GPU, CUDA, NVML, NCCL, NVRM, NVLink, NVSwitch, an
        RDMA adapter, the fabric manager, ECC) and that no event this tool reads stands for (an Xid, an SXid, a lost
        GPU's sign, an AER error, a link flap, a unit that failed to start). "0 errors", "error: 0" and the kernel's
        taint notice for an out-of-tree module are not failures. And a program's line printing an application's
        own CUDA error by number, name or message: cudaErrorMemoryAllocation (2, out of memory),
        cudaErrorIllegalAddress (700, "an illegal memory access was encountered"), cudaErrorLaunchFailure (719,
        "unspecified launch failure").
    Why it matters
        The other rules judge the lines they know; a log with a failure in words the catalog does not hold would
        otherwise read "no fault in the logs given". This one says which lines were not judged, so the reader
        reads them before deciding to drain, reset or leave the node. An application's own error is the job's: the
        CUDA Runtime API says of 700 and 719 that the process is left in an inconsistent state and must be
        terminated and relaunched, not that the device failed; the Xid catalog treats the same faults seen by the
        driver (Xid 13, 31, 43) as the application's. The GPU is fine unless the kernel log shows the GPU's own Xid
        (48, 63, 64, 74, 79, 94, 95) at the same time.
    Threshold
        Any such line of a log given to ``import``; in a live scan, any such line of the NVIDIA driver's own
        (``NVRM:``, ``nvidia*``: the probe reads the node's kernel log for the GPU's driver, not every driver's);
        info, because the tool cannot say what the line means: it is evidence to read, not a verdict.
    Source
        NVIDIA's Xid catalog and the driver's documented kernel-log messages are what the other rules judge; lines
        outside them are listed here instead of being taken for "no fault". The CUDA Runtime API (Data types:
        cudaError_t) for the application's own errors.
    How to fix
        Read the lines in the log (their line numbers are in the evidence): look their message up in the
        documentation of the program that wrote it (the driver's Xid catalog, NCCL's troubleshooting guide, the
        fabric manager's user guide, the RDMA adapter's driver notes) and act on what it says. An application's own
        CUDA error: debug the job (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer; for out of memory a smaller batch or
        fewer processes per GPU); do not drain the node for it.
    """
    log = rig.kernel
    if log.events is None:
        return  # no log: the other kernel-log rules say so
    yield from _app_faults(rig, ctx)
    lines = [e for e in log.events if e.kind == "unjudged"]
    if not lines:
        return  # every error line about the GPU stack is an event the other rules judge
    n = tally(lines)
    quoted = "; ".join(f"line {e.line}: {e.text[:120]!r}" for e in lines[:SHOWN])
    more = f" (and {n - SHOWN} more)" if n > SHOWN else ""
    yield ctx.finding(
        f"{n} error line(s) about the GPU stack in the log match no sign this tool knows, so they are not judged: "
        f"{quoted}{more}",
        subject="host",
        observed={"count": n, "lines": [{"line": e.line, "text": e.text} for e in lines]},
        expected="each failure of the GPU stack judged by a sign of the catalog",
        expected_source="NVIDIA Xid catalog and the driver's kernel-log messages (what GA801-GA827 judge)",
        fix="read these lines: look their message up in the documentation of the program that wrote it and act "
        "on it; the tool's other findings do not cover them",
    )


def _app_faults(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An application's own CUDA error (error_codes' table: out of memory, an illegal address, a launch failure): one
    finding per code, at the table's verdict (info): the job's fault, not the node's, unless the GPU's Xids follow."""
    for e, seen in error_codes.groups(rig.kernel.events, error_codes.APP_FAULT):
        yield ctx.finding(
            f"an application fault: {error_codes.said(e, seen)}: {e.meaning}; the GPU is fine unless the kernel log "
            "shows the GPU's own Xid at the same time",
            gpus=sorted({ev.gpu_index for ev in seen if ev.gpu_index is not None}),
            subject="host",
            observed=error_codes.evidence(e, seen),
            expected="the job's CUDA calls succeeding",
            expected_source=f"{e.source}: {e.names[0]} = {e.code}",
            fix=e.action,
            severity=e.verdict,
        )
