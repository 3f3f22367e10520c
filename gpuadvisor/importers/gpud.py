"""gpud's component state for the fabric manager, as JSON (``gpud status``/its HTTP API, pasted whole or in part):
the component ``accelerator-nvidia-fabric-manager`` with its ``health``, its ``reason`` and, in ``extra_info.data``
(a JSON document inside a JSON string), ``fabric_manager_active`` and each GPU's ``fabric_states`` (state, status,
clique, cluster UUID, health summary and bandwidth, by GPU UUID).

What gpud's reason says of the box, read as gpud's fabric-manager component writes it
(github.com/leptonai/gpud, components/accelerator/nvidia/fabric-manager): it looks for NVSwitches first ("NVSwitch
not detected, skipping fabric manager check"), then for the nv-fabricmanager executable ("fabric manager supported
but nv-fabricmanager executable not found"), then whether the daemon listens ("fabric manager found but not active",
"fabric manager found and active"). On NVLink5 systems (GB200) it checks the GPUs' fabric state alone: the reason
then names no fabric manager check, and the daemon's state stays unknown.

gpud prints the same reason as text too: its CLI's check line (``✔ fabric manager found and active``, ``✔
NVIDIA-GB200 checked fabric state``) after its JSON log line (``"caller":"fabric-manager/component.go:163"``), and a
quoted reason alone (``NVIDIA-H100-PCIe with unhealthy fabric state: GPU GPU-8ca5...: state=Not Supported; ...``,
each GPU's fabric state by UUID): those are read as the JSON's reason.

Pastes are often cut: a GPU whose state the paste does not show is left out; a value cut inside its quotes is not
read.
"""

from __future__ import annotations

import re

from gpuadvisor import facts
from gpuadvisor.facts import Fabric, GpuFabric, Rig
from gpuadvisor.importers.section import Section, outside

COMPONENT = "accelerator-nvidia-fabric-manager"
_START = re.compile(r'"(?:component|name)"\s*:\s*"accelerator-nvidia-fabric-manager"')
_HEALTH = re.compile(r'"health"\s*:\s*"(\w[\w ]{0,30})"')
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\\n]|\\.){0,400})"')
_ACTIVE = re.compile(r'"fabric_manager_active"\s*:\s*(true|false)\b')
_UUID = re.compile(r'"gpu_uuid"\s*:\s*"(GPU-[0-9a-fA-F-]{8,40})"')
_FIELD = {
    k: re.compile(rf'"{k}"\s*:\s*(?:"([^"\n]{{0,80}})"|(\d{{1,12}}))')
    for k in ("state", "status", "clique_id", "cluster_uuid", "summary", "bandwidth")
}
_STATES = {
    "completed": "completed",
    "in progress": "in-progress",
    "not started": "not-started",
    "not supported": "not-supported",
}
SOURCE = "gpud's fabric-manager component (github.com/leptonai/gpud)"
# gpud's reason -> (the daemon's state, NVSwitches on the box); None: not said. gpud versions that look for
# NVSwitches first also report the GPUs' fabric state ("NVIDIA-H100-80GB-HBM3 checked fabric state; ..."); older
# ones checked the daemon alone, so "found but not active" says NVSwitches only beside that report
_REASONS = (
    ("NVSwitch not detected", None, False),
    ("nv-fabricmanager executable not found", "not-installed", True),
    ("fabric manager found but not active", "inactive", None),
    ("fabric manager found and active", "active", None),
)
_NEWER = "checked fabric state"
# gpud's reason as text (its CLI's check line, a quoted reason; "PRODUCT with unhealthy fabric state: REASON" is
# its component.go's wording), or its JSON log line from the fabric-manager component
_TEXT = re.compile(
    r"^\W*(?:[\w-]{2,40} (?:with unhealthy fabric state: |checked fabric state)|fabric manager found (?:and|but not) "
    r"active|NVSwitch not detected, skipping fabric manager check|fabric manager supported but nv-fabricmanager)"
)
_LOG = re.compile(r'^\s*\{"level":"\w+","ts":"[^"]{1,40}","caller":"fabric-manager/component\.go:\d+"')
_TEXT_GPU = re.compile(r"\bGPU (GPU-[0-9a-fA-F-]{8,40}): state=([A-Za-z][A-Za-z ]{1,20}?)(?=;|\s*$|\\?\")", re.M)


@outside("gpud", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line naming the component, ``"component": "accelerator-nvidia-fabric-manager"`` (or its ``"name"``),
    outside a log and not inside gpud's output already."""
    line = lines[i]
    return bool(COMPONENT in line and _START.search(line)) or bool(_TEXT.match(line)) or bool(_LOG.match(line))


def parse_gpud(text: str, source: str, first: int) -> Rig:
    """The fabric manager's state and NVSwitches as gpud's reason says them, and each GPU's fabric state shown."""
    rig = Rig()
    rig.fabric = read_fabric(text)
    rig.origins["fabric.manager_state"] = f"{source}:{first} ({SOURCE})"
    if rig.fabric.gpus is not None:
        rig.origins["fabric.gpus"] = f"{source}:{first} ({SOURCE})"
    return rig


def read_fabric(text: str) -> Fabric:
    fab = Fabric()
    health = _HEALTH.search(text)
    reason = _REASON.search(text)
    said = reason.group(1).replace('\\"', '"') if reason else ""
    told = [x.strip(" \t>`✔✘✗")[:400] for x in text.splitlines() if _TEXT.match(x)]
    if told and not any(words in said for words, _, _ in _REASONS):
        said = "; ".join(told)  # the CLI's check line or a quoted reason: gpud's reason as text
    state, switches = None, None
    for words, to_state, to_switches in _REASONS:
        if words in said:
            state, switches = to_state, to_switches if to_switches is not None or _NEWER not in said else True
            break
    fab.nvswitches = switches
    if state is not None:
        fab.manager_state = state
    else:
        why = "gpud's reason names no fabric manager check" + (f" ({said!r})" if said else "")
        fab.missing("manager_state", f"{why}: on NVLink5 systems (GB200) it checks the GPUs' fabric state only")
    if health or said:
        fab.manager_detail = f"gpud: {health.group(1) if health else 'health not shown'}" + (
            f": {said}" if said else ""
        )
    inner = text.replace('\\"', '"')  # extra_info.data: a JSON document inside a JSON string
    active = _ACTIVE.search(inner)
    if state is None and active and active.group(1) == "true":
        fab.manager_state = "active"  # gpud saw the daemon listening, whatever its reason says
    gpus = _gpus(inner) or _text_gpus(text)
    if gpus:
        fab.gpus = gpus
    return fab


def _value(chunk: str, key: str) -> str | None:
    m = _FIELD[key].search(chunk)
    return None if m is None else m.group(1) if m.group(1) is not None else m.group(2)


def _gpus(inner: str) -> list[GpuFabric]:
    """Each GPU of ``fabric_states`` whose state the paste shows, numbered in gpud's order (it names GPUs by UUID)."""
    out: list[GpuFabric] = []
    found = list(_UUID.finditer(inner))
    for n, m in enumerate(found):
        chunk = inner[m.end() : found[n + 1].start() if n + 1 < len(found) else len(inner)]
        state = _value(chunk, "state")
        if state is None or state.lower() not in _STATES:
            continue
        g = GpuFabric(gpu_index=len(out), state=_STATES[state.lower()])
        g.unavailable["gpu_index"] = f"gpud names the GPU by UUID ({m.group(1)}): its place in gpud's list"
        status = _value(chunk, "status")
        g.status = None if status is None else "success" if status.lower() == "success" else status
        clique = _value(chunk, "clique_id")
        g.clique_id = int(clique) if clique and clique.isdigit() else None
        g.cluster_uuid = _value(chunk, "cluster_uuid")
        summary = _value(chunk, "summary")
        g.health_summary = summary if summary and summary.lower() != "not supported" else None
        if summary is not None and g.health_summary is None:
            g.missing("health_summary", facts.NOT_SUPPORTED)
        bandwidth = (_value(chunk, "bandwidth") or "").lower()
        if bandwidth in ("full", "degraded"):
            g.degraded_bandwidth = bandwidth == "degraded"
        elif bandwidth:
            g.missing("degraded_bandwidth", facts.NOT_SUPPORTED)
        out.append(g)
    return out


def _text_gpus(text: str) -> list[GpuFabric]:
    """Each GPU's fabric state as gpud's text reason names it ("GPU GPU-8ca5...: state=Not Supported"), in order."""
    out: list[GpuFabric] = []
    for m in _TEXT_GPU.finditer(text):
        state = m.group(2).strip().lower()
        if state not in _STATES:
            continue
        g = GpuFabric(gpu_index=len(out), state=_STATES[state])
        g.unavailable["gpu_index"] = f"gpud names the GPU by UUID ({m.group(1)}): its place in gpud's list"
        out.append(g)
    return out
