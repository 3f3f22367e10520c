"""show_gids (MLNX_OFED / DOCA): the GID table of each RDMA port, as RDMA ports without a state.

show_gids reads /sys/class/infiniband/DEV/ports/N/gids, gid_attrs/types and gid_attrs/ndevs and prints a row per
configured GID under the header ``DEV PORT INDEX GID IPv4 VER DEV``, then ``n_gids_found=N``:
``mlx5_0  1  3  0000:0000:0000:0000:0000:ffff:ac13:003c 172.19.0.60  v2  ens1f0``. ``VER`` is the GID's RoCE
version (its sysfs type "IB/RoCE v1" or "RoCE v2"); the last ``DEV`` the network device a RoCE GID is bound to
(an InfiniBand port's GIDs have none). A port with a GID bound to a network device is a RoCE (Ethernet) port; its
state is not printed. ``n_gids_found=0`` (no row): no GID is visible here, as inside a container whose network
namespace holds no RDMA network device (a veth): RoCE cannot be used from it.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.section import Section, outside

HEADER = re.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$")
ROW = re.compile(
    r"^\s*(\w[\w.-]{0,63})\s+(\d{1,3})\s+(\d{1,5})\s+([0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})"
    r"(?:\s+(\d{1,3}(?:\.\d{1,3}){3}))?\s+(v[12])(?:\s+(\S{1,64}))?\s*$"
)
FOUND = re.compile(r"^\s*n_gids_found=(\d{1,6})\s*$")
NO_GIDS = (
    "show_gids found no GID (n_gids_found=0): no RDMA port is bound to a network device here (inside a container, "
    "its interface is not an RDMA one, a veth): RoCE cannot be used from it"
)


@outside("show-gids", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The ``DEV PORT INDEX GID IPv4 VER DEV`` header, or a GID row pasted without it."""
    line = lines[i]
    return bool(HEADER.match(line) or (ROW.match(line) and (i == 0 or not ROW.match(lines[i - 1]))))


def parse_show_gids(text: str, source: str, first: int) -> Rig:
    """Each device and port the GID rows name, as a port whose state is unknown (show_gids does not print it)."""
    rig = Rig()
    gids: dict[tuple[str, int], list[tuple[str, str | None]]] = {}
    found = None
    for line in text.splitlines():
        if m := ROW.match(line):
            gids.setdefault((m.group(1), int(m.group(2))), []).append((m.group(6), m.group(7)))
        elif f := FOUND.match(line):
            found = int(f.group(1))
    ports: list[RdmaPort] = []
    for (device, port), rows in gids.items():
        versions = sorted({v for v, _ in rows})
        netdevs = sorted({d for _, d in rows if d})
        p = RdmaPort(device=device, port=port, link_layer="Ethernet" if netdevs else None)
        said = f"{len(rows)} GID(s), RoCE {'/'.join(versions)}" + (f" on {', '.join(netdevs)}" if netdevs else "")
        p.missing("state", f"show_gids prints the port's GIDs ({said}), not its state")
        p.missing("phys_state", "show_gids does not print it")
        p.missing("rate_gbps", "show_gids does not print it")
        if p.link_layer is None:
            p.missing("link_layer", "its GIDs name no network device (an InfiniBand port's GIDs have none)")
        ports.append(p)
    rig.network.rdma_ports = ports
    if not ports and found == 0:
        rig.network.unavailable["rdma_ports"] = NO_GIDS
    rig.origins["network.rdma_ports"] = f"{source}:{first}"
    return rig
