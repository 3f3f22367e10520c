"""gpustat's table (``gpustat``, wookayin/gpustat), which many training repositories' issues paste.

gpustat (gpustat/core.py) prints a header ``HOST  Mon Aug 22 15:23:57 2022  515.65.01`` (the host, the time, the
driver version) over one row per GPU: ``[0] Tesla P100-PCIE-16GB | 27'C,   0 % |   103 / 16384 MB | user(100M)``
(the NVML index, the name, temperature (``°C`` in later releases), ``--show-fan``'s speed, utilization,
``--show-power``'s (``-P``) ``, 29 / 250 W``: ``power.draw`` over ``enforced.power.limit``, NVML's enforced power limit
in whole watts (``-P draw`` prints ``, 29 W``, the draw alone), ``??`` where NVML has no value; then used / total
memory in MiB, which gpustat labels MB: NVML's bytes divided by 1024 * 1024, then the processes).

Read: each GPU's index, name, total memory and (``-P``) power limit; the driver version. The bus id and UUID are not
printed.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.framework_log import LONGEST, Reading
from gpuadvisor.importers.section import Section, outside

WHAT = "gpustat"
_HEADER = re.compile(
    r"^\s*\S{1,200}\s+(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\s+"
    r"(\d{3}\.\d{1,3}(?:\.\d{1,3})?)\s*$"
)
_ROW = re.compile(
    r"^\s*\[(\d{1,3})\]\s+(.{1,120}?)\s*\|\s*(?:\d+|\?+)(?:'|°)C,\s*(?:\d+|\?+) %([^|]{0,60})\|\s*(?:\d+|\?+)\s*/\s*"
    r"(\d+|\?+)\s*MB\s*\|"
)
_POWER = re.compile(r",\s+(?:\d+|\?+)\s*/\s*(\d+|\?+)\s*W\s*$")  # -P's draw / enforced limit, the cell's end
_UNSHOWN = "not printed by gpustat"
_NO_LIMIT = "gpustat printed '??' for the enforced power limit (NVML gave no value)"
_NO_POWER = "not printed: gpustat ran without -P (--show-power), or with -P draw (the draw alone)"


@outside("gpustat")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """gpustat's header over a GPU row, or (pasted without it) a ``[0] NAME | 27'C, 0 % | 103 / 16384 MB |`` row."""
    line = lines[i]
    if len(line) > LONGEST:
        return False
    if _HEADER.match(line):
        return _ROW.match(next((x for x in lines[i + 1 : i + 3] if x.strip()), "")) is not None
    return (m := _ROW.match(line)) is not None and m.group(1) == "0"


def parse_gpustat(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each GPU gpustat lists (index, name, total memory) and the driver version of its header."""
    r = Reading(source, first_line, text)
    for k, line in r.shown():
        if m := _HEADER.match(line):
            r.software(k, driver_version=m.group(1))
        elif m := _ROW.match(line):
            g = r.gpu(k, int(m.group(1)))
            g.name = m.group(2)
            if m.group(4).isdigit():
                g.memory_total_bytes = int(m.group(4)) * 1048576
            if (power := _POWER.search(m.group(3))) and power.group(1).isdigit():
                g.power_limit_w = float(power.group(1))
                g.unavailable.pop("power_limit_w", None)
            elif power and g.power_limit_w is None:
                g.unavailable["power_limit_w"] = _NO_LIMIT
    return r.finish(WHAT, {"bus_id": _UNSHOWN, "uuid": _UNSHOWN, "power_limit_w": _NO_POWER})
