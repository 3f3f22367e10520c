"""NVIDIA driver events in the kernel log: ``NVRM: Xid`` (GPU) and ``SXid`` (NVSwitch) lines, and the signs
without an Xid that probes/kmsg_signs.py reads (a GPU that failed to initialise, GSP timeouts, PCIe AER errors,
RDMA link flaps).

One parser (``parse_log``) reads every form the lines come in: /dev/kmsg records (``6,1234,5678901234,-;NVRM:
Xid ...``), ``dmesg`` (``[ 1843.308145] NVRM: ...``), ``dmesg -T``, ``journalctl -k`` and syslog (``Nov 26
07:00:00 host kernel: NVRM: ...``). Lines without "Xid" are skipped by a substring test before any regular
expression runs, so a log of a million lines parses in a fraction of a second (benchmarks/kernel_log.py).

The live reader (``read_kernel_log``) reads /dev/kmsg without blocking, or ``journalctl -k -b`` when the
kernel does not let it (``kernel.dmesg_restrict``); it never writes anything.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from gpuadvisor.facts import Gpu, KernelEvent, KernelLog

from .busid import with_domain
from .kmsg_keep import MAX_GROUPS, KeptEvents
from .kmsg_signs import LINK_SIGNS, parse_signs
from .kmsg_unjudged import DriverLines, settle

# the signs of a lost GPU whose line names it by bus id
NAMED_LOSS: tuple[str, ...] = ("gpu-init-failed", "gpu-probe-failed", "gpu-bar-invalid", "gpu-unsupported")
NAMED_LOSS += ("gpu-unreadable", "gpu-bar-unassigned")
UNNAMED_LOSS = ("gsp-boot-failed", "gpu-probe-failed", "gpu-is-lost")  # those whose lines often do not

EVENT_RE = re.compile(
    r"\b(S?Xid)\s*\((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
    r"|\.\.\.|…)\)\s*:\s*(\d+)\s*,?\s*(.*)$"
)
# A GPU that fell off the bus without an Xid line (newer drivers print it over three lines):
# "NVRM: The NVIDIA GPU 0000:b3:00.0" / "NVRM: (PCI ID: 10de:26b5) installed in this system has" / "NVRM: fallen off
# the bus ...", or "NVRM: GPU at 0000:01:00.0 has fallen off the bus."
FELL_RE = re.compile(
    r"NVRM: (?:The NVIDIA GPU|GPU at(?: PCI:)?) "
    r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.?[0-7]?)"
)
FELL_TEXT = "GPU has fallen off the bus (logged without an Xid line)"
SXID_MORE = ("Data {", "Severity ")
SXID_DETAIL = "sxid-detail"
KMSG_RE = re.compile(r"^\d+,\d+,(\d+),[^;]*;")
UPTIME_RE = re.compile(r"\[\s*(\d+\.\d+)\]")
WALL_RE = re.compile(
    r"^\s*(?:<\d{1,3}>)?(?:(?:\w+\s+)?[a-z]+\s*:\s*[a-z]+\s*:\s*)?(?:\[(?P<human>[A-Z][a-z]{2}\d{1,2} \d\d:\d\d)\]"
    r"|\[(?P<dmesgt>[A-Z][a-z]{2} [A-Z][a-z]{2}\s+\d+ [\d:]+ \d{4})\]"
    r"|(?P<syslog>[^\W\d_]{2,6}\.?\s+\d{1,2},?\s+\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(?:\s+\S+)?\s+kernel:"
    r"|(?P<iso>\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?)(?:\s+\S+\s+kernel:|\s)"
    r"|(?P<clock>\d\d:\d\d:\d\d(?:[.,]\d+)?)\s)"  # a bare clock time: "19:15:34  NVRM: ..."
)
# A poster's abbreviated form, the code before the bus: "Xid 31 PCI:0000:f0:00 pid=477448 ... UNRECOGNIZED_CLIENT ..."
SHORT_RE = re.compile(
    r"\b(S?Xid)\s+(\d+)\s*[,:]?\s+\(?PCI:([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\)?:?\s*(.*)$"
)
PID_RE = re.compile(r"^pid=(?:'?<unknown>'?|(\d+)),\s*name=([^,]*),\s*")
PID_ONLY_RE = re.compile(r"^pid=(\d+)(?:,\s*|\s+|$)")  # older drivers: "pid=13641, Ch 00000008" (no name)
KMSG = "/dev/kmsg"
READ_SIZE = 8192


def normalise_bus_id(text: str) -> str:
    """ "0000:3B:00" -> "0000:3b:00", NVML's "00000000:3B:00.0" -> "0000:3b:00.0"; a domain above 0xffff keeps all
    its digits, as the GPU's own bus id does (an Azure VM's "3E3F8E05:00:00", probes/busid.py)."""
    return with_domain(text)


UPTIME_MAX_S = 1e10  # three centuries: a longer uptime is not one (a hostile or garbled log), and not a value


def _seconds(digits: str, per_second: float = 1.0) -> float | None:
    """An uptime from the log's digits, or None when it is no plausible uptime (400 digits would be inf)."""
    if len(digits) > 24:
        return None
    value = float(digits) / per_second
    return value if value <= UPTIME_MAX_S else None


def stamp(prefix: str, ev: KernelEvent) -> None:
    """Set an event's time from the start of its line: uptime (dmesg, /dev/kmsg) and wall clock (dmesg -T,
    journalctl, syslog, ISO), as the log gives them."""
    k = KMSG_RE.match(prefix)
    if k:
        ev.uptime_s = _seconds(k.group(1), 1e6)
        return
    u = UPTIME_RE.search(prefix)
    if u:
        ev.uptime_s = _seconds(u.group(1))
    w = WALL_RE.match(prefix)
    if w:
        ev.time = (
            w.group("dmesgt") or w.group("syslog") or w.group("iso") or w.group("human") or w.group("clock")
        )  # dmesg -H: "Jan21 10:00"


def parse_line(line: str, number: int | None = None) -> KernelEvent | None:
    """One kernel-log line -> an event, or None when it holds no Xid/SXid."""
    m = EVENT_RE.search(line)
    if m is not None:
        kind, bus, code, rest = m.groups()
    else:
        m = SHORT_RE.search(line)
        if m is None:
            return None
        kind, code, bus, rest = m.groups()
    elided = bus in ("...", "…")
    ev = KernelEvent(kind=kind.lower(), code=int(code), bus_id=None if elided else normalise_bus_id(bus), line=number)
    stamp(line[: m.start()], ev)
    p = PID_RE.match(rest)
    if p:
        ev.pid = int(p.group(1)) if p.group(1) else None
        name = p.group(2).strip()
        ev.process = None if name in ("", "<unknown>", "'<unknown>'") else name
        rest = rest[p.end() :]
    elif q := PID_ONLY_RE.match(rest):
        ev.pid = int(q.group(1))
        rest = rest[q.end() :]
    ev.text = rest.strip()
    if ev.kind == "sxid" and (ev.text.startswith(SXID_MORE) or "Severity".startswith(ev.text)):
        ev.kind = SXID_DETAIL  # the "Data {...}" and "Severity ..." lines that follow each SXid (or one cut short)
    return ev


def _sxid_details(events: list[KernelEvent], shown: set[tuple[str | None, int]]) -> list[KernelEvent]:
    """The SXid detail lines kept: one per (switch, SXid) whose own line is not in the log (``shown``: those whose
    own line is; the paste shows only its Data line), as an SXid event whose fatality is not shown; the others
    dropped (their SXid line carries them)."""
    out: list[KernelEvent] = []
    seen: set[tuple[str | None, int]] = set()
    for e in events:
        if e.kind != SXID_DETAIL:
            out.append(e)
        elif (e.bus_id, e.code) not in shown and (e.bus_id, e.code) not in seen:
            seen.add((e.bus_id, e.code))
            e.kind = "sxid"
            e.text = f"only its detail line is shown (fatal or non-fatal not shown): {e.text}"
            e.more = 0
            out.append(e)
    return out


_CUT_AFTER_CODE = re.compile(r"S?Xid \([^)]*\):\s*\d+\s*$")


class LogReader:
    """A kernel log read block by block (each block whole lines, in order), its events kept bounded
    (probes/kmsg_keep.py): memory does not grow with the log's length, the work is linear in it."""

    def __init__(self, first_line: int = 1, *, driver_lines: bool = False) -> None:
        self.line_no = first_line  # the number of the next block's first line
        # the NVIDIA driver's failure lines no sign judges (GA828), for a live log (an imported one is read whole)
        self._driver = DriverLines() if driver_lines else None
        self.lines = 0
        self._xids, self._fallen, self._signs = KeptEvents(), KeptEvents(), KeptEvents()
        self._sxids: set[tuple[str | None, int]] = set()  # (switch, SXid) whose own line was read
        self._xid79: set[str] = set()  # GPUs with an Xid 79 line
        self._fell: set[str] = set()  # GPUs with a "fallen off the bus" message without an Xid
        self._fell_unnamed = False  # a "fallen off the bus" message read, its GPU named or not (a cut paste)
        self._tail = ""  # the last two lines of the block before (a GPU named up to two lines above its message)

    @property
    def unkept(self) -> int:
        return self._xids.unkept + self._fallen.unkept + self._signs.unkept

    def feed(self, text: str, *, last: bool = True) -> None:
        """One block of whole lines (``last``: the log's end, where a line may be cut short)."""
        if not text:
            return
        first = self.line_no
        for ev in _xid_events(text, first, last):
            if ev.kind == "sxid" and len(self._sxids) < MAX_GROUPS:
                self._sxids.add((ev.bus_id, ev.code))
            elif ev.kind == "xid" and ev.code == 79 and ev.bus_id and len(self._xid79) < MAX_GROUPS:
                self._xid79.add(ev.bus_id)
            self._xids.add(ev)
        joined = self._tail + text
        before = self._tail.count("\n")
        for ev in _fallen_without_xid(joined, first - before, self._fell, skip=len(self._tail)):
            self._fallen.add(ev)
        self._signs.extend(parse_signs(text, first, stamp))
        if self._driver is not None:
            self._driver.feed(text, first)
        self._fell_unnamed = self._fell_unnamed or "fallen off the bus" in text
        newlines = text.count("\n")
        self.lines += newlines + (0 if text.endswith("\n") else 1)
        self.line_no += newlines
        cut = joined.rfind("\n", 0, max(joined.rfind("\n", 0, len(joined) - 1), 0)) + 1
        self._tail = joined[cut:] if text.endswith("\n") and len(joined) - cut < 4096 else ""

    def finish(self) -> tuple[list[KernelEvent], int]:
        """The events kept (Xid and SXid lines, then GPUs fallen off the bus without an Xid, then the other signs,
        each in log order) and the number of lines read."""
        events = _sxid_details(self._xids.events(), self._sxids)
        events += [e for e in self._fallen.events() if (e.bus_id or "") not in self._xid79]
        events += _unnamed_dropped(events, self._signs.events(), self._fell_unnamed)
        if self._driver is not None:
            events += self._driver.kept
            settle(events)
        return events, self.lines


def _unnamed_dropped(events: list[KernelEvent], signs: list[KernelEvent], fell: bool) -> list[KernelEvent]:
    """The signs, less a GPU's loss told without its bus id ("Cannot initialize GSP firmware RM", "The NVIDIA probe
    routine failed for 1 device(s)") where a line names the lost GPU (RmInitAdapter or its probe failing on a bus
    id, Xid 79) or tells it fell off the bus (``fell``, its name possibly cut off): one loss, one event."""
    named = fell or any(e.bus_id and (e.kind in NAMED_LOSS or (e.kind == "xid" and e.code == 79)) for e in events)
    named = named or any(e.bus_id and e.kind in NAMED_LOSS for e in signs)
    # a GSP timeout the Xid line (119/120) names the GPU of: the report's bus-less lines (its RPC history) are it
    gsp = any(e.bus_id and e.kind == "xid" and e.code in (119, 120) for e in events)
    return [
        e
        for e in signs
        if not (e.bus_id is None and ((named and e.kind in UNNAMED_LOSS) or (gsp and e.kind == "gsp-timeout")))
    ]


def _xid_events(text: str, line_no: int, last: bool) -> list[KernelEvent]:
    """The Xid and SXid lines of a block (its first line numbered ``line_no``).

    Text is searched with str.find for "Xid" (C speed, no per-line Python work); only the lines holding it
    are cut out and parsed, their numbers counted from the newlines skipped over.
    """
    events: list[KernelEvent] = []
    pos, counted_to = 0, 0
    find, count = text.find, text.count
    while True:
        hit = find("Xid", pos)
        if hit < 0:
            break
        start = text.rfind("\n", 0, hit) + 1
        end = find("\n", hit)
        if end < 0:
            end = len(text)
        line_no += count("\n", counted_to, start)
        counted_to = start
        line = text[start:end]
        ev = parse_line(line, line_no)
        if ev is not None and not (last and end == len(text) and _CUT_AFTER_CODE.search(line)):
            events.append(ev)  # (a last line that ends right after its number is a cut paste: "13" cut to "1")
        pos = end + 1
    return events


def parse_log(text: str | Iterable[str], *, first_line: int = 1) -> tuple[list[KernelEvent], int]:
    """Every Xid/SXid event and sign of a log (text or lines), kept bounded, and the number of lines read."""
    if not isinstance(text, str):
        text = "\n".join(text)
    reader = LogReader(first_line)
    reader.feed(text)
    return reader.finish()


def _fallen_without_xid(text: str, first_line: int, have: set[str], skip: int = 0) -> list[KernelEvent]:
    """Xid 79 events for "fallen off the bus" messages that carry no Xid number (one per GPU: ``have`` holds the
    GPUs already found, and takes the new ones); messages before ``skip`` are context only."""
    out: list[KernelEvent] = []
    pos = skip
    while (hit := text.find("fallen off the bus", pos)) >= 0:
        pos = hit + 1
        start = text.rfind("\n", 0, hit) + 1
        if "Xid" in text[start:hit]:
            continue
        window_start = hit
        for _ in range(3):  # the GPU is named up to two lines above
            window_start = text.rfind("\n", 0, max(window_start - 1, 0)) + 1
        named = list(FELL_RE.finditer(text, window_start, hit))
        if not named:
            continue
        m = named[-1]
        bus = normalise_bus_id(m.group(1)).rsplit(".", 1)[0]
        if bus in have or len(have) >= MAX_GROUPS:
            continue
        have.add(bus)
        line_start = text.rfind("\n", 0, m.start()) + 1
        ev = parse_line(
            f"{text[line_start : m.start()]}NVRM: Xid (PCI:{bus}): 79, {FELL_TEXT}",
            first_line + text.count("\n", 0, line_start),
        )
        if ev is not None:
            out.append(ev)
    return out


def map_gpus(events: list[KernelEvent], gpus: list[Gpu]) -> None:
    """Set each Xid event's gpu_index from the GPU with that bus id (Xid lines print bus:device, no function)."""
    by_bus: dict[str, int] = {}
    for g in gpus:
        if g.bus_id:
            b = g.bus_id.lower()
            by_bus[b] = g.index
            by_bus[b.rsplit(".", 1)[0]] = g.index
    for ev in events:
        if ev.kind not in ("sxid", *LINK_SIGNS) and ev.bus_id:
            ev.gpu_index = by_bus.get(ev.bus_id)


BLOCK_BYTES = 4 * 2**20  # a saved log or journalctl's output is read in blocks of this many bytes (whole lines)
BLOCK_RECORDS = 4096  # /dev/kmsg records handed to the reader at a time


def _feed_stream(stream: IO[bytes], reader: LogReader) -> None:
    """A log read from ``stream`` in blocks of whole lines, each fed to ``reader`` (memory: one block)."""
    rest = b""
    while True:
        chunk = stream.read(BLOCK_BYTES)
        eof = not chunk
        block = rest + chunk
        end = len(block) if eof else block.rfind(b"\n") + 1
        if not eof and end <= 0 and len(block) < max(4 * BLOCK_BYTES, 2**20):  # no whole line yet: read on
            rest = block
            continue
        end = end if end > 0 else len(block)
        block, rest = block[:end], block[end:]
        if block:
            reader.feed(block.decode("utf-8", "replace"), last=eof)
        if eof:
            return


def _read_kmsg(path: str, reader: LogReader) -> str | None:
    """Feed the records of /dev/kmsg, read without blocking, to ``reader``; the reason when it cannot be read. A
    regular file (a saved log, the simulator's) is read in blocks."""
    if os.path.isfile(path):
        try:
            with open(path, "rb") as f:
                _feed_stream(f, reader)
            return None
        except OSError as e:
            return f"cannot read {path}: {e.strerror}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return f"{path} does not exist"
    except PermissionError:
        return f"no permission to read {path} (kernel.dmesg_restrict is set: run as root or read journalctl -k)"
    except OSError as e:
        return f"cannot open {path}: {e.strerror}"
    lines: list[str] = []
    read_any = False
    try:
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # a record was overwritten while reading: go on with the next
                    continue
                if e.errno == errno.EINVAL and not read_any:
                    return f"cannot read {path}: {e.strerror}"
                break
            if not chunk:
                break
            read_any = True
            lines.append(chunk.decode("utf-8", "replace").rstrip("\n"))
            if len(lines) >= BLOCK_RECORDS:
                reader.feed("\n".join(lines) + "\n", last=False)
                lines = []
    finally:
        os.close(fd)
    if lines:
        reader.feed("\n".join(lines) + "\n")
    return None


def _read_journal(reader: LogReader, timeout_s: float = 5.0) -> str | None:
    """Feed ``journalctl -k -b``'s output to ``reader`` as it comes (killed after ``timeout_s``); the reason when
    it gives nothing."""
    exe = shutil.which("journalctl")
    if exe is None:
        return "journalctl not found"
    try:
        proc = subprocess.Popen(
            [exe, "-k", "-b", "-q", "--no-pager", "-o", "short-monotonic"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as e:
        return f"journalctl -k failed: {e}"
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        _feed_stream(proc.stdout, reader)
        err = proc.stderr.read(4096).decode("utf-8", "replace")
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode == -signal.SIGKILL:
        return f"journalctl -k failed: timed out after {timeout_s:g} s"
    if proc.returncode != 0 or not reader.lines:
        return f"journalctl -k gave nothing ({(err.strip().splitlines() or ['no kernel messages'])[0]})"
    return None


def uptime_s(root: str | os.PathLike[str] = "/") -> float | None:
    try:
        return float((Path(root) / "proc" / "uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_kernel_log(
    root: str | os.PathLike[str] = "/", gpus: list[Gpu] | None = None, kmsg: str | None = None
) -> KernelLog:
    """NVIDIA events of the kernel log since boot, from /dev/kmsg or journalctl -k (read-only)."""
    log = KernelLog(uptime_s=uptime_s(root))
    if log.uptime_s is None:
        log.unavailable["uptime_s"] = "/proc/uptime not readable"
    path = kmsg or str(Path(root) / "dev" / "kmsg")
    reader = LogReader(driver_lines=True)
    reason = _read_kmsg(path, reader)
    source = KMSG
    if reason is not None and str(root) in ("/", ""):
        reader = LogReader(driver_lines=True)
        reason2 = _read_journal(reader)
        source = "journalctl -k"
        reason = None if reason2 is None else f"{reason}; {reason2}"
    if reason is not None:
        log.missing("events", reason)
        log.missing("lines_read", reason)
        return log
    events, n = reader.finish()
    map_gpus(events, gpus or [])
    log.source, log.lines_read, log.events = source, n, events
    return log
