"""An application's own log of GPU work that no other row reads: the registry's last row.

Programs that run on GPUs write logs in their own shapes: a miner's ``m  20:51:15|ethminer  Speed 409.21 Mh/s
gpu/0 31.57 ...`` (a level mark, a clock time, its thread's tag), Folding@home's ``17:07:34:WARNING:WU01:FS01:...``,
CudaMiner's ``[2014-01-21 10:27:17] GPU #7: Tesla M2090, 217.14 khash/s``, a molecular-dynamics engine's ``# NVML
: 0 : Fan 33% Temp 63C ...`` status lines between its energy rows. None is an output this tool knows, yet an on-call
engineer reads each as a log: what it says of the GPUs, and whether a line reports a failure.

A paste is read as such a log when no other row reads it (this row is tried last), when it starts with a log line
and another follows among the next (a time or level prefix of a common form, or a program's tag that recurs:
``GPU #7:``, ``NVML :``, ``[IbMr]``; or a program's boxed message, a rule of dashes above and below its text, as
Open MPI prints its help messages; a count, not a share, so that a longer paste of the same log never reads less)
and when it names GPU work (CUDA, NVML, NCCL, NVIDIA, ``GPU 3``, ``gpu/0``, ``cuda-4``, or the RDMA fabric's verbs
objects and libraries a GPU job talks over). Its known signs are judged
as in any log (:func:`gpuadvisor.importers.daemon_log.parse`: the kernel's and the driver's signs; the error-code
table's and the Xid relays' lines are their own rows, found inside it), and each line that reports a failure of
the GPU stack in words no rule judges is listed (GA828, at info): this row never makes a finding of its own.
Prose, a configuration file, a package list, a manifest or source code is not a log (their lines carry no such
prefix, or no tag that recurs).
"""

from __future__ import annotations

import re
from collections import Counter

from gpuadvisor.importers import daemon_log, log_lines
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Section

WHAT = "an application's own log of GPU work"
# a clock time near the line's start, after at most a short level mark or a date of any form ("m  20:51:15|ethminer",
# "X 18:52:31|cuda-0", "17:07:34:WARNING:", "[10:27:17] ", nanominer's "2021-Mar-17 00:18:22: "), the time followed by
# a blank, a bar, a colon or its closing bracket
_CLOCK = re.compile(r"^\s*(?:\S{1,12}\s+)?\[?\d{1,2}:\d\d:\d\d(?:[.,]\d{1,9})?\]?(?=[\s|:\]])")
# a program's tag, after an optional comment mark, or in brackets ("[IbMr] Registering memory region ..."), then a
# message of two words or more: "GPU #7: Tesla M2090, ...",
# "# NVML : 0 : Fan 33% ...", "CUDA: Device: 1 Thread exited ...", "cudaminer2  Error CUDA mining: ..." is not one
# (no colon); its number (a device's) aside, the same tag on two lines makes them a program's lines
_TAG = re.compile(
    r"^[ \t]{0,4}(?:(?:#\s*)?([A-Za-z][\w.-]{0,31}(?:\[\d{1,10}\]|\s?#?\d{1,3})?)\s?:|\[([A-Za-z][\w.-]{0,31})\])"
    r"\s+\S+\s+\S"
)
# a comment-marked message ("# Simulation rate 27.51 ns/day"): a log line where the program's tags mark its lines
_MARKED = re.compile(r"^\s*#+\s+[A-Za-z]")
# a row of numbers (an engine's energy table: "315000  3686.0037  7810.5779 ... nan"): data between the messages
_NUMBER = r"[-+]?(?:\d[\d.,:eE+-]*|nan|inf)"
_DATA = re.compile(rf"^\s*{_NUMBER}(?:\s+{_NUMBER})*\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})")
# a program's boxed message: a rule of dashes or equals signs above and below its text (Open MPI's help messages,
# show_help: a line of 74 dashes, the message, the same line; UCX's and MPICH's banners alike)
_RULE = re.compile(r"^\s*(?:-{20,}|={20,})\s*$")
# GPU work named: the libraries, the vendor, a device by its number as programs write it; or the RDMA fabric GPU
# jobs talk over, by its libraries' and objects' names (verbs' completion queue, queue pair, memory region; UCX;
# an mlx5 adapter)
_GPU_WORK = re.compile(
    r"\b(?:CUDA|NVML|NCCL|NVIDIA|cuDNN|cuBLAS)\b|\bGPU\s?#?\d{1,3}\b|\bgpu/\d{1,3}\b|\bcuda-?\d{1,3}\b"
    r"|\b(?:RDMA|InfiniBand|UCX|ibverbs|verbs|completion queue|queue pair|memory region|ibv_\w+|mlx[45]_\d{1,2})\b",
    re.IGNORECASE,
)
_FIRST = 60  # the log starts among a paste's first lines (before any other output: the split stays linear)
_WINDOW = 40  # message lines looked at from the first
_AHEAD = 200  # lines looked at for the GPU work named (a fixed number, for the same reason)


def _number_free(tag: str) -> str:
    return re.sub(r"\d+", "#", tag)


def _messages(lines: list[str], i: int) -> list[str]:
    """The message lines from line ``i`` (blank lines, fences and rows of numbers aside), at most :data:`_WINDOW`."""
    out: list[str] = []
    for x in lines[i : i + _AHEAD]:
        if x.strip() and not _FENCE.match(x) and not _DATA.match(x):
            out.append(x)
            if len(out) == _WINDOW:
                break
    return out


def _log_shaped(messages: list[str]) -> list[bool]:
    """Which of ``messages`` are log lines: a time or level prefix, a recurring tag, or (where recurring tags mark a
    program's lines) a comment-marked message."""
    tags = [m.group(1) or m.group(2) if (m := _TAG.match(x)) else None for x in messages]
    counts = Counter(_number_free(t) for t in tags if t)
    tagged = [t is not None and counts[_number_free(t)] >= 2 for t in tags]
    strong = [
        a or log_lines.is_log_line(x) or _CLOCK.match(x) is not None for x, a in zip(messages, tagged, strict=True)
    ]
    marks = any(tagged)
    boxed = _boxed(messages)
    return [a or b or (marks and _MARKED.match(x) is not None) for x, a, b in zip(messages, strong, boxed, strict=True)]


def _boxed(messages: list[str]) -> list[bool]:
    """Which of ``messages`` are a program's boxed message: a rule line, the text under it, the rule line closing it
    (an unclosed box is not one: a table's rule is not a box)."""
    out = [False] * len(messages)
    rules = [k for k, x in enumerate(messages) if _RULE.match(x)]
    for a, b in zip(rules[::2], rules[1::2], strict=False):
        if b - a >= 2:  # text between
            out[a : b + 1] = [True] * (b + 1 - a)
    return out


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A paste's first output, among its first lines, is a log of GPU work: line ``i`` is a log line (or a row of
    numbers), another log line follows among the next message lines, a line near names GPU work, and no other row
    starts among them."""
    if current is not None or i >= _FIRST or not lines[i].strip() or _FENCE.match(lines[i]):
        return False
    messages = _messages(lines, i)
    shaped = _log_shaped(messages) if messages else []
    if sum(shaped) < 2:  # (a count, not a share: a longer paste of the same log never reads less)
        return False
    if not _DATA.match(lines[i]) and not shaped[0]:
        return False  # prose above the log (a launcher's banner) is not the log's: another row may read from below
    return any(_GPU_WORK.search(x) for x in lines[i : i + _AHEAD]) and not _another_below(lines, i)


class _Below:
    """Where another row starts in the paste being split, found once (the rows' detectors run over the paste's first
    lines once, not once per line tried)."""

    lines: list[str] | None = None  # the list scanned (held, so that its identity cannot be another list's)
    first: int | None = None  # the first line another row starts on, if any among those scanned


def _another_below(lines: list[str], i: int) -> bool:
    """Another row starts on a line among ``lines[i : i + _WINDOW]``: the paste is that row's (this row reads what
    no other row does)."""
    from gpuadvisor.importers.registry import FORMATS  # (the registry holds this row)

    if _Below.lines is not lines:
        rows = [f.starts for f in FORMATS if f.starts is not None and f.kind != "app-log"]
        end = min(len(lines), _FIRST + _WINDOW)
        _Below.lines = lines
        _Below.first = next((k for k in range(end) if any(detect(lines, k, None) for detect in rows)), None)
        log_lines.forget()  # the rows were asked out of the splitter's order: their scan starts afresh
    return _Below.first is not None and i <= _Below.first < i + _WINDOW


def parse(section: Section, source: str, filename: str) -> Part:
    """The log read as any log (:func:`gpuadvisor.importers.daemon_log.parse`), with a note of what was read: how
    many lines, how many of them report a failure no rule judges."""
    rig = daemon_log.parse(section.text, source, section.start)
    events = rig.kernel.events or []
    unjudged = sum(1 + e.more for e in events if e.kind == "unjudged")
    n = sum(1 for x in section.lines if x.strip())
    said = f"{unjudged} report failures it does not judge (GA828)" if unjudged else "none reports a failure"
    part = Part(section.kind, source, section.start, rig)
    part.notes.append(f"{source}: line {section.start}: read as {WHAT} (no other output recognised): {n} lines, {said}")
    return part
