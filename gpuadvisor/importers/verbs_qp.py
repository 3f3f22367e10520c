"""A verbs program's own check of its RDMA port and its queue-pair errors: UCCL's expert-parallel transport
(ep/src/rdma.cpp) prints, before it moves a queue pair to RTR, ``Verifying port state:`` then ``  link_layer:
Ethernet (RoCE)`` (or ``InfiniBand``), ``  port_state: ACTIVE`` (or ``NOT ACTIVE``), ``  max_mtu: 5``, ``  active_mtu:
5`` (ibv_mtu's numbers: 5 is 4096 bytes) and ``  lid: 0x0``; when ibv_modify_qp(3) fails, ``Failed to modify QP to
RTR: Connection timed out`` (perror's form: the call's words, then strerror) and ``errno: 110``.

Read: each port shown, its device and number unknown (the program names neither), ACTIVE or not; a queue pair that
could not reach RTR is a note (no finding): with the ports ACTIVE, a timed-out move to RTR is the peer unreachable
over the fabric (a GID index, a route or a switch's configuration), not an adapter or port fault.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import RdmaPort, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "a verbs program's port check and queue-pair errors (UCCL)"
_HEAD = re.compile(r"^\s*Verifying port state:\s*$")
# the lines UCCL prints above it: "RoCE detected (Ethernet)", "Remote LID: 0x0, QPN: 2120, PSN: 0"
_ABOVE = re.compile(r"^\s*(?:RoCE detected \(Ethernet\)|Remote LID: 0x[0-9a-fA-F]+, QPN: \d+, PSN: \d+)\s*$")
_FIELD = re.compile(r"^\s+(link_layer|port_state|max_mtu|active_mtu|lid):\s*(.+?)\s*$")
_RTR = re.compile(r"^\s*Failed to modify QP to (RTR|RTS|INIT)\b:?\s*(.*?)\s*$")
_UNNAMED = "the program's port check names no device or port number"
_LONGEST = 2000


@outside("verbs-qp", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Verifying port state:`` over a ``link_layer:`` or ``port_state:`` line (or the lines UCCL prints above it),
    outside a log."""
    k = i
    while k < min(i + 2, len(lines) - 1) and _ABOVE.match(lines[k]):
        k += 1
    return bool(_HEAD.match(lines[k])) and k + 1 < len(lines) and bool(_FIELD.match(lines[k + 1]))


def _port(fields: dict[str, str]) -> RdmaPort:
    port = RdmaPort(device="")
    port.unavailable["device"] = _UNNAMED
    port.unavailable["port"] = _UNNAMED
    layer = fields.get("link_layer", "")
    port.link_layer = "Ethernet" if layer.startswith("Ethernet") else "InfiniBand" if layer == "InfiniBand" else None
    state = fields.get("port_state")
    port.state = "ACTIVE" if state == "ACTIVE" else None
    if state is not None and port.state is None:
        port.unavailable["state"] = f"the program says '{state}', not which state (DOWN, INIT, ARMED)"
    return port


def parse_verbs_qp(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The ports the program checked, and a note for the queue pairs it could not move to RTR."""
    rig = Rig()
    ports: list[RdmaPort] = []
    fields: dict[str, str] | None = None
    failed: dict[str, int] = {}
    first_failed = 0
    for k, line in enumerate(clean_lines(text)):
        if len(line) > _LONGEST:
            continue
        if _HEAD.match(line):
            fields = {}
            ports.append(_port(fields))
            continue
        if fields is not None and (f := _FIELD.match(line)):
            fields[f.group(1)] = f.group(2)
            ports[-1] = _port(fields)
            continue
        fields = None
        if r := _RTR.match(line):
            said = f"{r.group(1)}: {r.group(2)}" if r.group(2) else r.group(1)
            said = next((x for x in failed if x.startswith(said)), said)  # the paste's last line may be cut
            failed[said] = failed.get(said, 0) + 1
            first_failed = first_failed or first_line + k
    if not ports and not failed:
        raise ImportParseError(source, first_line, f"{WHAT}: no port check, no queue-pair error")
    if ports:
        rig.network.rdma_ports = ports
        rig.origins["network.rdma_ports"] = f"{source}:{first_line}"
    if failed:
        up = " while every port shown is ACTIVE" if ports and all(p.state == "ACTIVE" for p in ports) else ""
        told = "; ".join(f"to {said} (x{n})" for said, n in failed.items())
        rig.problems.append(
            f"{source}: line {first_failed}: queue pairs could not be moved {told}{up}: the peer is not reachable "
            "over the fabric (with RoCE: the GID index, the route or the switch's configuration of these nodes); a "
            "configuration fix, no adapter or port fault is shown"
        )
    return rig


# UCX's log of an InfiniBand completion with an error (uct/ib/mlx5/ib_mlx5_log.c, uct_ib_mlx5_completion_with_err):
# "[host:pid:0:tid] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd
# 0/0)" then the queue pair's "DCI QP 0xa9f wqe[0]: SEND s-e [rqpn 0xa66 rlid 703] ..."; UCX 1.5: "FATAL: Error on
# mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry count exceeded (synd 0x15 vend 0x81) opcode SEND"
UCX_WHAT = "UCX's InfiniBand completion errors (ib_mlx5_log)"
_UCX_LINE = re.compile(r"^\s*\[[^\]\s:]+:\s*\d+\s*:\d+:\d+\]\s+ib_mlx5_log\.c:\d+\s+(.*?)\s*$")
_UCX_ERR = re.compile(
    r"^(?P<err>[A-Z][\w ]+?) on (?P<dev>\w+):(?P<port>\d+)/(?P<layer>IB|RoCE)\b"
    r"|^(?:FATAL: )?Error on (?P<dev1>\w+):(?P<port1>\d+) QP 0x[0-9a-fA-F]+ wqe\[\d+\]: (?P<err1>[A-Z][\w ]+?) \(synd"
)
_RLID = re.compile(r"\brlid (\d+)\]")


@outside("ucx-log", log=True)
def starts_ucx(lines: list[str], i: int, current: Section | None) -> bool:
    """A UCX ib_mlx5_log line naming an error on a device's port, outside a log (or after one of its own lines)."""
    m = _UCX_LINE.match(lines[i])
    return m is not None and _UCX_ERR.match(m.group(1)) is not None


def parse_ucx(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """A note for the completion errors UCX logged, by error and port, with the remote LIDs its queue pairs sent to
    (a transport retry count exceeded: the peer stopped acknowledging; the port named is the local end)."""
    rig = Rig()
    errors: dict[str, int] = {}
    lids: dict[str, None] = {}
    first = 0
    for k, line in enumerate(clean_lines(text)):
        m = _UCX_LINE.match(line[:_LONGEST])
        if m is None:
            continue
        if lid := _RLID.search(m.group(1)):
            lids[lid.group(1)] = None
        if e := _UCX_ERR.match(m.group(1)):
            err, dev, port = e.group("err", "dev", "port") if e.group("err") else e.group("err1", "dev1", "port1")
            said = f"{err} on {dev} port {port}"
            errors[said] = errors.get(said, 0) + 1
            first = first or first_line + k
    if not errors:
        raise ImportParseError(source, first_line, f"{UCX_WHAT}: no error on a port")
    told = "; ".join(f"{said} (x{n})" for said, n in errors.items())
    to = f" (remote LID {', '.join(lids)})" if lids else ""
    rig.problems.append(
        f"{source}: line {first}: UCX: {told}: the peer{to} stopped acknowledging this port's sends: an RDMA path "
        "fault between the two ends (the peer's port and cable, the switches between, or the transport's timeout "
        "under congestion); check the peer node's port (ibstat, perfquery) and the links on the path; the local "
        "port is named, no fault of its adapter is shown"
    )
    return rig
