"""Host facts: CPU, sockets, cores, RAM (psutil), NUMA nodes (sysfs), OS and kernel."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from gpuadvisor.facts import Host

from .pcie import Sysfs


def _cpu_model(root: Path) -> str | None:
    try:
        text = (root / "proc" / "cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or None
    for key in ("model name", "Model Name", "cpu model", "Processor", "cpu"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return platform.processor() or None


def _sockets(root: Path) -> int | None:
    base = root / "sys" / "devices" / "system" / "cpu"
    ids = set()
    try:
        for p in base.glob("cpu[0-9]*/topology/physical_package_id"):
            ids.add(p.read_text().strip())
    except OSError:
        return None
    return len(ids) or None


def _os_name(root: Path) -> str | None:
    try:
        text = (root / "etc" / "os-release").read_text()
    except OSError:
        return f"{platform.system()} {platform.release()}"
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, re.M)
    return m.group(1) if m else platform.system()


def probe_host(root: str | os.PathLike[str] = "/") -> Host:
    import psutil  # light, but only needed here

    r = Path(root)
    h = Host()
    from gpuadvisor.nodename import node_name

    h.hostname = node_name()  # GPUADVISOR_HOSTNAME overrides
    h.os = _os_name(r)
    h.kernel = platform.release()
    h.arch = platform.machine()
    h.cpu_model = _cpu_model(r)
    sockets = _sockets(r)
    if sockets is None:
        h.missing("sockets", "no /sys/devices/system/cpu topology")
    else:
        h.sockets = sockets
    phys = psutil.cpu_count(logical=False)
    if phys is None:
        h.missing("cores_physical", "psutil could not count physical cores")
    else:
        h.cores_physical = phys
    h.cores_logical = psutil.cpu_count(logical=True)
    vm = psutil.virtual_memory()
    h.memory_total_bytes = int(vm.total)
    h.memory_available_bytes = int(vm.available)
    try:
        h.net_interfaces = sorted(n for n in psutil.net_if_addrs() if n != "lo")
    except OSError as e:
        h.missing("net_interfaces", f"psutil could not list interfaces ({e})")
    h.numa_nodes = Sysfs(root).numa_nodes()
    if not h.numa_nodes:
        h.unavailable["numa_nodes"] = "no /sys/devices/system/node (kernel without NUMA support)"
    return h
