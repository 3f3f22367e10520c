"""The NVSwitch fabric and the GPUs' processes, through NVML and the fabric manager's systemd unit.

NVML: ``nvmlDeviceGetGpuFabricInfoV`` (or the older ``nvmlDeviceGetGpuFabricInfo``; Hopper and later; state
NOT_SUPPORTED / NOT_STARTED / IN_PROGRESS / COMPLETED, an nvmlReturn_t status and, in the V form, a health mask
whose low two bits say whether the GPU's fabric bandwidth is degraded) and
``nvmlDeviceGetComputeRunningProcesses``. The fabric manager:
``systemctl is-active nvidia-fabricmanager`` (read-only, no privileges needed).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

from gpuadvisor.facts import Fabric, GpuFabric, GpuProcess, NodeState

from .nvml import Missing, Nvml

FABRIC_STATES = {0: "not-supported", 1: "not-started", 2: "in-progress", 3: "completed"}
# nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*_DEGRADED_BW: bits 0-1 of healthMask (0 not supported, 1 degraded, 2 not)
DEGRADED_BW_MASK, DEGRADED_BW_TRUE, DEGRADED_BW_FALSE = 0x3, 1, 2
FM_UNIT = "nvidia-fabricmanager"


def _uuid_text(v: Any) -> str | None:
    """The cluster UUID as text: nvidia-ml-py gives a ctypes array of 16 bytes (the simulator and older bindings
    bytes); all zeros is no cluster."""
    if v is not None and not isinstance(v, bytes | bytearray | str):
        try:
            v = bytes(v)  # a ctypes c_ubyte array
        except (TypeError, ValueError):
            return str(v)
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
        info = nv.fabric_info(h)
        if isinstance(info, Missing):
            for name in ("state", "status", "clique_id", "cluster_uuid", "degraded_bandwidth"):
                gf.missing(name, info.reason)
        else:
            gf.state = FABRIC_STATES.get(int(getattr(info, "state", -1)), f"unknown ({getattr(info, 'state', None)})")
            status = int(getattr(info, "status", 0))
            gf.status = "success" if status == 0 else f"NVML error {status}"
            gf.clique_id = int(getattr(info, "cliqueId", 0))
            gf.cluster_uuid = _uuid_text(getattr(info, "clusterUuid", None))
            mask = getattr(info, "healthMask", None)
            degraded = None if mask is None else int(mask) & DEGRADED_BW_MASK
            if degraded in (DEGRADED_BW_TRUE, DEGRADED_BW_FALSE):
                gf.degraded_bandwidth = degraded == DEGRADED_BW_TRUE
            else:
                gf.missing(
                    "degraded_bandwidth",
                    "not reported by this driver (older NVML without the fabric health mask)"
                    if mask is None
                    else "the fabric health mask does not report bandwidth on this GPU",
                )
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
    fabric.missing("nvswitches", "read from a pasted fabric manager log only (live: the GPUs' NVLinks tell)")
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
