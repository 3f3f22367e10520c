"""The device list of the GPGPU course's libgpu (https://github.com/GPGPUCourse: every task program of its
GPGPUTasks repositories prints it first), pasted in students' pull requests.

It prints ``Found 3 GPUs in 0.28 sec (CUDA: 0.03 sec, OpenCL: 0.144 sec, Vulkan: 0.106 sec)``, ``Available
devices:``, then one line per device: ``  Device #1: API: CUDA+OpenCL+Vulkan. GPU. NVIDIA GeForce RTX 3050 (CUDA
13040). Free memory: 5166/6143 Mb.`` (the APIs that reach it, its kind: GPU, iGPU or CPU, its name, and its free
and total memory in MiB, or ``Total memory: 7068 Mb.``), then ``Using device #1: ...`` and the task's own lines.

Read: the devices CUDA reaches (``CUDA`` among their APIs): each is an NVIDIA GPU, numbered in the order listed,
with its name (without the ``(CUDA N)`` level) and total memory. A device only OpenCL or Vulkan reaches is not read
(an Intel or AMD iGPU, a CPU, or an NVIDIA GPU listed a second time by Vulkan alone), only noted.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT = "GPGPU course libgpu device list"
_FOUND = re.compile(r"^Found \d+ GPUs in \S+ sec \(")
_DEVICE = re.compile(
    r"^Device #(\d+): API: ([\w+]+)\. (GPU|iGPU|CPU)\. (.*?)\. (?:.*?\. )?"
    r"(?:Free memory: \d+/(\d+)|Total memory: (\d+)) Mb\.\s*$"
)
_LEVEL = re.compile(r"\s*\(CUDA \d+\)$")


@outside("libgpu-devices")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Found N GPUs in T sec (...)`` or ``Available devices:``, over a ``Device #0: API: ...`` line."""
    s = lines[i].strip()
    if not (_FOUND.match(s) or s == "Available devices:"):
        return False
    below = [x.strip() for x in lines[i + 1 : i + 3]]
    return any(x.startswith("Device #0: API: ") for x in below)


def parse_libgpu_devices(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The NVIDIA GPUs CUDA reaches in the list: name and total memory."""
    rig = Rig()
    seen: set[int] = set()
    others: list[str] = []
    for s, lineno, cut in stripped_rows(text, first_line):
        m = _DEVICE.match(s)
        if m is None or int(m.group(1)) in seen or cut:
            continue  # not a device line, the same device again (a second run), or the line the paste cuts
        seen.add(int(m.group(1)))
        name = _LEVEL.sub("", m.group(4)).strip()
        if "CUDA" not in m.group(2).split("+"):
            others.append(f"#{m.group(1)} {name} ({m.group(2)}, {m.group(3)})")
            continue
        total = m.group(5) or m.group(6)
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
        g = Gpu(index=len(rig.gpus), name=name or None, memory_total_bytes=int(total) * 2**20)
        g.unavailable["bus_id"] = g.unavailable["uuid"] = f"{WHAT} does not print it"
        rig.gpus.append(g)
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT} without a 'Device #0: API: ...' line")
    if others:
        rig.problems.append(
            f"{source}: line {first_line}: devices CUDA does not reach, not read as NVIDIA GPUs: {'; '.join(others)}"
        )
    return rig
