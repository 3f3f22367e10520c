"""Drift inside a group: versions, modes and link states that should be the same on every node of one
hardware shape. For each attribute the value most nodes have is the group's; a node with another value is
named with both. No strict majority (a split) is one finding for the group, listing each value's nodes.

Attributes: driver, CUDA (the newest the driver supports), NCCL, torch and its CUDA, kernel, OS; per GPU:
persistence, MIG and ECC modes, power limit, PCIe width the link trained at, active NVLinks. A value the scan
could not read (null) is not compared.
"""

from __future__ import annotations

import sys
from typing import Any

from gpuadvisor.facts import Rig
from gpuadvisor.fleet.model import FleetFinding, Group, Node

SOFTWARE = (
    ("driver", "driver_version"),
    ("CUDA (driver)", "cuda_driver_version"),
    ("NCCL", "nccl_version"),
    ("torch", "torch_version"),
    ("torch CUDA", "torch_cuda_version"),
)
HOST = (("kernel", "kernel"), ("OS", "os"))
NAMES_SHOWN = 12  # nodes named in one finding's message before "+N more"


def _onoff(v: Any) -> str | None:
    return None if v is None else ("on" if v else "off")


def attributes(rig: Rig) -> dict[str, str]:
    """The node's attributes, keys and values interned (the same strings on every node of a fleet)."""
    return {sys.intern(k): sys.intern(v) for k, v in _attributes(rig).items()}


def _attributes(rig: Rig) -> dict[str, str]:
    out: dict[str, str] = {}
    for section, names in ((rig.software, SOFTWARE), (rig.host, HOST)):
        for label, key in names:
            value = getattr(section, key)
            if value:
                out[label] = value
    for g in rig.gpus:
        p = f"GPU {g.index}"
        for label, mode in (("persistence mode", g.persistence_mode), ("MIG mode", g.mig_mode), ("ECC", g.ecc_enabled)):
            v = _onoff(mode)
            if v is not None:
                out[f"{p} {label}"] = v
        if g.power_limit_w is not None:
            out[f"{p} power limit"] = f"{g.power_limit_w:g} W"
        if g.pcie.current_width is not None:
            out[f"{p} PCIe width"] = f"x{g.pcie.current_width}"
        if g.nvlinks:
            out[f"{p} active NVLinks"] = str(len(g.active_nvlinks()))
    return out


def _names(names: list[str]) -> str:
    return ", ".join(names[:NAMES_SHOWN]) + (f" +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def find_drift(group: Group, nodes: dict[str, Node]) -> list[FleetFinding]:
    judged = [nodes[n] for n in group.judged]
    if len(judged) < 2:
        return []
    keys: dict[str, dict[str, list[str]]] = {}
    for n in judged:
        for k, v in n.attrs.items():
            keys.setdefault(k, {}).setdefault(v, []).append(n.name)
    out: list[FleetFinding] = []
    for key in sorted(keys):
        values = keys[key]
        if len(values) < 2:
            continue
        total = sum(len(v) for v in values.values())
        ranked = sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        top, top_nodes = ranked[0]
        if 2 * len(top_nodes) <= total:  # no strict majority: say so, name no culprit
            parts = "; ".join(f"{v}: {len(ns)} ({_names(sorted(ns))})" for v, ns in ranked)
            out.append(
                FleetFinding(
                    node=None,
                    group=group.id,
                    kind="drift",
                    severity="warn",
                    subject=key,
                    message=f"{key} differs across group {group.id} with no majority value: {parts}",
                    observed={v: len(ns) for v, ns in ranked},
                )
            )
            continue
        for v, ns in ranked[1:]:
            for name in ns:
                out.append(
                    FleetFinding(
                        node=name,
                        group=group.id,
                        kind="drift",
                        severity="warn",
                        subject=key,
                        message=f"{key} {v} where {len(top_nodes)} of {total} nodes in its group have {top}",
                        observed=v,
                        expected=top,
                    )
                )
    return out
