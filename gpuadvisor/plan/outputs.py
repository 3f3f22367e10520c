"""Where plan outputs are written: one function, so every output goes through the project's atomic writer
(gpuadvisor.output.write_atomic: temp file in the same directory, fsync, rename; never through a link)."""

from __future__ import annotations


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically; an OutputError (one line, exit 2) on failure, the old file kept."""
    from gpuadvisor.output import write_atomic

    write_atomic(path, text, what="plan")
