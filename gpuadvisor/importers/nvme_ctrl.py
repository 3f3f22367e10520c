"""``nvme id-ctrl`` (nvme-cli's Identify Controller, normal output) as one NVMe drive's BlockDevice.

nvme-cli prints ``NVME Identify Controller:`` and then one ``name : value`` line a field of the NVMe Identify
Controller structure (nvme-print.c's id-ctrl printer, the same names in every version since 2015): ``mn`` the
model, ``fr`` the firmware revision, ``sn`` the serial, ``tnvmcap`` the total NVM capacity in bytes (0 where the
controller does not report it: NVMe 1.2's optional field), ``ps N : mp:...`` its power states.
"""

from __future__ import annotations

import re

from gpuadvisor.errors import InputError
from gpuadvisor.facts import BlockDevice
from gpuadvisor.importers.section import Section, outside_log

_HEAD = re.compile(r"^\s*NVME Identify Controller:\s*$")
_FIELD = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*:\s?(.*?)\s*$")
# the command above it: "nvme id-ctrl /dev/nvme1" (a controller) or "/dev/nvme0n1" (a namespace, merged by name)
_COMMAND = re.compile(r"\bnvme\s+id-ctrl\s+(?:.*?\s)?(?:/?dev/)?(nvme\d+(?:n\d+)?)\b")


class IdCtrlError(InputError):
    """An nvme id-ctrl paste without its model; one line naming the file."""


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """nvme-cli's ``NVME Identify Controller:`` line."""
    return bool(_HEAD.match(lines[i])) and outside_log(current)


def parse(text: str, origin: str, context: list[str] | None = None) -> list[BlockDevice]:
    """The drive: its model and total capacity, named by the command line above it when the paste shows one."""
    fields: dict[str, str] = {}
    for line in text.splitlines()[1:]:
        m = _FIELD.match(line)
        if m and m.group(1) not in fields:
            fields[m.group(1)] = m.group(2)
    model = fields.get("mn") or None
    if model is None:
        raise IdCtrlError(f"{origin}: nvme id-ctrl output without its 'mn' (model) line")
    named = next((m.group(1) for ln in reversed(context or []) if (m := _COMMAND.search(ln))), None)
    dev = BlockDevice(name=named or "nvme", kind="nvme", model=model)
    if named is None:
        dev.unavailable["name"] = "nvme id-ctrl does not print the device's name (the command line is not shown)"
    cap = fields.get("tnvmcap", "")
    if cap.isdigit() and int(cap) > 0:
        dev.size_bytes = int(cap)
    else:
        dev.unavailable["size_bytes"] = "nvme id-ctrl shows no total capacity (tnvmcap 0 or absent)"
    return [dev]
