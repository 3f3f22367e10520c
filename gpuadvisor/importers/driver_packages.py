"""The NVIDIA driver's packages, as bug reports paste them: ``dpkg -l | grep nvidia`` (``ii  nvidia-driver-535
535.104.05-0ubuntu0.22.04.1  amd64  NVIDIA driver metapackage``), ``rpm -qa | grep nvidia``
(``nvidia-driver-cuda-570.86.16-1.el8.x86_64``) and ``dnf list installed`` (``nvidia-driver.x86_64
3:550.54.15-1.el9  @cuda-rhel9-x86_64``).

Read: the driver's version, when the installed driver packages hold one (the upstream part of each package's
version: ``535.104.05`` of ``535.104.05-0ubuntu1``). Packages of several driver versions installed at once are a
cause of "Failed to initialize NVML: Driver/library version mismatch": the version is then null, with that reason.
The installed packages are not the loaded module (``cat /proc/driver/nvidia/version`` tells that one): an import
that holds both keeps the loaded one. Packages dpkg lists as not installed (``rc``, ``un``) are not read; nor are
the tools packaged apart from the driver with their own versions (nvidia-settings, nvidia-prime, the container
toolkit, ...).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside, shown_lines

if TYPE_CHECKING:
    from gpuadvisor.importers.merger import Merger
    from gpuadvisor.importers.part import Part

WHAT = "dpkg -l / rpm -qa (NVIDIA driver packages)"
_NAME = r"(\S*nvidia\S*|cuda-drivers)"
_UPSTREAM = r"(?:\d+:)?(\d{3}\.\d+(?:\.\d+)?)"  # a driver version (epoch dropped), before its package release
_DPKG = re.compile(rf"^([a-zA-Z])([a-zA-Z])[A-Z ]?\s+{_NAME}(?::\w+)?\s+{_UPSTREAM}-\S+\s+\S+")
_RPM = re.compile(rf"^{_NAME}-{_UPSTREAM}-[^-\s]+\.(?:x86_64|aarch64|ppc64le|i686|noarch)$")
_DNF = re.compile(rf"^{_NAME}\.(?:x86_64|aarch64|ppc64le|i686|noarch)\s+{_UPSTREAM}-\S+\s+\S+")
_DPKG_HEAD = re.compile(r"^Desired=Unknown/Install/Remove/Purge/Hold\s*$")
# packaged apart from the driver, their versions their own (Ubuntu's nvidia-settings lags the driver)
_LONGEST = 400  # no package row is longer; a longer line is not read (the patterns stay linear)
_APART = re.compile(r"settings|prime|xconfig|modprobe|persistenced|container|docker|installer|pmda", re.I)


def _row(line: str) -> tuple[str, str] | None:
    """(package, driver version) of an installed driver package's row, else None."""
    s = line.strip()
    if len(s) > _LONGEST:
        return None
    m = _DPKG.match(s)
    if m is not None:
        if m.group(2) != "i":  # dpkg's second letter: i is installed (rc: removed, its configuration kept)
            return None
        name, version = m.group(3), m.group(4)
    elif (m := _RPM.match(s) or _DNF.match(s)) is not None:
        name, version = m.group(1), m.group(2)
    else:
        return None
    return None if _APART.search(name) else (name, version)


@outside("driver-packages")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """dpkg's ``Desired=Unknown/Install/...`` header, or an installed driver package's row."""
    s = lines[i].strip()
    return bool(_DPKG_HEAD.match(s)) or _row(s) is not None


def parse_driver_packages(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver's version, when the installed driver packages agree on one."""
    rig = Rig()
    lines, cut = shown_lines(text)
    versions: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for k, line in enumerate(lines):
        row = _row(line) if k != cut else None  # a cut row's version may be cut short
        if row is not None:
            versions.setdefault(row[1], []).append(row[0])
            where.setdefault(row[1], first_line + k)
    if not versions and not any(_DPKG_HEAD.match(x.strip()) for x in lines):
        raise ImportParseError(source, first_line, f"{WHAT}: no installed NVIDIA driver package")
    if len(versions) == 1:
        (version,) = versions
        rig.software.driver_version = version
        rig.origins["software.driver_version"] = f"{source}:{where[version]}"
    elif versions:
        listed = ", ".join(f"{v} ({versions[v][0]}, line {where[v]})" for v in sorted(versions))
        rig.software.unavailable["driver_version"] = f"packages of {len(versions)} driver versions installed"
        rig.problems.append(
            f"{source}: line {min(where.values())}: packages of {len(versions)} driver versions installed: {listed}; "
            "a cause of 'Driver/library version mismatch' (reboot after the update, or remove the old packages)"
        )
    else:
        rig.software.unavailable["driver_version"] = f"no installed NVIDIA driver package in the {WHAT} paste"
    return rig


def against_loaded(m: Merger, part: Part) -> None:
    """Once merged: installed packages of another version than the loaded driver (an output of the loaded one kept
    its version) are the "Driver/library version mismatch" until the module is reloaded."""
    installed, loaded = part.rig.software.driver_version, m.rig.software.driver_version
    if installed and loaded and installed != loaded:
        m.rig.problems.append(
            f"{part.at('software.driver_version')}: driver packages {installed} installed, driver {loaded} loaded "
            f"({m.other_origins.get('software.driver_version', 'another output')}): NVML and the tools of the "
            "packages fail with 'Driver/library version mismatch' until the new module is loaded (reboot)"
        )
