"""Plain ``nvidia-smi``: the boxed table (driver and CUDA versions; per GPU index, name, persistence, bus id,
uncorrected volatile ECC count, temperature, performance state, power draw and cap, memory, MIG mode).

Both table layouts are read: the one before R530 (``| NVIDIA-SMI 470.57.02  Driver Version: ...`` with
``Persistence-M|``) and the wider one since. A name nvidia-smi cut short with ``...`` is not kept. A GPU
nvidia-smi cannot open is left out of the table; it prints "Unable to determine the device handle for GPU
0000:3B:00.0: Unknown Error" above it instead, and that GPU is kept as lost (index: the one the table skips).
"""

from __future__ import annotations

import re

from gpuadvisor import facts
from gpuadvisor.catalog import brands
from gpuadvisor.facts import Gpu, HealthCheck, Rig
from gpuadvisor.importers import smi_flat
from gpuadvisor.importers import values as v
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside_log

# "Driver Version:"/"CUDA Version:", or since nvidia-smi 610 "KMD Version:"/"CUDA UMD Version:"
_VERSIONS = re.compile(r"NVIDIA-SMI\s+(\S+)\s+(?:Driver|KMD) Version:\s*(\S+)(?:\s+CUDA (?:UMD )?Version:\s*(\S+))?")
_ROW1 = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|N/A)\s*$")
# A GPU's second row, first cell: "N/A   34C    P0    69W / 700W" (fan, temperature, P-state, power draw / cap)
_ROW2 = re.compile(
    r"^\s*(?P<fan>\S+)\s+(?P<temperature_c>\S+?)C?\s+(?P<performance_state>P\d+|N/A)\s+"
    r"(?:(?P<power_draw_w>\S+?)W?\s*/\s*(?P<power_limit_w>\S+?)W?)?\s*$"
)
# "1MiB / 81559MiB"; before R340 "14MB /  6143MB", the same MiB (values.mem_bytes)
_MEM = re.compile(r"^\s*(?P<memory_used_bytes>\d+)Mi?B\s*/\s*(?P<memory_total_bytes>\d+)Mi?B\s*$")
# What the second and third rows of a GPU show (the first: name, persistence mode, bus id, ECC).
_TABLE_FIELDS = (*[f for f in _ROW2.groupindex if f != "fan"], *_MEM.groupindex, "mig_mode")
# "for GPU 0000:0B:00.0: Unknown Error"; newer drivers and WSL2 put the index first: "for GPU0: 0000:C1:00.0: ..."
_LOST = re.compile(r"^\s*(Unable to determine the device handle for GPU\s*(?:\d{1,3}:\s+)?([0-9A-Fa-f:.]+)\s*:.*?)\s*$")


def _lost_gpus(rig: Rig, lines: list[tuple[int, str]], source: str) -> None:
    """GPUs nvidia-smi named in an "Unable to determine the device handle" line, kept as lost GPUs."""
    seen = {g.bus_id for g in rig.gpus}
    lost: list[tuple[str, str, int]] = []
    for lineno, line in lines:
        m = _LOST.match(line)
        bus = v.normalize_bus_id(m.group(2)) if m else None
        if m and bus and bus not in seen:
            seen.add(bus)
            lost.append((bus, m.group(1), lineno))
    if not lost:
        return
    where = {id(g): rig.origins.get(f"gpus[{k}]", source) for k, g in enumerate(rig.gpus)}
    taken = {g.index for g in rig.gpus}
    free = [i for i in range(len(rig.gpus) + len(lost)) if i not in taken]
    for (bus, text, lineno), idx in zip(sorted(lost), free[: len(lost)], strict=True):
        g = Gpu(index=idx, bus_id=bus)
        for f in ("name", "brand", "persistence_mode", "ecc_errors_uncorrected_volatile", *_TABLE_FIELDS):
            g.unavailable[f] = f"{facts.GPU_LOST} (nvidia-smi: {text})"
        rig.problems.append(f"{source}: line {lineno}: GPU {bus}: {text}")
        where[id(g)] = f"{source}:{lineno}"
        rig.gpus.append(g)
    rig.gpus.sort(key=lambda g: g.index)
    for k, g in enumerate(rig.gpus):
        rig.origins[f"gpus[{k}]"] = where[id(g)]


# What nvidia-smi prints instead of (or above) its table when the driver or a GPU is in trouble
_NO_DRIVER = re.compile(r"^\s*(NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\b.*?)\s*$")
_INFOROM = re.compile(r"^\s*(WARNING: infoROM is corrupted at gpu\s+([0-9A-Fa-f:.]+))\s*$")
_MISMATCH = re.compile(r"^\s*(Failed to initialize NVML: Driver/library version mismatch)\s*$")
_LIBRARY = re.compile(r"^\s*NVML library version:\s*(\d+\.\d+(?:\.\d+)?)\s*$")  # printed below the mismatch
# the driver answers but lists no GPU (nvidia-smi's NVML_ERROR_NOT_FOUND / zero devices message)
# alone on its line, or so quoted in a report's prose (`"No devices were found"`): the line is the message
_NO_DEVICES = re.compile(r"^\s*[`\"']{0,3}(No devices were found)[`\"']{0,3}\s*$")
NO_DEVICES = (
    "the NVIDIA driver answers but lists no GPU: one lost from the bus or failed at init (dmesg | grep -i nvrm), "
    "not bound to the driver or not supported by it (lspci -nnk | grep -iA3 nvidia), or not passed into this "
    "container or VM"
)


def _messages(rig: Rig, lines: list[tuple[int, str]], source: str) -> set[int]:
    """nvidia-smi's messages in ``lines`` (``(line number, text)``): it could not talk to the driver (no driver
    fact can be read), or a GPU's infoROM is corrupted. The line numbers of those it read."""
    said: set[int] = set()
    for lineno, line in lines:
        if m := _NO_DRIVER.match(line) or _MISMATCH.match(line):
            cause = facts.DRIVER_MISMATCH if _MISMATCH.match(line) else facts.DRIVER_UNREACHABLE
            why = f"{cause} (line {lineno}: {m.group(1)[:90]!r})"
            for name in ("driver_version", "cuda_driver_version", "nvml_version"):
                if getattr(rig.software, name) is None:
                    rig.software.unavailable[name] = why
            rig.problems.append(f"{source}: line {lineno}: {m.group(1)[:200]}: no GPU or driver fact can be read")
            said.add(lineno)
        elif (m := _LIBRARY.match(line)) and rig.software.nvml_version is None:
            rig.software.nvml_version = m.group(1)  # the user-space library's version (the module's is not shown)
            rig.software.unavailable.pop("nvml_version", None)
            said.add(lineno)
        elif _NO_DEVICES.match(line):
            rig.problems.append(f"{source}: line {lineno}: nvidia-smi: No devices were found: {NO_DEVICES}")
            said.add(lineno)
        elif m := _INFOROM.match(line):
            bus = v.normalize_bus_id(m.group(2)) or m.group(2)
            rig.problems.append(f"{source}: line {lineno}: GPU {bus}: nvidia-smi reports its infoROM corrupted")
            said.add(lineno)
    return said


def _versions(rig: Rig, m: re.Match[str], source: str, lineno: int, cut: bool = False) -> None:
    """``NVIDIA-SMI 545.46  Driver Version: 546.80  CUDA Version: ERR!``: the versions, an error value kept as
    the reason, and an nvidia-smi that differs from the driver it talks to; ``cut``: the file ends in this line."""
    sw = rig.software
    smi, sw.driver_version, cuda = m.group(1), m.group(2), m.group(3)
    sw.nvml_version = smi  # nvidia-smi prints the version of itself and the NVML library it ships with
    if cuda and not v.absent(cuda):
        sw.cuda_driver_version = cuda
    else:
        sw.cuda_driver_version = None
        sw.unavailable["cuda_driver_version"] = v.printed(cuda) if cuda else "not in nvidia-smi's banner"
        if v.state_meaning(cuda):
            rig.problems.append(f"{source}: line {lineno}: CUDA Version: {v.printed(cuda)}")
    _cut_version(rig, m, cut)
    if sw.driver_version is not None and smi != sw.driver_version and not v.absent(smi):
        rig.problems.append(
            f"{source}: line {lineno}: nvidia-smi {smi} reports driver {sw.driver_version}: nvidia-smi (and its NVML "
            "library) and the driver differ; normal on WSL, where the Windows driver serves the Linux guest; "
            "elsewhere a driver updated without reloading its kernel module (reboot)"
        )


def banner_versions(rig: Rig, line: str, source: str, lineno: int, cut: bool = False) -> bool:
    """Read nvidia-smi's banner (``NVIDIA-SMI 470.63  Driver Version: 470.63 ...``) when ``line`` is one, as the
    plain table's reader does (another of nvidia-smi's tables prints the same banner)."""
    m = _VERSIONS.search(line)
    if m:
        _versions(rig, m, source, lineno, cut)
    return m is not None


def _cut_version(rig: Rig, m: re.Match[str], cut: bool) -> None:
    """A version cut short is not read (another table of the paste shows it whole): one that ends in a dot
    (``Driver Version: 535.129.``, no version does), or (``cut``: the file ends inside the banner) the last one."""
    last = 3 if m.group(3) else 2
    for group, name in ((2, "driver_version"), (3, "cuda_driver_version")):
        value = m.group(group) or ""
        if value.endswith(".") or cut and group == last and m.end(last) == len(m.string.rstrip()):
            setattr(rig.software, name, None)
            rig.software.unavailable[name] = f"nvidia-smi's banner shows {value!r}, cut short: not read"


def _first_row(m1: re.Match[str], cells: list[str], source: str, lineno: int) -> Gpu:
    """``| 0  NVIDIA H100 80GB HBM3  On | 00000000:18:00.0 Off | 0 |``: index, name, persistence, bus id, ECC."""
    idx, name, pers = int(m1.group(1)), m1.group(2).strip(), m1.group(3)
    gpu = Gpu(index=idx)
    if name.endswith("...") or not name:
        gpu.unavailable["name"] = "nvidia-smi cut the name short in its table"
    else:
        gpu.name = name
    _brand(gpu, name)
    gpu.persistence_mode = {"On": True, "Off": False}.get(pers)
    if gpu.persistence_mode is None:
        gpu.unavailable["persistence_mode"] = f"nvidia-smi printed {pers!r}"
    bus = cells[1].split()
    gpu.bus_id = v.normalize_bus_id(bus[0]) if bus else None
    if gpu.bus_id is None:
        raise ImportParseError(source, lineno, f"GPU {idx}: {cells[1].strip()[:30]!r} is not a bus id")
    ecc = v.to_int(cells[2].strip())
    gpu.ecc_errors_uncorrected_volatile = ecc
    if ecc is None:
        gpu.unavailable["ecc_errors_uncorrected_volatile"] = f"nvidia-smi printed {cells[2].strip()!r}"
    return gpu


def _brand(gpu: Gpu, name: str) -> None:
    """The brand word the table's name starts with ("GeForce GTX 108..." cut short still shows GeForce)."""
    gpu.brand = brands.from_name(name)
    if gpu.brand is None:
        gpu.unavailable["brand"] = "the table's name shows no brand word (nvidia-smi -q prints the Product Brand)"


def _started_row(cells: list[str], first_cell_whole: bool, lineno: int) -> Gpu | None:
    """``|   0  NVIDIA GeForce RTX 2080 Ti     On  |   0000`` at the end of a paste: the GPU is shown (its index, and
    its name when the persistence cell after it is there); what the cut hides is not shown, never a value."""
    m = re.match(r"^\s*(\d{1,3})\s+\S", cells[0])
    if m is None:
        return None
    gpu = Gpu(index=int(m.group(1)))
    m1 = _ROW1.match(cells[0]) if first_cell_whole else None
    name = m1.group(2).strip() if m1 else ""
    if name and not name.endswith("..."):
        gpu.name = name
    if m1:  # the persistence cell was closed by its "|"
        gpu.persistence_mode = {"On": True, "Off": False}.get(m1.group(3))
    _brand(gpu, name or cells[0][m.end() - 1 :])
    why = f"{facts.ELIDED} (line {lineno} is cut mid-line)"
    for f in ("name", "bus_id", "persistence_mode", "ecc_errors_uncorrected_volatile", *_TABLE_FIELDS):
        if getattr(gpu, f) is None:
            gpu.unavailable[f] = why
    return gpu


def _cut_after_bus(gpu: Gpu, cell: str) -> None:
    """A first row cut after its whole bus-id cell (``| 00000000:05:00.0 Off |``), or inside that cell after the
    bus id (``| 0000:01:00.0      On`` then the cut: the display state follows it): the bus id is shown; only
    what the cut hides (the ECC cell, the rows below) is not."""
    bus = v.normalize_bus_id((cell.split() or [""])[0])
    if bus is not None:
        gpu.bus_id = bus
        gpu.unavailable.pop("bus_id", None)


def gpu_row(line: str) -> bool:
    """A table's GPU row (``|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |  0 |``): index, name and
    persistence, then a bus id: the row nvidia-smi prints, recognised without its banner and column header."""
    cells = line.strip().strip("|").split("|")
    return (
        len(cells) >= 3
        and bool(_ROW1.match(cells[0]))
        and v.normalize_bus_id((cells[1].split() or [""])[0]) is not None
    )


def _second_row(rig: Rig, gpu: Gpu, cells: list[str], source: str, lineno: int) -> None:
    """``| N/A 34C P0 69W / 700W | 1MiB / 81559MiB | 0% Default |``: temperature, P-state, power, memory."""
    m2 = _ROW2.match(cells[0])
    if m2:
        shown = m2.groupdict()
        gpu.temperature_c = v.to_float(shown["temperature_c"])
        pstate = shown.pop("performance_state")
        gpu.performance_state = int(pstate[1:]) if pstate.startswith("P") else None
        gpu.power_draw_w = v.to_float(shown["power_draw_w"]) if shown["power_draw_w"] else None
        gpu.power_limit_w = v.to_float(shown["power_limit_w"]) if shown["power_limit_w"] else None
        for name, raw in shown.items():
            if v.state_meaning(raw):  # ERR!: a read that failed is a fact about the GPU, never dropped
                if name != "fan":
                    gpu.unavailable[name] = v.printed(raw)
                what = "fan speed" if name == "fan" else name.rsplit("_", 1)[0].replace("_", " ")
                rig.problems.append(f"{source}: line {lineno}: GPU {gpu.index}: {what}: {v.printed(raw)}")
    mm = _MEM.match(cells[1])
    if mm:
        gpu.memory_used_bytes = int(mm.group(1)) * 2**20
        gpu.memory_total_bytes = int(mm.group(2)) * 2**20


def _elisions_as_rules(rig: Rig, lines: list[str], source: str, first_line: int) -> list[str]:
    """The lines with those where the poster left GPU rows out (``...`` above the processes table) read as a row's
    closing rule: the table goes on below them; the GPUs left out are not shown (the list is partial)."""
    out = list(lines)
    for k, line in enumerate(lines):
        if "Processes:" in line:
            break
        if line.strip() and v.is_elision(line.strip()):
            out[k] = "+" + "-" * 10 + "+"
            if not rig.partial_gpu_list:
                rig.partial_gpu_list = True
                rig.problems.append(
                    f"{source}: line {first_line + k}: the paste leaves rows of the table out ({line.strip()!r}): "
                    "the GPUs in them are not shown"
                )
    return out


def _unflattened(rig: Rig, lines: list[str], source: str, first_line: int) -> list[str]:
    """The lines, a table whose line breaks were lost (all on one line) split back at its frame, with a note: the
    line numbers below then count the table's lines."""
    out: list[str] = []
    for k, line in enumerate(lines):
        if not smi_flat.flattened(line):
            out.append(line)
            continue
        split = smi_flat.unflattened(line)
        rig.problems.append(
            f"{source}: line {first_line + k}: an nvidia-smi table on one line (its line breaks lost): read as its "
            f"{len(split)} lines, split at its frame (line numbers below count those)"
        )
        out += split
    return out


def parse_smi_summary(text: str, source: str = "<text>", first_line: int = 1, context: list[str] | None = None) -> Rig:
    """Facts from the plain ``nvidia-smi`` table; ``context``: the lines printed just before it (lost GPUs)."""
    rig = Rig()
    lines = _elisions_as_rules(rig, _unflattened(rig, clean_lines(text), source, first_line), source, first_line)
    last_shown = max((i for i, x in enumerate(lines) if x.strip()), default=-1)  # the paste's last line
    cut = not text.endswith(("\n", "\r"))  # the file ends inside that line: its last value may be cut short
    body = banner = False
    spaced = double_spaced(lines)
    gpu: Gpu | None = None
    row = 0
    for k, line in enumerate(lines):
        lineno = first_line + k
        s = line.strip()
        m = _VERSIONS.search(s)
        if m:
            _versions(rig, m, source, lineno, cut=k == last_shown and cut)
            banner = True
            continue
        if s.startswith("|=") and not body:
            body = True
            continue
        if not body and not gpu_row(s) or k in spaced:
            continue  # (spaced: the empty lines of a table printed with one after each of its lines)
        body = True  # after the header's "|===" line, or at a GPU row pasted without the banner and header
        if not s.startswith("|"):
            if s.startswith("+") or not s:
                if gpu is not None:
                    gpu, row = None, 0
                if not s:
                    break  # the processes table follows a blank line
                continue
            break
        if "Processes:" in s:
            break
        cells = [c for c in s.strip("|").split("|")]
        if len(cells) < 3 and k == last_shown and (gpu is None or row >= 3):
            started = _started_row(cells, s.count("|") >= 2, lineno)  # the paste ends inside a GPU's first row
            if started is not None and len(cells) == 2 and (s.count("|") >= 3 or len(cells[1].split()) >= 2):
                _cut_after_bus(started, cells[1])  # its bus id cell was closed, or text follows the bus id
            if started is not None:
                rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
                rig.gpus.append(started)
            continue
        if len(cells) < 3 and k == last_shown and gpu is not None and row == 1:
            # the paste ends in a GPU's second row: the cells closed by a "|", or the power cell cut right after
            # its cap's unit ("59W / 400W"), are shown whole; a cell cut inside is not shown
            closed = cells[: s.count("|") - 1] or ([cells[0]] if s.rstrip().endswith("W") else [])
            if closed:
                row = 2
                _second_row(rig, gpu, [*closed, ""][:2], source, lineno)
                continue
        if len(cells) < 3:
            continue
        m1 = _ROW1.match(cells[0])
        if gpu is None or row >= 3:
            if not m1:
                continue
            gpu = _first_row(m1, cells, source, lineno)
            rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{lineno}"
            rig.gpus.append(gpu)
            row = 1
            continue
        row += 1
        if row == 2:
            _second_row(rig, gpu, cells, source, lineno)
        elif row == 3:
            gpu.mig_mode = v.enabled(cells[2].strip())
    rows = bool(rig.gpus)  # GPUs read from the table's rows (not from nvidia-smi's messages)
    said = _messages(rig, [(first_line - len(context or []) + k, x) for k, x in enumerate(context or [])], source)
    said |= _messages(rig, [(first_line + k, x) for k, x in enumerate(lines)], source)
    shown = rig.gpus or banner or any(_LOST.match(x) for x in lines)
    if not shown and rig.software.driver_version is None and not said:
        raise ImportParseError(source, first_line, "no 'NVIDIA-SMI ... Driver Version' line and no GPU row")
    for g in rig.gpus:
        for f in _TABLE_FIELDS:
            if getattr(g, f) is None:
                g.unavailable.setdefault(f, "not shown (or N/A) in nvidia-smi's table")
    ctx = context or []
    before = [(first_line - len(ctx) + k, line) for k, line in enumerate(clean_lines("\n".join(ctx)))] if ctx else []
    _lost_gpus(rig, before + [(first_line + k, line) for k, line in enumerate(lines)], source)
    if rows and not any(_PROCESSES.search(x) for x in lines):
        end = max((i for i, x in enumerate(lines) if x.strip().startswith(("|", "+"))), default=last_shown)
        rig.problems.append(f"{source}: line {first_line + end}: {NOT_TO_ITS_END}")
    return rig


def double_spaced(lines: list[str]) -> set[int]:
    """The empty lines of a table printed with one after each of its lines (a program that printed the output line
    by line adding its own newline): those between two box lines (``|``/``+``), when the table's first box lines
    (three at least) all have one below them and none two. Empty: the table is printed as nvidia-smi prints it."""
    box = [k for k, x in enumerate(lines) if x.strip().startswith(("|", "+"))]
    if len(box) < 3 or any(b - a != 2 for a, b in zip(box, box[1:3], strict=False)):
        return set()
    return {k for a, b in zip(box, box[1:], strict=False) if b - a == 2 for k in (a + 1,) if not lines[k].strip()}


# nvidia-smi prints its processes table after the GPUs' ("Processes:"; 331 and older: "Compute processes:")
_PROCESSES = re.compile(r"^\|\s*(?:Compute )?[Pp]rocesses:|No running (?:compute )?processes found")
NOT_TO_ITS_END = "nvidia-smi's table is not shown to its end (no Processes table below it): it may hold only some GPUs"


_SAID_NO_DEVICES = re.compile(r"^(.*): line (\d+): nvidia-smi: No devices were found: ")
GPU_DISCOVERY = "GPU discovery"  # the check of a GPU host's service that started looking for its GPUs (go_log)


def finish(rig: Rig) -> None:
    """After the merge: a GPU lspci lists that a table not shown to its end leaves out is not shown, not lost; and
    nvidia-smi's "No devices were found" on a host whose GPU service looked for GPUs and listed none fails."""
    _no_devices_on_gpu_host(rig)
    pci = rig.node.nvidia_pci_functions
    if pci is None or not any(NOT_TO_ITS_END in p for p in rig.problems):
        return
    if set(pci) <= {g.bus_id for g in rig.gpus}:
        return
    rig.node.nvidia_pci_functions = None
    rig.origins.pop("node.nvidia_pci_functions", None)
    rig.node.unavailable["nvidia_pci_functions"] = (
        f"lspci lists {len(pci)} NVIDIA GPU(s); nvidia-smi's table is not shown to its end (it may hold only some)"
    )


# its banner line, boxed, or copied without the box
_SUMMARY = re.compile(r"^(?:\|\s*NVIDIA-SMI\s+\S+|NVIDIA-SMI\s+\S+\s+(?:Driver|KMD) Version:)")


def _no_devices_of_smi(lines: list[str], i: int) -> bool:
    """nvidia-smi's "No devices were found", told by its command on a line above (within three) or alone in the
    paste: another tool's words are not nvidia-smi's."""
    if not _NO_DEVICES.match(lines[i]):
        return False
    above = [x for x in lines[max(0, i - 3) : i] if x.strip() and not x.strip().startswith("`")]
    return not above or "nvidia-smi" in above[-1]


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``| NVIDIA-SMI 580.95.05  Driver Version: ...``: plain ``nvidia-smi``; or, with no table after it, nvidia-smi's
    "Unable to determine the device handle for GPU ..." (the GPU is lost), "NVIDIA-SMI has failed because it
    couldn't communicate with the NVIDIA driver", "Failed to initialize NVML: Driver/library version mismatch" or
    "WARNING: infoROM is corrupted at gpu ..."."""
    if _SUMMARY.match(lines[i].strip()) or smi_flat.flattened(lines[i]):
        return True
    if (current is None or current.kind != "smi-summary") and outside_log(current) and gpu_row(lines[i]):
        return True  # a GPU row pasted without the banner and column header
    line = lines[i]
    if not (
        _LOST.match(line) or _NO_DRIVER.match(line) or _MISMATCH.match(line) or _INFOROM.match(line)
    ) and not _no_devices_of_smi(lines, i):
        return False
    if current is not None and not (current.kind == "daemon-log" and _no_devices_of_smi(lines, i)):
        return False  # inside another output, that output reads it (a report's prose, read as a log, does not)
    return not any(_SUMMARY.match(x.strip()) for x in lines[i + 1 : i + 12])


def _no_devices_on_gpu_host(rig: Rig) -> None:
    """nvidia-smi listed no GPU where a GPU host's own service (the NVIDIA Docker plugin) started discovering GPUs and
    listed none: the machine has GPUs and none answers (a failed check of nvidia-smi's, GA827 fails it)."""
    said = next((m for p in rig.problems if (m := _SAID_NO_DEVICES.match(p))), None)
    host = [c for c in rig.node.health_checks or [] if c.check == GPU_DISCOVERY]
    if said is None or rig.gpus or not host:
        return
    rig.node.health_checks = [
        *(rig.node.health_checks or []),
        HealthCheck(
            "nvidia-smi",
            "No devices were found",
            "fail",
            f"no GPU answers on a GPU host ({host[0].tool} looked for its GPUs: {host[0].evidence})",
            [],
            None,
            f"{said.group(1)}:{said.group(2)}",
        ),
    ]
