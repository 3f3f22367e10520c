"""RDMA adapter ports (InfiniBand and RoCE) from /sys/class/infiniband, read-only and unprivileged.

Per port (``/sys/class/infiniband/<dev>/ports/<n>/``): ``state`` ("4: ACTIVE"), ``phys_state`` ("5: LinkUp"),
``rate`` ("400 Gb/sec (4X NDR)"), ``link_layer``; per adapter: ``fw_ver``, ``hca_type`` and the PCI function
its ``device`` link points at. The same files ibstat and ibv_devinfo read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gpuadvisor.facts import RdmaPort

from .pcie import _read

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


def read_ports(root: str | os.PathLike[str] = "/") -> tuple[list[RdmaPort] | None, str | None]:
    """Every RDMA port, or (None, reason) when the class directory cannot be read."""
    base = Path(root) / "sys" / "class" / "infiniband"
    try:
        devices = sorted(p for p in base.iterdir())
    except FileNotFoundError:
        return [], None  # no RDMA driver loaded: no ports (a fact, not an unknown)
    except OSError as e:
        return None, f"cannot read {base}: {e.strerror}"
    ports: list[RdmaPort] = []
    for dev in devices:
        fw = _read(dev / "fw_ver")
        hca = _read(dev / "hca_type")
        try:
            bus_id: str | None = Path(os.path.realpath(dev / "device")).name
        except OSError:
            bus_id = None
        if bus_id and not re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", bus_id):
            bus_id = None
        try:
            port_dirs = sorted((p for p in (dev / "ports").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        except OSError:
            port_dirs = []
        for pd in port_dirs:
            port = RdmaPort(device=dev.name, port=int(pd.name), firmware=fw, ca_type=hca, bus_id=bus_id)
            for name, value in (
                ("state", parse_state(_read(pd / "state"))),
                ("phys_state", parse_state(_read(pd / "phys_state"))),
                ("rate_gbps", parse_rate(_read(pd / "rate"))),
                ("link_layer", _read(pd / "link_layer")),
            ):
                if value is None:
                    port.missing(name, f"{pd / name.replace('_gbps', '')} not readable")
                else:
                    setattr(port, name, value)
            port.counters = read_counters(pd / "counters")
            if port.counters is None:
                port.missing("counters", f"{pd / 'counters'} not readable")
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


def read_counters(directory: Path) -> dict[str, int] | None:
    """The error counters a port's counters/ directory holds (the ones readable), or None without the directory."""
    if not directory.is_dir():
        return None
    out: dict[str, int] = {}
    for name in ERROR_COUNTERS:
        text = _read(directory / name)
        if text and text.strip().isdigit() and len(text.strip()) <= 20 and int(text) < COUNTER_MAX:
            out[name] = int(text)
    return out
