"""An Xid relayed by another tool: the same driver event a kernel log's ``NVRM: Xid`` line reports, as a health
agent, a device plugin or NVML's caller words it.

Forms read (each from the tool's own source):

- gpud (leptonai/gpud, components/accelerator/nvidia/xid): a state's reason ``XID 79(GPU has fallen off the bus)
  detected on PCI:0000:ae:00`` (older: ``XID 74 (NVLINK Error) detected on PCI:0000:04:00``; ``SXID 123 detected
  on PCI:...`` for an NVSwitch), an event's message ``xid 119 detected by dmesg (47 minutes ago)``, and its
  ``extra_info`` data, JSON escaped inside JSON: ``\\"device_uuid\\":\\"\\",\\"xid\\":119``.
- NVIDIA's Kubernetes device plugin (internal/rm/health.go): ``XidCriticalError: Xid=69 on Device=GPU-<uuid>; marking
  device as unhealthy.`` (2020: ``..., the device will go unhealthy.``), ``XidCriticalError: Xid=N, All devices will
  go unhealthy.`` (no device), and ``'nvidia.com/gpu' device marked unhealthy: GPU-<uuid>`` (no Xid number).
- NVML's ERROR_GPU_IS_LOST (go-nvml's name; ``GPU is lost``, nvmlErrorString's words) in a failed query that names a
  GPU by its UUID: ``failed to get device remapped rows: ERROR_GPU_IS_LOST``: that GPU is lost.
- The same return code raised in Python (pynvml, nvidia-ml-py: each NVML error a class named from its code,
  ``NVMLError_GpuIsLost``, its text nvmlErrorString's): a traceback ending ``pynvml.NVMLError_GpuIsLost: GPU is
  lost`` (or ``NVMLError: GPU is lost``): a GPU is lost, which one the line does not say.
- The same return code by its number, as a program that calls NVML prints it (nvml.h: NVML_ERROR_GPU_IS_LOST = 15;
  T-Rex: ``WARN: NVML: can't get fan speed for GPU #0, error code 15``): the GPU the line numbers (the program's
  own index) is lost; Slurm's ``NVML: Failed to get usage(15): GPU is lost`` too; NVML_ERROR_RESET_REQUIRED (16,
  ``GPU requires restart``) the same way: the GPU needs a reset. The codes read and what each means are
  :mod:`gpuadvisor.catalog.error_codes`' table (999, NVML_ERROR_UNKNOWN, says nothing of the GPU: not read).
- NVSentinel's health event (a JSON object its modules log, escaped or not: ``"entitiesImpacted":[{"entityType":
  "PCI","entityValue":"0001:00:00"},{"entityType":"GPU_UUID",...}]``): the syslog monitor's ``"checkName":
  "SysLogsXIDError"`` with the Xid in ``"errorCode":["13"]``, or a DCGM message carrying it (dcgm_errors.h:
  ``GPU had an uncontained error (XID 95)``, ``Detected XID %u for GPU %u``); a healthy event (``"isHealthy":true``)
  reports none.

Read: each Xid as a kernel event (the same facts, the same catalog and rule GA801 as a kernel log's line), its device
the PCI bus id or the GPU UUID the line names (none named: the device is unknown); a lost GPU by its UUID, with every
fact unknown for that reason (GA315); a lost GPU no line names as the kernel's own sign of it (``gpu-is-lost``,
GA820: reboot), its device unknown; each GPU the device plugin marked unhealthy as the plugin's failed check of
it (rule GA827: the GPU is out of the node's allocatable ``nvidia.com/gpu`` until the plugin restarts). A relayer
that writes one event twice (gpud's message and its data) is one event.
"""

from __future__ import annotations

import dataclasses
import re

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, HealthCheck, KernelEvent, Rig
from gpuadvisor.importers import error_codes
from gpuadvisor.importers.beyond import kernel_rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID_NO_FUNCTION, PCI_FUNCTION, UUID_BODY
from gpuadvisor.importers.section import Section, clean_lines, outside, outside_log
from gpuadvisor.probes.kmsg import normalise_bus_id

WHAT = "an Xid relayed by another tool (gpud, the Kubernetes device plugin, NVML)"
_UUID = rf"(?:GPU|MIG)-{UUID_BODY}"
_BUS = rf"{PCI_BUS_ID_NO_FUNCTION}(?:{PCI_FUNCTION})?"
# gpud: "XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00", "xid 119 detected by dmesg"
_GPUD = re.compile(
    rf"\b(?P<kind>S?XID)\s+(?P<code>\d{{1,5}})\s*(?:\([^()\n]{{0,80}}\))?\s*detected\s+"
    rf"(?:on\s+PCI:(?P<bus>{_BUS})|by\s+\w+)",
    re.IGNORECASE,
)
# gpud's event data, JSON escaped inside JSON (or not): \"xid\":119 ... \"device_uuid\":\"GPU-...\"
_JSON_XID = re.compile(r'\\*"(?P<kind>s?xid)\\*"\s*:\s*(?P<code>\d{1,5})\b')
_JSON_UUID = re.compile(rf'\\*"device_uuid\\*"\s*:\s*\\*"(?P<uuid>{_UUID})?')
# the device plugin: "XidCriticalError: Xid=69 on Device=GPU-...", "XidCriticalError: Xid=43, All devices ..."
_PLUGIN = re.compile(rf"\bXidCriticalError: Xid=(?P<code>\d{{1,5}})(?: on Device=(?P<uuid>{_UUID}))?")
# the UUID as the plugin wrote it, or as the writer elided it ("GPU-455e672a-...", "GPU-XX-X-X-XX-XX")
_UNHEALTHY = re.compile(r"\bdevice marked unhealthy: (?P<uuid>(?:GPU|MIG)-[\w.-]{1,60})")
DEVICE_PLUGIN = "NVIDIA device plugin"  # the HealthCheck's tool: rule GA827 judges a device it marked unhealthy
_IS_LOST = error_codes.BY_NAME["nvml_error_gpu_is_lost"]  # NVML's return code 15, in error_codes' table
_LOST = re.compile(rf"{_IS_LOST.names[1]}|\b{_IS_LOST.texts[0]}\b")  # in go-nvml's name or nvmlErrorString's words
# pynvml / nvidia-ml-py: "pynvml.NVMLError_GpuIsLost: GPU is lost", "NVMLError: GPU is lost" (no device named)
_PY_LOST = re.compile(rf"\bNVMLError(?:_GpuIsLost)?: {_IS_LOST.texts[0]}\b")
# NVML's code of a sign (15 GPU_IS_LOST, 16 RESET_REQUIRED) by number on a line that names NVML: "NVML: can't get
# power for GPU #0, error code 15" (or Slurm's "NVML: Failed to get usage(15): GPU is lost": the code in brackets, or
# its name or text after NVML): error_codes' table decides which codes and what each is
_PROGRAM_GPU = re.compile(r"\bGPU\s*#(?P<index>\d{1,3})\b")  # the program's own GPU number ("GPU #0")
# NVSentinel's health event: its fields, JSON escaped inside JSON or not
_Q = r'\\*"'
_SENTINEL = re.compile(rf"{_Q}entitiesImpacted{_Q}\s*:")
_SENTINEL_SPLIT = re.compile(rf"(?={_Q}agent{_Q}\s*:)")  # one event's fields from its agent to the next one's
_SENTINEL_XID = re.compile(
    rf"{_Q}checkName{_Q}\s*:\s*{_Q}SysLogsXIDError{_Q}.*?{_Q}errorCode{_Q}\s*:\s*\[\s*{_Q}(?P<code>\d{{1,5}}){_Q}"
    r"|\(XID (?P<dcgm>\d{1,5})\)|\bDetected XID (?P<detected>\d{1,5}) for GPU\b"
)
_SENTINEL_HEALTHY = re.compile(rf"{_Q}isHealthy{_Q}\s*:\s*true\b")
_ENTITY = rf"{_Q}entityType{_Q}\s*:\s*{_Q}{{}}{_Q}\s*,\s*{_Q}entityValue{_Q}\s*:\s*{_Q}"
_SENTINEL_BUS = re.compile(_ENTITY.format("PCI") + rf"(?P<bus>{_BUS})")
_SENTINEL_UUID = re.compile(_ENTITY.format("GPU_UUID") + rf"(?P<uuid>{_UUID})")
_GPU_UUID = re.compile(rf"\bGPU-{UUID_BODY}\b")
# the device plugin's health check passing an NVML event by (internal/rm/health.go, klog): one that is not a critical
# Xid ("Skipping non-nvmlEventTypeXidCriticalError event: {Device:{Handle:0x...} EventType:2 EventData:0 ...}"), or a
# critical Xid it ignores ("Skipping event {... EventType:8 EventData:31 ...}": 13, 31, 43, 45, 68, 109 or one of
# DP_DISABLE_HEALTHCHECKS); forks print "Data=31, Type=8" (HAMi's "Skipping XID event: Data=...")
_SKIPPED = re.compile(
    r"\bSkipping (?P<what>non-nvmlEventTypeXidCriticalError event|XID event|event)\b[:\s]*\{?[^\n]{0,200}?"
    r"(?:EventType:(?P<type>\d+) EventData:(?P<data>\d+)|Data=(?P<data2>\d+), Type=(?P<type2>\d+))"
)
# NVML's event types (NVML API Reference, Event Types: nvmlEventType*), by value
_NVML_EVENTS = {
    1: "nvmlEventTypeSingleBitEccError (a corrected ECC error)",
    2: "nvmlEventTypeDoubleBitEccError (an uncorrected ECC error)",
    4: "nvmlEventTypePState",
    8: "nvmlEventTypeXidCriticalError",
    16: "nvmlEventTypeClock",
}
_SAME_EVENT_LINES = 8  # gpud writes an event's message and, a few lines below, its data: one event
_LONGEST = 20000  # gpud's data line carries its references: long, but not a megabyte


def _relayed(line: str) -> re.Match[str] | None:
    if len(line) > _LONGEST:
        return None
    m = _GPUD.search(line) or _PLUGIN.search(line) or _JSON_XID.search(line)
    return m if m is not None and int(m.group("code")) else None  # no Xid is numbered 0: a field's "none"


def _skipped(line: str) -> re.Match[str] | None:
    return _SKIPPED.search(line) if len(line) <= _LONGEST and "Skipping " in line else None


def relays(line: str) -> bool:
    """The line relays an Xid or a GPU the relayer marked unhealthy (another log's line there is the relayer's)."""
    return bool(_relayed(line) or _UNHEALTHY.search(line) or _sentinel(line, 0))


@outside("xid-relay")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line relaying an Xid (or a GPU the relayer found lost or marked unhealthy); inside a log too (a container
    log's timestamps look like a kernel log's), unless it is the kernel's own NVRM line."""
    line = lines[i]
    if len(line) > _LONGEST or (not outside_log(current) and "NVRM" in line):
        return False
    return bool(relays(line) or _lost(line) or _PY_LOST.search(line) or error_codes.nvml_sign(line) or _skipped(line))


def _lost(line: str) -> str | None:
    """The UUID of the GPU a failed NVML query names as lost (NVML_ERROR_GPU_IS_LOST), as NVML writes it."""
    if len(line) > _LONGEST or not _LOST.search(line):
        return None
    m = _GPU_UUID.search(line)
    return "GPU-" + m.group(0)[4:].lower() if m else None


def _event(line: str, lineno: int) -> tuple[KernelEvent, str | None] | None:
    """The Xid (or SXid) a line relays and the GPU UUID it names, if any."""
    m = _relayed(line)
    if m is None:
        return None
    groups = m.groupdict()
    kind = "sxid" if (groups.get("kind") or "").lower().startswith("s") else "xid"
    bus = normalise_bus_id(groups["bus"]) if groups.get("bus") else None
    uuid = groups.get("uuid")
    if uuid is None and (u := _JSON_UUID.search(line)):
        uuid = u.group("uuid")
    said = line.strip()
    text = said if len(said) <= 200 else said[:200] + "..."
    ev = KernelEvent(kind=kind, code=int(groups["code"]), bus_id=bus, text=text, line=lineno)
    return ev, uuid


def _sentinel(line: str, lineno: int) -> list[tuple[KernelEvent, str | None]]:
    """The Xid of each unhealthy NVSentinel health event on the line, and the GPU UUID it names, if any."""
    if len(line) > _LONGEST or not _SENTINEL.search(line):
        return []
    found = []
    for part in _SENTINEL_SPLIT.split(line):
        m = _SENTINEL_XID.search(part)
        if (
            m is None
            or _SENTINEL_HEALTHY.search(part)
            or not int(code := m.group("code") or m.group("dcgm") or m.group("detected"))
        ):
            continue
        bus, uuid = _SENTINEL_BUS.search(part), _SENTINEL_UUID.search(part)
        said = m.group(0).replace("\\", "")
        ev = KernelEvent(kind="xid", code=int(code), bus_id=normalise_bus_id(bus.group("bus")) if bus else None,
                         text=f"NVSentinel health event: {said[:160]}", line=lineno)  # fmt: skip
        found.append((ev, uuid.group("uuid") if uuid else None))
    return found


def _same(a: KernelEvent, b: KernelEvent) -> bool:
    """``b`` the relayer's second writing of ``a`` (its data under its message): same number, a device not in
    conflict, a few lines below."""
    near = a.line is not None and b.line is not None and b.line - a.line <= _SAME_EVENT_LINES
    return near and a.kind == b.kind and a.code == b.code and (a.bus_id is None or b.bus_id in (None, a.bus_id))


def parse_xid_relay(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each relayed Xid as a kernel event, and each GPU an NVML query found lost (by UUID)."""
    rig = Rig()
    events: list[KernelEvent] = []
    uuids: dict[int, str] = {}  # id(event) -> the GPU UUID it names
    lost: dict[str, tuple[str, int]] = {}
    lines = clean_lines(text)
    for k, line in enumerate(lines):
        lineno = first_line + k
        for ev, uuid in [found] if (found := _event(line, lineno)) else _sentinel(line, lineno):
            if events and _same(events[-1], ev):
                events[-1].bus_id = events[-1].bus_id or ev.bus_id
                if uuid:
                    uuids.setdefault(id(events[-1]), uuid)
                continue
            events.append(ev)
            if uuid:
                uuids[id(ev)] = uuid
        if gone := _lost(line):
            lost.setdefault(gone, (line.strip()[:200], lineno))
        elif (code := error_codes.nvml_sign(line)) is not None and code.kind:
            n = _PROGRAM_GPU.search(line)
            index = int(n.group("index")) if n else None
            events.append(KernelEvent(kind=code.kind, gpu_index=index, text=line.strip()[:200], line=lineno))
        elif _PY_LOST.search(line) and not any(e.kind == "gpu-is-lost" for e in events):
            events.append(KernelEvent(kind="gpu-is-lost", text=line.strip()[:200], line=lineno))  # which GPU: unsaid
    for ev in events:
        if id(ev) in uuids:
            ev.text = f"{ev.text} [{uuids[id(ev)]}]" if uuids[id(ev)] not in ev.text else ev.text
    skipped = _skipped_notes(lines, source, first_line)
    if not events and not lost and not skipped and not any(_UNHEALTHY.search(x) for x in lines):
        raise ImportParseError(source, first_line, f"{WHAT}: no Xid number, no lost GPU")
    rig.problems += skipped
    rig.kernel = kernel_rig(events, len(lines), source, first_line, None).kernel
    rig.origins["kernel.events"] = f"{source}:{first_line}"
    rig.node.health_checks = _unhealthy(lines, source, first_line) or None
    for uuid, (said, lineno) in lost.items():
        g = Gpu(index=len(rig.gpus), uuid=uuid)
        for f in dataclasses.fields(g):  # every fact of a lost GPU is unknown, for that reason (GA315 reads it)
            if getattr(g, f.name) is None:
                g.unavailable[f.name] = f"{facts.GPU_LOST} (NVML: {said})"
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
        rig.gpus.append(g)
    return rig


def _skipped_notes(lines: list[str], source: str, first_line: int) -> list[str]:
    """A note for each kind of NVML event the device plugin's health check passed by (its first line, how many): the
    plugin marks no GPU unhealthy for it, as it says; an ECC event's type is named (what to read next)."""
    seen: dict[tuple[str, int, int], tuple[int, int]] = {}  # (what, type, data) -> (first line, count)
    for k, line in enumerate(lines):
        if (m := _skipped(line)) is not None:
            key = (m.group("what"), int(m.group("type") or m.group("type2")), int(m.group("data") or m.group("data2")))
            at, n = seen.get(key, (first_line + k, 0))
            seen[key] = (at, n + 1)
    notes = []
    for (what, etype, data), (at, n) in seen.items():
        times = f" ({n} lines)" if n > 1 else ""
        kind = _NVML_EVENTS.get(etype, f"NVML event type {etype}")
        if what.startswith("non-"):
            said = (
                f"an NVML event that is not a critical Xid: EventType {etype}, {kind}, EventData {data}{times}; the "
                "plugin marks no GPU unhealthy for it"
            )
            if etype in (1, 2):
                said += (
                    " (NVML reported an ECC error on the GPU: read nvidia-smi -q -d ECC and the kernel log's Xid 48, "
                    "63, 64, 94 or 95 on the node for what it was)"
                )
        else:
            said = (
                f"Xid {data}{times}, one it ignores (an application's error by default: 13, 31, 43, 45, 68, 109, or "
                "one DP_DISABLE_HEALTHCHECKS lists); the GPU stays allocatable (the kernel log's Xid line says what it "
                "was)"
            )
        notes.append(f"{source}: line {at}: the NVIDIA device plugin's health check skipped {said}")
    return notes


def _unhealthy(lines: list[str], source: str, first_line: int) -> list[HealthCheck]:
    """Each GPU the device plugin marked unhealthy (once each): it is out of the node's allocatable nvidia.com/gpu
    until the plugin restarts."""
    checks: dict[str, HealthCheck] = {}
    for k, line in enumerate(lines):
        if (m := _UNHEALTHY.search(line)) and m.group("uuid") not in checks:
            where = f"{source}:{first_line + k}"
            checks[m.group("uuid")] = HealthCheck(
                DEVICE_PLUGIN, "nvidia.com/gpu device health", "fail", line.strip()[:200], [], None, where
            )
    return list(checks.values())


def finish(rig: Rig) -> None:
    """After the merge: a relayed Xid that names a GPU by UUID is that GPU's when the scan has it."""
    by_uuid = {g.uuid.lower(): g for g in rig.gpus if g.uuid}
    for ev in rig.kernel.events or []:
        m = re.search(_UUID, ev.text) if ev.gpu_index is None and ev.bus_id is None else None
        g = by_uuid.get(m.group(0).lower()) if m else None
        if g is not None:
            ev.gpu_index = g.index
            ev.bus_id = g.bus_id
    for hc in rig.node.health_checks or []:  # a GPU the device plugin marked unhealthy, when the scan has it
        m = re.search(_UUID, hc.detail) if hc.tool == DEVICE_PLUGIN else None
        if m and (g := by_uuid.get(m.group(0).lower())) is not None:
            hc.gpus = [g.index]
