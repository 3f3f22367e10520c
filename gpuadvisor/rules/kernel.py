"""GA801-GA802: NVIDIA driver events of the kernel log (Xid for GPUs, SXid for NVSwitches)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from gpuadvisor.catalog.xids import (
    CATALOG,
    NOT_APPLICATION,
    XIDS,
    Xid,
    cause_of,
    event_severity,
    recovery_action,
    recovery_kind,
)
from gpuadvisor.facts import Finding, KernelEvent, Rig
from gpuadvisor.facts.model import DRIVER_MISMATCH
from gpuadvisor.rules.engine import Context
from gpuadvisor.rules.helpers import missing
from gpuadvisor.rules.kernel_signs import LOST_SIGNS, consequences, lost_key
from gpuadvisor.rules.registry import rule

LOWER = {"fail": "warn", "warn": "info", "info": "info"}
HIGHER = {"info": "info", "warn": "fail", "fail": "fail"}


def _grouped(rig: Rig, ctx: Context, kind: str) -> dict[tuple[str, int], list[KernelEvent]] | Finding:
    """The log's events of ``kind`` by (bus id, number), or the not-checked finding when there is no log."""
    events = rig.kernel.events
    if events is None:
        return ctx.not_checked(missing(rig.kernel, "events", "kernel log"), subject="host")
    groups: dict[tuple[str, int], list[KernelEvent]] = {}
    for ev in events:
        if ev.kind == kind:
            where = ev.bus_id or (f"GPU {ev.gpu_index}" if ev.gpu_index is not None else "?")
            groups.setdefault((where, ev.code), []).append(ev)
    return groups


def grouped_events(
    rig: Rig, ctx: Context, kinds: Iterable[str], key: Callable[[KernelEvent], str]
) -> dict[str, list[KernelEvent]] | Finding:
    """The log's events of ``kinds`` by ``key(event)``, in log order, or the not-checked finding without a log."""
    events = rig.kernel.events
    if events is None:
        return ctx.not_checked(missing(rig.kernel, "events", "kernel log"), subject="host")
    wanted = set(kinds)
    groups: dict[str, list[KernelEvent]] = {}
    for ev in events:
        if ev.kind in wanted:
            groups.setdefault(key(ev), []).append(ev)
    return groups


def weight(ev: KernelEvent) -> int:
    """How many log lines an event stands for: itself and those like it counted, not kept, in a long log."""
    return 1 + max(ev.more, 0)


def tally(evs: Iterable[KernelEvent]) -> int:
    """How many log lines the events stand for (:func:`weight`)."""
    return sum(weight(e) for e in evs)


def _trail(evs: list[KernelEvent]) -> dict[str, object]:
    """How many, where the first is and when the last was: the evidence every kernel-log finding carries."""
    return {
        "count": tally(evs),
        "first_line": evs[0].line,
        "last_uptime_s": evs[-1].uptime_s,
        "last_time": evs[-1].time,
    }


# Xid 45 with no cause on its line: the catalog's action is "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)";
# NVIDIA's Xid Errors guide, Xid 45: logged when the driver tears down an aborted application (Ctrl-C, a GPU reset,
# SIGKILL), so alone it is a killed job's cleanup on most machines, and a fabric manager restart on NVSwitch ones.
XID45_SOLO = (
    "; solo (no other Xid on this GPU in this log): the cleanup of an aborted job (Ctrl-C, SIGKILL, a GPU reset), "
    "nothing to do unless it repeats; on an NVSwitch system the catalog's action is to restart the fabric manager"
)


# what the recovery action an Xid 154 names asks for (NVIDIA Xid catalog, Xid 154; NVML's GPU recovery action)
RECOVERY_FIX = {
    "node reboot required": "the driver asks for a node reboot: drain the node and reboot it, then follow the Xid "
    "that led to it (the lines above it)",
    "gpu reset required": "the driver asks for a GPU reset: drain the GPU's jobs and reset it (nvidia-smi -r), or "
    "reboot",
    "drain and reset": "the driver asks to drain the GPU's jobs, then reset it (nvidia-smi -r)",
    "drain p2p": "the driver asks to drain peer-to-peer traffic: move jobs that use P2P/NVLink off this GPU until "
    "it is reset",
}


def _xid_fix(x: Xid | None, severity: str, causes: list[int], logged: set[int], others: set[int]) -> str:
    """What to do, cause first: an Xid caused by another follows that one's action; a firmware error at driver
    load is the driver's or firmware's, not the application's; Xid 45 alone or beside other Xids of its GPU."""
    if x is None:
        return "look the number up in NVIDIA's Xid catalog and the driver's release notes"
    fix = f"catalog: {x.immediate}, then {x.investigatory}"
    if causes:
        acts = [f"Xid {c}: {XIDS[c].immediate}" for c in causes if c in XIDS]
        where = "" if all(c in logged for c in causes) else " (find it in the full log: it is not in this one)"
        return f"follow the cause{where}: " + ("; ".join(acts) or "see the catalog") + f"; Xid {x.code} is cleanup"
    if x.code == 45:
        also = ", ".join(f"Xid {c}" for c in sorted(others))
        return fix + (
            f"; not solo ({also} on this GPU too): follow that one, this is its cleanup" if also else XID45_SOLO
        )
    if x.code in NOT_APPLICATION:
        fix += "; " + NOT_APPLICATION[x.code]
    elif severity == "info" and x.application:
        fix += "; an application fault: the GPU stays usable, debug the job (compute-sanitizer, cuda-gdb)"
    elif severity == "info" and x.firmware:
        fix += "; a driver firmware error (often at driver load), not the application's: update the driver and "
        fix += "GPU firmware if it returns"
    return fix


def _age_h(rig: Rig, ev: KernelEvent) -> float | None:
    if rig.kernel.uptime_s is None or ev.uptime_s is None or ev.uptime_s > rig.kernel.uptime_s:
        return None
    return (rig.kernel.uptime_s - ev.uptime_s) / 3600


# NVIDIA Xid catalog, Xid 31 (GPU memory page fault): resolution RESTART_APP, investigatory action WORKFLOW_XID_31 —
# as a rule one application's illegal address. Our reading, not the catalog's words: the same fault from several
# different applications on one GPU is no one application's bug, so the GPU is what to test. Processes are told
# apart by name where the line gives one (one application restarted is one), else by pid.
XID31_ACROSS = (
    "NVIDIA's Xid catalog treats Xid 31 as an application's fault (restart the application); the same fault "
    "across different applications on one GPU is no one application's bug, so test the GPU"
)
XID31_FIX = (
    "; the same fault from several applications on this GPU: test the GPU (dcgmi diag -r 3, field diagnostics) "
    "before more jobs land on it, and drain it if the test or the next job fails"
)


# Our reading, beside the catalog's (RESTART_APP for 13 and 31): the same application fault on several GPUs of the
# node in one log is a multi-GPU job's fault at least, and it can wedge the node (the job hangs until a reboot), so it
# warns and asks for the node to be checked once the job is restarted.
ACROSS_GPUS = (
    "the same fault on {n} GPUs of this node: a multi-GPU job's fault at the least (NVIDIA's Xid catalog: restart "
    "the application), and one that can leave the node hung"
)
ACROSS_GPUS_FIX = (
    "; it hit {n} GPUs of the node: if the job or nvidia-smi hangs, reboot the node, and test its GPUs (dcgmi diag "
    "-r 3) before more jobs land on it"
)


# NVIDIA's device plugin writes, with an Xid it counts as critical, that it takes the GPU out of service ("...;
# marking device as unhealthy.", 2020's "..., the device will go unhealthy.", "All devices will go unhealthy."): the Xid
# left a GPU the scheduler no longer gives to pods until the plugin restarts, whatever the catalog says of the job
MARKED_UNHEALTHY = re.compile(r"marking device as unhealthy|devices? will go unhealthy", re.IGNORECASE)
UNHEALTHY_NOTE = "the device plugin marked the GPU unhealthy for it: out of the scheduler's pool until it restarts"


def _processes(evs: list[KernelEvent]) -> set[str]:
    """The distinct processes the events name: by name where given, else by pid."""
    return {e.process or f"pid {e.pid}" for e in evs if e.process or e.pid is not None}


def _where(ev: KernelEvent, rig: Rig) -> str:
    if ev.bus_id is None and ev.gpu_index is not None:
        return f"GPU {ev.gpu_index}"  # a monitor's event by GPU index (dcgmi dmon's XIDER): no bus id printed
    if ev.bus_id is None:
        return "GPU (bus id elided in the paste)"
    if ev.gpu_index is not None:
        return f"GPU {ev.gpu_index} {ev.bus_id}"
    return f"PCI {ev.bus_id}" + ("" if not rig.gpus else " (no GPU of this scan has that bus id)")


@rule("GA801", "xid-events", area="health", severity="fail", thresholds=("xid_recent_hours", "xid_repeat_count"))
def xid_events(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The NVIDIA driver logged Xid errors for a GPU (NVRM: Xid lines in the kernel log).

    What it checks
        Every "NVRM: Xid (PCI:...): N" line of the kernel log since boot (live: /dev/kmsg or journalctl -k;
        imported: a pasted dmesg, journalctl -k or syslog excerpt), grouped by GPU and Xid number.
    Why it matters
        Xids are the driver's own report of what went wrong: a GPU that fell off the bus (79), uncorrectable
        memory errors (48, 95) and row-remapping failures (64), NVLink errors (74), GSP timeouts (119, 120), or
        application faults that leave the GPU healthy (13, 31, 43, 45).
    Threshold
        Severity follows the catalog's immediate action: RESET_GPU, RESTART_BM, hardware workflows (Xid 48,
        74, NVLink5 except the lines marked Nonfatal) fail; RESTART_APP with an application check (13, 31) is
        info, RESTART_APP where the investigation is not the application's (contact support; Xid 94, reset
        the GPU when convenient) warns; IGNORE and Xid 45's cleanup (43, 45, 63) are info; Xid 154 by the
        recovery action it names. An event older than xid_recent_hours is one step lower; xid_repeat_count
        of the same Xid on a GPU raises a warning to a failure. Xid 31 from xid_repeat_count different processes
        (by name, else by pid) on one GPU warns: the catalog's workflow investigates the GPU when the fault
        persists across applications. Xid 13 or 31 on xid_repeat_count GPUs or more of the log warns (a fault
        across the node's GPUs, which can leave the node hung). A number missing from the catalog warns. An Xid
        the NVIDIA device plugin marked its GPU unhealthy for ("marking device as unhealthy") warns at least: the
        GPU is out of the scheduler's pool until the plugin restarts (GA827 judges that mark).
    Source
        NVIDIA Xid Catalog, "Analyzing Xid Errors with the Xid Catalog" (docs.nvidia.com/deploy/xid-errors/
        analyzing-xid-catalog.html), Table 1: Resolution Bucket (Immediate / Investigatory Action).
    How to fix
        Do what the bucket says: RESTART_APP - restart the job, and for 13/31 run it under compute-sanitizer;
        RESET_GPU - drain the GPU and nvidia-smi -r -i N; RESTART_BM - reboot the node (Xid 79: check the
        slot, riser and power and the PCIe AER log first); CONTACT_SUPPORT when it comes back.
    """
    groups = _grouped(rig, ctx, "xid")
    if isinstance(groups, Finding):
        yield groups
        return
    logged = {code for _, code in groups}
    on_gpus = {code: len({bus for bus, c in groups if c == code}) for code in logged}
    for (bus, code), evs in sorted(
        groups.items(), key=lambda kv: (kv[1][0].gpu_index is None, kv[1][0].gpu_index or 0, kv[0])
    ):
        first, last = evs[0], evs[-1]
        x = XIDS.get(code)
        severity = max((event_severity(code, e.text) for e in evs), key=["info", "warn", "fail"].index)
        age = _age_h(rig, last)
        notes = []
        if age is not None and age > ctx.t("xid_recent_hours"):
            severity = LOWER[severity]
            notes.append(f"last one {age:.0f} h ago")
        elif age is not None:
            notes.append(f"last one {age * 60:.0f} min ago" if age < 1 else f"last one {age:.1f} h ago")
        if tally(evs) >= ctx.t("xid_repeat_count"):
            severity = HIGHER[severity] if severity == "warn" else severity
            notes.append("repeated")
        if code == 31 and severity == "info" and len(_processes(evs)) >= ctx.t("xid_repeat_count"):
            severity = "warn"  # the same MMU fault from several applications follows the GPU, not one job
            notes.append(f"from {len(_processes(evs))} different processes: {XID31_ACROSS}")
        if severity == "info" and any(MARKED_UNHEALTHY.search(e.text) for e in evs):
            severity = "warn"
            notes.append(UNHEALTHY_NOTE)
        across = code in (13, 31) and severity == "info" and on_gpus[code] >= ctx.t("xid_repeat_count")
        if across:
            severity = "warn"
            notes.append(ACROSS_GPUS.format(n=on_gpus[code]))
        what = f"{x.description} ({x.mnemonic})" if x else "not in NVIDIA's Xid catalog"
        if code == 154:
            action = recovery_action(last.text)
            what = f"GPU recovery action changed to {action!r}" if action else what
        procs = sorted({e.process for e in evs if e.process})
        causes = sorted({c for e in evs for c in cause_of(e.text)})
        before = [c for c in causes if c not in logged]  # named by the line, but not logged here
        if before:
            notes.append(("its cause is" if len(before) == 1 else "its causes are") + " not in this log")
        cause = ""
        if causes:  # Xid 45 names the Xid it cleans up after: that one is the finding, this one follows it
            named = [f"Xid {c} ({XIDS[c].description})" if c in XIDS else f"Xid {c}" for c in causes]
            cause = f" caused by {' and '.join(named)}"
        msg = (
            f"{_where(first, rig)}: Xid {code} x{tally(evs)}{cause}, {what}"
            + (f"; process {', '.join(procs)}" if procs else "")
            + (f" ({', '.join(notes)})" if notes else "")
        )
        fix = _xid_fix(x, severity, causes, logged, {c for b, c in groups if b == bus} - {code})
        if code == 154 and (todo := RECOVERY_FIX.get(recovery_kind(last.text) or "")):
            fix += "; " + todo
        if UNHEALTHY_NOTE in notes:
            fix += "; then restart the device plugin's pod, which keeps the GPU unhealthy until it restarts"
        if across:
            fix += ACROSS_GPUS_FIX.format(n=on_gpus[code])
        elif code == 31 and severity == "warn":
            fix += XID31_FIX
        yield ctx.finding(
            msg,
            severity=severity,
            gpus=[first.gpu_index] if first.gpu_index is not None else [],
            subject=_where(first, rig),
            observed={"xid": code, **_trail(evs), "last_text": last.text[:160]},
            expected={
                "immediate_action": x.immediate if x else None,
                "investigatory_action": x.investigatory if x else None,
            },
            expected_source=CATALOG,
            fix=fix,
        )


# SXids whose fatality the sources disagree on, by number: what to say when a paste shows only the "Data {...}"
# line. 12028 "egress non-posted PRIV error" is listed as Fatal in the NVIDIA Fabric Manager User Guide
# (DU-09883-001 v1.3), yet a running fabric manager logs it as "detected NVSwitch non-fatal error 12028" (the gpud
# project's recorded fabric manager log). A Data line alone therefore warns, as any SXid whose own line is missing.
SXID_DISPUTED = {12028: "egress non-posted PRIV error"}
FM_SXID = "NVIDIA Fabric Manager User Guide, NVSwitch errors (fatal: reset; non-fatal: logged, no action)"
SXID_FIX = {
    "fail": "drain the node: a fatal SXid takes the switch's links down; reset the GPUs and NVSwitches of the "
    "baseboard (or reboot), and open a support case if it returns",
    "warn": "a non-fatal SXid that repeats points at a link going bad: nvidia-smi nvlink -e for its errors; drain "
    "the node from NVLink-heavy jobs and service the tray or cable",
    "info": "none now: the fabric manager guide lists non-fatal SXids as logged for information; watch for repeats",
    "unknown": "read the SXid's own line (fatal or non-fatal) in the full log: fatal means drain and reset the "
    "baseboard",
}


@rule("GA802", "sxid-events", area="nvlink", severity="warn", thresholds=("xid_repeat_count",))
def sxid_events(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """An NVSwitch reported SXid errors (nvidia-nvswitch SXid lines in the kernel log).

    What it checks
        Every "SXid (PCI:...): N, Fatal|Non-fatal, ..." line of the kernel log, grouped by NVSwitch and number.
    Why it matters
        SXids are the NVSwitch driver's errors on the NVLink fabric of HGX/DGX systems. A fatal one takes
        the switch's links down and with them the peer traffic of every GPU on that baseboard; non-fatal ones
        that repeat point at a link or a port that is going bad.
    Threshold
        "Fatal" in the line fails (drain, reset the baseboard). A non-fatal SXid is info, and warns when it
        comes xid_repeat_count times on the switch. An SXid whose own line is not in the paste (only its
        "Data {...}" line) warns: its fatality is not shown.
    Source
        NVIDIA, "Xid Errors" guide, chapter "SXid Errors" (docs.nvidia.com/deploy/xid-errors/), and the
        NVIDIA Fabric Manager User Guide (fatal NVSwitch errors need a GPU and switch reset).
    How to fix
        Stop the jobs on the baseboard, reset the GPUs and NVSwitches (nvidia-smi -r, or reboot the node)
        and look at nvidia-smi nvlink -e for the link; a fatal SXid that comes back is a support case.
    """
    groups = _grouped(rig, ctx, "sxid")
    if isinstance(groups, Finding):
        yield groups
        return
    for (bus, code), evs in sorted(groups.items()):
        fatal = any(e.text.lower().startswith("fatal") or ", fatal" in e.text.lower() for e in evs)
        unknown = not fatal and all(e.text.startswith("only its detail line") for e in evs)
        disputed = unknown and code in SXID_DISPUTED
        links = sorted({int(m) for e in evs for m in re.findall(r"\bLink (\d+)", e.text)})
        what = re.sub(r"^(?:Non-fatal|Fatal),\s*(?:Link \d+\s*)?", "", evs[-1].text)[:100]
        where = f" on link{'s' if len(links) > 1 else ''} {', '.join(map(str, links))}" if links else ""
        if disputed:
            what = (
                f"{SXID_DISPUTED[code]} (only its Data line is in the log; the fabric manager guide lists it as "
                "fatal, the fabric manager itself logs it as non-fatal: read its own line)"
            )
        repeated = tally(evs) >= ctx.t("xid_repeat_count")
        kind = "fatal" if fatal else "fatality not shown" if unknown else "non-fatal"
        severity = "fail" if fatal else "warn" if unknown or repeated else "info"
        yield ctx.finding(
            f"NVSwitch {bus}: SXid {code} x{tally(evs)}, {kind}{where}: {what}" + (" (repeated)" if repeated else ""),
            severity=severity,
            subject=f"NVSwitch {bus}",
            observed={"sxid": code, "count": tally(evs), "fatal": None if unknown else fatal, **_trail(evs)},
            expected={"sxid": None},
            expected_source=f"{FM_SXID}; NVIDIA Xid Errors guide, SXid Errors",
            fix=SXID_FIX[severity if not unknown else "unknown"],
        )


def _device(ev: KernelEvent, rig: Rig) -> str:
    if ev.kind == "passthrough-d3cold" and ev.gpu_index is None:  # the log does not say it is a GPU
        return f"device {ev.bus_id} (vfio-pci)"
    if ev.gpu_index is not None:
        return f"GPU {ev.gpu_index}" + (f" {ev.bus_id}" if ev.bus_id else "")
    if ev.bus_id:
        return f"GPU {ev.bus_id}"
    if ev.kind in ("driver-hung", "driver-oops", "driver-install"):
        return "the NVIDIA driver (no GPU named)"
    if ev.kind == "gpu-not-probed" and (n := re.search(r"not called for (\d+) device", ev.text)):
        return f"{n.group(1)} GPU(s) held by another driver (no bus id logged)"
    named = re.search(r"the driver's (GPU\d+)", ev.text)
    return f"{named.group(1)} (the driver's numbering; no bus id on the line)" if named else "a GPU (no bus id logged)"


@rule("GA820", "gpu-lost-signs", area="health", severity="fail")
def gpu_lost_signs(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The kernel log says a GPU is lost or wedged, without an Xid line.

    What it checks
        NVRM lines without an Xid number: "RmInitAdapter failed" (the driver could not bring the GPU up),
        NV_ERR_GPU_IS_LOST ("GPU lost from the bus"), NV_ERR_RESET_REQUIRED / "reset required", GSP heartbeat or RPC
        timeouts ("Heartbeat timed out", "rpcSendMessage failed", "Timeout waiting for RPC from GSP", or the rows
        of the RPC history such a report dumps: "NVRM:   -1  4124 GSP_LOCKDOWN_NOTICE 0x..."), GSP firmware that
        never started ("kgspInitRm: cannot bootstrap", "Cannot initialize GSP firmware RM"), the driver's probe of a GPU
        failing ("probe of BUS failed with error", "The NVIDIA probe routine failed"), GPUs another driver took first
        ("The NVIDIA probe routine was not called for N device(s)": nouveau, a framebuffer driver or vfio-pci owns
        them), NVLink discovery failures with a peer ("postRxDetLinkMask failed"), and tasks hung in an NVIDIA module
        (the kernel's "INFO: task ... blocked for more than N seconds", or a soft lockup, with an nvidia frame in its
        call trace), kernel oopses in an NVIDIA module ("BUG: unable to handle kernel NULL pointer dereference" with
        its faulting address or a call-trace frame in the driver), a GPU that did not come back from D3cold ("Unable
        to change power state from D3cold to D0, device inaccessible" of a device the log ties to NVIDIA, or one
        held by vfio-pci for passthrough); the X server's NVIDIA driver's "Failed to initialize the NVIDIA GPU at
        PCI:B:D:F" (its decimal bus converted) and "does not appear to be receiving interrupts"; an application's
        CUDA error 226 (cudaErrorContained: "Invalid access of peer GPU memory over nvlink or a hardware error"),
        grouped by GPU and sign (the kernel-log reader
        drops a loss told without a bus id beside a line naming the lost GPU).
    Why it matters
        These are the same conditions as Xid 79 (the GPU is gone for CUDA) and Xid 119/120 (the GPU's firmware
        stopped answering), logged by paths that print no Xid. A node with such a GPU strands every job that
        expects all its GPUs; only a reset or a reboot brings the GPU back.
    Threshold
        A lost GPU (init or probe failed, held by another driver, GSP not started, reset required, GSP timeout)
        fails. An NVLink discovery failure or a task hung in the driver warns: the node still runs, but nothing
        new starts on it until a reset. A contained CUDA error warns: the process is lost, the GPU not yet shown
        faulty (restart the process, schedule a reset, check ECC and row remapping).
    Source
        NVIDIA Xid Catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): Xid 79 RESTART_BM, Xid 119
        and 120 RESET_GPU; the driver's messages as NVIDIA's open-gpu-kernel-modules print them (kernel_gsp.c:
        _kgspIsHeartbeatTimedOut, kgspInitRm; osinit.c: RmInitAdapter; kernel_nvlink: knvlinkDiscoverPostRxDetLinks;
        nv.c: "The NVIDIA probe routine was not called"); Linux kernel/hung_task.c and kernel/watchdog.c (hung tasks,
        soft lockups), arch/x86/mm/fault.c (oopses), drivers/base/dd.c ("probe of %s failed with error %d").
    How to fix
        Init failed after the driver's own install problem logged before it (its GSP firmware file missing, an
        NVRM API mismatch, a module built for another kernel; nouveau without the GPU's GSP firmware, "gsp ctor
        failed: -2") or for a GPU the driver does not support: one finding
        names the cause: reinstall the driver so module, firmware and libraries match; not a hardware fault.
        Init failed with no such cause: drain, cold-reboot; a GPU that fails again is a reseat and RMA case.
        Reset required or GSP timeout: drain the GPU and reset it (nvidia-smi -r -i N) or reboot; if it returns, a
        support case. GSP not started: reboot; then the driver branch or VBIOS the GPU needs. Held by another
        driver: find it (lspci -k), blacklist nouveau or unbind vfio-pci, rebuild the initramfs, reboot. NVLink
        discovery failed: reset the GPUs and check the links. A task hung in the driver: drain and reboot.
    """
    groups = grouped_events(rig, ctx, LOST_SIGNS, lost_key)
    if isinstance(groups, Finding):
        yield groups
        return
    # the cause the driver named (its install, an invalid region, an unsupported GPU) and the failures it led to: one
    by_cause, followed = consequences(groups)
    mismatch = DRIVER_MISMATCH in (rig.software.unavailable.get("driver_version") or "")
    for key, evs in sorted(groups.items()):
        if key in followed or (mismatch and key not in by_cause and all("API mismatch" in e.text for e in evs)):
            continue  # (an NVRM API mismatch alone: GA507 says it, from the same line)
        kind = evs[0].kind
        what, fix, action, severity = LOST_SIGNS[kind]
        first = evs[0]
        where, then = _device(first, rig), ""
        if after := by_cause.get(key):
            severity = "fail"  # the GPU is unusable until the cause is fixed
            after = sorted(after, key=lambda e: e.line or 0)
            named = sorted({_device(e, rig) for e in after if e.bus_id or e.gpu_index is not None})
            then = f"; then {tally(after)} GPU failure line(s), its consequence (line {after[0].line}: "
            then += f"{after[0].text[:80]})"
            where = ", ".join(named) or _device(after[0], rig) if kind == "driver-install" else where
            fix += (
                "" if kind == "driver-install" or "not at fault" in fix else "; not a hardware fault: no reseat, no RMA"
            )
        yield ctx.finding(
            f"{where}: {what} (x{tally(evs)}, line {first.line}: {first.text[:120]}){then}",
            severity=severity,
            gpus=[first.gpu_index] if first.gpu_index is not None else [],
            subject=where,
            observed={"sign": kind, **_trail(evs), "evidence": first.text[:200]},
            expected={"action": action},
            expected_source=CATALOG,
            fix=fix,
        )


AER_WORDS = {
    "aer-fatal": "uncorrectable (fatal)",
    "aer-nonfatal": "uncorrectable (non-fatal)",
    "aer-unrecovered": "unrecovered (the GPU's driver cannot recover from AER)",
    "aer-corrected": "correctable",
}


def _aer_severity(worst: str, n: int, limit: float, on_gpu: bool) -> str:
    """Correctable: info, warn above the limit. A non-fatal uncorrectable error on a device that is not a GPU (a
    Thunderbolt or USB root port, no GPU named on it) was handled by that device's driver: warn, not a GPU fault.
    Fatal or unrecovered errors, and any on a GPU: fail."""
    if worst == "aer-corrected":
        return "warn" if n > limit else "info"
    return "warn" if worst == "aer-nonfatal" and not on_gpu else "fail"


@rule("GA821", "pcie-aer-log", area="pcie", severity="fail", thresholds=("pcie_aer_correctable_max",))
def pcie_aer_log(rig: Rig, ctx: Context) -> Iterator[Finding]:
    """The kernel log holds PCIe AER errors of a GPU or of the port or switch above it.

    What it checks
        "PCIe Bus Error: severity=..." and "AER: can't recover" lines of the kernel log, grouped by the
        device that logged them (the GPU's own function, its root port or a switch port).
    Why it matters
        An uncorrectable PCIe error means a transaction was lost or poisoned on the GPU's link: it ends in Xid
        79 or a hung job, and the GPU stays unusable until the link is reset (a reboot). Correctable errors cost
        replays and announce a marginal link.
    Threshold
        Fatal, non-fatal or unrecovered: fail. Correctable: info, warn above pcie_aer_correctable_max lines.
    Source
        PCIe base specification, Advanced Error Reporting; Linux Documentation/PCI/pcieaer-howto.rst (the
        kernel's "PCIe Bus Error: severity=" messages and their recovery).
    How to fix
        Drain the node and reboot it; reseat the GPU and any riser or retimer on that link, check the slot's
        power and update the BIOS; a GPU that keeps logging uncorrectable errors is an RMA case.
    """
    groups = grouped_events(rig, ctx, AER_WORDS, lambda ev: ev.bus_id or "?")
    if isinstance(groups, Finding):
        yield groups
        return
    limit = ctx.t("pcie_aer_correctable_max")
    for bus, evs in sorted(groups.items()):
        kinds = {e.kind for e in evs}
        worst = next(k for k in AER_WORDS if k in kinds)
        n = tally(e for e in evs if e.kind == worst)
        corrected_only = worst == "aer-corrected"
        first = next(e for e in evs if e.kind == worst)
        gpu = first.gpu_index if first.gpu_index is not None else None
        driver = first.text.split(" ", 1)[0]
        severity = _aer_severity(worst, n, limit, gpu is not None or driver == "nvidia")
        who = f"GPU {gpu} {bus}" if gpu is not None else f"GPU {bus}" if driver == "nvidia" else f"PCIe {driver} {bus}"
        if bus == "?" and gpu is None:  # the AER message quoted without the device that logged it
            who = "PCIe device (not named on the line)"
        yield ctx.finding(
            f"{who}: {n} {AER_WORDS[worst]} PCIe error line(s) in the kernel log (line {first.line}: "
            f"{first.text[:120]})",
            severity=severity,
            gpus=[gpu] if gpu is not None else [],
            subject=who,
            observed={"aer": worst, "count": n, "first_line": first.line, "evidence": first.text[:200]},
            expected={"aer_uncorrectable": 0, "aer_correctable_max": limit},
            expected_source="PCIe AER (Linux pcieaer-howto)",
            fix="watch whether the count keeps rising; reseat the card and riser if it does"
            if corrected_only
            else "no GPU is named on this device: if a GPU sits below this port, reseat it and its riser; otherwise "
            "update the device's driver and firmware"
            if severity == "warn"
            else "drain and reboot; reseat the GPU and any riser or retimer on this link; RMA if it returns",
        )
