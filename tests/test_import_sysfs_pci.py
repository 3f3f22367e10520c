"""sysfs PCI attributes (``grep . /sys/.../*_link_*``, ``cat`` of one attribute) read as lspci's link facts."""

from __future__ import annotations

from gpuadvisor.importers.merge import import_texts
from gpuadvisor.importers.sections import split_sections
from gpuadvisor.importers.sysfs_pci import parse_sysfs_pci
from gpuadvisor.rules import evaluate

# https://github.com/ilya-zlobintsev/LACT/issues/334 (a Radeon 7800 XT, the reporter's `grep .` of its attributes)
LACT_334 = """\
/sys/class/drm/card0/device/current_link_speed:16.0 GT/s PCIe
/sys/class/drm/card0/device/current_link_width:16
/sys/class/drm/card0/device/max_link_speed:16.0 GT/s PCIe
/sys/class/drm/card0/device/max_link_width:16
"""

# The example: an NVIDIA GPU at 0000:17:00.0 whose link trained at half its width
NARROW = """\
/sys/bus/pci/devices/0000:17:00.0/class:0x030200
/sys/bus/pci/devices/0000:17:00.0/current_link_speed:8.0 GT/s PCIe
/sys/bus/pci/devices/0000:17:00.0/current_link_width:8
/sys/bus/pci/devices/0000:17:00.0/max_link_speed:16.0 GT/s PCIe
/sys/bus/pci/devices/0000:17:00.0/max_link_width:16
/sys/bus/pci/devices/0000:17:00.0/numa_node:-1
/sys/bus/pci/devices/0000:17:00.0/vendor:0x10de
"""


def test_lact_334_grep_of_a_card_is_its_link_attached_to_no_gpu() -> None:
    rig = parse_sysfs_pci(LACT_334, "x")
    (g,) = rig.gpus
    assert g.bus_id is None and "vendor and class" in g.unavailable["bus_id"]
    assert (g.pcie.current_gen, g.pcie.current_width, g.pcie.max_gen, g.pcie.max_width) == (4, 16, 4, 16)
    assert any("/sys/class/drm/card0/device" in p for p in rig.problems)


def test_lact_334_is_recognised_by_content() -> None:
    assert [s.kind for s in split_sections(LACT_334)] == ["sysfs-pci"]


def test_vendor_and_display_class_make_a_gpu_with_its_link() -> None:
    rig = import_texts([("x", NARROW)])
    (g,) = rig.gpus
    assert g.bus_id == "0000:17:00.0"
    assert (g.pcie.current_gen, g.pcie.current_width, g.pcie.max_gen, g.pcie.max_width) == (3, 8, 4, 16)
    assert g.numa_node is None and "-1" in g.unavailable["numa_node"]


def test_a_narrow_link_is_the_width_rule_s_finding() -> None:
    width = [f for f in evaluate(import_texts([("x", NARROW)])) if f.code == "GA101"]
    assert width and width[0].severity == "fail" and "x8" in width[0].message
    lact = [f for f in evaluate(import_texts([("x", LACT_334)])) if f.code == "GA101"]
    assert all(f.severity != "fail" for f in lact)


def test_cat_of_one_attribute_under_its_command() -> None:
    text = "$ cat /sys/bus/pci/devices/0000:17:00.0/current_link_width\n8\n"
    (g,) = parse_sysfs_pci(text, "x").gpus
    assert g.pcie.current_width == 8 and g.pcie.max_width is None
    assert "max_link_width is not in this paste" in g.pcie.unavailable["max_width"]


def test_unknown_speed_and_a_cut_line_give_no_value() -> None:
    text = (
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_speed:Unknown\n"
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_width:1"
    )
    (g,) = parse_sysfs_pci(text, "x").gpus
    assert g.pcie.current_gen is None and "Unknown" in g.pcie.unavailable["current_gen"]
    assert g.pcie.max_width is None and "cut" in g.pcie.unavailable["max_width"]


def test_another_vendor_is_not_a_gpu() -> None:
    text = "/sys/bus/pci/devices/0000:0c:00.0/vendor:0x1002\n/sys/bus/pci/devices/0000:0c:00.0/class:0x030000\n"
    text += "/sys/bus/pci/devices/0000:0c:00.0/current_link_width:16\n"
    rig = parse_sysfs_pci(text, "x")
    assert rig.gpus == [] and any("not an NVIDIA GPU" in p for p in rig.problems)


def test_an_hca_s_numa_node_is_not_a_pci_link_paste() -> None:
    text = "/sys/class/infiniband/mlx5_0/device/numa_node:1\n/sys/class/net/eth0/device/numa_node:0\n"
    assert all(s.kind != "sysfs-pci" for s in split_sections(text))
