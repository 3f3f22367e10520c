"""nvitop's device table (``nvitop -1``, XuehaiPan/nvitop), pasted as its box-drawing text.

nvitop (nvitop/tui/screens/main/panels/device.py, ``header_lines`` and ``formats_full``) prints ``│ NVITOP 1.4.2
Driver Version: 550.90.12  CUDA Driver Version: 12.4 │`` in a ``╒═══╕`` box, then per GPU ``│ {index:>3}  {name:<19}
{persistence:>4} │ {bus_id:<16} {display:>3} │ ... │`` over ``│ {fan} {temp} {perf} {power} │ {used} / {total} │
...``, the memory in human units (``3.50MiB / 79.65GiB``, rounded to 0.01). Its compact form (``│ GPU Fan Temp Perf
Pwr:Usg/Cap │``) shows no name or bus id: only the index.

Read: the driver version, the CUDA version the driver supports, and each GPU's index, name and bus id (the full
form). The memory is not read (rounded to 0.01 GiB); a name nvitop cut short (``…``) is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.fragments import PCI_BUS_ID
from gpuadvisor.importers.framework_log import LONGEST, Reading
from gpuadvisor.importers.section import Section

WHAT = "nvitop"
_HEADER = re.compile(
    r"^\s*[│|]?\s*NVITOP \d[\w.]*\s+Driver Version: (\S{1,40})\s+CUDA Driver Version: (\S{1,20})\s*[│|]?\s*$"
)
_FULL_ROW = re.compile(
    r"^\s*[│|]\s*(\d{1,3})  (.{1,40}?)\s+(?:On|Off|N/A|TCC|WDDM)\s*[│|]\s*"
    rf"({PCI_BUS_ID})\s"
)
_COMPACT_ROW = re.compile(r"^\s*[│|]\s*(\d{1,3}) +(?:\d{1,3}%|N/A) +(?:\d{1,3}C|N/A) ")
_UNSHOWN = "not printed by nvitop's table"
_MEMORY = "nvitop prints the memory rounded to 0.01 GiB"


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """nvitop's ``│ NVITOP 1.4.2  Driver Version: ...  CUDA Driver Version: ... │`` header."""
    line = lines[i]
    return (current is None or current.kind != "nvitop") and len(line) <= LONGEST and bool(_HEADER.match(line))


def parse_nvitop(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver and CUDA versions of the header; each GPU's index, name and bus id."""
    r = Reading(source, first_line, text)
    for k, line in r.shown():
        if m := _HEADER.match(line):
            r.software(k, driver_version=m.group(1), cuda_driver_version=m.group(2))
        elif m := _FULL_ROW.match(line):
            g = r.gpu(k, int(m.group(1)), m.group(3))
            name = m.group(2).strip()
            if name.endswith(("…", "...")):
                g.unavailable["name"] = f"nvitop cut the name short ({name!r})"
            else:
                g.name = name
        elif m := _COMPACT_ROW.match(line):
            r.gpu(k, int(m.group(1)))
        elif not line.strip(" │|╒╕╘╛╞╡═─├┤┬┴┼╪╧╤\t") or "Persistence-M" in line or "Memory-Usage" in line:
            r.read.add(k)  # the box's rules and column titles
    return r.finish(WHAT, {"bus_id": _UNSHOWN, "uuid": _UNSHOWN, "memory_total_bytes": _MEMORY})
