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
from gpuadvisor.facts import BlockDevice, NvmeHealth
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
# its SMART data section pasted alone (the paste starts below the information section): the NVMe health log's
# title over its "Critical Warning:" line
_SMART_DATA = re.compile(r"^\s*(?:=== START OF SMART DATA SECTION ===|SMART/Health Information \(NVMe Log 0x02)")
_NO_MODEL = "the paste starts below smartctl's information section (no Model Number line)"
_SMART_COMMAND = re.compile(r"\bsmartctl\s+(?:.*?\s)?/dev/(nvme\d+(?:n\d+)?)\b")  # "smartctl -a /dev/nvme1"


@outside("smartctl-nvme")
def starts_smartctl(lines: list[str], i: int, current: Section | None) -> bool:
    """smartctl's banner over its information section, or (the banner not pasted) that section's first line, when
    an NVMe ``Model Number:`` follows; or its SMART data section's first line over the NVMe health log's ``Critical
    Warning:`` (the paste starts there)."""
    if not outside_log(current):
        return False
    if _SMART_DATA.match(lines[i]):  # the health log alone
        return any(x.strip().startswith("Critical Warning:") for x in lines[i + 1 : i + 6])
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
    """The drive: its model, its capacity (tnvmcap, else its one namespace's size) and its health log; a paste of
    the health log alone is a drive whose model is not shown."""
    fields = smartctl_fields(text)
    missing = f"{origin}: smartctl output without its NVMe 'Model Number:' line"
    health, model = _health(fields), fields.get("Model Number")
    dev = _drive(model or (_NO_MODEL if health else None), context, _SMART_COMMAND, missing, "smartctl")
    if not model:
        dev.missing("model", _NO_MODEL)
    dev.health = health
    size = _count(fields.get("Total NVM Capacity"))
    if not size and fields.get("Number of Namespaces") == "1":
        size = _count(fields.get("Namespace 1 Size/Capacity"))
    dev.size_bytes = size or None
    if dev.size_bytes is None:
        dev.unavailable["size_bytes"] = "smartctl shows no total capacity (nor one namespace's size)"
    return [dev]


def _number(value: str | None, unit: str = "") -> int | None:
    """A health log's count or reading ("3,682", "100%", "30 Celsius"), None for another value."""
    return _count((value or "").removesuffix(unit).strip())


def _health(fields: dict[str, str]) -> NvmeHealth | None:
    """The NVMe health log's fields smartctl printed (nvmeprint.cpp's names), None when it shows no ``Critical
    Warning:``."""
    warning = fields.get("Critical Warning", "")
    if not re.fullmatch(r"0x[0-9a-fA-F]{2}", warning):
        return None
    return NvmeHealth(
        overall=fields.get("SMART overall-health self-assessment test result"),
        critical_warning=int(warning, 16),
        temperature_c=_number(fields.get("Temperature"), "Celsius"),
        available_spare_pct=_number(fields.get("Available Spare"), "%"),
        spare_threshold_pct=_number(fields.get("Available Spare Threshold"), "%"),
        percentage_used=_number(fields.get("Percentage Used"), "%"),
        media_errors=_number(fields.get("Media and Data Integrity Errors")),
        error_log_entries=_number(fields.get("Error Information Log Entries")),
        unsafe_shutdowns=_number(fields.get("Unsafe Shutdowns")),
        power_on_hours=_number(fields.get("Power On Hours")),
    )


# the health log's critical warning bits (NVMe Base Specification, SMART / Health Information log page 02h, byte 0)
_WARNING_BITS = (
    "available spare below its threshold",
    "temperature beyond a threshold",
    "reliability degraded (media or internal errors)",
    "media placed in read-only mode",
    "volatile memory backup failed",
    "persistent memory region read-only",
)
_SPEC = "NVMe Base Specification, SMART / Health Information log"


def _judged(h: NvmeHealth) -> list[str]:
    """What the health log says of the drive, by the NVMe specification's meaning of its fields."""
    said = []
    if h.critical_warning:
        bits = [w for b, w in enumerate(_WARNING_BITS) if h.critical_warning >> b & 1]
        said.append(f"NVMe critical warning 0x{h.critical_warning:02x}: {'; '.join(bits) or 'reserved bits'} ({_SPEC})")
    if h.media_errors:
        said.append(f"{h.media_errors} media and data integrity error(s): unrecovered data errors; replace the drive")
    spare, floor = h.available_spare_pct, h.spare_threshold_pct
    if spare is not None and floor is not None and spare < floor:
        said.append(f"available spare {h.available_spare_pct}% below its threshold {h.spare_threshold_pct}% ({_SPEC})")
    if h.percentage_used is not None and h.percentage_used >= 100:
        said.append(f"{h.percentage_used}% of its rated endurance used ({_SPEC})")
    if not said and h.error_log_entries and not h.media_errors:
        said.append(
            f"{h.error_log_entries} error-log entries and no media error: the controller's log of failed commands "
            "(often rejected admin commands), not a media fault"
        )
    return [f"smartctl: {x}" for x in said]


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
    """The drive's overall health, what its health log says (critical warning, media errors, spare, wear) and its
    temperature, as notes."""
    fields, notes = smartctl_fields(text), []
    health = fields.get("SMART overall-health self-assessment test result")
    if health:
        notes.append(f"{origin}: smartctl: the drive's SMART overall-health self-assessment: {health}")
    if (h := _health(fields)) is not None:
        notes += [f"{origin}: {x}" for x in _judged(h)]
    if m := re.fullmatch(r"(\d{1,3}) Celsius", fields.get("Temperature", "")):
        notes.append(f"{origin}: smartctl: the drive's temperature {m.group(1)} C")
    return notes
