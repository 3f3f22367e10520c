"""Storage outputs (fio, lsblk, nvme list) into one imported StoragePath: how ``import`` and ``import --storage``
merge them (fio's figures: the last one read; lsblk's disks and volumes added; nvme list's models given to the
drives lsblk listed, its other drives added)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig, Storage, StoragePath
from gpuadvisor.importers import blockdev, df, fio, nvme_ctrl
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Section

IMPORTED = "(imported)"
_NOT_READ = ("mount_point", "fs_type", "fs_source", "network", "size_bytes", "free_bytes")


def _path(rig: Rig) -> StoragePath:
    """The one imported storage path of the Rig, made when the first storage output is merged."""
    if not rig.storage.paths:
        rig.storage = Storage()
    found = next((sp for sp in rig.storage.paths if sp.path == IMPORTED), None)
    if found is None:  # df's mounts merged first: the imported path goes first all the same
        found = StoragePath(path=IMPORTED, role="data")
        rig.storage.paths.insert(0, found)
    return found


def _read(section: Section, source: str, read: Callable[[str, str], Any]) -> Any:
    """What ``read`` makes of the output; a paste it cannot read (JSON with ``...`` elisions, a table without
    its header) is an output not read, as every importer's is, so the outputs around it still are."""
    try:
        return read(section.text, source)
    except InputError as e:
        raise ImportParseError(source, section.start, str(e).removeprefix(f"{source}: ")) from None


def _parser(attr: str, read: Callable[[str, str, list[str]], Any]) -> Callable[[Section, str, str], Part]:
    """A storage output's parser: what ``read`` makes of it (given the section's prompt context), stored as the
    imported path's ``attr``."""

    def parse(section: Section, source: str, filename: str) -> Part:
        rig = Rig()
        setattr(_path(rig), attr, _read(section, source, lambda text, origin: read(text, origin, section.context)))
        return Part(section.kind, source, section.start, rig)

    return parse


parse_fio = _parser("bench", lambda text, origin, context: fio.parse(text, origin))
parse_lsblk = _parser("devices", lambda text, origin, context: blockdev.parse_lsblk(text, origin))
parse_nvme_list = _parser("devices", lambda text, origin, context: blockdev.parse_nvme_list(text, origin))
parse_nvme_id_ctrl = _parser("devices", nvme_ctrl.parse)


def parse_smartctl(section: Section, source: str, filename: str) -> Part:
    """smartctl -a on an NVMe drive: the drive, its health and temperature as notes."""
    part = _parser("devices", nvme_ctrl.parse_smartctl)(section, source, filename)
    part.rig.problems.extend(nvme_ctrl.smartctl_notes(section.text, f"{source}: line {section.start}"))
    return part


def parse_df(section: Section, source: str, filename: str) -> Part:
    rig = Rig()
    rig.storage = Storage(paths=_read(section, source, lambda text, origin: df.parse(text, origin, section.context)))
    return Part(section.kind, source, section.start, rig)


def add_mounts(m: Merger, part: Part) -> None:
    """df's mounts after the other storage outputs (a mount listed twice: the first df's)."""
    if not m.rig.storage.paths:
        m.rig.storage = Storage()
    seen = {sp.mount_point for sp in m.rig.storage.paths if sp.role == "mount"}
    m.rig.storage.paths += [sp for sp in part.rig.storage.paths if sp.mount_point not in seen]


def add_bench(m: Merger, part: Part) -> None:
    _path(m.rig).bench = part.rig.storage.paths[0].bench


def add_devices(m: Merger, part: Part) -> None:
    _path(m.rig).devices += part.rig.storage.paths[0].devices


def add_models(m: Merger, part: Part) -> None:
    """nvme list after lsblk (or its -o json): the first gave the drives, nvme list adds the model and size they
    lack; drives not listed before are added."""
    sp = _path(m.rig)
    nvme = {d.name: d for d in part.rig.storage.paths[0].devices}
    for d in sp.devices:
        for member in [d, *d.members]:
            if member.name not in nvme:
                continue
            same = nvme.pop(member.name)  # one namespace, listed twice (lsblk, or nvme list -o json and the table)
            for attr in ("model", "size_bytes"):
                if getattr(member, attr) is None and getattr(same, attr) is not None:
                    setattr(member, attr, getattr(same, attr))
                    member.unavailable.pop(attr, None)
    sp.devices += list(nvme.values())


def finish(rig: Rig) -> None:
    """What storage outputs never show (the filesystem), and the section's provenance."""
    for sp in rig.storage.paths:
        if sp.path == IMPORTED:
            for attr in _NOT_READ:
                sp.missing(attr, "not in the imported outputs")
    rig.provenance["storage"] = "imported"


def add_drive(m: Merger, part: Part) -> None:
    """smartctl's drive as nvme list's are added, and its notes (health, temperature) kept."""
    add_models(m, part)
    m.rig.problems.extend(part.rig.problems)
