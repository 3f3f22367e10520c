"""PyTorch Lightning's environment report, which its bug-report form asks for.

Lightning's requirements/collect_env_details.py (``python collect_env_details.py``, pasted into the issue form's
"Environment" block) prints nested ``* Section:`` / ``- key: value`` lists: ``* CUDA:`` with ``- GPU:`` and one
``- NAME`` line per GPU under it (``torch.cuda.get_device_name(i)`` for each CUDA device, in CUDA's order; ``- GPU:
None`` without one), ``- available: True`` and ``- version: 12.1`` (``torch.version.cuda``: the CUDA torch was built
with); then ``* Lightning:`` (``- torch: 2.6.0+cu118`` among Lightning's packages; earlier versions list
``- pyTorch_version: 1.10.0+cu113`` under ``* Packages:``), ``* Packages:`` (every installed package) and
``* System:`` (``- OS:``, ``- python: 3.10.12``, ``- version:`` the kernel's).

Read: each GPU (its CUDA number, name), torch's version and its CUDA, Python's version. The report prints no bus id,
memory or driver. The row the paste is cut in is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT = "PyTorch Lightning collect_env_details"
_LONGEST = 400  # no row of the report is longer; a longer one is not read (the patterns stay linear)
_SECTION = re.compile(r"^\*\s+(\w[\w ]{0,30}):\s*$")  # "* CUDA:"
_KEY = re.compile(r"^-\s+([\w.+-]{1,60}):\s*(.*?)\s*$")  # "- available:         True"
_ITEM = re.compile(r"^-\s+([^:]{1,120}?)\s*$")  # "- NVIDIA GeForce RTX 4090" (a GPU under "- GPU:")
_CUDA_HEAD = re.compile(r"^\s*\*\s+CUDA:\s*$")
_GPU_KEY = re.compile(r"^\s*-\s+GPU:")
_TORCH_KEYS = ("torch", "pyTorch_version")
_VERSION = re.compile(r"^\d+(?:\.\d+)+\S*$")


@outside("lightning-env")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The report's ``* CUDA:`` line with its ``- GPU:`` line right under it."""
    if len(lines[i]) >= _LONGEST or not _CUDA_HEAD.match(lines[i]):
        return False
    return i + 1 < len(lines) and _GPU_KEY.match(lines[i + 1]) is not None


def parse_lightning_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs, torch's version and its CUDA, and Python's version of Lightning's report."""
    rig = Rig()
    sw = rig.software
    section, in_gpus, rows = "", False, 0
    for s, lineno, cut in stripped_rows(text, first_line):
        where = f"{source}:{lineno}"
        if len(s) >= _LONGEST or cut:
            continue
        if m := _SECTION.match(s):
            section, in_gpus = m.group(1).strip(), False
            continue
        if section == "CUDA" and in_gpus and (item := _ITEM.match(s)):
            rig.gpus.append(Gpu(index=len(rig.gpus), name=item.group(1)))
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = where
            continue
        m = _KEY.match(s)
        if m is None:
            continue
        rows += 1
        key, value = m.group(1), m.group(2)
        in_gpus = section == "CUDA" and key == "GPU" and not value
        if section == "CUDA" and key == "version" and _VERSION.match(value):
            sw.torch_cuda_version = value
            rig.origins["software.torch_cuda_version"] = where
        elif key in _TORCH_KEYS and _VERSION.match(value) and sw.torch_version is None:
            sw.torch_version = value
            rig.origins["software.torch_version"] = where
        elif section == "System" and key == "python" and _VERSION.match(value):
            sw.python_version = value
            rig.origins["software.python_version"] = where
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT} without a '- key: value' row")
    for g in rig.gpus:
        g.unavailable["bus_id"] = f"{WHAT} does not print the bus id"
        g.unavailable["memory_total_bytes"] = f"{WHAT} does not print the memory"
    sw.unavailable["driver_version"] = f"{WHAT} does not print the driver"
    return rig
