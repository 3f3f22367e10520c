"""The probes' file reader: a tree in memory answers as the same tree on disk does (links resolved, missing paths
raising what the filesystem raises), so the simulator's rigs go through the live probe code unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuadvisor.probes.fakesysfs import CLASS_BRIDGE, TreeWriter
from gpuadvisor.probes.pcie import Sysfs
from gpuadvisor.probes.rdma import read_ports
from gpuadvisor.probes.sysread import OS, Files, MemFiles


def _tree(files: Files, root: str) -> None:
    """A root port with a GPU below it (Gen4 x16 slot, linked at Gen4 x8), an RDMA adapter's class entry linking
    to the GPU's function (as a test stand-in), and one NUMA node; written by hand as sysfs lays it out."""
    w = TreeWriter(root, files)
    rp = f"{root}/sys/devices/pci0000:40/0000:40:01.1"
    w.device(rp, port_type="root-port", cls=CLASS_BRIDGE, gen=4, max_gen=4, width=8, max_width=16, numa=1, cpus="8-15")
    w.device(
        f"{rp}/0000:41:00.0",
        port_type="endpoint",
        cls="0x030200",
        gen=4,
        max_gen=4,
        width=8,
        max_width=16,
        numa=1,
        cpus="8-15",
    )
    dev = f"{root}/sys/class/infiniband/mlx5_0"
    files.mkdir(f"{dev}/ports/1")
    files.write(f"{dev}/fw_ver", b"28.39.1002\n")
    files.write(f"{dev}/ports/1/state", b"4: ACTIVE\n")
    files.write(f"{dev}/ports/1/rate", b"400 Gb/sec (4X NDR)\n")
    files.symlink(f"{rp}/0000:41:00.0", f"{dev}/device")
    files.mkdir(f"{root}/sys/devices/system/node/node1")
    files.write(f"{root}/sys/devices/system/node/node1/cpulist", b"8-15\n")
    files.write(f"{root}/sys/devices/system/node/node1/meminfo", b"Node 1 MemTotal:       1048576 kB\n")


def test_memory_tree_reads_as_the_disk_tree(tmp_path: Path) -> None:
    mem = MemFiles()
    _tree(OS, str(tmp_path))
    _tree(mem, str(tmp_path))
    disk_sysfs, mem_sysfs = Sysfs(tmp_path), Sysfs(tmp_path, mem)
    assert mem_sysfs.chain("0000:41:00.0") == disk_sysfs.chain("0000:41:00.0")
    hops, host_bridge = mem_sysfs.path("0000:41:00.0")
    assert (hops, host_bridge) == disk_sysfs.path("0000:41:00.0")
    assert host_bridge == "pci0000:40"
    assert [(h.bdf, h.port_type, h.current_width, h.max_width) for h in hops] == [
        ("0000:41:00.0", "endpoint", 8, 16),
        ("0000:40:01.1", "root-port", 8, 16),
    ]
    assert mem_sysfs.numa_node("0000:41:00.0") == 1
    assert mem_sysfs.local_cpulist("0000:41:00.0") == "8-15"
    assert mem_sysfs.list_devices() == disk_sysfs.list_devices() == ["0000:40:01.1", "0000:41:00.0"]
    assert mem_sysfs.numa_nodes() == disk_sysfs.numa_nodes()
    assert mem_sysfs.numa_nodes()[0].memory_total_bytes == 1048576 * 1024
    ports, why = read_ports(tmp_path, mem)
    assert why is None and ports == read_ports(tmp_path)[0]
    assert ports is not None and (ports[0].bus_id, ports[0].state, ports[0].rate_gbps) == (
        "0000:41:00.0",
        "ACTIVE",
        400,
    )
    assert ports[0].why("link_layer") == f"{tmp_path}/sys/class/infiniband/mlx5_0/ports/1/link_layer not readable"


def test_memory_tree_raises_what_the_filesystem_raises() -> None:
    mem = MemFiles()
    mem.mkdir("/sys/devices/pci0000:00/0000:00:01.0")
    mem.write("/sys/devices/pci0000:00/0000:00:01.0/class", b"0x060400\n")
    mem.symlink("/sys/devices/pci0000:00/0000:00:01.0", "/sys/bus/pci/devices/0000:00:01.0")
    assert mem.read_text("/sys/bus/pci/devices/0000:00:01.0/class") == "0x060400\n"
    assert mem.realpath("/sys/bus/pci/devices/0000:00:01.0/../0000:00:01.0") == "/sys/devices/pci0000:00/0000:00:01.0"
    assert sorted(mem.listdir("/sys/bus/pci/devices")) == ["0000:00:01.0"]
    assert mem.is_dir("/sys/bus/pci/devices/0000:00:01.0") and not mem.is_dir("/sys/bus/pci/devices/0000:00:01.0/class")
    assert not mem.exists("/sys/bus/pci/devices/0000:00:02.0")
    with pytest.raises(FileNotFoundError):
        mem.read_bytes("/sys/bus/pci/devices/0000:00:01.0/config")
    with pytest.raises(FileNotFoundError):
        mem.listdir("/sys/class/infiniband")
    with pytest.raises(NotADirectoryError):
        mem.listdir("/sys/devices/pci0000:00/0000:00:01.0/class")
