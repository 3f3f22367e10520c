"""club-3090's rig report (its scripts/report.sh, a markdown report users paste into issues): under ``## GPU
hardware``, per GPU ``- **GPU 0:** NVIDIA GeForce RTX 3090 | 24576 MiB | driver 590.48.01 | VBIOS 94.02.42.80.AD |
persistence=Enabled``, then ``  - **Power:** limit=275.00 W (default=420.00 W, max=500.00 W) | current_draw=36.06 W``
and ``  - **PCIe:** x16 lanes negotiated (GPU max x16, Gen up to 4) | bus 00000000:81:00.0`` (nvidia-smi's query
fields, as the script prints them).

Read: each GPU's name, memory, persistence mode, power limit, default limit and draw, PCIe width (negotiated and the
GPU's maximum) and bus id; the driver version. A GPU line without its last field (persistence=) is cut inside the
field before: that field is not shown, never read; what the cut hides of the last GPU is not shown.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.section import Section, outside, shown_lines
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "club-3090 rig report (report.sh)"
# report.sh's title line, its per-GPU line, and the two lines it indents under each GPU
_TITLE = re.compile(r"^#\s+club-3090 rig report\s*$")
_GPU = re.compile(r"^\s*- \*\*GPU (\d{1,3}):\*\*\s*(.*?)\s*$")
# "limit=275.00 W (default=420.00 W, max=500.00 W) | current_draw=36.06 W" (a warning may follow)
_POWER = re.compile(
    r"^\s*- \*\*Power:\*\*\s*limit=(\d+(?:\.\d+)?) W \(default=(\d+(?:\.\d+)?) W, max=\d+(?:\.\d+)? W\)"
    r"(?: \| current_draw=(\d+(?:\.\d+)?) W)?"
)
# "x16 lanes negotiated (GPU max x16, Gen up to 4) | bus 00000000:81:00.0" (a warning may follow)
_PCIE = re.compile(r"^\s*- \*\*PCIe:\*\*\s*x(\d+) lanes negotiated \(GPU max x(\d+)[^)]*\) \| bus (\S+)")
_CUT = "the paste ends inside this GPU's lines"


@outside("club3090")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``# club-3090 rig report``, or (pasted without it) a ``- **GPU 0:** NAME | 24576 MiB | driver ...`` line."""
    s = lines[i]
    return bool(_TITLE.match(s)) or bool((m := _GPU.match(s)) and " MiB | driver " in m.group(2))


def _identity(gpu: Gpu, fields: list[str], whole: bool, rig: Rig, where: str) -> None:
    """The GPU line's fields: name, memory, driver, persistence (the last one only when the line is whole)."""
    shown = fields if whole else fields[:-1]
    if shown:
        gpu.name = shown[0]
    for f in shown[1:]:
        if m := re.fullmatch(r"(\d+) MiB", f):
            gpu.memory_total_bytes = int(m.group(1)) * 2**20
        elif (m := re.fullmatch(r"driver (\d+\.\d+(?:\.\d+)?)", f)) and rig.software.driver_version is None:
            rig.software.driver_version = m.group(1)
            rig.origins["software.driver_version"] = where
        elif m := re.fullmatch(r"persistence=(Enabled|Disabled)", f):
            gpu.persistence_mode = m.group(1) == "Enabled"


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs of the report's GPU hardware part, and the driver."""
    rig = Rig()
    lines, cut = shown_lines(text)
    gpu: Gpu | None = None
    for k, line in enumerate(lines):
        where = f"{source}:{first_line + k}"
        if m := _GPU.match(line):
            gpu = Gpu(index=int(m.group(1)))
            rig.origins[f"gpus[{len(rig.gpus)}]"] = where
            rig.gpus.append(gpu)
            fields = [f.strip() for f in m.group(2).split("|")]
            # report.sh ends the line with persistence=: a line without it is cut inside its last field
            _identity(gpu, fields, k != cut and fields[-1].startswith("persistence="), rig, where)
        elif gpu is not None and k != cut and (m := _POWER.match(line)):
            gpu.power_limit_w, gpu.power_default_limit_w = float(m.group(1)), float(m.group(2))
            gpu.power_draw_w = float(m.group(3)) if m.group(3) else None
        elif gpu is not None and k != cut and (m := _PCIE.match(line)):
            gpu.pcie.current_width, gpu.pcie.max_width = int(m.group(1)), int(m.group(2))
            gpu.bus_id = normalize_bus_id(m.group(3))
    for g in rig.gpus:
        for name in ("name", "memory_total_bytes", "bus_id", "power_limit_w", "power_default_limit_w"):
            if getattr(g, name) is None:
                g.unavailable[name] = _CUT if rig.gpus[-1] is g else f"not printed by {WHAT}"
    return rig
