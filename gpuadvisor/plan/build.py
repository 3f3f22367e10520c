"""A candidate build: the GPUs, the platform around them, and what it costs.

A build file is either compact (the GPU, how many, the CPU and the rest: the plan mode lays out the PCIe tree
from the CPU's lanes) or a full rig description (the format of the simulated presets) with a ``[plan]`` table
for the platform and prices. ``preset:NAME`` names a built-in preset; a bare name a built-in build.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gpuadvisor.catalog import GpuSpec
from gpuadvisor.catalog.platforms import CpuSpec, find_cpu, find_gpu_spec, nearest, unknown_cpu, unknown_gpu
from gpuadvisor.errors import InputError
from gpuadvisor.text import plural

MAX_FILE_BYTES = 1 << 20

COMPACT_KEYS = {
    "name": str,
    "title": str,
    "description": str,
    "gpu": (str, list),
    "count": int,
    "cpu": str,
    "sockets": int,
    "ram_gib": (int, float),
    "psu_watts": (int, float),
    "fabric": str,
    "nvlink_links": int,
    "layout": str,
    "slots": list,
    "chassis": str,
    "p2p": str,
    "price": dict,
    "rent": bool,
    "power_at_load_w": (int, float),
    "power_source": str,
    "sources": list,
    "nodes": int,
    "network": str,
    "storage": dict,
}
PLAN_KEYS = {
    "storage",
    "cpu",
    "sockets",
    "psu_watts",
    "chassis",
    "price",
    "rent",
    "power_at_load_w",
    "power_source",
    "ram_gib",
}
PRICE_KEYS = {
    "gpu_usd",
    "cpu_usd",
    "platform_usd",
    "network_usd_per_gpu",
    "platform_note",
    "system_usd",
    "date",
    "source",
    "gpu_hour_usd",
}
FABRICS = ("none", "bridge", "nvswitch")
# The network between nodes: one port per GPU (rail-optimised, as NVIDIA's DGX SuperPOD reference architecture);
# Gb/s per port from the adapter's specifications; busbw per GPU = line rate / 8 (the advisor's own convention);
# the price per GPU (adapter + switch port + two transceivers and a cable) is assumed: no public list price read.
CONNECTX7 = "https://docs.nvidia.com/networking/display/ConnectX7VPI/Introduction"
NETWORKS: dict[str, tuple[float, float, str]] = {
    "ib-ndr": (400.0, 4000.0, f"InfiniBand NDR 400 Gb/s per GPU (ConnectX-7: {CONNECTX7})"),
    "ib-hdr": (200.0, 2500.0, "InfiniBand HDR 200 Gb/s per GPU (ConnectX-6)"),
    "roce-400": (400.0, 3000.0, f"RoCE 400 GbE per GPU (ConnectX-7: {CONNECTX7})"),
    "roce-200": (200.0, 2000.0, "RoCE 200 GbE per GPU (ConnectX-6)"),
}
MAX_NODES = 64
MAX_GPUS = 64
LAYOUTS = ("direct", "hgx")


@dataclass
class Build:
    """One candidate machine, everything the plan mode needs to simulate and cost it."""

    name: str
    title: str
    origin: str
    gpu: GpuSpec
    count: int
    cpu: CpuSpec | None
    sockets: int = 1
    ram_gib: float | None = None
    psu_watts: float | None = None
    fabric: str = "none"
    nvlink_links: int | None = None
    layout: str = "direct"
    slots: list[int] | None = None
    chassis: str | None = None
    p2p: str | None = None
    description: str = ""
    sources: list[str] = field(default_factory=list)
    price: dict[str, Any] = field(default_factory=dict)
    rent: bool = False
    power_at_load_w: float | None = None
    power_source: str | None = None
    rig_description: dict[str, Any] | None = None  # a full rig description (presets, rig files): used as is
    rig: Any = None  # a machine on offer, imported from its own outputs: its facts are used as they are
    notes: list[str] = field(default_factory=list)  # facts assumed for it, said in the plan
    nodes: int = 1  # identical nodes of ``count`` GPUs each, joined by ``network``
    network: str | None = None
    storage: Any = None  # the [storage] table parsed: gpuadvisor.plan.storage.Storage
    # More than one GPU kind (a mixed build): (GPU, how many) in slot order; ``gpu`` is then the card that sets
    # the pace (the slowest), ``count`` all of them. Empty for a build of one kind.
    mix: tuple[tuple[GpuSpec, int], ...] = ()
    owned: bool = False  # the buyer's own machine (--have): only what is added to it is bought
    extra_cost: list[tuple[float, str]] = field(default_factory=list)  # what an owned machine's upgrade buys

    @property
    def mixed(self) -> bool:
        return len(self.mix) > 1

    @property
    def kinds(self) -> tuple[tuple[GpuSpec, int], ...]:
        """(GPU, how many per node) of every kind in the build, in slot order."""
        return self.mix if self.mix else ((self.gpu, self.count),)

    @property
    def cards(self) -> list[GpuSpec]:
        """Every GPU of one node, in slot order."""
        return [g for g, n in self.kinds for _ in range(n)]

    @property
    def gpu_label(self) -> str:
        """The GPUs as a buyer says them: "RTX 4090" or "1x RTX 4090 + 1x RTX 3090"."""
        return " + ".join(f"{n}x {g.name}" for g, n in self.mix) if self.mixed else self.gpu.name

    @property
    def inter_node_gbps(self) -> float | None:
        """Bus bandwidth per GPU across nodes in GB/s (the advisor's communication model's input)."""
        return NETWORKS[self.network][0] / 8 if self.network else None

    @property
    def total_gpus(self) -> int:
        return self.count * self.nodes

    @property
    def kind(self) -> str:
        return "rent" if self.rent else "buy"

    @property
    def psus(self) -> int:
        """Power supplies per node, as the chassis names them ("6x 3.3 kW PSUs", "two 1600 W PSUs"); else one."""
        m = re.search(r"\b(\d+|two|three|four|six|eight)\s*x?\s*(?:[\d.,]+\s*k?W\s*)?PSUs", self.chassis or "")
        if not m:
            return 1
        words = {"two": 2, "three": 3, "four": 4, "six": 6, "eight": 8}
        return words.get(m[1], 0) or int(m[1])


def _line_of(text: str, key: str) -> int | None:
    m = re.search(rf"(?m)^\s*{re.escape(key)}\s*=", text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _bad(origin: str, text: str, key: str, msg: str) -> InputError:
    line = _line_of(text, key.split(".")[-1]) if text else None
    return InputError(f"{origin}{f':{line}' if line else ''}: {key}: {msg}")


def read_toml(path: str) -> tuple[dict[str, Any], str]:
    from gpuadvisor.inputs import loads_toml, read_text

    p = Path(path)
    if not p.exists():
        raise InputError(
            f"{path}: no such build file (give a .toml build, preset:NAME, or a built-in build: "
            f"{', '.join(builtin_names())})"
        )
    text = read_text(p, "a TOML build file", MAX_FILE_BYTES)
    return loads_toml(text, str(path), "a TOML build file"), text


def builtin_names() -> list[str]:
    files = resources.files("gpuadvisor.plan.builds")
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


def load_build(ref: str) -> Build:
    """A build from a file path, ``preset:NAME`` or a built-in build name."""
    if ref.startswith("preset:"):
        from gpuadvisor.probes.rigdesc import preset_names

        name = ref.split(":", 1)[1]
        if name not in preset_names():
            raise InputError(f"{ref}: no such preset{nearest(name, preset_names())} (gpuadvisor presets lists them)")
        text = (resources.files("gpuadvisor.probes.presets") / f"{name}.toml").read_text(encoding="utf-8")
        return parse_build(tomllib.loads(text), text, f"preset {name}")
    if ref.endswith(".toml") or "/" in ref or Path(ref).exists():
        data, text = read_toml(ref)
        return parse_build(data, text, ref)
    names = builtin_names()
    if ref not in names:
        raise InputError(
            f"unknown build {ref!r}{nearest(ref, names)} (built-in builds: {', '.join(names)}; or a .toml file, or "
            "preset:NAME)"
        )
    text = (resources.files("gpuadvisor.plan.builds") / f"{ref}.toml").read_text(encoding="utf-8")
    return parse_build(tomllib.loads(text), text, f"built-in build {ref}")


def builtin_builds() -> list[Build]:
    return [load_build(n) for n in builtin_names()]


def _typed(origin: str, text: str, data: dict[str, Any], key: str, kind: Any) -> Any:
    v = data.get(key)
    if v is None:
        return None
    ok = isinstance(v, kind) and not (isinstance(v, bool) and kind is not bool)
    if not ok:
        want = kind.__name__ if isinstance(kind, type) else "number"
        raise _bad(origin, text, key, f"expected {want}, got {v!r}")
    if isinstance(v, int | float) and not isinstance(v, bool) and not (0 < v < 1e12):
        raise _bad(origin, text, key, f"must be a positive number, got {v!r}")
    return v


def _price(origin: str, text: str, price: dict[str, Any]) -> dict[str, Any]:
    for k, v in price.items():
        if k not in PRICE_KEYS:
            raise _bad(
                origin,
                text,
                f"price.{k}",
                f"unknown key{nearest(k, sorted(PRICE_KEYS))} (allowed: {', '.join(sorted(PRICE_KEYS))})",
            )
        if k.endswith("usd") and (not isinstance(v, int | float) or isinstance(v, bool) or not (0 < v < 1e12)):
            raise _bad(origin, text, f"price.{k}", f"expected a positive number of US dollars, got {v!r}")
    return dict(price)


def _check_compact_keys(origin: str, text: str, data: dict[str, Any]) -> None:
    """A compact build's keys: each known and of its type, name, gpu and count given, the name well-formed."""
    for k in data:
        if k not in COMPACT_KEYS:
            raise _bad(
                origin,
                text,
                k,
                f"unknown key{nearest(k, sorted(COMPACT_KEYS))} (allowed: {', '.join(sorted(COMPACT_KEYS))})",
            )
    for k, kind in COMPACT_KEYS.items():
        _typed(origin, text, data, k, kind)
    for req in ("name", "gpu", "count"):
        if req not in data and not (req == "count" and isinstance(data.get("gpu"), list)):
            raise InputError(f"{origin}: {req}: missing (a build names at least name, gpu and count)")
    _check_name(origin, text, data)


def pace_card(specs: Any) -> GpuSpec:
    """The card that sets the pace of a group of GPUs that wait for each other: the slowest (bf16 peak, else fp32,
    as the advisor sizes a mixed rig)."""
    return min(specs, key=lambda s: (s.tflops.get("bf16") or s.tflops.get("fp32") or 0.0, s.memory_bandwidth_gbps))


GPU_ITEM = re.compile(r"\s*(?:(\d{1,3})\s*x\s*)?(.+?)\s*")


def parse_gpu_kinds(items: list[Any], where: str) -> tuple[tuple[GpuSpec, int], ...]:
    """``["1x rtx-4090", "1x rtx-3090"]`` -> ((GPU, count), ...) in the order given, one kind once."""
    from gpuadvisor.catalog.platforms import resolve_gpu

    out: dict[str, tuple[GpuSpec, int]] = {}
    for item in items:
        m = GPU_ITEM.fullmatch(item) if isinstance(item, str) else None
        if not m or not m[2]:
            raise InputError(f'{where}: {item!r}: expected NxGPU, e.g. "2x rtx-3090"')
        n = int(m[1] or 1)
        if not 1 <= n <= MAX_GPUS:
            raise InputError(f"{where}: {item!r}: 1 to {MAX_GPUS} GPUs")
        g = resolve_gpu(m[2], f"{where}: {item!r}")
        out[g.id] = (g, out[g.id][1] + n if g.id in out else n)
    if not out:
        raise InputError(f'{where}: no GPUs listed (e.g. ["1x rtx-4090", "1x rtx-3090"])')
    return tuple(out.values())


def _compact_gpus(origin: str, text: str, data: dict[str, Any]) -> tuple[GpuSpec, int, tuple[tuple[GpuSpec, int], ...]]:
    """The build's GPU (the pace card), the GPUs per node, and its kinds when it has more than one: ``gpu`` is
    one name with ``count``, or a list of NxGPU (a mixed build)."""
    if not isinstance(data["gpu"], list):
        return build_gpu(origin, text, data["gpu"]), int(data["count"]), ()
    where = f"{origin}:{_line_of(text, 'gpu') or 1}: gpu"
    kinds = parse_gpu_kinds(data["gpu"], where)
    total = sum(n for _, n in kinds)
    if "count" in data and int(data["count"]) != total:
        raise _bad(origin, text, "count", f"{data['count']} but the gpu list has {total} GPUs (leave count out)")
    if len(kinds) == 1:
        return kinds[0][0], total, ()
    if data.get("rent"):
        raise _bad(origin, text, "gpu", "a rented build is one GPU model (clouds rent one kind per machine)")
    if data.get("fabric", "none") != "none" or data.get("layout") == "hgx":
        raise _bad(origin, text, "gpu", 'NVLink joins cards of one model: a mixed build has fabric = "none"')
    return pace_card(g for g, _ in kinds), total, kinds


def _compact_cpu(origin: str, text: str, data: dict[str, Any], rent: bool) -> CpuSpec | None:
    """The build's CPU from the catalog; a bought build must name one, a rented one may not."""
    if "cpu" in data:
        cpu = find_cpu(data["cpu"])
        if cpu is None:
            raise InputError(f"{origin}:{_line_of(text, 'cpu') or 1}: cpu: {unknown_cpu(data['cpu'])}")
        return cpu
    if not rent:
        raise InputError(
            f'{origin}: cpu: missing (a bought build names its CPU, e.g. cpu = "threadripper-pro-7975wx"; a rented one '
            "says rent = true)"
        )
    return None


def parse_build(data: dict[str, Any], text: str, origin: str) -> Build:
    if "ports" in data or "gpus" in data:
        return _from_rig_description(data, text, origin)
    _check_compact_keys(origin, text, data)
    gpu, count, mix = _compact_gpus(origin, text, data)
    rent = bool(data.get("rent", False))
    cpu = _compact_cpu(origin, text, data, rent)
    fabric = data.get("fabric", "nvswitch" if data.get("layout") == "hgx" else "none")
    if fabric not in FABRICS:
        raise _bad(origin, text, "fabric", f"{fabric!r} is not one of {', '.join(FABRICS)}")
    layout = data.get("layout", "hgx" if fabric == "nvswitch" else "direct")
    if layout not in LAYOUTS:
        raise _bad(origin, text, "layout", f"{layout!r} is not one of {', '.join(LAYOUTS)}")
    if fabric != "none" and not gpu.nvlink_links:
        raise _bad(origin, text, "fabric", f'{gpu.name} has no NVLink: use fabric = "none"')
    if not 1 <= count <= MAX_GPUS:
        raise _bad(origin, text, "count", f"{count} GPUs: a build has 1 to {MAX_GPUS} GPUs")
    slots = data.get("slots")
    if slots is not None and (len(slots) != count or any(s not in (1, 2, 4, 8, 16) for s in slots)):
        raise _bad(
            origin, text, "slots", f"expected {count} lane counts from 1, 2, 4, 8, 16 (one per GPU), got {slots!r}"
        )
    nodes = int(data.get("nodes", 1))
    if not 1 <= nodes <= MAX_NODES:
        raise _bad(origin, text, "nodes", f"{nodes} nodes: a build has 1 to {MAX_NODES} nodes")
    network = data.get("network")
    if network is not None and network not in NETWORKS:
        raise _bad(origin, text, "network", f"{network!r} is not one of {', '.join(NETWORKS)}")
    if nodes > 1 and network is None:
        raise _bad(
            origin, text, "nodes", f"{nodes} nodes need a network between them: network = one of {', '.join(NETWORKS)}"
        )
    sockets = int(data.get("sockets", 1))
    if cpu is not None and sockets > cpu.max_sockets:
        raise _bad(
            origin, text, "sockets", f"{cpu.name} runs in at most {plural(cpu.max_sockets, 'socket')}, not {sockets}"
        )
    return Build(
        name=data["name"],
        title=data.get("title", data["name"]),
        origin=origin,
        gpu=gpu,
        count=count,
        cpu=cpu,
        sockets=sockets,
        ram_gib=data.get("ram_gib"),
        psu_watts=data.get("psu_watts"),
        fabric=fabric,
        nvlink_links=data.get("nvlink_links"),
        layout=layout,
        slots=slots,
        chassis=data.get("chassis"),
        p2p=data.get("p2p"),
        description=data.get("description", ""),
        sources=list(data.get("sources", [])),
        price=_price(origin, text, data.get("price", {})),
        rent=rent,
        power_at_load_w=data.get("power_at_load_w"),
        power_source=data.get("power_source"),
        nodes=nodes,
        network=network,
        storage=_storage(origin, data.get("storage")),
        mix=mix,
    )


def _storage(origin: str, table: Any) -> Any:
    if table is None:
        return None
    from gpuadvisor.plan.storage import parse_storage

    return parse_storage(origin, table)


def _check_name(origin: str, text: str, data: dict[str, Any]) -> None:
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _bad(origin, text, "name", f"expected a non-empty name, got {name!r} (the plan shows builds by name)")
    if any(ord(c) < 32 for c in name) or len(name) > 80:
        raise _bad(origin, text, "name", "a build name is one line of at most 80 characters")


def build_gpu(origin: str, text: str, name: str) -> GpuSpec:
    """The catalog GPU a build names (see catalog.platforms.resolve_gpu): never a guess between several."""
    from gpuadvisor.catalog.platforms import resolve_gpu

    return resolve_gpu(name, f"{origin}:{_line_of(text, 'gpu') or 1}: gpu")


def _from_rig_description(data: dict[str, Any], text: str, origin: str) -> Build:
    """A full rig description (a preset, or a rig file), with the plan's own facts in an optional [plan] table."""
    from gpuadvisor.probes.rigdesc import parse_description

    data = dict(data)
    gpus = data.get("gpus")
    if isinstance(gpus, list) and len(gpus) > MAX_GPUS:
        raise _bad(
            origin,
            text,
            "gpus",
            f"{len(gpus)} GPUs: a planned build has 1 to {MAX_GPUS} GPUs "
            f"(for more, plan one node and pass the node count)",
        )
    if "name" in data:
        _check_name(origin, text, data)
    plan = data.pop("plan", {})
    for k in plan:
        if k not in PLAN_KEYS:
            raise _bad(
                origin,
                text,
                f"plan.{k}",
                f"unknown key{nearest(k, sorted(PLAN_KEYS))} (allowed: {', '.join(sorted(PLAN_KEYS))})",
            )
    desc = parse_description(data, origin)  # every key checked, one line per mistake
    kinds: dict[str, tuple[GpuSpec, int]] = {}
    for i, g in enumerate(desc.gpus):
        spec = find_gpu_spec(g.props["name"])
        if spec is None:
            raise InputError(f"{origin}: gpus[{i}].name: {unknown_gpu(g.props['name'])}")
        kinds[spec.id] = (spec, kinds[spec.id][1] + 1 if spec.id in kinds else 1)
    if not kinds:
        raise InputError(f"{origin}: gpu.name: {unknown_gpu('(none)')}")
    gpu = pace_card(g for g, _ in kinds.values())
    host = data.get("host", {})
    cpu = (
        find_cpu(str(plan.get("cpu", host.get("cpu_model", ""))))
        if (plan.get("cpu") or host.get("cpu_model"))
        else None
    )
    if plan.get("cpu") and cpu is None:
        raise InputError(f"{origin}: plan.cpu: {unknown_cpu(plan['cpu'])}")
    fabric = (
        "nvswitch"
        if desc.gpus and desc.gpus[0].props.get("nvlink_fabric") == "nvswitch"
        else ("bridge" if desc.nvlink_bridges else "none")
    )
    return Build(
        name=desc.name,
        title=desc.title,
        origin=origin,
        gpu=gpu,
        count=len(desc.gpus),
        cpu=cpu,
        sockets=int(plan.get("sockets", host.get("sockets", 1))),
        ram_gib=plan.get("ram_gib", host.get("memory_total_gib")),
        psu_watts=plan.get("psu_watts", host.get("psu_watts")),
        fabric=fabric,
        layout="given",
        chassis=plan.get("chassis"),
        description=desc.description,
        sources=desc.sources,
        price=_price(origin, text, plan.get("price", {})),
        rent=bool(plan.get("rent", False)),
        power_at_load_w=plan.get("power_at_load_w"),
        power_source=plan.get("power_source"),
        rig_description=data,
        storage=_storage(origin, plan.get("storage")),
        mix=tuple(kinds.values()) if len(kinds) > 1 else (),
    )
