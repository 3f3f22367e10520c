"""``nvme id-ctrl`` (nvme-cli's Identify Controller, normal output), and ``smartctl -a`` on an NVMe drive, as one NVMe
drive's BlockDevice.

nvme-cli prints ``NVME Identify Controller:`` and then one ``name : value`` line a field of the NVMe Identify
Controller structure (nvme-print.c's id-ctrl printer, the same names in every version since 2015): ``mn`` the
model, ``fr`` the firmware revision, ``sn`` the serial, ``tnvmcap`` the total NVM capacity in bytes (0 where the
controller does not report it: NVMe 1.2's optional field), ``ps N : mp:...`` its power states.
"""

from __future__ import annotations

import re

from gpuadvisor.errors import InputError
from gpuadvisor.facts import BlockDevice
from gpuadvisor.importers.section import Section, outside, outside_log

_HEAD = re.compile(r"^\s*NVME Identify Controller:\s*$")
_FIELD = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*:\s?(.*?)\s*$")
# the command above it: "nvme id-ctrl /dev/nvme1" (a controller) or "/dev/nvme0n1" (a namespace, merged by name)
_COMMAND = re.compile(r"\bnvme\s+id-ctrl\s+(?:.*?\s)?(?:/?dev/)?(nvme\d+(?:n\d+)?)\b")


class IdCtrlError(InputError):
    """An nvme id-ctrl paste without its model; one line naming the file."""


def _drive(
    model: str | None, context: list[str] | None, command: re.Pattern[str], missing: str, tool: str
) -> BlockDevice:
    """The NVMe drive of ``model``, named by the command line above the paste when it shows one."""
    if not model:
        raise IdCtrlError(missing)
    named = next((m.group(1) for ln in reversed(context or []) if (m := command.search(ln))), None)
    dev = BlockDevice(name=named or "nvme", kind="nvme", model=model)
    if named is None:
        dev.unavailable["name"] = f"{tool} does not print the device's name (the command line is not shown)"
    return dev


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
    dev = _drive(
        fields.get("mn"),
        context,
        _COMMAND,
        f"{origin}: nvme id-ctrl output without its 'mn' (model) line",
        "nvme id-ctrl",
    )
    cap = fields.get("tnvmcap", "")
    if cap.isdigit() and int(cap) > 0:
        dev.size_bytes = int(cap)
    else:
        dev.unavailable["size_bytes"] = "nvme id-ctrl shows no total capacity (tnvmcap 0 or absent)"
    return [dev]


# smartctl -a (smartmontools) on an NVMe drive: its banner, then (nvmeprint.cpp) "=== START OF INFORMATION SECTION ==="
# with "Model Number:", "Total NVM Capacity:" (tnvmcap, when the controller reports it), "Number of Namespaces:",
# "Namespace 1 Size/Capacity:", then "=== START OF SMART DATA SECTION ===" with the overall-health result and the
# health log's "Critical Warning:" and "Temperature:". Byte counts carry the locale's thousands separator.
SMART_WHAT = "smartctl -a (NVMe)"
_SMART_BANNER, _SMART_INFO = re.compile(r"^\s*smartctl \d+\.\d+ "), re.compile(r"^\s*=== START OF INFORMATION SECTION")
_SMART_FIELD = re.compile(r"^\s*([A-Z][\w./ -]{1,60}?):\s+(.*?)\s*$")  # "Model Number:   INTEL ..."
_BYTES = re.compile(r"^(\d{1,3}(?:([,.' ])\d{3})*|\d+)(?:\s+\[[^\]]*\]?)?$")  # "14,403,239,936 [14.4 GB]"
_SMART_COMMAND = re.compile(r"\bsmartctl\s+(?:.*?\s)?/dev/(nvme\d+(?:n\d+)?)\b")  # "smartctl -a /dev/nvme1"


@outside("smartctl-nvme")
def starts_smartctl(lines: list[str], i: int, current: Section | None) -> bool:
    """smartctl's banner over its information section, or (the banner not pasted) that section's first line, when
    an NVMe ``Model Number:`` follows."""
    if not outside_log(current):
        return False
    if not (_SMART_BANNER.match(lines[i]) or _SMART_INFO.match(lines[i])):
        return False
    window = lines[i + 1 : i + 8]
    info = _SMART_INFO.match(lines[i]) or any(_SMART_INFO.match(x) for x in window[:5])
    return bool(info) and any(x.strip().startswith("Model Number:") for x in window)


def _count(value: str | None) -> int | None:
    """smartctl's byte count ("14,403,239,936 [14.4 GB]", "1.600.321.314.816 [1,60 TB]"), None for another value."""
    m = _BYTES.match(value or "")
    return int(re.sub(r"\D", "", m.group(1))) if m else None


def parse_smartctl(text: str, origin: str, context: list[str] | None = None) -> list[BlockDevice]:
    """The drive: its model, and its capacity (tnvmcap, else its one namespace's size)."""
    fields = smartctl_fields(text)
    missing = f"{origin}: smartctl output without its NVMe 'Model Number:' line"
    dev = _drive(fields.get("Model Number"), context, _SMART_COMMAND, missing, "smartctl")
    size = _count(fields.get("Total NVM Capacity"))
    if not size and fields.get("Number of Namespaces") == "1":
        size = _count(fields.get("Namespace 1 Size/Capacity"))
    dev.size_bytes = size or None
    if dev.size_bytes is None:
        dev.unavailable["size_bytes"] = "smartctl shows no total capacity (nor one namespace's size)"
    return [dev]


def smartctl_fields(text: str) -> dict[str, str]:
    """Its ``Name: value`` lines, the first of each name, the paste's last line left out when cut short."""
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines = lines[:-1]
    fields: dict[str, str] = {}
    for line in lines:
        if m := _SMART_FIELD.match(line):
            fields.setdefault(m.group(1).strip(), m.group(2))
    return fields


def smartctl_notes(text: str, origin: str) -> list[str]:
    """The drive's overall health, critical warning and temperature, as notes (the scan has no fields for them)."""
    fields, notes = smartctl_fields(text), []
    health = fields.get("SMART overall-health self-assessment test result")
    if health:
        notes.append(f"{origin}: smartctl: the drive's SMART overall-health self-assessment: {health}")
    warning = fields.get("Critical Warning", "")
    if re.fullmatch(r"0x[0-9a-fA-F]{2}", warning) and int(warning, 16):
        notes.append(
            f"{origin}: smartctl: NVMe critical warning {warning} (spare, temperature, reliability or "
            "read-only bits: NVMe base specification, SMART / Health Information log)"
        )
    if m := re.fullmatch(r"(\d{1,3}) Celsius", fields.get("Temperature", "")):
        notes.append(f"{origin}: smartctl: the drive's temperature {m.group(1)} C")
    return notes
