"""PCI bus ids in one form: NVML's, lower case, ``0000:18:00.0``; a domain above 0xffff keeps all its digits.

Azure VMs' GPUs sit behind Hyper-V's virtual PCI bus, whose domain is 32 bits: nvidia-smi prints ``GPU
3E3F8E05:00:00.0`` (https://github.com/NVIDIA/nvidia-docker/issues/816) and Linux names the device with the whole
domain (``%04x``: ``pci 3f8f31a:00:00.0`` in https://github.com/NVIDIA/nvidia-docker/issues/1316, where a tool
that kept four digits looked for ``/proc/driver/nvidia/gpus/cfdd:00:00.0`` beside ``03f8cfdd:00:00.0``). One
function for every reader (importers, the live NVML probe, the kernel log), so the same GPU gets the same id.
"""

from __future__ import annotations

import re

_HEX = re.compile(r"[0-9a-f]{1,8}")
_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.([0-7]))?$")


def pci_domain(domain: str | None) -> str:
    """A PCI domain's digits in NVML's form: four ("0000", "0001"), or eight for one above 0xffff ("3e3f8e05",
    "03f8cfdd"), whatever the width written ("00000000", "3F8CFDD")."""
    dom = int(domain, 16) if domain else 0
    return f"{dom:0{8 if dom > 0xFFFF else 4}x}"


def normalize_bus_id(text: str | None, *, function: bool = True) -> str | None:
    """``00000000:18:00.0`` / ``18:00.0`` / ``0000:18:00.0`` -> ``0000:18:00.0``; ``3E3F8E05:00:00.0`` ->
    ``3e3f8e05:00:00.0``; None for what is not a bus id. ``function=False``: the form without one, as Xid lines
    print it (``0000:3b:00``), is read too and given without one."""
    if text is None:
        return None
    m = _BUS_ID.match(text.strip())
    if not m or (function and m.group(4) is None):
        return None
    domain, bus, dev, fn = m.groups()
    head = f"{pci_domain(domain)}:{int(bus, 16):02x}:{int(dev, 16):02x}"
    return head if fn is None else f"{head}.{fn}"


def with_domain(text: str) -> str:
    """``DOMAIN:rest`` (lower case) with its domain as :func:`pci_domain` writes it and ``rest`` as written: the
    kernel log's "00000000:3B:00" -> "0000:3b:00", "3E3F8E05:00:00" -> "3e3f8e05:00:00"."""
    domain, rest = text.lower().split(":", 1)
    return f"{pci_domain(domain) if _HEX.fullmatch(domain) else domain[-4:]}:{rest}"
