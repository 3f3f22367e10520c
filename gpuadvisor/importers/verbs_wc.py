"""Verbs work completions in error, as RDMA programs log them: a completion queue entry whose ``ibv_wc.status`` is
not IBV_WC_SUCCESS, in the common forms people paste:

- a program's own line with the status number and rdma-core's words for it (``ibv_wc_status_str``): UCCL's ``CQE
  ERROR wr_id=3 status=12(transport retry counter exceeded) opcode=1 byte_len=0 vendor_err=0xa qp_num=0x2c10``;
- the enum's name: ``... failed with IBV_WC_RETRY_EXC_ERR`` (libibverbs' ``enum ibv_wc_status``);
- NCCL's ``NET/IB : Got completion from peer 10.1.1.2<53427> with error 12, opcode 0, len 0, vendor err 129`` (net_ib;
  2.19+ ``with status=12 opcode=0 ...``; older NCCL without the peer), after its own ``NCCL WARN`` tag;
- SPDK's ``... type SEND, status: (12): transport retry counter exceeded`` and ``CQ error on Queue Pair ..., Response
  Index N (12): transport retry counter exceeded``.

ibv_wc_status (libibverbs/verbs.h; ibv_wc_status_str in libibverbs/verbs.c, man ibv_poll_cq(3)): 12,
IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded": the requester sent and got no ACK or NAK from its peer
after its retries (``retry_cnt`` times the local ACK timeout): the peer unreachable (a wrong GID index or route, the
peer's port down or its process gone) or its packets dropped (RoCE without lossless settings: PFC/ECN); 13, the RNR
retries: the peer posted no receive; 5, flushed: the queue pair was already in error (a consequence of the first
error). Read: a note of the statuses (their count, the queue pairs), with the network action; a completion error
names the path between two queue pairs, not a fault of this adapter (no adapter, port or GPU finding).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside, outside_log

WHAT = "verbs work completions in error (CQE status, IBV_WC_*, NCCL's NET/IB completion errors)"
# enum ibv_wc_status -> (its name, ibv_wc_status_str's words) (rdma-core libibverbs/verbs.h, verbs.c)
WC_STATUS: dict[int, tuple[str, str]] = {
    1: ("IBV_WC_LOC_LEN_ERR", "local length error"),
    2: ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    3: ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    4: ("IBV_WC_LOC_PROT_ERR", "local protection error"),
    5: ("IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"),
    6: ("IBV_WC_MW_BIND_ERR", "memory management operation error"),
    7: ("IBV_WC_BAD_RESP_ERR", "bad response error"),
    8: ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    9: ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"),
    10: ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    11: ("IBV_WC_REM_OP_ERR", "remote operation error"),
    12: ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    14: ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"),
    15: ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    16: ("IBV_WC_REM_ABORT_ERR", "aborted error"),
    17: ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    18: ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    19: ("IBV_WC_FATAL_ERR", "fatal error"),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"),
    21: ("IBV_WC_GENERAL_ERR", "general error"),
}
_BY_NAME = {name: n for n, (name, _) in WC_STATUS.items()}
_BY_WORDS = {words.lower(): n for n, (_, words) in WC_STATUS.items()}
# what each status asks of the network (the others: the program's own use of verbs)
_ACTION = {
    12: "the requester got no ACK from its peer after its retries: the peer unreachable (GID index, route) or its "
    "packets dropped under congestion (RoCE: PFC/ECN); check the GID index and routes, PFC/ECN on the path, and the "
    "queue pair's timeout and retry count",
    13: "the peer posted no receive in time (receiver not ready): the peer program is slow or stopped",
    5: "flushed: the queue pair was already in error, a consequence of the first error",
    20: "the peer did not respond in time: check the path and the peer node",
}
_NAME = re.compile(r"\b(IBV_WC_[A-Z_]+_ERR)\b")
# "status=12(transport retry counter exceeded)", "status 12 (...)", "status: 12"
# "status: (12): ..." (SPDK)
_STATUS = re.compile(r"\b(?:wc_?)?status\s*[=:]?\s*\(?(\d{1,2})\b", re.I)
_WORDS = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(_BY_WORDS, key=len, reverse=True)) + r")\b", re.I)
# NCCL 2.19+: "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ..."; before: "with error 12, opcode ..."
_NCCL = re.compile(r"NET/IB\w*\s*: ?Got completion (?:from peer (\S+) )?with (?:error |status=)(\d{1,2})\b")
_QP = re.compile(r"\bqp_?num\s*[=:]\s*(0x[0-9a-fA-F]+|\d+)", re.I)
_CQE = re.compile(r"\b(?:CQE?|completion|wc|work completion)\b", re.I)
_LONGEST = 2000


def _status(line: str) -> tuple[int, str] | None:
    """The completion status a line tells of (its number, the peer NCCL names or ""), None for none."""
    s = line[:_LONGEST]
    if m := _NCCL.search(s):
        return int(m.group(2)), m.group(1) or ""
    if m := _NAME.search(s):
        return (_BY_NAME[m.group(1)], "") if m.group(1) in _BY_NAME else None
    m = _STATUS.search(s)
    if m and _CQE.search(s) and int(m.group(1)) in WC_STATUS and int(m.group(1)):
        return int(m.group(1)), ""
    if (w := _WORDS.search(s)) and (_CQE.search(s) or "status" in s.lower()):
        return _BY_WORDS[w.group(1).lower()], ""
    return None


# the outputs that read their own completion errors (perftest's "Failed status 12: wr_id ...", the ping-pong's,
# UCX's, NCCL's debug log)
_READ_BY = ("perftest", "ibv-pingpong", "ucx-log", "nccl-debug")


@outside("verbs-wc")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A line telling of a work completion in error (its status by number with a completion word, by enum name, by
    ibv_wc_status_str's words, or NCCL's ``NET/IB : Got completion ... with error N``), outside a log and the
    outputs that read their own."""
    if current is not None and current.kind in _READ_BY or not outside_log(current):
        return False
    return _status(lines[i]) is not None


def notes(lines: list[str], source: str, first_line: int) -> list[str]:
    """A note of the completion errors by status (count, queue pairs, peers), with what each asks of the network;
    none when no line tells of one (shared with NCCL's debug log, whose WARN lines carry NCCL's form)."""
    seen: dict[int, int] = {}
    qps: dict[str, None] = {}
    peers: dict[str, None] = {}
    first = 0
    for k, line in enumerate(lines):
        found = _status(line)
        if found is None:
            continue
        seen[found[0]] = seen.get(found[0], 0) + 1
        if found[1]:
            peers[found[1]] = None
        if q := _QP.search(line[:_LONGEST]):
            qps[q.group(1)] = None
        first = first or first_line + k
    said = []
    for n, count in sorted(seen.items(), key=lambda x: -x[1]):
        name, words = WC_STATUS[n]
        on = f" on {len(qps)} queue pair(s)" if qps else ""
        frm = f" from peer(s) {', '.join(list(peers)[:4])}" if peers else ""
        action = _ACTION.get(n, "check how the program posts its work requests and registers its memory")
        said.append(
            f"{source}: line {first}: verbs work completion status {n} ({words}, {name}) x{count}{on}{frm}: "
            f"{action}; a completion error names the path between two queue pairs: no adapter, port or GPU fault "
            "is shown"
        )
    return said


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The completion errors as notes (no finding: see the module's text)."""
    said = notes(clean_lines(text), source, first_line)
    if not said:
        raise ImportParseError(source, first_line, f"{WHAT}: no completion status shown")
    rig = Rig()
    rig.problems += said
    return rig
