"""The self-contained HTML report: one file, inline CSS and SVG, nothing fetched, the scan JSON embedded.

``render_html(rig)`` builds a view of the Rig (every figure with its provenance) and renders the jinja2
templates shipped in ``gpuadvisor.reports`` (``reports/templates/``) with autoescape on. The page reads only
what the Rig holds — the same facts as ``rig.to_json()``, which is embedded as
``<script type="application/json" id="scan">`` — plus what follows from them by gpuadvisor's own tables
(expected link bandwidth, ``gpuadvisor.links``) and the rule descriptions of the registry.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadvisor import facts
from gpuadvisor.facts import Finding, Gpu, Measurement, Rig
from gpuadvisor.rules import REGISTRY, get_rule, summary

SEVERITY_ORDER = {"fail": 0, "error": 1, "warn": 2, "info": 3, "not-checked": 4}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "send_recv")
COPIES = ("h2d", "d2h")
LINK_CLASSES = {  # topo -m code -> (css class, meaning) for the matrix legend
    "X": ("lc-x", "self"),
    "NV": ("lc-nv", "NVLink (NV# = number of bonded links)"),
    "PIX": ("lc-pix", "at most one PCIe switch"),
    "PXB": ("lc-pxb", "several PCIe switches, no host bridge"),
    "PHB": ("lc-phb", "through a PCIe host bridge (CPU)"),
    "NODE": ("lc-node", "across host bridges within a NUMA node"),
    "SYS": ("lc-sys", "across the CPU interconnect (SMP: QPI/UPI/xGMI)"),
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


# -- small formatters -------------------------------------------------------------------------------------


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


def _pcie_text(gpu: Gpu) -> Val:
    p = gpu.pcie
    if p.current_gen is None and p.current_width is None:
        return Val("—", p.why("current_gen") or p.why("current_width") or "not recorded", "na")
    cur = (
        f"Gen{p.current_gen if p.current_gen is not None else '?'} "
        f"x{p.current_width if p.current_width is not None else '?'}"
    )
    mx = f"Gen{p.max_gen if p.max_gen is not None else '?'} x{p.max_width if p.max_width is not None else '?'}"
    from gpuadvisor.links import hop_is_downgraded
    from gpuadvisor.render.html.topology_layout import _nvml_hop

    wd, gd = hop_is_downgraded(_nvml_hop(gpu))
    css = "fail" if wd else ("warn" if gd else "")
    return Val(f"{cur} (max {mx})" if cur != mx else cur, f"NVML: current {cur}, maximum {mx}", css)


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


# -- provenance ---------------------------------------------------------------------------------------------


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


# -- verdict and findings -----------------------------------------------------------------------------------


def verdict(rig: Rig) -> dict[str, Any]:
    """healthy / warnings / failing as the rules' summary decides it (terminal and check agree), with counts."""
    counts = {s: 0 for s in SEVERITY_ORDER}
    for f in rig.findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    state, _ = summary.verdict(rig.findings)
    checked = bool(rig.findings) or "findings" in rig.provenance or "rules" in rig.provenance
    if state == "healthy" and not checked:
        state = "unchecked"
    headline = {"failing": "Failing", "warnings": "Warnings", "healthy": "Healthy", "unchecked": "Not checked"}.get(
        state, state
    )
    parts = []
    for sev, one, many in (
        ("fail", "failing", "failing"),
        ("error", "rule error", "rule errors"),
        ("warn", "warning", "warnings"),
        ("info", "note", "notes"),
        ("not-checked", "not checked", "not checked"),
    ):
        if counts.get(sev):
            parts.append(f"{counts[sev]} {one if counts[sev] == 1 else many}")
    worst: list[str] = []
    more = 0
    todo = None
    why = ""
    if checked or not rig.gpus:
        rv = summary.rig_verdict(rig)
        worst, more = rv.worst, rv.more
        why = rv.why or ""
        if rv.state == summary.NO_GPUS:
            state, todo = rv.state, rv.todo
            headline = rv.headline
    if state == "no-gpus":
        text = f"This scan lists no GPU ({why}): nothing for the GPU rules to judge."
    elif state == "unchecked":
        text = (
            "This scan carries no rule results. To get findings, run the rules on it: "
            "gpuadvisor report SCAN.json --rules --html OUT.html"
        )
    elif state == "healthy":
        text = "No rule found a warning or a failure." + (f" ({', '.join(parts)})" if parts else "")
    else:
        text = ", ".join(parts)
    # Rules without their facts did not pass, they did not run: a healthy verdict says how much it rests on, and
    # when most rules could not run (an import of one output, say) it is not painted as a clean bill of health.
    partial = False
    unchecked = {f.code for f in rig.findings if f.severity == "not-checked"}
    if state == "healthy" and unchecked:
        headline = "Healthy as far as checked"
        total = _rule_count()
        if total and 2 * len(unchecked) > total:
            partial = True
            text += (
                f" {len(unchecked)} of the {total} rules could not be checked: this scan does not hold their facts, "
                "so this verdict covers only what it shows."
            )
    return {
        "state": state,
        "headline": headline,
        "summary": text,
        "counts": counts,
        "partial": partial,
        "gpus": len(rig.gpus),
        "findings": len(rig.findings),
        "worst": worst,
        "more": more,
        "todo": todo,
    }


def _rule_count() -> int:
    return len(REGISTRY.all())


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, in the rules' own order (the terminal and check agree)."""
    return list(summary.sort_findings(findings))


def rule_doc(code: str) -> dict[str, Any] | None:
    """A rule's description from the rules registry: name, summary, sections, thresholds; None for a code the
    registry does not know (a scan written by another version of gpuadvisor)."""
    rule = get_rule(code)
    if rule is None:
        return None
    d = rule.to_dict()
    sections: dict[str, Any] = d.get("sections") or {}  # type: ignore[assignment]
    thresholds: list[Any] = d.get("thresholds") or []  # type: ignore[assignment]
    return {
        "name": d.get("name"),
        "summary": d.get("summary"),
        "sections": [(k, [p.strip() for p in str(v).split("\n\n") if p.strip()]) for k, v in sections.items()],
        "thresholds": list(thresholds),
    }


def findings_view(rig: Rig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = []
    for f in sorted_findings(rig.findings):
        evidence = []
        if f.subject:
            evidence.append(("subject", f.subject))
        if f.gpus:
            evidence.append(("GPUs", ", ".join(str(g) for g in f.gpus)))
        if f.observed is not None:
            evidence.append(("observed", fmt_any(f.observed)))
        if f.expected is not None:
            evidence.append(("expected", fmt_any(f.expected)))
        if f.expected_source:
            evidence.append(("expected from", f.expected_source))
        rows.append({"f": f, "anchor": anchor(f.code), "evidence": evidence})
    explanations = []
    seen = set()
    for f in sorted_findings(rig.findings):
        if f.code in seen or not f.code:
            continue
        seen.add(f.code)
        doc = rule_doc(f.code)
        fired = any(g.code == f.code and g.severity != "not-checked" for g in rig.findings)
        explanations.append(
            {
                "code": f.code,
                "anchor": anchor(f.code),
                "name": (doc or {}).get("name") or f.name,
                "area": f.area,
                "doc": doc,
                "fired": fired,
            }
        )
    return rows, explanations


def anchor(code: str) -> str:
    return "rule-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in code)


# -- topology tables -------------------------------------------------------------------------------------


def link_class(code: str) -> str:
    if code.startswith("NV"):
        return "lc-nv"
    return LINK_CLASSES.get(code, ("lc-other", ""))[0]


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
    legend = [(code, css, meaning) for code, (css, meaning) in LINK_CLASSES.items() if css in used]
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


# -- bandwidth -------------------------------------------------------------------------------------------


def _nothing_measured(m: Measurement) -> bool:
    """A record that holds no number: skipped, or failed before its first result."""
    return m.value_gbps is None and m.latency_us is None and not m.rows and m.status != "ok"


def _m_prov(rig: Rig, m: Measurement) -> tuple[str, str]:
    """(provenance, short detail) for a badge: "measured", "nccl · 8 ranks"; the method goes in the caption.

    A record with no number (skipped, or failed before any result) is "not measured", whatever its source: a
    badge that says "measured" beside an empty row would read as a result.
    """
    if _nothing_measured(m):
        return "not measured", ""
    bits = []
    if m.backend:
        bits.append(m.backend)
    if m.world_size and m.world_size > 1:
        bits.append(f"{m.world_size} ranks")
    return m.provenance, " · ".join(bits)


def _methods(ms: list[Measurement]) -> list[str]:
    out: list[str] = []
    for m in ms:
        if m.method and m.method not in out:
            out.append(m.method)
    return out


def _m_row(rig: Rig, m: Measurement) -> dict[str, Any]:
    if m.kind == "matmul":  # bench --compute: TFLOP/s against the datasheet dense peak, in the same columns
        return {
            **_m_row(rig, Measurement(kind="", status=m.status, error=m.error, ratio=m.ratio)),
            "m": m,
            "kind": f"matmul {m.dtype or ''} {m.shape or ''} (TFLOP/s)",
            "gpus": ", ".join(str(g) for g in m.gpus) or "cpu",
            "value": f"{m.value_tflops:.2f}" if m.value_tflops is not None else "—",
            "expected": f"{m.expected_tflops:.1f}" if m.expected_tflops is not None else "—",
            "prov": _m_prov(rig, m),
        }
    return {
        "m": m,
        "kind": m.kind.replace("_", " "),
        "gpus": ", ".join(str(g) for g in m.gpus) or "—",
        "value": f"{m.value_gbps:.2f}" if m.value_gbps is not None else "—",
        "latency": f"{m.latency_us:.2f}" if m.latency_us is not None else "",
        "expected": f"{m.expected_gbps:.2f}" if m.expected_gbps is not None else "—",
        "ratio": f"{m.ratio:.0%}" if m.ratio is not None else "—",
        "status": m.status + (f": {m.error}" if m.error else ""),
        "prov": _m_prov(rig, m),
        "css": _status_css(m.status),
    }


def _status_css(status: str) -> str:
    return "" if status == "ok" else ("warn" if status in ("partial", "skipped") else "fail")


def _span(values: list[float], nd: int = 2) -> str:
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    return f"{lo:.{nd}f}" if abs(hi - lo) < 10**-nd else f"{lo:.{nd}f} – {hi:.{nd}f}"


def _pair_summary(rig: Rig, group: list[Measurement]) -> dict[str, Any]:
    """One table row for a P2P matrix: the range over its pairs (each pair is listed below the table)."""
    m0 = group[0]
    statuses = sorted({m.status for m in group})
    worst = max(statuses, key=lambda s: {"ok": 0, "skipped": 1, "partial": 2}.get(s, 3))
    return {
        "m": m0,
        "kind": m0.kind.replace("_", " "),
        "gpus": f"{len(group)} ordered pairs",
        "value": _span([m.value_gbps for m in group if m.value_gbps is not None]),
        "latency": _span([m.latency_us for m in group if m.latency_us is not None])
        if any(m.latency_us is not None for m in group)
        else "",
        "expected": _span([m.expected_gbps for m in group if m.expected_gbps is not None]),
        "ratio": (
            lambda r: f"{min(r):.0%} – {max(r):.0%}" if r and min(r) != max(r) else (f"{r[0]:.0%}" if r else "—")
        )([m.ratio for m in group if m.ratio is not None]),
        "status": ", ".join(f"{s} ×{sum(1 for m in group if m.status == s)}" for s in statuses)
        if len(statuses) > 1
        else statuses[0],
        "prov": _m_prov(rig, m0),
        "css": _status_css(worst),
    }


def bandwidth_view(rig: Rig) -> dict[str, Any] | None:
    from gpuadvisor.render.html import svg_charts

    ms = rig.measurements
    if not ms:
        return None
    out: dict[str, Any] = {"table": [], "pairs": [], "charts": [], "heatmaps": [], "bars": None, "uncharted": []}
    pair_groups: dict[tuple, list[Measurement]] = {}
    for m in ms:
        row = _m_row(rig, m)
        if m.kind.startswith("p2p") and len(m.gpus) == 2:
            out["pairs"].append(row)
            key = (m.kind, m.p2p_enabled, m.backend)
            if key not in pair_groups:
                pair_groups[key] = []
                out["table"].append({"group": key})
            pair_groups[key].append(m)
        else:
            out["table"].append(row)
    for k, row in enumerate(out["table"]):
        if "group" in row:
            out["table"][k] = _pair_summary(rig, pair_groups[row["group"]])
    # busbw sweeps, one chart per world size (a chart mixes only comparable runs).
    groups: dict[tuple, list[Measurement]] = {}
    for m in ms:
        if m.kind in COLLECTIVES and m.rows:
            groups.setdefault((m.world_size, m.backend), []).append(m)
    for (ws, backend), group in list(groups.items()):
        if ws == 1:  # one rank crosses no link: busbw is 0 by the nccl-tests factor, or a local copy (broadcast)
            del groups[(ws, backend)]
            out["uncharted"].append(
                f"{', '.join(m.kind.replace('_', ' ') for m in group)} ran on 1 rank ({backend or 'backend unknown'}): "
                "no data crosses a link, so there is no bus bandwidth to chart (busbw is 0 by the nccl-tests factor, "
                "and a one-rank broadcast is a local copy). Their rows are in the table below."
            )
    for (ws, backend), group in groups.items():
        series = []
        expected = []
        for m in group:
            label = m.kind.replace("_", " ") + (" (P2P off)" if m.p2p_enabled is False else "")
            series.append((label, [(r.size_bytes, r.busbw_gbps) for r in m.rows if r.size_bytes > 0]))
            if m.expected_gbps is not None:
                expected.append((f"{label} expected", m.expected_gbps))
        chart = svg_charts.line_chart(series, expected)
        provs = sorted({_m_prov(rig, m) for m in group})
        exp_src = sorted({m.expected_source for m in group if m.expected_source})
        out["charts"].append(
            {
                "chart": chart,
                "title": f"busbw against message size — {ws or '?'} ranks, {backend or 'backend unknown'}",
                "prov": provs,
                "expected_sources": exp_src,
                "methods": _methods(group),
            }
        )
    # P2P matrices: one Measurement per ordered pair (gpus = [src, dst]).
    index_pos = {g.index: k for k, g in enumerate(rig.gpus)}
    labels = [g.label for g in rig.gpus]
    for kind, unit, attr in (
        ("p2p_unidir", "GB/s", "value_gbps"),
        ("p2p_bidir", "GB/s", "value_gbps"),
        ("p2p_latency", "µs", "latency_us"),
    ):
        for enabled in (True, None, False):
            pairs = [
                m
                for m in ms
                if m.kind == kind
                and len(m.gpus) == 2
                and m.p2p_enabled is enabled
                and getattr(m, attr) is not None
                and all(g in index_pos for g in m.gpus)
            ]
            if not pairs:
                continue
            n = len(rig.gpus)
            grid: list[list[float | None]] = [[None] * n for _ in range(n)]
            for m in pairs:
                grid[index_pos[m.gpus[0]]][index_pos[m.gpus[1]]] = getattr(m, attr)
            title = {
                "p2p_unidir": "GPU-to-GPU copy, one direction",
                "p2p_bidir": "GPU-to-GPU copy, both directions at once",
                "p2p_latency": "GPU-to-GPU latency",
            }[kind]
            title += {True: ", P2P on", False: ", P2P off", None: ""}[enabled]
            exp = [m.expected_gbps for m in pairs if m.expected_gbps is not None] if attr == "value_gbps" else []
            out["heatmaps"].append(
                {
                    "map": svg_charts.heat_map(labels, grid, unit=unit),
                    "title": title,
                    "prov": sorted({_m_prov(rig, m) for m in pairs}),
                    "rows_label": "from (row) → to (column)",
                    "methods": _methods(pairs),
                    "expected": _span(exp) if exp else "",
                }
            )
    rows = []
    for m in ms:
        if m.kind in COPIES and len(m.gpus) == 1 and m.value_gbps is not None:
            name = {"h2d": "host→device", "d2h": "device→host"}[m.kind]
            name += f" {m.memory}" if m.memory else ""
            name += " (all at once)" if m.concurrent else ""
            tip = f"GPU {m.gpus[0]} {name}: {m.value_gbps:.2f} GB/s" + (
                f", expected {m.expected_gbps:.2f} GB/s from {m.expected_source}" if m.expected_gbps is not None else ""
            )
            rows.append((f"GPU {m.gpus[0]}", name, m.value_gbps, m.expected_gbps, tip))
    if rows:
        rows.sort(key=lambda r: int(r[0].split()[1]))  # stable: h2d/d2h keep the scan's order within a GPU
        copies = [m for m in ms if m.kind in COPIES]
        out["bars"] = {
            "chart": svg_charts.bar_chart(rows),
            "prov": sorted({_m_prov(rig, m) for m in copies}),
            "methods": _methods(copies),
            "series": _series_legend(rows),
            "expected_sources": sorted({m.expected_source for m in copies if m.expected_source}),
        }
    return out


def _series_legend(rows: list[tuple]) -> list[tuple[str, str]]:
    from gpuadvisor.render.html.svg_charts import PALETTE

    names: list[str] = []
    for r in rows:
        if r[1] not in names:
            names.append(r[1])
    return [(n, PALETTE[k % len(PALETTE)]) for k, n in enumerate(names)]


# -- advice ------------------------------------------------------------------------------------------------

_PICK_KEYS = ("pick", "recommended", "recommendation", "choice", "best")
_CANDIDATE_KEYS = ("candidates", "strategies", "table", "options")
_REASON_KEYS = ("reason", "why", "rationale")


def _is_snippet_key(k: str) -> bool:
    k = k.lower()
    return any(
        w in k for w in ("snippet", "launch", "command", "torchrun", "deepspeed", "accelerate", "config_text", "script")
    )


def advice_view(advice: Any) -> dict[str, Any] | None:
    """Render the advisor's dict generically: candidates table, pick, reason, launch snippets, the rest as is."""
    if not advice:
        return None
    rest = dict(advice)
    candidates = None
    for k in _CANDIDATE_KEYS:
        if isinstance(rest.get(k), list) and all(isinstance(c, dict) for c in rest[k]):
            candidates = rest.pop(k)
            break
    pick = None
    for k in _PICK_KEYS:
        if k in rest:
            pick = rest.pop(k)
            break
    reason = None
    for k in _REASON_KEYS:
        if isinstance(rest.get(k), str):
            reason = rest.pop(k)
            break
    snippets: list[tuple[str, str]] = []

    def take_snippets(d: dict[str, Any], prefix: str = "") -> None:
        for k in list(d):
            v = d[k]
            if _is_snippet_key(k) and isinstance(v, str):
                snippets.append((prefix + k, v))
                del d[k]
            elif _is_snippet_key(k) and isinstance(v, dict) and all(isinstance(x, str) for x in v.values()):
                for kk, vv in v.items():
                    snippets.append((f"{prefix}{k}: {kk}", vv))
                del d[k]
            elif _is_snippet_key(k) and isinstance(v, dict | list):
                snippets.append((prefix + k, json.dumps(v, indent=2)))
                del d[k]

    pick_fields: list[tuple[str, str]] = []
    pick_name = None
    if isinstance(pick, dict):
        pick = dict(pick)
        take_snippets(pick)
        for k in _REASON_KEYS:
            if reason is None and isinstance(pick.get(k), str):
                reason = pick.pop(k)
        pick_name = next((str(pick[k]) for k in ("name", "strategy", "label", "id") if k in pick), None)
        pick_fields = [
            (k, fmt_any(v))
            for k, v in pick.items()
            if not (k in ("name", "strategy", "label", "id") and str(v) == pick_name)
        ]
    elif pick is not None:
        pick_name = fmt_any(pick)
    take_snippets(rest)
    table = None
    if candidates:
        cols: list[str] = []
        for c in candidates:
            for k in c:
                if k not in cols:
                    cols.append(k)
        name_key = next((k for k in ("name", "strategy", "label", "id") if k in cols), None)
        rows = []
        for c in candidates:
            is_pick = name_key is not None and pick_name is not None and str(c.get(name_key)) == pick_name
            rows.append({"cells": [fmt_any(c.get(k)) for k in cols], "pick": is_pick, "css": _candidate_css(c)})
        table = {"columns": [k.replace("_", " ") for k in cols], "rows": rows}
    return {
        "advisor": False,
        "pick_name": pick_name,
        "pick_fields": pick_fields,
        "reason": reason,
        "snippets": snippets,
        "table": table,
        "rest": [(k.replace("_", " "), fmt_any(v), _nested(v)) for k, v in rest.items()],
    }


def _nested(v: Any) -> bool:
    """A value fmt_any prints as JSON (shown in a monospace cell)."""
    if isinstance(v, dict):
        return any(isinstance(x, dict | list) for x in v.values())
    return isinstance(v, list) and any(isinstance(x, dict | list) for x in v)


def _candidate_css(c: dict[str, Any]) -> str:
    fits = c.get("fits")
    if fits is False:
        return "nofit"
    return ""


# -- the view --------------------------------------------------------------------------------------------


def build_view(rig: Rig) -> View:
    from gpuadvisor.render.html.topology_layout import layout

    h, s = rig.host, rig.software
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
    host_rows = [
        ("hostname", val(h, "hostname")),
        ("OS", val(h, "os")),
        ("kernel", val(h, "kernel")),
        ("arch", val(h, "arch")),
        ("CPU", val(h, "cpu_model")),
        ("sockets", val(h, "sockets")),
        ("physical cores", val(h, "cores_physical")),
        ("logical cores", val(h, "cores_logical")),
        ("RAM", val(h, "memory_total_bytes", gib)),
        ("RAM available", val(h, "memory_available_bytes", gib)),
    ]
    if h.psu_watts is not None:
        host_rows.append(("PSU (given)", val(h, "psu_watts", lambda w: f"{w:.0f} W")))
    numa_rows = [
        [Val(str(n.id)), Val(n.cpus or "—"), Val(gib(n.memory_total_bytes) if n.memory_total_bytes else "—")]
        for n in h.numa_nodes
    ]
    software_rows = [
        ("NVIDIA driver", val(s, "driver_version")),
        ("CUDA (driver supports)", val(s, "cuda_driver_version")),
        ("NVML", val(s, "nvml_version")),
        ("nvidia-ml-py", val(s, "nvml_binding_version")),
        ("Python", val(s, "python_version")),
        ("torch", val(s, "torch_version")),
        ("torch CUDA", val(s, "torch_cuda_version")),
        ("NCCL", val(s, "nccl_version")),
        ("gpuadvisor", val(s, "gpuadvisor_version")),
    ]
    gpu_columns = [
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
    gpu_rows = []
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
        gpu_rows.append(
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
                    _pcie_text(g),
                    nv,
                    ecc,
                    val(g, "persistence_mode"),
                    val(g, "mig_mode"),
                    ev,
                ],
            }
        )
    findings, explanations = findings_view(rig)
    scan = json.dumps(rig.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    # Safe inside <script type="application/json">: no "</script", "<!--" or "&" can appear in the raw text.
    scan = scan.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    scan = scan.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    title = f"gpuadvisor report — {h.hostname or 'unknown host'}"
    bw = bandwidth_view(rig)
    from gpuadvisor.render.html.advice import advisor_view, is_advisor_dict

    adv = (
        advisor_view(rig.advice) if rig.advice is not None and is_advisor_dict(rig.advice) else advice_view(rig.advice)
    )
    prov = {
        "host": provenance_of(rig, "host"),
        "software": provenance_of(rig, "software"),
        "gpus": provenance_of(rig, "gpus"),
        "topology": provenance_of(rig, "topology"),
        "measurements": provenance_of(rig, "measurements", "measured"),
        "network": provenance_of(rig, "network"),
        "expected": "predicted",
        "findings": provenance_of(rig, "findings", "read"),
        "advice": provenance_of(rig, "advice", "predicted"),
    }
    # Findings and advice are judgements on the facts, not facts: say what they rest on.
    if "findings" not in rig.provenance:
        prov["findings"] = "derived from the facts above"
    if "advice" not in rig.provenance:
        prov["advice"] = "predicted"
    sections = [("verdict", "Verdict"), ("rig", "Rig"), ("topology", "Topology")]
    from gpuadvisor.render.html.network import network_view

    net = network_view(rig)
    if net:
        sections.append(("network", "Network"))
    if bw:
        sections.append(("bandwidth", "Bandwidth"))
    from gpuadvisor.render.html.storage import html_view

    storage = html_view(rig)
    if storage:
        sections.append(("storage", "Storage"))
        prov["storage"] = provenance_of(rig, "storage")
    sections.append(("findings", "Findings"))
    if adv:
        sections.append(("strategy", "Strategy"))
    sections.append(("provenance", "Provenance"))
    topology_detail = {
        "imported": "from the imported tool outputs",
        "live": "PCIe path from sysfs, links from NVML",
        "simulated": "simulated NVML and sysfs",
        "spec": "from the rig description",
    }.get(kind, "")
    diagram = layout(rig)
    return View(
        topology_detail=topology_detail,
        diagram_keys=diagram_keys(diagram),
        rig=rig,
        title=title,
        source_banner=banner,
        verdict=verdict(rig),
        host_rows=host_rows,
        numa_rows=numa_rows,
        software_rows=software_rows,
        env_rows=sorted(s.env.items()),
        gpu_columns=gpu_columns,
        gpu_rows=gpu_rows,
        matrix=matrix_view(rig),
        p2p=p2p_view(rig),
        diagram=diagram,
        bandwidth=bw,
        findings=findings,
        explanations=explanations,
        advice=adv,
        provenance=prov,
        problems=list(rig.problems),
        scan_json=scan,
        sections=sections,
        network=net,
        storage=storage,
    )


def _bytecode_cache(jinja2: Any) -> Any:
    """Compiled templates kept between runs, so a `report --html` process does not recompile them (~170 ms):
    jinja2's FileSystemBytecodeCache in its per-user directory under the temp dir (created 0700, refused if
    another user owns it), keyed by each template's source checksum. GPUADVISOR_NO_TEMPLATE_CACHE=1 turns it off."""
    import os

    if os.environ.get("GPUADVISOR_NO_TEMPLATE_CACHE"):
        return None
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no usable temp dir, or the cache dir is not ours: compile as before
        return None


@functools.cache
def environment() -> Any:
    """One jinja2 environment per process: templates compile once."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpuadvisor.reports", "templates"),
        bytecode_cache=_bytecode_cache(jinja2),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt_any
    env.filters["num"] = lambda v, nd=1: f"{v:.{nd}f}"
    return env


def render_html(rig: Rig) -> str:
    """The report as one self-contained HTML document (inline CSS and SVG, nothing fetched)."""
    import markupsafe

    view = build_view(rig)
    template = environment().get_template("report.html.j2")
    return template.render(
        v=view, rig=rig, scan_json=markupsafe.Markup(view.scan_json), schema_version=facts.SCHEMA_VERSION
    )


def write_html(rig: Rig, path: str | Path) -> Path:
    """Render and write the report (UTF-8); returns the path written."""
    from gpuadvisor.output import write_atomic

    return write_atomic(Path(path), render_html(rig), what="report")
