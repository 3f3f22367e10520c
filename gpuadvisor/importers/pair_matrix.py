"""A GPU-pair bandwidth matrix pasted without its title and column header: its rows alone.

Bandwidth tests print a square matrix of GPU pairs (``p2pBandwidthLatencyTest``'s ``D\\D  0  1 ...``, NVIDIA's
multi-node NVLink test's ``memcpyKernel Write ...`` blocks): a row is the source GPU's index, then one figure per
destination GPU, its own cell 0.00 (no copy to itself). Rows alone (``     1 376.61   0.00 376.70 ...``) are read
when they are unambiguous: every row has the same number of cells (the matrix's width, as many GPUs), its index
is below that width, and its diagonal cell is 0.00 or (p2pBandwidthLatencyTest: a GPU's copy within its own memory)
twice the row's largest other figure or more. What the cut hid is said, not guessed: the test and the
direction (a kind of its own, ``gpu_pair_bw``, no expectation), the GPUs' names and bus ids (no GPU is read).
Several blocks in one paste (each under its own title) are each a matrix, the text above a block its label.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Measurement, Rig
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "GPU-pair bandwidth matrix (rows only)"
KIND = "gpu_pair_bw"
_ROW = re.compile(r"^\s*(\d{1,3})((?:[ \t]+\d+\.\d{2}){2,64})[ \t]*$")
_RULER = re.compile(r"^\s*-{8,}\s*$")
_HEADER = re.compile(r"^\s*(?:\d{1,3}\s+){1,63}\d{1,3}\s*$")  # "   0      1      2 ..." (the column header)


def _cells(line: str) -> tuple[int, list[float]] | None:
    """A row's index and figures, when its own (diagonal) cell is 0.00 and it is inside the matrix."""
    m = _ROW.match(line)
    if m is None:
        return None
    idx, cells = int(m.group(1)), [float(x) for x in m.group(2).split()]
    if idx >= len(cells):
        return None
    others = max(c for j, c in enumerate(cells) if j != idx)
    return (idx, cells) if cells[idx] == 0.0 or cells[idx] >= 2 * others > 0 else None


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """Two rows or more of one width, indices in turn, outside another output's matrix."""
    if current is not None and current.kind != "_after":
        return False  # inside another output (a p2pBandwidthLatencyTest reads its own rows), or this one's next block
    first, second = _cells(lines[i]), _cells(lines[i + 1]) if i + 1 < len(lines) else None
    if first is None or second is None:
        return False
    return len(first[1]) == len(second[1]) and second[0] == first[0] + 1


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each block of rows as one matrix: a measurement per off-diagonal cell shown, the test not known."""
    rig = Rig()
    lines = clean_lines(text)
    label: list[str] = []
    width = 0
    for k, line in enumerate(lines):
        got = _cells(line)
        if got is None:
            s = line.strip()
            if s and not _RULER.match(s) and not _HEADER.match(s):
                label = [*label, s.rstrip(":")][-2:] if width == 0 else [s.rstrip(":")]
                width = 0
            continue
        idx, cells = got
        if width and len(cells) != width:
            break  # a row of another width: not this matrix's
        width = len(cells)
        what = " ".join(label) or "title not shown"
        for j, val in enumerate(cells):
            if j == idx:
                continue
            m = Measurement(kind=KIND, backend="cuda", provenance="imported", value_gbps=val)
            m.method = f"{WHAT}: {what}: GPU {idx} -> GPU {j}"  # the pair by the matrix's numbers (no GPU read)
            m.unavailable["gpus"] = "the matrix numbers its GPUs; their names and bus ids are not shown"
            m.notes.append(
                f"a {width}x{width} matrix's row {idx}: the test and its direction are not shown (GB/s assumed, "
                "rows the source GPU as the CUDA samples print them; the diagonal, a GPU's own copy, not kept)"
            )
            rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{first_line + k}"
            rig.measurements.append(m)
    rig.problems.append(
        f"{source}: line {first_line}: a bandwidth matrix's rows without their title and column header: read as "
        "GPU pairs (row: source GPU, column: destination GPU, GB/s), the test not known; no GPU's name or bus id"
    )
    return rig
