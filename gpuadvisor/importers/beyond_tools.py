"""More pasted outputs beyond the GPU, recognised by content: ``rdma link`` (iproute2), ``lsmod`` (whole or
grepped), and NCCL debug logs (``NCCL_DEBUG=INFO``: which NICs NCCL uses, whether GPUDirect RDMA is disabled
for an HCA and why, which transport each channel took).

Each detector and parser is a row of :mod:`gpuadvisor.importers.registry`; their facts merge through
:func:`gpuadvisor.importers.beyond_merge.merge_into`.
"""

from __future__ import annotations

import re

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, KernelEvent, KernelLog, RdmaPort, Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.importers import error_codes, nccl_log, verbs_wc
from gpuadvisor.importers.section import Section, outside, outside_log, shell_prompt
from gpuadvisor.probes.kmsg import normalise_bus_id
from gpuadvisor.probes.kmsg_unjudged import unjudged
from gpuadvisor.probes.rdma import COUNTER_MAX, ERROR_COUNTERS

# rdma link show: "link mlx5_7/1 subnet_prefix fe80:... lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING"
# (not rdma res show qp's or cm_id's rows, "link mlx5_0/1 lqpn 1 type GSI state RTS ...": a queue pair's state)
_RDMA_LINK = re.compile(
    r"^\s*link\s+(\S+?)/(\d{1,3})\s+(?!lqpn\b|cm-idn\b).*?\bstate\s+(\w+)(?:\s+physical_state\s+(\w+))?"
)
_PHYS = {"LINK_UP": "LinkUp", "POLLING": "Polling", "DISABLED": "Disabled", "SLEEP": "Sleep",
         "LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHY_TEST": "PhyTest"}  # fmt: skip
# lsmod: "Module                  Size  Used by" / "nvidia_peermem         16384  0"
_LSMOD_HEAD = re.compile(r"^\s*Module\s+Size\s+Used by\s*$")
_LSMOD_ROW = re.compile(r"^([a-z][a-z0-9_]{1,55})\s+(\d{1,12})\s+(\d{1,6})(?:\s+(\S+))?\s*$")
PEERMEM = ("nvidia_peermem", "nv_peer_mem")
OF_INTEREST = ("nvidia", "nv_peer_mem", "mlx5", "ib_", "rdma", "gdrdrv", "nvidia_fs")
# NCCL debug: "host:25668:27396 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB ..."
_NCCL_USING = re.compile(r"NET/IB : Using (.*?)(?:;|$)")
_NCCL_NIC = re.compile(r"(\w+:\d+/(?:IB|RoCE))")
_NCCL_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for (?:GPU \S+ / )?HCA (\d+) '([^']+)'(?:\s*\(([^)]*)\))?")
_NCCL_VIA = re.compile(r"\bvia (\S+)")


def starts_rdma_link(lines: list[str], i: int, current: Section | None) -> bool:
    return (
        bool(_RDMA_LINK.match(lines[i])) and outside_log(current) and (current is None or current.kind != "rdma-link")
    )


def parse_rdma_link(text: str, source: str, first: int) -> Rig:
    """Each ``link DEV/PORT ... state S physical_state P`` line as a port (rate and link layer: not printed)."""
    rig = Rig()
    ports: list[RdmaPort] = []
    for line in text.splitlines():
        m = _RDMA_LINK.match(line)
        if not m:
            continue
        dev, port, state, phys = m.groups()
        p = RdmaPort(device=dev, port=int(port), state=state.upper(), phys_state=_PHYS.get((phys or "").upper(), phys))
        for name in ("rate_gbps", "link_layer", "firmware", "ca_type"):
            p.missing(name, "rdma link does not print it")
        ports = [q for q in ports if (q.device, q.port) != (p.device, p.port)] + [p]  # the last reading of a port
    rig.network.rdma_ports = ports
    rig.origins["network.rdma_ports"] = f"{source}:{first}"
    return rig


# A shell prompt, alone or before its command: "$ ...", "# ...", "[root@n1 ~]# ...", "(venv) user@host:~$ ..."
_SHELL = shell_prompt(marks="$#%>", bare="$#%>", then=r"(?:\s+(.*?))?\s*$")
_LSMOD_GREP = re.compile(r"^(?:sudo\s+)?(?:/s?bin/)?lsmod\s*\|\s*(?:e|f)?grep\s+(.+)$")
# modinfo's first line: "filename:       /lib/modules/4.15.0-46-generic/updates/dkms/nv_peer_mem.ko"
_MODINFO = re.compile(r"^\s*filename:\s+/\S*/([a-z][a-z0-9_-]*)\.ko(?:\.[a-z]+)?\s*$")


def _grep_printed_nothing(lines: list[str], i: int, known_empty: bool = False) -> str | None:
    """The pattern of an ``lsmod | grep PATTERN`` command at line ``i`` whose output is empty: the next line
    shown (blank lines and markdown fences aside) is the next prompt. None when it printed rows, or the paste
    ends after the command (its output not shown) unless ``known_empty``: the detector saw the whole paste and
    found the command's output empty (a section it starts that holds nothing more was closed by the next prompt
    or by the markdown fence around the command)."""
    prompt = _SHELL.match(lines[i])
    grep = _LSMOD_GREP.match(prompt.group(1) or "") if prompt else None
    if grep is None:
        return None
    for line in lines[i + 1 :]:
        if line.strip() and not line.strip().startswith("```"):
            return grep.group(1) if _SHELL.match(line) else None
    return grep.group(1) if known_empty else None


def _grepped(pattern: str) -> list[str]:
    """The peer-memory modules an ``lsmod | grep`` pattern would print (``-i``, ``-E 'a|b'``, ``-e a -e b``)."""
    words = [w.strip("'\"") for w in pattern.split()]
    flags = re.IGNORECASE if any(w.startswith("-") and "i" in w for w in words) else 0
    pats = [w for w in words if w and not w.startswith("-")]
    found = []
    for pat in pats:
        try:
            found += [m for m in PEERMEM if re.search(pat.replace("\\|", "|"), m, flags)]
        except re.error:
            found += [m for m in PEERMEM if pat in m]
    return sorted(set(found))


def starts_lsmod(lines: list[str], i: int, current: Section | None) -> bool:
    """lsmod's header, a module row of interest, an ``lsmod | grep`` that printed nothing, or modinfo's
    ``filename:`` line of a module of interest."""
    line = lines[i]
    row = _LSMOD_ROW.match(line) or _MODINFO.match(line)
    hit = bool(_LSMOD_HEAD.match(line)) or bool(row and row.group(1).replace("-", "_").startswith(OF_INTEREST))
    hit = hit or _grep_printed_nothing(lines, i) is not None
    return hit and outside_log(current) and (current is None or current.kind != "lsmod")


def parse_lsmod(text: str, source: str, first: int) -> Rig:
    """The modules of interest; peer memory loaded or not. A grepped lsmod (no header) that shows no peermem line
    does not say it is absent: only a whole lsmod does, or a grep for it that printed nothing. modinfo says a
    module is installed, not that it is loaded."""
    rig = Rig()
    lines = text.splitlines()
    names = [m.group(1) for m in map(_LSMOD_ROW.match, lines) if m]
    whole = any(_LSMOD_HEAD.match(line) for line in lines)
    empty = {i: _grepped(p) for i in range(len(lines)) if (p := _grep_printed_nothing(lines, i, i == 0)) is not None}
    absent = sorted({m for ms in empty.values() for m in ms})
    rig.network.modules = sorted({n for n in names if n.startswith(OF_INTEREST)})
    if any(n in PEERMEM for n in names):
        rig.network.peermem_loaded = True
    elif whole or absent:
        rig.network.peermem_loaded = False
    else:
        rig.network.missing("peermem_loaded", f"{facts.ELIDED}: a grepped lsmod without a peer-memory line")
    for i, mods in empty.items():
        said = f"{' and '.join(mods)} not loaded" if mods else "no module it matches is loaded"
        rig.problems.append(f"{source}: line {first + i}: {lines[i].strip()[:80]!r} printed nothing: {said}")
    for info in filter(None, map(_MODINFO.match, lines)):
        module = info.group(1).replace("-", "_")  # the file nvidia-peermem.ko holds the module nvidia_peermem
        if module.startswith(OF_INTEREST) and module not in names:
            said = "installed; modinfo does not say whether it is loaded"
            rig.problems.append(f"{source}: modinfo {module}: {said}")
    rig.origins["network.modules"] = f"{source}:{first}"
    return rig


_PROMPT = shell_prompt(then=r"\s+\w")  # "$ grep NCCL x.log", "[root@n1 ~]# ..."


def starts_nccl_debug(lines: list[str], i: int, current: Section | None) -> bool:
    """A NCCL INFO/WARN line outside nccl-tests output, or right after a shell prompt (a new command's output
    pasted after nccl-tests)."""
    if nccl_log.RANK_LINE.match(lines[i]):  # nccl-tests device lines, then the debug log (no result table)
        after = next((j for j in range(i + 1, min(len(lines), i + 1025)) if not nccl_log.RANK_LINE.match(lines[j])), 0)
        return (
            after > 0
            and nccl_log.starts(lines[after])
            and outside_log(current)
            and (current is None or current.kind not in ("nccl-tests", "nccl-debug"))
        )
    bare = nccl_log.BARE_WARN.match(lines[i]) is not None  # a WARN line quoted without host or rank
    if (bare or nccl_log.NVLS_BIND.search(lines[i])) and outside_log(current):  # its error text alone
        return current is None or current.kind != "nccl-debug"
    if not nccl_log.starts(lines[i]) or not outside_log(current):
        return False
    if current is not None and current.kind == "nccl-debug":
        return False
    after_prompt = i > 0 and bool(_PROMPT.match(lines[i - 1]))
    return current is None or current.kind != "nccl-tests" or after_prompt


_NCCL_ENV = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+?)\.?\s*$")


def parse_nccl_debug(text: str, source: str, first: int) -> Rig:
    """NICs NCCL uses, HCAs it disabled GPUDirect RDMA for (with its reason), and the transports of its channels."""
    rig = Rig()
    nics: list[str] = []
    off: list[str] = []
    via: set[str] = set()
    lines = nccl_log.split_runs(text)
    for line in lines:
        if "NCCL" not in line:
            continue
        if u := _NCCL_USING.search(line):
            nics += [n for n in _NCCL_NIC.findall(u.group(1)) if n not in nics]
        if (g := _NCCL_GDR_OFF.search(line)) and "NET/Socket" not in line[: g.start()]:  # TCP: no RDMA to disable
            entry = g.group(2) + (f" ({g.group(3)})" if g.group(3) else "")
            off += [] if entry in off else [entry]
        if " via " in line and "Channel" in line and (v := _NCCL_VIA.search(line)):
            via.add(v.group(1))
        if e := _NCCL_ENV.search(line):  # "NCCL INFO NCCL_P2P_LEVEL set by environment to LOC"
            rig.software.env[e.group(1)] = e.group(2)
    _rank_gpus(rig, lines, source, first)
    seen = nccl_log.async_events(lines) + [(nccl_log.NVLS_KIND, t, n) for t, n in nccl_log.nvls_bind_failures(lines)]
    ecc = cuda_ecc_events(lines, first)  # the watchdog's CUDA error: the GPU's memory failed (GA302)
    ecc += error_codes.first_events(lines, first, but=(ECC_KIND,))  # its other codes, as the table judges them
    if seen or ecc:  # the adapter events and NVLS failures NCCL reported, judged as the kernel's (GA822, GA826, GA809)
        events = [KernelEvent(kind=kind, code=0, bus_id=None, text=text, line=first + n) for kind, text, n in seen]
        events += ecc
        rig.kernel = KernelLog(source="imported", lines_read=len(lines), events=events)
        rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
        rig.origins["kernel.events"] = f"{source}:{first}"
    rig.network.nccl_nics = nics or None
    rig.network.nccl_gdr_disabled = off or nccl_log.gdr_not_used(lines)  # NCCL's own "Disabled" lines first
    rig.network.nccl_transports = sorted(via) or None
    rig.network.nccl_shm_full = nccl_log.shm_full(lines)
    rig.origins["network.nccl_gdr_disabled"] = f"{source}:{first}"
    rig.problems += verbs_wc.notes(lines, source, first)  # "NET/IB : Got completion ... with error 12"
    return rig


def add_nccl_debug(rig: Rig, text: str) -> None:
    """The NCCL_DEBUG=INFO lines inside nccl-tests output (a row's extras): what the debug log says of the NICs,
    GPUDirect RDMA, the transports and the environment NCCL read, as parse_nccl_debug reads it."""
    if not any(nccl_log.starts(x) for x in text.splitlines()):
        return
    log = parse_nccl_debug(text, "", 1)
    for name in ("nccl_nics", "nccl_gdr_disabled", "nccl_transports"):
        if getattr(log.network, name) is not None:
            setattr(rig.network, name, getattr(log.network, name))
    rig.software.env.update(log.software.env)


def _rank_gpus(rig: Rig, lines: list[str], source: str, first: int) -> None:
    """The GPUs an nccl-tests device line above the debug log names: those of its first host, one per device."""
    host = None
    for n, line in enumerate(lines):
        m = nccl_log.RANK_LINE.match(line)
        if m is None or (host is not None and m.group(2) != host) or any(g.index == int(m.group(3)) for g in rig.gpus):
            continue
        host = m.group(2)
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{first + n}"
        gpu = Gpu(index=int(m.group(3)), name=m.group(4) or None)
        gpu.unavailable["bus_id"] = "nccl-tests printed only the bus number"
        rig.gpus.append(gpu)
    if host is not None:
        rig.host.hostname = host


# The port counters perfquery and ibqueryerrors print (the InfiniBand names), as sysfs spells them
IB_COUNTERS = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait",
}
# perfquery's rows read: the error counters a scan reads from sysfs (ibqueryerrors reports the others past its
# thresholds too)
PERF_NAMES = {ib: sysfs for ib, sysfs in IB_COUNTERS.items() if sysfs in ERROR_COUNTERS}


def counter_port(device: str, port: int | None, tool: str, why: str = "") -> RdmaPort:
    """A port known by its counters alone: ``tool`` does not print its state; its number None for ``why``."""
    out = RdmaPort(device=device, port=port, counters={})
    if port is None:
        out.missing("port", why)
    out.missing("state", f"{tool} does not print it")
    return out


def add_count(port: RdmaPort, name: str, value: str) -> None:
    """The counter ``name`` (its InfiniBand name) under its sysfs name; a number wider than a counter is no count."""
    if int(value) < COUNTER_MAX and port.counters is not None:
        port.counters[IB_COUNTERS[name]] = int(value)


# perfquery: "# Port counters: Lid 5 port 1 (CapMask: 0x5300)" (or "# Port extended counters: ...") then
# "SymbolErrorCounter:..............1542" lines
_PERF_HEAD = re.compile(r"^\s*# Port (?:extended )?counters: Lid (\d{1,6}) port (\d{1,3})")
_PERF_ROW = re.compile(r"^\s*(\w+):\.*\s*(\d{1,20})\s*$")


@outside("perfquery")
def starts_perfquery(lines: list[str], i: int, current: Section | None) -> bool:
    """``# Port counters: Lid 5 port 1``, or (that header not pasted) ``PortSelect:....1`` or a counter row over
    another counter row of perfquery's (``SymbolErrorCounter:.....0``)."""
    if not outside_log(current):
        return False
    if _PERF_HEAD.match(lines[i]):
        return True
    row = _PERF_ROW.match(lines[i])
    if row is None or (row.group(1) != "PortSelect" and row.group(1) not in PERF_NAMES):
        return False
    below = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
    return bool((nxt := _PERF_ROW.match(below)) or re.match(r"^\s*CounterSelect:\.+", below)) and (
        nxt is None or nxt.group(1) in PERF_NAMES or nxt.group(1) == "CounterSelect"
    )


def parse_perfquery(text: str, source: str, first: int) -> Rig:
    """Each port's error counters; the port is named by its LID (perfquery does not print the adapter's name)."""
    rig = Rig()
    ports: list[RdmaPort] = []
    port: RdmaPort | None = None
    for line in text.splitlines():
        if head := _PERF_HEAD.match(line):
            port = counter_port(f"LID {head.group(1)}", int(head.group(2)), "perfquery")
            ports.append(port)
        elif port is None and (row := _PERF_ROW.match(line)) and row.group(1) in ("PortSelect", *PERF_NAMES):
            # counters pasted without their header: the port perfquery selected, its LID not shown
            selected = int(row.group(2)) if row.group(1) == "PortSelect" else None
            port = counter_port("LID not shown", selected, "perfquery", "perfquery's header and PortSelect not shown")
            ports.append(port)
            if row.group(1) in PERF_NAMES:
                add_count(port, row.group(1), row.group(2))
        elif port is not None and (row := _PERF_ROW.match(line)) and row.group(1) in PERF_NAMES:
            add_count(port, row.group(1), row.group(2))
    rig.network.rdma_ports = ports
    rig.origins["network.rdma_ports"] = f"{source}:{first}"
    return rig


# CUDA's cudaErrorSystemNotReady (802; the driver API's CUDA_ERROR_SYSTEM_NOT_READY), as a program prints its message
# ("system not yet initialized": gpu_burn's "Error (gpu_burn-drv.cpp:298): system not yet initialized", PyTorch's
# "cuda runtime error (802) : system not yet initialized", a CUDA sample's "code=802(cudaErrorSystemNotReady)"): the
# CUDA Runtime API's "the system is not yet ready to start any CUDA work ... all required driver daemons are actively
# running", on an NVSwitch system the fabric manager
CUDA_NOT_READY = re.compile(error_codes.alternation("cuda-not-ready"))  # error_codes' table: its texts and names
# the same error by its number alone, on a line that names CUDA: ollama's "cuInit err: 802" and "cuda driver library
# init failure: 802", "CUDA ERROR 802", "cuda runtime error (802)", a sample's "cudaGetDeviceProperties returned 802"
# the error the other workers of the same run print once the first failed (CUDA_ERROR_OPERATING_SYSTEM's message)
_OS_CALL = "OS call failed or operation not supported on this OS"
NOT_READY_KIND = "cuda-not-ready"


def cuda_not_ready(line: str) -> bool:
    """The line holds CUDA's error 802: its message or name, or its number after an error word on a line naming
    CUDA."""
    return bool(CUDA_NOT_READY.search(line)) or 802 in error_codes.numbers(line, "CUDA")


def starts_cuda_not_ready(lines: list[str], i: int, current: Section | None) -> bool:
    """A line with CUDA's error 802 (system not yet initialized), outside a kernel log and another such output."""
    return (
        cuda_not_ready(lines[i])
        and outside_log(current)
        and (current is None or current.kind not in (NOT_READY_KIND, "nccl-debug"))
    )


def parse_cuda_not_ready(text: str, source: str, first: int) -> Rig:
    """Each line with CUDA's error 802 as an event judged with the fabric (GA809); the OS-call errors of the same run
    counted with them."""
    lines = text.splitlines()
    seen = [(n, line.strip()) for n, line in enumerate(lines) if cuda_not_ready(line)]
    others = sum(_OS_CALL in line for line in lines)
    also = f" ({others} more worker(s): '{_OS_CALL}')" if others else ""
    events = [
        KernelEvent(kind=NOT_READY_KIND, code=802, text=f"CUDA error 802 'system not yet initialized': {said}{also}",
                    line=first + n)
        for n, said in seen
    ]  # fmt: skip
    return _events_rig(events, len(lines), source, first)


def _events_rig(events: list[KernelEvent], lines: int, source: str, first: int) -> Rig:
    rig = Rig()
    rig.kernel = KernelLog(source="imported", lines_read=lines, events=events)
    rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
    rig.origins["kernel.events"] = f"{source}:{first}"
    return rig


# CUDA's uncorrectable-ECC error, as the application that hit it prints it: the message of cudaErrorECCUncorrectable
# (214; CUDA_ERROR_ECC_UNCORRECTABLE, 39 before CUDA 4) "uncorrectable ECC error encountered" (PyTorch's
# "RuntimeError: CUDA error: uncorrectable ECC error encountered", its NCCL watchdog's "... terminated with exception:
# CUDA error: uncorrectable ECC error encountered", TensorFlow's "CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC
# error encountered"): the CUDA Runtime API's "an uncorrectable ECC error was detected during execution": the GPU's
# memory failed under the job
CUDA_ECC = re.compile(error_codes.alternation("cuda-ecc-uncorrectable"))  # error_codes' table: texts and names
ECC_KIND = "cuda-ecc-uncorrectable"
# CUDA's uncorrectable-NVLink error, as the application that hit it prints it: the message of
# cudaErrorNvlinkUncorrectable (220; CUDA_ERROR_NVLINK_UNCORRECTABLE) "uncorrectable NVLink error detected during
# the execution" (PyTorch's and TensorRT-LLM's "CUDA error: uncorrectable NVLink error ..."): an NVLink of the GPU
# failed under the job (the kernel logs it as Xid 74)
CUDA_NVLINK = re.compile(error_codes.alternation("cuda-nvlink-uncorrectable"))  # the table's texts and names
NVLINK_KIND = "cuda-nvlink-uncorrectable"
# a device the line names: a PCI bus id ("0000:3b:00.0"); a CUDA ordinal is the job's, not the machine's
_ECC_BUS = re.compile(r"\b[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\b")  # NVML's or lspci's


def starts_cuda_ecc(lines: list[str], i: int, current: Section | None) -> bool:
    """A line with CUDA's uncorrectable-ECC error, outside a kernel log, an NCCL log (its reader takes the error
    from the watchdog's line) and another such output."""
    return (
        ("ECC" in lines[i] or "NVLink" in lines[i] or "NVLINK" in lines[i])
        and bool(CUDA_ECC.search(lines[i]) or CUDA_NVLINK.search(lines[i]))
        and outside_log(current)
        and (current is None or current.kind not in (ECC_KIND, "nccl-debug"))
    )


def _first_event(lines: list[str], first: int, pattern: re.Pattern[str], kind: str, code: int) -> list[KernelEvent]:
    """The first line ``pattern`` finds (and how many more the log repeats it in) as one event of ``kind``; its device
    the bus id the line names, else unknown."""
    seen = [(n, line.strip()) for n, line in enumerate(lines) if pattern.search(line)]
    if not seen:
        return []
    n, said = seen[0]
    bus = _ECC_BUS.search(said)
    more = f" (and {len(seen) - 1} more line(s) with it)" if len(seen) > 1 else ""
    text = (said if len(said) <= 200 else said[:200] + "...") + more
    return [KernelEvent(kind=kind, code=code, bus_id=normalise_bus_id(bus.group(0)) if bus else None, text=text,
                        line=first + n)]  # fmt: skip


def cuda_ecc_events(lines: list[str], first: int) -> list[KernelEvent]:
    """The first line with CUDA's uncorrectable-ECC error, as an event judged with the GPU's memory (GA302)."""
    return _first_event(lines, first, CUDA_ECC, ECC_KIND, 214)


def parse_cuda_ecc(text: str, source: str, first: int) -> Rig:
    """CUDA's uncorrectable-ECC error an application printed, as one event (GA302), and its uncorrectable-NVLink
    error, as one event judged with the GPU's lost or wedged signs (GA820)."""
    lines = text.splitlines()
    events = cuda_ecc_events(lines, first) + _first_event(lines, first, CUDA_NVLINK, NVLINK_KIND, 220)
    return _events_rig(events, len(lines), source, first)


# A program's own line printing a CUDA or NVML return code of error_codes' table, in its own format (a miner's
# "cudaError 719 (unspecified launch failure) calling ...", JAX's "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory
# access was encountered", llama.cpp's "ggml_cuda_init: failed to initialize CUDA: system has unsupported display
# driver / cuda driver combination"), when a paste starts with it: each such line is the table's event
CODE_KIND = "cuda-error"


def starts_cuda_error(lines: list[str], i: int, current: Section | None) -> bool:
    """A paste that opens with a line printing a code of the table (what no more specific reader took): the first,
    one after a command's prompt or a closing fence, or one after another program's CUDA error."""
    after = current is None or current.kind in ("_after", NOT_READY_KIND, ECC_KIND)  # "_after": a fence closed one
    if not after and (i == 0 or not outside_log(current) or not _SHELL.match(lines[i - 1])):
        return False
    return error_codes.find(lines[i]) is not None


def parse_cuda_error(text: str, source: str, first: int) -> Rig:
    """Each line with a code of the table as the table's event; the other error lines about the GPU stack as lines
    GA828 lists."""
    lines = text.splitlines()
    events = [ev for n, line in enumerate(lines) if (ev := error_codes.event(line, first + n)) is not None]
    events += unjudged(text, first, {e.line for e in events if e.line is not None})
    rig = _events_rig(events, len(lines), source, first)
    rig.kernel.source = SERVICE_LOG  # the program's own output, not the kernel's
    return rig
