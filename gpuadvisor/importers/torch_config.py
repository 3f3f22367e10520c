"""``print(torch.__config__.show())``: how this PyTorch was built (torch/csrc/utils: ``at::show_config()``).

It prints ``PyTorch built with:`` then one ``  - `` line per component: ``  - GCC 7.3``, ``  - CUDA Runtime 10.1``
(the CUDA runtime torch was built with and ships, ``torch.version.cuda``; ROCm builds print ``  - HIP Runtime``),
``  - CuDNN 7.6.3``, ``  - Magma 2.5.1``, and ``  - Build settings: BLAS=MKL, ..., TORCH_VERSION=2.1.0, ...`` (newer
builds name their version there).

Read: torch's CUDA version and, where the build settings name it, torch's version. Nothing about the machine: no
GPU, no driver (how torch was built says nothing of the driver it runs on).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "torch.__config__.show()"
_HEAD = re.compile(r"^\s*PyTorch built with:\s*$")
# "  - CUDA Runtime 12.1": torch.version.cuda; a ROCm build prints "  - HIP Runtime 6.2.41133" instead
RUNTIME = re.compile(r"^\s*-\s*(CUDA|HIP) Runtime (\d+\.\d+(?:\.\d+)?)\s*$")
# in the "  - Build settings: ..." line of newer builds
_TORCH = re.compile(r"\bTORCH_VERSION=(\d+\.\d+(?:\.\d+)?(?:[+a-z0-9.]*)?)(?=,|\s|$)")
_LONGEST = 20000


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``PyTorch built with:`` on its own line (a collect_env report that quotes it reads it itself)."""
    inside = current is not None and current.kind in ("torch-config", "collect-env", "detectron2-env")
    return bool(_HEAD.match(lines[i])) and not inside


def parse_torch_config(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """torch's CUDA version (its ``CUDA Runtime`` line) and version (``TORCH_VERSION=`` in its build settings)."""
    rig = Rig()
    sw = rig.software
    hip = None
    for k, line in enumerate(clean_lines(text)):
        if len(line) > _LONGEST:
            continue
        where = f"{source}:{first_line + k}"
        if (m := RUNTIME.match(line)) and m.group(1) == "HIP":
            hip = m.group(2)
        elif m and sw.torch_cuda_version is None:
            sw.torch_cuda_version = m.group(2)
            rig.origins["software.torch_cuda_version"] = where
        if (t := _TORCH.search(line)) and sw.torch_version is None:
            sw.torch_version = t.group(1)
            rig.origins["software.torch_version"] = where
    if sw.torch_cuda_version is None:
        why = f"a ROCm build (HIP Runtime {hip}): no CUDA" if hip else f"{WHAT} names no CUDA Runtime"
        sw.unavailable["torch_cuda_version"] = why
    if sw.torch_version is None:
        sw.unavailable["torch_version"] = f"{WHAT} of this build names no TORCH_VERSION"
    if sw.torch_cuda_version is None and sw.torch_version is None and hip is None:
        raise ImportParseError(source, first_line, f"{WHAT}: neither a CUDA Runtime nor a TORCH_VERSION line")
    for f in ("driver_version", "cuda_driver_version"):
        sw.unavailable[f] = f"{WHAT} says how torch was built, not which driver it runs on"
    return rig
