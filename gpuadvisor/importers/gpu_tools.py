"""NVIDIA GPU Tools' log (nvtrust's ``gpu_cc_tool.py``, now ``nvidia_gpu_tools.py`` of NVIDIA/gpu-admin-tools): the
host-side tool that queries and sets a GPU's confidential-computing mode.

It prints ``NVIDIA GPU Tools version 535.86.06``, then Python logging lines, ``2024-01-04,04:04:24.159 WARNING  GPU
0000:44:00.0 ? 0x2331 BAR0 0x50042000000 not in D0 (current state 3), forcing it to D0`` (the time, the level padded
to eight, the GPU as the tool names it: its bus id, its name or ``?`` before the tool has read it, its device id,
its BAR0), its ``Topo:`` tree and what it was asked (``Selected GPU ...``, ``CC settings:``, ``CC mode is off``).
When it opens a GPU whose PCI power state is not D0 it wakes it (``not in D0 (current state 3), forcing it to D0``:
state 3 is D3hot; newer versions: ``was in D3, forced power control to on (prev auto). New state D0``), as a GPU
left powered down by a virtual machine's shutdown or by runtime power management is.

Read: its WARNING and ERROR lines as notes, the power-state ones with what they mean. No GPU is read from it (it
names the GPUs it was pointed at, not the machine's), and a woken GPU is not a lost one.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import LSPCI_BUS_ID
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "NVIDIA GPU Tools (gpu_cc_tool.py, nvidia_gpu_tools.py) log"
STARTS_WITH = "`NVIDIA GPU Tools version 535.86.06`, or a `2024-01-04,04:04:24.159 WARNING  GPU 0000:44:00.0 ...` line"
_VERSION = re.compile(r"^\s*NVIDIA GPU Tools version \S+\s*$")
# logging's "%(asctime)s.%(msecs)03d %(levelname)-8s %(message)s" with the date and time apart by a comma
_LINE = re.compile(r"^\s*\d{4}-\d\d-\d\d,\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(.{1,600}?)\s*$")
_GPU = re.compile(rf"^GPU (?:/sys/bus/pci/devices/)?({LSPCI_BUS_ID})\b")
_FORCED = re.compile(r"not in D0 \(current state (\d)\), forcing it to D0|was in (D\d\S*), forced power control to on")
_STATE = {"1": "D1", "2": "D2", "3": "D3hot"}
_WOKEN = (
    "the tool woke it to D0 to reach it: a GPU left powered down (by a virtual machine's shutdown, or runtime power "
    "management), not a lost one"
)


@outside("gpu-tools")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """Its version line, or one of its log lines naming a GPU."""
    line = lines[i]
    if _VERSION.match(line):
        return True
    m = _LINE.match(line)
    return m is not None and _GPU.match(m.group(2)) is not None


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Its WARNING and ERROR lines, as notes."""
    rig = Rig()
    seen = False
    for k, line in enumerate(clean_lines(text)):
        seen = seen or bool(_VERSION.match(line))
        m = _LINE.match(line)
        if m is None:
            continue
        seen = True
        if m.group(1) not in ("WARNING", "ERROR", "CRITICAL"):
            continue
        gpu = _GPU.match(m.group(2))
        forced = _FORCED.search(m.group(2))
        said = f"{source}: line {first_line + k}: NVIDIA GPU Tools {m.group(1)}: {m.group(2)[:300]}"
        if forced and gpu:
            state = _STATE.get(forced.group(1) or "", forced.group(1) or forced.group(2))
            said += f" (GPU {gpu.group(1)} was in PCI power state {state}: {_WOKEN})"
        rig.problems.append(said)
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT} without its version line or a log line")
    return rig
