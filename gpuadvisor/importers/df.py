"""``df`` pastes (``df -h``, ``df -hT``, ``df``, ``df -P``) as one StoragePath a mounted filesystem.

coreutils' df.c prints ``Filesystem [Type] Size|1K-blocks Used Avail|Available Use%|Capacity Mounted on``: sizes
human-readable in powers of 1024 with ``-h`` (powers of 1000 with ``-H``/``--si``), else in 1K (or ``-m``'s 1M)
blocks; a filesystem name too long for its column puts the numbers on the next line (without ``-P``). Each mount
is a path of role ``mount``: a filesystem the machine has, not a directory the job named (no rule judges it as
one). The used figure has no place in the facts (used + available is not the size: reserved blocks).
"""

from __future__ import annotations

import re

from gpuadvisor.errors import InputError
from gpuadvisor.facts import StoragePath
from gpuadvisor.importers.numbers import scaled
from gpuadvisor.importers.section import Section, outside_log

_HEAD = re.compile(
    r"^\s*Filesystem\s+(?P<type>Type\s+)?(?P<size>Size|\d+[KMG]?-blocks)\s+Used\s+Avail(?:able)?\s+"
    r"(?:Use%|Capacity)\s+Mounted\s+on\s*$"
)
_ROW = re.compile(
    r"^\s*(?P<source>\S+)\s+(?:(?P<type>\S+)\s+)?(?P<size>\S+)\s+\S+\s+(?P<avail>\S+)\s+\d+%\s+(?P<mount>/.*)$"
)
_NUMBERS = re.compile(r"^\s+(?:(?P<type>\S+)\s+)?\S+\s+\S+\s+\S+\s+\d+%\s+/")
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50, "E": 2**60}
# filesystems over a network (or a FUSE object store): the source names a server, or the type says so
_NETWORK_TYPES = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "ceph", "glusterfs", "beegfs", "9p")
_NETWORK_SOURCE = re.compile(r"^(?:[\w.-]+:/|//[\w.-]+/|\[[0-9a-fA-F:]+\]:/)")
# the kernel's own filesystems, not storage a job uses
_PSEUDO = re.compile(r"^/(?:proc|sys|run)(?:/|$)|^/dev(?:/(?!shm\b)|$)")


class DfError(InputError):
    """A df paste whose rows cannot be read; one line naming the file."""


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """df's header: ``Filesystem Size Used Avail Use% Mounted on`` (``Type`` after -T, ``1K-blocks`` without -h)."""
    return bool(_HEAD.match(lines[i])) and outside_log(current)


def _joined(lines: list[str]) -> list[str]:
    """Rows whose filesystem name stood alone on its line (too long for the column), joined with their numbers."""
    out: list[str] = []
    for ln in lines:
        if out and _NUMBERS.match(ln) and len(out[-1].split()) == 1:
            out[-1] = out[-1].strip() + " " + ln.strip()
        else:
            out.append(ln)
    return out


def _bytes(text: str, block: int, si: bool) -> int | None:
    if block:
        return scaled(text, block) if text.isdigit() else None
    m = re.fullmatch(r"([0-9.]+)([KMGTPE]?)i?B?", text.replace(",", "."))
    if m is None:
        return None
    return scaled(m.group(1), 1000 ** "_KMGTPE".index(m.group(2)) if si and m.group(2) else _UNITS[m.group(2)])


def parse(text: str, origin: str, context: list[str] | None = None) -> list[StoragePath]:
    """The mounts df listed, the kernel's own (/proc, /sys, /run, /dev but /dev/shm) left out."""
    lines = text.splitlines()
    head = _HEAD.match(lines[0]) if lines else None
    if head is None:
        raise DfError(f"{origin}: not df output (no 'Filesystem ... Mounted on' header)")
    blocks = re.match(r"(\d+)([KMG]?)-blocks", head["size"])
    block = int(blocks.group(1)) * _UNITS[blocks.group(2)] if blocks else 0
    si = any(re.search(r"\bdf\b.*(?:\s-\w*H|--si)\b", ln) for ln in context or [])
    typed = bool(head["type"])
    out = []
    for ln in _joined(lines[1:]):
        m = _ROW.match(ln)
        if m is None or bool(m["type"]) != typed:
            continue
        mount = m["mount"].rstrip()
        if _PSEUDO.match(mount) or m["source"] in ("devtmpfs", "udev"):
            continue
        sp = StoragePath(path=mount, role="mount", mount_point=mount, fs_source=m["source"])
        sp.size_bytes, sp.free_bytes = _bytes(m["size"], block, si), _bytes(m["avail"], block, si)
        if typed:
            sp.fs_type = m["type"]
        else:
            sp.unavailable["fs_type"] = "df without -T does not show the filesystem type"
        network = bool(_NETWORK_SOURCE.match(sp.fs_source or "")) or (sp.fs_type or "").startswith(_NETWORK_TYPES)
        if network or typed:
            sp.network = network
        else:
            sp.unavailable["network"] = "df without -T: a local source, its filesystem type not shown"
        for attr in ("size_bytes", "free_bytes"):
            if getattr(sp, attr) is None:
                sp.unavailable[attr] = f"df printed {m['size'] if attr == 'size_bytes' else m['avail']}: no size"
        out.append(sp)
    return out
