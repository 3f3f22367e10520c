"""``nvidia-smi topo -m`` and ``nvidia-smi topo -p2p r|w|n|a|p``: the pairwise matrices.

Formats read (drivers from 2017 to 2026): tab- or space-aligned; the header underlined with terminal escapes
when printed on a TTY; with or without the "CPU Affinity", "NUMA Affinity" and "GPU NUMA ID" columns; NIC
columns named directly (``mlx5_0``) or as ``NIC0`` with a "NIC Legend" block; NIC rows with or without
trailing empty cells; NV1..NV18 bonded NVLink counts; ``SOC`` (drivers before 2018) read as ``SYS``.
"""
from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, NumaNode, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.sections import MATRIX_WORDS, clean_lines, matrix_header_tokens

TOPO_CODES = re.compile(r"^(X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC)$")
P2P_CODES = {"X", "OK", "CNS", "GNS", "TNS", "NS", "DIS", "U"}
P2P_MODES = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "prop"}
_GPU = re.compile(r"^GPU(\d+)$")


class _Table:
    """The header, rows and legends of one matrix."""

    def __init__(self) -> None:
        self.columns: list[str] = []
        self.extra_columns: list[str] = []  # CPU Affinity, NUMA Affinity, GPU NUMA ID (in header order)
        self.rows: list[tuple[str, list[str], list[str], int]] = []  # label, link cells, extra cells, line
        self.nic_legend: dict[str, str] = {}
        self.header_line = 0


def _read_table(text: str, source: str, first_line: int, codes: str) -> _Table:
    lines = clean_lines(text)
    t = _Table()
    start = next((i for i, x in enumerate(lines) if matrix_header_tokens(x) is not None), None)
    if start is None:
        first = next((i for i, x in enumerate(lines) if x.strip()), 0)
        raise ImportParseError(source, first_line + first, "no matrix header (a line of column names starting with GPU0)")
    header = matrix_header_tokens(lines[start]) or []
    t.header_line = first_line + start
    t.columns = [h for h in header if h not in MATRIX_WORDS]
    t.extra_columns = [h for h in header if h in MATRIX_WORDS]
    if header[: len(t.columns)] != t.columns:
        raise ImportParseError(source, t.header_line, "the affinity columns come before a GPU or NIC column")
    seen_labels: set[str] = set()
    in_rows = True
    in_nic_legend = False
    for k in range(start + 1, len(lines)):
        line = lines[k]
        lineno = first_line + k
        s = line.strip()
        if not s:
            if t.rows:
                in_rows = False
            continue
        if in_rows:
            tokens = s.split()
            label = tokens[0]
            if label in t.columns and label not in seen_labels:
                cells = tokens[1 : 1 + len(t.columns)]
                extra = tokens[1 + len(t.columns) :]
                for j, c in enumerate(cells):
                    ok = TOPO_CODES.match(c) if codes == "topo" else c in P2P_CODES
                    if not ok:
                        expected = "X, NV#, PIX, PXB, PHB, NODE or SYS" if codes == "topo" else "X, OK, CNS, GNS, TNS, NS, DIS or U"
                        raise ImportParseError(
                            source, lineno, f"row {label}, column {t.columns[j]}: {c!r} is not a link code (expected {expected})"
                        )
                seen_labels.add(label)
                t.rows.append((label, cells, extra, lineno))
                continue
            if t.rows:
                in_rows = False
            else:
                raise ImportParseError(source, lineno, f"expected the row of GPU0 under the header, got {s[:40]!r}")
        if s.rstrip(":") == "NIC Legend":
            in_nic_legend = True
            continue
        m = re.match(r"^(NIC\d+)\s*:\s*(\S+)$", s)
        if in_nic_legend and m:
            t.nic_legend[m.group(1)] = m.group(2)
    if not t.rows:
        raise ImportParseError(source, t.header_line, "a matrix header with no rows under it")
    return t


def _square(t: _Table, labels: list[str], source: str, problems: list[str], what: str) -> list[list[str]] | None:
    """The labels x labels sub-matrix; cells cut off by a truncated file are taken from the mirror cell."""
    index = {c: j for j, c in enumerate(t.columns)}
    rows = {label: cells for label, cells, _, _ in t.rows}
    out: list[list[str]] = []
    filled: list[str] = []
    for a in labels:
        row: list[str] = []
        for b in labels:
            cell = None
            if a in rows and index[b] < len(rows[a]):
                cell = rows[a][index[b]]
            elif b in rows and index[a] < len(rows[b]):
                cell = rows[b][index[a]]  # topo and p2p matrices are symmetric
                filled.append(f"{a}/{b}")
            elif a == b:
                cell = "X"
            if cell is None:
                problems.append(f"{source}: {what}: no value for {a}/{b} (file cut short?); matrix left out")
                return None
            row.append("SYS" if cell == "SOC" else cell)
        out.append(row)
    if filled:
        problems.append(f"{source}: {what}: {len(filled)} cells missing (file cut short?), taken from the mirror cells")
    return out


def _gpu_labels(t: _Table, source: str) -> list[str]:
    labels = [c for c in t.columns if _GPU.match(c)]
    nums = [int(_GPU.match(c).group(1)) for c in labels]  # type: ignore[union-attr]
    if nums != list(range(len(nums))):
        raise ImportParseError(source, t.header_line, f"GPU columns are {', '.join(labels)}; expected GPU0, GPU1, ... in order")
    return labels


def parse_topo_matrix(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from ``nvidia-smi topo -m``: GPUs (index, CPU and NUMA affinity), the matrix, NICs."""
    t = _read_table(text, source, first_line, "topo")
    rig = Rig()
    labels = _gpu_labels(t, source)
    nic_cols = [c for c in t.columns if not _GPU.match(c)]
    rows = {label: (cells, extra, ln) for label, cells, extra, ln in t.rows}
    numa_cpus: dict[int, str] = {}
    for i, label in enumerate(labels):
        g = Gpu(index=i)
        if label in rows:
            rig.origins[f"gpus[{i}]"] = f"{source}:{rows[label][2]}"
            extra = dict(zip(t.extra_columns, rows[label][1], strict=False))
            cpus = extra.get("CPU Affinity")
            if cpus and re.fullmatch(r"[\d,\-]+", cpus):
                g.cpu_affinity = cpus
            numa = extra.get("NUMA Affinity")
            if numa and numa.isdigit():
                g.numa_node = int(numa)
                if g.cpu_affinity:
                    numa_cpus.setdefault(g.numa_node, g.cpu_affinity)
            for name, col in (("cpu_affinity", "CPU Affinity"), ("numa_node", "NUMA Affinity")):
                if getattr(g, name) is None:
                    g.unavailable[name] = (
                        f"nvidia-smi topo -m printed {extra[col]!r}" if col in extra else "this nvidia-smi topo -m has no such column"
                    )
        else:
            rig.problems.append(f"{source}: nvidia-smi topo -m: no row for {label} (file cut short?)")
        rig.gpus.append(g)
    topo = rig.topology
    rig.origins["topology"] = f"{source}:{t.header_line}"
    matrix = _square(t, labels, source, rig.problems, "nvidia-smi topo -m")
    if matrix is not None:
        topo.matrix = matrix
        if any(c.startswith("NV") for row in matrix for c in row):
            topo.unavailable["pcie_matrix"] = "nvidia-smi topo -m shows the NVLink count, not the PCIe level, for NVLink pairs"
        else:
            topo.pcie_matrix = [row[:] for row in matrix]
    else:
        topo.unavailable["matrix"] = "nvidia-smi topo -m output cut short"
    if nic_cols:
        topo.nics = [t.nic_legend.get(c, c) for c in nic_cols]
        index = {c: j for j, c in enumerate(t.columns)}
        nic_matrix: list[list[str]] = []
        for label in labels:
            cells = rows[label][0] if label in rows else []
            if any(index[n] >= len(cells) for n in nic_cols):
                nic_matrix = []
                topo.unavailable["nic_matrix"] = "nvidia-smi topo -m output cut short"
                break
            nic_matrix.append(["SYS" if cells[index[n]] == "SOC" else cells[index[n]] for n in nic_cols])
        topo.nic_matrix = nic_matrix
    rig.host.numa_nodes = [NumaNode(id=n, cpus=c) for n, c in sorted(numa_cpus.items())]
    if "NUMA Affinity" not in t.extra_columns:
        rig.host.unavailable["numa_nodes"] = "this nvidia-smi topo -m has no NUMA Affinity column"
    return rig


def p2p_mode_hint(context: list[str], filename: str = "") -> str | None:
    """The ``-p2p`` mode (r, w, n, a, p) named in a command line before the matrix, or in the file name."""
    for line in reversed(context):
        m = re.search(r"-p2p\s+([rwnap])\b", line)
        if m:
            return m.group(1)
    name = filename.lower()
    m = re.search(r"p2p[-_ ]?(read|write|nvlink|atomics|prop)", name) or re.search(r"p2p[-_ ]?([rwnap])(?![a-z])", name)
    return m.group(1)[0] if m else None


def parse_topo_p2p(text: str, source: str = "<text>", first_line: int = 1, mode: str | None = "r") -> Rig:
    """Facts from ``nvidia-smi topo -p2p MODE``: the pairwise peer-to-peer status.

    The output does not say which mode printed it: ``mode`` is ``r`` (read) or ``w`` (write); the other modes
    (n, a, p) have no place in the facts model and are recorded as a problem only. ``None``: assume read and
    say so in ``rig.problems``.
    """
    t = _read_table(text, source, first_line, "p2p")
    rig = Rig()
    labels = _gpu_labels(t, source)
    rig.gpus = [Gpu(index=i) for i in range(len(labels))]
    rig.origins["topology"] = f"{source}:{t.header_line}"
    matrix = _square(t, labels, source, rig.problems, "nvidia-smi topo -p2p")
    if mode is None:
        mode = "r"
        rig.problems.append(f"{source}: nvidia-smi topo -p2p matrix without its mode (r/w/n/a/p); read as -p2p r")
    if matrix is None:
        return rig
    if mode == "r":
        rig.topology.p2p_read = matrix
    elif mode == "w":
        rig.topology.p2p_write = matrix
    else:
        rig.problems.append(f"{source}: nvidia-smi topo -p2p {mode} ({P2P_MODES.get(mode, mode)}) matrix read but not kept: the scan has read and write only")
    return rig


def nv_count(code: str) -> int:
    """``NV12`` -> 12; anything else -> 0."""
    m = re.fullmatch(r"NV(\d+)", code)
    return int(m.group(1)) if m else 0


