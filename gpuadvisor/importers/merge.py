"""Many files of command output -> one Rig, each fact marked with the file and line it came from.

GPUs are matched across outputs by UUID, then PCI bus id, then nvidia-smi index (``topo -m``, ``nvlink -s``
and nccl-tests' device numbers). The first output to give a fact keeps it, in this order of trust: ``-q -x``,
``-q``, plain ``nvidia-smi``, ``nvlink -s``, ``-L``, ``topo -m``, ``topo -p2p``, nccl-tests, ``lspci``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadvisor import __version__, facts
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Gpu, Rig, Source
from gpuadvisor.importers import beyond
from gpuadvisor.importers.beyond import KINDS as BEYOND_KINDS
from gpuadvisor.importers.cuda_samples import parse_bandwidth_test, parse_p2p_latency_test
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.lspci import parse_lspci
from gpuadvisor.importers.machines import one_machine, split
from gpuadvisor.importers.nccl import NcclRun, read_nccl, run_to_rig
from gpuadvisor.importers.nvlink import parse_nvlink_status
from gpuadvisor.importers.sanity import drop_implausible
from gpuadvisor.importers.sections import KIND_NAMES, RECOGNISED, Section, split_sections
from gpuadvisor.importers.smi_query import parse_smi_q, parse_smi_xml
from gpuadvisor.importers.smi_summary import parse_smi_summary
from gpuadvisor.importers.topo import p2p_mode_hint, parse_topo_matrix, parse_topo_p2p

PRIORITY = [
    "smi-xml",
    "smi-q",
    "smi-summary",
    "nvlink",
    "smi-list",
    "topo-m",
    "topo-p2p",
    "cuda-p2p",
    "nccl-tests",
    "cuda-bw",
    "lspci",
]
PRIORITY += BEYOND_KINDS  # kernel logs, RDMA ports, fabric manager: no GPUs of their own
MAX_BYTES = 64 * 2**20  # larger than any nvidia-smi/lspci output of a real machine


@dataclass
class Part:
    """One command output found in a file, parsed."""

    kind: str
    file: str
    line: int
    rig: Rig
    nccl: NcclRun | None = None
    text: str = ""  # the output as read (machines.py looks for nvidia-smi's "Attached GPUs")

    @property
    def origin(self) -> str:
        return f"{self.file}:{self.line} ({KIND_NAMES.get(self.kind, self.kind)})"

    def at(self, *keys: str) -> str:
        """Where a fact came from: the most precise of ``keys`` the parser recorded, else the output's start."""
        for k in keys:
            if k in self.rig.origins:
                return f"{self.rig.origins[k]} ({KIND_NAMES.get(self.kind, self.kind)})"
        return self.origin


# -- reading ----------------------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    """A file's text: UTF-8, UTF-16 with a byte-order mark (PowerShell's ``>``), or Latin-1; never binary."""
    from gpuadvisor.inputs import read_bytes

    if path.is_dir():
        raise ImportParseError(str(path), None, "is a directory (use import_dir, or give the files)")
    try:
        data = read_bytes(path, "command output", MAX_BYTES)
    except InputError as e:
        raise ImportParseError(str(path), None, str(e).removeprefix(f"{path}: ")) from None
    return decode(data, str(path))


def decode(data: bytes, source: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise ImportParseError(
                source, None, "starts with a UTF-16 byte-order mark but is not UTF-16 text"
            ) from None
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise ImportParseError(source, line, "binary data (a NUL byte), not command output")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# -- parsing ----------------------------------------------------------------------------------------------


def parse_section(section: Section, source: str, filename: str = "") -> Part:
    """Parse one output found by :func:`split_sections`."""
    part = _parse_section(section, source, filename)
    part.text = section.text
    beyond.add_extras(part.kind, part.rig, section.text)  # nvidia-smi -q Fabric, lspci -vvv ACSCtl
    return part


def _parse_section(section: Section, source: str, filename: str = "") -> Part:
    text, first = section.text, section.start
    kind = section.kind
    if kind == "smi-xml":
        return Part(kind, source, first, parse_smi_xml(text, source, first))
    if kind == "smi-q":
        return Part(kind, source, first, parse_smi_q(text, source, first))
    if kind == "smi-summary":
        return Part(kind, source, first, parse_smi_summary(text, source, first, context=section.context))
    if kind == "topo-m":
        return Part(kind, source, first, parse_topo_matrix(text, source, first))
    if kind == "topo-p2p":
        mode = p2p_mode_hint(section.context, filename)
        return Part(kind, source, first, parse_topo_p2p(text, source, first, mode=mode))
    if kind in ("nvlink", "smi-list"):
        return Part(kind, source, first, parse_nvlink_status(text, source, first))
    if kind == "lspci":
        return Part(kind, source, first, parse_lspci(text, source, first))
    if kind == "cuda-p2p":
        return Part(kind, source, first, parse_p2p_latency_test(text, source, first))
    if kind == "cuda-bw":
        return Part(kind, source, first, parse_bandwidth_test(text, source, first, context=section.context))
    if kind == "nccl-tests":
        run = read_nccl(text, source, first, hint="\n".join(section.context) + "\n" + filename)
        return Part(kind, source, first, run_to_rig(run, source), nccl=run)
    if kind in BEYOND_KINDS:
        return Part(kind, source, first, beyond.parse(kind, text, source, first))
    raise AssertionError(kind)  # pragma: no cover - split_sections makes only the kinds above


def parse_text(text: str, source: str = "<text>", filename: str = "") -> list[Part]:
    """Every output in one text, parsed; a text with none is an error naming its first line."""
    sections = split_sections(text)
    if not sections:
        lines = text.splitlines()
        first = next((i for i, x in enumerate(lines) if x.strip()), None)
        if first is None:
            raise ImportParseError(source, None, "empty: no command output in it")
        sample = " ".join(lines[first].split())[:50]
        raise ImportParseError(source, first + 1, f"not recognised as {RECOGNISED} (it starts {sample!r})")
    return [parse_section(s, source, filename or source) for s in sections]


def detect(text: str) -> list[str]:
    """The kinds of output in ``text`` (see :data:`gpuadvisor.importers.sections.KIND_NAMES`), in order."""
    return [s.kind for s in split_sections(text)]


# -- merging ----------------------------------------------------------------------------------------------


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict) and not value)


class _Merger:
    def __init__(self) -> None:
        self.part_maps: dict[int, dict[int, Gpu]] = {}
        self.rig = Rig()
        self.gpus: list[Gpu] = []
        self.origins: dict[int, dict[str, str]] = {}  # id(gpu) -> field path -> origin
        self.other_origins: dict[str, str] = {}

    # GPU identity ---------------------------------------------------------------------------------------
    def _find(self, g: Gpu, part: Part, by_index: bool, bus_number: int | None) -> Gpu | None:
        if g.uuid:
            for t in self.gpus:
                if t.uuid == g.uuid:
                    return t
        if g.bus_id:
            for t in self.gpus:
                if t.bus_id == g.bus_id:
                    return t
            if any(t.bus_id for t in self.gpus):
                return None  # a bus id no other output lists
        if bus_number is not None:
            same = [t for t in self.gpus if t.bus_id and int(t.bus_id[5:7], 16) == bus_number]
            if len(same) == 1:
                return same[0]
        if by_index:
            for t in self.gpus:
                if t.index == g.index:
                    if (t.uuid and g.uuid and t.uuid != g.uuid) or (t.bus_id and g.bus_id and t.bus_id != g.bus_id):
                        self.rig.problems.append(
                            f"{part.origin}: GPU {g.index} is {g.uuid or g.bus_id} here but {t.uuid or t.bus_id} "
                            "elsewhere "
                            "(outputs from different machines?); not merged"
                        )
                        return None
                    return t
        return None

    def map_gpus(self, part: Part) -> dict[int, Gpu]:
        """Fragment GPU position -> the rig's GPU (created when new)."""
        mapping: dict[int, Gpu] = {}
        frag = part.rig.gpus
        if part.kind == "lspci":
            return self._map_lspci(part)
        bus_numbers: dict[int, int | None] = {}
        if part.nccl is not None:
            local = part.nccl.local_ranks()
            bus_numbers = {k: r.bus_number for k, r in enumerate(local)}
        had = bool(self.gpus)
        self._same_machine(part)
        new: list[int] = []
        for k, g in enumerate(frag):
            t = self._find(g, part, by_index=True, bus_number=bus_numbers.get(k))
            if t is None:
                if any(x.index == g.index for x in self.gpus):
                    if not any(f"GPU {g.index} is" in p and part.origin in p for p in self.rig.problems):
                        self.rig.problems.append(
                            f"{part.origin}: GPU {g.index} ({g.uuid or g.bus_id}) matches no GPU of the outputs read "
                            "before it "
                            "(outputs from different machines?); not merged"
                        )
                    continue
                t = Gpu(index=g.index)
                self.gpus.append(t)
                new.append(g.index)
            mapping[k] = t
        if had and new:
            self.rig.problems.append(
                f"{part.origin}: lists GPU {', '.join(map(str, new))} that the outputs read before it do not"
            )
        return mapping

    def _same_machine(self, part: Part) -> None:
        """Refuse outputs whose GPUs all carry ids (UUID, bus id) and none of which the others list."""
        known = {x for t in self.gpus for x in (t.uuid, t.bus_id) if x}
        theirs = [g for g in part.rig.gpus if g.uuid or g.bus_id]
        if not known or not theirs or any(x in known for g in theirs for x in (g.uuid, g.bus_id) if x):
            return
        mine = sorted(t.bus_id or t.uuid or "" for t in self.gpus)
        other = sorted(g.bus_id or g.uuid or "" for g in theirs)
        raise ImportParseError(
            part.file,
            part.line,
            f"its GPUs ({', '.join(other[:3])}{', ...' if len(other) > 3 else ''}) are none of those in the outputs "
            "read before "
            f"({', '.join(mine[:3])}{', ...' if len(mine) > 3 else ''}): outputs of different machines? Import each "
            "machine on its own",
        )

    def _map_lspci(self, part: Part) -> dict[int, Gpu]:
        frag = part.rig.gpus
        mapping: dict[int, Gpu] = {}
        if not self.gpus:
            for k in range(len(frag)):
                t = Gpu(index=k)
                self.gpus.append(t)
                mapping[k] = t
            if any(g.bus_id for g in frag):
                self.rig.problems.append(
                    f"{part.origin}: GPU indices taken from PCI bus order (nvidia-smi's default), as no nvidia-smi "
                    "output names them"
                )
            return mapping
        self._same_machine(part)
        if any(g.bus_id is None for g in frag):  # lines without their device line: which GPU is not shown
            self.rig.problems.append(
                f"{part.origin}: its device is not shown (no lspci device line), so it is not "
                "attached to any GPU of the other outputs"
            )
            return mapping
        if not any(t.bus_id for t in self.gpus) and len(frag) == len(self.gpus):
            for k, t in enumerate(sorted(self.gpus, key=lambda x: x.index)):
                mapping[k] = t
            self.rig.problems.append(
                f"{part.origin}: matched its {len(frag)} GPUs to GPU 0..{len(frag) - 1} by PCI bus order (nvidia-smi's "
                "default order)"
            )
            return mapping
        for k, g in enumerate(frag):
            found = next((x for x in self.gpus if x.bus_id == g.bus_id), None)
            if found is None:
                why = (
                    "no nvidia-smi output lists it (driver not bound, GPU lost, or another machine)"
                    if any(x.bus_id for x in self.gpus)
                    else "the other outputs give no bus ids to match it by (add nvidia-smi -q)"
                )
                self.rig.problems.append(f"{part.origin}: NVIDIA GPU {g.bus_id} not used: {why}")
                continue
            mapping[k] = found
        return mapping

    # fields -----------------------------------------------------------------------------------------
    def _fill(
        self, target: Any, source: Any, prefix: str, where: Callable[[str], str], origins: dict[str, str]
    ) -> None:
        for f in dataclasses.fields(source):
            name = f.name
            if name in ("unavailable", "index"):
                continue
            sv, tv = getattr(source, name), getattr(target, name)
            if isinstance(sv, facts.Pcie):
                self._fill(tv, sv, f"{prefix}{name}.", where, origins)
                continue
            # A list that may be None (clocks_event_reasons) is a fact when empty: "none active" read from the source.
            optional = f.default is None
            empty = (lambda x: x is None) if optional else _is_empty
            if empty(sv):
                if empty(tv) and name in source.unavailable and name not in target.unavailable:
                    target.unavailable[name] = source.unavailable[name]
                continue
            if empty(tv):
                setattr(target, name, sv)
                target.unavailable.pop(name, None)
                if name in source.unavailable:  # a list the source shows only part of (links elided in a paste)
                    target.unavailable[name] = source.unavailable[name]
                origins[f"{prefix}{name}"] = where(f"{prefix}{name}")

    def add(self, part: Part) -> None:
        mapping = self.map_gpus(part)
        self.part_maps[id(part)] = mapping
        for k, t in mapping.items():

            def where(path: str, k: int = k) -> str:
                return part.at(f"gpus[{k}].{path}", f"gpus[{k}]")

            self._fill(t, part.rig.gpus[k], "", where, self.origins.setdefault(id(t), {}))
        for section in ("host", "software"):
            target, source = getattr(self.rig, section), getattr(part.rig, section)
            origins: dict[str, str] = {}
            self._fill(target, source, f"{section}.", lambda path: part.at(path), origins)
            self.other_origins.update(origins)
        self.rig.problems.extend(part.rig.problems)
        frag_to_merged = {part.rig.gpus[k].index: t.index for k, t in mapping.items()}
        beyond.merge_into(self.rig, part.rig, frag_to_merged, part.origin)  # kernel log, RDMA ports, fabric
        by_frag_index = {part.rig.gpus[k].index: t for k, t in mapping.items()}
        for i, m in enumerate(part.rig.measurements):
            m.gpus = [by_frag_index[g].index for g in m.gpus if g in by_frag_index]
            self.other_origins[f"measurements[{len(self.rig.measurements)}]"] = part.at(f"measurements[{i}]")
            self.rig.measurements.append(m)

    def topology(self, parts: list[Part]) -> None:
        topo = self.rig.topology
        order = {id(g): pos for pos, g in enumerate(self.gpus)}
        n = len(self.gpus)
        for part in parts:
            if part.kind not in ("topo-m", "topo-p2p", "cuda-p2p"):
                continue
            mapping = self.part_maps[id(part)]
            pt = part.rig.topology
            perm = [order[id(mapping[k])] for k in range(len(part.rig.gpus)) if k in mapping]
            full = len(perm) == n == len(part.rig.gpus)

            def remap(matrix: list[list[str]], perm: list[int] = perm) -> list[list[str]]:
                out = [[""] * n for _ in range(n)]
                for a, pa in enumerate(perm):
                    for b, pb in enumerate(perm):
                        out[pa][pb] = matrix[a][b]
                return out

            fields = ["matrix", "pcie_matrix"] if part.kind == "topo-m" else ["p2p_read", "p2p_write"]
            if part.kind == "cuda-p2p" and not full:
                continue  # the sample ran on some of the GPUs (CUDA_VISIBLE_DEVICES): its pairs stay measurements
            for name in fields:
                value = getattr(pt, name)
                if _is_empty(value):
                    if name in pt.unavailable and _is_empty(getattr(topo, name)):
                        topo.unavailable.setdefault(name, pt.unavailable[name])
                    continue
                if not full:
                    self.rig.problems.append(
                        f"{part.origin}: its {name} covers {len(part.rig.gpus)} GPUs, the scan has {n}; left out"
                    )
                    topo.unavailable.setdefault(name, f"{part.origin} covers {len(part.rig.gpus)} GPUs of {n}")
                    continue
                new = remap(value)
                if _is_empty(getattr(topo, name)):
                    setattr(topo, name, new)
                    topo.unavailable.pop(name, None)
                    if name in pt.unavailable:  # a partial matrix (pairs not shown are U): its reason stays with it
                        topo.unavailable[name] = pt.unavailable[name]
                    self.other_origins[f"topology.{name}"] = part.at("topology")
                elif getattr(topo, name) != new:
                    self.rig.problems.append(
                        f"{part.origin}: a second {name} that differs from the first; the first kept"
                    )
            if part.kind == "topo-m" and pt.nics and not topo.nics and full:
                topo.nics = list(pt.nics)
                if pt.nic_matrix:
                    rows = [[] for _ in range(n)]  # type: list[list[str]]
                    for a, pa in enumerate(perm):
                        rows[pa] = pt.nic_matrix[a]
                    topo.nic_matrix = rows
                self.other_origins["topology.nics"] = part.at("topology")
            for key in ("nic_matrix",):
                if key in pt.unavailable:
                    topo.unavailable.setdefault(key, pt.unavailable[key])


def _mark_missing(obj: Any, reason: str) -> None:
    """Give every still-empty field of a facts object a reason (facts' rule: null always has one)."""
    for f in dataclasses.fields(obj):
        if f.name == "unavailable":
            continue
        value = getattr(obj, f.name)
        if value is None and f.name not in obj.unavailable:
            obj.unavailable[f.name] = reason


def _expectations(rig: Rig, parts: list[Part]) -> None:
    """What each imported measurement should reach on this rig's links, as the benchmarker derives it."""
    from gpuadvisor.physics.expected import expected_bandwidth

    hosts = {id(m): len(p.nccl.hosts) for p in parts if p.nccl is not None for m in p.rig.measurements}
    for m in rig.measurements:
        if "expected_gbps" in m.unavailable:
            m.expected_source = m.unavailable["expected_gbps"]
            continue  # the parser knows no link figure applies (a sum over devices measured in turn)
        exp = expected_bandwidth(
            rig, m.kind, m.gpus, backend=m.backend, world_size=m.world_size, spans_nodes=hosts.get(id(m), 1) > 1
        )
        m.expected_source = exp.source
        if exp.gbps is None:
            m.unavailable["expected_gbps"] = exp.source
            continue
        m.expected_gbps = round(exp.gbps, 3)
        if m.value_gbps is not None:
            m.ratio = round(m.value_gbps / exp.gbps, 4)


def merge(parts: list[Part], files: list[str]) -> Rig:
    """One Rig from parsed outputs (see the module docstring for how GPUs are matched); outputs of several
    machines are refused (:func:`gpuadvisor.importers.machines.one_machine`)."""
    one_machine(parts)
    m = _Merger()
    ordered = sorted(parts, key=lambda p: PRIORITY.index(p.kind))
    for part in ordered:
        m.add(part)
    m.gpus.sort(key=lambda g: g.index)
    rig = m.rig
    rig.gpus = m.gpus
    m.topology(ordered)
    for pos, g in enumerate(rig.gpus):
        for path, origin in m.origins.get(id(g), {}).items():
            rig.origins[f"gpus[{pos}].{path}"] = origin
        _mark_missing(g, facts.NOT_IN_SOURCE)
        _mark_missing(g.pcie, facts.NOT_IN_SOURCE)
        if not g.nvlinks:
            g.unavailable.setdefault("nvlinks", facts.NOT_IN_SOURCE)
        if not g.pcie.path:
            g.pcie.unavailable.setdefault("path", "no lspci -vv output for this GPU")
    drop_implausible(rig)
    rig.origins.update(m.other_origins)
    _expectations(rig, ordered)
    topo = rig.topology
    if not topo.matrix:
        topo.unavailable.setdefault("matrix", "no nvidia-smi topo -m output")
    if not topo.pcie_matrix:
        topo.unavailable.setdefault("pcie_matrix", "no nvidia-smi topo -m output")
    _mark_missing(topo, "no nvidia-smi topo -p2p output for it")
    _mark_missing(rig.host, facts.NOT_IN_SOURCE)
    _mark_missing(rig.software, facts.NOT_IN_SOURCE)
    kinds = []
    for p in parts:
        label = f"{p.file}: {KIND_NAMES[p.kind]}"
        if label not in kinds:
            kinds.append(label)
    rig.source = Source(
        kind="imported",
        detail="imported from " + "; ".join(kinds),
        created_at=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        tool_version=__version__,
        files=list(files),
    )
    sections = {
        "gpus": bool(rig.gpus),
        "topology": bool(topo.matrix or topo.p2p_read or topo.p2p_write),
        "measurements": bool(rig.measurements),
        "software": any(k.startswith("software.") for k in rig.origins),
        "host": any(k.startswith("host.") for k in rig.origins),
    }
    rig.provenance = {k: "imported" for k, present in sections.items() if present}
    beyond.finish(rig)
    return rig


# -- the public entry points ------------------------------------------------------------------------------


def import_texts(texts: list[tuple[str, str]]) -> Rig:
    """``[(name, text), ...]`` -> one Rig (for callers that hold the text already)."""
    parts: list[Part] = []
    for name, text in texts:
        parts.extend(parse_text(text, name, Path(name).name))
    return merge(parts, [name for name, _ in texts])


def import_files(paths: list[Path]) -> Rig:
    """Files of nvidia-smi / lspci / nccl-tests output -> one imported Rig (a directory: its files).

    Each file may hold several outputs; each output's kind is told by its content. A named file that holds
    none is an error; in a directory such files are skipped and listed in ``rig.problems``. Outputs of
    different machines are refused (see :func:`import_machines`).
    """
    parts, files, skipped = _read_parts(paths)
    rig = merge(parts, files)
    rig.problems.extend(skipped)
    return rig


def import_machines(paths: list[Path]) -> list[Rig]:
    """Like :func:`import_files`, but outputs of different machines become one Rig each (``import --split``),
    in the order the machines first appear; see :mod:`gpuadvisor.importers.machines` for how they are told apart."""
    parts, _files, skipped = _read_parts(paths)
    rigs: list[Rig] = []
    for machine in split(parts):
        rig = merge(machine.parts, machine.files)
        rig.problems.extend(x for x in skipped if len(rigs) == 0)
        rigs.append(rig)
    return rigs


def _read_parts(paths: list[Path]) -> tuple[list[Part], list[str], list[str]]:
    if not paths:
        raise InputError(
            "no files to import (give nvidia-smi, lspci or nccl-tests output files, or a directory of them)"
        )
    parts: list[Part] = []
    files: list[str] = []
    skipped: list[str] = []
    seen: set[Path] = set()
    for p in paths:
        p = Path(p)
        if p.resolve() in seen:
            continue  # the same file named twice (or a file inside a directory also given)
        seen.add(p.resolve())
        if p.is_dir():
            found = _dir_files(p)
            if not found:
                raise ImportParseError(str(p), None, "directory has no files to import")
            for f in found:
                if f.resolve() in seen:
                    continue
                seen.add(f.resolve())
                try:
                    got = parse_text(read_text(f), str(f), f.name)
                except ImportParseError as e:
                    if "not recognised" in e.why or "empty" in e.why or "binary" in e.why:
                        skipped.append(f"{f}: skipped ({e.why.split(' (')[0]})")
                        continue
                    raise
                parts.extend(got)
                files.append(str(f))
            continue
        parts.extend(parse_text(read_text(p), str(p), p.name))
        files.append(str(p))
    if not parts:
        raise ImportParseError(str(paths[0]), None, f"nothing to import: no file holds {RECOGNISED}")
    return parts, files, skipped


def _dir_files(path: Path) -> list[Path]:
    try:
        return sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
    except OSError as e:
        raise ImportParseError(str(path), None, f"cannot list the directory ({e.strerror or e})") from None


def import_dir(path: Path) -> Rig:
    """Every file in a directory (not recursive; hidden files and files that hold no output are skipped)."""
    p = Path(path)
    if not p.is_dir():
        raise ImportParseError(str(p), None, "not a directory")
    return import_files([p])
