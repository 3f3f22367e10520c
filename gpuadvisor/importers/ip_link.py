"""``ip link show`` (iproute2; ``ip addr`` prints the same interface lines): the host's network interfaces.

Each interface is a line ``N: NAME[@PARENT]: <FLAGS> mtu M qdisc Q state STATE ...`` and, indented below it,
``link/TYPE ADDRESS brd ...`` (``link/infiniband`` for an IPoIB interface). ``UP`` among the flags is the
administrative state (``ip link set NAME up``); ``state`` is the operational state (RFC 2863 operstate, as
/sys/class/net/NAME/operstate); an interface never brought up shows no ``UP`` flag, ``qdisc noop`` and ``state DOWN``.

Read: the interfaces' names (what NCCL_SOCKET_IFNAME is matched against); an IPoIB interface that is down is a note:
an interface's state is the network interface's, not the InfiniBand port's (an Active port can carry an IPoIB
interface nobody brought up), so it is no RDMA port fact and no finding.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside_log

WHAT = "ip link show"
_IFACE = re.compile(
    r"^\s*\d{1,6}:\s+([\w.:-]{1,32}?)(?:@[\w.-]{1,32})?:\s+<([A-Z0-9_,-]{0,200})>\s+mtu\s+\d+"
    r"(?:.*?\bqdisc\s+(\S+))?(?:.*?\bstate\s+(\S+))?"
)
_INFINIBAND = re.compile(r"^\s+link/infiniband\b")
_LONGEST = 2000


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """An interface line ``2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ...``, outside a log."""
    if current is not None and current.kind == "ip-link":
        return False
    return len(lines[i]) < _LONGEST and bool(_IFACE.match(lines[i])) and outside_log(current)


def parse_ip_link(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The interfaces' names, and a note for each IPoIB interface that is not up."""
    rig = Rig()
    names: list[str] = []
    shown: list[tuple[str, list[str], str, str, int]] = []  # name, flags, qdisc, state, line
    ipoib: set[str] = set()
    for k, line in enumerate(clean_lines(text)):
        if len(line) >= _LONGEST:
            continue
        if m := _IFACE.match(line):
            name, flags, qdisc, state = m.group(1), m.group(2).split(","), m.group(3) or "", m.group(4) or ""
            names.append(name)
            shown.append((name, flags, qdisc, state, first_line + k))
        elif _INFINIBAND.match(line) and shown:
            ipoib.add(shown[-1][0])
    if not names:
        raise ImportParseError(source, first_line, f"{WHAT}: no interface line")
    rig.host.net_interfaces = list(dict.fromkeys(names))
    rig.origins["host.net_interfaces"] = f"{source}:{first_line}"
    for name, flags, qdisc, state, lineno in shown:
        if (name in ipoib or name.startswith("ib")) and ("UP" not in flags or state == "DOWN"):
            how = "never brought up (no UP flag" + (f", qdisc {qdisc}" if qdisc else "") + ")"
            why = how if "UP" not in flags else f"up, but its state is {state}"
            rig.problems.append(
                f"{source}: line {lineno}: {name}: IPoIB interface {why}: the network interface's state, not the "
                "InfiniBand port's (ibstat shows the port)"
            )
    return rig
