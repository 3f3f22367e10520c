"""``nvidia-smi --query-gpu=FIELDS --format=csv`` (with or without ``noheader``/``nounits``) -> GPU facts.

The header names the fields (``index, name, memory.total [MiB], driver_version``: nvidia-smi's
``--help-query-gpu`` names, a unit in brackets); each row is one GPU in nvidia-smi's order. Fields read: index,
name, uuid, serial, pci.bus_id, memory.total/used, power.draw/limit, temperature.gpu, compute_cap,
persistence_mode, pcie.link.gen/width current and max, pstate, and the driver version. Other fields are kept
out; ``[N/A]``, ``[Not Supported]`` and hidden values are not shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpuadvisor.facts import ELIDED, Gpu, KernelEvent, Rig
from gpuadvisor.importers import values as v
from gpuadvisor.importers.beyond import kernel_rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside, outside_log


def _mib(value: str, unit: str) -> int | None:
    n = v.to_float(value.replace("MiB", "").strip())
    return None if n is None else int(n * (2**20 if unit in ("", "MiB") else 1))


def _gen(value: str, _unit: str) -> int | None:
    return v.to_int(value)


# field name -> (Gpu attribute, "pcie.x" for the link's, reader of (value, unit))
_FIELDS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "index": ("index", lambda x, _u: v.to_int(x)),
    "name": ("name", lambda x, _u: None if v.absent(x) else x.strip()),
    "uuid": ("uuid", lambda x, _u: None if v.absent(x) else x.strip()),
    "serial": ("serial", lambda x, _u: None if v.absent(x) else x.strip()),
    "pci.bus_id": ("bus_id", lambda x, _u: None if v.absent(x) else v.normalize_bus_id(x)),
    "memory.total": ("memory_total_bytes", _mib),
    "memory.used": ("memory_used_bytes", _mib),
    "power.draw": ("power_draw_w", lambda x, _u: v.to_float(x, "W")),
    "power.limit": ("power_limit_w", lambda x, _u: v.to_float(x, "W")),
    "power.default_limit": ("power_default_limit_w", lambda x, _u: v.to_float(x, "W")),
    "temperature.gpu": ("temperature_c", lambda x, _u: v.to_float(x)),
    "compute_cap": ("compute_capability", lambda x, _u: x.strip() if re.fullmatch(r"\s*\d+\.\d+\s*", x) else None),
    "persistence_mode": ("persistence_mode", lambda x, _u: v.enabled(x)),
    "pstate": ("performance_state", lambda x, _u: int(x.strip()[1:]) if re.fullmatch(r"\s*P\d{1,2}\s*", x) else None),
    "pcie.link.gen.current": ("pcie.current_gen", _gen),
    "pcie.link.gen.gpucurrent": ("pcie.current_gen", _gen),
    "pcie.link.gen.max": ("pcie.max_gen", _gen),
    "pcie.link.width.current": ("pcie.current_width", lambda x, _u: v.to_int(x)),
    "pcie.link.width.max": ("pcie.max_width", lambda x, _u: v.to_int(x)),
}
_OTHER = "driver_version timestamp utilization.gpu utilization.memory memory.free clocks.sm clocks.max.sm fan.speed"
_KNOWN = set(_FIELDS) | set(_OTHER.split()) | {"vbios_version", "count", "mig.mode.current", "gpu_recovery_action"}
# gpu_recovery_action (nvidia-smi --help-query-gpu; NVML's nvmlDeviceGetGpuRecoveryAction): None, Reset, Reboot,
# Drain P2P, Drain and Reset. The two that reset the GPU are the driver's "reset required" (the Xid catalog's
# RESET_GPU); the others are noted.
_RESETS = ("reset", "drain and reset")
# a note typed after a row by the poster ("1, Reset   <= GPU is unusable, reset required"): not a cell
_ANNOTATION = re.compile(r"(?:\s{2,}|\t)(?:<=|<-|<--|←|#)\s.*$")
_COLUMN = re.compile(r"^\s*([a-z][a-z0-9_.]*)\s*(?:\[([^\]]*)\])?\s*$")


def _columns(line: str, asked: tuple[list[tuple[str, str]], bool] | None = None) -> list[tuple[str, str]] | None:
    """The fields of a header line (``name``, unit), or None when it is not one; ``asked``: the fields the command
    above it names, which make a header of one known field a header too."""
    out = []
    for cell in line.split(","):
        m = _COLUMN.match(cell)
        if not m:
            return None
        out.append((m.group(1), m.group(2) or ""))
    known = [f for f, _ in out if f in _KNOWN]
    if asked is not None and [f for f, _ in out] == [f for f, _ in asked[0]] and known:
        return out
    return out if len(out) >= 2 and len(known) >= 2 else None


# The CSV piped through ``column -s, -t``: its commas gone, each cell left-aligned at its column's start, the columns
# two spaces apart at least (column's default output separator); a cell holds single spaces ("power.draw [W]",
# "GeForce GTX 1080", "131.17 W"). Where tabs replaced the padding, the cells are told apart by the gaps alone.
_ALIGNED_CELL = re.compile(r"[^\s]+(?: [^\s]+)*")


def _aligned_header(line: str) -> list[int] | None:
    """Where each cell of a ``column -t`` aligned header starts, or None when the line is no such header."""
    if "," in line or len(line) > 2000:
        return None
    cells = list(_ALIGNED_CELL.finditer(line))
    return [m.start() for m in cells] if _columns(",".join(m.group(0) for m in cells)) else None


def _aligned_cells(line: str, at: list[int]) -> list[str] | None:
    """A row's cells, cut at the header's column starts (each cell starts there, after a space; with tabs, its
    gaps), or None when the line is no row of the table (fewer than two cells shown)."""
    if "\t" in line:
        cells = [m.group(0) for m in _ALIGNED_CELL.finditer(line)]
    elif (
        line[: at[0]].strip()
        or line[at[0] : at[0] + 1].isspace()
        or any(p < len(line) and not line[p - 1].isspace() for p in at[1:])
    ):
        return None  # a cell that does not start at its column
    else:
        cells = [line[a:b].strip() for a, b in zip(at, [*at[1:], None], strict=True)]
    shown = [c for c in cells if c]
    return cells if len(shown) >= 2 and len(cells) <= len(at) else None


def _decolumned(lines: list[str]) -> list[str]:
    """The lines with a ``column -t`` aligned table (the first) as CSV again: its header and the aligned rows under
    it joined by commas (a blank line or a line that is not a row ends it); as they were without one."""
    k, at = next(((k, at) for k, x in enumerate(lines) if (at := _aligned_header(x)) is not None), (None, None))
    if k is None or at is None:
        return lines
    out = [*lines[:k], ", ".join(m.group(0) for m in _ALIGNED_CELL.finditer(lines[k]))]  # the header
    for j in range(k + 1, len(lines)):
        if (cells := _aligned_cells(lines[j], at)) is None:
            return out + lines[j:]
        out.append(", ".join(cells))
    return out


# The command above the output: "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits"
_QUERY = re.compile(r"nvidia-smi\b.*?--query-gpu[= ]\s*['\"]?([\w.,]+)['\"]?.*?--format[= ]\s*['\"]?csv([\w,]*)")
# what --query-gpu accepts for a field, as its header names it (nvidia-smi --help-query-gpu: '"name" or "gpu_name"')
_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial", "gpu_bus_id": "pci.bus_id"}


# The output as a program's debug print shows it: a Python list of its lines, "['200.00, 105.00, ..., P2', '']"
_LIST_REPR = re.compile(r"^\s*\[\s*'([^'\n]*)'(?:\s*,\s*'[^'\n]*')*\s*\]\s*$")


def _row(line: str) -> str:
    """The row itself, out of the Python list that holds it (the first string of the list)."""
    m = _LIST_REPR.match(line)
    return m.group(1) if m else line


def query_fields(context: list[str] | None) -> tuple[list[tuple[str, str]], bool] | None:
    """The fields the ``--query-gpu`` command shown just above an output asks for, and whether it printed no
    header (``--format=csv,noheader``); None when the line above is no such command."""
    shown = [x for x in reversed(context or []) if x.strip() and not x.strip().startswith("```")]
    # the command, or one line of the calling program's own between it and its output ("nsmi_items: [2]")
    m = next((m for x in shown[:2] if (m := _QUERY.search(x))), None)
    if m is None:
        return None
    fields = [(_ALIASES.get(f, f), "") for f in m.group(1).lower().split(",") if f]
    return fields, "noheader" in m.group(2).lower()


# A row of ``--format=csv,noheader``: its columns are not named, so only the cells whose form says what they are
# are read (a GPU's product name, a PCI bus id, a GPU-... UUID); the others (a "53 %" is a fan or a utilization,
# an "84" a temperature or a clock) are not.
_GPU_NAME = re.compile(r"^(?:NVIDIA|GeForce|Tesla|Quadro|TITAN|Titan) \S.{0,50}$")
_UUID = re.compile(r"^GPU-[0-9a-fA-F-]{8,}$")
# pci.device_id / pci.sub_device_id ("0x232110DE": device and vendor id), a memory size ("81559 MiB"), a driver
# version ("535.104.05", "470.82"), a compute capability ("9.0"; nvidia-smi --help-query-gpu: compute_cap)
_FORMED = re.compile(r"^0x[0-9a-fA-F]{8}$|^\d+ MiB$|^\d{3}\.\d{2,3}(?:\.\d{2})?$|^\d{1,2}\.\d$")


def _noheader_columns(line: str) -> list[tuple[str, str]] | None:
    """The fields a noheader row's own cells show (``name``, ``pci.bus_id``, ``uuid``; the rest ``?``), or None
    when the line is no such row (three cells or more, or two of a form only nvidia-smi prints, one of them a GPU's
    name, none a "key: value" pair as deviceQuery and p2pBandwidthLatencyTest print: "Device: 0, NVIDIA A100,
    pciBusID: 7, ...")."""
    cells = [c.strip() for c in line.split(",")]
    if len(cells) < 2 or not any(_GPU_NAME.match(c) for c in cells) or any(len(c) > 60 or ": " in c for c in cells):
        return None
    if len(cells) == 2 and not any(_UUID.match(c) or v.normalize_bus_id(c) or _FORMED.match(c) for c in cells):
        return None  # two cells: a name and a cell of a form nvidia-smi prints ("GPU-...", "0x232110DE", "9.0")
    return [(_cell_field(c), "") for c in cells]


def _cell_field(cell: str) -> str:
    """The field a header-less cell's form shows (``name``, ``uuid``, ``pci.bus_id``), ``?`` when none."""
    if v.normalize_bus_id(cell):
        return "pci.bus_id"
    return "name" if _GPU_NAME.match(cell) else "uuid" if _UUID.match(cell) else "?"


def _started_row(lines: list[str], k: int, cols: list[tuple[str, str]], noheader: bool) -> list[str] | None:
    """The cells of the table's last row when the paste cuts it (nothing but blank lines or the closing fence
    after it; no more cells than the header names, the cells before the cut one of the columns' forms), or None
    when the line is no such row: the rows before the cut are all read, and the cut one is a GPU too."""
    after = [x.strip() for x in lines[k + 1 :] if x.strip()]
    cells = [c.strip() for c in lines[k].split(",")]
    if after and not after[0].startswith("```") or len(cells) > len(cols) or len(cells) < 2:
        return None
    if noheader and [_cell_field(c) for c in cells[:-1]] != [f for f, _ in cols][: len(cells) - 1]:
        return None  # a header-less row: its whole cells show the columns they are (a name, a bus id, a UUID)
    whole = zip(cols, cells[:-1], strict=False)
    if any(f in _FIELDS and not v.absent(c) and _FIELDS[f][1](c, u) is None for (f, u), c in whole):
        return None  # a whole cell that is not its column's value ("Done, see below" under "index, uuid, ...")
    return cells


def parse_smi_csv(text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None) -> Rig:
    """The GPUs of the CSV; without a header (``noheader``), the fields are those the command above it names, or
    (no command shown) those a row's own cells show."""
    rig = Rig()
    lines = clean_lines(text)
    if not any(_columns(x) for x in lines):
        lines = _decolumned(lines)  # a CSV through column -t
    asked = query_fields(context)
    start = next((k for k, x in enumerate(lines) if _columns(x, asked)), None)
    noheader = False
    if start is None and asked is not None and asked[1]:
        start, cols = -1, asked[0]
        rig.problems.append(f"{source}: line {first_line}: no header (noheader): the fields as the command names them")
    elif start is None:
        start = next((k - 1 for k, x in enumerate(lines) if _noheader_columns(x)), None)
        if start is None:
            raise ImportParseError(source, first_line, "no --query-gpu header line (index, name, ...)")
        cols, noheader = _noheader_columns(lines[start + 1]) or [], True
    else:
        cols = _columns(lines[start], asked) or []
    cut = not text.endswith(("\n", "\r"))
    lines = [*lines[: start + 1], *(_ANNOTATION.sub("", _row(x)) for x in lines[start + 1 :])]
    events: list[KernelEvent] = []
    for k in range(start + 1, len(lines)):
        cells, started = [c.strip() for c in lines[k].split(",")], None
        if lines[k].strip().startswith("```") or len(cols) == 1 and not lines[k].strip():
            break  # a fence closes the paste; one field's rows (any text fits one cell) end at a blank line
        if not lines[k].strip():
            continue
        if len(cells) != len(cols) or (noheader and not _noheader_columns(lines[k])):
            started = _started_row(lines, k, cols, noheader)
            if started is None:
                break  # the table ends (another output, a prompt)
            cells, cut = started, False  # its last row, cut: a started row is a GPU, its cut cell not shown
        if cut and k == len(lines) - 1 or started is not None:
            cells[-1] = ""  # the paste ends inside this cell: not shown
        cells += [""] * (len(cols) - len(cells))  # the cells after the cut: not shown
        g = Gpu(index=len(rig.gpus))
        lineno = first_line + k
        for (field, unit), raw in zip(cols, cells, strict=True):
            if field == "driver_version" and not v.absent(raw):
                rig.software.driver_version = raw
                rig.origins["software.driver_version"] = f"{source}:{lineno}"
            if field == "gpu_recovery_action":
                _recovery(rig, events, g, raw, f"{source}: line {lineno}", lineno)
            if field not in _FIELDS:
                continue
            attr, read = _FIELDS[field]
            value = read(raw, unit) if raw else None
            target, name = (g.pcie, attr[5:]) if attr.startswith("pcie.") else (g, attr)
            if value is None:
                if attr != "index":
                    target.unavailable[name] = v.printed(raw) if raw else f"{ELIDED} (line {lineno})"
                continue
            setattr(target, name, value)
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
        rig.gpus.append(g)
    if not rig.gpus:
        raise ImportParseError(source, first_line + start, "a --query-gpu header with no GPU row under it")
    if events:
        rig.kernel = kernel_rig(events, len(lines), source, first_line, None).kernel
        rig.origins["kernel.events"] = f"{source}:{first_line}"
    return rig


def _recovery(rig: Rig, events: list[KernelEvent], g: Gpu, raw: str, where: str, lineno: int) -> None:
    """A GPU's recovery action: one that resets the GPU as the driver's "reset required"; another noted."""
    action = raw.strip()
    if action.lower() in _RESETS:
        text = f"nvidia-smi --query-gpu gpu_recovery_action: {action}"
        events.append(KernelEvent(kind="gpu-reset-required", gpu_index=g.index, text=text, line=lineno))
    elif action and not v.absent(action) and action.lower() != "none":
        rig.problems.append(f"{where}: GPU {g.index}: recovery action {action!r} (NVML's gpu_recovery_action)")


@outside("smi-csv")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``--query-gpu`` CSV header (``index, name, memory.total [MiB]``) over a row with as many cells; or, under
    the ``nvidia-smi --query-gpu=...`` command that printed it, its header of one field, or (``noheader``) its
    first row; or a noheader row holding a GPU's name."""
    if not lines[i].strip():
        return False
    asked = query_fields(lines[max(0, i - 3) : i]) if "query-gpu" in " ".join(lines[max(0, i - 3) : i]) else None
    if asked is not None and asked[1]:
        return len(_row(lines[i]).split(",")) == len(asked[0])
    if "," in lines[i] and outside_log(current) and _noheader_columns(lines[i]) and not (i and _columns(lines[i - 1])):
        return True
    cols = _columns(lines[i], asked) if "," in lines[i] or asked else None
    below = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
    if cols is None and (at := _aligned_header(lines[i])) is not None:  # a CSV through column -t
        return outside_log(current) and _aligned_cells(lines[i + 1] if i + 1 < len(lines) else "", at) is not None
    return cols is not None and len(below.split(",")) == len(cols)
