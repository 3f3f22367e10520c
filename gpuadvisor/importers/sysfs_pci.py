"""A PCI device's sysfs attributes: ``grep . /sys/bus/pci/devices/BUS/*`` (``PATH:VALUE`` lines, also under
``/sys/class/...`` and ``/sys/devices/pci0000:00/.../BUS/``) or ``cat`` of one attribute under its command line.

Read: ``current_link_speed`` / ``max_link_speed`` (as the kernel prints them, "8.0 GT/s PCIe", "2.5 GT/s",
"Unknown"), ``current_link_width`` / ``max_link_width``, ``vendor``, ``class`` and ``numa_node`` (-1: none), into
the facts an lspci output gives (Linux kernel, Documentation/ABI/testing/sysfs-bus-pci). A device whose vendor
(0x10de) and display class (0x0300, 0x0302, 0x0380) are shown is a GPU at its bus id; one without them is a link of
that device attached to no GPU, judged as lspci's grepped ``LnkCap``/``LnkSta`` lines are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import ELIDED, Gpu, PcieHop, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside
from gpuadvisor.physics.links import gen_from_speed

WHAT = "sysfs PCI attributes"
_ATTRS = (
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "vendor",
    "class",
    "numa_node",
)
_ATTR = "(" + "|".join(_ATTRS) + ")"
_LINE = re.compile(r"^\s*(/sys/\S*?)/" + _ATTR + r":(.*)$")
# the leading white space taken whole (possessive): tried again shorter, against the second run of it, a line of
# spaces cost its square
_CAT = re.compile(r"^\s*+\S{0,80}[$#>]?\s*(?:sudo\s+)?cat\s+(/sys/\S*?)/" + _ATTR + r"\s*$")
_BDF = re.compile(r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])(?=/|$)")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?) GT/s(?: PCIe)?$")
_GPU_CLASSES = ("0x0300", "0x0302", "0x0380")
_NOT_PCI_LINK = re.compile(r"/(?:infiniband|net|nvme|block)/")  # an HCA's, a NIC's, a disk's own tree
_NOT_SHOWN = "sysfs attributes pasted without this device's vendor and class: which device it is is not shown"


@dataclass
class _Device:
    path: str
    line: int
    values: dict[str, tuple[str, int]] = field(default_factory=dict)  # attribute -> (value, line)
    cut: dict[str, int] = field(default_factory=dict)  # attribute -> the line cut mid-value

    @property
    def bdf(self) -> str | None:
        found = _BDF.findall(self.path)
        return found[-1].lower() if found else None

    @property
    def is_gpu(self) -> bool:
        vendor = self.values.get("vendor", ("", 0))[0].lower()
        cls = self.values.get("class", ("", 0))[0].lower()
        return vendor == "0x10de" and cls[:6] in _GPU_CLASSES


def _records(text: str, first_line: int) -> list[tuple[str, str, str, int, bool]]:
    """(device path, attribute, value, line, cut) for each attribute shown."""
    lines = text.splitlines()
    cut_last = bool(lines) and not text.endswith(("\n", "\r"))
    out = []
    for k, line in enumerate(lines):
        lineno, last = first_line + k, cut_last and k == len(lines) - 1
        m = _LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2), m.group(3).strip(), lineno, last))
            continue
        c = _CAT.match(line)
        if c and k + 1 < len(lines) and lines[k + 1].strip():
            cut = cut_last and k + 1 == len(lines) - 1
            out.append((c.group(1), c.group(2), lines[k + 1].strip(), lineno + 1, cut))
    return out


def _devices(text: str, first_line: int) -> list[_Device]:
    devices: dict[str, _Device] = {}
    for path, attr, value, lineno, cut in _records(text, first_line):
        d = devices.setdefault(path.rstrip("/"), _Device(path.rstrip("/"), lineno))
        if cut:
            d.cut[attr] = lineno
        else:
            d.values.setdefault(attr, (value, lineno))
    return list(devices.values())


def _speed(value: str, lineno: int, source: str) -> float | None:
    if value.lower().startswith("unknown"):
        return None
    m = _SPEED.match(value)
    if not m:
        raise ImportParseError(source, lineno, f"{value[:40]!r} is not a PCIe link speed (like '8.0 GT/s PCIe')")
    return float(m.group(1))


def _width(value: str, lineno: int, source: str) -> int | None:
    if not re.fullmatch(r"\d{1,3}", value):
        raise ImportParseError(source, lineno, f"{value[:40]!r} is not a PCIe link width (like '16')")
    return int(value) or None  # 0: the link is down, no width


def _hop(d: _Device, source: str) -> PcieHop:
    hop = PcieHop(bdf=d.bdf or "", port_type="endpoint")
    for attr, (speed_f, gen_f, width_f) in {
        "current": ("current_speed_gts", "current_gen", "current_width"),
        "max": ("max_speed_gts", "max_gen", "max_width"),
    }.items():
        s, w = d.values.get(f"{attr}_link_speed"), d.values.get(f"{attr}_link_width")
        speed = _speed(*s, source) if s else None
        setattr(hop, speed_f, speed)
        setattr(hop, gen_f, gen_from_speed(speed))
        setattr(hop, width_f, _width(*w, source) if w else None)
        for f, a in ((speed_f, "speed"), (gen_f, "speed"), (width_f, "width")):
            if getattr(hop, f) is None:
                name = f"{attr}_link_{a}"
                hop.unavailable[f] = (
                    f"{ELIDED} (line {d.cut[name]} is cut mid-line)"
                    if name in d.cut
                    else f"the kernel prints {name} as {d.values[name][0]!r}"
                    if name in d.values
                    else f"{name} is not in this paste"
                )
    if d.values.get("vendor"):
        hop.vendor_id = d.values["vendor"][0].lower()
    if d.values.get("class"):
        hop.class_code = d.values["class"][0].lower()[:6]
    return hop


def _gpu(d: _Device, index: int, source: str, rig: Rig) -> Gpu:
    h = _hop(d, source)
    g = Gpu(index=index, bus_id=d.bdf if d.is_gpu else None, name=None)
    g.unavailable["name"] = "sysfs gives the vendor and device ids, not the model's name"
    if not d.is_gpu:
        g.unavailable["bus_id"] = _NOT_SHOWN
        g.unavailable["name"] = _NOT_SHOWN
        rig.problems.append(
            f"{source}: line {d.line}: the link of device {d.bdf or d.path}: {_NOT_SHOWN}; its link is judged, "
            "attached to no GPU (paste vendor and class too: grep . /sys/bus/pci/devices/BUS/*)"
        )
    numa = d.values.get("numa_node")
    if numa and re.fullmatch(r"-?\d{1,4}", numa[0]):
        if int(numa[0]) >= 0:
            g.numa_node = int(numa[0])
            rig.origins[f"gpus[{index}].numa_node"] = f"{source}:{numa[1]}"
        else:
            g.unavailable["numa_node"] = "numa_node is -1: the kernel ties this device to no NUMA node"
    g.pcie.current_gen, g.pcie.current_width = h.current_gen, h.current_width
    g.pcie.gpu_max_gen, g.pcie.max_gen, g.pcie.max_width = h.max_gen, h.max_gen, h.max_width
    for f in ("current_gen", "current_width", "gpu_max_gen", "max_gen", "max_width"):
        if getattr(g.pcie, f) is None:
            g.pcie.unavailable[f] = h.unavailable.get(f.replace("gpu_", ""), "not in this paste")
    g.pcie.downgraded = []  # sysfs has no lspci-style mark: the link rule holds current against max
    g.pcie.path = []
    g.pcie.unavailable["path"] = "sysfs attributes of one device: the bridges above it are not shown"
    g.pcie.unavailable["replay_counter"] = "not in the sysfs link attributes"
    rig.origins[f"gpus[{index}]"] = f"{source}:{d.line}"
    return g


def parse_sysfs_pci(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each device's link (and, when shown, its vendor, class and NUMA node) from its sysfs attributes."""
    devices = [d for d in _devices(text, first_line) if d.values or d.cut]
    if not devices:
        raise ImportParseError(source, first_line, "no sysfs PCI attribute (like '/sys/bus/pci/devices/BUS/vendor:..')")
    rig = Rig()
    linked = [d for d in devices if any(k.endswith(("_speed", "_width")) for k in (*d.values, *d.cut))]
    shown = sorted((d for d in linked if d.is_gpu), key=lambda d: d.bdf or "")
    for d in devices:
        if not d.is_gpu and ("vendor" in d.values or "class" in d.values):
            rig.problems.append(
                f"{source}: line {d.line}: device {d.bdf or d.path} is not an NVIDIA GPU (vendor "
                f"{d.values.get('vendor', ('-', 0))[0]}, class {d.values.get('class', ('-', 0))[0]}): not used"
            )
    unnamed = [d for d in linked if "vendor" not in d.values and "class" not in d.values]
    for i, d in enumerate([*shown, *unnamed[:1]]):
        rig.gpus.append(_gpu(d, i, source, rig))
    for d in unnamed[1:]:
        rig.problems.append(f"{source}: line {d.line}: another device's link ({d.bdf or d.path}): not used")
    return rig


@outside("sysfs-pci")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``/sys/.../ATTR:VALUE`` line of a PCI link attribute, or ``cat /sys/.../ATTR`` with its value below."""
    line = lines[i]
    m = _LINE.match(line) or (_CAT.match(line) if i + 1 < len(lines) else None)
    return m is not None and not _NOT_PCI_LINK.search(m.group(1))
