"""RDMA adapter ports (InfiniBand and RoCE) from /sys/class/infiniband, read-only and unprivileged.

Per port (``/sys/class/infiniband/<dev>/ports/<n>/``): ``state`` ("4: ACTIVE"), ``phys_state`` ("5: LinkUp"),
``rate`` ("400 Gb/sec (4X NDR)"), ``link_layer``; per adapter: ``fw_ver``, ``hca_type`` and the PCI function
its ``device`` link points at. The same files ibstat and ibv_devinfo read.
"""

from __future__ import annotations

import os
import posixpath
import re

from gpuadvisor.facts import RdmaPort

from .pcie import _read
from .sysread import OS, Files

RATE_RE = re.compile(r"^\s*([0-9.]+)\s*(?:Gb/sec|Gbps|Gb/s)?", re.I)
STATE_RE = re.compile(r"^\s*\d+\s*:\s*(\S+)")


def parse_rate(text: str | None) -> float | None:
    """ "400 Gb/sec (4X NDR)" or "400" -> 400.0."""
    if not text:
        return None
    m = RATE_RE.match(text)
    return float(m.group(1)) if m else None


def parse_state(text: str | None) -> str | None:
    """ "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp"; a bare word stays itself."""
    if not text:
        return None
    m = STATE_RE.match(text)
    return m.group(1) if m else text.split()[0]


def read_ports(root: str | os.PathLike[str] = "/", files: Files = OS) -> tuple[list[RdmaPort] | None, str | None]:
    """Every RDMA port, or (None, reason) when the class directory cannot be read."""
    base = posixpath.join(os.fspath(root), "sys", "class", "infiniband")
    try:
        devices = sorted(files.listdir(base))
    except FileNotFoundError:
        return [], None  # no RDMA driver loaded: no ports (a fact, not an unknown)
    except OSError as e:
        return None, f"cannot read {base}: {e.strerror}"
    ports: list[RdmaPort] = []
    for name in devices:
        dev = f"{base}/{name}"
        fw = _read(f"{dev}/fw_ver", files)
        hca = _read(f"{dev}/hca_type", files)
        try:
            bus_id: str | None = posixpath.basename(files.realpath(f"{dev}/device"))
        except OSError:
            bus_id = None
        if bus_id and not re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", bus_id):
            bus_id = None
        try:
            port_names = sorted((p for p in files.listdir(f"{dev}/ports") if p.isdigit()), key=int)
        except OSError:
            port_names = []
        for number in port_names:
            pd = f"{dev}/ports/{number}"
            port = RdmaPort(device=name, port=int(number), firmware=fw, ca_type=hca, bus_id=bus_id)
            for attr, value in (
                ("state", parse_state(_read(f"{pd}/state", files))),
                ("phys_state", parse_state(_read(f"{pd}/phys_state", files))),
                ("rate_gbps", parse_rate(_read(f"{pd}/rate", files))),
                ("link_layer", _read(f"{pd}/link_layer", files)),
            ):
                if value is None:
                    port.missing(attr, f"{pd}/{attr.replace('_gbps', '')} not readable")
                else:
                    setattr(port, attr, value)
            port.counters = read_counters(f"{pd}/counters", files)
            if port.counters is None:
                port.missing("counters", f"{pd}/counters not readable")
            ports.append(port)
    return ports, None


# The error counters of an IB port (InfiniBand Architecture Specification PortCounters, as Linux names them in
# sysfs); ibqueryerrors and perfquery print the same ones.
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_discards",
)
COUNTER_MAX = 2**64  # the widest IB counter; a larger number in a file is not a count


def read_counters(directory: str | os.PathLike[str], files: Files = OS) -> dict[str, int] | None:
    """The error counters a port's counters/ directory holds (the ones readable), or None without the directory."""
    directory = os.fspath(directory)
    if not files.is_dir(directory):
        return None
    out: dict[str, int] = {}
    for name in ERROR_COUNTERS:
        text = _read(f"{directory}/{name}", files)
        if text and text.strip().isdigit() and len(text.strip()) <= 20 and int(text) < COUNTER_MAX:
            out[name] = int(text)
    return out
