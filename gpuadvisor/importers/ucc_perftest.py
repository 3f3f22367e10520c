"""UCC's collective benchmark ``ucc_perftest`` (openucx/ucc, tools/perf): its settings, then one row per size.

ucc_pt_benchmark.cc's ``print_header`` prints the settings a key a line (``Collective:``, ``Memory type:``,
``Datatype:``, ``Reduction:``, ``Inplace:``, ``Warmup:`` and ``Iterations:`` with their ``small``/``large`` lines),
then the column header ``Count  Size  Time, us`` (with ``-F``: ``Bus Bandwidth, GB/s``; its first form, 2021:
``Bandwidth, GB/s``) over ``avg  min  max`` (and the bandwidth's three), and ``print_time`` one row per size: the
count, the size in bytes, the time per iteration averaged over the ranks, the fastest and the slowest rank's, and the
bandwidth of each of those times (``get_bw`` of each collective: nccl-tests' bus bandwidth, the algorithm bandwidth
times its factor, alltoall's (n-1)/n), ``N/A`` where a collective has none; ``Total time: X ms`` ends the run.

Read: a collective measurement as nccl-tests' rows are (backend ``ucc``): each size's count, bytes, the time averaged
over the ranks and the bus bandwidth of that time; its headline the largest size's. The table names no GPU, no rank
count and no interconnect: those are not shown, so the figure is not held against a link. A table without its
bandwidth columns is noted, not read as a measurement (no bandwidth to put in it).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Measurement, Rig, SweepRow
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section

WHAT = "ucc_perftest"
_SETTING = re.compile(r"^(Collective|Memory type|Datatype|Reduction|Inplace):\s+(\S(?:.*\S)?)\s*$")
_HEADER = re.compile(r"^Count\s+Size\s+Time, us(?:\s+((?:Bus )?Bandwidth), GB/s)?\s*$")
_ROW = re.compile(
    r"^(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)(?:\s+(\d+\.\d+|N/A)\s+(?:\d+\.\d+|N/A)\s+(?:\d+\.\d+|N/A))?$"
)
_TOTAL = re.compile(r"^Total time:\s+([\d.]+) ms")
_STARTED = re.compile(r"^\d+\s+\d+(?:\s|$)")  # a row's count and size: a row, whole or not
# UCC's collective names (ucc_pt_op_type_str) -> Measurement.kind, as nccl-tests' binaries are named
KINDS = {
    "Allreduce": "all_reduce",
    "Allgather": "all_gather",
    "Reduce_scatter": "reduce_scatter",
    "Bcast": "broadcast",
    "Reduce": "reduce",
    "Alltoall": "alltoall",
    "Gather": "gather",
    "Scatter": "scatter",
}
_DTYPES = {"float32": "float32", "float16": "float16", "float64": "float64", "bfloat16": "bfloat16", "int32": "int32"}
_NOT_SHOWN = "ucc_perftest's output names no rank count and no GPU"


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Collective:  Alltoall`` over ``Memory type:``, or (its settings cut off) the ``Count  Size  Time, us``
    header."""
    if current is not None and current.kind == "ucc-perftest":
        return False
    s = lines[i].strip()
    if s.startswith("Collective:") and i + 1 < len(lines):
        return lines[i + 1].strip().startswith("Memory type:")
    return _HEADER.match(s) is not None


def _settings_line(settings: dict[str, str]) -> str:
    place = {"0": ", not in place", "1": ", in place"}.get(settings.get("Inplace", ""), "")
    return f"{settings.get('Memory type', '?')} memory, {settings.get('Datatype', '?')}{place}"


def parse_ucc_perftest(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The run's rows as one collective measurement (without its bandwidth columns: a note)."""
    rig = Rig()
    settings: dict[str, str] = {}
    bandwidth: str | None = None
    header = None
    rows: list[SweepRow] = []
    cut_at = None
    lines = stripped_rows(text, first_line)
    total = any(_TOTAL.match(s) for s, _, _ in lines)
    for s, lineno, cut in lines:
        m = _SETTING.match(s)
        if m:
            settings[m.group(1)] = m.group(2)
        h = _HEADER.match(s)
        if h:
            header, bandwidth = lineno, h.group(1)
        r = _ROW.match(s)
        if r is None or header is None:
            cut_at = lineno if header and _STARTED.match(s) else cut_at  # a row not whole: the paste's cut
            continue
        if cut:
            cut_at = lineno
            continue
        bw = r.group(6)
        if bandwidth is None or bw is None or bw == "N/A":
            continue
        size, avg = int(r.group(2)), float(r.group(3))
        dtype = settings.get("Datatype", "")
        rows.append(
            SweepRow(
                size_bytes=size,
                count=int(r.group(1)),
                dtype=_DTYPES.get(dtype, dtype),
                time_us=avg,
                algbw_gbps=round(size / avg / 1e3, 4) if avg else 0.0,
                busbw_gbps=float(bw),
            )
        )
    if header is None:
        raise ImportParseError(source, first_line, f"{WHAT} without its 'Count  Size  Time, us' header")
    name = settings.get("Collective", "its collective not shown")
    method = f"ucc_perftest {name} ({_settings_line(settings)})"
    if not rows:
        rig.problems.append(
            f"{source}: line {header}: {method}: no bandwidth column (run with -F to print it) or no whole row: "
            "times only, not read as a measurement"
        )
        return rig
    meas = Measurement(
        kind=KINDS.get(name, name.lower()),
        backend="ucc",
        provenance="imported",
        method=method,
        rows=rows,
        value_gbps=rows[-1].busbw_gbps,
        status="partial" if cut_at or not total else "ok",
        notes=[
            f"ucc_perftest's '{bandwidth}, GB/s' of the time averaged over the ranks, as nccl-tests' busbw; algbw: "
            "the printed size over that time (nccl-tests' S/t)"
        ],
    )
    if not total and not cut_at:
        meas.notes.append("the paste ends before ucc_perftest's 'Total time' line: later sizes may not be shown")
    if cut_at:
        meas.notes.append(
            f"the paste ends inside the row of line {cut_at}: the sizes after {rows[-1].size_bytes} B are not shown"
        )
    for f in ("world_size", "gpus"):
        meas.unavailable[f] = _NOT_SHOWN
    rig.origins["measurements[0]"] = f"{source}:{header}"
    rig.measurements.append(meas)
    return rig
