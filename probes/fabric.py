"""The NVSwitch fabric and the GPUs' processes, through NVML and the fabric manager's systemd unit.

NVML: ``nvmlDeviceGetGpuFabricInfo`` (Hopper and later; state NOT_SUPPORTED / NOT_STARTED / IN_PROGRESS /
COMPLETED and an nvmlReturn_t status) and ``nvmlDeviceGetComputeRunningProcesses``. The fabric manager:
``systemctl is-active nvidia-fabricmanager`` (read-only, no privileges needed).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from gpuadvisor.facts import Fabric, GpuFabric, GpuProcess, NodeState

from .nvml import Missing, Nvml

FABRIC_STATES = {0: "not-supported", 1: "not-started", 2: "in-progress", 3: "completed"}
FM_UNIT = "nvidia-fabricmanager"


def _uuid_text(v: Any) -> str | None:
    if isinstance(v, bytes | bytearray):
        if not any(v):
            return None
        if len(v) == 16:
            h = bytes(v).hex()
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return bytes(v).decode("ascii", "replace").strip("\0") or None
    return str(v) if v else None


def probe_fabric(nv: Nvml, handles: list[Any], indices: list[int]) -> list[GpuFabric]:
    out = []
    for index, h in zip(indices, handles, strict=False):
        gf = GpuFabric(gpu_index=index)
        info = nv.query("nvmlDeviceGetGpuFabricInfo", h)
        if isinstance(info, Missing):
            for name in ("state", "status", "clique_id", "cluster_uuid"):
                gf.missing(name, info.reason)
        else:
            gf.state = FABRIC_STATES.get(int(getattr(info, "state", -1)), f"unknown ({getattr(info, 'state', None)})")
            status = int(getattr(info, "status", 0))
            gf.status = "success" if status == 0 else f"NVML error {status}"
            gf.clique_id = int(getattr(info, "cliqueId", 0))
            gf.cluster_uuid = _uuid_text(getattr(info, "clusterUuid", None))
            if gf.state == "not-supported":
                gf.unavailable["status"] = "fabric not supported on this GPU (no NVSwitch fabric)"
        out.append(gf)
    return out


def probe_processes(nv: Nvml, handles: list[Any], indices: list[int], node: NodeState) -> None:
    procs: list[GpuProcess] = []
    for index, h in zip(indices, handles, strict=False):
        got = nv.first(["nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses"], h)
        if isinstance(got, Missing):
            node.missing("gpu_processes", got.reason)
            return
        for p in got or []:
            used = getattr(p, "usedGpuMemory", None)
            procs.append(
                GpuProcess(
                    gpu_index=index,
                    pid=int(getattr(p, "pid", 0)),
                    used_bytes=int(used) if isinstance(used, int) and used < 2**63 else None,
                )
            )
    node.gpu_processes = procs


def fabric_manager_state(timeout_s: float = 3.0) -> tuple[str | None, str | None]:
    """(state, None) from systemctl is-active, or (None, reason)."""
    exe = shutil.which("systemctl")
    if exe is None:
        return None, "systemctl not found (not a systemd host, or a container)"
    try:
        out = subprocess.run(
            [exe, "is-active", FM_UNIT], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"systemctl is-active {FM_UNIT} failed: {e}"
    state = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
    if state in ("active", "inactive", "failed", "activating", "deactivating", "reloading"):
        if state == "inactive":
            load = subprocess.run(
                [exe, "show", "-p", "LoadState", "--value", FM_UNIT],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            ).stdout.strip()
            if load == "not-found":
                return "not-installed", None
        return state, None
    why = state or (out.stderr.strip().splitlines() or ["no answer"])[0]
    return None, f"systemctl is-active {FM_UNIT}: {why}"


def collect_fabric(
    nv: Nvml | None, handles: list[Any], indices: list[int], *, live: bool, nvml_reason: str | None = None
) -> Fabric:
    fabric = Fabric()
    if nv is None:
        fabric.missing("gpus", nvml_reason or "no NVML")
    else:
        fabric.gpus = probe_fabric(nv, handles, indices)
    if live:
        state, reason = fabric_manager_state()
        if state is None:
            fabric.missing("manager_state", reason or "")
        else:
            fabric.manager_state = state
    return fabric
