"""``iblinkinfo`` (infiniband-diags): every link of an InfiniBand fabric as the subnet sees it, recognised and noted.

iblinkinfo (infiniband-diags, src/iblinkinfo.c) prints each node as a header, ``CA: <node description>:`` or
``Switch: 0x<GUID> <node description>:``, then one line per port: for a CA its port GUID, LID and port number, for a
switch its LID and port number, then ``==( <width> <speed> <state>/ <physical state>)==>`` (``4X 25.78125 Gbps
Active/  LinkUp``; a port with no link ``==(  Down/ Polling)==>``) and the LID, port and description of the node
at the other end.

What it shows is the fabric: every host's adapter ports, the switches' ports, seen from wherever it ran. The RDMA
ports of a scan are the adapters of the host it describes, which iblinkinfo does not name (its CAs are all the
fabric's hosts), so its ports are not taken as the host's: each host port it shows is listed in a note (width,
speed and state), and one not Active/LinkUp is named there.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "iblinkinfo"
_NODE = re.compile(r"^(CA|Switch): (?:0x[0-9a-fA-F]{1,16} )?(\S.{0,200}?):\s*$")
# [GUID] LID PORT[ext] ==( [WIDTH SPEED Gbps] STATE/ PHYS)==> ...; the link part alone is what is read
_LINK = re.compile(
    r"^\s*(?:0x[0-9a-fA-F]{1,16}\s+)?\d{1,6}\s+(\d{1,3})\[[^\]]{0,8}\]\s+==\(\s*"
    r"(?:(\d{1,2}X)\s+([\d.]{1,12})\s+Gbps\s+)?([A-Za-z]{1,12})/\s*([A-Za-z]{1,24})\s*\)==>"
)
_LONGEST = 600


@outside("iblinkinfo", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``CA: <name>:`` or ``Switch: 0x<GUID> <name>:`` node line over a port line ``... ==( 4X ... )==> ...``."""
    s = lines[i].strip()
    if len(s) > _LONGEST or not _NODE.match(s):
        return False
    below = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
    return len(below) < _LONGEST and bool(_LINK.match(below))


def parse_iblinkinfo(text: str, source: str, first: int) -> Rig:
    """The host (CA) ports the fabric listing shows, as a note: not this host's RDMA ports (see the module)."""
    rig = Rig()
    node: tuple[str, str] | None = None
    ports: list[str] = []
    odd: list[str] = []
    switches = 0
    for line in clean_lines(text):
        if len(line) > _LONGEST:
            continue
        if m := _NODE.match(line.strip()):
            node = (m.group(1), m.group(2))
            switches += m.group(1) == "Switch"
        elif node is not None and node[0] == "CA" and (p := _LINK.match(line)):
            port, width, speed, state, phys = p.groups()
            link = f"{width} {speed} Gbps " if width else ""
            ports.append(f"'{node[1]}' port {port}: {link}{state}/{phys}")
            if (state, phys) != ("Active", "LinkUp"):
                odd.append(ports[-1])
    if not ports and not switches:
        raise ImportParseError(source, first, f"{WHAT}: no node with a port line")
    shown = "; ".join(ports[:16]) + (f"; and {len(ports) - 16} more" if len(ports) > 16 else "")
    rig.problems.append(
        f"{source}: line {first}: {WHAT}: the fabric's links as the subnet sees them ({len(ports)} host port(s), "
        f"{switches} switch(es)), not this host's adapters: not read as its RDMA ports. Host ports: {shown or 'none'}"
    )
    if odd:
        rig.problems.append(f"{source}: {WHAT}: host port(s) not Active/LinkUp: {'; '.join(odd[:16])}")
    return rig
