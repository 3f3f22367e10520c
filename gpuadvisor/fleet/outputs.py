"""Every file the fleet command writes goes through the project's one atomic writer (gpuadvisor.output): checked
against the inputs before any work (never over a scan, never inside a scan directory where it would be read as a
scan next time, never through a link), then written to a temporary file in the target's directory and renamed."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.output import plan_outputs, write_atomic


def check(outputs: dict[str, str | None], inputs: list[str]) -> None:
    """Refuse bad output paths before the scans are read (one line, exit 2)."""
    plan_outputs(outputs, {"SCANS": inputs})


def write(path: str | Path, data: str, *, what: str = "fleet report") -> Path:
    return write_atomic(path, data, what=what)
