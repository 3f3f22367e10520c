"""The rig section of the report: where the scan came from (the banner), host, NUMA, software and the GPU table."""

from __future__ import annotations

from typing import Any

from gpuadvisor.facts import Gpu, Host, Rig, Software
from gpuadvisor.render.html.view import Val, gib, val
from gpuadvisor.text import pcie_link

GPU_COLUMNS = [
    "GPU",
    "model",
    "bus id",
    "memory",
    "CC",
    "power limit",
    "temp",
    "NUMA",
    "PCIe (NVML)",
    "NVLinks",
    "ECC",
    "persistence",
    "MIG",
    "clocks events",
]


def source_banner(rig: Rig) -> dict[str, Any] | None:
    """The banner of a simulated or imported scan (None for a live one)."""
    kind = rig.source.kind
    banner = None
    if kind in ("simulated", "spec"):
        banner = {
            "css": "simulated",
            "title": "Simulated rig — not a real machine",
            "detail_shown": False,
            "text": "Every figure below comes from a simulated machine"
            + (f" (preset “{rig.source.preset}”)" if rig.source.preset else "")
            + ". Nothing here was read from or measured on hardware.",
        }
    elif kind == "imported":
        # The importer's detail names each file with what it was ("A: nvidia-smi topo -m; B: nccl-tests"):
        # say that once rather than the bare file list followed by the same list again.
        detail = (rig.source.detail or "").removeprefix("imported from ").strip()
        files = detail or (", ".join(rig.source.files) if rig.source.files else "tool output")
        banner = {
            "css": "imported",
            "title": "Imported scan — not probed by gpuadvisor",
            "detail_shown": True,
            "text": f"These facts were parsed from {files}; fields those outputs lack are shown as “—”.",
        }
    return banner


HOST_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("hostname", "hostname", None),
    ("OS", "os", None),
    ("kernel", "kernel", None),
    ("arch", "arch", None),
    ("CPU", "cpu_model", None),
    ("sockets", "sockets", None),
    ("physical cores", "cores_physical", None),
    ("logical cores", "cores_logical", None),
    ("RAM", "memory_total_bytes", gib),
    ("RAM available", "memory_available_bytes", gib),
)
SOFTWARE_FIELDS = (
    ("NVIDIA driver", "driver_version"),
    ("CUDA (driver supports)", "cuda_driver_version"),
    ("NVML", "nvml_version"),
    ("nvidia-ml-py", "nvml_binding_version"),
    ("Python", "python_version"),
    ("torch", "torch_version"),
    ("torch CUDA", "torch_cuda_version"),
    ("NCCL", "nccl_version"),
    ("gpuadvisor", "gpuadvisor_version"),
)


def host_rows(h: Host) -> list[tuple[str, Val]]:
    rows = [(label, val(h, name, fmt)) for label, name, fmt in HOST_FIELDS]
    if h.psu_watts is not None:
        rows.append(("PSU (given)", val(h, "psu_watts", lambda w: f"{w:.0f} W")))
    return rows


def numa_rows(h: Host) -> list[list[Val]]:
    return [
        [Val(str(n.id)), Val(n.cpus or "—"), Val(gib(n.memory_total_bytes) if n.memory_total_bytes else "—")]
        for n in h.numa_nodes
    ]


def software_rows(s: Software) -> list[tuple[str, Val]]:
    return [(label, val(s, name)) for label, name in SOFTWARE_FIELDS]


def gpu_rows(rig: Rig) -> list[dict[str, Any]]:
    rows = []
    for g in rig.gpus:
        active = len(g.active_nvlinks())
        nv = Val(
            f"{active}/{len(g.nvlinks)} up" if g.nvlinks else "none",
            "" if g.nvlinks else (g.why("nvlinks") or "no NVLink reported"),
            "fail" if g.nvlinks and active < len(g.nvlinks) else "",
        )
        ecc = val(g, "ecc_enabled")
        unc = (g.ecc_errors_uncorrected_volatile or 0) + (g.ecc_errors_uncorrected_aggregate or 0)
        if g.ecc_enabled and unc:
            ecc = Val(f"on, {unc} uncorrected", "uncorrected ECC errors (volatile + aggregate)", "fail")
        events = g.clocks_event_reasons
        ev = Val(", ".join(events) if events else "none") if events is not None else val(g, "clocks_event_reasons")
        power = val(g, "power_limit_w", lambda w: f"{w:.0f} W")
        if (
            g.power_limit_w is not None
            and g.power_default_limit_w is not None
            and g.power_limit_w < g.power_default_limit_w
        ):
            power = Val(f"{g.power_limit_w:.0f} W", f"below the default {g.power_default_limit_w:.0f} W", "warn")
        rows.append(
            {
                "index": g.index,
                "cells": [
                    Val(str(g.index)),
                    val(g, "name"),
                    val(g, "bus_id"),
                    val(g, "memory_total_bytes", gib),
                    val(g, "compute_capability"),
                    power,
                    val(g, "temperature_c", lambda t: f"{t:.0f} °C"),
                    val(g, "numa_node"),
                    pcie_text(g),
                    nv,
                    ecc,
                    val(g, "persistence_mode"),
                    val(g, "mig_mode"),
                    ev,
                ],
            }
        )
    return rows


def pcie_text(gpu: Gpu) -> Val:
    p = gpu.pcie
    if p.current_gen is None and p.current_width is None:
        return Val("—", p.why("current_gen") or p.why("current_width") or "not recorded", "na")
    cur = pcie_link(p.current_gen, p.current_width)
    mx = pcie_link(p.max_gen, p.max_width)
    from gpuadvisor.physics.links import hop_is_downgraded, nvml_hop

    wd, gd = hop_is_downgraded(nvml_hop(gpu))
    css = "fail" if wd else ("warn" if gd else "")
    return Val(f"{cur} (max {mx})" if cur != mx else cur, f"NVML: current {cur}, maximum {mx}", css)
