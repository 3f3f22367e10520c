"""DIGITS' ``device_query.py`` (https://github.com/NVIDIA/DIGITS, digits/device_query.py), the device list DIGITS
threads ask for.

Its later form prints, per CUDA device, ``Device #0:``, ``>>> CUDA attributes:`` over ``  %-28s %s`` rows of the
``cudaDeviceProp`` fields (``name``, ``totalGlobalMem`` in bytes, ``clockRate``, ``major``, ``minor``; with
``-v`` every field, ``pciBusID_str`` among them), then ``>>> NVML attributes:`` (``Total memory  6134 MB``,
utilisation, temperature); its first form prints ``Device #0: NAME`` over ``%30s %s`` rows of every int and size
field. Read: each device's CUDA number, name, memory (totalGlobalMem), compute capability (major.minor), bus id
(``pciBusID_str``, or ``pciDomainID``/``pciBusID``/``pciDeviceID``). A row the paste cuts is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "DIGITS device_query.py"
_DEVICE = re.compile(r"^Device #(\d+):\s*(.*?)\s*$")
_FIELD = re.compile(r"^(name|totalGlobalMem|major|minor|pciBusID_str|pciBusID|pciDomainID|pciDeviceID)\s+(\S.*?)\s*$")
_CUDA = ">>> CUDA attributes:"


@outside("digits-devices")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Device #0:`` over ``>>> CUDA attributes:``, or ``Device #0: NAME`` over a ``name`` row (the first form)."""
    m = _DEVICE.match(lines[i].strip())
    if m is None:
        return False
    below = next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
    return below == _CUDA or bool(m.group(2)) and below.startswith("name ")


def parse_digits_query(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The CUDA devices device_query.py lists: number, name, memory, compute capability, bus id."""
    rig = Rig()
    rows: list[dict[str, str]] = []
    for s, lineno, cut in stripped_rows(text, first_line):
        if cut:
            break  # the row the paste cuts is not read
        if m := _DEVICE.match(s):
            rows.append({"#": m.group(1)} | ({"name": m.group(2)} if m.group(2) else {}))
            rig.origins[f"gpus[{len(rows) - 1}]"] = f"{source}:{lineno}"
        elif rows and (f := _FIELD.match(s)):
            rows[-1].setdefault(f.group(1), f.group(2))
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT} output without a 'Device #0:' line")
    for row in rows:
        g = Gpu(index=int(row["#"]), name=row.get("name") or None)
        if row.get("totalGlobalMem", "").isdigit():
            g.memory_total_bytes = int(row["totalGlobalMem"])
        if row.get("major", "").isdigit() and row.get("minor", "").isdigit():
            g.compute_capability = f"{row['major']}.{row['minor']}"
        g.bus_id = _bus_id(row)
        if g.bus_id is None:
            g.unavailable["bus_id"] = f"{WHAT} prints the bus id only with -v"
        g.unavailable["uuid"] = f"{WHAT} does not print the UUID"
        rig.gpus.append(g)
    return rig


def _bus_id(row: dict[str, str]) -> str | None:
    if re.fullmatch(PCI_BUS_ID, row.get("pciBusID_str", "")):
        return normalize_bus_id(row["pciBusID_str"])
    ids = [row.get(k, "") for k in ("pciDomainID", "pciBusID", "pciDeviceID")]
    if all(x.isdigit() for x in ids):
        domain, bus, device = (int(x) for x in ids)
        return f"{domain:04x}:{bus:02x}:{device:02x}.0"
    return None
