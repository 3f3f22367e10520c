"""Folding@home's PCI listing (``FAHClient --lspci``): one line per GPU-vendor PCI function it found,
``0xVENDOR:0xDEVICE:BUS:SLOT:FUNCTION:VENDOR NAME:DEVICE NAME`` (``0x10de:0x13c0:3:0:0:NVIDIA Corporation:``), the bus,
slot and function as decimal numbers, the device's name often empty. An NVIDIA function 0 is a GPU (numbered in the
order listed: the client's own GPU numbers are not printed); the other functions of the board (HDMI audio at
function 1, a USB-C controller) are not GPUs; another vendor's device is not read. Its model is not named (the
device id is: no PCI ids list here). Two GPUs listed at one address is the client's fault (FAHClient 7.4 on
multi-socket hosts), not their address: their bus ids are then left unknown."""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "FAHClient --lspci"
_LINE = re.compile(r"^0x([0-9a-fA-F]{4}):0x([0-9a-fA-F]{4}):(\d{1,3}):(\d{1,2}):([0-7]):([^:\n]{0,80}):([^\n]{0,120})$")
_NVIDIA = "10de"


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A listing line (the first of the paste's)."""
    return (current is None or current.kind != "fah-lspci") and bool(_LINE.match(lines[i].strip()))


def parse_fah_lspci(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each NVIDIA function 0 as a GPU, its bus id unless two GPUs share one; the other lines noted."""
    rig = Rig()
    where: dict[str, list[Gpu]] = {}
    for k, line in enumerate(clean_lines(text)):
        m, lineno = _LINE.match(line.strip()), first_line + k
        if m is None:
            continue
        vendor, device, bus, slot, fn = m.group(1).lower(), m.group(2).lower(), *map(int, m.group(3, 4, 5))
        if vendor != _NVIDIA or fn != 0:
            what = "another vendor's device" if vendor != _NVIDIA else f"the board's function {fn} (not a GPU)"
            rig.problems.append(f"{source}: line {lineno}: {vendor}:{device}: {what}: not read as a GPU")
            continue
        g = Gpu(index=len(rig.gpus), bus_id=f"0000:{bus:02x}:{slot:02x}.0")
        name = m.group(7).strip()
        g.name = name or None
        if g.name is None:
            g.unavailable["name"] = f"FAHClient names the device id (0x{device}), not the model"
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
        rig.gpus.append(g)
        where.setdefault(g.bus_id or "", []).append(g)
    if not rig.gpus:
        raise ImportParseError(source, first_line, "FAHClient --lspci lists no NVIDIA GPU (function 0 of 0x10de)")
    for address, same in where.items():
        if len(same) > 1:
            why = f"FAHClient lists {len(same)} GPUs at {address}: one address cannot hold two GPUs (its listing fault)"
            for g in same:
                g.bus_id = None
                g.unavailable["bus_id"] = why
            rig.problems.append(f"{source}: {why}; their bus ids unknown")
    rig.problems.append(
        f"{source}: line {first_line}: FAHClient prints no GPU numbers: GPUs numbered in the order listed"
    )
    return rig
