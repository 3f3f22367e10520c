"""Small readers for the values nvidia-smi and lspci print ("16x", "81559 MiB", "700.00 W", "Enabled")."""

from __future__ import annotations

import re

from gpuadvisor.importers.fragments import UUID_BODY
from gpuadvisor.importers.sanity import too_long
from gpuadvisor.probes.busid import normalize_bus_id  # noqa: F401  (the importers' name for it)

# Values nvidia-smi prints when it has nothing to show.
_ABSENT = {
    "",
    "n/a",
    "[n/a]",
    "not available",
    "[not supported]",
    "not supported",
    "unknown",
    "[unknown error]",
    "unknown error",
    "requested functionality has been deprecated",
    "none",
    "err!",
    "[gpu requires reset]",
    "gpu requires reset",
    "[insufficient permissions]",
    "insufficient permissions",
}

# What nvidia-smi prints in place of a value it could not read, and what that says about the GPU (nvidia-smi(1):
# "[N/A]" not applicable or not supported; NVML return codes NVML_ERROR_UNKNOWN, NVML_ERROR_RESET_REQUIRED,
# NVML_ERROR_NO_PERMISSION; "ERR!" is the table's short form of a failed read).
STATE_MEANINGS = {
    "err!": "nvidia-smi could not read it (NVML returned an error): a failed sensor or fan, or a GPU in an error "
    "state (look for Xid errors in dmesg); on WSL, a Linux nvidia-smi that does not match the Windows driver",
    "[unknown error]": "NVML returned an unknown error reading it: the GPU may be in an error state (look for Xid "
    "errors in dmesg)",
    "[gpu requires reset]": "the GPU is in an error state and must be reset (nvidia-smi -r, or a reboot) before it "
    "can be read",
    "[insufficient permissions]": "nvidia-smi was not allowed to read it (run as root)",
}
STATE_MEANINGS["gpu requires reset"] = STATE_MEANINGS["[gpu requires reset]"]
STATE_MEANINGS["unknown error"] = STATE_MEANINGS["[unknown error]"]
STATE_MEANINGS["insufficient permissions"] = STATE_MEANINGS["[insufficient permissions]"]


def state_meaning(value: str | None) -> str | None:
    """The meaning of an error value nvidia-smi printed ("ERR!", "[Unknown Error]", "[GPU requires reset]"),
    or None for a value (or a plain "N/A": not supported or not applicable)."""
    return STATE_MEANINGS.get((value or "").strip().lower())


def printed(value: str | None) -> str:
    """The reason for a null read from ``value``: what nvidia-smi printed, with its meaning when it is an error."""
    meaning = state_meaning(value)
    if placeholder(value):
        return f"not shown: the paste has {(value or '').strip()!r} in its place"
    if value and meaning:
        return f"nvidia-smi printed {value.strip()!r}: {meaning}"
    return f"nvidia-smi printed {value or 'nothing'!r}"


# What people put before a device line: a label ("Card: ", "GPU0: "), or a shell prompt ("user@box:~$ ").
DEV_PREFIX = r"(?:[A-Za-z][\w .()/-]{0,30}:\s+|(?:\([^)]{0,30}\)\s*)?\S{0,60}[$#>]\s+)?"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


# What people type where they left part of an output out: "...", "....", "…", "[...]", "(...)", "<snip>",
# "[snip]", "-- snip --", "[truncated]", "<output truncated>", "... (40 more lines)". Anchored, no nested repeats.
_ELISION = re.compile(
    r"^\s*(?:#\s*)?(?:"
    r"(?:\.{3,}|…+)(?:\s*[\[(]?\s*(?:snip\w*|truncated|omitted|cut|elided|more|\d+ more)\b[^\n]*)?"
    r"|[\[(<]\s*(?:\.{3,}|…+|snip\w*|truncated|omitted|cut|elided|output "
    r"truncated|[^\]>)]{0,40}\b(?:snip\w*|truncated|omitted)\b)[^\]>)]{0,40}[\])>]"
    r"|-{2,}\s*(?:snip\w*|cut|truncated)\s*-{2,}"
    r")\s*$",
    re.IGNORECASE,
)


def is_elision(text: str | None) -> bool:
    """A line or value that stands for text left out of a paste (``...``, ``[...]``, ``<snip>``)."""
    return text is not None and len(text) <= 200 and _ELISION.match(text) is not None


def strip_ansi(text: str) -> str:
    """Remove terminal escape codes (nvidia-smi underlines the matrix header on a TTY)."""
    return _ANSI.sub("", text)


# What people type over a value they hide (serials, UUIDs, host names): "xxxx", "XXXXXXXX", "GPU-xxxxxxxx-xxxx-...",
# "GPU--------------",
# "****", "<redacted>", "[hidden]". Never a value: "not shown".
_REDACTED = re.compile(
    # "GPU----------": typed over; "GPU-": nothing shown
    r"^\s*(?:(?:GPU-|MIG-)?[xX*#]{3,}[xX*#:.-]*|(?:GPU|MIG)-[-xX*#.]{3,}|(?:GPU|MIG)-"
    r"|[<\[(]\s*(?:redacted|hidden|removed|masked|censored|private|anonymi[sz]ed)\s*[>\])]"
    r"|redacted|hidden|masked)\s*$",
    re.IGNORECASE,
)


# a whole value that is a GPU's UUID ("GPU-" and the 8-4-4-4-12 hex groups)
GPU_UUID = re.compile(rf"^GPU-{UUID_BODY}$", re.IGNORECASE)


# A GPU or MIG UUID with some of its hex digits typed over ("GPU-xxxxx11f-ce5d-xxxx-xxxx-6ea62fb1xxxx"): hex has
# no x, so any x (or *) in its 8-4-4-4-12 groups is a mask, and the UUID is not shown
_MASKED_UUID = re.compile(
    r"^\s*(?:GPU|MIG)-(?=[0-9a-f-]*[x*])[0-9a-fx*]{8}(?:-[0-9a-fx*]{4}){3}-[0-9a-fx*]{12}\s*$", re.IGNORECASE
)


def placeholder(value: str | None) -> bool:
    """A value the paste does not show: hidden (``xxxx``, ``<redacted>``, a UUID partly typed over) or left out
    (``...``, ``<snip>``)."""
    if value is None or len(value) > 200:
        return False
    return _REDACTED.match(value) is not None or _MASKED_UUID.match(value) is not None or is_elision(value)


def absent(value: str | None) -> bool:
    return value is None or value.strip().lower() in _ABSENT or placeholder(value)


def _too_long(value: str | None) -> bool:
    """More digits than any 64-bit value has: not a value nvidia-smi printed (see importers.sanity)."""
    return too_long(value)


def to_int(value: str | None) -> int | None:
    if absent(value) or _too_long(value):
        return None
    m = re.fullmatch(r"\s*(-?\d+)\s*(?:x|%|bank\(s\))?\s*", value or "")
    return int(m.group(1)) if m else None


def cuda_version(n: int) -> str:
    """The CUDA version of cudaDriverGetVersion's (or NVML's) integer, 1000 x major + 10 x minor: 12060 is 12.6."""
    return f"{n // 1000}.{n % 1000 // 10}"


def to_float(value: str | None, unit: str = "") -> float | None:
    """``"700.00 W"`` -> 700.0 (unit checked case-insensitively when given)."""
    if absent(value) or _too_long(value):
        return None
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z/%]*)\s*", value or "")
    if not m:
        return None
    if unit and m.group(2) and m.group(2).lower() != unit.lower():
        return None
    return float(m.group(1))


def width(value: str | None) -> int | None:
    """``"16x"`` or ``"x16"`` -> 16."""
    if absent(value):
        return None
    m = re.fullmatch(r"\s*x?(\d{1,2})x?\s*", value or "")
    return int(m.group(1)) if m else None


# nvidia-smi before R340 (2014) labelled the same MiB counts "MB" (a 6 GiB GTX TITAN: "6143MB", 6 x 1024 - 1): its
# "MB" is 2**20 bytes, not 10**6
_MEM_UNITS = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "kb": 1000, "mb": 1024**2, "gb": 1000**3}


def mem_bytes(value: str | None) -> int | None:
    """``"81559 MiB"`` -> bytes. nvidia-smi prints MiB (2**20 bytes); before R340 it wrote them "MB"."""
    if absent(value) or _too_long(value):
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]i?B|B)\s*", value or "", re.IGNORECASE)
    if not m:
        return None
    return int(m.group(1)) * _MEM_UNITS[m.group(2).lower()]


def enabled(value: str | None) -> bool | None:
    """Enabled/Disabled, On/Off, Yes/No, Active/Not Active -> bool."""
    if absent(value):
        return None
    v = (value or "").strip().lower()
    if v in ("enabled", "on", "yes", "active", "true"):
        return True
    if v in ("disabled", "off", "no", "not active", "false"):
        return False
    return None


def snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")
