"""The NVIDIA driver's per-GPU file ``/proc/driver/nvidia/gpus/<bus id>/information``, as people paste it
(``cat /proc/driver/nvidia/gpus/*/information``: one block per GPU, each starting at its ``Model:`` line).

The driver prints (NVIDIA open-gpu-kernel-modules, kernel-open/nvidia/nv-procfs.c, ``nv_procfs_read_gpu_info``),
one ``Key: <tabs> value`` line each: ``Model`` (the marketing name, from the PCI device and subsystem ids),
``IRQ``, ``GPU UUID`` (only once the GPU is initialised), ``Video BIOS`` (``??.??.??.??.??`` when it cannot be
read), ``Bus Type`` (PCIe or PCI), ``DMA Size``, ``DMA Mask``, ``Bus Location`` (domain:bus:device.function),
``Device Minor`` (N of /dev/nvidiaN, not nvidia-smi's index), ``GPU Firmware`` (the GSP firmware's version, on GSP
drivers) and ``GPU Excluded`` (``Blacklisted`` before 460: the GPU left out by NVreg_ExcludedGpus). ``grep .``
of several files prefixes each line with the file's path; that prefix is dropped.

Read: the name, UUID and bus id of each GPU; an excluded GPU is noted. The GPUs are numbered in the order shown
(the file does not give nvidia-smi's index).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside
from gpuadvisor.importers.values import GPU_UUID, normalize_bus_id, placeholder

_PATH = r"(?:\S*/information:)?"  # grep's file-name prefix
_LINE = re.compile(
    _PATH + r"(Model|IRQ|GPU UUID|Video BIOS|Bus Type|DMA Size|DMA Mask|Bus Location|Device Minor|GPU Firmware|"
    r"GPU Excluded|Blacklisted):(.*)$"
)
_MODEL = re.compile(_PATH + r"Model:\s+\S")
_IRQ = re.compile(_PATH + r"IRQ:\s+\d")
_LOCATION = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", re.I)
WHAT = "/proc/driver/nvidia/gpus/*/information"


@outside("proc-info")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``Model:`` line over the driver's ``IRQ:`` line (the file's first two lines, in every driver)."""
    return bool(_MODEL.match(lines[i].strip())) and i + 1 < len(lines) and bool(_IRQ.match(lines[i + 1].strip()))


def parse_proc_info(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """One GPU per ``Model:`` line: its name, UUID and bus id as the driver prints them."""
    rig = Rig()
    g: Gpu | None = None
    for s, lineno, cut in stripped_rows(text, first_line):  # cut: the paste ends inside this line, its value too
        m = _LINE.match(s)
        if m is None:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "Model":
            g = Gpu(index=len(rig.gpus))
            rig.gpus.append(g)
            rig.origins[f"gpu{g.index}"] = f"{source}:{lineno}"
            for f in ("uuid", "bus_id"):
                g.unavailable[f] = f"not shown in the {WHAT} paste"
            if value and not cut and not placeholder(value):
                g.name = value
            continue
        if g is None:
            continue
        _field(rig, g, key, value, cut, f"{source}: line {lineno}")
    if not rig.gpus:
        raise ImportParseError(source, first_line, f"{WHAT} without a Model line")
    return rig


def _field(rig: Rig, g: Gpu, key: str, value: str, cut: bool, where: str) -> None:
    if key == "GPU UUID" and GPU_UUID.match(value):
        g.uuid = value
        g.unavailable.pop("uuid", None)
    elif key == "GPU UUID" and placeholder(value):
        g.unavailable["uuid"] = f"the paste hides it ({value!r})"
    elif key == "Bus Location" and _LOCATION.match(value) and not cut:
        g.bus_id = normalize_bus_id(value)
        g.unavailable.pop("bus_id", None)
    elif key in ("GPU Excluded", "Blacklisted") and value.lower() == "yes":
        rig.problems.append(f"{where}: the driver excludes GPU {g.index} ({key}: Yes; NVreg_ExcludedGpus)")
