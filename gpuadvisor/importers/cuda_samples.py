"""CUDA samples ``p2pBandwidthLatencyTest`` and ``bandwidthTest`` output -> P2P evidence and imported Measurements.

``p2pBandwidthLatencyTest`` (cuda-samples Samples/5_Domain_Specific) prints each device with its PCI bus,
whether each pair can access the other's memory (``Device=0 CANNOT Access Peer Device=1``: the answer of
``cudaDeviceCanAccessPeer``), then matrices: unidirectional and bidirectional bandwidth with P2P disabled and
enabled (GB/s, 1e9 bytes/s; bidirectional counts both directions) and latency (us, the GPU table; the CPU
table is the host's time to issue the copy). Each off-diagonal cell becomes a ``p2p_unidir``, ``p2p_bidir``
or ``p2p_latency`` Measurement for that ordered pair; a "P2P=Enabled" cell of a pair that cannot access its
peer was a copy staged through host memory (the sample falls back to cudaMemcpy) and is recorded with
``p2p_enabled=False``. The access lines also give the pairwise P2P capability (``OK``/``NS`` in
``topology.p2p_read``/``p2p_write``).

``bandwidthTest`` (Samples/1_Utilities) prints host-to-device, device-to-host and device-to-device figures
per transfer size, for pinned or pageable memory: ``h2d``, ``d2h`` and ``d2d`` Measurements. Its
device-to-device figure counts each byte twice (read and written); gpuadvisor's ``d2d`` counts it once, so
the figure is halved and the note says so. Older versions print MB/s (2**20 bytes/s), converted to GB/s.
Device numbers are CUDA's (``CUDA_DEVICE_ORDER``), matched to other outputs by bus id where printed.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

from gpuadvisor.facts import Gpu, Measurement, Rig, SweepRow
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.sanity import TOO_LARGE, too_long
from gpuadvisor.importers.section import Section, clean_lines
from gpuadvisor.importers.values import is_elision

_P2P_DEVICE = re.compile(
    r"^Device:\s*(\d+),\s*(.*?),\s*pciBusID:\s*([0-9a-fA-F]+),\s*pciDeviceID:\s*([0-9a-fA-F]+),\s*pciDomainID:\s*([0-9a-fA-F]+)"
)
_ACCESS = re.compile(r"^Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+)")
_MATRIX = re.compile(
    r"^(Unidirectional|Bidirectional)?\s*P2P=(Enabled|Disabled)\s+(Bandwidth|Latency)(?:\s*\(P2P "
    r"(Writes|Reads)\))?\s*Matrix\s*\((GB/s|us)\)"
)
_NUM = re.compile(r"^-?\d+(?:\.\d+)?$")
_CONNECTIVITY = re.compile(r"^P2P Connectivity Matrix\s*$")  # 1/0: cudaDeviceCanAccessPeer of each pair
SAMPLE_P2P = "CUDA samples p2pBandwidthLatencyTest"
SAMPLE_BW = "CUDA samples bandwidthTest"


def _table(lines: list[str], k: int, n: int) -> tuple[list[list[float | None]], int]:
    """The ``D\\D``/``GPU`` table starting at line ``k`` (its header): n rows of n numbers, and the next line.

    The sample prints every cell of a matrix alike (``%6.02f``; the connectivity matrix ``%6d``): a cell printed
    otherwise (``375.6``, ``3`` where a paste ends inside a row) is cut short, and it and the cells after it are
    not shown, never a value."""
    out: list[list[float | None]] = []
    k += 1
    while k < len(lines) and len(out) < n:
        tokens = lines[k].split()
        if not tokens or not tokens[0].isdigit():
            break
        cells = _as_printed(tokens[1:])
        if not cells and len(tokens) > 1:
            break
        out.append([float(x) for x in cells[:n]] + [None] * (n - len(cells[:n])))
        k += 1
    return out, k


def _decimals(token: str) -> int:
    return len(token.partition(".")[2])


def _as_printed(tokens: list[str]) -> list[str]:
    """The cells of a row up to the first one not printed as the others are (a number cut short, or no number)."""
    shown = [t for t in tokens if _NUM.match(t)]
    if not shown:
        return []
    decimals = Counter(_decimals(t) for t in shown).most_common(1)[0][0]
    return list(itertools.takewhile(lambda t: bool(_NUM.match(t)) and _decimals(t) == decimals, tokens))


def _header_below(lines: list[str], k: int) -> int:
    """The line of the ``D\\D``/``GPU`` header under the title at line ``k`` (or the line after the title)."""
    header = k + 1
    while header < min(len(lines), k + 4) and lines[header].split()[:1] not in (["D\\D"], ["GPU"]):
        header += 1
    return header


def _cells(table: list[list[float | None]]) -> list[tuple[tuple[int, int], float]]:
    """The off-diagonal cells shown: ((row, column), value)."""
    return [((i, j), val) for i, row in enumerate(table) for j, val in enumerate(row) if i != j and val is not None]


def _pair(kind: str, label: str, enabled: bool, pair: tuple[int, int], val: float, can: bool | None) -> Measurement:
    """One cell of a matrix as a Measurement; ``can``: whether the pair can access each other's memory."""
    i, j = pair
    m = Measurement(
        kind=kind,
        backend="cuda",
        provenance="imported",
        method=f"{SAMPLE_P2P}: {label}",
        world_size=1,
        gpus=[i, j],
        p2p_enabled=(can if enabled else False),
        memory=None,
    )
    if kind == "p2p_latency":
        m.latency_us = val
    else:
        m.value_gbps = val
    if enabled and can is False:
        m.notes.append(
            f"GPU {i} cannot access GPU {j} (cudaDeviceCanAccessPeer): the sample copied through "
            "host memory, as with P2P disabled"
        )
    elif enabled and can is None:
        m.unavailable["p2p_enabled"] = "the output does not say whether these GPUs can access each other"
    if kind == "p2p_bidir":
        m.notes.append("both directions at once, summed (as the sample counts it)")
    m.notes.append(
        "the sample's transfer size is not printed (its source: 10,000,000 ints = 40 MB, repeated 5 times)"
        if kind != "p2p_latency"
        else "the sample's GPU latency table (the CPU table is not kept)"
    )
    return m


def parse_p2p_latency_test(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from ``p2pBandwidthLatencyTest``: GPUs (CUDA number, name, bus id), P2P access, measurements."""
    rig = Rig()
    lines = clean_lines(text)
    devices: dict[int, Gpu] = {}
    access: dict[tuple[int, int], bool] = {}
    access_line = 0
    elided: str | None = None
    k = 0
    while k < len(lines):
        s = lines[k].strip()
        lineno = first_line + k
        if is_elision(s):
            elided = elided or f"line {lineno}"
        m = _P2P_DEVICE.match(s)
        if m:
            idx = int(m.group(1))
            bus = f"{int(m.group(5), 16):04x}:{int(m.group(3), 16):02x}:{int(m.group(4), 16):02x}.0"
            g = Gpu(index=idx, name=m.group(2).strip() or None, bus_id=bus)
            devices.setdefault(idx, g)
            rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
            k += 1
            continue
        m = _ACCESS.match(s)
        if m:
            access[(int(m.group(1)), int(m.group(3)))] = m.group(2) == "CAN"
            access_line = access_line or lineno
            k += 1
            continue
        m = _MATRIX.match(s)
        connectivity = _CONNECTIVITY.match(s)
        if (m or connectivity) and not devices:
            devices = _numbered(lines, k, first_line, source, rig)
        if connectivity and devices:  # cudaDeviceCanAccessPeer of each pair again, as 1 or 0
            table, k = _table(lines, _header_below(lines, k), max(devices) + 1)
            for (i, j), val in _cells(table):
                access.setdefault((i, j), val == 1)
            access_line = access_line or lineno
            continue
        if m and devices:
            direction, mode, what, rw, _unit = m.groups()
            n = max(devices) + 1
            header = _header_below(lines, k)
            table, k = _table(lines, header, n)
            enabled = mode == "Enabled"
            kind = (
                "p2p_latency" if what == "Latency" else ("p2p_bidir" if direction == "Bidirectional" else "p2p_unidir")
            )
            label = f"{direction + ' ' if direction else ''}P2P={mode} {what}{f' (P2P {rw})' if rw else ''}"
            for (i, j), val in _cells(table):
                if i in devices and j in devices:
                    rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{first_line + header + 1 + i}"
                    rig.measurements.append(_pair(kind, label, enabled, (i, j), val, access.get((i, j))))
            if len(table) < n:
                rig.problems.append(
                    f"{source}: line {first_line + header}: {label} matrix has {len(table)} of {n} rows "
                    f"({'elided in the paste' if elided else 'the output ends before the rest'}); the rows shown are "
                    "kept"
                )
            continue
        k += 1
    if not devices:
        raise ImportParseError(
            source, first_line, "p2pBandwidthLatencyTest output without its 'Device: N, NAME, pciBusID: ..' lines"
        )
    rig.gpus = [devices[i] for i in sorted(devices)]
    rig.origins = {
        **{f"gpus[{p}]": rig.origins[f"gpu{g.index}"] for p, g in enumerate(rig.gpus)},
        **{key: v for key, v in rig.origins.items() if key.startswith("measurements")},
    }
    _access_matrix(rig, access, (access_line, elided), source, SAMPLE_P2P)
    return rig


_BW_DEVICE = re.compile(r"^Device (\d+):\s*(.+?)\s*$")
_BW_KIND = re.compile(r"^(Host to Device|Device to Host|Device to Device) Bandwidth,\s*(\d+) Device\(s\)")
_BW_MEMORY = re.compile(r"^(PINNED|PAGEABLE) Memory Transfers", re.IGNORECASE)
_BW_HEADER = re.compile(r"^Transfer Size \(Bytes\)\s+Bandwidth\s*\((GB/s|MB/s)\)", re.IGNORECASE)
_BW_KINDS = {"Host to Device": "h2d", "Device to Host": "d2h", "Device to Device": "d2d"}


_NUMACTL = re.compile(r"numactl\s+((?:-{1,2}[\w-]+(?:[= ]?[\w,-]+)?\s+)+?)\S*bandwidthTest\b")
_BW_COMMAND = re.compile(r"\S*bandwidthTest\b")


def numa_binding(lines: list[str]) -> str | None:
    """``numactl -m1 -N1`` from the last command line in ``lines`` that ran bandwidthTest (None: not bound)."""
    for line in reversed(lines):
        m = _NUMACTL.search(line)
        if m:
            return "numactl " + " ".join(m.group(1).split())
        if _BW_COMMAND.search(line) and "Bandwidth Test]" not in line:
            return None
    return None


def parse_bandwidth_test(
    text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None
) -> Rig:
    """Facts from ``bandwidthTest``: the devices it ran on and one Measurement per direction shown; the
    ``numactl`` binding of the command line before it (``context``, or a line inside the text that starts a
    second run) is kept in the method: the same GPU measured under two bindings is two runs, not two GPUs."""
    rig = Rig()
    lines = clean_lines(text)
    binding = numa_binding(context or [])
    devices: dict[int, Gpu] = {}
    kind: str | None = None
    count = 1
    memory: str | None = None
    unit = "GB/s"
    rows: list[tuple[int, float, int]] = []
    start = 0

    def close() -> None:
        nonlocal rows
        if kind is None or not rows:
            rows = []
            return
        scale = 2**20 / 1e9 if unit.upper() == "MB/S" else 1.0
        gpus = sorted(devices)
        m = Measurement(
            kind=kind,
            backend="cuda",
            provenance="imported",
            world_size=1,
            gpus=gpus,
            memory=memory,
            method=f"{SAMPLE_BW}: {dict((v, k) for k, v in _BW_KINDS.items())[kind]}, {memory} memory"
            + (f", under {binding}" if binding else ""),
        )
        for size, val, _ln in rows:
            gbps = val * scale / (2 if kind == "d2d" else 1)
            m.rows.append(
                SweepRow(
                    size_bytes=size,
                    count=size,
                    dtype="uint8",
                    time_us=round(size / (gbps * 1e9) * 1e6, 3),
                    algbw_gbps=round(gbps, 4),
                    busbw_gbps=round(gbps, 4),
                )
            )
        m.rows.sort(key=lambda r: r.size_bytes)
        m.value_gbps = m.rows[-1].busbw_gbps
        if unit.upper() == "MB/S":
            m.notes.append("this bandwidthTest prints MB/s (2**20 bytes/s): converted to GB/s (1e9 bytes/s)")
        if kind == "d2d":
            m.notes.append(
                f"bandwidthTest printed {rows[-1][1]:g} {unit}, counting each byte read and written; "
                "recorded at half that (bytes copied once), as gpuadvisor's d2d counts it"
            )
        if count > 1:
            m.concurrent = False
            m.notes.append(f"the sum of {count} devices' figures, each measured in turn (bandwidthTest --device=all)")
            m.unavailable["expected_gbps"] = (
                "a sum of per-device figures measured one after another: no single link to compare with"
            )
        m.notes.append("CUDA device number (CUDA_DEVICE_ORDER); nvidia-smi's index may differ")
        rig.origins[f"measurements[{len(rig.measurements)}]"] = f"{source}:{start}"
        rig.measurements.append(m)
        rows = []

    for k, line in enumerate(lines):
        s = line.strip()
        lineno = first_line + k
        if _BW_COMMAND.search(s) and "Bandwidth Test]" not in s:  # a second run's command line
            close()
            kind, binding = None, numa_binding([s])
            continue
        m = _BW_DEVICE.match(s)
        if m and kind is None:
            idx = int(m.group(1))
            devices.setdefault(idx, Gpu(index=idx, name=m.group(2)))
            rig.origins.setdefault(f"gpu{idx}", f"{source}:{lineno}")
            continue
        m = _BW_KIND.match(s)
        if m:
            close()
            kind, count, start = _BW_KINDS[m.group(1)], int(m.group(2)), lineno
            continue
        m = _BW_MEMORY.match(s)
        if m:
            memory = m.group(1).lower()
            continue
        m = _BW_HEADER.match(s)
        if m:
            unit = m.group(1)
            continue
        tokens = s.split()
        if kind and len(tokens) == 2 and tokens[0].isdigit() and _NUM.match(tokens[1]):
            if too_long(tokens[0]) or too_long(tokens[1]):
                rig.problems.append(f"{source}: line {lineno}: {TOO_LARGE}; the row is left out")
                continue
            rows.append((int(tokens[0]), float(tokens[1]), lineno))
    close()
    if not devices:
        raise ImportParseError(source, first_line, "bandwidthTest output without its 'Device N: NAME' line")
    rig.gpus = [devices[i] for i in sorted(devices)]
    for p, g in enumerate(rig.gpus):
        rig.origins[f"gpus[{p}]"] = rig.origins.pop(f"gpu{g.index}")
        g.unavailable["bus_id"] = "bandwidthTest does not print the bus id"
    return rig


def _access_matrix(
    rig: Rig, access: dict[tuple[int, int], bool], where: tuple[int, str | None], source: str, sample: str
) -> None:
    """The pairwise peer access (``cudaDeviceCanAccessPeer``) as ``topology.p2p_read``/``p2p_write``: OK or NS, U
    for a pair the paste does not show; ``where``: the first access line, and where the paste elides lines."""
    access_line, elided = where
    n = len(rig.gpus)
    order = [g.index for g in rig.gpus]
    if n > 1 and all((a, b) in access for a in order for b in order if a != b):
        matrix = [["X" if a == b else ("OK" if access[(a, b)] else "NS") for b in order] for a in order]
        rig.topology.p2p_read = matrix
        rig.topology.p2p_write = [row[:] for row in matrix]
        rig.origins["topology"] = f"{source}:{access_line}"
    elif n > 1 and any(a in order and b in order for a, b in access):
        # a partial list (the paste cut or elided): the pairs shown are kept, the others are U (not shown)
        code = {True: "OK", False: "NS", None: "U"}
        matrix = [["X" if a == b else code[access.get((a, b))] for b in order] for a in order]
        rig.topology.p2p_read = matrix
        rig.topology.p2p_write = [row[:] for row in matrix]
        rig.origins["topology"] = f"{source}:{access_line}"
        shown = sum(1 for a in order for b in order if a != b and (a, b) in access)
        why = (
            f"{sample} shows the peer access of {shown} of {n * (n - 1)} GPU pairs"
            + (f" (elided in the paste at {elided})" if elided else " (the paste ends before the rest)")
            + "; the others are U (not shown)"
        )
        rig.topology.unavailable["p2p_read"] = rig.topology.unavailable["p2p_write"] = why
        rig.problems.append(f"{source}: line {access_line}: {why}")
    elif n > 1:
        rig.topology.unavailable["p2p_read"] = rig.topology.unavailable["p2p_write"] = (
            f"{sample} does not show the peer access of every pair"
            + (f" (elided in the paste at {elided})" if elided else "")
        )


def _numbered(lines: list[str], k: int, first_line: int, source: str, rig: Rig) -> dict[int, Gpu]:
    """The GPUs of a matrix pasted without the sample's ``Device: N, ...`` lines: numbered as its header (``D\\D
    0 1 ...``) numbers them, their names and bus ids not shown."""
    for j in range(k + 1, min(len(lines), k + 4)):
        tokens = lines[j].split()
        if tokens[:1] in (["D\\D"], ["GPU"]) and tokens[1:] == [str(i) for i in range(len(tokens) - 1)]:
            rig.problems.append(
                f"{source}: line {first_line + j}: no 'Device: N, NAME, pciBusID' lines in the paste: the GPUs "
                "numbered as the matrix's header numbers them (their names and bus ids not shown)"
            )
            devices = {i: Gpu(index=i) for i in range(len(tokens) - 1)}
            for i, g in devices.items():
                g.unavailable["name"] = g.unavailable["bus_id"] = "not shown (the sample's Device lines not pasted)"
                rig.origins[f"gpu{i}"] = f"{source}:{first_line + j}"
            return devices
    return {}


_P2P_TITLELESS = re.compile(r"^(?:Device:\s*0,\s*.*pciBusID:|P2P Connectivity Matrix\s*$)|" + _MATRIX.pattern)


def starts_p2p(lines: list[str], i: int, current: Section | None) -> bool:
    """``[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]``, or (its title not pasted) its first ``Device: 0`` line
    or the title of one of its matrices."""
    s = lines[i].strip()
    if s.startswith("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]"):
        return True
    return (current is None or current.kind != "cuda-p2p") and bool(_P2P_TITLELESS.match(s))


def starts_bw(lines: list[str], i: int, current: Section | None) -> bool:
    """``[CUDA Bandwidth Test] - Starting...`` (its ``[`` may be lost in a paste), or, its title not pasted,
    ``Running on...`` or `` Device 0: NAME`` followed by the sample's mode line (`` Quick Mode``)."""
    s = lines[i].strip()
    if s.startswith(("[CUDA Bandwidth Test]", "CUDA Bandwidth Test] - Starting")):
        return True
    if current is not None and current.kind == "cuda-bw" or not (s == "Running on..." or s.startswith("Device 0: ")):
        return False
    below = [x.strip() for x in lines[i + 1 : i + 6]]
    return any(x in ("Quick Mode", "Range Mode", "Shmoo Mode") for x in below)


# simpleP2P (Samples/0_Introduction/simpleP2P): "[./simpleP2P] - Starting...", "CUDA-capable device count: 4",
# (before CUDA 8) '> GPU0 = "     Tesla K40m" IS  capable of Peer-to-Peer (P2P)' (the name printed %15s), then one
# "> Peer access from NAME (GPU0) -> NAME (GPU1) : Yes" per ordered pair (cudaDeviceCanAccessPeer; deviceQuery ends
# with the same lines). Its timed copy ("cudaMemcpyPeer / cudaMemcpy between GPU0 and GPU1: 6.05GB/s") alternates
# both directions and counts GiB: not kept as a one-way figure.
SAMPLE_SIMPLE_P2P = "CUDA samples simpleP2P"
_SP_START = re.compile(r"^\[\S*simpleP2P\] - Starting")
_SP_COUNT = re.compile(r"^CUDA-capable device count:\s*(\d+)\s*$")
_SP_CAPABLE = re.compile(r'^(?:>\s*)?GPU(\d+) = "\s*(.*?)"\s*(IS|is|NOT|is NOT)\s+capable of Peer-to-Peer')
_SP_PEER = re.compile(r"^(?:>\s*)?Peer access from (.+) \(GPU(\d+)\) -> (.+) \(GPU(\d+)\) : (Yes|No)\s*$")
_SP_LONGEST = 400  # no line of simpleP2P is longer; a longer one is not read (the patterns stay linear)


def starts_simple_p2p(lines: list[str], i: int, current: Section | None) -> bool:
    """simpleP2P's ``[./simpleP2P] - Starting...``, or (pasted without it) its first ``GPU0 = "NAME" IS capable``
    or ``Peer access from NAME (GPU0) -> NAME (GPU1) : Yes`` line."""
    s = lines[i].strip()
    if _SP_START.match(s):
        return True
    if current is not None and current.kind == "cuda-simplep2p" or len(s) >= _SP_LONGEST:
        return False
    first = _SP_CAPABLE.match(s) or _SP_PEER.match(s)
    return first is not None and first.group(2 if first.re is _SP_PEER else 1) == "0"


def parse_simple_p2p(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs simpleP2P names (CUDA number and name; it prints no bus id) and each pair's peer access."""
    rig = Rig()
    devices: dict[int, Gpu] = {}
    access: dict[tuple[int, int], bool] = {}
    access_line, count = 0, None
    elided: str | None = None

    def gpu(idx: int, name: str, lineno: int) -> None:
        if idx not in devices:
            devices[idx] = Gpu(index=idx)
            rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
        devices[idx].name = devices[idx].name or name.strip() or None

    for k, line in enumerate(clean_lines(text)):
        s, lineno = line.strip(), first_line + k
        if is_elision(s):
            elided = elided or f"line {lineno}"
        if len(s) >= _SP_LONGEST:
            continue
        if m := _SP_COUNT.match(s):
            count = (int(m.group(1)), lineno)
        elif m := _SP_CAPABLE.match(s):
            gpu(int(m.group(1)), m.group(2), lineno)
        elif m := _SP_PEER.match(s):
            a, b = int(m.group(2)), int(m.group(4))
            gpu(a, m.group(1), lineno)
            gpu(b, m.group(3), lineno)
            access[(a, b)] = m.group(5) == "Yes"
            access_line = access_line or lineno
    if count is not None:
        for idx in range(count[0]):
            devices.setdefault(idx, Gpu(index=idx))
            rig.origins.setdefault(f"gpu{idx}", f"{source}:{count[1]}")
    if not devices:
        raise ImportParseError(source, first_line, "simpleP2P output without a device count, GPU or peer access line")
    rig.gpus = [devices[i] for i in sorted(devices)]
    rig.origins = {f"gpus[{p}]": rig.origins[f"gpu{g.index}"] for p, g in enumerate(rig.gpus)}
    for g in rig.gpus:
        g.unavailable["bus_id"] = "simpleP2P does not print the bus id"
        if g.name is None:
            g.unavailable["name"] = "counted by simpleP2P, its name not shown"
    _access_matrix(rig, access, (access_line, elided), source, SAMPLE_SIMPLE_P2P)
    return rig
