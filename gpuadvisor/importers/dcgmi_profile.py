"""``dcgmi profile -l`` (``--list``): the profiling metric groups DCGM can watch on one GPU (the first of the entity
list or group it was given, per NVIDIA's dcgmi-profile reference), a box of ``| Group.Subgroup | Field ID | Field Tag
|`` rows (``| A.1 | 1002 | sm_active |``). It names no GPU fact (no name, bus, health): read as what it is, the
profiling fields that GPU supports, with nothing to judge; the GPU's number is the command's ``-i N`` when pasted
above it."""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "dcgmi profile -l"
_HEADER = re.compile(r"^\|\s*Group\.Subgroup\s*\|\s*Field ID\s*\|\s*Field Tag\s*\|?\s*$")
_ROW = re.compile(r"^\|\s*([A-Z]\.\d+)\s*\|\s*(\d{3,5})\s*\|\s*(\w+)")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """Its header row (the rule above it may come first: the section then starts at the rule)."""
    if current is not None and current.kind == "dcgmi-profile":
        return False
    return bool(_HEADER.match(lines[i].strip()))


def parse_dcgmi_profile(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """No GPU and no fact: one note naming the profiling fields listed (the paste's last row may be cut)."""
    rig = Rig()
    tags = [m.group(3) for x in clean_lines(text) if (m := _ROW.match(x.strip()))]
    shown = ", ".join(tags[:8]) + (f" and {len(tags) - 8} more" if len(tags) > 8 else "")
    rig.problems.append(
        f"{source}: line {first_line}: dcgmi profile -l lists the profiling metrics DCGM can watch on one GPU"
        + (f" ({shown})" if tags else "")
        + ": no GPU fact in it, nothing judged"
    )
    return rig
