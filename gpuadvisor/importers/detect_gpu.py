"""detect-gpu's JSON (github.com/mayooot/detect-gpu, an HTTP service over go-nvml): a list of one object per GPU,
its fields as the tool's ``gpuInfo`` struct names them (pkg/detect/model.go): ``index``, ``uuid``, ``name``,
``memoryInfo`` (NVML's ``Total``/``Free``/``Used``, bytes), ``powerUsage`` (mW, nvmlDeviceGetPowerUsage),
``powerState`` (the P-state number), ``powerManagementDefaultLimit`` (mW: the default limit, not the enforced one),
``informImageVersion``, ``systemGetDriverVersion`` and ``systemGetCudaDriverVersion`` (1000 x major + 10 x minor),
``tGraphicsRunningProcesses`` (graphics processes only). No bus id. Pasted on one line, often cut: each object read
whole is read; the one the paste ends inside gives the keys it shows whole (its number, UUID, name)."""

from __future__ import annotations

import json
import re
from typing import Any

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section
from gpuadvisor.importers.values import GPU_UUID, cuda_version

WHAT = "detect-gpu JSON"
_OWN = ('"memoryInfo"', '"uuid"')  # and one of the NVML system calls it names its fields after
_SYSTEM = ('"systemGetDriverVersion"', '"powerManagementDefaultLimit"')
_WHOLE = re.compile(r'"(index|uuid|name)"\s*:\s*("(?:[^"\\\n]|\\.){0,200}"|\d{1,4})\s*(?=[,}])')
_OPENS = re.compile(r'^(?:[\[{]$|\[?\{\s*")')  # a bare bracket (jq's print) or the objects on one line
_NO_BUS = "detect-gpu's JSON carries no bus id"
_NO_LIMIT = "detect-gpu prints NVML's default power limit, not the enforced one"
_CUT = "the paste ends inside this GPU's detect-gpu object"
_CUT_FACTS = ("memory_total_bytes", "memory_used_bytes", "power_draw_w", "power_default_limit_w", "performance_state")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line opening the list or an object (``[{"index":0,...``, ``[``, ``{``) with the tool's own keys on it or on
    the lines below (jq's pretty print)."""
    s = lines[i].strip()
    if not _OPENS.match(s) or (current is not None and current.kind == "detect-gpu"):
        return False
    near = "\n".join(lines[i : i + 40]) if s in ("[", "{") else s
    return all(k in near for k in _OWN) and any(k in near for k in _SYSTEM)


def parse_detect_gpu(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each GPU object's number, UUID, name, memory, power draw and default limit, P-state; the driver and its CUDA."""
    rig = Rig()
    decoder = json.JSONDecoder()
    pos = text.find("{", text.find("["))
    while 0 <= pos < len(text):
        lineno, cut = first_line + text.count("\n", 0, pos), False
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:  # the object the paste ends inside: its whole keys
            obj, end, cut = {m.group(1): json.loads(m.group(2)) for m in _WHOLE.finditer(text, pos)}, len(text), True
        if isinstance(obj, dict) and ("uuid" in obj or "name" in obj):
            _gpu(rig, obj, f"{source}:{lineno}")
            if cut:
                rig.problems.append(f"{source}: line {lineno}: {_CUT}: its whole keys read")
                for name in _CUT_FACTS:
                    if getattr(rig.gpus[-1], name) is None:
                        rig.gpus[-1].unavailable[name] = _CUT
        pos = text.find("{", end)
    if not rig.gpus:
        raise ImportParseError(source, first_line, "detect-gpu JSON without a GPU object")
    return rig


def _gpu(rig: Rig, obj: dict[str, Any], at: str) -> None:
    """One GPU object into the Rig (the driver and CUDA versions from the first that gives them)."""
    index = obj.get("index")
    g = Gpu(index=index if isinstance(index, int) else len(rig.gpus))
    g.name = obj.get("name") or None
    uuid = obj.get("uuid")
    g.uuid = uuid if isinstance(uuid, str) and GPU_UUID.match(uuid) else None
    memory = obj.get("memoryInfo")
    if isinstance(memory, dict):
        g.memory_total_bytes = _int(memory.get("Total"))
        g.memory_used_bytes = _int(memory.get("Used"))
    if (mw := _int(obj.get("powerUsage"))) is not None:
        g.power_draw_w = mw / 1000
    if (mw := _int(obj.get("powerManagementDefaultLimit"))) is not None:
        g.power_default_limit_w = mw / 1000
    state = _int(obj.get("powerState"))
    g.performance_state = state if state is not None and 0 <= state <= 15 else None  # 32: NVML_PSTATE_UNKNOWN
    g.unavailable["bus_id"] = _NO_BUS
    g.unavailable["power_limit_w"] = _NO_LIMIT
    rig.origins[f"gpus[{len(rig.gpus)}]"] = at
    rig.gpus.append(g)
    sw = rig.software
    driver, cuda = obj.get("systemGetDriverVersion"), _int(obj.get("systemGetCudaDriverVersion"))
    if sw.driver_version is None and isinstance(driver, str) and re.fullmatch(r"\d{2,4}\.\d+(?:\.\d+)?", driver):
        sw.driver_version = driver
        rig.origins["software.driver_version"] = at
    if sw.cuda_driver_version is None and cuda is not None and cuda >= 1000:
        sw.cuda_driver_version = cuda_version(cuda)
        rig.origins["software.cuda_driver_version"] = at


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
