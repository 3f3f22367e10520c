"""DCGM's host engine log (``/var/log/nv-hostengine.log``, ``nv-hostengine -f FILE``), one line per message:
``2024-04-02 12:54:06.828 ERROR [1264985:1264994] [[NvSwitch]] Not attached to NvSwitches. Aborting
[/workspaces/.../DcgmNvSwitchManager.cpp:967] [DcgmNs::DcgmNvSwitchManager::ReadNvSwitchStatusAllSwitches]``: the
time, the level, ``[pid:tid]``, the module in double brackets (a module's message), the message, the source line and
the function. The time may be gone (a paste's log collector or quote took it off). The diagnostic's own debug log
(nvvs, ``nv-hostengine``'s sibling: ``... DEBUG [pid:tid] Fabric manager successfully started for GPU 6
[/builds/dcgm/dcgm/nvvs/src/Software.cpp:1003] ...``) is written the same way.

Its ERROR and FATAL lines are read as events of the host engine, with their module; lower levels are read past. What
they say is judged where it has a meaning (the NvSwitch module's "Not attached to NvSwitches": DCGM cannot reach the
NVSwitches through NSCQ, DCGM's modules/nvswitch, ``ReadNvSwitchStatusAllSwitches``), never as a fabric fault.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent, KernelLog, Rig
from gpuadvisor.importers.section import Section, outside

LEVELS = ("VERBOSE", "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "FATAL")
LINE = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?\s+)?(?P<level>" + "|".join(LEVELS) + r")\s+\[\d+:\d+\]\s+"
    r"(?:\[\[(?P<module>\w{1,40})\]\]\s+)?(?P<message>.{0,2000}?)"
    r"(?P<source>\s+\[[^\]\s]{1,300}\.(?:cpp|h|hpp|c):\d+\](?:\s+\[[^\]]{0,300}\])?)?\s*$"
)
KIND = "dcgm-error"


def _line(text: str) -> re.Match[str] | None:
    """A host engine line: its module or its source line is named (a level and ``[pid:tid]`` alone could be any
    program's)."""
    m = LINE.match(text)
    return m if m is not None and (m.group("module") or m.group("source")) else None


@outside("nv-hostengine", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A host engine log line, outside a kernel log and another host engine log."""
    return _line(lines[i]) is not None


def parse(text: str, source: str, first: int) -> Rig:
    """The log's ERROR and FATAL lines as events (``text``: the module in brackets, then the message)."""
    rig = Rig()
    lines = text.splitlines()
    events = []
    for n, line in enumerate(lines):
        m = _line(line)
        if m is None or m.group("level") not in ("ERROR", "FATAL"):
            continue
        module = f"[[{m.group('module')}]] " if m.group("module") else ""
        events.append(KernelEvent(kind=KIND, text=module + m.group("message").strip(), line=first + n))
    rig.kernel = KernelLog(source="imported", lines_read=len(lines), events=events)
    rig.kernel.unavailable["uptime_s"] = "a pasted log does not say how long the host had been up"
    rig.origins["kernel.events"] = f"{source}:{first}"
    return rig
