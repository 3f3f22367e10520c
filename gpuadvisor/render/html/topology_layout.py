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
  fault), both judged by ``gpuadvisor.links.hop_is_downgraded``;
- NVLink: links whose remote end is a switch are drawn as one NVSwitch fabric box; GPU-to-GPU links as arcs
  labelled with the link count from the ``topo -m`` matrix (``NV#``) or from the per-link remote ends;
- NICs: ``rig.topology.nics``, placed beside the GPU they are closest to by ``nic_matrix`` (PIX: same switch,
  PXB: same switch tree, PHB: same root port, NODE: same CPU), with a dashed edge labelled by that code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import Gpu, PcieHop, Rig
from gpuadvisor.links import hop_is_downgraded, link_facts

# Box sizes (SVG user units ~ CSS px) and spacing.
SIZES = {
    "cpu": (150.0, 50.0),
    "rootport": (100.0, 30.0),
    "switch": (124.0, 46.0),
    "bridge": (110.0, 30.0),
    "gpu": (106.0, 62.0),
    "nic": (84.0, 40.0),
}
H_GAP = 12.0  # between sibling subtrees
TOP_GAP = 36.0  # between CPU subtrees
ROW_GAP = 52.0  # vertical room for the edge labels between rows
MARGIN = 16.0
FABRIC_H = 40.0
LANE_PITCH = 22.0

LEVEL_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}


@dataclass
class Box:
    id: str
    kind: str  # cpu | rootport | switch | bridge | gpu | nic | fabric
    title: str
    lines: list[str] = field(default_factory=list)
    tooltip: str = ""
    gpu: int | None = None
    nic: str | None = None
    css: str = ""
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    row: int = 0

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def bottom(self) -> float:
        return self.y + self.h


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


# -- the tree ---------------------------------------------------------------------------------------------


@dataclass
class _Node:
    box: Box
    children: list[_Node] = field(default_factory=list)
    link_in: tuple[PcieHop | None, PcieHop | None] | None = None  # (child side, parent port side)
    sort_key: tuple = ()
    sub_w: float = 0.0


def _short_bdf(bdf: str | None) -> str:
    if not bdf:
        return "?"
    return bdf[5:] if re.match(r"^0000:", bdf) else bdf


def _short_gpu_name(name: str | None) -> str:
    if not name:
        return "unknown model"
    return re.sub(r"^(NVIDIA\s+)?(Tesla\s+)?", "", name)


def _trim(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _numa_of(gpu: Gpu) -> int | None:
    return gpu.numa_node if gpu.numa_node is not None and gpu.numa_node >= 0 else None


_link_facts = link_facts  # one definition of a link as both ends see it: gpuadvisor.links


def _nvml_hop(gpu: Gpu) -> PcieHop:
    p = gpu.pcie
    return PcieHop(
        bdf=gpu.bus_id or "",
        port_type="endpoint",
        current_gen=p.current_gen,
        max_gen=p.max_gen,
        current_width=p.current_width,
        max_width=p.max_width,
    )


def _gpu_hop(gpu: Gpu) -> PcieHop:
    """The GPU's own link register: sysfs (path[0]) completed by NVML."""
    nv = _nvml_hop(gpu)
    if not gpu.pcie.path:
        return nv
    h = gpu.pcie.path[0]
    return PcieHop(
        bdf=h.bdf or nv.bdf,
        port_type="endpoint",
        current_gen=h.current_gen if h.current_gen is not None else nv.current_gen,
        current_width=h.current_width if h.current_width is not None else nv.current_width,
        max_gen=h.max_gen if h.max_gen is not None else nv.max_gen,
        max_width=h.max_width if h.max_width is not None else nv.max_width,
    )


def describe_link(link: PcieHop) -> tuple[list[str], str, str]:
    """(label lines, css class, tooltip) for a PCIe link: 'Gen5 x16'; a downgraded one names its maximum."""
    if link.current_gen is None and link.current_width is None:
        return (
            [],
            "unknown",
            f"PCIe link at {link.bdf or 'unknown device'}: generation and width not recorded in this scan",
        )
    gen = f"Gen{link.current_gen}" if link.current_gen is not None else "Gen?"
    width = f"x{link.current_width}" if link.current_width is not None else "x?"
    label = [f"{gen} {width}"]
    width_down, gen_down = hop_is_downgraded(link)
    css = "fail downgraded" if width_down else ("warn downgraded" if gen_down else "")
    mx = (
        f"Gen{link.max_gen if link.max_gen is not None else '?'} "
        f"x{link.max_width if link.max_width is not None else '?'}"
    )
    tip = f"PCIe link at {link.bdf or 'unknown device'}: running {gen} {width}, maximum {mx}"
    if width_down or gen_down:
        label.append(f"max {mx}")
        if width_down:
            tip += " — lanes missing: bandwidth is cut"
        else:
            tip += " — generation below maximum (an idle GPU may drop it to save power)"
    return label, css, tip


def _build_tree(rig: Rig, notes: list[str]) -> tuple[list[_Node], dict[int, _Node], dict[int, list[_Node]]]:
    """CPU roots, GPU leaf per index, and for each GPU its ancestors (nearest first) for NIC placement."""
    roots: dict[str, _Node] = {}
    nodes: dict[str, _Node] = {}
    host = rig.host
    numa_ids = sorted({n.id for n in host.numa_nodes} | {n for g in rig.gpus if (n := _numa_of(g)) is not None})
    one_per_socket = bool(host.sockets) and len(host.numa_nodes) == host.sockets

    def cpu_node(numa: int | None) -> _Node:
        key = f"cpu-{numa}" if numa is not None else "cpu-unknown"
        if key in roots:
            return roots[key]
        if numa is None:
            title = "CPU"
            lines = ["NUMA node unknown"]
            tip = "The GPUs below report no NUMA node"
        else:
            title = f"CPU {numa}" if one_per_socket else f"NUMA node {numa}"
            lines = [f"NUMA node {numa}"] if one_per_socket else []
            info = next((n for n in host.numa_nodes if n.id == numa), None)
            if info is not None and info.cpus:
                lines.append(_trim(f"cpus {info.cpus}", 24))
            tip = f"NUMA node {numa}" + (f", cpus {info.cpus}" if info is not None and info.cpus else "")
        if host.cpu_model:
            tip += f"; {host.cpu_model}"
        w, h = SIZES["cpu"]
        node = _Node(
            Box(id=key, kind="cpu", title=title, lines=lines, tooltip=tip, w=w, h=h),
            sort_key=(numa if numa is not None else 1 << 30,),
        )
        roots[key] = node
        nodes[key] = node
        return node

    for n in numa_ids:
        cpu_node(n)

    leaves: dict[int, _Node] = {}
    ancestry: dict[int, list[_Node]] = {}
    # A GPU that reports no NUMA node on a host with exactly one can only sit on that one (sysfs says -1,
    # "no specific node", on single-node machines and in many VMs).
    only = host.numa_nodes[0].id if len(host.numa_nodes) == 1 and (host.sockets in (None, 1)) else None
    for gpu in rig.gpus:
        numa = _numa_of(gpu)
        if numa is None and only is not None:
            numa = only
            notes.append(f"GPU {gpu.index} reports no NUMA node; it is drawn under the host's only NUMA node ({only}).")
        parent = cpu_node(numa)
        chain: list[_Node] = [parent]
        path = gpu.pcie.path
        above = list(reversed(path[1:])) if len(path) > 1 else []  # root port first
        pending_port: PcieHop | None = None  # the port whose link leads to the next device down
        i = 0
        while i < len(above):
            hop = above[i]
            if hop.port_type == "root-port":
                key = f"rp-{hop.bdf}"
                if key not in nodes:
                    w, h = SIZES["rootport"]
                    nodes[key] = _Node(
                        Box(
                            id=key,
                            kind="rootport",
                            title="root port",
                            lines=[_short_bdf(hop.bdf)],
                            tooltip=f"PCIe root port {hop.bdf}" + (f" ({hop.name})" if hop.name else ""),
                            w=w,
                            h=h,
                        ),
                        sort_key=(hop.bdf,),
                    )
                    parent.children.append(nodes[key])
                parent = nodes[key]
                pending_port = hop
            elif hop.port_type == "upstream-port":
                key = f"sw-{hop.bdf}"
                if key not in nodes:
                    w, h = SIZES["switch"]
                    lines = [_trim(hop.name, 19)] if hop.name else []
                    lines.append(_short_bdf(hop.bdf))
                    node = _Node(
                        Box(
                            id=key,
                            kind="switch",
                            title="PCIe switch",
                            lines=lines,
                            tooltip=f"PCIe switch, upstream port {hop.bdf}" + (f" ({hop.name})" if hop.name else ""),
                            w=w,
                            h=h,
                        ),
                        sort_key=(hop.bdf,),
                    )
                    node.link_in = (hop, pending_port)
                    parent.children.append(node)
                    nodes[key] = node
                parent = nodes[key]
                pending_port = None
            elif hop.port_type == "downstream-port":
                pending_port = hop  # a port of the switch above; its link goes to the next device down
            else:  # bridge, endpoint in the middle, unknown: draw it as a generic bridge
                key = f"br-{hop.bdf}"
                if key not in nodes:
                    w, h = SIZES["bridge"]
                    node = _Node(
                        Box(
                            id=key,
                            kind="bridge",
                            title=hop.port_type if hop.port_type != "unknown" else "bridge",
                            lines=[_short_bdf(hop.bdf)],
                            tooltip=f"{hop.port_type} {hop.bdf}" + (f" ({hop.name})" if hop.name else ""),
                            w=w,
                            h=h,
                        ),
                        sort_key=(hop.bdf,),
                    )
                    node.link_in = (hop, pending_port)
                    parent.children.append(node)
                    nodes[key] = node
                parent = nodes[key]
                pending_port = hop
            chain.append(parent)
            i += 1
        w, h = SIZES["gpu"]
        name = _short_gpu_name(gpu.name)
        leaf = _Node(
            Box(
                id=f"gpu-{gpu.index}",
                kind="gpu",
                title=f"GPU {gpu.index}",
                lines=[_trim(name, 17)] + ([_short_bdf(gpu.bus_id)] if gpu.bus_id else []),
                tooltip=f"GPU {gpu.index}: {gpu.name or 'unknown model'}, bus {gpu.bus_id or 'unknown'}",
                gpu=gpu.index,
                w=w,
                h=h,
            ),
            sort_key=(gpu.index,),
        )
        leaf.link_in = (_gpu_hop(gpu), pending_port) if path else (_nvml_hop(gpu), None)
        parent.children.append(leaf)
        leaves[gpu.index] = leaf
        ancestry[gpu.index] = list(reversed(chain))  # nearest first
    ordered = sorted(roots.values(), key=lambda n: n.sort_key)
    return ordered, leaves, ancestry


def _place_nics(rig: Rig, leaves: dict[int, _Node], ancestry: dict[int, list[_Node]]) -> list[str]:
    topo = rig.topology
    notes: list[str] = []
    if not topo.nics or not topo.nic_matrix:
        return notes
    index_of = {g.index: pos for pos, g in enumerate(rig.gpus)}
    unplaced = []
    for k, nic in enumerate(topo.nics):
        best: tuple[int, int, str] | None = None
        for g in rig.gpus:
            row = topo.nic_matrix[index_of[g.index]] if index_of[g.index] < len(topo.nic_matrix) else []
            code = row[k] if k < len(row) else None
            if code in LEVEL_RANK and (best is None or LEVEL_RANK[code] < best[0]):
                best = (LEVEL_RANK[code], g.index, code)
        if best is None or best[2] == "SYS":
            unplaced.append(nic)
            continue
        _, gidx, code = best
        chain = ancestry[gidx]  # nearest first: switch/root port/.../cpu
        if code == "PIX":
            parent = chain[0]
        elif code == "PXB":
            switches = [n for n in chain if n.box.kind == "switch"]
            parent = switches[-1] if switches else chain[0]
        elif code == "PHB":
            ports = [n for n in chain if n.box.kind == "rootport"]
            parent = ports[0] if ports else chain[-1]
        else:  # NODE
            parent = chain[-1]
        w, h = SIZES["nic"]
        node = _Node(
            Box(
                id=f"nic-{k}",
                kind="nic",
                title="NIC",
                lines=[_trim(nic, 12)],
                tooltip=f"NIC {nic}: {code} to GPU {gidx} (nvidia-smi topo -m)",
                nic=nic,
                w=w,
                h=h,
            ),
            sort_key=(1 << 30, k),
        )
        node.link_in = None
        node.box.css = "nic"
        parent.children.append(node)
        node.box.lines.append(f"{code} to GPU {gidx}")
    notes.append(
        "NIC positions are inferred from the GPU-to-NIC levels of nvidia-smi topo -m (PIX, PXB, PHB, NODE); "
        "their own PCIe links are not probed."
    )
    if unplaced:
        notes.append("Not drawn (only SYS to every GPU, or no level known): " + ", ".join(unplaced) + ".")
    return notes


def _sort(node: _Node) -> None:
    def key(n: _Node) -> tuple:
        gpus = _gpus_below(n)
        # Same-typed keys only: GPU subtrees by their lowest GPU, then the rest (NICs, empty ports) by kind and id.
        return (0 if gpus else 1, min(gpus) if gpus else 0, n.box.kind, tuple(str(x).zfill(12) for x in n.sort_key))

    node.children.sort(key=key)
    for c in node.children:
        _sort(c)


def _gpus_below(node: _Node) -> list[int]:
    if node.box.gpu is not None:
        return [node.box.gpu]
    out: list[int] = []
    for c in node.children:
        out.extend(_gpus_below(c))
    return out


def _depth(node: _Node) -> int:
    return 0 if not node.children else 1 + max(_depth(c) for c in node.children)


def _measure(node: _Node) -> float:
    if node.children:
        kids = sum(_measure(c) for c in node.children) + H_GAP * (len(node.children) - 1)
        node.sub_w = max(node.box.w, kids)
    else:
        node.sub_w = node.box.w
    return node.sub_w


def _place(node: _Node, x0: float, row: int, leaf_row: int) -> None:
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


def _walk(node: _Node):
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
    roots, leaves, ancestry = _build_tree(rig, notes)
    notes += _place_nics(rig, leaves, ancestry)
    for r in roots:
        _sort(r)
    leaf_row = max((_depth(r) for r in roots), default=0)
    x = MARGIN
    for r in roots:
        _measure(r)
        _place(r, x, 0, leaf_row)
        x += r.sub_w + TOP_GAP
    width = max(x - TOP_GAP + MARGIN, 2 * MARGIN + SIZES["cpu"][0])

    all_nodes = [n for r in roots for n in _walk(r)]
    # Row geometry: each row as tall as its tallest box; boxes centred vertically in their row.
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
    bottom = row_y[leaf_row] + row_h.get(leaf_row, 0.0)

    boxes = [n.box for n in all_nodes]
    edges: list[Edge] = []
    for n in all_nodes:
        for c in n.children:
            edges.append(_tree_edge(n, c))
    for a, b in zip(roots, roots[1:], strict=False):
        if rig.host.sockets and rig.host.sockets > 1:
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

    # NVLink: a switch fabric box, then GPU-to-GPU arcs.
    y = bottom
    gpu_boxes = {i: leaves[i].box for i in leaves}
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
    if arcs:
        bottom = _draw_arcs(arcs, gpu_boxes, bottom, edges)
    height = bottom + MARGIN + 4
    if rig.topology.unavailable.get("matrix") and not pairs:
        notes.append(f"NVLink pairs unknown: {rig.topology.unavailable['matrix']}.")
    return Diagram(width=round(width, 1), height=round(height, 1), boxes=boxes, edges=edges, notes=notes)


def _tree_edge(parent: _Node, child: _Node) -> Edge:
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
    gpus = [c.gpu] if c.gpu is not None else _gpus_below(child)
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
