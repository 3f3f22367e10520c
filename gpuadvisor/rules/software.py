"""GA5xx: software and environment: CUDA_VISIBLE_DEVICES, torch vs driver, NCCL settings."""

from __future__ import annotations

from gpuadvisor import catalog
from gpuadvisor.catalog import error_codes
from gpuadvisor.facts import DRIVER_MISMATCH, DRIVER_UNREACHABLE, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import cell, gpu_list, is_nvlink, missing, pairs, version_tuple
from gpuadvisor.rules.registry import rule
from gpuadvisor.text import plural

TRUE_VALUES = ("1", "true", "yes", "on")


def _env(rig: Rig) -> dict[str, str] | None:
    """The recorded environment, or None when the scan could not record it."""
    sw = rig.software
    if not sw.env and sw.why("env"):
        return None
    return sw.env


@rule("GA501", "cuda-visible-devices", area="software", severity="warn")
def cuda_visible_devices(rig: Rig, ctx: Context):
    """CUDA_VISIBLE_DEVICES hides GPUs, or names devices that do not exist.

    What it checks
        The CUDA_VISIBLE_DEVICES value of the scanned environment against the GPUs NVML sees (NVML ignores
        the variable). Entries are indices or GPU-UUID prefixes; CUDA stops at the first entry that matches no
        device.
    Why it matters
        A leftover CUDA_VISIBLE_DEVICES in a shell profile or container makes a job see fewer GPUs than the
        node has (warn); an entry that matches nothing silently drops it and every entry after it, or leaves
        no GPU visible at all (fail).
    Threshold
        Fewer visible GPUs than NVML sees (warn); an invalid entry or an empty list (fail).
    Source
        CUDA C++ Programming Guide, CUDA Environment Variables: CUDA_VISIBLE_DEVICES ("only the devices whose
        index is present in the sequence are visible ... if one of the indices is invalid, only the devices
        whose index precedes the invalid index are visible"; docs.nvidia.com/cuda/cuda-c-programming-guide/).
    How to fix
        Unset CUDA_VISIBLE_DEVICES (or set it on purpose per job); set CUDA_DEVICE_ORDER=PCI_BUS_ID so indices
        match nvidia-smi.
    """
    env = _env(rig)
    if env is None:
        yield ctx.not_checked(missing(rig.software, "env", "environment variables"))
        return
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None or not rig.gpus:
        return
    n = len(rig.gpus)
    entries = [e.strip() for e in value.split(",")] if value.strip() else []
    if any(e.upper().startswith("MIG-") for e in entries):
        yield ctx.not_checked("CUDA_VISIBLE_DEVICES names MIG instances, which the scan does not list")
        return
    visible: list[int] = []
    invalid: str | None = None
    for e in entries:
        match = None
        if e.isdigit() or (e.startswith("-") and e[1:].isdigit()):
            i = int(e)
            if 0 <= i < n:
                match = rig.gpus[i].index
        elif e.upper().startswith("GPU-"):
            hits = [g.index for g in rig.gpus if g.uuid and g.uuid.lower().startswith(e.lower())]
            match = hits[0] if len(hits) == 1 else None
        if match is None or match in visible:
            invalid = e
            break
        visible.append(match)
    hidden = [g.index for g in rig.gpus if g.index not in visible]
    severity: str | None = None
    if invalid is not None or not visible:
        what = (
            f"entry {invalid!r} matches no GPU (or repeats one); CUDA ignores it and everything after it"
            if invalid is not None
            else "it lists no device"
        )
        message = f"CUDA_VISIBLE_DEVICES={value!r}: {what}; {len(visible)} of {n} GPUs visible"
        fix = "unset CUDA_VISIBLE_DEVICES or list valid indices/UUIDs; set CUDA_DEVICE_ORDER=PCI_BUS_ID"
        severity = "fail"
    elif hidden:
        message = f"CUDA_VISIBLE_DEVICES={value!r} hides {gpu_list(hidden)}: {len(visible)} of {n} GPUs visible to CUDA"
        fix = "unset CUDA_VISIBLE_DEVICES unless the restriction is intended"
    else:
        return
    yield ctx.finding(
        message,
        gpus=hidden,
        subject="environment",
        observed={"CUDA_VISIBLE_DEVICES": value, "visible": visible, "nvml_gpus": n},
        expected={"visible": n},
        expected_source="NVML device count (NVML ignores CUDA_VISIBLE_DEVICES)",
        fix=fix,
        severity=severity,
    )


@rule("GA502", "torch-cuda-newer-than-driver", area="software", severity="fail")
def torch_cuda_newer_than_driver(rig: Rig, ctx: Context):
    """PyTorch was built for a newer CUDA than the installed driver supports.

    What it checks
        torch.version.cuda against the newest CUDA version the driver supports (NVML
        nvmlSystemGetCudaDriverVersion, "CUDA Version" in nvidia-smi).
    Why it matters
        A newer major version does not run at all (torch.cuda.is_available() is False, "driver too old");
        a newer minor version of the same major runs only through minor-version compatibility, with limited
        features (no PTX JIT of newer code, some libraries refuse).
    Threshold
        Newer major: fail. Same major, newer minor: warn from CUDA 11 on (minor-version compatibility); before
        CUDA 11 any newer version needs a newer driver: fail.
    Source
        NVIDIA CUDA Compatibility guide, Minor Version Compatibility ("applications compiled with a CUDA
        Toolkit release from within a CUDA major release family can run, with limited feature-set, on
        systems having at least the minimum required driver version";
        docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html).
    How to fix
        Upgrade the NVIDIA driver, or install the torch wheel built for the driver's CUDA version
        (pip install torch --index-url https://download.pytorch.org/whl/cuXYZ).
    """
    sw = rig.software
    if not rig.gpus and sw.cuda_driver_version is None:
        return  # no GPU and no driver: nothing to compare (a driver's CUDA version alone, as torch's own warning
        # "driver ... too old (found version 9010)" gives it, is enough)
    if sw.torch_version is None:
        yield ctx.not_checked(missing(sw, "torch_version", "torch version"))
        return
    if sw.torch_cuda_version is None:
        return  # a CPU build of torch: GA506 reports it
    torch_v = version_tuple(sw.torch_cuda_version)
    drv_v = version_tuple(sw.cuda_driver_version)
    if drv_v is None or torch_v is None:
        yield ctx.not_checked(missing(sw, "cuda_driver_version", "driver CUDA version"))
        return
    t2, d2 = (torch_v + (0,))[:2], (drv_v + (0,))[:2]
    if t2 <= d2:
        return
    major = t2[0] > d2[0] or t2[0] < 11  # minor-version compatibility begins with CUDA 11
    yield ctx.finding(
        f"torch {sw.torch_version} is built for CUDA {sw.torch_cuda_version} but the driver "
        f"{sw.driver_version or ''} supports CUDA {sw.cuda_driver_version}"
        + (
            ": torch cannot use the GPUs"
            if major
            else ": it runs only through minor-version compatibility, with limited features"
        ),
        gpus=[g.index for g in rig.gpus],
        subject="software",
        observed={"torch_cuda_version": sw.torch_cuda_version},
        expected={"cuda_driver_version_at_least": sw.torch_cuda_version, "cuda_driver_version": sw.cuda_driver_version},
        expected_source="NVIDIA CUDA Compatibility guide (minor version compatibility within a major release)",
        fix="upgrade the NVIDIA driver, or install the torch build for the driver's CUDA "
        "(download.pytorch.org/whl/cuXYZ)",
        severity="fail" if major else "warn",
    )


@rule("GA506", "torch-without-cuda", area="software", severity="fail")
def torch_without_cuda(rig: Rig, ctx: Context):
    """PyTorch is installed without CUDA support on a machine with NVIDIA GPUs.

    What it checks
        Whether the scanned torch reports a CUDA version (torch.version.cuda) when the rig has GPUs.
    Why it matters
        A CPU-only torch build (the default wheel on some platforms, or a "+cpu" build pulled in by another
        package) trains on the CPU: the GPUs sit idle.
    Threshold
        torch present, torch.version.cuda None, at least one GPU.
    Source
        PyTorch installation matrix (pytorch.org/get-started/locally/): CPU and CUDA wheels are separate
        builds; torch.version.cuda is None for CPU builds.
    How to fix
        Reinstall torch from the CUDA index matching the driver (pip install torch --index-url
        https://download.pytorch.org/whl/cuXYZ).
    """
    sw = rig.software
    if not rig.gpus or sw.torch_version is None:
        return  # GA502 reports a missing torch version as not checked
    if sw.torch_cuda_version is None and not sw.why("torch_cuda_version"):
        yield ctx.finding(
            f"torch {sw.torch_version} has no CUDA support: training would run on the CPU and leave the "
            f"{plural(len(rig.gpus), 'GPU')} idle",
            gpus=[g.index for g in rig.gpus],
            subject="software",
            observed={"torch_version": sw.torch_version, "torch_cuda_version": None},
            expected={"torch_cuda_version": sw.cuda_driver_version or "a CUDA build"},
            expected_source="PyTorch builds: torch.version.cuda is None for CPU-only wheels",
            fix="reinstall torch from https://download.pytorch.org/whl/cuXYZ matching the driver's CUDA version",
        )
    elif sw.torch_cuda_version is None:
        yield ctx.not_checked(missing(sw, "torch_cuda_version", "torch CUDA version"))


@rule("GA507", "driver-unreachable", area="software", severity="fail")
def driver_unreachable(rig: Rig, ctx: Context):
    """The NVIDIA driver cannot be used: nvidia-smi, NVML or the container runtime cannot reach it.

    What it checks
        What nvidia-smi or NVML said instead of the driver's version: "NVIDIA-SMI has failed because it couldn't
        communicate with the NVIDIA driver" (the kernel module is not loaded, or failed to load), or "Failed to
        initialize NVML: Driver/library version mismatch" (NVML_ERROR_LIB_RM_VERSION_MISMATCH: the user-space
        library is another version than the loaded kernel module). And what the container runtime said when a GPU
        container would not start: Docker's 'could not select device driver "" with capabilities: [[gpu]]' (no
        runtime registered for --gpus: the NVIDIA Container Toolkit is not installed or not configured for Docker),
        nvidia-container-cli's "nvml error: driver not loaded" (NVML_ERROR_DRIVER_NOT_LOADED, from the toolkit's
        hook), its "load library failed: libnvidia-ml.so.1" (no driver library on the host for the toolkit) and
        its "driver error: timed out" (NVML did not answer the toolkit within its 10 s RPC timeout). And a
        program's own line printing a CUDA or NVML return code of the driver's stack, by number, name or message:
        cudaErrorSystemDriverMismatch (803, "system has unsupported display driver / cuda driver combination"),
        cudaErrorInsufficientDriver (35), cudaErrorCompatNotSupportedOnDevice (804), cudaErrorNoDevice (100),
        cudaErrorDevicesUnavailable (46), cudaErrorUnknown (999), NVML_ERROR_DRIVER_NOT_LOADED (9),
        NVML_ERROR_LIBRARY_NOT_FOUND (12), NVML_ERROR_LIB_RM_VERSION_MISMATCH (18), NVML_ERROR_UNKNOWN (999).
    Why it matters
        No GPU can be listed or used until the driver answers: every CUDA job on the node fails at start. A
        container runtime that cannot give the GPUs to a container fails every GPU container (a Kubernetes pod,
        a docker run --gpus) though the host's own nvidia-smi may work.
    Threshold
        Any of these messages, in a pasted output or from NVML itself on a live scan. A program's return code: at
        the verdict its entry in the error table gives (fail: 803, 18, 9, no program can use a GPU; warn: 35, 804,
        100, 46, 12, the node can be fine for another program; info: 999, which names no cause).
    Source
        NVML API reference (docs.nvidia.com/deploy/nvml-api, nvmlReturn_t: NVML_ERROR_DRIVER_NOT_LOADED,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH); the NVIDIA driver README's chapter on installing the driver
        (the kernel module must match the running kernel and the user-space components' version); the NVIDIA
        Container Toolkit install guide (prerequisite: the NVIDIA driver on the host; "Configuring Docker":
        nvidia-ctk runtime configure --runtime=docker, then restart the Docker daemon); libnvidia-container's
        src/rpc.c (the 10 s timeout of its NVML driver service); the CUDA Runtime API (Data types: cudaError_t: 35
        "the installed NVIDIA CUDA driver is older than the CUDA runtime library ... Users should install an
        updated NVIDIA display driver", 803 "a mismatch between the versions of the display driver and the CUDA
        driver", 804 "the system was upgraded to run with forward compatibility but the visible hardware ... does
        not support this configuration") and the CUDA Compatibility guide (forward compatibility: the cuda-compat
        package, on datacenter GPUs only).
    How to fix
        Version mismatch: the driver was updated while the old module stayed loaded: reboot, or stop what uses
        the GPUs and reload the modules (rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia).
        Not communicating (or not loaded, as the toolkit's hook says): check that the module is loaded (lsmod |
        grep nvidia) and why not (dmesg | grep -i nvrm; dkms status for a module not built for the running kernel;
        Secure Boot refusing an unsigned module), and that the installed driver supports the GPU. No GPU device
        driver in Docker: install the NVIDIA Container Toolkit, run sudo nvidia-ctk runtime configure
        --runtime=docker and sudo systemctl restart docker. No libnvidia-ml.so.1: install the NVIDIA driver on
        the host (nvidia-smi must work there); a Docker installed as a snap does not see it: use Docker's packages.
        Driver timed out: if nvidia-smi hangs on the host, a GPU is hung or lost: drain the node, read the kernel
        log's Xid, reset the GPU or reboot; if it answers, enable persistence mode (nvidia-persistenced). A
        program's 803: make the driver one version (reboot after an upgrade, or reinstall so libcuda and the kernel
        module match; in a container, the host's libraries mounted by the Container Toolkit, not a copy in the
        image); 35: a driver that supports the program's CUDA, the cuda-compat package on a datacenter GPU, or the
        program's build for the driver's CUDA; 804: remove the compat package (not supported on that GPU); 100/46:
        give the program a GPU (CUDA_VISIBLE_DEVICES, --gpus, exclusive-process mode held by another process).
    """
    sw = rig.software
    why = sw.why("driver_version") or ""
    # per cause: (what follows the reason, the expected driver version, the NVML return code, the fix)
    causes = {
        DRIVER_MISMATCH: (
            "no GPU can be used until the driver and its library match",
            sw.nvml_version or "the library's version",
            "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
            "reboot, or stop the GPU processes and reload the nvidia kernel modules (the driver was updated while "
            "the old module stayed loaded)",
        ),
        DRIVER_UNREACHABLE: (
            "no GPU can be used until the driver answers",
            "a loaded NVIDIA kernel module",
            "NVML_ERROR_DRIVER_NOT_LOADED",
            "check the module is loaded (lsmod | grep nvidia) and why not (dmesg | grep -i nvrm; dkms status for a "
            "module not built for the running kernel; Secure Boot), and that the driver supports the GPU",
        ),
    }
    cause = next((c for c in causes if why.startswith(c)), None)
    if cause is not None:
        consequence, expected, code, fix = causes[cause]
        observed: dict[str, str | None] = {"driver_version": None}
        if cause == DRIVER_MISMATCH:  # the library's version, printed below nvidia-smi's message
            observed = {"nvml_version": sw.nvml_version, **observed}
        yield ctx.finding(
            f"{why}: {consequence}",
            subject="software",
            observed=observed,
            expected={"driver_version": expected},
            expected_source=f"NVML API reference: {code}",
            fix=fix,
        )
    container = list(_container_runtime_failures(rig, ctx))
    yield from container
    said = list(_driver_stack_codes(rig, ctx))
    yield from said
    if cause is None and not container and not said and sw.driver_version is None:
        yield ctx.not_checked(missing(sw, "driver_version", "driver version"))


def _driver_stack_codes(rig: Rig, ctx: Context):
    """A program's log line printing a CUDA or NVML return code of the driver's stack (error_codes' table: an
    insufficient driver, a driver/library mismatch, forward compatibility on a GPU without it, no device, an unknown
    error): one finding per code, at the table's verdict, the first line its evidence."""
    for e, seen in error_codes.groups(rig.kernel.events, error_codes.DRIVER_STACK):
        yield ctx.finding(
            f"{error_codes.said(e, seen)}: {e.meaning}",
            gpus=sorted({ev.gpu_index for ev in seen if ev.gpu_index is not None}),
            subject="software",
            observed=error_codes.evidence(e, seen),
            expected=f"the program reaching the GPUs through a driver stack of one version (no {e.names[0]})",
            expected_source=f"{e.source}: {e.names[0]} = {e.code}",
            fix=e.action,
            severity=error_codes.verdict(e, seen),
        )


CONTAINER_RUNTIME = "container runtime"  # the HealthCheck tool of a container runtime's GPU error (GA827 leaves it)
TOOLKIT_GUIDE = "NVIDIA Container Toolkit install guide (prerequisites; Configuring Docker)"
# per cause the container runtime gives (the HealthCheck's check): (what it means, expected, source, fix)
_CONTAINER_CAUSES = {
    "no-driver": (
        "Docker has no GPU device driver for --gpus: the NVIDIA Container Toolkit is not installed or not configured "
        "for this Docker; no GPU container can start",
        "the NVIDIA Container Toolkit's runtime registered with Docker",
        TOOLKIT_GUIDE,
        "install the NVIDIA Container Toolkit (nvidia-container-toolkit), then sudo nvidia-ctk runtime configure "
        "--runtime=docker and sudo systemctl restart docker",
    ),
    "not-loaded": (
        "the NVIDIA Container Toolkit's hook finds no NVIDIA driver loaded (NVML_ERROR_DRIVER_NOT_LOADED): no GPU "
        "container can start",
        "a loaded NVIDIA kernel module",
        "NVML API reference: NVML_ERROR_DRIVER_NOT_LOADED",
        "check the module is loaded on the host (lsmod | grep nvidia; nvidia-smi) and why not (dmesg | grep -i nvrm; "
        "dkms status for a module not built for the running kernel; Secure Boot), then start the container again",
    ),
    "timed-out": (
        "the NVIDIA Container Toolkit's hook got no answer from the driver (NVML) within its 10 s timeout: a GPU "
        "that does not answer hangs the driver (or, with persistence mode off, the driver initialises its GPUs too "
        "slowly); no GPU container can start",
        "NVML answering the toolkit within 10 s",
        "libnvidia-container (src/rpc.c: 10 s RPC timeout to its NVML driver service; src/error.c: 'timed out')",
        "run nvidia-smi on the host: if it hangs or errors, a GPU is hung or lost: cordon and drain the node, check "
        "the kernel log for Xid / 'fallen off the bus', reset the GPU or reboot; if it answers, enable persistence "
        "mode (nvidia-persistenced) so the driver stays initialised, then start the container again",
    ),
    "no-library": (
        "the NVIDIA Container Toolkit cannot load the driver's NVML library (libnvidia-ml.so.1) on the host: no GPU "
        "container can start",
        "the NVIDIA driver installed on the host (its libnvidia-ml.so.1)",
        TOOLKIT_GUIDE,
        "install the NVIDIA driver on the host and check nvidia-smi works there; a Docker installed as a snap does "
        "not see the host's libraries: install Docker from its packages",
    ),
}


def _container_runtime_failures(rig: Rig, ctx: Context):
    """A finding per cause the container runtime gave (its first line of each), with the fix for that cause."""
    seen: set[str] = set()
    for hc in rig.node.health_checks or []:
        if hc.tool != CONTAINER_RUNTIME or hc.check not in _CONTAINER_CAUSES or hc.check in seen:
            continue
        seen.add(hc.check)
        means, expected, source, fix = _CONTAINER_CAUSES[hc.check]
        yield ctx.finding(
            f"container runtime: {hc.detail[:200]!r} ({hc.evidence}): {means}",
            subject="software",
            observed={"container_runtime": hc.detail[:300], "evidence": hc.evidence},
            expected={"container_runtime": expected},
            expected_source=source,
            fix=fix,
        )


def _all_sxm(rig: Rig) -> bool:
    """Every GPU an SXM module by its catalog row (NVIDIA's SXM form factor mounts only on an NVLink baseboard)."""
    specs = [catalog.find_gpu(g.name) for g in rig.gpus]
    return bool(specs) and all(s is not None and s.form_factor == "sxm" for s in specs)


def _p2p_capable_pairs(rig: Rig) -> tuple[list[str], list[str], bool]:
    """(NVLink pairs, PCIe P2P-OK pairs, P2P facts known)."""
    nv, pcie = [], []
    t = rig.topology
    for i, j in pairs(rig):
        label = f"{rig.gpus[i].index}-{rig.gpus[j].index}"
        if is_nvlink(cell(t.matrix, i, j)):
            nv.append(label)
        elif (cell(t.p2p_read, i, j) or "").upper() == "OK":
            pcie.append(label)
    return nv, pcie, t.p2p_read is not None


@rule("GA503", "nccl-p2p-disabled", area="software", severity="warn")
def nccl_p2p_disabled(rig: Rig, ctx: Context):
    """NCCL peer-to-peer is switched off although the GPUs can talk directly.

    What it checks
        NCCL_P2P_DISABLE=1 (or NCCL_P2P_LEVEL=LOC/0) in the environment while GPU pairs have NVLink (fail)
        or PCIe peer-to-peer (warn).
    Why it matters
        With P2P disabled NCCL stages every GPU-to-GPU transfer through host memory: on NVLink systems the
        collectives drop from hundreds of GB/s to PCIe/host speed. The variable is a common leftover from
        debugging hangs on consumer cards.
    Threshold
        Variable set while NVLink or P2P-capable pairs exist (with no topology shown, SXM modules count as
        NVLinked: the form factor mounts only on NVLink baseboards).
    Source
        NCCL environment variables: NCCL_P2P_DISABLE "disables the peer to peer (P2P) transport, which uses
        CUDA direct access between GPUs, using NVLink or PCI"; NCCL_P2P_LEVEL LOC "Never use P2P"
        (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html). NCCL lists it among debugging variables
        not to keep in production.
    How to fix
        Unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL (check /etc/nccl.conf, ~/.nccl.conf and container images).
    """
    env = _env(rig)
    if env is None:
        yield ctx.not_checked(missing(rig.software, "env", "environment variables"))
        return
    disable = env.get("NCCL_P2P_DISABLE", "").strip().lower() in TRUE_VALUES
    level = env.get("NCCL_P2P_LEVEL", "").strip().upper()
    if not (disable or level in ("LOC", "0")) or len(rig.gpus) < 2:
        return
    var = "NCCL_P2P_DISABLE=" + env["NCCL_P2P_DISABLE"] if disable else "NCCL_P2P_LEVEL=" + env["NCCL_P2P_LEVEL"]
    nv, pcie, known = _p2p_capable_pairs(rig)
    if not known and _all_sxm(rig):  # SXM modules ship only on NVLink baseboards (HGX): every pair has NVLink
        nv = [f"{rig.gpus[i].index}-{rig.gpus[j].index}" for i, j in pairs(rig)]
    if not nv and not pcie:
        if not known:
            yield ctx.not_checked(missing(rig.topology, "p2p_read", "P2P capability matrix"))
        return
    yield ctx.finding(
        f"{var} turns NCCL peer-to-peer off although "
        + (
            f"{plural(len(nv), 'GPU pair')} {'has' if len(nv) == 1 else 'have'} NVLink"
            if nv
            else f"{plural(len(pcie), 'GPU pair')} support{'s' if len(pcie) == 1 else ''} PCIe P2P"
        )
        + ": collectives go through host memory",
        gpus=[g.index for g in rig.gpus],
        subject="environment",
        observed={"env": var, "nvlink_pairs": nv, "p2p_pairs": pcie},
        expected="NCCL_P2P_DISABLE unset",
        expected_source="NCCL env documentation (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL)",
        fix="unset it (also check /etc/nccl.conf, ~/.nccl.conf and the container image)",
        severity="fail" if nv else "warn",
    )


def _over_sockets(rig: Rig, ctx: Context):
    """A NCCL log whose every hop between nodes went over TCP sockets ("via NET/Socket/N", none via NET/IB): said as
    information, or as a warning where the scan shows RDMA that NCCL left unused (an active port, NCCL's IB NICs)."""
    net = rig.network
    hops = [h.split(" (")[0] for h in net.nccl_gdr_disabled or []]
    if not hops or not all(h.startswith("NET/Socket/") for h in hops):
        return
    rdma = [p.named(":") for p in net.rdma_ports or [] if p.state == "ACTIVE"] + list(net.nccl_nics or [])
    yield ctx.finding(
        f"NCCL's traffic between nodes went over TCP sockets ({', '.join(hops)}): "
        + (
            f"RDMA is there ({', '.join(rdma)}) and not used"
            if rdma
            else "slower than RDMA (InfiniBand/RoCE) where the nodes have it; GPUDirect RDMA does not apply to sockets"
        ),
        severity="warn" if rdma else "info",
        subject="host",
        observed={"nccl_hops": hops, "rdma_active": rdma},
        expected="NET/IB between nodes that have RDMA adapters",
        expected_source="NCCL env documentation (NCCL_IB_DISABLE: IP sockets instead of the IB/RoCE transport; "
        "NCCL_NET_GDR_LEVEL)",
        fix="where the nodes have RDMA adapters: check NCCL_IB_DISABLE and NCCL_NET, the IB or EFA network plugin "
        "(NCCL_NET_PLUGIN) and that the HCAs are up (ibstat); nothing to fix on nodes with Ethernet only",
    )


@rule("GA504", "nccl-ib-disabled", area="software", severity="warn")
def nccl_ib_disabled(rig: Rig, ctx: Context):
    """NCCL_IB_DISABLE is set on a node that has InfiniBand/RoCE adapters, or a NCCL log shows its traffic between
    nodes going over TCP sockets.

    What it checks
        NCCL_IB_DISABLE=1 in the environment while nvidia-smi topo -m lists network adapters (RDMA devices
        such as mlx5_0) next to the GPUs; the channels of a pasted NCCL debug log (NCCL_DEBUG=INFO) between nodes,
        when every one goes "via NET/Socket/N" (none via NET/IB).
    Why it matters
        NCCL then uses TCP sockets between nodes: multi-node collectives fall from the adapters' 200-400 Gb/s to
        what the kernel's TCP stack manages, often 10x slower, and GPUDirect RDMA is off. Nodes without RDMA
        adapters (a cloud VM's Ethernet) have only sockets: that is their network, not a fault.
    Threshold
        Variable set while adapters are present: warn. Channels over sockets only: info, or warn where the same
        scan shows an active RDMA port or NCCL's own IB/RoCE NICs (RDMA there and not used).
    Source
        NCCL environment variables: NCCL_IB_DISABLE "prevents the IB/RoCE transport from being used by NCCL.
        Instead, NCCL will fallback to using IP sockets"; NCCL_NET_GDR_LEVEL (GPUDirect RDMA is a path of the
        IB/RoCE transport) (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
    How to fix
        Unset NCCL_IB_DISABLE (check /etc/nccl.conf, ~/.nccl.conf, the job script and the container image); on
        nodes with RDMA adapters, check NCCL_NET, the IB or EFA network plugin (NCCL_NET_PLUGIN) and ibstat.
    """
    yield from _over_sockets(rig, ctx)
    env = _env(rig)
    if env is None:
        yield ctx.not_checked(missing(rig.software, "env", "environment variables"))
        return
    if env.get("NCCL_IB_DISABLE", "").strip().lower() not in TRUE_VALUES:
        return
    nics = rig.topology.nics
    if not nics:
        if rig.topology.why("nics"):
            yield ctx.not_checked(missing(rig.topology, "nics", "network adapters"))
        return
    yield ctx.finding(
        f"NCCL_IB_DISABLE={env['NCCL_IB_DISABLE']} while the node has RDMA adapters ({', '.join(nics)}): "
        "multi-node NCCL traffic falls back to TCP sockets",
        subject="environment",
        observed={"NCCL_IB_DISABLE": env["NCCL_IB_DISABLE"], "nics": list(nics)},
        expected="NCCL_IB_DISABLE unset",
        expected_source="NCCL env documentation (NCCL_IB_DISABLE)",
        fix="unset NCCL_IB_DISABLE (check /etc/nccl.conf, ~/.nccl.conf, the job script and the container image)",
    )


def _ifname_matches(spec: str, names: list[str]) -> list[str]:
    """Interfaces NCCL_SOCKET_IFNAME selects: comma-separated prefixes, '^' excludes, '=' exact names."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    tokens = [t.strip() for t in spec.split(",") if t.strip()]

    def hit(name: str) -> bool:
        return any(name == t if exact else name.startswith(t) for t in tokens)

    return [n for n in names if hit(n) != exclude]


@rule("GA505", "nccl-socket-ifname", area="software", severity="fail")
def nccl_socket_ifname(rig: Rig, ctx: Context):
    """NCCL_SOCKET_IFNAME selects no network interface of this host (or only the loopback).

    What it checks
        The NCCL_SOCKET_IFNAME value (comma-separated prefixes, '^' to exclude, '=' for exact names)
        against the host's network interfaces.
    Why it matters
        NCCL bootstraps every job over the selected interfaces: if none matches, NCCL fails to initialise
        ("no socket interface found"); if only the loopback matches, multi-node jobs cannot connect. Copied
        job scripts carry interface names (eth0, ib0, ens1f0) from other clusters.
    Threshold
        No interface matches (fail); only loopback or docker bridges match (warn).
    Source
        NCCL environment variables, NCCL_SOCKET_IFNAME (prefix, ^ and = syntax; "Loopback (lo) is not selected
        by NCCL unless it is explicitly set"; docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
    How to fix
        Set it to an interface that exists on every node (ip -br link), or unset it and let NCCL choose.
    """
    env = _env(rig)
    if env is None:
        yield ctx.not_checked(missing(rig.software, "env", "environment variables"))
        return
    spec = env.get("NCCL_SOCKET_IFNAME")
    if spec is None:
        return
    names = rig.host.net_interfaces
    if names is None:
        yield ctx.not_checked(missing(rig.host, "net_interfaces", "host network interfaces"))
        return
    chosen = _ifname_matches(spec, list(names))
    if not chosen:
        yield ctx.finding(
            f"NCCL_SOCKET_IFNAME={spec!r} matches none of this host's interfaces ({', '.join(names) or 'none'}): "
            "NCCL cannot bootstrap",
            subject="environment",
            observed={"NCCL_SOCKET_IFNAME": spec, "interfaces": list(names)},
            expected="a prefix matching an existing interface",
            expected_source="NCCL env documentation (NCCL_SOCKET_IFNAME)",
            fix="set it to an interface present on every node (ip -br link), or unset it",
        )
    elif all(n == "lo" or n.startswith(("docker", "virbr", "veth")) for n in chosen):
        yield ctx.finding(
            f"NCCL_SOCKET_IFNAME={spec!r} selects only {', '.join(chosen)}: other nodes cannot reach it",
            subject="environment",
            observed={"NCCL_SOCKET_IFNAME": spec, "selected": chosen},
            expected="a routable interface (ethernet or IPoIB)",
            expected_source="NCCL env documentation (NCCL_SOCKET_IFNAME)",
            fix="set it to the cluster network's interface (ip -br link), or unset it",
            severity="warn",
        )
