"""``ip link show`` (iproute2; ``ip addr`` prints the same interface lines) and ``ifconfig`` (net-tools): the host's
network interfaces.

Each interface is a line ``N: NAME[@PARENT]: <FLAGS> mtu M qdisc Q state STATE ...`` and, indented below it,
``link/TYPE ADDRESS brd ...`` (``link/infiniband`` for an IPoIB interface). ``UP`` among the flags is the
administrative state (``ip link set NAME up``); ``state`` is the operational state (RFC 2863 operstate, as
/sys/class/net/NAME/operstate); an interface never brought up shows no ``UP`` flag, ``qdisc noop`` and ``state DOWN``.

``ifconfig`` (net-tools 2.x) prints ``NAME: flags=N<FLAGS>  mtu M``, its addresses indented below it
(``infiniband 80:00:... (InfiniBand)`` for an IPoIB interface); net-tools 1.60 prints ``NAME  Link encap:InfiniBand
HWaddr ...`` and, indented below, ``UP BROADCAST RUNNING MULTICAST  MTU:2044  Metric:1``. ``UP`` is the administrative
state, ``RUNNING`` the operational one (IFF_RUNNING: the link is up, netdevice(7)); for an IPoIB interface ifconfig adds
its own "Infiniband hardware address can be incorrect!" (the 20-byte address does not fit its format: no fault).

Read: the interfaces' names (what NCCL_SOCKET_IFNAME is matched against); an IPoIB interface that is down is a note:
an interface's state is the network interface's, not the InfiniBand port's (an Active port can carry an IPoIB
interface nobody brought up), so it is no RDMA port fact and no finding.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside, outside_log

WHAT = "ip link show"
_IFACE = re.compile(
    r"^\s*\d{1,6}:\s+([\w.:-]{1,32}?)(?:@[\w.-]{1,32})?:\s+<([A-Z0-9_,-]{0,200})>\s+mtu\s+\d+"
    r"(?:.*?\bqdisc\s+(\S+))?(?:.*?\bstate\s+(\S+))?"
)
_INFINIBAND = re.compile(r"^\s+link/infiniband\b")
_LONGEST = 2000
# ifconfig's interface line: net-tools 2.x "ib0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 2044", 1.60
# "ib0       Link encap:InfiniBand  HWaddr 80:00:..." (its flags on an indented line below: "UP BROADCAST RUNNING ...")
_IFCONFIG = re.compile(r"^\s{0,4}([\w.:-]{1,32}?):?\s+(?:flags=\d+<([A-Z0-9_,-]{0,200})>\s+mtu\s+\d+|Link encap:(\w+))")
_OLD_FLAGS = re.compile(r"^\s+((?:[A-Z]+ )*?(?:UP|BROADCAST|LOOPBACK|POINTOPOINT|MULTICAST|RUNNING)\b[A-Z ]*?)\s+MTU:")
_IFCONFIG_IB = re.compile(r"^\s+infiniband\s+[0-9A-Fa-f:]+|\(InfiniBand\)")


@outside("ip-link", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """An interface line ``2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ...``, outside a log."""
    return len(lines[i]) < _LONGEST and bool(_IFACE.match(lines[i]))


def starts_ifconfig(lines: list[str], i: int, current: Section | None) -> bool:
    """ifconfig's interface line (``ib0: flags=4163<UP,...>  mtu 2044``, or ``ib0  Link encap:InfiniBand ...``)."""
    if current is not None and current.kind in ("ifconfig", "ip-link"):
        return False
    return len(lines[i]) < _LONGEST and bool(_IFCONFIG.match(lines[i])) and outside_log(current)


def parse_ifconfig(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The interfaces' names, and a note for each IPoIB interface that is not up or not RUNNING."""
    shown: list[tuple[str, list[str], str, str, int]] = []  # name, flags, qdisc (none), state, line
    ipoib: set[str] = set()
    for k, line in enumerate(clean_lines(text)):
        if len(line) >= _LONGEST:
            continue
        if m := _IFCONFIG.match(line):
            shown.append((m.group(1), (m.group(2) or "").split(","), "", "", first_line + k))
            if (m.group(3) or "").lower() == "infiniband":
                ipoib.add(m.group(1))
        elif shown and (old := _OLD_FLAGS.match(line)) and shown[-1][1] == [""]:
            shown[-1] = (shown[-1][0], old.group(1).split(), "", "", shown[-1][4])
        elif shown and _IFCONFIG_IB.search(line):
            ipoib.add(shown[-1][0])
    # net-tools 1.60's flags come on a later line: an interface cut before it has no state to judge ("?")
    shown = [(n, f, q, "?" if f == [""] else "UP" if "RUNNING" in f else "not RUNNING", at) for n, f, q, _, at in shown]
    return _interfaces(shown, ipoib, source, first_line, "ifconfig")


def parse_ip_link(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The interfaces' names, and a note for each IPoIB interface that is not up."""
    shown: list[tuple[str, list[str], str, str, int]] = []  # name, flags, qdisc, state, line
    ipoib: set[str] = set()
    for k, line in enumerate(clean_lines(text)):
        if len(line) >= _LONGEST:
            continue
        if m := _IFACE.match(line):
            name, flags, qdisc, state = m.group(1), m.group(2).split(","), m.group(3) or "", m.group(4) or ""
            shown.append((name, flags, qdisc, state, first_line + k))
        elif _INFINIBAND.match(line) and shown:
            ipoib.add(shown[-1][0])
    return _interfaces(shown, ipoib, source, first_line, WHAT)


def _interfaces(
    shown: list[tuple[str, list[str], str, str, int]], ipoib: set[str], source: str, first_line: int, what: str
) -> Rig:
    """The interfaces' names, and a note for each IPoIB interface not brought up or whose link is not up."""
    rig = Rig()
    if not shown:
        raise ImportParseError(source, first_line, f"{what}: no interface line")
    rig.host.net_interfaces = list(dict.fromkeys(name for name, *_ in shown))
    rig.origins["host.net_interfaces"] = f"{source}:{first_line}"
    for name, flags, qdisc, state, lineno in shown:
        known = state != "?"
        if (
            (name in ipoib or name.startswith("ib"))
            and known
            and ("UP" not in flags or state in ("DOWN", "not RUNNING"))
        ):
            how = "never brought up (no UP flag" + (f", qdisc {qdisc}" if qdisc else "") + ")"
            why = how if "UP" not in flags else f"up, but its state is {state}"
            rig.problems.append(
                f"{source}: line {lineno}: {name}: IPoIB interface {why}: the network interface's state, not the "
                "InfiniBand port's (ibstat shows the port)"
            )
    return rig
