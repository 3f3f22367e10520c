"""iproute2's ``rdma resource`` (``rdma res``): what the kernel's RDMA resource tracker counts on each device.

``rdma res`` (``rdma resource show``, rdma-resource(8)) prints one line per RDMA device, its index and name and the
count of each kind of object the kernel tracks on it (iproute2 ``rdma/res.c``):

    0: mlx5_0: pd 2 cq 3 qp 1 cm_id 0 mr 0 ctx 0 srq 0

(protection domains, completion queues, queue pairs, RDMA-CM ids, memory regions, user contexts, shared receive
queues; older kernels print fewer kinds). ``rdma res show qp`` prints one line per queue pair (``rdma/res-qp.c``):

    link mlx5_0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]

Neither prints a port's state, rate or link layer: the devices named are read as RDMA devices whose ports are not
shown, and the counts (and the queue pairs' states, per port) as a note. A queue pair's state (RTS, ERR ...) is the
connection's, not the port's.
"""

from __future__ import annotations

import re
from collections import Counter

from gpuadvisor.facts import Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside_log
from gpuadvisor.importers.verbs_devices import device_only

WHAT = "rdma res (iproute2's RDMA resource counts, rdma res show qp)"
KIND = "rdma-res"
_KINDS = ("pd", "cq", "qp", "cm_id", "mr", "ctx", "srq")  # what rdma/res.c counts, in its order
_SUMMARY = re.compile(r"^\s*(\d{1,4}): ([\w.-]{1,64}): ((?:(?:pd|cq|qp|cm_id|mr|ctx|srq) \d{1,12}\s*){2,})$")
_PAIR = re.compile(r"([a-z_]+) (\d+)")
# "link mlx5_0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]" (port "-": not bound to a port yet)
_QP = re.compile(r"^\s*link ([\w.-]{1,64})/(\d{1,3}|-) lqpn (\d+)\b(?:.*?\btype (\S+))?.*?\bstate (\S+)")


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A summary line or a queue pair's row, outside a log and another ``rdma res``."""
    if (current is not None and current.kind == KIND) or not outside_log(current):
        return False
    return bool(_SUMMARY.match(lines[i]) or _QP.match(lines[i]))


def _qp_notes(rows: list[re.Match[str]]) -> list[str]:
    """Each port's queue pairs by state: ``mlx5_0/1: 2 queue pair(s) (RTS 1, ERR 1)``."""
    by_port: dict[str, Counter[str]] = {}
    for m in rows:
        by_port.setdefault(f"{m.group(1)}/{m.group(2)}", Counter())[m.group(5)] += 1
    return [
        f"{port}: {sum(states.values())} queue pair(s) ({', '.join(f'{s} {n}' for s, n in states.items())})"
        for port, states in by_port.items()
    ]


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The devices ``rdma res`` names (their ports not shown), their resource counts and queue pairs as notes."""
    rig = Rig()
    lines = clean_lines(text)
    counts = [(m.group(2), dict(_PAIR.findall(m.group(3)))) for line in lines if (m := _SUMMARY.match(line))]
    qps = [m for line in lines if (m := _QP.match(line))]
    if not counts and not qps:
        raise ImportParseError(source, first_line, f"{WHAT}: none of its lines shown whole")
    names = list(dict.fromkeys([name for name, _ in counts] + [m.group(1) for m in qps]))
    rig.network.rdma_ports = [
        device_only(name, "rdma res counts a device's resources, not its ports", "rdma res does not print it")
        for name in names
    ]
    rig.origins["network.rdma_ports"] = f"{source}:{first_line}"
    at = f"{source}: line {first_line}: rdma res"
    for name, kinds in counts:
        shown = ", ".join(f"{k} {kinds[k]}" for k in _KINDS if k in kinds)
        rig.problems.append(f"{at}: {name} has in use: {shown}")
    rig.problems += [f"{at} show qp: {note}" for note in _qp_notes(qps)]
    return rig
