"""The locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) as an RDMA library states it when it fails or warns under it.

UCX appends to an RDMA call that failed with ENOMEM (src/uct/ib/base/ib_log.c, ``uct_ib_mem_lock_limit_msg``; older
ib_md.c) ``Please set max locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)`` (after ". " or " : "),
and since 1.13 says ``RDMA transports are disabled because max locked memory limit (64 kbytes) is too low``;
libibverbs warns ``libibverbs: Warning: RLIMIT_MEMLOCK is 32768 bytes.`` (then ``This will severely limit memory
registrations.``) when a process may lock 32 KiB or less. Each states the limit of the process that printed it: the
limit a job started the same way runs under, what GA813 judges; the message itself says RDMA was used on the node.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside_log

WHAT = "an RDMA library's locked-memory message (UCX, libibverbs)"
_KIB = (
    r"Please set max locked memory \(ulimit -l\) to 'unlimited'\s*\(current: (?P<kib>\d{1,15}) kbytes\)"
    r"|max locked memory limit \((?P<kib2>\d{1,15}) kbytes\) is too low"
)
_BYTES = r"libibverbs: Warning: RLIMIT_MEMLOCK is (?P<bytes>\d{1,18}) bytes"
STATES = re.compile(f"{_KIB}|{_BYTES}")
_LONGEST = 2000


def read(text: str, first: int) -> tuple[int, str, int] | None:
    """The limit the text's first such message states: (bytes, the message as said, its line); None without one."""
    if "locked memory" not in text and "RLIMIT_MEMLOCK" not in text:  # (a substring search first: most logs hold none)
        return None
    for k, line in enumerate(clean_lines(text)):
        m = STATES.search(line[:_LONGEST])
        if m is None:
            continue
        kib = m.group("kib") or m.group("kib2")
        said = line[:_LONGEST].strip()
        said = re.sub(r"^\[[^\]]*\]\s*(?:\[[^\]]*\]\s*)?", "", said)[:300]  # UCX's time and host:pid:tid
        return (int(kib) * 1024 if kib else int(m.group("bytes"))), said, first + k
    return None


def add(rig: Rig, text: str, source: str, first: int) -> set[int]:
    """The limit the text states, on the Rig's node (with the message and where it was read); the lines it was read
    from (none when the text states no limit)."""
    got = read(text, first)
    if got is None:
        return set()
    value, said, line = got
    node = rig.node
    node.memlock_bytes, node.memlock_unlimited, node.memlock_message = value, False, said
    for name in ("memlock_bytes", "memlock_unlimited", "memlock_message"):
        node.unavailable.pop(name, None)
        rig.origins[f"node.{name}"] = f"{source}:{line}"
    return {first + k for k, x in enumerate(clean_lines(text)) if STATES.search(x[:_LONGEST])}


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line that states the limit, outside a log (inside a kernel or service log, the log's reader reads it)."""
    inside = current is not None and current.kind in ("memlock", "daemon-log")
    return not inside and outside_log(current) and STATES.search(lines[i][:_LONGEST]) is not None


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The limit an RDMA library's message states, pasted alone."""
    rig = Rig()
    if not add(rig, text, source, first_line):
        raise ImportParseError(source, first_line, f"{WHAT}: no limit stated")
    return rig
