"""detectron2's environment table (``python -m detectron2.utils.collect_env``), which its bug reports ask for.

detectron2/utils/collect_env.py prints a two-column table (``tabulate``, ``-----  -----`` rulers above and below):
``sys.platform  linux``, ``Python  3.9.16 (main, ...)``, ``numpy``, ``detectron2  0.6 @/path``, ``Compiler``,
``CUDA compiler``, ``PyTorch  1.13.1+cu116 @/path``, ``GPU available  Yes`` (``CUDA available  True`` in early
versions), one row per group of identical GPUs, ``GPU 0,1,2,3  Tesla V100-SXM2-16GB (arch=7.0)`` (the CUDA numbers
of the GPUs of that name; ``(arch=M.m)``, their compute capability, from 0.2 on), ``Driver version  525.85.12``
(from ``nvidia-smi``; absent in early versions), ``CUDA_HOME``, then torchvision, fvcore, cv2 ...; then torch's
``PyTorch built with:`` list.

Read: each GPU (its CUDA number, name, compute capability), the driver version, Python's and torch's versions (and
the CUDA version torch was built for, from its ``+cuXYZ`` tag). The row the paste is cut in is not read.
"""

from __future__ import annotations

import re

from gpuadvisor.catalog.cuda_drivers import SOURCE, cuda_for_driver
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.env_reports import set_torch
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT = "detectron2 collect_env"
_LONGEST = 600  # no row of the table is longer; a longer one is not read (the patterns stay linear)
_GAP = r"(?: {2,}|\t)[ \t]*"  # the columns' gap: two spaces or more (a tab where a terminal copied it as one)
_RULER = re.compile(r"^-{4,}" + _GAP + r"-{4,}\s*$")
_PLATFORM = re.compile(r"^sys\.platform" + _GAP + r"\S")
_ROW = re.compile(r"^(\S+(?: \S+)*)" + _GAP + r"(\S.*?)\s*$")  # key (single spaces inside), the gap, value
_GPUS = re.compile(r"^GPU (\d+(?:,\d+)*)$")
_ARCH = re.compile(r"^(.*?)\s*\(arch=(\d+\.\d+)\)$")
_DRIVER = re.compile(r"^\d{3}\.\d+(?:\.\d+)?$")


@outside("detectron2-env")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """The table's ``sys.platform  linux`` row, or the ruler right above it."""
    s = lines[i].strip()
    if len(s) >= _LONGEST:
        return False
    if _RULER.match(s):
        return i + 1 < len(lines) and _PLATFORM.match(lines[i + 1].strip()) is not None
    return _PLATFORM.match(s) is not None and not (i > 0 and _RULER.match(lines[i - 1].strip()))


def parse_detectron2_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs, driver, Python and torch of detectron2's table."""
    rig = Rig()
    rows = 0
    for s, lineno, cut in stripped_rows(text, first_line):
        if s == "PyTorch built with:":  # torch's build list: not the table
            break
        if len(s) >= _LONGEST or cut:
            continue
        m = _ROW.match(s)
        if m is None or _RULER.match(s):
            continue
        rows += 1
        _row(rig, m.group(1), m.group(2), f"{source}:{lineno}")
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT} without a 'key  value' row")
    rig.gpus.sort(key=lambda g: g.index)
    rig.origins = {
        **{k: v for k, v in rig.origins.items() if not k.startswith("gpu#")},
        **{f"gpus[{p}]": rig.origins[f"gpu#{g.index}"] for p, g in enumerate(rig.gpus)},
    }
    for g in rig.gpus:
        g.unavailable["bus_id"] = f"{WHAT} does not print the bus id"
    sw = rig.software
    if sw.driver_version is None:
        sw.unavailable["driver_version"] = f"{WHAT} printed no 'Driver version' row"
    elif (cuda := cuda_for_driver(sw.driver_version)) is not None:
        sw.cuda_driver_version = cuda  # the table does not print it: the driver's version tells it
        rig.origins["software.cuda_driver_version"] = f"catalog: driver {sw.driver_version}, {SOURCE}"
    return rig


def _row(rig: Rig, key: str, value: str, where: str) -> None:
    """One ``key  value`` row."""
    sw = rig.software
    if m := _GPUS.match(key):
        a = _ARCH.match(value)
        name, cc = (a.group(1), a.group(2)) if a else (value, None)
        for idx in (int(x) for x in m.group(1).split(",")):
            if all(g.index != idx for g in rig.gpus):
                rig.gpus.append(Gpu(index=idx, name=name or None, compute_capability=cc))
                rig.origins[f"gpu#{idx}"] = where
    elif key == "Driver version" and _DRIVER.match(value):
        sw.driver_version = value
        rig.origins["software.driver_version"] = where
    elif key == "Python":
        sw.python_version = value.split()[0]
        rig.origins["software.python_version"] = where
    elif key == "PyTorch":  # "1.9.0+cu111", "1.13.1+cu116 @/path": its +cuXYZ tag names torch's CUDA
        set_torch(rig, value.split()[0], where, WHAT)
