"""``nvidia-smi nvlink -s`` (per-link speed or ``<inactive>``), ``nvlink -e`` (error counters) and ``-L``.

nvidia-smi prints each active link's speed per direction. The speed tells the NVLink generation, because each
generation signals at its own rate (lanes x lane rate / 8): NVLink 1 20 GB/s (P100: 8 x 20 Gb/s), NVLink 2
25.781 GB/s (V100: 8 x 25.78125 Gb/s), NVLink 3 25 GB/s (A100: 4 x 50 Gb/s) or 14.062 GB/s (GA102 boards such
as RTX 3090, A6000, A40: 4 x 28.125 Gb/s), NVLink 4 26.562 GB/s (H100: 2 x 106.25 Gb/s PAM4), NVLink 5 50 GB/s
(B200). Sources: NVIDIA P100, V100, A100, GA102 and H100 architecture whitepapers (NVLink sections).
"""

from __future__ import annotations

import re

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, NvLink, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines
from gpuadvisor.importers.values import is_elision, placeholder

# Per-link, per-direction speed printed by nvidia-smi (GB/s) -> NVLink version (see the module docstring).
NVLINK_SPEED_VERSION: dict[float, int] = {20.0: 1, 25.781: 2, 25.0: 3, 14.062: 3, 26.562: 4, 50.0: 5, 53.125: 5}

# the UUID may be elided whole, "(...)" ("GPU 0: NVIDIA H200 (...)" in a job log that pasted nvidia-smi -L), or cut
# away after "(UUID:" (https://github.com/wilicc/gpu-burn/issues/133: "GPU 0: NVIDIA H200 (UUID: "): not shown; or left
# out by whoever abridged the paste ("GPU 0: NVIDIA GB300" over its "Link 0: ..." lines): not shown either
_GPU = re.compile(r"^GPU (\d+): (?:(.*?)\s*\((?:UUID: ([^)]*)\)|(?:\.{3}|…)\)|UUID:?)|([^()]*?))\s*$")
# nvidia-smi -L under a GPU in MIG mode: "  MIG 3g.40gb     Device  0: (UUID: MIG-...)"
MIG_DEVICE = re.compile(r"^MIG \d+g\.\d+gb\w*\s+Device\s+\d+:")
_LINK = re.compile(r"^\s*Link (\d+)\s*:\s*(.*?)\s*$")
# a speed cut inside its unit ("50 GB", "53.125 G"): on the output's last line, even with a line end after it (the
# copy's newline added), it is a cut, not a value (nvidia-smi prints no speed without its "GB/s"); a bare number
# ended by a line end ("53.1\n") stays unreadable: no unit shows it was a speed
_PARTIAL = re.compile(r"\d+(?:\.\d+)?\s*(?:G|GB|GB/)")
_ERR = re.compile(r"^(.*?)\s*Errors?\s*:\s*(\d+)$", re.IGNORECASE)
_ERROR_KEYS = {
    "replay": "replay",
    "recovery": "recovery",
    "crc": "crc_flit",
    "crc flit": "crc_flit",
    "crc data": "crc_data",
}


def version_from_speed(gbps: float) -> int | None:
    for speed, version in NVLINK_SPEED_VERSION.items():
        if abs(speed - gbps) < 0.01:
            return version
    return None


def _set_link(link: NvLink, rest: str, source: str, lineno: int) -> None:
    """One ``Link N: ...`` value: a speed (active, its NVLink version), inactive, or an error counter."""
    speed = re.fullmatch(r"(\d+(?:\.\d+)?)\s*GB/s", rest)
    err = _ERR.match(rest)
    if speed:
        link.active = True
        link.version = version_from_speed(float(speed.group(1)))
        if link.version is None:
            link.unavailable["version"] = f"link speed {speed.group(1)} GB/s matches no NVLink generation"
    elif rest.strip("<>").lower() in ("inactive", "disabled", "off"):
        link.active = False
    elif err:
        key = _ERROR_KEYS.get(err.group(1).strip().lower(), re.sub(r"\W+", "_", err.group(1).strip().lower()))
        link.errors[key] = int(err.group(2))
    else:
        raise ImportParseError(
            source,
            lineno,
            f"link {link.link}: {rest[:40]!r} is neither a speed (25.781 GB/s), <inactive>, nor an error count",
        )


def _mark_unprinted(rig: Rig) -> None:
    """What nvidia-smi nvlink -s never prints, and what this output did not."""
    for g in rig.gpus:
        for nl in g.nvlinks:
            if nl.active is None:
                nl.unavailable["active"] = "nvidia-smi printed error counters only"
            if nl.version is None and "version" not in nl.unavailable:
                nl.unavailable["version"] = "no link speed printed"
            for f in ("remote_bus_id", "remote_device_type", "remote_gpu_index"):
                nl.unavailable[f] = "nvidia-smi nvlink -s does not print the remote end"


def parse_nvlink_status(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from ``nvidia-smi nvlink -s`` / ``-e`` / ``-L``: GPU index, name, UUID and each NVLink.

    A paste that elides part of the output (``...``, ``[...]``, ``<snip>``) or ends mid-line does not show the
    links below that point: the GPU's ``nvlinks`` then lists the links shown and ``unavailable["nvlinks"]``
    says the rest is not shown (``facts.ELIDED``), so no rule reads the missing links as absent or inactive.
    """
    rig = Rig()
    gpu: Gpu | None = None
    links: dict[int, NvLink] = {}
    by_index: dict[int, Gpu] = {}  # the last GPU of each number (tasks of srun each number theirs from 0)
    origins: list[str] = []
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r")) and bool(lines) and bool(lines[-1].strip())
    final = max((k for k, x in enumerate(lines) if x.strip()), default=-1)

    def close() -> None:
        if gpu is not None and links:
            gpu.nvlinks = [links[k] for k in sorted(links)]

    def not_shown(g: Gpu | None, why: str) -> None:
        if g is None:
            rig.problems.append(f"{source}: {why}: NVLink output above the first GPU line not shown")
            return
        shown = sorted(links) if g is gpu else [n.link for n in g.nvlinks]
        after = f"links after link {shown[-1]} not shown" if shown else "its links not shown"
        g.unavailable["nvlinks"] = f"{why}: {after}"

    for k, line in enumerate(lines):
        lineno = first_line + k
        s = line.strip()
        if is_elision(s):
            why = f"{facts.ELIDED} (line {lineno})"
            not_shown(gpu, why)
            rig.problems.append(
                f"{source}: line {lineno}: {s!r}: the paste leaves out what follows; "
                + (
                    f"links of GPU {gpu.index} after it, and any GPU after GPU {gpu.index}, are not known"
                    if gpu
                    else "not known"
                )
            )
            continue
        m = _GPU.match(s)
        if m and m.group(4) is not None and not (k + 1 < len(lines) and _LINK_LINE.match(lines[k + 1])):
            m = None  # a GPU line without its UUID is one only over its first link's line (else a line cut short)
        if m:
            close()
            idx, uuid = int(m.group(1)), (m.group(3) if m.group(3) is not None else "...").strip()
            hidden = is_elision(uuid) or placeholder(uuid)
            gpu = by_index.get(idx)
            if gpu is None or _another(gpu, None if hidden else uuid):
                gpu = Gpu(index=idx, name=m.group(2) or m.group(4) or None, uuid=None if hidden else (uuid or None))
                if hidden:
                    gpu.unavailable["uuid"] = f"{facts.ELIDED} (line {lineno})"
                by_index[idx] = gpu
                rig.gpus.append(gpu)
                origins.append(f"{source}:{lineno}")
            links = {n.link: n for n in gpu.nvlinks}
            continue
        if gpu is None or not s:
            continue
        if "NVLink" in s and "inactive" in s.lower() or "links are inactive" in s.lower():
            gpu.unavailable["nvlinks"] = facts.NVLINKS_ALL_INACTIVE
            continue
        last = cut and k == len(lines) - 1
        m = _LINK.match(line)
        if not m:
            if last and re.match(r"^\s*Link\b", line):
                not_shown(gpu, f"{facts.ELIDED} (line {lineno} is cut mid-line)")
            elif MIG_DEVICE.match(s):  # -L lists a GPU's MIG devices under it only when MIG mode is on
                gpu.mig_mode = True
            continue  # notes
        n, rest = int(m.group(1)), m.group(2)
        if n > 63:
            raise ImportParseError(source, lineno, f"NVLink number {n} is out of range (GPUs have at most 18 links)")
        speed = re.fullmatch(r"(\d+(?:\.\d+)?)\s*GB/s", rest)
        inactive = rest.strip("<>").lower() in ("inactive", "disabled", "off")
        last = last or (k == final and _PARTIAL.fullmatch(rest) is not None)
        if last and not speed and not inactive:  # "53.1", "<inac", or a counter whose digits may go on
            not_shown(gpu, f"{facts.ELIDED} (line {lineno} is cut mid-line)")
            continue
        if is_elision(rest):
            not_shown(gpu, f"{facts.ELIDED} (line {lineno})")
            continue
        _set_link(links.setdefault(n, NvLink(link=n)), rest, source, lineno)
    close()
    _last_list_short(rig, gpu, source, first_line + len(lines) - 1)
    _mark_unprinted(rig)
    order = sorted(range(len(rig.gpus)), key=lambda p: rig.gpus[p].index)  # stable: tasks' GPU 0s in their order
    rig.gpus = [rig.gpus[p] for p in order]
    rig.origins = {f"gpus[{k}]": origins[p] for k, p in enumerate(order)}
    return rig


def _another(gpu: Gpu, uuid: str | None) -> bool:
    """A line of the number ``gpu`` has names another GPU: its UUID differs (each task of ``srun ... nvidia-smi -L``
    numbers the GPUs it sees from 0; the UUID tells the GPUs apart)."""
    return bool(uuid) and gpu.uuid is not None and uuid != gpu.uuid


def _last_list_short(rig: Rig, last: Gpu | None, source: str, lineno: int) -> None:
    """nvidia-smi lists every link of a GPU, active or not: when the output's last GPU shows fewer links than an
    earlier GPU of its model, the paste ends inside its list, and the links after the last shown are not shown."""
    if last is None or not last.nvlinks or "nvlinks" in last.unavailable:
        return
    most = max((len(g.nvlinks) for g in rig.gpus if g is not last and g.name == last.name), default=0)
    if len(last.nvlinks) < most:
        shown = last.nvlinks[-1].link
        last.unavailable["nvlinks"] = (
            f"{facts.ELIDED} (the output ends at line {lineno}, inside GPU {last.index}'s list): "
            f"links after link {shown} not shown"
        )
        rig.problems.append(
            f"{source}: line {lineno}: GPU {last.index} shows {len(last.nvlinks)} of the {most} links the GPUs "
            "before it list: the paste ends inside its list; the others are not shown"
        )


_NVLINK_GPU = re.compile(r"^GPU \d+: .*\((?:UUID: |UUID:?\s*$|(?:\.{3}|…)\)\s*$)")


_BARE_GPU = re.compile(r"^GPU \d+: [^()]+$")  # its UUID left out: only over a link's line
_LINK_LINE = re.compile(r"^\s*Link \d+\s*:")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``GPU 0: <name> (UUID: GPU-...)``: ``nvlink -s`` (or ``-L``, told apart by :func:`settle`); or ``GPU 0: <name>``
    with its UUID left out, right over a ``Link N:`` line."""
    if current is not None and current.kind == "nvlink":
        return False
    if _NVLINK_GPU.match(lines[i]):
        return True
    return bool(_BARE_GPU.match(lines[i])) and i + 1 < len(lines) and bool(_LINK_LINE.match(lines[i + 1]))


def settle(section: Section) -> str:
    """``nvlink`` when it shows links, else ``smi-list`` (``nvidia-smi -L``)."""
    links = any(re.match(r"^\s*Link \d+\s*:", x) or "NVLink" in x or "inactive" in x.lower() for x in section.lines)
    return "nvlink" if links else "smi-list"
