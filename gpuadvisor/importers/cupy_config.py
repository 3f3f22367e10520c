"""CuPy's ``cupy.show_config()`` (``python -c "import cupy; cupy.show_config()"``), which CuPy's bug template asks for.

cupyx/_runtime.py (``_RuntimeInfo.__str__``) writes one ``Key<padding>: value`` line per record, the keys padded to
the longest plus two: ``OS``, ``Python Version``, ``CuPy Version``, ``CuPy Platform`` (``NVIDIA CUDA`` or ``AMD
ROCm``), ``NumPy Version``, ..., ``CUDA Root``, ``NVCC PATH``, ``CUDA Build Version``, ``CUDA Driver Version``
(``cudaDriverGetVersion``: 1000 x major + 10 x minor, ``13000`` is CUDA 13.0: the newest CUDA the driver supports),
``CUDA Runtime Version``, the libraries' versions (a library that failed to load shows its ``ImportError(...)``), then
per device ``Device 0 Name``, ``Device 0 Compute Capability`` (``80``: 8.0) and ``Device 0 PCI Bus ID`` (CuPy 9 and
later). Versions before 8 open with ``CuPy Version``.

Read: the driver's CUDA version, Python's version, and each device's CUDA number, name, compute capability and bus id.
Under ROCm (``CuPy Platform : AMD ROCm``; before CuPy 9, ``CUDA Root : /opt/rocm``) HIP's numbers stand under CUDA's
labels and the devices are AMD's: refused.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, outside, shown_lines
from gpuadvisor.importers.values import cuda_version, normalize_bus_id

WHAT = "cupy.show_config()"
KEYS = ("OS", "Python Version", "CuPy Version")  # its first lines (CuPy 8 and later, and before)
_ITEM = re.compile(r"^([A-Za-z][\w .()-]{0,40}?)\s*: (.*?)\s*$")
_DEVICE = re.compile(r"^Device (\d+) (Name|Compute Capability|PCI Bus ID)$")
_LONGEST = 400  # a line read is no longer (an ImportError's line may be: not read)


@outside("cupy-config")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``OS``, ``Python Version`` or ``CuPy Version`` (padded, ``:``) with a ``CuPy Version`` line within three."""
    m = _ITEM.match(lines[i].strip()) if len(lines[i]) < _LONGEST else None
    if m is None or m.group(1) not in KEYS:
        return False
    return any((n := _ITEM.match(x.strip())) and n.group(1) == "CuPy Version" for x in lines[i : i + 3])


def parse_cupy_config(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver's CUDA version, Python's, and the devices CuPy lists."""
    rig = Rig()
    lines, cut = shown_lines(text)
    items = [
        (m.group(1), m.group(2), f"{source}:{first_line + k}")
        for k, x in enumerate(lines)
        if k != cut and len(x) < _LONGEST and (m := _ITEM.match(x.strip()))
    ]
    if not any(key == "CuPy Version" for key, _, _ in items):
        raise ImportParseError(source, first_line, f"{WHAT} without its 'CuPy Version' line")
    if any(_rocm(key, value) for key, value, _ in items):
        raise ImportParseError(
            source, first_line, f"{WHAT} of CuPy's ROCm build: its driver and devices are AMD's, not NVIDIA's"
        )
    for key, value, where in items:
        if key == "CUDA Driver Version" and re.fullmatch(r"\d{4,6}", value):
            n = int(value)
            rig.software.cuda_driver_version = cuda_version(n)
            rig.origins["software.cuda_driver_version"] = f"{where} ({n}: 1000 x major + 10 x minor)"
        elif key == "Python Version" and re.fullmatch(r"\d+\.\d+(?:\.\d+)?", value):
            rig.software.python_version = value
            rig.origins["software.python_version"] = where
        elif d := _DEVICE.match(key):
            _device(rig, int(d.group(1)), d.group(2), value, where)
    return rig


def _rocm(key: str, value: str) -> bool:
    """A line only a ROCm build prints: its platform, ROCm's root as the CUDA root, hipcc, a device's gfx arch."""
    return (
        (key == "CuPy Platform" and "ROCm" in value)
        or (key == "CUDA Root" and "rocm" in value.lower())
        or key == "hipcc PATH"
        or key.endswith(" Arch")
    )


def _device(rig: Rig, index: int, key: str, value: str, where: str) -> None:
    """One ``Device N ...`` line: its GPU's name, compute capability (``80``: 8.0) or bus id."""
    g = next((x for x in rig.gpus if x.index == index), None)
    if g is None:
        g = Gpu(index=index)
        rig.gpus.append(g)
        rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = where
    if key == "Name" and value:
        g.name = value
    elif key == "Compute Capability" and re.fullmatch(r"\d{2,3}", value):
        g.compute_capability = f"{int(value) // 10}.{int(value) % 10}"
    elif key == "PCI Bus ID":
        g.bus_id = normalize_bus_id(value) or g.bus_id
