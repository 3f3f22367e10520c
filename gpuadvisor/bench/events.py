"""The event stream between a benchmark worker and its supervisor: one JSON object per line, in a file.

A worker appends an event as soon as it has it (``begin`` of a measurement, each sweep ``row``, its ``end``),
flushing every line, so whatever was measured before a worker hangs or is killed is on disk for the
supervisor to keep. Only rank 0 of a collective job writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class EventWriter:
    def __init__(self, path: str | Path | None) -> None:
        self._f = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 - lives as long as the worker

    def emit(self, ev: str, **fields: Any) -> None:
        if self._f is None:
            return
        self._f.write(json.dumps({"ev": ev, **fields}) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class EventReader:
    """Reads the complete lines appended to an event file since the last call."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = b""

    def read_new(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next read
        out = []
        for line in lines:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line torn by a kill mid-write: skip it
        return out
