"""Nodes of the same hardware shape: GPU model and count, NVLink/NVSwitch design, PCIe generation and width
the GPUs are built for, and the number of NICs. What a node is *designed* to have defines its group; what it
shows now (links trained down, NVLinks inactive, versions) is compared inside the group (``drift``), so a node
with one link down stays beside its siblings and is named, instead of forming a group of its own."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuadvisor.fleet.model import Group, Node


def shape(scan: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    gpus = scan.get("gpus")
    if not isinstance(gpus, list) or not gpus or not all(isinstance(g, dict) for g in gpus):
        return None
    names = Counter(str(g.get("name") or "unknown GPU") for g in gpus)
    links = max((len(g.get("nvlinks") or []) for g in gpus), default=0)
    switch = any(
        isinstance(n, dict) and n.get("remote_device_type") == "switch" for g in gpus for n in g.get("nvlinks") or []
    )
    fabric = ("NVSwitch" if switch else "NVLink") if links else "no NVLink"
    pcie = sorted(
        {
            (p.get("gpu_max_gen") or p.get("max_gen"), p.get("max_width"))
            for g in gpus
            if isinstance(p := g.get("pcie"), dict)
        },
        key=str,
    )
    topo = scan.get("topology") if isinstance(scan.get("topology"), dict) else {}
    nics = len(topo.get("nics") or [])
    key = (tuple(sorted(names.items())), fabric, links, tuple(pcie), nics)
    gpu_text = " + ".join(f"{c}x {n}" for n, c in sorted(names.items()))
    link_text = f"{fabric} ({links} NVLinks/GPU)" if links else fabric
    pcie_text = ", ".join(f"PCIe {g or '?'} x{w or '?'}" for g, w in pcie) or "PCIe unknown"
    return key, f"{gpu_text} · {link_text} · {pcie_text} · {nics} NIC{'s' if nics != 1 else ''}"


def group_nodes(nodes: dict[str, Node]) -> list[Group]:
    """Groups by shape, largest first (ids g1, g2, ...); sets each node's ``group``."""
    by: dict[tuple[Any, ...], list[str]] = {}
    labels: dict[tuple[Any, ...], str] = {}
    for n in nodes.values():
        if n.shape is None:
            continue
        by.setdefault(n.shape, []).append(n.name)
        labels[n.shape] = n.shape_label or ""
    order = sorted(by, key=lambda k: (-len(by[k]), labels[k]))
    groups = []
    for i, k in enumerate(order, 1):
        g = Group(id=f"g{i}", label=labels[k], shape=k, nodes=sorted(by[k]))
        g.judged = [n for n in g.nodes if nodes[n].judged]
        for n in g.nodes:
            nodes[n].group = g.id
        groups.append(g)
    return groups
