"""A big kernel log read as a stream: memory that does not grow with its length, work linear in it.

``gpuadvisor import`` reads a file whole and cuts it into the outputs it holds, which costs memory a few times
the file's size and a test of every row's detector on every line. A file over ``STREAM_BYTES`` whose first
megabyte is one kernel log (dmesg, journalctl, syslog, /dev/kmsg) is read here instead, block by block: each
block's events go to one :class:`gpuadvisor.probes.kmsg.LogReader`, which keeps the first and last few events of
each kind and device and counts the others. The log runs to the end of the file unless another output starts in
it: the lines that carry no log prefix are tried against every row's detector, and a file where one fires (a
kernel log with nvidia-smi output further down) is handed back to the ordinary reader (``None``).
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuadvisor.importers import beyond
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import SYSLOG_TIME
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.registry import BY_KIND, FORMATS
from gpuadvisor.importers.section import Section, clean_lines
from gpuadvisor.importers.sections import split_sections, unread
from gpuadvisor.probes.kmsg import LogReader
from gpuadvisor.probes.kmsg_keep import KEEP_FIRST, KEEP_LAST

STREAM_BYTES = 8 * 2**20  # a file this big, and a kernel log at its start, is read as a stream
HEAD_BYTES = 2**20  # what decides whether it is one (cut at its last whole line)
BLOCK_BYTES = 4 * 2**20  # the stream's blocks (cut at their last whole line)
WINDOW = 8  # lines around a line without a log prefix that the detectors see

# A line of a kernel log or of the journal around it ("Nov 26 07:00:00 host systemd[1]: ..."): not the start of
# another output, so not tried against the detectors.
_JOURNAL = re.compile(rf"^\s*(?:{SYSLOG_TIME}|\d{{4}}-\d\d-\d\d[T ][\d:.,]+\S*)\s+\S+\s+[^\s:]+:\s")
# The start of a line that is neither (the negative look-ahead runs at C speed over a whole block).
_OTHER = re.compile(rf"^(?!{beyond.LOG_LINE.pattern[1:]}|{_JOURNAL.pattern[1:]}|\s*$)", re.M)


def _decode(data: bytes, source: str, line: int) -> str:
    if b"\x00" in data:
        at = line + data[: data.index(b"\x00")].count(b"\n")
        raise ImportParseError(source, at, "binary data (a NUL byte), not command output")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.replace("\r\n", "\n") if "\r" in text else text


def _window(text: str, pos: int) -> tuple[list[str], int]:
    """The lines around the line starting at ``pos`` (up to ``WINDOW`` each side), and its index among them."""
    lo = pos
    for _ in range(WINDOW):
        if lo == 0:
            break
        lo = text.rfind("\n", 0, lo - 1) + 1
    hi = pos
    for _ in range(WINDOW + 1):
        nxt = text.find("\n", hi)
        if nxt < 0:
            hi = len(text)
            break
        hi = nxt + 1
    return text[lo:hi].split("\n"), text.count("\n", lo, pos)


def _another_output(text: str) -> bool:
    """Whether an output other than the log starts in a block of it (a row's detector fires on a line without a
    log prefix, the log being the section read so far)."""
    log = Section(kind="kernel-log", start=1)
    for m in _OTHER.finditer(text):
        lines, at = _window(text, m.start())
        if any(f.starts is not None and f.kind != "kernel-log" and f.starts(lines, at, log) for f in FORMATS):
            return True
    return False


def parse_big_log(path: Path) -> list[Part] | None:
    """A big file that is one kernel log, read as a stream; None when it is not one (small, not a regular file,
    not a log at its start, UTF-16, quoted, or with another output in it): the ordinary reader reads it."""
    try:
        if not path.is_file() or path.stat().st_size < STREAM_BYTES:
            return None
        f = path.open("rb")
    except OSError:
        return None
    source = str(path)
    with f:
        data = f.read(HEAD_BYTES)
        if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\n" not in data:
            return None
        cut = data.rindex(b"\n") + 1
        rest = data[cut:]
        head = _decode(data[:cut].removeprefix(b"\xef\xbb\xbf"), source, 1)
        lines = head.splitlines()
        sections = split_sections(head)
        if len(sections) != 1 or sections[0].kind != "kernel-log" or clean_lines(head) != lines:
            return None
        log = sections[0]
        reader = LogReader(first_line=log.start, driver_lines=True)  # the driver lines GA828 lists, as read whole
        reader.feed("\n".join(lines[log.start - 1 :]) + "\n", last=False)
        module = beyond.LOADING.search(head)
        while True:
            chunk = f.read(BLOCK_BYTES)
            eof = len(chunk) < BLOCK_BYTES
            block = rest + chunk
            end = len(block) if eof else block.rfind(b"\n") + 1 or len(block)  # (a line longer than a block: cut)
            block, rest = block[:end], block[end:]
            if block:
                text = _decode(block, source, reader.line_no)
                if _another_output(text):
                    return None
                reader.feed(text, last=eof)
                module = module or beyond.LOADING.search(text)
            if eof:
                break
    events, n = reader.finish()
    rig = beyond.kernel_rig(events, n, source, log.start, module.group(0) if module else None)
    part = Part(log.kind, source, log.start, rig, name=BY_KIND[log.kind].name)
    spans = unread(head, sections)
    part.notes += [f"{source}: {span}: not recognised, not read (it starts {sample!r})" for span, sample in spans]
    counted = sum(e.more for e in events)
    if counted or reader.unkept:
        part.notes.append(
            f"{source}: a kernel log of {n:,} lines: the first {KEEP_FIRST} and last {KEEP_LAST} events of each kind "
            f"and device are kept as evidence, {counted + reader.unkept:,} others counted"
        )
    return [part]
