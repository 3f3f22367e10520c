"""A machine on offer, from the outputs its seller sent: a directory that may also hold files that are not
this machine's outputs (a photo, a note, another machine's nvidia-smi). Those are skipped and said, never the
reason the whole offer fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.text import plural


def import_offer(directory: Path) -> tuple[Any, list[str]]:
    """The offered machine's facts and what was skipped: the whole directory when it imports as one machine;
    else each file on its own, those that fail skipped, and of several machines the one most files show."""
    from gpuadvisor.importers import import_dir
    from gpuadvisor.importers.merge import import_files, import_machines

    try:
        return import_dir(directory), []
    except InputError as whole:
        if not directory.is_dir():
            raise
        first_error = str(whole)
    skipped: list[str] = []
    good: list[Path] = []
    for f in sorted(directory.iterdir()):
        if f.name.startswith(".") or not f.is_file() or f.is_symlink():
            continue
        try:
            import_files([f])
        except InputError as e:
            why = str(e).split(": ")[-1].split(" (")[0]
            skipped.append(f"{f.name}: skipped ({why[:100]})")
            continue
        good.append(f)
    if not good:
        raise InputError(first_error)
    machines = import_machines(good)
    rig = max(machines, key=lambda r: (len(r.source.files), len(r.gpus)))
    for other in machines:
        if other is not rig:
            names = ", ".join(Path(x).name for x in other.source.files)
            skipped.append(f"{names}: skipped (another machine's output: {plural(len(other.gpus), 'GPU')})")
    return rig, skipped
