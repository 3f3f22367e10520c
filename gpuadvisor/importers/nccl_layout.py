"""nccl-tests' column layouts: which columns a row has when its header is not shown, and which collective printed
the layout of builds before the 2.13 resync (2022, nccl-tests src/*.cu ``print_header``), where each test printed
only its own columns."""

from __future__ import annotations

import re

from gpuadvisor.facts import SweepRow

TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "half": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}

REDOPS = {"sum", "prod", "max", "min", "avg", "none", "mulsum"}


def blank_redop(columns: list[str], tokens: list[str]) -> list[str]:
    """The row with its blank ``redop`` value put back: nccl-tests before 2.13's resync (2022) printed alltoall's
    rows under a ``redop`` column with an empty operation name (src/alltoall.cu: ``TimeTest(..., "", -1)``)."""
    if "redop" not in columns or "root" in columns or len(tokens) != len(columns) - 1:
        return tokens
    at = columns.index("redop")
    if at < len(tokens) and tokens[at] not in REDOPS and re.fullmatch(r"[\d.]+", tokens[at]):
        return [*tokens[:at], "", *tokens[at:]]
    return tokens


def columns_from_row(tokens: list[str]) -> list[str]:
    """nccl-tests' column layout from a data row whose header the paste cut off: size count type [redop] [root]
    then two halves of time algbw busbw and #wrong (or error); [] when the row fits no layout."""
    if len(tokens) < 9 or not tokens[1].isdigit() or tokens[2] not in TYPE_BYTES:
        return []
    head = ["size", "count", "type"]
    rest = tokens[3:]
    if rest and rest[0] in REDOPS:
        head.append("redop")
        rest = rest[1:]
        if rest and re.fullmatch(r"-?\d+", rest[0]) and len(rest) in (9, 7):
            head.append("root")
            rest = rest[1:]
    if len(rest) == 8:
        return head + ["time", "algbw", "busbw", "#wrong"] * 2
    if len(rest) == 6:
        return head + ["time", "algbw", "busbw"] * 2
    return []


def old_layout_binary(columns: list[str], redop: str, size: int, whole: int) -> str | None:
    """Which collective printed a row of nccl-tests' layout before its 2.13 resync (2022), where each test
    printed only its own columns (src/*.cu, print_header): all_reduce and reduce_scatter ``redop``, alltoall
    ``redop`` left blank, all_gather and sendrecv neither (a reduce or broadcast prints ``root``). ``whole``:
    count x type size; all_gather's and alltoall's count is per rank (size = count x type size x ranks)."""
    per_rank = size > whole and size % whole == 0
    if "redop" not in columns:
        return "sendrecv" if size == whole else ("all_gather" if per_rank else None)
    if redop == "":
        return "alltoall" if per_rank else None
    if redop in REDOPS - {"none"}:
        return "all_reduce" if size == whole else ("reduce_scatter" if per_rank else None)
    return None


_TAGGED = re.compile(r"\[\d{1,6}(?:,\d{1,6})?\](?:<std(?:out|err)>:)?")  # a launcher's tag (nccl.py's _TAG)


def one_half(columns: list[str], tokens: list[str], header: str, row: str) -> list[str]:
    """A row that prints one of its two halves and leaves the other blank (MSCCL++'s test prints only the half it
    ran): the tokens with the blank half as N/A, the half shown placed under the header's ``time`` column its first
    value sits nearest to (``header``, ``row``: the lines as printed, launcher tags counted as blanks)."""
    times = [i for i, c in enumerate(columns) if c == "time"]
    blank = ["N/A"] * (len(columns) - len(tokens))

    def spaced(line: str) -> str:
        return _TAGGED.sub(lambda m: " " * len(m.group()), line)

    ends = [m.end() for m in re.finditer(r"\btime\b", spaced(header))]
    values = [m.end() for m in re.finditer(r"\S+", spaced(row))]
    if len(ends) == 2 and len(values) > times[0] and abs(values[times[0]] - ends[1]) < abs(values[times[0]] - ends[0]):
        return [*tokens[: times[0]], *blank, *tokens[times[0] :]]  # under the second half's columns
    return [*tokens, *blank]


def nccl_version(code: str) -> str | None:
    """``nccl-library=22105`` (NCCL_VERSION_CODE) as ``2.21.5``."""
    if not code.isdigit():
        return None
    n = int(code)
    if n >= 10000:  # NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch
        return f"{n // 10000}.{n % 10000 // 100}.{n % 100}"
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"


def alltoall_errors(
    columns: list[str], rows: list[tuple[SweepRow, SweepRow | None]], redop: str, root: str, spread: bool
) -> bool:
    """alltoall's shape: no operation and no root, a count per rank (``spread``: size = count x type size x ranks),
    and the in-place #wrong printed N/A beside an out-of-place count on every row: src/alltoall.cu checks no in-place
    result ("We don't support in-place alltoall": reportErrors 0); all_gather checks it, and sendrecv, which does not
    either, moves count x type size (no spread)."""
    if not spread or redop != "none" or root not in ("-", "-1") or "#wrong" not in columns:
        return False
    return all(out.errors is not None and inp is not None and inp.errors is None for out, inp in rows)
