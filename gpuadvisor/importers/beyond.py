"""Pasted outputs beyond the GPU: kernel logs with Xid/SXid lines, ibstat, ibv_devinfo, ibstatus (their ports read in
:mod:`gpuadvisor.importers.rdma_ports`), systemctl status nvidia-fabricmanager, and the extra facts in outputs
other importers read (nvidia-smi -q "Fabric" blocks, lspci -vvv "ACSCtl" lines).

Each output is recognised by its first line (the ``starts_*`` functions below, each a row of
:mod:`gpuadvisor.importers.registry`), never by the file name; what they give is merged in
:mod:`gpuadvisor.importers.beyond_merge`. Prompts and notes between outputs are skipped; an elided stretch ("...",
"[...]", "<snip>") inside a port list leaves the ports after it out, and says so.
"""

from __future__ import annotations

import re

from gpuadvisor import facts
from gpuadvisor.catalog.cuda_drivers import SOURCE as CUDA_SOURCE
from gpuadvisor.catalog.cuda_drivers import cuda_for_driver
from gpuadvisor.facts import AcsPort, Fabric, GpuFabric, GpuProcess, KernelLog, Rig
from gpuadvisor.facts.beyond import FABRIC_NOT_CONFIGURED
from gpuadvisor.importers import imex
from gpuadvisor.importers.fragments import LSPCI_BUS_ID, PCI_BUS_ID, PCI_BUS_ID_ANY_DOMAIN, SYSLOG_TIME
from gpuadvisor.importers.rdma_ports import (
    DEVINFO,
    DEVINFO_DEVICE,
    DEVINFO_PORT,
    IBPANIC,
    IBSTAT,
    IBSTATUS,
    IBSTATUS_NONE,
    SYSFS,
    SYSFS_LOOP,
    key_value,
)
from gpuadvisor.importers.section import Detector, Section, outside_log
from gpuadvisor.importers.smi_query import Q_GPU
from gpuadvisor.probes.kmsg import normalise_bus_id, parse_log
from gpuadvisor.probes.kmsg_journal import from_journal_json, journal_line
from gpuadvisor.probes.kmsg_signs import BSD_MLX, SIGN_RE, TYPED_BUS
from gpuadvisor.probes.kmsg_unjudged import unjudged
from gpuadvisor.probes.pcie_acs import ACS_BITS

LOG_LINE = re.compile(
    r"^\s*(?:(?:\d{1,3}(?:\.\d{1,3}){3}:\s+){1,2}|[\w.-]{1,63}:\s+(?=\[\s*\d+\.\d+\]))?"  # Talos (talosctl
    # dmesg), pdsh: the node's address first (twice: relayed by a second launcher); pdsh or clush: the host's name
    # before a dmesg line ("b1360: [14280.445220] ...")
    r"(?:<\d{1,3}>)?"  # dmesg -r: the raw priority "<4>"
    r"(?:(?:\w+\s+)?(?:kern|user|daemon|syslog|auth\w*|local\d)\s*:\s*"  # dmesg -x: "kern  :err   : " before the
    r"(?:emerg|alert|crit|err(?:or)?|warn(?:ing)?|notice|info|debug)\s*:\s*)?"  # time (after a quoting word: gpud's
    # "line "; Talos: "kern: warning: [ISO time]: ")
    r"(?:\[\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?\]:?\s"  # Talos: the ISO time in brackets
    r"|\[\s*[+]?\d+\.\d+\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d+ [\d:]+ \d{4}\]|\d+,\d+,\d+,[^;]*;"
    r"|\[[A-Z][a-z]{2}\d{1,2} \d\d:\d\d\]"  # dmesg -H: "[Jan21 10:00]" before relative "[  +0.000844]" lines
    rf"|{SYSLOG_TIME}(?:\s+\S+)?\s+kernel:"  # syslog, any locale's month
    # (journalctl -o short-precise: microseconds after the seconds)
    r"|\d{4}-\d\d-\d\d[T ][\d:.,]+\S*\s+\S+\s+kernel:"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+(?:Z|[+-]\d\d:?\d\d)\s"  # dmesg --time-format iso
    r"|kernel:(?:\s|(?=\[))"  # syslogd's console broadcast: " kernel:[Hardware Error]: ..."
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?\s+(?=NVRM:|S?Xid\b|nvidia|kernel:))"  # a bare "19:15:34  NVRM: ..." clock time
)
# syslogd's console broadcast of an emergency kernel message: "Message from syslogd@host at Nov 10 08:58:06 ..."
# then the message itself on the next line (" kernel:[Hardware Error]: ...")
_BROADCAST = re.compile(r"^\s*Message from syslogd@\S+ at ")
_CARRIER = re.compile(
    rf"^\s*{SYSLOG_TIME}\s+\S+\s+systemd-networkd\[\d+\]:\s+"
    r"ib\w*: (?:[Ll]ost|Gained) carrier"
)
_SMI_FABRIC = re.compile(r"^\s*State\s+:\s")
_FM = re.compile(r"^\W*nvidia-fabricmanager(?:\.service)?\s+-\s")
FM_WORDS = (
    "nv-fabricmanager[",
    "nvidia-fabricmanager.service:",
    "nvidia-fabricmanager-start.sh[",
    "Job for nvidia-fabricmanager.service failed",
    " nvidia-fabricmanager-wrapper: ",  # Talos's fabric manager / NVLSM wrapper (B200, GB200)
    # its version check's error, quoted without the journal's "nv-fabricmanager[pid]: " (the fabric manager's
    # FMGpuDriverVersionCheck: "... NVIDIA GPU driver interface version X don't match with driver version Y")
    "GPU driver interface version ",
    # the start script (nvidia-fabricmanager-start.sh, NVLink5+ systems) and the GPU operator driver container's line
    # before it: "Starting NVIDIA fabric manager daemon for NVLink5+...", the script's usage banner
    "Starting NVIDIA fabric manager daemon",
    "NVIDIA Fabric Manager Start Script",
    # its log's configuration errors, pasted without the log's time and thread ("[ERROR] not all local fabric manager
    # instances finished their configuration"): the words only the fabric manager logs
    "local fabric manager instance",
    "fabric manager error handler is called",
    "configure all the available GPUs or NVSwitches",
)
# The fabric manager's log lines that say the fabric was left unconfigured: its config-failure handler (global FM
# GlobalFMErrorHndlr::handleErrorConfigFailed: "failed to configure NVSwitch/GPU global settings", "... NVSwitch
# settings", "... NVSwitch port", "... GPU settings", "... unhandled config error type N"; then it marks the node in
# config error and clears the FM session on every node), its start-up's "failed to configure all the available GPUs or
# NVSwitches" / "not all local fabric manager instances finished their configuration", and a fatal NVSwitch error's
# "leaving the system uninitialized". Until the fabric manager configures the fabric, CUDA fails on the GPUs with
# "system not yet initialized" (NVIDIA Fabric Manager User Guide). Its other [ERROR] lines (an NVSwitch or NVLink error
# it reports and handles) say nothing about the fabric being set up: they stay the log's own (SXids, GA828).
_FM_CONFIG_ERROR = re.compile(
    r"not all local fabric manager instances finished their configuration"
    r"|fabric manager error handler is called for unhandled config error type \d+"
    r"|failed to configure (?:all the available GPUs or NVSwitches|NVSwitch/GPU global settings|NVSwitch settings"
    r"|NVSwitch port|GPU settings)"
    r"|leaving the system uninitialized",
    re.IGNORECASE,
)
# the fabric manager's own log file (/var/log/fabricmanager.log): "[May 16 2025 15:10:21] [INFO] [tid 30042] ..."
_FM_LOG = re.compile(r"^\s*\[[A-Z][a-z]{2} \d{1,2} \d{4} [\d:]+\] \[(?:INFO|WARNING|ERROR|FATAL)\] \[tid \d+\]")
MISMATCH_RE = re.compile(  # on one line, or wrapped after the first version
    r"interface version (\d[\w.]*?)\.?\s+(?:don't|doesn't|don’t|does not) match with driver "
    r"version (\d[\w.]*?)\.?(?:\s|$)"
)
# the same line cut before the driver's version ("... interface version 535.183.01 don'"): the fabric manager logs its
# own interface version in these words only when its version check fails (FMGpuDriverVersionCheck), then exits
MISMATCH_CUT_RE = re.compile(r"fabric manager NVIDIA GPU driver interface version\s+(\d+(?:\.\d+)+)\b")


# a device's PCIe AER line without a time ("rtl8192ee 0000:05:00.0: AER: Error of this agent is reported first"): a
# kernel log, of any device (a paste of them alone is a log with no GPU event)
# (retyped by hand: a colon for the function's dot, "pcieport 0000:00:1c:0: PCIe Bus Error: serverity=Corrected")
_AER = re.compile(
    rf"^\s*[\w-]+ (?:{LSPCI_BUS_ID}|{TYPED_BUS}): "
    r"(?:AER: |PCIe Bus Error)"
)


# Kernel lines with no time (dmesg --notime, grepped message text, a log quoted by a post): "NVRM: ..." and
# "nvidia-nvswitch...", a device's PCIe AER line ("pcieport 0000:00:01.2: AER: ..."), or an NVRM line quoted in
# another tool's report (gpud: '[XID found] (54 minutes ago) "NVRM: Xid (PCI:...'), or behind a platform's tags
# (Modal's gpu-health: "[gpu-health] [CRITICAL] GPU-1234: XID: NVRM: Xid ..."); a Talos node's kernel line.
_BARE = re.compile(
    r"^\s*(?:"
    + _AER.pattern.removeprefix(r"^\s*")
    + r"|\[[^\]\n]{1,40}\]\s*(?:\([^)\n]{1,40}\)\s*)?\"NVRM: "
    # a health agent's or platform's tags before the kernel line ("[gpu-health] [CRITICAL] GPU-1234: XID: NVRM: ...")
    + r"|(?:\[[^\]\n]{1,40}\]\s*|[\w.-]{1,40}:\s+){1,6}NVRM: (?=Xid\b|GPU\b)"
    # the kernel's AER message quoted without its device ("PCIe Bus Error: severity=Corrected, ..."; retyped:
    # "serverity=")
    + r"|(?:AER: )?PCIe Bus Error: ser?verity="
    # a PCI device's own kernel line (the kernel's dev_printk: driver, full bus id, colon) quoted without the time:
    # "nvidia 0000:01:00.0: probe with driver nvidia failed with error -1", "nouveau 0000:01:00.0: gsp ctor failed";
    # it starts a log only when it names NVIDIA or holds a sign (starts_kernel_log)
    + rf"|[\w-]{{1,40}} {PCI_BUS_ID}: )"
)


# the kernel's own crash-report lines (an oops's call trace, modules and code address, the panic), kernel-only words
_CRASH = re.compile(
    r"^\s*(?:<TASK>\s*$|Call Trace:\s*$|Modules linked in: |Kernel panic - not syncing: |RIP: [0-9a-fA-F]{4}:\S"
    r"|BUG: \S)"
)


def starts_kernel_log(lines: list[str], i: int, current: Section | None) -> bool:
    """A dmesg (any --time-format, -H), journalctl -k, syslog (any locale's month names) or /dev/kmsg line that
    mentions NVRM, Xid or nvidia, or holds a sign probes/kmsg_signs.py reads (PCIe AER, an mlx5 link flap); a
    journalctl -o json entry as the line it stands for; a FreeBSD Mellanox driver's line."""
    line = journal_line(lines[i]) or lines[i]
    bare = line.lstrip().startswith(("NVRM: ", "nvidia-nvswitch", "nvidia-modeset: ")) or bool(_BARE.match(line))
    if current is None and (LOG_LINE.match(line) or _AER.match(line)):
        return True  # a paste that starts as a kernel log is one, NVIDIA lines in it or not ("no fault in the log")
    if (
        current is None
        and _BROADCAST.match(line)
        and i + 1 < len(lines)
        and lines[i + 1].lstrip().startswith("kernel:")
    ):
        return True
    if current is None and _CARRIER.match(line):
        return True  # systemd-networkd's IPoIB carrier lines in the syslog (no "kernel:")
    if current is None and _CRASH.match(line):
        return True  # a console's crash report pasted alone: its trace, modules and panic lines carry no time
    if BSD_MLX.match(line) and outside_log(current):
        return True  # a FreeBSD Mellanox driver's kernel line ("mlx5_core0: INFO: ..."): no time, no PCI address
    return (
        outside_log(current)
        and bool(LOG_LINE.match(line) or bare)
        and ("NVRM" in line or "Xid" in line or "nvidia" in line or bool(SIGN_RE.search(line)))
    )


def _starts_at(pattern: re.Pattern[str], kind: str) -> Detector:
    def starts(lines: list[str], i: int, current: Section | None) -> bool:
        return bool(pattern.match(lines[i])) and outside_log(current) and (current is None or current.kind != kind)

    return starts


_starts_ca = _starts_at(re.compile(f"{IBSTAT.pattern}|{IBPANIC.pattern}"), "ibstat")  # CA 'mlx5_0', ibpanic
_PORT_ONLY = re.compile(r"^\s*Port \d{1,3}:\s*$")


def starts_ibstat(lines: list[str], i: int, current: Section | None) -> bool:
    """``CA 'mlx5_0'`` or ``ibpanic:``; or an ibstat fragment pasted from its ``Port 1:`` line, its ``State:`` and
    ``Physical state:`` lines below (no CA header: the adapter is not named)."""
    if _starts_ca(lines, i, current):
        return True
    if not _PORT_ONLY.match(lines[i]) or not outside_log(current) or (current is not None and current.kind == "ibstat"):
        return False
    below = [x.strip() for x in lines[i + 1 : i + 4]]
    return any(x.startswith("State:") for x in below) and any(x.startswith("Physical state:") for x in below)


_starts_hca = _starts_at(DEVINFO, "ibv-devinfo")  # hca_id: mlx5_0


def starts_ibv_devinfo(lines: list[str], i: int, current: Section | None) -> bool:
    """ibv_devinfo's "hca_id: mlx5_0", or a port block of it ("port: 1" over "state: PORT_ACTIVE (4)") or its device
    block ("sys_image_guid:" over "vendor_id:") in a fragment cut below its "hca_id:" line."""
    if _starts_hca(lines, i, current):
        return True
    two = "\n".join(lines[i : i + 2])
    return (
        outside_log(current)
        and (current is None or current.kind != "ibv-devinfo")
        and bool(DEVINFO_PORT.match(two) or DEVINFO_DEVICE.match(two))
    )


# "Infiniband device 'mlx5_0' port 1 status:", or its fatal error (no device: "Fatal error:  device '*': sys ...")
starts_ibstatus = _starts_at(re.compile(f"{IBSTATUS.pattern}|{IBSTATUS_NONE.pattern}"), "ibstatus")
# /sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE, or a shell loop's prompt in a port's counters directory
starts_ib_sysfs = _starts_at(re.compile(f"{SYSFS.pattern}|{SYSFS_LOOP.pattern}"), "ib-sysfs")


def starts_fabric_manager(lines: list[str], i: int, current: Section | None) -> bool:
    """systemctl status nvidia-fabricmanager, or its log lines pasted alone."""
    line = lines[i]
    fm = bool(_FM.match(line) or _FM_LOG.match(line)) or any(k in line for k in FM_WORDS)
    return fm and outside_log(current) and (current is None or current.kind != "fabric-manager")


def starts_smi_fabric(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``Fabric`` line followed by ``State :``: nvidia-smi -q | grep -A 4 Fabric."""
    return (
        lines[i].strip() == "Fabric"
        and outside_log(current)
        and (current is None or current.kind not in ("smi-q", "smi-fabric"))
        and i + 1 < len(lines)
        and bool(_SMI_FABRIC.match(lines[i + 1]))
    )


_NO_HANDLE = re.compile(
    rf"^\W*Unable to (?:determine|detect) the device handle for GPU\s*({PCI_BUS_ID_ANY_DOMAIN})\s*:\s*(.*)$"
)


def starts_smi_no_handle(lines: list[str], i: int, current: Section | None) -> bool:
    """nvidia-smi's ``Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error``."""
    inside = current is not None and current.kind in ("smi-lost", "smi-q", "smi-summary", "smi-xml")
    return bool(_NO_HANDLE.match(lines[i])) and outside_log(current) and not inside  # -q and the table read it


def parse_smi_no_handle(text: str, source: str, first: int) -> Rig:
    """Each GPU nvidia-smi could not open: an NVIDIA function on the bus that NVML does not list (GA810 judges)."""
    rig = Rig()
    lost = []
    for line in text.splitlines():
        m = _NO_HANDLE.match(line)
        if m:
            bus = m.group(1).lower()
            lost.append("0000:" + bus if bus.count(":") == 1 else normalise_bus_id(bus))
    rig.node.nvidia_pci_functions = list(dict.fromkeys(lost))
    rig.origins["node.nvidia_pci_functions"] = f"{source}:{first}"
    return rig


LOADING = re.compile(r"NVRM: loading NVIDIA UNIX .*?Kernel Module")
# its version: "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  515.65.01  Wed Jul 20 ...", "... Open Kernel Module for
# x86_64  560.35.03  Release Build ..."
_LOADED = re.compile(r"NVRM: loading NVIDIA UNIX .{0,40}?Kernel Module(?: for \S+)?\s+(\d{3}\.\d+(?:\.\d+)?)\s")


# NVRM's API mismatch (open-gpu-kernel-modules, nv.c: "API mismatch: the client has the version %s, but / this kernel
# module has the version %s.  Please / make sure ..."; since 2025 "the client 'NAME' (pid N) / has the version %s, but
# this kernel module has / the version %s.  Please"): each part may sit on the next line, behind any log prefix
_API_CLIENT = re.compile(
    r"API mismatch: the client[^\n]{0,80}?(?:\n[^\n]{0,120}?)?has the version (\d+(?:\.\d+)+), but"
)
_API_MODULE = re.compile(r"this kernel module has[^\n]{0,80}?(?:\n[^\n]{0,120}?)?the version (\d+(?:\.\d+)+)\.\s")


def parse_kernel_log(text: str, source: str, first: int, *, unjudged_too: bool = True) -> Rig:
    """A pasted kernel or service log's events (and, unless ``unjudged_too`` is False, its error lines about the GPU
    stack that no sign stands for: :func:`gpuadvisor.probes.kmsg_unjudged.unjudged`)."""
    text = from_journal_json(text)
    events, n = parse_log(text, first_line=first)
    if unjudged_too:
        events += unjudged(text, first, {e.line for e in events if e.line is not None})
    loading = LOADING.search(text)
    rig = kernel_rig(events, n, source, first, loading.group(0) if loading else None)
    if module := _API_MODULE.search(text):  # the user-space driver is another version than the loaded module
        client = _API_CLIENT.search(text)
        rig.software.unavailable["driver_version"] = (
            f"{facts.DRIVER_MISMATCH} (the kernel log: NVRM API mismatch, the loaded module is {module.group(1)}"
            + (f", a client has {client.group(1)}" if client else "")
            + ")"
        )
        rig.origins["software.driver_version"] = f"{source}:{first + text.count(chr(10), 0, module.start())}"
    elif loading and (loaded := list(_LOADED.finditer(text))):  # the module loaded last: the driver running now
        sw, version = rig.software, loaded[-1].group(1)
        sw.driver_version = version
        rig.origins["software.driver_version"] = f"{source}:{first + text.count(chr(10), 0, loaded[-1].start())}"
        if (cuda := cuda_for_driver(version)) is not None:  # the log does not print it: the driver's branch tells it
            sw.cuda_driver_version = cuda
            rig.origins["software.cuda_driver_version"] = f"catalog: driver {version}, {CUDA_SOURCE}"
    return rig


def kernel_rig(events: list[facts.KernelEvent], lines: int, source: str, first: int, loading: str | None) -> Rig:
    """A pasted log's facts: its events, the lines read, and the driver flavour its "loading" line names."""
    rig = Rig()
    rig.kernel = KernelLog(source="imported", lines_read=lines, events=events)
    rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
    if loading:
        from gpuadvisor.probes.nodestate import module_flavour

        rig.network.gpu_kernel_module = module_flavour(loading)
    rig.origins["kernel.events"] = f"{source}:{first}"
    return rig


def parse_smi_fabric(text: str, source: str, first: int) -> Rig:
    rig = Rig()
    rig.fabric.gpus = smi_fabric(text, bare=True)
    rig.origins["fabric.gpus"] = f"{source}:{first}"
    return rig


def parse_fabric_manager_output(text: str, source: str, first: int) -> Rig:
    rig = Rig()
    rig.fabric = imex.read_imex(text) if imex.is_imex(text) else parse_fabric_manager(text)
    rig.origins["fabric.imex_state" if imex.is_imex(text) else "fabric.manager_state"] = f"{source}:{first}"
    sxids = fm_sxids(text, first)
    if sxids:  # the NVSwitch errors the fabric manager logged, judged as the kernel's SXid lines are
        rig.kernel = KernelLog(source="imported", lines_read=text.count("\n") + 1, events=sxids)
        rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
        rig.origins["kernel.events"] = f"{source}:{first}"
    return rig


# the fabric manager log's own report of an NVSwitch error (the gpud project's recorded fabricmanager.log):
# "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus
# id 00000000:86:00.0 physical id 3 port 61"
_FM_SXID = re.compile(
    r"^\s*(?:\[([A-Z][a-z]{2} \d{1,2} \d{4} [\d:]+)\]\s*)?.*?\bdetected NVSwitch (fatal|non-fatal) error (\d{1,6})\b"
    rf"(?:.*?\bpci bus id ({PCI_BUS_ID_ANY_DOMAIN}))?(?:.*?\bport (\d{{1,3}}))?",
    re.IGNORECASE,
)


def fm_sxids(text: str, first: int) -> list[facts.KernelEvent]:
    """The SXid events of a fabric manager log: each "detected NVSwitch fatal|non-fatal error N" line, its switch
    by PCI bus id, its port as the link, and its fatality in the words of a kernel SXid line."""
    out = []
    for n, line in enumerate(text.splitlines()):
        m = _FM_SXID.match(line)
        if m is None:
            continue
        when, fatality, code, bus, port = m.groups()
        said = "Fatal" if fatality.lower() == "fatal" else "Non-fatal"
        link = f", Link {port}" if port else ""
        out.append(
            facts.KernelEvent(
                kind="sxid",
                code=int(code),
                bus_id=normalise_bus_id(bus) if bus else None,
                time=when,
                text=f"{said}{link} logged by the fabric manager",
                line=first + n,
            )
        )
    return out


# a fabric manager that started after all (a later try, once the packages matched)
_STARTED = re.compile(r"Started NVIDIA fabric manager|configured all the available NVSwitches|Active: active")


def parse_fabric_manager(text: str) -> Fabric:
    """systemctl status nvidia-fabricmanager: the "Active:" line, and a version mismatch in the log lines."""
    fab = Fabric()
    loaded = re.search(r"^\s*Loaded:\s*(\S+)", text, re.M)
    active = re.search(r"^\s*Active:\s*(\S+)(.*)$", text, re.M)
    if loaded and loaded.group(1) == "not-found":
        fab.manager_state = "not-installed"
    elif active:
        fab.manager_state = active.group(1)
        fab.manager_detail = ("Active: " + active.group(1) + active.group(2)).strip()[:160]
    elif re.search(
        r"status=\d+/FAILURE|Failed with result|Failed to start|Job for nvidia-fabricmanager\S* failed"
        r"|^\s*×\s*nvidia-fabricmanager",  # systemd (248+) marks a failed unit with "×" before its name
        text,
        re.M,
    ):
        fab.manager_state = "failed"  # the log lines alone, without systemctl's "Active:" line
        fab.manager_detail = "the service's log shows it exiting with a failure"
    elif re.search(r"^\W*Usage: \S*nvidia-fabricmanager-start\.sh", text, re.M):
        # the start script printed its usage instead of starting the daemon (an option it does not know)
        bad = re.search(r"^\W*Unknown option:\s*(\S[^\n]{0,120})", text, re.M)
        fab.manager_state = "failed"
        said = f"rejected its options ('Unknown option: {bad.group(1).strip()}')" if bad else "printed its usage"
        fab.manager_detail = f"nvidia-fabricmanager-start.sh {said}: the fabric manager was not started"
    else:
        fab.missing("manager_state", f"{facts.ELIDED}: no 'Active:' line")
    _config_error(fab, text)
    if "NV_WARN_NOTHING_TO_DO" in text:  # the fabric manager found no NVSwitch (or, NVLink5+, no NVLSM)
        fab.nvswitches = False
        fab.manager_detail = "NV_WARN_NOTHING_TO_DO: the fabric manager found no NVSwitch to manage" + (
            f"; {fab.manager_detail}" if fab.manager_detail else ""
        )
    elif re.search(r"configured all the available NVSwitches|NVSwitch (?:LPF|management port)", text):
        fab.nvswitches = True
    mismatch = MISMATCH_RE.search(text) or MISMATCH_CUT_RE.search(text)
    if mismatch:
        fm, driver = (*mismatch.groups(), None)[:2]
        said = f"fabric manager {fm} does not match " + (
            f"driver {driver}" if driver else "the loaded driver, whose version the cut line does not show"
        )
        fab.manager_detail = said + (f"; {fab.manager_detail}" if fab.manager_detail else "")
        if fab.manager_state is None and not _STARTED.search(text, mismatch.end()):
            # the fabric manager's version check logs this line, then throws: the daemon exits, its service fails
            fab.manager_state = "failed"
            quoted = " ".join(mismatch.group(0).split()).rstrip(".")
            fab.manager_detail = f"{said}: it exits at its version check ('{quoted}')"
    return fab


def _config_error(fab: Fabric, text: str) -> None:
    """A log that shows the fabric manager failing to configure the fabric (no service state shown): failed, the
    NVSwitch fabric not configured (it got as far as configuring, so the box has NVSwitches)."""
    error = _FM_CONFIG_ERROR.search(text)
    if error is None or fab.manager_state is not None:
        return
    fab.manager_state = "failed"
    fab.unavailable.pop("manager_state", None)
    fab.nvswitches = True
    fab.manager_detail = (
        f"{FABRIC_NOT_CONFIGURED} (its log: '{error.group(0)}'): CUDA on the GPUs fails with 'system not yet "
        "initialized' until it does"
    )


# -- extra facts in outputs other importers read ------------------------------------------------------------

_FABRIC_STATES = {
    "completed": "completed",
    "in progress": "in-progress",
    "not started": "not-started",
    "not supported": "not-supported",
}


def smi_fabric(text: str, bare: bool = False, headless: bool = False) -> list[GpuFabric]:
    """The "Fabric" block of each GPU in nvidia-smi -q (State, Status, CliqueId, ClusterUUID, Health's Bandwidth),
    in GPU order.
    ``bare``: blocks grepped out of -q without their GPU lines (``grep -A 4 Fabric``), numbered in order.
    ``headless``: the paste starts inside a GPU's record (its ``GPU 0000:..`` line cut off): that record is GPU 0."""
    out: list[GpuFabric] = []
    gpu = 0 if headless else -1
    block: GpuFabric | None = None
    indent = 0
    for line in text.splitlines():
        if Q_GPU.match(line):
            gpu += 1
            block = None
            continue
        stripped = line.strip()
        lead = len(line) - len(line.lstrip())
        if stripped == "Fabric" and (gpu >= 0 or bare):
            if bare:
                gpu += 1
            block = GpuFabric(gpu_index=gpu)
            out.append(block)
            indent = lead
            continue
        if block is None:
            continue
        if stripped and lead <= indent:
            block = None
            continue
        kv = key_value(line)
        if kv is None:
            continue
        key, value = kv
        na = value.upper() in ("N/A", "[N/A]", "NOT SUPPORTED", "[NOT SUPPORTED]")
        if key == "state":
            if na:
                block.missing("state", facts.NOT_SUPPORTED)
            else:
                block.state = _FABRIC_STATES.get(value.lower(), value.lower())
        elif key == "status":
            if na:
                block.missing("status", facts.NOT_SUPPORTED)
            else:
                block.status = "success" if value.lower() == "success" else value
        elif key == "cliqueid" and value.isdigit():
            block.clique_id = int(value)
        elif key == "clusteruuid" and not na:
            block.cluster_uuid = value
        elif key == "summary" and not na:  # Health / Summary (drivers 570+): Healthy | Unhealthy | ...
            block.health_summary = value
        elif key == "bandwidth":  # the Health sub-block (drivers 570+): Full | Degraded | N/A
            if value.lower() in ("full", "degraded"):
                block.degraded_bandwidth = value.lower() == "degraded"
            else:
                block.missing("degraded_bandwidth", facts.NOT_SUPPORTED if na else f"unrecognised value {value!r}")
    return out


_LSPCI_DEV = re.compile(rf"^({LSPCI_BUS_ID}) ")
_ACS_FLAG = re.compile(r"(\w+)([+-])")


def lspci_acs(text: str) -> list[AcsPort]:
    """Bridges with an "ACSCtl:" line in lspci -vvv, with their bits (which GPUs sit below is not in lspci -vvv)."""
    out: list[AcsPort] = []
    bdf: str | None = None
    for line in text.splitlines():
        m = _LSPCI_DEV.match(line)
        if m:
            bdf = m.group(1).lower()
            if bdf.count(":") == 1:
                bdf = "0000:" + bdf
            continue
        s = line.strip()
        if s.startswith("ACSCtl:"):
            flags = {k: v == "+" for k, v in _ACS_FLAG.findall(s[len("ACSCtl:") :]) if k in ACS_BITS}
            out.append(AcsPort(bus_id=bdf or "", control=flags))  # "": its device line is not in the paste
    return out


_PROC_ROW = re.compile(
    r"^\|\s+(\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(\d+)\s+(C\+G|M\+C|C|G|M)\s+(.*?)\s+"
    r"(\d+)MiB\s*\|\s*$"
)


def smi_processes(text: str) -> list[GpuProcess] | None:
    """The Processes table of plain nvidia-smi: [] for "No running processes found", None when not shown."""
    if "Processes:" not in text:
        return None
    block = text[text.index("Processes:") :]
    if "No running processes found" in block:
        return []
    out = []
    for line in block.splitlines():
        m = _PROC_ROW.match(line.strip())
        if m:
            gpu, pid, kind, name, mib = m.groups()
            used = int(mib) * 2**20
            out.append(GpuProcess(gpu_index=int(gpu), pid=int(pid), name=name or None, used_bytes=used, kind=kind))
    return out


def add_processes(rig: Rig, text: str) -> None:
    """The Processes table of plain nvidia-smi (a row's extras)."""
    procs = smi_processes(text)
    if procs is not None:
        rig.node.gpu_processes = procs


def add_fabric(rig: Rig, text: str) -> None:
    """The Fabric blocks of nvidia-smi -q (a row's extras); a paste that starts inside a GPU's record (the -q reader
    counts it as GPU 0, no bus id: its header cut off) has that GPU's Fabric block too."""
    fabric = smi_fabric(text, headless=bool(rig.gpus) and rig.gpus[0].bus_id is None)
    if fabric:
        rig.fabric.gpus = fabric


# An NVIDIA GPU's device line in lspci (any of -v, -vv, -nn, -D): VGA, 3D or display controller class (0300, 0302,
# 0380); not the NVSwitch bridges nor the GPU's audio function.
_LSPCI_GPU = re.compile(
    rf"^\s*({PCI_BUS_ID_ANY_DOMAIN})\s+"
    r"(?:VGA compatible controller|3D controller|Display controller)(?: \[03[08]\d\])?:\s*NVIDIA",
    re.M,
)


def add_acs(rig: Rig, text: str) -> None:
    """The facts beyond the GPU of an lspci output (a row's extras): its ACSCtl lines (lspci -vvv), and the NVIDIA
    GPUs it lists on the bus, which GA810 holds against the GPUs nvidia-smi lists."""
    acs = lspci_acs(text)
    if acs:
        rig.network.acs = acs
    funcs = [m.group(1).lower() for m in _LSPCI_GPU.finditer(text)]
    if funcs:
        full = [f if f.count(":") == 2 else "0000:" + f for f in funcs]
        rig.node.nvidia_pci_functions = list(dict.fromkeys(normalise_bus_id(f) for f in full))
