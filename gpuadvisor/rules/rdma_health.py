"""GA822-GA824: RDMA link health beyond the port state: link flaps in the kernel log, error counters, firmware
versions across the node's adapters."""

from __future__ import annotations

from collections.abc import Iterator

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.kernel import grouped_events, tally
from gpuadvisor.rules.network import _name, _ports, nccl_no_module
from gpuadvisor.rules.registry import rule

AZNHC = "Azure HPC node health checks, check_ib_link_flapping (github.com/Azure/azurehpc-health-checks)"


@rule("GA822", "rdma-link-flaps", area="network", severity="fail", thresholds=("rdma_flap_window_hours",))
def rdma_link_flaps(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An RDMA link went down and came back (a link flap) in the kernel log.

    What it checks
        mlx5_core "Link down" lines and IPoIB "Lost carrier" lines of the kernel log, per adapter, with the
        "Link up" lines that follow, over the time the log covers.
    Why it matters
        A flapping port drops every RDMA connection that runs over it: NCCL and MPI jobs across nodes abort or
        hang while it is down, and a cable or transceiver that flaps once flaps again.
    Threshold
        A link down less than rdma_flap_window_hours before the scan fails; older, or of unknown age (a pasted
        log without the host's uptime), warns.
    Source
        Azure HPC node health checks (check_ib_link_flapping: no IB link flap within 6 hours by default);
        Meta's GCM link-flaps health check (an InfiniBand flap is critical).
    How to fix
        Drain the node from multi-node jobs; reseat or replace the cable and transceiver of that port, check
        the switch port's counters (ibqueryerrors, mlxlink -d DEVICE -c), then watch for new flaps.
    """
    by_dev = grouped_events(rig, ctx, ("link-down", "link-up"), lambda ev: ev.bus_id or ev.text.split(":")[0])
    if isinstance(by_dev, Finding):
        yield by_dev
        return
    window = ctx.t("rdma_flap_window_hours")
    for dev, evs in sorted(by_dev.items()):
        downs = [e for e in evs if e.kind == "link-down"]
        ups = tally(e for e in evs if e.kind == "link-up")
        flaps = max(tally(downs), ups - 1)  # a link that comes up again went down between (grep may hide those lines)
        if not flaps:
            continue
        last = (downs or evs)[-1]
        age_h = None
        if rig.kernel.uptime_s is not None and last.uptime_s is not None and last.uptime_s <= rig.kernel.uptime_s:
            age_h = (rig.kernel.uptime_s - last.uptime_s) / 3600
        times = [e.uptime_s for e in evs if e.uptime_s is not None]
        span = f" over {(max(times) - min(times)) / 60:.0f} min of log" if len(times) > 1 else ""
        recent = age_h is not None and age_h <= window
        when = f"last {age_h:.1f} h before the scan" if age_h is not None else "age unknown"
        yield ctx.finding(
            f"RDMA adapter {dev}: link flapped {flaps} time(s) ({tally(downs)} down, {ups} up lines){span} ({when}; "
            f"line {last.line}: {last.text[:100]})",
            severity="fail" if recent else "warn",
            subject=f"RDMA {dev}",
            observed={
                "flaps": flaps,
                "link_down": tally(downs),
                "link_up": ups,
                "last_age_h": age_h,
                "evidence": last.text[:200],
            },
            expected={"link_down_within_hours": 0, "window_hours": window},
            expected_source=AZNHC,
            fix="drain the node from multi-node jobs; reseat or replace the cable and transceiver, check the switch "
            "port (ibqueryerrors, mlxlink -d DEVICE -c)",
        )


COUNTER_LIMITS = {
    "symbol_error": "rdma_symbol_error_max",
    "link_error_recovery": "rdma_symbol_error_max",
    "port_rcv_errors": "rdma_symbol_error_max",
    "link_downed": "rdma_link_downed_max",
}


# the counters' widths (InfiniBand Architecture Specification, Vol. 1, PortCounters attribute): a counter stops at
# its ceiling, so a value there is "at least"
_COUNTER_BITS = {"symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16}


def _saturated(name: str, n: int) -> str:
    bits = _COUNTER_BITS.get(name)
    return f" (at its {bits}-bit ceiling: at least that many)" if bits and n == 2**bits - 1 else ""


@rule(
    "GA823",
    "rdma-port-errors",
    area="network",
    severity="warn",
    thresholds=("rdma_symbol_error_max", "rdma_link_downed_max"),
)
def rdma_port_errors(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An RDMA port's error counters are high: symbol errors, link error recoveries, receive errors, link downs.

    What it checks
        The port counters Linux keeps in /sys/class/infiniband/DEV/ports/N/counters/ (the same ibqueryerrors and
        perfquery read): symbol_error, link_error_recovery, port_rcv_errors and link_downed, since they were
        last cleared.
    Why it matters
        Symbol errors and link error recoveries are a marginal cable, transceiver or port: the link retrains,
        packets are resent, and the collectives that cross it slow down or time out. link_downed counts the
        times the link went down (flaps).
    Threshold
        symbol_error, link_error_recovery or port_rcv_errors above rdma_symbol_error_max, or link_downed above
        rdma_link_downed_max: warn.
    Source
        infiniband-diags ibqueryerrors(8), error thresholds (SymbolErrorCounter=10, LinkErrorRecoveryCounter=10);
        Nebius soperator's InfiniBand health checks (link_downed rising by more than 10: a flapping link).
    How to fix
        Reseat or replace the cable and transceiver, check the switch side (ibqueryerrors, mlxlink -d DEVICE
        -c), clear the counters (perfquery -x -R) and see whether they rise again under load.
    """
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    if got and not any(p.counters is not None for p in got):
        yield ctx.not_checked(
            "RDMA port error counters: not in this scan (read live from /sys/class/infiniband/*/ports/*/counters)",
            subject="host",
        )
        return
    for p in got:
        high = {
            name: n
            for name, n in (p.counters or {}).items()
            if name in COUNTER_LIMITS and n > ctx.t(COUNTER_LIMITS[name])
        }
        if not high:
            continue
        yield ctx.finding(
            f"{_name(p)}: "
            + ", ".join(f"{name} {n}" + _saturated(name, n) for name, n in high.items())
            + " since the counters were cleared",
            subject=_name(p),
            observed=high,
            expected={name: ctx.t(COUNTER_LIMITS[name]) for name in high},
            expected_source=(
                "ibqueryerrors(8) error thresholds; Nebius soperator's InfiniBand health checks (link_downed)"
            ),
            fix="reseat or replace the cable and transceiver; check the switch port (ibqueryerrors, mlxlink -d DEVICE "
            "-c); clear the counters (perfquery -x -R) and watch whether they rise",
        )


@rule("GA824", "rdma-firmware-mismatch", area="network", severity="warn")
def rdma_firmware_mismatch(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """Adapters of the same model on one node run different firmware.

    What it checks
        The firmware version of each RDMA adapter (sysfs fw_ver, ibstat "Firmware version", ibv_devinfo
        fw_ver), grouped by adapter model (CA type).
    Why it matters
        A node's adapters are updated together; one left behind behaves differently (link training, congestion
        control, known bugs fixed in one version and not the other), and NCCL spreads traffic over all of them.
    Threshold
        Two or more firmware versions among adapters of one model: warn.
    Source
        NVIDIA ConnectX firmware release notes (each version lists the issues it fixes); NVIDIA's DGX and
        HGX software guides update all adapters of a node to one firmware bundle (mlxfwmanager).
    How to fix
        Update every adapter to the same firmware (mlxfwmanager --online -u, or the node's firmware bundle) and
        reset the adapters (mlxfwreset) or reboot.
    """
    got = _ports(rig, ctx)
    if isinstance(got, Finding):
        yield got
        return
    by_model: dict[str, dict[str, set[str]]] = {}
    for p in got:
        if p.firmware and p.ca_type:
            by_model.setdefault(p.ca_type, {}).setdefault(p.firmware, set()).add(p.device)
    for model, versions in sorted(by_model.items()):
        if len(versions) < 2:
            continue
        common = max(versions, key=lambda v: len(versions[v]))
        odd = {v: sorted(devs) for v, devs in versions.items() if v != common}
        yield ctx.finding(
            f"{model} adapters run {len(versions)} firmware versions: most {common}, "
            + "; ".join(f"{', '.join(d)} on {v}" for v, d in sorted(odd.items())),
            subject=f"RDMA {model}",
            observed={"firmware": {v: sorted(d) for v, d in versions.items()}},
            expected={"firmware": common},
            expected_source="one firmware per adapter model on a node (NVIDIA ConnectX firmware release notes)",
            fix="update every adapter to one firmware (mlxfwmanager --online -u) and reset them (mlxfwreset) or reboot",
        )


@rule("GA825", "nccl-gdr-disabled", area="network", severity="warn")
def nccl_gdr_disabled(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """A NCCL debug log says GPUDirect RDMA is disabled for an HCA: inter-node traffic stages through host memory.

    What it checks
        The "NET/IB : GPU Direct RDMA Disabled for HCA N 'mlx5_N'" lines of a pasted NCCL debug log
        (NCCL_DEBUG=INFO), with the reason NCCL gives ("no module"), against the peer-memory module (lsmod). The
        socket transport's own "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'" is not one: a TCP NIC has
        no RDMA to disable (NCCL prints it for every socket NIC), nor are channels "via NET/Socket/N" (GA504). An
        application's registration of GPU memory with the adapter that failed with EFAULT ("ibv_reg_mr failed (errno
        14) (Ib failure: Bad address)"): the peer-memory module did not pin the GPU's pages (not loaded, or memory
        from CUDA's virtual memory API, which only dma-buf registers).
    Why it matters
        Without GPUDirect RDMA every message between nodes is copied through host memory: lower bandwidth,
        higher latency and CPU load on every multi-node collective.
    Threshold
        Any HCA with GPUDirect RDMA disabled: warn. A failed registration of memory the paste shows to be the
        GPU's: warn; of memory it does not show to be: info (on host memory EFAULT is the application's bad
        address).
    Source
        NCCL User Guide, Environment Variables (NCCL_NET_GDR_LEVEL) and Troubleshooting (GPU Direct RDMA needs
        nvidia_peermem or dma-buf); NVIDIA GPUDirect RDMA documentation.
    How to fix
        "(no module)": load nvidia_peermem (modprobe nvidia_peermem; after MLNX_OFED, rebuild the driver so the
        module is built against it), or use dma-buf with the open kernel module. Loaded but still disabled:
        check that the HCA and GPU share a PCIe switch (NCCL_NET_GDR_LEVEL) and that peermem registered
        (/sys/kernel/mm/memory_peers/nv_mem/version).
    """
    yield from _gpu_mr_failed(rig, ctx)
    off = rig.network.nccl_gdr_disabled
    if not off or nccl_no_module(rig.network) == off and (rig.network.rdma_ports is None or not rig.gpus):
        return  # no NCCL log, or one that disabled nothing (a log is optional); or only for want of the module: GA808

    off = [h for h in off if "NET/Socket/" not in h]  # TCP hops: GPUDirect RDMA is an IB/RoCE path (GA504 says so)
    if not off:
        return
    loaded = rig.network.peermem_loaded
    why = (
        "nvidia_peermem is loaded (lsmod), so it is not registered or the HCA is too far from the GPU"
        if loaded
        else "the peer-memory module is not loaded"
        if loaded is False or any("no module" in h for h in off)
        else "whether nvidia_peermem is loaded is not in the paste (add lsmod | grep peermem)"
    )
    yield ctx.finding(
        f"NCCL disabled GPUDirect RDMA for {', '.join(off)}: {why}",
        subject="host",
        observed={"gdr_disabled": off, "peermem_loaded": loaded, "nccl_nics": rig.network.nccl_nics},
        expected={"gdr_disabled": []},
        expected_source="NCCL User Guide, NCCL_NET_GDR_LEVEL and Troubleshooting",
        fix="modprobe nvidia_peermem (rebuild the driver after MLNX_OFED), or dma-buf with the open kernel module; "
        "if loaded: check /sys/kernel/mm/memory_peers/nv_mem/version and the GPU-HCA PCIe distance",
    )


GPU_MR_SOURCE = (
    "NVIDIA GPUDirect RDMA documentation (the peer-memory client pins GPU pages for ibv_reg_mr; dma-buf, "
    "ibv_reg_dmabuf_mr, for memory from CUDA's virtual memory API); ibv_reg_mr(3): EFAULT"
)


def _gpu_mr_failed(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An application's ibv_reg_mr failing with EFAULT (importers/gpu_mr.py): on GPU memory, GPUDirect RDMA is not
    working for that buffer (warn); on memory the paste does not show to be the GPU's, a lead only (info)."""
    seen = [e for e in rig.kernel.events or [] if e.kind == "gpu-mr-failed"]
    if not seen:
        return
    ev = seen[0]
    gpu = "[GPU memory" in ev.text
    yield ctx.finding(
        f"registering memory with the RDMA adapter failed with EFAULT (line {ev.line}: {ev.text})"
        + (
            ": GPUDirect RDMA is not working for this buffer: the peer-memory module did not pin the GPU's pages"
            if gpu
            else ": if the buffer is GPU memory, GPUDirect RDMA is not working for it; on host memory the address "
            "is the application's error"
        ),
        severity="warn" if gpu else "info",
        subject="host",
        observed={"evidence": ev.text, "line": ev.line},
        expected={"ibv_reg_mr": "success"},
        expected_source=GPU_MR_SOURCE,
        fix="check that nvidia_peermem is loaded and registered (lsmod | grep peermem; "
        "/sys/kernel/mm/memory_peers/nv_mem/version); memory from cuMemCreate (CUDA's virtual memory API) registers "
        "only through dma-buf: the open GPU kernel modules, kernel 5.12+, ibv_reg_dmabuf_mr (or allocate the buffer "
        "with cudaMalloc); a configuration matter, no adapter or GPU fault",
    )


# What each adapter sign means and what the on-call engineer does (severity, then the fix)
HCA_SIGNS = {
    "hca-fatal": (
        "the adapter hit a fatal error (its firmware stopped: a catastrophic error, health compromised): every RDMA "
        "connection on it is gone",
        "fail",
        "drain the node; reset the adapter (mlxfwreset -d DEVICE reset) or reboot; if it recurs, update the adapter "
        "firmware and open a support case (mlxdump / the sysinfo snapshot)",
    ),
    "hca-driver-panic": (
        "the adapter's driver (mlx5_core) crashed the kernel (a panic in its code, as at the adapter's probe at boot): "
        "the node does not run with this adapter and driver",
        "fail",
        "a driver or kernel bug, not a failing adapter: boot the previous kernel or OS release (or update MLNX_OFED/"
        "DOCA or the kernel to one with the fix), or disable the adapter until then; no RMA",
    ),
    "hca-cmd-timeout": (
        "the adapter's firmware did not answer driver commands in time (command timeouts, leaked command resources)",
        "warn",
        "keep the node out of multi-node jobs until the adapter answers again; update the adapter firmware (the "
        "usual cure) and reset it (mlxfwreset) or reboot",
    ),
    "hca-load-failed": (
        "the adapter's driver could not load it (mlx5_load_one failed): none of its RDMA ports exists",
        "warn",
        "read the mlx5_core lines above for the cause (a firmware/driver mismatch, a capability the firmware lacks), "
        "update the adapter firmware or the driver (MLNX_OFED / DOCA), then reload mlx5_core or reboot",
    ),
    "hca-slot-power": (
        "the adapter reports insufficient power on its PCIe slot: it may throttle or drop its links",
        "warn",
        "move the adapter to a slot that supplies its rated power, or check the riser and the platform's slot power "
        "settings",
    ),
}


@rule("GA826", "rdma-adapter-errors", area="network", severity="fail")
def rdma_adapter_errors(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An RDMA adapter logged a fatal error, or its firmware stopped answering the driver's commands.

    What it checks
        mlx5_core kernel lines "device's health compromised" and "mlx5_enter_error_state" (the adapter's
        firmware stopped), "No done completion" and "timeout. Will cause a leak of a command resource" (a firmware
        command timed out), and NCCL's "NET/IB : Got async event : local catastrophic error" (the verbs event
        IBV_EVENT_DEVICE_FATAL), by adapter or, for NCCL's lines, by host; an adapter that failed to load
        ("mlx5_load_one failed") and one short of slot power ("Detected insufficient power on the PCIe slot"); a
        kernel panic whose oops faults in mlx5_core ("RIP: ... [mlx5_core]" above "Kernel panic - not syncing").
    Why it matters
        A fatal adapter error drops every RDMA connection over it: the node's multi-node jobs abort or hang until
        the adapter is reset. Command timeouts come before such failures and stall the setup of new connections
        (queue pairs, DC targets) for every job.
    Threshold
        A fatal error or a panic in the driver fails; command timeouts, a failed load and short slot power warn.
    Source
        libibverbs ibv_get_async_event(3) (IBV_EVENT_DEVICE_FATAL, "local catastrophic error"); the Linux mlx5_core
        driver's health poller and command interface (drivers/net/ethernet/mellanox/mlx5/core/health.c, cmd.c).
    How to fix
        Drain the node; reset the adapter (mlxfwreset) or reboot; update its firmware; a fatal error that returns
        is a support case.
    """
    by_dev = grouped_events(rig, ctx, HCA_SIGNS, lambda ev: f"{ev.kind} {ev.bus_id or ev.text.split(':')[0]}")
    if isinstance(by_dev, Finding):
        yield by_dev
        return
    for _, evs in sorted(by_dev.items()):
        what, severity, fix = HCA_SIGNS[evs[0].kind]
        first = evs[0]
        dev = f"RDMA adapter {first.bus_id}" if first.bus_id else f"RDMA adapter on {first.text.split(':')[0]}"
        yield ctx.finding(
            f"{dev}: {what} (x{tally(evs)}, line {first.line}: {first.text[:120]})",
            severity=severity,
            subject=dev,
            observed={"sign": first.kind, "count": tally(evs), "evidence": first.text[:200]},
            expected={"sign": None},
            expected_source="ibv_get_async_event(3); Linux mlx5_core health.c and cmd.c",
            fix=fix,
        )


VERBS = "libibverbs"  # the HealthCheck tool of the verbs library's device discovery (GA827 leaves it)
RDMA_CORE = "rdma-core libibverbs (init.c: its device discovery and provider loading; ibv_devinfo, ibv_devices)"
_PROVIDER_FIX = (
    "install the verbs providers where the tool ran (Debian/Ubuntu: ibverbs-providers; RHEL/SUSE: rdma-core, or "
    "libibverbs with the adapter's provider such as libmlx5), then run ibv_devinfo again"
)
# per cause libibverbs gives (the HealthCheck's check): what it means, and the fix
VERBS_CAUSES = {
    "no-provider": (
        "the kernel has the RDMA device but no user-space provider (driver library) claims it",
        _PROVIDER_FIX,
    ),
    "abi-mismatch": (
        "the provider does not support the kernel driver's ABI: the user-space rdma-core (a container image's) and "
        "the host's kernel driver are of different generations",
        "install an rdma-core in the image (or host) that supports the running kernel's ABI: the host's version or "
        "newer; or build the image from the host's MLNX_OFED/DOCA",
    ),
    "kernel-abi": (
        "libibverbs does not support the kernel's uverbs ABI",
        "install an rdma-core that matches the running kernel (the distribution's own, or MLNX_OFED/DOCA's)",
    ),
    "no-config": (
        "no provider is configured (its configuration directory is missing): the provider package is not installed",
        _PROVIDER_FIX,
    ),
    "load-failed": (
        "a provider listed in /etc/libibverbs.d could not be loaded",
        _PROVIDER_FIX + "; a leftover .driver file of an adapter not in use is harmless",
    ),
}
_NO_DEVICE = (
    "libibverbs found no RDMA device: no adapter, its kernel driver (mlx5_ib ...) not loaded, or in a container no "
    "/dev/infiniband/uverbs node given",
    "check the adapter (lspci | grep -i -e mellanox -e infiniband), its driver (lsmod | grep ib_uverbs) and, in a "
    "container, the /dev/infiniband mount; if the kernel lists it (ls /sys/class/infiniband), " + _PROVIDER_FIX,
)
_UNUSABLE = ("no-provider", "abi-mismatch", "kernel-abi")  # a device the kernel has that verbs cannot use


@rule("GA829", "rdma-verbs-no-device", area="network", severity="warn")
def rdma_verbs_no_device(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The verbs library (libibverbs) could not use the node's RDMA devices, or found none.

    What it checks
        libibverbs' own warnings (no user-space driver found for a uverbs device, a provider that does not support
        the kernel's ABI, no provider configuration, a provider that did not load) and ibv_devinfo's "No IB
        devices found" (or an empty ibv_devices table, or perftest's "Did not detect devices"), as pasted.
    Why it matters
        NCCL, MPI and UCX open RDMA adapters through libibverbs: a device it cannot use is invisible to them, and
        inter-node traffic falls back to TCP sockets or the job fails, although the adapter and its link may be
        fine.
    Threshold
        A device the kernel has that libibverbs cannot use (no provider, an ABI mismatch), or no device found with
        a provider missing: warn. No device found with no reason given, or only a provider that did not load (a
        leftover configuration): info.
    Source
        rdma-core libibverbs (init.c: the messages and when it prints them); ibv_devinfo(1), ibv_devices(1).
    How to fix
        Install the adapter's verbs provider (Debian/Ubuntu ibverbs-providers; rdma-core elsewhere) where the tool
        ran; in a container, an rdma-core that supports the host kernel's ABI; with no device at all, check the
        adapter (lspci), its kernel driver (mlx5_ib) and, in a container, that /dev/infiniband is mounted.
    """
    said = {hc.check: hc for hc in rig.node.health_checks or [] if hc.tool == VERBS}
    if not said:
        return
    none = "no-devices" in said
    causes = [c for c in VERBS_CAUSES if c in said]
    warn = any(c in _UNUSABLE for c in causes) or (none and bool(causes))
    if causes:
        what, fix = VERBS_CAUSES[causes[0]]
        head = said[causes[0]]
    else:
        head = said["no-devices"]
        what, fix = _NO_DEVICE
    finder = "perftest" if none and "Did not detect" in said["no-devices"].detail else "ibv_devinfo"
    found = f"; {finder} found no device" if none and causes else ""
    yield ctx.finding(
        f"libibverbs: {what}{found} ({head.evidence}: {head.detail[:200]})",
        severity="warn" if warn else "info",
        subject="host",
        observed={c: hc.detail[:200] for c, hc in said.items()},
        expected={"verbs_devices": "usable"},
        expected_source=RDMA_CORE,
        fix=fix,
    )
