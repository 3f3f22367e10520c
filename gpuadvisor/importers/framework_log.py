"""What the framework device readers share: one GPU per CUDA number (or bus id) however many lines name it, the
lines read, and the log's other lines listed as not read.

An ML framework's log (llama.cpp, ollama, TensorFlow, PyTorch) names each GPU on a line or two among many others;
the same GPU may be named several times (TensorFlow prints ``Found device 0`` and ``Created TensorFlow device ...
device: 0``). A reader keys the GPU by its CUDA number, else by its bus id, and fills what each line gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import clean_lines, last_line_shown
from gpuadvisor.importers.values import normalize_bus_id

LONGEST = 2000  # a longer line is not read (the patterns stay linear)


@dataclass
class Reading:
    """A framework log being read: its GPUs, the lines read, where the text was cut."""

    source: str
    first: int
    text: str
    rig: Rig = field(default_factory=Rig)
    lines: list[str] = field(default_factory=list)
    read: set[int] = field(default_factory=set)
    cut: int = -1  # the index of a last line the paste cut short (no newline after it), -1 for none
    _by_index: dict[int, Gpu] = field(default_factory=dict)
    _by_bus: dict[str, Gpu] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lines = clean_lines(self.text)
        last = last_line_shown(self.lines)
        self.cut = last if last >= 0 and not self.text.endswith("\n") else -1

    def lineno(self, k: int) -> int:
        return self.first + k

    def shown(self) -> Iterator[tuple[int, str]]:
        """(k, line) of each line a reader reads: none longer than LONGEST, nor the one the paste cut short."""
        return ((k, line) for k, line in enumerate(self.lines) if len(line) <= LONGEST and k != self.cut)

    def software(self, k: int, **values: str) -> None:
        """Software versions line k gives (``driver_version="550.90.12"``), line k their origin and read."""
        for name, value in values.items():
            setattr(self.rig.software, name, value)
            self.rig.origins[f"software.{name}"] = f"{self.source}:{self.lineno(k)}"
        self.read.add(k)

    def gpu(self, k: int, index: int | None = None, bus_id: str | None = None) -> Gpu:
        """The GPU line k names (by CUDA number, else bus id), created at its first mention (line k its origin)."""
        bus = normalize_bus_id(bus_id)
        g = self._by_index.get(index) if index is not None else self._by_bus.get(bus) if bus is not None else None
        if g is None:
            g = Gpu(index=index if index is not None else len(self.rig.gpus))
            self._by_index[g.index] = g
            self.rig.gpus.append(g)
            self.rig.origins[f"gpus[{len(self.rig.gpus) - 1}]"] = f"{self.source}:{self.lineno(k)}"
        if bus is not None and g.bus_id is None:
            g.bus_id = bus
            g.unavailable.pop("bus_id", None)
            self._by_bus.setdefault(bus, g)
        self.read.add(k)
        return g

    def finish(self, what: str, unshown: dict[str, str]) -> Rig:
        """The Rig: refused when no line names a GPU; the other lines listed as not read; ``unshown``: the reason
        each fact the framework does not print is unknown (kept where a line gave it)."""
        if not self.rig.gpus:
            raise ImportParseError(self.source, self.first, f"{what}: no line naming a GPU")
        for g in self.rig.gpus:
            for name, why in unshown.items():
                if getattr(g, name) is None:
                    g.unavailable.setdefault(name, why)
        if self.cut >= 0 and self.cut not in self.read:
            self.read.add(self.cut)
            self.rig.problems.append(
                f"{self.source}: line {self.lineno(self.cut)}: cut short where the paste ends: not shown, not read"
            )
        spans: list[tuple[int, int]] = []
        for k, line in enumerate(self.lines):
            if k in self.read or not line.strip():
                continue
            if spans and spans[-1][1] == k - 1:
                spans[-1] = (spans[-1][0], k)
            else:
                spans.append((k, k))
        if spans:
            shown = ", ".join(
                f"line {self.lineno(a)}" if a == b else f"lines {self.lineno(a)}-{self.lineno(b)}" for a, b in spans[:8]
            )
            more = f" and {len(spans) - 8} more" if len(spans) > 8 else ""
            self.rig.problems.append(f"{self.source}: {shown}{more}: not {what} device lines, not read")
        return self.rig
