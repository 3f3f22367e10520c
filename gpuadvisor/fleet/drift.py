"""Drift inside a group: versions, modes and link states that should be the same on every node of one
hardware shape. For each attribute the value most nodes have is the group's; a node with another value is
named with both. No strict majority (a split) is one finding for the group, listing each value's nodes.

Versions (driver, CUDA, NCCL, torch, kernel, OS) roll out a batch of nodes at a time: where two or more values
are each held by at least ``SPLIT_SHARE`` of the group (and ``SPLIT_MIN`` nodes), the group is split, and that is
one finding for the group ("40% (26 of 64) on 570.124.06: ...") with each side's nodes, the same on either side
of 50 %; a node is named on its own only where its value is none of the split's.

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
VERSIONS = frozenset(label for label, _ in (*SOFTWARE, *HOST))
SPLIT_SHARE = 0.10  # a version held by this share of a group (and SPLIT_MIN nodes) is a side of a split
SPLIT_MIN = 2
SPLIT = "version-split"  # the finding's code


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
        sides = [(v, ns) for v, ns in ranked if len(ns) >= max(SPLIT_MIN, SPLIT_SHARE * total)]
        if key in VERSIONS and len(sides) >= 2:
            out += _split(group, key, ranked, sides, total)
            continue
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
            out += [
                _node(
                    group,
                    key,
                    name,
                    v,
                    top,
                    f"{key} {v} where {len(top_nodes)} of {total} nodes in its group have {top}",
                )
                for name in ns
            ]
    return out


def _node(group: Group, key: str, name: str, value: str, expected: str, message: str) -> FleetFinding:
    return FleetFinding(
        node=name,
        group=group.id,
        kind="drift",
        severity="warn",
        subject=key,
        message=message,
        observed=value,
        expected=expected,
    )


def _split(
    group: Group, key: str, ranked: list[tuple[str, list[str]]], sides: list[tuple[str, list[str]]], total: int
) -> list[FleetFinding]:
    """A version split (a rolling upgrade): one line for the group, each side with its share and nodes; a node
    on none of the sides is named on its own."""
    parts = "; ".join(
        f"{100 * len(ns) / total:.0f}% ({len(ns)} of {total}) on {v}: {_names(sorted(ns))}" for v, ns in sides
    )
    out = [
        FleetFinding(
            node=None,
            group=group.id,
            kind="drift",
            code=SPLIT,
            severity="warn",
            subject=key,
            message=f"{key} split across group {group.id} (a rolling upgrade?): {parts}",
            observed={v: len(ns) for v, ns in sides},
        )
    ]
    held = " and ".join(f"{v} ({len(ns)})" for v, ns in sides)
    side_values = {v for v, _ in sides}
    for v, ns in ranked:
        if v not in side_values:
            out += [
                _node(group, key, n, v, sides[0][0], f"{key} {v} where its group is split between {held}") for n in ns
            ]
    return out
