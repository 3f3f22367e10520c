"""``mst status -v`` (NVIDIA/Mellanox Firmware Tools, MFT): the adapters the MST driver sees, one row per PCI function.

Under ``PCI devices:`` and a dashed ruler it prints a header ``DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA`` and a row per
function, its cells aligned under the header's words: ``ConnectX6(rev:0)  /dev/mst/mt4123_pciconf0  3b:00.0  mlx5_2
net-ens24np0  0`` (the device type and revision, the MST device whose ``mtNNNN`` is the adapter's PCI device id, the
function's PCI address, its RDMA device, its network interface after ``net-``, and its NUMA node); a function no
driver bound leaves the RDMA and NET cells empty (MFT user manual, "mst status").

Read: each row's RDMA device as an RDMA port of unknown number (an mlx5 function is one port; mst does not print
it), its adapter type (``MT4123``), PCI address, and link layer where the interface's name tells it (systemd's
predictable names: ``ib`` InfiniBand, ``en`` Ethernet). mst prints no port state, rate or error: those are unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import LSPCI_BUS_ID
from gpuadvisor.importers.section import Section, clean_lines, outside
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "mst status -v (MFT)"
_HEAD = re.compile(r"^\s*DEVICE_TYPE\s+MST\s+PCI\s+RDMA\s+NET\s+NUMA\s*$")
_COLUMNS = ("DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA")
_MST = re.compile(r"^(?:/dev/mst/)?mt(\d{4,5})_")  # VMware's rows name the device without /dev/mst/
_TYPE = re.compile(r"^\w{2,40}\(rev:[0-9a-fA-F]{1,4}\)$")  # "ConnectX6(rev:0)": a device row
_BUS = re.compile(rf"^{LSPCI_BUS_ID}$")
_LAYER = {"ib": "InfiniBand", "en": "Ethernet"}
_RDMA = re.compile(r"^\w[\w.-]{0,63}$")
_NOT_SHOWN = "mst status prints no {}"


@outside("mst-status", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The header ``DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA`` of ``mst status -v``."""
    return len(lines[i]) < 400 and bool(_HEAD.match(lines[i]))


def _cells(line: str, starts_at: list[int]) -> dict[str, str]:
    """A row's cells by the header's columns: each word under the column whose start is at or left of it (a cell
    left empty stays out); with as many words as columns, in order."""
    words = list(re.finditer(r"\S+", line))
    if len(words) == len(_COLUMNS):
        return {c: w.group(0) for c, w in zip(_COLUMNS, words, strict=True)}
    cells: dict[str, str] = {}
    for w in words:
        col = max((k for k, at in enumerate(starts_at) if at <= w.start() + 1), default=0)
        cells.setdefault(_COLUMNS[col], w.group(0))
    return cells


def _port(row: dict[str, str], where: str) -> RdmaPort:
    """A row's RDMA device as a port of unknown number, with what the row tells of its adapter."""
    port = RdmaPort(device=row["RDMA"])
    port.missing("port", "mst status names the RDMA device of each PCI function, not its port number")
    for name, what in (("state", "port state"), ("phys_state", "physical state"), ("rate_gbps", "rate")):
        port.missing(name, _NOT_SHOWN.format(what))
    if m := _MST.match(row.get("MST", "")):
        port.ca_type = f"MT{m.group(1)}"
    pci = row.get("PCI", "")
    if _BUS.match(pci):
        port.bus_id = normalize_bus_id(pci)
    else:
        port.missing("bus_id", f"not shown ({pci!r} in the paste, {where})" if pci else "not shown")
    net = row.get("NET", "").removeprefix("net-")
    port.link_layer = _LAYER.get(net[:2])
    if port.link_layer is None:
        port.missing("link_layer", f"not told by the interface's name ({net})" if net else "no network interface")
    return port


def _rows(lines: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(k, cells) of each device row under a header (a line that is no device row ends the table)."""
    starts_at: list[int] = []
    for k, line in enumerate(lines):
        if _HEAD.match(line):
            starts_at = [line.index(c) for c in _COLUMNS]
        elif starts_at and line.strip() and len(line) <= 400:
            row = _cells(line, starts_at)
            if _TYPE.match(row.get("DEVICE_TYPE", "")):
                yield k, row
            else:
                starts_at = []


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each row's RDMA device as a port (unknown number and state), its adapter type, PCI address and link layer."""
    rows = list(_rows(clean_lines(text)))
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT}: no device row under its header")
    rig = Rig()
    bound = [(k, row) for k, row in rows if _RDMA.match(row.get("RDMA", ""))]
    rig.network.rdma_ports = [_port(row, f"line {first_line + k}") for k, row in bound]
    rig.origins["network.rdma_ports"] = f"{source}:{first_line}"
    unbound = [
        f"{row.get('MST') or row.get('PCI') or row['DEVICE_TYPE']} (line {first_line + k})"
        for k, row in rows
        if (k, row) not in bound
    ]
    if unbound:
        rig.problems.append(
            f"{source}: mst status: no RDMA device on {', '.join(unbound)} (no RDMA driver bound to that function, "
            "or a host without one: VMware's native driver)"
        )
    return rig
