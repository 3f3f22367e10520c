"""libibverbs' example programs (rdma-core libibverbs/examples: ibv_rc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong,
ibv_xsrq_pingpong): a ping-pong of send/receive messages between two hosts over one RDMA port.

Each prints its queue pair's address, then its peer's (``  local address:  LID 0x0013, QPN 0x000063, PSN 0x566748,
GID ::``, ``  remote address: LID 0x0001, ...``; ud_pingpong puts a colon before GID), then either its result
(``8192000 bytes in 0.01 seconds = 9668.93 Mbit/sec`` and ``1000 iters in 0.01 seconds = 6.78 usec/iter``) or, on a
work completion in error, ``Failed status transport retry counter exceeded (12) for wr_id 2`` (ibv_wc_status_str,
the status number, the work request: parse_single_wc) and ``parse WC failed 1``, or another of its errors
(``Couldn't connect to host:18515``, ``poll CQ failed``, ``Failed to modify QP to RTR``).

Read as perftest's run is (importers/perftest.py): a failed run with the program's error (GA606 warns: one
exchange between two hosts failed, which says the path between them, not which end, is at fault), or the result
as a measurement of the pair's exchange (``rdma_pingpong``; its message size is the program's, 4096 bytes unless
``-s`` set another, so it is no line-rate figure); the LIDs exchanged are a note.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Measurement, Rig
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "libibverbs' example programs (ibv_rc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong)"
_ADDRESS = re.compile(
    r"^\s*(local|remote) address:\s+LID (0x[0-9a-fA-F]+), QPN 0x[0-9a-fA-F]+, PSN 0x[0-9a-fA-F]+[,:] GID (\S*)"
)
_STATUS = re.compile(r"^\s*Failed status (.+?) \((\d{1,2})\) for wr_id (\d+)\s*$")  # parse_single_wc
# its other errors (rc_pingpong.c's fprintf(stderr, ...) lines)
_ERROR = re.compile(
    r"^\s*(parse WC failed \d+|poll CQ failed -?\d+|Couldn't (?:connect to|read remote address|post send|post receive)"
    r".*?|Failed to modify QP to \w+|Completion for unknown wr_id \d+|IB device \S+ not found|No IB devices found)"
    r"\s*$"
)
# its two result lines: "8192000 bytes in 0.01 seconds = 9668.93 Mbit/sec", "1000 iters in ... = 6.78 usec/iter"
_RESULT = re.compile(r"^\s*(\d+) (bytes|iters) in (\d+(?:\.\d+)?) seconds = (\d+(?:\.\d+)?) (?:Mbit/sec|usec/iter)\s*$")
_NOT_GPUS = "a verbs ping-pong measures one pair of RDMA ports, not GPUs"


@outside("ibv-pingpong", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``  local address:  LID 0x..., QPN 0x..., PSN 0x..., GID ...``, or a ``Failed status <words> (N) for wr_id
    N`` line, outside a log."""
    return bool(_ADDRESS.match(lines[i]) or _STATUS.match(lines[i]))


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """A failed run with its error, or the result as a measurement; the addresses exchanged as a note."""
    rig = Rig()
    lids: dict[str, str] = {}
    errors: list[str] = []
    first_error = 0
    result: dict[str, re.Match[str]] = {}
    for k, line in enumerate(clean_lines(text)):
        if m := _ADDRESS.match(line):
            lids.setdefault(m.group(1), m.group(2))
        elif m := _STATUS.match(line):
            errors.append(f"work completion status {m.group(2)} ({m.group(1)}), wr_id {m.group(3)}")
            first_error = first_error or first_line + k
        elif m := _ERROR.match(line):
            errors.append(m.group(1))
            first_error = first_error or first_line + k
        elif m := _RESULT.match(line):
            result.setdefault(m.group(2), m)
    said = ", ".join(f"{side} LID {lid}" for side, lid in lids.items())
    if said:
        rig.problems.append(f"{source}: line {first_line}: verbs ping-pong: {said} (the queue pairs' addresses)")
    run = Measurement(kind="rdma_pingpong", backend="libibverbs", provenance="imported", method=WHAT)
    for name in ("world_size", "gpus"):
        run.unavailable[name] = _NOT_GPUS
    if errors:
        run.status, run.error = "failed", "; ".join(dict.fromkeys(errors))
        run.unavailable["value_gbps"] = "the ping-pong stopped on its error: no result line"
        rig.origins["measurements[0]"] = f"{source}:{first_error}"
    elif "bytes" in result:
        b = result["bytes"]
        run.value_gbps = round(float(b.group(4)) / 8000, 6)  # Mbit/s (1e6 bits) as GB/s (1e9 bytes)
        run.notes.append(f"{b.group(1)} bytes in {b.group(3)} s = {b.group(4)} Mbit/sec (as printed)")
        if "iters" in result:
            it = result["iters"]
            run.iters, run.latency_us = int(it.group(1)), float(it.group(4))
        rig.origins["measurements[0]"] = source
    else:
        rig.problems.append(f"{source}: line {first_line}: verbs ping-pong: no result or error shown (cut, or hung)")
        return rig
    rig.measurements.append(run)
    return rig
