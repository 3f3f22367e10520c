"""A plain ``nvidia-smi`` table whose line breaks were lost: the whole table on one line, runs of spaces squeezed
to one (``echo $(nvidia-smi)`` in a shell, a web page or a chat that joined the lines: ``+-----+ | NVIDIA-SMI
535.129.03 Driver Version: ... | |-----+-----+-----+ | GPU Name Persistence-M| Bus-Id Disp.A | ... |``).

Its frame still tells where each line was: a rule (``+---+---+``, ``|===+===|``) is a line of its own and gives
the number of cells of the lines below it (its ``+``/``|`` marks less one), so a line ends at the bar that closes
its last cell, empty cells included (``| | | N/A |``). Text before the first rule (``nvidia-smi``'s date) is a line
of its own.
"""

from __future__ import annotations

import re

# a table rule glued into the line: "+----+", "|-----+-----+-----|", "|=====+=====|"
_RULE = r"[+|][-=]{3,}(?:[+|][-=]{3,})*[+|]"
_TOKEN = re.compile(rf"({_RULE})|(\|)|([^|]+)")
_BANNER = re.compile(r"\|\s*NVIDIA-SMI\s+\d[^|]{0,200}\|")
_RULE_END, _RULE_START = re.compile(r"[+|][-=]{3,}[+|]\s*$"), re.compile(rf"\s*{_RULE}")


def flattened(line: str) -> bool:
    """A line holding an nvidia-smi table whose line breaks were lost: its banner next to a rule (looked for only
    around the banner, so a long line costs no more than its length)."""
    if len(line) <= 150 or "NVIDIA-SMI" not in line:
        return False
    for m in _BANNER.finditer(line):
        if _RULE_END.search(line[max(0, m.start() - 12) : m.start()]) or _RULE_START.match(line, m.end()):
            return True
    return False


def unflattened(line: str) -> list[str]:
    """The table's lines, split at its frame (see the module's docstring)."""
    out: list[str] = []
    row, bars, cells = "", 0, 1
    for m in _TOKEN.finditer(line):
        rule, bar, text = m.groups()
        if rule is not None:
            if row.strip():
                out.append(row.strip())
            out.append(rule)
            row, bars, cells = "", 0, len(re.findall(r"[+|]", rule)) - 1
        elif bar is not None:
            row, bars = row + "|", bars + 1
            if bars == cells + 1:
                out.append(row.strip())
                row, bars = "", 0
        elif bars:
            row += text
        elif text.strip():  # text outside the frame (the date above the table)
            out.append(text.strip())
    if row.strip():
        out.append(row.strip())
    return out
