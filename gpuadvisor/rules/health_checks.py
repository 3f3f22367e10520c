"""GA827: another health checker's own verdict (DCGM's dcgmi diag, LBNL NHC, NVSentinel), imported with its output."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuadvisor.facts import Finding, HealthCheck, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.registry import rule
from gpuadvisor.rules.software import CONTAINER_RUNTIME

# dcgmi diag's sections (DCGM User Guide, "GPU Diagnostics": run levels and the plugins of each): Deployment tests the
# software and the environment (libraries, permissions, persistence mode, processes, the inforom, pending page
# retirements); Integration, Hardware and Stress exercise the GPU itself (PCIe, memory, the diagnostic, stress).
DCGM_SOFTWARE = ("deployment", "software", "metadata")
DCGM_SOURCE = "NVIDIA DCGM User Guide, GPU Diagnostics (dcgmi diag run levels, plugins and their pass criteria)"
SENTINEL_SOURCE = "NVIDIA NVSentinel (node conditions from DCGM health watches; DCGM's error table, dcgm_errors.h)"
NHC_SOURCE = "LBNL Node Health Check (github.com/mej/nhc): a failed check marks the node offline in the scheduler"

SLURM_SOURCE = "Slurm scontrol(1) (node State codes, Reason) and slurm.conf(5)/gres.conf(5) (a node's configured GRES)"

K8S_SOURCE = (
    "Kubernetes docs, Schedule GPUs (the nvidia.com/gpu resource a device plugin registers) and Pod Lifecycle; "
    "NVIDIA GPU Feature Discovery's generated labels; NVIDIA GPU Operator troubleshooting"
)
DEVICE_PLUGIN = "NVIDIA device plugin"  # the Xid relay's tool (importers/xid_relay.py)
PLUGIN_SOURCE = (
    "NVIDIA k8s-device-plugin's health check (internal/rm/health.go: an Xid it counts as critical marks the device "
    "unhealthy, and nothing marks it healthy again before the plugin restarts); Kubernetes docs, Device Plugins (the "
    "kubelet leaves an unhealthy device out of the node's allocatable resources)"
)
NO_DEVICES_SOURCE = (
    "nvidia-smi prints 'No devices were found' when NVML lists no GPU (NVML API reference, nvmlDeviceGetCount); NVIDIA "
    "Docker 1.0's plugin lists each GPU it finds after 'Discovering GPU devices' (github.com/NVIDIA/nvidia-docker, "
    "its 1.0 branch)"
)
SOURCES = {
    "NVSentinel": SENTINEL_SOURCE,
    "Slurm": SLURM_SOURCE,
    "Kubernetes": K8S_SOURCE,
    DEVICE_PLUGIN: PLUGIN_SOURCE,
    "nvidia-smi": NO_DEVICES_SOURCE,
    "nvidia-docker-plugin": NO_DEVICES_SOURCE,
    "gpu_burn": "gpu_burn (github.com/wilicc/gpu-burn, gpu_burn-drv.cpp): each GPU's results compared, OK or FAULTY",
}

# The next step DCGM prints after a failure's message (dcgm_errors.h): a hardware fault asks for a field
# diagnostic; a test that could not run (a CUDA call failed, the GPU busy or unavailable) or a setting asks to check
# the system and rerun, or to fix the configuration.
DCGM_HARDWARE_NEXT = "Run a field diagnostic on the GPU"
DCGM_RETRY_NEXT = ("Rerun diagnostics", "Check DCGM and system configuration", "Verify that the cooling")


_NVLINK_DOWN = re.compile(r"NvLink link \d+ is currently down")  # DCGM_FR_NVLINK_DOWN's message


def _nvlink_in_use(rig: Rig, gpus: list[int]) -> bool:
    """Whether the scan shows NVLink carrying traffic on any of ``gpus`` (all GPUs when none is named): an active
    link, or an NV# cell of the topology."""
    named = [g for g in rig.gpus if not gpus or g.index in gpus]
    if any(link.active for g in named for link in g.nvlinks):
        return True
    return any(cell.startswith("NV") for row in rig.topology.matrix or [] for cell in row)


# NHC's checks that count the node's GPUs (deepops' check_nv_gpu_count, AzNHC's check_gpu_count): the node has not the
# GPUs it is configured for, and NHC has marked it offline
_NHC_GPU_COUNT = re.compile(r"gpu_count|gpu_num", re.IGNORECASE)


# NHC's check of the node's InfiniBand or Omni-Path ports (lbnl_hw.nhc check_hw_ib): "No IB port hfi1_0:1 is ACTIVE
# (LinkUp 100 Gb/sec)." where no port (of the device named) is Active and LinkUp at the site's rate; the words in
# parentheses are what the site expects, not the state found (mej/nhc issue 32); "Version mismatch between kernel OFED
# drivers and userspace OFED libraries." where the user-level MAD driver is not there, as with the adapter removed
# (mej/nhc issue 111). The node has no fabric port the site requires: no multi-node job runs on it.
_NHC_FABRIC = re.compile(r"^check_hw_ib$")


def _severity(hc: HealthCheck, rig: Rig) -> str:
    """Fail for a failed DCGM test of the GPU itself (NVIDIA's diagnostic, with documented pass criteria) unless
    DCGM's own next step says the test could not run or a setting is wrong, for a failed NHC check of the GPU count
    (GPUs missing: the node is offline and cannot run what it is sized for) and for a failed NHC check of the fabric
    ports (check_hw_ib: no port the site requires is up); warn for the others, a failed DCGM deployment check, any
    warning, and any other NHC check (a site's own thresholds, which gpuadvisor can judge only from the facts the
    check looked at)."""
    if hc.tool == "NHC" and hc.verdict == "fail" and (_NHC_GPU_COUNT.search(hc.check) or _NHC_FABRIC.match(hc.check)):
        return "fail"
    if hc.tool == DEVICE_PLUGIN:  # a GPU out of the scheduler's pool: the node is short of what it is sized for
        return "fail"
    if hc.tool == "nvidia-smi" and hc.verdict == "fail":  # no GPU answers on a host whose GPU service looked for them
        return "fail"
    if hc.tool != "dcgmi diag" or hc.verdict != "fail":
        return "warn"
    if _NVLINK_DOWN.search(hc.detail) and not _nvlink_in_use(rig, hc.gpus):
        # every link down on a GPU the scan does not show using NVLink (a PCIe card without a bridge) is what DCGM
        # 2.x reported on such systems (DCGM issue 49); a link down where NVLink is in use fails (with GA204)
        return "warn"
    if DCGM_HARDWARE_NEXT in hc.detail:
        return "fail"
    if any(n in hc.detail for n in DCGM_RETRY_NEXT):
        return "warn"
    return "warn" if (hc.section or "").lower() in DCGM_SOFTWARE else "fail"


def _fix(hc: HealthCheck, severity: str) -> str:
    if hc.tool == "NHC" and _NHC_FABRIC.match(hc.check):
        return (
            "NHC has taken the node offline: its message names the port state the site requires, not the one it "
            "found: read the port with ibstat (Down or Polling: the cable or the switch port; Init or Armed: the "
            "subnet manager, opensm or Omni-Path's opafm, has not activated it; no adapter listed: reseat it and "
            "load its driver), then run nhc again and resume the node once it passes"
        )
    if hc.tool == "NHC":
        return (
            "NHC has taken the node offline in the scheduler: fix what the check names (its message says what it "
            "found against what the site's nhc.conf expects), run nhc again, and resume the node once it passes"
        )
    if hc.tool == "Slurm":
        return (
            'Slurm has taken the node out of service for the Reason it gives: fix what it names ("gres/gpu count '
            "reported lower than configured\" is slurmd finding fewer GPUs than slurm.conf's Gres says: check "
            "nvidia-smi on the node, the driver, and gres.conf or its NVML AutoDetect, then restart slurmd), then "
            "scontrol update nodename=NODE state=resume"
        )
    if hc.tool == "Kubernetes":
        return (
            "a GPU operator pod that crash-loops: read its logs (kubectl logs POD -n NAMESPACE --all-containers, "
            "--previous for the run that crashed) and fix what they name; a node whose labels count GPUs its "
            "nvidia.com/gpu capacity does not give: check nvidia-smi on the node and the device plugin's log (no "
            "devices found, NVML errors, a container runtime not set up for NVIDIA), then restart the plugin's pod"
        )
    if hc.tool == DEVICE_PLUGIN:
        return (
            "the device plugin took this GPU out of the node's allocatable nvidia.com/gpu after an Xid, and "
            "keeps it out until the plugin restarts: do what the Xid asks (GA801: reset the GPU with nvidia-smi -r, or "
            "reboot, for a driver or hardware Xid), then restart the device plugin's pod; drain the node and test the "
            "GPU (dcgmi diag -r 3) if it is marked again"
        )
    if hc.tool == "nvidia-smi" or hc.check == "GPU discovery":
        return (
            "no GPU answers on this GPU host: drain the node, read the kernel log for the lost GPUs (dmesg | grep -i "
            "-e nvrm -e xid: RmInitAdapter failed, Xid 79 fallen off the bus) and lspci -nnk | grep -iA3 nvidia "
            "(on the bus? bound to nvidia?), then reset the GPUs or reboot; one that stays lost after a cold boot is "
            "a hardware case (reseat, RMA)"
        )
    if hc.tool == "NVSentinel":
        return (
            "NVSentinel set this node condition from DCGM's health watch: check what its message names on the node "
            "(a daemon such as IMEX matters only where the system is configured to use it) before its recommended "
            "action; clear the condition once DCGM's health check passes"
        )
    if severity == "fail":
        return (
            "drain the node; do what DCGM's message asks (reset the GPU, restart nv-hostengine), then run the same "
            "dcgmi diag level again: a GPU test that fails again is a hardware case (RMA)"
        )
    return (
        "do what DCGM's message asks (find what holds the GPU or fix the setting it names; reset the GPU, restart "
        "nv-hostengine), then run the same dcgmi diag level again before the node takes jobs"
    )


@rule("GA827", "health-check-failed", area="health", severity="fail")
def health_check_failed(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """Another health checker, run on the node, reported a check that failed or warned.

    What it checks
        The verdicts imported with a health checker's output: each test dcgmi diag marked Fail or Warn (with its
        section and the Warning text under it), each check LBNL NHC reported as "Health check failed", each
        node Slurm's scontrol show node gives as drained, down or not responding (its State and Reason), each
        NVSentinel node condition ("ErrorCode:DCGM_FR_... GPU:N ... Recommended Action=...;", DCGM's health watch),
        each Kubernetes node whose GPU Feature Discovery labels count GPUs its nvidia.com/gpu capacity or
        allocatable does not give (or that is not Ready), each GPU operator pod in a crash loop or an error; the
        NVIDIA Docker plugin stopped at 'Discovering GPU devices' (warn) and, with it, nvidia-smi's "No devices
        were found": a GPU host none of whose GPUs answers (fail).
    Why it matters
        These checkers test what a scan cannot see by itself (DCGM's memory, PCIe and stress tests run kernels on
        the GPU; NHC checks the site's expected hardware and services). A node they fail is a node the scheduler
        should not give to a job until the cause is fixed, and a gate that reads their output must not pass it.
    Threshold
        A failed DCGM test of the GPU (Integration, Hardware or Stress section) fails, unless its failures are NVLink
        links down on GPUs the scan does not show using NVLink (DCGM 2.x failed PCIe cards without a bridge so), or
        DCGM's own next step
        says the test could not run or a setting is at fault ("Check DCGM and system logs for errors. Reset GPU.
        Restart DCGM. Rerun diagnostics."; "Check DCGM and system configuration"); those, a failed DCGM deployment
        check, a DCGM warning, a failed NHC check (the site's own thresholds) and an NVSentinel condition (a
        watch's threshold, not a test of the GPU) warn, as does a node Slurm took out of service (its reason is
        about the node's configuration or daemon as often as its hardware), as do Kubernetes' (a device plugin
        or an operator pod fails on its deployment as often as on the GPU). A failed NHC check of the GPU count
        (check_nv_gpu_count, AzNHC's check_gpu_count) fails: GPUs are missing (lost, or the config is wrong) and NHC
        has marked the node offline. A failed NHC check of the fabric ports (check_hw_ib: "No IB port hfi1_0:1 is
        ACTIVE (LinkUp 100 Gb/sec)") fails too: no port the site requires is Active (one port down among others that
        are up is GA803's warning; here none is), so no multi-node job can run on the node. A GPU NVIDIA's device
        plugin marked unhealthy (after an Xid it counts as critical) fails: the scheduler no longer gives it to pods,
        and the plugin keeps it so until it restarts.
    Source
        NVIDIA DCGM User Guide, GPU Diagnostics, and DCGM's error table (dcgm_errors.h: each failure's message,
        next step and severity); LBNL Node Health Check (github.com/mej/nhc); Slurm's scontrol(1); Kubernetes docs,
        Schedule GPUs, and NVIDIA GPU Feature Discovery's labels.
    How to fix
        Follow the checker's message, fix the cause, and run the same check again before the node takes jobs.
    """
    checks = rig.node.health_checks
    if not checks:
        return  # no checker's output was given (a live scan runs neither): nothing to judge, nothing missing
    seen: set[tuple[str, str, str, tuple[int, ...]]] = set()
    for hc in checks:
        key = (hc.tool, hc.check, hc.verdict, tuple(hc.gpus))
        if key in seen or hc.tool in (CONTAINER_RUNTIME, "libibverbs"):  # GA507, GA829 judge those
            continue
        seen.add(key)
        severity = _severity(hc, rig)
        on = f" on GPU {', '.join(map(str, hc.gpus))}" if hc.gpus else ""
        where = f" ({hc.section})" if hc.section else ""
        said = f": {hc.detail[:300]}" if hc.detail else ""
        yield ctx.finding(
            f"{hc.tool}: {hc.check or 'a check'}{where} {hc.verdict.upper()}{on}{said} ({hc.evidence})",
            gpus=hc.gpus if hc.tool in ("dcgmi diag", DEVICE_PLUGIN) else (),
            severity=severity,
            subject=f"{hc.tool} {hc.check}".strip(),
            observed={
                "tool": hc.tool,
                "check": hc.check,
                "verdict": hc.verdict,
                "section": hc.section,
                "detail": hc.detail[:300],
                "evidence": hc.evidence,
            },  # fmt: skip
            expected={"verdict": "pass"},
            expected_source=DCGM_SOURCE if hc.tool == "dcgmi diag" else SOURCES.get(hc.tool, NHC_SOURCE),
            fix=_fix(hc, severity),
        )
