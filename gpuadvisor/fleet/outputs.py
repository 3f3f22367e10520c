"""Every file the fleet command writes goes through ``write``: a temporary file in the target's directory,
flushed and fsynced, then renamed over the target; never through a symlink, never over an input."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

from gpuadvisor.errors import InputError


def write(path: str | Path, data: str, *, inputs: list[str] | None = None) -> Path:
    p = Path(path)
    if p.is_symlink():
        raise InputError(f"{p}: is a symbolic link; refusing to write through it (give a plain path)")
    for i in inputs or []:
        ip = Path(i)
        with contextlib.suppress(OSError):
            if p.exists() and ip.exists() and p.resolve() == ip.resolve():
                raise InputError(f"{p}: is an input of this run; refusing to overwrite it (choose another output path)")
            if ip.is_dir() and p.resolve().is_relative_to(ip.resolve()) and p.suffix == ".json":
                raise InputError(f"{p}: inside the scan directory {ip} (it would be read as a scan next time); write it elsewhere")
    parent = p.parent if str(p.parent) else Path(".")
    tmp = parent / f".{p.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.replace(tmp, p)
    except OSError as e:
        raise InputError(f"{p}: cannot write ({e.strerror or e})") from None
    return p
