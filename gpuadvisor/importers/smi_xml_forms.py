"""Recognising ``nvidia-smi -q -x`` in a paste: the whole document, or a part of one GPU's record pasted without
its root (from any element down, closing tags of elements opened above the paste included), or a grep of it whose
elements a chat box or inline code ran together on one line."""

from __future__ import annotations

import re

from gpuadvisor.importers.section import Section
from gpuadvisor.importers.smi_query import _X_GPU_TAGS
from gpuadvisor.importers.smi_query_paths import CLOCKS_REASON_NAMES, PATHS

_X_TAG = re.compile(r"^</?([a-z_0-9]{1,60})[\s>]")
_X_ELEMENT = re.compile(r"</?([a-z_0-9]{1,60})[\s>]")
# every element name -q -x prints that this reader knows: a GPU record's, each fact's path, each clocks reason
_X_KNOWN = (
    _X_GPU_TAGS
    | {part for xml_paths in (paths[1] for paths in PATHS.values()) for path in xml_paths for part in path}
    | {f"clocks_{w}_reason_{r}" for w in ("throttle", "event") for r in CLOCKS_REASON_NAMES}
)


def _known(text: str) -> int:
    return sum(t in _X_KNOWN for t in _X_ELEMENT.findall(text))


def starts_xml(lines: list[str], i: int, current: Section | None) -> bool:
    """``<?xml`` or ``<nvidia_smi_log``: ``nvidia-smi -q -x``; or (pasted without them) an element of one GPU's
    record (``<gpu id=..>``, ``<clocks_event_reasons>``...) over another element; or any element over element
    lines (closing tags too) of which three or more are the record's; or three of its elements on one line."""
    s = lines[i].strip()
    if s.startswith("<?xml") or s.startswith("<nvidia_smi_log"):
        return True
    if current is not None and current.kind == "smi-xml":
        return False
    if "<" in s and _known(s) >= 3:  # elements run together on one line
        return True
    if not (m := _X_TAG.match(s)):
        return False
    below = [x.strip() for x in lines[i + 1 : i + 13] if x.strip()]
    if m.group(1) in _X_GPU_TAGS:
        return bool(below) and below[0].startswith("<")
    return len(below) >= 3 and all(x.startswith("<") for x in below[:3]) and _known("\n".join(below)) >= 3


def xml_ends(line: str) -> bool:
    return "</nvidia_smi_log>" in line
