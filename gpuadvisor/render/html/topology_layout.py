"""Lay out the topology diagram: CPUs/NUMA nodes, root ports, PCIe switches, GPUs, NICs and NVLink.

Pure geometry, no markup: ``layout(rig)`` returns a ``Diagram`` of boxes and edges with coordinates, and the
HTML template draws it (so every string from the scan passes through jinja's autoescape).

Where each part comes from (nothing here is invented; what is inferred says so in ``Diagram.notes``):

- the tree: each GPU's ``gpu.pcie.path`` (GPU first, root port last). A PCIe switch is an ``upstream-port``
  hop together with the ``downstream-port`` hops below it; switches and root ports shared by several GPUs
  are merged by bus id. A GPU without a path hangs straight off its CPU, labelled with NVML's link figures.
- the CPUs: ``rig.host.numa_nodes`` and each GPU's ``numa_node``;
- PCIe edge labels: current generation and width of the link (the child's register, completed by the parent
  port's); a link whose current width is below the maximum both ends support is ``fail``, a generation below
  the maximum is ``warn`` (an idle GPU drops its generation to save power; the rules decide whether that is a
  fault), both judged by ``gpuadvisor.physics.links.hop_is_downgraded``;
- NVLink: links whose remote end is a switch are drawn as one NVSwitch fabric box; GPU-to-GPU links as arcs
  labelled with the link count from the ``topo -m`` matrix (``NV#``) or from the per-link remote ends;
- NICs: ``rig.topology.nics``, placed beside the GPU they are closest to by ``nic_matrix`` (PIX: same switch,
  PXB: same switch tree, PHB: same root port, NODE: same CPU), with a dashed edge labelled by that code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import Gpu, PcieHop, Rig
from gpuadvisor.physics.links import hop_is_downgraded, link_facts
from gpuadvisor.render.html.topology_tree import (
    SIZES,
    Box,
    Node,
    build_tree,
    gpus_below,
    place_nics,
    sort_tree,
    tree_depth,
)
from gpuadvisor.text import pcie_link

# Spacing (SVG user units ~ CSS px).
H_GAP = 12.0  # between sibling subtrees
TOP_GAP = 36.0  # between CPU subtrees
ROW_GAP = 52.0  # vertical room for the edge labels between rows
MARGIN = 16.0
FABRIC_H = 40.0
LANE_PITCH = 22.0


@dataclass
class Edge:
    kind: str  # pcie | nvlink | nvswitch | nic | cpu
    src: str
    dst: str
    d: str = ""  # SVG path data
    label: list[str] = field(default_factory=list)
    lx: float = 0.0
    ly: float = 0.0
    css: str = ""
    tooltip: str = ""
    gpus: list[int] = field(default_factory=list)


@dataclass
class Diagram:
    width: float
    height: float
    boxes: list[Box]
    edges: list[Edge]
    notes: list[str] = field(default_factory=list)

    def box(self, box_id: str) -> Box:
        for b in self.boxes:
            if b.id == box_id:
                return b
        raise KeyError(box_id)


_link_facts = link_facts  # one definition of a link as both ends see it: gpuadvisor.physics.links


def describe_link(link: PcieHop) -> tuple[list[str], str, str]:
    """(label lines, css class, tooltip) for a PCIe link: 'Gen5 x16'; a downgraded one names its maximum."""
    if link.current_gen is None and link.current_width is None:
        return (
            [],
            "unknown",
            f"PCIe link at {link.bdf or 'unknown device'}: generation and width not recorded in this scan",
        )
    now = pcie_link(link.current_gen, link.current_width)
    label = [now]
    width_down, gen_down = hop_is_downgraded(link)
    css = "fail downgraded" if width_down else ("warn downgraded" if gen_down else "")
    mx = pcie_link(link.max_gen, link.max_width)
    tip = f"PCIe link at {link.bdf or 'unknown device'}: running {now}, maximum {mx}"
    if width_down or gen_down:
        label.append(f"max {mx}")
        if width_down:
            tip += " — lanes missing: bandwidth is cut"
        else:
            tip += " — generation below maximum (an idle GPU may drop it to save power)"
    return label, css, tip


def _measure(node: Node) -> float:
    if node.children:
        kids = sum(_measure(c) for c in node.children) + H_GAP * (len(node.children) - 1)
        node.sub_w = max(node.box.w, kids)
    else:
        node.sub_w = node.box.w
    return node.sub_w


def _place(node: Node, x0: float, row: int, leaf_row: int) -> None:
    node.box.x = x0 + (node.sub_w - node.box.w) / 2
    node.box.row = leaf_row if node.box.kind in ("gpu", "nic") else row
    if node.children:
        kids = sum(c.sub_w for c in node.children) + H_GAP * (len(node.children) - 1)
        x = x0 + (node.sub_w - kids) / 2
        for c in node.children:
            _place(c, x, row + 1, leaf_row)
            x += c.sub_w + H_GAP
        # Centre a parent over its children's boxes (not their subtrees), tidy-tree style.
        first, last = node.children[0].box, node.children[-1].box
        node.box.x = (first.x + last.x + last.w) / 2 - node.box.w / 2


def _walk(node: Node):
    yield node
    for c in node.children:
        yield from _walk(c)


def _nv_pairs(rig: Rig) -> dict[tuple[int, int], int]:
    """GPU index pair -> NVLink count, from the topo -m matrix (NV#), else from the links' remote ends."""
    pairs: dict[tuple[int, int], int] = {}
    m = rig.topology.matrix
    gpus = rig.gpus
    if m:
        for i, gi in enumerate(gpus):
            for j, gj in enumerate(gpus):
                if j <= i or i >= len(m) or j >= len(m[i]):
                    continue
                code = m[i][j]
                mm = re.fullmatch(r"NV(\d+)", code or "")
                if mm:
                    pairs[(gi.index, gj.index)] = int(mm.group(1))
    if not pairs:
        for g in gpus:
            for link in g.active_nvlinks():
                r = link.remote_gpu_index
                if link.remote_device_type == "gpu" and r is not None and r != g.index:
                    a, b = sorted((g.index, r))
                    pairs[(a, b)] = pairs.get((a, b), 0) + (1 if g.index == a else 0)
    return pairs


def _switch_links(gpu: Gpu) -> tuple[int, int, set[str], set[int]]:
    """(active links to a switch, links to a switch in all, switch bus ids, NVLink versions)."""
    to_sw = [n for n in gpu.nvlinks if n.remote_device_type == "switch"]
    active = [n for n in to_sw if n.active]
    return (
        len(active),
        len(to_sw),
        {n.remote_bus_id for n in to_sw if n.remote_bus_id},
        {n.version for n in to_sw if n.version},
    )


def layout(rig: Rig) -> Diagram:
    notes: list[str] = []
    roots, leaves, ancestry = build_tree(rig, notes)
    notes += place_nics(rig, leaves, ancestry)
    for r in roots:
        sort_tree(r)
    leaf_row = max((tree_depth(r) for r in roots), default=0)
    x = MARGIN
    for r in roots:
        _measure(r)
        _place(r, x, 0, leaf_row)
        x += r.sub_w + TOP_GAP
    width = max(x - TOP_GAP + MARGIN, 2 * MARGIN + SIZES["cpu"][0])

    all_nodes = [n for r in roots for n in _walk(r)]
    bottom = _place_rows(all_nodes, leaf_row)
    boxes = [n.box for n in all_nodes]
    edges: list[Edge] = []
    for n in all_nodes:
        for c in n.children:
            edges.append(_tree_edge(n, c))
    if rig.host.sockets and rig.host.sockets > 1:
        edges += _socket_edges(roots)

    # NVLink: a switch fabric box, then GPU-to-GPU arcs.
    pairs = _nv_pairs(rig)
    gpu_boxes = {i: leaves[i].box for i in leaves}
    bottom, arcs = _fabric(rig, gpu_boxes, pairs, bottom, leaf_row, boxes, edges)
    if arcs:
        bottom = _draw_arcs(arcs, gpu_boxes, bottom, edges)
    height = bottom + MARGIN + 4
    if rig.topology.unavailable.get("matrix") and not pairs:
        notes.append(f"NVLink pairs unknown: {rig.topology.unavailable['matrix']}.")
    return Diagram(width=round(width, 1), height=round(height, 1), boxes=boxes, edges=edges, notes=notes)


def _place_rows(all_nodes: list[Node], leaf_row: int) -> float:
    """Row geometry: each row as tall as its tallest box; boxes centred vertically in their row. Returns the bottom
    of the leaf row."""
    row_h: dict[int, float] = {}
    for n in all_nodes:
        row_h[n.box.row] = max(row_h.get(n.box.row, 0.0), n.box.h)
    row_y: dict[int, float] = {}
    y = MARGIN
    for row in range(leaf_row + 1):
        row_y[row] = y
        y += row_h.get(row, 0.0) + ROW_GAP
    for n in all_nodes:
        n.box.y = row_y[n.box.row] + (row_h[n.box.row] - n.box.h) / 2
    return row_y[leaf_row] + row_h.get(leaf_row, 0.0)


def _socket_edges(roots: list[Node]) -> list[Edge]:
    """The inter-socket link between neighbouring CPUs (a host with more than one socket)."""
    edges: list[Edge] = []
    for a, b in zip(roots, roots[1:], strict=False):
        ya = a.box.y + a.box.h / 2
        edges.append(
            Edge(
                kind="cpu",
                src=a.box.id,
                dst=b.box.id,
                d=f"M{a.box.x + a.box.w:.1f},{ya:.1f} H{b.box.x:.1f}",
                label=["inter-socket"],
                lx=(a.box.x + a.box.w + b.box.x) / 2,
                ly=ya - 6,
                tooltip="CPU-to-CPU link (SYS in nvidia-smi topo -m)",
            )
        )

    return edges


def _fabric(
    rig: Rig,
    gpu_boxes: dict[int, Box],
    pairs: dict[tuple[int, int], int],
    bottom: float,
    leaf_row: int,
    boxes: list[Box],
    edges: list[Edge],
) -> tuple[float, dict[tuple[int, int], int]]:
    """The NVSwitch fabric box under the GPUs (or one for a full NV# mesh of unknown make) with an edge from each
    member, added to ``boxes`` and ``edges``; returns the new bottom and the GPU pairs still to draw as arcs."""
    y = bottom
    fab = [(g, *_switch_links(g)) for g in rig.gpus if any(n.remote_device_type == "switch" for n in g.nvlinks)]
    pairs = _nv_pairs(rig)
    n_gpus = len(rig.gpus)
    all_pairs = n_gpus >= 4 and len(pairs) == n_gpus * (n_gpus - 1) // 2 and len(set(pairs.values())) == 1
    if fab or (all_pairs and not any(g.nvlinks for g in rig.gpus)):
        y += ROW_GAP
        members = [g.index for g, *_ in fab] if fab else [g.index for g in rig.gpus]
        xs = [gpu_boxes[i].x for i in members]
        xe = [gpu_boxes[i].x + gpu_boxes[i].w for i in members]
        fx, fw = min(xs), max(xe) - min(xs)
        if fab:
            switches = set().union(*(s for _, _, _, s, _ in fab))
            versions = set().union(*(v for _, _, _, _, v in fab))
            title = "NVSwitch fabric"
            lines = []
            if switches:
                lines.append(f"{len(switches)} NVSwitches" if len(switches) > 1 else "1 NVSwitch")
            if versions:
                lines.append("NVLink " + "/".join(str(v) for v in sorted(versions)))
            tip = "GPUs reach each other through NVSwitch: every pair at full NVLink bandwidth"
        else:
            k = next(iter(pairs.values()))
            title = f"NVLink: every pair NV{k}"
            lines = ["switch or mesh not recorded"]
            tip = f"nvidia-smi topo -m shows NV{k} between every pair; the scan does not record how"
        boxes.append(
            Box(
                id="fabric",
                kind="fabric",
                title=title,
                lines=[" · ".join(lines)] if lines else [],
                tooltip=tip,
                x=fx,
                y=y,
                w=fw,
                h=FABRIC_H,
                row=leaf_row + 1,
            )
        )
        for i in members:
            gb = gpu_boxes[i]
            if fab:
                g, active, total, _, _ = next(f for f in fab if f[0].index == i)
                label = [f"{active} links"] if active == total else [f"{active}/{total} links up"]
                css = "" if active == total else "fail"
                tip_e = f"GPU {i}: {active} of {total} NVLinks to the switch active"
            else:
                k = next(iter(pairs.values()))
                label, css, tip_e = [f"NV{k}"], "", f"GPU {i}: NV{k} to every other GPU"
            edges.append(
                Edge(
                    kind="nvswitch",
                    src=gb.id,
                    dst="fabric",
                    d=f"M{gb.cx:.1f},{gb.bottom:.1f} V{y:.1f}",
                    label=label,
                    lx=gb.cx + 6,
                    ly=(gb.bottom + y) / 2 + 4,
                    css=css,
                    tooltip=tip_e,
                    gpus=[i],
                )
            )
        bottom = y + FABRIC_H
        fabric_pairs = set()
        if not fab:
            fabric_pairs = set(pairs)
        else:
            fabric_set = set(members)
            fabric_pairs = {p for p in pairs if p[0] in fabric_set and p[1] in fabric_set}
        arcs = {p: k for p, k in pairs.items() if p not in fabric_pairs}
    else:
        arcs = dict(pairs)
    return bottom, arcs


def _tree_edge(parent: Node, child: Node) -> Edge:
    p, c = parent.box, child.box
    y1, y2 = p.bottom, c.y
    ymid = y1 + min(14.0, (y2 - y1) / 2)
    d = f"M{p.cx:.1f},{y1:.1f} V{ymid:.1f} H{c.cx:.1f} V{y2:.1f}"
    if c.kind == "nic":
        code = c.lines[-1].split(" ")[0] if c.lines else ""
        return Edge(
            kind="nic", src=p.id, dst=c.id, d=d, label=[code], lx=c.cx + 6, ly=y2 - 12, css="nic", tooltip=c.tooltip
        )
    if child.link_in is None:
        return Edge(kind="pcie", src=p.id, dst=c.id, d=d, tooltip="PCIe link (no link registers read)")
    link = _link_facts(*child.link_in)
    label, css, tip = describe_link(link)
    gpus = [c.gpu] if c.gpu is not None else gpus_below(child)
    ly = y2 - 8 - 12 * (len(label) - 1)
    return Edge(kind="pcie", src=p.id, dst=c.id, d=d, label=label, lx=c.cx + 6, ly=ly, css=css, tooltip=tip, gpus=gpus)


def _draw_arcs(arcs: dict[tuple[int, int], int], gpu_boxes: dict[int, Box], top: float, edges: list[Edge]) -> float:
    """GPU-to-GPU NVLink pairs as U-shaped paths below the GPU row, one lane per overlapping span."""
    order = sorted(arcs, key=lambda p: (abs(gpu_boxes[p[1]].cx - gpu_boxes[p[0]].cx), p))
    lanes: list[list[tuple[float, float]]] = []
    ends: dict[int, int] = {}
    for a, b in arcs:
        ends[a] = ends.get(a, 0) + 1
        ends[b] = ends.get(b, 0) + 1
    used: dict[int, int] = {}

    def attach(i: int) -> float:
        box = gpu_boxes[i]
        k = used.get(i, 0)
        used[i] = k + 1
        n = ends[i]
        return box.x + box.w * (k + 1) / (n + 1)

    lowest = top
    for a, b in order:
        xa, xb = attach(a), attach(b)
        lo, hi = min(xa, xb), max(xa, xb)
        lane = 0
        while lane < len(lanes) and any(not (hi < s - 4 or lo > e + 4) for s, e in lanes[lane]):
            lane += 1
        if lane == len(lanes):
            lanes.append([])
        lanes[lane].append((lo, hi))
        ya = gpu_boxes[a].bottom
        yl = top + LANE_PITCH * (lane + 1)
        k = arcs[(a, b)]
        edges.append(
            Edge(
                kind="nvlink",
                src=f"gpu-{a}",
                dst=f"gpu-{b}",
                d=f"M{xa:.1f},{ya:.1f} V{yl:.1f} H{xb:.1f} V{gpu_boxes[b].bottom:.1f}",
                label=[f"{k} link" + ("s" if k != 1 else "")],
                lx=(xa + xb) / 2,
                ly=yl - 4,
                tooltip=f"GPU {a} – GPU {b}: {k} NVLink" + ("s" if k != 1 else "") + " (NV" + str(k) + ")",
                gpus=[a, b],
            )
        )
        lowest = max(lowest, yl)
    _place_arc_labels([e for e in edges if e.kind == "nvlink"])
    return lowest + 6


def _place_arc_labels(arcs: list[Edge]) -> None:
    """Move each arc's label into the widest stretch of its lane that no other arc's vertical crosses."""
    geo = []
    for e in arcs:
        m = re.match(r"M([\d.]+),[\d.]+ V([\d.]+) H([\d.]+)", e.d)
        if m:
            geo.append((e, float(m.group(1)), float(m.group(2)), float(m.group(3))))
    for e, xa, yl, xb in geo:
        lo, hi = min(xa, xb), max(xa, xb)
        # Verticals of deeper arcs cross this lane between the GPU row and their own lane.
        cuts = sorted({x for f, fa, fy, fb in geo if f is not e and fy > yl for x in (fa, fb) if lo < x < hi})
        stops = [lo, *cuts, hi]
        gaps = sorted(((b - a, (a + b) / 2) for a, b in zip(stops, stops[1:], strict=False)), reverse=True)
        if gaps:
            e.lx = gaps[0][1]
