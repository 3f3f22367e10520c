"""Where each ``nvidia-smi -q`` fact sits: the text path and the XML path per driver generation, newest first.

A new driver's renamed field is one more path in this table; the reader in ``smi_query`` takes the first present.
"""

from __future__ import annotations

from typing import Any

# Names as gpuadvisor.probes.nvml.CLOCKS_EVENT_REASONS spells them (NVML's nvmlClocksEventReason* bits).
CLOCKS_REASON_NAMES = {
    "idle": "gpu_idle",
    "gpu_idle": "gpu_idle",
    "applications_clocks_setting": "applications_clocks_setting",
    "sw_power_cap": "sw_power_cap",
    "hw_slowdown": "hw_slowdown",
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
    "sync_boost": "sync_boost",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "display_clock_setting": "display_clock_setting",
    "display_clocks_setting": "display_clock_setting",
}

# fact -> (text paths, XML paths); the first path present wins (newer names first).
T = tuple[tuple[str, ...], ...]


def _link(group: str, key: str, xml_group: str, xml_key: str) -> tuple[T, T]:
    """A GPU link fact: ``PCI > GPU Link Info > GROUP > KEY`` in -q, ``pci/pci_gpu_link_info/...`` in -q -x."""
    return ((("PCI", "GPU Link Info", group, key),), (("pci", "pci_gpu_link_info", xml_group, xml_key),))


PATHS: dict[str, tuple[T, T]] = {
    "name": ((("Product Name",),), (("product_name",),)),
    "brand": ((("Product Brand",),), (("product_brand",),)),
    "uuid": ((("GPU UUID",),), (("uuid",),)),
    "serial": ((("Serial Number",),), (("serial",),)),
    "bus_id": ((("PCI", "Bus Id"),), (("pci", "pci_bus_id"),)),
    "architecture": ((("Product Architecture",),), (("product_architecture",),)),
    "memory_total": ((("FB Memory Usage", "Total"),), (("fb_memory_usage", "total"),)),
    "memory_used": ((("FB Memory Usage", "Used"),), (("fb_memory_usage", "used"),)),
    "power_limit": (
        (
            ("GPU Power Readings", "Current Power Limit"),
            ("Power Readings", "Current Power Limit"),
            ("Power Readings", "Power Limit"),
            ("Power Readings", "Enforced Power Limit"),
        ),
        (
            ("gpu_power_readings", "current_power_limit"),
            ("power_readings", "current_power_limit"),
            ("power_readings", "power_limit"),
            ("power_readings", "enforced_power_limit"),
        ),
    ),
    "power_default": (
        (("GPU Power Readings", "Default Power Limit"), ("Power Readings", "Default Power Limit")),
        (("gpu_power_readings", "default_power_limit"), ("power_readings", "default_power_limit")),
    ),
    "power_draw": (
        (
            ("GPU Power Readings", "Power Draw"),
            ("GPU Power Readings", "Average Power Draw"),
            ("GPU Power Readings", "Instantaneous Power Draw"),
            ("Power Readings", "Power Draw"),
        ),
        (
            ("gpu_power_readings", "power_draw"),
            ("gpu_power_readings", "average_power_draw"),
            ("gpu_power_readings", "instant_power_draw"),
            ("power_readings", "power_draw"),
        ),
    ),
    "temperature": ((("Temperature", "GPU Current Temp"),), (("temperature", "gpu_temp"),)),
    "sm_clock_max": ((("Max Clocks", "SM"),), (("max_clocks", "sm_clock"),)),
    "pstate": ((("Performance State",),), (("performance_state",),)),
    "ecc_mode": ((("ECC Mode", "Current"),), (("ecc_mode", "current_ecc"),)),
    "persistence": ((("Persistence Mode",),), (("persistence_mode",),)),
    "mig": ((("MIG Mode", "Current"),), (("mig_mode", "current_mig"),)),
    "retired_sbe": (
        (("Retired Pages", "Single Bit ECC"),),
        (("retired_pages", "multiple_single_bit_retirement", "retired_count"),),
    ),
    "retired_dbe": (
        (("Retired Pages", "Double Bit ECC"),),
        (("retired_pages", "double_bit_retirement", "retired_count"),),
    ),
    "retired_pending": (
        (
            ("Retired Pages", "Pending Page Blacklist"),
            ("Retired Pages", "Pending Page Retirement"),
            ("Retired Pages", "Pending"),
        ),
        (("retired_pages", "pending_blacklist"), ("retired_pages", "pending_retirement")),
    ),
    "remap_corr": ((("Remapped Rows", "Correctable Error"),), (("remapped_rows", "remapped_row_corr"),)),
    "remap_unc": ((("Remapped Rows", "Uncorrectable Error"),), (("remapped_rows", "remapped_row_unc"),)),
    "remap_pending": ((("Remapped Rows", "Pending"),), (("remapped_rows", "remapped_row_pending"),)),
    "remap_failure": ((("Remapped Rows", "Remapping Failure Occurred"),), (("remapped_rows", "remapped_row_failure"),)),
    "pcie_max_gen": _link("PCIe Generation", "Max", "pcie_gen", "max_link_gen"),
    "pcie_cur_gen": _link("PCIe Generation", "Current", "pcie_gen", "current_link_gen"),
    "pcie_dev_max_gen": _link("PCIe Generation", "Device Max", "pcie_gen", "max_device_link_gen"),
    "pcie_host_max_gen": _link("PCIe Generation", "Host Max", "pcie_gen", "max_host_link_gen"),
    "pcie_max_width": _link("Link Width", "Max", "link_widths", "max_link_width"),
    "pcie_cur_width": _link("Link Width", "Current", "link_widths", "current_link_width"),
    "replay": ((("PCI", "Replays Since Reset"), ("PCI", "Replays")), (("pci", "replay_counter"),)),
}
ECC_ERRORS: tuple[T, T] = ((("ECC Errors",),), (("ecc_errors",),))
CLOCKS: tuple[T, T] = (
    (("Clocks Event Reasons",), ("Clocks Throttle Reasons",), ("Clocks Throttle",)),
    (("clocks_event_reasons",), ("clocks_throttle_reasons",)),
)


# The keys of the older ``Power Readings`` section (drivers before the 530s: "Power Management", "Power Draw", "Power
# Limit", "Default Power Limit", "Enforced Power Limit", "Min Power Limit", "Max Power Limit"); "Enforced Power Limit"
# is printed by that section alone (the newer GPU and Module Power Readings print "Current" and "Requested" instead).
_OLD_POWER_KEYS = {
    "power management", "power draw", "power limit", "default power limit", "enforced power limit",
    "min power limit", "max power limit",
}  # fmt: skip


def regroup_power(children: list[Any]) -> list[Any]:
    """The top lines of a record cut inside its ``Power Readings`` section (their section line above the cut: they
    hang at the top, an "Enforced Power Limit" among them) under that section again, so its paths find them."""
    n = next((k for k, c in enumerate(children) if c.key.lower() not in _OLD_POWER_KEYS or c.children), len(children))
    if not any(c.key.lower() == "enforced power limit" for c in children[:n]):
        return children
    return [type(children[0])(key="Power Readings", line=children[0].line, children=children[:n]), *children[n:]]
