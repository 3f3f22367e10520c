"""NVIDIA's ``nvbandwidth`` output (https://github.com/NVIDIA/nvbandwidth) -> imported Measurements.

nvbandwidth prints a banner (``nvbandwidth Version: v0.8``, the CUDA and driver versions, ``Device N: NAME
(bus)``), then per testcase ``Running NAME.``, a title such as ``memcpy CE CPU(row) -> GPU(column) bandwidth
(GB/s)``, a header of column numbers and the rows, and ``SUM NAME X``. Read: host to device and device to host
(each GPU's copy over its link: ``h2d``/``d2h``), and device to device reads and writes (each pair:
``p2p_unidir``; bidirectional: ``p2p_bidir``), copy engine (CE) and SM copies alike, each named in its method.
The others (all-to-host, host-to-all, latency, local copies) are listed as not read. A cell ``N/A`` (the
diagonal) or one the paste ends inside is not a figure. ``-p multinode`` (under MPI) lists ``Process N (HOST): device
N: NAME (bus)`` instead of ``Device N:``: the process's rank numbers the GPU, as its matrices do.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Measurement, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID_NO_FUNCTION
from gpuadvisor.importers.listed import listed_gpu
from gpuadvisor.importers.numbers import quantity
from gpuadvisor.importers.rows import FieldRow, read_row
from gpuadvisor.importers.section import Section, clean_lines, last_line_shown
from gpuadvisor.importers.values import cuda_version, normalize_bus_id

_RUNNING = re.compile(r"^(?:>\s*)?Running (\w+)\.\s*$")  # "> ": a quote marker some lines of a paste keep
_TITLE = re.compile(r"^memcpy (CE|SM) (CPU|GPU)\(row\) (->|<-|<->) (CPU|GPU)\(column\) bandwidth \(GB/s\)")
_DEVICE = re.compile(rf"^Device (\d+): (.+?)(?:\s+\(({PCI_BUS_ID_NO_FUNCTION})\))?\s*$")
# nvbandwidth -p multinode (built with MULTINODE, run under MPI): one line per process, "Process 0 (HOST): device 0:
# NVIDIA H200 (00000000:8f:00)"; the process's rank numbers the GPU in its matrices (each host numbers its devices)
_PROCESS = re.compile(rf"^Process (\d+) \(([^)]*)\): device (\d+): (.+?)(?:\s+\(({PCI_BUS_ID_NO_FUNCTION})\))?\s*$")
_VERSION = re.compile(r"^nvbandwidth Version:\s*(\S+)")
# the banner's software rows: the driver, and the CUDA version it supports as cudaDriverGetVersion gives it
_SOFTWARE: tuple[FieldRow, ...] = (
    (re.compile(r"^Driver Version:\s*(\d[\w.-]*)\s*$"), "driver_version", lambda m: m[1]),
    (re.compile(r"^CUDA Driver Version:\s*(\d{4,6})\s*$"), "cuda_driver_version", lambda m: cuda_version(int(m[1]))),
)


def _kind(test: str, title: re.Match[str]) -> str | None:
    """The measurement kind of a testcase, from its name and its matrix title; None for those not read."""
    if test.startswith(("all_to_", "host_to_all", "device_local")) or "latency" in test:
        return None
    src, arrow, dst = title.group(2), title.group(3), title.group(4)
    if src == "GPU" and dst == "GPU":
        return "p2p_bidir" if arrow == "<->" else "p2p_unidir"
    if arrow == "<->":
        return None  # a host link under traffic both ways: no kind of its own here
    return "h2d" if (arrow == "->") == (src == "CPU") else "d2h"


def parse_nvbandwidth(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from nvbandwidth's text output (see the module docstring)."""
    rig = Rig()
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r")) and bool(lines) and bool(lines[-1].strip())
    last_shown = last_line_shown(lines)  # the paste's last line
    version, test = "", ""
    devices: dict[int, Gpu] = {}
    skipped: list[str] = []
    k = 0
    while k < len(lines):
        s, lineno = lines[k].strip(), first_line + k
        k += 1
        if m := _VERSION.match(s):
            version = m.group(1)
        elif field := read_row(rig.software, s, _SOFTWARE):
            rig.origins[f"software.{field}"] = f"{source}:{lineno}"
        elif (m := _DEVICE.match(s) or _PROCESS.match(s)) and int(m.group(1)) not in devices:
            # the banner always goes on after its device lines: ending the paste, the line was cut there
            name, bus = m.group(2, 3) if m.re is _DEVICE else m.group(4, 5)
            g = listed_gpu(int(m.group(1)), name.strip() or None, list(devices.values()), lineno, k - 1 == last_shown)
            g.bus_id = normalize_bus_id(bus + ".0") if bus else None
            if g.bus_id is None:
                g.unavailable["bus_id"] = "nvbandwidth printed no bus id (versions before 0.6)"
            devices[g.index] = g
            rig.origins[f"gpu{g.index}"] = f"{source}:{lineno}"
        elif m := _RUNNING.match(s):
            test = m.group(1)
        elif title := _TITLE.match(s):  # its "Running NAME." may be left out of the paste: the title says enough
            test = test or "testcase not shown"
            kind = _kind(test, title)
            if kind is None:
                skipped.append(test)
                continue
            k = _matrix(lines, k, first_line, source, rig, test, kind, title.group(1), cut)
    if not rig.measurements and not devices:
        raise ImportParseError(source, first_line, "nvbandwidth output without a device line or a result matrix")
    for idx in sorted({i for m in rig.measurements for i in m.gpus} - set(devices)):
        g = devices[idx] = Gpu(index=idx)  # its Device line not pasted: numbered as the matrix numbers it
        g.unavailable["name"] = g.unavailable["bus_id"] = "not shown (nvbandwidth's 'Device N:' line not pasted)"
        rig.origins[f"gpu{idx}"] = next(v for key, v in rig.origins.items() if key.startswith("measurements"))
    rig.gpus = [devices[i] for i in sorted(devices)]
    rig.origins = {
        **{f"gpus[{p}]": rig.origins[f"gpu{g.index}"] for p, g in enumerate(rig.gpus)},
        **{key: v for key, v in rig.origins.items() if not key.startswith("gpu")},
    }
    for meas in rig.measurements:
        meas.method = f"nvbandwidth {version} {meas.method}".replace("  ", " ")
    if skipped:
        names = ", ".join(dict.fromkeys(skipped))
        rig.problems.append(f"{source}: nvbandwidth testcases not read (no kind of measurement here): {names}")
    return rig


def _matrix(
    lines: list[str], k: int, first_line: int, source: str, rig: Rig, test: str, kind: str, engine: str, cut: bool
) -> int:
    """Read the matrix under a title (its header at line ``k``); returns the index of the line after it."""
    header = lines[k].split() if k < len(lines) else []
    if not header or not all(x.isdigit() for x in header):
        return k
    columns = [int(x) for x in header]
    k += 1
    while k < len(lines):
        tokens = lines[k].split()
        if not tokens or not tokens[0].isdigit():
            break
        last = cut and k == len(lines) - 1  # the paste ends inside this row: its last cell may be cut short
        row = int(tokens[0])
        cells = tokens[1:-1] if last else tokens[1:]
        for col, cell in zip(columns, cells, strict=False):
            gbps = quantity(cell)
            if gbps is None or (kind.startswith("p2p") and row == col):
                continue  # N/A (the diagonal), or not a figure
            gpus = [row, col] if kind.startswith("p2p") else [col]
            m = Measurement(kind=kind, gpus=gpus, method=f"{test} ({engine} copy)", value_gbps=round(gbps, 3))
            m.backend, m.provenance, m.world_size = "cuda", "imported", 1  # one process's copies, as the samples
            if kind.startswith("p2p"):
                m.p2p_enabled = True
                m.memory = None
            rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{first_line + k}"
            rig.measurements.append(m)
        k += 1
    return k


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``nvbandwidth Version: ...`` or its ``Built from Git version:`` line, or (its banner not pasted) ``Running
    NAME.`` over a ``memcpy CE|SM`` title, or that title alone."""
    s = lines[i].strip()
    if _VERSION.match(s):
        return True
    if s.startswith("Built from Git version:"):  # the banner's second line, or its first when the first is not shown
        return not any(_VERSION.match(x.strip()) for x in lines[max(0, i - 2) : i])
    if current is not None and current.kind == "nvbandwidth":
        return False
    if _TITLE.match(s):
        return not any(_RUNNING.match(x.strip()) for x in lines[max(0, i - 2) : i])  # else the Running line starts it
    below = next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
    return bool(_RUNNING.match(s)) and bool(_TITLE.match(below))
