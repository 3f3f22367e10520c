"""What the report's sections are built from: one displayed value with why it is missing (``Val``), the whole page's
view (``View``), the small formatters every section uses, and the provenance word of a section."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.facts import Rig


@dataclass
class Val:
    """One displayed value: its text, and why it is missing when it is."""

    text: str
    tip: str = ""
    css: str = ""


@dataclass
class View:
    rig: Rig
    title: str
    source_banner: dict[str, Any] | None
    verdict: dict[str, Any]
    host_rows: list[tuple[str, Val]]
    numa_rows: list[list[Val]]
    software_rows: list[tuple[str, Val]]
    env_rows: list[tuple[str, str]]
    gpu_columns: list[str]
    gpu_rows: list[dict[str, Any]]
    matrix: dict[str, Any] | None
    p2p: dict[str, Any] | None
    diagram: Any
    bandwidth: dict[str, Any] | None
    findings: list[dict[str, Any]]
    explanations: list[dict[str, Any]]
    advice: dict[str, Any] | None
    provenance: dict[str, str]
    problems: list[str]
    scan_json: str
    sections: list[tuple[str, str]] = field(default_factory=list)
    topology_detail: str = ""
    diagram_keys: list[tuple[str, str]] = field(default_factory=list)
    network: dict[str, Any] | None = None  # render.html.network: RDMA ports, GPUDirect, fabric, kernel events
    storage: dict[str, Any] | None = None  # gpuadvisor.render.html.storage.html_view: the data path's directories


def val(obj: Any, name: str, fmt: Any = None, *, suffix: str = "") -> Val:
    v = getattr(obj, name, None)
    if v is None:
        reason = obj.why(name) if hasattr(obj, "why") else None
        return Val("—", reason or "not recorded", "na")
    if fmt is not None:
        return Val(fmt(v) + suffix)
    if isinstance(v, bool):
        return Val("yes" if v else "no")
    return Val(f"{v}{suffix}")


def gib(n: int | float) -> str:
    v = n / (1 << 30)
    return f"{v:.0f} GiB" if v >= 100 else f"{v:.1f} GiB"


def fmt_any(v: Any) -> str:
    """A value from the scan as short text: numbers readable, lists and flat mappings inline, else JSON."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10000 else str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        if abs(v) >= 1e6:
            return f"{v:.3g}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(not isinstance(x, dict | list) for x in v):
        return ", ".join(fmt_any(x) for x in v)
    if isinstance(v, dict) and all(not isinstance(x, dict | list) or _flat_list(x) for x in v.values()):
        return "; ".join(f"{k}: {fmt_any(x)}" for k, x in v.items())
    return json.dumps(v, sort_keys=False, default=str)


def _flat_list(x: Any) -> bool:
    return isinstance(x, list) and all(not isinstance(y, dict | list) for y in x)


def provenance_of(rig: Rig, section: str, default: str = "read") -> str:
    """What kind of figure a section shows: the scan's own word for it, else what its source implies."""
    if section in rig.provenance:
        return rig.provenance[section]
    kind = rig.source.kind
    if kind in ("simulated", "spec"):
        return "simulated" if default == "read" else default
    if kind == "imported":
        return "imported"
    return default
