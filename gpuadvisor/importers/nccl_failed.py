"""An nccl-tests run that failed before it listed its devices or printed a row: what each rank printed as it failed.

nccl-tests' checks (src/common.h: CUDACHECK, NCCLCHECK, TESTCHECK) print, per failing rank, ``HOST: Test CUDA
failure common.cu:941 'invalid device ordinal'`` (the host name, the source line, cudaGetErrorString's words; NCCL's
``Test NCCL failure ...`` with ncclGetErrorString's) and, as the error returns up the stack, `` .. HOST pid PID: Test
failure common.cu:891``. Read: one failed measurement (its collective as the run names it, or not named) with the
error, the hosts and the ranks (their pids) that printed it, and a note of what the error says of the launch:
``invalid device ordinal`` (cudaErrorInvalidDevice) is a rank asking for a GPU index beyond those its process sees
(more ranks per host x ``-g`` than the host's visible GPUs, or CUDA_VISIBLE_DEVICES narrowing them): a launch
configuration error, no GPU fault.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpuadvisor.facts import Measurement, Rig
from gpuadvisor.importers.nccl_launch import BINARIES

if TYPE_CHECKING:
    from gpuadvisor.importers.nccl import NcclRun

_CHECK = re.compile(r"^\s*(?:\S+\s+)?([\w.-]{1,63}): Test (CUDA|NCCL) failure (\S+:\d+) '([^'\n]{1,200})'?")
_RETURN = re.compile(r"^\s*\.\.\s+([\w.-]{1,63}) pid (\d+): Test failure (\S+:\d+)")
# what a failing check's words say of the run (cudaGetErrorString / ncclGetErrorString), and the action
_MEANS = {
    "invalid device ordinal": "a launch configuration error: a rank asked for a GPU index beyond those its process "
    "sees (ranks per host x -g above the host's visible GPUs, or CUDA_VISIBLE_DEVICES); fix the ranks / -g split "
    "(nccl-tests' README: mpirun -np <hosts x GPUs> with -g 1, or one process per host with -g <GPUs>) and rerun; no "
    "GPU fault",
    "out of memory": "the GPU's memory ran out at the run's sizes or another process holds it: lower -e (maxBytes) "
    "or free the GPU",
}


def _scan(run: NcclRun) -> tuple[dict[str, None], dict[str, None], dict[str, int], int]:
    """The hosts, the pids and the errors (with their count) the failing ranks printed, and the first's line."""
    hosts: dict[str, None] = {}
    pids: dict[str, None] = {}
    errors: dict[str, int] = {}
    first = 0
    for lineno, line in run.failed_lines:
        if m := _CHECK.match(line):
            hosts[m.group(1)] = None
            said = f"Test {m.group(2)} failure {m.group(3)} '{m.group(4).rstrip()}'"
            said = next((x for x in errors if x.startswith(said.rstrip("'"))), said)  # the paste's cut last line
            errors[said] = errors.get(said, 0) + 1
            first = first or lineno
        elif m := _RETURN.match(line):
            hosts[m.group(1)] = None
            pids[m.group(2)] = None
    return hosts, pids, errors, first


def meanings(run: NcclRun, source: str) -> list[str]:
    """What the errors the ranks printed say of the launch (see the module's text), as notes."""
    hosts, _, errors, first = _scan(run)
    on = f" on host(s) {', '.join(hosts)}" if hosts else ""
    return [
        f"{source}: line {first}: nccl-tests: {e}{on}: {means}"
        for e in errors
        if (means := next((v for k, v in _MEANS.items() if k in e), None))
    ]


def read(run: NcclRun, source: str) -> Rig:
    """The failed run (see the module's text)."""
    hosts, pids, errors, first = _scan(run)
    rig = Rig()
    if not errors:
        first, said = run.failure or (run.header_line or 1, "failed")
        errors[said] = 1
    ranks = f"; {len(pids)} rank(s) shown failing (pids {', '.join(list(pids)[:8])})" if pids else ""
    on = f" on host(s) {', '.join(hosts)}" if hosts else ""
    told = "; ".join(f"{e} (x{n})" for e, n in errors.items())
    run_m = Measurement(
        kind="collective" if run.binary is None else BINARIES.get(run.binary, run.binary),
        backend="nccl",
        provenance="imported",
        method=f"nccl-tests {run.binary}_perf" if run.binary else "nccl-tests, collective not named",
        status="failed",
        error=f"failed before its first size: {told}{on}{ranks}",
        world_size=run.world_size,
    )
    run_m.unavailable["gpus"] = "the run failed before it listed its devices"
    rig.measurements.append(run_m)
    rig.origins["measurements[0]"] = f"{source}:{first}"
    if hosts:
        rig.host.hostname = next(iter(hosts))
    rig.problems += meanings(run, source)
    return rig
