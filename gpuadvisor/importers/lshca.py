"""lshca's HCA table (github.com/MrBr-github/lshca, as UCX's CI prints it for its nodes): a ``PCI_addr | RDMA | Net
| Numa | LnkStat | IpStat | Link | Rate | LnkCapWidth | LnkStaWidth | HCA_Type`` header between dashed rulers, a row
per RDMA device (``000a:11:00.0 | mlx5_0 | ib0 | 2 | down | down | IB | 10* | x16 G3 | x8 >!< | MT4119``), under a
``Dev #N`` block per adapter. Its "elastic view" leaves out a column whose rows would all say the same.

Read: each row's device as an RDMA port (port 1: an mlx5 function is one port), its logical state (``actv``,
``down``, ``init``, ``armd``), link layer (``IB``, ``Eth``), rate and adapter type; lshca's ``>!<`` on the PCIe link
width it trained at (``LnkStaWidth`` below ``LnkCapWidth``) is a note: the port facts hold no PCIe link.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "lshca (HCA table)"
_HEAD = re.compile(r"^\s*PCI_addr\s*\|\s*RDMA\s*\|.*\bHCA_Type\b")
_STATES = {"actv": "ACTIVE", "active": "ACTIVE", "down": "DOWN", "init": "INIT", "armd": "ARMED", "armed": "ARMED"}
_LAYERS = {"IB": "InfiniBand", "Eth": "Ethernet"}
_BUS = re.compile(rf"^{PCI_BUS_ID}$")
_WIDTH = re.compile(r"^x(\d{1,2})\b")


@outside("lshca", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """lshca's header row (``PCI_addr | RDMA | ... | HCA_Type``), outside a log and another lshca table."""
    return bool(_HEAD.match(lines[i]))


def _port(row: dict[str, str]) -> RdmaPort:
    port = RdmaPort(device=row["RDMA"])
    port.missing("port", "lshca shows one row per RDMA device, not its port number")
    stat = row.get("LnkStat")
    if stat is None:
        port.missing("state", "lshca left its LnkStat column out (its elastic view)")
    else:
        port.state = _STATES.get(stat.lower())
        if port.state is None:
            port.missing("state", f"lshca says '{stat}'")
    port.missing("phys_state", "lshca shows no physical state")
    port.link_layer = _LAYERS.get(row.get("Link", ""))
    rate = row.get("Rate", "")
    if rate.isdigit():
        port.rate_gbps = float(rate)
    else:
        port.missing("rate_gbps", f"lshca shows '{rate}'" if rate else "no Rate column")
    port.ca_type = row.get("HCA_Type") or None
    if _BUS.match(row.get("PCI_addr", "")):
        port.bus_id = row["PCI_addr"].lower()
    return port


def _narrow(row: dict[str, str]) -> str | None:
    """``x8 of x16`` where the link trained narrower than it can (lshca's ``>!<``), else None."""
    cap, sta = _WIDTH.match(row.get("LnkCapWidth", "")), _WIDTH.match(row.get("LnkStaWidth", ""))
    if cap and sta and int(sta.group(1)) < int(cap.group(1)):
        return f"x{sta.group(1)} of x{cap.group(1)}"
    return None


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each row's RDMA device as a port, and a note for the PCIe links lshca flags as narrower than they can be."""
    rig = Rig()
    ports: list[RdmaPort] = []
    narrow: list[str] = []
    columns: list[str] = []
    for line in clean_lines(text):
        if _HEAD.match(line):
            columns = [c.strip() for c in line.split("|")]
            continue
        cells = [c.strip() for c in line.split("|")]
        if not columns or len(cells) != len(columns):
            continue
        row = dict(zip(columns, cells, strict=True))
        if not row.get("RDMA"):
            continue  # a bond's member interface, its RDMA device on the bond's row
        ports.append(_port(row))
        if (was := _narrow(row)) is not None:
            narrow.append(f"{row['RDMA']} {was}")
    if not ports:
        raise ImportParseError(source, first_line, f"{WHAT}: no device row under its header")
    rig.network.rdma_ports = ports
    rig.origins["network.rdma_ports"] = f"{source}:{first_line}"
    if narrow:
        rig.problems.append(
            f"{source}: line {first_line}: lshca: the adapter's PCIe link trained narrower than it can ("
            + ", ".join(narrow)
            + "): fewer lanes cut what the adapter can move to and from the host in proportion; reseat the card or "
            "move it to a slot wired for its full width"
        )
    return rig
