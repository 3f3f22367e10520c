"""NVIDIA DCGM's outputs as people paste them: ``dcgmi discovery -l``, ``dcgmi nvlink -s`` and dcgm-exporter's
Prometheus lines.

- ``dcgmi discovery -l``: a box with one row group per GPU, ``| 0 | Name: NVIDIA H100 80GB HBM3 |`` then ``| |
  PCI Bus ID: 00000000:19:00.0 |`` and ``| | Device UUID: GPU-... |``;
- ``dcgmi nvlink -s``: ``gpuId 0:`` over a line of link states, one letter per link (``Key: Up=U, Down=D,
  Disabled=X, Not Supported=_``): a link up is active, down or disabled is not, one not supported is not a link;
  dcgmi prints no speed, so the NVLink generation is not shown;
- ``dcgmi stats -v``: a box per GPU, ``| GPU ID: 1 |`` over the job's Execution and Performance Stats (its
  energy, power, clocks and utilisation over the job: the job's, not the GPU's facts, not read);
- dcgm-exporter: ``DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-...",pci_bus_id="00000000:19:00.0",device="nvidia0",
  modelName="NVIDIA H100 80GB HBM3",Hostname="...",DCGM_FI_DRIVER_VERSION="570.124.06"} 34``: the labels name the
  GPU (a label cut short by the paste is not shown); the values of the temperature, the power draw and the
  framebuffer used and free (MiB) are read. A page of ``# HELP``/``# TYPE`` lines alone (the exporter running but
  exporting no GPU series) is read as that: no GPU known.

Sources: NVIDIA DCGM User Guide (dcgmi discovery, dcgmi nvlink); dcgm-exporter's default counters
(etc/default-counters.csv: DCGM_FI_DEV_GPU_TEMP in C, DCGM_FI_DEV_POWER_USAGE in W, DCGM_FI_DEV_FB_USED and
DCGM_FI_DEV_FB_FREE in MiB).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuadvisor import facts
from gpuadvisor.catalog.cuda_drivers import SOURCE, cuda_for_driver
from gpuadvisor.facts import Gpu, HealthCheck, NvLink, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.listed import add_counted
from gpuadvisor.importers.section import Section, clean_lines, outside
from gpuadvisor.importers.values import normalize_bus_id, placeholder

# dcgmi diag's result box: "| Diagnostic | Result |", section rows "|-----  Metadata  ---...", result rows
# "| GPU Memory                | Pass - GPU: 1 |" (a wrapped cell continues on rows with an empty first cell)
_DIAG_START = re.compile(r"^(?:\|\s*Diagnostic\s*\|\s*Result\s*\|?|Successfully ran diagnostic for group\.?)\s*$")
_DIAG_SECTION = re.compile(r"^[+|]-----\s+([A-Z][\w ]*?)\s+-+[+|]")  # "+-----  Hardware  ------+", a section's rule
_DIAG_ROW = re.compile(r"^\|\s*([^|]*?)\s*\|\s*(.*?)\s*\|?\s*$")
# a Metadata row pasted without its box ("| GPU Device IDs Detected | 3182, 3182 |"; DCGM 4.5 "GPU PCI Device IDs")
_DIAG_METADATA = re.compile(r"^\|\s*(?:GPU (?:PCI )?Device IDs|Driver Version) Detected\s*\|\s*\S")
_DEVICE_IDS = re.compile(r"^GPU (?:PCI )?Device IDs Detected$")
_DIAG_VERDICT = re.compile(r"^(Pass|Fail|Warn|Skip)\b(?:\s*-\s*GPUs?:\s*([\d, ]+))?", re.I)
_GPU_VERDICT = re.compile(r"^GPU\s?(\d+):\s*(Pass|Fail|Warn|Skip)\b", re.I)  # DCGM 4: a row per GPU under the test
TOOL = "dcgmi diag"
# dcgmi discovery -l's count, above its box ("8 GPUs found.", DCGM 4's "8 GPUs found (Active).")
_FOUND = re.compile(r"^(\d{1,4}) GPUs? found(?: \((?:Active|Inactive)\))?\.?\s*$")
_BLANK = ("<<<null>>>", "n/a", "")  # what DCGM prints for a value it does not have
_BOX = re.compile(r"^\|\s*(?:NvLink Link Status|GPU ID\s*\|\s*Device Information)\s*\|?\s*$")
_GPU_ID = re.compile(r"^gpuId (\d+):\s*$")
_STATES = re.compile(r"^([UDX_](?: [UDX_])*)\s*$")
# a row of dcgmi discovery's box, whole only with its closing bar (a row cut short shows no value)
_DISCOVERY_ROW = re.compile(r"^\|\s*(\d+)?\s*\|\s*([\w ]+?)\s*:\s*(.*?)\s*\|\s*$")
# dcgmi stats -v / -j's box per GPU: "| GPU ID: 1 |" over its "Execution Stats" and "Performance Stats" sections
_STATS_GPU = re.compile(r"^\|\s*GPU ID:\s*(\d{1,4})\s*\|\s*$")
_METRIC = re.compile(r"^(DCGM_FI_\w+)\{(.*)$")
_DESCRIBED = re.compile(r"^# (?:HELP|TYPE) (DCGM_FI_\w+)\s")  # the exporter's description of a metric
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_VALUE = re.compile(r"\}\s+(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*$")
NO_SPEED = "dcgmi nvlink -s prints each link's state, not its speed"
# dcgmi health --check before any watch was set (dcgmi's Health.cpp): DCGM ran no check, so it gave no verdict
_NO_WATCHES = re.compile(r"^Error: Health watches not enabled\b")
# NVSentinel's preflight dcgm-diag (preflight-checks/dcgm-diag): the DCGM diagnostic run through pydcgm, logged as
# JSON events ({"event": "Diagnostic summary", "passed": 0, "failed": 2, ...}, {"event": "Test warn", "gpu":
# "GPU-...", "test": "software", "error_code": 29, "detail": "..."}), one a line or pretty-printed by jq
_PREFLIGHT = re.compile(
    r'"event":\s*"(?:Starting preflight dcgm-diag check|Diagnostic summary|Running DCGM diagnostic)'
)
_PAIR = re.compile(r'"(\w+)":\s*(?:"((?:[^"\\]|\\.){0,2000})"|(-?\d{1,9})\b)')


@outside("dcgm")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A dcgmi box title (``|  NvLink Link Status  |``, ``| GPU ID | Device Information |``), a ``GPUs:`` line over
    ``gpuId 0:``, or a dcgm-exporter line of a GPU (``DCGM_FI_...{gpu="0",...``) or of a metric's description
    (``# HELP DCGM_FI_DEV_GPU_TEMP ...``, ``# TYPE ... gauge``)."""
    s = lines[i].strip()
    if (
        _BOX.match(s)
        or (_STATS_GPU.match(s) and _stats_box(lines, i))
        or _DIAG_START.match(s)
        or _DIAG_SECTION.match(s)
        or _NO_WATCHES.match(s)
        or _DIAG_METADATA.match(s)
    ):
        return True
    if _PREFLIGHT.search(s) and len(s) < 20000:
        return True
    if _FOUND.match(s):
        return any(_BOX.match(x.strip()) for x in lines[i + 1 : i + 4])
    if s == "GPUs:" and i + 1 < len(lines):
        return bool(_GPU_ID.match(lines[i + 1].strip()))
    return s.startswith("DCGM_FI_") and 'gpu="' in s or bool(_DESCRIBED.match(s))


def parse_dcgm(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs DCGM lists: index, and what it shows of name, bus id, UUID, NVLink states and a few readings."""
    rig = Rig()
    by_index: dict[int, Gpu] = {}
    lines = clean_lines(text)
    last_shown = max((i for i, x in enumerate(lines) if x.strip()), default=-1)
    linking: Gpu | None = None
    described: Gpu | None = None
    free: dict[int, int] = {}  # framebuffer free per GPU (MiB): the total is used + free

    def gpu(idx: int, lineno: int) -> Gpu:
        if idx not in by_index:
            by_index[idx] = Gpu(index=idx)
            rig.gpus.append(by_index[idx])
            rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
        return by_index[idx]

    found: tuple[int, int] | None = None  # "4 GPUs found." and its line
    stats: Gpu | None = None  # the GPU of a dcgmi stats box (not a diag's, though its sections look alike)
    for k, line in enumerate(lines):
        s, lineno = line.strip(), first_line + k
        if (m := _FOUND.match(s)) is not None:
            found = (int(m.group(1)), lineno)
            continue
        if m := _GPU_ID.match(s):
            linking = gpu(int(m.group(1)), lineno)
            continue
        if (m := _STATS_GPU.match(s)) and _stats_box(lines, k):  # a job's statistics on this GPU (the job's facts)
            stats = gpu(int(m.group(1)), lineno)
            continue
        if linking is not None and (st := _STATES.match(s)):
            _links(linking, st.group(1).split(), cut=k == last_shown and not text.endswith("\n"))
            linking = None
            continue
        if m := _METRIC.match(s):
            whole = k < last_shown or text.endswith("\n")  # a last line the paste ends inside: its value is cut
            _exporter(rig, gpu, m.group(1), m.group(2) if whole else m.group(2).rsplit("}", 1)[0], lineno, free)
            continue
        if (row := _DISCOVERY_ROW.match(s)) is not None:
            if row.group(1) is not None:
                described = gpu(int(row.group(1)), lineno)
            if described is not None:
                _describe(described, row.group(2).lower(), row.group(3))
    if found is not None:  # counted, not shown: not lost
        add_counted(rig, found[0], f"{source}: line {found[1]}: '{found[0]} GPUs found.'", "shown")
    if stats is None and (
        _diag(rig, lines, source, first_line, text.endswith("\n")) or _preflight(rig, lines, source, first_line)
    ):
        return rig
    if not rig.gpus and any(_NO_WATCHES.match(x.strip()) for x in lines):
        rig.problems.append(
            f"{source}: line {first_line}: dcgmi health --check: health watches not enabled: DCGM ran no health "
            "check, so it gave no verdict (set the watches first: dcgmi health -s a)"
        )
        return rig
    descriptions = {m.group(1) for x in lines if (m := _DESCRIBED.match(x.strip()))}
    if not rig.gpus and descriptions:  # the exporter's page with no sample line: it exported no GPU series
        rig.problems.append(
            f"{source}: line {first_line}: dcgm-exporter describes {len(descriptions)} metric(s) (# HELP/# TYPE) but "
            "shows no sample of any: it exported no GPU series (no GPU known)"
        )
        return rig
    if not rig.gpus:
        raise ImportParseError(source, first_line, "DCGM output without a GPU (no gpuId, GPU row or GPU metric)")
    sw = rig.software
    if sw.driver_version is not None and (cuda := cuda_for_driver(sw.driver_version)) is not None:
        sw.cuda_driver_version = cuda  # DCGM does not print it: the driver's version tells it
        rig.origins["software.cuda_driver_version"] = f"catalog: driver {sw.driver_version}, {SOURCE}"
    for g in rig.gpus:
        if g.memory_used_bytes is not None and g.index in free:
            g.memory_total_bytes = g.memory_used_bytes + free[g.index] * 2**20
        if g.uuid is None:
            g.unavailable.setdefault("uuid", "not shown in the DCGM output")
    return rig


def _stats_box(lines: list[str], k: int) -> bool:
    """Whether the ``| GPU ID: N |`` row at ``k`` heads dcgmi stats' box (its Execution Stats rule right under it),
    not another box's (dcgmi policy's ``Policy Information``)."""
    return any("Execution Stats" in x for x in lines[k + 1 : k + 4])


def _links(g: Gpu, states: list[str], cut: bool) -> None:
    for n, state in enumerate(states):
        if state == "_":
            continue  # not supported: no link there
        link = NvLink(link=n, active=state == "U")
        link.unavailable["version"] = NO_SPEED
        for f in ("remote_bus_id", "remote_device_type", "remote_gpu_index"):
            link.unavailable[f] = "dcgmi nvlink -s does not print the remote end"
        g.nvlinks.append(link)
    if cut:
        g.unavailable["nvlinks"] = f"{facts.ELIDED}: the line of link states is cut"


def _describe(g: Gpu, key: str, value: str) -> None:
    """One ``Key: value`` cell of dcgmi discovery -l's box."""
    field = {"name": "name", "pci bus id": "bus_id", "device uuid": "uuid"}.get(key)
    if field is None:
        return
    if value.lower() in _BLANK:
        g.unavailable[field] = f"DCGM printed {value!r}"
    elif key == "name":
        g.name = value
    elif key == "pci bus id":
        g.bus_id = normalize_bus_id(value)
    elif key == "device uuid" and value and not placeholder(value):
        g.uuid = value


def _exporter(
    rig: Rig, gpu: Callable[[int, int], Gpu], metric: str, rest: str, lineno: int, free: dict[int, int]
) -> None:
    """One dcgm-exporter line: its GPU's labels, and the value of the readings this tool keeps."""
    labels = dict(_LABEL.findall(rest))
    if "gpu" not in labels or not labels["gpu"].isdigit():
        return
    g = gpu(int(labels["gpu"]), lineno)
    if (name := labels.get("modelName")) and g.name is None:
        g.name = name
    if (bus := normalize_bus_id(labels.get("pci_bus_id"))) and g.bus_id is None:
        g.bus_id = bus
    uuid = labels.get("UUID")
    if uuid and g.uuid is None and not placeholder(uuid):
        g.uuid = uuid
    elif uuid and placeholder(uuid):
        g.unavailable["uuid"] = f"{facts.ELIDED}: the paste hides it ({uuid!r})"
    if labels.get("GPU_I_PROFILE") or labels.get("GPU_I_ID"):  # a MIG instance's series: MIG mode is on
        g.mig_mode = True
    if (driver := labels.get("DCGM_FI_DRIVER_VERSION")) and rig.software.driver_version is None:
        rig.software.driver_version = driver
    value = _VALUE.search(rest)
    if value is None:
        return  # a line cut before its value
    x = float(value.group(1))
    if metric == "DCGM_FI_DEV_GPU_TEMP":
        g.temperature_c = x
    elif metric == "DCGM_FI_DEV_POWER_USAGE":
        g.power_draw_w = x
    elif metric == "DCGM_FI_DEV_FB_USED":
        g.memory_used_bytes = int(x) * 2**20
    elif metric == "DCGM_FI_DEV_FB_FREE":
        free[g.index] = int(x)


def _diag(rig: Rig, lines: list[str], source: str, first_line: int, ends: bool) -> bool:
    """dcgmi diag's result box: the driver version of its Metadata rows, and each test's verdict listed as a note
    (``Fail - GPU: 0``), a row the paste ends inside left out; a test that failed or warned is a ``HealthCheck``
    with its section and the text of the Warning rows below it. Whether it was one."""
    boxed = any(_DIAG_START.match(x.strip()) or _DIAG_SECTION.match(x.strip()) for x in lines)
    if not boxed and not any(_DIAG_METADATA.match(x.strip()) for x in lines):
        return False
    test = section = ""
    checks: list[HealthCheck] = []
    says: list[str] | None = None  # the Warning row's text being read (its cell wraps over rows)
    last = max((k for k, x in enumerate(lines) if x.strip()), default=-1)
    for k, line in enumerate(lines):
        s = line.strip()
        if (title := _DIAG_SECTION.match(s)) is not None:
            section = title.group(1)
        row = _DIAG_ROW.match(s)
        if row is None or s.startswith(("|-----", "+-")) or (k == last and not ends):
            says = None
            continue
        name, value = row.group(1), row.group(2)
        if name:
            says = None
        test = name or test
        if says is not None:  # the Warning cell goes on
            says.append(_cell(line))
            checks[-1].detail = " ".join("".join(says).split())
            continue
        if name == "Driver Version Detected" and value and rig.software.driver_version is None:
            rig.software.driver_version = value
            rig.origins["software.driver_version"] = f"{source}:{first_line + k}"
        elif _DEVICE_IDS.match(name) and s.endswith("|") and not boxed and not rig.gpus:  # rows pasted alone
            _device_ids(rig, value, f"{source}:{first_line + k}")
        elif name == "Warning" and checks and not checks[-1].detail:
            says = [_cell(line)]
            checks[-1].detail = value
        elif (verdict := _verdict(value)) is not None and test not in ("Info", "Warning"):
            word, gpus, shown = verdict
            on = f" on GPU {shown}" if shown else ""
            rig.problems.append(f"{source}: line {first_line + k}: dcgmi diag: {test}: {word}{on}")
            if word.lower() in ("fail", "warn"):  # DCGM prints FAIL in its JSON, Fail in the box
                checks.append(
                    HealthCheck(TOOL, test, word.lower(), "", gpus, section or None, f"{source}:{first_line + k}")
                )
    if checks:
        rig.node.health_checks = checks
    return True


def _device_ids(rig: Rig, value: str, where: str) -> None:
    """The GPUs of the diagnosed group, one per PCI device id listed (``3182, 3182, ...``; DCGM names no model):
    counted, their name not shown. Read from Metadata rows pasted without their box (whose other rows, read, keep
    the paste from being refused); a whole box's count is left to its readers (the corpus reads none from it)."""
    ids = [x.strip() for x in value.split(",")]
    if not ids or not all(re.fullmatch(r"[0-9a-fA-F]{1,4}", x) for x in ids):
        return
    for i in range(len(ids)):
        g = Gpu(index=i)
        g.unavailable["name"] = f"dcgmi diag lists its PCI device id ({ids[i]}), not its name"
        g.unavailable["bus_id"] = g.unavailable["uuid"] = "not shown by dcgmi diag's Metadata rows"
        rig.gpus.append(g)
        rig.origins[f"gpu{i}"] = where
    rig.problems.append(f"{where}: dcgmi diag: {len(ids)} GPU(s), PCI device id(s) {', '.join(sorted(set(ids)))}")


def _preflight(rig: Rig, lines: list[str], source: str, first_line: int) -> bool:
    """NVSentinel's preflight DCGM diagnostic: each test event that failed or warned (``Test fail``, ``Test warn``:
    its test, GPU UUID, error code and detail) as a ``HealthCheck``; failures its summary counts but the paste does
    not show as one more, "not shown". Whether it was one."""
    if not any(_PREFLIGHT.search(x) for x in lines if len(x) < 20000):
        return False
    events: list[tuple[dict[str, str], int]] = []
    for k, line in enumerate(lines):
        for key, text, number in _PAIR.findall(line) if len(line) < 20000 else ():
            if key == "event":
                events.append(({}, first_line + k))
            if events:
                events[-1][0][key] = text.replace('\\"', '"') if text else number
    checks: list[HealthCheck] = []
    counted: dict[str, int] = {}
    summary = first_line
    for event, lineno in events:
        name = event.get("event", "")
        if name == "Diagnostic summary":
            counted = {w: int(event[w]) for w in ("failed", "warned") if event.get(w, "").isdigit()}
            summary = lineno
            rig.problems.append(f"{source}: line {lineno}: DCGM diagnostic (preflight): {_counts(event)}")
        elif name.startswith("Test ") and name.split()[1].lower() in ("fail", "failed", "warn", "warning"):
            verdict = "fail" if name.split()[1].lower().startswith("fail") else "warn"
            detail = " ".join(x for x in (event.get("gpu", ""), f"error {event['error_code']}" if "error_code" in
                              event else "", event.get("detail", "")) if x)  # fmt: skip
            checks.append(HealthCheck(TOOL, event.get("test", "?"), verdict, detail, [], None, f"{source}:{lineno}"))
    for verdict, word in (("fail", "failed"), ("warn", "warned")):
        unseen = counted.get(word, 0) - sum(c.verdict == verdict for c in checks)
        if unseen > 0:
            checks.append(HealthCheck(TOOL, f"{unseen} test(s) not shown", verdict, f"the summary counts {unseen} "
                                      f"more {word}", [], None, f"{source}:{summary}"))  # fmt: skip
    if checks:
        rig.node.health_checks = checks
    return True


def _counts(event: dict[str, str]) -> str:
    return ", ".join(f"{w} {event[w]}" for w in ("passed", "failed", "warned", "skipped", "total") if w in event)


def _verdict(cell: str) -> tuple[str, list[int], str] | None:
    """A result cell's verdict, its GPUs and the GPUs as printed: ``Fail - GPU: 0``, ``Pass - All``, DCGM 4's
    ``GPU0: Fail``."""
    if (m := _DIAG_VERDICT.match(cell)) is not None:
        shown = (m.group(2) or "").strip()
        return m.group(1), [int(g) for g in re.findall(r"\d+", shown)], shown
    if (m := _GPU_VERDICT.match(cell)) is not None:
        return m.group(2), [int(m.group(1))], m.group(1)
    return None


def _cell(line: str) -> str:
    """A result row's second cell as its text area holds it: dcgmi wraps a long message at the area's width,
    inside a word as often as between two, and pads the area with a two-space margin, so the areas laid end to
    end are the message; a cell without that margin (a paste that lost its padding) ends a word."""
    cells = line.strip().split("|")
    text = (cells[2] if len(cells) > 2 else "").removeprefix(" ")
    return text[:-2] if text.endswith("  ") else text.rstrip() + " "


# nvvs's (dcgmi diag's) refusal to run on a GPU in MIG mode, as DCGM's NvidiaValidationSuite.cpp words it: "GPU 0's
# MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU." (the GPU by
# DCGM's id): MIG is on for that GPU (a MIG configuration that does not span the whole GPU)
_NVVS_MIG = re.compile(r"^\s*GPU (\d{1,4})'s MIG configuration is incompatible with the diagnostic\b")


def starts_nvvs(lines: list[str], i: int, current: Section | None) -> bool:
    """nvvs's MIG message, outside another such output (several lines of it are one)."""
    return bool(_NVVS_MIG.match(lines[i])) and (current is None or current.kind != "nvvs")


def parse_nvvs(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs nvvs would not diagnose for their MIG configuration, with MIG mode on."""
    rig = Rig()
    for n, line in enumerate(text.splitlines()):
        m = _NVVS_MIG.match(line)
        if m is None or any(g.index == int(m.group(1)) for g in rig.gpus):
            continue
        rig.origins[f"gpus[{len(rig.gpus)}]"] = f"{source}:{first_line + n}"
        rig.gpus.append(Gpu(index=int(m.group(1)), mig_mode=True))
    return rig
