"""``lsblk`` and ``nvme list`` pastes as BlockDevice facts (for machines gpuadvisor cannot run on).

lsblk: the default tree (``NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINT(S)``, children drawn with ``├─``/``└─``) or
``lsblk -J`` JSON (any columns; ``-b`` for sizes in bytes). md arrays and LVM volumes are children of the
disks under them; they are turned round here, as the probe shows them: the volume with its member disks.
nvme list: the normal table of nvme-cli 1.x (``Node SN Model Namespace Usage Format FW Rev``) and 2.x (with
a ``Generic`` column) read by the dashed ruler's columns, or ``nvme list -o json``.
"""

from __future__ import annotations

import re
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.facts import BlockDevice
from gpuadvisor.importers.fio import json_starts
from gpuadvisor.importers.numbers import json_data, name, quantity, scaled
from gpuadvisor.importers.section import Section, outside_log

_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}


class BlockDevError(InputError):
    """An lsblk or nvme list paste that cannot be read; one line naming the file and what is wrong."""


def parse_size(text: str | None) -> int | None:
    """lsblk's human sizes ("256G", "3.5T", "0B", binary units) or a byte count."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9.]+)\s*([BKMGTP]?)(?:i?B)?\s*", str(text))
    return scaled(m.group(1), _UNITS[m.group(2)]) if m else None


def _kind(name: str, dtype: str, tran: str | None) -> tuple[str, str | None]:
    if dtype.startswith("raid") or dtype == "linear":
        return "md", dtype
    if dtype == "lvm":
        return "lvm", "lvm"
    if dtype in ("crypt", "dm", "mpath"):
        return "dm", None
    if name.startswith("nvme") or tran == "nvme":
        return "nvme", None
    if tran in ("sata", "ata"):
        return "sata", None
    if tran == "sas":
        return "sas", None
    if name.startswith("vd"):
        return "virtio", None
    if name.startswith("loop"):
        return "loop", None
    return "unknown", None


# lsblk -P (--pairs): each device one line of KEY="value" pairs, no tree; util-linux 2.37 on writes the columns
# whose names are not shell variables as such (MAJ_MIN, FSUSE_PCT); its -i only keeps the output ASCII
_PAIR = re.compile(r'([A-Z][A-Z0-9:%_-]{0,20})="((?:[^"\\]|\\.)*)"')
_PAIRS_LINE = re.compile(r'^\s*(?:[A-Z][A-Z0-9:%_-]{0,20}="(?:[^"\\]|\\.)*"\s*)+$')
_NAME_KEYS = ("NAME", "KNAME", "PATH")


def _column(key: str) -> str:
    """A -P key as lsblk's column name: ``MAJ_MIN`` is MAJ:MIN, ``FSUSE_PCT`` FSUSE%, ``DISC_ALN`` DISC-ALN."""
    if key in LSBLK_COLUMNS:
        return key
    key = key.replace("_PCT", "%").replace("MAJ_MIN", "MAJ:MIN")
    return key if key in LSBLK_COLUMNS else key.replace("_", "-")


def pairs_row(line: str) -> dict[str, str] | None:
    """One ``lsblk -P`` line's columns, or None if it is not one (a key that is not lsblk's, no device name first)."""
    if len(line) > 4000 or not _PAIRS_LINE.match(line):
        return None
    row = {_column(k): v for k, v in _PAIR.findall(line)}
    first = next(iter(row), "")
    return row if first in _NAME_KEYS and set(row) <= LSBLK_COLUMNS else None


def _rows_from_pairs(lines: list[str]) -> list[tuple[int, dict[str, str]]]:
    rows = []
    for ln in lines:
        row = pairs_row(ln)
        if row is not None:
            row["NAME"] = next(row[k] for k in _NAME_KEYS if k in row)
            rows.append((0, row))
    return rows


def _rows_from_tree(text: str, origin: str) -> list[tuple[int, dict[str, str]]]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    if lines and pairs_row(lines[0]) is not None:
        return _rows_from_pairs(lines)
    head = next((i for i, ln in enumerate(lines) if re.match(r"\s*NAME\s+", ln)), None)
    if head is None:
        raise BlockDevError(f"{origin}: not lsblk output (no NAME header line)")
    cols = lines[head].split()
    rows: list[tuple[int, dict[str, str]]] = []
    for ln in lines[head + 1 :]:
        m = re.match(r"^([\s│├└─|`\-]*)(\S+)\s*(.*)$", ln)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        rest = m.group(3).split()
        row = {"NAME": m.group(2)}
        for c, v in zip(cols[1:], rest, strict=False):
            row[c] = v
        rows.append((depth, row))
    return rows


def _rows_from_json(data: Any, origin: str) -> list[tuple[int, dict[str, str]]]:
    if not isinstance(data, dict) or not isinstance(data.get("blockdevices"), list):
        raise BlockDevError(f"{origin}: not lsblk -J output (no 'blockdevices' list)")
    rows: list[tuple[int, dict[str, str]]] = []

    def walk(dev: dict[str, Any], depth: int) -> None:
        rows.append((depth, {str(k).upper(): name(v) or "" for k, v in dev.items() if k != "children"}))
        for ch in dev.get("children") or []:
            if isinstance(ch, dict):
                walk(ch, depth + 1)

    for dev in data["blockdevices"]:
        if isinstance(dev, dict):
            walk(dev, 0)
    return rows


def parse_lsblk(text: str, origin: str = "lsblk") -> list[BlockDevice]:
    """Whole disks and the md/LVM volumes over them (volumes listing their member disks); partitions dropped."""
    stripped = text.lstrip()
    rows = (
        _rows_from_json(json_data(stripped, origin, "lsblk -J output", BlockDevError), origin)
        if stripped.startswith("{")
        else _rows_from_tree(text, origin)
    )
    disks: dict[str, BlockDevice] = {}
    volumes: dict[str, BlockDevice] = {}
    stack: list[str] = []  # the disk each depth belongs to
    for depth, row in rows:
        dev_name = (row.get("NAME") or "").removeprefix("/dev/")
        if not dev_name:
            continue  # a device without a name (a hand-edited or damaged JSON): nothing to call it by
        dtype = row.get("TYPE", "disk").lower()
        del stack[depth:]
        kind, level = _kind(dev_name, dtype, (row.get("TRAN") or "").lower() or None)
        dev = BlockDevice(
            name=dev_name,
            kind=kind,
            raid_level=level,
            size_bytes=parse_size(row.get("SIZE")),
            model=(row.get("MODEL") or None),
        )
        rota = row.get("ROTA")
        dev.rotational = {"1": True, "0": False, "true": True, "false": False}.get(str(rota).lower()) if rota else None
        if dev.model is None:
            dev.unavailable["model"] = "not in this lsblk output (add -o NAME,MODEL,...)"
        if dtype == "disk":
            disks[dev_name] = dev
            stack.append(dev_name)
        elif kind in ("md", "lvm", "dm"):
            vol = volumes.setdefault(dev_name, dev)
            for member in stack[:1]:
                if member in disks and all(m.name != member for m in vol.members):
                    vol.members.append(disks[member])
            stack.append(dev_name)
        else:
            stack.append(stack[-1] if stack else dev_name)
    if not disks:
        raise BlockDevError(f"{origin}: no disks in this lsblk output")
    under = {m.name for v in volumes.values() for m in v.members}
    return list(volumes.values()) + [d for n, d in disks.items() if n not in under]


def parse_nvme_list(text: str, origin: str = "nvme list") -> list[BlockDevice]:
    """NVMe namespaces with their model and size (the namespace's "Usage" total, SI units as nvme-cli prints)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        data = json_data(stripped, origin, "nvme list -o json output", BlockDevError)
        devs = data.get("Devices") if isinstance(data, dict) else None
        if not isinstance(devs, list):
            raise BlockDevError(f"{origin}: not nvme list -o json output (no 'Devices' list)")
        out = []
        for d in devs:
            path = name(d.get("DevicePath")) if isinstance(d, dict) else None
            if isinstance(d, dict) and path:
                raw = d.get("PhysicalSize")
                size = quantity(raw) if isinstance(raw, int) else None
                dev = BlockDevice(
                    name=path.removeprefix("/dev/"),
                    kind="nvme",
                    model=name(d.get("ModelNumber")),
                    size_bytes=None if size is None else int(size),
                )
                if size is None:  # nvme-cli 2.x printed sizes past 2**31 as negative 32-bit numbers: no size
                    dev.unavailable["size_bytes"] = f"nvme list -o json printed PhysicalSize {str(raw)[:24]}: no size"
                out.append(dev)
        return out
    lines = [x for ln in text.splitlines() for x in _uncollapsed(ln)]
    header, spans, first = _nvme_header(lines)
    node = "Device" if _NAMESPACES.match(header) else "Node"  # nvme list -v's namespace table names its node Device
    if node not in header and any(_CRUDE.match(ln) for ln in lines):
        return _crude_list(lines)
    if node not in header:
        raise BlockDevError(f"{origin}: not nvme list output (no 'Node ... Model' header with its dashed ruler)")
    names = [header[a : b + 1].strip() or (header[a:].split() or [""])[0] for a, b in spans]
    out = []
    for ln in lines[first:]:
        if not ln.strip():
            continue
        if not _NVME_NODE.match(ln):
            break  # the rows end at the first line that is not one (nvme list -v's tables, the next command)
        if _PARTITION.match(ln):
            continue  # nvme-cli before 2016 listed each partition of a namespace as a row of its own: not a drive
        # by its shape first (the classic Node/SN/Model layout, or 2015's Node/Model-or-Vendor/Version, its rows
        # tab-separated and not padded): a header wider than its ruler misplaces columns
        row = _shape_row(header, ln.strip())
        if row:
            cells = row
        elif not spans:
            continue  # no ruler to cut the row by, and not of the classic shape: not read
        else:
            cells = {
                n: ln[a : (spans[k + 1][0] if k + 1 < len(spans) else len(ln))].strip()
                for k, (n, (a, _)) in enumerate(zip(names, spans, strict=True))
            }
        dev = BlockDevice(name=cells.get(node, "").removeprefix("/dev/"), kind="nvme", model=cells.get("Model") or None)
        usage = cells.get("Namespace Usage") or cells.get("Usage") or ""
        m = re.search(r"/\s*([0-9.]+)\s*([kMGTP]?B)", usage)
        if m:
            dev.size_bytes = scaled(
                m.group(1), {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}[m.group(2)]
            )
        if dev.model is None:
            dev.unavailable["model"] = "not in this nvme list output" + (
                " (nvme list -v's namespace table: the model is in its controller table)" if node == "Device" else ""
            )
        out.append(dev)
    return out  # a listing cut after its header shows no device: nothing, not a refusal


# The whole listing on one line (a page's export that collapsed every newline and padding): its header, its ruler,
# then the rows, each from its /dev/nvme node
_COLLAPSED = re.compile(
    r"\bNode\s+(?:Generic\s+)?SN\s+Model\s+Namespace\s+Usage\s+Format\s+FW Rev\s+-{4,}(?:\s+-{2,})+\s+(/dev/nvme.*)$"
)


def _uncollapsed(line: str) -> list[str]:
    """The lines a listing collapsed onto ``line`` held: the classic header and each row (read by their shape)."""
    m = _COLLAPSED.search(line)
    if m is None:
        return [line]
    return ["Node SN Model Namespace Usage Format FW Rev", *re.split(r"\s+(?=/dev/nvme\d+n\d+\s)", m.group(1))]


def _nvme_header(lines: list[str]) -> tuple[str, list[tuple[int, int]], int]:
    """The header, the ruler's column spans and the first row's line; a paste that lost the ruler (blank lines in its
    place) has the classic header alone, its rows read by their shape (no spans)."""
    ruler = next((i for i, ln in enumerate(lines) if _RULER.fullmatch(ln)), None)
    if ruler is not None:
        above = [ln for ln in lines[:ruler] if ln.strip()]
        return (above[-1] if above else ""), [(m.start(), m.end()) for m in re.finditer(r"-+", lines[ruler])], ruler + 1
    head = next((i for i, ln in enumerate(lines) if _CLASSIC_HEAD.match(ln)), None)
    return ("", [], 0) if head is None else (lines[head], [], head + 1)


def _shape_row(header: str, line: str) -> dict[str, str] | None:
    """The row's Node, Model and Usage read by its shape, for the headers whose layout is known."""
    if re.search(r"\bSN\b.*\bModel\b", header):
        row = _NVME_ROW.match(line)
    elif re.search(r"\b(?:Model|Vendor)\s+Version\b", header):
        row = _VERSION_ROW.match(line)
    else:
        return None
    if row is None:
        return None
    model = row["model"]
    if re.search(r"\bVersion\b", header):  # 2016's SN/Model/Version: the NVMe version after the model
        model = re.sub(r"\s+\d+\.\d+$", "", model)
    return {"Node": row["node"], "Model": model, "Usage": row["usage"]}


def _crude_list(lines: list[str]) -> list[BlockDevice]:
    """nvme-cli's first ``nvme list`` (February 2015, nvme.c's ``"  %s\t: NVM Express - %#x - %s - %x"``): node,
    vendor id, the Identify model field (40 characters, not terminated: the firmware revision and bytes past it run
    on) and the NVMe version; no capacity."""
    out = []
    for ln in lines:
        m = _CRUDE.match(ln)
        if m is None or _PARTITION.match(m["node"]):
            continue
        field = m["mn"].rstrip()
        model = re.split(r"\s{2,}", (field[:40] if len(field) > 40 else field).strip())[0]
        dev = BlockDevice(name=m["node"].removeprefix("/dev/"), kind="nvme", model=model or None)
        dev.unavailable["size_bytes"] = "the 2015 nvme list form shows no capacity"
        if dev.model is None:
            dev.unavailable["model"] = "not in this nvme list output"
        out.append(dev)
    return out


# nvme-cli's first list form, one line a device: "  /dev/nvme0n1\t: NVM Express - 0x144d - MODEL...FW - 0"
_CRUDE = re.compile(
    r"^\s*(?P<node>/dev/nvme\d+n\d+(?:p\d+)?)\s*:\s*NVM Express - (?:0x)?[0-9a-fA-F]+ - (?P<mn>.*?) - [0-9a-fA-F]+\s*$"
)
# a partition of a namespace (nvme0n1p1): listed as rows by nvme-cli before 2016
_PARTITION = re.compile(r"^\s*(?:/dev/)?nvme\d+n\d+p\d+\b")
_CLASSIC_HEAD = re.compile(r"^\s*Node\s+(?:Generic\s+)?SN\s+Model\s+Namespace\s+Usage\s+Format\s+FW Rev\s*$")
# nvme list's row: Node, SN, Model (may hold spaces), Namespace, Usage "used UNIT / total UNIT", Format, FW Rev
# (nvme-cli 2.x adds a Generic column, /dev/ng0n1, after Node; a development build prints the Node without /dev/)
_NODE = r"/dev/\S+|nvme\d+n\d+\S*"
_USAGE = r"(?P<usage>[0-9.]+\s*[kMGTP]?B\s*/\s*[0-9.]+\s*[kMGTP]?B)"
_NVME_NODE = re.compile(rf"^\s*(?:{_NODE})\s")
_NVME_ROW = re.compile(
    rf"(?P<node>{_NODE})\s+(?:(?:/dev/)?ng\d+n\d+\S*\s+)?\S+\s+(?P<model>\S.*?)\s+(?:(?:0x)?[0-9a-f]+\s+)?{_USAGE}"
)

# 2015's rows: Node, Model (Vendor in its first header; 20 characters at most), Version, Namespace, Usage, Format
_VERSION_ROW = re.compile(rf"(?P<node>{_NODE})\s+(?P<model>\S.*?)\s+\d+\.\d+\s+\d+\s+{_USAGE}")

# -- recognising them in a paste ----------------------------------------------------------------------------

_LSBLK_HEAD = re.compile(r"^\s*NAME(?:\s+[A-Z][A-Z0-9:%_-]*)+\s*$")
# The columns lsblk can print (util-linux misc-utils/lsblk.c, its infos[] table; `lsblk --help` lists them): a header
# of other words (`ollama ps`: NAME ID SIZE PROCESSOR UNTIL; `docker images`...) is another tool's table.
_COLUMN_WORDS = (
    "ALIGNMENT DAX DISC-ALN DISC-GRAN DISC-MAX DISC-ZERO DISK-SEQ FSAVAIL FSROOTS FSSIZE FSTYPE FSUSE% FSUSED FSVER "
    "GROUP HCTL HOTPLUG ID ID-LINK KNAME LABEL LOG-SEC MAJ MAJ:MIN MIN MIN-IO MODE MODEL MOUNTPOINT MOUNTPOINTS MQ "
    "NAME OPT-IO OWNER PARTFLAGS PARTLABEL PARTN PARTTYPE PARTTYPENAME PARTUUID PATH PHY-SEC PKNAME PTTYPE PTUUID RA "
    "RAND REV RM RO ROTA RQ-SIZE SCHED SERIAL SIZE START STATE SUBSYSTEMS TRAN TYPE UUID VENDOR WSAME WWN ZONE-AMAX "
    "ZONE-APP ZONE-NR ZONE-OMAX ZONE-SZ ZONE-WGRAN ZONED"
)
LSBLK_COLUMNS = frozenset(_COLUMN_WORDS.split())
# the device table's header, or (nvme-cli 2.x's nvme list -v) its namespace table's: "Device  Generic  NSID  Usage"
_NVME_HEAD = re.compile(r"^\s*(?:Node\s+\S|Device\s+(?:Generic\s+)?NSID\s+Usage\b)")
_NAMESPACES = re.compile(r"^\s*Device\s+(?:Generic\s+)?NSID\s+Usage\b")
_RULER = re.compile(r"\s*-{4,}([ \t]+-{2,})+\s*")
starts_lsblk_json = json_starts('"blockdevices"')
starts_nvme_json = json_starts('"Devices"')


def starts_lsblk(lines: list[str], i: int, current: Section | None) -> bool:
    """lsblk's header: ``NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINTS`` (any of lsblk's columns); or lsblk -P's first
    ``NAME="sda" TYPE="disk" ...`` line."""
    line = lines[i]
    if (current is None or current.kind != "lsblk") and outside_log(current) and pairs_row(line) is not None:
        return True
    return bool(_LSBLK_HEAD.match(line)) and set(line.split()) <= LSBLK_COLUMNS and outside_log(current)


def starts_nvme(lines: list[str], i: int, current: Section | None) -> bool:
    """nvme list's header ``Node ...`` with the dashed ruler under it, or (the ruler lost in the paste) its classic
    header over a ``/dev/nvme0n1`` row."""
    if _COLLAPSED.search(lines[i]) or (_CRUDE.match(lines[i]) and (current is None or current.kind != "nvme-list")):
        return outside_log(current)
    if not _NVME_HEAD.match(lines[i]) or not outside_log(current):
        return False
    below = next((x for x in lines[i + 1 : i + 4] if x.strip()), "")
    return bool(_RULER.fullmatch(below)) or bool(_CLASSIC_HEAD.match(lines[i]) and _NVME_NODE.match(below))
