"""ComfyUI's start-up log and its "System Information" report, as its bug reports paste them.

- The start-up log (comfy/model_management.py, printed once at start): ``Total VRAM 24564 MB, total RAM 32694 MB``
  (the memory of the device ComfyUI runs on, ``torch.cuda.mem_get_info``'s total over 1024 * 1024, rounded: MiB),
  ``pytorch version: 2.7.0+cu128``, ``Device: cuda:0 NVIDIA GeForce RTX 4090 : native`` (``get_torch_device_name``:
  the torch device, ``torch.cuda.get_device_name``, then the CUDA allocator backend: ``native`` or
  ``cudaMallocAsync``). Logged through ``logging``, each line may carry a ``2024-10-19 01:10:47,703 - root - INFO -``
  prefix. Forks that keep the module (Fooocus, Forge) print the same lines.
- The report the frontend copies into an issue (the ``/system_stats`` endpoint as markdown): ``- **PyTorch Version:**
  2.8.0+cu129``, then under ``## Devices`` ``- **Name:** cuda:0 NVIDIA GeForce RTX 5090 : cudaMallocAsync`` over
  ``  - **VRAM Total:** 34190458880`` (the same total, in bytes).

Read: the one device ComfyUI uses (its CUDA number, name, memory: the bytes where the report gives them, else the
log's MiB), torch's version and the CUDA build its ``+cuXYZ`` tag names. ComfyUI lists only the device it runs on:
other GPUs in the machine are not shown (the list is partial). A device that is not CUDA (``cpu``, ``xpu``, ``mps``,
DirectML's ``privateuseone``), or a ROCm build's AMD GPU (torch names it as a ``cuda`` device), is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.env_reports import set_torch
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.framework_log import LONGEST, Reading
from gpuadvisor.importers.section import Section, outside

WHAT = "ComfyUI start-up log or system information"
STARTS_WITH = "`Total VRAM 24564 MB, total RAM ...`, `Device: cuda:0 NAME : native`, or `- **ComfyUI Version:**`"
_TOTAL = re.compile(r"(?<!\S)Total VRAM (\d{1,7}) MB, total RAM \d{1,9} MB\s*$")
_TORCH_LOG = re.compile(r"(?<!\S)pytorch version: (\S{1,60})\s*$")
# "Device: cuda:0 NAME : native" (the allocator may be blank: "NAME : "); "Device: cpu", "Device: xpu:0 NAME"
_DEVICE = r"(\w{1,20})(?::(\d{1,3}))?(?: (.{1,160}?)(?: :(?: \S+)?)?)?\s*$"  # cuda:0 NAME : allocator
_DEVICE_LOG = re.compile(r"(?<!\S)Device: " + _DEVICE)
_MD_TORCH = re.compile(r"^\s*-\s+\*\*PyTorch Version:\*\*\s+(\S{1,60})\s*$")
_MD_NAME = re.compile(r"^\s*-\s+\*\*Name:\*\*\s+" + _DEVICE)
_MD_VRAM = re.compile(r"^\s*-\s+\*\*VRAM Total:\*\*\s+(\d{1,16})\s*$")
_MD_HEAD = re.compile(r"^\s*-\s+\*\*ComfyUI Version:\*\*\s+\S")
_NOT_NVIDIA = re.compile(r"\b(?:AMD|Radeon|Instinct|Intel)\b")
_ONE_DEVICE = "ComfyUI names only the device it runs on: the machine's other GPUs, if any, are not shown"
_UNSHOWN = {
    "bus_id": "ComfyUI does not print the bus id",
    "uuid": "ComfyUI does not print the UUID",
    "memory_total_bytes": "ComfyUI printed no VRAM total for this device",
}


@outside("comfyui")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Total VRAM N MB, total RAM N MB``, ``Device: cuda:0 NAME : native``, or the report's ``- **ComfyUI
    Version:**`` (or, its head cut off, ``- **Name:** cuda:0 NAME``)."""
    line = lines[i]
    if len(line) > LONGEST:
        return False
    if _TOTAL.search(line) or _MD_HEAD.match(line):
        return True
    m = _DEVICE_LOG.search(line) or _MD_NAME.match(line)  # a CUDA device, its name and the allocator's " : "
    return m is not None and m.group(1) == "cuda" and m.group(2) is not None and f"{m.group(3)} :" in line


def parse_comfyui(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The device ComfyUI runs on (number, name, memory) and torch's version."""
    r = Reading(source, first_line, text)
    mib: tuple[int, int] | None = None  # the log's "Total VRAM" (MiB) and its line, for the device named after it
    device = None
    for k, line in r.shown():
        if m := _TOTAL.search(line):
            mib = (int(m.group(1)), k)
            r.read.add(k)
        elif m := _TORCH_LOG.search(line) or _MD_TORCH.match(line):
            set_torch(r.rig, m.group(1), f"{source}:{r.lineno(k)}", WHAT)
            r.read.add(k)
        elif m := _DEVICE_LOG.search(line) or _MD_NAME.match(line):
            r.read.add(k)
            kind, number, name = m.group(1), m.group(2), (m.group(3) or "").strip()
            if kind != "cuda" or number is None or _NOT_NVIDIA.search(name):
                r.rig.problems.append(
                    f"{source}: line {r.lineno(k)}: ComfyUI's device {line.strip()[:120]!r} is not an NVIDIA CUDA "
                    "GPU: not read"
                )
                device = None
                continue
            device = r.gpu(k, int(number))
            device.name = device.name or name or None
        elif (m := _MD_VRAM.match(line)) and device is not None:
            device.memory_total_bytes = int(m.group(1))  # bytes: the exact figure, over the log's rounded MiB
            r.rig.origins[f"gpus[{r.rig.gpus.index(device)}].memory_total_bytes"] = f"{source}:{r.lineno(k)}"
            r.read.add(k)
    if mib is not None and len(r.rig.gpus) == 1 and r.rig.gpus[0].memory_total_bytes is None:
        r.rig.gpus[0].memory_total_bytes = mib[0] * 1048576
        r.rig.origins["gpus[0].memory_total_bytes"] = f"{source}:{r.lineno(mib[1])} (Total VRAM, MiB)"
    if not r.rig.gpus:
        raise ImportParseError(source, first_line, f"{WHAT}: no line naming a CUDA device")
    r.rig.partial_gpu_list = True
    r.rig.problems.append(f"{source}: {_ONE_DEVICE}")
    return r.finish(WHAT, _UNSHOWN)
