"""An ``nvidia-smi -q`` record whose indentation was lost in the paste (a forum or chat that trimmed each line):
``Key : value`` on every line at the margin, the section lines (``PCI``, ``Clocks Throttle Reasons``) bare. The
record's structure is nvidia-smi's own, so it is put back from what each line is: a GPU record's own keys and sections
(``Product Name``, ``Serial Number``, ``PCI``, ``Fan Speed``) go under its ``GPU 0000:..`` line; a section's known
keys under the nearest section open above that holds them (``Replays Since Reset`` under ``PCI``, past its ``Bridge
Chip``); any other line under the section open above it. The text is indented as nvidia-smi indents it, line for
line (the line numbers kept), and read as a record."""

from __future__ import annotations

import re

_GPU = re.compile(r"^GPU [0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$")
_KV = re.compile(r"^(\S.*?)\s*:(?:\s|$)")
_GPU_LEVEL = "<gpu>"

# the sections (or keys) each key sits in, by name, lower case; _GPU_LEVEL: the GPU record itself
_PCI = ("pci",)
_IN: dict[str, tuple[str, ...]] = {
    **{k: _PCI for k in (
        "bus", "device", "domain", "device id", "bus id", "sub system id", "gpu link info", "bridge chip",
        "replays since reset", "replays", "replay number rollovers", "tx throughput", "rx throughput",
        "atomic caps inbound", "atomic caps outbound", "base classcode", "sub classcode",
    )},
    "pcie generation": ("gpu link info",), "link width": ("gpu link info",),
    "volatile": ("ecc errors",), "aggregate": ("ecc errors",),
    "single bit": ("volatile", "aggregate"), "double bit": ("volatile", "aggregate"),
    **{k: ("retired pages",) for k in (
        "single bit ecc", "double bit ecc", "pending page blacklist", "pending page retirement",
    )},
    **{k: ("remapped rows",) for k in (
        "correctable error", "uncorrectable error", "pending", "remapping failure occurred",
        "bank remap availability histogram",
    )},
}  # fmt: skip
_GPU_EXTRA = {
    "serial number",
    "board id",
    "fan speed",
    "pci",
    "ibmnpu",
    "temperature",
    "processes",
    "supported clocks",
    "addressing mode",
    "fabric",
    "capabilities",
    "gpu recovery action",
    "platform info",
    "conf compute",
}


def flattened(lines: list[str]) -> bool:
    """Whether a ``-q`` record lost its indentation: a ``GPU 0000:..`` line with two ``Key : value`` lines at the
    margin right below it, and no indented line below the first GPU line."""
    heads = [k for k, x in enumerate(lines) if _GPU.match(x)]
    if not heads:
        return False
    below = [x for x in lines[heads[0] + 1 :] if x.strip()]
    if len(below) < 2 or not all(_KV.match(x) for x in below[:2]):
        return False
    return not any(x[:1] in (" ", "\t") for x in below)


def reindented(text: str, gpu_keys: set[str]) -> str:
    """``text`` with nvidia-smi's indentation put back when it is a flattened ``-q`` record, else as it was."""
    lines = text.split("\n")
    if not flattened(lines):
        return text
    own = gpu_keys | _GPU_EXTRA
    path: list[str] = []  # the open sections, lower case: [<gpu>, "pci", "gpu link info"]
    out = []
    for line in lines:
        body = line.strip()
        if not body:
            out.append(line)
            continue
        if _GPU.match(body):
            path = [_GPU_LEVEL]
            out.append(body)
            continue
        kv = _KV.match(body)
        name = (kv.group(1) if kv else body).strip().lower()
        if path:
            homes = (_GPU_LEVEL,) if name in own else _IN.get(name, ())
            at = next((i for i in range(len(path) - 1, -1, -1) if path[i] in homes), None)
            if at is not None:
                del path[at + 1 :]
        out.append("    " * len(path) + body)
        if path and kv is None:
            path.append(name)
    return "\n".join(out)
