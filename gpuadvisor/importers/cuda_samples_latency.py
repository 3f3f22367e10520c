"""p2pBandwidthLatencyTest's latency table pasted without its title: the ``GPU 0 1 ...`` header and its rows.

The sample (NVIDIA cuda-samples, Samples/5_Domain_Specific/p2pBandwidthLatencyTest) prints each latency matrix as
two tables under one title (``P2P=Enabled Latency (P2P Writes) Matrix (us)``): the GPU's own timing under a
``   GPU     0      1 ...`` header, then the host's time to issue the copy under ``   CPU     0 ...``. Its bandwidth
matrices use a ``D\\D`` header instead, so a ``GPU`` header numbered 0, 1, ... in turn, over rows that start 0,
1, ... with one figure per column, is unambiguous: the GPU latency table (us). What the cut hid is said, not
guessed: whether P2P was enabled or disabled for it, and the GPUs' names and bus ids (numbered as the header
numbers them). The CPU table is not kept (as with the whole output).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.cuda_samples import _cells, _numbered, _pair, _table
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "p2pBandwidthLatencyTest latency table (title cut)"
LABEL = "Latency (its title not shown: P2P enabled or disabled not known)"
_HEADER = re.compile(r"^\s*(GPU|CPU)((?:[ \t]+\d{1,3}){2,64})[ \t]*$")
_ROW = re.compile(r"^\s*(\d{1,3})((?:[ \t]+\d+\.\d{2}){2,64})[ \t]*$")


def _header(line: str) -> tuple[str, int] | None:
    """``("GPU", 8)`` for ``   GPU     0      1 ...      7``: the table and its width (columns numbered in turn)."""
    m = _HEADER.match(line)
    if m is None:
        return None
    numbers = m.group(2).split()
    return (m.group(1), len(numbers)) if numbers == [str(i) for i in range(len(numbers))] else None


def _first_row(line: str, width: int) -> bool:
    """Row 0 of a table ``width`` wide: ``     0   4.95 49206.88 ...``."""
    m = _ROW.match(line)
    return m is not None and m.group(1) == "0" and len(m.group(2).split()) == width


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A ``GPU 0 1 ...`` header over its row 0, outside the sample's whole output (which reads its own tables)."""
    if current is not None and current.kind == "cuda-p2p":
        return False
    got = _header(lines[i])
    return got is not None and got[0] == "GPU" and i + 1 < len(lines) and _first_row(lines[i + 1], got[1])


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs as the header numbers them and one ``p2p_latency`` measurement per off-diagonal cell shown."""
    rig = Rig()
    lines = clean_lines(text)
    k = next((j for j, x in enumerate(lines) if (_header(x) or ("", 0))[0] == "GPU"), None)
    if k is None:
        raise ImportParseError(source, first_line, "p2pBandwidthLatencyTest latency table without its 'GPU 0 1 ...'")
    devices = _numbered(lines, k - 1, first_line, source, rig)
    table, _ = _table(lines, k, len(devices))
    for (i, j), val in _cells(table):
        m = _pair("p2p_latency", LABEL, True, (i, j), val, None)
        m.unavailable["p2p_enabled"] = "the matrix's title is not shown: P2P enabled or disabled is not known"
        rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{first_line + k + 1 + i}"
        rig.measurements.append(m)
    rig.problems.append(
        f"{source}: line {first_line + k}: p2pBandwidthLatencyTest's GPU latency table without its title: read as "
        "latencies in us (the sample's 'GPU' header is its latency tables'), rows the source GPU; whether P2P was "
        "enabled is not shown"
    )
    rig.gpus = [devices[i] for i in sorted(devices)]
    rig.origins = {
        **{f"gpus[{p}]": rig.origins[f"gpu{g.index}"] for p, g in enumerate(rig.gpus)},
        **{key: v for key, v in rig.origins.items() if key.startswith("measurements")},
    }
    return rig
