"""Where plan outputs are written: one function, so every output goes through the project's atomic writer."""
from __future__ import annotations

import os
import tempfile

from gpuadvisor.errors import InputError


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same directory, fsync, rename); never through a link."""
    if os.path.islink(path):
        raise InputError(f"{path}: is a symbolic link: refusing to write through it (remove it or choose another path)")
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpuadvisor-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise InputError(f"{path}: cannot write ({e.strerror or e})") from None
