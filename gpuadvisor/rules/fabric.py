"""GA809-GA812: the NVSwitch fabric, GPUs the driver lost, GPU memory held, /dev/shm."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuadvisor import catalog
from gpuadvisor.facts import Finding, Gpu, Rig
from gpuadvisor.facts.beyond import FABRIC_NOT_CONFIGURED
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import missing
from gpuadvisor.rules.registry import rule
from gpuadvisor.rules.thresholds_beyond import NCCL_TROUBLESHOOTING

GiB = 2**30
FM_GUIDE = "NVIDIA Fabric Manager User Guide (docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)"


def _nvswitch(rig: Rig) -> bool:
    """The box has NVSwitches: a GPU's NVLink ends on one, an SXid in the kernel log, the fabric manager's log
    configured them, or a GPU's fabric state is past "not supported" (set only where a fabric exists)."""
    return (
        any(n.remote_device_type == "switch" for g in rig.gpus for n in g.nvlinks)
        or any(e.kind == "sxid" for e in rig.kernel.events or [])
        or rig.fabric.nvswitches is True
    )


# brands sold only as PCIe cards (consumer and workstation): never on an NVSwitch baseboard, whose GPUs are SXM modules
_CARD_BRANDS = re.compile(r"\b(?:GeForce|TITAN|Quadro|RTX|PCIe)\b", re.IGNORECASE)
# the same as NVML / nvidia-smi -q name the brand ("NVIDIA RTX": the workstation cards, RTX A6000 and later)
_CARD_BRAND_WORDS = {"geforce", "geforce rtx", "titan", "titan rtx", "quadro", "quadro rtx", "nvidia rtx", "nvs"}


# the smallest GPU on an NVSwitch baseboard: V100 SXM3 32 GB (DGX-2/HGX-2); HGX A100 40/80 GB, H100 and later more
_SWITCHED_MIN_BYTES = 30 * 2**30


def _card(gpu: Gpu) -> bool:
    """A GPU that is no NVSwitch baseboard's SXM module: by the catalog's form factor, by its brand (NVML's or
    nvidia-smi's, or the brand word of a name nvidia-smi cut short), or by a memory smaller than any such module's."""
    spec = catalog.find_gpu(gpu.name)
    if spec is not None:
        return spec.form_factor != "sxm"
    small = gpu.memory_total_bytes is not None and gpu.memory_total_bytes < _SWITCHED_MIN_BYTES
    by_brand = (gpu.brand or "").lower() in _CARD_BRAND_WORDS
    return small or by_brand or bool(gpu.name and _CARD_BRANDS.search(gpu.name))


def _no_nvswitch(rig: Rig) -> bool:
    """The box has no NVSwitch, by the fabric manager's own word (NV_WARN_NOTHING_TO_DO), by GPUs whose NVLinks
    were read and end on none, or by GPUs that are all cards (NVSwitch baseboards carry SXM modules only)."""
    if rig.fabric.nvswitches is False:
        return True
    if _nvswitch(rig) or not rig.gpus:
        return False
    return all(g.nvlinks for g in rig.gpus) or all(_card(g) for g in rig.gpus)


@rule("GA809", "fabric-not-ready", area="nvlink", severity="fail")
def fabric_not_ready(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The NVSwitch fabric is not set up: a GPU not registered, or the fabric manager not running.

    What it checks
        Each GPU's fabric state and status (NVML GPU fabric info, nvidia-smi -q "Fabric": Completed / Success
        expected, Hopper and later), NCCL's "Failed to bind NVLink SHARP (NVLS) Multicast memory" error, CUDA's
        error 802 ("system not yet initialized", cudaErrorSystemNotReady), the IMEX daemon's log and, on
        NVSwitch systems, the nvidia-fabricmanager service.
    Why it matters
        On HGX/DGX systems the fabric manager programs the NVSwitches. Until it has, CUDA fails to start
        (cudaErrorSystemNotReady) or the GPUs cannot reach each other over NVLink; a fabric manager of another
        version than the driver does not start.
    Threshold
        A GPU in Not Started or In Progress, or Completed with an error status: fail. A GPU whose fabric health
        reports degraded bandwidth (NVML fabric health mask, nvidia-smi -q "Fabric / Health / Bandwidth:
        Degraded"): warn. NCCL unable to bind NVLS multicast memory: fail. CUDA error 802: fail, warn on a box
        shown to have no NVSwitch (another daemon missing). Fabric manager failed, inactive or not
        installed on an NVSwitch system: fail, or warn when every GPU already shows Completed. An IMEX log that ends
        at an error (the daemon exits): fail.
    Source
        NVIDIA Fabric Manager User Guide (fabric state, "nvidia-smi -q -i 0 | grep -i -A 2 Fabric"; the
        fabric manager and driver versions must match).
    How to fix
        systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager for the reason (a
        version mismatch with the driver is the usual one: install the package of the driver's exact version).
    """
    fab = rig.fabric
    nvswitch = _nvswitch(rig)
    bad = [
        g
        for g in fab.gpus or []
        if g.state in ("not-started", "in-progress") or (g.state == "completed" and g.status not in (None, "success"))
    ]
    for g in bad:
        yield ctx.finding(
            (
                f"GPU {g.gpu_index} finished NVLink fabric registration with an error: {g.status}"
                if g.state == "completed"
                else f"GPU {g.gpu_index} is not registered with the NVLink fabric (state {g.state})"
            ),
            gpus=[g.gpu_index],
            subject=f"GPU {g.gpu_index}",
            observed={"fabric_state": g.state, "fabric_status": g.status},
            expected={"fabric_state": "completed", "fabric_status": "success"},
            expected_source=FM_GUIDE,
            fix="start the fabric manager (systemctl start nvidia-fabricmanager) and check its log for the reason",
        )
    for g in fab.gpus or []:
        if g not in bad and (g.health_summary or "").lower() == "unhealthy":
            bad.append(g)
            yield ctx.finding(
                f"GPU {g.gpu_index}'s NVLink fabric health is Unhealthy (nvidia-smi -q Fabric / Health / Summary)",
                gpus=[g.gpu_index],
                subject=f"GPU {g.gpu_index}",
                observed={"fabric_health_summary": g.health_summary, "fabric_state": g.state},
                expected={"fabric_health_summary": "Healthy"},
                expected_source=FM_GUIDE,
                fix="drain the node; read the fabric manager log and nvidia-smi nvlink -s / -e, reset the GPUs and "
                "NVSwitches (or reboot); a tray or cable that stays unhealthy is a support case",
            )
    for g in fab.gpus or []:
        if g.degraded_bandwidth and g not in bad:
            yield ctx.finding(
                f"GPU {g.gpu_index}'s NVLink fabric bandwidth is degraded (fabric health)",
                severity="warn",
                gpus=[g.gpu_index],
                subject=f"GPU {g.gpu_index}",
                observed={"fabric_degraded_bandwidth": True},
                expected={"fabric_degraded_bandwidth": False},
                expected_source="NVML nvmlDeviceGetGpuFabricInfoV health mask (NVML API Reference); " + FM_GUIDE,
                fix="read the fabric manager log and nvidia-smi nvlink -s / -e for links down or erroring; drain "
                "the node from NVLink-heavy jobs until the tray or cable is serviced",
            )
    nvls = [e for e in rig.kernel.events or [] if e.kind == "nvls-bind-failed"]
    if nvls:  # NVLink SHARP lives in the NVSwitches: a bind that fails is the fabric's, not the job's
        yield ctx.finding(
            f"{nvls[0].text} (x{len(nvls)}, line {nvls[0].line}): the NVSwitch fabric is not set up for it, NCCL "
            "blames the fabric manager or the NVSwitches; every NCCL job that uses NVLS fails at init",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={"evidence": nvls[0].text, "count": len(nvls), "first_line": nvls[0].line},
            expected={"nvls_multicast_bind": "success"},
            expected_source="NCCL src/transport/nvls.cc ('usually caused by a system or configuration error in the "
            "Fabric Manager or NVSwitches'); " + FM_GUIDE,
            fix="systemctl status nvidia-fabricmanager (start it: systemctl enable --now nvidia-fabricmanager) and "
            "nvidia-smi -q | grep -A 2 Fabric (every GPU Completed / Success); a fabric manager restarted without a "
            "GPU reset leaves multicast broken: reset the GPUs and NVSwitches or reboot; in a container, load "
            "nvidia-caps-imex-channels and expose its devices where the system uses IMEX; NCCL_NVLS_ENABLE=0 only as "
            "a stopgap",
        )
    yield from _cuda_not_ready(rig, ctx)
    yield from _dcgm_nvswitch(rig, ctx)
    yield from _imex_failed(rig, ctx)
    if not nvswitch and not bad and fab.manager_state != "failed":
        return  # a fabric manager that failed is evidence of an NVSwitch system, unless the box shows none
    if fab.manager_state is None:
        yield ctx.not_checked(missing(fab, "manager_state", "fabric manager state"), subject="host")
        return
    if fab.manager_state in ("active", "activating", "reloading"):
        return
    if not nvswitch and not bad and _no_nvswitch(rig):
        said = fab.nvswitches is False
        yield ctx.finding(
            f"nvidia-fabricmanager is {fab.manager_state} on a box without NVSwitch"
            + (" (NV_WARN_NOTHING_TO_DO: it found no NVSwitch to manage)" if said else " (no NVLink ends on one)")
            + ": nothing for it to do, the GPUs do not need it",
            severity="info",
            subject="host",
            observed={"manager_state": fab.manager_state, "detail": fab.manager_detail, "nvswitches": False},
            expected={"manager_state": "active only on NVSwitch systems (HGX/DGX)"},
            expected_source=FM_GUIDE,
            fix="nothing to fix: disable the service (systemctl disable nvidia-fabricmanager) so it stops failing; "
            "an NVLink bridge between two cards needs no fabric manager",
        )
        return
    done = bool(fab.gpus) and all(g.state == "completed" and g.status == "success" for g in fab.gpus or [])
    shown, fix = _manager_fix(fab.manager_detail or "")
    yield ctx.finding(
        f"nvidia-fabricmanager is {fab.manager_state}"
        + (" on an NVSwitch system" if nvswitch else "")
        + (f" ({fab.manager_detail})" if shown else "")
        + ("; the GPUs registered before it stopped" if done else ""),
        severity="warn" if done else "fail",
        gpus=[g.index for g in rig.gpus],
        subject="host",
        observed={"manager_state": fab.manager_state, "detail": fab.manager_detail},
        expected={"manager_state": "active"},
        expected_source=FM_GUIDE,
        fix=fix,
    )


def _manager_fix(detail: str) -> tuple[bool, str]:
    """Whether the fabric manager's detail belongs in the message, and the fix its failure calls for."""
    if "does not match" in detail:
        return True, (
            "install the fabric manager package of the loaded driver's exact version (or the driver matching it), "
            "then systemctl enable --now nvidia-fabricmanager; a configuration fix, not the hardware"
        )
    if "nvidia-fabricmanager-start.sh" in detail:
        return True, (
            "pass the start script the options its usage lists (--mode start, --fm-config-file FILE, --args ...): "
            "the driver container or service gave it one it does not know; then restart it; a configuration fix, not "
            "the hardware"
        )
    if detail.startswith(FABRIC_NOT_CONFIGURED):
        return True, (
            "restart the fabric manager once the driver has loaded every GPU and NVSwitch (systemctl restart "
            "nvidia-fabricmanager; a service started too early in boot, before the driver, fails like this: order "
            "it after the driver), then check nvidia-smi -q | grep -A 2 Fabric (every GPU Completed / Success); if it "
            "fails again, reset the GPUs and NVSwitches or reboot, and read the fabric manager log"
        )
    return False, (
        "systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager (a fabric manager "
        "of another version than the driver will not start)"
    )


IMEX_GUIDE = "NVIDIA IMEX Guide (docs.nvidia.com/multi-node-nvlink-systems/imex-guide/: nodes_config.cfg, start-up)"


def _imex_failed(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The IMEX daemon's log ends at an error: it did not start, and the domain's memory sharing is down until its
    configuration is fixed (a configuration matter, not the GPUs, NVLink or NVSwitches)."""
    if rig.fabric.imex_state != "failed":
        return
    said = {"imex_state": "failed", "detail": rig.fabric.imex_detail}
    yield ctx.finding(
        f"the IMEX daemon did not start ({said['detail']}): the multi-node NVLink domain cannot share GPU memory "
        "until it does",
        observed=said,
        expected={"imex_state": "started"},
        subject="host",
        expected_source=IMEX_GUIDE,
        fix="fix the IMEX configuration the error names (for 'No matching network interface found': list this "
        "node's own IP addresses in nodes_config.cfg, or the ComputeDomain's pod addresses), then restart "
        "nvidia-imex and check nvidia-imex-ctl -N; a configuration fix, not the hardware",
    )


CUDA_NOT_READY_DOC = (
    "CUDA Runtime API, cudaErrorSystemNotReady (802): 'the system is not yet ready to start any CUDA work ... verify "
    "the system configuration is in a valid state and all required driver daemons are actively running'; " + FM_GUIDE
)


def _cuda_not_ready(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """CUDA's error 802 (system not yet initialized): on an NVSwitch system, or one whose GPUs are not known, the
    fabric manager has not registered the GPUs and no CUDA work can start (fail); on a box shown to have no
    NVSwitch another driver daemon is missing (warn: not the fabric)."""
    seen = [e for e in rig.kernel.events or [] if e.kind == "cuda-not-ready"]
    if not seen:
        return
    none = _no_nvswitch(rig)
    yield ctx.finding(
        f"{seen[0].text} (x{len(seen)}, line {seen[0].line}): CUDA cannot start any work"
        + (
            "; this box shows no NVSwitch, so the missing daemon is not the fabric manager"
            if none
            else ": on an NVSwitch system (HGX/DGX, A100/H100 SXM) the fabric manager is not running or has not "
            "registered the GPUs yet"
        ),
        severity="warn" if none else "fail",
        gpus=[g.index for g in rig.gpus],
        subject="host",
        observed={"evidence": seen[0].text, "count": len(seen), "first_line": seen[0].line},
        expected={"cuda_init": "success"},
        expected_source=CUDA_NOT_READY_DOC,
        fix="check the driver's daemons (nvidia-persistenced; in confidential computing the GPUs' ready state)"
        if none
        else "install nvidia-fabricmanager of the driver's exact version and systemctl enable --now "
        "nvidia-fabricmanager; nvidia-smi -q | grep -A 2 Fabric until every GPU is Completed / Success; no GPU is "
        "faulty",
    )


def _dcgm_nvswitch(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The ERROR lines of DCGM's NvSwitch module in its host engine log: DCGM cannot read the NVSwitches through
    NSCQ (none on the box, or libnvidia-nscq missing): its monitoring's noise, never a fabric fault (info)."""
    seen = [e for e in rig.kernel.events or [] if e.kind == "dcgm-error" and e.text.startswith("[[NvSwitch]]")]
    if not seen:
        return
    yield ctx.finding(
        f"DCGM's host engine: {seen[0].text} (x{len(seen)}, line {seen[0].line}): DCGM's NVSwitch module cannot "
        "read NVSwitches through NSCQ (the box has none, or libnvidia-nscq is missing or of another version); its "
        "monitoring's noise, not a fabric fault",
        severity="info",
        subject="host",
        observed={"evidence": seen[0].text, "count": len(seen), "first_line": seen[0].line},
        expected={"dcgm_nvswitch_module": "attached (NVSwitch systems only)"},
        expected_source="DCGM modules/nvswitch (DcgmNvSwitchManager::ReadNvSwitchStatusAllSwitches: 'Not attached "
        "to NvSwitches' when NSCQ is not attached)",
        fix="on a box without NVSwitch nothing to fix (lower DCGM's log level: __DCGM_DBG_LVL in dcgm.env, or "
        "nv-hostengine --log-level); on an NVSwitch system install libnvidia-nscq of the driver's version",
    )


@rule("GA810", "gpu-missing-from-driver", area="gpu", severity="fail")
def gpu_lost(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An NVIDIA GPU is on the PCI bus but the driver (NVML) does not list it.

    What it checks
        NVIDIA display and 3D controllers in sysfs (lspci) against the GPUs NVML returned.
    Why it matters
        A GPU that fell off the bus (Xid 79), failed to initialise or was left in a bad state after a reset
        is still on the bus but gone for CUDA: jobs that expect eight GPUs see seven.
    Threshold
        Any such function fails; inside a container, which sees the host's PCI bus but only the GPUs given
        to it, the finding is a warning.
    Source
        NVIDIA Xid catalog, Xid 79 ("GPU has fallen off the bus"); nvidia-smi lists only the GPUs the driver
        initialised.
    How to fix
        Look for Xid 79 or "fallen off the bus" in the kernel log; reset the GPU (nvidia-smi -r) or reboot the
        node; a GPU that stays lost after a cold boot is a hardware case (reseat, then RMA).
    """
    funcs = rig.node.nvidia_pci_functions
    if funcs is None:
        yield ctx.not_checked(missing(rig.node, "nvidia_pci_functions", "NVIDIA PCI functions"), subject="host")
        return
    known = {(g.bus_id or "").lower() for g in rig.gpus}
    if rig.gpus and any(not g.bus_id for g in rig.gpus):  # nvidia-smi -L: no bus ids, only the count compares
        yield from _fewer_gpus(rig, ctx, funcs)
        return
    lost = [f for f in funcs if f.lower() not in known]
    if not lost:
        return
    container = "NVIDIA_VISIBLE_DEVICES" in rig.software.env
    xid79 = {e.bus_id for e in rig.kernel.events or [] if e.code == 79}
    # imported: nvidia-smi's "Unable to determine the device handle", or lspci's GPUs against nvidia-smi's list
    said = rig.origins.get("node.nvidia_pci_functions", "")
    for bdf in lost:
        fell = bdf.rsplit(".", 1)[0] in xid79
        pasted = rig.source.kind == "imported" and "Unable to determine" in said
        yield ctx.finding(
            f"NVIDIA GPU {bdf} is on the PCI bus but not among the {len(rig.gpus)} GPUs the driver lists"
            + ("; nvidia-smi could not open it ('Unable to determine the device handle')" if pasted else "")
            + ("; lspci lists it, nvidia-smi does not" if rig.source.kind == "imported" and not pasted else "")
            + ("; the kernel log has Xid 79 (fallen off the bus) for it" if fell else "")
            + ("; this scan ran in a container, which may simply not have been given it" if container else ""),
            severity="warn" if container else "fail",
            subject=f"PCI {bdf}",
            observed={"pci_function": bdf, "nvml_gpus": len(rig.gpus), "xid79": fell},
            expected={"nvml_gpus": len(funcs)},
            expected_source="sysfs NVIDIA functions vs NVML device count",
            fix="reset the GPU or reboot; if it stays lost after a cold boot, reseat it and open a support case",
        )


def _fewer_gpus(rig: Rig, ctx: Context, funcs: list[str]) -> Iterator[Finding]:
    """GA810 when the driver's GPUs carry no bus id (nvidia-smi -L): fewer GPUs than the bus has fails, which one
    is not known."""
    if len(funcs) <= len(rig.gpus):
        return
    yield ctx.finding(
        f"{len(funcs)} NVIDIA GPUs on the PCI bus ({', '.join(funcs[:8])}{', ...' if len(funcs) > 8 else ''}) but "
        f"the driver lists {len(rig.gpus)}: {len(funcs) - len(rig.gpus)} lost (its output gives no bus ids to say "
        "which: nvidia-smi --query-gpu=pci.bus_id --format=csv does)",
        subject="host",
        observed={"pci_functions": len(funcs), "nvml_gpus": len(rig.gpus)},
        expected={"nvml_gpus": len(funcs)},
        expected_source="sysfs NVIDIA functions vs NVML device count",
        fix="reset the GPU or reboot; if it stays lost after a cold boot, reseat it and open a support case",
    )


@rule("GA811", "gpu-memory-held", area="gpu", severity="warn", thresholds=("gpu_memory_held_gib",))
def gpu_memory_held(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """Processes hold GPU memory at scan time (a job still running, or a stuck one).

    What it checks
        The compute processes NVML lists on each GPU and the memory they hold; a graphics-only process ('G' in
        nvidia-smi's Type column: the display server, a desktop compositor) is the display's own use, not memory
        left held by a job, and is not counted.
    Why it matters
        Memory held by a leftover process (a crashed rank, a notebook kernel) is memory the next job cannot
        have: it fails with out-of-memory or runs a smaller batch, and the GPU is shared without anyone knowing.
    Threshold
        More than gpu_memory_held_gib GiB held on a GPU.
    Source
        NVML nvmlDeviceGetComputeRunningProcesses (nvidia-smi's process table).
    How to fix
        Find the owner (ps -o user,cmd -p PID) and end it if it is left over; in a scheduler, make the epilog
        check that the GPUs are free.
    """
    procs = rig.node.gpu_processes
    if procs is None:
        if rig.gpus:
            yield ctx.not_checked(missing(rig.node, "gpu_processes", "GPU processes"), subject="host")
        return
    for g in rig.gpus:
        mine = [p for p in procs if p.gpu_index == g.index and p.kind != "G"]
        held = sum(p.used_bytes or 0 for p in mine)
        if held <= ctx.t("gpu_memory_held_gib") * GiB:
            continue
        who = ", ".join(f"{p.pid}" + (f" {p.name}" if p.name else "") for p in mine[:4])
        yield ctx.finding(
            f"GPU {g.index}: {len(mine)} process(es) hold {held / GiB:.1f} GiB of GPU memory (PID {who})",
            gpus=[g.index],
            subject=f"GPU {g.index}",
            observed={"processes": len(mine), "held_gib": round(held / GiB, 1), "pids": [p.pid for p in mine]},
            expected={"held_gib": ctx.t("gpu_memory_held_gib")},
            expected_source="an idle node holds no GPU memory",
            fix="end leftover processes (ps -o user,cmd -p PID); add a GPU-free check to the scheduler epilog",
        )


SHM_FIX = "docker run --shm-size=1g (or --ipc=host); Kubernetes: emptyDir medium: Memory on /dev/shm"


@rule("GA812", "shm-too-small", area="host", severity="warn", thresholds=("shm_min_gib",))
def shm_too_small(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """/dev/shm is too small for NCCL between the GPUs of this node.

    What it checks
        The size of /dev/shm on a node with two or more GPUs; or NCCL's own report that /dev/shm had no room for
        its segment ("Call to posix_fallocate failed : No space left on device", "failed to extend
        /dev/shm/nccl-X to N bytes"), whatever the GPU count the log shows.
    Why it matters
        NCCL's shared-memory transport and its proxy buffers live in /dev/shm; a container's default 64 MB
        makes NCCL fail at init (ncclShmOpen / "unhandled system error") or a DataLoader crash with a bus error.
    Threshold
        Below shm_min_gib GiB.
    Source
        NCCL User Guide, Troubleshooting, "Docker" (raise the container's shared memory: --shm-size); NCCL's
        messages as its source prints them (include/shm.h, src/misc/shmutils.cc).
    How to fix
        docker run --shm-size=1g (or --ipc=host); in Kubernetes mount an emptyDir with medium: Memory on
        /dev/shm.
    """
    if said := rig.network.nccl_shm_full:
        yield ctx.finding(
            f"NCCL found no room in /dev/shm for its shared-memory segment ({said[:160]})",
            gpus=[g.index for g in rig.gpus],
            subject="host",
            observed={"nccl": said[:200]},
            expected={"shm_gib": ctx.t("shm_min_gib")},
            expected_source=f"{NCCL_TROUBLESHOOTING}, Docker",
            fix=SHM_FIX,
        )
        return
    if len(rig.gpus) < 2:
        return
    shm = rig.node.shm_bytes
    if shm is None:
        yield ctx.not_checked(missing(rig.node, "shm_bytes", "/dev/shm size"), subject="host")
        return
    if shm >= ctx.t("shm_min_gib") * GiB:
        return
    yield ctx.finding(
        f"/dev/shm is {shm / 2**20:.0f} MiB on a node with {len(rig.gpus)} GPUs (NCCL needs more)",
        gpus=[g.index for g in rig.gpus],
        subject="host",
        observed={"shm_mib": round(shm / 2**20)},
        expected={"shm_gib": ctx.t("shm_min_gib")},
        expected_source=f"{NCCL_TROUBLESHOOTING}, Docker",
        fix=SHM_FIX,
    )
