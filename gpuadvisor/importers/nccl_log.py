"""NCCL debug-log lines as pasted in the wild, beyond the plain ``host:pid:tid [rank] NCCL INFO ...`` line.

- Prefixed by the rank only (`` [0] NCCL INFO ...``: a launcher that prints no host:pid:tid), or by the launcher's
  rank before the host (mpirun: ``[56] host:pid:tid [0] NCCL INFO ...``, ``[1,56]<stdout>:host:pid:tid ...``);
- run together on one terminal line (a copy from a terminal that padded each line with spaces): each
  ``host:pid:tid [rank] NCCL INFO`` starts a new line;
- the network hops a ring or channel takes: ``via NET/IB/0/GDRDMA`` uses GPUDirect RDMA on NIC 0, ``via NET/IB/0``
  (NCCL 2.4 and later print ``/GDRDMA`` when it is used) stages through host memory (NCCL's debug output, as in
  the NCCL User Guide's Troubleshooting section); ``via NET/Socket/0``: NCCL fell back to TCP sockets between the
  hosts (no RDMA at all, so no GPUDirect RDMA either);
- PyTorch's ProcessGroupNCCL watchdog ending the job (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: ``[Rank 0] NCCL
  watchdog thread terminated with exception: CUDA error: unspecified launch failure``, since PyTorch 2.2 ``[PG 0
  Rank 1] Process group watchdog thread terminated with exception: ...``, often as ``what():`` of C++'s terminate):
  the job's log, NCCL's own lines or not; the CUDA error it carries is a kernel's fault on that rank's GPU, which
  only the kernel log (an Xid) can tell from an application bug.
"""

from __future__ import annotations

import re

# a launcher's rank prefix before the line: mpirun --tag-output "[1,56]<stdout>:", a plain "[56] " (any width)
RANK_PREFIX = r"(?:\[\d+(?:,\d+)?\](?:<\w+>:)?\s*)?"
# times a launcher or a log collector puts first: mpirun --timestamp-output "2019-06-02T16:13:44.884Z: ", a
# collector's "2025-11-09 15:39:31.043 +08:00 " then a framework's "[2025-11-09 07:39:30] "
TIME_PREFIX = r"(?:(?:\d{4}-\d\d-\d\d[T ][\d:.,]+Z?(?: ?[+-]\d\d:?\d\d)?:?|\[\d{4}-\d\d-\d\d[T ][\d:.,]+\])\s*)*"
# NCCL's "host:pid:tid", or its pid and tid redacted before a paste ("host-01.example.com:XXXXXX", "host:***:***")
_REDACTED = r"[Xx*]{3,}"
HOST_PID = rf"\S+:(?:\d+:\d+|{_REDACTED}(?::{_REDACTED})?)"
# a WARN line names the source line that printed it: "host:pid:tid [0] transport/net_ib.cc:93 NCCL WARN ..."
_NCCL = r"\[\d+\] (?:[\w/.]+:\d+ )?NCCL (?:INFO|WARN)\b"
_LAUNCHED = rf"^\s*{TIME_PREFIX}{RANK_PREFIX}"  # what a launcher or collector put before the line
LINE = re.compile(rf"{_LAUNCHED}(?:{HOST_PID} )?{_NCCL}")
# nccl-tests' device line: "#  Rank  1 Group  0 Pid 565139 on node4 device  0 [0x4c] NVIDIA H800" (its rank, host,
# device, the bus as printed between the brackets, the GPU's name)
RANK_WORDS = r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid"


def rank_line(start: str, bus: str) -> re.Pattern[str]:
    """nccl-tests' device line after ``start`` (what may stand before its ``#``), its bus read by ``bus`` (a group or
    not: the groups are the rank, host, device, then the bus's if any, then the name)."""
    return re.compile(rf"{start}#\s*{RANK_WORDS}\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[{bus}\]\s*(.*?)\s*$")


RANK_LINE = rank_line(r"^\s*", r"[^\]]*")  # one pasted above the debug log
# from the start of a word only: tried at every character, \S+ would make a long line without spaces cost its square
_PREFIXED = re.compile(rf"(?<!\S){HOST_PID} {_NCCL}")
_NIC_AT = re.compile(r"\[(\d+)\](\w+):\d+/(?:IB|RoCE)")
# a ring's or channel's network hop: "via NET/IB/0/GDRDMA", "via NET/IB/0" (or IBext), "via NET/Socket/0"
_HOP = re.compile(r"\bvia NET/(?:(?:IB|IBext)/(\d+)(/GDRDMA)?(?:\s|$)|Socket/(\d+))")
SOCKETS = "TCP sockets between hosts: no RDMA NIC used"


# one WARN line quoted without its prefix (no host, pid or rank), as a maintainer quotes it from a log: "NCCL WARN
# NET/IB : Got async event : port error" (the source line may stay: "transport/net_ib.cc:93 NCCL WARN ...")
BARE_WARN = re.compile(r"^\s*(?:[\w/.]+\.(?:cc|cu|h):\d+ )?NCCL WARN \S")


# NCCL 2.1-era lines name no "NCCL": "dgj101:14560:14560 [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed";
# or only the host, no pid and tid ("machine [0] misc/ibvwrap.cu:269 WARN ..."), the source line then required (a
# word, a bracketed number and INFO could be any logger's line)
_SOURCE = r"[\w/.]+\.(?:cu|cc|h):\d+ "
OLD_LINE = re.compile(
    rf"{_LAUNCHED}(?:{HOST_PID} \[\d+\] (?:{_SOURCE})?|[\w.-]{{1,63}} \[\d+\] {_SOURCE})(?:INFO|WARN) "
)


# PyTorch's ProcessGroupNCCL watchdog ending the job: "[Rank 0] NCCL watchdog thread terminated with exception: ..."
# (PyTorch 2.2 and later: "[PG 0 (default_pg) Rank 1] Process group watchdog thread terminated with exception: ...")
WATCHDOG = re.compile(r"\bRank \d+\] (?:NCCL|Process group) watchdog thread terminated with exception: \S")


# aws-ofi-nccl's own log line where it runs outside NCCL (its tests, releases before 1.0, NCCL_OFI_WARN/INFO when no
# NCCL logger is set): "WARN: Function: find_ofi_provider Line: 543: NET/OFI Couldn't find any optimal provider"
# (newer releases print the function's signature: __PRETTY_FUNCTION__)
PLUGIN_LINE = re.compile(r"^\s*(?:INFO|WARN|TRACE): Function: [^\n]{1,200}? Line: \d+: NET/OFI ")


def starts(line: str) -> bool:
    """A NCCL INFO/WARN line (host:pid:tid optional), the same behind any prefix a launcher or log collector put before
    it (Ray's "(head, rank=0, pid=5634) [host:2]:", a log viewer's "  | TIME | " column: NCCL's own ``host:pid:tid
    [rank] NCCL INFO`` shape, wherever it starts), a terminal line holding two or more of them run together, aws-ofi-
    nccl's own log line, or PyTorch's NCCL watchdog ending the job."""
    if LINE.match(line) or OLD_LINE.match(line) or PLUGIN_LINE.match(line):
        return True
    if "NCCL" in line and _PREFIXED.search(line):
        return True
    return "watchdog thread" in line and WATCHDOG.search(line) is not None


def split_runs(text: str) -> list[str]:
    """The log's lines, each run-together terminal line cut apart at every ``host:pid:tid [rank] NCCL`` in it, and
    a launcher's or collector's prefix before one (a line NCCL's own expressions do not read) dropped."""
    out: list[str] = []
    for line in text.splitlines():
        starts_at = [m.start() for m in _PREFIXED.finditer(line)] if "NCCL" in line else []
        if len(starts_at) == 1 and starts_at[0] > 0 and not (LINE.match(line) or OLD_LINE.match(line)):
            out.append(line[starts_at[0] :])
            continue
        if len(starts_at) < 2:
            out.append(line)
            continue
        cuts = [0, *[s for s in starts_at if s > 0], len(line)]
        out += [line[a:b].rstrip() for a, b in zip(cuts, cuts[1:], strict=False) if line[a:b].strip()]
    return out


# "host:pid:tid [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error" (NCCL 2.19+: "NET/IB :
# mlx5_0:1 Got async event : port error"): the verbs events of ibv_get_async_event(3) NCCL reports
_ASYNC = re.compile(
    r"(?:(?P<host>[^\s:]+):\d+:\d+ \[\d+\] )?(?:[\w/.]+:\d+ )?NCCL WARN NET/IB\s*:\s*(?:(?P<dev>\w+):\d+ )?"
    r"Got async event\s*:\s*(?P<event>local catastrophic error|port error)"
)
ASYNC_KINDS = {"local catastrophic error": "hca-fatal", "port error": "link-down"}


def async_events(lines: list[str]) -> list[tuple[str, str, int]]:
    """(kind, text, line index) of each adapter event NCCL reported: a fatal adapter error ("local catastrophic
    error", IBV_EVENT_DEVICE_FATAL) or a port that went down under the job ("port error", IBV_EVENT_PORT_ERR);
    ``text`` starts with the host (and the adapter, when NCCL names it)."""
    out = []
    for n, line in enumerate(lines):
        if "Got async event" not in line or (m := _ASYNC.search(line)) is None:
            continue
        where = (m.group("host") or "a host the line does not name") + (f" {m.group('dev')}" if m.group("dev") else "")
        out.append((ASYNC_KINDS[m.group("event")], f"{where}: NCCL NET/IB async event: {m.group('event')}", n))
    return out


# NCCL's error when it cannot bind NVLink SHARP multicast memory (src/transport/nvls.cc: "Failed to bind NVLink SHARP
# (NVLS) Multicast memory of size %zu ... : CUDA error %d '%s'.\nThis is usually caused by a system or configuration
# error in the Fabric Manager or NVSwitches."), as its WARN line or as the "Last error:" torch prints, often wrapped
NVLS_BIND = re.compile(r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory")
_CUDA_ERROR = re.compile(r"CUDA error (\d{1,5})\s*'([^'\n]{0,120})'")
NVLS_KIND = "nvls-bind-failed"


def nvls_bind_failures(lines: list[str]) -> list[tuple[str, int]]:
    """(text, line index) of each NVLS bind failure NCCL reported, with the CUDA error it names (on its line or one
    of the two below, where the message wraps)."""
    out = []
    for n, line in enumerate(lines):
        if "NVLink SHARP" not in line or (m := NVLS_BIND.search(line)) is None:
            continue
        said = " ".join([line[m.start() :], *(x.strip() for x in lines[n + 1 : n + 3])])
        err = _CUDA_ERROR.search(said)
        text = "NCCL could not bind NVLink SHARP (NVLS) multicast memory"
        out.append((text + (f": CUDA error {err.group(1)} '{err.group(2)}'" if err else ""), n))
    return out


def gdr_not_used(lines: list[str]) -> list[str]:
    """The NICs whose network hops the log shows without ``/GDRDMA`` (and never with it): GPUDirect RDMA not used,
    named as NCCL's "NET/IB : Using [0]mlx5_0:1/RoCE" line names them; and hops over TCP sockets."""
    names: dict[str, str] = {}
    plain: list[str] = []
    gdr: set[str] = set()
    sockets: set[str] = set()
    for line in lines:
        if "NET/IB : Using" in line:
            names.update((n, name) for n, name in _NIC_AT.findall(line))
        for n, direct, socket in _HOP.findall(line):
            if socket:
                sockets.add(socket)
            elif direct:
                gdr.add(n)
            elif n not in plain:
                plain.append(n)
    return [
        f"HCA {n} '{names[n]}' (hops via NET/IB/{n} without GDRDMA)" if n in names else f"NET/IB/{n} (no GDRDMA)"
        for n in plain
        if n not in gdr
    ] + [f"NET/Socket/{n} ({SOCKETS})" for n in sorted(sockets)]


# NCCL's WARN when /dev/shm has no room for a shared-memory segment (a container's 64 MB default): NCCL 2.4-2.11
# (include/shm.h) "Call to posix_fallocate failed : No space left on device"; 2.12 and later (misc/shmutils.cc)
# "Error: failed to extend /dev/shm/nccl-X to N bytes[, error: No space left on device (28)]"
_SHM_FULL = re.compile(
    r"NCCL WARN (?:Call to posix_fallocate failed\s*:\s*No space left on device"
    r"|Error: failed to extend (\S*/dev/shm/\S+|\S+) to (\d+) bytes(?:, error: (.{1,60}))?)"
)


# A bus error in NCCL's own thread (UCX's handler: "Caught signal 7 (Bus error: nonexistent physical address)" over a
# "==== backtrace" whose frames are NCCL's, "ncclGroupEnd()", "libnccl.so.2"): a page of NCCL's /dev/shm segment the
# tmpfs could not back (NCCL sizes the file sparse; touching it past the tmpfs's room raises SIGBUS), the
# container's 64 MB /dev/shm again (NCCL User Guide, Troubleshooting, Docker)
_SIGBUS = re.compile(r"\bCaught signal 7 \(Bus error[^)\n]{0,60}\)")
_NCCL_FRAME = re.compile(r"\b(?:nccl[A-Z]\w*\(\)|libnccl\.so)")
_BACKTRACE = 16  # lines of a backtrace below its signal line


def sigbus_at(lines: list[str], i: int) -> bool:
    """Line ``i`` reports a bus error whose backtrace, below it, runs through NCCL."""
    return (
        "Bus error" in lines[i]
        and bool(_SIGBUS.search(lines[i]))
        and any(_NCCL_FRAME.search(x) for x in lines[i + 1 : i + _BACKTRACE])
    )


def shm_full(lines: list[str]) -> str | None:
    """NCCL's first report that /dev/shm had no room for its segment (a failure to extend a segment for another
    reason, named on the line, is not this), else the first bus error in NCCL's own thread."""
    for line in lines:
        if "NCCL WARN" not in line or (m := _SHM_FULL.search(line)) is None:
            continue
        if m.group(3) and "No space left" not in m.group(3):
            continue
        return line[m.start() + len("NCCL WARN ") :].strip()
    for i, line in enumerate(lines):
        if sigbus_at(lines, i) and (signal := _SIGBUS.search(line)):
            frame = next(f.group(0) for x in lines[i + 1 : i + _BACKTRACE] if (f := _NCCL_FRAME.search(x)))
            return f"{signal.group(0)} in NCCL (backtrace: {frame})"
    return None
