"""CUDA samples ``deviceQuery`` (Samples/1_Utilities/deviceQuery), the report many bug threads ask for.

deviceQuery.cpp prints ``./deviceQuery Starting...``, `` CUDA Device Query (Runtime API) version (CUDART static
linking)``, ``Detected N CUDA Capable device(s)`` (or ``There are no available device(s) that support CUDA``), then
per device ``Device N: "NAME"`` over ``%-47s`` rows: ``CUDA Driver Version / Runtime Version  13.0 / 12.8``
(``cudaDriverGetVersion``: the newest CUDA the driver supports), ``CUDA Capability Major/Minor version number:
9.0``, ``Total amount of global memory:  81079 MBytes (85017755648 bytes)``, the SM count and clocks, and (below the
texture and thread limits) ``Device PCI Domain ID / Bus ID / location ID:  0 / 27 / 0`` (decimal: bus 27 is 0x1b;
the location is the PCI device number, the function is not printed); then, with two GPUs or more, ``> Peer access
from NAME (GPU0) -> NAME (GPU1) : Yes`` lines (read as simpleP2P's), and the summary ``deviceQuery, CUDA Driver =
CUDART, CUDA Driver Version = 12.4, CUDA Runtime Version = 12.4, NumDevs = 2`` and ``Result = PASS``.

Read: each device's CUDA number, name, compute capability, memory, bus id; the driver's CUDA version. Devices
counted but not shown are noted, never added. Rows are matched by their text wherever it is on the line, so a
paste with the indentation lost or a translation after each row reads the same, and a row read whose value a narrow
window pushed to a line of its own is joined again.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, KernelEvent, KernelLog, Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.importers import error_codes
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import FieldRow, Row, read_row, stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT = "CUDA samples deviceQuery"
_LONGEST = 600  # no row of deviceQuery (with a translation after it) is longer; a longer one is not read
_START = re.compile(r"^(?:\S*deviceQuery Starting\.\.\.|CUDA Device Query \(Runtime API\))")
_DETECTED = re.compile(r"^Detected (\d+) CUDA Capable device\(s\)")
_NONE = re.compile(r"^There are no available device\(s\) that support CUDA")
_DEVICE = re.compile(r"^Device (\d+): [\"\u201c\u201d](.*?)[\"\u201c\u201d]")
_VERSIONS = re.compile(r"^CUDA Driver Version / Runtime Version\s+(\d+\.\d+)\s*/\s*(\d+\.\d+)")


def _bus_id(m: re.Match[str]) -> str:
    """The bus id of the PCI row's decimal domain, bus and device (the function is not printed: 0)."""
    domain, bus, device = (int(m.group(n)) for n in (1, 2, 3))
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


# the device's rows read, each one field of its Gpu
_ROWS: tuple[FieldRow, ...] = (
    (re.compile(r"^CUDA Capability Major/Minor version number:\s*(\d+\.\d+)"), "compute_capability", lambda m: m[1]),
    (
        re.compile(r"^Total amount of global memory:\s*\d+ MBytes \((\d+) bytes\)"),
        "memory_total_bytes",
        lambda m: int(m[1]),
    ),
    (re.compile(r"^Device PCI Domain ID / Bus ID / location ID:\s*(\d+)\s*/\s*(\d+)\s*/\s*(\d+)"), "bus_id", _bus_id),
)
# deviceQuery's failure (its checkCudaErrors of cudaGetDeviceCount): "cudaGetDeviceCount returned 35" over "-> CUDA
# driver version is insufficient for CUDA runtime version" (cudaGetErrorString's text), then "Result = FAIL"
_COUNT_FAILED = re.compile(r"^cudaGetDeviceCount returned (\d{1,4})\b")
_SUMMARY = re.compile(r"^deviceQuery, CUDA Driver = CUDART, CUDA Driver Version = (\d+\.\d+)")
NO_BUS = "deviceQuery's PCI line (below the thread limits) is not shown"
# the rows read, each a label and its value: a narrow window (a browser, a terminal, a PDF) may push the value, or its
# end, to a line of its own ("Total amount of global memory:  8119 MBytes (8513716224" over "bytes)")
_WRAPPABLE = (_VERSIONS, *(pattern for pattern, _, _ in _ROWS))


def unwrapped(rows: list[Row]) -> list[Row]:
    """The rows with each of deviceQuery's labelled rows that a narrow window wrapped joined again: a row that
    starts as a known label's but is not whole, and is whole with the next line after it; no other line is joined."""
    out: list[Row] = []
    k = 0
    while k < len(rows):
        row = rows[k]
        joined = f"{row.text} {rows[k + 1].text}" if k + 1 < len(rows) else ""
        if joined and any(p.match(joined) and not p.match(row.text) for p in _WRAPPABLE):
            out.append(Row(joined, row.lineno, rows[k + 1].cut))
            k += 2
            continue
        out.append(row)
        k += 1
    return out


@outside("devicequery")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``./deviceQuery Starting...``, `` CUDA Device Query (Runtime API)``, ``Detected N CUDA Capable device(s)``,
    or (pasted without them) ``Device 0: "NAME"`` over its ``CUDA Driver Version / Runtime Version`` row."""
    s = lines[i].strip()
    if len(s) >= _LONGEST:
        return False
    if _START.match(s) or _DETECTED.match(s):
        return True
    m = _DEVICE.match(s)
    below = [x.strip() for x in lines[i + 1 : i + 4] if x.strip()][:2]
    joined = " ".join(below)  # its value wrapped to a line of its own
    return (
        m is not None
        and m.group(1) == "0"
        and bool(below)
        and bool(_VERSIONS.match(below[0]) or _VERSIONS.match(joined))
    )


def parse_devicequery(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The devices deviceQuery describes: CUDA number, name, compute capability, memory, bus id; the driver's CUDA."""
    rig = Rig()
    detected: tuple[int, int] | None = None
    g: Gpu | None = None
    for s, lineno, cut in unwrapped(stripped_rows(text, first_line)):
        if len(s) >= _LONGEST or (cut and g is not None):
            continue  # a row cut where the paste ends is not read
        if m := _DETECTED.match(s):
            detected = (int(m.group(1)), lineno)
        elif _NONE.match(s):
            detected = (0, lineno)
        elif (m := _COUNT_FAILED.match(s)) and (ev := error_codes.event(s, lineno)) is not None:
            detected = (0, lineno)  # CUDA could not count the devices: none described
            _failed(rig, ev, source)
        elif m := _DEVICE.match(s):
            g = Gpu(index=int(m.group(1)), name=m.group(2).strip() or None)
            rig.gpus.append(g)
            rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{lineno}"
        elif m := _SUMMARY.match(s) or (_VERSIONS.match(s) if g is not None else None):
            if rig.software.cuda_driver_version is None:
                rig.software.cuda_driver_version = m.group(1)
                rig.origins["software.cuda_driver_version"] = f"{source}:{lineno}"
        elif g is not None:
            read_row(g, s, _ROWS)
    if detected is None and not rig.gpus:
        raise ImportParseError(source, first_line, f"{WHAT} without 'Detected N CUDA Capable device(s)' or 'Device 0:'")
    for x in rig.gpus:
        if x.bus_id is None:
            x.unavailable["bus_id"] = NO_BUS
        x.unavailable.setdefault("uuid", f"{WHAT} does not print the UUID")
    if detected is not None and detected[0] > len(rig.gpus):
        rig.problems.append(
            f"{source}: line {detected[1]}: 'Detected {detected[0]} CUDA Capable device(s)' but {len(rig.gpus)} "
            "described: the others are counted, their facts not shown"
        )
    return rig


def _failed(rig: Rig, ev: KernelEvent, source: str) -> None:
    """deviceQuery's failed cudaGetDeviceCount: the code it returned as error_codes' table's event (its rule judges
    it: an insufficient driver is the driver stack's), no device described."""
    rig.kernel = KernelLog(source=SERVICE_LOG, lines_read=1, events=[ev])
    rig.kernel.unavailable["uptime_s"] = "a pasted output does not say how long the host had been up"
    rig.origins["kernel.events"] = f"{source}:{ev.line}"
    rig.problems.append(
        f"{source}: line {ev.line}: deviceQuery: cudaGetDeviceCount failed (CUDA error {ev.code}): no device described"
    )
