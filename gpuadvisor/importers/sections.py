"""Cut a text into the command outputs it holds, each named by what printed it.

People paste several outputs into one file (``nvidia-smi; nvidia-smi -q; nvidia-smi topo -m``), with shell
prompts between them. Each output is recognised by its own first line, never by the file name: the detectors
of :mod:`gpuadvisor.importers.registry`'s rows are tried on each line, in the rows' order (the table of what
each one starts with is in the README, made from the rows).
"""

from __future__ import annotations

from gpuadvisor.importers.registry import BY_KIND, FORMATS
from gpuadvisor.importers.section import Section, clean_lines


def _start_kind(lines: list[str], i: int, current: Section | None) -> str | None:
    if current is not None and current.kind in BY_KIND and BY_KIND[current.kind].ends is not None:
        return None  # an output that runs to its closing line (XML, JSON)
    return next((f.kind for f in FORMATS if f.starts is not None and f.starts(lines, i, current)), None)


def split_sections(text: str) -> list[Section]:
    """The outputs in ``text``, in order. Lines before the first one (prompts, notes) are dropped."""
    lines = clean_lines(text)
    sections: list[Section] = []
    current: Section | None = None
    for i, line in enumerate(lines):
        kind = _start_kind(lines, i, current)
        if kind is not None:
            current = Section(kind=kind, start=i + 1, context=lines[max(0, i - 8) : i])
            sections.append(current)
        if current is not None:
            current.lines.append(line)
            ends = BY_KIND[current.kind].ends if current.kind in BY_KIND else None
            if ends is not None and ends(line):
                current = Section(kind="_after", start=i + 2)  # swallow nothing; detection resumes
    if sections and current is sections[-1] and lines and lines[-1].strip() and not text.endswith(("\n", "\r")):
        sections[-1].cut = True
    for s in sections:
        settle = BY_KIND[s.kind].settle
        if settle is not None:
            s.kind = settle(s)
    return sections
