"""One command output, parsed: its facts as a partial Rig, and where it was read."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuadvisor.facts import Rig
from gpuadvisor.importers.nccl import NcclRun


@dataclass
class Part:
    """One command output found in a file, parsed."""

    kind: str
    file: str
    line: int
    rig: Rig
    nccl: NcclRun | None = None
    text: str = ""  # the output as read (machines.py looks for nvidia-smi's "Attached GPUs")
    name: str = ""  # what printed it, as the user reads it (the registry's display name)
    notes: list[str] = field(default_factory=list)  # what of its file was not read, with the line numbers

    @property
    def origin(self) -> str:
        return f"{self.file}:{self.line} ({self.name or self.kind})"

    def at(self, *keys: str) -> str:
        """Where a fact came from: the most precise of ``keys`` the parser recorded, else the output's start."""
        for k in keys:
            if k in self.rig.origins:
                return f"{self.rig.origins[k]} ({self.name or self.kind})"
        return self.origin
