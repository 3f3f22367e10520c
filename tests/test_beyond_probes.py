"""The beyond-the-GPU probes: on this machine (no GPU: every fact read or null with its reason), on small
sysfs/proc trees written here, and their parsers on exact bytes."""

from __future__ import annotations

import os
from pathlib import Path

from gpuadvisor.probes import kmsg, nodestate, rdma
from gpuadvisor.probes.pcie_acs import NOT_ROOT, acs_control

from gpuadvisor import facts
from gpuadvisor.collect import collect_live
from gpuadvisor.rules import evaluate

SECTIONS = {"kernel": facts.KernelLog, "network": facts.Network, "fabric": facts.Fabric, "node": facts.NodeState}


def _every_null_has_a_reason(obj: facts.Unavailable) -> list[str]:
    import dataclasses

    return [
        f.name
        for f in dataclasses.fields(obj)
        if f.name != "unavailable"
        and getattr(obj, f.name) is None
        and f.name not in obj.unavailable
        and f.name not in ("source", "manager_detail", "memlock_bytes")
    ]


def test_live_probes_run_here_and_every_missing_fact_has_its_reason() -> None:
    rig = collect_live()
    for name in SECTIONS:
        assert _every_null_has_a_reason(getattr(rig, name)) == [], name
    # no NVML here: the GPU-side facts say why
    assert rig.fabric.gpus is None and rig.fabric.why("gpus")
    assert rig.node.gpu_processes is None and rig.node.why("gpu_processes") == rig.fabric.why("gpus")
    # what a CPU-only Linux box still has: the kernel log (or why not), /dev/shm, the memlock limit
    assert rig.kernel.events is not None or rig.kernel.why("events")
    assert rig.node.shm_bytes is None or rig.node.shm_bytes > 0
    assert rig.node.memlock_unlimited is not None
    assert all(f.severity != "error" for f in evaluate(rig) if f.code.startswith("GA8"))


def test_probes_on_an_empty_root_say_why(tmp_path: Path) -> None:
    log = kmsg.read_kernel_log(tmp_path)
    assert log.events is None and log.why("events") == f"{tmp_path}/dev/kmsg does not exist"
    assert rdma.read_ports(tmp_path) == ([], None)  # no /sys/class/infiniband: no RDMA driver, no ports
    net = facts.Network()
    nodestate.probe_network_host(tmp_path, net, [])
    assert net.modules is None and net.why("modules") == "/proc/modules not readable"
    assert net.iommu_mode == "off" and net.iommu_groups == 0
    node = nodestate.probe_node(tmp_path, live=False)
    assert node.why("nvidia_pci_functions") == f"{tmp_path}/sys/bus/pci/devices not readable"
    assert node.why("memlock_bytes") == "not a live scan"


def test_rdma_sysfs_port(tmp_path: Path) -> None:
    dev = tmp_path / "sys" / "class" / "infiniband" / "mlx5_3"
    (dev / "ports" / "1").mkdir(parents=True)
    pci = tmp_path / "sys" / "devices" / "pci0000:5a" / "0000:5e:00.0"
    pci.mkdir(parents=True)
    os.symlink(os.path.relpath(pci, dev), dev / "device")
    (dev / "fw_ver").write_text("28.39.2048\n")
    (dev / "hca_type").write_text("MT4129\n")
    for name, text in (
        ("state", "1: DOWN"),
        ("phys_state", "2: Polling"),
        ("rate", "400 Gb/sec (4X NDR)"),
        ("link_layer", "InfiniBand"),
    ):
        (dev / "ports" / "1" / name).write_text(text + "\n")
    ports, why = rdma.read_ports(tmp_path)
    assert why is None
    assert [
        (p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.firmware, p.ca_type, p.bus_id)
        for p in ports or []
    ] == [("mlx5_3", 1, "DOWN", "Polling", 400.0, "InfiniBand", "28.39.2048", "MT4129", "0000:5e:00.0")]


def test_kmsg_records_and_modules_and_iommu(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "proc").mkdir()
    (tmp_path / "dev" / "kmsg").write_text(
        "6,1,0,-;Linux version 6.8.0\n"
        "4,2,5000000,-;NVRM: Xid (PCI:0000:18:00): 94, pid=9, name=python, Contained: SM (0x1). RST: No, D-RST: No\n"
    )
    (tmp_path / "proc" / "uptime").write_text("7205.50 100.00\n")
    log = kmsg.read_kernel_log(tmp_path, [facts.Gpu(index=3, bus_id="0000:18:00.0")])
    assert (log.lines_read, log.uptime_s) == (2, 7205.5)
    (ev,) = log.events or []
    assert (ev.code, ev.gpu_index, ev.uptime_s, ev.pid, ev.process, ev.line) == (94, 3, 5.0, 9, "python", 2)
    (tmp_path / "proc" / "modules").write_text("nvidia_peermem 16384 0 - Live 0x0\nib_core 442368 9 - Live 0x0\n")
    (tmp_path / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt\n")
    (tmp_path / "sys" / "kernel" / "iommu_groups" / "0").mkdir(parents=True)
    net = facts.Network()
    nodestate.probe_network_host(tmp_path, net, [])
    assert (net.modules, net.peermem_loaded, net.iommu_mode, net.iommu_groups) == (
        ["ib_core", "nvidia_peermem"],
        True,
        "passthrough",
        1,
    )


def test_iommu_mode_from_command_line_and_group_type() -> None:
    assert nodestate.iommu_mode("ro quiet", 0, None) == "off"
    assert nodestate.iommu_mode("intel_iommu=on", 120, "DMA-FQ") == "translated"
    assert nodestate.iommu_mode("intel_iommu=on", 120, "identity") == "passthrough"
    assert nodestate.iommu_mode("amd_iommu=on iommu=pt", 64, None) == "passthrough"
    assert nodestate.iommu_mode("intel_iommu=off", 0, None) == "off"
    assert nodestate.iommu_mode("", None, None) is None


def test_acs_control_from_config_space() -> None:
    cfg = bytearray(0x200)
    cfg[0x100:0x104] = (0x0001 | 1 << 16 | 0x140 << 20).to_bytes(4, "little")  # AER first, next at 0x140
    cfg[0x140:0x144] = (0x000D | 1 << 16).to_bytes(4, "little")  # ACS
    cfg[0x146:0x148] = (0b0011101).to_bytes(2, "little")  # SrcValid ReqRedir CmpltRedir UpstreamFwd (lspci's bits)
    assert acs_control(bytes(cfg)) == {
        "SrcValid": True,
        "TransBlk": False,
        "ReqRedir": True,
        "CmpltRedir": True,
        "UpstreamFwd": True,
        "EgressCtrl": False,
        "DirectTrans": False,
    }
    assert acs_control(bytes(64)) is None  # what an unprivileged read of sysfs config returns
    assert acs_control(bytes(0x200)) == {}
    assert "root" in NOT_ROOT


def test_parsers_of_sysfs_values() -> None:
    assert rdma.parse_rate("400 Gb/sec (4X NDR)") == 400.0
    assert rdma.parse_rate("25 Gb/sec (1X EDR)") == 25.0
    assert rdma.parse_state("4: ACTIVE") == "ACTIVE" and rdma.parse_state("5: LinkUp") == "LinkUp"
    assert kmsg.normalise_bus_id("00000000:3B:00") == "0000:3b:00"


def test_a_million_line_log_keeps_the_first_and_last_of_a_repeated_event() -> None:
    # its speed is measured by benchmarks/kernel_log.py (a timed assertion here would judge the machine's load)
    line = "[ 1234.567890] mlx5_core 0000:19:00.0 mlx5_0: Port: 1 Link ACTIVE\n"
    xid = (
        "[ 1234.567891] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
    )
    text = (line * 999 + xid) * 1000
    events, n = kmsg.parse_log(text)
    # the same Xid on one GPU a thousand times: the first and last few kept, the others counted on them
    assert (sum(1 + e.more for e in events), n) == (1000, 1_000_000)
    assert len(events) <= 10
    assert events[0].line == 1000 and events[-1].line == 1_000_000


def test_planted_lost_gpu_is_on_the_simulated_pci_bus() -> None:
    from gpuadvisor.probes.rigdesc import load_description

    from gpuadvisor.collect import simulate_description

    desc = load_description("h100-pcie")
    desc.node = {"lost_gpus": ["0000:e1:00.0"]}
    rig = simulate_description(desc)
    assert "0000:e1:00.0" in (rig.node.nvidia_pci_functions or [])


def test_module_flavour_from_proc_driver_nvidia_version() -> None:
    assert (
        nodestate.module_flavour("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build")
        == "open"
    )
    assert (
        nodestate.module_flavour(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
        )
        == "proprietary"
    )
    assert nodestate.module_flavour(None) is None
