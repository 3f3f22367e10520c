"""nccl-tests output (``all_reduce_perf`` and its siblings) -> imported Measurements.

Reads the header (``nThread``/``nGpus``/sizes/iterations, and the ``nccl-tests version`` and ``Collective test
starting`` lines of newer versions), the "Using devices" rank lines (host, device, bus id, GPU name), the column
header (whatever columns this version prints: with or without ``redop``/``root``, ``#wrong`` or ``error``), the
out-of-place and in-place halves of each row, ``Out of bounds values`` and ``Avg bus bandwidth``. Each run
becomes one :class:`gpuadvisor.facts.Measurement` per data type and operation, its rows the out-of-place
figures (nccl-tests' headline), ``value_gbps`` the busbw at the largest size, ``world_size`` the rank count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.facts import Gpu, Measurement, Rig, SweepRow
from gpuadvisor.importers import nccl_failed, nccl_layout
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID_NO_FUNCTION
from gpuadvisor.importers.nccl_bounds import keep_deltas, out_of_bounds
from gpuadvisor.importers.nccl_launch import BINARIES, failed, launched_ranks, named_binary
from gpuadvisor.importers.nccl_layout import TYPE_BYTES, blank_redop, columns_from_row, old_layout_binary
from gpuadvisor.importers.nccl_log import RANK_WORDS, rank_line
from gpuadvisor.importers.section import Section, clean_lines
from gpuadvisor.importers.values import normalize_bus_id

DTYPES = {"float": "float32", "half": "float16", "double": "float64", "int": "int32", "uint": "uint32"}

_RANK = rank_line("^", r"([^\]]*)")
_HEADER = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)(.*)$")
_NCCL_VERSION = re.compile(r"(?:^|[\s#])NCCL version (\d+\.\d+\.\d+)")
# The "#" lines that start a run (a second one starts a second run), then the others nccl-tests prints
_FIRST = [r"nThread\s+\d+\s+nGpus", "nccl-tests version", "Collective test starting", r"Using devices\s*$"]
# the column header; MSCCL++'s test (mscclpp-test) prints nccl-tests' without type, redop and root columns
_FIRST_LINES = "|".join([*_FIRST, r"size\s+count\s+type\s", r"size\s+count\s+time\s+algbw\s"])
_OTHER_LINES = [
    RANK_WORDS,
    "Collective test concluded",
    r"\(B\)\s+\(elements\)",
    r"(?:out-of|in)-place\s+(?:in|out-of)-place",
]
_HASHLESS = re.compile(f"^(?:{_FIRST_LINES}|{'|'.join(_OTHER_LINES)}|Out of bounds values|Avg bus bandwidth)")


@dataclass
class Rank:
    rank: int
    host: str
    device: int
    bus: str  # as printed: "0000:04:00" or "0x01"
    name: str
    line: int = 0

    @property
    def bus_id(self) -> str | None:
        """Full bus id when nccl-tests printed domain:bus:device; None for the bare "0x01" of older versions."""
        return normalize_bus_id(self.bus + ".0") if re.fullmatch(PCI_BUS_ID_NO_FUNCTION, self.bus) else None

    @property
    def bus_number(self) -> int | None:
        if self.bus_id:
            return int(self.bus_id[5:7], 16)
        m = re.fullmatch(r"0x([0-9a-fA-F]{1,2})", self.bus)
        return int(m.group(1), 16) if m else None


@dataclass
class NcclRun:
    binary: str | None = None
    n_thread: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    step_factor: int | None = None  # -f: each size is the previous x factor
    step_bytes: int | None = None  # -i: each size is the previous + step
    warmup: int | None = None
    iters: int | None = None
    ranks: list[Rank] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    groups: dict[tuple[str, str, str], list[tuple[SweepRow, SweepRow | None]]] = field(default_factory=dict)
    avg_busbw: float | None = None
    out_of_bounds: str | None = None
    deltas: list[tuple[float, SweepRow]] = field(default_factory=list)  # the old layout's "error" (max delta)
    nccl_version: str | None = None
    nccl_version_line: int = 0
    notes: list[str] = field(default_factory=list)
    header_line: int = 0
    columns_line: int = 0
    failure: tuple[int, str] | None = None  # the first line that says the run failed (line number, text)
    failed_lines: list[tuple[int, str]] = field(default_factory=list)  # every such line (the first 1000)
    in_place_first: bool = False  # MSCCL++'s halves: "in-place" then "out-of-place"
    in_place_only: bool = False  # rows that print only their in-place half: the measurement's rows are those
    columns_raw: str = ""  # the column header line as printed (where its columns sit)
    launched: int | None = None  # the ranks its command line asks for (mpirun -np x -t x -g), when shown

    @property
    def world_size(self) -> int | None:
        shown = {r.rank for r in self.ranks}
        if shown:  # ranks 0..n-1; rank 71 alone (the others' lines above the paste's start): not shown
            return len(shown) if max(shown) < len(shown) else None
        if self.n_thread and self.n_gpus:
            return self.n_thread * self.n_gpus
        return self.launched  # neither header nor device lines: the command line's count

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(r.host for r in sorted(self.ranks, key=lambda r: r.rank)))

    def local_ranks(self) -> list[Rank]:
        """The ranks on the host of rank 0 (the machine this scan describes), one per device."""
        if not self.ranks:
            return []
        host = self.hosts[0]
        by_dev: dict[int, Rank] = {}
        for r in sorted(self.ranks, key=lambda r: r.rank):
            if r.host == host:
                by_dev.setdefault(r.device, r)
        return [by_dev[d] for d in sorted(by_dev)]


def _num(tok: str, what: str, source: str, line: int, kind: type = float) -> float | int | None:
    if tok.upper() == "N/A":
        return None
    try:
        return kind(tok)
    except ValueError:
        raise ImportParseError(source, line, f"{what} is {tok[:20]!r}, not a number") from None


def read_nccl(text: str, source: str = "<text>", first_line: int = 1, hint: str = "") -> NcclRun:
    """Everything one nccl-tests run printed. ``hint``: text that may name the binary (a command line)."""
    rccl = _RCCL.search(text)
    if rccl is not None and not _NAMED_GPU.search(text):  # ROCm's fork, its ranks named no vendor's GPU: AMD's
        at = first_line + text.count("\n", 0, rccl.start())
        raise ImportParseError(source, at, f"rccl-tests ({rccl.group(0).strip()!r}): {AMD_ONLY}")
    run = NcclRun()
    lines = clean_lines(text)
    seen: set[tuple[str, str, str, int]] = set()
    for k, line in enumerate(lines):
        lineno = first_line + k
        s = untagged(line)
        if not s:
            continue
        if _HASHLESS.match(s):
            s = "# " + s  # a header line whose "#" the paste lost (GitHub renders it as a heading)
        m = _NCCL_VERSION.search(s)  # "NCCL version 2.21.5+cuda12.4" (NCCL_DEBUG=VERSION/INFO), with or without "#"
        if m and not run.nccl_version:
            run.nccl_version = m.group(1)
            run.nccl_version_line = lineno
            continue
        if s.startswith("#"):
            _comment(run, s, lineno, k == len(lines) - 1 and not text.endswith(("\n", "\r")), line)
            continue
        tokens = s.split()
        if not tokens[0].isdigit():
            if failed(s) and len(run.failed_lines) < 1000:
                run.failure = run.failure or (lineno, s[:160])
                run.failed_lines.append((lineno, s[:400]))
            continue  # prompts, warnings, NCCL INFO lines
        if not run.columns:
            run.columns = columns_from_row(tokens)
            if not run.columns:
                raise ImportParseError(source, lineno, "a data row before the column header (#  size  count  type ...)")
            run.columns_line = lineno
            run.notes.append(
                f"line {lineno}: no column header in the paste; the columns read from the row's shape "
                f"({' '.join(run.columns)})"
            )
        tokens = blank_redop(run.columns, tokens)
        times = [i for i, c in enumerate(run.columns) if c == "time"]
        if len(times) == 2 and len(tokens) == times[1]:  # one half printed, the other blank (MSCCL++)
            tokens = nccl_layout.one_half(run.columns, tokens, run.columns_raw, line)
        if len(tokens) != len(run.columns):
            if not any(x.strip()[:1].isdigit() for x in lines[k + 1 :]):  # no row after it: the paste's cut
                times = [i for i, c in enumerate(run.columns) if c == "time"]
                if len(times) == 2 and len(tokens) > times[1]:  # the cut falls in its in-place half: the
                    # out-of-place half is shown whole (a value after it follows), the in-place one is not
                    row = dict(zip(run.columns, tokens, strict=False))
                    key = (row.get("type", "float"), row.get("redop", "-"), row.get("root", "-"))
                    if (*key, int(tokens[0])) not in seen:
                        whole = _halves(run.columns[: times[1]], tokens[: times[1]], source, lineno, key[0])[0]
                        run.groups.setdefault(key, []).append((whole, None))
                        run.notes.append(
                            f"last row (line {lineno}) cut in its in-place half: its out-of-place one read"
                        )
                        break
                run.notes.append(f"last row (line {lineno}) cut short; left out")
                break
            raise ImportParseError(
                source, lineno, f"a row of {len(tokens)} values under a header of {len(run.columns)} columns"
            )
        row = dict(zip(run.columns, tokens, strict=False))  # first occurrence of each name = out-of-place
        key = (row.get("type", ""), row.get("redop", "-"), row.get("root", "-"))  # "": no type column
        size = int(_num(tokens[0], "size", source, lineno, int) or 0)
        if (*key, size) in seen:
            run.notes.append(f"line {lineno}: size {size} printed twice; the first kept")
            continue
        seen.add((*key, size))
        shown = _printed_halves(run.columns, tokens, source, lineno, key[0])
        halves = _ordered(shown, run.in_place_first)
        if run.in_place_first and [h for h, _ in shown] == [0] and not run.in_place_only:
            run.in_place_only = True
            run.notes.append(f"line {lineno}: only the in-place half is printed: the rows are in-place figures")
        run.groups.setdefault(key, []).append(halves)
        keep_deltas(run.columns, tokens, halves, run.deltas)
    if not run.binary:
        run.binary = named_binary(hint, lines[:5])
    run.launched = launched_ranks(hint)
    if not run.nccl_version:  # a launcher log may print it just above "# nThread"
        m = _NCCL_VERSION.search(hint)
        run.nccl_version = m.group(1) if m else None
    return run


def _comment(run: NcclRun, s: str, lineno: int, cut: bool, raw: str = "") -> None:
    """A ``#`` line of the run: its header, a rank's device line, the binary's name, the library version, the
    column header, the average bus bandwidth or the out-of-bounds count (``cut``: the paste ends inside it)."""
    if m := _HEADER.match(s):
        run.n_thread, run.n_gpus, run.min_bytes, run.max_bytes = (int(x) for x in m.groups()[:4])
        w = re.search(r"warmup iters:\s*(\d+)", s)
        it = re.search(r"(?<!warmup )iters:\s*(\d+)", s)
        if st := re.search(r"step:\s*(\d+)\((factor|bytes)\)", s):
            if st.group(2) == "factor":
                run.step_factor = int(st.group(1))
            else:
                run.step_bytes = int(st.group(1))
        run.warmup = int(w.group(1)) if w else None
        run.iters = int(it.group(1)) if it else None
        run.header_line = lineno
    elif m := _RANK.match(s):
        name = "" if cut else m.group(5)  # its name may be cut short: not shown, never a stub
        run.ranks.append(Rank(int(m.group(1)), m.group(2), int(m.group(3)), m.group(4).strip(), name, lineno))
    elif m := re.search(r"Collective test (starting|concluded):\s*(\w+?)_perf", s):
        # nccl-tests names its binary above its rows, and again below them
        run.binary = m.group(2) if m.group(1) == "starting" or not run.binary else run.binary
    elif m := re.search(r"nccl-library=(\d+)", s):
        run.nccl_version = nccl_layout.nccl_version(m.group(1))
        run.nccl_version_line = lineno
    elif _IN_PLACE_FIRST.match(s):
        run.in_place_first = True
    elif "size" in (body := s.lstrip("#").split()) and "count" in body and "time" in body:
        run.columns = body
        run.columns_line = lineno
        run.columns_raw = raw
    elif m := re.match(r"^#\s*Avg bus bandwidth\s*:\s*([\d.]+)", s):
        run.avg_busbw = float(m.group(1))
    elif m := re.match(r"^#\s*Out of bounds values\s*:\s*(.*)$", s):
        run.out_of_bounds = m.group(1).strip()


def _halves(
    columns: list[str], tokens: list[str], source: str, line: int, dtype: str
) -> tuple[SweepRow, SweepRow | None]:
    """The row's (out-of-place, in-place) halves, nccl-tests' order; a half not run (N/A) left out."""
    return _ordered(_printed_halves(columns, tokens, source, line, dtype), False)


def _ordered(shown: list[tuple[int, SweepRow]], in_place_first: bool) -> tuple[SweepRow, SweepRow | None]:
    """The halves shown (``(position, row)``) as (out-of-place, in-place), or (the one shown, None)."""
    rows = dict(shown)
    out, inp = (1, 0) if in_place_first else (0, 1)
    if out in rows:
        return rows[out], rows.get(inp)
    return rows[inp], None


def _printed_halves(
    columns: list[str], tokens: list[str], source: str, line: int, dtype: str
) -> list[tuple[int, SweepRow]]:
    times = [i for i, c in enumerate(columns) if c == "time"]
    size = int(tokens[columns.index("size")])
    count = int(_num(tokens[columns.index("count")], "count", source, line, int) or 0)
    out: list[tuple[int, SweepRow]] = []
    for half, t in enumerate(times[:2]):
        vals = tokens[t : t + 4]
        names = columns[t : t + 4]
        if len(vals) < 3:
            break
        time_us = _num(vals[0], "time", source, line)
        algbw = _num(vals[1], "algbw", source, line)
        busbw = _num(vals[2], "busbw", source, line)
        if time_us is None or algbw is None or busbw is None:
            continue  # N/A: this half was not run (in-place of alltoall)
        r = SweepRow(
            size_bytes=size,
            count=count,
            dtype=DTYPES.get(dtype, dtype),
            time_us=float(time_us),
            algbw_gbps=float(algbw),
            busbw_gbps=float(busbw),
        )
        if len(names) == 4 and names[3] == "#wrong" and vals[3].isdigit():
            r.errors = int(vals[3])
            r.correct = r.errors == 0
        out.append((half, r))
    if not out:
        raise ImportParseError(source, line, "a row with no time/algbw/busbw values")
    return out


def _sweep_done(run: NcclRun, last: int) -> bool:
    """Whether nccl-tests had no size left to run after ``last``: its next size (x factor, or + step bytes) would
    pass maxBytes (``-e 1000M -f 2`` ends at 512 MiB; sizes rounded down to whole elements per rank end just
    under ``-e``). Unknown step: only a last size equal to maxBytes counts as complete."""
    if run.max_bytes is None:
        return True
    if run.step_factor and run.step_factor > 1:
        return last * run.step_factor > run.max_bytes
    if run.step_bytes:
        return last + run.step_bytes > run.max_bytes
    return last >= run.max_bytes


def _infer_binary(run: NcclRun) -> str | None:
    """Which collective, from the columns alone (size vs count x type size x ranks, redop, root)."""
    n = run.world_size
    if not run.groups:
        return None
    (dtype, redop, root), rows = next(iter(run.groups.items()))
    ts = TYPE_BYTES.get(dtype)
    r = rows[-1][0]
    if ts is None or r.count == 0:
        return None
    if "root" not in run.columns:
        return old_layout_binary(run.columns, redop, r.size_bytes, r.count * ts)
    whole = r.size_bytes == r.count * ts
    if nccl_layout.alltoall_errors(run.columns, rows, redop, root, r.size_bytes > r.count * ts):
        return "alltoall"
    if not n:  # the rank count not shown: only all_reduce (size = count x type size at any count) is certain
        return "all_reduce" if whole and redop not in ("none", "-") and root in ("-", "-1") else None
    per_rank = r.size_bytes == r.count * ts * n and n > 1
    if root not in ("-", "-1"):  # rooted
        return {"none": "broadcast"}.get(redop, "reduce" if redop != "-" else None)
    if whole and not per_rank:
        return "all_reduce" if redop not in ("none", "-") else ("sendrecv" if redop == "none" else None)
    if per_rank and redop not in ("none", "-"):
        return "reduce_scatter"
    return None  # all_gather and alltoall print alike (but for alltoall's in-place #wrong)


def _without_mpi(run: NcclRun) -> str | None:
    """Several processes that each call themselves Rank 0 of a one-GPU run: nccl-tests built without MPI
    (launched by mpirun or srun, each process runs its own test: no collective between them was measured)."""
    pids = {r.line: r for r in run.ranks}
    zero = [r for r in pids.values() if r.rank == 0]
    if len(zero) < 2 or any(r.rank != 0 for r in run.ranks) or (run.n_thread or 1) * (run.n_gpus or 1) != 1:
        return None
    return (
        f"{len(zero)} processes each report Rank 0 of a 1-GPU run (nThread 1 nGpus 1): nccl-tests built without "
        "MPI, so each process ran its own single-GPU test and no collective between them was measured "
        "(rebuild with make MPI=1, or run one process with -g N)"
    )


def parse_nccl_tests(text: str, source: str = "<text>", first_line: int = 1, hint: str = "") -> Rig:
    """Facts from one nccl-tests run: the GPUs of the first host (from the rank lines) and its measurements."""
    run = read_nccl(text, source, first_line, hint)
    return run_to_rig(run, source)


# rccl-tests' banner ("# RCCL Tests compiled with RCCL 1.0", "rccl-tests: Version develop:83d38d9"): ROCm's RCCL,
# which runs on AMD GPUs (the ROCm documentation's RCCL pages); ranks that print no vendor ("Device 6860") are AMD's
_RCCL = re.compile(r"^[ \t#]*(?:RCCL Tests compiled with RCCL|rccl-tests: Version)", re.M)
# a rank's device named by its vendor: NVIDIA's GPUs (read) or AMD's (refused by name in run_to_rig)
_NAMED_GPU = re.compile(r"NVIDIA|Tesla|GeForce|Quadro|TITAN|\bAMD\b|Advanced Micro Devices")
AMD_ONLY = "an AMD GPU tool's output: gpuadvisor reads NVIDIA GPUs' outputs only (nvidia-smi, lspci, nccl-tests)"


def _measurement(binary: str | None, how: str, world_size: int | None, local: list[Rank], **fields: Any) -> Measurement:
    """One imported nccl-tests measurement of ``binary`` over the ranks of this host (None: a collective the output
    does not name, kind ``collective``)."""
    return Measurement(
        kind=BINARIES.get(binary, binary) if binary else UNNAMED,
        backend="nccl",
        provenance="imported",
        method=f"nccl-tests {binary}_perf{how}" if binary else f"nccl-tests-style rows, collective not named{how}",
        world_size=world_size,
        gpus=[r.device for r in local],
        **fields,
    )


UNNAMED = "collective"  # the kind of rows whose collective the output does not name
_UNKNOWN_BINARY = (
    "cannot tell which nccl-tests binary printed this (no '..._perf' command line or 'Collective test starting' "
    "line); name the file after it, e.g. all_gather_perf.txt"
)


def run_to_rig(run: NcclRun, source: str) -> Rig:
    rig = Rig()
    if not run.columns and not run.ranks and not (run.header_line and run.binary):  # a named run cut after its header
        if run.failure:  # failed before its devices: what the ranks printed
            return nccl_failed.read(run, source)
        raise ImportParseError(source, run.header_line or 1, "nccl-tests output without rank lines or a column header")
    amd = [r for r in run.ranks if re.match(r"(?:AMD|Advanced Micro Devices)\b", r.name or "")]
    if amd and len(amd) == len(run.ranks):
        raise ImportParseError(
            source,
            amd[0].line,
            f"rccl-tests on AMD GPUs ({amd[0].name}): gpuadvisor reads NVIDIA GPUs' outputs only (nvidia-smi, lspci, "
            "nccl-tests)",
        )
    binary = run.binary or _infer_binary(run)
    solo = _without_mpi(run)
    if solo:
        rig.problems.append(f"{source}: line {run.ranks[0].line}: {solo}")
    local = run.local_ranks()
    for r in local:
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{r.line}"
        g = Gpu(index=r.device, name=r.name or None, bus_id=r.bus_id)
        if g.bus_id is None:
            g.unavailable["bus_id"] = f"nccl-tests printed only the bus number ({r.bus})"
        rig.gpus.append(g)
    if run.hosts:
        rig.host.hostname = run.hosts[0]
    if run.nccl_version:
        rig.software.nccl_version = run.nccl_version
        if run.nccl_version_line:
            rig.origins["software.nccl_version"] = f"{source}:{run.nccl_version_line}"
    if binary is None:  # the rows are read, the collective they measured is not known
        if not run.groups:
            return rig
        rig.problems.append(f"{source}: line {run.columns_line or run.header_line or 1}: {_UNKNOWN_BINARY}")
        run.notes.append(f"collective not known: {_UNKNOWN_BINARY.split(';')[0]}")
    if not run.groups and binary is not None:
        failure = run.failure
        m = _measurement(
            binary,
            "",
            run.world_size,
            local,
            status="failed" if failure else "skipped",
            error=f"no result rows; line {failure[0]}: {failure[1]}"
            if failure
            else "no result rows shown: the paste ends before the first size (not shown, not a failed run)",
            notes=list(run.notes),
        )
        rig.measurements.append(m)
        rig.problems += nccl_failed.meanings(run, source) if failure else []
        return rig
    for (dtype, redop, _root), halves in run.groups.items():
        halves = sorted(halves, key=lambda h: h[0].size_bytes)
        rows = [h[0] for h in halves]
        notes = list(run.notes)
        largest = halves[-1]
        if largest[1] is not None:
            notes.append(f"in-place busbw at {largest[1].size_bytes} B: {largest[1].busbw_gbps} GB/s")
        if run.avg_busbw is not None:
            notes.append(f"nccl-tests 'Avg bus bandwidth' (all sizes, both halves): {run.avg_busbw} GB/s")
        if len(run.hosts) > 1:
            notes.append(
                f"multi-node run: {len(run.hosts)} hosts "
                f"({', '.join(run.hosts[:4])}{', ...' if len(run.hosts) > 4 else ''}), "
                f"{run.world_size} ranks; gpus lists those of {run.hosts[0]}"
            )
        if run.out_of_bounds and not run.out_of_bounds.endswith("OK"):
            notes.append(f"nccl-tests: Out of bounds values: {run.out_of_bounds}")
            out_of_bounds(run.out_of_bounds, run.deltas)
        status = "ok"
        if solo:
            m = _measurement(
                binary,
                f" (out-of-place, {dtype})",
                1,
                local,
                rows=rows,
                status="failed",
                error=solo,
                notes=notes,
            )
            rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{run.header_line or run.columns_line}"
            rig.measurements.append(m)
            continue
        if (
            run.max_bytes is not None
            and rows[-1].size_bytes < run.max_bytes
            and not _sweep_done(run, rows[-1].size_bytes)
        ):
            status = "partial"
            notes.append(f"stopped at {rows[-1].size_bytes} B of the {run.max_bytes} B asked for")
        extra = (f", {dtype}" if dtype else "") + (f" {redop}" if redop not in ("-", "none", "sum") else "")
        half = "in-place" if run.in_place_only else "out-of-place"
        m = _measurement(
            binary,
            f" ({half}{extra})",
            run.world_size,
            local,
            warmup_iters=run.warmup,
            iters=run.iters,
            rows=rows,
            value_gbps=rows[-1].busbw_gbps,
            status=status,
            notes=notes,
        )
        m.latency_us = rows[0].time_us if rows[0].size_bytes <= 1024 else None
        if not run.ranks and not run.header_line:
            m.unavailable["world_size"] = m.unavailable["gpus"] = (
                "the paste starts below nccl-tests' header: its nThread/nGpus line and rank lines are not shown"
            )
            if run.world_size is not None:  # the command line's count stands in for the header's
                del m.unavailable["world_size"]
                m.notes.append(
                    f"world size {run.world_size}: the ranks the command line asks for (processes x -t x -g)"
                )
        elif run.world_size is None:
            m.unavailable["world_size"] = (
                f"the paste shows {len({r.rank for r in run.ranks})} device line(s), up to rank "
                f"{max(r.rank for r in run.ranks)}, not every rank's"
            )
        rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{run.header_line or run.columns_line}"
        rig.measurements.append(m)
    return rig


# "#" optional: GitHub renders a line starting with "#" as a heading, so a paste copied from the page lost them
_NCCL_START = re.compile(rf"^#?\s*({_FIRST_LINES})")
_NCCL_ROW = re.compile(
    r"^\d+\s+\d+\s+"
    r"(?:u?int(?:8|32|64)?|half|float(?:16|32|64)?|double|bfloat16|fp8_e4m3|fp8_e5m2)\s+"
    r"(?:(?:sum|prod|max|min|avg|none|mulsum)\s+)?(?:-?\d+\s+)?\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s+"
)
_IN_PLACE_FIRST = re.compile(r"^#?\s*in-place\s+out-of-place\s*$")
_NTHREAD = re.compile(r"^#?\s*nThread\s")
_COLUMNS = re.compile(r"^#?\s*size\s+count\s+type\s")
_UNITS = re.compile(r"^#?\s*\(B\)\s+\(elements\)")


# a shell prompt and its command ("$ ./all_reduce_perf ...", "[root@n1 ~]# ..."); not "# ...", nccl-tests' own
_COMMAND = re.compile(r"^\s*(?:\([^)]{0,40}\)\s*)?(?:\[[^\]]{0,80}\][$#]|[\w.@~:/-]{0,80}[$%>])\s+\S")


def _other_rows(above: list[str], row: str) -> bool:
    """Whether ``row``, after lines that are not rows, starts another run pasted without its header: after a
    command line of its own, or of another shape than the run's last rows (e.g. rccl-tests' after nccl-tests')."""
    shown = next((x.strip() for x in reversed(above[-8:]) if x.strip() and not x.strip().startswith("```")), "")
    if not above or _NCCL_ROW.match(shown):
        return False
    header = next((untagged(x) for x in reversed(above[-2:]) if _COLUMNS.match(untagged(x))), None)
    if header and _UNITS.match(untagged(above[-1])) and len(row.split()) < len(header.lstrip(" #").split()):
        return False  # a row right under its column header, shorter than it: that header's row, cut
    if _COMMAND.match(shown):
        return True
    last = next((x for x in reversed(above[-200:]) if _NCCL_ROW.match(x.strip()) or _COLUMNS.match(x.strip())), None)
    return last is not None and len(last.lstrip(" #").split()) != len(row.split())  # a row, or the column header


# A launcher's output tag ("[0]" of some mpirun builds, "[1,0]<stdout>:" of --tag-output), before each line and,
# when the launcher flushed mid-row, between a row's field groups: "[0]  1048576  262144  float  sum  -1[0]  1626.5"
_TAG = re.compile(r"\[\d{1,6}(?:,\d{1,6})?\](?:<std(?:out|err)>:)?")


def untagged(line: str) -> str:
    """The line without its launcher tags (only a line that starts with one has them)."""
    s = line.strip()
    return _TAG.sub(" ", s).strip() if _TAG.match(s) else s


_RANK_START = re.compile(r"^#?\s*" + RANK_WORDS + r"\s+\d+\s+on\s+\S+\s+device\s+\d+\s")


def _rank_lines_of_a_run(lines: list[str], i: int) -> bool:
    """Whether the device lines at ``i`` (a paste that starts below the header: the last of 72 ranks, say) are
    followed by nccl-tests' own lines (a ``#`` line, the column header, a result row), not by a debug log."""
    for line in lines[i + 1 : i + 1025]:
        s = untagged(line)
        if not s or _RANK_START.match(s):
            continue
        return s.startswith("#") or bool(_HASHLESS.match(s) or _NCCL_ROW.match(s))
    return False


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``# nThread``, ``# nccl-tests version``, ``# Collective test starting`` (``#`` optional), a result row
    whose header the paste cut off, or device lines above the column header (the header cut off above them). A
    second run's header starts a new output; a line printed twice does not."""
    s = untagged(lines[i])
    cur = current.kind if current else None
    if _NCCL_ROW.match(s):
        return cur != "nccl-tests" or current is not None and _other_rows(current.lines, s)
    if cur != "nccl-tests" and _RANK_START.match(s):
        return _rank_lines_of_a_run(lines, i)
    m = _NCCL_START.match(s)
    if cur != "nccl-tests" and _IN_PLACE_FIRST.match(s) and i + 1 < len(lines):
        return bool(_NCCL_START.match(untagged(lines[i + 1])))  # MSCCL++'s halves line over its column header
    if not m:
        return False
    if cur != "nccl-tests":
        return True
    if i > 0 and lines[i - 1].strip() == s:
        return False  # a line printed twice (two processes writing the same output): the same run
    if current is not None and _COLUMNS.match(s):  # a column header below rows: the next block's (old builds
        return any(_NCCL_ROW.match(untagged(x)) for x in current.lines)  # print one per test, no "nThread")
    return (  # a run's first header line after another run's header or rows (a header comes before its rows)
        m.group(1).startswith(("nThread", "nccl-tests", "Collective"))
        and current is not None
        and any(_NTHREAD.match(x) or _NCCL_ROW.match(x.strip()) for x in current.lines)
    )
