"""NCCL's topology dump (``NCCL_TOPO_DUMP_FILE``; the same XML ``NCCL_TOPO_FILE`` reads): the node as NCCL saw it.

NCCL (src/graph/xml.cc) writes ``<system version="1">``, a ``<cpu numaid=".." affinity=".." ...>`` per NUMA node,
under it the PCI tree as nested ``<pci busid=".." class=".." link_speed="8 GT/s" link_width="16">`` elements, a
``<gpu dev="0" sm="70" rank="0" gdr="1">`` inside its PCI device with one ``<nvlink target="<bus id>" count="2"
tclass="0x030200"/>`` per peer (only active links are counted: ncclTopoGetXmlFromGpu skips a link NVML does not
report active), and ``<nic>``/``<net>`` for the network. A pci element's ``link_speed`` and ``link_width`` are the
link's maximum, the lower of the device's and its port's ``max_link_speed``/``max_link_width`` in sysfs, not its
current state; ``""`` and ``0`` where NCCL could not read them (a VM).

Read: each GPU by its ``dev`` (the CUDA device index), its bus id, compute capability (``sm`` 70 -> 7.0), NUMA node,
its link's maximum PCIe generation and width, and one NVLink per link counted (active, towards the target bus id:
a GPU or, ``tclass`` 0x068000, an NVSwitch). A paste cut inside the XML keeps what came before the cut.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, NvLink, Rig
from gpuadvisor.importers import values as v
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside
from gpuadvisor.physics.links import gen_from_speed

WHAT = "NCCL topology dump (NCCL_TOPO_DUMP_FILE)"
_SYSTEM = re.compile(r'^\s*<system\s+version="\d+"\s*>')
_TAG = re.compile(r"<(/?)(system|cpu|pci|gpu|nvlink|nic|net)\b([^<>]*?)(/?)>")
_ATTR = re.compile(r'(\w+)="([^"<>]{0,200})"')
_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
_LONGEST = 4000
NOT_IN_DUMP = "NCCL's topology dump does not hold it"
LINK_MAX = (
    "NCCL's topology dump gives the link's maximum (the lower of the device's and its port's max_link_speed and "
    "max_link_width in sysfs), not its current state"
)
NO_LINK_NUMBERS = "NCCL's topology dump counts NVLinks per peer: the links are numbered in its order, not NVML's"
_TARGET_KIND = {"0x068000": "switch", "0x030200": "gpu", "0x030000": "gpu"}


@outside("nccl-topo-xml")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``<system version="1">``, or (pasted without it) a ``<pci busid=..>`` line with a ``<gpu dev=..`` line
    right below it."""
    line = lines[i]
    if _SYSTEM.match(line):
        return True
    if current is not None or not line.lstrip().startswith("<pci busid="):
        return False
    return any(x.lstrip().startswith("<gpu dev=") for x in lines[i + 1 : i + 3])


def ends(line: str) -> bool:
    return line.strip() == "</system>"


def _attrs(text: str) -> dict[str, str]:
    return dict(_ATTR.findall(text))


def _gpu(attrs: dict[str, str], pci: dict[str, str], numa: int | None) -> Gpu | None:
    dev = v.to_int(attrs.get("dev"))
    if dev is None:
        return None
    g = Gpu(index=dev, bus_id=v.normalize_bus_id(pci.get("busid")))
    sm = v.to_int(attrs.get("sm"))
    g.compute_capability = f"{sm // 10}.{sm % 10}" if sm else None
    g.numa_node = numa
    speed = _SPEED.match(pci.get("link_speed", ""))
    g.pcie.max_gen = gen_from_speed(float(speed.group(1))) if speed else None
    g.pcie.max_width = v.to_int(pci.get("link_width")) or None  # 0: NCCL could not read it
    for f in ("current_gen", "current_width"):
        g.pcie.unavailable[f] = LINK_MAX
    for f in ("max_gen", "max_width"):
        if getattr(g.pcie, f) is None:
            g.pcie.unavailable[f] = "NCCL's topology dump leaves it empty (it could not read the link from sysfs)"
    for f in ("name", "uuid", "memory_total_bytes", "bus_id", "compute_capability"):
        if getattr(g, f) is None:
            g.unavailable[f] = NOT_IN_DUMP
    return g


def parse_nccl_topo_xml(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs of the dump with their PCIe link maximum, NUMA node and NVLinks."""
    rig = Rig()
    pcis: list[dict[str, str]] = []  # the open <pci> elements, outermost first
    numa: int | None = None
    gpu: Gpu | None = None
    closed = False
    for k, line in enumerate(clean_lines(text)):
        if len(line) > _LONGEST:
            continue
        for close, tag, body, empty in _TAG.findall(line):
            attrs = _attrs(body)
            if tag == "cpu" and not close:
                numa = v.to_int(attrs.get("numaid"))
            elif tag == "pci":
                if close and pcis:
                    pcis.pop()
                elif not close and not empty:
                    pcis.append(attrs)
            elif tag == "gpu" and not close:
                gpu = _gpu(attrs, pcis[-1] if pcis else {}, numa)
                if gpu is not None:
                    rig.gpus.append(gpu)
                    rig.origins[f"gpus[{len(rig.gpus) - 1}]"] = f"{source}:{first_line + k}"
            elif tag == "gpu":
                gpu = None
            elif tag == "nvlink" and gpu is not None:
                _nvlinks(gpu, attrs)
            closed = closed or (tag == "system" and bool(close))
    if not rig.gpus:
        raise ImportParseError(source, first_line, f"{WHAT}: no <gpu> element")
    _peers(rig.gpus)
    if any(g.nvlinks for g in rig.gpus):
        rig.problems.append(f"{source}: line {first_line}: {NO_LINK_NUMBERS}")
    if gpu is not None:  # cut inside a <gpu>: its later <nvlink> lines are not shown
        gpu.unavailable["nvlinks"] = f"{WHAT} cut inside this GPU's element: its other NVLinks are not shown"
    if not closed:
        rig.problems.append(f"{source}: line {first_line}: {WHAT} cut before </system>: what came before is read")
    return rig


def _nvlinks(gpu: Gpu, attrs: dict[str, str]) -> None:
    """One active NVLink per link a ``<nvlink>`` counts; a count cut off (``count="1" tc``) is read as written."""
    count = v.to_int(attrs.get("count")) or 0
    target = v.normalize_bus_id(attrs.get("target"))
    kind = _TARGET_KIND.get(attrs.get("tclass", ""), "unknown") if "tclass" in attrs else "unknown"
    for _ in range(min(count, 64)):
        gpu.nvlinks.append(NvLink(link=len(gpu.nvlinks), active=True, remote_bus_id=target, remote_device_type=kind))


def _peers(gpus: list[Gpu]) -> None:
    """Each NVLink towards a GPU of the dump names that GPU's index."""
    by_bus = {g.bus_id: g.index for g in gpus if g.bus_id}
    for g in gpus:
        for link in g.nvlinks or []:
            link.remote_gpu_index = by_bus.get(link.remote_bus_id or "")
            if link.remote_gpu_index is not None:
                link.remote_device_type = "gpu"
