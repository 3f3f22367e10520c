"""The topology diagram's tree, before any coordinates: CPUs, root ports, PCIe switches and bridges, GPUs and the
NICs beside them, each a ``Box`` in a ``Node`` (gpuadvisor.render.html.topology_layout places and draws them; its
docstring says where each part comes from)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import Gpu, Host, PcieHop, Rig
from gpuadvisor.physics.links import nvml_hop

# Box sizes (SVG user units ~ CSS px) and spacing.
# Box sizes (SVG user units ~ CSS px); the spacing is topology_layout's.
SIZES = {
    "cpu": (150.0, 50.0),
    "rootport": (100.0, 30.0),
    "switch": (124.0, 46.0),
    "bridge": (110.0, 30.0),
    "gpu": (106.0, 62.0),
    "nic": (84.0, 40.0),
}
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
class Node:
    box: Box
    children: list[Node] = field(default_factory=list)
    link_in: tuple[PcieHop | None, PcieHop | None] | None = None  # (child side, parent port side)
    sort_key: tuple = ()
    sub_w: float = 0.0


def short_bdf(bdf: str | None) -> str:
    if not bdf:
        return "?"
    return bdf[5:] if re.match(r"^0000:", bdf) else bdf


def short_gpu_name(name: str | None) -> str:
    if not name:
        return "unknown model"
    return re.sub(r"^(NVIDIA\s+)?(Tesla\s+)?", "", name)


def trim(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def numa_of(gpu: Gpu) -> int | None:
    return gpu.numa_node if gpu.numa_node is not None and gpu.numa_node >= 0 else None


def gpu_hop(gpu: Gpu) -> PcieHop:
    """The GPU's own link register: sysfs (path[0]) completed by NVML."""
    nv = nvml_hop(gpu)
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


KEY_PREFIX = {"rootport": "rp", "switch": "sw", "bridge": "br"}


def _port_node(
    nodes: dict[str, Node],
    parent: Node,
    hop: PcieHop,
    kind: str,
    title: str,
    lines: list[str],
    tooltip: str,
    link_in: tuple[PcieHop | None, PcieHop | None] | None,
) -> Node:
    """The node of a root port, switch or bridge (by its bus id), made under ``parent`` the first time it is met."""
    key = f"{KEY_PREFIX[kind]}-{hop.bdf}"
    if key not in nodes:
        w, h = SIZES[kind]
        node = Node(Box(id=key, kind=kind, title=title, lines=lines, tooltip=tooltip, w=w, h=h), sort_key=(hop.bdf,))
        node.link_in = link_in
        parent.children.append(node)
        nodes[key] = node
    return nodes[key]


def _cpu_node(host: Host, numa: int | None, roots: dict[str, Node], nodes: dict[str, Node]) -> Node:
    """The CPU (or NUMA node) box at the root of a tree, made the first time it is met."""
    key = f"cpu-{numa}" if numa is not None else "cpu-unknown"
    if key in roots:
        return roots[key]
    one_per_socket = bool(host.sockets) and len(host.numa_nodes) == host.sockets
    if numa is None:
        title = "CPU"
        lines = ["NUMA node unknown"]
        tip = "The GPUs below report no NUMA node"
    else:
        title = f"CPU {numa}" if one_per_socket else f"NUMA node {numa}"
        lines = [f"NUMA node {numa}"] if one_per_socket else []
        info = next((n for n in host.numa_nodes if n.id == numa), None)
        if info is not None and info.cpus:
            lines.append(trim(f"cpus {info.cpus}", 24))
        tip = f"NUMA node {numa}" + (f", cpus {info.cpus}" if info is not None and info.cpus else "")
    if host.cpu_model:
        tip += f"; {host.cpu_model}"
    w, h = SIZES["cpu"]
    node = Node(
        Box(id=key, kind="cpu", title=title, lines=lines, tooltip=tip, w=w, h=h),
        sort_key=(numa if numa is not None else 1 << 30,),
    )
    roots[key] = node
    nodes[key] = node
    return node


def build_tree(rig: Rig, notes: list[str]) -> tuple[list[Node], dict[int, Node], dict[int, list[Node]]]:
    """CPU roots, GPU leaf per index, and for each GPU its ancestors (nearest first) for NIC placement."""
    roots: dict[str, Node] = {}
    nodes: dict[str, Node] = {}
    host = rig.host
    numa_ids = sorted({n.id for n in host.numa_nodes} | {n for g in rig.gpus if (n := numa_of(g)) is not None})

    for n in numa_ids:
        _cpu_node(host, n, roots, nodes)

    leaves: dict[int, Node] = {}
    ancestry: dict[int, list[Node]] = {}
    # A GPU that reports no NUMA node on a host with exactly one can only sit on that one (sysfs says -1,
    # "no specific node", on single-node machines and in many VMs).
    only = host.numa_nodes[0].id if len(host.numa_nodes) == 1 and (host.sockets in (None, 1)) else None
    for gpu in rig.gpus:
        numa = numa_of(gpu)
        if numa is None and only is not None:
            numa = only
            notes.append(f"GPU {gpu.index} reports no NUMA node; it is drawn under the host's only NUMA node ({only}).")
        parent = _cpu_node(host, numa, roots, nodes)
        chain: list[Node] = [parent]
        path = gpu.pcie.path
        above = list(reversed(path[1:])) if len(path) > 1 else []  # root port first
        pending_port: PcieHop | None = None  # the port whose link leads to the next device down
        i = 0
        while i < len(above):
            hop = above[i]
            named = f" ({hop.name})" if hop.name else ""
            if hop.port_type == "root-port":
                tip = f"PCIe root port {hop.bdf}{named}"
                parent = _port_node(nodes, parent, hop, "rootport", "root port", [short_bdf(hop.bdf)], tip, None)
                pending_port = hop
            elif hop.port_type == "upstream-port":
                lines = ([trim(hop.name, 19)] if hop.name else []) + [short_bdf(hop.bdf)]
                tip = f"PCIe switch, upstream port {hop.bdf}{named}"
                parent = _port_node(nodes, parent, hop, "switch", "PCIe switch", lines, tip, (hop, pending_port))
                pending_port = None
            elif hop.port_type == "downstream-port":
                pending_port = hop  # a port of the switch above; its link goes to the next device down
            else:  # bridge, endpoint in the middle, unknown: draw it as a generic bridge
                title = hop.port_type if hop.port_type != "unknown" else "bridge"
                tip = f"{hop.port_type} {hop.bdf}{named}"
                parent = _port_node(nodes, parent, hop, "bridge", title, [short_bdf(hop.bdf)], tip, (hop, pending_port))
                pending_port = hop
            chain.append(parent)
            i += 1
        w, h = SIZES["gpu"]
        name = short_gpu_name(gpu.name)
        leaf = Node(
            Box(
                id=f"gpu-{gpu.index}",
                kind="gpu",
                title=f"GPU {gpu.index}",
                lines=[trim(name, 17)] + ([short_bdf(gpu.bus_id)] if gpu.bus_id else []),
                tooltip=f"GPU {gpu.index}: {gpu.name or 'unknown model'}, bus {gpu.bus_id or 'unknown'}",
                gpu=gpu.index,
                w=w,
                h=h,
            ),
            sort_key=(gpu.index,),
        )
        leaf.link_in = (gpu_hop(gpu), pending_port) if path else (nvml_hop(gpu), None)
        parent.children.append(leaf)
        leaves[gpu.index] = leaf
        ancestry[gpu.index] = list(reversed(chain))  # nearest first
    ordered = sorted(roots.values(), key=lambda n: n.sort_key)
    return ordered, leaves, ancestry


def place_nics(rig: Rig, leaves: dict[int, Node], ancestry: dict[int, list[Node]]) -> list[str]:
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
        node = Node(
            Box(
                id=f"nic-{k}",
                kind="nic",
                title="NIC",
                lines=[trim(nic, 12)],
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


def sort_tree(node: Node) -> None:
    def key(n: Node) -> tuple:
        gpus = gpus_below(n)
        # Same-typed keys only: GPU subtrees by their lowest GPU, then the rest (NICs, empty ports) by kind and id.
        return (0 if gpus else 1, min(gpus) if gpus else 0, n.box.kind, tuple(str(x).zfill(12) for x in n.sort_key))

    node.children.sort(key=key)
    for c in node.children:
        sort_tree(c)


def gpus_below(node: Node) -> list[int]:
    if node.box.gpu is not None:
        return [node.box.gpu]
    out: list[int] = []
    for c in node.children:
        out.extend(gpus_below(c))
    return out


def tree_depth(node: Node) -> int:
    return 0 if not node.children else 1 + max(tree_depth(c) for c in node.children)
