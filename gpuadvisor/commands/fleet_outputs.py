"""Every file the fleet command writes goes through the project's one atomic writer (gpuadvisor.output): checked
against the inputs before any work (never over a scan at any depth of a scans directory, never inside a scans
directory where the next run would read it as a node's scan, never over the nodes file or the policy, never
through a link), then written to a temporary file in the target's directory and renamed."""

from __future__ import annotations

import os
from pathlib import Path

from gpuadvisor.errors import OutputError
from gpuadvisor.output import plan_outputs, write_atomic


def check(outputs: dict[str, str | None], inputs: list[str], files: list[Path] | None = None) -> None:
    """Refuse bad output paths before the scans are read (one line, exit 2). ``files``: every file the run will
    read (the scans below the directories, recursively)."""
    dirs = [os.path.realpath(p) for p in inputs if os.path.isdir(p)]
    for opt, out in outputs.items():
        if not out or out == "-":
            continue
        real = os.path.join(os.path.realpath(os.path.dirname(out) or "."), os.path.basename(out))
        for d in dirs:
            if real.endswith(".json") and (real + os.sep).startswith(d + os.sep):
                raise OutputError(
                    f"{out}: cannot write the output of {opt} inside the scans directory {d}: the next "
                    "fleet run would read it as a node's scan (write it beside the directory)"
                )
    plan_outputs(outputs, {"SCANS": [*inputs, *(str(f) for f in files or [])]})


def write(path: str | Path, data: str, *, what: str = "fleet report") -> Path:
    return write_atomic(path, data, what=what)
