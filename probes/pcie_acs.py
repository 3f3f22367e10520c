"""PCIe Access Control Services (ACS) on the bridges above each GPU and RDMA adapter.

ACS Control (PCIe base spec 7.7.8.3) lives in the extended configuration space (offset 0x100 and up). Linux
gives that part of sysfs ``config`` to root only: unprivileged, the file reads 64 bytes and the bits are
unknown (null with that reason). Bridges are found with the same path code that reads link widths
(``probes.pcie.Sysfs.chain``).
"""

from __future__ import annotations

import posixpath

from gpuadvisor.facts import AcsPort, Network

from .pcie import Sysfs

ACS_CAP_ID = 0x000D
# ACS Control register bits, named as lspci -vvv prints them (ACSCtl:).
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
NOT_ROOT = "PCI extended config space readable by root only (run the scan as root to read ACS)"


def acs_control(config: bytes) -> dict[str, bool] | None:
    """The ACS Control bits of a config-space dump, {} when the device has no ACS capability, None when the dump
    stops before the extended space."""
    if len(config) <= 0x100:
        return None
    ptr = 0x100
    seen: set[int] = set()
    while ptr and ptr + 8 <= len(config) and ptr not in seen:
        seen.add(ptr)
        header = int.from_bytes(config[ptr : ptr + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return {}
        if header & 0xFFFF == ACS_CAP_ID:
            ctl = int.from_bytes(config[ptr + 6 : ptr + 8], "little")
            return {name: bool(ctl >> bit & 1) for bit, name in enumerate(ACS_BITS)}
        ptr = (header >> 20) & 0xFFC
    return {}


def probe_acs(sysfs: Sysfs, gpus: list[tuple[int, str]], nics: list[tuple[str, str]], net: Network) -> None:
    """ACS Control of every bridge on the paths of ``gpus`` (index, bus id) and ``nics`` (name, bus id)."""
    ports: dict[str, AcsPort] = {}
    unreadable = 0
    owners: list[tuple[int | str, str]] = [*gpus, *nics]
    for owner, bdf in owners:
        _, _, dirs = sysfs.chain(bdf)
        for d in dirs[1:]:  # the bridges above the device
            name = posixpath.basename(d)
            if name not in ports:
                try:
                    config = sysfs.files.read_bytes(f"{d}/config")
                except OSError:
                    config = b""
                ctl = acs_control(config)
                if ctl is None:
                    unreadable += 1
                    continue
                if not ctl:
                    continue
                ports[name] = AcsPort(bus_id=name, control=ctl)
            port = ports[name]
            if isinstance(owner, int):
                port.gpus.append(owner)
            else:
                port.nics.append(str(owner))
    if unreadable and not ports:
        net.missing("acs", NOT_ROOT)
        return
    net.acs = sorted(ports.values(), key=lambda p: p.bus_id)
    if unreadable:
        net.unavailable["acs"] = f"{unreadable} bridge(s) not read: {NOT_ROOT}"
