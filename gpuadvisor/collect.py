"""Fill a Rig: from the live machine, or from a rig description through the simulated NVML.

Both paths run the same probe code (``probes.nvml`` over a pynvml-like library, ``probes.pcie`` over a
sysfs tree); the simulated path serves NVML from ``probes.simnvml`` and reads the description's sysfs tree from
memory (``probes.sysread.MemFiles``, written by ``probes.fakesysfs`` and ``probes.fakebeyond``).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadvisor import __version__, facts
from gpuadvisor.facts import Gpu, Rig, Source, Topology
from gpuadvisor.probes.nvml import Nvml, probe_gpus, probe_pairs, probe_system
from gpuadvisor.probes.pcie import PcieHop, PciPlace, Sysfs, level_between
from gpuadvisor.probes.sysread import OS, Files, MemFiles

if TYPE_CHECKING:
    from gpuadvisor.probes.rigdesc import RigDesc

NO_GPU_HINT = "try a simulated rig: gpuadvisor scan --simulate dgx-h100 (gpuadvisor presets lists them)"


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def nvlink_count(a: Gpu, b: Gpu) -> int:
    """Active NVLinks joining two GPUs: direct links to the peer, or through NVSwitch (the smaller side's)."""
    direct = sum(1 for n in a.active_nvlinks() if n.remote_bus_id and n.remote_bus_id == b.bus_id)
    if direct:
        return direct
    sw_a = sum(1 for n in a.active_nvlinks() if n.remote_device_type == "switch")
    sw_b = sum(1 for n in b.active_nvlinks() if n.remote_device_type == "switch")
    return min(sw_a, sw_b)


def build_topology(
    gpus: list[Gpu],
    levels: list[list[str | None]],
    p2p_read: list[list[str]] | None,
    p2p_write: list[list[str]] | None,
    places: list[PciPlace | None],
    nics: list[tuple[str, PciPlace]],
    nvml_reason: str | None,
) -> Topology:
    n = len(gpus)
    topo = Topology(p2p_read=p2p_read, p2p_write=p2p_write)
    pcie: list[list[str]] = []
    for i in range(n):
        row = []
        for j in range(n):
            lvl = levels[i][j]
            if lvl is None:
                pa, pb = places[i], places[j]
                lvl = level_between(pa, pb) if pa and pb else "SYS"
                if pa is None or pb is None:
                    topo.unavailable.setdefault(
                        "pcie_matrix",
                        f"PCIe placement unknown for some GPUs ({nvml_reason or 'no sysfs path'}); shown as SYS",
                    )
            row.append(lvl)
        pcie.append(row)
    topo.pcie_matrix = pcie
    for gpu in gpus:
        for link in gpu.nvlinks:
            if link.remote_device_type == "gpu" and link.remote_bus_id:
                link.remote_gpu_index = next((g.index for g in gpus if g.bus_id == link.remote_bus_id), None)
    # nvlink_count per pair, with each GPU's links counted once (not once per peer): N x links + N², not N² x links
    direct: list[dict[str, int]] = []
    switch: list[int] = []
    for g in gpus:
        d: dict[str, int] = {}
        sw = 0
        for link in g.active_nvlinks():
            if link.remote_bus_id:
                d[link.remote_bus_id] = d.get(link.remote_bus_id, 0) + 1
            if link.remote_device_type == "switch":
                sw += 1
        direct.append(d)
        switch.append(sw)

    def count(i: int, j: int) -> int:
        bus = gpus[j].bus_id
        return (direct[i].get(bus, 0) if bus else 0) or min(switch[i], switch[j])

    topo.matrix = [
        ["X" if i == j else (f"NV{c}" if (c := count(i, j)) else pcie[i][j]) for j in range(n)] for i in range(n)
    ]
    topo.nics = [name for name, _ in nics]
    topo.nic_matrix = [
        [level_between(pi, place) if (pi := places[i]) else "SYS" for _, place in nics] for i in range(n)
    ]
    return topo


def collect_gpus(nv: Nvml, sysfs: Sysfs, rig: Rig) -> list[Any]:
    """GPUs, their PCIe paths, and the pairwise topology, into ``rig``; returns the NVML handles."""
    probe_system(nv, rig.software)
    gpus, handles = probe_gpus(nv, rig.problems)
    places: list[PciPlace | None] = []
    for g in gpus:
        if g.bus_id is None:
            places.append(None)
            continue
        hops, place = sysfs.place(g.bus_id)
        places.append(place)
        if hops:
            g.pcie.path = hops
        else:
            g.pcie.unavailable["path"] = f"no sysfs entry for {g.bus_id} under {sysfs.pci_devices}"
        if g.numa_node is None:
            node = sysfs.numa_node(g.bus_id)
            if node is not None:
                g.numa_node = node
                g.unavailable.pop("numa_node", None)
            elif "numa_node" in g.unavailable:
                g.unavailable["numa_node"] += (
                    "; sysfs numa_node is -1 (no NUMA information, e.g. a VM or one-node host)"
                )
        if g.cpu_affinity is None:
            cpus = sysfs.local_cpulist(g.bus_id)
            if cpus:
                g.cpu_affinity = cpus
                g.unavailable.pop("cpu_affinity", None)
    levels, p2p_r, p2p_w, reason = probe_pairs(nv, gpus, handles)
    gpu_bdfs = {g.bus_id for g in gpus}
    nics = [(name, pl) for name, bdf in sysfs.nics() if bdf not in gpu_bdfs and (pl := sysfs.place(bdf)[1]) is not None]
    rig.gpus = gpus
    rig.topology = build_topology(gpus, levels, p2p_r if gpus else None, p2p_w if gpus else None, places, nics, reason)
    if reason and len(gpus) > 1:
        rig.topology.unavailable["matrix"] = f"NVML topology: {reason}; PCIe levels derived from sysfs"
    if nv.binding_mismatches:
        rig.problems.append(
            "nvidia-ml-py and the driver disagree on: " + ", ".join(sorted(set(nv.binding_mismatches))[:8])
        )
    return handles


def collect_live(*, sysfs_root: str | os.PathLike[str] = "/", nvml_lib: Any = None, import_torch: bool = False) -> Rig:
    """Probe this machine. Never raises for a missing driver or GPU: that is recorded in ``rig.problems``."""
    from gpuadvisor.probes.host import probe_host
    from gpuadvisor.probes.software import probe_software

    rig = Rig(source=Source(kind="live", created_at=_now(), tool_version=__version__))
    rig.host = probe_host(sysfs_root)
    rig.software = probe_software(import_torch=import_torch)
    rig.provenance = {"host": "read", "software": "read", "gpus": "read", "topology": "read"}
    if nvml_lib is None:
        try:
            import pynvml  # nvidia-ml-py

            nvml_lib = pynvml
        except ImportError:
            nvml_lib = None
    reason: str | None
    from gpuadvisor.probes.beyond import collect_beyond

    live_nv: Nvml | None = None
    handles: list[Any] = []
    if nvml_lib is None:
        reason = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
    else:
        nv = Nvml(nvml_lib)
        reason = nv.init()
        if reason is None:
            try:
                handles = collect_gpus(nv, Sysfs(sysfs_root), rig)
                live_nv = nv
                collect_beyond(rig, sysfs_root, live_nv, handles, live=True)
            finally:
                nv.shutdown()
            if not rig.gpus:
                reason = "NVML found no GPU"
    if live_nv is None:
        collect_beyond(rig, sysfs_root, None, [], live=True, nvml_reason=reason or "NVML not initialised")
    if reason is not None:
        for f in ("driver_version", "cuda_driver_version", "nvml_version"):
            rig.software.missing(f, reason)
        from gpuadvisor.rules.summary import no_gpu_hint

        # A container without the NVIDIA runtime looks like a machine without a driver: tell them apart.
        container = next(
            (m for m in ("/.dockerenv", "/run/.containerenv") if (Path(sysfs_root) / m.lstrip("/")).exists()), None
        )
        hint = no_gpu_hint(reason, rig.software.env, container)
        rig.problems.insert(0, f"no NVIDIA GPU or driver found ({reason}): {hint}; or {NO_GPU_HINT}")
    return rig


def simulate(name_or_path: str) -> Rig:
    """A Rig from a preset name or a rig description file, through the simulated NVML and a generated sysfs."""
    from gpuadvisor.probes.rigdesc import load_description

    return simulate_description(load_description(name_or_path))


class _PlacedOnce(Sysfs):
    """A generated tree's sysfs that reads each device's PCIe path once: the simulated NVML and the GPU probe both
    ask for every GPU's place (the tree does not change between them)."""

    def __init__(self, root: str, files: Files) -> None:
        super().__init__(root, files)
        self._placed: dict[str, tuple[list[PcieHop], PciPlace | None]] = {}

    def place(self, bdf: str) -> tuple[list[PcieHop], PciPlace | None]:
        if bdf not in self._placed:
            self._placed[bdf] = super().place(bdf)
        return self._placed[bdf]


def simulate_description(desc: RigDesc) -> Rig:
    """A Rig from a parsed rig description (a preset, a file, or one generated from a planned build)."""
    from gpuadvisor.probes.fakesysfs import write_tree
    from gpuadvisor.probes.simnvml import SimNvml

    rig = Rig(
        source=Source(
            kind="simulated", preset=desc.name, detail=desc.title, created_at=_now(), tool_version=__version__
        )
    )
    rig.provenance = {"host": "simulated", "software": "simulated", "gpus": "simulated", "topology": "simulated"}
    # The tree (a few thousand small files) is held in memory and read through the same probes as a live one; only
    # the kernel log goes to disk, where its probe reads it (to memory, /dev/shm, where the system has it).
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-sim-", dir=shm) as tmp:
        files = MemFiles()
        write_tree(desc, tmp, files)
        sysfs = _PlacedOnce(tmp, files)
        from gpuadvisor.probes.beyond import collect_beyond
        from gpuadvisor.probes.fakebeyond import apply_description, write_beyond

        write_beyond(desc, tmp, files, kernel_files=OS)
        nv = Nvml(SimNvml(desc, sysfs))
        nv.init()
        handles = collect_gpus(nv, sysfs, rig)
        collect_beyond(rig, tmp, nv, handles, live=False, files=files)
        nv.shutdown()
        apply_description(desc, rig)
        numa = sysfs.numa_nodes()
    h = desc.host
    rig.host = facts.Host(
        hostname=os.environ.get("GPUADVISOR_HOSTNAME", "").strip() or h.get("hostname", desc.name),  # nodename.ENV
        os=h.get("os", "Ubuntu 22.04.4 LTS"),
        kernel=h.get("kernel", "5.15.0-105-generic"),
        arch=h.get("arch", "x86_64"),
        cpu_model=h.get("cpu_model"),
        sockets=h.get("sockets"),
        cores_physical=h.get("cores_physical"),
        cores_logical=h.get("cores_logical"),
        memory_total_bytes=int(h["memory_total_gib"] * 2**30) if "memory_total_gib" in h else None,
        numa_nodes=numa,
        psu_watts=h.get("psu_watts"),
        net_interfaces=h.get("net_interfaces"),
    )
    for key in ("cpu_model", "sockets", "cores_physical", "cores_logical", "memory_total_bytes", "net_interfaces"):
        if getattr(rig.host, key) is None:
            rig.host.unavailable[key] = facts.NOT_IN_SOURCE
    sw = rig.software
    sw.gpuadvisor_version = __version__
    for key in ("torch_version", "torch_cuda_version", "nccl_version", "python_version", "nvml_binding_version"):
        if key in desc.software:
            setattr(sw, key, str(desc.software[key]))
        else:
            sw.missing(key, f"{facts.NOT_IN_SOURCE} (simulated rig)")
    sw.env = {str(k): str(v) for k, v in desc.software.get("env", {}).items()}
    return rig
