"""Two ML suites' own environment reports, which their bug reports hold: PyTorch Lightning's and PaddleSeg's.

Lightning's requirements/collect_env_details.py (``python collect_env_details.py``, pasted into the issue form's
"Environment" block) prints nested ``* Section:`` / ``- key: value`` lists: ``* CUDA:`` with ``- GPU:`` and one
``- NAME`` line per GPU under it (``torch.cuda.get_device_name(i)`` for each CUDA device, in CUDA's order; ``- GPU:
None`` without one), ``- available: True`` and ``- version: 12.1`` (``torch.version.cuda``: the CUDA torch was built
with); then ``* Lightning:`` (``- torch: 2.6.0+cu118`` among Lightning's packages; earlier versions list
``- pyTorch_version: 1.10.0+cu113`` under ``* Packages:``), ``* Packages:`` (every installed package) and
``* System:`` (``- OS:``, ``- python: 3.10.12``, ``- version:`` the kernel's).

Read: each GPU (its CUDA number, name), torch's version and its CUDA, Python's version. The report prints no bus id,
memory or driver. The row the paste is cut in is not read.

PaddleSeg's summary, logged at the start of every run: its paddleseg/utils/utils.py (get_sys_env, printed by
show_env_info under a ``------------Environment Information-------------`` ruler) prints ``key: value`` lines:
``platform: Linux-...``, ``Python: 3.8.16 (...)``, ``Paddle compiled with cuda: True``, ``NVCC: ...`` (the last line
of ``nvcc -V``), ``cudnn: 8.4``, ``GPUs used: 8`` (the ranks of this launch, not the machine's GPUs),
``CUDA_VISIBLE_DEVICES: 0,1``, ``GPU: ['GPU 0: NVIDIA A100-PCIE-40GB', ...]`` (``nvidia-smi -L``'s lines as a Python
list: every GPU of the machine, in its order; most versions keep only each line's first four words, so a name of more
than two words is cut there), ``GCC:``, ``PaddleSeg:``, ``PaddlePaddle: 2.4.1``, ``OpenCV:``.

Read: each GPU (its nvidia-smi number, its name unless cut), Python's version and CUDA_VISIBLE_DEVICES. The summary
prints no bus id, memory or driver. The line the paste is cut in is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT_LIGHTNING = "PyTorch Lightning collect_env_details"
_LONGEST_ROW = 400  # no row of the report is longer; a longer one is not read (the patterns stay linear)
_SECTION = re.compile(r"^\*\s+(\w[\w ]{0,30}):\s*$")  # "* CUDA:"
_KEY = re.compile(r"^-\s+([\w.+-]{1,60}):\s*(.*?)\s*$")  # "- available:         True"
_ITEM = re.compile(r"^-\s+([^:]{1,120}?)\s*$")  # "- NVIDIA GeForce RTX 4090" (a GPU under "- GPU:")
_CUDA_HEAD = re.compile(r"^\s*\*\s+CUDA:\s*$")
_GPU_KEY = re.compile(r"^\s*-\s+GPU:")
_AVAILABLE = re.compile(r"^\s*-\s+available:\s")
_TORCH_KEYS = ("torch", "pyTorch_version")
_VERSION = re.compile(r"^\d+(?:\.\d+)+\S*$")


@outside("lightning-env")
def starts_lightning(lines: list[str], i: int, current: Section | None) -> bool:
    """The report's ``* CUDA:`` line with its ``- GPU:`` line right under it; or, its heading cut off, that ``- GPU:``
    line over its GPUs' names and ``- available:``."""
    if len(lines[i]) >= _LONGEST_ROW:
        return False
    if _CUDA_HEAD.match(lines[i]):
        return i + 1 < len(lines) and _GPU_KEY.match(lines[i + 1]) is not None
    if not _GPU_KEY.match(lines[i]) or (i > 0 and _CUDA_HEAD.match(lines[i - 1])):
        return False
    for x in lines[i + 1 : i + 66]:  # up to 64 GPUs listed
        if _AVAILABLE.match(x):
            return True
        if not _ITEM.match(x.strip()):
            return False
    return False


def parse_lightning_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs, torch's version and its CUDA, and Python's version of Lightning's report."""
    rig = Rig()
    sw = rig.software
    section, in_gpus, rows = "CUDA", False, 0  # the report opens with it (its heading or its "- GPU:" line)
    for s, lineno, cut in stripped_rows(text, first_line):
        where = f"{source}:{lineno}"
        if len(s) >= _LONGEST_ROW or cut:
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
    return _unprinted(rig, rows, WHAT_LIGHTNING, f"{WHAT_LIGHTNING} without a '- key: value' row", (source, first_line))


# --- PaddleSeg ---

WHAT_PADDLE = "PaddleSeg environment info"
_LONGEST = 4000  # the GPU list of 16 GPUs fits; a longer line is not read (the patterns stay linear)
_PLATFORM = re.compile(r"^\s*platform: \S")
_PADDLE = re.compile(r"^\s*Paddle compiled with cuda: ")
_ROW = re.compile(r"^([A-Za-z][\w ]{0,40}): (.*?)\s*$")
_LISTED = re.compile(r"'GPU (\d{1,3}): ([^'(]{1,120}?)\s*(\(UUID: [^']*\))?'")
_RULER = re.compile(r"^-{8,}")
_HEADING = re.compile(r"^\s*-{3,}\s*Environment Information\s*-{3,}\s*$")  # the ruler show_env_info prints above it
_CUT_NAME = (
    "PaddleSeg keeps the first four words of each `nvidia-smi -L` line: a name of two words without a model number "
    "({!r}) is cut there"
)


@outside("paddle-env")
def starts_paddle(lines: list[str], i: int, current: Section | None) -> bool:
    """The summary's ``platform:`` line with ``Paddle compiled with cuda:`` at most three lines under it, or its
    ``---Environment Information---`` ruler right over that line (the summary's own heading, not an unread line)."""
    if len(lines[i]) < _LONGEST and _HEADING.match(lines[i]):
        i += 1
    return _platform_line(lines, i)


def _platform_line(lines: list[str], i: int) -> bool:
    if i >= len(lines) or len(lines[i]) >= _LONGEST or not _PLATFORM.match(lines[i]):
        return False
    return any(_PADDLE.match(x) for x in lines[i + 1 : i + 4])


def parse_paddle_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs, Python's version and CUDA_VISIBLE_DEVICES of PaddleSeg's summary."""
    rig = Rig()
    sw = rig.software
    rows = 0
    for s, lineno, cut in stripped_rows(text, first_line):
        if rows and _RULER.match(s):
            break  # the summary's closing ruler: the config that follows is not the machine's
        m = _ROW.match(s) if len(s) < _LONGEST and not cut else None
        if m is None:
            if rows and s and not cut:
                break
            continue
        rows += 1
        key, value, where = m.group(1), m.group(2), f"{source}:{lineno}"
        if key == "Python" and re.match(r"\d+\.\d+", value):
            sw.python_version = value.split()[0]
            rig.origins["software.python_version"] = where
        elif key == "CUDA_VISIBLE_DEVICES" and value != "None":
            sw.env[key] = value
        elif key == "GPU":
            _gpus(rig, value, where)
    return _unprinted(rig, rows, WHAT_PADDLE, f"{WHAT_PADDLE} without a 'key: value' line", (source, first_line))


def _gpus(rig: Rig, value: str, where: str) -> None:
    """The ``GPU: ['GPU 0: NAME', ...]`` list: one GPU per item, a name cut at four words not read."""
    for m in _LISTED.finditer(value):
        index, name = int(m.group(1)), m.group(2).strip()
        if any(g.index == index for g in rig.gpus):
            continue
        gpu = Gpu(index=index, name=name)
        if m.group(3) is None and len(name.split(" ")) == 2 and not re.search(r"\d", name):
            gpu.name = None
            gpu.unavailable["name"] = _CUT_NAME.format(name)
        rig.gpus.append(gpu)
        rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = where


def _unprinted(rig: Rig, rows: int, what: str, none: str, at: tuple[str, int]) -> Rig:
    """The report read: refused when no row was (``none`` says why), else what neither report prints, null."""
    if not rows:
        raise ImportParseError(at[0], at[1], none)
    for g in rig.gpus:
        g.unavailable["bus_id"] = f"{what} does not print the bus id"
        g.unavailable["memory_total_bytes"] = f"{what} does not print the memory"
    rig.software.unavailable["driver_version"] = f"{what} does not print the driver"
    return rig
