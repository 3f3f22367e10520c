"""``nvidia-smi mig -lgi``: the GPU instances (MIG partitions) made on each GPU with MIG mode on.

NVIDIA's MIG User Guide ("Creating GPU Instances") shows the table: a ``| GPU instances: |`` title, the header ``| GPU
Name  Profile  Instance  Placement |`` over ``| ID  ID  Start:Size |`` and a ``|====|`` rule, then one row per GPU
instance, ``|   0  MIG 1g.10gb   19   9   2:1 |`` (the GPU's index, the profile's name and id, the instance's id, its
placement), each under a ``+----+`` rule. A GPU holds GPU instances only with MIG mode on, and the table names no GPU
without one (``No GPU instances found`` or ``No MIG-enabled devices found``).

Read: each GPU a row names (its index), with MIG mode on; nothing else about it (its name, bus id and memory are not
shown). The GPUs without an instance, and those with MIG off, are not listed: the list is partial. A row cut after
its GPU's index and the ``MIG`` of its profile still names that GPU.
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
_UNSHOWN = "nvidia-smi mig -lgi names a GPU by its index alone"


@outside("smi-mig")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``| GPU instances: |``, or (its title lost) the header ``| GPU  Name  Profile  Instance  Placement |``."""
    s = lines[i].strip()
    if _TITLE.match(s):
        return True
    return _HEADER.match(s) is not None and not (i > 0 and _TITLE.match(lines[i - 1].strip()))


def parse_smi_mig(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs the GPU instances are on: MIG mode on, nothing else known."""
    rig = Rig()
    seen = False
    instances: dict[int, list[str]] = {}
    for k, line in enumerate(clean_lines(text)):
        s = line.strip()
        seen = seen or bool(_TITLE.match(s) or _HEADER.match(s))
        m = _ROW.match(s)
        if m is None:
            continue
        idx = int(m.group(1))
        if idx not in instances:
            instances[idx] = []
            g = Gpu(index=idx, mig_mode=True)
            for field in ("name", "bus_id", "memory_total_bytes"):
                g.unavailable[field] = _UNSHOWN
            rig.gpus.append(g)
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{first_line + k}"
        if m.group(5):  # a whole row: its profile
            instances[idx].append(m.group(2))
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT} without its '{TITLE}' title or its header")
    if rig.gpus:
        rig.partial_gpu_list = True
        layout = "; ".join(f"GPU {i}: {', '.join(p) or 'its row cut'}" for i, p in instances.items())
        rig.problems.append(
            f"{source}: {WHAT} lists the GPU instances of {len(rig.gpus)} GPU(s) with MIG mode on ({layout}); "
            "a GPU without an instance, or with MIG off, is not listed"
        )
    return rig
