"""GA803-GA808, GA813: the RDMA network and what GPUDirect RDMA and PCIe peer traffic need."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator

from gpuadvisor.facts import Finding, KernelEvent, Network, RdmaPort, Rig, Unavailable
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import missing, version_tuple
from gpuadvisor.rules.registry import rule
from gpuadvisor.rules.thresholds_beyond import NCCL_TROUBLESHOOTING

# InfiniBand rate of each ConnectX generation, by the CA type ibstat and sysfs hca_type print (PCI device id).
# Source: NVIDIA ConnectX-5/6/7/8 adapter datasheets (EDR 100, HDR 200, NDR 400, XDR 800 Gb/s per port).
IB_MODEL_RATE = {
    "MT4119": ("ConnectX-5", 100.0),
    "MT4123": ("ConnectX-6", 200.0),
    "MT4129": ("ConnectX-7", 400.0),
    "MT4131": ("ConnectX-8", 800.0),
}
NEAR = ("PIX", "PXB")
# a NIC nvidia-smi topo -m names by its Ethernet interface (eth0, enp1s0f0, bond0), not by an RDMA device (mlx5_0)
_ETHERNET = re.compile(r"^(?:eth|en|wl|bond)\w*$")


def _ports(rig: Rig, ctx: Context) -> list[RdmaPort] | Finding:
    ports = rig.network.rdma_ports
    if ports is None:
        return ctx.not_checked(missing(rig.network, "rdma_ports", "RDMA ports"), subject="host")
    return ports


def _active(ports: list[RdmaPort]) -> list[RdmaPort]:
    return [p for p in ports if p.state == "ACTIVE"]


def _setting_off(ctx: Context, owner: Unavailable, name: str, what: str) -> Generator[Finding, None, bool]:
    """A yes/no setting that a node with active RDMA adapters needs (``name`` on ``owner``): not checked while the
    scan does not know it; True when it is off (the rule's finding follows)."""
    value = getattr(owner, name)
    if value is None:
        yield ctx.not_checked(missing(owner, name, what), subject="host")
    return value is not None and not value


def _name(p: RdmaPort) -> str:
    if p.device.endswith("(all ports)") or p.port is None:  # ibqueryerrors' "port ALL", or a port not numbered
        return p.device
    return f"{p.device} port {p.port}"


@rule("GA803", "rdma-port-down", area="network", severity="warn")
def rdma_port_down(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An RDMA port (InfiniBand or RoCE) is not up.

    What it checks
        Each port's logical state (ACTIVE expected) and physical state (LinkUp expected), from
        /sys/class/infiniband or a pasted ibstat / ibv_devinfo / ibstatus.
    Why it matters
        NCCL and MPI spread inter-node traffic over the adapters they find; a port that is down removes its
        bandwidth, or makes ranks that were given that adapter (NCCL_IB_HCA) fail. Polling means a cable is
        plugged but no link partner answers (switch port down, bad cable); INIT or ARMED means the link is up but
        no subnet manager has configured it.
    Threshold
        Not ACTIVE/LinkUp warns, a port administratively Disabled too: node health checks count it as a port down
        until it is declared unused (gpud expects every adapter the node has to be LinkUp unless told fewer, and
        names Disabled and Polling ports alike; Azure's health checks list each port that must be Active). Where
        LBNL NHC's check_hw_ib failed (no port the site requires is Active), GA827 fails the node.
    Source
        InfiniBand Architecture Specification port states (ibstat and ibv_devinfo print them); NVIDIA
        MLNX_OFED documentation, "ibstat"; Azure HPC health checks flag IB ports that are not Active; gpud's
        InfiniBand component (github.com/leptonai/gpud: the adapters present as the expected LinkUp ports).
    How to fix
        Polling: reseat or replace the cable, check the switch port; INIT/ARMED: check the subnet manager
        (sminfo); Disabled: enable the port, or leave it out of NCCL_IB_HCA if it is meant to be unused.
    """
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    for p in got:
        panic = p.why("state") or ""
        if p.state is None and panic.startswith("ibpanic"):
            yield ctx.finding(
                f"{p.device}: ibstat could not read the adapter ({panic[:120]}): a failed or missing HCA",
                subject=p.device,
                observed={"ibstat": panic[:200]},
                expected={"state": "ACTIVE"},
                expected_source="infiniband-diags ibstat (ibpanic: the tool could not open the device)",
                fix="check that the HCA is on the bus (lspci | grep Mellanox) and its driver loaded (mlx5_core, "
                "ib_umad); a missing or failed HCA is a reseat or RMA; leave it out of NCCL_IB_HCA until then",
            )
            continue
        if p.state is None and p.phys_state in (None, "LinkUp"):
            continue  # nothing shown down: a link up whose logical state the paste does not show
        if p.state == "ACTIVE" and p.phys_state in (None, "LinkUp"):
            continue
        disabled = (p.phys_state or "").lower() == "disabled"
        unmanaged = p.state in ("INIT", "ARMED") and p.phys_state == "LinkUp"
        yield ctx.finding(
            f"{_name(p)} is {p.state or 'in an unknown state'}"
            + (f" (physical state {p.phys_state})" if p.phys_state else " (physical state not shown)")
            + ("; disabled: down until enabled, unless it is meant to be unused" if disabled else "")
            + (
                ": the cable and link are up but no subnet manager has activated the port (or its partition "
                "key does not match)"
                if unmanaged
                else ""
            ),
            subject=_name(p),
            observed={"state": p.state, "phys_state": p.phys_state, "link_layer": p.link_layer},
            expected={"state": "ACTIVE", "phys_state": "LinkUp"},
            expected_source="InfiniBand port states (ibstat)",
            fix="Polling: cable or switch port; INIT/ARMED: subnet manager; Disabled: enable it or keep it out of "
            "NCCL_IB_HCA",
        )


@rule("GA804", "rdma-port-rate", area="network", severity="warn")
def rdma_port_rate(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An active RDMA port runs at a lower rate than its sibling ports or than its adapter supports.

    What it checks
        The rate of each ACTIVE port against the fastest active port of the same link layer and adapter model on
        the node (warn), and against the InfiniBand rate of its ConnectX generation (info).
    Why it matters
        A port that trained at 200 Gb/s where its siblings run 400 halves the bandwidth of the GPUs that use
        it, and NCCL's ring or tree runs at the speed of its slowest link: the whole job slows down.
    Threshold
        Below the fastest sibling: warn. Below the model's rate on every port: info (the fabric may be slower).
    Source
        NVIDIA ConnectX-5/6/7/8 datasheets (EDR 100, HDR 200, NDR 400, XDR 800 Gb/s per port).
    How to fix
        Check the cable and transceiver (a cable of the older generation trains at its rate) and the switch
        port; mlxlink -d <dev> shows the negotiated speed and the reason.
    """
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    active = [p for p in _active(got) if p.rate_gbps is not None]
    fastest: dict[tuple[str | None, str | None], float] = {}  # one pass: linear in the number of ports
    for q in active:
        key = (q.link_layer, q.ca_type)
        fastest[key] = max(fastest.get(key, 0.0), q.rate_gbps or 0.0)
    for p in active:
        best = fastest[(p.link_layer, p.ca_type)]
        rate = p.rate_gbps or 0.0
        model = IB_MODEL_RATE.get(p.ca_type or "") if p.link_layer == "InfiniBand" else None
        if rate < best:
            yield ctx.finding(
                f"{_name(p)} runs at {rate:g} Gb/s where its sibling ports run {best:g} Gb/s",
                subject=_name(p),
                observed={"rate_gbps": rate},
                expected={"rate_gbps": best},
                expected_source="the fastest active port of the same model on this node",
                fix="check the cable, transceiver and switch port (mlxlink -d DEVICE shows the negotiated speed)",
            )
        elif model and rate < model[1]:
            yield ctx.finding(
                f"{_name(p)} ({model[0]}) runs at {rate:g} Gb/s; the adapter does {model[1]:g} Gb/s",
                severity="info",
                subject=_name(p),
                observed={"rate_gbps": rate},
                expected={"rate_gbps": model[1]},
                expected_source=f"NVIDIA {model[0]} datasheet",
                fix="expected on a slower fabric; otherwise check cable, transceiver and switch port",
            )


def _near_nic_columns(rig: Rig, ctx: Context) -> tuple[list[int], str] | Finding:
    """The columns of nvidia-smi topo -m's NIC matrix GA805 judges, and what was assumed: the active RDMA adapters;
    with no port state in the scan, every adapter topo -m lists by its RDMA device name (mlx5_0) or by its column
    alone (NIC0, no legend), not one it names by an Ethernet interface (eth0: RDMA not known to be used)."""
    topo = rig.topology
    if rig.network.rdma_ports is None and topo.nics and topo.nic_matrix:
        said = " (no port state in the scan: every RDMA adapter nvidia-smi topo -m lists is counted)"
        if cols := [k for k, name in enumerate(topo.nics) if not _ETHERNET.match(name)]:
            return cols, said
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        return got
    active = {p.device for p in _active(got)}
    if not active or not rig.gpus:
        return [], ""
    cols = [k for k, name in enumerate(topo.nics) if name in active]
    if not cols or not topo.nic_matrix:
        return ctx.not_checked("the PCIe placement of the active RDMA adapters is not in this scan", subject="host")
    return cols, ""


@rule("GA805", "gpu-without-near-nic", area="network", severity="warn")
def gpu_without_near_nic(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """A GPU has no active RDMA adapter behind its own PCIe switch (no GPUDirect RDMA path).

    What it checks
        On a node with active RDMA ports, the PCIe distance (nvidia-smi topo -m NIC columns) from each GPU to
        the nearest adapter with an active port.
    Why it matters
        NCCL sends a GPU's inter-node traffic straight from GPU memory (GPUDirect RDMA) when the adapter sits
        under the same PCIe switch (PIX, PXB); farther away (PHB, NODE, SYS) it stages through host memory and
        crosses the CPU, which costs bandwidth and latency on every multi-node collective.
    Threshold
        Nearest active adapter at PIX or PXB: fine; PHB: info; NODE or SYS: warn.
    Source
        NCCL User Guide, environment variable NCCL_NET_GDR_LEVEL (the distance up to which GPUDirect RDMA is
        used); NVIDIA DGX and HGX reference designs pair each GPU with an adapter under one PCIe switch.
    How to fix
        Put an adapter under each GPU's switch (or each pair's), enable the adapter that is there, or check that
        NCCL_IB_HCA names the near one.
    """
    got = _near_nic_columns(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    cols, assumed = got
    topo = rig.topology
    if not cols or not rig.gpus:
        return
    order = ["PIX", "PXB", "PHB", "NODE", "SYS"]
    for i, g in enumerate(rig.gpus):
        if i >= len(topo.nic_matrix):
            break
        levels = [topo.nic_matrix[i][k] for k in cols if k < len(topo.nic_matrix[i])]
        levels = [lv for lv in levels if lv in order]
        if not levels:
            continue
        best = min(levels, key=order.index)
        if best in NEAR:
            continue
        nic = topo.nics[cols[[topo.nic_matrix[i][k] for k in cols].index(best)]]
        yield ctx.finding(
            f"GPU {g.index}: nearest {'' if assumed else 'active '}RDMA adapter {nic} is {best} (across "
            + ("the CPU's host bridge" if best == "PHB" else "host bridges" if best == "NODE" else "sockets")
            + "): no GPUDirect RDMA path"
            + assumed,
            severity="info" if best == "PHB" else "warn",
            gpus=[g.index],
            subject=f"GPU {g.index}",
            observed={"nearest_nic": nic, "level": best},
            expected={"level": "PIX or PXB"},
            expected_source="NCCL_NET_GDR_LEVEL (NCCL User Guide, Environment Variables)",
            fix="place an RDMA adapter under this GPU's PCIe switch, or enable the one that is there",
        )


@rule("GA806", "acs-on-p2p-path", area="pcie", severity="warn")
def acs_on_p2p_path(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """PCIe ACS redirects peer traffic on a switch between GPUs or between a GPU and its RDMA adapter.

    What it checks
        The ACS Control register (lspci ACSCtl) of every PCIe switch port above two or more GPUs or RDMA
        adapters: ReqRedir or CmpltRedir set.
    Why it matters
        With request or completion redirect on, every peer-to-peer transfer below that switch goes up to the
        CPU's root complex and back: GPU-to-GPU copies and GPUDirect RDMA lose most of their bandwidth, or hang.
        NCCL's troubleshooting guide lists ACS first among PCI problems.
    Threshold
        Any switch port with ReqRedir+ or CmpltRedir+ above two or more GPUs/adapters. Root ports are not
        judged (their traffic goes through the root complex anyway).
    Source
        NCCL User Guide, Troubleshooting, "PCI Access Control Services (ACS)"
        (docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html).
    How to fix
        Disable ACS in the BIOS (or per port: setpci -s BDF ECAP_ACS+0x6.w=0000 at each boot); on a
        virtualised host where ACS isolates devices, pass the GPUs and NICs through as one group instead.
    """
    acs = rig.network.acs
    if acs is None:
        yield ctx.not_checked(missing(rig.network, "acs", "ACS control bits"), subject="host")
        return
    types = {h.bdf: h.port_type for g in rig.gpus for h in g.pcie.path}
    for port in acs:
        redirect = [b for b in ("ReqRedir", "CmpltRedir") if port.control.get(b)]
        if redirect and not port.gpus and not port.nics and rig.source.kind == "imported":
            # lspci -vvv alone does not say what sits below a bridge: report what is known, no stronger
            name = f"bridge {port.bus_id}" if port.bus_id else "a bridge whose device line is not in the paste"
            yield ctx.finding(
                f"{name} has ACS {' and '.join(redirect)} set; which GPUs or adapters sit below it is not in the "
                "imported output (add lspci -tv or nvidia-smi topo -m)",
                severity="info",
                subject=f"bridge {port.bus_id or '?'}",
                observed={"acs_control": {k: v for k, v in port.control.items() if v}},
                expected={"ReqRedir": False, "CmpltRedir": False},
                expected_source=f"{NCCL_TROUBLESHOOTING}, PCI Access Control Services (ACS)",
                fix="if GPUs or RDMA adapters share this switch: disable ACS (BIOS, or setpci ECAP_ACS+0x6.w=0000)",
            )
        below = len(port.gpus) + len(port.nics)
        redirect = [b for b in ("ReqRedir", "CmpltRedir") if port.control.get(b)]
        if below < 2 or not redirect or types.get(port.bus_id) == "root-port":
            continue
        who = ", ".join([f"GPU {i}" for i in sorted(set(port.gpus))] + sorted(set(port.nics)))
        yield ctx.finding(
            f"bridge {port.bus_id} above {who} has ACS {' and '.join(redirect)} set: peer traffic goes through "
            "the root complex",
            gpus=sorted(set(port.gpus)),
            subject=f"bridge {port.bus_id}",
            observed={"acs_control": {k: v for k, v in port.control.items() if v}},
            expected={"ReqRedir": False, "CmpltRedir": False},
            expected_source=f"{NCCL_TROUBLESHOOTING}, PCI Access Control Services (ACS)",
            fix=f"disable ACS in the BIOS, or: setpci -s {port.bus_id} ECAP_ACS+0x6.w=0000 (as root, each boot)",
        )


@rule("GA807", "iommu-translation", area="pcie", severity="warn")
def iommu_translation(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The IOMMU translates DMA on a multi-GPU or RDMA node (not off, not pass-through).

    What it checks
        The IOMMU mode from the kernel command line and the IOMMU groups' type (identity = pass-through).
    Why it matters
        In translation mode every peer-to-peer and RDMA access is looked up in the IOMMU, and the kernel turns
        ACS redirection on so that peer traffic reaches it: GPU-to-GPU and GPUDirect RDMA bandwidth drops, and
        NCCL can hang.
    Threshold
        Translated on a node with two or more GPUs or an active RDMA port warns.
    Source
        NCCL User Guide, Troubleshooting, "PCI Access Control Services (ACS)": the IOMMU should be disabled
        or set to pass-through on bare-metal GPU servers.
    How to fix
        Boot with iommu=pt (intel_iommu=on iommu=pt, or amd_iommu=on iommu=pt) or disable the IOMMU in the BIOS;
        in a VM, the hypervisor's vIOMMU settings decide.
    """
    net = rig.network
    if net.iommu_mode is None:
        yield ctx.not_checked(missing(net, "iommu_mode", "IOMMU mode"), subject="host")
        return
    rdma = bool(_active(net.rdma_ports or []))
    if net.iommu_mode != "translated" or (len(rig.gpus) < 2 and not rdma):
        return
    yield ctx.finding(
        f"the IOMMU translates DMA ({net.iommu_groups or '?'} IOMMU groups) on a node with {len(rig.gpus)} GPUs"
        + (" and RDMA adapters" if rdma else ""),
        gpus=[g.index for g in rig.gpus],
        subject="host",
        observed={"iommu_mode": net.iommu_mode, "iommu_groups": net.iommu_groups},
        expected={"iommu_mode": "off or passthrough"},
        expected_source=f"{NCCL_TROUBLESHOOTING}, PCI Access Control Services (ACS)",
        fix="boot with iommu=pt (e.g. intel_iommu=on iommu=pt) or disable the IOMMU in the BIOS",
    )


def nccl_no_module(net: Network) -> list[str]:
    """The HCAs a NCCL log disabled GPU Direct RDMA on for want of the peer-memory module ("(no module)"), unless
    lsmod showed it loaded (then the module is there but not registered: GA825's case)."""
    if net.peermem_loaded:
        return []
    return [h for h in net.nccl_gdr_disabled or [] if h.endswith("(no module)")]


def _peermem_failed(ctx: Context, failed: list[KernelEvent]) -> Finding:
    """The peer-memory module's load failing in the kernel log: built against another ib_core (inbox vs MLNX_OFED)
    or another NVIDIA driver than those loaded."""
    symbols = sorted({m.group(1) for e in failed if (m := re.search(r"Unknown symbol (\w+)", e.text))} - {"in"})
    module = "nv_peer_mem" if all("nv_peer_mem" in e.text for e in failed) else "nvidia_peermem"
    return ctx.finding(
        f"{module} failed to load (x{len(failed)}, line {failed[0].line}: {failed[0].text[:100]})"
        + (f"; unknown symbols: {', '.join(symbols)}" if symbols else "")
        + ": GPUDirect RDMA through peer memory is off, inter-node traffic is staged through host memory (or dma-buf)",
        subject="host",
        observed={
            "sign": "peermem-load-failed",
            "count": len(failed),
            "first_line": failed[0].line,
            "symbols": symbols,
            "evidence": failed[0].text[:200],
        },
        expected={"modules": ["nvidia_peermem"]},
        expected_source="NVIDIA GPUDirect RDMA documentation; Linux kernel/module ('Unknown symbol', 'disagrees "
        "about version of symbol': a module built against other exported symbols)",
        fix="rebuild the module against the installed OFED/MLNX_OFED and driver (reinstall the driver after "
        "MLNX_OFED so its nvidia-peermem matches, or dkms-rebuild nv_peer_mem), then modprobe nvidia_peermem; or use "
        "dma-buf with the open kernel module; not a hardware fault",
    )


@rule("GA808", "peermem-missing", area="network", severity="warn")
def peermem_missing(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """GPUs and active RDMA adapters, but no nvidia_peermem module for GPUDirect RDMA.

    What it checks
        Whether nvidia_peermem (or the older nv_peer_mem) is loaded on a node with GPUs and active RDMA ports.
    Why it matters
        GPUDirect RDMA lets the adapter read and write GPU memory directly. Without peermem, NCCL can still use
        the Linux dma-buf path (kernel 5.12 or later, with a driver and adapter stack that support it); when
        neither is there, every inter-node transfer is staged through host memory.
    Threshold
        Not loaded: warn on kernels older than 5.12 or with NVIDIA's proprietary kernel module (no dma-buf);
        info otherwise (dma-buf may stand in).
    Source
        NVIDIA GPUDirect RDMA documentation (docs.nvidia.com/cuda/gpudirect-rdma/); NCCL User Guide,
        environment variable NCCL_DMABUF_ENABLE (dma-buf registration, disabled automatically where the kernel
        or drivers do not support it).
    How to fix
        modprobe nvidia_peermem (and add it to /etc/modules-load.d), or use the dma-buf path (open GPU kernel
        modules, kernel 5.12+); check with NCCL_DEBUG=INFO that the log says GPU Direct RDMA Enabled.
    """
    net = rig.network
    ports = net.rdma_ports
    failed = [e for e in rig.kernel.events or [] if e.kind == "peermem-load-failed"]
    if failed and net.peermem_loaded is not True:  # loaded now (lsmod): the failures logged were an earlier try
        yield _peermem_failed(ctx, failed)
        return
    if (told := nccl_no_module(net)) and (ports is None or not rig.gpus):
        # NCCL itself looked for the peer-memory module (its "(no module)": no /sys/kernel/mm/memory_peers/nv_mem)
        # on the HCAs it was about to use: the module is missing where a job needed it, ports listed or not
        hcas = ", ".join(h.removesuffix(" (no module)") for h in told)
        yield ctx.finding(
            f"NCCL found no peer-memory module for {hcas}: GPU Direct RDMA is off, inter-node traffic is staged "
            "through host memory",
            subject="host",
            observed={"nccl_gdr_disabled": told, "peermem_loaded": net.peermem_loaded},
            expected={"modules": ["nvidia_peermem"]},
            expected_source="NCCL (net_ib: 'GPU Direct RDMA Disabled for HCA ... (no module)'); NVIDIA GPUDirect RDMA "
            "documentation",
            fix="modprobe nvidia_peermem (persist in /etc/modules-load.d; after MLNX_OFED, rebuild the driver), or "
            "use dma-buf with the open kernel module; NCCL_DEBUG=INFO then says GPU Direct RDMA Enabled",
        )
        return
    if ports is None or not rig.gpus:
        if ports is None:
            yield ctx.not_checked(missing(net, "rdma_ports", "RDMA ports"), subject="host")
        return
    if not _active(ports) or not (yield from _setting_off(ctx, net, "peermem_loaded", "loaded kernel modules")):
        return
    kernel = version_tuple(rig.host.kernel)
    # dma-buf needs Linux 5.12+ and NVIDIA's open kernel modules; unknown counts as possible (no stronger claim)
    dmabuf = kernel is not None and kernel >= (5, 12) and net.gpu_kernel_module != "proprietary"
    yield ctx.finding(
        "nvidia_peermem is not loaded on a node with GPUs and active RDMA adapters"
        + (
            "; GPUDirect RDMA depends on the dma-buf path (kernel " + (rig.host.kernel or "") + ")"
            if dmabuf
            else "; without it (and without dma-buf: "
            + (
                "the proprietary NVIDIA kernel module"
                if net.gpu_kernel_module == "proprietary"
                else f"kernel {rig.host.kernel}"
            )
            + ") inter-node traffic is staged through host memory"
        ),
        severity="info" if dmabuf else "warn",
        gpus=[g.index for g in rig.gpus],
        subject="host",
        observed={"modules": net.modules, "kernel": rig.host.kernel, "gpu_kernel_module": net.gpu_kernel_module},
        expected={"modules": ["nvidia_peermem"]},
        expected_source="NVIDIA GPUDirect RDMA documentation; NCCL_DMABUF_ENABLE (NCCL User Guide)",
        fix="modprobe nvidia_peermem (persist in /etc/modules-load.d); NCCL_DEBUG=INFO shows whether GDR is used",
    )


@rule("GA813", "memlock-limited", area="network", severity="warn")
def memlock_limited(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The locked-memory limit (ulimit -l) is not unlimited where RDMA is in use (active adapters, or a library's
    error under that limit).

    What it checks
        RLIMIT_MEMLOCK of the scanning process (what a job started the same way inherits), or the limit an RDMA
        library's message states in an imported log (UCX's "Please set max locked memory (ulimit -l) to 'unlimited'
        (current: 64 kbytes)", libibverbs' "RLIMIT_MEMLOCK is 32768 bytes"): the program used RDMA on the node.
    Why it matters
        RDMA pins (locks) every buffer it registers; NCCL and MPI register large buffers. With the 8 MiB default
        of many distributions or containers, registration fails (ibv_reg_mr: Cannot allocate memory) and NCCL
        falls back or aborts.
    Threshold
        Anything but unlimited with active RDMA ports warns.
    Source
        NVIDIA MLNX_OFED documentation and NCCL container guidance (docker run --ulimit memlock=-1).
    How to fix
        Set memlock unlimited: /etc/security/limits.conf "* - memlock unlimited", LimitMEMLOCK=infinity for
        systemd services and Slurm, docker run --ulimit memlock=-1.
    """
    node = rig.node
    said = node.memlock_message
    if not _active(rig.network.rdma_ports or []) and said is None:
        return
    if not (yield from _setting_off(ctx, node, "memlock_unlimited", "memlock limit")):
        return
    kib = (node.memlock_bytes or 0) // 1024
    yield ctx.finding(
        f"locked-memory limit is {kib} KiB (ulimit -l), not unlimited, "
        + (f"as an RDMA library said: {said}" if said else "on a node with active RDMA adapters"),
        subject="host",
        observed={"memlock_kib": kib, **({"message": said} if said else {})},
        expected={"memlock": "unlimited"},
        expected_source="MLNX_OFED documentation; docker run --ulimit memlock=-1",
        fix="set memlock unlimited (limits.conf, LimitMEMLOCK=infinity, docker --ulimit memlock=-1)",
    )


def parse_ib_hca(value: str) -> tuple[bool, bool, list[tuple[str, int | None]]]:
    """NCCL_IB_HCA -> (exclude, exact, [(device, port or None)]): "^" excludes, "=" matches names exactly
    (otherwise a name is a prefix: "mlx5" selects mlx5_0, mlx5_1, ...)."""
    v = value.strip()
    exclude = v.startswith("^")
    v = v.lstrip("^")
    exact = v.startswith("=")
    v = v.lstrip("=")
    out: list[tuple[str, int | None]] = []
    for item in filter(None, (x.strip() for x in v.split(","))):
        name, _, port = item.partition(":")
        out.append((name, int(port) if port.isdigit() else None))
    return exclude, exact, out


def _hca_entry(got: list[RdmaPort], name: str, port: int | None, exact: bool) -> str:
    """What the scan's ports say of one NCCL_IB_HCA entry: "active", "inactive", "none" (no adapter matches), or
    "unjudged" (the entry names a port by number, the scan its adapter without port numbers; or no matching port's
    state is shown, as in an ibv_devices listing: an unknown state is not "not ACTIVE")."""
    ports = [p for p in got if (p.device == name if exact else p.device.startswith(name))]
    hits = [p for p in ports if port is None or p.port == port]
    if any(p.state == "ACTIVE" for p in hits):
        return "active"
    if port is not None and any(p.port is None for p in ports):
        return "unjudged"
    if hits and all(p.state is None for p in hits):
        return "unjudged"
    return "inactive" if hits else "none"


@rule("GA814", "nccl-ib-hca-mismatch", area="network", severity="warn")
def nccl_ib_hca_mismatch(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """NCCL_IB_HCA names RDMA adapters or ports that this node does not have, or that are not up.

    What it checks
        Each entry of NCCL_IB_HCA (prefix match, "=" exact, ":port") against the RDMA ports of the scan.
        Excluding lists ("^...") are not judged.
    Why it matters
        NCCL uses only the adapters NCCL_IB_HCA selects: an entry that matches nothing (a typo, an image built
        for another machine) or only ports that are down leaves the job with fewer rails than the node has, or
        with none, in which case NCCL falls back to TCP sockets at a fraction of the bandwidth.
    Threshold
        No selected port active at all: fail; some entries matching nothing or only inactive ports: warn.
    Source
        NCCL User Guide, Environment Variables, NCCL_IB_HCA (prefix matching, "^" to exclude, "=" for exact
        names, ":port").
    How to fix
        List the adapters ibstat shows as Active (e.g. NCCL_IB_HCA=mlx5_0,mlx5_1,...), or unset it and let NCCL
        pick them; fix the port that is down.
    """
    value = rig.software.env.get("NCCL_IB_HCA")
    if not value:
        return
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    exclude, exact, entries = parse_ib_hca(value)
    if exclude or not entries:
        return
    said: dict[str, list[str]] = {"none": [], "inactive": [], "active": [], "unjudged": []}
    for name, port in entries:
        said[_hca_entry(got, name, port, exact)].append(name + (f":{port}" if port is not None else ""))
    none, inactive, unjudged = said["none"], said["inactive"], said["unjudged"]
    if unjudged:  # a port named by number on an adapter listed without port numbers, or ports of unknown state
        unnumbered = sorted({p.device for p in got if p.port is None})
        unnumbered_why = next((p.why("port") for p in got if p.port is None), None) or "not shown"
        unstated = sorted({p.named() for p in got if p.state is None})
        said_of = [f"names {', '.join(unnumbered)} without their port numbers ({unnumbered_why})"] if unnumbered else []
        said_of += [f"does not show the state of {', '.join(unstated)}"] if unstated else []
        yield ctx.not_checked(
            f"NCCL_IB_HCA {', '.join(unjudged)}: the scan {' and '.join(said_of)}: not judged", subject="host"
        )
    if not none and not inactive:
        return
    parts = ([f"no adapter matches {', '.join(none)}"] if none else []) + (
        [f"{', '.join(inactive)} not ACTIVE"] if inactive else []
    )
    up = bool(said["active"] or unjudged)
    yield ctx.finding(
        f"NCCL_IB_HCA={value}: "
        + "; ".join(parts)
        + ("" if up else "; no selected port is up, so NCCL falls back to TCP sockets"),
        severity="warn" if up else "fail",
        subject="host",
        observed={
            "NCCL_IB_HCA": value,
            "unmatched": none,
            "inactive": inactive,
            "ports": [f"{p.named(':')} {p.state}" for p in got],
        },
        expected={"NCCL_IB_HCA": "adapters with an ACTIVE port"},
        expected_source="NCCL User Guide, Environment Variables (NCCL_IB_HCA)",
        fix="list the adapters ibstat shows as Active, or unset NCCL_IB_HCA",
    )
