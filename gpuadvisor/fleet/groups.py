"""Nodes grouped by what their hardware *is*, and what a node of the group should show.

The group key is what does not change when a part fails: the GPU model, the host platform (CPU model and
socket count), the GPU interconnect design (NVSwitch, NVLink bridges or none) and the PCIe generation and width
the GPUs are built for. What a node *shows* (GPUs enumerated, NVLinks active per GPU, NICs) is then compared
with its group's design: the count most of the group's nodes have, or ``--expect-gpus``. A node that shows fewer
GPUs, NVLinks or NICs than that has lost hardware and fails, naming what is missing. A count that a quarter or
more of a group's nodes share (two nodes at least) is a design of its own (an 8-GPU and a 4-GPU system on the
same platform), not a loss.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from gpuadvisor.facts import Rig
from gpuadvisor.fleet.model import FleetFinding, Group, Node, about
from gpuadvisor.text import plural

DESIGN_SHARE = 0.25  # a count held by this share of a group's nodes (and 2 nodes) is a design, not a loss


def shape(rig: Rig) -> tuple[tuple[Any, ...], str] | None:
    gpus = rig.gpus
    if not gpus:
        return None
    names = Counter(g.name or "unknown GPU" for g in gpus)
    model = names.most_common(1)[0][0] if len(names) == 1 else " + ".join(sorted(names))
    switch = any(n.remote_device_type == "switch" for g in gpus for n in g.nvlinks)
    links = any(g.nvlinks for g in gpus)
    fabric = ("NVSwitch" if switch else "NVLink") if links else "no NVLink"
    pcie = sorted({(g.pcie.gpu_max_gen or g.pcie.max_gen, g.pcie.max_width) for g in gpus}, key=str)
    cpu, sockets = rig.host.cpu_model, rig.host.sockets
    key = (sys.intern(model), fabric, tuple(pcie), cpu and sys.intern(cpu), sockets)
    pcie_text = ", ".join(f"PCIe {g or '?'} x{w or '?'}" for g, w in pcie) or "PCIe unknown"
    cpu_text = f"{sockets or '?'}x {cpu}" if cpu else "CPU unknown"
    return key, sys.intern(f"{model} · {fabric} · {pcie_text} · {cpu_text}")  # one string per shape, not per node


def counts(rig: Rig) -> tuple[int, list[int], list[int], int]:
    """(GPUs shown, NVLinks listed per GPU, NVLinks active per GPU, NICs shown) of a scan with GPUs."""
    listed = [len(g.nvlinks) for g in rig.gpus]
    active = [len(g.active_nvlinks()) for g in rig.gpus]
    return len(rig.gpus), listed, active, len(rig.topology.nics)


def rdma_ports(rig: Rig) -> dict[str, float | None]:
    """{"mlx5_0/1": rate Gb/s or None when down} for every RDMA port the scan read with its number
    (network.rdma_ports); a port of unknown number is in :func:`unnumbered_ports`."""
    return {
        sys.intern(p.named()): float(p.rate_gbps) if p.state == "ACTIVE" and p.rate_gbps is not None else None
        for p in rig.network.rdma_ports or []
        if p.port is not None
    }


def unnumbered_ports(rig: Rig) -> list[str]:
    """The adapters the scan lists without their port numbers (ibv_devices, lshca, rdma res): their ports cannot
    be compared with the same ports of another node."""
    return sorted({p.device for p in rig.network.rdma_ports or [] if p.port is None})


def unjudged_ports(group: Group, nodes: dict[str, Node]) -> list[str]:
    """A note of the group's nodes whose RDMA ports the slow-port comparison could not judge (none: no note)."""
    which = {name: got for name in group.nodes if (got := (nodes[name].hw or {}).get("rdma_unnumbered"))}
    if not which:
        return []
    adapters = sorted({a for got in which.values() for a in got})
    shown = ", ".join(sorted(which)[:5]) + (f" and {len(which) - 5} more" if len(which) > 5 else "")
    return [
        f"group {group.id}: {plural(len(which), 'node')} ({shown}) list RDMA adapters without their port numbers "
        f"({', '.join(adapters[:8])}{', ...' if len(adapters) > 8 else ''}): those ports are not compared with the "
        "same ports of the group's nodes"
    ]


def _slow_ports(group: Group, members: list[Node]) -> list[FleetFinding]:
    """A node whose RDMA port trained at a lower rate than the same port on its group's nodes (e.g. 200 Gb/s where
    its siblings run 400): the multi-node collectives run at the slowest port's rate. A port down is the node's
    own finding (GA803); here only ports that are up are compared, by name, against the group's usual rate."""
    counts: dict[str, Counter[float]] = {}  # one pass over the group: each port's rates
    for n in members:
        for name, rate in (n.hw.get("rdma") or {}).items():
            if rate is not None:
                counts.setdefault(name, Counter())[rate] += 1
    usual_of = {name: c.most_common(1)[0][0] for name, c in counts.items() if c.total() >= 3}
    out: list[FleetFinding] = []
    for n in members:  # then O(ports) per node
        slow = {}
        for name, rate in (n.hw.get("rdma") or {}).items():
            usual = usual_of.get(name)
            if rate is not None and usual is not None and rate < usual:
                slow[name] = (rate, usual)
        if slow:
            text = ", ".join(f"{k} at {r:g} Gb/s" for k, (r, _) in sorted(slow.items()))
            usual_rate = max(u for _, u in slow.values())
            why = (
                f"RDMA {plural(len(slow), 'port')} below the rate the same ports run on its group's nodes "
                f"({usual_rate:g} Gb/s): {text}; reseat or replace the cable or transceiver, check the switch port "
                "(ibstat, ibportstate)"
            )
            observed = {k: r for k, (r, _) in slow.items()}
            out.append(
                about(n, "slow-port", "warn", "RDMA ports", why, group=group.id, observed=observed, expected=usual_rate)
            )
    return out


def _design(values: list[int], total: int) -> list[int]:
    """The counts of a group that are designs (most common first)."""
    c = Counter(values)
    top = c.most_common()
    return [v for v, k in top if v == top[0][0] or (k >= 2 and k >= DESIGN_SHARE * total)]


def group_nodes(nodes: dict[str, Node]) -> list[Group]:
    """Groups by what the hardware is, largest first (ids g1, g2, ...); sets each node's ``group``."""
    by: dict[tuple[Any, ...], list[str]] = {}
    labels: dict[tuple[Any, ...], str] = {}
    for n in nodes.values():
        if n.shape is None:
            continue
        designs = by.setdefault(n.shape, [])
        designs.append(n.name)
        labels[n.shape] = n.shape_label or ""
    split: dict[tuple[Any, ...], list[str]] = {}
    for k, names in by.items():
        gpu_designs = _design([nodes[n].gpus for n in names], len(names))
        for name in names:
            shown = nodes[name].gpus
            fits = [d for d in gpu_designs if d >= shown]
            design = min(fits) if fits else shown
            split.setdefault((*k, design), []).append(name)
            labels[(*k, design)] = f"{design}x {labels[k]}"
    order = sorted(split, key=lambda k: (-len(split[k]), labels[k]))
    groups = []
    for i, k in enumerate(order, 1):
        g = Group(id=f"g{i}", label=labels[k], shape=k, nodes=sorted(split[k]))
        g.judged = [name for name in g.nodes if nodes[name].judged]
        for name in g.nodes:
            nodes[name].group = g.id
        groups.append(g)
    return groups


def _lost(n: Node, group: Group, what: str, observed: Any, expected: int, message: str) -> FleetFinding:
    return about(n, "lost", "fail", what, message, group=group.id, observed=observed, expected=expected)


def find_lost(group: Group, nodes: dict[str, Node], expect_gpus: int | None = None) -> list[FleetFinding]:
    """Fail findings for nodes that show fewer GPUs, NVLinks or NICs than their group's design."""
    members = [nodes[n] for n in group.nodes if nodes[n].status == "ok" and nodes[n].hw]
    if not members:
        return []
    total = len(members)
    gpus = expect_gpus or group.shape[-1]
    links = _design([max(n.hw["listed"], default=0) for n in members], total)[0]
    nics = _design([n.hw["nics"] for n in members], total)
    out: list[FleetFinding] = []
    for n in members:
        if n.gpus < gpus:
            why = "--expect-gpus" if expect_gpus else "its group's design"
            text = (
                f"shows {n.gpus} of the {gpus} GPUs of {why}: {plural(gpus - n.gpus, 'GPU')} lost (fallen off the "
                "bus, or failed to initialise); check nvidia-smi, and dmesg for Xid 79"
            )
            out.append(_lost(n, group, "GPUs", n.gpus, gpus, text))
        short = [(i, a) for i, a in enumerate(n.hw["active"]) if a < links]
        if links and short:
            idx = n.hw["index"]
            where = ", ".join(f"GPU {idx[i]} {a} of {links}" for i, a in short[:8])
            text = (
                f"NVLinks active: {where} (its group's GPUs have {links}): "
                f"{plural(sum(links - a for _, a in short), 'NVLink')} down; check nvidia-smi nvlink --status"
            )
            out.append(_lost(n, group, "NVLinks", {f"GPU {idx[i]}": a for i, a in short}, links, text))
        if n.hw["nics"] not in nics and n.hw["nics"] < nics[0]:
            text = (
                f"shows {plural(n.hw['nics'], 'NIC')} where its group's nodes show {nics[0]}: "
                f"{nics[0] - n.hw['nics']} lost; check the NIC (ibstat, ip link)"
            )
            out.append(_lost(n, group, "NICs", n.hw["nics"], nics[0], text))
    return out + _slow_ports(group, members)
