"""A build -> the rig description the simulator serves: the PCIe tree its CPU's lanes allow, the NVLink fabric
it has, the host it sits in. The same probes, rules and advisor then run on it as on a real machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.catalog import generations
from gpuadvisor.catalog.generations import Generation
from gpuadvisor.plan.build import Build

# The generation a GPU of no simulated generation (none with a compute capability in catalog/generations.toml) is
# served as, and whose NVSwitch count a generation without one gets.
SIMULATED_DEFAULT = "hopper"
DRIVER = ("570.133.20", "12.8")  # a driver every GPU in the catalog runs on (R570 added the RTX 50 series)


@dataclass
class Slot:
    gpu: int
    socket: int
    width: int
    gen: int
    via: str  # "cpu" | "chipset"


@dataclass
class Layout:
    """Where each GPU sits and with how many lanes, and what the platform cannot hold."""

    slots: list[Slot] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def buildable(self) -> bool:
        return not self.problems


def _pow2_floor(n: float) -> int:
    w = 16
    while w > 1 and w > n:
        w //= 2
    return w


def lane_split(b: Build) -> Layout:
    """Lanes per GPU from the CPU: its graphics lanes split over the cards on each socket (x16 with one card on
    a desktop, x8/x8 with two), further cards in chipset slots at x4 sharing the chipset's uplink."""
    out = Layout()
    gpu_gen = max(c.pcie_gen or 4 for c in b.cards)
    if b.cpu is None:
        out.problems.append("no CPU named: the PCIe layout cannot be derived")
        return out
    cpu = b.cpu
    gen = min(cpu.pcie_gen, gpu_gen)
    if b.slots is not None:  # the build says how its board wires each slot
        for i, w in enumerate(b.slots):
            out.slots.append(Slot(i, i * b.sockets // b.count, w, gen, "cpu"))
        return out
    per_socket = [b.count // b.sockets + (1 if s < b.count % b.sockets else 0) for s in range(b.sockets)]
    i = 0
    for s, n in enumerate(per_socket):
        on_cpu = min(n, cpu.gpu_slots)
        width = _pow2_floor(cpu.gpu_lanes / on_cpu) if on_cpu else 0
        for _ in range(on_cpu):
            out.slots.append(Slot(i, s, width, gen, "cpu"))
            i += 1
        rest = n - on_cpu
        chipset = min(rest, cpu.chipset_slots) if s == 0 else 0
        up = cpu.chipset_uplink or {"gen": 4, "width": 4}
        for _ in range(chipset):
            out.slots.append(Slot(i, s, 4, min(up["gen"], gpu_gen), "chipset"))
            i += 1
        if rest > chipset:
            out.problems.append(
                f"{b.count} GPUs but {cpu.name} boards have {cpu.gpu_slots * b.sockets + cpu.chipset_slots} slots for "
                "them "
                f"({cpu.gpu_slots} CPU-attached per "
                f"socket{f', {cpu.chipset_slots} through the chipset' if cpu.chipset_slots else ''})"
            )
            return out
    narrow = [sl for sl in out.slots if sl.width < 16]
    if narrow:
        out.notes.append(
            f"{cpu.name} gives its GPUs {cpu.gpu_lanes} graphics lanes per socket: "
            + ", ".join(f"GPU {sl.gpu} x{sl.width}{_chipset_note(cpu) if sl.via == 'chipset' else ''}" for sl in narrow)
        )
    return out


def _simulated_generation(arch: str) -> Generation:
    """The generation the simulator serves a GPU of ``arch`` as: its own where the table gives its parts' compute
    capability, else SIMULATED_DEFAULT's."""
    gen = generations.get(arch)
    if gen is None or gen.compute_capability is None:
        gen = generations.get(SIMULATED_DEFAULT)
    assert gen is not None
    return gen


def _nvswitches(arch: str) -> int | None:
    return _simulated_generation(arch).nvswitches or _simulated_generation(SIMULATED_DEFAULT).nvswitches


def _gpu_props(b: Build) -> dict[str, Any]:
    return _card_props(b.gpu)


def _card_props(g: Any) -> dict[str, Any]:
    geforce = "GeForce" in g.name
    gen = _simulated_generation(g.architecture)
    return {
        "name": g.name,
        "memory_total_mib": g.memory_mib,
        "architecture": gen.nvml_architecture,
        "compute_capability": g.compute_capability or gen.compute_capability,
        "power_limit_w": float(g.tdp_w or 300),
        "power_default_limit_w": float(g.tdp_w or 300),
        "ecc": "unsupported" if geforce else True,
        "remapped_rows": "unsupported" if geforce or g.architecture == "volta" else [0, 0, False, False],
        "pcie_max_gen": g.pcie_gen or 4,
        "pcie_max_width": 16,
        "nvlinks": 0,
    }


def rig_description(b: Build) -> tuple[dict[str, Any], Layout]:
    """The rig description of a build (a given one as it is), and its lane layout."""
    if b.rig_description is not None:
        return b.rig_description, Layout()
    layout = hgx_layout(b) if b.layout == "hgx" else lane_split(b)
    cpu = b.cpu
    sockets = b.sockets
    threads = cpu.threads if cpu else 0
    numa = [
        {"id": s, "cpus": f"{s * threads}-{(s + 1) * threads - 1}", "memory_gib": (b.ram_gib or 0) / sockets}
        for s in range(sockets)
    ]
    desc: dict[str, Any] = {
        "name": b.name,
        "title": b.title,
        "description": b.description or b.title,
        "sources": b.sources,
        "p2p_pcie": b.p2p or ("NS" if "GeForce" in b.gpu.name else "OK"),
        "software": {"driver_version": DRIVER[0], "cuda_driver_version": DRIVER[1]},
        "host": {
            k: v
            for k, v in {
                "hostname": b.name,
                "cpu_model": cpu.name if cpu else None,
                "sockets": sockets,
                "cores_physical": cpu.cores * sockets if cpu else None,
                "cores_logical": cpu.threads * sockets if cpu else None,
                "memory_total_gib": b.ram_gib,
                "psu_watts": b.psu_watts,
            }.items()
            if v is not None
        },
        "numa": numa if cpu else [],
        "gpu": _gpu_props(b),
        "ports": [],
        "gpus": [],
    }
    if b.fabric == "nvswitch":
        desc["gpu"].update(
            nvlinks=b.nvlink_links or b.gpu.nvlink_links,
            nvlink_version=b.gpu.nvlink_version,
            nvlink_fabric="nvswitch",
            nvswitches=_nvswitches(b.gpu.architecture),
        )
    elif b.fabric == "bridge":
        links = b.nvlink_links or min(b.gpu.nvlink_links or 4, 12)
        desc["gpu"].update(nvlinks=links, nvlink_version=b.gpu.nvlink_version or 3, nvlink_fabric="bridge")
        desc["nvlink_bridges"] = [{"gpus": [i, i + 1], "links": links} for i in range(0, b.count - 1, 2)]
    chipset_port: dict[int, str] = {}
    first = len(desc["gpus"])
    for sl in layout.slots:
        bus = 0x10 + sl.gpu * 0x10
        if b.layout == "hgx":
            rp, sw = f"rp{sl.gpu}", f"sw{sl.gpu}"
            desc["ports"] += [
                {
                    "id": rp,
                    "kind": "root-port",
                    "bdf": f"0000:{bus:02x}:01.0",
                    "host_bridge": f"pci0000:{bus:02x}",
                    "numa_node": sl.socket,
                },
                {
                    "id": sw,
                    "kind": "switch",
                    "parent": rp,
                    "bdf": f"0000:{bus + 1:02x}:00.0",
                    "gen": sl.gen,
                    "width": 16,
                },
            ]
            desc["gpus"].append(
                {"bus_id": f"0000:{bus + 3:02x}:00.0", "parent": sw, "pcie_gen": sl.gen, "pcie_width": 16}
            )
        elif sl.via == "chipset":
            if sl.socket not in chipset_port:
                up = (cpu.chipset_uplink if cpu else None) or {"gen": 4, "width": 4}
                chipset_port[sl.socket] = f"pch{sl.socket}"
                desc["ports"] += [
                    {
                        "id": f"rpc{sl.socket}",
                        "kind": "root-port",
                        "bdf": f"0000:{0xE0 + sl.socket:02x}:01.0",
                        "host_bridge": f"pci0000:{0xE0 + sl.socket:02x}",
                        "numa_node": sl.socket,
                    },
                    {
                        "id": f"pch{sl.socket}",
                        "kind": "switch",
                        "parent": f"rpc{sl.socket}",
                        "bdf": f"0000:{0xE1 + sl.socket:02x}:00.0",
                        "gen": up["gen"],
                        "width": up["width"],
                        "max_gen": up["gen"],
                        "max_width": up["width"],
                    },
                ]
            desc["gpus"].append(
                {
                    "bus_id": f"0000:{bus:02x}:00.0",
                    "parent": chipset_port[sl.socket],
                    "pcie_gen": sl.gen,
                    "pcie_width": sl.width,
                    "slot_max_width": sl.width,
                }
            )
        else:
            rp = f"rp{sl.gpu}"
            desc["ports"].append(
                {
                    "id": rp,
                    "kind": "root-port",
                    "bdf": f"0000:{bus - 1:02x}:01.1",
                    "host_bridge": f"pci0000:{bus - 1:02x}",
                    "numa_node": sl.socket,
                    "max_width": sl.width,
                }
            )
            desc["gpus"].append(
                {
                    "bus_id": f"0000:{bus:02x}:00.0",
                    "parent": rp,
                    "pcie_gen": sl.gen,
                    "pcie_width": sl.width,
                    "slot_max_width": sl.width,
                }
            )
    if b.mixed:  # each card's own properties over the [gpu] table's (the pace card's)
        base = desc["gpu"]
        for entry, card in zip(desc["gpus"][first:], b.cards, strict=False):
            entry.update({k: v for k, v in _card_props(card).items() if base.get(k) != v})
            entry["pcie_gen"] = min(entry["pcie_gen"], card.pcie_gen or 4)
    return desc, layout


def hgx_layout(b: Build) -> Layout:
    """An HGX/DGX-style baseboard: every GPU behind its own PCIe switch at x16, half on each socket."""
    out = Layout()
    gen = min(b.cpu.pcie_gen if b.cpu else 5, b.gpu.pcie_gen or 5)
    for i in range(b.count):
        out.slots.append(Slot(i, i * b.sockets // b.count, 16, gen, "cpu"))
    return out


def _chipset_note(cpu: Any) -> str:
    """How a slot behind the chipset shares its uplink to the CPU."""
    return f" through the chipset (shared x{(cpu.chipset_uplink or {}).get('width', 4)} uplink)"
