"""The topology section's tables and legend: the ``nvidia-smi topo -m`` matrix, the P2P support matrices and the
key of the diagram (whose geometry is gpuadvisor.render.html.topology_layout)."""

from __future__ import annotations

import functools
from typing import Any

from gpuadvisor.facts import Rig

LINK_MEANING = {  # topo -m code -> its meaning for the matrix legend; its css class is "lc-" + the code in lower case
    "X": "self",
    "NV": "NVLink (NV# = number of bonded links)",
    "PIX": "at most one PCIe switch",
    "PXB": "several PCIe switches, no host bridge",
    "PHB": "through a PCIe host bridge (CPU)",
    "NODE": "across host bridges within a NUMA node",
    "SYS": "across the CPU interconnect (SMP: QPI/UPI/xGMI)",
}
P2P_CLASSES = {
    "OK": "p2p-ok",
    "X": "lc-x",
    "NS": "p2p-ns",
    "CNS": "p2p-ns",
    "GNS": "p2p-ns",
    "TNS": "p2p-ns",
    "DIS": "p2p-ns",
    "U": "p2p-u",
}
P2P_MEANING = {
    "OK": "supported",
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "NS": "not supported",
    "DIS": "disabled",
    "U": "unknown",
    "X": "self",
}


def diagram_keys(diagram: Any) -> list[tuple[str, str]]:
    """The legend of the diagram: (swatch class, meaning) for each kind of line it draws, and only those."""
    kinds = {(e.kind, c) for e in diagram.edges for c in (e.css.split() or [""])}
    keys = []
    if any(k == "pcie" and c not in ("fail", "warn", "unknown", "downgraded") for k, c in kinds):
        keys.append(("sw-pcie", "PCIe link (generation, width)"))
    if ("pcie", "fail") in kinds:
        keys.append(("sw-fail", "lanes below maximum (bandwidth cut)"))
    if ("pcie", "warn") in kinds:
        keys.append(("sw-warn", "generation below maximum (idle power saving, or a fault under load)"))
    if ("pcie", "unknown") in kinds:
        keys.append(("sw-unknown", "placement only: this scan has no PCIe link figures for it"))
    if any(k in ("nvlink", "nvswitch") for k, _ in kinds):
        keys.append(("sw-nv", "NVLink (link count)"))
    if any(k in ("nvlink", "nvswitch") and c == "fail" for k, c in kinds):
        keys.append(("sw-fail", "NVLink links down"))
    if any(k == "nic" for k, _ in kinds):
        keys.append(("sw-nic", "NIC (level from topo -m)"))
    return keys


def link_class(code: str) -> str:
    if code.startswith("NV"):
        code = "NV"
    return f"lc-{code.lower()}" if code in LINK_MEANING else "lc-other"


def _cells_html(cells: list[dict[str, str]]) -> Any:
    """A matrix row's <td>s, escaped, in one pass: a 256-GPU rig has 65,536 cells per matrix, too many for a template
    loop (the template printed them one jinja2 call at a time)."""
    import markupsafe

    return markupsafe.Markup("".join(_td(c["css"], c["code"], c.get("tip")) for c in cells))


@functools.lru_cache(maxsize=1024)
def _td(css: str, code: str, tip: str | None) -> str:
    """One escaped cell; matrices repeat a handful of (class, code) pairs, so each is escaped once."""
    import markupsafe

    esc = markupsafe.escape
    return f'<td class="{esc(css)}"' + (f' title="{esc(tip)}"' if tip is not None else "") + f">{esc(code)}</td>"


def matrix_view(rig: Rig) -> dict[str, Any] | None:
    m = rig.topology.matrix
    if not m:
        return None
    labels = [g.label for g in rig.gpus]
    nics = rig.topology.nics
    rows = []
    for i, row in enumerate(m):
        cells = [{"code": c, "css": link_class(c)} for c in row]
        nic_row = rig.topology.nic_matrix[i] if i < len(rig.topology.nic_matrix) else []
        cells += [{"code": c, "css": link_class(c)} for c in nic_row]
        rows.append({"label": labels[i] if i < len(labels) else f"#{i}", "cells": cells, "html": _cells_html(cells)})
    used = {link_class(c) for row in m for c in row} | {link_class(c) for row in rig.topology.nic_matrix for c in row}
    legend = [(code, css, meaning) for code, meaning in LINK_MEANING.items() if (css := link_class(code)) in used]
    return {"columns": labels + list(nics), "rows": rows, "legend": legend}


def p2p_view(rig: Rig) -> dict[str, Any] | None:
    t = rig.topology
    if t.p2p_read is None and t.p2p_write is None:
        return None
    labels = [g.label for g in rig.gpus]
    out: dict[str, Any] = {}
    for name, m in (("read", t.p2p_read), ("write", t.p2p_write)):
        if m is None:
            continue
        out[name] = []
        for i, row in enumerate(m):
            cells = [{"code": c, "css": P2P_CLASSES.get(c, "p2p-u"), "tip": P2P_MEANING.get(c, c)} for c in row]
            out[name].append(
                {"label": labels[i] if i < len(labels) else f"#{i}", "cells": cells, "html": _cells_html(cells)}
            )
    used = {c for m in (t.p2p_read or [], t.p2p_write or []) for row in m for c in row}
    legend = [(c, P2P_CLASSES.get(c, "p2p-u"), P2P_MEANING.get(c, c)) for c in P2P_MEANING if c in used]
    return {"columns": labels, "tables": out, "legend": legend}
