"""ibdev2netdev: which network interface each RDMA port carries, as RDMA ports without a state.

ibdev2netdev (MLNX_OFED / DOCA) prints one line per port, ``mlx5_0 port 1 ==> ibp26s0 (Down)``, often through
``column -t`` and with comments after it (imbue-ai/cluster-health#4). The word in parentheses is the network
interface's state (its operstate), not the RDMA port's: an InfiniBand port can be Active with its IPoIB interface
down or absent. So each port is kept with its state unknown and the reason, and its link layer from the interface's
name where the name says it: systemd's predictable interface names begin "ib" for InfiniBand and "en" for Ethernet
(systemd.net-naming-scheme(7)). An ibstat, ibv_devinfo or ibstatus of the same ports, read first (lower trust
number), holds the ports: beside one, ibdev2netdev's ports add nothing (a port it alone shows would have no state).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort
from gpuadvisor.importers.rdma_ports import line_ports, line_starts

LINE = re.compile(r"^\s*(\w[\w.-]{0,63})\s+port\s+(\d{1,3})\s*==>\s*(\S{1,64})\s+\((Up|Down)\)(?:\s|$)")
_LAYER = {"ib": "InfiniBand", "en": "Ethernet"}
STATE = "ibdev2netdev shows the network interface's state ({netdev} {word}), not the RDMA port's"


def interface_only(port: RdmaPort) -> bool:
    """A port ibdev2netdev alone showed (its state unknown for that reason)."""
    return (port.why("state") or "").startswith(STATE.split("(", 1)[0])


starts = line_starts(LINE, "ibdev2netdev")  # mlx5_0 port 1 ==> ib0 (Up)


def _port(m: re.Match[str]) -> RdmaPort:
    """A ``DEV port N ==> NETDEV (Up|Down)`` line as a port; the interface's state is not the port's."""
    device, port, netdev, word = m.groups()
    p = RdmaPort(device=device, port=int(port), link_layer=_LAYER.get(netdev[:2]))
    p.missing("state", STATE.format(netdev=netdev, word=word))
    p.missing("phys_state", "ibdev2netdev does not print it")
    p.missing("rate_gbps", "ibdev2netdev does not print it")
    if p.link_layer is None:
        p.missing("link_layer", f"not told by the interface's name ({netdev})")
    return p


parse_ibdev2netdev = line_ports(LINE, _port)
