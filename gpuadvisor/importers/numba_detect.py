"""numba's ``cuda.detect()`` report (``python -c "from numba import cuda; cuda.detect()"``), which numba's and many
CUDA Python projects' bug reports ask for.

numba (numba/cuda/api.py, ``detect``) prints ``Found N CUDA devices``, then per device ``id N    NAME    [SUPPORTED]``
(the name ``%20s``, shown as ``b'NAME'`` by the numba versions that kept it as bytes; ``[SUPPORTED (DEPRECATED)]``
or ``[NOT SUPPORTED: CC < 3.5]``) over ``%40s: value`` lines: ``Compute Capability`` (``compute capability`` before
0.50), ``PCI Device ID`` and ``PCI Bus ID`` (decimal: bus 21 is 0x15; the domain is not printed), ``UUID`` (newer
releases), ``Watchdog`` (a kernel time-out: the GPU drives a display), ``Compute Mode`` (Windows: TCC or WDDM) and
``FP32/FP64 Performance Ratio``; then ``Summary:`` and ``N/M devices are supported``.

Read: each device's CUDA number, name, compute capability and UUID; the devices counted but not shown. The bus id
is not: numba prints neither the domain nor the function.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside
from gpuadvisor.importers.values import GPU_UUID

_FOUND = re.compile(r"^Found (\d+) CUDA devices?\s*$")
_DEVICE = re.compile(r"^id (\d+)\s(.*)\[((?:NOT )?SUPPORTED[^\]]*)\]\s*$")
_ATTR = re.compile(r"^([A-Za-z][\w /]*):(.*)$")
_LONGEST = 400  # no line of the report is longer; a longer one is not read (the patterns stay linear)
WHAT = "numba cuda.detect()"
NO_BUS = "numba cuda.detect() prints the PCI bus number alone (decimal), not the domain or function"


@outside("numba-detect")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Found N CUDA devices`` over an ``id 0`` line or ``Summary:``, or (pasted without it) an ``id 0 NAME
    [SUPPORTED]`` line."""
    s = lines[i].strip()
    if _FOUND.match(s):
        below = next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
        return below == "Summary:" or bool(_DEVICE.match(below))
    m = _DEVICE.match(s) if len(s) < _LONGEST else None
    return m is not None and m.group(1) == "0"


def parse_numba_detect(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The devices numba lists: CUDA number, name, compute capability, UUID."""
    rig = Rig()
    found: tuple[int, int] | None = None
    g: Gpu | None = None
    for s, lineno, cut in stripped_rows(text, first_line):
        if len(s) >= _LONGEST:
            continue
        if m := _FOUND.match(s):
            found = (int(m.group(1)), lineno)
        elif m := _DEVICE.match(s):
            g = Gpu(index=int(m.group(1)), name=_name(m.group(2)))
            g.unavailable["bus_id"] = NO_BUS
            rig.gpus.append(g)
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{lineno}"
            if m.group(3).startswith("NOT"):
                rig.problems.append(f"{source}: line {lineno}: numba does not support GPU {g.index} ({m.group(3)})")
        elif g is not None and not cut and (a := _ATTR.match(s)):
            key, value = a.group(1).lower(), a.group(2).strip()
            if key == "compute capability" and re.fullmatch(r"\d+\.\d+", value):
                g.compute_capability = value
            elif key == "uuid" and GPU_UUID.match(value):
                g.uuid = value
    if found is None and not rig.gpus:
        raise ImportParseError(source, first_line, f"{WHAT} without 'Found N CUDA devices' or an 'id N' line")
    shown = {x.index for x in rig.gpus}
    if found is not None and len(shown) < found[0]:
        missing = [i for i in range(found[0]) if i not in shown]
        for i in missing:
            rig.gpus.append(Gpu(index=i))
            rig.gpus[-1].unavailable["name"] = f"counted by {WHAT}, its lines not shown"
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{found[1]}"
        rig.problems.append(
            f"{source}: line {found[1]}: 'Found {found[0]} CUDA devices' but {len(shown)} shown: GPU(s) "
            f"{', '.join(map(str, missing))} counted, their facts not shown"
        )
    for x in rig.gpus:
        if x.uuid is None:
            x.unavailable.setdefault("uuid", f"not printed by this {WHAT}")
    return rig


def _name(cell: str) -> str | None:
    """The device's name as printed (``%20s``), the ``b'...'`` of a bytes name taken off."""
    name = cell.strip()
    if len(name) > 2 and name[0] == "b" and name[1] in "'\"" and name[-1] == name[1]:
        name = name[2:-1].strip()
    return name or None
