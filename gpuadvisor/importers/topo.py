"""``nvidia-smi topo -m`` and ``nvidia-smi topo -p2p r|w|n|a|p``: the pairwise matrices.

Formats read (drivers from 2017 to 2026): tab- or space-aligned; the header underlined with terminal escapes
when printed on a TTY; with or without the "CPU Affinity", "NUMA Affinity" and "GPU NUMA ID" columns; NIC
columns named directly (``mlx5_0``) or as ``NIC0`` with a "NIC Legend" block; NIC rows with or without
trailing empty cells; NV1..NV18 bonded NVLink counts; ``SOC`` (drivers before 2018) read as ``SYS``.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import ELIDED, Gpu, NumaNode, Rig
from gpuadvisor.importers import topo_pipe
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, last_line_shown
from gpuadvisor.importers.topo_fragment import FRAGMENT_START, fragment_header
from gpuadvisor.importers.values import is_elision

TOPO_CODES = re.compile(r"^(X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC)$")
P2P_CODES = {"X", "OK", "CNS", "GNS", "TNS", "NS", "DIS", "U"}
P2P_MODES = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics", "p": "prop"}
_GPU = re.compile(r"^GPU(\d+)$")
MATRIX_WORDS = topo_pipe.MATRIX_WORDS


def matrix_header_tokens(line: str) -> list[str] | None:
    """The column names of a ``topo -m``/``-p2p`` header line, or None if the line is not one."""
    s = re.sub(r"^\|\s+", "", line.strip())  # a stray table border before it (a blog's code block, a wiki's)
    if not s.startswith("GPU0"):
        return None
    for w in MATRIX_WORDS:
        s = s.replace(w, w.replace(" ", "_"))
    s = _GLUED_WORD.sub(" ", s)  # "GPU2CPU Affinity": a table whose cell separators were lost (a blog's render)
    tokens = s.split()
    if not tokens or any(t in ("X", "OK") for t in tokens):
        return None
    if not all(re.fullmatch(r"[A-Za-z][\w.-]*", t) for t in tokens):
        return None
    names = [t.replace("_", " ") if t.replace("_", " ") in MATRIX_WORDS else t for t in tokens]
    # a short form copied by hand (blogs, docs): "CPU Affinity  NUMA": the NUMA Affinity column
    return [_SHORT_AFFINITY.get(t, t) if k and names[k - 1] in MATRIX_WORDS else t for k, t in enumerate(names)]


_SHORT_AFFINITY = {"NUMA": "NUMA Affinity"}
_GLUED_WORD = re.compile(r"(?<=\S)(?=CPU_Affinity|NUMA_Affinity|GPU_NUMA_ID)")


_LINK_CELL = re.compile(r"^(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|OK|CNS|GNS|TNS|NS|DIS|U)$")
_HEADLESS = re.compile(r"^\s*GPU0(?:\s+X(?:\s|$)|\s*X(?=NV\d|PIX|PXB|PHB|NODE|SYS|SOC))")  # or run together
_GLUED_LABEL = re.compile(r"(GPU\d+|NIC\d+|mlx\d_\d+)(?=X|NV\d|PIX|PXB|PHB|NODE|SYS|SOC)")


def _row_tokens(line: str) -> list[str]:
    """A row's label and cells, those that ran together (``GPU0XNODENODE0-310N/A``) read apart where they part."""
    tokens = line.split()
    if tokens and (m := _GLUED_LABEL.match(tokens[0])) and m.end() < len(tokens[0]):
        tokens = [m.group(1), tokens[0][m.end() :], *tokens[1:]]
    split = _split_glued(tokens[1:]) if tokens else None
    return [tokens[0], *split] if split else tokens


def headless_header(lines: list[str]) -> str | None:
    """The header a ``topo -m``/``-p2p`` pasted without its header line had: the matrix is square, its columns in
    the order of its rows (GPU0, GPU1, ..., then the NICs), then as many of the affinity columns as GPU0's row
    has cells after its links. None when the first row is not ``GPU0  X ...``."""
    first = next((k for k, x in enumerate(lines) if x.strip()), None)
    if first is None or not _HEADLESS.match(lines[first]):
        return None
    cells = _row_tokens(lines[first])[1:]
    n_link = next((k for k, c in enumerate(cells) if not _LINK_CELL.match(c)), len(cells))
    labels: list[str] = []
    for x in lines[first:]:
        tokens = _row_tokens(x)
        if not tokens or len(labels) == n_link or not any(_LINK_CELL.match(c) for c in tokens[1:2]):
            break
        labels.append(tokens[0])
    if len(labels) < n_link:
        return None  # rows cut off: what the columns past them are (GPUs or NICs) is not shown
    extra = MATRIX_WORDS[: max(0, min(3, len(cells) - n_link))]
    return "\t" + "\t".join([*labels, *extra])


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A header row of ``GPU0 GPU1 ...`` followed by a ``GPU0`` row (``topo -m`` or ``-p2p``: see :func:`settle`),
    or a ``GPU0  X ...`` row with no header line above it (the paste began below it), or a row below GPU0's when the
    rows show every column (:mod:`gpuadvisor.importers.topo_fragment`)."""
    if topo_pipe.starts_at(lines[i]) and (current is None or current.kind not in ("topo-m", "topo-p2p")):
        return topo_pipe.unpiped(lines[i : i + 40]) is not None  # a docs page's pipe table of it
    if matrix_header_tokens(lines[i]) is None:
        above = next((x for x in reversed(lines[max(0, i - 3) : i]) if x.strip()), "")
        return (
            (current is None or current.kind not in ("topo-m", "topo-p2p"))
            and matrix_header_tokens(above) is None
            and bool(_HEADLESS.match(lines[i]) or FRAGMENT_START.match(lines[i]) and fragment_header(lines[i : i + 80]))
        )
    for nxt in lines[i + 1 : i + 3]:
        if nxt.strip():
            return nxt.strip().startswith("GPU0")
    return False


_P2P_ONLY = {"OK", "CNS", "GNS", "TNS", "NS", "DIS", "U"}
_TOPO_ONLY = re.compile(r"^(NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")


def settle(section: Section) -> str:
    """``topo-p2p`` when its cells are P2P statuses (OK, CNS, ...), else ``topo-m``."""
    lines = section.lines
    header = matrix_header_tokens(lines[0]) or []
    if any(not _GPU.match(t) for t in header):
        return "topo-m"  # NIC or affinity columns: only topo -m has them
    for line in lines[1:]:
        for tok in line.split()[1:]:
            if tok in _P2P_ONLY:
                return "topo-p2p"
            if _TOPO_ONLY.match(tok):
                return "topo-m"
        if re.match(r"^\s*OK\s+=", line):
            return "topo-p2p"
        if re.match(r"^\s*NV#\s+=", line):
            return "topo-m"
    return "topo-m"


class _Table:
    """The header, rows and legends of one matrix."""

    def __init__(self) -> None:
        self.columns: list[str] = []
        self.extra_columns: list[str] = []  # CPU Affinity, NUMA Affinity, GPU NUMA ID (in header order)
        # label, link cells (empty: not readable), extra cells by column (a missing one: not readable), line
        self.rows: list[tuple[str, list[str], dict[str, str], int]] = []
        self.extra_unknown: dict[str, str] = {}  # row label -> why its affinity cells could not be read
        self.notes: list[str] = []
        self.nic_legend: dict[str, str] = {}
        self.header_line = 0
        self.elided: str | None = None  # an elision line among the rows: rows after it are not shown


_NAME_IN_GLUE = r"(?:GPU|NIC)\d+|mlx\d_\d+"  # "GPU7mlx5_0": a GPU's and a NIC's column names run together
_GLUED_NAMES = re.compile(rf"(?:{_NAME_IN_GLUE}){{2,}}")
_CELL = re.compile(r"X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC|N/A|\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")
_EXTRA_OK = topo_pipe.EXTRA_OK


def _split_glued(tokens: list[str]) -> list[str] | None:
    """Cells printed without a space between them (``0N/A``, ``PIXNODE``) read apart; None if one is not
    made of cell values only."""
    out: list[str] = []
    for tok in tokens:
        pieces = [m.group(0) for m in _CELL.finditer(tok)]
        if "".join(pieces) != tok:
            return None
        out.extend(pieces)
    return out


def _read_table(text: str, source: str, first_line: int, codes: str) -> _Table:
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r")) and bool(lines) and bool(lines[-1].strip())
    t = _Table()
    start = next((i for i, x in enumerate(lines) if matrix_header_tokens(x) is not None), None)
    if start is None and (piped := topo_pipe.unpiped(lines)) is not None:
        lines, start, how = piped
        t.notes.append(f"{source}: line {first_line + start}: {how}")
    assumed = headless_header(lines) if start is None else None
    fragment = fragment_header(lines) if start is None and assumed is None else None
    if assumed is not None:
        lines, first_line, start = [assumed, *lines], first_line - 1, 0
        t.notes.append(
            f"{source}: line {first_line + 1}: no header line above the matrix: its columns taken to be its rows' "
            f"labels in order, then the affinity columns ({' '.join(assumed.split(chr(9))[1:])})"
        )
    elif fragment is not None:
        lines, first_line, start = [fragment[0], *lines], first_line - 1, 0
        t.notes.append(f"{source}: line {first_line + 1}: {fragment[1]}")
    if start is None:
        first = next((i for i, x in enumerate(lines) if x.strip()), 0)
        raise ImportParseError(
            source, first_line + first, "no matrix header (a line of column names starting with GPU0)"
        )
    header: list[str] = []
    for h in matrix_header_tokens(lines[start]) or []:
        if _GLUED_NAMES.fullmatch(h):  # "NIC11NIC12": two names printed without a space (tools' env dumps)
            names = re.findall(_NAME_IN_GLUE, h)
            t.notes.append(
                f"{source}: line {first_line + start}: header {h!r} read as {', '.join(names)} (column names glued "
                "together)"
            )
            header.extend(names)
        else:
            header.append(h)
    t.header_line = first_line + start
    t.columns = [h for h in header if h not in MATRIX_WORDS]
    t.extra_columns = [h for h in header if h in MATRIX_WORDS]
    if header[: len(t.columns)] != t.columns:
        raise ImportParseError(source, t.header_line, "the affinity columns come before a GPU or NIC column")
    n_link, n_extra = len(t.columns), len(t.extra_columns)
    last_shown = last_line_shown(lines)  # the paste's last line
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
        if in_rows and is_elision(s):
            t.elided = f"{ELIDED} (line {lineno})"
            in_rows = False
            continue
        if in_rows:
            tokens = _label_apart(s.split(), t.columns)
            label = tokens[0]
            if label in t.columns and label not in seen_labels:
                body = tokens[1:]
                last = k == last_shown
                if not (last and cut) and (ran := _ran_together(t, label, body, lineno, source)) is not None:
                    seen_labels.add(label)
                    t.rows.append((label, ran, {}, lineno))
                    continue
                short = (
                    len(body) < n_link
                    or bool(n_extra)
                    and len(body) == n_link
                    and bool(_GPU.match(label))  # a GPU row has affinity
                    or bool(body)
                    and body[-1].endswith((",", "-"))
                    or _stops_in_affinity(t, body, n_link, n_extra)
                )
                if last and (short or cut and k == len(lines) - 1):
                    # the file ends inside this row (mid-line, or a newline added after a cut): its last cell
                    # may be cut short
                    body = body[:-1]
                    t.notes.append(
                        f"{source}: line {lineno}: the file ends inside row {label}; its last cell is not used"
                    )
                    body = _apart(t, label, body, lineno, source)
                    cells, extra = body[:n_link], dict(zip(t.extra_columns, body[n_link:], strict=False))
                    for name in t.extra_columns[max(0, len(body) - n_link) :]:
                        t.extra_unknown.setdefault(label, f"{ELIDED} (line {lineno} is cut mid-line)")
                        extra.pop(name, None)
                else:
                    cells, extra = _row_cells(t, label, body, lineno, source, n_link, n_extra)
                for j, c in enumerate(cells):
                    ok = TOPO_CODES.match(c) if codes == "topo" else c in P2P_CODES
                    if not ok:
                        expected = (
                            "X, NV#, PIX, PXB, PHB, NODE or SYS"
                            if codes == "topo"
                            else "X, OK, CNS, GNS, TNS, NS, DIS or U"
                        )
                        raise ImportParseError(
                            source,
                            lineno,
                            f"row {label}, column {t.columns[j]}: {c!r} is not a link code (expected {expected})",
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


def _label_apart(tokens: list[str], columns: list[str]) -> list[str]:
    """A row whose label and first cells ran together (``GPU0XNODENODE0-310N/A``: the separators lost) with the
    label apart: the longest column name it starts with, when a link code follows it."""
    if not tokens or tokens[0] in columns:
        return tokens
    head = max((c for c in columns if tokens[0].startswith(c)), key=len, default=None)
    rest = tokens[0][len(head) :] if head else ""
    if head is None or not re.match(r"(?:X|NV\d|PIX|PXB|PHB|NODE|SYS|SOC)", rest):
        return tokens
    return [head, rest, *tokens[1:]]


def _ran_together(t: _Table, label: str, body: list[str], lineno: int, source: str) -> list[str] | None:
    """The link cells of a row whose cells ran together with no separator (``XNODENODE0-310N/A``), when they part
    unambiguously into link codes; its affinity values are not read (``0-310`` is 0-31 and 0, or 0-3 and 10).
    None for a row not run together."""
    n_link, n_extra = len(t.columns), len(t.extra_columns)
    if len(body) >= n_link or (split := _split_glued(body)) is None or len(split) < n_link:
        return None
    if not all(TOPO_CODES.match(c) for c in split[:n_link]) or len(split) > n_link + n_extra:
        return None
    if n_extra:
        why = f"row {label} (line {lineno}): its cells ran together: where its affinity values part is not shown"
        t.extra_unknown[label] = why
    t.notes.append(
        f"{source}: line {lineno}: row {label}: cells run together ({' '.join(body)!r}): link cells read apart, "
        "affinity cells not read"
    )
    return split[:n_link]


def _apart(t: _Table, label: str, body: list[str], lineno: int, source: str) -> list[str]:
    """The cells of a row cut short, those printed without a space between them read apart (``NODENODE``)."""
    split = _split_glued(body)
    if split is None or split == body:
        return body
    glued = " ".join(x for x in body if x not in split)
    t.notes.append(f"{source}: line {lineno}: row {label}: cells glued together read apart ({glued!r})")
    return split


def _stops_in_affinity(t: _Table, body: list[str], n_link: int, n_extra: int) -> bool:
    """A row whose link cells are all there but which stops inside its affinity columns, under rows that print all
    of theirs, or whose first affinity cell can only be a CPU list ('0-47,96-143': not a blank CPU Affinity with
    the NUMA cells after it): at the paste's end, it was cut there (its cells are in column order; the last one
    may be a stub)."""
    if not n_link < len(body) < n_link + n_extra:
        return False
    first = body[n_link]
    cpu_list = t.extra_columns[:1] == ["CPU Affinity"] and bool(re.fullmatch(r"[\d,-]*[,-][\d,-]*", first))
    return cpu_list or any(len(r[2]) == n_extra for r in t.rows)


def _row_cells(
    t: _Table, label: str, body: list[str], lineno: int, source: str, n_link: int, n_extra: int
) -> tuple[list[str], dict[str, str]]:
    """A row's link cells and affinity cells. A row wider or narrower than its header (cells glued together,
    a name missing) is read only where that is unambiguous: glued cells read apart, the affinity cells from
    the right when they look like affinity values; otherwise those cells are left unread with the reason."""
    if len(body) == n_link + n_extra or (len(body) < n_link + n_extra and len(body) <= n_link):
        # as printed (a NIC row, or a GPU row of a matrix without affinity columns, may stop early)
        return body[:n_link], dict(zip(t.extra_columns, body[n_link:], strict=False))
    split = _split_glued(body) if len(body) < n_link + n_extra else None
    if split is not None and len(split) == n_link + n_extra:
        split = _apart(t, label, body, lineno, source)
        return split[:n_link], dict(zip(t.extra_columns, split[n_link:], strict=False))
    tail = body[n_link:]
    if (
        n_link < len(body) < n_link + n_extra
        and all(TOPO_CODES.match(c) for c in body[:n_link])
        and all(any(ok.match(x) for ok in _EXTRA_OK.values()) for x in tail)
    ):
        # link cells counted from the left are all there; only trailing affinity cells are short (printed blank,
        # as in containers that hide the CPU list): which of them are blank is not shown
        why = (
            f"row {label} (line {lineno}) shows {len(tail)} value(s) ({' '.join(tail)}) under {n_extra} affinity "
            "columns: some were printed blank (a container hides the CPU list), which ones is not shown"
        )
        t.notes.append(f"{source}: line {lineno}: {why}; its link cells are read, its affinity cells are not")
        t.extra_unknown[label] = why
        return body[:n_link], {}
    why = (
        f"row {label} (line {lineno}) has {len(body)} cells under a header of {n_link + n_extra} columns "
        "(columns shifted: names or cells glued together)"
    )
    t.notes.append(f"{source}: line {lineno}: {why}; its link cells are not used")
    extra: dict[str, str] = {}
    tail = body[len(body) - n_extra :] if n_extra else []
    before = body[len(body) - n_extra - 1] if len(body) > n_extra else ""
    if (
        n_extra
        and all(_EXTRA_OK[c].match(v) for c, v in zip(t.extra_columns, tail, strict=True))
        and TOPO_CODES.match(before)
    ):
        extra = dict(zip(t.extra_columns, tail, strict=True))  # the affinity columns end the row: read from the right
    elif n_extra:
        t.extra_unknown[label] = why
    return [], extra


NOT_SHOWN = "?"  # a topo -m pair the paste does not show (neither its cell nor the mirror cell)


def _square(
    t: _Table, labels: list[str], source: str, problems: list[str], what: str, unknown: str | None = None
) -> list[list[str]] | None:
    """The labels x labels sub-matrix; cells cut off by a truncated file are taken from the mirror cell. With
    ``unknown``, a pair shown in neither cell is that code (the pairs shown are kept); else the matrix is None."""
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
            if cell is None and unknown is not None:
                cell = unknown
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
        raise ImportParseError(
            source, t.header_line, f"GPU columns are {', '.join(labels)}; expected GPU0, GPU1, ... in order"
        )
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
            extra = rows[label][1]
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
                        f"nvidia-smi topo -m printed {extra[col]!r}"
                        if col in extra
                        else t.extra_unknown[label]
                        if label in t.extra_unknown and col in t.extra_columns
                        else f"nvidia-smi topo -m printed nothing under {col} for {label} (blank, as in a "
                        "container that does not see the host's CPU and NUMA layout)"
                        if col in t.extra_columns
                        else "this nvidia-smi topo -m has no such column"
                    )
        else:
            why = (
                f"{t.elided}: row {label} not shown"
                if t.elided
                else f"no row for {label} in this nvidia-smi topo -m (the paste ends before it)"
            )
            rig.problems.append(f"{source}: nvidia-smi topo -m: {why}")
            for name in ("cpu_affinity", "numa_node"):
                g.unavailable[name] = why
        rig.gpus.append(g)
    rig.problems.extend(t.notes)
    topo = rig.topology
    rig.origins["topology"] = f"{source}:{t.header_line}"
    scratch: list[str] = []
    matrix = _square(t, labels, source, scratch, "nvidia-smi topo -m")
    if matrix is not None:
        rig.problems.extend(scratch)
    if matrix is None and any(cells for _, cells, _, _ in t.rows):
        matrix = _square(t, labels, source, rig.problems, "nvidia-smi topo -m", unknown=NOT_SHOWN)
        n = len(labels)
        gone = sum(1 for i in range(n) for j in range(i + 1, n) if matrix and matrix[i][j] == NOT_SHOWN)
        if matrix is not None and gone < n * (n - 1) // 2:
            pairs = n * (n - 1) // 2
            why = f"{_matrix_gap(t, labels)}: {gone} of {pairs} GPU pairs not shown ({NOT_SHOWN}); the others kept"
            topo.unavailable["matrix"] = why
            rig.problems.append(f"{source}: nvidia-smi topo -m: {why}")
        else:
            matrix = None
            rig.problems.extend(scratch)
    if matrix is not None:
        topo.matrix = matrix
        if any(c.startswith("NV") for row in matrix for c in row):
            topo.unavailable["pcie_matrix"] = (
                "nvidia-smi topo -m shows the NVLink count, not the PCIe level, for NVLink pairs"
            )
        elif "matrix" in topo.unavailable:
            topo.unavailable["pcie_matrix"] = topo.unavailable["matrix"]
        else:
            topo.pcie_matrix = [row[:] for row in matrix]
    else:
        topo.unavailable["matrix"] = _matrix_gap(t, labels)
    if nic_cols:
        topo.nics = [t.nic_legend.get(c, c) for c in nic_cols]
        index = {c: j for j, c in enumerate(t.columns)}
        nic_matrix: list[list[str]] = []
        gaps: list[str] = []  # rows whose NIC cells are not all shown: unknown ("") there, the other rows judged
        for label in labels:
            cells = rows[label][0] if label in rows else []
            if any(index[n] >= len(cells) for n in nic_cols):
                gaps.append(label)
                nic_matrix.append([""] * len(nic_cols))  # a row cut short: its nearest NIC may be one not shown
                continue
            nic_matrix.append(["SYS" if cells[index[n]] == "SOC" else cells[index[n]] for n in nic_cols])
        if len(gaps) == len(labels):
            nic_matrix = []
        if gaps:
            one = gaps[0]
            topo.unavailable["nic_matrix"] = (
                f"row {one}: its NIC cells are not readable (columns shifted)"
                if len(gaps) == 1 and one in rows and not rows[one][0]
                else _matrix_gap(t, labels)
            ) + ("; the other rows kept" if nic_matrix else "")
        topo.nic_matrix = nic_matrix
    rig.host.numa_nodes = [NumaNode(id=n, cpus=c) for n, c in sorted(numa_cpus.items())]
    if "NUMA Affinity" not in t.extra_columns:
        rig.host.unavailable["numa_nodes"] = "this nvidia-smi topo -m has no NUMA Affinity column"
    return rig


def _matrix_gap(t: _Table, labels: list[str]) -> str:
    """Why a matrix could not be filled: the rows the output does not show, or cannot be read."""
    shown = {label for label, cells, _, _ in t.rows if cells}
    gone = [x for x in labels if x not in shown]
    what = f"rows {gone[0]}-{gone[-1]}" if len(gone) > 1 else f"row {gone[0]}" if gone else "some cells"
    if t.elided:
        return f"{t.elided}: {what} not shown"
    unread = [x for x in gone if any(label == x for label, _, _, _ in t.rows)]
    if unread:
        return f"{what} not readable (columns shifted against the header)"
    return f"{what} not shown (the output ends before them)"


def p2p_mode_hint(context: list[str], filename: str = "") -> str | None:
    """The ``-p2p`` mode (r, w, n, a, p) named in a command line before the matrix, or in the file name."""
    for line in reversed(context):
        m = re.search(r"-p2p\s+(rw|wr|[rwnap])\b", line)  # "rw": one matrix shown for both (a script's label)
        if m:
            return "rw" if m.group(1) == "wr" else m.group(1)
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
    if mode in ("r", "rw"):
        rig.topology.p2p_read = matrix
    if mode in ("w", "rw"):
        rig.topology.p2p_write = [row[:] for row in matrix]
    if mode not in ("r", "w", "rw"):
        rig.problems.append(
            f"{source}: nvidia-smi topo -p2p {mode} ({P2P_MODES.get(mode, mode)}) matrix read but not kept: the scan "
            "has read and write only"
        )
    return rig


def nv_count(code: str) -> int:
    """``NV12`` -> 12; anything else -> 0."""
    m = re.fullmatch(r"NV(\d+)", code)
    return int(m.group(1)) if m else 0
