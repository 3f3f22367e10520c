"""``nvidia-smi vgpu`` on a vGPU host (the hypervisor, with NVIDIA's vGPU manager): its own table.

NVIDIA's Virtual GPU Software User Guide ("Monitoring GPU Performance", ``nvidia-smi vgpu``: "a summary of the vGPUs
currently running on each physical GPU in the system") shows it: nvidia-smi's banner (``| NVIDIA-SMI 470.63  Driver
Version: 470.63 |``: the vGPU manager's driver, no CUDA version), a two-line header ``| GPU  Name | Bus-Id |
GPU-Util |`` over ``|  vGPU ID  Name | VM ID  VM Name | vGPU-Util |`` and a ``|====|`` rule, then each physical
GPU (``|   0  Tesla T4  | 00000000:85:00.0 |   0% |``) with one row under it per vGPU running on it (``|
3251649543  GRID T4-4C | 0607...  instance-00000273 |  0% |``: the vGPU's id and type, the VM's id and name), each
GPU's block closed by a ``+----+`` rule. The GPU's name is cut to the column (``NVIDIA GeForce RTX 208...``).

Read: the driver version, and each physical GPU (index, bus id, its name where not cut); memory, power and the rest
are not in this view. A vGPU is a share of a physical GPU handed to a VM, not a GPU of this host: the vGPUs are
noted under their GPU, never counted. A table not closed by its rule is cut: GPUs below the cut are not shown.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section
from gpuadvisor.importers.smi_summary import banner_versions
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "nvidia-smi vgpu"
_BANNER = re.compile(r"^\|?\s*NVIDIA-SMI\s+\S+\s+Driver Version:")
_HEADER = re.compile(r"^\|\s*GPU\s+Name\s*\|\s*Bus-Id\s*\|\s*GPU-Util\s*\|?$")
_VGPU_HEADER = re.compile(r"^\|\s*vGPU ID\s+Name\s*\|\s*VM ID\s+VM Name\s*\|\s*vGPU-Util\s*\|?$")
_GPU_CELL = re.compile(r"^\s*(\d{1,3})\s+(\S(?:.*\S)?)\s*$")  # "  0  Tesla T4   ": nvidia-smi's index, the name
_VGPU_CELL = re.compile(r"^\s*(\d{4,})\s+(\S(?:.*\S)?)\s*$")  # "  3251649543  GRID T4-4C ": the vGPU's id, its type
_NOT_SHOWN = "not in nvidia-smi vgpu's table (it shows each GPU's name, bus id and utilisation)"


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """nvidia-smi's banner, or the ``| GPU  Name | Bus-Id | GPU-Util |`` header, over the vGPU header (``| vGPU ID
    Name | VM ID  VM Name | vGPU-Util |``) within the next lines."""
    if current is not None and current.kind == "smi-vgpu":
        return False
    s = lines[i].strip()
    if not (_BANNER.match(s) or _HEADER.match(s)):
        return False
    return any(_VGPU_HEADER.match(x.strip()) for x in lines[i + 1 : i + 4])


def _gpu(cells: list[str], index_name: re.Match[str]) -> Gpu | None:
    """A physical GPU's row: its index, name (unless cut to the column) and bus id."""
    bus = normalize_bus_id((cells[1].split() or [""])[0])
    if bus is None:
        return None
    g = Gpu(index=int(index_name.group(1)), bus_id=bus)
    name = index_name.group(2)
    if name.endswith("..."):
        g.unavailable["name"] = "nvidia-smi cut the name short in its table"
    else:
        g.name = name
    for f in ("memory_total_bytes", "power_limit_w", "persistence_mode", "ecc_errors_uncorrected_volatile"):
        g.unavailable[f] = _NOT_SHOWN
    return g


def parse_smi_vgpu(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The physical GPUs of a vGPU host and the driver version; the vGPUs on each noted, not counted."""
    rig = Rig()
    header = False
    vgpus: dict[int, list[str]] = {}
    last = ""
    for s, lineno, cut in stripped_rows(text, first_line):
        if banner_versions(rig, s, source, lineno, cut):
            continue
        header = header or bool(_VGPU_HEADER.match(s))
        last = s or last
        cells = s.strip("|").split("|")
        if not s.startswith("|") or len(cells) < 2 or cut:
            continue
        m = _GPU_CELL.match(cells[0])
        g = _gpu(cells, m) if m else None
        if g is not None:
            rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
            rig.gpus.append(g)
            vgpus[g.index] = []
            continue
        mv = _VGPU_CELL.match(cells[0])
        if mv and rig.gpus:
            vm = " ".join(cells[1].split()[1:]) or "its VM not named"
            vgpus[rig.gpus[-1].index].append(f"{mv.group(2)} (vGPU {mv.group(1)}, VM {vm}; line {lineno})")
    if not header:
        raise ImportParseError(source, first_line, f"{WHAT} without its 'vGPU ID  Name | VM ID  VM Name' header")
    for g in rig.gpus:
        if vgpus[g.index]:
            rig.problems.append(
                f"{source}: GPU {g.index} ({g.bus_id}) runs {len(vgpus[g.index])} vGPU(s): "
                f"{'; '.join(vgpus[g.index])}: each a share of this GPU given to a VM, not a GPU of this host"
            )
    if rig.gpus and not last.startswith("+"):
        rig.partial_gpu_list = True
        rig.problems.append(f"{source}: {WHAT}'s table is cut (no closing rule): the GPUs below the cut are not shown")
    return rig
