"""``nvidia-container-cli info`` (libnvidia-container, as the NVIDIA container runtime's issues ask for it, often with
``-k -d /dev/tty``: its debug log first).

The tool prints (libnvidia-container src/cli/info.c) ``NVRM version:`` (the driver) and ``CUDA version:`` (the
newest CUDA the driver supports), then one block per GPU: ``Device Index``, ``Device Minor``, ``Model``, ``Brand``,
``GPU UUID``, ``Bus Location`` and ``Architecture``, each key padded to 15 characters. Its debug log (src/nvc_info.c)
names each GPU as it finds it: ``listing device /dev/nvidia0 (GPU-... at 00000000:1a:00.0)``.

Read: the driver and its CUDA version; each GPU's UUID and bus id (from the log or its block), its name (block).
The GPUs are numbered in the order listed (``Device Index``: the order the library enumerates them).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside, shown_lines
from gpuadvisor.importers.values import normalize_bus_id

WHAT = "nvidia-container-cli info"
_LISTING = re.compile(r"\blisting device /dev/nvidia\d+ \((GPU-[0-9a-fA-F-]{36}) at ([0-9a-fA-F:.]+)\)")
_KEYS = "NVRM version|CUDA version|Device Index|Device Minor|Model|Brand|GPU UUID|Bus Location|Architecture"
_KEY = re.compile(rf"^({_KEYS}):\s*(.*?)\s*$")


@outside("nvc-info")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The debug log's first ``listing device /dev/nvidiaN (GPU-... at ...)`` line, or ``NVRM version:`` over
    ``CUDA version:``."""
    s = lines[i].strip()
    if _LISTING.search(s):
        return True
    return s.startswith("NVRM version:") and i + 1 < len(lines) and lines[i + 1].strip().startswith("CUDA version:")


def parse_nvc_info(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver, its CUDA version and the GPUs, as nvidia-container-cli lists them."""
    rig = Rig()
    lines, cut = shown_lines(text)
    block: Gpu | None = None
    for k, line in enumerate(lines):
        s, where = line.strip(), f"{source}:{first_line + k}"
        if k == cut:
            break  # the paste ends inside this line: its value may be cut short
        if m := _LISTING.search(s):
            _gpu(rig, m.group(1), m.group(2), where)
            continue
        m = _KEY.match(s)
        if m is None or not m.group(2):
            continue
        key, value = m.groups()
        if key == "NVRM version":
            rig.software.driver_version = value
            rig.origins["software.driver_version"] = where
        elif key == "CUDA version":
            rig.software.cuda_driver_version = value
            rig.origins["software.cuda_driver_version"] = where
        elif key == "Device Index" and value.isdigit():
            n = int(value)
            while len(rig.gpus) <= n:
                _gpu(rig, None, None, where)
            block = rig.gpus[n]
        elif block is not None:
            _field(block, key, value)
    if not rig.gpus and rig.software.driver_version is None:
        raise ImportParseError(source, first_line, f"{WHAT} output without a device or the NVRM version")
    return rig


def _gpu(rig: Rig, uuid: str | None, bus: str | None, where: str) -> None:
    g = Gpu(index=len(rig.gpus), uuid=uuid, bus_id=normalize_bus_id(bus))
    rig.origins[f"gpu{g.index}"] = where
    rig.gpus.append(g)


def _field(g: Gpu, key: str, value: str) -> None:
    if key == "Model":
        g.name = value
    elif key == "GPU UUID" and value.startswith("GPU-"):
        g.uuid = value
    elif key == "Bus Location":
        g.bus_id = normalize_bus_id(value) or g.bus_id
