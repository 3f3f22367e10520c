"""ibqueryerrors: the InfiniBand ports whose error counters passed the tool's thresholds, as RDMA ports with counters.

ibqueryerrors (infiniband-diags) walks the fabric and prints, for each node with a port over its thresholds, an
``Errors for 0x0002c903000e0b72 "node01 HCA-1"`` line and below it one line per port::

       GUID 0x0002c903000e0b72 port 1: [LinkDownedCounter == 25] [PortRcvErrors == 26 (26.000)]

(``port ALL`` with ``-c``/``--data``; the value in parentheses is the same count, scaled). Each port becomes an
RDMA port named by the node's description (or its GUID) with the counters under the names sysfs uses, which GA823
judges. The fabric holds switches and other nodes: a port here need not be this host's, and the finding names it.
Its lines were posted in openucx/ucx#9590 and guilbaults/infiniband-exporter#12.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.beyond_tools import IB_COUNTERS, add_count, counter_port
from gpuadvisor.importers.section import Section, outside

_HEAD = re.compile(r'^\s*Errors for\s+(?:(0x[0-9a-fA-F]{1,16})\s*)?(?:"([^"]{0,200})")?\s*$')
_PORT = re.compile(r"^\s*GUID\s+(0x[0-9a-fA-F]{1,16})\s+port\s+(\d{1,3}|ALL)\s*:\s*(\[.*)$")
_COUNT = re.compile(r"\[(\w+)\s*==\s*(\d{1,20})(?:\s*\([^)]*\))?\]")


@outside("ibqueryerrors", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """An ``Errors for ...`` line followed by a port line, or a port line with its ``[Counter == N]`` items."""
    line = lines[i]
    if _PORT.match(line):
        return bool(_COUNT.search(line))
    return bool(_HEAD.match(line)) and i + 1 < len(lines) and bool(_PORT.match(lines[i + 1]))


def parse_ibqueryerrors(text: str, source: str, first: int) -> Rig:
    """Each port line's counters; the port named by the node's description (its GUID when none is given)."""
    rig = Rig()
    ports: dict[tuple[str, int | None], RdmaPort] = {}
    node: str | None = None
    for line in text.splitlines():
        if head := _HEAD.match(line):
            node = (head.group(2) or "").strip() or head.group(1)
            continue
        m = _PORT.match(line)
        if m is None:
            continue
        guid, number, rest = m.groups()
        name = node or f"GUID {guid}"
        port_no = None if number == "ALL" else int(number)
        device = f"{name} (all ports)" if number == "ALL" else name
        port = ports.get((device, port_no))
        if port is None:
            port = ports[(device, port_no)] = counter_port(
                device, port_no, "ibqueryerrors", "ibqueryerrors sums the node's ports (port ALL)"
            )
        for counter, value in _COUNT.findall(rest):
            if counter in IB_COUNTERS:
                add_count(port, counter, value)
    rig.network.rdma_ports = list(ports.values())
    rig.origins["network.rdma_ports"] = f"{source}:{first}"
    return rig
