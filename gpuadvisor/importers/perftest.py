"""perftest (ib_write_bw, ib_send_lat, ...): its bandwidth results, and its own error line about the port.

A bandwidth test prints its header block (perftest_parameters.c, ``ctx_print_test_info``: the test's title
``RDMA_Write BW Test``, ``Device : mlx5_0``, ``Transport type : IB``, ``Connection type : RC``, ``Link type :
Ethernet``, ...), then a result table (perftest_resources.c, ``print_report_bw``): `` #bytes #iterations BW
peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]``, one row per message size. Its unit is MB/sec (2^20 bytes a
second) unless ``--report_gbits`` asked for Gb/sec (1e9 bits); ``format_factor`` is 0x100000 or 125000000. The
average is kept as a measurement of the RDMA link (kind ``rdma_bw``), in GB/s (1e9 bytes a second). With
``--use_cuda`` it first lists the CUDA devices by PCIe address (``CUDA device 0: PCIe address is 17:00``, no
domain or function) and the one picked: kept as the measurement's note, not as GPUs.

perftest checks the port before a test (``ctx_set_link_layer`` / ``check_link``) and, when its state is not
ACTIVE, prints ``" Port number %d state is %s\\n"`` (``portStates``: Nop, Down, Init, Armed, Active Defer) and
gives up. That line is the port's state as the verbs library read it; perftest does not name the device there
(the one given by ``-d``, else the first the library lists), so the port is kept with its device unknown, and what
perftest does not print (physical state, rate) is unknown with that reason.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Measurement, RdmaPort, Rig
from gpuadvisor.importers.rdma_ports import line_ports
from gpuadvisor.importers.section import Section, clean_lines, outside_log

LINE = re.compile(r"^\s*Port number (\d{1,3}) state is (Nop|Down|Init|Armed|Active Defer)\s*$")
_STATES = {"Nop": "NOP", "Down": "DOWN", "Init": "INIT", "Armed": "ARMED", "Active Defer": "ACTIVE_DEFER"}
DEVICE = "? (perftest does not name it)"
# the test's title (testsStr: Send, RDMA_Write, RDMA_Read, Atomic), and the lines --use_cuda prints before it
TITLE = re.compile(r"^\s*((?:Send|RDMA_Write|RDMA_Read|Atomic)\b[\w ]{0,40}?\b(?:BW|Latency) Test)\s*$")
_WAITING = r"\*\s*Waiting for client to connect\.\.\.\s*\*"  # the server's banner
_CUDA_START = re.compile(r"^\s*(?:initializing CUDA|Perftest doesn't supports? CUDA tests\b.*|" + _WAITING + r")\s*$")
# the header block's fields kept, the result table's header (its unit) and its rows
_FIELD = re.compile(r"(Device|Transport type|Connection type|Link type)\s*:\s*(\S+)")
_COLUMNS = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak\[(Gb|MB)/sec\]\s+BW average\[(?:Gb|MB)/sec\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)(?:\s+(\d+(?:\.\d+)?))?\s*$")
# --use_cuda: "CUDA device 0: PCIe address is 17:00", "[pid = 3669, dev = 0] device name = [NVIDIA A30]"
_CUDA_LINES = (
    re.compile(r"^\s*CUDA device (\d+): PCIe address is ([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\s*$"),
    re.compile(r"^\s*\[pid = \d+, dev = (\d+)\] device name = \[(.+?)\]\s*$"),
)
_TO_GBPS = {"Gb": 0.125, "MB": 2**20 / 1e9}  # GB/s per unit printed (perftest's format_factor)
# a work completion in error (perftest_resources.c): "Completion with error at client:" (or "server"), "Failed
# status 4: wr_id 0 syndrom 0x51" (ibv_wc.status, wr_id, vendor_err), "scnt=828, ccnt=700", then the test's
# " Failed to complete run_iter_bw function successfully"
_COMPLETION = re.compile(r"^\s*Completion with error at (client|server)\b")
_FAILED_STATUS = re.compile(r"\bFailed status (\d{1,2})\b[^\n]{0,80}?\bwr_id (\d+) syndr?ome? (0x[0-9a-fA-F]+)")
_RUN_ITER = re.compile(r"^\s*Failed to complete (run_iter_\w+) function successfully")
_COUNTS = re.compile(r"\bscnt=(\d+), ccnt=(\d+)")  # on its own line, or after the others (a paste joined)
# ibv_wc_status_str (libibverbs, enum ibv_wc_status): what a completion's status number means
_WC_STATUS = {
    1: "local length error", 2: "local QP operation error", 4: "local protection error",
    5: "Work Request Flushed Error", 8: "local access error", 9: "remote invalid request error",
    10: "remote access error", 11: "remote operation error", 12: "transport retry counter exceeded",
    13: "RNR retry counter exceeded", 19: "fatal error", 20: "response timeout error", 21: "general error",
}  # fmt: skip


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """`` Port number 1 state is Down``, a test's title (``RDMA_Write BW Test``), or what ``--use_cuda`` prints
    above it (``initializing CUDA``), outside a kernel log and another perftest output."""
    s = lines[i]
    if current is not None and current.kind == "perftest":  # a second test's title starts a second output
        return bool(TITLE.match(s)) and any(TITLE.match(x) for x in current.lines)
    return outside_log(current) and bool(
        LINE.match(s) or TITLE.match(s) or _CUDA_START.match(s) or _COMPLETION.match(s) or _RUN_ITER.match(s)
    )


def _port(m: re.Match[str]) -> RdmaPort:
    """A ``Port number N state is S`` line as a port of an unnamed device in state S."""
    port = RdmaPort(device=DEVICE, port=int(m.group(1)), state=_STATES[m.group(2)])
    for name in ("phys_state", "rate_gbps", "link_layer", "firmware", "ca_type"):
        port.missing(name, "perftest's error line does not print it")
    return port


_ports = line_ports(LINE, _port)


def parse_perftest(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The port perftest's error line names, and the bandwidth its result rows show."""
    lines = clean_lines(text)
    rig = _ports(text, source, first_line) if any(LINE.match(x) for x in lines) else Rig()
    title, unit, fields, cuda, rows = "", "", dict[str, str](), list[str](), list[tuple[int, re.Match[str]]]()
    for k, line in enumerate(lines):
        if m := TITLE.match(line):
            title = title or m.group(1)
        elif m := _COLUMNS.match(line):
            unit = m.group(1)
        elif unit and (m := _ROW.match(line.replace("\t", " "))):
            rows.append((first_line + k, m))
        elif m := _CUDA_LINES[0].match(line) or _CUDA_LINES[1].match(line):
            cuda.append(f"CUDA device {m.group(1)}: {m.group(2)}")
        for f in _FIELD.finditer(line):
            fields.setdefault(f.group(1), f.group(2))
    where = f"{title or 'perftest'} on {fields.get('Device', 'a device it does not name')}"
    link = ", ".join(f"{k} {fields[k]}" for k in ("Transport type", "Connection type", "Link type") if k in fields)
    if (failed := _failed_run(lines, source, first_line, where)) is not None:
        rig.origins[f"measurements[{len(rig.measurements)}]"] = failed[1]
        rig.measurements.append(failed[0])
    if not rows:
        if title and failed is None:
            rig.problems.append(f"{source}: line {first_line}: {where}: no result row shown (the paste ends first)")
        return rig
    line_no, last = rows[-1]
    bw = Measurement(
        kind="rdma_bw",
        backend="perftest",
        provenance="imported",
        method=f"perftest {where}" + (f" ({link})" if link else ""),
        iters=int(last.group(2)),
        value_gbps=round(float(last.group(4)) * _TO_GBPS[unit], 6),
    )
    bw.notes.append(f"{last.group(1)} B messages: BW average {last.group(4)} {unit}/sec (as printed)")
    if last.group(5):
        bw.notes.append(f"message rate {last.group(5)} Mpps (a small message measures the rate, not the link)")
    if cuda:
        bw.notes.append("GPU memory (--use_cuda): " + "; ".join(cuda))
    for name in ("world_size", "gpus"):
        bw.unavailable[name] = "perftest measures one adapter's link, not GPUs"
    rig.origins["measurements[0]"] = f"{source}:{line_no}"
    rig.measurements.append(bw)
    return rig


def _failed_run(lines: list[str], source: str, first_line: int, where: str) -> tuple[Measurement, str] | None:
    """A test that stopped on a work completion in error: a failed measurement with perftest's error (the
    completion's status named as libibverbs names it). None when no such line is shown."""
    said: dict[str, tuple[int, re.Match[str]]] = {}
    for k, line in enumerate(lines):
        for name, pattern in (("at", _COMPLETION), ("status", _FAILED_STATUS), ("iter", _RUN_ITER), ("n", _COUNTS)):
            if name not in said and (found := pattern.search(line)):
                said[name] = (first_line + k, found)
    if "at" not in said and "iter" not in said:
        return None
    parts = [f"completion with error at the {said['at'][1].group(1)}"] if "at" in said else []
    if "status" in said:
        st = said["status"][1]
        meaning = _WC_STATUS.get(int(st.group(1)), "a status perftest does not name")
        parts.append(f"status {st.group(1)} ({meaning}), wr_id {st.group(2)}, vendor syndrome {st.group(3)}")
    if "n" in said:
        parts.append(f"{said['n'][1].group(2)} of {said['n'][1].group(1)} work requests completed")
    if "iter" in said:
        parts.append(f"{said['iter'][1].group(1)} did not complete")
    bw = "iter" not in said or "bw" in said["iter"][1].group(1)  # run_iter_bw, run_iter_lat ...
    m = Measurement(
        kind="rdma_bw" if bw else "rdma_lat",
        backend="perftest",
        provenance="imported",
        method=f"perftest {where}",
        status="failed",
        error="; ".join(parts),
    )
    for name in ("world_size", "gpus"):
        m.unavailable[name] = "perftest measures one adapter's link, not GPUs"
    m.unavailable["value_gbps"] = "the test stopped on a work completion in error: no result row"
    first = min(line for line, _ in said.values())
    return m, f"{source}:{first}"
