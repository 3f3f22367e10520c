"""``nvidia-smi mig -lgi``: the GPU instances (MIG partitions) made on each GPU with MIG mode on.

NVIDIA's MIG User Guide ("Creating GPU Instances") shows the table: a ``| GPU instances: |`` title, the header ``| GPU
Name  Profile  Instance  Placement |`` over ``| ID  ID  Start:Size |`` and a ``|====|`` rule, then one row per GPU
instance, ``|   0  MIG 1g.10gb   19   9   2:1 |`` (the GPU's index, the profile's name and id, the instance's id, its
placement), each under a ``+----+`` rule. A GPU holds GPU instances only with MIG mode on, and the table names no GPU
without one (``No GPU instances found`` or ``No MIG-enabled devices found``).

Read: each GPU a row names (its index), with MIG mode on; nothing else about it (its name, bus id and memory are not
shown). The GPUs without an instance, and those with MIG off, are not listed: the list is partial. A row cut after
its GPU's index and the ``MIG`` of its profile still names that GPU.

Plain ``nvidia-smi`` on a GPU with MIG mode on prints a second box under its GPU table, ``| MIG devices: |`` over
``| GPU  GI  CI  MIG | Memory-Usage | Vol| Shared |`` and one row per MIG device, ``|  1    3   0   0  |  14366MiB /
19968MiB | 28      0 |  2   0    1    0    0 |`` (the GPU's index, the GPU and compute instance ids, the MIG device's
index, its memory used and total, its SMs...). Pasted alone (no GPU table above it), it is read as ``mig -lgi`` is: the
GPUs it names by index, with MIG mode on, the instances as a note; under a whole table it stays that table's.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "nvidia-smi mig -lgi"
TITLE = "GPU instances:"
_TITLE = re.compile(r"^\|\s*GPU instances:\s*\|?\s*$")
_HEADER = re.compile(r"^\|\s*GPU\s+Name\s+Profile\s+Instance\s+Placement\s*\|?\s*$")
_ROW = re.compile(r"^\|\s+(\d+)\s+MIG(?:\s+(\d+g\.\d+gb\S*)(?:\s+(\d+)\s+(\d+)\s+(\d+:\d+)\s*\|)?)?")
_UNSHOWN = "nvidia-smi's MIG tables name a GPU by its index alone"
DEVICES_TITLE = "MIG devices:"
_DEV_TITLE = re.compile(r"^\|\s*MIG devices:\s*\|?\s*$")
_DEV_HEADER = re.compile(r"^\|\s*GPU\s+GI\s+CI\s+MIG\s*\|")
# "|  1    3   0   0  |  14366MiB / 19968MiB | 28 ...": GPU, GI id, CI id, MIG device, its memory (a cut row: the ids)
_DEV_ROW = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|(?:\s*\d+MiB\s*/\s*(\d+)MiB)?")
_SMI_TABLE = ("smi-summary",)  # under nvidia-smi's whole table the box is that table's


@outside("smi-mig")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``| GPU instances: |``, or (its title lost) the header ``| GPU  Name  Profile  Instance  Placement |``."""
    s = lines[i].strip()
    if _TITLE.match(s):
        return True
    if _DEV_TITLE.match(s) or (_DEV_HEADER.match(s) and not (i > 1 and _DEV_TITLE.match(lines[i - 2].strip()))):
        return current is None or current.kind not in _SMI_TABLE
    return _HEADER.match(s) is not None and not (i > 0 and _TITLE.match(lines[i - 1].strip()))


def _device_row(s: str) -> tuple[int, str] | None:
    """A ``MIG devices:`` row: its GPU's index and the instance (``GI 3 (19968 MiB)``, or ``GI 3`` when cut)."""
    m = _DEV_ROW.match(s)
    if m is None:
        return None
    return int(m.group(1)), f"GI {m.group(2)}" + (f" ({m.group(5)} MiB)" if m.group(5) else "")


def _row(s: str) -> tuple[int, str] | None:
    """A row of either table: its GPU's index and what it shows of the instance ("" when cut)."""
    if m := _ROW.match(s):
        return int(m.group(1)), m.group(2) if m.group(5) else ""
    return _device_row(s)


def parse_smi_mig(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs the GPU instances (or MIG devices) are on: MIG mode on, nothing else known."""
    rig = Rig()
    what = ""
    instances: dict[int, list[str]] = {}
    for k, line in enumerate(clean_lines(text)):
        s = line.strip()
        if not what and (_TITLE.match(s) or _HEADER.match(s)):
            what = WHAT
        elif not what and (_DEV_TITLE.match(s) or _DEV_HEADER.match(s)):
            what = f"nvidia-smi's '{DEVICES_TITLE}' table"
        row = _row(s)
        if row is None:
            continue
        idx, shown = row
        if idx not in instances:
            instances[idx] = []
            g = Gpu(index=idx, mig_mode=True)
            for field in ("name", "bus_id", "memory_total_bytes"):
                g.unavailable[field] = _UNSHOWN
            rig.gpus.append(g)
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{first_line + k}"
        if shown:
            instances[idx].append(shown)
    if not what:
        raise ImportParseError(source, first_line, f"{WHAT} without its '{TITLE}' title or its header")
    if rig.gpus:
        rig.partial_gpu_list = True
        layout = "; ".join(f"GPU {i}: {', '.join(p) or 'its row cut'}" for i, p in instances.items())
        rig.problems.append(
            f"{source}: {what} lists the GPU instances of {len(rig.gpus)} GPU(s) with MIG mode on ({layout}); "
            "a GPU without an instance, or with MIG off, is not listed"
        )
    return rig
