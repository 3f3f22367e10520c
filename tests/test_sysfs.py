"""The sysfs probe against hand-written trees: link attributes, the path to the root port, port types."""

from __future__ import annotations

import os
from pathlib import Path

from gpuadvisor.probes.fakesysfs import config_bytes
from gpuadvisor.probes.pcie import PciPlace, Sysfs, level_between, parse_speed, parse_width, port_type_from_config


def _dev(
    root: Path,
    rel: str,
    *,
    speed: str,
    max_speed: str,
    width: str,
    max_width: str,
    cls: str = "0x060400",
    numa: str = "0",
    config: bytes | None = None,
) -> None:
    d = root / "sys" / "devices" / rel
    d.mkdir(parents=True)
    for name, value in {
        "class": cls,
        "vendor": "0x10de",
        "device": "0x2684",
        "current_link_speed": speed,
        "max_link_speed": max_speed,
        "current_link_width": width,
        "max_link_width": max_width,
        "numa_node": numa,
        "local_cpulist": "0-15,32-47",
    }.items():
        (d / name).write_text(value + "\n")
    if config is not None:
        (d / "config").write_bytes(config)
    bus = root / "sys" / "bus" / "pci" / "devices"
    bus.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(d, bus), bus / d.name)


def make_tree(root: Path) -> None:
    """Root port -> switch (uplink trained x8 of x16) -> downstream port -> GPU at Gen4 x16. No config files."""
    base = "pci0000:40/0000:40:01.1"
    _dev(root, base, speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe", width="8", max_width="16")
    _dev(root, base + "/0000:41:00.0", speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe", width="8", max_width="16")
    _dev(
        root,
        base + "/0000:41:00.0/0000:42:00.0",
        speed="16.0 GT/s PCIe",
        max_speed="16.0 GT/s PCIe",
        width="16",
        max_width="16",
    )
    _dev(
        root,
        base + "/0000:41:00.0/0000:42:00.0/0000:43:00.0",
        speed="16.0 GT/s PCIe",
        max_speed="16.0 GT/s PCIe",
        width="16",
        max_width="16",
        cls="0x030000",
    )
    _dev(
        root,
        base + "/0000:41:00.0/0000:42:01.0",
        speed="2.5 GT/s PCIe",
        max_speed="16.0 GT/s PCIe",
        width="16",
        max_width="16",
    )
    _dev(
        root,
        base + "/0000:41:00.0/0000:42:01.0/0000:44:00.0",
        speed="2.5 GT/s PCIe",
        max_speed="16.0 GT/s PCIe",
        width="16",
        max_width="16",
        cls="0x030000",
    )
    node = root / "sys" / "devices" / "system" / "node" / "node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-15,32-47\n")
    (node / "meminfo").write_text("Node 0 MemTotal:       131072000 kB\nNode 0 MemFree:  1 kB\n")


def test_path_to_root_port_with_port_types_by_position(tmp_path):
    make_tree(tmp_path)
    hops, host_bridge = Sysfs(tmp_path).path("0000:43:00.0")
    assert host_bridge == "pci0000:40"
    assert [(h.bdf, h.port_type) for h in hops] == [
        ("0000:43:00.0", "endpoint"),
        ("0000:42:00.0", "downstream-port"),
        ("0000:41:00.0", "upstream-port"),
        ("0000:40:01.1", "root-port"),
    ]
    assert [(h.current_gen, h.current_width, h.max_gen, h.max_width) for h in hops] == [
        (4, 16, 4, 16),
        (4, 16, 4, 16),
        (4, 8, 4, 16),
        (4, 8, 4, 16),
    ]


def test_downgraded_uplink_behind_x16_gpu_is_the_narrowest_hop(tmp_path):
    from gpuadvisor.facts import Gpu, Pcie
    from gpuadvisor.physics.links import hop_is_downgraded, path_limit

    make_tree(tmp_path)
    hops, _ = Sysfs(tmp_path).path("0000:43:00.0")
    gpu = Gpu(index=0, pcie=Pcie(current_gen=4, max_gen=4, current_width=16, max_width=16, path=hops))
    lim = path_limit(gpu)
    assert (lim.where, lim.gen, lim.width, round(lim.gbps, 3)) == ("0000:41:00.0", 4, 8, 15.752)
    assert [hop_is_downgraded(h) for h in hops] == [(False, False), (False, False), (True, False), (True, False)]
    assert path_limit(gpu, at_max=True).width == 16


def test_generation_drop_reads_as_gen1(tmp_path):
    make_tree(tmp_path)
    hops, _ = Sysfs(tmp_path).path("0000:44:00.0")
    assert (hops[0].current_gen, hops[0].max_gen, hops[0].current_speed_gts) == (1, 4, 2.5)


def test_config_space_port_type_wins_over_position(tmp_path):
    assert port_type_from_config(config_bytes("downstream-port")) == "downstream-port"
    assert port_type_from_config(b"\x00" * 64) is None
    assert port_type_from_config(b"") is None
    make_tree(tmp_path)
    (tmp_path / "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/config").write_bytes(config_bytes("upstream-port"))
    hops, _ = Sysfs(tmp_path).path("0000:43:00.0")
    assert hops[2].port_type == "upstream-port"


def test_numa_and_cpulist(tmp_path):
    make_tree(tmp_path)
    s = Sysfs(tmp_path)
    assert s.numa_node("0000:43:00.0") == 0
    assert s.local_cpulist("0000:43:00.0") == "0-15,32-47"
    nodes = s.numa_nodes()
    assert [(n.id, n.cpus, n.memory_total_bytes) for n in nodes] == [(0, "0-15,32-47", 131072000 * 1024)]


def test_missing_device_and_odd_values(tmp_path):
    s = Sysfs(tmp_path)
    assert s.path("0000:99:00.0") == ([], None)
    assert parse_speed("Unknown") is None and parse_speed("8 GT/s") == 8.0 and parse_speed("32.0 GT/s PCIe") == 32.0
    assert parse_width("0") is None and parse_width("x16") == 16 and parse_width("junk") is None


def test_levels_between_places():
    def place(*bdfs_types, hb="pci0000:00", numa=0):
        return PciPlace(tuple(b for b, _ in bdfs_types), tuple(t for _, t in bdfs_types), hb, numa)

    g0 = place(("g0", "endpoint"), ("d0", "downstream-port"), ("u0", "upstream-port"), ("r0", "root-port"))
    g1 = place(("g1", "endpoint"), ("d1", "downstream-port"), ("u0", "upstream-port"), ("r0", "root-port"))
    g2 = place(
        ("g2", "endpoint"),
        ("d2", "downstream-port"),
        ("u2", "upstream-port"),
        ("dt", "downstream-port"),
        ("ut", "upstream-port"),
        ("r1", "root-port"),
    )
    g3 = place(
        ("g3", "endpoint"),
        ("d3", "downstream-port"),
        ("u3", "upstream-port"),
        ("dt3", "downstream-port"),
        ("ut", "upstream-port"),
        ("r1", "root-port"),
    )
    g4 = place(("g4", "endpoint"), ("r4", "root-port"), hb="pci0000:80", numa=0)
    g5 = place(("g5", "endpoint"), ("r5", "root-port"), hb="pci0000:c0", numa=1)
    assert level_between(g0, g1) == "PIX"
    assert level_between(g2, g3) == "PXB"
    assert level_between(g0, g2) == "PHB"
    assert level_between(g0, g4) == "NODE"
    assert level_between(g4, g5) == "SYS"


def test_aer_counters_per_hop(tmp_path):
    from gpuadvisor.probes.pcie import parse_aer_total

    make_tree(tmp_path)
    gpu_dir = tmp_path / "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0"
    (gpu_dir / "aer_dev_correctable").write_text(
        "RxErr 0\nBadTLP 3\nBadDLLP 9\nRollover 0\nTimeout 1\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR "
        "13\n"
    )
    hops, _ = Sysfs(tmp_path).path("0000:43:00.0")
    switch = hops[2]
    assert switch.bdf == "0000:41:00.0" and switch.aer_correctable == 13
    assert hops[0].aer_correctable is None and "no AER counters" in hops[0].unavailable["aer_correctable"]
    assert parse_aer_total("RxErr 2\nBadTLP 5\n", "TOTAL_ERR_COR") == 7  # older kernels print no total
    assert parse_aer_total("", "TOTAL_ERR_COR") is None


def test_simulated_aer_counts_reach_the_gpu_hop(tmp_path):
    from gpuadvisor.collect import simulate

    p = tmp_path / "rig.toml"
    p.write_text(
        'name = "aer"\n[gpu]\npcie_aer_correctable = 42\n[[ports]]\nid = "rp0"\nkind = "root-port"\nbdf = '
        '"0000:00:01.0"\n'
        'host_bridge = "pci0000:00"\nnuma_node = 0\n[[gpus]]\nbus_id = "0000:01:00.0"\nparent = "rp0"\n'
    )
    rig = simulate(str(p))
    assert [h.aer_correctable for h in rig.gpus[0].pcie.path] == [42, 0]


def test_a_slot_wired_x8_is_not_a_downgrade_of_an_x16_card(tmp_path):
    """A link's maximum is the lower of its two ends (links.link_facts): x16 card, x8 slot, running x8."""
    from gpuadvisor.collect import simulate
    from gpuadvisor.physics.links import gpu_link, path_limit

    p = tmp_path / "rig.toml"
    p.write_text(
        'name = "x8slot"\n[gpu]\npcie_width = 8\n[[ports]]\nid = "rp0"\nkind = "root-port"\nbdf = "0000:00:01.0"\n'
        'host_bridge = "pci0000:00"\nnuma_node = 0\nmax_width = 8\n[[gpus]]\nbus_id = "0000:03:00.0"\nparent = "rp0"\n'
    )
    g = simulate(str(p)).gpus[0]
    link = gpu_link(g)
    assert (link.current_width, link.max_width, g.pcie.max_width) == (8, 8, 16)
    assert path_limit(g, at_max=True).width == 8  # the expected figure is what the slot can give
