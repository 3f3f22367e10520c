"""``lspci -vv`` / ``-vvv`` (optionally ``-nn``, ``-D``): each NVIDIA GPU's link and the bridges above it.

For each device: its BDF, class, name, ``LnkCap`` (maximum speed and width) and ``LnkSta`` (current, with
"(downgraded)" or "(ok)" as lspci prints them). A GPU's upstream path needs no ``lspci -tv``: every bridge
prints ``Bus: primary=.., secondary=.., subordinate=..``, so the bridges above a GPU are those whose
secondary..subordinate bus range holds the GPU's bus, nearest (narrowest range) first. The port type comes from
the PCI Express capability line ("Root Port", "Upstream Port", "Downstream Port", "Endpoint").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import ELIDED, GPU_LOST, Gpu, PcieHop, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import LSPCI_BUS_ID
from gpuadvisor.importers.section import Section, clean_lines, last_line_shown
from gpuadvisor.importers.values import DEV_PREFIX, normalize_bus_id
from gpuadvisor.physics.links import gen_from_speed

_BDF = rf"({LSPCI_BUS_ID})"
_DEV = re.compile(r"^\s*" + DEV_PREFIX + _BDF + r" ([^:]+?)(?: \[([0-9a-fA-F]{4})\])?: (.*)$")
# a device line a redactor went over: a placeholder ("<USER>") in place of a letter it took for a name, in the bus
# address too ("0<USER>:00.0 VGA compati<USER>le controller [0300]: ..."): the address is not shown; the class is the
# one its code names, or the class its words match with the placeholder standing for what it replaced
_PLACEHOLDER = r"<[A-Z][A-Z_]{0,15}>"
_REDACTED_DEV = re.compile(
    rf"^\s*{DEV_PREFIX}((?:[0-9a-fA-F.:]|{_PLACEHOLDER}){{6,60}}) ([^:]+?)(?: \[([0-9a-fA-F]{{4}})\])?: (.*)$"
)
_IDS = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_LNK = re.compile(r"^\s*(LnkCap|LnkSta):\s*(.*)$")
_FRAGMENT = re.compile(r"^(?:\s+(?:LnkCtl|DevCap|DevSta|DevCtl|Capabilities: \[[0-9a-fA-F]+\])|\s*(?:LnkCap|LnkSta):)")
_DOWNGRADED = re.compile(r"(Speed|Width) [^,(]*\(downgraded\)")
FRAGMENT = "the lspci lines pasted have no device line: which device (and slot) they belong to is not shown"
_SPEED = re.compile(r"Speed (\d+(?:\.\d+)?)GT/s")
_WIDTH = re.compile(r"Width x(\d+)")
_BUS = re.compile(r"Bus: primary=([0-9a-fA-F]+), secondary=([0-9a-fA-F]+), subordinate=([0-9a-fA-F]+)")
_PORT_TYPES = {
    "Root Port": "root-port",
    "Upstream Port": "upstream-port",
    "Downstream Port": "downstream-port",
    "Endpoint": "endpoint",
    "Legacy Endpoint": "endpoint",
    "Root Complex Integrated Endpoint": "endpoint",
    "PCI-Express to PCI/PCI-X Bridge": "bridge",
}
_EXPRESS = re.compile(rf"Express \(v\d\) ({'|'.join(map(re.escape, _PORT_TYPES))})")  # "Express (v2) Root Port"
_CLASS_CODES = {
    "VGA compatible controller": "0x0300",
    "3D controller": "0x0302",
    "Display controller": "0x0380",
    "PCI bridge": "0x0604",
}
GPU_CLASSES = ("VGA compatible controller", "3D controller", "Display controller")
DEAD = (
    f"{GPU_LOST}: it does not answer PCI config reads (lspci: rev ff, unknown header type 7f; a device powered off "
    "in D3cold reads the same)"
)


@dataclass
class Device:
    bdf: str
    cls: str
    desc: str
    line: int
    hop: PcieHop
    bus_range: tuple[int, int] | None = None
    lines: list[str] = field(default_factory=list)
    access_denied: bool = False
    dead: bool = False  # config space reads all ones: the device does not answer
    fragment: bool = False  # lines pasted without their device line: which device is not shown
    seen: list[str] = field(default_factory=list)  # LnkCap / LnkSta lines read, in order
    downgraded: list[str] = field(default_factory=list)  # "speed", "width": lspci's "(downgraded)" on LnkSta
    numa: int | None = None  # lspci's "NUMA node: N" line
    port_no: int | None = None  # LnkCap's "Port #N": an endpoint's is 0, a root or switch port's its number
    slot: bool = False  # SltCap/SltSta lines, or "(Slot+)": a port with a slot under it, never an endpoint
    desc_cut: bool = False  # the paste ends inside the device line: its description is a stub
    redacted: str | None = None  # the bus address as a redactor left it ("0<USER>:00.0"): not shown

    @property
    def nvidia(self) -> bool:
        return "NVIDIA" in self.desc or (self.hop.vendor_id or "").lower() == "0x10de"

    @property
    def is_gpu(self) -> bool:
        return self.nvidia and any(self.cls.startswith(c) for c in GPU_CLASSES)

    @property
    def is_bridge(self) -> bool:
        return self.bus_range is not None


def _speed(text: str) -> float | None:
    m = _SPEED.search(text)
    return float(m.group(1)) if m else None


def _width(text: str) -> int | None:
    m = _WIDTH.search(text)
    return int(m.group(1)) if m else None


_VENDOR = "NVIDIA Corporation"  # pci.ids' name of vendor 10de


def _gpu_name(desc: str) -> str | None:
    """``NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] (rev a1)`` -> ``NVIDIA RTX 6000 Ada Generation``."""
    desc = re.sub(r"\s*\((rev|prog-if) [^)]*\)", "", desc)
    desc = _IDS.sub("", desc).strip()
    if desc.count("[") > desc.count("]"):
        return None  # "TU102GL [Quadro RTX": the model's bracket never closes: the name is cut, not shown whole
    m = re.search(r"\[([^\]]+)\]\s*$", desc)
    if m:
        return "NVIDIA " + m.group(1).strip()
    d = desc.replace(_VENDOR, "").strip()
    if not d or re.fullmatch(r"Device [0-9a-fA-F]{4}", d):
        return None  # lspci's pci.ids does not know this device: no model name to give
    return d if d.startswith("NVIDIA") else "NVIDIA " + d


def _shown_name(d: Device) -> str | None:
    """The GPU's name, from a device line cut mid-line only when its ``[model]`` is shown whole."""
    if not d.desc_cut:
        return _gpu_name(d.desc)
    m = re.search(r"NVIDIA Corporation\s+\S+\s+\[([^\]]+)\]", d.desc)
    return (
        "NVIDIA " + m.group(1).strip() if m and not re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", m.group(1)) else None
    )


def read_devices(text: str, source: str = "<text>", first_line: int = 1) -> list[Device]:
    """Each device lspci printed (or each run of grepped lines without their device line), with its link."""
    devices: list[Device] = []
    cur: Device | None = None
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r")) and bool(lines) and bool(lines[-1].strip())
    last_shown = last_line_shown(lines)  # the paste's last line
    for k, bolded in ((k, part) for k, whole in enumerate(lines) for part in split_joined(whole)):
        lineno = first_line + k
        line = unbold(bolded)
        m = _DEV.match(line) or _redacted(line)
        if m:
            cur = _device(m, source, lineno)
            # "01:00.0 3D controller: NVIDIA Corpora": a stub, the file ending in it or the vendor's name (pci.ids
            # gives it whole) cut short in it (a paste ending inside an open fence, its newline the writer's)
            if cut and k == last_shown and line == bolded or _VENDOR.startswith(cur.desc.strip()) and cur.desc.strip():
                cur.desc_cut, cur.hop.name = True, None
            devices.append(cur)
            continue
        lm = _LNK.match(line)
        if cur is None or (cur.fragment and _next_fragment(cur, lm.group(1) if lm else None, line)):
            if not _FRAGMENT.match(line):
                continue
            # lines grepped without their device line; a second LnkCap/LnkSta pair is a second device
            cur = Device(bdf="", cls="", desc="", line=lineno, hop=PcieHop(bdf="", port_type="unknown"), fragment=True)
            devices.append(cur)
        cur.lines.append(line)
        _attributes(cur, line)
        if lm:
            _link(cur, lm, source, lineno, cut_here=k == last_shown, cut=cut)
    for d in devices:
        _unknown_link(d)
    return devices


# "... 'VGA' 03:00.0 VGA compatible controller [0300]: NVIDIA ... [10de:2503]": an ``lspci -nn`` device line (its class
# code and vendor:device ids) that starts inside a line, after a command or another device's lines joined onto one
_JOINED = re.compile(
    r"(?<=\s)" + _BDF + r" [A-Za-z][\w ./-]{1,40} \[[0-9a-fA-F]{4}\]: [^\n]*?\[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\]"
)
# the lines ``lspci -k`` prints under a device, joined after it
_K_LINES = re.compile(r"\s+(?=(?:Subsystem|Kernel driver in use|Kernel modules):\s)")


def split_joined(line: str) -> list[str]:
    """The line, or (a paste that lost its line breaks) the lines joined in it: each ``lspci -nn`` device line that
    starts inside it, and the ``Subsystem:``/``Kernel driver in use:``/``Kernel modules:`` lines after each."""
    starts = [m.start() - 1 for m in _JOINED.finditer(" " + line)]  # the line's own device line too
    if not starts or starts == [0] and not _K_LINES.search(line):
        return [line]
    parts = [line[: starts[0]].rstrip()] if line[: starts[0]].strip() else []
    for a, b in zip(starts, [*starts[1:], len(line)], strict=True):
        device, *under = _K_LINES.split(line[a:b].rstrip())
        parts += [device, *("\t" + x for x in under)]
    return parts


def _redacted(line: str) -> re.Match[str] | None:
    """A device line whose bus address holds a redactor's placeholder (an address once it stands for a digit)."""
    m = _REDACTED_DEV.match(line) if "<" in line else None
    if m is None or not re.search(_PLACEHOLDER, m.group(1)):
        return None
    return m if normalize_bus_id(re.sub(_PLACEHOLDER, "0", m.group(1))) is not None else None


def _unredacted_class(cls: str, code: str | None) -> str:
    """A device class a redactor went over, as its code names it, or the known class its words match."""
    if not re.search(_PLACEHOLDER, cls):
        return cls
    by_code = {v: k for k, v in _CLASS_CODES.items()}
    if code and (named := by_code.get("0x" + code.lower())):
        return named
    words = re.compile(".{0,4}".join(re.escape(x) for x in re.split(_PLACEHOLDER, cls)))
    return next((c for c in _CLASS_CODES if words.fullmatch(c)), cls)


def _device(m: re.Match[str], source: str, lineno: int) -> Device:
    """A device line: ``01:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2]``."""
    if m.re is _REDACTED_DEV:  # its bus address not shown
        cls = _unredacted_class(m.group(2).strip(), m.group(3))
        hop = PcieHop(bdf="", port_type="unknown", name=_IDS.sub("", m.group(4)).strip() or None)
        hop.class_code = ("0x" + m.group(3).lower()) if m.group(3) else _CLASS_CODES.get(cls)
        return Device(bdf="", cls=cls, desc=m.group(4), line=lineno, hop=hop, redacted=m.group(1))
    bdf = normalize_bus_id(m.group(1))
    if bdf is None:
        raise ImportParseError(source, lineno, f"{m.group(1)!r} is not a PCI address")
    cls = _unredacted_class(m.group(2).strip(), m.group(3))
    hop = PcieHop(
        bdf=bdf,
        port_type="unknown",
        name=re.sub(r"\s*\((rev|prog-if) [^)]*\)", "", _IDS.sub("", m.group(4))).strip() or None,
    )
    ids = _IDS.search(m.group(4))
    if ids:
        hop.vendor_id, hop.device_id = "0x" + ids.group(1).lower(), "0x" + ids.group(2).lower()
    hop.class_code = ("0x" + m.group(3).lower()) if m.group(3) else _CLASS_CODES.get(cls)
    # "(rev ff)": the revision byte read back as all ones, as every config read of a device that does not answer
    dead = "(rev ff)" in m.group(4)
    return Device(bdf=bdf, cls=cls, desc=m.group(4), line=lineno, hop=hop, dead=dead)


def _attributes(cur: Device, line: str) -> None:
    """What one of a device's lines says besides its link: access, a dead device, bus range, port type, NUMA
    node, a slot."""
    if "<access denied>" in line:
        cur.access_denied = True
    if "Unknown header type 7f" in line:
        cur.dead = True
    b = _BUS.search(line)
    if b:
        cur.bus_range = (int(b.group(2), 16), int(b.group(3), 16))
    e = _EXPRESS.search(line)
    if e:
        cur.hop.port_type = _PORT_TYPES[e.group(1)]
    numa = re.match(r"^\s*NUMA node:\s*(\d{1,4})\s*$", line)
    if numa:
        cur.numa = int(numa.group(1))
    if re.match(r"^\s*Slt(?:Cap|Sta|Ctl):", line) or "(Slot+)" in line:
        cur.slot = True


def _link(cur: Device, lm: re.Match[str], source: str, lineno: int, cut_here: bool, cut: bool) -> None:
    """A ``LnkCap``/``LnkSta`` line: speed and width, maximum or current; on the paste's last line, what its cut
    hides is not shown (``cut``: the file ends inside that line)."""
    which, rest = lm.groups()
    port = re.match(r"\s*Port #(\d{1,4})", rest)
    if port and which == "LnkCap":
        cur.port_no = int(port.group(1))
    cur.seen.append(which)
    if which == "LnkSta":
        cur.downgraded = [m.lower() for m in _DOWNGRADED.findall(rest)]
    speed, width = _speed(rest), _width(rest)
    if cut_here and (cut or speed is None or width is None):  # the paste ends in this line: its cut is not shown
        why = f"{ELIDED} (line {lineno} is cut mid-line)"
        if width is None or cut and re.search(r"Width x1$", rest.rstrip()):
            width = None  # "x1" may be the start of "x16"
            cur.hop.unavailable["current_width" if which == "LnkSta" else "max_width"] = why
        if speed is None:
            sta = which == "LnkSta"
            for f in ("current_speed_gts", "current_gen") if sta else ("max_speed_gts", "max_gen"):
                cur.hop.unavailable[f] = why
        if speed is None and width is None:
            return
    if which == "LnkCap":
        cur.hop.max_speed_gts, cur.hop.max_width = speed, width
        cur.hop.max_gen = gen_from_speed(speed)
    else:
        cur.hop.current_speed_gts, cur.hop.current_width = speed, width
        cur.hop.current_gen = gen_from_speed(speed)
    if speed is None and width is None:
        raise ImportParseError(source, lineno, f"{which} without a speed or width: {rest.strip()[:50]!r}")


def _unknown_link(d: Device) -> None:
    """Why each link fact lspci did not give is unknown; a GPU whose port type is not printed is an endpoint."""
    for f in ("current_speed_gts", "max_speed_gts", "current_gen", "max_gen", "current_width", "max_width"):
        if getattr(d.hop, f) is None and f not in d.hop.unavailable:
            d.hop.unavailable[f] = (
                DEAD
                if d.dead
                else "lspci was run without root: capabilities <access denied> (run sudo lspci -vv)"
                if d.access_denied
                else "lspci printed no LnkCap/LnkSta for this device (not PCI Express, or lspci without -vv)"
            )
    if d.hop.port_type == "unknown" and d.is_gpu:
        d.hop.port_type = "endpoint"


def _next_fragment(cur: Device, which: str | None, line: str) -> bool:
    """Whether a grepped line starts the next device: a LnkCap/LnkSta already seen (a GPU and the port above
    it grepped together), or a PCI Express capability line after this device's link lines."""
    if not cur.seen:
        return False
    if which is not None:
        return which in cur.seen or (which == "LnkCap" and "LnkSta" in cur.seen)
    return _EXPRESS.search(line) is not None


def upstream(device: Device, devices: list[Device]) -> list[Device]:
    """The bridges above ``device``, nearest first, from their secondary..subordinate bus ranges."""
    domain, bus = device.bdf[:4], int(device.bdf[5:7], 16)
    above = [
        d
        for d in devices
        if d.is_bridge
        and d.bdf[:4] == domain
        and d is not device
        and d.bus_range is not None
        and d.bus_range[0] <= bus <= d.bus_range[1]
    ]
    above.sort(key=lambda d: (d.bus_range[1] - d.bus_range[0], -d.bus_range[0]))  # type: ignore[index]
    return above


_PORT_LIKE = ("root-port", "downstream-port", "unknown")


def _fragment_devices(devices: list[Device], source: str, rig: Rig) -> tuple[list[Device], dict[int, list[PcieHop]]]:
    """Grepped LnkCap/LnkSta pairs without device lines: the first endpoint-like pair is the device; a second
    pair right after it is the port above it (``lspci -vv -s GPU`` and ``-s PORT`` grepped together), whose
    LnkCap is the slot's. Further pairs belong to devices the paste does not name: not used."""
    evidence = {
        id(d): ", ".join(x for x in (f"Port #{d.port_no}" if d.port_no else "", "a slot" if d.slot else "") if x)
        for d in devices
        if d.hop.port_type == "unknown" and (d.slot or (d.port_no or 0) > 0)
    }
    for d in devices:
        if id(d) in evidence:
            d.hop.port_type = "root-port"  # "Port #3", a slot: a port's link, not an endpoint's
    linked = [
        d for d in devices if not d.is_bridge and (d.hop.current_speed_gts or d.hop.current_width or d.hop.max_width)
    ]
    ports = [d for d in devices if d.hop.port_type in ("root-port", "downstream-port") or d.is_bridge]
    first = next((d for d in linked if d.hop.port_type in ("endpoint", "unknown")), None)
    if first is None:
        for d in devices:
            if id(d) in evidence:
                rig.problems.append(
                    f"{source}: line {d.line}: the link shown is a PCIe port's ({evidence[id(d)]}), not an "
                    "endpoint's: not read as a GPU"
                )
        return [], {}
    if first.hop.port_type == "unknown":
        first.hop.port_type = "endpoint"  # read as the GPU
    rest = [d for d in devices if d is not first and d.line > first.line and d.seen]
    above: dict[int, list[PcieHop]] = {}
    if len(rest) == 1 and rest[0].hop.port_type in _PORT_LIKE:
        port = rest[0]
        if port.hop.port_type == "unknown" or id(port) in evidence:
            port.hop.port_type = "root-port"
            rig.problems.append(
                f"{source}: line {port.line}: a second LnkCap/LnkSta pair after the device's, "
                "without a device line: read as the port above it (its slot)"
            )
        above[id(first)] = [port.hop]
        return [first], above
    for d in rest + [d for d in ports if d not in rest and d is not first]:
        if d is not first and d.seen:
            rig.problems.append(
                f"{source}: line {d.line}: another LnkCap/LnkSta pair without a device line: "
                "which device it belongs to is not shown; not used"
            )
    return [first], above


def _once_each(devices: list[Device]) -> list[Device]:
    """A device listed twice (``lspci -vv`` and then ``lspci -vv -s BUS`` pasted together) is one device: the first
    listing that shows its link is kept."""
    first: dict[str, Device] = {}
    for d in devices:
        if not d.bdf:
            continue
        had = first.get(d.bdf)
        if had is None or (not had.seen and d.seen):
            first[d.bdf] = d
    return [d for d in devices if not d.bdf or first[d.bdf] is d]


_S_BUS = re.compile(r"\blspci\b[^|]*?\s-\w*s\s*" + _BDF + r"(?:\s|$)")


def context_bus(context: list[str] | None) -> tuple[str, str] | None:
    """The device a ``lspci -s BUS`` command line just above the output names (its bus id, and the line)."""
    line = next((x for x in reversed(context or []) if x.strip()), "")
    m = _S_BUS.search(line)
    bus = normalize_bus_id(m.group(1)) if m else None
    return (bus, line.strip()) if bus else None


def _other_vendor(context: list[str] | None, bus: str) -> str | None:
    """What a device line in ``context`` says the device at ``bus`` is, when it is not an NVIDIA device."""
    short = bus[5:] if bus.startswith("0000:") else bus
    for line in context or []:
        m = re.match(rf"^\s*(?:0000:)?{re.escape(short)} [^:]+: (.+)$", line, re.IGNORECASE)
        if m and "NVIDIA" not in m.group(1) and "[10de:" not in m.group(1).lower():
            return m.group(1).strip()
    return None


# Words a note on the ``lspci -s BUS`` line uses for a port ("# lspci -vvv -s 00:01.1  (upstream bridge of 01:00.0)").
_PORT_NOTE = re.compile(r"\b(?:bridge|root[- ]port|root complex|downstream port|upstream port|switch port)\b", re.I)


def _names_a_port(line: str) -> bool:
    """Whether the note after a ``lspci -s BUS`` command calls that device a port (a GPU named first is not)."""
    m = _S_BUS.search(line)
    note = line[m.end() :] if m else ""
    hit = _PORT_NOTE.search(note)
    return hit is not None and not re.search(r"\bGPU\b", note[: hit.start()])


def parse_lspci(text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None) -> Rig:
    """Facts from ``lspci -vv``: each NVIDIA GPU (no index: matched to others by bus id) with its path.
    ``context``: the lines above it; a ``lspci -s BUS`` command there names the device of lines grepped
    without their device line."""
    devices = _once_each(read_devices(text, source, first_line))
    if not devices and any(_ACS_LINE.match(x) for x in text.splitlines()):
        return Rig()  # `lspci -vvv | grep ACSCtl`: the ACS bits only (the row's extras read them), no device
    if not devices:
        raise ImportParseError(source, first_line, "no device line (like '01:00.0 VGA compatible controller: ...')")
    rig = Rig()
    gpus = [d for d in devices if d.is_gpu]
    named = [d for d in devices if not d.fragment]
    above: dict[int, list[PcieHop]] = {}  # fragment device -> the port above it, when grepped with it
    named_by = context_bus(context)
    other = _other_vendor(context, named_by[0]) if named_by and not named else None
    if named_by and other is not None:  # "lspci | grep -i vga" above names that bus: another vendor's GPU
        rig.problems.append(
            f"{source}: line {first_line}: lines grepped without their device line, after {named_by[1][:80]!r}: "
            f"the paste names {named_by[0]} {other[:80]!r}, not an NVIDIA device: its link is not read"
        )
        return rig
    if not named and named_by and _names_a_port(named_by[1]):
        rig.problems.append(
            f"{source}: line {first_line}: lines grepped without their device line, after {named_by[1][:80]!r}: "
            f"that line calls {named_by[0]} a port, not a GPU: its link is not read as a GPU's"
        )
        return rig
    if not named:  # only grepped lines: keep their link facts on a device whose identity is not shown
        gpus, above = _fragment_devices(devices, source, rig)
        if named_by and gpus:
            gpus[0].bdf = gpus[0].hop.bdf = named_by[0]
            rig.problems.append(
                f"{source}: line {gpus[0].line}: lines grepped without their device line, after "
                f"{named_by[1][:80]!r}: read as device {named_by[0]}'s"
            )
    for i, d in enumerate(sorted(gpus, key=lambda d: (d.redacted is not None, d.bdf))):
        g = Gpu(index=i, bus_id=d.bdf or None, name=_shown_name(d) if d.desc else None)
        if d.redacted is not None:
            g.unavailable["bus_id"] = f"not shown: a redactor's placeholder in it ({d.redacted!r}, line {d.line})"
        if d.numa is not None:
            g.numa_node = d.numa
            rig.origins[f"gpus[{i}].numa_node"] = f"{source}:{d.line}"
        if d.fragment and d.bdf:
            g.unavailable["name"] = FRAGMENT
            rig.origins[f"gpus[{i}]"] = f"{source}:{d.line}"
        elif d.fragment:
            for f in ("name", "bus_id"):
                g.unavailable[f] = FRAGMENT
            rig.problems.append(
                f"{source}: line {d.line}: {FRAGMENT}; its link is read as a GPU's (paste lspci -vv -s BUS_ID "
                "with its first line to name the device)"
            )
        elif g.name is None and d.desc_cut:
            g.unavailable["name"] = f"{ELIDED} (line {d.line} is cut mid-line)"
        elif g.name is None:
            g.unavailable["name"] = (
                f"lspci names it only {d.desc.split('(')[0].strip()!r} (device id unknown to its pci.ids)"
            )
        rig.origins[f"gpus[{i}]"] = f"{source}:{d.line}"
        if d.dead:
            rig.problems.append(f"{source}: line {d.line}: GPU {d.bdf}: {DEAD}")
        hops = [d.hop] + (
            above.get(id(d), []) if d.fragment else [] if d.redacted else [b.hop for b in upstream(d, devices)]
        )
        g.pcie.path = [] if d.fragment and len(hops) == 1 else hops
        h = d.hop
        g.pcie.current_gen, g.pcie.current_width = h.current_gen, h.current_width
        g.pcie.downgraded = list(d.downgraded)
        g.pcie.gpu_max_gen = h.max_gen
        parent = hops[1] if len(hops) > 1 else None
        # The link's maximum is the lower of the two ends' capabilities (NVML's "max with this system").
        g.pcie.max_gen = (
            min(x for x in (h.max_gen, parent.max_gen if parent else None) if x is not None) if h.max_gen else None
        )
        g.pcie.max_width = (
            min(x for x in (h.max_width, parent.max_width if parent else None) if x is not None)
            if h.max_width
            else None
        )
        for f in ("current_gen", "current_width", "gpu_max_gen", "max_gen", "max_width"):
            if getattr(g.pcie, f) is None:
                g.pcie.unavailable[f] = h.unavailable.get(f.replace("gpu_", ""), "not in this lspci output")
        g.pcie.unavailable["replay_counter"] = "lspci does not print the replay counter"
        if d.fragment and len(hops) == 1:
            g.pcie.unavailable["path"] = FRAGMENT
        elif len(hops) == 1:
            g.pcie.unavailable["path"] = (
                "no bridge above this GPU in the lspci output (run lspci -vv without -s for the whole tree)"
            )
        rig.gpus.append(g)
    for d in devices:
        if d.fragment and named:
            rig.problems.append(f"{source}: line {d.line}: {FRAGMENT}; not used (lines above the first device line)")
    if not gpus:
        shown = "; ".join(f"{d.bdf} {d.cls}" for d in devices[:3]) + ("; ..." if len(devices) > 3 else "")
        rig.problems.append(
            f"{source}: line {devices[0].line}: no NVIDIA GPU in this lspci output ({len(devices)} devices: {shown}); "
            "nothing used"
        )
    return rig


# not TensorFlow 2's "pciBusID: 0000:17:00.0 name: NVIDIA A100 ..." (its "pciBusID:" a prefix, its "name:" a class)
_DEV_START = re.compile(r"^\s*(?!pciBusID:)" + DEV_PREFIX + LSPCI_BUS_ID + r" [^:]+: ")
_FRAGMENT_START = re.compile(r"^(?:\s+Capabilities: \[[0-9a-fA-F]+\]|\s*(?:LnkCap|LnkSta):\s+(?:Port #|Speed))")
_ACS_FRAGMENT = re.compile(r"^\s+ACSC(?:ap|tl):\s")  # lspci -vvv ACS lines pasted without their device line
_ACS_LINE = re.compile(r"^\s*ACSC(?:ap|tl):\s")  # the same, its indent lost in the paste


_BOLD = re.compile(r"^(\s*)\*\*(\S.*?)\*\*\s*$")  # a line in Markdown bold: "**01:00.0 3D controller: ...**"


def unbold(line: str) -> str:
    """The line without the Markdown bold marks around it (their closing ``**`` shows it whole)."""
    b = _BOLD.match(line) if "**" in line else None
    return b.group(1) + b.group(2) if b else line


_LSPCI_COMMAND = re.compile(r"^\s*\S{0,80}[$#>]\s*(?:sudo\s+)?\S*lspci\b")


def _after_lspci_command(lines: list[str], i: int) -> bool:
    """Whether the line shown above line ``i`` (blank lines and markdown fences aside) is a prompt running lspci."""
    above = next((x for x in reversed(lines[max(0, i - 4) : i]) if x.strip() and not x.strip().startswith("```")), "")
    return bool(_LSPCI_COMMAND.match(above))


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``01:00.0 VGA compatible controller: ...``, or lines grepped out of ``lspci -vv`` without their device
    line (``LnkCap``/``LnkSta``, ``Capabilities:``, and outside a kernel log ``ACSCtl``)."""
    cur = current.kind if current else None
    line = lines[i]
    if cur == "lspci":  # grepped lines after a command of their own are another device's, never the last one's
        return bool(_FRAGMENT_START.match(line) or _ACS_LINE.match(line)) and _after_lspci_command(lines, i)
    if _DEV_START.match(unbold(line)) or _FRAGMENT_START.match(line):
        return True
    if cur == "kernel-log":
        return False
    if _JOINED.search(line):  # a device line joined after a command or another device's lines
        return True
    return bool(_ACS_FRAGMENT.match(line)) or bool(_ACS_LINE.match(line)) and cur is None
