"""Slurm's ``scontrol show node``: the scheduler's own verdict on a node, as another checker's.

Each node's record starts ``NodeName=NAME Arch=... CoresPerSocket=...`` and goes on in indented ``Key=Value`` lines
(scontrol(1)); ``State=`` is the node's base state with its flags joined by ``+`` (``IDLE+DRAIN``,
``DOWN+NOT_RESPONDING``, ``IDLE+DRAIN+INVALID_REG``) and ``Reason=`` why it was taken out of service, with who and
when (``Reason=gres/gpu count reported lower than configured (0 < 1) [slurm@2024-12-19T11:03:34]``: slurmctld's own
words when a registering slurmd reports fewer GRES than slurm.conf configures, Slurm's gres.c). A node drained, down,
failed or not responding takes no job: that is read as the checker's warning (the scheduler's reason is about the
node's configuration or its daemon as often as about its hardware); a node in service adds no finding.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import HealthCheck, Rig
from gpuadvisor.importers.section import Section

TOOL = "Slurm"
_NODE = re.compile(r"^\W*NodeName=(\S+)\s+(?:Arch|CoresPerSocket|CPUAlloc)=")
_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_REASON = re.compile(r"^\s*Reason=(.+?)\s*$")
# the flags and base states that take a node out of service (scontrol(1), NODE STATE CODES)
_OUT = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "NOT_RESPONDING", "INVALID_REG", "INVALID"}


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``NodeName=NAME Arch=...``: a node's record of ``scontrol show node`` (several nodes' records are one)."""
    return bool(_NODE.match(lines[i])) and (current is None or current.kind != "scontrol-node")


def parse(text: str, source: str, first_line: int = 1) -> Rig:
    """Each node's State (and Reason) as the scheduler's verdict: a warning for a node out of service."""
    rig = Rig()
    checks: list[HealthCheck] = []
    nodes: list[dict[str, str | int]] = []
    for k, line in enumerate(text.splitlines()):
        if m := _NODE.match(line):
            nodes.append({"name": m.group(1), "line": first_line + k})
        elif not nodes:
            continue
        if s := _STATE.search(line):
            nodes[-1]["state"], nodes[-1]["at"] = s.group(1), first_line + k
        elif r := _REASON.match(line):
            nodes[-1]["reason"] = r.group(1)
    for node in nodes:
        state = str(node.get("state", ""))
        if not {w.rstrip("*~#!%$@^-") for w in state.split("+")} & _OUT:
            continue
        reason = f"; Reason={node['reason']}" if "reason" in node else ""
        checks.append(HealthCheck(TOOL, f"node {node['name']}", "warn", f"State={state}{reason}", [], None,
                                  f"{source}:{node.get('at', node['line'])}"))  # fmt: skip
    rig.node.health_checks = checks
    return rig
