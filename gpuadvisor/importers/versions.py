"""Version outputs that bug-report templates ask for: ``nvidia-smi --version``, ``cat /proc/driver/nvidia/version``
and ``nvcc --version`` (or the toolkit's ``version.txt`` / ``version.json``). None of them lists a GPU.

``nvidia-smi --version`` prints ``NVIDIA-SMI version  : 550.54.14`` (the nvidia-smi binary), ``NVML version`` (the
library), ``DRIVER version`` (the loaded driver) and ``CUDA Version`` (the newest CUDA the driver supports); drivers
from 610 name the last two ``KMD Version`` and ``CUDA UMD Version`` (NVIDIA, nvidia-smi documentation: "deprecated
Driver Version and CUDA Version in favor of KMD Version and CUDA UMD Version"); older drivers print fewer lines.

``/proc/driver/nvidia/version`` is the loaded kernel module's: ``NVRM version: NVIDIA UNIX x86_64 Kernel Module
535.104.05  <build date>``, or from the open modules ``NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release
Build  (builder@host)  <date>`` (open-gpu-kernel-modules, utils.mk), then ``GCC version:`` (the compiler that built it).

``nvcc --version`` prints ``Cuda compilation tools, release 12.2, V12.2.140``: the CUDA toolkit installed, which is
not the driver's CUDA version. The scan has no field for the toolkit (a new key would change every scan's JSON): it
is recorded in the import's notes (``rig.problems``) with its line, and nothing else is read from it.

When nvidia-smi said "Driver/library version mismatch" (its plain output, merged first), that stays the driver's
reason (the rules judge it): the version these outputs show is noted beside it, not taken as the driver's.

A paste cut inside its last line (no newline after it) leaves that line's value not shown, never read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import DRIVER_MISMATCH, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Section, outside, shown_lines

WHAT_SMI = "nvidia-smi --version"
WHAT_PROC = "/proc/driver/nvidia/version"
WHAT_TOOLKIT = "nvcc --version"
VERSION = r"\d+(?:\.\d+){1,3}"
_SMI = re.compile(
    r"^(NVIDIA-SMI version|NVML version|DRIVER version|KMD Version|CUDA Version|CUDA UMD Version)\s*:\s*(\S*)"
)
_SMI_FIELDS = {
    "NVML version": "nvml_version",
    "DRIVER version": "driver_version",
    "KMD Version": "driver_version",
    "CUDA Version": "cuda_driver_version",
    "CUDA UMD Version": "cuda_driver_version",
}
# the words apart by one space or more ("NVRM version:  NVIDIA UNIX Open Kernel Module for x86_64  515.57": a module
# built outside NVIDIA's build farm)
_NVRM = re.compile(
    rf"^NVRM version:\s+NVIDIA UNIX\s+(?:\S+\s+)?(?:Open\s+)?Kernel Module(?:\s+for\s+\S+)?\s+({VERSION})(?:\s|$)"
)
_NVCC_HEAD = re.compile(r"^nvcc: NVIDIA \(R\) Cuda compiler driver\s*$")
_NVCC = re.compile(rf"^Cuda compilation tools, release (\d+\.\d+), V({VERSION})\s*$")
_VERSION_TXT = re.compile(rf"^CUDA Version ({VERSION})\s*$")
_JSON_SDK = re.compile(r'^"cuda"\s*:\s*\{\s*$')


def _json_row(key: str, value: str) -> re.Pattern[str]:
    """version.json's ``"key" : value`` line, its comma optional."""
    return re.compile(rf'^"{key}"\s*:\s*{value}\s*,?\s*$')


_JSON_NAME = _json_row("name", '"CUDA SDK"')
_JSON_VERSION = _json_row("version", f'"({VERSION})"')


@outside("smi-version")
def starts_smi(lines: list[str], i: int, current: Section | None) -> bool:
    """``NVIDIA-SMI version  :`` (its first line)."""
    s = lines[i].strip()
    return bool(_SMI.match(s)) and s.startswith("NVIDIA-SMI version")


@outside("proc-version")
def starts_proc(lines: list[str], i: int, current: Section | None) -> bool:
    """``NVRM version: NVIDIA UNIX ... Kernel Module ...  535.104.05``."""
    return bool(_NVRM.match(lines[i].strip()))


@outside("cuda-toolkit")
def starts_toolkit(lines: list[str], i: int, current: Section | None) -> bool:
    """nvcc's ``nvcc: NVIDIA (R) Cuda compiler driver`` or (without it) its ``Cuda compilation tools, release``
    line; version.txt's ``CUDA Version 11.0.228``; version.json's ``"cuda" : {`` over ``"name" : "CUDA SDK"``."""
    s = lines[i].strip()
    if _NVCC_HEAD.match(s) or _NVCC.match(s) or _VERSION_TXT.match(s):
        return True
    return bool(_JSON_SDK.match(s)) and i + 1 < len(lines) and bool(_JSON_NAME.match(lines[i + 1].strip()))


def parse_smi_version(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver, NVML and the driver's CUDA version, as ``nvidia-smi --version`` prints them."""
    rig = Rig()
    lines, cut = shown_lines(text)
    seen = False
    for k, line in enumerate(lines):
        m = _SMI.match(line.strip())
        if m is None:
            continue
        seen = True
        field = _SMI_FIELDS.get(m.group(1))
        if field is None or getattr(rig.software, field) is not None:
            continue
        where = f"{source}:{first_line + k}"
        if k == cut:
            rig.software.unavailable[field] = f"{WHAT_SMI}: the paste ends inside its line ({where})"
        elif re.fullmatch(VERSION, m.group(2)):
            rig.software.unavailable.pop(field, None)
            setattr(rig.software, field, m.group(2))
            rig.origins[f"software.{field}"] = where
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT_SMI} output without its version lines")
    for field in dict.fromkeys(_SMI_FIELDS.values()):
        if getattr(rig.software, field) is None:
            rig.software.unavailable.setdefault(field, f"not shown in the {WHAT_SMI} paste")
    return rig


def parse_proc_version(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The loaded kernel module's version."""
    rig = Rig()
    lines, cut = shown_lines(text)
    for k, line in enumerate(lines):
        m = _NVRM.match(line.strip())
        if m is None:
            continue
        if k == cut:
            rig.software.unavailable["driver_version"] = f"{WHAT_PROC}: the paste ends inside its line"
        else:
            rig.software.driver_version = m.group(1)
            rig.origins["software.driver_version"] = f"{source}:{first_line + k}"
        return rig
    raise ImportParseError(source, first_line, f"{WHAT_PROC} without its 'NVRM version:' line")


def parse_toolkit(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The CUDA toolkit's version, kept in the import's notes (the scan has no field for it)."""
    rig = Rig()
    lines, cut = shown_lines(text)
    stripped = [x.strip() for x in lines]
    for k, s in enumerate(stripped):
        where = f"{source}: line {first_line + k}"
        version = None
        if m := _NVCC.match(s):
            version = f"{m.group(1)} (nvcc V{m.group(2)})"
        elif m := _VERSION_TXT.match(s):
            version = f"{m.group(1)} (version.txt)"
        elif _JSON_NAME.match(s) and k + 1 < len(stripped) and (m := _JSON_VERSION.match(stripped[k + 1])):
            version, k = f"{m.group(1)} (version.json)", k + 1
        if version is None:
            continue
        if k == cut:
            rig.problems.append(f"{where}: the CUDA toolkit's version line is cut short: not shown")
        else:
            rig.problems.append(
                f"{where}: CUDA toolkit {version} installed (what builds CUDA code; the driver's CUDA version is "
                "another fact); the scan has no field for it"
            )
        return rig
    raise ImportParseError(source, first_line, f"{WHAT_TOOLKIT} output without 'Cuda compilation tools, release'")


def keep_mismatch(m: Merger, part: Part) -> None:
    """Merge ``part``; a "Driver/library version mismatch" an output merged before it showed stays the driver's
    reason, the version ``part`` shows (the loaded module's, or the installed packages') noted beside it."""
    version, why = part.rig.software.driver_version, m.rig.software.unavailable.get("driver_version", "")
    if version is not None and m.rig.software.driver_version is None and why.startswith(DRIVER_MISMATCH):
        part.rig.software.driver_version = None
        library = m.rig.software.nvml_version
        part.rig.problems.append(
            f"{part.at('software.driver_version')}: driver {version}"
            + (f", NVML's library {library}" if library else "")
            + f": {DRIVER_MISMATCH}"
        )
    m.add(part)
