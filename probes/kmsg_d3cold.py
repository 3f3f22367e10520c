"""A device that did not come back from D3cold (powered off by runtime power management), tied to an NVIDIA GPU by
the log itself: the kernel's PCI core (drivers/pci/pci.c, pci_power_up) logs "pci 0000:01:00.0: Unable to change
power state from D3cold to D0, device inaccessible" (older kernels: "can't change power state from D3cold to D0
(config space inaccessible)"): every read of the device returns all ones, it is unusable until the slot is powered
again. Seen with a passed-through GPU (vfio-pci's runtime D3cold, https://github.com/kata-containers/kata-containers
/issues/11708) and a laptop's discrete GPU switched off by bbswitch or runtime PM (https://github.com/Bumblebee-Project
/bbswitch/issues/226, https://github.com/system76/firmware-open/issues/259).

The line names only a bus id and the driver bound to it; it is read as the GPU's when the line's driver is nvidia,
or when the same log ties that bus id to NVIDIA: the PCI core's enumeration ("pci 0000:01:00.0:
[10de:2204] type 00 class 0x030000"), the NVIDIA driver's own line for it ("nvidia 0000:01:00.0: ...", "NVRM: GPU at
PCI:0000:01:00"), or nvidia-drm's "[GPU ID 0x00000100]" (the driver's 32-bit id: domain << 16 | bus << 8 | device,
gpuGenerate32BitId in open-gpu-kernel-modules). A NIC's, an audio or USB function's line is not this sign. A device
bound to vfio-pci (held for passthrough) that the log does not tie to NVIDIA is ``passthrough-d3cold``: a device a
guest will not get, often a GPU on such a host, but the log does not say which kind, so it warns and is not named a
GPU."""

from __future__ import annotations

import re

from .busid import normalize_bus_id

ANCHOR = "change power state from D3cold to D0"
_LINE = re.compile(
    r"(\S+) ((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): (?:Unable to|can't) change power state from "
    r"D3cold to D0"
)
_DRM_ID = re.compile(r"\[GPU ID 0x([0-9a-fA-F]{8})\]")


def enumerated_nvidia_display(bus: str, text: str) -> bool:
    """The PCI core's enumeration line in ``text`` shows ``bus`` (as written) as an NVIDIA display controller:
    "pci 0000:01:00.0: [10de:2204] type 00 class 0x030000" (drivers/pci/probe.c)."""
    return re.search(re.escape(bus) + r":? \[10de:[0-9a-fA-F]{4}\] type 00 class 0x03", text) is not None


def _nvidia_in_log(bus: str, text: str) -> str | None:
    """What in ``text`` ties ``bus`` (a normalised bus id with its function) to NVIDIA, or None."""
    short = bus[5:] if bus.startswith("0000:") else bus
    for b in {bus, short}:
        if enumerated_nvidia_display(b, text):
            return "an NVIDIA display controller [10de]"
        if re.search(r"\bnvidia " + re.escape(b) + r"\b", text):
            return "the NVIDIA driver's device"
    head = bus.rsplit(".", 1)[0]
    if bus.endswith(".0") and re.search(r"NVRM: GPU (?:at )?(?:PCI:)?" + re.escape(head) + r"\b", text):
        return "NVRM's GPU"
    for m in _DRM_ID.finditer(text):
        gpu_id = int(m.group(1), 16)
        if bus == f"{gpu_id >> 16:04x}:{(gpu_id >> 8) & 0xFF:02x}:{gpu_id & 0xFF:02x}.0":
            return f"nvidia-drm's GPU ID 0x{m.group(1)}"
    return None


def d3cold_gpu(line: str, text: str) -> tuple[str, str | None, str] | None:
    """("gpu-d3cold", bus id, what) of a device that did not leave D3cold, read as an NVIDIA GPU by the line's driver
    or the rest of the log; ("passthrough-d3cold", ...) for a vfio-pci device the log does not tie to NVIDIA; None for
    another device."""
    m = _LINE.search(line)
    bus = normalize_bus_id(m.group(2)) if m else None
    if m is None or bus is None:
        return None
    driver = m.group(1)
    if driver == "nvidia":
        why = "the NVIDIA driver's device"
    elif (why := _nvidia_in_log(bus, text)) is None:  # type: ignore[assignment]
        if driver != "vfio-pci":
            return None
        return "passthrough-d3cold", bus, f"vfio-pci passthrough, its vendor not shown: {line[m.start() :].strip()}"
    return "gpu-d3cold", bus, f"{why}: {line[m.start() :].strip()}"
