"""Host facts around the GPUs that multi-GPU jobs trip over, read-only and unprivileged.

Loaded kernel modules (/proc/modules: nvidia_peermem for GPUDirect RDMA), the IOMMU mode (kernel command
line and /sys/kernel/iommu_groups), NVIDIA GPUs on the PCI bus (to find GPUs the driver lost), the size of
/dev/shm and the locked-memory limit (NCCL's shared-memory transport and RDMA registration need both).
"""

from __future__ import annotations

import os
import posixpath
import resource
from pathlib import Path

from gpuadvisor.facts import Network, NodeState

from .pcie import _read
from .sysread import OS, Files

MODULES_OF_INTEREST = (
    "nvidia",
    "nvidia_peermem",
    "nv_peer_mem",
    "nvidia_fs",
    "gdrdrv",
    "mlx5_core",
    "mlx5_ib",
    "ib_core",
    "ib_uverbs",
    "rdma_cm",
    "efa",
)
PEERMEM = ("nvidia_peermem", "nv_peer_mem")
GPU_CLASSES = ("0x0300", "0x0302")


def read_modules(root: str | os.PathLike[str], files: Files = OS) -> tuple[list[str] | None, str | None]:
    text = _read(posixpath.join(os.fspath(root), "proc", "modules"), files)
    if text is None:
        return None, "/proc/modules not readable"
    loaded = {line.split()[0] for line in text.splitlines() if line.strip()}
    return sorted(m for m in loaded if m in MODULES_OF_INTEREST), None


def module_flavour(text: str | None) -> str | None:
    """ "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01 ..." -> "open"; "... x86_64 Kernel
    Module  550.54.15 ..." -> "proprietary"; None when the text says neither."""
    if not text or "Kernel Module" not in text:
        return None
    return "open" if "Open Kernel Module" in text else "proprietary"


def iommu_mode(cmdline: str | None, groups: int | None, group_type: str | None) -> str | None:
    """off | passthrough | translated, from the kernel command line, the IOMMU groups and a group's type."""
    args = set((cmdline or "").split())
    if groups == 0 or args & {"iommu=off", "intel_iommu=off", "amd_iommu=off"}:
        return "off"
    if group_type:
        return "passthrough" if group_type == "identity" else "translated"
    if args & {"iommu=pt", "iommu.passthrough=1"}:
        return "passthrough"
    if groups:
        return "translated"
    return None


def probe_network_host(root: str | os.PathLike[str], net: Network, gpu_bus_ids: list[str], files: Files = OS) -> None:
    """Modules, peermem and the IOMMU mode into ``net``."""
    r = posixpath.join(os.fspath(root), "")  # ends with /
    modules, reason = read_modules(r, files)
    if modules is None:
        net.missing("modules", reason or "")
        net.missing("peermem_loaded", reason or "")
    else:
        net.modules = modules
        net.peermem_loaded = any(m in modules for m in PEERMEM)
    flavour = module_flavour(_read(f"{r}proc/driver/nvidia/version", files))
    if flavour is None:
        net.missing("gpu_kernel_module", "/proc/driver/nvidia/version not readable (no NVIDIA driver loaded?)")
    else:
        net.gpu_kernel_module = flavour
    cmdline = _read(f"{r}proc/cmdline", files)
    groups_dir = f"{r}sys/kernel/iommu_groups"
    try:
        groups: int | None = len(files.listdir(groups_dir))
    except FileNotFoundError:
        groups = 0
    except OSError:
        groups = None
    group_type = None
    for bdf in gpu_bus_ids:
        group_type = _read(f"{r}sys/bus/pci/devices/{bdf}/iommu_group/type", files)
        if group_type:
            break
    net.iommu_groups = groups
    if groups is None:
        net.unavailable["iommu_groups"] = f"{groups_dir} not readable"
    mode = iommu_mode(cmdline, groups, group_type)
    if mode is None:
        net.missing("iommu_mode", "neither the kernel command line nor the IOMMU groups say")
    else:
        net.iommu_mode = mode


def nvidia_pci_functions(root: str | os.PathLike[str], files: Files = OS) -> tuple[list[str] | None, str | None]:
    base = posixpath.join(os.fspath(root), "sys", "bus", "pci", "devices")
    try:
        entries = sorted(files.listdir(base))
    except OSError:
        return None, f"{base} not readable"
    out = []
    for name in entries:
        d = f"{base}/{name}"
        if _read(f"{d}/vendor", files) == "0x10de" and (_read(f"{d}/class", files) or "").startswith(GPU_CLASSES):
            out.append(name)
    return out, None


def probe_node(root: str | os.PathLike[str] = "/", *, live: bool = True, files: Files = OS) -> NodeState:
    """NVIDIA PCI functions, /dev/shm size and (live only) the memlock limit of this process."""
    node = NodeState()
    funcs, reason = nvidia_pci_functions(root, files)
    if funcs is None:
        node.missing("nvidia_pci_functions", reason or "")
    else:
        node.nvidia_pci_functions = funcs
    shm = Path(root) / "dev" / "shm"
    try:
        st = os.statvfs(shm)
        node.shm_bytes = st.f_blocks * st.f_frsize
    except OSError as e:
        node.missing("shm_bytes", f"{shm}: {e.strerror}")
    if live:
        soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        node.memlock_unlimited = soft == resource.RLIM_INFINITY
        if node.memlock_unlimited:
            node.unavailable["memlock_bytes"] = "unlimited"
        else:
            node.memlock_bytes = soft
    else:
        node.missing("memlock_bytes", "not a live scan")
        node.missing("memlock_unlimited", "not a live scan")
    node.missing("health_checks", "no other checker's output (gpuadvisor import reads dcgmi diag and NHC's)")
    return node
