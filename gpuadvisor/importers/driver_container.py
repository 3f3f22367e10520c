"""The NVIDIA driver container's log (the GPU Operator's ``nvidia-driver-ctr``: ``kubectl logs -n gpu-operator
nvidia-driver-daemonset-... -c nvidia-driver-ctr``), as its entrypoint script and nvidia-installer print it.

Forms read (NVIDIA/gpu-driver-container, each distribution's ``nvidia-driver`` script, and nvidia-installer's own
messages): the installer's ``Installation of the kernel module for the NVIDIA Accelerated Graphics Driver for
Linux-x86_64 (version 450.80.02) is now complete.`` and the script's ``Starting installation of NVIDIA driver version
535.104.12 for Linux kernel version ...`` (the driver's version), its steps (``Loading NVIDIA driver kernel
modules...``, ``Starting NVIDIA persistence daemon...``, ``Done, now waiting for signal``; on a stop ``Caught
signal``, ``Unloading NVIDIA driver kernel modules...``), with the shell's ``set -x`` trace lines (``+ modprobe ...``)
between them or not, and its failures: ``Could not unload NVIDIA driver kernel modules, driver is in use`` (a driver
already loaded on the host holds the modules), ``Could not resolve Linux kernel version`` (no kernel headers for the
node's kernel), nvidia-installer's ``ERROR: Unable to load the kernel module 'nvidia.ko'`` and modprobe's ``could not
insert 'nvidia'``.

Read: the driver's version (the last the log installed; unknown, for that reason, when its install or load failed
after it); each failure as the driver's own install problem (the sign
``driver-install``, GA820: reinstall, not a hardware fault), and the other error lines about the GPU stack as lines
GA828 lists. A log that loaded the driver and then stopped on a signal (a pod restarted or upgraded) holds no fault.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent, Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.importers.beyond import kernel_rig
from gpuadvisor.importers.section import Section, outside_log
from gpuadvisor.probes.kmsg_unjudged import unjudged

KIND = "driver-container"
WHAT = "NVIDIA driver container log (GPU Operator nvidia-driver-ctr)"
_VERSION = r"(\d{3}(?:\.\d{1,3}){1,2})"
_INSTALLED = re.compile(
    r"Installation of the kernel module for the NVIDIA Accelerated Graphics Driver for Linux-\S+ \(version:? "
    + _VERSION
    + r"\) is now complete"
)
_STARTING = re.compile(r"Starting installation of NVIDIA driver version " + _VERSION + r" for Linux kernel version")
# the entrypoint script's own step messages (a line of it is the container's, whatever precedes it)
STEPS = (
    "Loading NVIDIA driver kernel modules...",
    "Unloading NVIDIA driver kernel modules...",
    "Starting NVIDIA persistence daemon...",
    "Stopping NVIDIA persistence daemon...",
    "Mounting NVIDIA driver rootfs...",
    "Unmounting NVIDIA driver rootfs...",
    "Installing NVIDIA driver kernel modules...",
    "Checking NVIDIA driver packages...",
    "Done, now waiting for signal",
)
# the failures that leave the node without a loaded driver: the driver's install problem
_FAILED = re.compile(
    r"Could not unload NVIDIA driver kernel modules, driver is in use"
    r"|Could not resolve Linux kernel version"
    r"|Unable to load the kernel module '?nvidia(?:\.ko)?'?"
    r"|could not insert '?nvidia'?"
)


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line of the driver container's log: the installer's version line or one of the script's steps, outside
    another log and another such log."""
    line = lines[i]
    mine = bool(_INSTALLED.search(line) or _STARTING.search(line) or any(s in line for s in STEPS))
    return mine and outside_log(current) and (current is None or current.kind != KIND)


def parse(text: str, source: str, first: int) -> Rig:
    """The driver's version the log installed, its failures (GA820's driver-install sign) and its other error
    lines about the GPU stack (GA828)."""
    lines = text.splitlines()
    events = [
        KernelEvent(kind="driver-install", text=f"driver container: {line.strip()[:300]}", line=first + n)
        for n, line in enumerate(lines)
        if _FAILED.search(line)
    ]
    events += unjudged(text, first, {e.line for e in events if e.line is not None})
    rig = kernel_rig(events, len(lines), source, first, None)
    rig.kernel.source = SERVICE_LOG  # the container's own log, not the kernel's
    versions = [(n, m.group(1)) for n, x in enumerate(lines) if (m := _INSTALLED.search(x) or _STARTING.search(x))]
    if versions:
        n, version = versions[-1]
        failed = [e for e in events if e.kind == "driver-install" and (e.line or 0) > first + n]
        if failed:  # the install or load of that version failed after it: no driver of it runs
            rig.software.unavailable["driver_version"] = (
                f"the driver container's install of {version} failed (line {failed[0].line}): no driver is loaded"
            )
        else:
            rig.software.driver_version = version
            rig.software.unavailable.pop("driver_version", None)
        rig.origins["software.driver_version"] = f"{source}:{first + n}"
    return rig
