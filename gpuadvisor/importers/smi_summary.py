"""Plain ``nvidia-smi``: the boxed table (driver and CUDA versions; per GPU index, name, persistence, bus id,
uncorrected volatile ECC count, temperature, power draw and cap, memory, MIG mode).

Both table layouts are read: the one before R530 (``| NVIDIA-SMI 470.57.02  Driver Version: ...`` with
``Persistence-M|``) and the wider one since. A name nvidia-smi cut short with ``...`` is not kept.
"""
from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers import values as v
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.sections import clean_lines

_VERSIONS = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*(\S+))?")
_ROW1 = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|N/A)\s*$")
_ROW2 = re.compile(r"^\s*(\S+)\s+(\S+?)C?\s+(P\d+|N/A)\s+(?:(\S+?)W?\s*/\s*(\S+?)W?)?\s*$")
_MEM = re.compile(r"^\s*(\d+)MiB\s*/\s*(\d+)MiB\s*$")


def parse_smi_summary(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    rig = Rig()
    lines = clean_lines(text)
    body = False
    gpu: Gpu | None = None
    row = 0
    for k, line in enumerate(lines):
        lineno = first_line + k
        s = line.strip()
        m = _VERSIONS.search(s)
        if m:
            rig.software.driver_version = m.group(2)
            rig.software.cuda_driver_version = m.group(3) if m.group(3) and m.group(3) != "N/A" else None
            continue
        if s.startswith("|=") and not body:
            body = True
            continue
        if not body:
            continue
        if not s.startswith("|"):
            if s.startswith("+") or not s:
                if gpu is not None:
                    gpu, row = None, 0
                if not s:
                    break  # the processes table follows a blank line
                continue
            break
        if "Processes:" in s:
            break
        cells = [c for c in s.strip("|").split("|")]
        if len(cells) < 3:
            continue
        m1 = _ROW1.match(cells[0])
        if gpu is None or row >= 3:
            if not m1:
                continue
            idx, name, pers = int(m1.group(1)), m1.group(2).strip(), m1.group(3)
            gpu = Gpu(index=idx)
            if name.endswith("...") or not name:
                gpu.unavailable["name"] = "nvidia-smi cut the name short in its table"
            else:
                gpu.name = name
            gpu.persistence_mode = {"On": True, "Off": False}.get(pers)
            if gpu.persistence_mode is None:
                gpu.unavailable["persistence_mode"] = f"nvidia-smi printed {pers!r}"
            bus = cells[1].split()
            gpu.bus_id = v.normalize_bus_id(bus[0]) if bus else None
            if gpu.bus_id is None:
                raise ImportParseError(source, lineno, f"GPU {idx}: {cells[1].strip()[:30]!r} is not a bus id")
            ecc = v.to_int(cells[2].strip())
            gpu.ecc_errors_uncorrected_volatile = ecc
            if ecc is None:
                gpu.unavailable["ecc_errors_uncorrected_volatile"] = f"nvidia-smi printed {cells[2].strip()!r}"
            rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
            rig.gpus.append(gpu)
            row = 1
            continue
        row += 1
        if row == 2:
            m2 = _ROW2.match(cells[0])
            if m2:
                gpu.temperature_c = v.to_float(m2.group(2))
                gpu.power_draw_w = v.to_float(m2.group(4)) if m2.group(4) else None
                gpu.power_limit_w = v.to_float(m2.group(5)) if m2.group(5) else None
            mm = _MEM.match(cells[1])
            if mm:
                gpu.memory_used_bytes = int(mm.group(1)) * 2**20
                gpu.memory_total_bytes = int(mm.group(2)) * 2**20
        elif row == 3:
            gpu.mig_mode = v.enabled(cells[2].strip())
    if not rig.gpus and rig.software.driver_version is None:
        raise ImportParseError(source, first_line, "no 'NVIDIA-SMI ... Driver Version' line and no GPU row")
    for g in rig.gpus:
        for f in ("temperature_c", "power_draw_w", "power_limit_w", "memory_used_bytes", "memory_total_bytes", "mig_mode"):
            if getattr(g, f) is None:
                g.unavailable.setdefault(f, "not shown (or N/A) in nvidia-smi's table")
    return rig
