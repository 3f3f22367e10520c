"""What says an inactive NVLink should be up (rule GA204).

An NVLink a GPU has but does not use is a fault only against something that says it should be up: GPUs of the same
model in the scan with more links active (the one with fewer is the suspect; all alike is a wiring design), error
counts on the inactive link (it carried traffic once), its far end named, an NVLink Xid in the kernel log, or a board
that wires every link: NVSwitch baseboards (HGX and DGX A100, H100, H200, B200), whose GPUs join every NVLink to the
switches, the 8-GPU V100 SXM2 cube mesh, or an NVSwitch the scan itself shows.
Elsewhere a GPU's unused links are the board's design as often as a fault: two V100 SXM2 of a two-GPU node joined by
two of their six links, PCIe cards joined by one bridge of three. Then GPUs of one model that are alike are a design
(info); a GPU shown alone cannot be told from a fault (warn: on a board that wires every link, they are down).
"""

from __future__ import annotations

import re

from gpuadvisor import catalog
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.rules.fabric import _nvswitch

# catalog ids of the SXM parts sold on NVSwitch baseboards only (or, for the 4-GPU HGX boards, joined to each other by
# every link), so that their whole link count is the design
WIRED = {"a100-sxm4-80gb", "a100-sxm4-40gb", "h100-sxm5-80gb", "h200-sxm", "b200", "v100-sxm3-32gb", "gb200", "gb300"}
WIRED_SOURCE = (
    "NVSwitch baseboards join every NVLink of each GPU to the NVSwitches for all-to-all traffic at the full NVLink "
    "bandwidth (NVIDIA Fabric Manager User Guide, overview; NVSwitch platforms: HGX A100, H100, H800, H200, B200 and "
    "B300 8-GPU baseboards, NVIDIA vGPU documentation 'NVIDIA NVSwitch'; DGX-2 for V100 SXM3; GB200/GB300 NVL72)"
)
# 8-GPU SXM2 boards (DGX-1, HGX-1): the hybrid cube-mesh, every GPU's six links joined to its neighbours
CUBE_MESH = {"v100-sxm2": 8}
CUBE_MESH_SOURCE = (
    "8-GPU V100 SXM2 boards are the hybrid cube-mesh, each GPU's six NVLinks joined to its neighbours (NVIDIA DGX-1 "
    "System Architecture whitepaper, 'DGX-1 NVLink Network Topology')"
)
# names NVML gives the PCIe cards of the same chips (H200 NVL, H100 NVL: bridged cards), which a model's pattern may
# match
_CARD_NAME = re.compile(r"\bNVL\b|PCIe", re.IGNORECASE)


def why_up(rig: Rig, g: Gpu, peers_have_more: bool) -> str | None:
    """What in the source says ``g``'s inactive NVLinks should be up, in words, or None when nothing does."""
    if peers_have_more:
        return "other GPUs of its model in this scan have more links active"
    counted = [n.link for n in g.nvlinks if n.active is False and any(v for v in n.errors.values() if v)]
    if counted:
        return f"inactive link(s) {', '.join(map(str, counted))} counted errors, so they carried traffic"
    named = [n.link for n in g.nvlinks if n.active is False and n.remote_bus_id]
    if named:
        return f"the far end of inactive link(s) {', '.join(map(str, named))} is named (nvidia-smi nvlink -R/-p): wired"
    if any(e.gpu_index == g.index and _nvlink_event(e.kind, e.code) for e in rig.kernel.events or []):
        return "the kernel log shows NVLink errors on it (Xid 74, or NVLink discovery failed)"
    if _nvswitch(rig) or rig.fabric.manager_state == "active":
        return "the scan shows NVSwitches (a link to one, an SXid, the fabric manager), whose boards wire every link"
    spec = catalog.find_gpu(g.name)
    if spec is None or _CARD_NAME.search(g.name or ""):
        return None
    if spec.id in WIRED:
        return f"{spec.name} boards wire every link: {WIRED_SOURCE}"
    same = sum(1 for x in rig.gpus if catalog.find_gpu(x.name) == spec)
    if same >= CUBE_MESH.get(spec.id, 0) > 0:
        return f"{same} {spec.name} GPUs in this scan: {CUBE_MESH_SOURCE}"
    return None


def unexplained_severity(rig: Rig, g: Gpu) -> str:
    """The severity of inactive links nothing explains: info where other GPUs of its model in the scan list their
    links with no more active (alike GPUs are a wiring design), warn for a GPU shown alone (the source cannot tell a
    design from a fault: on a board that wires every link, such as a DGX-1, they are down)."""
    spec = catalog.find_gpu(g.name)
    alike = [x for x in rig.gpus if x is not g and x.nvlinks and spec is not None and catalog.find_gpu(x.name) == spec]
    return "info" if alike else "warn"


def _nvlink_event(kind: str, code: int) -> bool:
    """A kernel event that says the GPU's NVLinks were in use and failed: Xid 74 (NVLink error, NVIDIA's Xid catalog),
    or links the driver could not bring up at discovery."""
    return (kind, code) == ("xid", 74) or kind == "nvlink-discovery-failed"


def unused_text(active: int, links: int) -> str:
    """A GPU's unused links where nothing says they should be up: the board's wiring or links down."""
    return (
        f": {links - active} of its {links} links unused: the board's wiring (not every board joins every link) or "
        "links down; nothing in the source tells which (no GPU of its model with more links up, no error counts on "
        "them, no NVSwitch)"
    )
