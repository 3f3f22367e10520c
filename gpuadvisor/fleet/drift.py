"""Drift inside a group: versions, modes and link states that should be the same on every node of one
hardware shape. For each attribute the value most nodes have is the group's; a node with another value is
named with both. No strict majority (a split) is one finding for the group, listing each value's nodes.

Attributes: driver, CUDA (the newest the driver supports), NCCL, torch and its CUDA, kernel, OS; per GPU:
persistence, MIG and ECC modes, power limit, PCIe width the link trained at, active NVLinks, and the VBIOS
version where a scan carries it. A value the scan could not read (null) is not compared.
"""

from __future__ import annotations

import sys
from typing import Any

from gpuadvisor.fleet.model import Finding, Group, Node

SOFTWARE = (
    ("driver", "software", "driver_version"),
    ("CUDA (driver)", "software", "cuda_driver_version"),
    ("NCCL", "software", "nccl_version"),
    ("torch", "software", "torch_version"),
    ("torch CUDA", "software", "torch_cuda_version"),
    ("kernel", "host", "kernel"),
    ("OS", "host", "os"),
)
NAMES_SHOWN = 12  # nodes named in one finding's message before "+N more"


def _onoff(v: Any) -> str | None:
    return None if v is None else ("on" if v else "off")


def attributes(scan: dict[str, Any]) -> dict[str, str]:
    """The node's attributes, keys and values interned (the same strings on every node of a fleet)."""
    return {sys.intern(k): sys.intern(v) for k, v in _attributes(scan).items()}


def _attributes(scan: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for label, section, key in SOFTWARE:
        sec = scan.get(section)
        if isinstance(sec, dict) and isinstance(sec.get(key), str | int | float) and sec.get(key) != "":
            out[label] = str(sec[key])
    for g in scan.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        p = f"GPU {g.get('index')}"
        for label, key in (("persistence mode", "persistence_mode"), ("MIG mode", "mig_mode"), ("ECC", "ecc_enabled")):
            v = _onoff(g.get(key))
            if v is not None:
                out[f"{p} {label}"] = v
        if isinstance(g.get("power_limit_w"), int | float) and g["power_limit_w"] - g["power_limit_w"] == 0:
            out[f"{p} power limit"] = f"{g['power_limit_w']:g} W"
        pc = g.get("pcie")
        pcie: dict[str, Any] = pc if isinstance(pc, dict) else {}
        if isinstance(pcie.get("current_width"), int):
            out[f"{p} PCIe width"] = f"x{pcie['current_width']}"
        links = g.get("nvlinks") or []
        if links:
            out[f"{p} active NVLinks"] = str(sum(1 for n in links if isinstance(n, dict) and n.get("active")))
        for key in ("vbios_version", "inforom_version"):
            if isinstance(g.get(key), str):
                out[f"{p} {key.split('_')[0].upper() if key == 'vbios_version' else 'InfoROM'}"] = g[key]
    return out


def _names(names: list[str]) -> str:
    return ", ".join(names[:NAMES_SHOWN]) + (f" +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def find_drift(group: Group, nodes: dict[str, Node]) -> list[Finding]:
    judged = [nodes[n] for n in group.judged]
    if len(judged) < 2:
        return []
    keys: dict[str, dict[str, list[str]]] = {}
    for n in judged:
        for k, v in n.attrs.items():
            keys.setdefault(k, {}).setdefault(v, []).append(n.name)
    out: list[Finding] = []
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
                Finding(
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
                    Finding(
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
