"""GA820's tables: what each sign of a lost or wedged GPU in the kernel log means and what to do, and which signs
are the cause of the others (the driver's install problem, an unsupported GPU, an invalid BAR) so that one finding
names the cause and the failures it led to are not findings of their own."""

from __future__ import annotations

from gpuadvisor.facts import KernelEvent

# What each sign of a lost or wedged GPU means, what the on-call engineer does, the class of action and the severity
# (the Xid catalog's buckets for the Xids that report the same condition: 79 fallen off the bus -> RESTART_BM,
# 119/120 GSP -> RESET_GPU).
LOST_SIGNS = {
    "gpu-init-failed": (
        "the driver could not initialise the GPU (RmInitAdapter failed): it is on the bus but gone for CUDA",
        "drain the node and reboot it (cold); if the GPU fails to initialise again, reseat it and open an RMA",
        "reboot",
        "fail",
    ),
    "gsp-boot-failed": (
        "the GPU's firmware (GSP-RM) could not be started: the GPU is unusable until it is reset",
        "drain the node and reboot it (cold); if GSP fails again, install the driver branch the GPU supports (the "
        "proprietary module, or NVreg_EnableGpuFirmware=0 where allowed) or update the VBIOS, then an RMA",
        "reboot",
        "fail",
    ),
    "gpu-probe-failed": (
        "the driver's probe of the GPU failed: the driver did not take it, the GPU is unusable",
        "read the NVRM lines above it for the cause (an invalid PCI I/O region: enable Above 4G decoding in the "
        "BIOS; power cables; another driver bound), fix it and reboot; a GPU that keeps failing: reseat, then RMA",
        "reboot",
        "fail",
    ),
    "gpu-not-probed": (
        "another driver (nouveau, a framebuffer driver such as nvidiafb, or vfio-pci) owns the GPU(s): the NVIDIA "
        "driver's probe was never called for them, so CUDA has none of them",
        "find the driver that holds each GPU (lspci -nnk -d 10de: 'Kernel driver in use'); for nouveau: blacklist it "
        "(blacklist nouveau, options nouveau modeset=0 in /etc/modprobe.d), rebuild the initramfs and reboot; for "
        "vfio-pci or a driver_override: unbind the GPU (or drop it from vfio-pci's ids) and load nvidia; the cards "
        "are not at fault",
        "fix-config",
        "fail",
    ),
    "gpu-bar-invalid": (
        "the firmware assigned the GPU an invalid PCI address window (NVRM: BAR is 0M): the driver cannot map it, "
        "the GPU is unusable",
        "enable Above 4G decoding (and Resizable BAR) in the BIOS, or give the slot or Thunderbolt bridge more "
        "address space (pci=realloc), then reboot; the card itself is not at fault",
        "fix-config",
        "fail",
    ),
    "gpu-bar-unassigned": (
        "the kernel found no address space for the GPU's memory BARs (can't assign; no space): the driver cannot "
        "map it, the GPU is unusable",
        "enable Above 4G decoding and Resizable BAR in the BIOS/UEFI, or give the slot more address space (boot "
        "with pci=realloc; on an embedded board, a larger PCIe memory window in its device tree), then reboot; the "
        "card itself is not at fault",
        "fix-config",
        "fail",
    ),
    "gpu-unsupported": (
        "the loaded NVIDIA kernel module does not drive this GPU: it is unusable with this driver",
        "install the driver the GPU needs (the proprietary module for GPUs without GSP, the open module for "
        "Blackwell, a branch that lists the GPU) and reboot",
        "fix-config",
        "fail",
    ),
    "gpu-unreadable": (
        "every read of the GPU returns all ones (nouveau: unknown chipset ffffffff): it is off the bus, unpowered or "
        "behind a broken link",
        "power the machine off and on; check the GPU's power cables, riser and slot; if it stays unreadable, reseat "
        "it, then an RMA",
        "reboot",
        "fail",
    ),
    "gpu-d3cold": (
        "the GPU did not come back from D3cold (device inaccessible: powered off by runtime power management, it "
        "answers no reads): it is unusable until its slot is powered again",
        "power-cycle the machine (a cold reboot, not a warm one); for a passed-through GPU keep the host from putting "
        "it into D3cold (vfio-pci disable_idle_d3=1, or 0 in /sys/bus/pci/devices/BUS/d3cold_allowed); on a laptop, "
        "its runtime power management (bbswitch, nvidia-powerd, firmware update); not an RMA on a first occurrence: "
        "only if it recurs with power management off",
        "reboot",
        "fail",
    ),
    "passthrough-d3cold": (
        "a device held for passthrough (vfio-pci) did not come back from D3cold (device inaccessible): the guest "
        "will not get it; the log does not show its vendor (a GPU on a GPU host, most often)",
        "power-cycle the machine (a cold reboot); keep the host from putting it into D3cold (vfio-pci "
        "disable_idle_d3=1, or 0 in /sys/bus/pci/devices/BUS/d3cold_allowed); lspci -nn -s BUS names the device",
        "reboot",
        "warn",
    ),
    "gpu-is-lost": (
        "the GPU is lost from the bus (the driver's NV_ERR_GPU_IS_LOST or NVML's GPU_IS_LOST, as Xid 79): it is gone "
        "for CUDA",
        "drain the node and reboot it (cold); if the GPU is lost again, reseat it, check its power and slot, then an "
        "RMA",
        "reboot",
        "fail",
    ),
    "gpu-reset-required": (
        "the driver says the GPU needs a reset before it can be used again",
        "drain the GPU and reset it (nvidia-smi -r -i N, or reboot the node)",
        "reset",
        "fail",
    ),
    "gsp-timeout": (
        "the GPU's firmware (GSP) stopped answering the driver (heartbeat or RPC timeout, as Xid 119/120)",
        "drain the GPU and reset it (nvidia-smi -r -i N) or reboot; if it returns, update the driver and open a "
        "support case",
        "reset",
        "fail",
    ),
    "nvlink-discovery-failed": (
        "the driver failed NVLink discovery with a peer GPU (postRxDetLinkMask): NVLink is degraded and the driver "
        "may be stuck retrying it (nvidia-smi can hang)",
        "drain the node, reset the GPUs (or reboot it) and check nvidia-smi nvlink -s; if links stay down, run the "
        "field diagnostics and update the driver",
        "reset",
        "warn",
    ),
    "driver-hung": (
        "a task hung inside the NVIDIA driver (the kernel's hung-task report): the driver is wedged, new GPU jobs "
        "and nvidia-smi will hang",
        "drain the node and reboot it; if it recurs, collect nvidia-bug-report.sh and update the driver",
        "reboot",
        "warn",
    ),
    "driver-oops": (
        "the NVIDIA kernel module crashed (a kernel oops with its faulting code in the driver): the GPUs are "
        "unusable and tasks touching them hang until the node reboots",
        "drain the node and reboot it; then install a driver release that supports this kernel and platform (or "
        "update it), and collect nvidia-bug-report.sh if it recurs",
        "reboot",
        "fail",
    ),
}


# The driver's own install problem (a GSP firmware file missing, an API mismatch, a module built for another kernel):
# the GPU failures logged after it are its consequence, so one finding names it and asks for a reinstall, not a reseat.
INSTALL_FIX = (
    "reinstall the driver so kernel module, firmware files and user-space libraries match (nvidia-smi and "
    "/proc/driver/nvidia/version agree), then reboot; not a hardware fault: no reseat, no RMA"
)
# an NVIDIA unit systemd could not start (nvidia-persistenced, nvidia-dcgm ...): the driver's daemon is not running;
# alone it names no GPU and no fault of one (an image that starts it where no GPU or driver is, a driver not loaded)
LOST_SIGNS["nvidia-unit-failed"] = (
    "an NVIDIA service failed to start: its daemon is not running",
    "see why (systemctl status UNIT; journalctl -u UNIT): is the driver loaded (nvidia-smi)? on an image or VM "
    "size without an NVIDIA GPU, disable the unit; not a GPU fault: no drain, no RMA",
    "fix-config",
    "info",
)
# CUDA's uncorrectable-NVLink error (cudaErrorNvlinkUncorrectable, 220) in an application's log: the same fault the
# kernel logs as Xid 74 (the Xid catalog: an NVLink error, RESET_GPU), seen from the job
LOST_SIGNS["cuda-nvlink-uncorrectable"] = (
    "the job hit an uncorrectable NVLink error (CUDA error 220, the fault the kernel logs as Xid 74): a link of the "
    "GPU failed under it",
    "drain the node; find the GPU and link in the kernel log (Xid 74, SXid on NVSwitch systems) and by its counters "
    "(nvidia-smi nvlink -e), reset the GPUs (nvidia-smi -r) or reboot, then run dcgmi diag -r 3; a link that fails "
    "again: a support case (reseat or RMA)",
    "reset",
    "fail",
)
# CUDA's contained error (cudaErrorContained, 226: "Invalid access of peer GPU memory over nvlink or a hardware
# error") in an application's log: the GPU's error containment held a fault to the process (the kernel logs it as
# Xid 94, contained; an uncontained one is Xid 95): the process is lost, the GPU not yet shown faulty
LOST_SIGNS["cuda-contained"] = (
    "the job's CUDA context was lost to a contained error (CUDA error 226: an invalid access of peer GPU memory over "
    "NVLink or a hardware error, as Xid 94): every later CUDA call of that process fails",
    "restart the application (its process); schedule a reset of the GPU (nvidia-smi -r) before trusting it again, "
    "and check the kernel log for Xid 94/95 or 74 and the GPU's ECC and row remapping (nvidia-smi -q -d "
    "ECC,ROW_REMAPPER); a GPU that does it again: drain it and run dcgmi diag -r 3",
    "reset",
    "warn",
)
# X's NVIDIA driver: "The NVIDIA kernel module does not appear to be receiving interrupts generated by the NVIDIA
# graphics device" (the driver README's Common Problems: the interrupt routing of the system's firmware or kernel)
LOST_SIGNS["gpu-no-interrupts"] = (
    "the NVIDIA kernel module receives no interrupts from the GPU (the X driver's report): the GPU cannot be used "
    "until interrupts reach it",
    "fix how the GPU's interrupts are delivered, not the card: IRQ routing, the I/O APIC, a device sharing the IRQ or "
    "MSI (update the system BIOS; try another slot, unneeded devices off, the kernel parameter pci=noacpi or noapic, "
    "or NVreg_EnableMSI=0), then reboot and check nvidia-smi",
    "fix-config",
    "fail",
)
LOST_SIGNS["driver-install"] = ("the NVIDIA driver's own install is broken", INSTALL_FIX, "fix-config", "warn")
CAUSE_SIGNS = (
    "gpu-bar-invalid",
    "gpu-bar-unassigned",
    "gpu-unsupported",
)  # why the driver's probe or init of that GPU then failed
CONSEQUENCES = ("gpu-init-failed", "gsp-boot-failed", "gpu-probe-failed")  # what such a cause leads to


def lost_key(ev: KernelEvent) -> str:
    """A GA820 group: a sign on one device; the driver's install problems (of no one GPU) together."""
    return ev.kind if ev.kind == "driver-install" else f"{ev.kind} {ev.bus_id or ''}"


def _explains(cause: KernelEvent, failure: KernelEvent) -> bool:
    """An install problem explains a GPU failure logged after it, on its GPU, or where either names no GPU."""
    same = cause.bus_id is None or failure.bus_id in (None, cause.bus_id)
    return same and (cause.line or 0) < (failure.line or 0)


def consequences(groups: dict[str, list[KernelEvent]]) -> tuple[dict[str, list[KernelEvent]], set[str]]:
    """The groups that follow from a cause in the log: by the cause's key (the install problem, or the bus of an
    unsupported GPU or an invalid BAR), and the keys of those groups (not findings of their own)."""
    install = groups.get("driver-install")
    caused = {evs[0].bus_id: k for k, evs in groups.items() if evs[0].kind in CAUSE_SIGNS and evs[0].bus_id}
    by_cause: dict[str, list[KernelEvent]] = {}
    for evs in groups.values():
        first = evs[0]
        if first.kind not in CONSEQUENCES:
            continue
        if first.bus_id in caused:
            by_cause.setdefault(caused[first.bus_id], []).extend(evs)
        elif install and any(_explains(e, first) for e in install):
            by_cause.setdefault("driver-install", []).extend(evs)
    return by_cause, {f"{e.kind} {e.bus_id or ''}" for evs in by_cause.values() for e in evs}
