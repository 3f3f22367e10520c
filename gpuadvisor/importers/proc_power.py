"""The NVIDIA driver's per-GPU power file ``/proc/driver/nvidia/gpus/<bus id>/power``: the GPU's runtime power
management (RTD3), as people paste it under its ``cat`` (often with the PCI device's sysfs power state after it).

The driver prints (open-gpu-kernel-modules, kernel-open/nvidia/nv-procfs.c, ``nv_procfs_read_power``) ``Runtime D3
status:`` (``Enabled (fine-grained)``, ``Enabled (coarse-grained)``, ``Disabled by default``, ``Disabled``, ``Not
supported``; ``?`` when it cannot tell), ``Video Memory:`` (``Active``, or ``Off`` while the GPU sleeps), then ``GPU
Hardware Support:`` (``Video Memory Self Refresh``, ``Video Memory Off``), and in later drivers ``S0ix Power
Management:`` and ``Notebook Dynamic Boost:``. NVIDIA's driver README ("Dynamic Power Management") explains them:
with RTD3 enabled (``NVreg_DynamicPowerManagement=0x01`` or ``0x02``) an idle GPU is put to D3cold on purpose, its
video memory off, and woken on its next use; the PCI device's ``power/runtime_status`` then reads ``suspended`` and
its ``power_state`` ``D3cold``.

Read: the GPU the path names (its bus id), and its runtime D3 state and video memory state as a note. A GPU asleep
under RTD3 is a GPU working as configured, not a lost one.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "/proc/driver/nvidia/gpus/*/power"
_PREFIX = r"(?:\S*/power:)?"  # grep's file-name prefix
_D3 = re.compile(r"^" + _PREFIX + r"Runtime D3 status:\s*((?:\S(?:.*\S)?)?)\s*$")
_VIDMEM = re.compile(r"^" + _PREFIX + r"Video Memory:\s*((?:\S(?:.*\S)?)?)\s*$")
_OTHER = re.compile(r"^" + _PREFIX + r"(?:Tegra iGPU Rail-Gating|GPU Hardware Support|S0ix Power Management):")
_PATH = re.compile(r"/proc/driver/nvidia/gpus/([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])/power")
_SYSFS = re.compile(r"/sys/bus/pci/devices/([0-9A-Fa-f:.]+)/(power/runtime_status|power_state)\s*$")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Runtime D3 status:`` over ``Video Memory:`` (or, in Tegra-aware drivers, the rail-gating line between)."""
    if current is not None and current.kind == "proc-power":
        return False
    if not _D3.match(lines[i].strip()):
        return False
    return any(_VIDMEM.match(x.strip()) or _OTHER.match(x.strip()) for x in lines[i + 1 : i + 3])


def _bus(context: list[str], text: str) -> str | None:
    """The bus id the file's path names: in the command above the output, or in grep's prefix."""
    for line in [*reversed(context[-3:]), text]:
        m = _PATH.search(line)
        if m:
            return normalize_bus_id(m.group(1))
    return None


def _sysfs_states(rows: list[tuple[str, int, bool]]) -> list[str]:
    """``cat /sys/bus/pci/devices/BUS/power/runtime_status`` over ``suspended``, ``.../power_state`` over
    ``D3cold``: the PCI device's own power state, pasted after the driver's file."""
    out = []
    for k, (s, lineno, _cut) in enumerate(rows[:-1]):
        m = _SYSFS.search(s)
        value, _, cut = rows[k + 1]
        if m and value and not cut and not _SYSFS.search(value) and " " not in value:
            out.append(f"{m.group(2)} {value} (line {lineno + 1})")
    return out


def parse_proc_power(text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None) -> Rig:
    """The GPU the path names, and its runtime power-management state as the driver prints it."""
    rig = Rig()
    rows = [(r.text, r.lineno, r.cut) for r in stripped_rows(text, first_line)]
    d3 = vidmem = None
    where = first_line
    for s, lineno, cut in rows:
        m = _D3.match(s)
        if m and d3 is None and not cut:
            d3, where = m.group(1), lineno
        m = _VIDMEM.match(s)
        if m and vidmem is None and not cut:
            vidmem = m.group(1)
    if d3 is None:
        raise ImportParseError(source, first_line, f"{WHAT} without its 'Runtime D3 status:' line")
    bus = _bus(context or [], text)
    if bus is not None:
        g = Gpu(index=0, bus_id=bus)
        for f in ("name", "memory_total_bytes", "power_limit_w"):
            g.unavailable[f] = f"not shown in {WHAT}"
        rig.gpus.append(g)
        rig.origins["gpus[0]"] = f"{source}:{where}"
        rig.partial_gpu_list = True
    states = _sysfs_states(rows)
    asleep = vidmem == "Off" or any("suspended" in x or "D3cold" in x for x in states)
    meaning = (
        "the GPU put to sleep (D3cold) by the driver's runtime power management, as configured, and woken on its "
        "next use: a GPU working as set up, not one lost"
        if asleep and d3.startswith("Enabled")
        else "the GPU's runtime power management as the driver reports it"
    )
    shown = "; ".join([f"Video Memory: {vidmem or 'not shown'}", *states])
    rig.problems.append(
        f"{source}: line {where}: GPU {bus or '(its bus id not shown)'}: Runtime D3 status: {d3}; {shown}: {meaning}"
    )
    return rig
