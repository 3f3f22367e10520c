"""RDMA port listers pasted by users: ibstat, ibv_devinfo and ibstatus (infiniband-diags and rdma-core), each
read into :class:`~gpuadvisor.facts.RdmaPort` rows.

A word cut short at the end of a paste ("Acti", "Disa") is not shown, never a state; a placeholder
("...", "<redacted>", "N/A") is never a value; an elided stretch leaves the ports after it out, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gpuadvisor import facts
from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.section import Section, outside, outside_log
from gpuadvisor.importers.values import absent, is_elision
from gpuadvisor.probes.rdma import COUNTER_MAX, ERROR_COUNTERS

IBSTAT = re.compile(r"^CA '([^']+)'\s*$")
# "ibpanic: [1234] main: stat of IB device 'mlx5_0' failed: No such file or directory" (infiniband-diags)
IBPANIC = re.compile(r"^\s*ibpanic:\s*(?:\[\d+\]\s*)?(.*)$")
_IB_DEVICE = re.compile(r"(?:device|CA) '([^']+)'")
DEVINFO = re.compile(r"^hca_id:\s*(\S+)")
# a port block of ibv_devinfo (-v) whose "hca_id:" line is cut off above: "port:   1" then "state:  PORT_ACTIVE (4)"
# ... or a fragment of a port block of ibv_devinfo -v from its GID table ("GID[  0]:  fe80:...:1cfb, RoCE v1"), or from
# the "phys_state:" line above it: rdma-core's devinfo.c prints a port's non-zero GIDs last, with their type (", RoCE
# v1" or ", RoCE v2") only on an Ethernet (RoCE) port
_GID = r"GID\[\s*(\d{1,5})\]:\s*([0-9a-fA-F:.]{2,45})(?:,\s*(RoCE v[12]|IB/RoCE v1))?\s*$"
GID_LINE = re.compile(rf"^\s*{_GID}")
DEVINFO_PORT = re.compile(
    rf"^\s*port:\s*\d+\s*\n\s*state:\s*PORT_[A-Z_]+\b|^\s*(?:phys_state:\s*\S[^\n]*\n\s*)?{_GID}", re.M
)
# a device block of ibv_devinfo (-v) whose "hca_id:" line is cut off above: two of its attribute lines in their order
# ("sys_image_guid:" over "vendor_id:"; "transport:" over "fw_ver:" ...)
_DEVINFO_ORDER = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id")
DEVINFO_DEVICE = re.compile(
    rf"^\s*(?:{'|'.join(_DEVINFO_ORDER[:-1])}):\s*\S.*\n\s*(?:{'|'.join(_DEVINFO_ORDER[1:])}):\s*\S"
)
IBSTATUS = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:")
# ibstatus's own fatal error (infiniband-diags' ibstatus script): no port directory under /sys/class/infiniband for the
# devices asked ("*": all of them, when none is registered with the kernel): "Fatal error:  device '*': sys files not
# found (/sys/class/infiniband/*/ports)": no port to list
IBSTATUS_NONE = re.compile(r"^\s*Fatal error:\s+device '\*': sys files not found \(/sys/class/infiniband/\*/ports\)")
_PORT_COUNT = re.compile(
    r"^\s*(?:phys_port_cnt|Number of ports):\s*([1-9]\d{0,2})\s*$", re.M
)  # ibv_devinfo's, ibstat's
_NAMED = re.compile(r"^hca_id:\s*(\S+)|^CA '([^']+)'", re.M)  # the adapters an ibv_devinfo or ibstat output names
PortParser = Callable[[list[str], int], tuple[list[RdmaPort], int | None]]
_STATE_WORDS = {
    "active": "ACTIVE",
    "down": "DOWN",
    "initializing": "INIT",
    "init": "INIT",
    "armed": "ARMED",
    "active_defer": "ACTIVE_DEFER",
    "port_active": "ACTIVE",
    "port_down": "DOWN",
    "port_init": "INIT",
    "port_armed": "ARMED",
    "port_active_defer": "ACTIVE_DEFER",
}


def ports_parser(parser: PortParser) -> Callable[[str, str, int], Rig]:
    """An RDMA port lister (ibstat, ibv_devinfo, ibstatus) as a parser of one output into a Rig."""

    def parse(text: str, source: str, first: int) -> Rig:
        rig = Rig()
        ports, elided = parser(text.splitlines(), first)
        rig.network.rdma_ports = ports
        if elided:
            rig.network.unavailable["rdma_ports"] = f"{facts.ELIDED} (line {elided}): ports after it not shown"
        elif not ports and (count := _PORT_COUNT.search(text)):  # a device of N ports, the paste cut before them
            rig.network.rdma_ports = None
            rig.network.unavailable["rdma_ports"] = (
                f"the device has {count.group(1)} port(s); the paste ends before them"
            )
        elif ports and (cut := _portless(text, ports)):  # an adapter named ("hca_id: mlx5_bond_1"), its ports cut
            rig.network.unavailable["rdma_ports"] = f"{', '.join(cut)}: its ports are not shown (the paste is cut)"
        rig.origins["network.rdma_ports"] = f"{source}:{first}"
        return rig

    return parse


def _portless(text: str, ports: list[RdmaPort]) -> list[str]:
    """The adapters the output names (ibv_devinfo's ``hca_id:``, ibstat's ``CA '...'``) that no port was read of."""
    read = {p.device for p in ports}
    return list(dict.fromkeys(a or b for a, b in _NAMED.findall(text) if (a or b) not in read))


def line_starts(pattern: re.Pattern[str], kind: str) -> Callable[[list[str], int, Section | None], bool]:
    """The detector of such an output: a line ``pattern`` matches, outside a kernel log and another of its kind."""

    def starts(lines: list[str], i: int, current: Section | None) -> bool:
        return bool(pattern.match(lines[i])) and outside_log(current) and (current is None or current.kind != kind)

    return starts


def line_ports(
    pattern: re.Pattern[str], port_of: Callable[[re.Match[str]], RdmaPort]
) -> Callable[[str, str, int], Rig]:
    """The parser of an output of one port a line (ibdev2netdev, perftest's error): ``port_of`` each matching line."""

    def parse(text: str, source: str, first: int) -> Rig:
        rig = Rig()
        rig.network.rdma_ports = [port_of(m) for line in text.splitlines() if (m := pattern.match(line))]
        rig.origins["network.rdma_ports"] = f"{source}:{first}"
        return rig

    return parse


def key_value(line: str) -> tuple[str, str] | None:
    if ":" not in line:
        return None
    k, v = line.split(":", 1)
    return k.strip().lower(), v.strip()


def _state(word: str) -> str:
    """The port state in ibstat's words (ACTIVE, DOWN, ...); "" for a word cut short."""
    w = re.sub(r"\s*\(\d+\)$", "", word.strip())
    w = re.sub(r"^\d+:\s*", "", w)
    known = _STATE_WORDS.get(w.lower())
    if known is None and _cut_short(w, _STATE_WORDS):
        return ""  # a state word cut short ("Acti"): not shown, never a state
    return known or w.upper()


def _cut_short(word: str, words: Iterable[str]) -> bool:
    """``word`` is the start of one of ``words`` (lower case) and not a word itself: a paste cut inside it."""
    w = word.lower()
    return bool(w) and any(x.startswith(w) and len(w) < len(x) for x in words)


def _put_state(port: RdmaPort, value: str) -> None:
    state = _state(value)
    if state:
        port.state = state
    else:
        port.missing("state", f"cut short in the paste ({value.strip()!r})")


def _put_phys(port: RdmaPort, value: str) -> None:
    phys = _phys(value)
    if phys:
        port.phys_state = phys
    elif value.strip():
        port.missing("phys_state", f"cut short in the paste ({value.strip()!r})")


def _phys(word: str) -> str:
    w = re.sub(r"^\d+:\s*", "", re.sub(r"\s*\(\d+\)$", "", word.strip()))
    names = {"link_up": "LinkUp", "linkup": "LinkUp", "polling": "Polling", "disabled": "Disabled", "sleep": "Sleep"}
    if w.lower() not in names and _cut_short(w, names):
        return ""  # a word cut short ("Disa"): not shown
    return names.get(w.lower(), w)


RATE_MAX_GBPS = 1e5  # no RDMA port signals faster than 100 Tb/s: a longer number is not a rate (a hostile paste)


def _rate(value: str) -> float | None:
    """A port rate in Gb/s ("400", "100 (4X EDR)"); None for what is not one ("1.2.3", a 400-digit number)."""
    m = re.match(r"\s*(\d{1,6}(?:\.\d{1,6})?)(?![\d.])", value)
    return float(m.group(1)) if m and float(m.group(1)) <= RATE_MAX_GBPS else None


def _shown(value: str) -> str | None:
    """A value as the paste shows it, or None when it stands for text left out ("...", "<redacted>", "N/A")."""
    v = value.strip()
    placeholder = bool(re.fullmatch(r"<[\w\s-]*>|\[[\w\s-]*\]", v))  # <redacted>, [hidden]
    return None if not v or placeholder or is_elision(v) or absent(v) or set(v) <= set(".…x*X") else v


def _set_port(port: RdmaPort, key: str, value: str, phys: str, layer: str) -> None:
    """A port's state, physical state, rate or link layer (``phys``, ``layer``: how the tool spells those keys)."""
    if key == "state":
        _put_state(port, value)
    elif key == phys:
        _put_phys(port, value)
    elif key == "rate":
        port.rate_gbps = _rate(value)
    elif key == layer:
        port.link_layer = value


def _before_elision(lines: list[str], first: int) -> tuple[list[str], int | None]:
    """The lines a port lister reads: those above the first elision ("...", "[snip]"), and that line's number (None
    when nothing is elided): the ports after it are not shown."""
    cut = next((k for k, line in enumerate(lines) if is_elision(line)), None)
    return (lines, None) if cut is None else (lines[:cut], first + cut)


def parse_ibstat(lines: list[str], first: int) -> tuple[list[RdmaPort], int | None]:
    """ibstat: "CA 'mlx5_0'", its "CA type" and "Firmware version", then "Port N:" blocks."""
    ports: list[RdmaPort] = []
    ca: dict[str, str | None] = {}
    port: RdmaPort | None = None
    shown, elided = _before_elision(lines, first)
    for line in shown:
        m = IBSTAT.match(line)
        if m:
            ca, port = {"name": m.group(1)}, None
            continue
        panic = IBPANIC.match(line)
        if panic:  # ibstat could not read an adapter: a failed or missing HCA, not a value
            named = _IB_DEVICE.search(panic.group(1))
            failed = RdmaPort(device=named.group(1) if named else "?")
            failed.missing("state", f"ibpanic: {panic.group(1).strip()[:160]}")
            failed.missing("port", "ibstat could not read the adapter, so it lists none of its ports")
            ports.append(failed)
            continue
        pm = re.match(r"^\s*Port (\d{1,3}):\s*$", line)
        if pm and not ca and not ports:  # a fragment pasted from its "Port 1:" line: the adapter is not shown
            ca = {"name": None, "ca type": None, "firmware version": None}
        if pm and ca:
            port = RdmaPort(device=ca["name"] or "? (CA not shown)", port=int(pm.group(1)), ca_type=ca.get("ca type"))
            port.firmware = ca.get("firmware version")
            for name, key in (("firmware", "firmware version"), ("ca_type", "ca type")):
                if key in ca and ca[key] is None:
                    port.missing(name, f"{facts.ELIDED}: not shown in the paste")
            ports.append(port)
            continue
        kv = key_value(line)
        if kv is None or not ca:
            continue
        key, value = kv
        if port is None:
            ca[key] = _shown(value)
        elif _shown(value) is not None:
            _set_port(port, key, value, "physical state", "link layer")
    return ports, elided


def parse_ibv_devinfo(lines: list[str], first: int) -> tuple[list[RdmaPort], int | None]:
    """ibv_devinfo: "hca_id:" blocks with fw_ver and vendor_part_id, then "port: N" with state and link_layer
    (phys_state, active_width and active_speed only with -v); a port block whose "hca_id:" line was cut off above
    is read with its device unknown."""
    ports: list[RdmaPort] = []
    hca: dict[str, str] = {}
    port: RdmaPort | None = None
    speed: float | None = None
    width: int | None = None
    gids: dict[int, list[str]] = {}  # a port's GID lines (id of the port): the RoCE type of each, "" where none
    shown, elided = _before_elision(lines, first)
    for k, line in enumerate(shown):  # the line below k looked up in the whole output, an elision included
        m = DEVINFO.match(line)
        if m:
            hca, port = {"name": m.group(1)}, None
            continue
        if not hca and (DEVINFO_PORT.match(two := "\n".join(lines[k : k + 2])) or DEVINFO_DEVICE.match(two)):
            hca = {"name": ""}  # a fragment: the device's name was above the paste
        kv = key_value(line)
        if kv is None or not hca:
            continue
        key, value = kv
        if port is None and (key == "phys_state" or GID_LINE.match(line)):
            port = _unnumbered_port(hca)  # a port's -v lines without its "port:" line (cut, or grep "hca_id|GID")
            ports.append(port)
        if gid := GID_LINE.match(line):
            gids.setdefault(id(port), []).append(gid.group(3) or "")
        elif key == "port":
            part = hca.get("vendor_part_id")
            port = RdmaPort(
                device=hca["name"],
                port=int(value.split()[0]),
                firmware=hca.get("fw_ver"),
                ca_type=f"MT{part}" if part and part.isdigit() else None,
            )
            speed = width = None
            if not port.device:
                port.unavailable["device"] = "the paste starts inside ibv_devinfo's output, below its 'hca_id:' line"
            port.missing("rate_gbps", "ibv_devinfo prints the rate only with -v (active_width x active_speed)")
            port.missing("phys_state", "ibv_devinfo prints the physical state only with -v")
            ports.append(port)
        elif port is None:
            hca[key] = value
        elif key == "state":
            _put_state(port, value)
        elif key == "phys_state":
            _put_phys(port, value)
            port.unavailable.pop("phys_state", None)
        elif key == "link_layer":
            port.link_layer = value
        elif key in ("active_width", "active_speed"):
            if key == "active_width":
                wm = re.match(r"\s*(\d+)X", value)
                width = int(wm.group(1)) if wm else None
            else:
                speed = _rate(value)
            if speed is not None and width is not None:
                port.rate_gbps = speed * width
                port.unavailable.pop("rate_gbps", None)
    for p in ports:
        _gid_table(p, gids.get(id(p), []))
    return ports, elided


def _unnumbered_port(hca: dict[str, str]) -> RdmaPort:
    """A port of ibv_devinfo -v shown from below its "port:" and "state:" lines (its phys_state or GID lines): its
    number and logical state are not shown."""
    port = RdmaPort(device=hca["name"], firmware=hca.get("fw_ver"))
    port.unavailable["port"] = "the paste shows the port's phys_state or GID lines, not its 'port:' line"
    if not port.device:
        port.unavailable["device"] = "the paste starts inside ibv_devinfo's output, below its 'hca_id:' line"
    port.missing("state", "the paste shows the port's lines below its 'state:' line")
    port.missing("phys_state", "not shown in the paste")
    port.missing("rate_gbps", "the paste does not show active_width and active_speed")
    return port


def _gid_table(port: RdmaPort, types: list[str]) -> None:
    """What a port's GID lines (ibv_devinfo -v) say of a port whose state or link layer is not shown: how many GIDs
    and which RoCE versions; a GID with a RoCE type is an Ethernet (RoCE) port's (devinfo.c prints the type only
    there)."""
    if not types:
        return
    roce = sorted({t.removeprefix("IB/").removeprefix("RoCE ") for t in types if t})
    said = f"{len(types)} GID(s)" + (f", RoCE {'/'.join(roce)}" if roce else ", no RoCE type")
    if port.state is None and port.why("state"):
        port.unavailable["state"] = f"{port.why('state')}; it shows {said}"
    if port.link_layer is None and roce:
        port.link_layer = "Ethernet"
        port.unavailable.pop("link_layer", None)
    elif port.link_layer is None:
        port.missing("link_layer", f"not shown; its {said} (an InfiniBand port, or an ibv_devinfo that prints no type)")


def parse_ibstatus(lines: list[str], first: int) -> tuple[list[RdmaPort], int | None]:
    """ibstatus: "Infiniband device 'mlx5_0' port 1 status:" blocks with state, phys state, rate, link_layer; its
    fatal error for every device ("device '*': sys files not found"): no adapter registered, no port."""
    ports: list[RdmaPort] = []
    port: RdmaPort | None = None
    shown, elided = _before_elision(lines, first)
    for line in shown:
        m = IBSTATUS.match(line)
        if m:
            port = RdmaPort(device=m.group(1), port=int(m.group(2)))
            for name in ("firmware", "ca_type"):
                port.missing(name, "ibstatus does not print it")
            ports.append(port)
            continue
        kv = key_value(line)
        if kv is None or port is None:
            continue
        key, value = kv
        _set_port(port, key, value, "phys state", "link_layer")
    return ports, elided


# grep "" /sys/class/infiniband/*/ports/*/{state,rate,phys_state,link_layer}: "path:value" lines (the kernel's own
# files, as the live probe reads them): "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE"; and the port's
# counters/ (the error counters the live probe reads) and hw_counters/ (mlx5's RoCE/transport counters) files, by
# /sys/class or the device's own /sys/devices/... path
_PORT_DIR = r"/infiniband/([\w.-]+)/ports/(\d{1,3})/"  # its device and port number
_COUNTERS = r"(?:hw_)?counters"
SYSFS = re.compile(
    rf"^\s*/sys/(?:class|devices/\S*?){_PORT_DIR}(state|phys_state|rate|link_layer|{_COUNTERS}/\w+):"
    r"\s*(.*)$"
)
# a shell loop run in a port's counters directory, its prompt naming it ("/sys/class/infiniband/mlx5_1/ports/1/
# counters$ for file in $(find . -type f); do echo "=== $file ==="; cat "$file"; ...", leptonai/gpud#943): each file's
# "=== ./link_downed ===" header and its value on the next line
SYSFS_LOOP = re.compile(rf"^\s*(?:\S+:)?/sys/class{_PORT_DIR}({_COUNTERS})/?\$\s")
_LOOP_FILE = re.compile(r"^\s*=+\s*(?:\./)?(\w+)\s*=+\s*$")
_COUNT = re.compile(r"\d{1,20}")
# mlx5's hw_counters (local_ack_timeout_err, out_of_sequence, packet_seq_err ...): NVIDIA's "Understanding mlx5 Linux
# counters" describes them but sets no threshold, so they are kept out of the judged port counters
_HW_NOTE = "only mlx5's hw_counters shown ({}): not judged, no documented threshold for them"


def _sysfs_port(ports: dict[tuple[str, int], RdmaPort], device: str, num: int) -> RdmaPort:
    port = ports.get((device, num))
    if port is None:
        port = ports[device, num] = RdmaPort(device=device, port=num)
        for field in ("firmware", "ca_type"):
            port.missing(field, "the sysfs port files do not hold it")
    return port


def _sysfs_counter(port: RdmaPort, where: str, name: str, value: str, hw: dict[int, list[str]]) -> None:
    """One counter file's value: a port error counter the live probe reads, or a hw_counter noted, not judged."""
    if not _COUNT.fullmatch(value) or int(value) >= COUNTER_MAX:
        if where == "counters" and name in ERROR_COUNTERS and port.counters is None:  # iWARP's "N/A (no PMA)"
            port.missing("counters", f"the port's counter files hold no count ({name}: {value[:40]!r})")
        return
    if where == "counters" and name in ERROR_COUNTERS:
        port.counters = {**(port.counters or {}), name: int(value)}
        port.unavailable.pop("counters", None)
    elif where == "hw_counters" and port.counters is None:
        shown = hw.setdefault(id(port), [])
        if int(value):
            shown.append(f"{name} {value}")
        said = ", ".join(shown[:4]) + (" ..." if len(shown) > 4 else "") if shown else "all 0"
        port.missing("counters", _HW_NOTE.format(said))


def parse_sysfs(lines: list[str], first: int) -> tuple[list[RdmaPort], int | None]:
    """The ports of a grep over the sysfs port files, one ``path:value`` line a file, any order; or of a shell loop
    over a port's counter files (``=== ./NAME ===`` then the value)."""
    ports: dict[tuple[str, int], RdmaPort] = {}
    hw: dict[int, list[str]] = {}
    loop: tuple[RdmaPort, str] | None = None
    shown, elided = _before_elision(lines, first)
    for k, line in enumerate(shown):  # a counter's value looked up in the whole output, an elision included
        if d := SYSFS_LOOP.match(line):
            loop = (_sysfs_port(ports, d.group(1), int(d.group(2))), d.group(3))
            continue
        if loop and (f := _LOOP_FILE.match(line)):
            value = next((x.strip() for x in lines[k + 1 : k + 3] if x.strip()), "")
            _sysfs_counter(loop[0], loop[1], f.group(1), value, hw)
            continue
        m = SYSFS.match(line)
        if m is None or not m.group(4).strip():
            continue
        device, num, name, value = m.group(1), int(m.group(2)), m.group(3), m.group(4).strip()
        if name == "rate" and "Gb/sec" not in value:
            continue  # the kernel prints "100 Gb/sec (4X EDR)": a value without its unit is cut short
        port = _sysfs_port(ports, device, num)
        if "/" in name:
            where, counter = name.split("/", 1)
            _sysfs_counter(port, where, counter, value, hw)
            continue
        _set_port(
            port, name.replace("_", " ").replace("phys state", "physical state"), value, "physical state", "link layer"
        )
    return list(ports.values()), elided


# mlxlink (MFT, mstflint): its "Operational Info" block of one port ("State : Active", "Physical state : LinkUp",
# "Speed : 25GbE" or "IB-HDR", "Width : 4x", "FEC : ..."); neither the device nor the port is printed in it (they
# are mlxlink's -d and -p, on the command line)
MLXLINK = re.compile(r"^\s*Operational Info\s*[#¶]?\s*$")  # a web page's copy keeps its anchor
_MLXLINK_FIELD = re.compile(r"^\s*(State|Physical state|Speed|Width)\s*:\s*(.*?)\s*$")
_IB_LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}
_UNNAMED = "mlxlink prints neither the device nor the port (its -d and -p)"


# its command line right above it, a shell prompt before it or not: "root@n1:~# mlxlink -d mlx5_1", "sudo mlxlink -d
# /dev/mst/mt53100_pciconf0 -m -p 35" (-d the device, -p the port)
_MLXLINK_CMD = re.compile(r"^\s*(?:\S.{0,80}?[$#]\s+)?(?:sudo\s+)?mlxlink\s+(.{1,300})$")
_MLXLINK_DEV = re.compile(r"(?:^|\s)(?:-d|--device)[\s=]+([\w./:-]{1,80})")
_MLXLINK_PORT = re.compile(r"(?:^|\s)(?:-p|--port)[\s=]+(\d{1,3})(?:\s|$)")
# mlxlink's "Physical state" of an Ethernet port is its auto-negotiation state machine's (mstflint's _ethANFsmState:
# ETH_AN_FSM_ENABLE ... ), not InfiniBand's physical port state: "State" tells whether the link is up
_ETH_AN = "mlxlink shows the Ethernet auto-negotiation state ({}), not a physical link state: its State tells the link"


@outside("mlxlink")
def starts_mlxlink(lines: list[str], i: int, current: Section | None) -> bool:
    """``Operational Info`` over its dashes and a ``State :`` line, outside a log; or its ``mlxlink -d`` command line
    (blank lines between)."""
    if not outside_log(current):
        return False
    if _MLXLINK_CMD.match(lines[i]) and _MLXLINK_DEV.search(lines[i]):
        under = [j for j in range(i + 1, min(i + 4, len(lines))) if lines[j].strip()]
        return bool(under) and MLXLINK.match(lines[under[0]]) is not None and starts_mlxlink(lines, under[0], current)
    if not MLXLINK.match(lines[i]):
        return False
    below = [x for x in lines[i + 1 : i + 4] if x.strip() and not set(x.strip()) <= {"-"}]
    return bool(below) and bool(re.match(r"^\s*State\s*:", below[0]))


def parse_mlxlink(lines: list[str], first: int) -> tuple[list[RdmaPort], int | None]:
    """The port of mlxlink's Operational Info: its state, physical state, link layer and rate (IB speed x width)."""
    port = RdmaPort(device="")
    port.unavailable["device"] = port.unavailable["port"] = _UNNAMED
    if lines and (cmd := _MLXLINK_CMD.match(lines[0])):
        _named(port, cmd.group(1))
    fields: dict[str, str] = {}
    for line in lines:
        if m := _MLXLINK_FIELD.match(line):
            fields.setdefault(m.group(1).lower(), m.group(2))
        elif fields and re.match(r"^\s*\S[^:]*\n?$", line) and not line.strip().startswith("-"):
            break  # the next block's header ("Supported Info"): its speeds are not the port's
    if "state" in fields:
        _put_state(port, fields["state"])
    if fields.get("physical state", "").startswith("ETH_AN_FSM_"):
        port.missing("phys_state", _ETH_AN.format(fields["physical state"]))
    elif "physical state" in fields:
        _put_phys(port, fields["physical state"])
    speed = fields.get("speed", "")
    if eth := re.fullmatch(r"(\d{1,4})G(?:bE)?", speed):
        port.link_layer, port.rate_gbps = "Ethernet", float(eth.group(1))
    elif ib := re.fullmatch(r"IB-([A-Z]DR)", speed):
        width = re.fullmatch(r"(\d{1,2})x", fields.get("width", ""))
        port.link_layer = "InfiniBand"
        if ib.group(1) in _IB_LANE_GBPS and width:
            port.rate_gbps = _IB_LANE_GBPS[ib.group(1)] * int(width.group(1))
    if port.rate_gbps is None:
        port.missing("rate_gbps", f"mlxlink's speed {speed!r} with width {fields.get('width')!r} is not read")
    return [port], None


def _named(port: RdmaPort, args: str) -> None:
    """The device (-d) and port (-p) of mlxlink's command line; an RDMA device (mlx5_N) without -p is its port 1
    (mlxlink's default port, mstflint's mlxlink_user_input.cpp: ``_labelPort = 1``)."""
    dev, num = _MLXLINK_DEV.search(args), _MLXLINK_PORT.search(args)
    if dev is None:
        return
    port.device = dev.group(1)
    port.unavailable.pop("device", None)
    if num is not None or re.fullmatch(r"mlx\d_\d{1,3}", port.device):
        port.port = int(num.group(1)) if num is not None else 1
        port.unavailable.pop("port", None)
