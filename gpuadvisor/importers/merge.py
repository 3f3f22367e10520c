"""Many files of command output -> one Rig, each fact marked with the file and line it came from.

GPUs are matched across outputs by UUID, then PCI bus id, then nvidia-smi index (``topo -m``, ``nvlink -s``
and nccl-tests' device numbers). The first output to give a fact keeps it, in the registry's order of trust
(``Format.trust``): ``-q -x``, ``-q``, plain ``nvidia-smi``, ``nvlink -s``, ``-L``, ``topo -m``, ``topo -p2p``,
nccl-tests, ``lspci``, then the outputs beyond the GPU and storage. Each output goes in by its row's merge hook.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import re
from pathlib import Path
from typing import Any

from gpuadvisor import __version__, facts
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig, Source, Storage
from gpuadvisor.importers import beyond_merge
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.launch_env import add_command_env
from gpuadvisor.importers.machines import one_machine, split
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.prefixed import strip_prefix, uncommented
from gpuadvisor.importers.registry import BY_KIND, STORAGE, recognised
from gpuadvisor.importers.sanity import drop_implausible
from gpuadvisor.importers.section import OPEN_END, Section
from gpuadvisor.importers.sections import not_nvidia, other_vendor_gpu, split_sections, unread

MAX_BYTES = 64 * 2**20  # larger than any nvidia-smi/lspci output of a real machine


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


STDIN = "<stdin>"  # what ``import -`` names the text it read from standard input


def read_stdin() -> str:
    """``import -``: standard input's text (at most ``MAX_BYTES``), decoded as a file's is."""
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # no standard input at all (a closed descriptor)
        raise ImportParseError(STDIN, None, "no standard input to read ('-' reads the outputs from a pipe)")
    if sys.stdin.isatty():  # typed or pasted at a terminal: say how to end it
        print("gpuadvisor: reading the outputs from standard input (paste them, then Ctrl-D)", file=sys.stderr)
    data = stream.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ImportParseError(STDIN, None, f"more than {MAX_BYTES // 2**20} MiB: not the output of one machine")
    return decode(data, STDIN)


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


# anything NVIDIA in a text: the vendor's name or driver (its modules, nvidia-smi, "NVRM:"), its PCI vendor id
_NVIDIA = re.compile(r"nvidia|\bNVRM\b|\b10de:", re.IGNORECASE)


def parse_section(section: Section, source: str, filename: str = "") -> Part:
    """Parse one output found by :func:`split_sections`, by its row's parser."""
    row = BY_KIND[section.kind]
    part = row.parse(section, source, filename)
    part.text, part.name = section.text, row.name
    add_command_env(part.rig, section.context, section.start - len(section.context), source)
    if row.extras is not None:  # facts beyond the GPU in it: nvidia-smi -q Fabric, lspci -vvv ACSCtl
        row.extras(part.rig, section.text)
    if section.open_end and part.rig.gpus:
        part.rig.problems.append(f"{source}: line {section.start}: {OPEN_END}")
        part.rig.partial_gpu_list = True
    return part


def parse_text(text: str, source: str = "<text>", filename: str = "") -> list[Part]:
    """Every output in one text, parsed (the reading contract, in the README's import section).

    A text is refused only when nothing in it is read: no output recognised (an error naming its first line),
    or none of those recognised could be read (the first one's error). Otherwise an output that cannot be read,
    and each range of lines no output claims, is listed as a note with its line numbers (``Part.notes``)."""
    text, prefix = strip_prefix(text)
    text, again = _once(text)
    sections = split_sections(text)
    if not sections and (bare := uncommented(text)) is not None:  # an output in a script's comment block
        text, sections = bare, split_sections(bare)
    if not sections:
        lines = text.splitlines()
        first = next((i for i, x in enumerate(lines) if x.strip()), None)
        if first is None:
            raise ImportParseError(source, None, "empty: no command output in it")
        sample = " ".join(lines[first].split())[:50]
        foreign = not_nvidia(text)
        if foreign:
            raise ImportParseError(source, first + 1, foreign)
        raise ImportParseError(source, first + 1, f"not recognised as {recognised()} (it starts {sample!r})")
    parts: list[Part] = []
    failed: list[ImportParseError] = []
    seen: dict[str, int] = {}
    twice: list[str] = []
    for s in sections:
        same = seen.setdefault(s.text.strip(), s.start)
        if same != s.start:  # the same output pasted twice: read once
            twice.append(f"{source}: line {s.start}: the output of line {same} again (pasted twice); read once")
            continue
        try:
            parts.append(parse_section(s, source, filename or source))
        except ImportParseError as e:
            failed.append(e)
    # another vendor's tool (rocm-smi) and nothing NVIDIA: refused as that vendor's paste, whatever a reader took of
    # it (a framework's log on that GPU, its matrices tried as nvidia-smi topo -m's)
    foreign = None if _NVIDIA.search(text) else not_nvidia(text, gpus_read=any(p.rig.gpus for p in parts))
    if foreign:
        raise ImportParseError(source, sections[0].start, foreign)
    if not parts:
        raise failed[0]
    only_lspci = all(s.kind == "lspci" for s in sections)
    if not any(p.rig.gpus for p in parts) and (other := other_vendor_gpu(text, only_lspci)):
        raise ImportParseError(source, sections[0].start, other)
    notes = [f"{e}: that output was not read; the others were" for e in failed] + twice
    if again:
        notes.append(f"{source}: line {again}: the paste above again, from its first line (pasted twice); read once")
    said = {int(n) for p in parts for x in p.rig.problems for n in re.findall(r"\bline (\d{1,9})\b", x)}
    spans = unread(text, sections, said)
    notes += [f"{source}: {span}: not recognised, not read (it starts {sample!r})" for span, sample in spans]
    if prefix:
        notes.append(f"{source}: every line starts with {prefix} (a launcher's or log's prefix): read without it")
    parts[0].notes.extend(notes)
    return parts


def parse_path(path: Path) -> list[Part]:
    """A file's outputs, as :func:`parse_text` reads them; a big kernel log is read as a stream (its memory does
    not grow with its length: importers/stream.py)."""
    from gpuadvisor.importers.stream import parse_big_log

    parts = parse_big_log(path)
    return parts if parts is not None else parse_text(read_text(path), str(path), path.name)


def _once(text: str) -> tuple[str, int | None]:
    """A text that is one paste twice over (the same lines, blank lines aside): its first copy, and the line the
    second starts on; else the text and None."""
    lines = text.splitlines(keepends=True)
    shown = [i for i, x in enumerate(lines) if x.strip()]
    half = len(shown) // 2
    if half < 2 or len(shown) % 2:
        return text, None
    if all(lines[shown[k]].strip() == lines[shown[half + k]].strip() for k in range(half)):
        return "".join(lines[: shown[half]]), shown[half] + 1
    return text, None


def detect(text: str) -> list[str]:
    """The kinds of output in ``text`` (the rows of :mod:`gpuadvisor.importers.registry`), in order."""
    return [s.kind for s in split_sections(text)]


# -- merging ----------------------------------------------------------------------------------------------


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
    m = Merger()
    ordered = sorted(parts, key=lambda p: BY_KIND[p.kind].trust)
    for part in ordered:
        BY_KIND[part.kind].merge(m, part)
    m.gpus.sort(key=lambda g: g.index)
    rig = m.rig
    rig.gpus = m.gpus
    for part in ordered:
        after = BY_KIND[part.kind].after
        if after is not None:
            after(m, part)
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
        label = f"{p.file}: {BY_KIND[p.kind].name}"
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
    rig.problems.extend(n for p in parts for n in p.notes)
    beyond_merge.finish(rig)
    for finish in dict.fromkeys(BY_KIND[p.kind].finish for p in ordered):
        if finish is not None:
            finish(rig)
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
        if str(p) == "-":  # standard input (a pipe, or a paste ended with Ctrl-D)
            if STDIN not in files:
                parts.extend(parse_text(read_stdin(), STDIN, STDIN))
                files.append(STDIN)
            continue
        real = Path(os.path.realpath(p))  # not Path.resolve: a loop of links is an unreadable file, not an error here
        if real in seen:
            continue  # the same file named twice (or a file inside a directory also given)
        seen.add(real)
        if p.is_dir():
            found = _dir_files(p)
            if not found:
                raise ImportParseError(str(p), None, "directory has no files to import")
            for f in found:
                real = Path(os.path.realpath(f))
                if real in seen:
                    continue
                seen.add(real)
                try:
                    got = parse_path(f)
                except ImportParseError as e:
                    if "not recognised" in e.why or "empty" in e.why or "binary" in e.why:
                        skipped.append(f"{f}: skipped ({e.why.split(' (')[0]})")
                        continue
                    raise
                parts.extend(got)
                files.append(str(f))
            continue
        parts.extend(parse_path(p))
        files.append(str(p))
    if not parts:
        raise ImportParseError(str(paths[0]), None, f"nothing to import: no file holds {recognised()}")
    return parts, files, skipped


def _dir_files(path: Path) -> list[Path]:
    try:
        return sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
    except OSError as e:
        raise ImportParseError(str(path), None, f"cannot list the directory ({e.strerror or e})") from None


def import_storage(files: list[str], rig: Rig | None = None) -> Storage:
    """fio, lsblk and nvme list outputs (``import --storage``), merged as ``import`` merges them, into ``rig``'s
    imported storage path when it has one (a new one otherwise); each file told by content."""
    from gpuadvisor.inputs import read_text as read_input

    m = Merger()
    m.rig = rig or Rig()
    for name in files:
        text = read_input(name, "fio, lsblk or nvme list output", 16 * 2**20)
        sections = [s for s in split_sections(text) if BY_KIND[s.kind].group == STORAGE]
        if not sections:
            raise InputError(
                f"{name}: not fio, lsblk or nvme list output (give fio --output-format=json, lsblk -J or "
                "nvme list output)"
            )
        for s in sections:
            BY_KIND[s.kind].merge(m, parse_section(s, name))
    storage_finish = BY_KIND["fio"].finish
    assert storage_finish is not None
    storage_finish(m.rig)
    return m.rig.storage


def import_dir(path: Path) -> Rig:
    """Every file in a directory (not recursive; hidden files and files that hold no output are skipped)."""
    p = Path(path)
    if not p.is_dir():
        raise ImportParseError(str(p), None, "not a directory")
    return import_files([p])
