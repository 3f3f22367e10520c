"""fio results, JSON (``--output-format=json``) or the default text report, as StorageBench facts.

What is read per job (fio's HOWTO, "Interpreting the output" and the JSON keys of fio 3.x):
sequential reads and writes (``rw`` read/write, block size >= 64 KiB) give GB/s (``bw_bytes``, 1e9 bytes/s);
random reads (``randread``) give IOPS and the mean completion latency (``clat_ns.mean``). fio's text report
prints bandwidth as "BW=1234MiB/s (1294MB/s)" and IOPS as "IOPS=12.3k"; the MB/s figure (1e6) is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.facts import StorageBench
from gpuadvisor.importers.numbers import json_data, quantity
from gpuadvisor.importers.section import Section, outside, outside_log

SEQ_MIN_BLOCK = 64 * 1024


class FioError(InputError):
    """fio output that cannot be read; one line naming the file and what is wrong."""


def parse_block(text: str | None) -> int | None:
    """fio's bs: "4k", "1M", "4096", "128KiB", "64.0KiB" (k/m = 1024 multiples in fio's default kb_base)."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)(i?b)?\s*", str(text).split(",")[0].split("-")[0], re.I)
    if not m or len(m.group(1)) > 15:
        return None
    size = float(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]
    return int(size) if size == int(size) else None  # fio 3 prints "64.0KiB": a whole number of bytes


def _opts(d: dict[str, Any], key: str) -> dict[str, Any]:
    """A job's (or the run's) options: a dict, whatever the JSON holds there."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def _job_rw(job: dict[str, Any], top: dict[str, Any]) -> str | None:
    opts = _opts(job, "job options")
    glob = _opts(top, "global options")
    return opts.get("rw") or opts.get("readwrite") or glob.get("rw") or glob.get("readwrite")


def _job_bs(job: dict[str, Any], top: dict[str, Any]) -> int | None:
    opts = _opts(job, "job options")
    glob = _opts(top, "global options")
    return parse_block(opts.get("bs") or opts.get("blocksize") or glob.get("bs") or glob.get("blocksize") or "4k")


def from_json(data: Any, origin: str) -> StorageBench:
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list) or not data["jobs"]:
        raise FioError(f"{origin}: not fio JSON output (no 'jobs' list; run fio with --output-format=json)")
    bench = StorageBench(provenance="imported", method=str(data.get("fio version") or "fio"))
    for job in data["jobs"]:
        if not isinstance(job, dict):
            continue
        rw = str(_job_rw(job, data) or "").lower()
        bs = _job_bs(job, data)
        name = job.get("jobname", "?")
        direct = _opts(job, "job options").get("direct") or _opts(data, "global options").get("direct")
        if direct is not None:
            bench.direct = str(direct) == "1"
        for side in ("read", "write"):
            st = job.get(side)
            if not isinstance(st, dict) or not st.get("io_bytes"):
                continue
            bw = quantity(st.get("bw_bytes"))
            kib = quantity(st.get("bw"))
            if bw is None and kib is not None:
                bw = kib * 1024  # fio before 3.2: bw in KiB/s
            iops = quantity(st.get("iops"))
            random = rw.startswith("rand") or rw in ("randrw", "randread", "randwrite")
            if random and side == "read" and iops is not None:
                bench.rand_read_iops = iops
                clat_ns = st.get("clat_ns")
                clat = quantity(clat_ns.get("mean")) if isinstance(clat_ns, dict) else None
                if clat is not None:
                    bench.rand_read_latency_us = round(clat / 1000, 2)
                bench.block_bytes = bench.block_bytes or bs
                iod = _opts(job, "job options").get("iodepth") or _opts(data, "global options").get("iodepth")
                bench.iodepth = int(iod) if iod and str(iod).isdigit() and len(str(iod)) < 7 else 1
            elif not random and bw is not None:
                iod = _opts(job, "job options").get("iodepth") or _opts(data, "global options").get("iodepth")
                depth = int(iod) if iod and str(iod).isdigit() and len(str(iod)) < 7 else None
                set_sequential(bench, side, bw, bs, depth, name)
    if bench.seq_read_gbps is None and bench.seq_write_gbps is None and bench.rand_read_iops is None:
        raise FioError(f"{origin}: fio JSON has no sequential read/write (bs >= 64k) or random-read job with I/O done")
    return bench


def set_sequential(bench: StorageBench, side: str, bw: float, bs: int | None, depth: int | None, name: str) -> None:
    """A sequential job's bandwidth (bytes/s) as seq_<side>_gbps. One at blocks below SEQ_MIN_BLOCK (a 4 KiB
    sync read) is still what was measured: kept, with its block size and depth and a note, unless a bulk-block
    job of the same side is there (that one is the bandwidth figure)."""
    attr = f"seq_{side}_gbps"
    small = bs is not None and bs < SEQ_MIN_BLOCK
    note = f"job {name}: {side} at {bs} B blocks (a small-block figure, below a bulk read's bandwidth)"
    if small and getattr(bench, attr) is not None and note not in bench.notes:
        return  # a bulk-block figure (or an earlier small one) is already there
    if not small:
        bench.notes = [n for n in bench.notes if not (n.startswith("job ") and f" {side} at " in n)]
    elif note not in bench.notes:
        bench.notes.append(note)
    setattr(bench, attr, round(bw / 1e9, 3))
    if bench.rand_read_iops is None:  # a random-read job's block size and depth come first
        bench.block_bytes = bs if bs is not None else bench.block_bytes
        bench.iodepth = depth if depth is not None else bench.iodepth


_TEXT_LINE = re.compile(r"^\s*(read|write)\s*:\s*IOPS=([0-9.]+)([kKmM]?),\s*BW=[^(]*\(([0-9.]+)([kMGT]?)B/s\)")
# fio 2.x's result line: "read : io=4096.0MB, bw=57875KB/s, iops=14468, runt= 72472msec" (KB = 1024 bytes: its
# kb_base=1024 default; fio 3 prints IOPS=/BW= and both units instead)
_OLD_LINE = re.compile(
    r"^\s*(read|write)\s*:\s*io=[^,]*,\s*bw=\s*([0-9.]+)([KMGT]?)B/s,\s*iops=\s*([0-9.]+)([kKmM]?)\s*,"
)
_OLD_UNIT = {"": 1.0, "K": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4}
# the job line: fio 3's "bs=(R) 4096B-4096B, (W) ...", fio 2's "bs=4K-4K/4K-4K/4K-4K" (read/write/trim ranges)
_JOB_HEAD = re.compile(r"^\s*(\S(?:[^:]{0,80}\S)?): \(g=\d+\): rw=(\w+), bs=(?:\(R\) )?([0-9.]+[KMG]?i?B?)")
_UNIT = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "G": 1e9, "T": 1e12}


# each form's groups: side, IOPS figure and suffix, bandwidth figure and unit, and the units' multiples
_RESULT_FORMS = ((_TEXT_LINE, (1, 2, 3, 4, 5), _UNIT), (_OLD_LINE, (1, 4, 5, 2, 3), _OLD_UNIT))


def _result(line: str) -> tuple[str, float, float] | None:
    """A job's result line: (read or write, IOPS, bytes/s); None for another line, or a figure unreadable
    ("IOPS=1.2.3k", one too long to be a figure), never a value."""
    for form, (side, iops, iops_unit, bw, bw_unit), units in _RESULT_FORMS:
        t = form.match(line)
        if t:
            iops_shown, bw_shown = quantity(t.group(iops)), quantity(t.group(bw))
            if iops_shown is None or bw_shown is None:
                return None
            return t.group(side), iops_shown * _UNIT[t.group(iops_unit)], bw_shown * units[t.group(bw_unit)]
    return None


def from_text(text: str, origin: str) -> StorageBench:
    """fio's default (normal) report, of fio 3.x or (its result lines' older form) 2.x."""
    bench = StorageBench(provenance="imported", method="fio")
    m = re.search(r"^\s*fio-(\d[\w.]*)", text, re.M)
    if m:
        bench.method = f"fio-{m.group(1)}"
    rw_of: dict[str, tuple[str, int | None]] = {}
    depth_of: dict[str, int] = {}
    for line in text.splitlines():
        h = _JOB_HEAD.match(line)
        if h:
            rw_of[h.group(1)] = (h.group(2), parse_block(h.group(3).rstrip("B").rstrip("i")))
            d = re.search(r"\biodepth=(\d{1,6})\b", line)  # the job line's own queue depth
            if d:
                depth_of[h.group(1)] = int(d.group(1))
    current: tuple[str, int | None] | None = None
    depth: int | None = None
    j_name = "?"
    unrecorded: list[str] = []
    for line in text.splitlines():
        j = re.match(r"^\s*(\S(?:[^:]{0,80}\S)?): \(groupid=\d+", line)
        if j:
            current, depth, j_name = rw_of.get(j.group(1)), depth_of.get(j.group(1)), j.group(1)
            continue
        shown = _result(line)
        if shown is None or current is None:
            continue
        side, iops, bw = shown
        rw, bs = current[0].lower(), current[1]
        if rw.startswith("rand") and side == "read":
            bench.rand_read_iops, bench.block_bytes, bench.iodepth = iops, bs, depth or bench.iodepth or 1
        elif not rw.startswith("rand"):
            set_sequential(bench, side, bw, bs, depth, j_name)
        else:  # random writes: shown, with no field of their own
            unrecorded.append(f"{j_name}: random {side}s {iops:,.0f} IOPS, {bw / 1e9:.3g} GB/s ({bs or '?'} B blocks)")
    if bench.seq_read_gbps is None and bench.seq_write_gbps is None and bench.rand_read_iops is None:
        if not unrecorded and (groups := _group_totals(text)):
            bench.notes.append(
                "only the run status groups' totals: " + "; ".join(groups) + " (the jobs' lines, which say "
                "sequential or random and the block size, are not shown: no sequential rate or random IOPS read)"
            )
            for field in ("seq_read_gbps", "seq_write_gbps", "rand_read_iops"):
                bench.unavailable[field] = "fio's job lines not in the paste (only its run status groups' totals)"
            return bench
        if not unrecorded:
            raise FioError(f"{origin}: no fio job results found (expected lines like '  read: IOPS=..., BW=...')")
        bench.notes.append(
            "only random-write results: " + "; ".join(unrecorded) + " (recorded are sequential read and write "
            "rates and random-read IOPS)"
        )
    return bench


# a run status group's total (fio's HOWTO, "Interpreting the output": io is the I/O the group's jobs did, aggrb
# (fio 2.x; bw in fio 3) their aggregate bandwidth, minb/maxb the slowest and fastest job's, mint/maxt the shortest and
# longest run): fio 2.x's "  WRITE: io=984576KB, aggrb=16406KB/s, ..., mint=60011msec, maxt=60011msec" (KB = 1024 B)
_GROUP_HEAD = re.compile(r"^\s*Run status group (\d+) \(all jobs\):\s*$")
_GROUP_OLD = re.compile(r"^\s*(READ|WRITE|TRIM)\s*:\s*io=[^,]*,\s*aggrb=\s*([0-9.]+)([KMGT]?)B/s,.*\bmaxt=\s*(\d+)msec")


def _group_totals(text: str) -> list[str]:
    """Each run status group's total in fio 2.x's form (``group 3: write 16.8 MB/s over 60.0 s``)."""
    out: list[str] = []
    group = "?"
    for line in text.splitlines():
        if (h := _GROUP_HEAD.match(line)) is not None:
            group = h.group(1)
        elif (g := _GROUP_OLD.match(line)) is not None and (bw := quantity(g.group(2))) is not None:
            rate = bw * _OLD_UNIT[g.group(3)]
            out.append(f"group {group}: {g.group(1).lower()} {rate / 1e6:.3g} MB/s over {int(g.group(4)) / 1e3:.1f} s")
    return out


def parse(text: str, origin: str) -> StorageBench:
    """fio output in either format, told apart by its first character."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return from_json(json_data(stripped[stripped.index("{") :], origin, "fio JSON output", FioError), origin)
    if "{" in text and '"fio version"' in text:  # fio prints notes before the JSON object
        return from_json(json_data(text[text.index("{") :], origin, "fio JSON output", FioError), origin)
    return from_text(text, origin)


def json_starts(key: str) -> Callable[[list[str], int, Section | None], bool]:
    """A JSON object (a line starting with ``{``) whose first lines name ``key`` (fio, lsblk -J, nvme list -o json)."""

    def starts(lines: list[str], i: int, current: Section | None) -> bool:
        return lines[i].lstrip().startswith("{") and any(key in x for x in lines[i : i + 3]) and outside_log(current)

    return starts


def json_ends(line: str) -> bool:
    """A pretty-printed JSON object ends at the ``}`` in its first column."""
    return line.startswith("}")


starts_json = json_starts('"fio version"')
_TEXT_START = re.compile(
    r"^\s*(?:\S(?:[^:]{0,80}\S)?: \(g=\d+\): rw=|\S(?:[^:]{0,80}\S)?: \(groupid=\d+, jobs=\d+\)|fio-\d+\.\d+"
    r"|Run status group \d+ \(all jobs\):\s*$)"
)


@outside("fio", log=True)
def starts_text(lines: list[str], i: int, current: Section | None) -> bool:
    """fio's normal report: ``seqread: (g=0): rw=read, bs=(R) ...``, ``fio-3.33``, or a job's result block."""
    return bool(_TEXT_START.match(lines[i]))
