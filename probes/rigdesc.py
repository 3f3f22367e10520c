"""A rig description: the TOML file a simulated rig is served from (presets ship as such files).

The format is documented in probes/presets/README.md. ``load_description`` checks every key and turns a
mistake into one InputError line naming the file and key.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gpuadvisor.errors import InputError

# Per-GPU properties and their defaults; [gpu] sets them for every GPU, [[gpus]] entries override.
GPU_DEFAULTS: dict[str, Any] = {
    "name": "NVIDIA GPU",
    "brand": None,  # nvidia-smi's "Product Brand" word; None: the brand the name shows, else "NVIDIA"
    "memory_total_mib": 16384,
    "memory_used_mib": 0,
    "architecture": 9,  # nvmlDeviceArchitecture_t: 5 volta, 7 ampere, 8 ada, 9 hopper, 10 blackwell
    "compute_capability": "9.0",
    "power_limit_w": 300.0,
    "power_default_limit_w": 300.0,
    "power_draw_w": 60.0,
    "temperature_c": 35,
    "sm_clock_max_mhz": 1980,
    "ecc": True,  # true | false | "unsupported"
    "ecc_errors": {},  # corrected_volatile, uncorrected_volatile, corrected_aggregate, uncorrected_aggregate,
    # corrected_sram_volatile, corrected_sram_aggregate
    "retired_pages": "unsupported",  # "unsupported" | {single_bit = n, double_bit = n, pending = bool}
    "remapped_rows": [0, 0, False, False],  # [correctable, uncorrectable, pending, failure] | "unsupported"
    "clocks_event_reasons": ["gpu_idle"],
    "performance_state": 8,  # P8: idle (P0 under load)
    "persistence": True,
    "mig": False,  # true | false | "unsupported"
    "pcie_gen": 4,
    "pcie_max_gen": 4,
    "pcie_gpu_max_gen": None,  # defaults to pcie_max_gen
    "pcie_width": 16,
    "pcie_max_width": 16,
    "slot_max_width": None,  # lanes the slot (or the platform) wires to this GPU, when fewer than the card has
    "pcie_replay": 0,
    "pcie_aer_correctable": 0,  # sysfs AER correctable-error total of the GPU's own link
    "nvlinks": 0,  # number of NVLink links (0: NVLink not supported)
    "nvlink_version": None,
    "nvlink_fabric": None,  # "nvswitch" | "bridge" | None
    "nvswitches": 4,  # NVSwitch chips a GPU's links spread over (link k goes to chip first_nvswitch + k % nvswitches)
    "first_nvswitch": 0,  # e.g. 6 for the second baseboard of a DGX-2
    "nvlink_inactive": [],
    "nvlink_errors": {},  # {"<link>" = {replay = n, recovery = n, crc_flit = n, crc_data = n}}
    "unsupported": [],  # NVML function names that raise NotSupported on this GPU
    "no_permission": [],  # NVML function names that raise NoPermission
    "lost": False,  # every call on this GPU raises GpuIsLost
    # NVLink fabric registration (nvmlDeviceGetGpuFabricInfo): "completed" | "in-progress" | "not-started";
    # None: completed on NVSwitch GPUs of Hopper and later, not supported elsewhere
    "fabric_state": None,
    "fabric_status": 0,  # nvmlReturn_t of the registration (0 success)
    "fabric_degraded_bandwidth": None,  # the V form's health mask: True degraded, False not, None not reported
}
PORT_KEYS = {"id", "kind", "bdf", "parent", "host_bridge", "numa_node", "gen", "max_gen", "width", "max_width", "acs"}
GPU_KEYS = set(GPU_DEFAULTS) | {"bus_id", "parent", "numa_node", "uuid", "serial"}
NIC_KEYS = {
    "name",
    "bdf",
    "parent",
    "gen",
    "max_gen",
    "width",
    "max_width",
    "kind",
    "state",
    "phys_state",
    "rate_gbps",
    "link_layer",
    "firmware",
    "ca_type",
}
# [node]: what the beyond-the-GPU probes read (kernel log, modules, IOMMU, fabric manager, limits); see
# probes/presets/README.md. [[kernel_events]]: Xid / SXid lines planted in the simulated kernel log.
NODE_KEYS = {
    "uptime_s",
    "shm_gib",
    "memlock_kib",
    "peermem",
    "iommu",
    "fabric_manager",
    "lost_gpus",
    "processes",
    "open_kernel_module",
}
EVENT_KEYS = {"kind", "code", "gpu", "bus_id", "uptime_s", "text", "pid", "process", "repeat"}
TOP_KEYS = {
    "name",
    "title",
    "description",
    "sources",
    "software",
    "host",
    "numa",
    "gpu",
    "gpus",
    "ports",
    "nics",
    "nvlink_bridges",
    "p2p_pcie",
}
TOP_KEYS |= {"node", "kernel_events"}  # beyond the GPU (probes/fakebeyond.py)
HOST_KEYS = {
    "hostname",
    "os",
    "kernel",
    "arch",
    "cpu_model",
    "sockets",
    "cores_physical",
    "cores_logical",
    "memory_total_gib",
    "psu_watts",
    "net_interfaces",
}
SOFTWARE_KEYS = {
    "driver_version",
    "cuda_driver_version",
    "nvml_version",
    "torch_version",
    "torch_cuda_version",
    "nccl_version",
    "env",
}


@dataclass
class PortDesc:
    id: str
    kind: str  # root-port | switch
    bdf: str
    parent: str | None = None
    host_bridge: str | None = None
    numa_node: int | None = None
    gen: int | None = None
    max_gen: int | None = None
    width: int | None = None
    max_width: int | None = None
    acs: list[str] | None = None  # ACS Control bits set (lspci names: ReqRedir, CmpltRedir, ...)


@dataclass
class GpuDesc:
    index: int
    bus_id: str
    parent: str
    numa_node: int | None
    props: dict[str, Any]
    uuid: str
    serial: str


@dataclass
class NicDesc:
    name: str
    bdf: str
    parent: str
    kind: str = "infiniband"  # infiniband | ethernet
    gen: int = 4
    max_gen: int = 4
    width: int = 16
    max_width: int = 16
    state: str = "ACTIVE"  # ACTIVE | DOWN | INIT | ARMED
    phys_state: str = "LinkUp"  # LinkUp | Polling | Disabled
    rate_gbps: float = 400.0
    link_layer: str | None = None  # default: InfiniBand for kind infiniband, Ethernet (RoCE) otherwise
    firmware: str = "28.39.2048"
    ca_type: str = "MT4129"


@dataclass
class RigDesc:
    name: str
    title: str
    description: str
    sources: list[str]
    origin: str
    software: dict[str, Any]
    host: dict[str, Any]
    numa: list[dict[str, Any]]
    gpus: list[GpuDesc]
    ports: dict[str, PortDesc]
    nics: list[NicDesc]
    nvlink_bridges: list[tuple[int, int, int]] = field(default_factory=list)
    p2p_pcie: str = "OK"
    node: dict[str, Any] = field(default_factory=dict)
    kernel_events: list[dict[str, Any]] = field(default_factory=list)

    def numa_of_port(self, port_id: str) -> int | None:
        port = self.ports[port_id]
        while port.kind != "root-port" and port.parent:
            port = self.ports[port.parent]
        return port.numa_node

    def root_of(self, port_id: str) -> PortDesc:
        port = self.ports[port_id]
        while port.kind != "root-port" and port.parent:
            port = self.ports[port.parent]
        return port


def _err(origin: str, where: str, msg: str) -> InputError:
    return InputError(f"{origin}: {where}: {msg}")


def _check_keys(origin: str, where: str, table: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise _err(origin, where, "expected a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _err(
            origin,
            f"{where}.{unknown[0]}" if where else unknown[0],
            f"unknown key (allowed: {', '.join(sorted(allowed))})",
        )
    return table


def _check_type(origin: str, where: str, value: Any, default: Any) -> None:
    if default is None or value is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool) or value == "unsupported"
    elif isinstance(default, int | float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str) or (where.endswith("retired_pages") and isinstance(value, dict))
    elif isinstance(default, list):
        ok = isinstance(value, list) or value == "unsupported"
    elif isinstance(default, dict):
        ok = isinstance(value, dict) or value == "unsupported"
    else:
        ok = True
    if not ok:
        raise _err(origin, where, f"expected {type(default).__name__}, got {value!r}")


def _parse_ports(data: dict[str, Any], origin: str) -> dict[str, PortDesc]:
    """The PCIe ports (root ports and switches) of a description, by id, each checked."""
    ports: dict[str, PortDesc] = {}
    for i, p in enumerate(data["ports"]):
        _check_keys(origin, f"ports[{i}]", p, PORT_KEYS)
        for req in ("id", "kind", "bdf"):
            if req not in p:
                raise _err(origin, f"ports[{i}].{req}", "missing")
        if p["kind"] not in ("root-port", "switch"):
            raise _err(origin, f"ports[{i}].kind", f"{p['kind']!r} is not root-port or switch")
        if p["kind"] == "root-port" and "host_bridge" not in p:
            raise _err(
                origin, f"ports[{i}].host_bridge", 'missing (a root port names its host bridge, e.g. "pci0000:15")'
            )
        if p["kind"] == "switch" and p.get("parent") is None:
            raise _err(origin, f"ports[{i}].parent", "missing (a switch hangs off a root port or another switch)")
        if p["id"] in ports:
            raise _err(origin, f"ports[{i}].id", f"duplicate id {p['id']!r}")
        ports[p["id"]] = PortDesc(**p)
    for i, p in enumerate(ports.values()):
        if p.parent is not None and p.parent not in ports:
            raise _err(origin, f"ports[{i}].parent", f"no port with id {p.parent!r}")

    return ports


def _parse_gpus(
    data: dict[str, Any], origin: str, ports: dict[str, PortDesc], defaults: dict[str, Any]
) -> list[GpuDesc]:
    """The GPUs of a description, each on a known port, its properties over the [gpu] defaults."""
    gpus: list[GpuDesc] = []
    for i, g in enumerate(data["gpus"]):
        _check_keys(origin, f"gpus[{i}]", g, GPU_KEYS)
        for req in ("bus_id", "parent"):
            if req not in g:
                raise _err(origin, f"gpus[{i}].{req}", "missing")
        if g["parent"] not in ports:
            raise _err(origin, f"gpus[{i}].parent", f"no port with id {g['parent']!r}")
        props = dict(defaults)
        for k, v in g.items():
            if k in GPU_DEFAULTS:
                _check_type(origin, f"gpus[{i}].{k}", v, GPU_DEFAULTS[k])
                props[k] = v
        if props["pcie_gpu_max_gen"] is None:
            props["pcie_gpu_max_gen"] = props["pcie_max_gen"]
        gpus.append(
            GpuDesc(
                index=i,
                bus_id=g["bus_id"].lower(),
                parent=g["parent"],
                numa_node=g.get("numa_node"),
                props=props,
                uuid=g.get("uuid", f"GPU-{zlib.crc32(data['name'].encode()):08x}-5e1a-4000-8000-{i:012x}"),
                serial=g.get("serial", f"SIM{i:010d}"),
            )
        )
    return gpus


def parse_description(data: dict[str, Any], origin: str) -> RigDesc:
    _check_keys(origin, "", data, TOP_KEYS)
    for req in ("name", "gpus", "ports"):
        if req not in data:
            raise _err(origin, req, "missing (see probes/presets/README.md for the format)")
    host = _check_keys(origin, "host", data.get("host", {}), HOST_KEYS)
    software = _check_keys(origin, "software", data.get("software", {}), SOFTWARE_KEYS)
    defaults = dict(GPU_DEFAULTS)
    base = _check_keys(origin, "gpu", data.get("gpu", {}), set(GPU_DEFAULTS))
    for k, v in base.items():
        _check_type(origin, f"gpu.{k}", v, GPU_DEFAULTS[k])
    defaults.update(base)

    ports = _parse_ports(data, origin)
    gpus = _parse_gpus(data, origin, ports, defaults)
    bridges = []
    for i, b in enumerate(data.get("nvlink_bridges", [])):
        _check_keys(origin, f"nvlink_bridges[{i}]", b, {"gpus", "links"})
        a, c = b["gpus"]
        if not (0 <= a < len(gpus) and 0 <= c < len(gpus)):
            raise _err(origin, f"nvlink_bridges[{i}].gpus", f"GPU index out of range (0..{len(gpus) - 1})")
        bridges.append((a, c, int(b["links"])))
    nics = []
    for i, n in enumerate(data.get("nics", [])):
        _check_keys(origin, f"nics[{i}]", n, NIC_KEYS)
        if n.get("parent") not in ports:
            raise _err(origin, f"nics[{i}].parent", f"no port with id {n.get('parent')!r}")
        nics.append(NicDesc(**n))
    numa = data.get("numa", [])
    for i, n in enumerate(numa):
        _check_keys(origin, f"numa[{i}]", n, {"id", "cpus", "memory_gib"})
    node = _check_keys(origin, "node", data.get("node", {}), NODE_KEYS)
    events = data.get("kernel_events", [])
    for i, ev in enumerate(events):
        _check_keys(origin, f"kernel_events[{i}]", ev, EVENT_KEYS)
        if not isinstance(ev.get("code"), int):
            raise _err(origin, f"kernel_events[{i}].code", "missing or not an integer (the Xid or SXid number)")
        if "gpu" in ev and not (isinstance(ev["gpu"], int) and 0 <= ev["gpu"] < len(gpus)):
            raise _err(origin, f"kernel_events[{i}].gpu", f"GPU index out of range (0..{len(gpus) - 1})")
    p2p = data.get("p2p_pcie", "OK")
    if p2p not in ("OK", "CNS", "GNS", "TNS", "DIS", "NS", "U"):
        raise _err(origin, "p2p_pcie", f"{p2p!r} is not one of OK, CNS, GNS, TNS, DIS, NS, U")
    return RigDesc(
        name=data["name"],
        title=data.get("title", data["name"]),
        description=data.get("description", ""),
        sources=list(data.get("sources", [])),
        origin=origin,
        software=software,
        host=host,
        numa=numa,
        gpus=gpus,
        ports=ports,
        nics=nics,
        nvlink_bridges=bridges,
        p2p_pcie=p2p,
        node=node,
        kernel_events=list(events),
    )


def preset_names() -> list[str]:
    files = resources.files("gpuadvisor.probes.presets")
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


def load_description(name_or_path: str) -> RigDesc:
    """A preset by name, or a rig description TOML file by path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.exists():
        from gpuadvisor.inputs import CONFIG_LIMIT, read_text

        if not path.exists() and not path.is_symlink():
            raise InputError(
                f"{path}: no such rig description file (or give a preset name: {', '.join(preset_names())})"
            )
        text = read_text(path, "a TOML rig description", CONFIG_LIMIT)
        origin = str(path)
    else:
        names = preset_names()
        if name_or_path not in names:
            raise InputError(
                f"unknown preset {name_or_path!r}: choose one of {', '.join(names)} (gpuadvisor presets), or give a "
                "rig description .toml file"
            )
        text = (resources.files("gpuadvisor.probes.presets") / f"{name_or_path}.toml").read_text(encoding="utf-8")
        origin = f"preset {name_or_path}"
    from gpuadvisor.inputs import loads_toml

    data = loads_toml(text, origin, "a TOML rig description")
    if "base" in data:
        data = overlay(data, origin)
    return parse_description(data, origin)


def overlay(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """A description on top of a preset (``base = "dgx-h100"``): its top-level keys replace the preset's; the
    tables host, software, gpu and node are merged key by key; ``[gpus.N]``, ``[nics.N]`` and ``[ports.N]``
    (a table of indices instead of an array) change entry N of the preset's list. Plants a fault in a few lines."""
    from gpuadvisor.inputs import loads_toml

    base_name = data.pop("base")
    names = preset_names()
    if not isinstance(base_name, str) or base_name not in names:
        raise _err(origin, "base", f"{base_name!r} is not a preset (one of {', '.join(names)})")
    text = (resources.files("gpuadvisor.probes.presets") / f"{base_name}.toml").read_text(encoding="utf-8")
    merged: dict[str, Any] = loads_toml(text, f"preset {base_name}", "a TOML rig description")
    for key, value in data.items():
        if key in ("gpus", "nics", "ports") and isinstance(value, dict):
            items = merged.get(key, [])
            for idx, patch in value.items():
                if not (str(idx).isdigit() and int(idx) < len(items)) or not isinstance(patch, dict):
                    raise _err(origin, f"{key}.{idx}", f"no entry {idx} in preset {base_name} (0..{len(items) - 1})")
                items[int(idx)] = {**items[int(idx)], **patch}
        elif key in ("host", "software", "gpu", "node") and isinstance(value, dict):
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = value
    return merged
