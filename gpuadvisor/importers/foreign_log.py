"""Another vendor's GPU driver in a kernel log: AMD's amdgpu and radeon, Intel's i915 and xe, and the DRM drivers of
embedded and other GPUs: Broadcom's v3d and vc4 (Raspberry Pi), Vivante's etnaviv, Arm Mali's panfrost and lima,
Imagination's powervr, Apple's asahi, Moore Threads' mtgpu, and Arm's own Mali driver (kbase, ``mali``).

The kernel prints a driver's messages as ``amdgpu 0000:28:00.0: amdgpu: GPU reset begin!`` (dev_printk: the driver,
then the device), ``amdgpu: Failed to map bo to gpuvm`` (pr_fmt: the module's name) or ``[drm:mes_v11_0_submit_pkt
[amdgpu]] *ERROR* ...`` (DRM's debug form: the function, then its module in brackets; older kernels print
``[drm:i915_reset] *ERROR*``). A log whose GPU lines are all such, with no NVIDIA line (nvidia, NVRM, nouveau), is
another vendor's GPU's log: refused as such, never judged as an NVIDIA host's (the merge's refusal,
importers/sections.not_nvidia). A log with both vendors' lines is read."""

from __future__ import annotations

import re

_VENDOR = {"amdgpu": "AMD", "radeon": "AMD", "i915": "Intel", "xe": "Intel", "v3d": "Broadcom", "vc4": "Broadcom"}
_VENDOR |= {"etnaviv": "Vivante", "panfrost": "Arm", "lima": "Arm", "mali": "Arm", "powervr": "Imagination"}
_VENDOR |= {"asahi": "Apple", "mtgpu": "Moore Threads"}
_DRIVER = r"amdgpu|radeon|i915|\bxe|\bv3d|\bvc4|etnaviv|panfrost|\blima|\bmali|powervr|\basahi|mtgpu"
_LINE = re.compile(
    rf"\b(?:{_DRIVER}) [0-9a-fA-F]{{4}}:[0-9a-fA-F]{{2}}:[0-9a-fA-F]{{2}}\.[0-7]: "  # dev_printk of a PCI device
    r"|\b(?:v3d|vc4|etnaviv|panfrost|lima|mali|powervr|asahi) [0-9a-f]{4,16}\.[\w-]+: "  # a platform device's
    rf"|\[drm:(?:(?:amdgpu|radeon|i915)_\w*|\S+ \[(?:{_DRIVER})\])\]"  # [drm:func [amdgpu]], older [drm:i915_reset]
    r"|(?:^|\]\s|kernel:\s)(?:drm/)?(?:amdgpu|radeon|i915|MTGPU): ",  # pr_fmt, after a timestamp or journal prefix
    re.M,
)
_NVIDIA_DRIVER = re.compile(r"nvidia|\bNVRM\b|\bnouveau\b", re.IGNORECASE)


def other_vendor_log(text: str) -> str | None:
    """Why a kernel log with another vendor's GPU driver lines and none of NVIDIA's is refused; else None."""
    m = _LINE.search(text)
    if m is None or _NVIDIA_DRIVER.search(text):
        return None
    driver = re.findall(_DRIVER, m.group(0).lower())[-1]
    return (
        f"a kernel log of {_VENDOR[driver]}'s GPU driver ({driver}) with no NVIDIA line: gpuadvisor reads NVIDIA GPUs' "
        "outputs only (nvidia-smi, lspci, nccl-tests, the NVIDIA driver's kernel log)"
    )
