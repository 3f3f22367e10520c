"""``dcgmi dmon -e FIELD,...``: DCGM's field monitor, one row per entity per sample under a ``#Entity`` header.

dcgmi dmon (DCGM's dcgmi, "dmon"; ``dcgmi dmon -l`` lists each field's long name, short name and id) prints a
header ``#Entity  <short names>`` and a line ``ID`` (DCGM 4: ``ID`` and each field's unit), then rows
``GPU 0  <values>`` (``GPU-I``, ``GPU-CI`` for MIG instances; ``N/A`` where a value is not available). Fields read,
by their short names: ``XIDER`` (field 230, xid_errors: the last Xid the GPU raised, 0 for none), ``TMPTR`` (150, GPU
temperature, C), ``POWER`` (155, power draw, W), ``FBTTL`` and ``FBUSD`` (250, 252: framebuffer total and used,
MiB).

Read: the GPUs by index, with the last sample's values; an Xid a GPU last raised (XIDER not 0) is an Xid event of
that GPU, with no bus id and no time (dmon prints neither).

``dcgmi dmon -l`` alone (its ``Long Name  Short Name  Field Id`` header between underscore rules, then rows such as
``driver_version  DRVER  1``) is DCGM's catalogue of what it can monitor: it holds no value of any GPU, and says
nothing about the machine; it is read as such (a note), its names never taken for values.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, KernelEvent, Rig
from gpuadvisor.importers.beyond import kernel_rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "dcgmi dmon"
_HEADER = re.compile(r"^#\s*Entity((?:\s+[A-Z][A-Z0-9#_]{1,9})+)\s*$")
_ROW = re.compile(r"^\s*(GPU|GPU-I|GPU-CI|Switch|Link|CPU|Core)\s+(\d{1,4})((?:\s+\S{1,24})*)\s*$")
_LONGEST = 1000
_MIB = 2**20
NOT_SHOWN = "dcgmi dmon shows only the fields asked for (-e)"


def _header(line: str) -> list[str] | None:
    s = line.strip()
    m = _HEADER.match(s) if len(s) < _LONGEST else None
    return m.group(1).split() if m else None


_CATALOGUE = re.compile(r"^\s*Long Name\s+Short Name\s+Field Id\s*$")
_FIELD = re.compile(r"^\s*[a-z][a-z0-9_]{1,60}\s+[A-Z][A-Z0-9#_]{2,5}(?:\s+\d{1,5})?\s*$")  # the last may be cut


@outside("dcgmi-dmon")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``#Entity  XIDER ...`` over its ``ID`` line or a ``GPU 0`` row; or ``dcgmi dmon -l``'s catalogue header."""
    if _CATALOGUE.match(lines[i]) and len(lines[i]) < _LONGEST:
        return any(_FIELD.match(x) for x in lines[i + 1 : i + 4])
    if _header(lines[i]) is None:
        return False
    below = next((x.strip() for x in lines[i + 1 : i + 3] if x.strip()), "")
    return below.split()[:1] in (["ID"], ["Id"]) or bool(_ROW.match(below))  # "ID", or DCGM 4's "ID  W  C ..."


def _number(cell: str | None) -> float | None:
    try:
        return float(cell) if cell is not None else None
    except ValueError:
        return None  # N/A, or a value dcgmi could not read


def parse_dcgmi_dmon(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs dmon samples (last sample's temperature, power, memory), and each GPU's last Xid as an event."""
    rig = Rig()
    fields: list[str] = []
    rows: dict[int, tuple[dict[str, str], int]] = {}
    xids: dict[tuple[int, int], int] = {}
    lines = clean_lines(text)
    if any(_CATALOGUE.match(x) for x in lines[:3]):
        return _catalogue(lines, source, first_line)
    for k, line in enumerate(lines):
        lineno = first_line + k
        if (head := _header(line)) is not None:
            fields = head
            continue
        m = _ROW.match(line) if fields and len(line) < _LONGEST else None
        if m is None or m.group(1) != "GPU":
            continue  # MIG instances, switches, links: not GPUs of their own
        row = dict(zip(fields, m.group(3).split(), strict=False))
        idx = int(m.group(2))
        rows[idx] = (row, lineno)
        code = _number(row.get("XIDER"))
        if code:
            xids.setdefault((idx, int(code)), lineno)
    if not rows:
        raise ImportParseError(source, first_line, f"{WHAT}: its header but no GPU row")
    for idx in sorted(rows):
        row, lineno = rows[idx]
        g = Gpu(index=idx)
        g.temperature_c = _number(row.get("TMPTR"))
        g.power_draw_w = _number(row.get("POWER"))
        total, used = _number(row.get("FBTTL")), _number(row.get("FBUSD"))
        g.memory_total_bytes = int(total * _MIB) if total is not None else None
        g.memory_used_bytes = int(used * _MIB) if used is not None else None
        for f in ("name", "bus_id", "uuid", "power_limit_w", "memory_total_bytes"):
            if getattr(g, f) is None:
                g.unavailable[f] = NOT_SHOWN
        rig.gpus.append(g)
        rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{lineno}"
    if xids:
        events = [
            KernelEvent(kind="xid", code=code, gpu_index=idx, text=f"{WHAT}: XIDER (the last Xid) {code}", line=n)
            for (idx, code), n in sorted(xids.items())
        ]
        rig.kernel = kernel_rig(events, len(lines), source, first_line, None).kernel
        rig.origins["kernel.events"] = f"{source}:{first_line}"
    return rig


def _catalogue(lines: list[str], source: str, first_line: int) -> Rig:
    """``dcgmi dmon -l``: a note of how many fields it lists; no fact (a field's name is not its value)."""
    rig = Rig()
    n = sum(1 for x in lines if _FIELD.match(x))
    rig.problems.append(
        f"{source}: line {first_line}: dcgmi dmon -l: DCGM's catalogue of {n} field(s) it can monitor (long name, "
        "short name, id), no value of any GPU: nothing about this machine read from it (dcgmi dmon -e ID,... samples "
        "them)"
    )
    return rig
