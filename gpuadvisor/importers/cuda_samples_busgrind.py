"""CUDA samples ``busGrind``'s host/device bandwidth matrices -> per-GPU ``h2d`` and ``d2h`` Measurements.

busGrind (cuda-samples, Samples/1_Utilities) prints, per test, a ``Test Description:`` and a matrix titled
``Host/Device Bandwidth Matrix (GB/s), memory=Pinned`` (or ``Pageable``): a ``Dir\\D`` header of CUDA device
numbers, then rows ``D2H``, ``H2D`` and ``BiDir`` of GB/s, each device measured alone. The ``Concurrent ...`` matrix
measures all devices at once (its ``Total`` column the sum): it is not a per-link figure and is left out. The
bidirectional figure has no copy kind of its own in the facts: it is kept as a note on the GPU's two copies.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Measurement, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "CUDA samples busGrind"
_TITLE = re.compile(r"^\s*(Concurrent\s+)?Host/Device Bandwidth Matrix \(GB/s\),\s*memory=(\w+)")
_HEADER = re.compile(r"^\s*Dir\\D((?:\s+\d+)+)(?:\s+Total)?\s*$")
_ROW = re.compile(r"^\s*(D2H|H2D|BiDir)((?:\s+[0-9.]+)+)\s*$")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``Host/Device Bandwidth Matrix (GB/s), memory=...`` title with its ``Dir\\D`` header below."""
    inside = current is not None and current.kind == "busgrind"  # its concurrent matrix is the same output
    return not inside and bool(_TITLE.match(lines[i])) and any(_HEADER.match(x) for x in lines[i + 1 : i + 3])


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The devices of the single-device matrix and their pinned (or pageable) copies each way."""
    rig = Rig()
    memory: str | None = None
    reading = False  # inside a single-device matrix (not the concurrent one)
    start = first_line
    devices: list[int] = []
    figures: dict[tuple[str, int], float] = {}
    for k, line in enumerate(clean_lines(text)):
        title = _TITLE.match(line)
        if title:
            reading = not title.group(1)
            if reading:
                memory, start = title.group(2).lower(), first_line + k
            continue
        head = _HEADER.match(line)
        if head and reading:
            devices = [int(x) for x in head.group(1).split()]
            continue
        row = _ROW.match(line)
        if row and reading and devices:
            for dev, val in zip(devices, row.group(2).split(), strict=False):
                figures[(row.group(1), dev)] = float(val)
    if not figures or memory is None:
        raise ImportParseError(source, first_line, "busGrind output without its host/device matrix rows")
    for dev in devices:
        gpu = Gpu(index=dev)
        gpu.unavailable["name"] = "busGrind prints CUDA device numbers only"
        gpu.unavailable["bus_id"] = "busGrind does not print the bus id"
        rig.gpus.append(gpu)
        for label, kind in (("H2D", "h2d"), ("D2H", "d2h")):
            if (label, dev) not in figures:
                continue
            m = Measurement(
                kind=kind, backend="cuda", provenance="imported", world_size=1, gpus=[dev], memory=memory,
                method=f"{WHAT}: {label}, {memory} memory", value_gbps=figures[(label, dev)],
            )  # fmt: skip
            m.concurrent = False
            if ("BiDir", dev) in figures:
                m.notes.append(f"busGrind's bidirectional copy on this device: {figures[('BiDir', dev)]:g} GB/s")
            m.notes.append("CUDA device number (CUDA_DEVICE_ORDER); nvidia-smi's index may differ")
            rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{start}"
            rig.measurements.append(m)
    return rig
