"""The IMEX daemon's own log (nvidia-imex: /var/log/nvidia-imex.log, or stderr in a ComputeDomain's daemon pod).

IMEX (Import/Export) shares GPU memory across the nodes of a multi-node NVLink domain (GB200 NVL72); its log is
written in the fabric manager's form (``[Mar 21 2025 20:45:38] [INFO] [tid 39] ...``) and opens ``IMEX Log
initializing at: ...`` and ``IMEX version V is running with the following configuration options``, then its
options. A daemon that cannot start logs why at ``[ERROR]`` (``No matching network interface found for any IP
addresses in the node configuration``: none of nodes_config.cfg's addresses is this node's) and exits: a log that
ends at such a line is a daemon that did not start, the domain's memory sharing down until its configuration is
fixed. Warnings about its own log file (``failed to open IMEX log file``, ``using stderr for IMEX logging``) are
not failures. It says nothing of the fabric manager.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Fabric
from gpuadvisor.facts.beyond import IMEX_FIELDS

_IMEX = re.compile(r"IMEX Log initializing at:|\bIMEX version \S+ is running\b|\bfor IMEX logging\b|\bIMEX log file\b")
_VERSION = re.compile(r"\bIMEX version (\S+?) is running")
_LINE = re.compile(r"^\s*\[[A-Z][a-z]{2} \d{1,2} \d{4} [\d:]+\] \[(INFO|WARNING|ERROR|FATAL)\] \[tid \d+\] (.*?)\s*$")


def is_imex(text: str) -> bool:
    """Whether ``text`` is the IMEX daemon's log (its own opening or option lines)."""
    return bool(_IMEX.search(text))


def read_imex(text: str) -> Fabric:
    """The IMEX daemon's state: failed when its log ends at an error (it exits), started otherwise."""
    fab = Fabric()
    fab.missing("manager_state", "an IMEX daemon's log: it says nothing of the fabric manager")
    for name in IMEX_FIELDS:
        fab.unavailable.pop(name, None)
    version = _VERSION.search(text)
    said = f"IMEX {version.group(1)}" if version else "IMEX"
    levels = [m.groups() for x in text.splitlines() if (m := _LINE.match(x))]
    if levels and levels[-1][0] in ("ERROR", "FATAL"):
        fab.imex_state = "failed"
        fab.imex_detail = f"{said}: [{levels[-1][0]}] {levels[-1][1]}"[:300]
    else:
        fab.imex_state = "started"
        fab.imex_detail = f"{said} started" + ("" if levels else " (no line of its own after the opening)")
    return fab
