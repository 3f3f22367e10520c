"""``nvidia-smi dmon``: one row per GPU per sample under two ``#`` header lines, the column names and their units.

nvidia-smi's documentation (``nvidia-smi dmon -h``, the nvidia-smi(1) manual page, "Device Monitoring") names the
columns by the ``-s`` metric groups: ``p`` power and temperature (``pwr`` W; ``temp`` C in older drivers, ``gtemp``
and ``mtemp`` C, GPU and memory, in newer ones), ``u`` utilization (``sm``, ``mem``, ``enc``, ``dec``, later ``jpg``,
``ofa`` %), ``c`` clocks (``mclk``, ``pclk`` MHz), ``v`` violations (``pviol`` %, ``tviol`` bool), ``m`` memory
(``fb``, ``bar1``, later ``ccpm`` MB), ``e`` ECC and PCIe replay errors (``sbecc``, ``dbecc``, ``pci``), ``t`` PCIe
throughput (``rxpci``, ``txpci`` MB/s); ``-o D``/``-o T`` put ``Date``/``Time`` first. The first column, ``gpu``
(unit ``Idx``), is nvidia-smi's GPU index. A ``-`` cell is a value the GPU does not report.

Read: the GPUs by index, each one's power draw, GPU temperature and framebuffer memory used (its last sample). Not
shown by dmon: names, bus ids, power caps, memory totals.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside
from gpuadvisor.importers.values import mem_bytes

WHAT = "nvidia-smi dmon"
# "# gpu   pwr  temp ..." (a markdown paste may escape the '#': "\# gpu"); -o DT: "#Date  Time  gpu ..."
_HEADER = re.compile(r"^\\?#\s*(?:Date\s+)?(?:Time\s+)?gpu\s+[a-z]+(?:\s+[a-z0-9]+)*\s*$")
_UNITS = re.compile(r"^\\?#\s*(?:YYYYMMDD\s+)?(?:HH:MM:SS\s+)?Idx(?:\s+\S+)*\s*$")
_CELL = re.compile(r"^(?:-|N/A|\d+(?:\.\d+)?|\d{8}|\d\d:\d\d:\d\d)$")
_LONGEST = 400  # a dmon line is never longer; longer lines are not read (the patterns stay linear)
NOT_SHOWN = "nvidia-smi dmon does not print it"


def _header(line: str) -> list[str] | None:
    s = line.strip()
    if len(s) > _LONGEST or not _HEADER.match(s):
        return None
    return s.lstrip("\\#").split()


# the units line alone (its names line not shown): the groups print in a fixed order, so the first W is pwr, the
# first C the GPU's temperature (gtemp, or temp before mtemp existed) and the first MB the framebuffer (fb)
_BY_UNIT = {"Idx": ["gpu"], "W": ["pwr"], "C": ["gtemp", "mtemp"], "MB": ["fb", "bar1", "ccpm"]}


def _from_units(line: str) -> list[str] | None:
    s = line.strip()
    if len(s) > _LONGEST or not _UNITS.match(s):
        return None
    seen: dict[str, int] = {}
    cols = []
    for unit in s.lstrip("\\#").split():
        k = seen[unit] = seen.get(unit, -1) + 1
        names = _BY_UNIT.get(unit, [])
        cols.append(names[k] if k < len(names) else f"{unit}#{k}")
    return cols


@outside("smi-dmon")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """dmon's ``# gpu  pwr  temp ...`` header over its ``# Idx  W  C ...`` units line or a GPU row, or (its first
    line not shown) that units line over a GPU row."""
    cols = _header(lines[i]) or _from_units(lines[i])
    if cols is None:
        return False
    below = next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
    return (cols[0] != "gpu" and bool(_UNITS.match(below))) or _row(below, cols) is not None


def _row(line: str, cols: list[str]) -> dict[str, str] | None:
    """A GPU row's cells by column name (a row cut short keeps the cells shown), or None if it is not one."""
    cells = line.split()
    if len(line) > _LONGEST or not cells or len(cells) > len(cols) or not all(_CELL.match(c) for c in cells):
        return None
    row = dict(zip(cols, cells, strict=False))
    return row if "gpu" in row and row["gpu"].isdigit() else None


def _number(row: dict[str, str], *names: str) -> float | None:
    for n in names:
        cell = row.get(n)
        if cell is not None and cell not in ("-", "N/A"):
            return float(cell)
    return None


def parse_smi_dmon(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs dmon samples, with the last sample's power draw, temperature and framebuffer used."""
    rig = Rig()
    cols: list[str] | None = None
    rows: dict[int, tuple[dict[str, str], int]] = {}
    for k, line in enumerate(clean_lines(text)):
        lineno = first_line + k
        if (head := _header(line)) is not None:
            cols = head
        elif cols is None and (head := _from_units(line)) is not None:
            cols = head  # the names line not shown: the columns from their units
        elif cols is not None and (row := _row(line, cols)) is not None:
            rows[int(row["gpu"])] = (row, lineno)
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT}: its header but no GPU row")
    for idx in sorted(rows):
        row, lineno = rows[idx]
        g = Gpu(index=idx)
        g.power_draw_w = _number(row, "pwr")
        g.temperature_c = _number(row, "gtemp", "temp")
        fb = row.get("fb")
        g.memory_used_bytes = mem_bytes(f"{fb} MiB") if fb and fb.isdigit() else None  # dmon's MB: MiB
        for f in ("name", "bus_id", "uuid", "power_limit_w", "memory_total_bytes"):
            g.unavailable[f] = NOT_SHOWN
        for f, shown in (("power_draw_w", "pwr"), ("temperature_c", "temp"), ("memory_used_bytes", "fb")):
            if getattr(g, f) is None:
                on = any(c.endswith(shown) for c in row)
                g.unavailable[f] = "nvidia-smi dmon printed '-'" if on else f"{WHAT}: no {shown} column shown"
        rig.gpus.append(g)
        rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{lineno}"
    return rig
