"""cuda_memtest's log (https://github.com/ComputationalRadiationPhysics/cuda_memtest), a GPU memory tester.

Every line its threads print (cuda_memtest.h's PRINTF/FPRINTF) starts ``[MM/DD/YYYY HH:MM:SS][HOST][GPU]:`` (with
``[T C]`` after the GPU with --monitor_temp): ``Running cuda memtest, version 1.2.3``, ``NVRM version: NVIDIA UNIX
... Kernel Module  570.124.06 ...`` (the driver), ``num_gpus=1``, ``Device name=NAME, global memory size=BYTES,
serial=...`` (cudaGetDeviceProperties' name and totalGlobalMem), ``major=6, minor=1``, ``Attached to device 0
successfully.``, ``Allocated 4222 MB`` (the memory under test), ``WARNING: driver reported at least N bytes are
free but largest possible allocation is M bytes.``, ``Test0 [Walking 1 bit]`` / ``Test0 finished in 1.4 seconds``,
and for a fault ``ERROR: (TEST) N errors found in block B`` (tests.cpp). Read: the driver, each GPU's name, memory
and compute capability, and (kept in the import's notes) the memory under test, the tests finished and the errors
reported.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section

WHAT = "cuda_memtest"
_PREFIX = re.compile(r"^\[\d\d/\d\d/\d{4} \d\d:\d\d:\d\d\]\[[^\]]*\]\[(\d+)\](?:\[-?\d+ C\])?:(.*)$")
_OWN = re.compile(r"^(?:Running cuda memtest|NVRM version:|num_gpus=|Device name=|Attached to device|Test\d+ )")
# the messages read (cuda_memtest.cpp; tests.cpp's "ERROR: (TEST) N errors found in block B" for a fault)
_MSG = {
    name: re.compile(pattern)
    for name, pattern in (
        ("driver", r"^NVRM version: .*?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+){1,3})(?:\s|$)"),
        ("device", r"^Device name=(.*?), global memory size=(\d+)(?:,|$)"),
        ("cc", r"^major=(\d+), minor=(\d+)\s*$"),
        ("errors", r"^ERROR: \((.*?)\) (\d+) errors found in block (\d+)"),
        ("finished", r"^(Test\d+) finished in "),
        ("allocated", r"^Allocated (\d+) MB"),
    )
}


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``[date time][host][gpu]:`` line of cuda_memtest's own (its version, the driver, a device, a test), not
    inside its log already."""
    m = _PREFIX.match(lines[i].strip())
    return (current is None or current.kind != "cuda-memtest") and m is not None and bool(_OWN.match(m.group(2)))


def parse_cuda_memtest(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The driver, the GPUs tested (name, memory) and what the tests reported."""
    rig = Rig()
    gpus: dict[int, Gpu] = {}
    errors: dict[int, int] = {}
    done: dict[int, list[str]] = {}
    allocated: dict[int, tuple[int, int]] = {}  # GPU -> (MB under test, line)
    for s, lineno, cut in stripped_rows(text, first_line):
        m = _PREFIX.match(s)
        if m is None or cut:
            continue  # not its line, or the line the paste cuts
        idx, msg, where = int(m.group(1)), m.group(2).strip(), f"{source}:{lineno}"
        if (d := _MSG["driver"].match(msg)) and rig.software.driver_version is None:
            rig.software.driver_version = d.group(1)
            rig.origins["software.driver_version"] = where
        elif (d := _MSG["device"].match(msg)) and idx not in gpus:
            gpus[idx] = Gpu(index=idx, name=d.group(1).strip() or None, memory_total_bytes=int(d.group(2)))
            rig.origins[f"gpus[{len(gpus) - 1}]"] = where
        elif (d := _MSG["cc"].match(msg)) and idx in gpus:
            gpus[idx].compute_capability = f"{d.group(1)}.{d.group(2)}"
        elif d := _MSG["errors"].match(msg):
            errors[idx] = errors.get(idx, 0) + int(d.group(2))
        elif d := _MSG["finished"].match(msg):
            done.setdefault(idx, []).append(d.group(1))
        elif d := _MSG["allocated"].match(msg):
            allocated[idx] = (int(d.group(1)), lineno)
    if not gpus and rig.software.driver_version is None:
        raise ImportParseError(source, first_line, f"{WHAT} log without its 'Device name=' or 'NVRM version:' line")
    for g in gpus.values():
        g.unavailable["bus_id"] = f"{WHAT} does not print the bus id"
        g.unavailable["uuid"] = f"{WHAT} does not print the UUID"
        tests = done.get(g.index, [])
        said = f"{WHAT} on GPU {g.index}: {', '.join(tests) or 'no test'} finished"
        rig.problems.append(f"{source}: {said}; {errors.get(g.index, 0)} memory errors reported")
        mb, at = allocated.get(g.index, (0, 0))
        total = (g.memory_total_bytes or 0) // 2**20
        if mb and mb < total * 0.9:  # the rest held by other processes (its WARNING line says so)
            rig.problems.append(
                f"{source}: line {at}: {WHAT} tests {mb} MB of GPU {g.index}'s {total} MiB: the rest of the memory "
                "is not tested"
            )
    rig.gpus = list(gpus.values())
    return rig
