"""The one error the importers raise: a file they cannot read, with the line and the reason."""

from __future__ import annotations

from gpuadvisor.errors import InputError


class ImportParseError(InputError):
    """Input an importer cannot read. The message is one line: ``FILE: line N: why; what to do``."""

    def __init__(self, source: str, line: int | None, why: str) -> None:
        self.source = source
        self.line = line
        self.why = " ".join(why.split())  # always one line
        where = f"{source}: line {line}" if line else source
        super().__init__(f"{where}: {self.why}")
